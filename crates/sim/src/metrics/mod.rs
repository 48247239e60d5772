//! What a run produces: per-task and per-device figures, time series and trace records.
//!
//! Everything here is plain data. Formatting into `summary.json`, `trace.txt` and
//! `timeseries.csv` happens in the report crate, so the hot loop never builds strings.

pub mod fio;
pub mod hist;
pub mod tiotest;
pub mod trace;

/// A PSI pressure figure, as the results give it.
pub use crate::kernel::psi::Pressure;

/// Operations logged per task at most (32 MiB of log): a longer run keeps its first ones.
pub const MAX_OP_LOG: usize = 2_000_000;

/// The kernfs inode number the model gives the `i`th declared group (the root's is 1), as
/// the trace's `cgroup_ino` prints it.
pub const FIRST_CGROUP_INO: u64 = 1000;
pub use hist::LatencyHist;
pub use trace::{TraceEvent, TraceLog, TraceRecord, TraceSink};

use crate::config::Scenario;
use crate::Ns;

/// The outcome of one simulation run.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub scenario: Scenario,
    /// Simulated time covered, ns.
    pub sim_ns: Ns,
    /// Events processed by the engine.
    pub events: u64,
    pub tasks: Vec<TaskResult>,
    pub devices: Vec<DeviceResult>,
    /// Trace records in time order, when they were kept in memory.
    pub trace: TraceLog,
    /// Records handed to a [`trace::TraceSink`] instead (not in `trace`).
    pub trace_streamed: u64,
    /// Records past the in-memory cap ([`trace::TraceBuf::MAX_RECORDS`]), counted, not kept.
    pub trace_dropped: u64,
    /// `comm` and pid of every entity that can appear in the trace, indexed by `TraceRecord::who`.
    pub comms: Vec<(String, u32)>,
    /// One vmstat-like sample per simulated second.
    pub vmstat: Vec<VmstatSample>,
    /// One throttling-state sample per bandwidth interval (200 ms) per device.
    pub throttle: Vec<ThrottleSample>,
    /// tiotest's per-phase table (empty without tiotest tasks).
    pub tiotest: Vec<tiotest::TiotestPhase>,
    /// Each memory cgroup, in the scenario's order (empty without cgroups).
    pub cgroups: Vec<CgroupResult>,
    /// Each fio job clone, in task order (empty without fio jobs).
    pub fio: Vec<fio::FioResult>,
    /// Pressure stall figures per second and group (the system, then each cgroup), the last
    /// of each group at the run's end.
    pub pressure: Vec<PressureSample>,
}

/// One group's pressure at one instant, as its pressure files show it: io, memory and cpu,
/// `some` then `full` for each (`kernel::psi`).
#[derive(Clone, Copy, Debug)]
pub struct PressureSample {
    pub t_ns: Ns,
    /// 0: the system (`/proc/pressure`); 1 + i: the scenario's cgroup i.
    pub group: u16,
    pub figures: [crate::kernel::psi::Pressure; 6],
}

impl PressureSample {
    /// The share of a run of `sim_ns` that figure `k` (io some, io full, memory some, ...)
    /// was stalled, percent: its total over the run's length.
    pub fn stalled_pct(&self, k: usize, sim_ns: Ns) -> f64 {
        self.figures[k].total_us as f64 / 1e4 / (sim_ns as f64 / 1e9).max(1e-9)
    }
}

impl RunResult {
    /// Each group's pressure files at the run's end (its last sample), the system first.
    pub fn pressure_at_end(&self) -> Vec<&PressureSample> {
        let groups = self.pressure.iter().map(|s| s.group).max().map_or(0, |g| g + 1);
        (0..groups)
            .filter_map(|g| self.pressure.iter().rev().find(|s| s.group == g))
            .collect()
    }
}

