//! Free page reporting (`mm/page_reporting.c`, virtio-balloon's `VIRTIO_BALLOON_F_REPORTING`):
//! a guest hands the free memory it has not used for a while back to its host, and the
//! host backs a frame again only when the guest next touches it.
//!
//! On a virtual machine whose host allocates memory on demand (Firecracker, cloud VMs with
//! free page reporting), that touch stalls the vCPU for a host page fault: on this lab's
//! 6.18 guest, a buffered write of 512 MiB took 0.10 s of system time when the memory had
//! been freed the moment before and 1.5 s when it had been freed two seconds before
//! (11 µs more per 4 KiB page), and a `cat` of a cold file 0.02 s against 0.56 s. The
//! page cache of a copy grows into exactly that memory, so the copy runs at the rate the
//! host faults pages in, not at the rate of the disk.
//!
//! The model keeps one number, how many frames the host backs. The page allocator hands
//! out the frames freed last first (per-CPU lists and the heads of the buddy lists), so the
//! frames in use plus those freed within the reporting delay are backed, and a reporting
//! pass returns the rest: the frames above the most that were in use since the previous
//! pass have been free for a whole delay — at most a sixteenth of the free memory a pass
//! (`page_reporting_cycle`'s budget). A pass leaves some free memory backed
//! (`[machine] page_reporting_reserve`; upstream the low watermark and 32 of the blocks it
//! reports, `PAGE_REPORTING_CAPACITY` × 2 MiB): the first 0.1–1 GiB a copy took cost nothing
//! on that guest, the rest 10–14 µs a page.
//!
//! Reporting hands over only free blocks of `page_reporting_order` pages and up (2 MiB), and
//! the allocator cuts a folio from the smallest free block that holds it: a folio that large
//! (a sequential reader's readahead on xfs, [`crate::mm::readahead::ra_folio_orders`])
//! skips the reserve, which lies in smaller pieces, and is fresh unless frames freed within the
//! last delay are spare ([`PageReporting::allocated_blocks`]). Given the free lists the
//! machine starts with (`[machine] buddyinfo`), the model follows them instead of one reserve:
//! which of that memory a folio can use depends on its order ([`crate::mm::free_lists`]).

mod touch;

use crate::mm::free_lists::{FreeLists, Orders};
use crate::Ns;

/// Frames the host backs, as allocation and the reporting passes meet them.
#[derive(Clone, Debug)]
pub(crate) struct PageReporting {
    /// How long a free frame stays backed (`PAGE_REPORTING_DELAY`, 2 s upstream); 0: the
    /// guest never reports, a frame once touched stays backed.
    delay: Ns,
    /// Frames the host backs.
    backed: u64,
    /// The most frames in use at once since the last reporting pass.
    peak: u64,
    /// Free frames a pass leaves backed.
    keep: u64,
    /// `page_reporting_order`: folios this large come out of reported blocks.
    order: usize,
    /// The free lists below that order, when the machine's were given: they stand in for
    /// `keep`.
    lists: Option<FreeLists>,
}

/// `PAGE_REPORTING_CAPACITY` blocks of `pageblock_order` (2 MiB on x86-64), in 4 KiB pages:
/// the free memory above the low watermark that a pass leaves unreported.
pub(crate) const REPORTING_RESERVE_PAGES: u64 = 32 * 512;

impl PageReporting {
    /// A machine that boots with `in_use` frames in use and its free memory reported but for
    /// `keep` frames (a fresh VM, or one whose free memory was freed long ago), reporting
    /// blocks of `order` and up.
    pub(crate) fn new(delay: Ns, in_use: u64, keep: u64, order: u32) -> Self {
        PageReporting {
            delay,
            backed: in_use + keep,
            peak: in_use,
            keep,
            order: order as usize,
            lists: None,
        }
    }

    /// The same machine booting with `lists` for its backed free memory instead of a reserve.
    pub(crate) fn with_free_lists(self, lists: FreeLists) -> Self {
        PageReporting {
            backed: self.backed - self.keep,
            keep: 0,
            lists: Some(lists),
            ..self
        }
    }

    /// The time between reporting passes; 0: none.
    pub(crate) fn delay(&self) -> Ns {
        self.delay
    }

    /// `in_use` frames are in use just after an allocation: how many of them the guest
    /// touches for the first time since the host took them back (or ever).
    pub(crate) fn allocated(&mut self, in_use: u64) -> u64 {
        self.peak = self.peak.max(in_use);
        let fresh = in_use.saturating_sub(self.backed);
        self.backed = self.backed.max(in_use);
        fresh
    }

    /// The same, when `blocks` of the frames just allocated went to folios of
    /// `page_reporting_order` or more: the allocator serves such a folio from a free block at
    /// least that large, and those are the blocks a pass reports; the free memory a pass
    /// leaves backed is in smaller pieces (the reserve is what reporting cannot take), so a
    /// large folio finds a backed block only among those freed within the last delay.
    pub(crate) fn allocated_blocks(&mut self, in_use: u64, blocks: u64) -> u64 {
        let blocks = blocks.min(in_use);
        let small = in_use - blocks;
        let fresh_small = self.allocated(small);
        self.peak = self.peak.max(in_use);
        let recent = self.backed.saturating_sub(small + self.keep);
        let fresh_blocks = blocks - blocks.min(recent);
        self.backed += fresh_blocks;
        fresh_small + fresh_blocks
    }

