//! The jobs simulated tasks run, as state machines over system calls: `dd` (buffered or
//! O_DIRECT writes, optional fsync at the end), `cat` (buffered sequential reads with the
//! release's readahead, in `read`), `randread` (random reads, a latency probe), `fsync` (write then fsync, a
//! commit probe), `sync`, and the metadata jobs of [`meta`]: `du`, `ls`, `launch`.
//!
//! A buffered write follows `generic_perform_write`: for each chunk of at most one large folio
//! (2 MiB) the task passes the `balance_dirty_pages_ratelimited` gate *before* copying,
//! allocates the pages (reclaim may throttle it), copies on a CPU and then marks the pages
//! dirty.

use crate::block::queue::Submitter;
use crate::config::JobConfig;
use crate::drivers::Op;
use crate::kernel::cpu::Who;
use crate::kernel::task::Phase;
use crate::kernel::waitqueue::{WaitSite, PG_LOCKED};
use crate::machine::Machine;
use crate::mm::page_cache::PageState;
use crate::mm::page_writeback::{MemcgCx, Throttle, ThrottleCx};
use crate::units::PAGE_SIZE;
use crate::Ns;

pub(crate) mod fio;
pub(crate) mod fio_offsets;
pub(crate) mod meta;
mod read;
mod scripted;
pub(crate) mod state;
pub(crate) mod tiotest;

/// One burst of a CPU-bound job (`spin`), ns. A burst is not preempted, so it bounds how
/// finely the scheduler's slice and tick decide when a woken task takes the CPU from it;
/// shorter ones only cost events.
pub(crate) const SPIN_BURST_NS: Ns = 250_000;

/// Largest folio the page cache uses for a write chunk (PMD size).
pub(crate) const MAX_FOLIO_BYTES: u64 = 2 << 20;

impl Machine {
    /// Whether the file system of inode `ino` keeps large folios in its page cache.
    pub(crate) fn large_folios(&self, ino: usize) -> bool {
        let dev = self.inodes[ino].dev as usize;
        self.cfg.devices[dev].fs.as_ref().is_some_and(|m| m.large_folios)
    }

    pub(super) fn copy_ns(&self, bytes: u64) -> Ns {
        (bytes as u128 * 1_000_000_000 / self.cfg.machine.memory_bandwidth.max(1) as u128) as Ns
    }

    /// Submit the task's pending requests in order. False if it must wait for one.
    pub(crate) fn task_submit_pending(&mut self, tid: u32) -> bool {
        // Still waiting for the request it blocked on (a spurious wakeup): keep waiting.
        if let Some(rq) = self.tasks[tid as usize].rq_wait {
            if self.tasks[tid as usize].pending.front() == Some(&rq) {
                return false;
            }
            self.tasks[tid as usize].rq_wait = None;
        }
        while let Some(&(dev, id)) = self.tasks[tid as usize].pending.front() {
            if self.submit_request(dev, id) {
                self.tasks[tid as usize].pending.pop_front();
            } else {
                self.tasks[tid as usize].rq_wait = Some((dev, id));
                return false;
            }
        }
        true
    }

    /// The task is woken (start, end of a sleep, a wakeup): continue its job.
    pub(crate) fn task_run(&mut self, tid: u32) {
        let t = tid as usize;
        if self.tasks[t].phase == Phase::Done {
            return;
        }
        if !self.task_submit_pending(tid) {
            return;
        }
        // Woken from a page wait queue: re-test the page, sleep again if it is still busy.
        if self.page_wait_recheck(tid) {
            return;
        }
        loop {
            let phase = self.tasks[t].phase;
            let next = match phase {
                Phase::Idle => Some(Phase::NextOp),
                Phase::NextOp => self.next_op(tid),
                Phase::FileModified => self.file_modified(tid),
                Phase::FileAccessed => self.file_accessed(tid),
                Phase::Gate => self.write_gate(tid),
                Phase::AfterBdpSleep => self.after_bdp_sleep(tid),
                Phase::BdpWriteback => self.after_bdp_writeback(tid),
                Phase::Meta => self.meta_step(tid),
                Phase::Alloc => self.write_alloc(tid),
                Phase::WaitRead => self.read_step(tid),
                Phase::WaitSync => self.sync_step(tid),
                Phase::Rename => self.vfs_rename(tid),
                Phase::Renamed => self.rename_done(tid),
                Phase::Think => Some(Phase::NextOp),
                Phase::FioSubmitted => self.fio_submitted(tid),
                Phase::CopyDone
                | Phase::ReadCopyDone
                | Phase::WaitDirect
                | Phase::FioSubmitCpu
                | Phase::SyncEntry
                | Phase::Spin
                | Phase::Done => None,
            };
            match next {
                Some(p) => self.tasks[t].phase = p,
                None => return,
            }
        }
    }

