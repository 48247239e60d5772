//! The inactive list of the pageout generations (2.4 – 3.x reclaim): runs of page-cache pages
//! in the order they entered the cache, scanned from the oldest end, with the pages `pageout()`
//! wrote (PG_reclaim) kept apart until their writeback completes. Pure data: the machine's
//! side (allocation, kswapd, direct reclaim) is in `vmscan_pageout.rs`.

use super::page_cache::{AddressSpace, PageState};
use super::vmscan::Mappings;
use std::collections::{BTreeMap, VecDeque};

/// `SWAP_CLUSTER_MAX`.
pub(crate) const SWAP_CLUSTER_MAX: u64 = 32;
/// `DEF_PRIORITY`.
pub(crate) const DEF_PRIORITY: u32 = 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    pub file: u32,
    pub start: u64,
    pub len: u64,
}

/// The inactive list: runs of pages in the order they entered the page cache.
#[derive(Default)]
pub(crate) struct InactiveList {
    /// Oldest first.
    q: VecDeque<Run>,
    /// Pages written by `pageout()` (PG_reclaim), by (file, first page) → pages, until their
    /// writeback completes.
    reclaim: BTreeMap<(u32, u64), u64>,
    /// PG_reclaim runs whose writeback completed: `folio_rotate_reclaimable` put them at the
    /// oldest end, so the next scan frees them first. Kept apart so that a scan never walks
    /// the runs still under writeback (that walk made reclaim superlinear).
    rotated: VecDeque<Run>,
    /// Pages on both lists (the page cache: only this list frees page-cache pages).
    npages: u64,
}

/// What a scan found and did.
#[derive(Clone, Debug, Default)]
pub(crate) struct ScanResult {
    pub scanned: u64,
    pub freed: u64,
    /// Dirty runs to write now (`pageout`), in scan order.
    pub pageout: Vec<Run>,
    /// Dirty or writeback pages met (and kept).
    pub busy: u64,
}

/// What the reclaimer may do with a dirty page.
pub(crate) trait PageoutCheck {
    /// May the reclaimer start writeback of `pages` pages on device `dev` now (the queue has
    /// room / is not congested)? Reserves the room when it says yes.
    fn may_write(&mut self, dev: u16, pages: u64) -> bool;
}

impl InactiveList {
    /// Pages [start, start+len) of `file` entered the page cache.
    pub(crate) fn add(&mut self, file: u32, start: u64, len: u64) {
        if len == 0 {
            return;
        }
        self.npages += len;
        self.push(file, start, len);
    }

    /// Put a run at the young end (no change to the page count).
    fn push(&mut self, file: u32, start: u64, len: u64) {
        if let Some(t) = self.q.back_mut() {
            if t.file == file && t.start + t.len == start {
                t.len += len;
                return;
            }
        }
        self.q.push_back(Run { file, start, len });
    }

    #[cfg(test)]
    pub(crate) fn entries(&self) -> usize {
        self.q.len() + self.reclaim.len() + self.rotated.len()
    }

    /// Writeback of pages [start, start+n) of `file` completed: the PG_reclaim ones among
    /// them rotate to the oldest end (`folio_rotate_reclaimable`).
    pub(crate) fn rotate_reclaimable(&mut self, file: u32, start: u64, n: u64) {
        if self.reclaim.is_empty() {
            return;
        }
        let end = start + n;
        // The run that starts at or before `start` may reach into the range; later ones start
        // inside it.
        let first = self
            .reclaim
            .range((file, 0)..=(file, start))
            .next_back()
            .map_or(start, |(&(_, s), _)| s);
        let hits: Vec<(u64, u64)> = self.reclaim.range((file, first)..(file, end)).map(|(&(_, s), &l)| (s, l)).collect();
        for (s, l) in hits {
            let (a, b) = (s.max(start), (s + l).min(end));
            if a >= b {
                continue;
            }
            self.reclaim.remove(&(file, s));
            if s < a {
                self.reclaim.insert((file, s), a - s);
            }
            if b < s + l {
                self.reclaim.insert((file, b), s + l - b);
            }
            self.rotated.push_back(Run {
                file,
                start: a,
                len: b - a,
            });
        }
    }

