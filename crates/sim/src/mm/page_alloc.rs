//! A task's page allocations (`mm/page_alloc.c`): the free pages it takes, kswapd's top-up,
//! and the reclaim a short machine makes it wait in (`reclaim_throttle`).

use crate::machine::Machine;

impl Machine {
    /// Get `n` free pages for the page cache. Returns false when the task must wait in
    /// `reclaim_throttle` (the task is then queued to be woken).
    pub(crate) fn alloc_pages(&mut self, tid: u32, n: u64) -> bool {
        let ok = self.try_alloc_pages(tid, n);
        self.account_reclaim_wait(tid, ok)
    }

    /// A task's wait for memory lasts from its first failed allocation to the one that
    /// succeeds (reclaim throttling, memcg reclaim, memory.high's penalty, the pageout
    /// generations' `try_to_free_pages`): counted for the verdict's reclaim rule.
    pub(crate) fn account_reclaim_wait(&mut self, tid: u32, ok: bool) -> bool {
        let now = self.q.now();
        let t = &mut self.tasks[tid as usize];
        match (ok, t.reclaim_since) {
            (false, None) => t.reclaim_since = Some(now),
            (true, Some(since)) => {
                t.reclaim_since = None;
                t.reclaim_waits += 1;
                t.reclaim_wait += now - since;
            }
            _ => {}
        }
        ok
    }

    /// kswapd, folded into allocation: before `n` pages are taken, bring free memory from
    /// under the low watermark back to the high one by evicting clean pages.
    pub(crate) fn kswapd_top_up(&mut self, n: u64) {
        if self.vm.nr_free < n + self.vm.wmark_low {
            let want = n + self.vm.wmark_high - self.vm.nr_free.min(n + self.vm.wmark_high);
            let got = self.global_shrink(want);
            self.vm.nr_free += got;
            self.vm.nr_file -= got;
        }
    }

    pub(crate) fn try_alloc_pages(&mut self, tid: u32, n: u64) -> bool {
        if self.era.inactive.is_some() {
            return self.alloc_pages_pageout(tid, n);
        }
        if !self.try_charge_memcg(tid, n) {
            return false;
        }
        self.kswapd_top_up(n);
        if self.vm.nr_free >= n + self.vm.wmark_min {
            self.vm.nr_free -= n;
            self.vm.nr_alloc_pending += n;
            self.tasks[tid as usize].alloc_pending += n;
            self.memcg_pending(tid, n as i64);
            return true;
        }
        // Nothing clean left: wake the flushers (start-all, reason vmscan) and throttle.
        self.wakeup_flusher_threads(crate::metrics::trace::WbReason::Vmscan);
        self.reclaim_throttle(tid);
        false
    }

    /// `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)`: sleep up to HZ/10, woken early once
    /// enough pages finished writeback (`acct_reclaim_writeback`).
    pub(crate) fn reclaim_throttle(&mut self, tid: u32) {
        if self.reclaim_waiters.is_empty() {
            self.reclaim_written = 0;
        }
        self.reclaim_waiters.push(tid);
        self.tasks[tid as usize].memstall = true;
        let timeout = self.clock.tick_ns() * (self.clock.hz / 10).max(1);
        self.sleep_task(tid, timeout);
    }

    /// Insert `n` pages that task `tid` allocated by `alloc_pages` into the page cache of
    /// `file`.
    pub(crate) fn map_pages(&mut self, tid: u32, file: u32, n: u64) {
        self.vm.nr_alloc_pending -= n;
        self.tasks[tid as usize].alloc_pending -= n;
        self.memcg_pending(tid, -(n as i64));
        self.memcg_account(file, n as i64, 0, 0);
        self.vm.nr_file += n;
    }

    // ---- block layer glue ----
}
