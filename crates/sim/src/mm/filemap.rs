//! Waiting on a page (`mm/filemap.c`): `folio_wait_bit` sleeps a task on its page's hashed
//! wait queue until the page is unlocked or its writeback ends, and `folio_wake_bit` wakes the
//! bucket as the era's policy says; a buffer wait (`__wait_on_buffer`, or a journal handle's in
//! `do_get_write_access`) sleeps on the buffer table instead, woken by its own block's unlock.
//! The tables are `kernel/waitqueue.rs`.

use crate::config::PageWake;
use crate::engine::time::NSEC_PER_SEC;
use crate::kernel::task::Phase;
use crate::kernel::waitqueue::{page_key, PageWaitState, PageWaitTable, WaitSite, Woken, PG_LOCKED, PG_WRITEBACK};
use crate::machine::Event;
use crate::machine::Machine;
use crate::mm::page_cache::PageState;
use crate::mm::page_writeback;
use crate::mm::vmscan::SWAP_CLUSTER_MAX;

impl Machine {
    /// Busy bits of a page now: locked while being read, writeback while being written.
    pub(crate) fn page_bits(&self, file: u32, page: u64) -> u8 {
        if let Some(dev) = crate::fs::jbd2::bdev_of(file) {
            // A metadata buffer: locked while a commit writes it to the log (BH_Shadow).
            return match self.journal(dev) {
                Some(j) if j.shadowed(page) => PG_LOCKED,
                _ => 0,
            };
        }
        match self.inodes[file as usize].mapping.state(page) {
            Some(PageState::Reading) => PG_LOCKED,
            Some(PageState::Writeback) | Some(PageState::WritebackDirty) => PG_WRITEBACK,
            // Taken for writeback, its request not yet submitted: whoever must see it written
            // (fsync) waits as for writeback; the end of its writeback wakes them.
            Some(PageState::Queued) => PG_WRITEBACK,
            _ => 0,
        }
    }

    /// The bits of the kernel page holding model page `page`: a page of sparc64's 8 KiB is
    /// locked while either of its halves is being read.
    pub(crate) fn wait_bits(&self, file: u32, page: u64) -> u8 {
        let shift = self.pagewait.sub_shift();
        if shift == 0 {
            return self.page_bits(file, page);
        }
        let kp = page >> shift;
        (kp << shift..(kp + 1) << shift).fold(0, |b, p| b | self.page_bits(file, p))
    }

    /// The table a wait at `site` sleeps on: a buffer's, or a page's.
    fn wait_table(&mut self, site: WaitSite) -> &mut PageWaitTable {
        self.table(site.on_buffer())
    }

    /// The key of wait `w` in its table: its block for a buffer, its kernel page for a page.
    pub(crate) fn wait_key(&self, w: &PageWaitState) -> u64 {
        self.table_of(w.site.on_buffer()).key(w.file, w.page)
    }

    /// The busy bits wait `w` sees now: its own block's for a buffer (a buffer unlocks when
    /// its own read ends), its whole kernel page's for a page.
    pub(crate) fn wait_state_bits(&self, w: &PageWaitState) -> u8 {
        if w.site.on_buffer() {
            self.page_bits(w.file, w.page)
        } else {
            self.wait_bits(w.file, w.page)
        }
    }

    /// Sleep `tid` on the wait queue of (`file`, `page`) until `bits` are clear; the caller
    /// leaves the task in its waiting phase and returns.
    pub(crate) fn page_wait(&mut self, tid: u32, file: u32, page: u64, bits: u8, site: WaitSite, exclusive: bool) {
        let table = self.wait_table(site);
        // Before 2.6.7 every page wait is non-exclusive.
        let exclusive = exclusive && table.policy() != PageWake::WakeAll;
        let key = table.key(file, page);
        table.enqueue(key, tid, bits, exclusive);
        let w = &mut self.tasks[tid as usize].wq;
        w.schedules[site as usize] += 1;
        w.wait = Some(PageWaitState {
            file,
            page,
            bits,
            site,
            exclusive,
            queued: true,
        });
    }

    /// At the top of `task_run`: true if the task is in a page wait whose page is still
    /// busy (it sleeps again, re-queued if it had been woken), false if it may go on.
    pub(crate) fn page_wait_recheck(&mut self, tid: u32) -> bool {
        let Some(w) = self.tasks[tid as usize].wq.wait else {
            return false;
        };
        let key = self.wait_key(&w);
        if self.wait_state_bits(&w) & w.bits != 0 {
            if !w.queued {
                self.wait_table(w.site).enqueue(key, tid, w.bits, w.exclusive);
                let tw = &mut self.tasks[tid as usize].wq;
                tw.schedules[w.site as usize] += 1;
                if let Some(s) = tw.wait.as_mut() {
                    s.queued = true;
                }
            }
            return true;
        }
        if w.queued {
            self.wait_table(w.site).remove(key, tid);
        }
        self.tasks[tid as usize].wq.wait = None;
        if w.exclusive && w.site == WaitSite::LockPage {
            // The woken `lock_page` waiter took the lock; the model's lockers (a read finding
            // the page uptodate, a write) hold it no time, and their `unlock_page` passes the
            // wakeup on to the next exclusive waiter.
            self.wake_pages(w.file, w.page, 1, PG_LOCKED);
        }
        false
    }