    /// A CPU burst of the task finished.
    pub(crate) fn task_cpu_done(&mut self, tid: u32) {
        let t = tid as usize;
        match self.tasks[t].phase {
            Phase::BdpWriteback | Phase::Meta => self.task_run(tid),
            Phase::SyncEntry => self.fsync_entered(tid),
            Phase::FioSubmitCpu | Phase::Spin => {
                self.tasks[t].phase = Phase::NextOp;
                self.task_run(tid);
            }
            Phase::CopyDone => {
                let (file, offset, pages, chunk) = {
                    let task = &self.tasks[t];
                    (task.file, task.offset, task.chunk_pages, task.chunk_bytes)
                };
                if matches!(self.tasks[t].job, JobConfig::Tiotest { .. }) {
                    self.tio_account_write(tid, file, offset / PAGE_SIZE, pages);
                } else {
                    self.account_dirtied(tid, file, offset / PAGE_SIZE, pages);
                }
                let gate_after = self.policy.gate_after_dirtying();
                let task = &mut self.tasks[t];
                task.offset += chunk;
                task.op_left -= chunk;
                task.bytes_written += chunk;
                if task.op_left > 0 || gate_after {
                    // Pre-folio kernels call balance_dirty_pages_ratelimited right after
                    // dirtying, so the last chunk of a write() is checked too.
                    task.phase = Phase::Gate;
                    self.task_run(tid);
                    return;
                }
                if let Some(p) = self.write_op_done(tid) {
                    self.tasks[t].phase = p;
                    self.task_run(tid);
                }
            }
            Phase::ReadCopyDone => {
                let now = self.now();
                let task = &mut self.tasks[t];
                task.bytes_read += task.op_left;
                task.offset += task.op_left;
                task.op_left = 0;
                if matches!(task.job, JobConfig::Launch { .. }) {
                    // A launch's reads are part of the launch: its latency is the whole.
                    task.phase = Phase::Meta;
                    self.task_run(tid);
                    return;
                }
                if task.fio.is_some() {
                    if let Some(p) = self.fio_buffered_done(tid) {
                        self.tasks[t].phase = p;
                        self.task_run(tid);
                    }
                    return;
                }
                task.record_op(now, now - task.op_start);
                task.phase = if let JobConfig::Randread { think, .. } = task.job {
                    if think > 0 {
                        task.phase = Phase::Think;
                        self.sleep_task(tid, think);
                        return;
                    }
                    Phase::NextOp
                } else {
                    Phase::NextOp
                };
                self.task_run(tid);
            }
            _ => {}
        }
    }

