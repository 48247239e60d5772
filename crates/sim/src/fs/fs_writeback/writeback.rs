//! The flusher's work on the machine (`fs/fs-writeback.c`): `wb_workfn`, `wb_writeback`,
//! `writeback_sb_inodes` and `__writeback_single_inode`, the dirty inode lists they walk,
//! and the wake-ups that queue their work.

use super::*;
use crate::block::queue::{Seg, Submitter, NO_BIO};
use crate::drivers::Op;
use crate::fs::inode::OnList;
use crate::fs::jbd2::{JournalIo, EXTENT_PAGES_PER_HANDLE};
use crate::kernel::cpu::Who;
use crate::machine::{Event, Machine};
use crate::metrics::trace::{TraceEvent, WbReason};
use crate::mm::page_cache::PageState;
use crate::mm::page_writeback as pw;
use std::collections::VecDeque;

impl Machine {
    fn wb_list(&mut self, wb: usize, which: OnList) -> Option<&mut VecDeque<u32>> {
        let f = &mut self.flushers[wb];
        match which {
            OnList::None => None,
            OnList::Dirty => Some(&mut f.b_dirty),
            OnList::Io => Some(&mut f.b_io),
            OnList::MoreIo => Some(&mut f.b_more_io),
        }
    }

    fn inode_move(&mut self, ino: u32, to: OnList, front: bool) {
        let (wb, from) = {
            let i = &self.inodes[ino as usize];
            (i.wb as usize, i.list)
        };
        if let Some(l) = self.wb_list(wb, from) {
            list_remove(l, ino);
        }
        if let Some(l) = self.wb_list(wb, to) {
            if front {
                l.push_front(ino);
            } else {
                l.push_back(ino);
            }
        }
        self.inodes[ino as usize].list = to;
    }

    /// `__mark_inode_dirty(I_DIRTY_PAGES)`: a clean inode gets `dirtied_when` and goes to
    /// the head of b_dirty; the first dirty inode of a wb arms the periodic flush.
    pub(crate) fn mark_inode_dirty(&mut self, ino: u32) {
        let i = &self.inodes[ino as usize];
        if i.dirty {
            return;
        }
        let wb = i.wb as usize;
        let was_idle = !self.flushers[wb].has_dirty_io();
        let j = self.jiffies();
        let i = &mut self.inodes[ino as usize];
        i.dirty = true;
        i.dirtied_when = j;
        if i.list == OnList::None {
            self.inode_move(ino, OnList::Dirty, true);
        }
        if was_idle {
            self.wb_wakeup_delayed(wb as u16);
        }
    }

    /// `wb_wakeup`: run the flusher now.
    pub(crate) fn wb_wakeup(&mut self, wb: u16) {
        let now = self.now();
        let f = &mut self.flushers[wb as usize];
        if f.wake_at.is_some_and(|t| t <= now) {
            return;
        }
        f.wake_at = Some(now);
        self.q.schedule(now, Event::Flusher(wb));
    }

    /// `wb_wakeup_delayed`: run the flusher after `dirty_writeback_centisecs`, unless an
    /// earlier run is already pending.
    pub(crate) fn wb_wakeup_delayed(&mut self, wb: u16) {
        let cs = self.cfg.sysctl.dirty_writeback_centisecs as u64;
        if cs == 0 || !self.wb_does_kupdate() {
            // pdflush and bdflush generations: kupdate runs from one global timer.
            return;
        }
        let at = self.now() + cs * 10_000_000;
        let f = &mut self.flushers[wb as usize];
        if f.wake_at.is_some_and(|t| t <= at) {
            return;
        }
        f.wake_at = Some(at);
        self.q.schedule(at, Event::Flusher(wb));
    }

    /// `wb_queue_work`: queue an explicit work and run the flusher.
    pub(crate) fn wb_queue_work(&mut self, wb: u16, w: WbWork) {
        self.flushers[wb as usize].work_list.push_back(w);
        self.wb_wakeup(wb);
    }

    /// The delayed work of a per-device flusher fired (`wb_workfn`).
    pub(crate) fn wb_workfn(&mut self, wb: u16) {
        let now = self.now();
        let f = &mut self.flushers[wb as usize];
        if f.wake_at.is_some_and(|t| t <= now) {
            f.wake_at = None;
        }
        if f.running {
            f.rerun = true;
            return;
        }
        f.running = true;
        f.stage = 0;
        self.wb_continue(wb);
    }