    /// `unlock_page` / `end_page_writeback` of pages [start, start+n) of `file`, which
    /// cleared `cleared` (`PG_LOCKED`, `PG_WRITEBACK`; 0: wake regardless): wake each
    /// page's bucket as the policy says. A kernel page larger than the model's whose other
    /// part still holds the bit has not reached its `unlock_page` yet (the last buffer's
    /// completion does it): no wakeup. Each block's buffer waiters wake on their own table.
    pub(crate) fn wake_pages(&mut self, file: u32, start: u64, n: u64, cleared: u8) {
        for buffers in [false, true] {
            if self.table_of(buffers).waiters() > 0 {
                self.wake_table(buffers, file, start, n, cleared);
            }
        }
    }

    /// The buffer table, or the page table.
    fn table_of(&self, buffers: bool) -> &PageWaitTable {
        if buffers {
            &self.bufwait
        } else {
            &self.pagewait
        }
    }

    /// [`Machine::table_of`], to change it.
    fn table(&mut self, buffers: bool) -> &mut PageWaitTable {
        if buffers {
            &mut self.bufwait
        } else {
            &mut self.pagewait
        }
    }

    /// Wake one table for [start, start+n): the page table once per kernel page (several
    /// model pages on sparc64's 8 KiB pages), `unlock_buffer` → `wake_up_buffer` once per
    /// block; a unit whose `cleared` bits are still held is not woken.
    fn wake_table(&mut self, buffers: bool, file: u32, start: u64, n: u64, cleared: u8) {
        let shift = if buffers { 0 } else { self.pagewait.sub_shift() };
        let (end, mut page) = (start + n, start);
        while page < end {
            let unit = page >> shift;
            page = ((unit + 1) << shift).min(end);
            let key = page_key(file, unit);
            if !self.table_of(buffers).active(key) {
                continue;
            }
            let bits = if buffers {
                self.page_bits(file, unit)
            } else {
                self.wait_bits(file, unit << shift)
            };
            if bits & cleared != 0 {
                continue;
            }
            self.table(buffers).wake(key, bits);
            self.run_woken(buffers);
            if self.table_of(buffers).waiters() == 0 {
                return;
            }
        }
    }

    /// Run the tasks the last wake of the buffer (`buffers`) or page table woke; a waiter
    /// woken for another page or buffer pays the re-check.
    fn run_woken(&mut self, buffers: bool) {
        let recheck = self.cfg.machine.wait_recheck_cost;
        for i in 0..self.table_of(buffers).woken.len() {
            let Woken { tid, matched } = self.table_of(buffers).woken[i];
            let task = &mut self.tasks[tid as usize];
            if let Some(s) = task.wq.wait.as_mut() {
                s.queued = false;
            }
            task.wq.wakeups += 1;
            if !matched {
                task.wq.spurious += 1;
                task.wq.wake_extra += recheck;
            }
            if !task.is_done() && task.phase != Phase::Idle {
                self.run_task_at(tid, self.q.now());
            }
        }
    }
}