    /// `in_use` frames are in use just after an allocation of `orders[k]` pages in folios of
    /// each order `k`: how many of them the guest touches for the first time since the host
    /// took them back. Frames freed within the last delay are reused first; the rest come from
    /// the free lists where the machine's were given, else as [`Self::allocated_blocks`] says.
    pub(crate) fn allocated_folios(&mut self, in_use: u64, orders: &Orders) -> u64 {
        let Some(lists) = self.lists.as_mut() else {
            let blocks = orders.iter().skip(self.order).sum();
            return self.allocated_blocks(in_use, blocks);
        };
        let new: u64 = orders.iter().sum();
        let mut recent = self.backed.saturating_sub(in_use.saturating_sub(new)).min(new);
        let mut rest = *orders;
        for p in rest.iter_mut() {
            let s = recent.min(*p);
            *p -= s;
            recent -= s;
        }
        let fresh = lists.allocate(&rest);
        self.peak = self.peak.max(in_use);
        self.backed = self.backed.max(in_use);
        fresh
    }

    /// A reporting pass with `in_use` frames in use and `free` free: the frames above the most
    /// in use since the last pass have been free for a whole delay, and go back to the host —
    /// up to the pass's budget. Frees only lower the level between allocations, so that most
    /// is reached at an allocation or at the start of the window.
    ///
    /// The budget is `page_reporting_cycle`'s: a sixteenth of the free list and one call of
    /// `PAGE_REPORTING_CAPACITY` blocks more, "reporting all pages on an idle system in about
    /// 30 seconds" — memory freed in bulk (a dropped page cache) goes back over many passes.
    pub(crate) fn pass(&mut self, in_use: u64, free: u64) {
        let floor = self.peak.max(in_use + self.keep);
        let eligible = self.backed.saturating_sub(floor);
        self.backed -= eligible.min(free / 16 + REPORTING_RESERVE_PAGES);
        self.peak = in_use;
    }

    /// Frames the host backs.
    #[cfg(test)]
    pub(crate) fn backed(&self) -> u64 {
        self.backed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Free memory of a machine large enough that a pass's budget is no limit.
    const FREE: u64 = 1 << 30;

    #[test]
    fn growth_into_never_used_memory_is_fresh_reuse_is_not() {
        let mut r = PageReporting::new(2, 100, 0, 9);
        assert_eq!(r.allocated(150), 50);
        // Freed (down to 120) and allocated again before a pass: still backed.
        assert_eq!(r.allocated(150), 0);
        assert_eq!(r.allocated(170), 20);
    }

    #[test]
    fn large_folios_skip_the_reserve_but_reuse_blocks_freed_lately() {
        // 100 in use, 50 kept backed by the passes.
        let mut r = PageReporting::new(2, 100, 50, 9);
        assert_eq!(r.allocated_blocks(140, 0), 0, "small folios take the reserve");
        let mut r = PageReporting::new(2, 100, 50, 9);
        assert_eq!(r.allocated_blocks(140, 40), 40, "large ones do not");
        assert_eq!(r.allocated_blocks(150, 0), 0, "and leave it whole");
        assert_eq!(r.allocated_blocks(200, 0), 10);
        // 150 freed (200 -> 50) and 100 taken again as large folios before a pass: what was
        // freed beyond the reserve's worth is still backed.
        assert_eq!(r.allocated_blocks(150, 100), 0);
        assert_eq!(r.backed(), 200);
    }

    #[test]
    fn memory_free_for_a_whole_window_is_returned() {
        let mut r = PageReporting::new(2, 100, 0, 9);
        r.allocated(1_000);
        // Down to 300 in use by frees; the first pass keeps the window's peak, the second
        // returns what stayed free all through its window.
        r.pass(300, FREE);
        assert_eq!(r.backed(), 1_000);
        r.pass(300, FREE);
        assert_eq!(r.backed(), 300);
        assert_eq!(r.allocated(900), 600);
    }

    #[test]
    fn an_allocation_in_the_window_keeps_its_frames() {
        let mut r = PageReporting::new(2, 100, 0, 9);
        r.allocated(1_000);
        r.pass(300, FREE);
        r.allocated(800);
        r.pass(300, FREE);
        assert_eq!(r.backed(), 800);
    }

    #[test]
    fn a_pass_leaves_its_reserve_backed() {
        let mut r = PageReporting::new(2, 100, 50, 9);
        assert_eq!(r.allocated(150), 0, "the reserve at boot is backed");
        assert_eq!(r.allocated(170), 20);
        r.pass(100, FREE);
        r.pass(100, FREE);
        assert_eq!(r.backed(), 150);
        assert_eq!(r.allocated(160), 10);
    }

    #[test]
    fn memory_freed_in_bulk_goes_back_over_many_passes() {
        // A machine whose whole memory was in use (8 GiB of page cache), then dropped: a pass
        // reports a sixteenth of the free memory (and one call more), so the host has it all
        // back after about 15 passes (30 s at 2 s each), as upstream says, not after one.
        let total = 2 << 20;
        let mut r = PageReporting::new(2, 10, 0, 9);
        r.allocated(total);
        r.pass(10, total - 10);
        let mut passes = 0;
        while r.backed() > 10 && passes < 100 {
            r.pass(10, total - 10);
            passes += 1;
        }
        assert!((10..=20).contains(&passes), "{passes} passes to report 8 GiB");
    }
}
