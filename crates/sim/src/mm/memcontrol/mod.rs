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

mod charge;

use super::page_writeback::WbDomain;
use super::vmscan::Lru;
use crate::metrics::MemcgEvents;

/// `MEMCG_CHARGE_BATCH`.
pub(crate) const MEMCG_CHARGE_BATCH: u64 = 64;
/// `MEMCG_DELAY_PRECISION_SHIFT` and `MEMCG_DELAY_SCALING_SHIFT`.
const DELAY_PRECISION_SHIFT: u32 = 20;
const DELAY_SCALING_SHIFT: u32 = 14;

/// One memory cgroup below the root.
#[derive(Default)]
pub(crate) struct MemCgroup {
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

/// A group's page counts, its descendants' included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MemcgUsage {
    /// `page_counter_read(&memcg->memory)`.
    pub usage: u64,
    /// Page cache (`NR_FILE_PAGES`).
    pub file: u64,
    pub dirty: u64,
    pub writeback: u64,
}

/// `calculate_overage`: how far `usage` is over `high`, in 2^-20 units of `high`.
pub(crate) fn calculate_overage(usage: u64, high: u64) -> u64 {
    if usage <= high {
        return 0;
    }
    let high = high.max(1);
    (((usage - high) as u128) << DELAY_PRECISION_SHIFT).div_euclid(high as u128) as u64
}

/// `calculate_high_delay`: the penalty in jiffies for `nr_pages` charged at `max_overage`:
/// quadratic in the overage, in proportion to the pages, at most 2 s; 0 when it would be no
/// more than HZ/100.
pub(crate) fn calculate_high_delay(max_overage: u64, nr_pages: u64, hz: u64) -> u64 {
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
    use crate::mm::page_writeback::mdtc_calc_avail;

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