    /// Drive a per-device flusher until it sleeps: submit pending requests, then advance the
    /// work.
    pub(crate) fn wb_continue(&mut self, wb: u16) {
        let w = wb as usize;
        loop {
            if self.flushers[w].blocked || self.flushers[w].on_cpu || !self.flushers[w].running {
                return;
            }
            while let Some(&id) = self.flushers[w].pending.front() {
                if self.submit_request(self.wbs[w].dev, id) {
                    self.flushers[w].pending.pop_front();
                } else {
                    self.flushers[w].blocked = true;
                    return;
                }
            }
            match self.flusher_step(wb) {
                Step::Continue => {}
                Step::Cpu(ns) => {
                    self.flushers[w].on_cpu = true;
                    self.cpu_run(Who::Flusher(wb), ns);
                    return;
                }
                Step::Idle => return,
            }
        }
    }

    /// Is background writeback still due for `wb` (`wb_over_bg_thresh`)? Kernels before 5.8
    /// (`over_bground_thresh`) counted the NFS pages awaiting a COMMIT (`NR_UNSTABLE_NFS`)
    /// with the dirty ones; 6.x keeps them in writeback, out of this check.
    fn over_bground_thresh(&mut self, wb: u16) -> bool {
        let w = wb as usize;
        if self.cfg.policy.flusher == crate::config::FlusherKind::Modern {
            let stats = self.wbs[w].memcg.map(|cg| (cg, self.mem_cgroup_wb_stats(cg)));
            let memcg = stats.as_ref().map(|(cg, s)| (&self.memcgs[*cg as usize].domain, s));
            return pw::wb_over_bg_thresh(&self.vm, &self.cfg.sysctl, &self.dom, &mut self.wbs[w], memcg, &mut self.tout);
        }
        let mut vm = self.vm;
        vm.nr_dirty += self.nr_unstable();
        pw::wb_over_bg_thresh(&vm, &self.cfg.sysctl, &self.dom, &mut self.wbs[w], None, &mut self.tout)
    }

    /// Pages of NFS writes awaiting a COMMIT, all mounts.
    pub(crate) fn nr_unstable(&self) -> u64 {
        self.queues.iter().map(|q| q.unstable_pages).sum()
    }

    fn get_nr_dirty_pages(&self) -> i64 {
        (self.vm.file_dirty() + self.inodes.iter().filter(|i| i.dirty).count() as u64) as i64
    }

    /// One step of `wb_do_writeback`/`wb_writeback`.
    fn flusher_step(&mut self, wb: u16) -> Step {
        let w = wb as usize;
        if self.flushers[w].cur.is_none() {
            return self.pick_work(wb);
        }
        let mut cw = self.flushers[w].cur.expect("checked");
        let j = self.jiffies();
        let hz = self.clock.hz;
        if !cw.in_pass {
            // Top of the wb_writeback loop.
            self.stamp_tout(self.flusher_who(wb), 0);
            let f = &self.flushers[w];
            let stop = cw.w.nr_pages <= 0
                || ((cw.w.for_background || cw.w.for_kupdate) && !f.work_list.is_empty())
                || (cw.w.for_background && !self.over_bground_thresh(wb));
            if stop {
                return self.finish_work(wb, cw);
            }
            if self.flushers[w].b_io.is_empty() {
                if cw.w.for_kupdate {
                    cw.dirtied_before = j.saturating_sub(self.cfg.sysctl.dirty_expire_centisecs as u64 * hz / 100);
                } else if cw.w.for_background {
                    cw.dirtied_before = j;
                }
                self.queue_io(wb, cw.dirtied_before);
                cw.queued = true;
            }
            cw.in_pass = true;
            cw.slice_start = j;
            cw.total_wrote = 0;
            self.flushers[w].cur = Some(cw);
            return Step::Continue;
        }
        if cw.pass_done {
            return self.end_pass(wb, cw);
        }
        // writeback_sb_inodes: visit the next inode of b_io.
        let Some(ino) = self.flushers[w].b_io.pop_front() else {
            return self.end_pass(wb, cw);
        };
        self.inodes[ino as usize].list = OnList::None;
        if !cw.w.sync_all && self.inodes[ino as usize].i_sync {
            // Another WB_SYNC_NONE writer is inside it (a dirtier's own writeback): requeue_io.
            self.inode_move(ino, OnList::MoreIo, false);
            return Step::Continue;
        }
        let chunk = if cw.w.sync_all {
            i64::MAX
        } else if self.cfg.policy.writeback_chunk == crate::config::WritebackChunk::Fixed {
            (crate::fs::pdflush::MAX_WRITEBACK_PAGES as i64).min(cw.w.nr_pages.max(0))
        } else {
            pw::writeback_chunk_size(&self.wbs[w], &self.dom, cw.w.nr_pages) as i64
        };
        let wrote = self.writepages(ino, chunk, cw.w, Submitter::Flusher(wb));
        cw.w.nr_pages -= wrote as i64;
        let left = chunk - wrote as i64;
        self.requeue_inode(ino, left, cw.dirtied_before, cw.w.sync_all);
        cw.total_wrote += wrote + u64::from(!self.inodes[ino as usize].dirty);
        let slice_over = self.jiffies() >= cw.slice_start + (hz / 10).max(1);
        // Stop the pass once something was written and the 100 ms slice or the budget is used.
        cw.pass_done = cw.total_wrote > 0 && (slice_over || cw.w.nr_pages <= 0);
        self.flushers[w].cur = Some(cw);
        if wrote > 0 {
            Step::Cpu(wrote * WRITEBACK_NS_PER_PAGE)
        } else {
            Step::Continue
        }
    }

