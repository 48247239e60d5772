//! A request's way through blk-mq on the machine (`block/blk-mq.c`): submission to the
//! driver, blk-throttle's and the elevator's timers, cache flushes, and completion — tags,
//! wbt, iolatency and the journal waiting on it.

use crate::block::blk_trace::BlkWhat;
use crate::block::queue::{Submit, Submitter, BLK_FLUSH_KICK_NS, BLK_FLUSH_STEP_NS, FLUSH_ID, NO_BIO};
use crate::block::sched::ElvTrace;
use crate::config::FsKind;
use crate::drivers::Op;
use crate::kernel::cpu::cold_cost;
use crate::machine::{Event, Machine};
use crate::metrics::trace::{BioEvent, Rwbs, TraceEvent, TraceRecord};
use crate::mm::page_cache::PageState;
use crate::Ns;

/// The `rwbs` of a cache flush request.
const FLUSH_RWBS: Rwbs = Rwbs {
    flush: true,
    write: false,
    sync: false,
    readahead: false,
};

impl Machine {
    /// The CPU a submitter's bios enter blk-mq on: where the task or the flusher last ran;
    /// a journal thread is taken to run on its device's CPU in turn.
    pub(crate) fn submitter_cpu(&self, s: Submitter) -> u16 {
        match s {
            Submitter::Task(t) => self.tasks[t as usize].dirty.cpu as u16,
            Submitter::Flusher(f) => self.flusher_cpu.get(f as usize).copied().unwrap_or(0),
            Submitter::Journal(d) => d % self.cpus.ncpus() as u16,
        }
    }

    /// Hand request `id` to device `dev`'s queue. Returns true if accepted (the submitter
    /// goes on), false if the submitter must wait.
    pub(crate) fn submit_request(&mut self, dev: u16, id: u32) -> bool {
        if self.queues[dev as usize].rq(id).handle_start && !self.journal_handle_for_submit(dev, id) {
            return false;
        }
        if self.queues[dev as usize].rq(id).set_writeback_at_submit {
            self.account_set_writeback(dev, id);
        }
        let q = &self.queues[dev as usize];
        if q.nr_hw_queues() > 1 {
            let h = q.hctx_of_cpu(self.submitter_cpu(q.rq(id).submitter));
            self.queues[dev as usize].rq_mut(id).hctx = h;
        }
        let now = self.now();
        let last = self.wbs[dev as usize].last_bdp_sleep;
        // vmstat `bo` is PGPGOUT, counted as bios are submitted (`submit_bio`; 2.4's
        // `submit_bh`), not as they complete.
        let q = &mut self.queues[dev as usize];
        if q.rq(id).op == Op::Write {
            q.sec_submitted_written += q.rq(id).bytes();
        }
        let blkcg = self.bio_blkcg(id, dev);
        let ends_i_sync = self.ends_i_sync(dev, id);
        let r = self.queues[dev as usize].submit(now, id, last, blkcg);
        if r != Submit::Blocked {
            if let Some(ino) = ends_i_sync {
                self.i_sync_request_taken(dev, id, ino);
            }
        }
        if r == Submit::Blocked && self.queues[dev as usize].rq(id).in_handle {
            let q = &mut self.queues[dev as usize];
            q.rq_mut(id).handle_wait = true;
            q.handles_blocked += 1;
        }
        self.kick_queue(dev);
        r != Submit::Blocked
    }

    /// The inode whose `I_SYNC` request `id` releases once the block layer takes it (read
    /// before submission: a merge may free the request).
    fn ends_i_sync(&self, dev: u16, id: u32) -> Option<u32> {
        let r = self.queues[dev as usize].rq(id);
        r.ends_i_sync.then(|| r.segs.first().map(|s| s.file)).flatten()
    }

    /// The block layer took request `id`, the last of `ino`'s visit: the visit is over.
    fn i_sync_request_taken(&mut self, dev: u16, id: u32, ino: u32) {
        self.queues[dev as usize].rq_mut(id).ends_i_sync = false;
        self.inode_sync_complete(ino);
    }

