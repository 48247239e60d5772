//! Memory cgroups (`mm/memcontrol.c`, `mm/vmscan.c`'s memcg reclaim): charging page-cache
//! pages to a group, its limits (`memory.max`, v1 `memory.limit_in_bytes`; `memory.high`),
//! and what the dirty-throttling code reads of a group (`mem_cgroup_wb_stats`).
//!
//! # The model
//!
//! - **Charges** are per file: every page of a file counts against the group of the task
//!   that owns the file (the kernel charges each folio to the group of the task that
//!   allocated it; one task per file in the model makes the two the same). A group's usage
//!   (`page_counter_read(&memcg->memory)`) is the page cache of its files and those of its
//!   descendants, plus the pages its tasks have allocated and not yet inserted. The group keeps
//!   its own file, dirty and writeback counts as its pages change state (where the kernel
//!   calls `mod_lruvec_state`), exact where `mem_cgroup_flush_stats` is exact within its
//!   batching error; the conservation law checks them against the files.
//! - **memory.max** (`try_charge_memcg`): a charge that would take a group (or an ancestor)
//!   over its limit first reclaims the group's own clean pages, oldest first
//!   (`try_to_free_mem_cgroup_pages`). When that cannot free enough, every page left is dirty
//!   or under writeback, and the versions differ:
//!   - **v2** tags them for reclaim, wakes the flushers and sleeps in `reclaim_throttle`
//!     (`VMSCAN_THROTTLE_WRITEBACK`, up to HZ/10, woken early by writeback completions);
//!   - **v1** ("legacy memcg" in `shrink_folio_list`) waits for the writeback of one of the
//!     group's pages under writeback (`folio_wait_writeback`), on that page's wait queue; with
//!     none under writeback it throttles as v2 does.
//! - **memory.high** (`mem_cgroup_handle_over_high`): an allocation by a task of a group over
//!   its high limit first reclaims the excess; if the group stays over, the task sleeps
//!   `overage² × HZ >> 34 × pages / 64` jiffies (at most 2 s, none below HZ/100), once per
//!   allocation — the kernel does it once per return to user space.
//!
//! - **memory.low**: global reclaim passes over a group within its low limit
//!   ([`Machine::global_shrink`]).
//!
//! Simplified (see docs/model-scope.md): no anonymous memory, swap, kernel memory or
//! `memory.min`; protection is each group's own low against its own usage (no `elow`
//! distribution); global reclaim does not prefer groups over their high limit; the OOM killer is not modelled (limits are at least 16 MiB, so a write's
//! allocation always fits once the group's writeback completes).

use super::page_cache::PageState;
use super::page_writeback::WbDomain;
use super::vmscan::{Lru, SWAP_CLUSTER_MAX};
use crate::config::CgroupVersion;
use crate::kernel::waitqueue::{WaitSite, PG_WRITEBACK};
use crate::machine::Machine;
use crate::metrics::trace::WbReason;

/// `MEMCG_CHARGE_BATCH`.
pub const MEMCG_CHARGE_BATCH: u64 = 64;
/// `MEMCG_DELAY_PRECISION_SHIFT` and `MEMCG_DELAY_SCALING_SHIFT`.
const DELAY_PRECISION_SHIFT: u32 = 20;
const DELAY_SCALING_SHIFT: u32 = 14;
/// The kernfs inode number the model gives the `i`th declared group (the root's is 1), as
/// the trace's `cgroup_ino` prints it.
pub const FIRST_CGROUP_INO: u64 = 1000;