/// What happened in a group over the run (`memory.events`, `memory.stat`'s reclaim counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemcgEvents {
    /// Charges that met `memory.max` (`max` in memory.events).
    pub max_events: u64,
    /// Charges made while over `memory.high` (`high`).
    pub high_events: u64,
    /// Pages the group's own reclaim evicted.
    pub reclaimed: u64,
    /// Global reclaims that had to take pages of the group below its memory.low (`low` in
    /// memory.events).
    pub low_events: u64,
    /// Sleeps in `reclaim_throttle` after a fruitless reclaim, and v1 waits on a page's
    /// writeback.
    pub throttled: u64,
    pub writeback_waits: u64,
    /// Penalty sleeps over memory.high, and their total, ns.
    pub high_delays: u64,
    pub high_delay_ns: u64,
}

/// One memory cgroup over the run.
#[derive(Clone, Debug)]
pub struct CgroupResult {
    pub path: String,
    /// The `cgroup_ino` the trace prints for it.
    pub cgroup_ino: u64,
    /// memory.max (v1 memory.limit_in_bytes) and memory.high, bytes.
    pub memory_max: Option<u64>,
    pub memory_high: Option<u64>,
    pub events: MemcgEvents,
    /// One sample per simulated second, as the vmstat samples.
    pub samples: Vec<MemcgSample>,
}

/// A memory cgroup's pages at one instant (`memory.current`, `memory.stat`'s `file`,
/// `file_dirty`, `file_writeback`) and its dirty domain's thresholds (0 on cgroup v1 or
/// where the group has no wb of its own).
#[derive(Clone, Copy, Debug, Default)]
pub struct MemcgSample {
    pub t_ns: Ns,
    pub usage: u64,
    pub file: u64,
    pub dirty: u64,
    pub writeback: u64,
    pub dirty_thresh: u64,
    pub dirty_background_thresh: u64,
    /// io.stat's `rbytes` and `wbytes` so far: the group's completed reads and writes
    /// (`None` where a measurement could not read them).
    pub io_rbytes: Option<u64>,
    pub io_wbytes: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct TaskResult {
    pub name: String,
    /// Instance number within its `[[task]]` block (0-based).
    pub instance: u32,
    /// Job kind ("dd", "cat", ...).
    pub job: &'static str,
    pub pid: u32,
    pub device: String,
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// When the task started and stopped (or the end of the run), ns.
    pub started: Ns,
    pub ended: Ns,
    /// Bytes written over the second half of the task's life (steady state), and that span.
    pub steady_bytes: u64,
    pub steady_ns: Ns,
    /// balance_dirty_pages sleeps, in ns (only real sleeps: pause > 0).
    pub pauses: LatencyHist,
    /// The longest a balance_dirty_pages call had held the task when it went to sleep (the
    /// trace event's `paused`, or the sleep's `pause` if longer), ns. Where a call is one
    /// sleep (3.2 on) this is the longest pause; in the I/O-issuing loops of 2.6.x it leaves
    /// out writeback a call did before leaving without a further sleep.
    pub paused_max: Ns,
    /// Per-operation latency (read() for readers, fsync() for fsync callers, write() for dd), ns.
    pub op_latency: LatencyHist,
    /// Each operation of a latency-sensitive task as (end, latency), ns, in time order.
    pub ops: Vec<(Ns, Ns)>,
    pub cpu_sys_ns: Ns,
    pub cpu_user_ns: Ns,
    /// Time spent waiting for a free CPU, ns.
    pub runqueue_wait_ns: Ns,
    /// Waits for memory (an allocation that had to wait for reclaim, until it succeeded) and
    /// their total time, ns.
    pub reclaim_waits: u64,
    pub reclaim_wait_ns: Ns,
    /// Schedules per page-wait site and page-wait wakeups (all and spurious).
    pub sched: WaitStats,
    /// Where its fsync/fdatasync/sync calls (and O_SYNC writes' syncs) spent their time.
    pub syncs: SyncParts,
}

/// The time sync calls spent in each of their waits: their data's writeback (behind whatever
/// the device had queued), the journal commit, the cache flush.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncParts {
    pub calls: u64,
    /// Summed over the calls: [data, commit, flush], ns.
    pub total: [Ns; 3],
    /// The slowest call's: [data, commit, flush], ns.
    pub worst: [Ns; 3],
}