    fn end_pass(&mut self, wb: u16, mut cw: CurWork) -> Step {
        cw.in_pass = false;
        cw.pass_done = false;
        self.trace_written(wb, &cw.w);
        if cw.total_wrote > 0 || !cw.queued {
            cw.queued = true;
            self.flushers[wb as usize].cur = Some(cw);
            return Step::Continue;
        }
        // Nothing written: wait for an inode someone else is writing (wb_writeback's
        // `inode_sleep_on_writeback` on b_more_io), then go on with the work.
        let w = wb as usize;
        let held = self.flushers[w].b_more_io.iter().copied().find(|&i| self.inodes[i as usize].i_sync);
        if let Some(ino) = held {
            let f = &mut self.flushers[w];
            f.cur = Some(cw);
            f.waiting_on = Some(ino);
            f.blocked = true;
            return Step::Idle;
        }
        self.finish_work(wb, cw)
    }

    fn trace_written(&mut self, wb: u16, w: &WbWork) {
        if !self.tout.trace_enabled {
            return;
        }
        let ev = TraceEvent::WritebackWritten {
            bdi: self.wbs[wb as usize].name,
            nr_pages: w.nr_pages,
            sync_mode: u8::from(w.sync_all),
            for_kupdate: w.for_kupdate,
            range_cyclic: !w.sync_all,
            for_background: w.for_background,
            reason: w.reason,
        };
        let who = self.flusher_who(wb);
        self.trace_ev(who, 0, ev);
    }

    /// The sync work that `tid` waits for is queued on or run by `wb`'s flusher.
    pub(crate) fn flusher_has_waiter(&self, wb: u16, tid: u32) -> bool {
        let f = &self.flushers[wb as usize];
        f.work_list.iter().any(|w| w.waiter == Some(tid)) || f.cur.is_some_and(|c| c.w.waiter == Some(tid))
    }

    pub(crate) fn flusher_who(&self, wb: u16) -> u32 {
        1 + self.tasks.len() as u32 + wb as u32
    }

    fn finish_work(&mut self, wb: u16, cw: CurWork) -> Step {
        self.flushers[wb as usize].cur = None;
        if let Some(t) = cw.w.waiter {
            self.sync_work_done(t);
        }
        Step::Continue
    }