    /// `folio_start_writeback` for the pages of writeback request `id`, as it is submitted:
    /// `Queued` pages (written again meanwhile or not: still one dirty page each) go under
    /// writeback and leave `NR_FILE_DIRTY` (and the wb's and memory cgroup's dirty counts)
    /// for `NR_WRITEBACK`.
    pub(crate) fn account_set_writeback(&mut self, dev: u16, id: u32) {
        let r = self.queues[dev as usize].rq_mut(id);
        r.set_writeback_at_submit = false;
        let Some(seg) = r.segs.first() else { return };
        let (ino, start, pages) = (seg.file, seg.start, seg.pages);
        debug_assert_eq!(r.segs.len(), 1, "a request is accounted before it can merge");
        let inode = &mut self.inodes[ino as usize];
        let had_wb = inode.mapping.nr_writeback > 0;
        // A queued page stays queued until here (a rewrite leaves it so), so the whole range is.
        let n = inode.mapping.set_range(start, pages, Some(PageState::Writeback)).queued;
        debug_assert_eq!(n, pages, "every page of a request stays queued until it is submitted");
        let wbi = inode.wb as usize;
        if !had_wb && n > 0 {
            self.wbs[wbi].writeback_inodes += 1;
        }
        self.vm.nr_dirty -= n;
        self.vm.nr_writeback += n;
        self.memcg_account(ino, 0, -(n as i64), n as i64);
        self.wbs[wbi].reclaimable -= n;
        self.wbs[wbi].writeback += n;
    }

    /// The cgroup a request is charged to (`bio_associate_blkg`): a flusher's, its wb's
    /// group; a task's write of page-cache pages (fsync), the file's wb's group
    /// (`wbc_init_bio`); a task's own reads and O_DIRECT I/O, the task's group; the journal's,
    /// the root.
    pub(crate) fn bio_blkcg(&self, id: u32, dev: u16) -> Option<u16> {
        if self.memcgs.is_empty() {
            return None;
        }
        let r = self.queues[dev as usize].rq(id);
        match r.submitter {
            Submitter::Flusher(w) => self.wbs.get(w as usize).and_then(|wb| wb.memcg),
            Submitter::Task(t) => match r.segs.first() {
                Some(s) if r.op == Op::Write && !r.direct => self.wbs[self.inodes[s.file as usize].wb as usize].memcg,
                _ => self.tasks[t as usize].memcg,
            },
            Submitter::Journal(_) => None,
        }
    }

    /// blk-throttle's dispatch work (`blk_throtl_dispatch_work_fn`): submit the released bios
    /// in order; it sleeps when one has to wait for wbt or a tag, and the rest wait behind it.
    pub(crate) fn throtl_issue(&mut self, dev: u16) {
        let now = self.now();
        let d = dev as usize;
        let last = self.wbs[d].last_bdp_sleep;
        while let Some(id) = self.queues[d].throtl.as_ref().and_then(|t| t.next_to_issue()) {
            let blocked = self.queues[d].blk_mq_submit_bio(now, id, last) == Submit::Blocked;
            let t = self.queues[d].throtl_mut();
            if blocked {
                t.set_blocked();
                break;
            }
            t.issued();
        }
        self.kick_queue(dev);
    }

    /// blk-mq's delayed run of the queue (`blk_mq_delay_run_hw_queues`), unless re-armed later.
    pub(crate) fn on_delayed_run(&mut self, dev: u16) {
        let now = self.now();
        let q = &mut self.queues[dev as usize];
        if q.delay_run_at.is_some_and(|t| t <= now) {
            q.delay_run_at = None;
        }
        if q.delay_run.is_none_or(|t| t > now) {
            return;
        }
        q.delay_run = None;
        self.kick_queue(dev);
    }

