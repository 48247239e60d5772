//! Per-bdi dirty throttling, 2.6.24 → 3.1 (Peter Zijlstra's per-BDI patches, then Richard
//! Kennedy's 2.6.32 rework), checked against the 2.6.24/25, 2.6.29–31 and 2.6.36–38 sources.
//!
//! Each bdi's threshold is the global one times its share of recent writeback completions
//! (`bdi_writeout_fraction`, floating proportions counted in pages, see `proportions.rs`);
//! each task's is lowered by up to 1/8 by its share of recent dirtying (`task_dirty_limit`),
//! so the heavy dirtier meets the wall first. Over the limit the dirtier writes back
//! `write_chunk` pages of its bdi itself and sleeps.
//!
//! Three variants of the loop:
//! * 2.6.24 (per-BDI v9 as merged; Baker's 2007 kernel): break when the bdi is under its
//!   (task) limit; free-run below (bg + thresh)/2; write back when the bdi has anything
//!   reclaimable; the bdi limit is clipped to what is globally still free plus what the bdi
//!   holds (`clip_bdi_dirty_limit`); 100 ms congestion waits.
//! * 2.6.32: free-run first; exceeded = bdi over its task limit OR global over thresh; write
//!   back only when the bdi's *dirty* pages exceed the limit; no clip; `write_chunk` = 1.5 ×
//!   max(pages dirtied, ratelimit); 100 ms congestion waits.
//! * 2.6.38: as 2.6.32 but the loop sleeps `io_schedule_timeout(pause)`, pause = 1, 2, 4 …
//!   jiffies up to HZ/10. A task whose bdi pages are mostly under writeback writes nothing and
//!   can only leave when completions bring the bdi under its limit: Wu's erratic pauses.
//!
//! (`task_min_dirty_limit` and its `clear_dirty_exceeded` rule arrived in 3.1, July 2011,
//! after 2.6.38; descriptions of the period place them in 2.6.38, the source does not.)

use super::page_writeback::{DirtyThrottle, TaskDirty, Throttle, ThrottleCx, WbState, RATIO_PPM};
use super::proportions::{calc_period_shift, with_prior_shares, PropGlobal, PropLocal, PROP_FRAC_BASE};
use super::throttle_global::{cpu_ratelimit_left, old_ratelimit_pages, sync_writeback_pages, take_cpu_ratelimit};
use super::vmstat::VmStat;
use crate::config::VmSysctl;
use crate::units::PAGE_SIZE;

/// Which kernel's loop (a policy value, chosen with the generation).
pub(crate) use crate::config::PerBdiLoop as Variant;

/// `TASK_LIMIT_FRACTION`.
pub(crate) const TASK_LIMIT_FRACTION: u64 = 8;

/// `determine_dirtyable_memory` (2.6.21 → 3.2): free + file LRU pages + 1, less highmem's
/// (`highmem_dirtyable_memory`; unconditional in 2.6.23, `vm_highmem_is_dirtyable` = 0 from
/// 2.6.24). No reserve is taken off (`dirty_balance_reserve` is 3.3).
pub(crate) fn dirtyable_old(vm: &VmStat) -> u64 {
    let x = vm.nr_free + vm.nr_file;
    x - vm.highmem_dirtyable(x) + 1
}

/// `get_dirty_limits` / `global_dirty_limits` of 2.6.24 → 3.2: (background, dirty).
pub(crate) fn global_dirty_limits_old(vm: &VmStat, sysctl: &VmSysctl) -> (u64, u64) {
    let avail = dirtyable_old(vm);
    let dirty = if sysctl.dirty_bytes > 0 {
        sysctl.dirty_bytes.div_ceil(PAGE_SIZE)
    } else {
        // 2.6.24 raised ratios below 5 to 5; later kernels take them as they are.
        sysctl.dirty_ratio as u64 * avail / 100
    };
    let mut bg = if sysctl.dirty_background_bytes > 0 {
        sysctl.dirty_background_bytes.div_ceil(PAGE_SIZE)
    } else {
        sysctl.dirty_background_ratio as u64 * avail / 100
    };
    if bg >= dirty {
        bg = dirty / 2;
    }
    (bg, dirty)
}