    /// `wb_do_writeback`: queued works, then start-all, kupdate, background; then sleep.
    fn pick_work(&mut self, wb: u16) -> Step {
        let w = wb as usize;
        let j = self.jiffies();
        let hz = self.clock.hz;
        loop {
            match self.flushers[w].stage {
                0 => {
                    if let Some(work) = self.flushers[w].work_list.pop_front() {
                        self.start_work(wb, work, j);
                        return Step::Continue;
                    }
                    self.flushers[w].stage = 1;
                }
                1 => {
                    self.flushers[w].stage = 2;
                    if let Some(reason) = self.flushers[w].start_all.take() {
                        let work = WbWork {
                            nr_pages: self.get_nr_dirty_pages(),
                            sync_all: false,
                            for_kupdate: false,
                            for_background: false,
                            reason,
                            waiter: None,
                        };
                        self.start_work(wb, work, j);
                        return Step::Continue;
                    }
                }
                2 if !self.wb_does_kupdate() => self.flushers[w].stage = 4,
                2 => {
                    self.flushers[w].stage = 3;
                    let interval = self.cfg.sysctl.dirty_writeback_centisecs as u64 * hz / 100;
                    if interval > 0 && j >= self.flushers[w].last_old_flush + interval {
                        self.flushers[w].last_old_flush = j;
                        let nr = self.get_nr_dirty_pages();
                        if nr > 0 {
                            let work = WbWork {
                                nr_pages: nr,
                                sync_all: false,
                                for_kupdate: true,
                                for_background: false,
                                reason: WbReason::Periodic,
                                waiter: None,
                            };
                            self.start_work(wb, work, j);
                            return Step::Continue;
                        }
                    }
                }
                3 => {
                    self.flushers[w].stage = 4;
                    self.stamp_tout(self.flusher_who(wb), 0);
                    let over = self.over_bground_thresh(wb);
                    if over {
                        let work = WbWork {
                            nr_pages: i64::MAX,
                            sync_all: false,
                            for_kupdate: false,
                            for_background: true,
                            reason: WbReason::Background,
                            waiter: None,
                        };
                        self.start_work(wb, work, j);
                        return Step::Continue;
                    }
                }
                _ => {
                    if !self.flushers[w].work_list.is_empty() || std::mem::take(&mut self.flushers[w].rerun) {
                        self.flushers[w].stage = 0;
                        continue;
                    }
                    // wb_workfn end: sleep; re-arm the periodic flush while dirty.
                    let f = &mut self.flushers[w];
                    f.running = false;
                    let rearm = f.has_dirty_io() && self.wb_does_kupdate();
                    if rearm {
                        self.wb_wakeup_delayed(wb);
                    }
                    return Step::Idle;
                }
            }
        }
    }

    fn start_work(&mut self, wb: u16, w: WbWork, j: u64) {
        self.flushers[wb as usize].cur = Some(CurWork {
            w,
            queued: false,
            in_pass: false,
            pass_done: false,
            slice_start: j,
            total_wrote: 0,
            dirtied_before: j,
        });
    }

    /// `queue_io`: b_more_io first, then inodes of b_dirty dirtied before `dirtied_before`.
    fn queue_io(&mut self, wb: u16, dirtied_before: u64) {
        let w = wb as usize;
        while let Some(ino) = self.flushers[w].b_more_io.pop_front() {
            self.flushers[w].b_io.push_back(ino);
            self.inodes[ino as usize].list = OnList::Io;
        }
        while let Some(&ino) = self.flushers[w].b_dirty.back() {
            if self.inodes[ino as usize].dirtied_when > dirtied_before {
                break;
            }
            self.flushers[w].b_dirty.pop_back();
            self.flushers[w].b_io.push_back(ino);
            self.inodes[ino as usize].list = OnList::Io;
        }
    }

    /// `requeue_inode` after a flusher visit.
    fn requeue_inode(&mut self, ino: u32, nr_to_write_left: i64, dirtied_before: u64, sync_all: bool) {
        let j = self.jiffies();
        let i = &mut self.inodes[ino as usize];
        // Pages queued for writeback count as written: the kernel's writepages returns only
        // once it has submitted them.
        if i.mapping.nr_dirty == i.mapping.nr_queued {
            i.dirty = false;
            return;
        }
        if sync_all {
            i.dirtied_when = j;
        }
        if nr_to_write_left <= 0 && i.dirtied_when <= dirtied_before {
            self.inode_move(ino, OnList::MoreIo, false);
        } else {
            self.redirty_tail(ino);
        }
    }

