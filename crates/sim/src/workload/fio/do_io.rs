//! fio's `do_io` loop on the machine: each I/O chosen, submitted and reaped, the job's
//! waits, syncs and end.

use super::*;
use crate::config::{FioEngine, FioSync, JobConfig, READ};
use crate::drivers::Op;
use crate::kernel::cpu::Who;
use crate::kernel::task::Phase;
use crate::machine::Machine;
use crate::metrics::fio::{FioStats, LogRow, SAMPLE_NS};
use crate::mm::page_cache::PageState;
use crate::units::page_range;
use crate::Ns;

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
                stats: {
                    let mut stats = std::mem::take(&mut f.stats);
                    stats.settle();
                    stats
                },
                cpu_user_ns: t.cpu_user,
                cpu_sys_ns: t.cpu_sys,
                ctx: {
                    let w = t.wq.stats();
                    f.ctx + w.wait_on_page_bit + w.lock_page + w.wait_on_buffer + w.do_get_write_access
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
