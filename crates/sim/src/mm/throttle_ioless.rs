//! The first IO-less dirty throttling, as merged in 3.2 (Wu Fengguang; checked against the
//! 3.2 `mm/page-writeback.c`), not as it is today:
//!
//! * dirtiers never write back: they kick the flusher and sleep;
//! * `bdi_position_ratio`: the cubic global control line between freerun = (bg + thresh)/2,
//!   setpoint and limit, times the bdi's linear line (floor 1/4, ×8 reserve boost), with the
//!   bdi threshold raised to at least (limit − dirty)/8;
//! * `bdi_update_dirty_ratelimit` every 200 ms, without 6.x's clamp of the balanced rate to the
//!   write bandwidth;
//! * pause = pages dirtied / task rate, at most `bdi_max_pause` (20 ms for one dirtier, +20 ms
//!   per doubling of concurrency, limited by bdi_dirty/(8·bw), in [4, 200 ms] — 3.2's version,
//!   replaced by min/max/target pauses in 3.3); no think-time compensation (3.3);
//! * `nr_dirtied_pause` grows by up to ×4 after short pauses and shrinks after max pauses;
//! * shares of completions from `lib/proportions.c` (flex proportions are 3.5);
//! * dirtyable memory has no reserve taken off (3.3).

use super::page_writeback::{
    dirty_freerun_ceiling, dirty_poll_interval, domain_update_dirty_limit, hard_dirty_limit, ilog2, max_pause_jiffies, ratelimit_gate,
    step_dirty_ratelimit, wb_stat_error, wb_update_write_bandwidth, DirtyThrottle, DirtyThrottleControl, TaskDirty, Throttle, ThrottleCx,
    WbState, RATELIMIT_CALC_SHIFT,
};
use super::proportions::{calc_period_shift, with_prior_shares, PropGlobal, PropLocal, PROP_FRAC_BASE};
use super::throttle_per_bdi::{bdi_dirty_limit, global_dirty_limits_old};
use super::vmstat::VmStat;
use crate::config::VmSysctl;
use crate::metrics::trace::TraceEvent;
use crate::units::pages_to_kbps;

/// `bdi_position_ratio` of 3.2, in 1/1024.
pub(crate) fn bdi_position_ratio(
    thresh: u64,
    bg_thresh: u64,
    dirty: u64,
    bdi_thresh: u64,
    bdi_dirty: u64,
    limit: u64,
    write_bw: u64,
) -> u64 {
    let freerun = dirty_freerun_ceiling(thresh, bg_thresh);
    if dirty >= limit {
        return 0;
    }
    let setpoint = (freerun + limit) / 2;
    let x: i64 = ((setpoint as i64 - dirty as i64) << RATELIMIT_CALC_SHIFT) / (limit as i64 - setpoint as i64 + 1);
    let mut pos: i64 = x;
    pos = pos.wrapping_mul(x) >> RATELIMIT_CALC_SHIFT;
    pos = pos.wrapping_mul(x) >> RATELIMIT_CALC_SHIFT;
    pos += 1 << RATELIMIT_CALC_SHIFT;
    let mut pos_ratio = pos.max(0) as u64;

    let mut bdi_thresh = bdi_thresh.min(thresh);
    bdi_thresh = bdi_thresh.max((limit - dirty) / 8);
    let x = ((bdi_thresh as u128) << 16) / (thresh as u128 + 1);
    let bdi_setpoint = ((setpoint as u128 * x) >> 16) as u64;
    let span = (((thresh.saturating_sub(bdi_thresh) + 8 * write_bw) as u128 * x) >> 16) as u64;
    let x_intercept = bdi_setpoint + span;
    if bdi_dirty < x_intercept - span / 4 {
        pos_ratio = (pos_ratio as u128 * (x_intercept - bdi_dirty) as u128 / (x_intercept - bdi_setpoint + 1) as u128) as u64;
    } else {
        pos_ratio /= 4;
    }
    let x_intercept = bdi_thresh / 2;
    if bdi_dirty < x_intercept {
        if bdi_dirty > x_intercept / 8 {
            pos_ratio = (pos_ratio as u128 * x_intercept as u128 / bdi_dirty as u128) as u64;
        } else {
            pos_ratio *= 8;
        }
    }
    pos_ratio
}