    /// Start the next system call of the job, or finish.
    fn next_op(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let now = self.now();
        if now >= self.tasks[t].stop {
            return self.task_done(tid);
        }
        // The job is matched in place (its fields copied), not cloned: this runs for every call.
        if let JobConfig::Netwrite { bs, rate, .. } = self.tasks[t].job {
            // The next `bs` arrives `bs / rate` after the previous write began.
            let next = self.tasks[t].op_start + crate::drivers::xfer(bs, rate);
            if self.tasks[t].bytes_written > 0 && now < next {
                self.tasks[t].phase = Phase::Think;
                self.sleep_task(tid, next - now);
                return None;
            }
        }
        self.tasks[t].op_start = now;
        match self.tasks[t].job {
            JobConfig::Dd { bs, size, fsync, direct } => {
                let written = self.tasks[t].bytes_written;
                let left = size.map(|s| s.saturating_sub(written)).unwrap_or(u64::MAX);
                if left == 0 {
                    if fsync && !self.tasks[t].synced {
                        self.tasks[t].synced = true;
                        return self.vfs_fsync(tid);
                    }
                    return self.task_done(tid);
                }
                let n = bs.min(left);
                self.tasks[t].op_left = n;
                if direct {
                    self.start_direct(tid, Op::Write, self.tasks[t].offset, n);
                    return None;
                }
                Some(Phase::FileModified)
            }
            JobConfig::Netwrite { bs, size, .. } => {
                let left = size.map(|s| s.saturating_sub(self.tasks[t].bytes_written)).unwrap_or(u64::MAX);
                if left == 0 {
                    return self.task_done(tid);
                }
                self.tasks[t].op_left = bs.min(left);
                Some(Phase::Gate)
            }
            JobConfig::Fsync { bytes, .. } => {
                self.tasks[t].op_left = bytes;
                Some(Phase::FileModified)
            }
            JobConfig::Replace { bytes, .. } => {
                // The new content goes to a fresh file: here the same pages, written again.
                self.tasks[t].offset = 0;
                self.tasks[t].op_left = bytes;
                Some(Phase::FileModified)
            }
            JobConfig::Cat { bs, file_size } => {
                let off = self.tasks[t].offset;
                if off >= file_size {
                    return self.task_done(tid);
                }
                self.tasks[t].op_left = bs.min(file_size - off);
                Some(Phase::FileAccessed)
            }
            JobConfig::Randread { bs, file_size, direct, .. } => {
                let blocks = (file_size / bs.max(1)).max(1);
                let off = self.tasks[t].rng.below(blocks) * bs;
                self.tasks[t].offset = off;
                self.tasks[t].op_left = bs;
                if direct {
                    self.start_direct(tid, Op::Read, off, bs);
                    return None;
                }
                Some(Phase::FileAccessed)
            }
            JobConfig::Sync { .. } => self.ksys_sync(tid),
            JobConfig::Spin => {
                // User-mode work, a scheduler tick's worth at a time: it asks again at once.
                self.tasks[t].phase = Phase::Spin;
                self.tasks[t].wq.user_pending += SPIN_BURST_NS;
                self.cpu_run(crate::kernel::cpu::Who::Task(tid), 0);
                None
            }
            JobConfig::Du { .. } | JobConfig::Ls { .. } | JobConfig::Launch { .. } => self.meta_start(tid),
            JobConfig::Tiotest { .. } => self.tio_next_op(tid),
            JobConfig::Fio(_) => self.fio_next(tid),
            JobConfig::Scripted(_) => self.script_next(tid),
        }
    }

    fn task_done(&mut self, tid: u32) -> Option<Phase> {
        self.mark_done(tid);
        self.start_dependents(tid);
        None
    }

    // ---- buffered writes ----

    fn throttle_cx_call(&mut self, tid: u32, resume: bool) -> Throttle {
        let t = tid as usize;
        // The wb of the file being written (`inode_to_wb`): its device's, or its cgroup's.
        let wb = self.inodes[self.tasks[t].file as usize].wb as usize;
        let dev = self.tasks[t].dev as usize;
        let now = self.now();
        let running = self.writeback_in_progress(wb);
        let mut dirty = self.tasks[t].dirty;
        self.stamp_tout(1 + tid, dirty.cpu as u16);
        let memcg_stats = self.wbs[wb].memcg.map(|cg| (cg, self.mem_cgroup_wb_stats(cg)));
        let r = {
            let memcg = memcg_stats.map(|(cg, stats)| MemcgCx {
                dom: &mut self.memcgs[cg as usize].domain,
                stats,
            });
            let mut cx = ThrottleCx {
                clock: self.clock,
                now,
                vm: &self.vm,
                sysctl: &self.cfg.sysctl,
                dom: &mut self.dom,
                wb: &mut self.wbs[wb],
                ncpus: self.cfg.machine.cpus,
                bdp_ratelimits: &mut self.bdp_ratelimits,
                ratelimit_pages: self.ratelimit_pages,
                writeback_in_progress: running,
                out: &mut self.tout,
                tid,
                wb_index: wb,
                memcg,
            };
            if resume {
                self.policy.resume(&mut cx, &mut dirty)
            } else {
                self.policy.ratelimited(&mut cx, &mut dirty)
            }
        };
        self.tasks[t].dirty = dirty;
        if wb != dev {
            // blk-wbt reads the bdi's last sleep (`bdi->last_bdp_sleep`), whichever wb slept.
            self.wbs[dev].last_bdp_sleep = self.wbs[dev].last_bdp_sleep.max(self.wbs[wb].last_bdp_sleep);
        }
        if std::mem::take(&mut self.tout.kick_background) {
            self.wb_start_background_writeback(wb as u16);
        }
        r
    }