    pub(crate) fn on_throtl_timer(&mut self, dev: u16) {
        let now = self.now();
        let d = dev as usize;
        let q = &mut self.queues[d];
        if q.throtl_timer_at.is_some_and(|t| t <= now) {
            q.throtl_timer_at = None;
        }
        let j = q.jiffies(now);
        let Some(t) = q.throtl.as_mut() else { return };
        if t.timer() != Some(j) {
            return; // re-armed since this event was scheduled
        }
        t.timer_fn(j);
        self.throtl_issue(dev);
    }

    /// Dispatch what can be dispatched and (re)arm the device and wbt timers.
    pub(crate) fn kick_queue(&mut self, dev: u16) {
        let now = self.now();
        let mut issued = std::mem::take(&mut self.scratch_ids);
        issued.clear();
        self.queues[dev as usize].run_queue(now, &mut issued);
        self.charge_commands(dev, &issued);
        if self.queues[dev as usize].elv_trace {
            self.trace_elevator(dev);
        }
        if self.cfg.trace.block {
            self.trace_block_events(dev);
            for &id in &issued {
                let q = &self.queues[dev as usize];
                if id == FLUSH_ID {
                    let comm = self.flush_waiter_comm(q.flush.first);
                    let ev = TraceEvent::BlockRqIssue {
                        dev: q.devt,
                        rwbs: FLUSH_RWBS,
                        bytes: 0,
                        sector: 0,
                        nr_sector: 0,
                        ioprio: None,
                        comm,
                    };
                    self.trace_ev(comm, 0, ev);
                    continue;
                }
                let r = q.rq(id);
                let comm = self.submitter_comm(r.submitter);
                let ev = TraceEvent::BlockRqIssue {
                    dev: q.devt,
                    rwbs: Rwbs::data(r.op == Op::Write, r.sync, r.readahead),
                    bytes: r.bytes() as u32,
                    sector: r.sector,
                    nr_sector: r.nr_sectors as u32,
                    ioprio: Some(q.submitter_prio(r.submitter)),
                    comm,
                };
                self.trace_ev(comm, 0, ev);
            }
        }
        self.scratch_ids = issued;
        self.arm_queue_timers(dev);
    }

    /// Schedule the events the queue's state asks for: the device's next, the elevator's,
    /// wbt's and blk-throttle's timers, blk-mq's delayed run.
    fn arm_queue_timers(&mut self, dev: u16) {
        let now = self.now();
        let q = &mut self.queues[dev as usize];
        if let Some(t) = q.delay_run {
            if q.delay_run_at != Some(t) {
                q.delay_run_at = Some(t);
                self.q.schedule(t.max(now), Event::DelayedRun(dev));
            }
        }
        if let Some(t) = q.device.next_event() {
            if q.tick_at.is_none_or(|s| t < s || s < now) {
                q.tick_at = Some(t);
                self.q.schedule(t.max(now), Event::Device(dev));
            }
        }
        if let Some(t) = q.elv.next_timer() {
            if q.elv_timer_at != Some(t) {
                q.elv_timer_at = Some(t);
                self.q.schedule(t.max(now), Event::ElvTimer(dev));
            }
        }
        if let Some(t) = q.wbt.next_timer() {
            if q.wbt_timer_at != Some(t) {
                q.wbt_timer_at = Some(t);
                self.q.schedule(t.max(now), Event::WbtTimer(dev));
            }
        }
        if let Some(j) = q.throtl.as_ref().and_then(|t| t.timer()) {
            let t = q.at_jiffies(j);
            if q.throtl_timer_at != Some(t) {
                q.throtl_timer_at = Some(t);
                self.q.schedule(t.max(now), Event::ThrotlTimer(dev));
            }
        }
    }