/// `bdi_dirty_limit` (`get_dirty_limits`' bdi part in 2.6.24): the bdi's share of `dirty` by
/// completions, scaled by what the min ratios leave, plus its min ratio, capped at max ratio.
pub(crate) fn bdi_dirty_limit(dirty: u64, num: u64, den: u64, wb: &WbState, min_ratio_sum_ppm: u64) -> u64 {
    let free_ppm = RATIO_PPM - min_ratio_sum_ppm.min(RATIO_PPM);
    let share = (dirty as u128 * free_ppm as u128 / RATIO_PPM as u128) * num as u128 / den.max(1) as u128;
    let t = share as u64 + dirty * wb.min_ratio_ppm / RATIO_PPM;
    t.min((dirty as u128 * wb.max_ratio_ppm as u128 / RATIO_PPM as u128) as u64)
}

/// `clip_bdi_dirty_limit` (2.6.24–2.6.31): never promise a bdi more than what is globally
/// still free plus what it already holds.
pub(crate) fn clip_bdi_dirty_limit(bdi_thresh: u64, dirty: u64, global_dirty: u64, bdi_dirty: u64) -> u64 {
    let avail = dirty.saturating_sub(global_dirty) + bdi_dirty;
    bdi_thresh.min(avail)
}

/// `task_dirty_limit`: lower the limit by (limit/8) × the task's share of recent dirtying,
/// never below half.
pub(crate) fn task_dirty_limit(bdi_thresh: u64, num: u64, den: u64) -> u64 {
    let inv = (bdi_thresh / TASK_LIMIT_FRACTION) as u128 * num as u128 / den.max(1) as u128;
    (bdi_thresh - (inv as u64).min(bdi_thresh)).max(bdi_thresh / 2)
}

/// The per-bdi policy.
pub(crate) struct PerBdiThrottle {
    pub variant: Variant,
    pub ratelimit_pages: u64,
    /// `vm_completions` and each bdi's local counter.
    pub completions: PropGlobal,
    pub bdi: Vec<PropLocal>,
    /// `vm_dirties` and each task's local counter.
    pub dirties: PropGlobal,
    pub task: Vec<PropLocal>,
}

/// What one loop iteration measured.
#[derive(Clone, Copy, Debug)]
struct State {
    bg: u64,
    thresh: u64,
    bdi_thresh: u64,
    reclaimable: u64,
    writeback: u64,
    bdi_reclaimable: u64,
    bdi_writeback: u64,
}

impl PerBdiThrottle {
    /// `prior_shares_pct`: each device's share of completions before the run (the scenario's
    /// `writeout_share`), one per wb from the first.
    pub(crate) fn new(
        variant: Variant,
        vm: &VmStat,
        sysctl: &VmSysctl,
        ncpus: u32,
        nr_wbs: usize,
        prior_shares_pct: &[u32],
        nr_tasks: usize,
    ) -> Self {
        // calc_period_shift at boot: the dirty threshold of the (mostly free) memory.
        let (_, dirty) = global_dirty_limits_old(vm, sysctl);
        let shift = calc_period_shift(dirty);
        let (completions, bdi) = with_prior_shares(shift, prior_shares_pct, nr_wbs);
        PerBdiThrottle {
            variant,
            ratelimit_pages: old_ratelimit_pages(vm, ncpus),
            completions,
            bdi,
            dirties: PropGlobal::new(shift),
            task: vec![PropLocal::default(); nr_tasks],
        }
    }

    /// Pages between `balance_dirty_pages` calls: 8 while the bdi is over its limit.
    fn ratelimit(&self, wb: &WbState) -> u64 {
        if wb.dirty_exceeded {
            8
        } else {
            self.ratelimit_pages
        }
    }

    fn state(&mut self, cx: &ThrottleCx) -> State {
        let (bg, thresh) = global_dirty_limits_old(cx.vm, cx.sysctl);
        let (num, den) = self.bdi[cx.wb_index].fraction(&self.completions);
        let mut bdi_thresh = bdi_dirty_limit(thresh, num, den, cx.wb, cx.dom.bdi_min_ratio_sum);
        let (reclaimable, writeback) = (cx.vm.file_dirty(), cx.vm.nr_writeback);
        let (bdi_reclaimable, bdi_writeback) = (cx.wb.reclaimable, cx.wb.writeback);
        if self.variant == Variant::V2624 {
            bdi_thresh = clip_bdi_dirty_limit(bdi_thresh, thresh, reclaimable + writeback, bdi_reclaimable + bdi_writeback);
        }
        let t = cx.tid as usize;
        if t >= self.task.len() {
            self.task.resize(t + 1, PropLocal::default());
        }
        let (tn, td) = self.task[t].fraction(&self.dirties);
        bdi_thresh = task_dirty_limit(bdi_thresh, tn, td);
        State {
            bg,
            thresh,
            bdi_thresh,
            reclaimable,
            writeback,
            bdi_reclaimable,
            bdi_writeback,
        }
    }

