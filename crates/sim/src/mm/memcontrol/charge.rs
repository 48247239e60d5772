//! A group's pages on the machine: charging them (`try_charge_memcg`, memory.high's
//! penalty), its counters as pages change state, its own reclaim and its waits on writeback,
//! global reclaim's protection of memory.low, and what the dirty throttle reads of it.

use super::{calculate_high_delay, calculate_overage, CacheView, MemcgUsage};
use crate::config::CgroupVersion;
use crate::kernel::waitqueue::{WaitSite, PG_WRITEBACK};
use crate::machine::Machine;
use crate::metrics::trace::WbReason;
use crate::mm::page_cache::PageState;
use crate::mm::page_writeback::MemcgWbStats;
use crate::mm::vmscan::SWAP_CLUSTER_MAX;

impl Machine {
    /// Whether cgroup `cg` is `ancestor` or below it.
    fn memcg_within(&self, cg: u16, ancestor: u16) -> bool {
        let mut c = Some(cg);
        while let Some(x) = c {
            if x == ancestor {
                return true;
            }
            c = self.memcgs[x as usize].parent;
        }
        false
    }

    /// The page counts of group `cg` and its descendants.
    pub(crate) fn memcg_usage(&self, cg: u16) -> MemcgUsage {
        let mut u = MemcgUsage::default();
        for (c, g) in self.memcgs.iter().enumerate() {
            if !self.memcg_within(c as u16, cg) {
                continue;
            }
            u.file += g.own.file;
            u.dirty += g.own.dirty;
            u.writeback += g.own.writeback;
            u.usage += g.pending;
        }
        u.usage += u.file;
        u
    }

    /// Pages of `file` changed state: `file` pages entered (+) or left (−) the cache, `dirty`
    /// and `writeback` likewise; the file's group follows, as `mod_lruvec_state` does.
    #[inline]
    pub(crate) fn memcg_account(&mut self, file: u32, file_delta: i64, dirty_delta: i64, writeback_delta: i64) {
        if let Some(c) = self.inodes[file as usize].memcg {
            let o = &mut self.memcgs[c as usize].own;
            o.file = o.file.wrapping_add_signed(file_delta);
            o.dirty = o.dirty.wrapping_add_signed(dirty_delta);
            o.writeback = o.writeback.wrapping_add_signed(writeback_delta);
        }
    }

    /// Task `tid` allocated (+) or inserted or gave back (−) `n` pages: its group's charge
    /// in progress follows.
    #[inline]
    pub(crate) fn memcg_pending(&mut self, tid: u32, n: i64) {
        if let Some(c) = self.tasks[tid as usize].memcg {
            let g = &mut self.memcgs[c as usize];
            g.pending = g.pending.wrapping_add_signed(n);
        }
    }

    /// Whether every group's counters agree with its files and tasks (the conservation law).
    pub(crate) fn memcg_counters_check(&self) -> Option<String> {
        for (c, g) in self.memcgs.iter().enumerate() {
            let mut want = MemcgUsage::default();
            for &ino in &g.inodes {
                let m = &self.inodes[ino as usize].mapping;
                want.file += m.nr_pages;
                want.dirty += m.nr_dirty;
                want.writeback += m.nr_writeback;
            }
            let pending: u64 = g.tasks.iter().map(|&t| self.tasks[t as usize].alloc_pending).sum();
            if (g.own.file, g.own.dirty, g.own.writeback, g.pending) != (want.file, want.dirty, want.writeback, pending) {
                return Some(format!(
                    "cgroup {}: file/dirty/writeback/allocating {}/{}/{}/{} != its files' and tasks' {}/{}/{}/{pending}",
                    self.cfg.cgroups.groups[c].path,
                    g.own.file,
                    g.own.dirty,
                    g.own.writeback,
                    g.pending,
                    want.file,
                    want.dirty,
                    want.writeback
                ));
            }
        }
        None
    }

    /// `mem_cgroup_wb_stats` for the group of wb `wb`: its file, dirty and writeback pages,
    /// and the headroom below the tightest `min(memory.max, memory.high)` of it and its
    /// ancestors (the root has no limit).
    pub(crate) fn mem_cgroup_wb_stats(&self, cg: u16) -> MemcgWbStats {
        let own = self.memcg_usage(cg);
        let mut headroom = u64::MAX;
        let mut c = Some(cg);
        while let Some(x) = c {
            let g = &self.memcgs[x as usize];
            let ceiling = g.max.min(g.high);
            if ceiling != u64::MAX {
                let used = if x == cg { own.usage } else { self.memcg_usage(x).usage };
                headroom = headroom.min(ceiling - ceiling.min(used));
            }
            c = g.parent;
        }
        MemcgWbStats {
            filepages: own.file,
            headroom,
            dirty: own.dirty,
            writeback: own.writeback,
        }
    }