    /// The driver's CPU for the commands just issued: the kernel thread's part queued for it,
    /// the submitter's part taken at once.
    pub(crate) fn charge_commands(&mut self, dev: u16, issued: &[u32]) {
        let (mut worker, mut inline) = (0, 0);
        let q = &self.queues[dev as usize];
        for &id in issued {
            let op = if id == FLUSH_ID { Op::Flush } else { q.rq(id).op };
            let c = q.device.command_cpu(op);
            worker += c.worker;
            inline += c.inline;
        }
        if inline > 0 {
            self.cpus.steal(self.q.now(), inline);
        }
        if worker > 0 {
            self.kthread_work(dev, worker);
        }
    }

    pub(crate) fn on_device(&mut self, dev: u16) {
        let now = self.now();
        {
            let q = &mut self.queues[dev as usize];
            if q.tick_at.is_some_and(|t| t <= now) {
                q.tick_at = None;
            }
        }
        let mut done = std::mem::take(&mut self.scratch_done);
        done.clear();
        self.report_client_outstanding(dev);
        // Judged before the completions change it: a full device (tag waiters) or a flush
        // under way (its end_io kicks the requeue list) runs the queue on completion.
        let restart = {
            let q = &self.queues[dev as usize];
            q.restart_on_completion(q.device.in_flight() >= q.device.queue_depth())
        };
        self.queues[dev as usize].device.advance(now, &mut done);
        let irq = self.cfg.machine.completion_cost * done.len() as Ns;
        if irq > 0 {
            self.cpus.steal(now, irq);
        }
        for &id in &done {
            if id == FLUSH_ID {
                self.flush_completed(dev);
            } else {
                self.complete_request(dev, id);
            }
        }
        let restart = restart || done.is_empty();
        self.scratch_done = done;
        // NFS: writeback of the pages of UNSTABLE writes ends when a COMMIT covering them
        // replies (`nfs_commit_release_pages`); until then they count against the dirty limit.
        let mut released = false;
        while let Some(s) = self.queues[dev as usize].pop_stable() {
            self.end_page_writeback(s.file, s.start, s.pages);
            released = true;
        }
        if released {
            self.report_client_outstanding(dev);
        }
        if restart || released {
            self.kick_queue(dev);
        } else {
            self.arm_queue_timers(dev);
        }
    }

    /// Tell an NFS device how much of its mount is dirty, under writeback or unstable.
    pub(crate) fn report_client_outstanding(&mut self, dev: u16) {
        let d = dev as usize;
        if self.queues[d].unstable_device {
            let now = self.now();
            let bytes = (self.wbs[d].reclaimable + self.wbs[d].writeback) * crate::units::PAGE_SIZE;
            self.queues[d].device.set_client_outstanding(now, bytes);
        }
    }

    /// `waiter` asks for a cache flush of device `dev`, which blk-flush issues a little later:
    /// [`BLK_FLUSH_KICK_NS`] for a new sequence (as cold as the device's
    /// last flush is old), [`BLK_FLUSH_STEP_NS`] for a sequence's next
    /// `step`.
    pub(crate) fn blk_flush(&mut self, dev: u16, waiter: u32, step: bool) {
        let now = self.now();
        let delay = if step {
            BLK_FLUSH_STEP_NS
        } else {
            let (hot, cold) = BLK_FLUSH_KICK_NS;
            cold_cost(hot, cold, now.saturating_sub(self.queues[dev as usize].flush.last_done))
        };
        let ready = now + delay;
        if self.queues[dev as usize].queue_flush(waiter, ready) && delay > 0 {
            self.q.schedule(ready, Event::FlushKick(dev));
        } else {
            self.kick_queue(dev);
        }
    }

