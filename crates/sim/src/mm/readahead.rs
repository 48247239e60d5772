//! File readahead (`mm/readahead.c`): which pages a buffered read brings in before they are
//! asked for. The generation's [`Readahead`](crate::config::Readahead) piece picks the rules:
//!
//! * **windowed** (2.6.5–2.6.10), as 2.6.6's `page_cache_readahead` has them (akpm's windows
//!   with the "lazy readahead" heuristics of spring 2004). The open file keeps a *current*
//!   window and an *ahead* window. Every page the reader reaches is either a hit (inside the
//!   current window or just past it: the next window grows by two pages) or a miss (it shrinks
//!   by two; at zero readahead turns off). Reaching the ahead window's first page promotes it
//!   to current; any other page outside the current window starts a new one there. The ahead
//!   window is read when the reader is in the current one and its pattern looks sequential
//!   (the running average of sequential run lengths is at least the maximum window), else
//!   only once it reaches the current window's last page. The first read of a file starts a
//!   window of half the maximum.
//!
//!   Readahead I/O is skipped while the device is read-congested (`do_page_cache_readahead`
//!   checks `bdi_read_congested`; a dm stripe is congested when any member is), and a window
//!   that read nothing shrinks the next by one, or turns readahead off
//!   (`check_ra_success`). A reader that then misses a page in the cache shrinks the window by
//!   three more (down to `VM_MIN_READAHEAD`, `handle_ra_miss`) and reads that page alone
//!   (`readpage`), waiting for it. With readahead off, `max` sequential misses in a row turn it
//!   back on.
//! * **on-demand** (2.6.23+, Wu Fengguang's `ondemand_readahead`; also given to 2.4 and to
//!   2.5–2.6.4 and 2.6.11–2.6.22, whose own rules are not modelled): a window from each miss,
//!   sized from the request, and the next one started asynchronously when the reader reaches
//!   the marker page of the current one ([`get_init_ra_size`], [`get_next_ra_size`]); no
//!   congestion test. Its state is `start`, `size` and `async_size` below.
//!
//! Windowed sizes are in the kernel's pages (8 KiB on sparc64); the caller converts.

use crate::mm::free_lists::{Orders, NR_ORDERS};

/// `next_size` of a maximally shrunk window: readahead is off (`-1UL` in the kernel).
pub(crate) const RA_OFF: i64 = -1;

/// `struct file_ra_state`: one open file's readahead, for either rule set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FileRaState {
    /// The current window: first page and pages.
    pub start: u64,
    pub size: u64,
    /// On-demand: pages from the end of the window back to its marker page.
    pub async_size: u64,
    /// Windowed: the size of the next window; 0 before the first read, [`RA_OFF`] when off.
    pub next_size: i64,
    /// Windowed: the page most recently inspected.
    pub prev_page: u64,
    /// Windowed: the ahead window (`ahead_start` 0: none).
    pub ahead_start: u64,
    pub ahead_size: u64,
    /// Windowed: length of the current sequential run, and the running average of runs.
    pub serial_cnt: u64,
    pub average: u64,
    /// The model's bookkeeping, not the kernel's: the read request the windowed rules were
    /// last fed pages of (its byte offset) and the next page to feed, so that a read resumed
    /// after a wait does not feed the same page twice.
    pub op_offset: u64,
    pub op_next: u64,
    /// On-demand with large folios: the folio order of the last window (`ra->order`).
    pub order: u32,
}

/// What a windowed readahead decision asks the block layer for: `do_page_cache_readahead`
/// of `n` pages from `start`, which returns how many it started (0 when the queue is
/// read-congested or every page is cached already).
pub(crate) trait ReadaheadIo {
    fn do_page_cache_readahead(&mut self, start: u64, n: u64) -> u64;
}

impl FileRaState {
    /// `file_ra_state_init` on open: a fresh state whose run average starts at half the
    /// maximum window (`ra_pages / 2`).
    pub(crate) fn opened(max: u64) -> Self {
        FileRaState {
            average: max / 2,
            ..FileRaState::default()
        }
    }