/// `bdi_max_pause` of 3.2, jiffies.
pub(crate) fn bdi_max_pause(wb: &WbState, bdi_dirty: u64, hz: u64) -> u64 {
    let bw = wb.avg_write_bandwidth;
    let hi = ilog2(bw) as u64;
    let lo = ilog2(wb.dirty_ratelimit) as u64;
    let mut t = hz / 50;
    if hi > lo {
        t += (hi - lo) * (20 * hz) / 1024;
    }
    t = t.min(bdi_dirty * hz / (8 * bw + 1));
    t.clamp(4, max_pause_jiffies(hz))
}

/// `bdi_update_dirty_ratelimit` of 3.2. Returns (dirty_rate, task_ratelimit) for the trace.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bdi_update_dirty_ratelimit(
    wb: &mut WbState,
    thresh: u64,
    bg_thresh: u64,
    dirty: u64,
    bdi_thresh: u64,
    bdi_dirty: u64,
    limit: u64,
    dirtied: u64,
    elapsed: u64,
    hz: u64,
) -> (u64, u64) {
    let freerun = dirty_freerun_ceiling(thresh, bg_thresh);
    let setpoint = (freerun + limit) / 2;
    let write_bw = wb.avg_write_bandwidth;
    let dirty_ratelimit = wb.dirty_ratelimit;
    let dirty_rate = (dirtied - dirtied.min(wb.dirtied_stamp)) * hz / elapsed.max(1);
    let pos_ratio = bdi_position_ratio(thresh, bg_thresh, dirty, bdi_thresh, bdi_dirty, limit, write_bw);
    let task_ratelimit = ((dirty_ratelimit as u128 * pos_ratio as u128) >> RATELIMIT_CALC_SHIFT) as u64 + 1;
    let balanced = (task_ratelimit as u128 * write_bw as u128 / (dirty_rate | 1) as u128) as u64;
    step_dirty_ratelimit(wb, dirty, setpoint, balanced, task_ratelimit);
    (dirty_rate, task_ratelimit)
}

/// The 3.2 policy.
pub(crate) struct IoLessThrottle {
    pub completions: PropGlobal,
    pub bdi: Vec<PropLocal>,
}

/// What one iteration measured, kept for the exit of the loop.
struct Iter {
    nr_reclaimable: u64,
    nr_dirty: u64,
    bg: u64,
    thresh: u64,
    bdi_thresh: u64,
    bdi_dirty: u64,
}

impl IoLessThrottle {
    /// `prior_shares_pct`: as for [`super::throttle_per_bdi::PerBdiThrottle::new`].
    pub(crate) fn new(vm: &VmStat, sysctl: &VmSysctl, nr_wbs: usize, prior_shares_pct: &[u32]) -> Self {
        let (_, dirty) = global_dirty_limits_old(vm, sysctl);
        let (completions, bdi) = with_prior_shares(calc_period_shift(dirty), prior_shares_pct, nr_wbs);
        IoLessThrottle { completions, bdi }
    }

    fn measure(&mut self, cx: &ThrottleCx) -> Iter {
        let nr_reclaimable = cx.vm.file_dirty();
        let nr_dirty = nr_reclaimable + cx.vm.nr_writeback;
        let (bg, thresh) = global_dirty_limits_old(cx.vm, cx.sysctl);
        let (num, den) = self.bdi[cx.wb_index].fraction(&self.completions);
        let bdi_thresh = bdi_dirty_limit(thresh, num, den, cx.wb, cx.dom.bdi_min_ratio_sum);
        Iter {
            nr_reclaimable,
            nr_dirty,
            bg,
            thresh,
            bdi_thresh,
            bdi_dirty: cx.wb.reclaimable + cx.wb.writeback,
        }
    }

