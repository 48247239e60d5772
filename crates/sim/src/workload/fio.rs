//! A fio job as a task: the loop of fio's `do_io` over the simulated kernel.
//!
//! Each I/O is chosen as fio chooses it — direction by `rwmixread` (drawn per I/O), file in
//! turn (`file_service_type=roundrobin`), offset sequential or by `random_distribution` with
//! the random map, block size from `bs`/`bsrange`/`bssplit` — after the `rate` and
//! `thinktime` waits and the `fsync=N` calls. Synchronous engines (psync and friends) make one
//! pread()/pwrite() at a time through the same paths as every other task: buffered writes pass
//! `balance_dirty_pages`, buffered reads use the page cache and readahead, O_DIRECT goes to the
//! block layer. libaio and io_uring keep `iodepth` O_DIRECT I/Os in flight: each submission
//! builds its requests, submits them (waiting for a tag or wbt like any submitter, which is
//! where `io_submit` blocks in the kernel) and costs a system call of CPU; each completion is
//! reaped, and the queue is refilled once `iodepth_low` or `iodepth_batch_complete_min`
//! allow. Buffered I/O through libaio is done inside `io_submit` (the kernel does not make it
//! asynchronous), so it runs one at a time and its time is submission latency; io_uring hands
//! it to a worker, one at a time per file here (writes to one file are serialised by io-wq's
//! hashing; the model serialises its buffered reads too), and its time is completion latency.

use super::fio_offsets::OffsetGen;
use crate::config::{FioBs, FioEngine, FioJob, FioRw, FioSync, JobConfig, READ, WRITE};
use crate::drivers::Op;
use crate::engine::RngStream;
use crate::kernel::cpu::Who;
use crate::kernel::task::Phase;
use crate::machine::Machine;
use crate::metrics::fio::{FioStats, LogRow, LogWindow, SAMPLE_NS};
use crate::mm::page_cache::PageState;
use crate::units::page_range;
use crate::Ns;

/// One I/O of a fio job.
#[derive(Clone, Copy, Debug, Default)]
pub struct FioIo {
    /// When fio started it (`io_u->start_time`) and when its submission returned.
    pub start: Ns,
    pub submitted: Ns,
    pub ddir: u8,
    pub file: u32,
    pub offset: u64,
    pub bs: u64,
    /// Its requests not yet completed (O_DIRECT).
    pub reqs: u32,
    /// An O_DSYNC direct write sent as FUA writes: durable when they complete.
    pub fua: bool,
}

/// A fio job clone's progress.
pub struct FioState {
    /// The job's files (inodes), used in turn.
    pub files: Vec<u32>,
    next_file: usize,
    /// Next sequential offset in each file.
    seq: Vec<u64>,
    /// Random offsets of each file, in blocks of the smallest block size.
    gens: Vec<OffsetGen>,
    rng: RngStream,
    /// Bytes issued in this pass over `size`, and passes finished (`loops`).
    issued: u64,
    passes: u32,
    /// When the job began, when statistics begin (after `ramp_time`), when it must end.
    begun: Option<Ns>,
    stats_from: Ns,
    end: Option<Ns>,
    since_think: u32,
    since_sync: u32,
    /// Writes since the last sync_file_range call, and the pages they wrote: (file, first,
    /// end), fio's `first_write` .. `last_write` of the file.
    since_sfr: u32,
    sfr_range: Option<(u32, u64, u64)>,
    /// Writes issued since the job's last fsync (for `end_fsync`).
    unsynced: bool,
    /// Issued since the job began, per direction, for `rate` and `rate_iops`.
    rate_bytes: [u64; 2],
    rate_ios: [u64; 2],
    /// In-flight I/Os by slot (the request's `aio` tag); free slots.
    slots: Vec<FioIo>,
    free: Vec<u16>,
    pub inflight: u32,
    /// The task waits in `WaitDirect` until in-flight I/O falls to this.
    wake_at: u32,
    /// The I/O being submitted (async) or done (sync).
    cur: FioIo,
    cur_slot: u16,
    /// Files still to fsync at the end (`end_fsync`), and whether that was started.
    end_syncs: usize,
    finishing: bool,
    /// Times the task blocked (fio's `ctx`).
    pub ctx: u64,
    /// An O_SYNC/O_DSYNC write whose data is written and whose `generic_write_sync` is still
    /// to come (or under way): it completes, for fio, when that returns.
    write_sync: Option<FioIo>,
    pub stats: FioStats,
    /// Next bandwidth/IOPS sample, and the open window of a `log_avg_msec` log.
    sample_at: Ns,
    window: LogWindow,
}