    /// `try_to_free_mem_cgroup_pages`: evict up to `want` clean pages of group `cg` and its
    /// descendants, the group's own oldest first. Returns the pages freed.
    fn reclaim_memcg(&mut self, cg: u16, want: u64) -> u64 {
        let mut got = 0;
        // The group itself first, then its descendants in declaration order.
        let groups = std::iter::once(cg).chain((0..self.memcgs.len() as u16).filter(|&c| c != cg));
        for c in groups.collect::<Vec<_>>() {
            if got >= want {
                break;
            }
            if !self.memcg_within(c, cg) {
                continue;
            }
            let mut lru = std::mem::take(&mut self.memcgs[c as usize].lru);
            got += lru.shrink(want - got, &mut CacheView::new(&mut self.inodes, &mut self.memcgs));
            self.memcgs[c as usize].lru = lru;
        }
        self.vm.nr_free += got;
        self.vm.nr_file -= got;
        self.memcgs[cg as usize].stats.reclaimed += got;
        got
    }

    /// The first page under writeback of group `cg` or its descendants.
    fn memcg_page_under_writeback(&self, cg: u16) -> Option<(u32, u64)> {
        self.memcgs
            .iter()
            .enumerate()
            .filter(|(c, _)| self.memcg_within(*c as u16, cg))
            .find_map(|(_, g)| {
                g.inodes.iter().find_map(|&ino| {
                    let m = &self.inodes[ino as usize].mapping;
                    if m.nr_writeback == 0 {
                        return None;
                    }
                    [PageState::Writeback, PageState::WritebackDirty]
                        .iter()
                        .filter_map(|&st| m.next_in_state(0, 1, st).map(|(p, _)| p))
                        .min()
                        .map(|p| (ino, p))
                })
            })
    }

    /// `try_charge_memcg` for `n` pages by task `tid` (with `mem_cgroup_handle_over_high`
    /// ahead of it). True when the pages may be allocated; false when the task sleeps first
    /// (over memory.high, or in reclaim at memory.max) and retries when woken.
    pub(crate) fn try_charge_memcg(&mut self, tid: u32, n: u64) -> bool {
        let Some(cg) = self.tasks[tid as usize].memcg else {
            return true;
        };
        if !self.tasks[tid as usize].high_delayed && self.memcg_over_high(tid, cg, n) {
            return false;
        }
        let mut c = Some(cg);
        while let Some(x) = c {
            let max = self.memcgs[x as usize].max;
            if max != u64::MAX {
                let usage = self.memcg_usage(x).usage;
                if usage + n > max {
                    self.memcgs[x as usize].stats.max_events += 1;
                    let want = usage + n - max;
                    if self.reclaim_memcg(x, want.max(SWAP_CLUSTER_MAX.min(usage))) < want {
                        self.memcg_reclaim_wait(tid, x);
                        return false;
                    }
                }
            }
            c = self.memcgs[x as usize].parent;
        }
        self.tasks[tid as usize].high_delayed = false;
        true
    }

    /// A readahead's charge (`__GFP_NORETRY`): reclaim the group's clean pages if it must,
    /// but give up rather than wait.
    pub(crate) fn try_charge_memcg_noretry(&mut self, tid: u32, n: u64) -> bool {
        let mut c = self.tasks[tid as usize].memcg;
        while let Some(x) = c {
            let max = self.memcgs[x as usize].max;
            if max != u64::MAX {
                let usage = self.memcg_usage(x).usage;
                if usage + n > max && self.reclaim_memcg(x, usage + n - max) < usage + n - max {
                    return false;
                }
            }
            c = self.memcgs[x as usize].parent;
        }
        true
    }

    /// Reclaim found only dirty and writeback pages in group `cg`: wait as the version does.
    fn memcg_reclaim_wait(&mut self, tid: u32, cg: u16) {
        if self.cfg.cgroups.version == CgroupVersion::V1 {
            if let Some((ino, page)) = self.memcg_page_under_writeback(cg) {
                self.memcgs[cg as usize].stats.writeback_waits += 1;
                self.tasks[tid as usize].memstall = true;
                self.page_wait(tid, ino, page, PG_WRITEBACK, WaitSite::WaitOnPageBit, false);
                return;
            }
        }
        self.memcgs[cg as usize].stats.throttled += 1;
        self.wakeup_flusher_threads(WbReason::Vmscan);
        self.reclaim_throttle(tid);
    }