    /// A cache flush finished: the fsync()/sync() callers it served go on.
    pub(crate) fn flush_completed(&mut self, dev: u16) {
        let d = dev as usize;
        if self.cfg.trace.block {
            let ev = TraceEvent::BlockRqComplete {
                dev: self.queues[d].devt,
                rwbs: FLUSH_RWBS,
                sector: 0,
                nr_sector: 0,
                ioprio: None,
                error: 0,
            };
            self.trace_ev(0, 0, ev);
        }
        let now = self.now();
        for w in self.queues[d].flush_completed(now) {
            if w & crate::fs::jbd2::JOURNAL_WAITER != 0 && w & crate::fs::jbd2::FC_WAITER != 0 {
                self.fast_commit_flushed((w & 0xffff) as u16);
            } else if w & crate::fs::jbd2::JOURNAL_WAITER != 0 {
                self.journal_flushed((w & !crate::fs::jbd2::JOURNAL_WAITER) as u16);
            } else {
                self.cache_flushed(w);
            }
        }
    }

    /// A request finished on the device: end writeback or reads of its pages, release wbt
    /// and the tag, wake whoever waits.
    pub(crate) fn complete_request(&mut self, dev: u16, id: u32) {
        let now = self.now();
        let d = dev as usize;
        let (op, tracked, direct, submitter, latency, bytes, direct_bytes, log_bytes, ticks, aio) = {
            let r = self.queues[d].rq(id);
            (
                r.op,
                r.wbt_tracked,
                r.direct,
                r.submitter,
                now - r.issue_ns,
                r.bytes(),
                r.direct_sectors * 512,
                r.log_sectors * 512,
                now.saturating_sub(r.start_ns),
                r.aio,
            )
        };
        {
            let q = &mut self.queues[d];
            q.latency.record(latency);
            match op {
                Op::Write => {
                    q.bytes_written += bytes;
                    q.direct_bytes_written += direct_bytes;
                    q.log_bytes_written += log_bytes;
                    q.sec_written += bytes;
                    q.requests_written += 1;
                    q.fua_writes += u64::from(q.rq(id).fua);
                    q.sec_io.writes += 1;
                    q.sec_io.write_ticks_ns += ticks;
                }
                Op::Read => {
                    q.bytes_read += bytes;
                    q.sec_read += bytes;
                    q.requests_read += 1;
                    q.sec_io.reads += 1;
                    q.sec_io.read_ticks_ns += ticks;
                }
                // Flushes complete in `flush_completed`, outside the request pool.
                Op::Flush => {}
            }
        }
        // io.stat: the group the request was charged to (none for the root's and jbd2's).
        if let Some(cg) = self.queues[d].rq(id).blkcg {
            let g = &mut self.memcgs[cg as usize];
            match op {
                Op::Read => g.io_rbytes += bytes,
                Op::Write => g.io_wbytes += bytes,
                Op::Flush => {}
            }
        }
        if self.cfg.trace.block {
            let q = &self.queues[d];
            let r = q.rq(id);
            let ev = TraceEvent::BlockRqComplete {
                dev: q.devt,
                rwbs: Rwbs::data(r.op == Op::Write, r.sync, r.readahead),
                sector: r.sector,
                nr_sector: r.nr_sectors as u32,
                ioprio: Some(q.submitter_prio(r.submitter)),
                error: 0,
            };
            self.trace_ev(0, 0, ev);
        }
        // An NFS WRITE that replied UNSTABLE keeps its pages under writeback (the queue holds
        // them until a COMMIT, see `on_device`).
        let held = op == Op::Write && self.queues[d].hold_unstable(id);
        let nsegs = if held { 0 } else { self.queues[d].rq(id).segs.len() };
        let new_blocks = self.queues[d].rq(id).new_blocks;
        let ckpt_tid = self.queues[d].rq(id).ckpt_tid;
        // New blocks, or fallocated pages (a merge may have brought some into a request that
        // was not built for them).
        let over_unwritten = op == Op::Write
            && self.journals[d].is_some()
            && self.queues[d].rq(id).segs[..nsegs]
                .iter()
                .any(|s| self.inodes[s.file as usize].has_unwritten(s.start, s.pages));
        let converts = new_blocks || over_unwritten;
        let first_file = if converts {
            self.queues[d].rq(id).segs.first().map(|s| s.file)
        } else {
            None
        };
        // The write reached new or fallocated blocks: the extent is converted (and the size
        // updated) in a handle before the pages end writeback (ext4's end_io work, xfs's
        // ioend). ext3 did both in write().
        let converted_in = match first_file {
            Some(f) if op == Op::Write && !held && self.journals[d].is_some() => {
                self.journal_end_io(f, dev);
                Some(self.inodes[f as usize].datasync_tid)
            }
            _ => None,
        };
        // A kworker's end_io work converts (or updates the size) before the pages end
        // writeback: ext4's for unwritten extents (every new block with dioread_nolock, which
        // allocates them unwritten), xfs's for every ioend that converts or grows the file.
        let deferred = converted_in.is_some()
            && self.cfg.devices[d].fs.as_ref().is_some_and(|m| match m.fs {
                FsKind::Ext3 | FsKind::Btrfs => false,
                FsKind::Ext4 => m.dioread_nolock || over_unwritten,
                FsKind::Xfs => true,
            });
        for i in 0..nsegs {
            let s = self.queues[d].rq(id).segs[i];
            if let Some(tid) = converted_in {
                self.unwritten_converted(s.file, s.start, s.pages, tid);
            }
            match op {
                Op::Write => {
                    // A part of a split bio: its pages end writeback with the last part.
                    let written = if s.bio != NO_BIO {
                        self.queues[d].chains.done(s.bio, s.pages)
                    } else {
                        Some(s)
                    };
                    if let Some(w) = written {
                        if deferred {
                            self.end_writeback_after_conversion(dev, w.file, w.start, w.pages);
                        } else {
                            self.end_page_writeback(w.file, w.start, w.pages);
                        }
                    }
                }
                Op::Read => self.end_page_read(s.file, s.start, s.pages),
                Op::Flush => {}
            }
        }
        let mut admitted = std::mem::take(&mut self.scratch_ids);
        admitted.clear();
        let last = self.wbs[d].last_bdp_sleep;
        // blk-iolatency: release the request's slots; a woken waiter goes on up its levels,
        // then through wbt and the tag allocator like a new submission.
        let mut after_iolat = Vec::new();
        {
            let q = &mut self.queues[d];
            let (cg, submit_ns, held) = {
                let r = q.rq(id);
                (r.blkcg, r.submit_ns, r.iolat_in)
            };
            if let (Some(l), Some(cg), true) = (q.iolat.as_mut(), cg, held) {
                let mut woken = Vec::new();
                l.done(now, submit_ns, cg as usize, &mut woken);
                for (w, level) in woken {
                    let wcg = q.rq(w).blkcg.expect("a waiter has a cgroup") as usize;
                    if q.iolat.as_mut().expect("iolat").throttle(w, wcg, level).is_ok() {
                        let submitted = q.rq(w).submit_ns;
                        q.iolat.as_mut().expect("iolat").admitted_after_wait(wcg, submitted, now);
                        q.rq_mut(w).iolat_in = true;
                        match q.rq_qos_after_iolatency(now, w, last) {
                            Submit::Accepted => after_iolat.push(w),
                            Submit::Blocked | Submit::Throttled => {}
                        }
                    }
                }
            }
        }
        match op {
            Op::Write if tracked => {
                let q = &mut self.queues[d];
                q.wbt.write_completed(now, latency);
                q.wbt.done(now, last, &mut admitted);
            }
            Op::Write | Op::Flush => self.queues[d].wbt.write_completed(now, latency),
            Op::Read => self.queues[d].wbt.read_completed(now, id, latency),
        }
        // Waiters admitted by wbt now need a tag.
        let mut accepted = after_iolat;
        for &w in &admitted {
            if self.queues[d].get_tag(now, w) {
                accepted.push(w);
            }
        }
        if !(self.queues[d].rq(id).in_flush_seq() && self.queues[d].flush_front) {
            self.queues[d].elv.completed(now, id);
        }
        let hctx = self.queues[d].rq(id).hctx;
        self.queues[d].release(id);
        self.release_slot(d, op, hctx, &mut accepted);
        self.scratch_ids = admitted;
        for w in accepted {
            self.request_accepted(dev, w);
        }
        if direct {
            if let Submitter::Task(t) = submitter {
                self.direct_done(t, aio);
            }
        }
        if self.journals[d].is_some() && op == Op::Write {
            if ckpt_tid == crate::fs::fast_commit::FC_WRITE {
                self.fast_commit_written(dev);
            } else if ckpt_tid > 0 {
                self.checkpoint_written(dev, ckpt_tid);
            } else {
                self.journal_io_done(dev, log_bytes / 512);
            }
        }
    }