impl FioState {
    pub fn new(job: &FioJob, files: Vec<u32>, seed: u64, instance: u32) -> Self {
        let mut rng = RngStream::new(job.seed ^ seed, &format!("fio/{}/{}", job.name, instance));
        let block = job.bs[READ].min().min(job.bs[WRITE].min()).max(1);
        let blocks = job.file_size / block;
        let gens = files
            .iter()
            .map(|_| OffsetGen::new(blocks, job.dist, job.randommap, &mut rng))
            .collect();
        FioState {
            seq: vec![0; files.len()],
            files,
            next_file: 0,
            gens,
            rng,
            issued: 0,
            passes: 0,
            begun: None,
            stats_from: 0,
            end: None,
            since_think: 0,
            since_sync: 0,
            since_sfr: 0,
            sfr_range: None,
            unsynced: false,
            rate_bytes: [0; 2],
            rate_ios: [0; 2],
            slots: Vec::new(),
            free: Vec::new(),
            inflight: 0,
            wake_at: 0,
            cur: FioIo::default(),
            cur_slot: 0,
            end_syncs: 0,
            finishing: false,
            ctx: 0,
            write_sync: None,
            stats: FioStats::default(),
            sample_at: 0,
            window: LogWindow::default(),
        }
    }

    fn alloc_slot(&mut self, io: FioIo) -> u16 {
        match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = io;
                s
            }
            None => {
                self.slots.push(io);
                (self.slots.len() - 1) as u16
            }
        }
    }
}

/// What the job does next.
enum Next {
    Issue(FioIo),
    /// Sleep until in-flight I/O falls to the given count.
    Wait(u32),
    Sleep(Ns),
    Fsync(u32),
    /// sync_file_range(2) over pages [first, end) of a file.
    SyncRange(u32, u64, u64),
    Finish,
}

/// A block size for direction `ddir`, from a fixed size, a range or a split.
fn pick_bs(bs: &FioBs, rng: &mut RngStream) -> u64 {
    match bs {
        FioBs::Fixed(b) => *b,
        FioBs::Range(lo, hi) => {
            let steps = (hi - lo) / lo.max(&1) + 1;
            lo + rng.below(steps) * lo
        }
        FioBs::Split(v) => {
            let mut r = rng.below(100) as u32;
            for &(b, w) in v {
                if r < w {
                    return b;
                }
                r -= w;
            }
            v.last().map_or(4096, |&(b, _)| b)
        }
    }
}

fn job(j: &JobConfig) -> &FioJob {
    match j {
        JobConfig::Fio(f) => f,
        _ => unreachable!("fio state on a task that runs no fio job"),
    }
}