    /// `mem_cgroup_handle_over_high`: reclaim what group `cg` (or an ancestor) holds over its
    /// memory.high; if still over, sleep the penalty. True when the task sleeps.
    fn memcg_over_high(&mut self, tid: u32, cg: u16, n: u64) -> bool {
        let mut max_overage = 0;
        let mut c = Some(cg);
        while let Some(x) = c {
            let high = self.memcgs[x as usize].high;
            if high != u64::MAX {
                let usage = self.memcg_usage(x).usage;
                if usage + n > high {
                    self.memcgs[x as usize].stats.high_events += 1;
                    self.reclaim_memcg(x, usage + n - high);
                    max_overage = max_overage.max(calculate_overage(self.memcg_usage(x).usage + n, high));
                }
            }
            c = self.memcgs[x as usize].parent;
        }
        let hz = self.clock.hz;
        let jiffies = calculate_high_delay(max_overage, n, hz);
        if jiffies == 0 {
            return false;
        }
        let ns = jiffies * self.clock.tick_ns();
        let g = &mut self.memcgs[cg as usize].stats;
        g.high_delays += 1;
        g.high_delay_ns += ns;
        self.tasks[tid as usize].high_delayed = true;
        self.tasks[tid as usize].memstall = true;
        self.sleep_task(tid, ns);
        true
    }

    /// Pages [start, start+n) of `file` became clean: queue them for reclaim, globally and
    /// in the file's group.
    pub(crate) fn lru_add_clean(&mut self, file: u32, start: u64, n: u64) {
        self.lru.add(file, start, n);
        if let Some(cg) = self.inodes[file as usize].memcg {
            self.memcgs[cg as usize].lru.add(file, start, n);
        }
    }

    /// Sample every group: its pages, and its dirty domain's thresholds against the global
    /// control `gdtc` (avail and dirty of the instant).
    pub(crate) fn sample_memcgs(&mut self, t_ns: crate::Ns, gdtc: &crate::mm::page_writeback::DirtyThrottleControl) {
        for cg in 0..self.memcgs.len() as u16 {
            let u = self.memcg_usage(cg);
            let (thresh, bg) = if self.memcgs[cg as usize].has_wb {
                let m = crate::mm::page_writeback::memcg_dtc(&self.mem_cgroup_wb_stats(cg), gdtc, &self.cfg.sysctl);
                (m.thresh, m.bg_thresh)
            } else {
                (0, 0)
            };
            let g = &mut self.memcgs[cg as usize];
            let (io_rbytes, io_wbytes) = (g.io_rbytes, g.io_wbytes);
            g.samples.push(crate::metrics::MemcgSample {
                t_ns,
                usage: u.usage,
                file: u.file,
                dirty: u.dirty,
                writeback: u.writeback,
                dirty_thresh: thresh,
                dirty_background_thresh: bg,
                io_rbytes: Some(io_rbytes),
                io_wbytes: Some(io_wbytes),
            });
        }
    }

    /// Global reclaim (kswapd, folded into the allocation): evict up to `want` clean pages,
    /// first passing over the groups within their `memory.low`, then, if that was not
    /// enough, from them too (`memcg_low_reclaim`). Returns the pages evicted.
    pub(crate) fn global_shrink(&mut self, want: u64) -> u64 {
        if self.memcgs.iter().all(|g| g.low == 0) {
            return self.lru.shrink(want, &mut CacheView::new(&mut self.inodes, &mut self.memcgs));
        }
        let protected: Vec<bool> = (0..self.memcgs.len() as u16).map(|c| self.memcg_protected(c)).collect();
        let mut got = self
            .lru
            .shrink_unprotected(want, &mut CacheView::new(&mut self.inodes, &mut self.memcgs), &protected);
        if got < want {
            for (c, p) in protected.iter().enumerate() {
                if *p {
                    self.memcgs[c].stats.low_events += 1;
                }
            }
            got += self.lru.shrink(want - got, &mut CacheView::new(&mut self.inodes, &mut self.memcgs));
        }
        got
    }

    /// Whether group `cg`'s pages are within the protection of `memory.low`: its usage (or
    /// an ancestor's, for the nearest that sets one) is at most that ancestor's low.
    fn memcg_protected(&self, cg: u16) -> bool {
        let mut c = Some(cg);
        while let Some(x) = c {
            let low = self.memcgs[x as usize].low;
            if low > 0 {
                return self.memcg_usage(x).usage <= low;
            }
            c = self.memcgs[x as usize].parent;
        }
        false
    }

    /// Advance every group's dirty-domain proportions by a period (`writeout_period`), as
    /// their own timers do. False when none has anything left to age.
    pub(crate) fn memcg_domains_new_period(&mut self) -> bool {
        let mut any = false;
        for g in &mut self.memcgs {
            any |= g.domain.completions.new_period(1);
        }
        any
    }
}