impl SyncParts {
    /// One call's parts.
    pub fn record(&mut self, parts: [Ns; 3]) {
        self.calls += 1;
        for (t, p) in self.total.iter_mut().zip(parts) {
            *t += p;
        }
        if parts.iter().sum::<Ns>() > self.worst.iter().sum::<Ns>() {
            self.worst = parts;
        }
    }
}

impl TaskResult {
    /// Throughput over the task's whole life, MB/s (10^6 bytes).
    pub fn throughput_mb_s(&self) -> f64 {
        let span = self.ended.saturating_sub(self.started);
        if span == 0 {
            return 0.0;
        }
        (self.bytes_written + self.bytes_read) as f64 / (span as f64 / 1e9) / 1e6
    }

    /// Throughput over the second half of the task's life, MB/s.
    pub fn steady_mb_s(&self) -> f64 {
        if self.steady_ns == 0 {
            return 0.0;
        }
        self.steady_bytes as f64 / (self.steady_ns as f64 / 1e9) / 1e6
    }
}

#[derive(Clone, Debug)]
pub struct DeviceResult {
    pub name: String,
    pub model: &'static str,
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// Fraction of the run during which the device had at least one request in service.
    pub util: f64,
    /// Request latency from dispatch to completion, ns.
    pub request_latency: LatencyHist,
    pub requests_written: u64,
    pub requests_read: u64,
    /// Cache flushes sent to the device (diskstats' flush requests) and writes that carried
    /// REQ_FUA.
    pub flushes: u64,
    pub fua_writes: u64,
    /// The file system's journal, if it has one.
    pub journal: Option<JournalResult>,
    /// blk-iolatency on this device, where a cgroup has an io.latency target on it: per
    /// cgroup (in the scenario's order), what it did to and for that group.
    pub iolatency: Vec<crate::block::blk_iolatency::IolatGroupStats>,
}

/// What a device's journal did (`/proc/fs/jbd2/<dev>/info` in spirit).
#[derive(Clone, Debug, Default)]
pub struct JournalResult {
    /// `ext4`, `ext3` or `xfs`.
    pub fs: &'static str,
    /// Commits completed (xfs: CIL checkpoints).
    pub commits: u64,
    /// Blocks written to the log (descriptors and commit blocks included; xfs: 512-byte
    /// basic blocks).
    pub blocks_logged: u64,
    /// Commit time from T_LOCKED to the commit record on stable storage: mean and max, ns.
    pub commit_mean_ns: Ns,
    pub commit_max_ns: Ns,
    /// Mean time of a commit's phases: T_LOCKED, T_FLUSH (ordered data), logging, ns.
    pub locked_mean_ns: Ns,
    pub flushing_mean_ns: Ns,
    pub logging_mean_ns: Ns,
    /// Handles that waited for a locked transaction, and their total wait, ns.
    pub handle_waits: u64,
    pub handle_wait_ns: Ns,
    /// Metadata blocks written home by checkpointing.
    pub checkpoint_blocks: u64,
    /// ext4 fast commits written (`/proc/fs/ext4/<dev>/fc_info`'s commits).
    pub fast_commits: u64,
}

/// One device's completed requests over a sample interval, as `/sys/block/<dev>/stat`
/// counts them: `await` is the ticks over the requests, `aqu-sz` the ticks over the
/// interval (iostat's formulas).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevIo {
    pub reads: u64,
    pub writes: u64,
    /// Summed time of the completed reads and writes from their start (a tag and a place
    /// in the scheduler, `start_time_ns`) to their completion.
    pub read_ticks_ns: u64,
    pub write_ticks_ns: u64,
    /// Bios merged into a queued request (`rrqm`/`wrqm`).
    pub read_merges: u64,
    pub write_merges: u64,
    /// Cache flushes completed and their summed time from dispatch to completion (the
    /// diskstats flush fields; iostat's `f/s`, `f_await`).
    pub flushes: u64,
    pub flush_ticks_ns: u64,
}