    /// A blocked submitter's request `id` entered the queue: let it go on.
    pub(crate) fn request_accepted(&mut self, dev: u16, id: u32) {
        if let Some(ino) = self.ends_i_sync(dev, id) {
            self.i_sync_request_taken(dev, id, ino);
        }
        if self.queues[dev as usize].rq(id).handle_wait {
            // The submitter's ext4 handle may stop now: a commit may wait for that.
            let q = &mut self.queues[dev as usize];
            q.rq_mut(id).handle_wait = false;
            q.handles_blocked -= 1;
            if self.journals[dev as usize].is_some() {
                self.commit_advance(dev);
            }
        }
        if self.queues[dev as usize].rq(id).throttled {
            let t = self.queues[dev as usize].throtl_mut();
            debug_assert_eq!(t.sleeping_on(), Some(id));
            t.issued();
            self.throtl_issue(dev);
            return;
        }
        match self.queues[dev as usize].rq(id).submitter {
            Submitter::Task(t) => {
                self.tasks[t as usize].pending.pop_front();
                self.wake_task(t);
            }
            Submitter::Flusher(w) => {
                self.flushers[w as usize].pending.pop_front();
                self.flushers[w as usize].blocked = false;
                self.flusher_continue(w);
            }
            Submitter::Journal(d) => self.journal_request_accepted(d),
        }
    }