    /// Carry out what the throttling policy decided.
    fn throttle_act(&mut self, tid: u32, r: Throttle) -> Option<Phase> {
        let per_call = self.policy.pause_per_call();
        let now = self.now();
        if r != Throttle::Proceed && self.era.bdp_entered[tid as usize].is_none() {
            self.era.bdp_entered[tid as usize] = Some(now);
        }
        match r {
            Throttle::Proceed => {
                if let Some(t0) = self.era.bdp_entered[tid as usize].take() {
                    if per_call && now > t0 {
                        self.tasks[tid as usize].pauses.record(now - t0);
                    }
                }
                if self.tasks[tid as usize].op_left == 0 {
                    return self.write_op_done(tid);
                }
                self.set_chunk(tid);
                Some(Phase::Alloc)
            }
            Throttle::Sleep(j) => self.bdp_sleep(tid, j, !per_call),
            Throttle::CongestionWait(j) => {
                self.trace_paused(tid, j);
                self.congestion_wait_task(tid, j);
                self.tasks[tid as usize].phase = Phase::AfterBdpSleep;
                None
            }
            Throttle::WaitWrite => {
                let dev = self.tasks[tid as usize].dev;
                if !self.wait_oldest_write(dev, crate::generations::runtime::WriteWaiter::Task(tid, 0)) {
                    return Some(Phase::AfterBdpSleep);
                }
                self.tasks[tid as usize].phase = Phase::AfterBdpSleep;
                None
            }
            Throttle::Writeback(pages) => {
                let dev = self.tasks[tid as usize].dev;
                let j = self.jiffies();
                let written = self.writeback_inodes_wb(dev, pages, j, crate::block::queue::Submitter::Task(tid));
                self.tasks[tid as usize].dirty.bdp_written = written;
                self.tasks[tid as usize].phase = Phase::BdpWriteback;
                if written > 0 {
                    self.cpu_run(Who::Task(tid), written * crate::fs::fs_writeback::WRITEBACK_NS_PER_PAGE);
                    None
                } else {
                    Some(Phase::BdpWriteback)
                }
            }
        }
    }

    /// The write() (or a launch's write) is complete: record it and move on. None when the
    /// task already continues elsewhere (fsync started).
    fn write_op_done(&mut self, tid: u32) -> Option<Phase> {
        let now = self.now();
        let task = &mut self.tasks[tid as usize];
        if matches!(task.job, JobConfig::Launch { .. }) {
            // A launch's writes are part of the launch.
            return Some(Phase::Meta);
        }
        if matches!(task.job, JobConfig::Fsync { .. }) {
            return self.vfs_fsync(tid);
        }
        if matches!(task.job, JobConfig::Replace { .. }) {
            return Some(Phase::Rename);
        }
        if task.fio.is_some() {
            return self.fio_buffered_done(tid);
        }
        let lat = now - task.op_start;
        task.record_op(now, lat);
        Some(Phase::NextOp)
    }

    /// Size the next chunk: up to the end of the write and of the (large) folio, and no
    /// further than the policy's next ratelimit check.
    fn set_chunk(&mut self, tid: u32) {
        let t = tid as usize;
        let limit = {
            let wb = &self.wbs[self.inodes[self.tasks[t].file as usize].wb as usize];
            self.policy.chunk_limit(wb, &self.bdp_ratelimits, &self.tasks[t].dirty)
        };
        let ino = self.tasks[t].file as usize;
        if self.large_folios(ino) {
            let task = &self.tasks[t];
            let len = task
                .op_left
                .min(MAX_FOLIO_BYTES - task.offset % MAX_FOLIO_BYTES)
                .div_ceil(PAGE_SIZE);
            let f = crate::block::request::write_folio_pages(task.offset / PAGE_SIZE, len, MAX_FOLIO_BYTES / PAGE_SIZE);
            let inode = &mut self.inodes[ino];
            inode.folio_pages = inode.folio_pages.max(f);
        }
        let task = &mut self.tasks[t];
        let in_folio = MAX_FOLIO_BYTES - task.offset % MAX_FOLIO_BYTES;
        let chunk = task.op_left.min(in_folio).min(limit.saturating_mul(PAGE_SIZE));
        task.chunk_pages = chunk.div_ceil(PAGE_SIZE);
        task.chunk_bytes = (task.chunk_pages * PAGE_SIZE).min(task.op_left);
    }