    /// `__bdi_update_bandwidth` with thresholds (from a throttled task).
    fn update_bandwidth(&mut self, cx: &mut ThrottleCx, it: &Iter, start_time: u64) {
        let hz = cx.clock.hz;
        let now = cx.clock.jiffies(cx.now);
        let wb = &mut *cx.wb;
        let elapsed = now.saturating_sub(wb.bw_time_stamp);
        if elapsed < max_pause_jiffies(hz) {
            return;
        }
        let (dirtied, written) = (wb.dirtied, wb.written);
        if !(elapsed > hz && wb.bw_time_stamp < start_time) {
            // global_update_bandwidth: the smoothed limit, at most once per 200 ms.
            let dtc = DirtyThrottleControl {
                thresh: it.thresh,
                dirty: it.nr_dirty,
                ..Default::default()
            };
            domain_update_dirty_limit(cx.dom, &dtc, now, hz);
            let limit = hard_dirty_limit(cx.dom, it.thresh);
            let old_bw = wb.write_bandwidth;
            let old_avg = wb.avg_write_bandwidth;
            let (dirty_rate, task_rl) = bdi_update_dirty_ratelimit(
                wb,
                it.thresh,
                it.bg,
                it.nr_dirty,
                it.bdi_thresh,
                it.bdi_dirty,
                limit,
                dirtied,
                elapsed,
                hz,
            );
            if cx.out.trace_enabled {
                cx.out.emit(TraceEvent::BdiDirtyRatelimit {
                    bdi: wb.name,
                    write_bw: pages_to_kbps(old_bw),
                    avg_write_bw: pages_to_kbps(old_avg),
                    dirty_rate: pages_to_kbps(dirty_rate),
                    dirty_ratelimit: pages_to_kbps(wb.dirty_ratelimit),
                    task_ratelimit: pages_to_kbps(task_rl),
                    balanced_dirty_ratelimit: pages_to_kbps(wb.balanced_dirty_ratelimit),
                    cgroup_ino: 1,
                });
            }
            wb_update_write_bandwidth(wb, elapsed, written, hz);
        }
        wb.dirtied_stamp = dirtied;
        wb.written_stamp = written;
        wb.bw_time_stamp = now;
    }

    /// One iteration of the `for (;;)` loop of `balance_dirty_pages`.
    fn iteration(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        let hz = cx.clock.hz;
        let pages_dirtied = task.bdp_pages;
        let it = self.measure(cx);
        if it.nr_dirty <= dirty_freerun_ceiling(it.thresh, it.bg) {
            return self.exit(cx, task, &it, 0, 0, cx.wb.dirty_ratelimit, false);
        }
        if !cx.writeback_in_progress {
            cx.out.kick_background = true;
        }
        let exceeded = it.bdi_dirty > it.bdi_thresh || it.nr_dirty > it.thresh;
        if exceeded {
            cx.wb.dirty_exceeded = true;
        }
        self.update_bandwidth(cx, &it, task.bdp_start);
        let max_pause = bdi_max_pause(cx.wb, it.bdi_dirty, hz);
        let dirty_ratelimit = cx.wb.dirty_ratelimit;
        let limit = hard_dirty_limit(cx.dom, it.thresh);
        let pos_ratio = bdi_position_ratio(
            it.thresh,
            it.bg,
            it.nr_dirty,
            it.bdi_thresh,
            it.bdi_dirty,
            limit,
            cx.wb.avg_write_bandwidth,
        );
        let task_ratelimit = ((dirty_ratelimit as u128 * pos_ratio as u128) >> RATELIMIT_CALC_SHIFT) as u64;
        let pause = match (hz * pages_dirtied).checked_div(task_ratelimit) {
            None => max_pause,
            Some(0) => {
                self.trace(cx, task, &it, limit, dirty_ratelimit, task_ratelimit, 0);
                return self.exit(cx, task, &it, 1, max_pause, dirty_ratelimit, exceeded);
            }
            Some(p) => p.min(max_pause),
        };
        self.trace(cx, task, &it, limit, dirty_ratelimit, task_ratelimit, pause);
        cx.wb.last_bdp_sleep = Some(cx.now);
        // After the sleep the loop ends unless the task was stopped outright (rate 0) and the
        // bdi still holds more than the counter error.
        task.bdp_again = task_ratelimit == 0 && it.bdi_dirty > wb_stat_error(cx.ncpus);
        if !task.bdp_again {
            self.exit(cx, task, &it, pause, max_pause, dirty_ratelimit, exceeded);
        } else {
            task.backoff = max_pause;
        }
        Throttle::Sleep(pause)
    }