    /// `redirty_tail_locked`: back to the newest end of b_dirty, refreshing `dirtied_when`
    /// if it would be older than the current head.
    fn redirty_tail(&mut self, ino: u32) {
        let wb = self.inodes[ino as usize].wb as usize;
        if let Some(&head) = self.flushers[wb].b_dirty.front() {
            if self.inodes[ino as usize].dirtied_when < self.inodes[head as usize].dirtied_when {
                self.inodes[ino as usize].dirtied_when = self.jiffies();
            }
        }
        self.inode_move(ino, OnList::Dirty, true);
    }

    /// `do_writepages` of one inode by the flusher: clear up to `nr_to_write` dirty pages
    /// for I/O from `writeback_index` (range-cyclic, no wrap within a call) and queue their
    /// requests. Returns pages submitted.
    fn writepages(&mut self, ino: u32, nr_to_write: i64, w: WbWork, sub: Submitter) -> u64 {
        let from = if w.sync_all { 0 } else { self.inodes[ino as usize].writeback_index };
        let background = w.for_background || w.for_kupdate;
        let mut nr = nr_to_write.max(0) as u64;
        let dev = self.inodes[ino as usize].dev as usize;
        let bump = self.cfg.devices[dev].fs.as_ref().map_or(0, |m| m.writeback_bump_pages);
        if bump > 0 && !w.sync_all {
            // ext4_da_writepages (2.6.31 – 3.9): nr_to_write grows to the inode's run of
            // dirty pages from writeback_index (`ext4_num_dirty_pages`), up to the bump.
            let run = match self.inodes[ino as usize].mapping.next_dirty(from, bump) {
                Some((s, n)) if s == from => n,
                _ => 0,
            };
            nr = nr.max(run);
        }
        let (written, next) = self.do_writepages(ino, from, nr, sub, w.sync_all, background);
        self.inodes[ino as usize].writeback_index = next;
        if written > 0 && !w.sync_all && self.cfg.policy.flusher.is_per_bdi() {
            self.hold_i_sync(ino, sub);
        }
        written
    }

    /// `I_SYNC` for the visit that just built its requests: held until the block layer takes
    /// the last of them (`Machine::inode_sync_complete`). Only the per-bdi flusher generations
    /// pass a held inode by; 2.6.2x's `__writeback_single_inode` still started the data
    /// writeout of a locked inode, so nothing there looks at the bit.
    fn hold_i_sync(&mut self, ino: u32, sub: Submitter) {
        let dev = self.inodes[ino as usize].dev;
        let last = match sub {
            Submitter::Flusher(f) => self.flushers[f as usize].pending.back().copied(),
            Submitter::Task(t) => self.tasks[t as usize].pending.back().map(|&(_, id)| id),
            Submitter::Journal(_) => None,
        };
        if let Some(id) = last {
            self.queues[dev as usize].rq_mut(id).ends_i_sync = true;
            self.inodes[ino as usize].i_sync = true;
        }
    }

    /// `inode_sync_complete`: the visit's last request was taken, its `writepages` returns.
    pub(crate) fn inode_sync_complete(&mut self, ino: u32) {
        self.inodes[ino as usize].i_sync = false;
        let wb = self.inodes[ino as usize].wb;
        if let Some(f) = self.flushers.get_mut(wb as usize).filter(|f| f.waiting_on == Some(ino)) {
            // Woken from the inode's bit wait queue; it runs after the writer that let go.
            f.waiting_on = None;
            self.q.schedule(self.now(), Event::FlusherInodeFree(wb));
        }
    }

    /// The inode a waiting flusher slept on was let go (`Event::FlusherInodeFree`): nothing
    /// else blocks it (it had no requests left to submit when it went to sleep).
    pub(crate) fn wb_inode_free(&mut self, wb: u16) {
        self.flushers[wb as usize].blocked = false;
        self.wb_continue(wb);
    }

