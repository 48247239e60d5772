//! A simulated user task: its job, progress, throttling state and what it measured.

use crate::config::JobConfig;
use crate::engine::RngStream;
use crate::metrics::{LatencyHist, MAX_OP_LOG};
use crate::mm::page_writeback::TaskDirty;
use crate::Ns;
use std::collections::VecDeque;

/// Where a task is in its job. Each job is a loop of system calls; a phase says which step
/// runs when the task is next woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not started yet.
    Idle,
    /// Start the next system call (write, read, fsync...).
    NextOp,
    /// A write() updates the inode's times in a journal handle (may wait for a locked
    /// transaction), then goes to the gate.
    FileModified,
    /// A buffered read updates the access time in a journal handle, then reads.
    FileAccessed,
    /// Before dirtying the next chunk: the balance_dirty_pages gate.
    Gate,
    /// Woken from a balance_dirty_pages sleep (or congestion wait).
    AfterBdpSleep,
    /// balance_dirty_pages made the task write back pages itself (I/O-issuing generations):
    /// walking them on a CPU, then submitting the requests.
    BdpWriteback,
    /// A metadata job (du, ls, launch) continues: the next lookup or read.
    Meta,
    /// Allocate page-cache pages for the chunk (may throttle in reclaim).
    Alloc,
    /// The copy ran on a CPU: account the chunk.
    CopyDone,
    /// Waiting for pages being read.
    WaitRead,
    /// A read's pages are uptodate: copy them out.
    ReadCopyDone,
    /// Waiting for direct I/O requests to complete.
    WaitDirect,
    /// A fio job's asynchronous I/O is in the block layer: `io_submit` returns.
    FioSubmitted,
    /// The CPU of that `io_submit` runs.
    FioSubmitCpu,
    /// The CPU of an fsync's entry runs (its file system's work before the first request).
    SyncEntry,
    /// Submitting fsync/sync writeback and waiting for it.
    WaitSync,
    /// rename() of a replaced file: its journal handle (may wait), then `auto_da_alloc`.
    Rename,
    /// The rename is done (its writeback submitted): record it, wait for the next interval.
    Renamed,
    /// Sleeping until the next interval (fsync/sync/randread think time).
    Think,
    /// A CPU-bound job's burst runs.
    Spin,
    /// Finished.
    Done,
}