    #[allow(clippy::too_many_arguments)]
    fn exit(
        &mut self,
        cx: &mut ThrottleCx,
        task: &mut TaskDirty,
        it: &Iter,
        pause: u64,
        max_pause: u64,
        dirty_ratelimit: u64,
        exceeded: bool,
    ) -> Throttle {
        let hz = cx.clock.hz;
        let pages_dirtied = task.bdp_pages;
        if !exceeded {
            cx.wb.dirty_exceeded = false;
        }
        task.nr_dirtied = 0;
        if pause == 0 {
            task.nr_dirtied_pause = dirty_poll_interval(it.nr_dirty, it.thresh);
        } else if pause <= max_pause / 4 && pages_dirtied >= task.nr_dirtied_pause {
            let want = dirty_ratelimit * (max_pause / 2) / hz;
            task.nr_dirtied_pause = want.clamp(
                pages_dirtied + pages_dirtied / 8,
                (pages_dirtied * 4).max(pages_dirtied + pages_dirtied / 8),
            );
        } else if pause >= max_pause {
            let want = dirty_ratelimit * (max_pause / 2) / hz;
            let lo = pages_dirtied / 4;
            let hi = (pages_dirtied - pages_dirtied / 8).max(lo);
            task.nr_dirtied_pause = 1 | want.clamp(lo, hi);
        }
        if !cx.writeback_in_progress && it.nr_reclaimable > it.bg {
            cx.out.kick_background = true;
        }
        Throttle::Proceed
    }

    #[allow(clippy::too_many_arguments)]
    fn trace(&self, cx: &mut ThrottleCx, task: &TaskDirty, it: &Iter, limit: u64, dirty_ratelimit: u64, task_ratelimit: u64, pause: u64) {
        if !cx.out.trace_enabled {
            return;
        }
        let c = cx.clock;
        let jiffies = c.jiffies(cx.now);
        let freerun = dirty_freerun_ceiling(it.thresh, it.bg);
        let setpoint = (limit + freerun) / 2;
        let period = (c.hz * task.bdp_pages).checked_div(task_ratelimit).unwrap_or(pause);
        cx.out.emit(TraceEvent::BalanceDirtyPages {
            bdi: cx.wb.name,
            limit,
            setpoint,
            dirty: it.nr_dirty,
            wb_setpoint: (setpoint as u128 * it.bdi_thresh as u128 / (it.thresh + 1) as u128) as u64,
            wb_dirty: it.bdi_dirty,
            dirty_ratelimit: pages_to_kbps(dirty_ratelimit),
            task_ratelimit: pages_to_kbps(task_ratelimit),
            dirtied: task.bdp_pages as u32,
            dirtied_pause: task.nr_dirtied_pause as u32,
            cgroup_ino: 1,
            paused: c.jiffies_to_msecs(jiffies as i64 - task.bdp_start as i64) as u64,
            pause: c.jiffies_to_msecs(pause as i64),
            period: c.jiffies_to_msecs(period as i64) as u64,
            think: 0,
        });
    }
}

impl DirtyThrottle for IoLessThrottle {
    fn gate_after_dirtying(&self) -> bool {
        true
    }

    /// `balance_dirty_pages_ratelimited_nr` of 3.2: per task every `nr_dirtied_pause` pages
    /// (8 while the bdi is exceeded), or when the CPU's count reaches `ratelimit_pages`.
    fn ratelimited(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        if ratelimit_gate(cx, task) {
            return self.iteration(cx, task);
        }
        Throttle::Proceed
    }

    fn resume(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        if task.bdp_again {
            task.bdp_again = false;
            return self.iteration(cx, task);
        }
        Throttle::Proceed
    }

    fn chunk_limit(&self, wb: &WbState, _bdp_ratelimits: &[u64], task: &TaskDirty) -> u64 {
        let mut ratelimit = task.nr_dirtied_pause;
        if wb.dirty_exceeded {
            ratelimit = ratelimit.min(8);
        }
        ratelimit.saturating_sub(task.nr_dirtied).max(1)
    }