impl Machine {
    /// The fio task's next step (from `next_op`).
    pub(crate) fn fio_next(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let now = self.now();
        if self.tasks[t].fio.as_ref().expect("fio task").begun.is_none() {
            self.fio_begin(tid);
        }
        if let Some(io) = self.tasks[t].fio.as_ref().expect("fio task").write_sync {
            return self.generic_write_sync(tid, io);
        }
        let next = {
            let task = &mut self.tasks[t];
            let j = job(&task.job);
            let f = task.fio.as_mut().expect("fio task");
            decide(j, f, now, task.stop)
        };
        match next {
            Next::Issue(io) => self.fio_issue(tid, io),
            Next::Wait(n) => {
                let f = self.tasks[t].fio.as_mut().expect("fio task");
                f.wake_at = n;
                f.ctx += 1;
                self.tasks[t].phase = Phase::WaitDirect;
                None
            }
            Next::Sleep(ns) => {
                self.tasks[t].fio.as_mut().expect("fio task").ctx += 1;
                self.tasks[t].phase = Phase::Think;
                self.sleep_task(tid, ns.max(1));
                None
            }
            Next::Fsync(file) => {
                self.tasks[t].file = file;
                if job(&self.tasks[t].job).fdatasync {
                    self.vfs_fdatasync(tid)
                } else {
                    self.vfs_fsync(tid)
                }
            }
            Next::SyncRange(file, first, end) => {
                self.tasks[t].file = file;
                let flags = job(&self.tasks[t].job).sync_file_range.expect("sync_file_range");
                self.ksys_sync_file_range(tid, first, end, flags)
            }
            Next::Finish => {
                let task = &mut self.tasks[t];
                let logs = &job(&task.job).logs;
                let f = task.fio.as_mut().expect("fio task");
                close_samples(f, logs, now);
                f.stats.ended = now.max(f.stats_from);
                self.task_done(tid)
            }
        }
    }

    /// Each fio task's statistics, for fio's JSON and logs; jobs the run's end interrupted
    /// end there.
    pub(crate) fn fio_results(&mut self) -> Vec<crate::metrics::fio::FioResult> {
        let end = self.run_end.unwrap_or(self.cfg.duration);
        let mut out = Vec::new();
        for (i, t) in self.tasks.iter_mut().enumerate() {
            let Some(f) = t.fio.as_mut() else { continue };
            let JobConfig::Fio(j) = &t.job else { continue };
            if f.begun.is_some() && t.phase != Phase::Done {
                advance_samples(f, j, end);
                close_samples(f, &j.logs, end);
                f.stats.ended = end.max(f.stats_from);
            }
            out.push(crate::metrics::fio::FioResult {
                task: i,
                job: (**j).clone(),
                clone: t.instance,
                stats: std::mem::take(&mut f.stats),
                cpu_user_ns: t.cpu_user,
                cpu_sys_ns: t.cpu_sys,
                ctx: {
                    let w = t.wq.stats();
                    f.ctx + w.wait_on_page_bit + w.lock_page + w.wait_on_buffer
                },
            });
        }
        out
    }

    /// The job starts: its clock, its end, and its files' cache dropped (`invalidate`).
    fn fio_begin(&mut self, tid: u32) {
        let t = tid as usize;
        let now = self.now();
        let (ramp, runtime, invalidate) = {
            let j = job(&self.tasks[t].job);
            (j.ramp, j.runtime, j.invalidate)
        };
        let f = self.tasks[t].fio.as_mut().expect("fio task");
        f.begun = Some(now);
        // The user's times saturate: a runtime of centuries means "until stopped", not a
        // sum that wraps to an end already past.
        f.stats_from = now.saturating_add(ramp);
        f.stats.started = f.stats_from;
        f.end = runtime.map(|r| f.stats_from.saturating_add(r));
        f.sample_at = f.stats_from.saturating_add(SAMPLE_NS);
        f.window.start_ms = 0;
        if invalidate && self.era.inactive.is_none() {
            let files = f.files.clone();
            for ino in files {
                self.drop_clean_pages(ino);
            }
        }
    }

    /// `posix_fadvise(POSIX_FADV_DONTNEED)` of a whole file: its clean pages leave the cache.
    fn drop_clean_pages(&mut self, ino: u32) {
        let m = &mut self.inodes[ino as usize].mapping;
        let end = m.end();
        let mut idx = 0;
        let mut dropped = 0;
        while idx < end {
            let (st, run) = m.run_at(idx, end - idx);
            if st == Some(PageState::Clean) {
                m.set_range(idx, run, None);
                dropped += run;
            }
            idx += run;
        }
        self.vm.nr_free += dropped;
        self.vm.nr_file -= dropped;
        self.memcg_account(ino, -(dropped as i64), 0, 0);
    }