    /// `page_cache_readahead` (2.6.6), called for every page `offset` a read reaches, in
    /// order; `max` is the device's `ra_pages`.
    pub(crate) fn page_cache_readahead(&mut self, offset: u64, max: u64, io: &mut impl ReadaheadIo) {
        // Sub-page reads see the same page again: nothing to decide.
        if offset == self.prev_page && self.next_size != 0 {
            return;
        }
        if self.next_size == RA_OFF || max == 0 {
            return;
        }
        let max_i = max as i64;
        let orig_next_size = self.next_size;
        let first_access = self.next_size == 0;
        let mut preoffset = None;
        if first_access {
            // The first read of the file: assume it reads the whole file.
            self.next_size = max_i / 2;
            self.prev_page = offset;
            self.serial_cnt += 1;
        } else {
            if offset == self.prev_page.wrapping_add(1) {
                if self.serial_cnt <= 2 * max {
                    self.serial_cnt += 1;
                }
            } else {
                self.average = (self.average + self.serial_cnt) / 2;
                self.serial_cnt = 1;
            }
            preoffset = Some(self.prev_page);
            self.prev_page = offset;
            if offset >= self.start && offset <= self.start + self.size {
                self.next_size += 2;
            } else {
                self.next_size -= 2;
            }
            self.next_size = self.next_size.min(max_i);
            if self.next_size <= 0 {
                self.next_size = RA_OFF;
                self.size = 0;
                return;
            }
            let inside = offset >= self.start && offset < self.start + self.size;
            if inside {
                // Submit the ahead window now if the pattern is sequential, or lazily from the
                // current window's last page.
                if self.ahead_start == 0 {
                    let mut average = self.average;
                    if self.serial_cnt > average {
                        average = (self.serial_cnt + self.average) / 2;
                    }
                    if average >= max || offset + 1 == self.start + self.size {
                        self.ahead_start = self.start + self.size;
                        self.ahead_size = self.next_size as u64;
                        let actual = io.do_page_cache_readahead(self.ahead_start, self.ahead_size);
                        self.check_ra_success(actual, orig_next_size);
                    }
                }
                return;
            }
            if offset == self.ahead_start {
                // Walked into the ahead window: it becomes the current one. Its pages are most
                // likely still being read; the next page past its start submits the new ahead.
                self.start = self.ahead_start;
                self.size = self.ahead_size;
                self.prev_page = self.start;
                self.ahead_start = 0;
                self.ahead_size = 0;
                return;
            }
        }
        // A new current window at `offset` (first read, or a seek).
        if let Some(pre) = preoffset {
            // Lazy readahead: as many pages as the reader used of the last window, plus two.
            if pre >= self.start && pre < self.start + self.size {
                self.next_size = (pre - self.start + 2) as i64;
            }
        }
        self.start = offset;
        self.size = self.next_size.max(0) as u64;
        self.ahead_start = 0;
        self.ahead_size = 0;
        let actual = io.do_page_cache_readahead(offset, self.size);
        if !first_access {
            self.check_ra_success(actual, orig_next_size);
        }
    }

    /// `check_ra_success`: a window that started no I/O (cached, or skipped on a congested
    /// queue) shrinks the next by one page, or turns readahead off.
    fn check_ra_success(&mut self, actual: u64, orig_next_size: i64) {
        if actual == 0 {
            if orig_next_size > 1 {
                self.next_size = orig_next_size - 1;
                if self.ahead_size > 0 {
                    self.ahead_size = self.next_size as u64;
                }
            } else {
                self.next_size = RA_OFF;
                self.size = 0;
            }
        }
    }

    /// `handle_ra_miss`: page `offset` the reader wanted was not in the cache. With readahead
    /// off, count sequential misses and resume after `max` of them; otherwise the window is
    /// too large to survive (or was skipped): shrink it by three, not below `min`.
    pub(crate) fn handle_ra_miss(&mut self, offset: u64, max: u64, min: u64) {
        if self.next_size == RA_OFF {
            if offset != self.prev_page.wrapping_add(1) {
                self.size = self.size.saturating_sub(1);
            } else {
                self.size += 1;
                if self.size >= max {
                    self.start = offset.saturating_sub(max);
                    self.next_size = max as i64;
                    self.size = max;
                    self.ahead_start = 0;
                    self.ahead_size = 0;
                    self.average = max / 2;
                }
            }
            self.prev_page = offset;
        } else {
            self.next_size = (self.next_size - 3).max(min as i64);
        }
    }
}

/// On-demand `get_init_ra_size`: the first window for a request of `size` pages.
pub(crate) fn get_init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// On-demand `get_next_ra_size`: grow the window ×4 while small, ×2 up to max.
pub(crate) fn get_next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

