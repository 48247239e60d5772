//! Zones of a 32-bit (i386, `CONFIG_HIGHMEM4G`) kernel: ZONE_NORMAL ("lowmem", the first
//! 896 MiB, where the kernel, its slab and every buffer-cache page live) and ZONE_HIGHMEM
//! (the rest, usable only by page cache and user memory), as 2.6.x set them up and allocated
//! from them. `[machine] highmem` turns them on; without it the machine has one zone.
//!
//! * Watermarks (`setup_per_zone_pages_min`, 2.6.x): `min_free_kbytes` =
//!   sqrt(16 × lowmem KiB) is shared by the lowmem zones; ZONE_HIGHMEM's min is
//!   present/1024 clamped to [32, 128] pages. low = min + min/4, high = min + min/2.
//! * `lowmem_reserve`: a highmem-capable allocation may take a lowmem page only while lowmem
//!   keeps highmem/32 pages (`sysctl_lowmem_reserve_ratio` = 32 for ZONE_NORMAL on i386) free
//!   on top of its watermark.
//! * Placement (`__alloc_pages`): a page-cache page of a file (`GFP_HIGHUSER`) comes from
//!   highmem while highmem is above its low watermark, else from lowmem while lowmem is above
//!   low + reserve; only when both fail is kswapd woken, and it reclaims every zone back to its
//!   high watermark (lowmem: + the reserve, `balance_pgdat` with the highmem classzone). So
//!   each kswapd round refills the zones by their watermark gaps: highmem's tiny one (32
//!   pages) and lowmem's much larger one — most of a streaming writer's pages land in lowmem.
//! * Buffer-cache pages (`grow_dev_page`: `find_or_create_page(..., GFP_NOFS)`) come from
//!   lowmem only, and their reclaim may neither write dirty pages nor shrink the dentry and
//!   inode caches (`!__GFP_FS`): it can only free clean lowmem pages, and sleeps in
//!   `congestion_wait` when the oldest lowmem pages are dirty or under writeback.
//! * Dirty limits: 2.6.20's `get_dirty_limits` takes its percentages of all lowmem
//!   (`vm_total_pages - totalhigh_pages`: "We always exclude high memory from our count",
//!   2.6.20-rc3), kernel and slab included; 2.6.23+ (`determine_dirtyable_memory`, then
//!   `vm_highmem_is_dirtyable` = 0 from 2.6.24) of lowmem's free and LRU pages only.
//!
//! The model puts all of the machine's `unreclaimable` memory (kernel, slab) in lowmem and
//! none in highmem.

use super::inactive_list::InactiveList;
use super::vmstat::VmStat;
use crate::units::PAGE_SIZE;

/// `sysctl_lowmem_reserve_ratio[ZONE_NORMAL]` on i386.
pub(crate) const LOWMEM_RESERVE_RATIO: u64 = 32;

/// The two zones' watermarks and the highmem zone's inactive list (lowmem's is the
/// generation's `inactive` list).
pub(crate) struct Zones {
    /// Pages of ZONE_HIGHMEM.
    pub high_total: u64,
    pub high_min: u64,
    pub high_low: u64,
    pub high_high: u64,
    pub low_min: u64,
    pub low_low: u64,
    pub low_high: u64,
    /// ZONE_NORMAL's `lowmem_reserve[ZONE_HIGHMEM]`.
    pub reserve: u64,
    /// Pages handed out by zone (writers, readers) and not yet in the page cache.
    pub pending_high: u64,
    pub pending_low: u64,
    pub high_list: InactiveList,
}

impl Zones {
    /// Zones of a machine of `total` pages with `highmem` pages of ZONE_HIGHMEM; `None` for a
    /// 64-bit machine (`highmem` = 0).
    pub(crate) fn boot(total: u64, highmem: u64, min_free_kbytes: u64) -> Option<Self> {
        if highmem == 0 || highmem >= total {
            return None;
        }
        let lowmem = total - highmem;
        let min_free_kb = if min_free_kbytes > 0 {
            min_free_kbytes
        } else {
            // 2.6.x `init_per_zone_pages_min`: sqrt(lowmem_kbytes * 16), in [128, 65536].
            (((lowmem * PAGE_SIZE / 1024) * 16) as f64).sqrt().clamp(128.0, 65_536.0) as u64
        };
        let low_min = min_free_kb * 1024 / PAGE_SIZE;
        let high_min = (highmem / 1024).clamp(32, 128);
        Some(Zones {
            high_total: highmem,
            high_min,
            high_low: high_min + high_min / 4,
            high_high: high_min + high_min / 2,
            low_min,
            low_low: low_min + low_min / 4,
            low_high: low_min + low_min / 2,
            reserve: highmem / LOWMEM_RESERVE_RATIO,
            pending_high: 0,
            pending_low: 0,
            high_list: InactiveList::default(),
        })
    }

    /// Free highmem pages.
    pub(crate) fn free_high(&self, vm: &VmStat) -> u64 {
        self.high_total.saturating_sub(vm.high_file + self.pending_high)
    }

    /// Free lowmem pages.
    pub(crate) fn free_low(&self, vm: &VmStat) -> u64 {
        vm.nr_free.saturating_sub(self.free_high(vm))
    }

    /// Can `n` pages be allocated at watermark `wm` (Min, Low or High) — from lowmem only
    /// (`GFP_NOFS`) or from either zone (`GFP_HIGHUSER`)? Returns the zone: Some(true)
    /// highmem, Some(false) lowmem.
    pub(crate) fn pick(&self, vm: &VmStat, n: u64, lowmem_only: bool, wm: Wmark) -> Option<bool> {
        let (h, l) = match wm {
            Wmark::Min => (self.high_min, self.low_min),
            Wmark::Low => (self.high_low, self.low_low),
        };
        if !lowmem_only && self.free_high(vm) >= n + h {
            return Some(true);
        }
        let reserve = if lowmem_only { 0 } else { self.reserve };
        (self.free_low(vm) >= n + l + reserve).then_some(false)
    }
}

/// Which watermark an allocation attempt checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wmark {
    Min,
    Low,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i386_2gib_zones() {
        // 2 GiB, 896 MiB lowmem: min_free_kbytes = sqrt(917504 * 16) = 3831 KiB = 957 pages.
        let z = Zones::boot(524_288, 294_912, 0).expect("highmem");
        assert_eq!((z.low_min, z.low_low, z.low_high), (957, 1196, 1435));
        assert_eq!((z.high_min, z.high_low, z.high_high), (128, 160, 192));
        assert_eq!(z.reserve, 9216, "36 MiB of lowmem kept from highmem-capable allocations");
        assert!(Zones::boot(524_288, 0, 0).is_none());
    }
}