    fn fio_issue(&mut self, tid: u32, io: FioIo) -> Option<Phase> {
        let t = tid as usize;
        let (direct, engine) = {
            let j = job(&self.tasks[t].job);
            (j.direct, j.engine)
        };
        let task = &mut self.tasks[t];
        task.file = io.file;
        task.offset = io.offset;
        task.op_left = io.bs;
        task.op_start = io.start;
        let f = task.fio.as_mut().expect("fio task");
        f.cur = io;
        if !direct {
            f.stats.depth[0] += 1;
            return Some(if io.ddir as usize == READ {
                Phase::FileAccessed
            } else {
                Phase::FileModified
            });
        }
        // O_DIRECT: the requests, tagged with the I/O's slot.
        let slot = f.alloc_slot(io);
        f.cur_slot = slot;
        f.inflight += 1;
        let depth = f.inflight;
        f.stats.depth[FioStats::depth_bucket(depth)] += 1;
        let op = if io.ddir as usize == READ { Op::Read } else { Op::Write };
        let write_through =
            op == Op::Write && job(&self.tasks[t].job).sync == FioSync::Dsync && self.dio_write_through(io.file, io.offset, io.bs);
        let reqs = self.queue_direct(tid, io.file, op, io.offset, io.bs, slot, write_through);
        let task = &mut self.tasks[t];
        task.inflight += 1;
        let f = task.fio.as_mut().expect("fio task");
        f.slots[slot as usize].reqs = reqs;
        f.slots[slot as usize].fua = write_through;
        if engine == FioEngine::Sync {
            task.fio.as_mut().expect("fio task").wake_at = 0;
            task.phase = Phase::WaitDirect;
            self.task_submit_pending(tid);
            return None;
        }
        task.phase = Phase::FioSubmitted;
        if !self.task_submit_pending(tid) {
            return None;
        }
        Some(Phase::FioSubmitted)
    }

    /// An asynchronous submission's requests are in the block layer: `io_submit` returns
    /// after its system call's CPU.
    pub(crate) fn fio_submitted(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let overhead = self.cfg.machine.syscall_overhead;
        let f = self.tasks[t].fio.as_mut().expect("fio task");
        let slot = f.cur_slot as usize;
        // The I/O may have completed already (its slot reused): only a live one is stamped.
        if f.slots[slot].reqs > 0 {
            f.slots[slot].submitted = self.q.now().saturating_add(overhead);
        }
        self.tasks[t].phase = Phase::FioSubmitCpu;
        self.cpu_run(Who::Task(tid), overhead);
        None
    }

    /// A request of an O_DIRECT fio I/O completed; the I/O completes with its last.
    pub(crate) fn fio_direct_done(&mut self, tid: u32, slot: u16) {
        let t = tid as usize;
        let now = self.now();
        let engine = job(&self.tasks[t].job).engine;
        let task = &mut self.tasks[t];
        let f = task.fio.as_mut().expect("fio task");
        let io = &mut f.slots[slot as usize];
        io.reqs -= 1;
        if io.reqs > 0 {
            return;
        }
        let mut io = *io;
        // Completed during its own io_submit: no completion latency.
        io.submitted = io.submitted.min(now);
        f.free.push(slot);
        f.inflight -= 1;
        task.inflight -= 1;
        if io.ddir as usize == READ {
            task.bytes_read += io.bs;
        } else {
            task.bytes_written += io.bs;
        }
        if io.ddir as usize != READ {
            self.dio_write_end(io.file, io.offset, io.bs);
        }
        let task = &mut self.tasks[t];
        if io.ddir as usize != READ && !io.fua && job(&task.job).sync != FioSync::None {
            // `generic_write_sync` before the write returns (the next step of a synchronous
            // engine: sync= is refused with the others); the write is accounted after it.
            task.fio.as_mut().expect("fio task").write_sync = Some(io);
        } else {
            task.record_op(now, now - io.start);
            self.fio_account(tid, io, now, engine != FioEngine::Sync);
        }
        let task = &mut self.tasks[t];
        let f = task.fio.as_ref().expect("fio task");
        if task.phase == Phase::WaitDirect && f.inflight <= f.wake_at && task.pending.is_empty() {
            task.phase = Phase::NextOp;
            self.run_task_at(tid, now);
        }
    }