    /// The elevator's timer (CFQ's idle slice) ran out: run its callback, which works even
    /// when the device is full, then let it dispatch again.
    pub(crate) fn on_elv_timer(&mut self, dev: u16) {
        let now = self.now();
        let q = &mut self.queues[dev as usize];
        if q.elv_timer_at.is_some_and(|t| t <= now) {
            q.elv_timer_at = None;
            q.elv.timer_fired(now);
        }
        if self.queues[dev as usize].elv_trace {
            self.trace_elevator(dev);
        }
        self.kick_queue(dev);
    }

    /// Record the request-path block tracepoints the queue of `dev` fired (bio queue, split,
    /// merges, getrq, insert), each with its submitter's name. `kick_queue` calls it, and
    /// every event that submits or admits requests ends in `kick_queue` at the same instant,
    /// so the trace stays in time order (crates/report/tests/btt.rs checks it).
    pub(crate) fn trace_block_events(&mut self, dev: u16) {
        let mut events = std::mem::take(&mut self.queues[dev as usize].blk_events);
        let dev_t = self.queues[dev as usize].devt;
        for e in &events {
            let comm = if e.throttled {
                self.throtl_comm()
            } else {
                self.submitter_comm(e.submitter)
            };
            let rwbs = Rwbs::data(e.op == Op::Write, e.sync, e.readahead);
            let bio = |what| TraceEvent::BlockBio {
                what,
                dev: dev_t,
                rwbs,
                sector: e.sector,
                nr_sector: e.nr_sectors as u32,
                comm,
            };
            let ev = match e.what {
                BlkWhat::Queue => bio(BioEvent::Queue),
                BlkWhat::GetRq => bio(BioEvent::GetRq),
                BlkWhat::BackMerge => bio(BioEvent::BackMerge),
                BlkWhat::FrontMerge => bio(BioEvent::FrontMerge),
                BlkWhat::Split { from } => TraceEvent::BlockSplit {
                    dev: dev_t,
                    rwbs,
                    sector: from,
                    new_sector: e.sector,
                    comm,
                },
                BlkWhat::Insert => TraceEvent::BlockRqInsert {
                    dev: dev_t,
                    rwbs,
                    bytes: (e.nr_sectors * 512) as u32,
                    sector: e.sector,
                    nr_sector: e.nr_sectors as u32,
                    ioprio: Some(e.prio),
                    comm,
                },
            };
            self.tout.trace.push(TraceRecord {
                t_ns: e.t_ns,
                who: comm,
                cpu: 0,
                ev,
            });
        }
        events.clear();
        self.queues[dev as usize].blk_events = events;
    }