    /// The order of the folios the task's writes go into: on a mapping with large folios, the
    /// folio [`Self::set_chunk`] found for the write (`fgf_set_order` from the write's length,
    /// lowered to the index's alignment), else single pages. A chunk the ratelimit cuts from a
    /// folio is part of that folio ([`crate::mm::free_lists::FreeLists::allocate`]).
    fn write_folio_order(&self, tid: u32) -> u32 {
        let ino = self.tasks[tid as usize].file as usize;
        if !self.large_folios(ino) {
            return 0;
        }
        self.inodes[ino].folio_pages.max(1).ilog2()
    }

    /// `congestion_wait(WRITE, jiffies)` for a task.
    pub(crate) fn congestion_wait_task(&mut self, tid: u32, jiffies: u64) {
        self.sleep_task(tid, self.clock.tick_ns() * jiffies.max(1));
        let gen = self.tasks[tid as usize].wait_gen;
        self.era
            .congestion_waiters
            .push(crate::generations::runtime::CongestionWaiter::Task(tid, gen));
    }

    /// What a balance_dirty_pages trace point before this sleep of `jiffies` would show: the
    /// larger of its `pause` and `paused` (how long the call has held the task so far). In the
    /// I/O-issuing loops a call's own writeback shows only if the call sleeps after it, which is
    /// how Wu's 2011 graphs of 2.6.38 (his series' trace point, backported) saw those loops.
    fn trace_paused(&mut self, tid: u32, jiffies: u64) {
        let now = self.now();
        let paused = self.era.bdp_entered[tid as usize].map_or(0, |t0| now - t0);
        let shown = paused.max(jiffies * self.clock.tick_ns());
        let t = &mut self.tasks[tid as usize];
        t.paused_max = t.paused_max.max(shown);
    }

    fn bdp_sleep(&mut self, tid: u32, jiffies: u64, record: bool) -> Option<Phase> {
        self.trace_paused(tid, jiffies);
        let now = self.now();
        let fire = self.cfg.policy.timer_wheel.fire_jiffy(self.clock.jiffies(now), jiffies);
        let wake = self.clock.at_jiffies(fire);
        let task = &mut self.tasks[tid as usize];
        if record {
            task.pauses.record(jiffies * self.clock.tick_ns());
        }
        task.sleep_start = now;
        task.phase = Phase::AfterBdpSleep;
        self.sleep_task(tid, wake - now);
        None
    }

    fn write_gate(&mut self, tid: u32) -> Option<Phase> {
        let r = self.throttle_cx_call(tid, false);
        self.throttle_act(tid, r)
    }

    fn after_bdp_sleep(&mut self, tid: u32) -> Option<Phase> {
        let r = self.throttle_cx_call(tid, true);
        self.throttle_act(tid, r)
    }

    /// The task's own writeback is walked and submitted: back into the throttle loop.
    fn after_bdp_writeback(&mut self, tid: u32) -> Option<Phase> {
        self.after_bdp_sleep(tid)
    }

    fn write_alloc(&mut self, tid: u32) -> Option<Phase> {
        let pages = self.tasks[tid as usize].chunk_pages;
        // write_begin locks each page: one being read is locked until its read completes (a
        // fio job reading and writing one file, or clones sharing it). Woken, the task comes
        // back here and looks again. The wait is not exclusive: the model's writer does not
        // take the page lock, so it could not hand the wakeup on as `unlock_page` does.
        let (ino, p0) = (self.tasks[tid as usize].file, self.tasks[tid as usize].offset / PAGE_SIZE);
        // Read what the write leaves of a partly covered block, then come back; the wait is
        // on the block's buffer (`wait_on_buffer`).
        let mut wait_on = None;
        for p in self.partial_block_ranges(tid).into_iter().flatten() {
            match self.inodes[ino as usize].mapping.state(p) {
                None if !self.inodes[ino as usize].has_unwritten(p, 1) && self.inodes[ino as usize].blocks.mapped(p) => {
                    if !self.read_one_page(tid, ino, p) {
                        return None;
                    }
                    wait_on.get_or_insert(p);
                }
                Some(PageState::Reading) => {
                    wait_on.get_or_insert(p);
                }
                _ => {}
            }
        }
        if let Some(p) = wait_on {
            self.page_wait(tid, ino, p, PG_LOCKED, WaitSite::WaitOnBuffer, false);
            self.task_submit_pending(tid);
            return None;
        }
        let m = &self.inodes[ino as usize].mapping;
        let mut idx = p0;
        while idx < p0 + pages {
            let (st, run) = m.run_at(idx, p0 + pages - idx);
            if st == Some(PageState::Reading) {
                self.page_wait(tid, ino, idx, PG_LOCKED, WaitSite::LockPage, false);
                return None;
            }
            idx += run;
        }
        if !self.alloc_pages(tid, pages) {
            return None;
        }
        // The copy is the first touch of the frames the allocation took.
        let fresh = if self.reporting.is_some() {
            let order = self.write_folio_order(tid);
            self.fresh_frames(&crate::mm::free_lists::in_folios(pages, order))
        } else {
            0
        };
        let bytes = pages * PAGE_SIZE;
        let mut burst = self.copy_ns(bytes) + self.first_touch_ns(fresh) + self.write_alloc_cost(ino, p0, pages);
        if self.tasks[tid as usize].op_start == self.now() {
            burst += self.cfg.machine.syscall_overhead;
        }
        self.tasks[tid as usize].phase = Phase::CopyDone;
        self.cpu_run(Who::Task(tid), burst);
        None
    }