    /// A buffered read() or write() of a fio job returned: account it and go on.
    pub(crate) fn fio_buffered_done(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let now = self.now();
        let engine = job(&self.tasks[t].job).engine;
        let task = &mut self.tasks[t];
        let mut io = task.fio.as_ref().expect("fio task").cur;
        if io.ddir as usize != READ && job(&task.job).sync != FioSync::None {
            task.fio.as_mut().expect("fio task").write_sync = Some(io);
            return Some(Phase::NextOp);
        }
        task.record_op(now, now - io.start);
        // libaio does buffered I/O inside io_submit: all of it is submission.
        io.submitted = if engine == FioEngine::Libaio { now } else { io.start };
        self.fio_account(tid, io, now, engine != FioEngine::Sync);
        Some(Phase::NextOp)
    }

    /// `generic_write_sync` of an O_SYNC/O_DSYNC write whose data is written:
    /// `vfs_fsync_range` over the bytes it wrote (datasync for O_DSYNC). The write's latency
    /// runs on from its start.
    fn generic_write_sync(&mut self, tid: u32, io: FioIo) -> Option<Phase> {
        let t = tid as usize;
        let datasync = job(&self.tasks[t].job).sync == FioSync::Dsync;
        let task = &mut self.tasks[t];
        task.file = io.file;
        task.op_start = io.start;
        let (first, end) = page_range(io.offset, io.bs);
        self.vfs_fsync_range(tid, first, end, datasync)
    }

    /// An fsync()/fdatasync() of the job returned, or the sync of an O_SYNC/O_DSYNC write
    /// (which completes the write).
    pub(crate) fn fio_sync_done(&mut self, tid: u32) -> Option<Phase> {
        let now = self.now();
        let task = &mut self.tasks[tid as usize];
        if let Some(io) = task.fio.as_mut().expect("fio task").write_sync.take() {
            // A synchronous engine's write (sync= is refused with the others).
            self.fio_account(tid, io, now, false);
            return Some(Phase::NextOp);
        }
        let start = task.op_start;
        let f = task.fio.as_mut().expect("fio task");
        if start >= f.stats_from {
            f.stats.sync.record(now - start);
        }
        Some(Phase::NextOp)
    }

    /// Statistics and logs of one completed I/O.
    fn fio_account(&mut self, tid: u32, io: FioIo, now: Ns, async_engine: bool) {
        let t = tid as usize;
        let task = &mut self.tasks[t];
        let j = job(&task.job);
        let f = task.fio.as_mut().expect("fio task");
        advance_samples(f, j, now);
        if io.start < f.stats_from {
            return;
        }
        let d = io.ddir as usize;
        let slat = io.submitted.saturating_sub(io.start);
        let clat = now.saturating_sub(io.submitted);
        let lat = now - io.start;
        let s = &mut f.stats.dir[d];
        s.ios += 1;
        s.bytes += io.bs;
        s.window_bytes += io.bs;
        s.window_ios += 1;
        if async_engine {
            s.slat.record(slat);
        }
        s.clat.record(clat);
        s.lat.record(lat);
        let logs = &j.logs;
        if !logs.any() {
            return;
        }
        let ms = (now - f.stats_from) / 1_000_000;
        let offset = if logs.offset { io.offset } else { 0 };
        if logs.avg_msec == 0 {
            let row = |value| LogRow {
                ms,
                value,
                ddir: io.ddir,
                bs: io.bs,
                offset,
            };
            let rows = &mut f.stats.logs;
            if logs.lat.is_some() {
                rows.lat.push(row(lat));
                rows.clat.push(row(clat));
                if async_engine {
                    rows.slat.push(row(slat));
                }
            }
            if logs.bw.is_some() {
                // KiB/s as fio logs one I/O: its bytes over its completion time.
                rows.bw.push(row(io.bs * 1000 / (clat / 1000).max(1)));
            }
            if logs.iops.is_some() {
                rows.iops.push(row(1));
            }
            return;
        }
        flush_windows(f, logs, ms);
        let w = &mut f.window;
        w.ios[d] += 1;
        w.bytes[d] += io.bs;
        for (k, v) in [lat, clat, slat].into_iter().enumerate() {
            w.sum[d][k] += v as u128;
            w.max[d][k] = w.max[d][k].max(v);
        }
    }
}