/// The pages of `run` (a part of the readahead window `window`) by the order of the folio
/// `page_cache_ra_order` puts each in when the window's folio order is `folio_order`: each
/// folio that large unless its index is aligned only to a smaller one or it would run past the
/// window, then as large as both allow.
///
/// Why it matters: the allocator cuts each folio from a free block at least as large, and free
/// page reporting gives the host the blocks of `page_reporting_order` and up
/// ([`crate::mm::free_lists`]).
pub(crate) fn ra_folio_orders(window: std::ops::Range<u64>, run: std::ops::Range<u64>, folio_order: u32) -> Orders {
    let mut orders = [0; NR_ORDERS];
    let top = 1u64 << folio_order.min(NR_ORDERS as u32 - 1);
    let mut index = window.start;
    while index < window.end && index < run.end {
        let mut f = top;
        if index != 0 {
            f = f.min(1 << index.trailing_zeros().min(62));
        }
        while f > 1 && index + f > window.end {
            f /= 2;
        }
        let (a, b) = (index.max(run.start), (index + f).min(run.end));
        orders[f.ilog2() as usize] += b.saturating_sub(a);
        index += f;
    }
    // Pages of the run past the window (none where the caller keeps to it) go single.
    let counted: u64 = orders.iter().sum();
    orders[0] += (run.end - run.start).saturating_sub(counted);
    orders
}