    /// The CPU of `prepare_write`'s block allocation for the pages [p0, p0 + pages) of `ino`
    /// that have no block yet, on a file system that allocates at `write()`
    /// (`[machine] block_alloc_cost` each).
    fn write_alloc_cost(&self, ino: u32, p0: u64, pages: u64) -> crate::Ns {
        let cost = self.cfg.machine.block_alloc_cost;
        let inode = &self.inodes[ino as usize];
        if cost == 0 || !self.allocs[inode.dev as usize].allocates_at_write() {
            return 0;
        }
        let new = (p0..p0 + pages).filter(|&p| !inode.blocks.mapped(p)).count() as u64;
        new * cost
    }

    /// `__block_write_begin`: the blocks at the chunk's ends that the write covers only in
    /// part, as (head, tail) ranges of 4 KiB pages. The file system's block (4 KiB here) is
    /// the unit, not the kernel's page: a block the write does not touch at all is skipped
    /// even when it shares the page (the other half of an 8 KiB sparc64 page under an aligned
    /// 4 KiB write is left not uptodate, and read only if something reads it), while a block
    /// the write covers in part (a 512-byte write) must be read first when it is not in the
    /// cache and is on disk. A block of a file being extended has no disk block yet and a
    /// fallocated file's blocks are unwritten: both are zeroed instead. NFS writes partial
    /// pages without reading them.
    fn partial_block_ranges(&self, tid: u32) -> [std::ops::Range<u64>; 2] {
        let task = &self.tasks[tid as usize];
        let (off, len) = (task.offset, task.chunk_bytes);
        if len == 0 || self.queues[task.dev as usize].unstable_device {
            return [0..0, 0..0];
        }
        let (start, end) = crate::units::page_range(off, len);
        let (full_start, full_end) = (off.div_ceil(PAGE_SIZE), (off + len) / PAGE_SIZE);
        if full_start >= full_end {
            return [start..end, 0..0];
        }
        [start..full_start, full_end..end]
    }

    /// Read page `idx` of `ino` alone (no readahead): allocate it, waiting in reclaim if
    /// memory is short (false: the task waits there and comes back), then start its read.
    pub(super) fn read_one_page(&mut self, tid: u32, ino: u32, idx: u64) -> bool {
        if !self.alloc_pages(tid, 1) {
            return false;
        }
        self.fresh_frames_for(ino, 1);
        self.start_page_read(tid, ino, idx);
        true
    }

    /// Start the read of page `idx` of `ino`, allocated to `tid`: the page enters the cache
    /// locked for the read, and its 4 KiB request goes on the task's plug.
    pub(crate) fn start_page_read(&mut self, tid: u32, ino: u32, idx: u64) {
        self.start_pages_read(tid, ino, idx, 1);
    }