pub(crate) struct Task {
    pub name: String,
    pub instance: u32,
    pub pid: u32,
    pub job: JobConfig,
    pub file: u32,
    pub dev: u16,
    /// The memory cgroup the task runs in (`None`: the root).
    pub memcg: Option<u16>,
    /// Pages allocated for the page cache and not yet inserted (charged to `memcg`).
    pub alloc_pending: u64,
    /// The current allocation already slept its memory.high penalty.
    pub high_delayed: bool,
    pub start: Ns,
    pub stop: Ns,
    pub phase: Phase,
    /// Invalidates stale timeouts when the task was woken early.
    pub wait_gen: u32,
    pub dirty: TaskDirty,
    /// File offset of the next operation, bytes.
    pub offset: u64,
    /// Bytes left in the current write()/read() call.
    pub op_left: u64,
    /// Size of the chunk being dirtied, pages.
    pub chunk_pages: u64,
    /// Bytes of the write the chunk covers.
    pub chunk_bytes: u64,
    /// Start of the current operation.
    pub op_start: Ns,
    /// When the current operation of a job run every `interval` was due (`None` before the
    /// first has ended; see [`crate::machine::Machine::think_until_due`]).
    pub op_due: Option<Ns>,
    /// Start of the current balance_dirty_pages sleep.
    pub sleep_start: Ns,
    /// Requests built and not yet accepted by the block layer, as (device, request id): the
    /// task's plug. A task may write back or read on any device (sync, metadata).
    pub pending: VecDeque<(u16, u32)>,
    /// The pending request the task sleeps on (wbt, tag or request slot), if any.
    pub rq_wait: Option<(u16, u32)>,
    /// Direct I/O requests in flight.
    pub inflight: u32,
    /// `TaskRun` events scheduled for the task and not yet run.
    pub runs_pending: u32,
    /// The wait generation of the task's pending timeout (`TaskTimeout`), if any.
    pub timeout_gen: Option<u32>,
    /// Where the task is in an fsync() or sync() call.
    pub sync: Option<crate::workload::state::SyncWait>,
    /// The call in progress is an fdatasync (or an O_DSYNC write's sync): it commits the
    /// journal only for data-integrity metadata.
    pub datasync: bool,
    /// The call in progress is a sync_file_range: the data of a range only, no journal
    /// commit, no cache flush, and nothing promised durable; `sfr_writes` when its waits
    /// write what they find dirty (all three flags: `WB_SYNC_ALL`).
    pub sync_range_only: bool,
    pub sfr_writes: bool,
    /// After a sync_file_range's `WAIT_BEFORE`: its write and last wait, over pages
    /// (first, end).
    pub sfr_then: Option<(bool, bool, u64, u64)>,
    /// The sync call in progress: the wait it is in (0 data, 1 commit, 2 flush), since when,
    /// and the time of each so far; and all calls' ([`crate::metrics::SyncParts`]).
    pub sync_wait: (usize, Ns, [Ns; 3]),
    pub sync_parts: crate::metrics::SyncParts,
    pub bytes_written: u64,
    pub bytes_read: u64,
    pub mid_bytes: Option<u64>,
    pub mid_ns: Ns,
    pub ended: Option<Ns>,
    pub pauses: LatencyHist,
    /// The largest `paused` (or `pause`) a balance_dirty_pages trace point showed.
    pub paused_max: Ns,
    pub op_latency: LatencyHist,
    /// The operations completed since the last per-second sample.
    pub sec_ops: crate::metrics::OpSecond,
    pub cpu_sys: Ns,
    pub cpu_user: Ns,
    pub runq_wait: Ns,
    /// Waiting for memory since (its first failed allocation), and the waits so far.
    pub reclaim_since: Option<Ns>,
    pub reclaim_waits: u64,
    pub reclaim_wait: Ns,
    /// The open file's readahead state (`struct file_ra_state`).
    pub ra: crate::mm::readahead::FileRaState,
    /// `conv=fsync` done.
    pub synced: bool,
    /// Calls a scripted job (`jobs::Script`) has made.
    pub calls: u64,
    /// Holds or waits for a CPU (a burst is in progress).
    pub on_cpu: bool,
    /// The burst in progress is the wakeup, not a copy.
    pub waking: bool,
    /// Sleeping in reclaim, `reclaim_throttle` or a memory.high penalty
    /// (`psi_memstall_enter` until the task runs again).
    pub memstall: bool,
    /// Its burst runs on a CPU now (`on_cpu` is also true while it waits for one).
    pub running: bool,
    /// When its last CPU burst ended.
    pub off_cpu_at: Ns,
    /// How long it slept before its last wakeup (the kernel paths it runs next are as cold
    /// as that: [`crate::kernel::cpu::cold_cost`]).
    pub slept: Ns,
    /// The PSI states the accounting holds for the task, and the CPU it holds them on.
    pub psi: (u8, u16),
    /// The task's own random stream (randread offsets).
    pub rng: RngStream,
    /// Direct reclaim in progress (pre-3.x reclaim): the next priority to scan at.
    pub reclaim_prio: u32,
    /// State of a metadata job (du, ls, launch).
    pub meta: Option<Box<crate::fs::metadata::MetaJob>>,
    /// Page wait queue state and per-site schedule counts.
    pub wq: crate::kernel::waitqueue::TaskWait,
    /// A tiotest thread's phase and progress.
    pub tio: crate::workload::state::TioTask,
    /// A fio job's files, in-flight I/O and statistics.
    pub fio: Option<Box<crate::workload::fio::FioState>>,
    /// Groups of tasks (`stonewall`, `wait_for`) to finish before this task starts.
    pub waits_for: Vec<usize>,
    /// A latency-sensitive job (not a bulk writer): each operation is logged as (end,
    /// latency) for the op latency timeline.
    pub logs_ops: bool,
    pub op_log: Vec<(Ns, Ns)>,
}

impl Task {
    /// One operation (a read(), write(), fsync(), a launch) took `lat`: its distribution
    /// and this second's figures.
    pub(crate) fn record_op(&mut self, end: Ns, lat: Ns) {
        self.op_latency.record(lat);
        self.sec_ops.record(lat);
        if self.logs_ops && self.op_log.len() < MAX_OP_LOG {
            self.op_log.push((end, lat));
        }
    }