/// An asynchronous readahead's window on a mapping with large folios (`page_cache_async_ra`
/// and `page_cache_ra_order`, 6.16+): the folio order climbs two steps a window, the window's
/// end is rounded down to a multiple of `1 << order` pages (at most the largest power of two
/// dividing `max`, so the windows of a 2.5 MiB read-ahead fall on 512 KiB boundaries), and the
/// window's folios take the order, at most `max_order` and the window's own size. Returns
/// the window's pages and its folio order.
pub(crate) fn async_ra_window(start: u64, size: u64, order: u32, max: u64, max_order: u32) -> (u64, u32) {
    let order = order + 2;
    let align_order = order.min(max.max(1).trailing_zeros());
    let end = start + size;
    let aligned_end = end >> align_order << align_order;
    let size = if aligned_end > start { aligned_end - start } else { size };
    let folio_order = order.min(max_order).min(size.max(1).ilog2());
    (size, folio_order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2_5_mib_read_ahead_puts_two_fifths_of_a_file_in_2_mib_folios() {
        // A cat's windows on a 6.18 loop device (block_bio_queue, 128 KiB reads): 64, 128,
        // 256, 512 pages, then 576 (the end rounded to 128 pages), then 640 a window.
        let (mut start, mut size, mut order) = (0, get_init_ra_size(32, 640), 0);
        let mut windows = vec![(start, size)];
        let mut large = 0;
        for _ in 0..40 {
            start += size;
            (size, order) = async_ra_window(start, get_next_ra_size(size, 640), order, 640, 9);
            windows.push((start, size));
            if start >= 1536 {
                large += ra_folio_orders(start..start + size, start..start + size, order)[9..]
                    .iter()
                    .sum::<u64>();
            }
        }
        assert_eq!(
            &windows[..7],
            &[(0, 64), (64, 128), (192, 256), (448, 512), (960, 576), (1536, 640), (2176, 640)]
        );
        let pages = start + size - 1536;
        assert!(
            large * 5 >= pages * 2 - 5 * 512 && large * 5 <= pages * 2 + 5 * 512,
            "{large} of {pages}"
        );
        // Folios capped below the order, or a run outside them, have none; every page of the
        // run is counted once.
        let large = |w, r, o| ra_folio_orders(w, r, o)[9..].iter().sum::<u64>();
        assert_eq!(large(0..640, 0..640, 8), 0);
        assert_eq!(large(0..640, 0..320, 9), 320);
        assert_eq!(large(0..640, 512..640, 9), 0);
        assert_eq!(ra_folio_orders(0..640, 512..640, 9)[7], 128);
        assert_eq!(ra_folio_orders(0..640, 100..600, 9).iter().sum::<u64>(), 500);
    }

    /// A device that starts every page asked for unless congested, remembering the windows.
    #[derive(Default)]
    struct Io {
        congested: bool,
        windows: Vec<(u64, u64)>,
    }

    impl ReadaheadIo for Io {
        fn do_page_cache_readahead(&mut self, start: u64, n: u64) -> u64 {
            if self.congested {
                return 0;
            }
            self.windows.push((start, n));
            n
        }
    }

    const MAX: u64 = 16;
    const MIN: u64 = 2;

    /// Read pages `0..n` one at a time; a page no window covered is a miss, read alone.
    fn read_sequentially(ra: &mut FileRaState, io: &mut Io, n: u64) -> u64 {
        let mut misses = 0;
        for p in 0..n {
            ra.page_cache_readahead(p, MAX, io);
            if !io.windows.iter().any(|&(s, len)| p >= s && p < s + len) {
                ra.handle_ra_miss(p, MAX, MIN);
                misses += 1;
            }
        }
        misses
    }

    #[test]
    fn a_sequential_reader_on_an_idle_queue_never_misses_and_reaches_the_maximum_window() {
        let mut ra = FileRaState::opened(MAX);
        let mut io = Io::default();
        assert_eq!(read_sequentially(&mut ra, &mut io, 1000), 0);
        assert_eq!(io.windows[0], (0, MAX / 2), "the first read assumes a whole-file read");
        let late = &io.windows[io.windows.len() / 2..];
        assert!(late.iter().all(|&(_, n)| n == MAX), "{late:?}");
        // Windows tile the file without gaps or overlaps.
        for w in io.windows.windows(2) {
            assert_eq!(w[0].0 + w[0].1, w[1].0, "{:?}", io.windows);
        }
    }

    #[test]
    fn a_congested_queue_turns_a_sequential_reader_into_single_page_reads() {
        let mut ra = FileRaState::opened(MAX);
        let mut io = Io {
            congested: true,
            ..Io::default()
        };
        let misses = read_sequentially(&mut ra, &mut io, 1000);
        assert_eq!(misses, 1000, "every page is read alone");
        // Once the congestion lifts, readahead comes back within a few windows.
        io.congested = false;
        let mut resumed = None;
        for p in 1000..1200 {
            ra.page_cache_readahead(p, MAX, &mut io);
            if !io.windows.iter().any(|&(s, len)| p >= s && p < s + len) {
                ra.handle_ra_miss(p, MAX, MIN);
            } else if resumed.is_none() {
                resumed = Some(p);
            }
        }
        let resumed = resumed.expect("readahead resumes");
        assert!(resumed < 1000 + 2 * MAX, "resumed at page {resumed}");
    }

    #[test]
    fn random_reads_shrink_the_window_until_readahead_is_off() {
        let mut ra = FileRaState::opened(MAX);
        let mut io = Io::default();
        let mut p = 7u64;
        for _ in 0..50 {
            p = (p * 7919 + 13) % 4096;
            ra.page_cache_readahead(p, MAX, &mut io);
        }
        assert_eq!(ra.next_size, RA_OFF);
        // Only the first reads were given windows, each smaller than the one before.
        assert!(io.windows.len() <= 3, "{:?}", io.windows);
        assert!(io.windows.windows(2).all(|w| w[1].1 < w[0].1), "{:?}", io.windows);
        // Random misses while off never turn it back on.
        for _ in 0..100 {
            p = (p * 7919 + 13) % 4096;
            ra.handle_ra_miss(p, MAX, MIN);
        }
        assert_eq!(ra.next_size, RA_OFF);
        // A run of `MAX` sequential misses does.
        for q in 0..=MAX {
            ra.handle_ra_miss(5000 + q, MAX, MIN);
        }
        assert_eq!(ra.next_size, MAX as i64);
    }

    #[test]
    fn the_same_page_twice_decides_nothing() {
        let mut ra = FileRaState::opened(MAX);
        let mut io = Io::default();
        ra.page_cache_readahead(0, MAX, &mut io);
        let after = ra;
        ra.page_cache_readahead(0, MAX, &mut io);
        assert_eq!(ra, after);
        assert_eq!(io.windows.len(), 1);
    }

    #[test]
    fn on_demand_windows_grow_to_the_maximum() {
        assert_eq!(get_init_ra_size(1, 32), 4);
        assert_eq!(get_init_ra_size(4, 32), 8);
        assert_eq!(get_init_ra_size(16, 32), 32);
        let mut w = get_init_ra_size(1, 64);
        let mut steps = 0;
        while w < 64 {
            w = get_next_ra_size(w, 64);
            steps += 1;
        }
        assert_eq!(w, 64);
        assert!(steps <= 4);
    }
}
