//! Page reclaim as it was before 3.2 (`mm/vmscan.c` of 2.6.x: `try_to_free_pages`,
//! `shrink_zone`, `shrink_inactive_list`, `shrink_page_list`, `pageout`), and the 3.2 change
//! that stopped direct reclaim from writing file pages.
//!
//! * Every page-cache page sits on the inactive list from when it entered the page cache
//!   (`add_to_page_cache_lru`), dirty or not; scanning starts at the oldest end.
//! * A clean page is freed. A page under writeback or being read is kept: it goes back to the
//!   young end (`putback`). A dirty page is written by `pageout()` if the reclaimer may write
//!   (kswapd always; direct reclaim unless the page's queue is congested, `may_write_to_queue`;
//!   3.2+: never from direct reclaim) and marked `PG_reclaim`, so that it is freed as soon as
//!   its writeback completes (`rotate_reclaimable_page`); otherwise it goes back too.
//! * Direct reclaim (`try_to_free_pages`) scans at priority 12 down to 0, (list >> priority)
//!   pages per pass, and stops once it has freed 32 pages (`SWAP_CLUSTER_MAX`). After a pass
//!   that scanned more than 48 pages it wakes the flushers (`wakeup_pdflush`). After every
//!   pass below priority 10 that did not free enough it sleeps in `congestion_wait(WRITE,
//!   HZ/10)` (3.2: `wait_iff_congested`, only while a queue is congested). A reader that needs
//!   one page while the oldest pages are dirty or under writeback therefore waits 100 ms per
//!   failed pass: the 2007 stalls.
//! * kswapd is folded into the allocating task: a bounded scan from the oldest end with
//!   `pageout()` of dirty pages while their queue has room, without sleeping.
//!
//! * Buffer-cache pages (metadata) are `GFP_NOFS`: their direct reclaim never `pageout()`s.
//! * A 32-bit machine (`[machine] highmem`) has two zones, each with its own list, and an
//!   allocation reclaims only the zones it may use (see `highmem.rs`).
//!
//! Not modelled: the active list (no page is ever activated), slab shrinking, anonymous
//! memory and swap.

use super::highmem::Wmark;
use super::page_cache::{AddressSpace, PageState};
use super::vmscan::Mappings;
use crate::block::queue::Submitter;
use crate::config::{FlusherKind, ReclaimKind};
use crate::machine::Machine;
use crate::metrics::trace::WbReason;
use std::collections::{BTreeMap, VecDeque};

/// `SWAP_CLUSTER_MAX`.
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// `DEF_PRIORITY`.
pub const DEF_PRIORITY: u32 = 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub file: u32,
    pub start: u64,
    pub len: u64,
}