/// Bandwidth and IOPS samples for every 500 ms window that ended by `now`.
fn advance_samples(f: &mut FioState, j: &FioJob, now: Ns) {
    while f.sample_at > 0 && now >= f.sample_at {
        for d in [READ, WRITE] {
            if !j.does(d) {
                continue;
            }
            let s = &mut f.stats.dir[d];
            let secs = SAMPLE_NS as f64 / 1e9;
            s.bw.record(s.window_bytes as f64 / 1024.0 / secs);
            s.iops.record(s.window_ios as f64 / secs);
            s.window_bytes = 0;
            s.window_ios = 0;
        }
        f.sample_at += SAMPLE_NS;
    }
}

/// The job ends: its last windows are logged.
fn close_samples(f: &mut FioState, logs: &crate::config::FioLogs, now: Ns) {
    if logs.avg_msec > 0 && logs.any() && now >= f.stats_from {
        let ms = (now - f.stats_from) / 1_000_000;
        flush_windows(f, logs, ms + logs.avg_msec);
    }
}

/// Write out the `log_avg_msec` windows that ended before `ms`.
fn flush_windows(f: &mut FioState, logs: &crate::config::FioLogs, ms: u64) {
    let len = logs.avg_msec;
    while ms >= f.window.start_ms + len {
        let w = std::mem::take(&mut f.window);
        let at = w.start_ms + len;
        for d in [READ, WRITE] {
            if w.ios[d] == 0 {
                continue;
            }
            let value = |k: usize| {
                if logs.max_value {
                    w.max[d][k]
                } else {
                    (w.sum[d][k] / w.ios[d] as u128) as u64
                }
            };
            let row = |value| LogRow {
                ms: at,
                value,
                ddir: d as u8,
                bs: 0,
                offset: 0,
            };
            let rows = &mut f.stats.logs;
            if logs.lat.is_some() {
                rows.lat.push(row(value(0)));
                rows.clat.push(row(value(1)));
                if w.sum[d][2] > 0 {
                    rows.slat.push(row(value(2)));
                }
            }
            if logs.bw.is_some() {
                rows.bw.push(row(w.bytes[d] * 1000 / 1024 / len));
            }
            if logs.iops.is_some() {
                rows.iops.push(row(w.ios[d] * 1000 / len));
            }
        }
        f.window.start_ms = at;
    }
}

