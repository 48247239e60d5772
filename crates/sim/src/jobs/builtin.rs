//! The kinds wblab began with. Their system calls are woven into the model's paths
//! (`workload/`: the write path, readahead, the metadata walks, tiotest's barriers, fio's
//! engines) and their keys are parsed by the scenario crate's own code; this file says what
//! each one is to everything else.

use super::{FileUse, JobKind, Keys, RealRunner, SweepFigure};

/// The fields most kinds share; each declaration below says where it differs.
const BASE: JobKind = JobKind {
    name: "",
    summary: "",
    keys: Keys::Own(&[]),
    file: FileUse::Tree,
    op: "op",
    logs_ops: true,
    plots_ops: true,
    buffered_writes: false,
    throughput: false,
    background: false,
    real: RealRunner::None,
    sweep: SweepFigure::Throughput,
};

pub static DD: JobKind = JobKind {
    name: "dd",
    summary: "buffered (or O_DIRECT) sequential writes of a file it creates, `dd if=/dev/zero of=FILE`",
    keys: Keys::Own(&["bs", "size", "blocks", "fsync", "direct", "conv", "oflag"]),
    file: FileUse::Writes,
    op: "write()",
    logs_ops: false,
    plots_ops: false,
    buffered_writes: true,
    throughput: true,
    real: RealRunner::Dd,
    ..BASE
};

pub static NETWRITE: JobKind = JobKind {
    name: "netwrite",
    summary: "a network receiver storing what arrives at a link's rate (an FTP upload)",
    keys: Keys::Own(&["bs", "size", "rate"]),
    file: FileUse::Writes,
    logs_ops: false,
    buffered_writes: true,
    op: "write()",
    real: RealRunner::Thread,
    ..BASE
};

pub static CAT: JobKind = JobKind {
    name: "cat",
    summary: "buffered sequential reads of an existing file, `cat FILE > /dev/null`",
    keys: Keys::Own(&["bs", "file_size"]),
    file: FileUse::Reads,
    op: "read()",
    throughput: true,
    real: RealRunner::Thread,
    ..BASE
};

pub static RANDREAD: JobKind = JobKind {
    name: "randread",
    summary: "random reads of an existing file, one at a time: a latency probe",
    keys: Keys::Own(&["bs", "file_size", "direct", "think"]),
    file: FileUse::Reads,
    op: "read()",
    throughput: true,
    real: RealRunner::Thread,
    sweep: SweepFigure::CallLatency,
    ..BASE
};

pub static FSYNC: JobKind = JobKind {
    name: "fsync",
    summary: "writes then fsync() every interval: a database-commit probe",
    keys: Keys::Own(&["bytes", "interval"]),
    file: FileUse::Writes,
    op: "fsync()",
    throughput: true,
    real: RealRunner::Thread,
    sweep: SweepFigure::CallLatency,
    ..BASE
};

pub static REPLACE: JobKind = JobKind {
    name: "replace",
    summary: "writes a new copy of its file and renames it over the old one, without fsync",
    keys: Keys::Own(&["bytes", "interval"]),
    file: FileUse::Writes,
    real: RealRunner::Thread,
    op: "write()+rename()",
    sweep: SweepFigure::CallLatency,
    ..BASE
};

pub static SYNC: JobKind = JobKind {
    name: "sync",
    summary: "sync() every interval",
    keys: Keys::Own(&["interval"]),
    op: "sync()",
    real: RealRunner::Thread,
    sweep: SweepFigure::CallLatency,
    ..BASE
};

pub static SPIN: JobKind = JobKind {
    name: "spin",
    summary: "a CPU-bound process beside the work (`yes > /dev/null`)",
    logs_ops: false,
    plots_ops: false,
    background: true,
    real: RealRunner::Thread,
    op: "none",
    ..BASE
};

pub static DU: JobKind = JobKind {
    name: "du",
    summary: "`du -s`: readdir and lstat() of every entry of a tree of small files",
    keys: Keys::Own(&["files", "files_per_dir", "subdirs", "inode_size", "inode_spacing", "repeat"]),
    op: "lstat()",
    real: RealRunner::Thread,
    sweep: SweepFigure::CommandTime,
    ..BASE
};

pub static LAUNCH: JobKind = JobKind {
    name: "launch",
    summary: "an application start: look up and read its files, write its settings",
    keys: Keys::Own(&["files", "files_per_dir", "file_sizes", "bs", "mmap", "writes", "interval"]),
    op: "launch",
    real: RealRunner::Thread,
    sweep: SweepFigure::CommandTime,
    ..BASE
};

pub static LS: JobKind = JobKind {
    name: "ls",
    summary: "`ls -l` of directories: readdir and lstat() of every entry",
    keys: Keys::Own(&["dirs", "entries", "interval"]),
    op: "ls",
    real: RealRunner::Thread,
    sweep: SweepFigure::CommandTime,
    ..BASE
};

pub static TIOTEST: JobKind = JobKind {
    name: "tiotest",
    summary: "one thread of `tiotest -t N`: write, random write, read, random read of its file",
    keys: Keys::Own(&["file_size", "bs", "random_ops", "user_cost"]),
    file: FileUse::Writes,
    logs_ops: false,
    op: "read()/write()",
    real: RealRunner::Thread,
    ..BASE
};

pub static FIO: JobKind = JobKind {
    name: "fio",
    summary: "the jobs of a fio job file",
    keys: Keys::Own(&["fio"]),
    file: FileUse::Fio,
    real: RealRunner::Fio,
    op: "I/O",
    sweep: SweepFigure::Fio,
    ..BASE
};