    /// Instance `instance` of a task group, before it starts: `file` is its inode, `stop` the
    /// time it is stopped (the run's end at the latest). Its random stream is named after the
    /// group and instance, so adding a task elsewhere does not change this one's draws.
    pub(crate) fn new(tc: &crate::config::TaskConfig, instance: u32, pid: u32, file: u32, stop: Ns, seed: u64) -> Task {
        Task {
            name: tc.name.clone(),
            instance,
            pid,
            job: tc.job.clone(),
            file,
            dev: tc.device as u16,
            memcg: tc.cgroup.map(|c| c as u16),
            alloc_pending: 0,
            high_delayed: false,
            start: tc.start_of(instance),
            stop,
            phase: Phase::Idle,
            wait_gen: 0,
            dirty: TaskDirty::default(),
            offset: 0,
            op_left: 0,
            chunk_pages: 0,
            chunk_bytes: 0,
            op_start: 0,
            op_due: None,
            sleep_start: 0,
            pending: Default::default(),
            rq_wait: None,
            inflight: 0,
            sync: None,
            datasync: false,
            sync_range_only: false,
            sfr_writes: false,
            sfr_then: None,
            sync_wait: (0, 0, [0; 3]),
            sync_parts: Default::default(),
            runs_pending: 0,
            timeout_gen: None,
            bytes_written: 0,
            bytes_read: 0,
            mid_bytes: None,
            mid_ns: 0,
            ended: None,
            pauses: LatencyHist::new(),
            paused_max: 0,
            op_latency: LatencyHist::new(),
            sec_ops: Default::default(),
            cpu_sys: 0,
            cpu_user: 0,
            runq_wait: 0,
            reclaim_since: None,
            reclaim_waits: 0,
            reclaim_wait: 0,
            ra: Default::default(),
            synced: false,
            calls: 0,
            on_cpu: false,
            waking: false,
            memstall: false,
            running: false,
            off_cpu_at: 0,
            slept: Ns::MAX,
            psi: (0, 0),
            rng: RngStream::new(seed, &format!("task/{}/{}", tc.name, instance)),
            reclaim_prio: crate::mm::inactive_list::DEF_PRIORITY,
            meta: None,
            wq: Default::default(),
            tio: Default::default(),
            fio: None,
            waits_for: tc.after.clone(),
            logs_ops: tc.job.latency_sensitive(),
            op_log: Vec::new(),
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The PSI states the task is in (`TSK_IOWAIT`, `TSK_MEMSTALL`, `TSK_RUNNING`, `TSK_ONCPU`):
    /// runnable while it holds or waits for a CPU, on it while its burst runs; else in I/O wait where the kernel sleeps in
    /// `io_schedule` — on a page, a request slot, a `balance_dirty_pages` pause, a direct or
    /// synchronous read or write, fsync's data and flush waits (not jbd2's commit wait, a plain
    /// `wait_event`; not libaio's `io_getevents`) — and in a memory stall while reclaim holds it.
    pub(crate) fn psi_states(&self) -> u8 {
        use crate::kernel::psi::{TSK_IOWAIT, TSK_MEMSTALL, TSK_ONCPU, TSK_RUNNING};
        if self.on_cpu {
            return TSK_RUNNING | if self.running { TSK_ONCPU } else { 0 };
        }
        if matches!(self.phase, Phase::Idle | Phase::Done) {
            return 0;
        }
        let io = self.wq.wait.is_some()
            || self.rq_wait.is_some()
            || match self.phase {
                Phase::WaitRead | Phase::AfterBdpSleep | Phase::Gate | Phase::BdpWriteback | Phase::Meta => true,
                Phase::WaitDirect => !matches!(&self.job, JobConfig::Fio(j) if j.engine == crate::config::FioEngine::Libaio),
                Phase::WaitSync => self.sync_wait.0 != 1,
                _ => false,
            };
        (if io { TSK_IOWAIT } else { 0 }) | if self.memstall { TSK_MEMSTALL } else { 0 }
    }
}

/// The `[[task]]` groups and what waits for them (fio's `stonewall`, `wait_for`), indexed so
/// that a task's end costs O(1) plus its group's dependents: thousands of groups used to
/// cost a scan of every group and every task at each end.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskGroups {
    /// Each task's group.
    of: Vec<u32>,
    /// Tasks of each group not done yet.
    unfinished: Vec<u32>,
    /// The tasks waiting for group g are `deps[dep_first[g]..dep_first[g + 1]]`, by task id.
    dep_first: Vec<u32>,
    deps: Vec<u32>,
    /// Distinct groups each task still waits for (one that does not exist: for ever).
    waiting: Vec<u32>,
    /// Tasks not done that are still to run or running (`start < stop`): `until_done` ends
    /// the run when none is left. Background load (`spin`) is not counted: it runs until
    /// stopped, and the run is over when the work beside it is.
    live: u32,
    /// Each task's whether it is background load.
    background: Vec<bool>,
}

impl TaskGroups {
    /// The groups of `tasks`, built from `cfg`'s `[[task]]` tables (in whose order the
    /// tasks were spawned).
    pub(crate) fn new(cfg: &[crate::config::TaskConfig], tasks: &[Task]) -> Self {
        let ngroups = cfg.len();
        let mut of = Vec::with_capacity(tasks.len());
        for (g, tc) in cfg.iter().enumerate() {
            of.extend(std::iter::repeat_n(g as u32, tc.count as usize));
        }
        let unfinished = cfg.iter().map(|tc| tc.count).collect();
        // The distinct groups a task waits for, into `buf`.
        let distinct = |t: &Task, buf: &mut Vec<usize>| {
            buf.clear();
            buf.extend_from_slice(&t.waits_for);
            buf.sort_unstable();
            buf.dedup();
        };
        // A counting sort of (group, task): each group's dependents in task order.
        let mut dep_first = vec![0u32; ngroups + 1];
        let mut waiting = Vec::with_capacity(tasks.len());
        let mut groups = Vec::new();
        for t in tasks {
            distinct(t, &mut groups);
            waiting.push(groups.len() as u32);
            for &g in groups.iter().filter(|&&g| g < ngroups) {
                dep_first[g + 1] += 1;
            }
        }
        for g in 0..ngroups {
            dep_first[g + 1] += dep_first[g];
        }
        let mut fill = dep_first.clone();
        let mut deps = vec![0u32; dep_first[ngroups] as usize];
        for (u, t) in tasks.iter().enumerate() {
            distinct(t, &mut groups);
            for &g in groups.iter().filter(|&&g| g < ngroups) {
                deps[fill[g] as usize] = u as u32;
                fill[g] += 1;
            }
        }
        // A scenario of background load alone runs it until it stops.
        let all_background = tasks.iter().all(|t| t.job.is_background());
        let background: Vec<bool> = tasks.iter().map(|t| t.job.is_background() && !all_background).collect();
        TaskGroups {
            of,
            unfinished,
            dep_first,
            deps,
            waiting,
            live: tasks.iter().zip(&background).filter(|(t, &bg)| t.start < t.stop && !bg).count() as u32,
            background,
        }
    }

