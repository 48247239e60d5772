//! Waiting on a page (`mm/filemap.c`): `folio_wait_bit` sleeps a task on its page's hashed
//! wait queue until the page is unlocked or its writeback ends, and `folio_wake_bit` wakes the
//! bucket as the era's policy says. The table itself is `kernel/waitqueue.rs`.

use crate::config::PageWake;
use crate::kernel::task::Phase;
use crate::kernel::waitqueue::{page_key, PageWaitState, WaitSite, Woken, PG_LOCKED, PG_WRITEBACK};
use crate::machine::Machine;
use crate::mm::page_cache::PageState;

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

    /// Sleep `tid` on the wait queue of (`file`, `page`) until `bits` are clear; the caller
    /// leaves the task in its waiting phase and returns.
    pub(crate) fn page_wait(&mut self, tid: u32, file: u32, page: u64, bits: u8, site: WaitSite, exclusive: bool) {
        // Before 2.6.7 every page wait is non-exclusive.
        let exclusive = exclusive && self.pagewait.policy() != PageWake::WakeAll;
        let key = self.pagewait.key(file, page);
        self.pagewait.enqueue(key, tid, bits, exclusive);
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
        let key = self.pagewait.key(w.file, w.page);
        if self.wait_bits(w.file, w.page) & w.bits != 0 {
            if !w.queued {
                self.pagewait.enqueue(key, tid, w.bits, w.exclusive);
                let tw = &mut self.tasks[tid as usize].wq;
                tw.schedules[w.site as usize] += 1;
                if let Some(s) = tw.wait.as_mut() {
                    s.queued = true;
                }
            }
            return true;
        }
        if w.queued {
            self.pagewait.remove(key, tid);
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
    /// completion does it): no wakeup.
    pub(crate) fn wake_pages(&mut self, file: u32, start: u64, n: u64, cleared: u8) {
        if self.pagewait.waiters() == 0 {
            return;
        }
        let recheck = self.cfg.machine.wait_recheck_cost;
        let shift = self.pagewait.sub_shift();
        let (end, mut page) = (start + n, start);
        while page < end {
            // One unlock per kernel page (several model pages on sparc64's 8 KiB pages).
            let kp = page >> shift;
            page = ((kp + 1) << shift).min(end);
            let key = page_key(file, kp);
            if !self.pagewait.active(key) {
                continue;
            }
            let bits = self.wait_bits(file, kp << shift);
            if bits & cleared != 0 {
                continue;
            }
            self.pagewait.wake(key, bits);
            for i in 0..self.pagewait.woken.len() {
                let Woken { tid, matched } = self.pagewait.woken[i];
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
            if self.pagewait.waiters() == 0 {
                return;
            }
        }
    }
}