impl Machine {
    /// `folio_account_dirtied` for the pages [start, start+n) of `file` that a write makes
    /// dirty, and `__mark_inode_dirty` if the inode was clean. Absent and clean pages become
    /// dirty; a page under writeback becomes dirty as well (`PG_writeback` + `PG_dirty`); an
    /// already dirty page is not dirtied again. The pages were allocated by the caller; the
    /// allocations of pages that were already cached are given back.
    pub(crate) fn account_dirtied(&mut self, tid: u32, file: u32, start: u64, n: u64) {
        let dev = self.inodes[file as usize].dev as usize;
        if self.allocs[dev].allocates_at_write() {
            // prepare_write's get_block: ext3 without reservation windows places each block now.
            let blocks = &mut self.inodes[file as usize].blocks;
            for p in start..start + n {
                blocks.ext3_get_block(p, &mut self.allocs[dev], u64::from(tid));
            }
        }
        let (mut absent, mut newly) = (0, 0);
        let mut idx = start;
        while idx < start + n {
            let m = &mut self.inodes[file as usize].mapping;
            let (st, run) = m.run_at(idx, start + n - idx);
            let to = match st {
                None | Some(PageState::Clean) => Some(PageState::Dirty),
                Some(PageState::Writeback) => Some(PageState::WritebackDirty),
                Some(PageState::Dirty) | Some(PageState::WritebackDirty) | Some(PageState::Queued) => None,
                // A read started on pages the writer had allocated but not yet inserted (the
                // kernel's writer holds them locked, so readahead would skip them): the write's
                // data wins, the read's completion finds them dirty and leaves them so.
                Some(PageState::Reading) => Some(PageState::Dirty),
            };
            if let Some(to) = to {
                m.set_range(idx, run, Some(to));
                newly += run;
                if st.is_none() {
                    absent += run;
                    self.page_inserted(file, idx, run);
                }
                if st == Some(PageState::Reading) {
                    // Whoever waits for those pages finds them uptodate now.
                    self.wake_pages(file, idx, run, crate::kernel::waitqueue::PG_LOCKED);
                }
            }
            idx += run;
        }
        self.vm.nr_alloc_pending -= n;
        self.tasks[tid as usize].alloc_pending -= n;
        self.memcg_pending(tid, -(n as i64));
        self.memcg_account(file, absent as i64, newly as i64, 0);
        self.vm.nr_file += absent;
        self.vm.nr_free += n - absent;
        self.inodes[file as usize].nr_dirtied += newly;
        self.laws.durability.dirtied(file, start, n);
        self.vm.nr_dirty += newly;
        self.vm.nr_dirtied += newly;
        let wb = self.inodes[file as usize].wb as usize;
        self.wbs[wb].reclaimable += newly;
        self.wbs[wb].dirtied += newly;
        self.policy.dirtied(tid, newly);
        let task = &mut self.tasks[tid as usize];
        task.dirty.nr_dirtied += newly;
        let cpu = task.dirty.cpu.min(self.bdp_ratelimits.len() - 1);
        self.bdp_ratelimits[cpu] += newly;
        self.mark_inode_dirty(file);
    }

    /// Writeback of `n` pages of `file` from `start` completed (`__folio_end_writeback`).
    pub(crate) fn end_page_writeback(&mut self, file: u32, start: u64, n: u64) {
        let inode = &mut self.inodes[file as usize];
        // A page written again during its I/O stays dirty (`folio_end_writeback` clears only
        // PG_writeback).
        let moved = inode.mapping.end_writeback(start, n);
        self.wake_pages(file, start, n, crate::kernel::waitqueue::PG_WRITEBACK);
        let inode = &mut self.inodes[file as usize];
        inode.nr_written += moved;
        let dev = inode.dev;
        let wb = inode.wb as usize;
        let inode_idle = inode.mapping.nr_writeback == 0;
        self.vm.nr_writeback -= moved;
        self.vm.nr_written += moved;
        self.memcg_account(file, 0, 0, -(moved as i64));
        self.wbs[wb].writeback -= moved;
        self.wbs[wb].writeout_add(&mut self.dom, moved);
        if let Some(cg) = self.wbs[wb].memcg {
            let w = &mut self.wbs[wb];
            w.memcg_completions
                .add_max(&mut self.memcgs[cg as usize].domain.completions, w.max_prop_frac, moved);
        }
        self.policy.writeout(wb, moved);
        match self.era.inactive.as_mut() {
            None => self.lru_add_clean(file, start, n),
            Some(l) => {
                l.rotate_reclaimable(file, start, n);
                if let Some(z) = self.era.zones.as_mut() {
                    z.high_list.rotate_reclaimable(file, start, n);
                }
            }
        }
        if !self.fprop_armed {
            self.fprop_armed = true;
            let period = 3 * NSEC_PER_SEC;
            self.q.schedule_in(period, Event::FpropPeriod);
        }
        if inode_idle {
            // wb_inode_writeback_end: one less inode under writeback, bandwidth update later.
            self.wbs[wb].writeback_inodes = self.wbs[wb].writeback_inodes.saturating_sub(1);
            if !self.flushers[wb].bw_dwork_pending {
                self.flushers[wb].bw_dwork_pending = true;
                let d = self.clock.tick_ns() * page_writeback::max_pause_jiffies(self.clock.hz);
                self.q.schedule_in(d, Event::BwDwork(wb as u16));
            }
        }
        self.ordered_written(dev);
        // acct_reclaim_writeback: wake reclaim-throttled tasks once enough was written.
        if !self.reclaim_waiters.is_empty() {
            self.reclaim_written += moved;
            if self.reclaim_written > SWAP_CLUSTER_MAX * self.reclaim_waiters.len() as u64 {
                self.reclaim_written = 0;
                let ws = std::mem::take(&mut self.reclaim_waiters);
                for t in ws {
                    self.wake_task(t);
                }
            }
        }
    }
}
