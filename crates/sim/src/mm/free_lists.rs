//! The buddy allocator's free lists below the reporting order, as far as free page reporting
//! makes them matter (`mm/page_alloc.c`: `__rmqueue_smallest`, `expand`).
//!
//! Reporting hands the host only free blocks of `page_reporting_order` pages and up, so what
//! the guest keeps backed is its free memory in smaller blocks, and which of it an allocation
//! can use depends on the folio it wants: the allocator cuts a folio of order k from the
//! smallest free block of order k or more. On this lab's 6.18 guest (2026-12-05), with
//! `/proc/buddyinfo` showing 1.35 GiB free in blocks of orders 4–7 and 1.1 GiB in order 8, a
//! buffered copy in 1 MiB writes (order-8 folios) ran warm for its first 1.09 GiB and then
//! paid the first touch of every page, while the same copy in 64 KiB writes (order 4) ran warm
//! for all of its 2 GiB, emptying orders 4–8. A single reserve cannot say both.
//!
//! Each order's list hands out its newest entry first. When nothing below the reporting order
//! is left, a reported block is split: the folio and the pieces left over (one of each order
//! between) are all memory the host took back, and those pieces, being the newest, are what the
//! next allocations of their orders get.

/// Orders of the free lists (`NR_PAGE_ORDERS`: `MAX_PAGE_ORDER` 10 on x86-64, and 0).
pub const NR_ORDERS: usize = 11;

/// Pages allocated, by the order of the folios they went into.
pub(crate) type Orders = [u64; NR_ORDERS];

/// `pages` in folios of `order` (clamped to the largest).
pub(crate) fn in_folios(pages: u64, order: u32) -> Orders {
    let mut o = [0; NR_ORDERS];
    o[(order as usize).min(NR_ORDERS - 1)] = pages;
    o
}

/// Free blocks per order below the reporting order: the backed ones a machine started with, and
/// the cold pieces of reported blocks split since.
#[derive(Clone, Debug)]
pub(crate) struct FreeLists {
    warm: Orders,
    cold: Orders,
    /// `page_reporting_order`: blocks this large and larger are reported.
    report: usize,
    /// Per order, the pages left of the last block taken for a folio allocated in pieces, and
    /// whether it was cold.
    open: [(u64, bool); NR_ORDERS],
}

impl FreeLists {
    /// Lists holding `blocks[o]` backed free blocks of each order `o` below `report_order`
    /// (what `/proc/buddyinfo` shows once reporting has settled); the blocks it shows at the
    /// reporting order and above are taken to be reported.
    pub(crate) fn new(blocks: &[u64], report_order: u32) -> Self {
        let report = (report_order as usize).min(NR_ORDERS);
        let mut warm = [0; NR_ORDERS];
        for (o, &n) in blocks.iter().enumerate().take(report) {
            warm[o] = n;
        }
        FreeLists {
            warm,
            cold: [0; NR_ORDERS],
            report,
            open: [(0, false); NR_ORDERS],
        }
    }

    /// Backed free frames left in the lists.
    #[cfg(test)]
    pub(crate) fn warm_frames(&self) -> u64 {
        self.warm.iter().enumerate().map(|(o, &n)| n << o).sum()
    }

    /// Allocate `orders[k]` pages in folios of each order `k`: how many of them are frames the
    /// host took back. Pages that do not fill a whole folio are part of one, taken whole: the
    /// next pieces of that order use the rest of it (a write's chunks cut by the dirty
    /// ratelimit, a readahead run cut by the request size), as its copy would.
    pub(crate) fn allocate(&mut self, orders: &Orders) -> u64 {
        let mut cold = 0;
        for (k, &pages) in orders.iter().enumerate() {
            let (open, open_cold) = self.open[k];
            let from_open = open.min(pages);
            self.open[k].0 -= from_open;
            if open_cold {
                cold += from_open;
            }
            let left = pages - from_open;
            let whole = left >> k;
            cold += self.take(k, whole) << k;
            let rest = left - (whole << k);
            if rest > 0 {
                let c = self.take(k, 1) > 0;
                if c {
                    cold += rest;
                }
                self.open[k] = ((1 << k) - rest, c);
            }
        }
        cold
    }