/// One memory cgroup below the root.
#[derive(Default)]
pub struct MemCgroup {
    pub parent: Option<u16>,
    /// `memory.max` in pages (`u64::MAX`: max).
    pub max: u64,
    /// `memory.high` in pages (`u64::MAX`: max).
    pub high: u64,
    /// `memory.low` in pages (0: none).
    pub low: u64,
    /// Files charged to this group.
    pub inodes: Vec<u32>,
    /// Tasks running in this group.
    pub tasks: Vec<u32>,
    /// The group's clean pages in reclaim order (its lruvec's file list).
    pub lru: Lru,
    /// The group's dirty domain (`memcg->cgwb_domain`, v2).
    pub domain: WbDomain,
    pub cgroup_ino: u64,
    pub stats: MemcgEvents,
    /// Per-second samples for the results.
    pub samples: Vec<crate::metrics::MemcgSample>,
    /// Bytes of the requests charged to the group (its blkcg) that completed, read and
    /// written, on every device: io.stat's `rbytes` and `wbytes`.
    pub io_rbytes: u64,
    pub io_wbytes: u64,
    /// The group's own files' page cache, dirty and writeback pages (`usage` unused), kept
    /// as the pages change state; and its tasks' allocations in progress.
    pub own: MemcgUsage,
    pub pending: u64,
    /// The group has a wb of its own (cgroup writeback), hence a dirty domain.
    pub has_wb: bool,
}

/// What happened in a group over the run (`memory.events`, `memory.stat`'s reclaim counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemcgEvents {
    /// Charges that met `memory.max` (`max` in memory.events).
    pub max_events: u64,
    /// Charges made while over `memory.high` (`high`).
    pub high_events: u64,
    /// Pages the group's own reclaim evicted.
    pub reclaimed: u64,
    /// Global reclaims that had to take pages of the group below its memory.low (`low` in
    /// memory.events).
    pub low_events: u64,
    /// Sleeps in `reclaim_throttle` after a fruitless reclaim, and v1 waits on a page's
    /// writeback.
    pub throttled: u64,
    pub writeback_waits: u64,
    /// Penalty sleeps over memory.high, and their total, ns.
    pub high_delays: u64,
    pub high_delay_ns: u64,
}

/// A group's page counts, its descendants' included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemcgUsage {
    /// `page_counter_read(&memcg->memory)`.
    pub usage: u64,
    /// Page cache (`NR_FILE_PAGES`).
    pub file: u64,
    pub dirty: u64,
    pub writeback: u64,
}

/// What `mem_cgroup_wb_stats` reports for a wb's group, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemcgWbStats {
    pub filepages: u64,
    pub headroom: u64,
    pub dirty: u64,
    pub writeback: u64,
}

/// `mdtc_calc_avail`: the memory a group's dirty domain may grow into: its file pages plus
/// the room left below its limits, but no more than the clean memory outside the group.
pub fn mdtc_calc_avail(filepages: u64, headroom: u64, mdtc_dirty: u64, global_avail: u64, global_dirty: u64) -> u64 {
    let clean = filepages - filepages.min(mdtc_dirty);
    let global_clean = global_avail - global_avail.min(global_dirty);
    let other_clean = global_clean - global_clean.min(clean);
    filepages + headroom.min(other_clean)
}

/// `calculate_overage`: how far `usage` is over `high`, in 2^-20 units of `high`.
pub fn calculate_overage(usage: u64, high: u64) -> u64 {
    if usage <= high {
        return 0;
    }
    let high = high.max(1);
    (((usage - high) as u128) << DELAY_PRECISION_SHIFT).div_euclid(high as u128) as u64
}