    /// Scan up to `nr_to_scan` pages from the oldest end, freeing up to `want` clean pages.
    /// Dirty pages are handed to `pageout` when `may_writepage` and the check allows, else
    /// kept; pages under writeback or read are kept. Kept pages go to the young end.
    pub(crate) fn shrink(
        &mut self,
        nr_to_scan: u64,
        want: u64,
        may_writepage: bool,
        files: &mut impl Mappings,
        check: &mut impl PageoutCheck,
    ) -> ScanResult {
        let mut r = ScanResult::default();
        // First the PG_reclaim pages whose writeback has completed (rotated to the tail).
        while r.freed < want {
            let Some(e) = self.rotated.pop_front() else { break };
            let m = files.mapping(e.file);
            let (freed, rest) = free_clean(m, e, want - r.freed);
            r.freed += freed;
            if let Some(rest) = rest {
                // Not freed (the scan's quota was met, or the pages were dirtied or read
                // again): it stays at the oldest end.
                if has_pages(m, rest) {
                    self.q.push_front(rest);
                }
            }
        }
        let mut kept: Vec<Run> = Vec::new();
        while r.scanned < nr_to_scan && r.freed < want {
            let Some(e) = self.q.pop_front() else { break };
            let budget = nr_to_scan - r.scanned;
            let dev = files.device(e.file);
            let m = files.mapping(e.file);
            let mut idx = e.start;
            let end = e.start + e.len;
            let mut scanned_here = 0;
            while idx < end && scanned_here < budget && r.freed < want {
                let (st, run) = m.run_at(idx, (end - idx).min(budget - scanned_here));
                match st {
                    None => {}
                    Some(PageState::Clean) => {
                        let take = run.min(want - r.freed);
                        m.set_range(idx, take, None);
                        r.freed += take;
                        scanned_here += take;
                        idx += take;
                        continue;
                    }
                    Some(PageState::Dirty) => {
                        r.busy += run;
                        let run_e = Run {
                            file: e.file,
                            start: idx,
                            len: run,
                        };
                        if may_writepage && check.may_write(dev, run) {
                            r.pageout.push(run_e);
                            self.reclaim.insert((run_e.file, run_e.start), run_e.len);
                        } else {
                            kept.push(run_e);
                        }
                    }
                    Some(PageState::Writeback | PageState::WritebackDirty | PageState::Reading | PageState::Queued) => {
                        r.busy += run;
                        kept.push(Run {
                            file: e.file,
                            start: idx,
                            len: run,
                        });
                    }
                }
                scanned_here += run;
                idx += run;
            }
            r.scanned += scanned_here.max(1);
            if idx < end {
                self.q.push_front(Run {
                    file: e.file,
                    start: idx,
                    len: end - idx,
                });
            }
        }
        for k in kept {
            self.push(k.file, k.start, k.len);
        }
        self.npages = self.npages.saturating_sub(r.freed);
        r
    }

    /// Pages on the list (for scan targets).
    pub(crate) fn pages(&self) -> u64 {
        self.npages
    }
}

/// Free the clean pages of `e` (up to `max`); returns (freed, the part left to look at).
fn free_clean(m: &mut AddressSpace, e: Run, max: u64) -> (u64, Option<Run>) {
    let mut idx = e.start;
    let end = e.start + e.len;
    let mut freed = 0;
    let mut rest_start = None;
    while idx < end {
        let (st, run) = m.run_at(idx, end - idx);
        if st == Some(PageState::Clean) && freed < max {
            let take = run.min(max - freed);
            m.set_range(idx, take, None);
            freed += take;
            idx += take;
            if take < run && rest_start.is_none() {
                rest_start = Some(idx);
            }
            continue;
        }
        if st.is_some() && rest_start.is_none() {
            rest_start = Some(idx);
        }
        idx += run;
    }
    (
        freed,
        rest_start.map(|s| Run {
            file: e.file,
            start: s,
            len: end - s,
        }),
    )
}

fn has_pages(m: &AddressSpace, r: Run) -> bool {
    let (st, run) = m.run_at(r.start, r.len);
    st.is_some() || run < r.len
}

/// Pages to scan at `priority` from a list of `lru` pages (`shrink_zone`).
pub(crate) fn scan_target(lru: u64, priority: u32) -> u64 {
    (lru >> priority) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Always(bool);
    impl PageoutCheck for Always {
        fn may_write(&mut self, _dev: u16, _pages: u64) -> bool {
            self.0
        }
    }

    #[test]
    fn clean_pages_go_dirty_ones_are_written_and_freed_after_writeback() {
        let mut files = vec![AddressSpace::new(), AddressSpace::new()];
        files[0].set_range(0, 64, Some(PageState::Dirty));
        files[1].set_range(0, 64, Some(PageState::Clean));
        let mut l = InactiveList::default();
        l.add(0, 0, 64);
        l.add(1, 0, 64);
        // Not allowed to write: the dirty run is kept (moved young), the clean one freed.
        let r = l.shrink(200, 32, false, &mut files, &mut Always(true));
        assert_eq!((r.freed, r.busy, r.pageout.len()), (32, 64, 0));
        assert_eq!(files[1].nr_pages, 32);
        // Now the oldest are file 1's remaining 32 clean pages, then file 0's dirty run.
        let r = l.shrink(200, 64, true, &mut files, &mut Always(true));
        assert_eq!(r.freed, 32);
        assert_eq!(
            r.pageout,
            vec![Run {
                file: 0,
                start: 0,
                len: 64
            }]
        );
        // The machine starts writeback; once it completes the pages are freed first thing.
        files[0].set_range(0, 64, Some(PageState::Writeback));
        let r = l.shrink(10, 10, true, &mut files, &mut Always(true));
        assert_eq!(r.freed, 0, "still under writeback");
        // Completion of the middle half rotates it to the tail: freed first, the rest waits.
        files[0].set_range(16, 32, Some(PageState::Clean));
        l.rotate_reclaimable(0, 16, 32);
        let r = l.shrink(0, 100, true, &mut files, &mut Always(true));
        assert_eq!(r.freed, 32);
        files[0].set_range(0, 16, Some(PageState::Clean));
        files[0].set_range(48, 16, Some(PageState::Clean));
        l.rotate_reclaimable(0, 0, 16);
        l.rotate_reclaimable(0, 48, 16);
        let r = l.shrink(0, 100, true, &mut files, &mut Always(true));
        assert_eq!(r.freed, 32);
        assert_eq!(files[0].nr_pages, 0);
        assert_eq!(l.entries(), 0);
    }

    #[test]
    fn priority_targets() {
        assert_eq!(scan_target(409_600, 12), 101);
        assert_eq!(scan_target(409_600, 0), 409_601);
    }
}