    /// Take `n` blocks of order `k`, each from the smallest order that has one, its newest
    /// entries (the cold pieces) first: how many were cold.
    fn take(&mut self, k: usize, mut n: u64) -> u64 {
        let mut cold = 0;
        while n > 0 {
            if k >= self.report {
                // A folio as large as a reported block comes out of one.
                return cold + n;
            }
            // Whole blocks of the folio's own order, at once.
            let c = self.cold[k].min(n);
            self.cold[k] -= c;
            cold += c;
            n -= c;
            let w = self.warm[k].min(n);
            self.warm[k] -= w;
            n -= w;
            if n == 0 {
                break;
            }
            // Split the smallest larger block: one piece of each order from k up goes back,
            // and one block of order k is taken.
            let found = (k + 1..self.report).find(|&o| self.cold[o] + self.warm[o] > 0);
            let warm = match found {
                Some(o) if self.cold[o] > 0 => {
                    self.cold[o] -= 1;
                    self.cold[k..o].iter_mut().for_each(|c| *c += 1);
                    false
                }
                Some(o) => {
                    self.warm[o] -= 1;
                    self.warm[k..o].iter_mut().for_each(|w| *w += 1);
                    true
                }
                None => {
                    self.cold[k..self.report].iter_mut().for_each(|c| *c += 1);
                    false
                }
            };
            if !warm {
                cold += 1;
            }
            n -= 1;
        }
        cold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This lab's guest on 2026-12-05 (`/proc/buddyinfo`, Normal zone, orders 0–10).
    const LAB: [u64; 11] = [17507, 9681, 5549, 3005, 1116, 696, 1531, 1625, 1113, 720, 1762];

    /// Pages of a copy in writes of `order` folios before the first cold one.
    fn warm_run(order: u32) -> u64 {
        let mut f = FreeLists::new(&LAB, 9);
        let step = 1 << order;
        let mut pages = 0;
        while f.allocate(&in_folios(step, order)) == 0 {
            pages += step;
        }
        pages
    }

    #[test]
    fn a_folio_uses_only_blocks_as_large_as_itself() {
        let mib = |pages: u64| pages / 256;
        // 1 MiB folios: order 8 alone, 1113 MiB (the kernel: 1088 MiB warm, then cold).
        assert_eq!(mib(warm_run(8)), 1113);
        // 64 KiB folios: orders 4 to 8, 2.4 GiB (the kernel: all of its 2 GiB warm).
        let o4 = LAB[4..9].iter().enumerate().map(|(i, &n)| n << (4 + i)).sum::<u64>();
        assert_eq!(warm_run(4), o4);
        // 4 KiB pages take everything below the reporting order.
        assert_eq!(warm_run(0), FreeLists::new(&LAB, 9).warm_frames());
        // Folios of the reporting order come from reported blocks.
        assert_eq!(warm_run(9), 0);
    }

    #[test]
    fn the_pieces_of_a_reported_block_are_cold_and_taken_first() {
        let mut f = FreeLists::new(&[0, 0, 4], 3);
        // Order 2 holds 4 warm blocks; order-2 folios take them, then split a reported block.
        assert_eq!(f.allocate(&in_folios(16, 2)), 0);
        assert_eq!(f.allocate(&in_folios(4, 2)), 4, "split from a reported order-3 block");
        // The other half of that block is the newest order-2 entry: cold too.
        assert_eq!(f.allocate(&in_folios(4, 2)), 4);
        // Single pages find no warm block either: the reported blocks' pieces.
        assert_eq!(f.allocate(&in_folios(3, 0)), 3);
        assert_eq!(f.warm_frames(), 0);
    }

    #[test]
    fn splitting_a_warm_block_leaves_warm_pieces_for_smaller_folios() {
        let mut f = FreeLists::new(&[0, 0, 0, 1], 4);
        assert_eq!(f.allocate(&in_folios(1, 0)), 0);
        assert_eq!(f.warm_frames(), 7, "pieces of orders 0, 1, 2 left");
        assert_eq!(f.allocate(&in_folios(4, 2)), 0);
        assert_eq!(f.allocate(&in_folios(2, 1)), 0);
        assert_eq!(f.allocate(&in_folios(1, 0)), 0);
        assert_eq!(f.allocate(&in_folios(1, 0)), 1, "then a reported block's piece");
    }

    #[test]
    fn a_folio_allocated_in_pieces_takes_one_block() {
        // One backed 1 MiB block: eight pieces of 32 pages of a 1 MiB folio fill it, warm; the
        // next folio's first piece comes out of a reported block, and so do its other pieces.
        let mut f = FreeLists::new(&[0, 0, 0, 0, 0, 0, 0, 0, 1], 9);
        for _ in 0..8 {
            assert_eq!(f.allocate(&in_folios(32, 8)), 0);
        }
        assert_eq!(f.allocate(&in_folios(32, 8)), 32);
        assert_eq!(f.allocate(&in_folios(224, 8)), 224);
        assert_eq!(in_folios(5, 20)[NR_ORDERS - 1], 5);
    }
}