    fn sleep(&self, cx: &ThrottleCx, task: &mut TaskDirty) -> Throttle {
        task.bdp_step = 0;
        match self.variant {
            Variant::V2624 | Variant::V2632 => Throttle::CongestionWait((cx.clock.hz / 10).max(1)),
            Variant::V2638 => {
                let p = task.backoff.max(1);
                task.backoff = (p * 2).min((cx.clock.hz / 10).max(1));
                Throttle::Sleep(p)
            }
        }
    }

    /// Top of the `for (;;)` loop.
    fn loop_top(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        let s = self.state(cx);
        let bdi_dirty = s.bdi_reclaimable + s.bdi_writeback;
        let global = s.reclaimable + s.writeback;
        let freerun = (s.bg + s.thresh) / 2;
        match self.variant {
            Variant::V2624 => {
                if bdi_dirty <= s.bdi_thresh || global < freerun {
                    return self.finish(cx, task, s);
                }
                cx.wb.dirty_exceeded = true;
                if s.bdi_reclaimable > 0 {
                    task.bdp_step = 1;
                    return Throttle::Writeback(task.write_chunk);
                }
            }
            Variant::V2632 | Variant::V2638 => {
                if global <= freerun {
                    return self.finish(cx, task, s);
                }
                let exceeded = bdi_dirty > s.bdi_thresh || global > s.thresh;
                task.bdp_exceeded = exceeded;
                if !exceeded {
                    return self.finish(cx, task, s);
                }
                cx.wb.dirty_exceeded = true;
                if s.bdi_reclaimable > s.bdi_thresh {
                    task.bdp_step = 1;
                    return Throttle::Writeback(task.write_chunk);
                }
            }
        }
        self.after_writeback_checks(cx, task)
    }

    /// The rest of an iteration: after the writeback (or none), check again, then sleep.
    fn after_writeback_checks(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        match self.variant {
            Variant::V2624 => {
                let s = self.state(cx);
                if s.bdi_reclaimable + s.bdi_writeback <= s.bdi_thresh || task.pages_written >= task.write_chunk {
                    return self.finish(cx, task, s);
                }
            }
            Variant::V2632 | Variant::V2638 => {
                if task.pages_written >= task.write_chunk {
                    // "We've done our duty": the iteration's dirty_exceeded was true, so the
                    // bdi flag stays set.
                    task.bdp_step = 0;
                    let (bg, _) = global_dirty_limits_old(cx.vm, cx.sysctl);
                    if !cx.writeback_in_progress && cx.vm.file_dirty() > bg {
                        cx.out.kick_background = true;
                    }
                    return Throttle::Proceed;
                }
            }
        }
        self.sleep(cx, task)
    }

    fn finish(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty, s: State) -> Throttle {
        let bdi_dirty = s.bdi_reclaimable + s.bdi_writeback;
        let clear = match self.variant {
            Variant::V2624 => bdi_dirty < s.bdi_thresh,
            // The `dirty_exceeded` local: the last iteration's verdict, which the free-run
            // break does not recompute (so it is false only when the loop broke on it, or
            // free-ran before its first verdict).
            Variant::V2632 | Variant::V2638 => !task.bdp_exceeded,
        };
        if clear {
            cx.wb.dirty_exceeded = false;
        }
        task.bdp_step = 0;
        if !cx.writeback_in_progress && s.reclaimable > s.bg {
            cx.out.kick_background = true;
        }
        Throttle::Proceed
    }
}

impl DirtyThrottle for PerBdiThrottle {
    fn gate_after_dirtying(&self) -> bool {
        true
    }

    fn ratelimited(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        let ratelimit = self.ratelimit(cx.wb);
        let Some(dirtied) = take_cpu_ratelimit(cx.bdp_ratelimits, task.cpu, ratelimit) else {
            return Throttle::Proceed;
        };
        task.pages_written = 0;
        task.backoff = 1;
        task.bdp_exceeded = false;
        task.write_chunk = match self.variant {
            Variant::V2624 => sync_writeback_pages(self.ratelimit_pages),
            Variant::V2632 | Variant::V2638 => sync_writeback_pages(dirtied.max(self.ratelimit_pages)),
        };
        task.bdp_start = cx.clock.jiffies(cx.now);
        self.loop_top(cx, task)
    }

