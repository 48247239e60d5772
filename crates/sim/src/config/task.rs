//! `[[task]]`: the workloads simulated tasks run.

use crate::jobs::{FileUse, JobKind, ScriptedJob};
use crate::Ns;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct TaskConfig {
    /// Name shown in tables and as the trace comm.
    pub name: String,
    /// Number of identical instances (`count = 100` makes 100 tasks).
    pub count: u32,
    /// Index into `Scenario::devices` of the device that holds the task's file.
    pub device: usize,
    /// File path; `{n}` is replaced by the instance number.
    pub file: String,
    /// Start time, ns.
    pub start: Ns,
    /// Time between the starts of the instances, ns: instance `n` starts at
    /// `start + n × stagger`, as when a shell loop or a harness spawns them one by one.
    #[serde(skip_serializing_if = "super::is_zero")]
    pub stagger: Ns,
    /// Stop time, ns (None = run to the end of the scenario or of the job).
    pub stop: Option<Ns>,
    /// `ionice`: the scheduling class of the requests the task submits itself (its reads,
    /// direct writes and fsync's writeback; buffered writes are written by the flusher).
    pub ioprio: IoPrio,
    /// Index into `Scenario::cgroups` of the cgroup the task runs in; `None` = the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<usize>,
    /// Indices into `Scenario::tasks` of the groups that must all be done before this one
    /// starts (fio's `stonewall` and `wait_for`); `start` then counts from that moment.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<usize>,
    pub job: JobConfig,
}

impl TaskConfig {
    /// When instance `n` of the group starts: `start + n × stagger`.
    pub fn start_of(&self, n: u32) -> Ns {
        self.start + u64::from(n) * self.stagger
    }
}

/// An I/O priority class, as `ionice -c` sets it (`IOPRIO_CLASS_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoPrioClass {
    /// Realtime: served before everything else.
    Rt,
    /// Best effort: the default (a task that never called ionice, `IOPRIO_CLASS_NONE`, and
    /// kernel threads such as the flushers are served as best effort).
    #[default]
    Be,
    /// Idle: served when nothing else wants the disk.
    Idle,
}

/// A task's I/O priority: class and level (0 highest … 7; only realtime and best effort
/// have levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct IoPrio {
    pub class: IoPrioClass,
    pub level: u8,
}

impl Default for IoPrio {
    /// What a task gets without ionice at nice 0: best effort, level 4.
    fn default() -> Self {
        IoPrio {
            class: IoPrioClass::Be,
            level: 4,
        }
    }
}