/// One task's operations completed over a sample interval (for latency over time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpSecond {
    pub ops: u64,
    pub sum_ns: u64,
    pub max_ns: u64,
}

impl OpSecond {
    pub fn record(&mut self, lat: Ns) {
        self.ops += 1;
        self.sum_ns += lat;
        self.max_ns = self.max_ns.max(lat);
    }
}

/// One second of `/proc/vmstat`-like state.
#[derive(Clone, Debug, Default)]
pub struct VmstatSample {
    pub t_ns: Ns,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_free: u64,
    pub nr_file: u64,
    pub nr_dirtied: u64,
    pub nr_written: u64,
    pub dirty_thresh: u64,
    pub dirty_background_thresh: u64,
    /// KiB read from / written to all devices during the second (vmstat `bi`/`bo`).
    pub bi_kb: u64,
    pub bo_kb: u64,
    /// Tasks runnable and blocked at the sample instant.
    pub procs_running: u32,
    pub procs_blocked: u32,
    /// Per device: bytes written and read during the second.
    pub dev_write_bytes: Vec<u64>,
    pub dev_read_bytes: Vec<u64>,
    /// Per device: fraction of the interval with a request in service (iostat `%util`).
    pub dev_util: Vec<f64>,
    /// Per device: requests completed in the interval (empty where not recorded).
    pub dev_io: Vec<DevIo>,
    /// Operations of the latency-sensitive tasks (not bulk writers) that completed in the
    /// interval, by task index; tasks without any are left out.
    pub task_ops: Vec<(u32, OpSecond)>,
}

/// The throttling state of one wb at one bandwidth update.
#[derive(Clone, Debug, Default)]
pub struct ThrottleSample {
    pub t_ns: Ns,
    pub device: u16,
    pub dirty: u64,
    pub wb_dirty: u64,
    pub thresh: u64,
    pub bg_thresh: u64,
    pub limit: u64,
    pub setpoint: u64,
    pub freerun: u64,
    pub wb_thresh: u64,
    /// Pages per second.
    pub write_bw: u64,
    pub avg_write_bw: u64,
    pub dirty_ratelimit: u64,
    pub balanced_dirty_ratelimit: u64,
    pub dirty_rate: u64,
    pub pos_ratio: u64,
}

impl ThrottleSample {
    /// A quantity the run's kernel generation did not have (written as an empty cell).
    pub const NA: u64 = u64::MAX;

    /// Keep what an I/O-issuing generation had: its own thresholds, the dirty counts; the
    /// IO-less quantities (freerun, setpoint, limit, bandwidths, ratelimits, pos_ratio) did
    /// not exist and become [`Self::NA`].
    pub fn era_only(&mut self, l: EraLimits) {
        self.thresh = l.thresh;
        self.bg_thresh = l.bg_thresh;
        self.wb_thresh = l.wb_thresh.unwrap_or(Self::NA);
        for v in [
            &mut self.freerun,
            &mut self.setpoint,
            &mut self.limit,
            &mut self.write_bw,
            &mut self.avg_write_bw,
            &mut self.dirty_ratelimit,
            &mut self.balanced_dirty_ratelimit,
            &mut self.dirty_rate,
            &mut self.pos_ratio,
        ] {
            *v = Self::NA;
        }
    }
}

/// Per-task wait counters as reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitStats {
    pub wait_on_page_bit: u64,
    pub lock_page: u64,
    pub wait_on_buffer: u64,
    /// A journal handle's waits for a buffer the commit is logging (`do_get_write_access`).
    pub do_get_write_access: u64,
    pub wakeups: u64,
    pub spurious_wakeups: u64,
}

/// The thresholds of an I/O-issuing generation at one moment (see `DirtyThrottle::era_limits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EraLimits {
    pub bg_thresh: u64,
    pub thresh: u64,
    pub wb_thresh: Option<u64>,
}