    fn resume(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        if task.bdp_step == 1 {
            task.pages_written += task.bdp_written;
            task.bdp_step = 0;
            return self.after_writeback_checks(cx, task);
        }
        self.loop_top(cx, task)
    }

    fn chunk_limit(&self, wb: &WbState, bdp_ratelimits: &[u64], task: &TaskDirty) -> u64 {
        cpu_ratelimit_left(bdp_ratelimits, task.cpu, self.ratelimit(wb))
    }

    fn writeout(&mut self, wb: usize, pages: u64) {
        if let Some(l) = self.bdi.get_mut(wb) {
            // max_prop_frac is applied through bdi_dirty_limit's max_ratio cap instead.
            l.inc_max(&mut self.completions, PROP_FRAC_BASE, pages);
        }
    }

    fn dirtied(&mut self, tid: u32, pages: u64) {
        let t = tid as usize;
        if t >= self.task.len() {
            self.task.resize(t + 1, PropLocal::default());
        }
        self.task[t].inc(&mut self.dirties, pages);
    }

    fn pause_per_call(&self) -> bool {
        true
    }

    /// The global thresholds and the device's share of them (`bdi_thresh` before the task
    /// limit; 2.6.24's clip included).
    fn era_limits(
        &mut self,
        vm: &VmStat,
        sysctl: &VmSysctl,
        dom: &super::page_writeback::WbDomain,
        wb: &WbState,
        wb_index: usize,
    ) -> Option<crate::metrics::EraLimits> {
        let (bg_thresh, thresh) = global_dirty_limits_old(vm, sysctl);
        let (num, den) = self.bdi[wb_index].fraction(&self.completions);
        let mut bdi_thresh = bdi_dirty_limit(thresh, num, den, wb, dom.bdi_min_ratio_sum);
        if self.variant == Variant::V2624 {
            bdi_thresh = clip_bdi_dirty_limit(bdi_thresh, thresh, vm.dirty_level(), wb.reclaimable + wb.writeback);
        }
        Some(crate::metrics::EraLimits {
            bg_thresh,
            thresh,
            wb_thresh: Some(bdi_thresh),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BdiConfig;
    use crate::metrics::trace::DevT;

    fn wb() -> WbState {
        WbState::new(DevT { major: 8, minor: 0 }, &BdiConfig::default(), 100_000, 1)
    }

    #[test]
    fn task_limit_is_one_eighth_lower_for_the_only_dirtier_and_never_below_half() {
        assert_eq!(task_dirty_limit(80_000, 0, 1), 80_000);
        assert_eq!(task_dirty_limit(80_000, 1, 1), 70_000);
        assert_eq!(task_dirty_limit(80_000, 1, 2), 75_000);
        assert_eq!(task_dirty_limit(1, 1, 1), 1);
    }

    #[test]
    fn bdi_share_min_max_and_clip() {
        let mut w = wb();
        // Half of the completions: half the threshold.
        assert_eq!(bdi_dirty_limit(100_000, 1, 2, &w, 0), 50_000);
        // max_ratio 10 % caps it; min_ratio 5 % adds to the scaled share.
        w.max_ratio_ppm = 100_000;
        assert_eq!(bdi_dirty_limit(100_000, 1, 2, &w, 0), 10_000);
        w.max_ratio_ppm = RATIO_PPM;
        w.min_ratio_ppm = 50_000;
        assert_eq!(bdi_dirty_limit(100_000, 1, 2, &w, 50_000), 47_500 + 5_000);
        // Clip: 100,000 allowed, 95,000 dirty globally, the bdi holds 20,000 → 25,000.
        assert_eq!(clip_bdi_dirty_limit(60_000, 100_000, 95_000, 20_000), 25_000);
        assert_eq!(clip_bdi_dirty_limit(10_000, 100_000, 95_000, 20_000), 10_000);
    }

    #[test]
    fn old_limits_use_free_plus_file_pages() {
        let mut vm = VmStat::boot(524_288, 50_000, 0, 10);
        vm.nr_free = 100_000;
        vm.nr_file = 299_999;
        let s = VmSysctl {
            dirty_ratio: 10,
            dirty_background_ratio: 5,
            ..Default::default()
        };
        assert_eq!(global_dirty_limits_old(&vm, &s), (20_000, 40_000));
    }
}