    /// `writeback_inodes` / `writeback_inodes_wb` with `nr_to_write` = `nr` on one bdi, by
    /// `sub` in its own context (a throttled dirtier of the I/O-issuing generations, or a
    /// pdflush thread): the inodes of b_io (refilled with those dirtied before
    /// `dirtied_before` when empty) in list order, each written range-cyclic until the budget
    /// is used. The requests go to `sub`'s pending list. Returns the pages written.
    pub(crate) fn writeback_inodes_wb(&mut self, wb: u16, nr: u64, dirtied_before: u64, sub: Submitter) -> u64 {
        let w = wb as usize;
        if self.flushers[w].b_io.is_empty() {
            self.queue_io(wb, dirtied_before);
        }
        let work = WbWork {
            nr_pages: nr as i64,
            sync_all: false,
            for_kupdate: false,
            for_background: false,
            reason: WbReason::Background,
            waiter: None,
        };
        let mut written = 0;
        let visits = self.flushers[w].b_io.len();
        for _ in 0..visits {
            if written >= nr {
                break;
            }
            let Some(&ino) = self.flushers[w].b_io.front() else { break };
            if self.inodes[ino as usize].dirtied_when > dirtied_before {
                // `older_than_this` (kupdate): stop at the first inode dirtied too recently.
                break;
            }
            self.flushers[w].b_io.pop_front();
            self.inodes[ino as usize].list = OnList::None;
            if self.inodes[ino as usize].i_sync {
                // The flusher (or another dirtier) is inside it: requeue_io, on to the next.
                self.inode_move(ino, OnList::MoreIo, false);
                continue;
            }
            let left = nr - written;
            let wrote = self.writepages(ino, left as i64, work, sub);
            self.requeue_inode(ino, left as i64 - wrote as i64, dirtied_before, false);
            written += wrote;
        }
        written
    }

    /// `do_writepages`: the bandwidth-estimation bracket around the file system's writepages
    /// (here [`Machine::write_dirty_range`]), for the flusher and for fsync alike.
    pub(crate) fn do_writepages(&mut self, ino: u32, from: u64, max: u64, sub: Submitter, sync: bool, background: bool) -> (u64, u64) {
        let wbi = self.inodes[ino as usize].wb as usize;
        let j = self.jiffies();
        pw::wb_bandwidth_estimate_start(&mut self.wbs[wbi], j, self.clock.hz);
        let r = self.write_dirty_range(ino, from, max, sub, sync, background);
        if j > self.wbs[wbi].bw_time_stamp + pw::max_pause_jiffies(self.clock.hz) {
            pw::wb_update_bandwidth(&mut self.dom, &mut self.wbs[wbi], j, self.clock.hz);
        }
        r
    }

    /// Start writeback of up to `max` dirty pages of `ino` from page `from`: take them for
    /// writeback (`Queued`) and queue requests of up to `max_sectors` on the submitter's
    /// pending list. They go under writeback as their requests are submitted, not here: a
    /// writepages call blocked in request allocation still has its later pages dirty, and the
    /// throttling of every era reads that. Returns (pages, next writeback_index).
    pub(crate) fn write_dirty_range(&mut self, ino: u32, from: u64, max: u64, sub: Submitter, sync: bool, background: bool) -> (u64, u64) {
        let mut idx = from;
        let mut written = 0;
        while written < max {
            let Some((s, n)) = self.take_dirty_run(ino, idx, max - written) else {
                idx = 0;
                break;
            };
            self.build_writeback_run(ino, s, n, sub, sync, background);
            written += n;
            idx = s + n;
        }
        (written, idx)
    }

    /// Take the first dirty run of `ino` at or after page `from`, up to `max` pages, for
    /// writeback: its pages are `Queued` (dirty still) until their requests are submitted.
    pub(crate) fn take_dirty_run(&mut self, ino: u32, from: u64, max: u64) -> Option<(u64, u64)> {
        let mapping = &mut self.inodes[ino as usize].mapping;
        let (s, n) = mapping.next_dirty(from, max)?;
        mapping.set_range(s, n, Some(PageState::Queued));
        Some((s, n))
    }

    /// The most pages a request and a writeback bio of device `dev` carry (a bio larger than
    /// a request is split into several: block/bio_chain.rs).
    pub(crate) fn writeback_units(&self, dev: u16) -> (u64, u64) {
        let d = dev as usize;
        let max_pages = (self.queues[d].max_sectors / 8).max(1);
        let bio_pages = match &self.cfg.devices[d].fs {
            Some(m) if !self.queues[d].unstable_device => m.writeback_bio_pages(),
            _ => 0,
        };
        (max_pages, bio_pages)
    }

