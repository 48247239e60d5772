//! A fio job as the simulator runs it: the options of one job section, resolved (units
//! applied, `[global]` merged, defaults filled in). The scenario crate parses job files into
//! this; `workload/fio/` runs it.

use crate::Ns;
use serde::Serialize;

/// Data direction, in fio's order (`DDIR_READ` = 0, `DDIR_WRITE` = 1): the index of the
/// per-direction arrays below and the third column of fio's logs.
pub const READ: usize = 0;
pub const WRITE: usize = 1;

/// `rw=`: what the job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FioRw {
    Read,
    Write,
    RandRead,
    RandWrite,
    /// `rw` / `readwrite`: sequential, reads and writes mixed by `rwmixread`.
    ReadWrite,
    RandRw,
}

impl FioRw {
    pub fn random(self) -> bool {
        matches!(self, FioRw::RandRead | FioRw::RandWrite | FioRw::RandRw)
    }
    pub fn reads(self) -> bool {
        !matches!(self, FioRw::Write | FioRw::RandWrite)
    }
    pub fn writes(self) -> bool {
        !matches!(self, FioRw::Read | FioRw::RandRead)
    }
    /// fio's own spelling, as its JSON echoes the option.
    pub fn name(self) -> &'static str {
        match self {
            FioRw::Read => "read",
            FioRw::Write => "write",
            FioRw::RandRead => "randread",
            FioRw::RandWrite => "randwrite",
            FioRw::ReadWrite => "rw",
            FioRw::RandRw => "randrw",
        }
    }
}

/// The block size of one direction: `bs`, `bsrange` or `bssplit`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FioBs {
    Fixed(u64),
    /// Uniform over [min, max], in multiples of `min` (fio aligns to the minimum).
    Range(u64, u64),
    /// (size, weight in percent): weights sum to 100.
    Split(Vec<(u64, u32)>),
}

impl FioBs {
    pub fn min(&self) -> u64 {
        match self {
            FioBs::Fixed(b) => *b,
            FioBs::Range(lo, _) => *lo,
            FioBs::Split(v) => v.iter().map(|(b, _)| *b).min().unwrap_or(4096),
        }
    }
    pub fn max(&self) -> u64 {
        match self {
            FioBs::Fixed(b) => *b,
            FioBs::Range(_, hi) => *hi,
            FioBs::Split(v) => v.iter().map(|(b, _)| *b).max().unwrap_or(4096),
        }
    }
}

/// `random_distribution=`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FioDist {
    Random,
    /// Zipf with exponent θ (fio's `zipf:1.2`).
    Zipf(f64),
    /// Pareto with power h (fio's `pareto:0.9`).
    Pareto(f64),
}

/// How I/O is submitted: one call at a time, or `iodepth` in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FioEngine {
    /// psync, sync, pvsync, pvsync2: one pread()/pwrite() at a time.
    Sync,
    /// libaio: io_submit() of O_DIRECT I/O returns at once; buffered I/O is done inside it.
    Libaio,
    /// io_uring: O_DIRECT as libaio; buffered I/O is handed to a worker.
    IoUring,
}

/// What a job's file holds before the job starts (fio's file setup, `fallocate=` and
/// `overwrite=`): it decides whether a write allocates, converts an unwritten extent (a
/// journalled change `fdatasync` must commit) or only overwrites.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FioLayout {
    /// `fallocate=posix|native|keep` (fio's default is posix): blocks reserved as unwritten
    /// extents; the first write of each converts it at I/O completion.
    #[default]
    Preallocated,
    /// `fallocate=none|truncate`: a sparse file; writeback (or a direct write) allocates.
    Sparse,
    /// `overwrite=1`, or a job reads the file: fio writes it out first, every extent written.
    Written,
}

/// `sync=`: the file is opened O_SYNC or O_DSYNC, so every write() returns only once durable
/// (`generic_write_sync`; an O_DSYNC direct overwrite may go as one FUA write instead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FioSync {
    #[default]
    None,
    /// `sync=dsync`: O_DSYNC, data and the metadata needed to read it back.
    Dsync,
    /// `sync=1` or `sync=sync`: O_SYNC, the inode's timestamps too.
    Sync,
}

/// `write_{lat,bw,iops}_log` and their windowing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FioLogs {
    /// The prefix of each log (`name` gives `name_lat.1.log`); `None`: not written.
    pub lat: Option<String>,
    pub bw: Option<String>,
    pub iops: Option<String>,
    /// `log_avg_msec`: 0 logs every I/O; otherwise one row per window and direction.
    pub avg_msec: u64,
    /// `log_max_value`: a window's maximum rather than its mean.
    pub max_value: bool,
    /// `log_offset`: the offset column holds the I/O's offset (0 otherwise).
    pub offset: bool,
}