/// fio's choice of what to do next, from the job's options and progress.
fn decide(j: &FioJob, f: &mut FioState, now: Ns, stop: Ns) -> Next {
    let iodepth = if j.engine == FioEngine::Sync { 1 } else { j.iodepth.max(1) };
    // A finished pass starts the next (`loops`, or over and over with `time_based`).
    if f.issued >= j.size && (j.time_based || f.passes + 1 < j.loops) {
        f.passes += 1;
        f.issued = 0;
        f.seq.iter_mut().for_each(|o| *o = 0);
    }
    let over = f.end.is_some_and(|e| now >= e) || now >= stop || f.issued >= j.size;
    if over || f.finishing {
        if f.inflight > 0 {
            return Next::Wait(0);
        }
        if !f.finishing {
            f.finishing = true;
            f.end_syncs = if j.end_fsync && f.unsynced { f.files.len() } else { 0 };
        }
        if f.end_syncs > 0 && now < stop {
            f.end_syncs -= 1;
            return Next::Fsync(f.files[f.files.len() - 1 - f.end_syncs]);
        }
        return Next::Finish;
    }
    if f.inflight >= iodepth {
        let batch = j.batch_complete_min.clamp(1, iodepth);
        return Next::Wait(j.iodepth_low.min(iodepth - batch));
    }
    if j.fsync_every > 0 && f.since_sync >= j.fsync_every {
        if f.inflight > 0 {
            return Next::Wait(0);
        }
        f.since_sync = 0;
        f.unsynced = false;
        let last = f.cur.file;
        return Next::Fsync(last);
    }
    if let Some(s) = j.sync_file_range {
        if f.since_sfr >= s.every {
            if f.inflight > 0 {
                return Next::Wait(0);
            }
            f.since_sfr = 0;
            if let Some((file, first, end)) = f.sfr_range.take() {
                return Next::SyncRange(file, first, end);
            }
        }
    }
    if j.thinktime > 0 && f.since_think >= j.thinktime_blocks.max(1) {
        if f.inflight > 0 {
            return Next::Wait(0);
        }
        f.since_think = 0;
        return Next::Sleep(j.thinktime);
    }
    let ddir = match j.rw {
        FioRw::Read | FioRw::RandRead => READ,
        FioRw::Write | FioRw::RandWrite => WRITE,
        FioRw::ReadWrite | FioRw::RandRw => {
            if f.rng.below(100) < j.rwmixread as u64 {
                READ
            } else {
                WRITE
            }
        }
    };
    let begun = f.begun.unwrap_or(now);
    // When `done` bytes or I/Os at `rate` per second may have been issued (saturating: a tiny
    // rate puts it past the end, not back before the start).
    let due = |done: u64, rate: u64| begun.saturating_add(Ns::try_from(done as u128 * 1_000_000_000 / rate as u128).unwrap_or(Ns::MAX));
    let mut earliest = 0;
    if j.rate[ddir] > 0 {
        earliest = due(f.rate_bytes[ddir], j.rate[ddir]);
    }
    if j.rate_iops[ddir] > 0 {
        earliest = earliest.max(due(f.rate_ios[ddir], j.rate_iops[ddir]));
    }
    if earliest > now {
        return Next::Sleep(earliest - now);
    }
    let fi = f.next_file;
    f.next_file = (fi + 1) % f.files.len();
    let mut bs = pick_bs(&j.bs[ddir], &mut f.rng);
    let offset = if j.rw.random() {
        let block = j.bs[READ].min().min(j.bs[WRITE].min()).max(1);
        let b = f.gens[fi].next(&mut f.rng);
        (b * block).min(j.file_size.saturating_sub(bs))
    } else {
        if f.seq[fi] + bs > j.file_size {
            f.seq[fi] = 0;
        }
        let o = f.seq[fi];
        f.seq[fi] = o + bs;
        o
    };
    bs = bs.min(j.size - f.issued).min(j.file_size - offset).max(1);
    f.issued += bs;
    f.rate_bytes[ddir] += bs;
    f.rate_ios[ddir] += 1;
    f.since_think += 1;
    if ddir == WRITE {
        f.since_sync += 1;
        f.unsynced = true;
        f.since_sfr += 1;
        let file = f.files[fi];
        let (first, end) = page_range(offset, bs);
        f.sfr_range = Some(match f.sfr_range {
            Some((same, a, b)) if same == file => (file, a.min(first), b.max(end)),
            _ => (file, first, end),
        });
    }
    Next::Issue(FioIo {
        start: now,
        submitted: now,
        ddir: ddir as u8,
        file: f.files[fi],
        offset,
        bs,
        reqs: 0,
        fua: false,
    })
}