impl IoPrio {
    /// The value `ioprio_set(2)` takes: class << 13 | level.
    pub fn raw(self) -> u32 {
        let class = match self.class {
            IoPrioClass::Rt => 1,
            IoPrioClass::Be => 2,
            IoPrioClass::Idle => 3,
        };
        class << 13 | u32::from(self.level)
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "job", rename_all = "lowercase")]
pub enum JobConfig {
    /// Buffered sequential writer (`dd if=/dev/zero of=FILE bs=BS [count=N]`).
    Dd {
        bs: u64,
        /// Bytes to write; None = until the task stops.
        size: Option<u64>,
        /// `conv=fsync`: fsync the file before exiting.
        fsync: bool,
        /// `oflag=direct`: O_DIRECT writes that bypass the page cache.
        direct: bool,
    },
    /// A network receiver writing what arrives (an FTP server storing an upload): buffered
    /// sequential writes of `bs` paced at `rate` (the link). A write starts no earlier than
    /// `bs / rate` after the previous one started; while the task is blocked nothing is
    /// received, and afterwards it goes on at `rate` (no catching up beyond one `bs`, as TCP's
    /// window stops the sender). The transfer time is the task's end.
    Netwrite {
        bs: u64,
        /// Bytes to transfer; None = until the task stops.
        size: Option<u64>,
        /// Link rate, bytes per second.
        rate: u64,
    },
    /// Buffered sequential reader of an existing file (`cat FILE > /dev/null`).
    Cat {
        bs: u64,
        /// Size of the pre-existing file, bytes.
        file_size: u64,
    },
    /// Random reads of `bs` bytes, one at a time: a latency probe.
    Randread {
        bs: u64,
        file_size: u64,
        direct: bool,
        /// Think time between reads, ns.
        think: Ns,
    },
    /// Writes `bytes` then calls fsync(), every `interval`: a database-commit probe.
    Fsync { bytes: u64, interval: Ns },
    /// Replaces its file every `interval` as editors and package managers do: writes `bytes`
    /// of new content to a temporary file and renames it over the file, without fsync (the
    /// pattern ext4's `auto_da_alloc` guards).
    Replace { bytes: u64, interval: Ns },
    /// Calls sync() every `interval`.
    Sync { interval: Ns },
    /// A CPU-bound process (`yes > /dev/null`, `stress-ng --cpu 1`): user-mode work that
    /// never sleeps and never does I/O, the machine's noisy neighbour. It competes with the
    /// tasks, the flushers and the kernel threads for the CPUs.
    Spin,
    /// `du -s DIR`: readdir and `lstat` of every entry of a tree of small files. An uncached
    /// inode costs one 4 KiB read of its inode-table block; op latency is per `lstat`.
    Du {
        /// Files in the tree.
        files: u64,
        /// Entries per directory.
        files_per_dir: u32,
        /// Subdirectories per directory (0: a flat sequence of directories; at most 2^22
        /// directories when nested).
        subdirs: u32,
        /// On-disk inode size (ext3: 128, ext4: 256): inodes per 4 KiB block = 4096 / size.
        inode_size: u32,
        /// The tree's inodes take one inode-table slot in `inode_spacing`, the others holding
        /// files outside the tree (a file system aged by other use): a directory's files span
        /// that many times the table blocks. 1: a tree created in one go on an empty one.
        #[serde(skip_serializing_if = "crate::config::is_one")]
        inode_spacing: u32,
        /// Start over when the walk ends (the tree stays on disk, its cache may be gone).
        repeat: bool,
    },
    /// An application start: look up and read `files` files, sizes taken in turn from
    /// `file_sizes`. Op latency is the whole launch.
    Launch {
        files: u32,
        /// Files to a directory (an application's files, 20 by default; `cat dir/*.c`: all).
        files_per_dir: u32,
        file_sizes: Vec<u64>,
        /// Read size of each read().
        bs: u64,
        /// The files are mapped and run rather than read (`mmap = true`): their pages come in
        /// by page faults (`filemap_fault`), one synchronous read-around at a time.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        mmap: bool,
        /// Bytes the application writes while starting (configuration, history, profile:
        /// buffered 4 KiB writes to a file of its own), after reading its files.
        writes: u64,
        /// Launch again this long after the previous start (None = once).
        interval: Option<Ns>,
    },
    /// `ls -l DIR...`: readdir and `lstat` of every entry of `dirs` directories. Op latency
    /// is the whole command.
    Ls {
        dirs: u32,
        entries: u32,
        /// Run again this long after the previous start (None = once).
        interval: Option<Ns>,
    },
    /// One thread of `tiotest -t N`: its own file, four phases (write, random write, read,
    /// random read) separated by barriers across all tiotest threads of the scenario.
    Tiotest {
        /// Size of the thread's file (`-f`), bytes.
        file_size: u64,
        /// Block size of each read()/write() (`-b`), bytes.
        bs: u64,
        /// Random operations per thread and random phase (`-r`).
        random_ops: u64,
        /// User-space CPU per operation (tiotest's buffer fill and check), ns.
        user_cost: Ns,
    },
    /// One fio job (a section of a job file); `count` is its `numjobs`. Shared, not boxed: a
    /// task's job is copied for each of its system calls, and a fio job carries its whole job
    /// file.
    Fio(std::sync::Arc<super::FioJob>),
    /// A kind declared as a script of system calls (`jobs::Script`), with its keys' values.
    #[serde(rename = "script")]
    Scripted(ScriptedJob),
}

impl JobConfig {
    /// The job's kind in the registry of job kinds.
    pub fn info(&self) -> &'static JobKind {
        match self {
            JobConfig::Scripted(s) => s.kind,
            other => crate::jobs::job_kind(other.kind()).expect("every job kind is in the registry"),
        }
    }

    /// Whether the job writes a file it creates itself (its `file`), as `dd of=` does.
    pub fn writes_own_file(&self) -> bool {
        self.info().file == FileUse::Writes
    }

    /// A job whose operations' latencies are the question (a reader, a commit probe, a
    /// launch, a fio job), not a bulk writer whose write() calls only measure throttling.
    pub fn latency_sensitive(&self) -> bool {
        self.info().logs_ops
    }

    /// Load that runs beside the work until stopped (`spin`): `until_done` does not wait
    /// for it.
    pub fn is_background(&self) -> bool {
        self.info().background
    }

    /// Bytes of the existing file the job reads (laid out before the run), if it reads one.
    pub fn read_file_size(&self) -> Option<u64> {
        match self {
            JobConfig::Cat { file_size, .. } | JobConfig::Randread { file_size, .. } => Some(*file_size),
            JobConfig::Scripted(s) if s.kind.file == FileUse::Reads => Some(s.param("file_size")),
            _ => None,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            JobConfig::Dd { .. } => "dd",
            JobConfig::Netwrite { .. } => "netwrite",
            JobConfig::Cat { .. } => "cat",
            JobConfig::Randread { .. } => "randread",
            JobConfig::Fsync { .. } => "fsync",
            JobConfig::Replace { .. } => "replace",
            JobConfig::Sync { .. } => "sync",
            JobConfig::Spin => "spin",
            JobConfig::Du { .. } => "du",
            JobConfig::Launch { .. } => "launch",
            JobConfig::Ls { .. } => "ls",
            JobConfig::Tiotest { .. } => "tiotest",
            JobConfig::Fio(_) => "fio",
            JobConfig::Scripted(s) => s.kind.name,
        }
    }
}