/// The inactive list: runs of pages in the order they entered the page cache.
#[derive(Default)]
pub struct InactiveList {
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
pub struct ScanResult {
    pub scanned: u64,
    pub freed: u64,
    /// Dirty runs to write now (`pageout`), in scan order.
    pub pageout: Vec<Run>,
    /// Dirty or writeback pages met (and kept).
    pub busy: u64,
}

/// What the reclaimer may do with a dirty page.
pub trait PageoutCheck {
    /// May the reclaimer start writeback of `pages` pages on device `dev` now (the queue has
    /// room / is not congested)? Reserves the room when it says yes.
    fn may_write(&mut self, dev: u16, pages: u64) -> bool;
}

impl InactiveList {
    /// Pages [start, start+len) of `file` entered the page cache.
    pub fn add(&mut self, file: u32, start: u64, len: u64) {
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

    pub fn entries(&self) -> usize {
        self.q.len() + self.reclaim.len() + self.rotated.len()
    }

    /// Writeback of pages [start, start+n) of `file` completed: the PG_reclaim ones among
    /// them rotate to the oldest end (`folio_rotate_reclaimable`).
    pub fn rotate_reclaimable(&mut self, file: u32, start: u64, n: u64) {
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
    pub fn shrink(
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
                    Some(PageState::Writeback | PageState::WritebackDirty | PageState::Reading) => {
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
    pub fn pages(&self) -> u64 {
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
pub fn scan_target(lru: u64, priority: u32) -> u64 {
    (lru >> priority) + 1
}

// ---- the machine side: allocation, kswapd, direct reclaim ----

/// Room on the legacy queues for reclaim writes that must not block.
struct QueueRoom {
    /// Per device: requests that may still be allocated below the congestion-on level
    /// (0 when congested or not a legacy queue), and pages per request.
    room: Vec<(u64, u64)>,
}

impl PageoutCheck for QueueRoom {
    fn may_write(&mut self, dev: u16, pages: u64) -> bool {
        let Some((room, per_rq)) = self.room.get_mut(dev as usize) else {
            return false;
        };
        let need = pages.div_ceil((*per_rq).max(1));
        if need <= *room {
            *room -= need;
            true
        } else {
            false
        }
    }
}

impl Machine {
    /// Pages entered the page cache: onto the inactive list of their zone (pageout
    /// generations). On a 32-bit machine a writer's or reader's page goes where its
    /// allocation was served; a buffer-cache page is always lowmem.
    pub(crate) fn page_inserted(&mut self, file: u32, start: u64, n: u64) {
        let mut high = 0;
        if let Some(z) = self.era.zones.as_mut() {
            if !self.inodes[file as usize].buffer_cache {
                let k = z.pending_high.min(n);
                z.pending_high -= k;
                high = k;
                let l = z.pending_low.min(n - k);
                z.pending_low -= l;
                if k + l < n {
                    // Not allocated through the zone-aware paths: served as the allocator would.
                    let rest = n - k - l;
                    if z.pick(&self.vm, rest, false, Wmark::Low) == Some(true) {
                        high += rest;
                    }
                }
            }
            if high > 0 {
                z.high_list.add(file, start, high);
                self.vm.high_file += high;
            }
        }
        if let Some(l) = self.era.inactive.as_mut() {
            l.add(file, start + high, n - high);
        }
    }

    fn queue_room(&self) -> QueueRoom {
        QueueRoom {
            room: self
                .queues
                .iter()
                .map(|q| {
                    let per = (q.max_sectors / 8).max(1);
                    match &q.legacy {
                        Some(rl) if !rl.congested[1] => ((rl.congestion_on.saturating_sub(rl.count[1] + 1)) as u64, per),
                        _ => (0, per),
                    }
                })
                .collect(),
        }
    }

    /// One `shrink_inactive_list` pass: free clean pages, `pageout()` dirty ones if allowed
    /// (by `writer`: a task, or kswapd when None).
    fn shrink_list(&mut self, nr_to_scan: u64, want: u64, may_writepage: bool, writer: Option<u32>) -> ScanResult {
        self.shrink_zone_list(false, nr_to_scan, want, may_writepage, writer)
    }

    /// `shrink_list` of the highmem zone's list (`high`) or of the lowmem/only one.
    fn shrink_zone_list(&mut self, high: bool, nr_to_scan: u64, want: u64, may_writepage: bool, writer: Option<u32>) -> ScanResult {
        let taken = if high {
            self.era.zones.as_mut().map(|z| std::mem::take(&mut z.high_list))
        } else {
            self.era.inactive.take()
        };
        let Some(mut l) = taken else {
            return ScanResult::default();
        };
        let mut room = self.queue_room();
        let r = l.shrink(nr_to_scan, want, may_writepage, &mut self.inodes, &mut room);
        if high {
            if let Some(z) = self.era.zones.as_mut() {
                z.high_list = l;
            }
            self.vm.high_file -= r.freed;
        } else {
            self.era.inactive = Some(l);
        }
        self.vm.nr_free += r.freed;
        self.vm.nr_file -= r.freed;
        // The requests were checked to fit below the congestion level of their queue, so they
        // are accepted at once: submit them straight away. (The reclaiming task may write
        // pages of any device; in the model the device's own flusher entity carries them.)
        let _ = writer;
        for run in &r.pageout {
            let dev = self.inodes[run.file as usize].wb;
            let before = self.flushers[dev as usize].pending.len();
            self.write_dirty_range(run.file, run.start, run.len, Submitter::Flusher(dev), false, false);
            let mut ids = Vec::new();
            while self.flushers[dev as usize].pending.len() > before {
                ids.push(self.flushers[dev as usize].pending.pop_back().expect("just pushed"));
            }
            for id in ids.into_iter().rev() {
                let ok = self.submit_request(dev, id);
                debug_assert!(ok, "pageout fits below the congestion level");
            }
        }
        r
    }

    /// kswapd, folded into the allocation: below the low watermark, scan from the oldest end
    /// towards the high watermark (a bounded scan: the real kswapd would go on in parallel).
    fn kswapd_pageout(&mut self, n: u64) {
        if self.vm.nr_free >= n + self.vm.wmark_low || self.kswapd_backing_off() {
            return;
        }
        let want = n + self.vm.wmark_high - self.vm.nr_free.min(n + self.vm.wmark_high);
        let budget = 4 * want + 4 * SWAP_CLUSTER_MAX;
        let r = self.shrink_list(budget, want, true, None);
        self.kswapd_scanned(r.freed);
    }

    /// kswapd sleeps in `congestion_wait(WRITE, HZ/10)` after a pass that freed nothing
    /// (`balance_pgdat`): while it does, allocations do not fold another kswapd scan in.
    /// (Without this, every allocation rescanned a list of dirty and writeback pages: a
    /// 96 MB machine with 60 writers ran at 4k events/s.)
    fn kswapd_backing_off(&self) -> bool {
        self.era.kswapd_sleep_until.is_some_and(|t| self.now() < t)
    }

    fn kswapd_scanned(&mut self, freed: u64) {
        self.era.kswapd_sleep_until = (freed == 0).then(|| self.now() + self.clock.tick_ns() * (self.clock.hz / 10).max(1));
    }

    /// kswapd of a 32-bit machine (`balance_pgdat`), woken when an allocation found none of
    /// its zones above the low watermark: every zone back to its high watermark, lowmem
    /// with the reserve of the highmem classzone.
    fn kswapd_zones(&mut self, n: u64) {
        let Some(z) = self.era.zones.as_ref() else { return };
        if self.kswapd_backing_off() {
            return;
        }
        let want_high = (z.high_high + n).saturating_sub(z.free_high(&self.vm));
        let want_low = (z.low_high + z.reserve + n).saturating_sub(z.free_low(&self.vm));
        let mut freed = 0;
        if want_high > 0 {
            freed += self
                .shrink_zone_list(true, 4 * want_high + 4 * SWAP_CLUSTER_MAX, want_high, true, None)
                .freed;
        }
        if want_low > 0 {
            freed += self
                .shrink_zone_list(false, 4 * want_low + 4 * SWAP_CLUSTER_MAX, want_low, true, None)
                .freed;
        }
        if want_high + want_low > 0 {
            self.kswapd_scanned(freed);
        }
    }

    /// The zone an allocation of `n` pages is served from (Some(true) highmem), after
    /// waking kswapd if no zone was above its low watermark (`__alloc_pages`).
    fn zone_alloc_pick(&mut self, n: u64, lowmem_only: bool) -> Option<bool> {
        let z = self.era.zones.as_ref()?;
        if let Some(h) = z.pick(&self.vm, n, lowmem_only, Wmark::Low) {
            return Some(h);
        }
        self.kswapd_zones(n);
        self.era.zones.as_ref()?.pick(&self.vm, n, lowmem_only, Wmark::Min)
    }

    /// Take `n` free pages of the chosen zone for a task.
    fn zone_take(&mut self, tid: u32, n: u64, high: bool, buffer_cache: bool) {
        self.vm.nr_free -= n;
        self.vm.nr_alloc_pending += n;
        self.tasks[tid as usize].reclaim_prio = DEF_PRIORITY;
        let outstanding = self.vm.nr_alloc_pending - n;
        if let Some(z) = self.era.zones.as_mut() {
            // Allocations that found their pages already cached gave them back uninserted.
            let over = (z.pending_high + z.pending_low).saturating_sub(outstanding);
            let from_low = over.min(z.pending_low);
            z.pending_low -= from_low;
            z.pending_high -= (over - from_low).min(z.pending_high);
            if high {
                z.pending_high += n;
            } else if !buffer_cache {
                z.pending_low += n;
            }
        }
    }

    /// Wake the generation's flushers from reclaim (`wakeup_pdflush(nr)` /
    /// `wakeup_flusher_threads`).
    fn reclaim_wakeup_flushers(&mut self, nr: u64) {
        if self.cfg.policy.flusher == FlusherKind::Pdflush {
            self.wakeup_pdflush(nr);
        } else {
            self.wakeup_flusher_threads(WbReason::Vmscan);
        }
    }

    /// Get `n` free pages for the page cache in the pageout generations (`GFP_HIGHUSER`).
    /// False when the task must wait (in `congestion_wait`, or for its pageout requests);
    /// it retries when woken.
    pub(crate) fn alloc_pages_pageout(&mut self, tid: u32, n: u64) -> bool {
        self.alloc_pages_gfp(tid, n, false)
    }

    /// A buffer-cache page (`GFP_NOFS`: lowmem only; reclaim may not write).
    pub(crate) fn alloc_pages_nofs(&mut self, tid: u32, n: u64) -> bool {
        if self.era.inactive.is_none() {
            return self.alloc_pages(tid, n);
        }
        self.alloc_pages_gfp(tid, n, true)
    }

    /// `__alloc_pages` → `try_to_free_pages` of the pageout generations. `nofs`: the
    /// allocation may not enter the file system (no `pageout()` from direct reclaim) and,
    /// on a 32-bit machine, takes lowmem only.
    fn alloc_pages_gfp(&mut self, tid: u32, n: u64, nofs: bool) -> bool {
        let zoned = self.era.zones.is_some();
        if zoned {
            if let Some(high) = self.zone_alloc_pick(n, nofs) {
                self.zone_take(tid, n, high, nofs);
                return true;
            }
        } else {
            self.kswapd_pageout(n);
            if self.vm.nr_free >= n + self.vm.wmark_min {
                self.vm.nr_free -= n;
                self.vm.nr_alloc_pending += n;
                self.tasks[tid as usize].reclaim_prio = DEF_PRIORITY;
                return true;
            }
        }
        // try_to_free_pages, over the zones the allocation may use.
        let direct_writes = self.cfg.policy.reclaim == ReclaimKind::Pageout && !nofs;
        let hz = self.clock.hz;
        let lru_low = self.era.inactive.as_ref().map_or(0, |l| l.pages());
        let lru_high = if nofs {
            0
        } else {
            self.era.zones.as_ref().map_or(0, |z| z.high_list.pages())
        };
        let mut prio = self.tasks[tid as usize].reclaim_prio.min(DEF_PRIORITY);
        loop {
            let want = SWAP_CLUSTER_MAX.max(n);
            let mut scanned = 0;
            let mut freed = 0;
            if zoned && !nofs {
                let r = self.shrink_zone_list(true, scan_target(lru_high, prio), want, direct_writes, Some(tid));
                scanned += r.scanned;
                freed += r.freed;
            }
            if freed < want {
                let r = self.shrink_list(scan_target(lru_low, prio), want - freed, direct_writes, Some(tid));
                scanned += r.scanned;
            }
            let got = if zoned {
                let pick = self.era.zones.as_ref().and_then(|z| z.pick(&self.vm, n, nofs, Wmark::Min));
                if let Some(high) = pick {
                    self.zone_take(tid, n, high, nofs);
                }
                pick.is_some()
            } else if self.vm.nr_free >= n + self.vm.wmark_min {
                self.vm.nr_free -= n;
                self.vm.nr_alloc_pending += n;
                self.tasks[tid as usize].reclaim_prio = DEF_PRIORITY;
                true
            } else {
                false
            };
            if got {
                return true;
            }
            if scanned > SWAP_CLUSTER_MAX + SWAP_CLUSTER_MAX / 2 {
                self.reclaim_wakeup_flushers(scanned);
            }
            if scanned > 0 && prio < DEF_PRIORITY - 2 {
                let wait = match self.cfg.policy.reclaim {
                    ReclaimKind::Pageout => true,
                    // wait_iff_congested: only while some queue is write-congested.
                    _ => self.queues.iter().any(|q| q.legacy.as_ref().is_some_and(|rl| rl.congested[1])),
                };
                if wait {
                    self.tasks[tid as usize].reclaim_prio = if prio == 0 { DEF_PRIORITY } else { prio - 1 };
                    self.congestion_wait_task(tid, (hz / 10).max(1));
                    return false;
                }
            }
            if prio == 0 {
                break;
            }
            prio -= 1;
        }
        // Nothing could be freed at any priority: wait for writeback and start over.
        self.tasks[tid as usize].reclaim_prio = DEF_PRIORITY;
        self.congestion_wait_task(tid, (hz / 10).max(1));
        false
    }

    /// Readahead's allocation (it gives up rather than reclaim hard).
    pub(crate) fn alloc_pages_noretry_pageout(&mut self, n: u64) -> bool {
        if self.era.zones.is_some() {
            let Some(high) = self.zone_alloc_pick(n, false) else {
                return false;
            };
            self.vm.nr_free -= n;
            self.vm.nr_file += n;
            if let Some(z) = self.era.zones.as_mut() {
                if high {
                    z.pending_high += n;
                } else {
                    z.pending_low += n;
                }
            }
            return true;
        }
        self.kswapd_pageout(n);
        self.vm.take_for_readahead(n)
    }
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