    /// Build the requests of the `n` pages from `s` of `ino`, a run [`Machine::take_dirty_run`]
    /// took, in order onto `sub`'s pending list.
    pub(crate) fn build_writeback_run(&mut self, ino: u32, s: u64, n: u64, sub: Submitter, sync: bool, background: bool) {
        let dev = self.inodes[ino as usize].dev as usize;
        let (max_pages, bio_pages) = self.writeback_units(dev as u16);
        let journalled = self.journals[dev].is_some();
        let locks_handles = self.journals[dev].as_ref().is_some_and(|j| j.p.locks_handles);
        let per_page_handles =
            locks_handles && self.journals[dev].as_ref().is_some_and(|j| j.p.handle_per_write) && !matches!(sub, Submitter::Journal(_));
        let mut p = s;
        // The bio being built ends at `bio_end`; the next one starts there. A bio that fits
        // in one request (always without large folios) is the request itself.
        let split = bio_pages > max_pages;
        let (mut chain, mut bio_end) = (NO_BIO, s);
        while p < s + n {
            let starts_bio = p == bio_end;
            if p == bio_end {
                let pages = if split { (s + n - p).min(bio_pages) } else { s + n - p };
                bio_end = p + pages;
                // Requests are cut at multiples of max_pages: more than one if it crosses one.
                let parts = split && pages > max_pages - (p % max_pages);
                chain = if parts {
                    self.queues[dev].chains.begin(ino, p, pages)
                } else {
                    NO_BIO
                };
            }
            let len = (bio_end - p).min(max_pages - (p % max_pages)).min(max_pages);
            let new_blocks = journalled && !self.inodes[ino as usize].blocks.mapped(p);
            // Delayed allocation: blocks are assigned now, as ext4_map_blocks does.
            let inode = &mut self.inodes[ino as usize];
            let size = inode.mapping.end().max(inode.size_pages);
            let (sector, len) = inode.blocks.map_for_write(p, len, size, &mut self.allocs[dev]);
            if new_blocks {
                self.journal_alloc(ino, dev as u16, sector);
            }
            let id = self.queues[dev].alloc(
                Op::Write,
                sector,
                len * 8,
                Some(Seg {
                    file: ino,
                    start: p,
                    pages: len,
                    bio: chain,
                }),
                sub,
                sync,
                background,
                false,
                false,
            );
            self.queues[dev].rq_mut(id).set_writeback_at_submit = true;
            let folio = self.inodes[ino as usize].folio_pages;
            self.queues[dev].rq_mut(id).phys_segs = crate::block::request::folio_segments(p, len, folio);
            // New blocks (allocated unwritten, as ext4 with dioread_nolock and xfs do) and
            // fallocated ones are converted at completion.
            if new_blocks || (journalled && self.inodes[ino as usize].has_unwritten(p, len)) {
                self.queues[dev].rq_mut(id).new_blocks = true;
            }
            if chain != NO_BIO {
                self.queues[dev].chains.add(chain, id, len * crate::units::PAGE_SIZE);
            }
            if per_page_handles {
                // ext3's writepage: a handle around each page's submission.
                let r = self.queues[dev].rq_mut(id);
                r.handle_start = true;
                r.in_handle = true;
            } else if new_blocks && locks_handles {
                // ext4 maps an extent under one handle, which stays open until all its bios
                // but the last are submitted.
                let end = p + len;
                let last_of_extent = end == s + n || (end - s).is_multiple_of(EXTENT_PAGES_PER_HANDLE);
                // A handle is taken before a bio is built, never between the requests a
                // split bio becomes: the bio's first request waits for it.
                let handle_in_bio = (p - s).is_multiple_of(EXTENT_PAGES_PER_HANDLE)
                    || (p - s) / EXTENT_PAGES_PER_HANDLE != (bio_end - 1 - s) / EXTENT_PAGES_PER_HANDLE;
                let r = self.queues[dev].rq_mut(id);
                r.handle_start = starts_bio && handle_in_bio;
                r.in_handle = !last_of_extent;
            }
            match sub {
                Submitter::Flusher(f) => self.flushers[f as usize].pending.push_back(id),
                Submitter::Task(t) => self.tasks[t as usize].pending.push_back((dev as u16, id)),
                Submitter::Journal(d) => self.journals[d as usize]
                    .as_mut()
                    .expect("journal")
                    .pending
                    .push_back(JournalIo::Rq(id)),
            }
            p += len;
        }
    }
}