    /// The group of task `tid`.
    pub(crate) fn group_of(&self, tid: u32) -> usize {
        self.of[tid as usize] as usize
    }

    /// Whether some task of group `g` is not done (a group that does not exist never is).
    pub(crate) fn running(&self, g: usize) -> bool {
        self.unfinished.get(g).is_none_or(|&n| n > 0)
    }

    /// The tasks that wait for group `g`, by task id.
    pub(crate) fn dependents(&self, g: usize) -> std::ops::Range<usize> {
        self.dep_first[g] as usize..self.dep_first[g + 1] as usize
    }

    /// The `i`th entry of the dependents' table (see [`TaskGroups::dependents`]).
    pub(crate) fn dependent(&self, i: usize) -> u32 {
        self.deps[i]
    }

    /// Task `u` saw one of the groups it waits for finish: true if it waits for no other
    /// now (false if it waited for none).
    pub(crate) fn released(&mut self, u: u32) -> bool {
        let w = &mut self.waiting[u as usize];
        if *w == 0 {
            return false;
        }
        *w -= 1;
        *w == 0
    }

    /// Task `tid` (whose `start < stop` said `live`) is done.
    pub(crate) fn done(&mut self, tid: u32, live: bool) {
        self.unfinished[self.of[tid as usize] as usize] -= 1;
        self.live -= u32::from(live && !self.background[tid as usize]);
    }

    /// Waiting task `tid`'s start moved: it was live (`start < stop`) as `was`, is as `now`.
    pub(crate) fn restarted(&mut self, tid: u32, was: bool, now: bool) {
        if !self.background[tid as usize] {
            self.live = self.live - u32::from(was) + u32::from(now);
        }
    }

    /// No task is left to run (`until_done`'s test).
    pub(crate) fn all_done(&self) -> bool {
        self.live == 0
    }
}