    fn writeout(&mut self, wb: usize, pages: u64) {
        if let Some(l) = self.bdi.get_mut(wb) {
            l.inc_max(&mut self.completions, PROP_FRAC_BASE, pages);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BdiConfig;
    use crate::metrics::trace::DevT;

    fn wb(bw: u64, rl: u64) -> WbState {
        let mut w = WbState::new(DevT { major: 8, minor: 0 }, &BdiConfig::default(), 100_000, 1);
        w.avg_write_bandwidth = bw;
        w.write_bandwidth = bw;
        w.dirty_ratelimit = rl;
        w
    }

    #[test]
    fn position_ratio_is_one_at_the_setpoint_with_the_bdi_on_its_line() {
        // thresh 100,000, bg 50,000: freerun 75,000, limit 100,000, setpoint 87,500.
        // One bdi holding everything, bw 25,600: x16 = (100,000 << 16)/100,001 = 65,535;
        // bdi_setpoint = 87,500·65,535 >> 16 = 87,498; span = 204,800·65,535 >> 16 = 204,796;
        // x_intercept = 292,294 → 1024·(292,294 − 87,500)/(204,796 + 1) = 1023.
        let p = bdi_position_ratio(100_000, 50_000, 87_500, 100_000, 87_500, 100_000, 25_600);
        assert_eq!(p, 1023);
        // Just above freerun the cubic gives ≈ 2.0 (2043), and the bdi line, with the bdi
        // below its setpoint, raises it to 2043·217,293/204,797 = 2167.
        let p = bdi_position_ratio(100_000, 50_000, 75_001, 100_000, 75_001, 100_000, 25_600);
        assert!((2_100..=2_200).contains(&p), "{p}");
        // At the limit: 0.
        assert_eq!(bdi_position_ratio(100_000, 50_000, 100_000, 100_000, 100_000, 100_000, 25_600), 0);
        // A bdi far below half its threshold gets the ×8 reserve boost.
        let low = bdi_position_ratio(100_000, 50_000, 87_500, 100_000, 1_000, 100_000, 25_600);
        assert!(low > 8 * 1024, "{low}");
    }

    #[test]
    fn max_pause_grows_with_concurrency_and_shrinks_with_little_dirty() {
        // HZ 250: 5 jiffies (20 ms) for one dirtier (ratelimit ≈ bw).
        let w = wb(25_600, 25_600);
        assert_eq!(bdi_max_pause(&w, 1_000_000, 250), 5);
        // 1024 dirtiers: ratelimit = bw/1024 → 10 doublings → 5 + 10·5000/1024 = 53 → 50.
        let w = wb(25_600, 25);
        assert_eq!(bdi_max_pause(&w, 1_000_000, 250), 50);
        // Little dirty data: 1,000·250/(8·25,600 + 1) = 1 → clamped to 4.
        let w = wb(25_600, 25_600);
        assert_eq!(bdi_max_pause(&w, 1_000, 250), 4);
    }

    #[test]
    fn ratelimit_steps_towards_the_balanced_rate() {
        // Four dirtiers at 25,600 each into a 25,600 pages/s disk, near the limit (99,000 of
        // 100,000): pos_ratio 227 then 214 on the bdi line; task rate 5,351; balanced
        // 5,351·25,600/102,401 = 1,337; the most cautious candidate is the old balanced
        // 6,400: step 19,200, shift 25,600/38,401 = 0, step/8 = 2,400 → 23,200.
        let mut w = wb(25_600, 25_600);
        w.balanced_dirty_ratelimit = 6_400;
        let (rate, task) = bdi_update_dirty_ratelimit(&mut w, 100_000, 50_000, 99_000, 100_000, 99_000, 100_000, 20_480, 50, 250);
        assert_eq!((rate, task), (102_400, 5_351));
        assert_eq!((w.dirty_ratelimit, w.balanced_dirty_ratelimit), (23_200, 1_337));
        // Near the setpoint the step shrinks to nothing: a rate of 25,600 with a gap of 524
        // shifts by 25,600/1,049 = 24.
        let mut w = wb(25_600, 25_600);
        w.balanced_dirty_ratelimit = 6_400;
        bdi_update_dirty_ratelimit(&mut w, 100_000, 50_000, 90_000, 100_000, 90_000, 100_000, 20_480, 50, 250);
        assert_eq!(w.dirty_ratelimit, 25_600);
    }
}