    /// [`Machine::start_page_read`] of the `n` pages from `idx` (one kernel page of several
    /// 4 KiB pages), in one request as far as their blocks are contiguous.
    pub(super) fn start_pages_read(&mut self, tid: u32, ino: u32, idx: u64, n: u64) {
        self.inodes[ino as usize].mapping.set_range(idx, n, Some(PageState::Reading));
        self.map_pages(tid, ino, n);
        self.page_inserted(ino, idx, n);
        let dev = self.inodes[ino as usize].dev as usize;
        let mut p = idx;
        while p < idx + n {
            let (sector, run) = self.inodes[ino as usize].blocks.map(p, idx + n - p, &mut self.allocs[dev]);
            let run = run.clamp(1, idx + n - p);
            let seg = crate::block::queue::Seg::new(ino, p, run);
            let id = self.queues[dev].alloc(
                Op::Read,
                sector,
                run * 8,
                Some(seg),
                Submitter::Task(tid),
                true,
                false,
                false,
                false,
            );
            self.tasks[tid as usize].pending.push_back((dev as u16, id));
            p += run;
        }
    }

    // ---- O_DIRECT ----

    fn start_direct(&mut self, tid: u32, op: Op, offset: u64, bytes: u64) {
        let t = tid as usize;
        let ino = self.tasks[t].file;
        let n = self.queue_direct(tid, ino, op, offset, bytes, 0, false);
        self.tasks[t].inflight += n;
        self.tasks[t].phase = Phase::WaitDirect;
        self.task_submit_pending(tid);
    }

    /// Build the requests of an O_DIRECT I/O of [offset, offset+bytes) of `ino` onto the
    /// task's pending list, tagged `aio` (a fio job's in-flight slot); returns how many. O_DIRECT
    /// writes allocate at submission (as unwritten extents on a journalled file system,
    /// converted when the write completes); a request stops at `max_sectors_kb` and at an
    /// extent's end.
    // The I/O's own fields, each a different kind of thing: a struct for them would be built
    // at both call sites only to be taken apart here.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn queue_direct(&mut self, tid: u32, ino: u32, op: Op, offset: u64, bytes: u64, aio: u16, fua: bool) -> u32 {
        // ext4_iomap_alloc maps the blocks under a handle, before any bio is built: the
        // first bio waits for it (a locked transaction, a metadata buffer in the log write).
        let mut handle = op == Op::Write && self.dio_write_begin(ino, offset, bytes);
        let dev = self.inodes[ino as usize].dev as usize;
        let max = self.queues[dev].max_sectors * 512;
        let mut off = offset;
        let end = offset + bytes;
        let mut n = 0;
        while off < end {
            let in_page = off % PAGE_SIZE;
            let (page_sector, contig) =
                self.inodes[ino as usize]
                    .blocks
                    .map(off / PAGE_SIZE, (end - off).div_ceil(PAGE_SIZE), &mut self.allocs[dev]);
            let len = (end - off).min(max).min(contig * PAGE_SIZE - in_page);
            let sector = page_sector + in_page / 512;
            let id = self.queues[dev].alloc(op, sector, len.div_ceil(512), None, Submitter::Task(tid), true, false, false, true);
            let r = self.queues[dev].rq_mut(id);
            r.aio = aio;
            r.fua = fua;
            r.handle_start = std::mem::take(&mut handle);
            self.tasks[tid as usize].pending.push_back((dev as u16, id));
            n += 1;
            off += len;
        }
        n
    }

    /// One O_DIRECT request of the task completed.
    pub(crate) fn direct_done(&mut self, tid: u32, aio: u16) {
        if self.tasks[tid as usize].fio.is_some() {
            self.fio_direct_done(tid, aio);
            return;
        }
        let now = self.now();
        let task = &mut self.tasks[tid as usize];
        task.inflight -= 1;
        if task.inflight > 0 || !task.pending.is_empty() {
            return;
        }
        let n = task.op_left;
        if let JobConfig::Dd { .. } = task.job {
            let (file, offset) = (task.file, task.offset);
            self.dio_write_end(file, offset, n);
        }
        let task = &mut self.tasks[tid as usize];
        match task.job {
            JobConfig::Dd { .. } => {
                task.bytes_written += n;
                task.offset += n;
            }
            _ => task.bytes_read += n,
        }
        task.op_left = 0;
        task.record_op(now, now - task.op_start);
        if let JobConfig::Randread { think, .. } = task.job {
            if think > 0 {
                task.phase = Phase::Think;
                self.sleep_task(tid, think);
                return;
            }
        }
        task.phase = Phase::NextOp;
        self.run_task_at(tid, self.q.now());
    }
}
