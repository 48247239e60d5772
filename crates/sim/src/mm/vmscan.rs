//! Reclaim of clean page-cache pages (`mm/vmscan.c`), reduced to what writeback needs.
//!
//! Model: clean pages enter a FIFO when they become clean (read completion or writeback
//! completion, like `folio_rotate_reclaimable` puts written pages at the tail); reclaim
//! evicts from the head. Entries whose pages were since dirtied or dropped are skipped. There
//! is no active list and no second chance. kswapd is folded into the allocation: when free
//! pages fall below the low watermark, clean pages are evicted at once up to the high
//! watermark. When no clean page is left, the allocating task sleeps in `reclaim_throttle`
//! (`VMSCAN_THROTTLE_WRITEBACK`, up to HZ/10, woken early once 32 pages per throttled task
//! have finished writeback) and the flushers are woken with reason `vmscan`, as 6.18 does.
//! Reclaim never writes file pages.

use super::page_cache::{AddressSpace, PageState};
use std::collections::VecDeque;

/// `SWAP_CLUSTER_MAX`.
pub(crate) const SWAP_CLUSTER_MAX: u64 = 32;

#[derive(Clone, Copy, Debug)]
struct LruEntry {
    file: u32,
    start: u64,
    len: u64,
}

/// Access to the page cache of a file by id.
pub(crate) trait Mappings {
    fn mapping(&mut self, file: u32) -> &mut AddressSpace;
    /// The device (wb) holding the file.
    fn device(&self, _file: u32) -> u16 {
        0
    }
    /// The memory cgroup the file's pages are charged to.
    fn memcg(&self, _file: u32) -> Option<u16> {
        None
    }
    /// `n` clean pages of `file` were evicted.
    fn evicted(&mut self, _file: u32, _n: u64) {}
}

impl Mappings for Vec<AddressSpace> {
    fn mapping(&mut self, file: u32) -> &mut AddressSpace {
        &mut self[file as usize]
    }
}

/// Clean pages in reclaim order.
#[derive(Default)]
pub(crate) struct Lru {
    q: VecDeque<LruEntry>,
}

impl Lru {
    /// Pages [start, start+len) of `file` became clean: queue them at the tail.
    pub(crate) fn add(&mut self, file: u32, start: u64, len: u64) {
        if let Some(t) = self.q.back_mut() {
            if t.file == file && t.start + t.len == start {
                t.len += len;
                return;
            }
        }
        self.q.push_back(LruEntry { file, start, len });
    }

    /// Evict up to `want` clean pages from the head. `mapping(file)` gives the file's page
    /// cache. Returns the pages evicted.
    pub(crate) fn shrink(&mut self, want: u64, files: &mut impl Mappings) -> u64 {
        let mut got = 0;
        while got < want && !self.q.is_empty() {
            got += self.shrink_head(want - got, files);
        }
        got
    }

    /// As `shrink`, passing over the pages of the memory cgroups `protected` marks (under
    /// their `memory.low`): those keep their places in the queue.
    pub(crate) fn shrink_unprotected(&mut self, want: u64, files: &mut impl Mappings, protected: &[bool]) -> u64 {
        let mut kept = Vec::new();
        let mut got = 0;
        while got < want {
            let Some(&e) = self.q.front() else { break };
            if files
                .memcg(e.file)
                .is_some_and(|c| protected.get(c as usize).copied().unwrap_or(false))
            {
                kept.push(e);
                self.q.pop_front();
                continue;
            }
            got += self.shrink_head(want - got, files);
        }
        for e in kept.into_iter().rev() {
            self.q.push_front(e);
        }
        got
    }

    /// Evict up to `want` clean pages of the head entry; what is left of it stays at the head.
    fn shrink_head(&mut self, want: u64, files: &mut impl Mappings) -> u64 {
        let Some(e) = self.q.pop_front() else { return 0 };
        let m = files.mapping(e.file);
        let mut got = 0;
        let mut idx = e.start;
        let end = e.start + e.len;
        while idx < end && got < want {
            let (st, run) = m.run_at(idx, end - idx);
            if st == Some(PageState::Clean) {
                let take = run.min(want - got);
                m.set_range(idx, take, None);
                got += take;
                idx += take;
            } else {
                idx += run;
            }
        }
        if got > 0 {
            files.evicted(e.file, got);
        }
        if idx < end {
            self.q.push_front(LruEntry {
                file: e.file,
                start: idx,
                len: end - idx,
            });
        }
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrink_evicts_only_clean_pages_in_fifo_order() {
        let mut files = vec![AddressSpace::new(), AddressSpace::new()];
        files[0].set_range(0, 100, Some(PageState::Clean));
        files[1].set_range(0, 100, Some(PageState::Clean));
        files[0].set_range(40, 20, Some(PageState::Dirty));
        let mut lru = Lru::default();
        lru.add(0, 0, 100);
        lru.add(1, 0, 100);
        let got = lru.shrink(90, &mut files);
        assert_eq!(got, 90);
        // file 0 loses its 80 clean pages, the dirty ones stay; then 10 of file 1.
        assert_eq!(files[0].nr_pages, 20);
        assert_eq!(files[0].nr_dirty, 20);
        assert_eq!(files[1].nr_pages, 90);
        assert_eq!(files[1].state(0), None);
        assert_eq!(files[1].state(10), Some(PageState::Clean));
    }
}
