//! Dirty throttling of Linux 2.4 (`fs/buffer.c`): `balance_dirty_state` and `balance_dirty`,
//! over the bdflush parameters of `/proc/sys/vm/bdflush` ([`crate::config::Bdflush`]).
//!
//! 2.4 wrote file data through the buffer cache: every block of a page-cache page had a
//! `buffer_head` on the DIRTY, LOCKED (I/O in flight) or CLEAN list. The model keeps its
//! per-file page extents and treats each page as one buffer (a 4 KiB block): DIRTY pages are
//! `nr_dirty`, LOCKED pages are `nr_writeback`, and "the oldest dirty buffers" are the pages
//! the inode walk (`writeback_inodes_wb`) takes first, which for one sequentially written file
//! are its oldest dirty pages, as on the time-ordered DIRTY list.
//!
//! `balance_dirty_state()` (both variants):
//!
//! ```text
//! dirty = DIRTY pages                     (2.4.17-pre2 on: + LOCKED pages)
//! tot   = nr_free_buffer_pages()          (see `tot_pages`)
//! if dirty·100 > tot·nfract_sync: return 1
//! if dirty·100 > tot·nfract:      return 0
//! return -1
//! ```
//!
//! `balance_dirty()`, called for every page that gained a dirty buffer:
//!
//! * **2.4.8-pre5 → 2.4.17** ([`Variant::Mainline`]): at state ≥ 0 the writer itself runs
//!   `write_some_buffers(NODEV)`: up to `NRSYNC` = 32 of the oldest dirty buffers, submitted
//!   with `submit_bh` (it sleeps in `__get_request_wait` when the queue has no free slot). At
//!   state 1 it then runs `wait_for_some_buffers()` (sleeps until the oldest locked buffer's
//!   I/O completes) and `wakeup_bdflush()`.
//! * **2.4.0 → 2.4.7** ([`Variant::PreAc`], the Rik-VM code the 2.4.x-ac trees kept): at
//!   state ≥ 0, `wakeup_bdflush(state)`: bdflush is woken, and at state 1 the writer runs
//!   `flush_dirty_buffers(0)` itself: up to `ndirty` = 64 buffers submitted, no waiting for
//!   their completion. LOCKED buffers are not counted, and `tot` is the Rik-VM one.
//!
//! The writer's wakeup of bdflush is [`ThrottleOut::kick_background`]
//! (`crate::mm::page_writeback::ThrottleOut`), which the 2.4 generations route to
//! `wakeup_bdflush` (`fs/bdflush/`).

use super::page_writeback::{DirtyThrottle, TaskDirty, Throttle, ThrottleCx, WbState};
use super::vmstat::VmStat;
use crate::config::Bdflush;

/// `NRSYNC`: buffers `write_some_buffers` locks and submits per call.
pub(crate) const NRSYNC: u64 = 32;

/// Which 2.4 `fs/buffer.c` (a policy value, chosen with the generation).
pub(crate) use crate::config::Buffer24 as Variant;

/// `nr_free_buffer_pages()`, the base of the percentages.
///
/// * Mainline (Andrea's VM, 2.4.10+): Σ (zone size − pages_high) over the GFP_USER zones: all
///   memory minus the high watermarks (the model has no highmem).
/// * PreAc (Rik's VM, 2.4.0–2.4.9): free + inactive_clean + inactive_dirty pages (floored at
///   freepages.high + inactive_target) + active/16. The model has no active list: its page
///   cache counts as inactive, so tot = free + page cache.
pub(crate) fn tot_pages(vm: &VmStat, variant: Variant) -> u64 {
    match variant {
        Variant::Mainline => super::throttle_global::vm_total_pages(vm),
        Variant::PreAc => (vm.nr_free + vm.nr_file).max(vm.wmark_high).max(1),
    }
}

/// The pages `balance_dirty_state` counts as dirty.
pub(crate) fn counted_dirty(vm: &VmStat, variant: Variant) -> u64 {
    match variant {
        Variant::Mainline => vm.dirty_level(),
        Variant::PreAc => vm.file_dirty(),
    }
}

/// `balance_dirty_state()`: −1 under `nfract`, 0 between, 1 above `nfract_sync`.
pub(crate) fn balance_dirty_state(dirty: u64, tot: u64, p: &Bdflush) -> i32 {
    let dirty = dirty * 100;
    if dirty > tot * p.nfract as u64 {
        if dirty > tot * p.nfract_sync as u64 {
            return 1;
        }
        return 0;
    }
    -1
}

/// The classifier on the machine's counters.
pub(crate) fn state_of(vm: &VmStat, p: &Bdflush, variant: Variant) -> i32 {
    balance_dirty_state(counted_dirty(vm, variant), tot_pages(vm, variant), p)
}

/// Pages `flush_dirty_buffers(0)` submits per call: `ndirty` buffers (one page each), at
/// least one.
pub(crate) fn ndirty_pages(p: &Bdflush) -> u64 {
    (p.ndirty as u64).max(1)
}

/// The 2.4 policy. `bdp_step` records where the task is in `balance_dirty`:
/// 0 idle, 1 after its own submission at state 0, 2 after it at state 1, 3 after the wait.
pub(crate) struct BdflushThrottle {
    pub variant: Variant,
    /// Pages the writer may dirty before the state can leave −1 (computed at its last
    /// check): the chunking of writes between `balance_dirty` calls.
    headroom: u64,
}

impl BdflushThrottle {
    pub(crate) fn new(variant: Variant) -> Self {
        BdflushThrottle { variant, headroom: 1 }
    }