/// `calculate_high_delay`: the penalty in jiffies for `nr_pages` charged at `max_overage`:
/// quadratic in the overage, in proportion to the pages, at most 2 s; 0 when it would be no
/// more than HZ/100.
pub fn calculate_high_delay(max_overage: u64, nr_pages: u64, hz: u64) -> u64 {
    if max_overage == 0 {
        return 0;
    }
    let mut penalty = (max_overage as u128 * max_overage as u128 * hz as u128) >> DELAY_PRECISION_SHIFT;
    penalty >>= DELAY_SCALING_SHIFT;
    let penalty = (penalty * nr_pages as u128 / MEMCG_CHARGE_BATCH as u128).min(2 * hz as u128) as u64;
    if penalty <= hz / 100 {
        0
    } else {
        penalty
    }
}

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
    pub fn memcg_usage(&self, cg: u16) -> MemcgUsage {
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
    pub fn mem_cgroup_wb_stats(&self, cg: u16) -> MemcgWbStats {
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
    pub(crate) fn sample_memcgs(&mut self, t_ns: crate::Ns, gdtc: &super::page_writeback::DirtyThrottleControl) {
        for cg in 0..self.memcgs.len() as u16 {
            let u = self.memcg_usage(cg);
            let (thresh, bg) = if self.memcgs[cg as usize].has_wb {
                let m = super::page_writeback::memcg_dtc(&self.mem_cgroup_wb_stats(cg), gdtc, &self.cfg.sysctl);
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

/// The page cache as reclaim walks it: the files, and the groups their evicted pages leave.
pub(crate) struct CacheView<'a> {
    inodes: &'a mut Vec<crate::fs::inode::Inode>,
    memcgs: &'a mut [MemCgroup],
}

impl<'a> CacheView<'a> {
    pub(crate) fn new(inodes: &'a mut Vec<crate::fs::inode::Inode>, memcgs: &'a mut [MemCgroup]) -> Self {
        CacheView { inodes, memcgs }
    }
}

impl super::vmscan::Mappings for CacheView<'_> {
    fn mapping(&mut self, file: u32) -> &mut super::page_cache::AddressSpace {
        &mut self.inodes[file as usize].mapping
    }

    fn device(&self, file: u32) -> u16 {
        self.inodes[file as usize].dev
    }

    fn memcg(&self, file: u32) -> Option<u16> {
        self.inodes[file as usize].memcg
    }

    fn evicted(&mut self, file: u32, n: u64) {
        if let Some(c) = self.inodes[file as usize].memcg {
            self.memcgs[c as usize].own.file -= n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mdtc_calc_avail` by hand: a group of 1 GiB usage (262,144 file pages, 50,000 dirty)
    /// under a 2 GiB memory.max on a machine with 4,000,000 dirtyable pages, 100,000 dirty.
    #[test]
    fn memcg_avail_is_its_pages_plus_capped_headroom() {
        let headroom = 524_288 - 262_144;
        // Plenty of clean memory outside: the whole headroom counts.
        assert_eq!(mdtc_calc_avail(262_144, headroom, 50_000, 4_000_000, 100_000), 524_288);
        // Only 300,000 clean pages on the machine, 212,144 of them the group's own: the other
        // 87,856 cap the headroom.
        assert_eq!(mdtc_calc_avail(262_144, headroom, 50_000, 400_000, 100_000), 262_144 + 87_856);
        // No limit at all: file pages plus all other clean memory.
        assert_eq!(mdtc_calc_avail(10, u64::MAX, 0, 1000, 0), 1000);
    }

    /// memory.high's penalty: 1 % over with a 64-page batch is below HZ/100 and dropped;
    /// 10 % over sleeps about 0.64 s; far over is capped at 2 s.
    #[test]
    fn high_delay_is_quadratic_and_capped() {
        let hz = 250;
        let high = 100_000;
        // 10 % over: overage = 0.1 × 2^20 = 104,857; 104,857² × 250 >> 34 = 159 jiffies.
        let o = calculate_overage(110_000, high);
        assert_eq!(o, 104_857);
        assert_eq!(calculate_high_delay(o, 64, hz), 159);
        // Four 16-page charges cost about what one 64-page charge does.
        assert_eq!(calculate_high_delay(o, 16, hz), 39);
        // 1 % over: 1.6 jiffies, under HZ/100 (2): no sleep.
        assert_eq!(calculate_high_delay(calculate_overage(101_000, high), 64, hz), 0);
        // 50 % over: 4,000 jiffies, capped at 2 s.
        assert_eq!(calculate_high_delay(calculate_overage(150_000, high), 64, hz), 500);
        assert_eq!(calculate_overage(high, high), 0);
    }
}