    /// Record the tracepoints the elevator of `dev` fired (softirq or dispatch context: no
    /// task of ours, like wbt's).
    pub(crate) fn trace_elevator(&mut self, dev: u16) {
        let q = &mut self.queues[dev as usize];
        let mut events = std::mem::take(&mut q.elv_events);
        q.elv.take_trace(&mut events);
        let dev_t = q.devt;
        for &(t_ns, e) in &events {
            let name = |d: u8| crate::block::sched::kyber::DOMAIN_NAMES[d as usize];
            let ev = match e {
                ElvTrace::KyberLatency {
                    domain,
                    io,
                    percentile,
                    numerator,
                    samples,
                } => TraceEvent::KyberLatency {
                    dev: dev_t,
                    domain: name(domain),
                    kind: if io { "I/O" } else { "total" },
                    percentile,
                    numerator,
                    denominator: 4,
                    samples,
                },
                ElvTrace::KyberAdjust { domain, depth } => TraceEvent::KyberAdjust {
                    dev: dev_t,
                    domain: name(domain),
                    depth,
                },
                ElvTrace::KyberThrottled { domain } => TraceEvent::KyberThrottled {
                    dev: dev_t,
                    domain: name(domain),
                },
            };
            self.tout.trace.push(TraceRecord { t_ns, who: 0, cpu: 0, ev });
        }
        events.clear();
        self.queues[dev as usize].elv_events = events;
    }

    pub(crate) fn on_wbt_timer(&mut self, dev: u16) {
        let now = self.now();
        let d = dev as usize;
        if self.queues[d].wbt_timer_at.is_some_and(|t| t <= now) {
            self.queues[d].wbt_timer_at = None;
        }
        let mut admitted = Vec::new();
        let last = self.wbs[d].last_bdp_sleep;
        self.queues[d].wbt.timer_fn(now, last, &mut admitted);
        let mut steps = Vec::new();
        self.queues[d].wbt.take_steps(&mut steps);
        if self.tout.trace_enabled {
            let devt = self.queues[d].devt;
            for (t, msg, step, window_us, background, normal, max) in steps {
                self.tout.trace.push(TraceRecord {
                    t_ns: t,
                    who: 0,
                    cpu: 0,
                    ev: TraceEvent::WbtStep {
                        dev: devt,
                        msg,
                        step,
                        window_us,
                        background,
                        normal,
                        max,
                    },
                });
            }
        }
        let mut accepted = Vec::new();
        for &w in &admitted {
            if self.queues[d].get_tag(now, w) {
                accepted.push(w);
            }
        }
        for w in accepted {
            self.request_accepted(dev, w);
        }
        self.kick_queue(dev);
    }

    pub(crate) fn on_iolat_timer(&mut self, dev: u16) {
        let now = self.now();
        let q = &mut self.queues[dev as usize];
        if let Some(l) = q.iolat.as_mut() {
            l.timer(now);
            let at = now + crate::block::blk_iolatency::TIMER_NS;
            q.iolat_timer_at = Some(at);
            self.q.schedule(at, Event::IolatTimer(dev));
        }
    }
}