    fn update_headroom(&mut self, vm: &VmStat, p: &Bdflush) {
        let tot = tot_pages(vm, self.variant);
        let soft = tot * p.nfract as u64 / 100;
        self.headroom = soft.saturating_sub(counted_dirty(vm, self.variant)).max(1);
    }
}

impl DirtyThrottle for BdflushThrottle {
    fn gate_after_dirtying(&self) -> bool {
        true
    }

    fn pause_per_call(&self) -> bool {
        true
    }

    /// 2.4's two levels: `nfract` (bdflush wakes, the writer submits) and `nfract_sync` (the
    /// writer also waits), as shares of `tot_pages`.
    fn era_limits(
        &mut self,
        vm: &VmStat,
        sysctl: &crate::config::VmSysctl,
        _dom: &super::page_writeback::WbDomain,
        _wb: &WbState,
        _wb_index: usize,
    ) -> Option<crate::metrics::EraLimits> {
        let tot = tot_pages(vm, self.variant);
        let p = &sysctl.bdflush;
        Some(crate::metrics::EraLimits {
            bg_thresh: tot * p.nfract as u64 / 100,
            thresh: tot * p.nfract_sync as u64 / 100,
            wb_thresh: None,
        })
    }

    /// `balance_dirty()` after a page was dirtied.
    fn ratelimited(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        let p = cx.sysctl.bdflush;
        let state = state_of(cx.vm, &p, self.variant);
        self.update_headroom(cx.vm, &p);
        task.bdp_step = 0;
        if state < 0 {
            return Throttle::Proceed;
        }
        match self.variant {
            Variant::Mainline => {
                // write_some_buffers(NODEV) in the writer's context.
                task.bdp_step = if state > 0 { 2 } else { 1 };
                Throttle::Writeback(NRSYNC)
            }
            Variant::PreAc => {
                // wakeup_bdflush(state): wake the daemon; at state 1 flush ourselves.
                cx.out.kick_background = true;
                if state > 0 {
                    task.bdp_step = 1;
                    return Throttle::Writeback(ndirty_pages(&p));
                }
                Throttle::Proceed
            }
        }
    }

    fn resume(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        match task.bdp_step {
            2 => {
                // wait_for_some_buffers(NODEV): the oldest buffer in flight.
                task.bdp_step = 3;
                Throttle::WaitWrite
            }
            3 => {
                task.bdp_step = 0;
                cx.out.kick_background = true;
                Throttle::Proceed
            }
            _ => {
                task.bdp_step = 0;
                Throttle::Proceed
            }
        }
    }

    /// Dirty one page at a time while writeout is on (every page calls `balance_dirty`), else
    /// up to where the count would reach `nfract`.
    fn chunk_limit(&self, _wb: &WbState, _r: &[u64], _task: &TaskDirty) -> u64 {
        self.headroom
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tri_state_classifier() {
        let p = Bdflush::V2417;
        // 40 % / 60 % of 1000 pages: strictly above each limit.
        assert_eq!(balance_dirty_state(400, 1000, &p), -1);
        assert_eq!(balance_dirty_state(401, 1000, &p), 0);
        assert_eq!(balance_dirty_state(600, 1000, &p), 0);
        assert_eq!(balance_dirty_state(601, 1000, &p), 1);
        let p = Bdflush::V247;
        assert_eq!(balance_dirty_state(301, 1000, &p), 0);
        assert_eq!(balance_dirty_state(300, 1000, &p), -1);
    }

    #[test]
    fn variants_count_and_base_differently() {
        // 160 MiB machine, 35 MiB unreclaimable.
        let mut vm = VmStat::boot(40_960, 8_960, 0, 10);
        vm.nr_dirty = 10_000;
        vm.nr_writeback = 2_000;
        assert_eq!(counted_dirty(&vm, Variant::Mainline), 12_000);
        assert_eq!(counted_dirty(&vm, Variant::PreAc), 10_000);
        // Mainline's base is all memory less the watermarks; -ac's is free + page cache.
        let main = tot_pages(&vm, Variant::Mainline);
        assert!(main > 40_000 && main <= 40_960, "{main}");
        let ac = tot_pages(&vm, Variant::PreAc);
        assert_eq!(ac, (vm.nr_free + vm.nr_file).max(vm.wmark_high));
        assert!(ac < main);
    }

    #[test]
    fn mainline_writer_submits_then_waits_above_nfract_sync() {
        let p = Bdflush::V2417;
        let mut t = BdflushThrottle::new(Variant::Mainline);
        let mut vm = VmStat::boot(40_960, 0, 0, 10);
        let tot = tot_pages(&vm, Variant::Mainline);
        // Below nfract: a free run up to the soft limit.
        vm.nr_dirty = tot * 30 / 100;
        t.update_headroom(&vm, &p);
        assert_eq!(t.headroom, tot * 40 / 100 - vm.nr_dirty);
        assert_eq!(state_of(&vm, &p, Variant::Mainline), -1);
        // Dirty + locked above 60 %: state 1.
        vm.nr_dirty = tot * 45 / 100;
        vm.nr_writeback = tot * 20 / 100;
        assert_eq!(state_of(&vm, &p, Variant::Mainline), 1);
        t.update_headroom(&vm, &p);
        assert_eq!(t.headroom, 1, "one page per balance_dirty while writing out");
        // -ac does not count the locked pages.
        assert_eq!(counted_dirty(&vm, Variant::PreAc), tot * 45 / 100);
    }
}
