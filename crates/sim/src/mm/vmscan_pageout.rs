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
//!   `pageout()` of dirty pages while their queue has room. After a pass that freed nothing it
//!   sleeps `HZ/10` (`balance_pgdat`'s congestion wait): until then no allocation folds another
//!   kswapd scan in.
//! * PG_reclaim pages rotate to the oldest end when their writeback completes
//!   (`folio_rotate_reclaimable`), so a scan frees them first and never walks those still in
//!   flight (see `inactive_list.rs`).
//!
//! * Buffer-cache pages (metadata) are `GFP_NOFS`: their direct reclaim never `pageout()`s.
//! * A 32-bit machine (`[machine] highmem`) has two zones, each with its own list, and an
//!   allocation reclaims only the zones it may use (see `highmem.rs`).
//!
//! Not modelled: the active list (no page is ever activated), slab shrinking, anonymous
//! memory and swap.

use super::highmem::Wmark;
use crate::block::queue::Submitter;
use crate::config::{FlusherKind, ReclaimKind};
use crate::machine::Machine;
use crate::metrics::trace::WbReason;

pub(crate) use super::inactive_list::{scan_target, PageoutCheck, ScanResult, DEF_PRIORITY, SWAP_CLUSTER_MAX};

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
            let dev = self.inodes[run.file as usize].dev;
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
        self.tasks[tid as usize].alloc_pending += n;
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
        let ok = self.alloc_pages_gfp(tid, n, true);
        self.account_reclaim_wait(tid, ok)
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
                self.tasks[tid as usize].alloc_pending += n;
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
                self.tasks[tid as usize].alloc_pending += n;
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