impl FioLogs {
    pub fn any(&self) -> bool {
        self.lat.is_some() || self.bw.is_some() || self.iops.is_some()
    }
}

/// One fio job (each of its `numjobs` clones is a task).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FioJob {
    /// The job's section name (fio's `jobname`).
    pub name: String,
    /// Its place among the file's jobs, from 0 (the log files' number is this + 1 + clone).
    pub index: u32,
    /// `groupid` in fio's output: jobs after a `stonewall` or `new_group` start a new group.
    pub group: u32,
    pub rw: FioRw,
    /// `rwmixread`: percent of a mixed job's I/Os that read.
    pub rwmixread: u32,
    /// Block sizes of reads and writes (`[READ]`, `[WRITE]`).
    pub bs: [FioBs; 2],
    /// Bytes of I/O per loop (`size`, or `io_size`), over all of the job's files.
    pub size: u64,
    /// Size of each file.
    pub file_size: u64,
    pub nrfiles: u32,
    /// The files are named by `filename` and shared by every clone and job that names them.
    pub shared_file: bool,
    pub engine: FioEngine,
    pub iodepth: u32,
    /// Refill the queue once in-flight I/O falls to this (`iodepth_low`).
    pub iodepth_low: u32,
    /// Reap at least this many completions before issuing more (`iodepth_batch_complete_min`).
    pub batch_complete_min: u32,
    /// O_DIRECT (`direct=1` or `buffered=0`).
    pub direct: bool,
    /// fsync() every N writes (`fsync`), or fdatasync() (`fdatasync`); 0: never.
    pub fsync_every: u32,
    pub fdatasync: bool,
    /// `sync_file_range=flags:N`: sync_file_range(2) over the range written since the last
    /// call, every N writes.
    pub sync_file_range: Option<SyncFileRange>,
    /// `sync=`: O_DSYNC or O_SYNC writes.
    pub sync: FioSync,
    /// What the file holds before the job (`fallocate=`, `overwrite=`).
    pub layout: FioLayout,
    /// fsync() at the end of the job (`end_fsync`) or on closing each file (`fsync_on_close`).
    pub end_fsync: bool,
    /// Rate caps, bytes/s and I/Os per second, per direction (0: none).
    pub rate: [u64; 2],
    pub rate_iops: [u64; 2],
    /// `thinktime` after every `thinktime_blocks` I/Os.
    pub thinktime: Ns,
    pub thinktime_blocks: u32,
    /// `runtime`: the job stops after this long (after `ramp_time`).
    pub runtime: Option<Ns>,
    /// `time_based`: run for `runtime` even after `size` is done, starting over.
    pub time_based: bool,
    /// `ramp_time`: run this long before recording statistics.
    pub ramp: Ns,
    pub loops: u32,
    pub dist: FioDist,
    /// Seed of the offsets' random stream (`randseed`, or fio's fixed one with `randrepeat`).
    pub seed: u64,
    /// Visit every block once per pass (fio's random map; `norandommap` turns it off).
    pub randommap: bool,
    /// `invalidate`: drop the file's cached pages before the job starts.
    pub invalidate: bool,
    pub logs: FioLogs,
    /// `percentile_list`, in percent.
    pub percentiles: Vec<f64>,
    /// The options as written, `[global]`'s first: fio's JSON echoes those as `global
    /// options` and the job's own as `job options`.
    pub options: Vec<(String, String)>,
    /// How many of `options` came from `[global]` sections.
    pub global_options: usize,
}

impl FioJob {
    /// The directions the job issues.
    pub fn does(&self, ddir: usize) -> bool {
        if ddir == READ {
            self.rw.reads()
        } else {
            self.rw.writes()
        }
    }
}

/// fio's default `percentile_list`.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
];

/// fio's `sync_file_range=` option: which of sync_file_range(2)'s steps each call takes, and
/// after how many writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SyncFileRange {
    pub every: u32,
    /// `SYNC_FILE_RANGE_WAIT_BEFORE`: wait for the range's writeback already under way.
    pub wait_before: bool,
    /// `SYNC_FILE_RANGE_WRITE`: start writeback of its dirty pages.
    pub write: bool,
    /// `SYNC_FILE_RANGE_WAIT_AFTER`: wait for the range's writeback, the call's included.
    pub wait_after: bool,
}

impl SyncFileRange {
    /// All three steps: since 5.2 a data-integrity write of the range (`WB_SYNC_ALL`), as
    /// fdatasync's data part, without its journal commit and cache flush.
    pub fn write_and_wait(&self) -> bool {
        self.wait_before && self.write && self.wait_after
    }
}
