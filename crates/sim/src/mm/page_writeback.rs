//! Dirty limits and dirty throttling as in Linux 6.18 (`mm/page-writeback.c`).
//!
//! Functions keep the kernel's names. Units are the kernel's: pages, pages per second and
//! jiffies; `pos_ratio` is fixed point with 1.0 = 1024. All arithmetic is integer and
//! truncating, as in the kernel, so traces match the real ones digit for digit where the
//! inputs match.
//!
//! With cgroup writeback (a task in a memory cgroup of a cgroup v2 machine) the task's wb is
//! its group's, and `balance_dirty_pages` weighs a second domain, the group's (`mdtc`): its
//! thresholds come from the group's file pages and headroom (`mdtc_calc_avail`), and the
//! task is throttled by whichever domain gives the lower `pos_ratio`.
//!
//! Simplifications (see docs/model-scope.md): counters are exact (no per-CPU
//! drift, so `wb_stat()` and `wb_stat_sum()` agree); tasks are never RT; the exited-task
//! leak counter (`dirty_throttle_leaks`) and `BDP_ASYNC` are not modelled; a cgroup wb
//! takes its bdi's min and max ratios whole (`wb_min_max_ratio` scales them by the wb's
//! share of the bdi's bandwidth when there are several); there is no foreign-inode
//! flushing (`mem_cgroup_flush_foreign`), as each file has one owner.

use super::flex_proportions::{FpropGlobal, FpropLocal, FPROP_FRAC_BASE};
use super::vmstat::VmStat;
use crate::config::{BdiConfig, VmSysctl};
use crate::engine::Clock;
use crate::metrics::trace::{DevT, TraceBuf, TraceEvent, TraceRecord};
use crate::metrics::ThrottleSample;
use crate::units::{pages_to_kbps, PAGE_SIZE};
use crate::Ns;

/// `RATELIMIT_CALC_SHIFT`: pos_ratio is in 1/1024.
pub(crate) const RATELIMIT_CALC_SHIFT: u32 = 10;
/// `BDI_RATIO_SCALE * 100`: bdi ratios are kept in parts per million.
pub(crate) const RATIO_PPM: u64 = 1_000_000;
/// `DIRTY_POLL_THRESH` (128 KiB) in pages.
pub(crate) const DIRTY_POLL_THRESH: u64 = 32;
/// `INIT_BW`: 100 MB/s in pages per second, the starting estimate of every new wb.
pub(crate) const INIT_BW: u64 = (100 << 20) / PAGE_SIZE;

pub(crate) fn ilog2(x: u64) -> u32 {
    63 - x.max(1).leading_zeros()
}

pub(crate) fn roundup_pow_of_two(x: u64) -> u64 {
    x.max(1).next_power_of_two()
}

/// `MAX_PAUSE` and `BANDWIDTH_INTERVAL`: HZ/5 jiffies (200 ms).
pub(crate) fn max_pause_jiffies(hz: u64) -> u64 {
    (hz / 5).max(1)
}

/// `struct wb_domain`: the global one, and one per memory cgroup (`memcg->cgwb_domain`).
#[derive(Clone, Debug, Default)]
pub(crate) struct WbDomain {
    /// The smoothed hard limit (`dom->dirty_limit`), pages.
    pub dirty_limit: u64,
    /// jiffies of the last `update_dirty_limit`.
    pub dirty_limit_tstamp: u64,
    /// Writeback completions, the denominator of every wb's share.
    pub completions: FpropGlobal,
    /// Sum of all bdis' `min_ratio`, ppm.
    pub bdi_min_ratio_sum: u64,
}

/// The mm side of a `struct bdi_writeback`: counters, bandwidth estimates and limits.
#[derive(Clone, Debug)]
pub(crate) struct WbState {
    pub name: DevT,
    /// `WB_RECLAIMABLE`: dirty pages of this wb.
    pub reclaimable: u64,
    /// `WB_WRITEBACK`.
    pub writeback: u64,
    /// `WB_DIRTIED` (cumulative).
    pub dirtied: u64,
    /// `WB_WRITTEN` (cumulative).
    pub written: u64,
    pub completions: FpropLocal,
    /// jiffies of the last bandwidth update.
    pub bw_time_stamp: u64,
    pub dirtied_stamp: u64,
    pub written_stamp: u64,
    /// Pages per second.
    pub write_bandwidth: u64,
    pub avg_write_bandwidth: u64,
    pub dirty_ratelimit: u64,
    pub balanced_dirty_ratelimit: u64,
    /// Sticky flag: make every writer call balance_dirty_pages every 8 pages.
    pub dirty_exceeded: bool,
    /// `bdi->last_bdp_sleep` (ns here): read by blk-wbt.
    pub last_bdp_sleep: Option<Ns>,
    /// Inodes that have pages under writeback (`wb->writeback_inodes`).
    pub writeback_inodes: u64,
    pub min_ratio_ppm: u64,
    pub max_ratio_ppm: u64,
    /// `bdi->max_prop_frac`, in 1/1024.
    pub max_prop_frac: u64,
    pub strict_limit: bool,
    /// The device (bdi) the wb writes to.
    pub dev: u16,
    /// cgroup writeback: the memory cgroup whose wb this is (`wb->memcg_css`); `None` for a
    /// bdi's root wb.
    pub memcg: Option<u16>,
    /// This wb's completions in its group's dirty domain (`wb->memcg_completions`).
    pub memcg_completions: FpropLocal,
    /// The trace's `cgroup_ino` of the wb's memory cgroup (1: the root).
    pub cgroup_ino: u64,
}

impl WbState {
    /// `wb_init` + the bdi sysfs knobs. `thresh` is the global threshold at the time the
    /// byte knobs are written (they are converted to ratios then, as the kernel does).
    pub(crate) fn new(name: DevT, bdi: &BdiConfig, thresh: u64, now_jiffies: u64) -> Self {
        let to_ppm = |bytes: u64| (bytes / PAGE_SIZE).saturating_mul(RATIO_PPM) / thresh.max(1);
        let max_ratio_ppm = bdi.max_bytes.map(to_ppm).unwrap_or(bdi.max_ratio_ppm).min(RATIO_PPM);
        let min_ratio_ppm = bdi.min_bytes.map(to_ppm).unwrap_or(bdi.min_ratio_ppm).min(max_ratio_ppm);
        WbState {
            name,
            reclaimable: 0,
            writeback: 0,
            dirtied: 0,
            written: 0,
            completions: FpropLocal::default(),
            bw_time_stamp: now_jiffies,
            dirtied_stamp: 0,
            written_stamp: 0,
            write_bandwidth: INIT_BW,
            avg_write_bandwidth: INIT_BW,
            dirty_ratelimit: INIT_BW,
            balanced_dirty_ratelimit: INIT_BW,
            dirty_exceeded: false,
            last_bdp_sleep: None,
            writeback_inodes: 0,
            min_ratio_ppm,
            max_ratio_ppm,
            max_prop_frac: FPROP_FRAC_BASE * max_ratio_ppm / RATIO_PPM,
            strict_limit: bdi.strict_limit,
            dev: 0,
            memcg: None,
            memcg_completions: FpropLocal::default(),
            cgroup_ino: 1,
        }
    }

    /// `__wb_writeout_add`: `n` pages finished writeback.
    pub(crate) fn writeout_add(&mut self, dom: &mut WbDomain, n: u64) {
        self.written += n;
        self.completions.add_max(&mut dom.completions, self.max_prop_frac, n);
    }

    /// The wb's completions in the domain a control is for (`dtc->wb_completions`).
    fn completions_for(&mut self, memcg_domain: bool) -> &mut FpropLocal {
        if memcg_domain {
            &mut self.memcg_completions
        } else {
            &mut self.completions
        }
    }
}

/// Each device's share of the global domain's completions before the run (`writeout_share`,
/// percent, one per device's root wb from the first), as a machine that has been writing
/// leaves them: a dirty limit's worth of completions counted, split by the shares. All zero
/// leaves the counters as booted. The aging timer still starts with the first real completion.
pub(crate) fn seed_writeout_shares(dom: &mut WbDomain, wbs: &mut [WbState], shares_pct: impl Iterator<Item = u32>) {
    let total = dom.dirty_limit.max(1);
    let mut any = false;
    for (wb, pct) in wbs.iter_mut().zip(shares_pct) {
        wb.completions.events = total * u64::from(pct.min(100)) / 100;
        any |= pct > 0;
    }
    if any {
        // What no device held went to devices outside the scenario.
        dom.completions.events = total;
    }
}

/// Per-task throttling state (`task_struct` fields).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskDirty {
    pub nr_dirtied: u64,
    pub nr_dirtied_pause: u64,
    /// jiffies; 0 = the task never paused.
    pub dirty_paused_when: u64,
    /// jiffies at entry of the current balance_dirty_pages call (`start_time`).
    pub bdp_start: u64,
    /// `pages_dirtied` argument of the current call.
    pub bdp_pages: u64,
    /// After the current sleep, run another loop iteration (hard-limit state).
    pub bdp_again: bool,
    /// The 2.6.3x loop's `dirty_exceeded` local: the last iteration's verdict, false before
    /// the first (so a call that free-runs at once clears the bdi's flag).
    pub bdp_exceeded: bool,
    /// CPU the task dirties from (for the per-CPU ratelimit valve).
    pub cpu: usize,
    /// I/O-issuing generations: pages the task's own writeback wrote in the last
    /// `Throttle::Writeback` (set by the machine before `resume`).
    pub bdp_written: u64,
    /// Pages written so far in the current call, and the call's `write_chunk`.
    pub pages_written: u64,
    pub write_chunk: u64,
    /// The current loop sleep of the 2.6.3x loop (1, 2, 4 ... HZ/10 jiffies).
    pub backoff: u64,
    /// Loop state of the I/O-issuing policies between `Writeback` and `resume`.
    pub bdp_step: u8,
}

impl Default for TaskDirty {
    fn default() -> Self {
        // kernel/fork.c: nr_dirtied_pause starts at 128 KiB worth of pages.
        TaskDirty {
            nr_dirtied: 0,
            nr_dirtied_pause: DIRTY_POLL_THRESH,
            dirty_paused_when: 0,
            bdp_start: 0,
            bdp_pages: 0,
            bdp_again: false,
            bdp_exceeded: false,
            cpu: 0,
            bdp_written: 0,
            pages_written: 0,
            write_chunk: 0,
            backoff: 0,
            bdp_step: 0,
        }
    }
}

/// `struct dirty_throttle_control`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DirtyThrottleControl {
    pub avail: u64,
    pub dirty: u64,
    pub thresh: u64,
    pub bg_thresh: u64,
    pub limit: u64,
    pub wb_dirty: u64,
    pub wb_thresh: u64,
    pub wb_bg_thresh: u64,
    pub pos_ratio: u64,
    pub freerun: bool,
    pub dirty_exceeded: bool,
    /// A memory cgroup's domain (`mdtc`) rather than the global one.
    pub memcg: bool,
}

/// `domain_dirty_limits` for the global domain: thresh and bg_thresh from the sysctls and
/// `dtc.avail`. The kernel recomputes these on every call; so does the model.
pub(crate) fn domain_dirty_limits(dtc: &mut DirtyThrottleControl, vm: &VmSysctl) {
    domain_dirty_limits_in(dtc, vm, None)
}

/// `domain_dirty_limits` for any domain. A memory cgroup's (`global_avail` given) cannot use
/// the byte settings as they are: they become ratios of the global dirtyable memory, in
/// 1/PAGE_SIZE units, applied to the group's own `avail`.
pub(crate) fn domain_dirty_limits_in(dtc: &mut DirtyThrottleControl, vm: &VmSysctl, global_avail: Option<u64>) {
    let avail = dtc.avail;
    let mut ratio = vm.dirty_ratio as u64 * PAGE_SIZE / 100;
    let mut bg_ratio = vm.dirty_background_ratio as u64 * PAGE_SIZE / 100;
    let (mut bytes, mut bg_bytes) = (vm.dirty_bytes, vm.dirty_background_bytes);
    if let Some(global) = global_avail {
        let global = global.max(1);
        if bytes > 0 {
            ratio = bytes.div_ceil(global).min(PAGE_SIZE);
        }
        if bg_bytes > 0 {
            bg_ratio = bg_bytes.div_ceil(global).min(PAGE_SIZE);
        }
        (bytes, bg_bytes) = (0, 0);
    }
    let mut thresh = if bytes > 0 {
        bytes.div_ceil(PAGE_SIZE)
    } else {
        div128(ratio as u128 * avail as u128, PAGE_SIZE as u128) as u64
    };
    let mut bg_thresh = if bg_bytes > 0 {
        bg_bytes.div_ceil(PAGE_SIZE)
    } else {
        div128(bg_ratio as u128 * avail as u128, PAGE_SIZE as u128) as u64
    };
    thresh = thresh.min(u32::MAX as u64);
    if bg_thresh >= thresh {
        bg_thresh = thresh / 2;
    }
    dtc.thresh = thresh;
    dtc.bg_thresh = bg_thresh;
}

/// `dirty_freerun_ceiling`.
pub(crate) fn dirty_freerun_ceiling(thresh: u64, bg_thresh: u64) -> u64 {
    (thresh + bg_thresh) / 2
}

/// `hard_dirty_limit`.
pub(crate) fn hard_dirty_limit(dom: &WbDomain, thresh: u64) -> u64 {
    thresh.max(dom.dirty_limit)
}

/// `wb_stat_error()`: the per-CPU counter error bound, used by the hard-limit loop exit.
pub(crate) fn wb_stat_error(ncpus: u32) -> u64 {
    let n = ncpus.max(1) as u64;
    n * 8 * (1 + ilog2(n) as u64)
}

/// `__wb_calc_thresh` (6.18): this wb's share of threshold `thresh` by its recent share of
/// completions, plus min_ratio, bumped for idle devices by (thresh − dirty)/8 (/100 under
/// strictlimit), then capped at max_ratio.
pub(crate) fn __wb_calc_thresh(dtc: &DirtyThrottleControl, dom: &WbDomain, wb: &mut WbState, thresh: u64) -> u64 {
    let (num, den) = wb.completions_for(dtc.memcg).fraction(&dom.completions);
    let share = div128(
        div128(
            thresh as u128 * (RATIO_PPM - dom.bdi_min_ratio_sum.min(RATIO_PPM)) as u128,
            RATIO_PPM as u128,
        ) * num as u128,
        den as u128,
    );
    let mut wb_thresh = share as u64 + thresh * wb.min_ratio_ppm / RATIO_PPM;
    if thresh > dtc.dirty {
        let bump = if wb.strict_limit {
            (thresh - dtc.dirty) / 100
        } else {
            (thresh - dtc.dirty) / 8
        };
        wb_thresh = wb_thresh.max(bump);
    }
    wb_thresh.min(div128(thresh as u128 * wb.max_ratio_ppm as u128, RATIO_PPM as u128) as u64)
}

/// `n / d` computed without overflow, in 64-bit arithmetic when both fit (as the kernel's
/// `div64_u64` does; the wider products here only guard huge memories): a 128-bit division is
/// a library call several times slower, on the throttling path of every write.
#[inline]
fn div128(n: u128, d: u128) -> u128 {
    if (n | d) >> 64 == 0 {
        ((n as u64) / (d as u64)) as u128
    } else {
        n / d
    }
}

/// `wb_dirty_limits`: wb_thresh, the scaled wb_bg_thresh and wb_dirty (incl. writeback).
pub(crate) fn wb_dirty_limits(dtc: &mut DirtyThrottleControl, dom: &WbDomain, wb: &mut WbState) {
    dtc.wb_thresh = __wb_calc_thresh(dtc, dom, wb, dtc.thresh);
    dtc.wb_bg_thresh = if dtc.thresh > 0 {
        div128(dtc.wb_thresh as u128 * dtc.bg_thresh as u128, dtc.thresh as u128) as u64
    } else {
        0
    };
    dtc.wb_dirty = wb.reclaimable + wb.writeback;
}

/// `pos_ratio_polynom`: the cubic global control line, 2.0 at freerun, 1.0 at the setpoint,
/// 0 at the limit.
///
/// The kernel does this in signed 64-bit arithmetic and builds with wrapping signed overflow;
/// far from the setpoint with a tiny `limit − setpoint` the cube overflows, so the products
/// wrap here too (instead of panicking in debug builds) before the clamp.
pub(crate) fn pos_ratio_polynom(setpoint: u64, dirty: u64, limit: u64) -> u64 {
    let x: i64 = (((setpoint as i64) - (dirty as i64)) << RATELIMIT_CALC_SHIFT) / (((limit as i64) - (setpoint as i64)) | 1);
    let mut pos = x;
    pos = pos.wrapping_mul(x) >> RATELIMIT_CALC_SHIFT;
    pos = pos.wrapping_mul(x) >> RATELIMIT_CALC_SHIFT;
    pos = pos.wrapping_add(1 << RATELIMIT_CALC_SHIFT);
    pos.clamp(0, 2 << RATELIMIT_CALC_SHIFT) as u64
}

/// `wb_position_ratio`: how far the dirty level is from where it should be, as a factor on
/// the wb's dirty_ratelimit. Sets `dtc.limit` and `dtc.pos_ratio`.
pub(crate) fn wb_position_ratio(dtc: &mut DirtyThrottleControl, dom: &WbDomain, wb: &WbState) {
    let write_bw = wb.avg_write_bandwidth;
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    let limit = hard_dirty_limit(dom, dtc.thresh);
    dtc.limit = limit;
    dtc.pos_ratio = 0;
    if dtc.dirty >= limit {
        return;
    }
    let setpoint = (freerun + limit) / 2;
    let mut pos_ratio = pos_ratio_polynom(setpoint, dtc.dirty, limit);

    if wb.strict_limit {
        if dtc.wb_dirty >= dtc.wb_thresh {
            return;
        }
        let wb_setpoint = dirty_freerun_ceiling(dtc.wb_thresh, dtc.wb_bg_thresh);
        if wb_setpoint == 0 || wb_setpoint == dtc.wb_thresh {
            return;
        }
        let wb_pos_ratio = pos_ratio_polynom(wb_setpoint, dtc.wb_dirty, dtc.wb_thresh);
        dtc.pos_ratio = pos_ratio.min(wb_pos_ratio);
        return;
    }

    // The wb control line: linear around the wb's scaled setpoint, slope set by 8 s of
    // write bandwidth in the single-device case, floor at 1/4.
    let wb_thresh = dtc.wb_thresh.min(dtc.thresh);
    let x = div128((wb_thresh as u128) << 16, (dtc.thresh | 1) as u128);
    let wb_setpoint = ((setpoint as u128 * x) >> 16) as u64;
    let span = (((dtc.thresh - wb_thresh + 8 * write_bw) as u128 * x) >> 16) as u64;
    let x_intercept = wb_setpoint + span;
    if dtc.wb_dirty < x_intercept - span / 4 {
        pos_ratio = div128(
            pos_ratio as u128 * (x_intercept - dtc.wb_dirty) as u128,
            ((x_intercept - wb_setpoint) | 1) as u128,
        ) as u64;
    } else {
        pos_ratio /= 4;
    }
    // The wb reserve area: keep the device from running dry.
    let x_intercept = wb_thresh / 2;
    if dtc.wb_dirty < x_intercept {
        if dtc.wb_dirty > x_intercept / 8 {
            pos_ratio = div128(pos_ratio as u128 * x_intercept as u128, dtc.wb_dirty as u128) as u64;
        } else {
            pos_ratio *= 8;
        }
    }
    dtc.pos_ratio = pos_ratio;
}

/// `dirty_poll_interval`: in freerun, poll again after about sqrt(thresh − dirty) pages.
pub(crate) fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << (ilog2(thresh - dirty) >> 1)
    } else {
        1
    }
}

/// `wb_max_pause`: about 1/8 of the time to write out wb_dirty, in [1, MAX_PAUSE] jiffies.
pub(crate) fn wb_max_pause(wb: &WbState, wb_dirty: u64, hz: u64) -> u64 {
    let bw = wb.avg_write_bandwidth;
    let t = wb_dirty / (1 + bw / roundup_pow_of_two(1 + hz / 8)) + 1;
    t.min(max_pause_jiffies(hz))
}

/// `wb_min_pause`: the shortest pause worth sleeping, and the pages to dirty before the next
/// call (`nr_dirtied_pause`). Returns (min_pause, nr_dirtied_pause).
///
/// As in the kernel, the concurrency estimate (`hi − lo`) reads both rates from the wb
/// (`avg_write_bandwidth`, `dirty_ratelimit`); the `dirty_ratelimit` argument only sizes the
/// page count. `balance_dirty_pages` passes the wb's own rate, so the two agree there.
pub(crate) fn wb_min_pause(wb: &WbState, max_pause: u64, task_ratelimit: u64, dirty_ratelimit: u64, hz: u64) -> (u64, u64) {
    let hi = ilog2(wb.avg_write_bandwidth) as i64;
    let lo = ilog2(wb.dirty_ratelimit) as i64;
    let mut t = (hz / 100).max(1) as i64;
    // Concurrent dirtiers (bw >> ratelimit) get longer pauses: fewer, larger steps.
    if hi > lo {
        t += (hi - lo) * (10 * hz as i64) / 1024;
    }
    let mut t = (t as u64).min(1 + max_pause / 2);
    let hz_pow = roundup_pow_of_two(hz);
    let mut pages = dirty_ratelimit * t / hz_pow;
    if pages < DIRTY_POLL_THRESH {
        t = max_pause;
        pages = dirty_ratelimit * t / hz_pow;
        if pages > DIRTY_POLL_THRESH {
            pages = DIRTY_POLL_THRESH;
            t = hz * DIRTY_POLL_THRESH / dirty_ratelimit.max(1);
        }
    }
    let pause = hz * pages / (task_ratelimit + 1);
    if pause > max_pause {
        t = max_pause;
        pages = task_ratelimit * t / hz_pow;
    }
    let min_pause = if pages >= DIRTY_POLL_THRESH { 1 + t / 2 } else { t };
    (min_pause, pages)
}

/// `update_dirty_limit` via `domain_update_dirty_limit`: follow thresh up at once, down by
/// 1/32 of the gap per 200 ms, never below the dirty count.
pub(crate) fn domain_update_dirty_limit(dom: &mut WbDomain, dtc: &DirtyThrottleControl, now: u64, hz: u64) {
    if now < dom.dirty_limit_tstamp + max_pause_jiffies(hz) {
        return;
    }
    let mut limit = dom.dirty_limit;
    if limit < dtc.thresh {
        limit = dtc.thresh;
    } else {
        let target = dtc.thresh.max(dtc.dirty);
        if limit > target {
            limit -= (limit - target) >> 5;
        }
    }
    dom.dirty_limit = limit;
    dom.dirty_limit_tstamp = now;
}

/// `wb_update_write_bandwidth`: EMA of completed writeout over a 3 s (power of two) period,
/// and the lagging `avg_write_bandwidth`.
pub(crate) fn wb_update_write_bandwidth(wb: &mut WbState, elapsed: u64, written: u64, hz: u64) {
    let period = roundup_pow_of_two(3 * hz);
    let mut avg = wb.avg_write_bandwidth;
    let old = wb.write_bandwidth;
    let mut bw = (written - written.min(wb.written_stamp)) * hz;
    if elapsed > period {
        bw /= elapsed;
        avg = bw;
    } else {
        bw += old * (period - elapsed);
        bw >>= ilog2(period);
        if avg > old && old >= bw {
            avg -= (avg - old) >> 3;
        }
        if avg < old && old <= bw {
            avg += (old - avg) >> 3;
        }
    }
    wb.write_bandwidth = bw;
    wb.avg_write_bandwidth = avg.max(1);
}

/// Inputs and outputs of one `wb_update_dirty_ratelimit` for the trace.
pub(crate) struct RatelimitUpdate {
    pub dirty_rate: u64,
    pub task_ratelimit: u64,
}

/// `wb_update_dirty_ratelimit`: move the wb's base rate toward write_bw/N, conservatively:
/// only when the position error and the rate estimate agree on the direction, by the most
/// cautious candidate, in steps that shrink sharply near the target.
pub(crate) fn wb_update_dirty_ratelimit(
    dtc: &mut DirtyThrottleControl,
    dom: &WbDomain,
    wb: &mut WbState,
    dirtied: u64,
    elapsed: u64,
    hz: u64,
) -> RatelimitUpdate {
    let mut dirty = dtc.dirty;
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    // The setpoint follows the dirty_limit that domain_update_dirty_limit has just moved, but
    // dtc.limit keeps the value wb_position_ratio used: that is what the balance_dirty_pages
    // trace prints as limit and setpoint.
    let limit = hard_dirty_limit(dom, dtc.thresh);
    let mut setpoint = (freerun + limit) / 2;
    let write_bw = wb.avg_write_bandwidth;
    let dirty_ratelimit = wb.dirty_ratelimit;

    let dirty_rate = (dirtied - dirtied.min(wb.dirtied_stamp)) * hz / elapsed.max(1);
    let task_ratelimit = ((dirty_ratelimit as u128 * dtc.pos_ratio as u128) >> RATELIMIT_CALC_SHIFT) as u64 + 1;
    let balanced = div128(task_ratelimit as u128 * write_bw as u128, (dirty_rate | 1) as u128).min(write_bw as u128) as u64;

    if wb.strict_limit {
        dirty = dtc.wb_dirty;
        setpoint = (dtc.wb_thresh + dtc.wb_bg_thresh) / 2;
    }
    step_dirty_ratelimit(wb, dirty, setpoint, balanced, task_ratelimit);
    RatelimitUpdate {
        dirty_rate,
        task_ratelimit,
    }
}

/// The step shared by 3.2's `bdi_update_dirty_ratelimit` and today's
/// `wb_update_dirty_ratelimit`: move `dirty_ratelimit` toward `balanced` only when the
/// position (`dirty` against `setpoint`) and the rate estimates agree, by the most cautious
/// candidate, the step shrinking sharply near the target; then remember `balanced`.
pub(crate) fn step_dirty_ratelimit(wb: &mut WbState, dirty: u64, setpoint: u64, balanced: u64, task_ratelimit: u64) {
    let mut dirty_ratelimit = wb.dirty_ratelimit;
    let mut step = 0;
    if dirty < setpoint {
        let x = wb.balanced_dirty_ratelimit.min(balanced).min(task_ratelimit);
        if dirty_ratelimit < x {
            step = x - dirty_ratelimit;
        }
    } else {
        let x = wb.balanced_dirty_ratelimit.max(balanced).max(task_ratelimit);
        if dirty_ratelimit > x {
            step = dirty_ratelimit - x;
        }
    }
    // `step >>= dirty_ratelimit / (2 * step + 1)`: a shift of 64 or more leaves nothing.
    let shift = dirty_ratelimit / (2 * step + 1);
    step = if shift < 64 { (step >> shift).div_ceil(8) } else { 0 };
    if dirty_ratelimit < balanced {
        dirty_ratelimit += step;
    } else {
        dirty_ratelimit = dirty_ratelimit.saturating_sub(step);
    }
    wb.dirty_ratelimit = dirty_ratelimit.max(1);
    wb.balanced_dirty_ratelimit = balanced;
}

/// Everything the throttling code may read and change besides the task itself.
pub(crate) struct ThrottleCx<'a> {
    pub clock: Clock,
    pub now: Ns,
    pub vm: &'a VmStat,
    pub sysctl: &'a VmSysctl,
    pub dom: &'a mut WbDomain,
    pub wb: &'a mut WbState,
    pub ncpus: u32,
    /// `bdp_ratelimits` per CPU.
    pub bdp_ratelimits: &'a mut [u64],
    pub ratelimit_pages: u64,
    /// `writeback_in_progress(wb)`: the flusher is running.
    pub writeback_in_progress: bool,
    pub out: &'a mut ThrottleOut,
    /// The task calling, and the index of its wb.
    pub tid: u32,
    pub wb_index: usize,
    /// The wb's memory cgroup domain, with cgroup writeback.
    pub memcg: Option<MemcgCx<'a>>,
}

/// Side effects for the machine to carry out, and the run's trace, which the throttling code
/// records into directly (stamped with who fires it, where and when: set by the caller).
#[derive(Default)]
pub(crate) struct ThrottleOut {
    /// `wb_start_background_writeback` was called.
    pub kick_background: bool,
    /// Record trace events.
    pub trace_enabled: bool,
    pub trace: TraceBuf,
    /// (time, `RunResult::comms` index, CPU) of the events emitted next.
    pub stamp: (crate::Ns, u32, u16),
}

impl ThrottleOut {
    /// Record `ev` as fired at `stamp`.
    #[inline]
    pub(crate) fn emit(&mut self, ev: TraceEvent) {
        let (t_ns, who, cpu) = self.stamp;
        self.trace.push(TraceRecord { t_ns, who, cpu, ev });
    }
}

/// What the dirtying task does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Throttle {
    /// Go on dirtying.
    Proceed,
    /// Sleep this many jiffies (`io_schedule_timeout`), then call `resume`.
    Sleep(u64),
    /// `writeback_inodes` on the task's bdi in the task's own context, up to this many pages
    /// (I/O-issuing generations). Submitting the requests may block the task in request
    /// allocation. Then `resume` is called with [`TaskDirty::bdp_written`] set to the pages
    /// written.
    Writeback(u64),
    /// `congestion_wait(WRITE, jiffies)`: sleep until some queue frees a write request below
    /// its congestion-off level, or the timeout; then `resume`.
    CongestionWait(u64),
    /// 2.4 `wait_for_some_buffers`: sleep until the oldest write in flight on the task's
    /// device completes (at once if none is in flight), then `resume`.
    WaitWrite,
}

/// One generation's dirty-throttling policy: what a task does before it dirties a chunk.
pub(crate) trait DirtyThrottle {
    /// `balance_dirty_pages_ratelimited`: called before each chunk is dirtied.
    fn ratelimited(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle;
    /// The task's throttle sleep (or its own writeback) ended: finish or continue the loop.
    fn resume(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle;
    /// Pages the task may dirty before `ratelimited` must look again. The kernels before
    /// large folios checked after every page; the model cuts a write into chunks that end
    /// where such a check would call `balance_dirty_pages`. 6.x checks per folio: no limit.
    fn chunk_limit(&self, _wb: &WbState, _bdp_ratelimits: &[u64], _task: &TaskDirty) -> u64 {
        u64::MAX
    }
    /// Whether `ratelimited` runs right after each chunk is dirtied as well (every kernel
    /// before large folios checked after each page; 6.x checks before each folio).
    fn gate_after_dirtying(&self) -> bool {
        false
    }
    /// Writeback of `pages` pages of wb `wb` completed (`__bdi_writeout_inc`). The 6.x
    /// policy's proportions live in the wb itself (`WbState::writeout_add`).
    fn writeout(&mut self, _wb: usize, _pages: u64) {}
    /// Task `tid` newly dirtied `pages` pages (`task_dirty_inc`).
    fn dirtied(&mut self, _tid: u32, _pages: u64) {}
    /// Whether one whole `balance_dirty_pages` call (its own writeback and waits included)
    /// is one pause sample, as for the I/O-issuing generations, rather than each sleep.
    fn pause_per_call(&self) -> bool {
        false
    }
    /// The generation's own (background, dirty, per-device) thresholds for `throttle.csv`,
    /// when they are not the IO-less ones (`None`: the sample's 6.x quantities stand).
    /// `wb_thresh` is `None` where the generation had no per-device threshold.
    fn era_limits(
        &mut self,
        _vm: &VmStat,
        _sysctl: &VmSysctl,
        _dom: &WbDomain,
        _wb: &WbState,
        _wb_index: usize,
    ) -> Option<crate::metrics::EraLimits> {
        None
    }
}

/// The 6.x policy: IO-less, bandwidth-based pauses with two control lines.
#[derive(Default)]
pub(crate) struct Modern;

impl DirtyThrottle for Modern {
    fn ratelimited(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        balance_dirty_pages_ratelimited(cx, task)
    }

    fn resume(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        if task.bdp_again {
            balance_dirty_pages(cx, task)
        } else {
            Throttle::Proceed
        }
    }
}

/// `balance_dirty_pages_ratelimited_flags`: the cheap gate in front of every chunk.
pub(crate) fn balance_dirty_pages_ratelimited(cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
    if ratelimit_gate(cx, task) {
        return balance_dirty_pages(cx, task);
    }
    Throttle::Proceed
}

/// The gate of the IO-less kernels (3.2 on): true, with the call's start and pages recorded,
/// once the task has dirtied `nr_dirtied_pause` pages (32 KiB worth while the wb is over its
/// limit), or when its CPU's count reaches `ratelimit_pages`.
pub(crate) fn ratelimit_gate(cx: &mut ThrottleCx, task: &mut TaskDirty) -> bool {
    let mut ratelimit = task.nr_dirtied_pause;
    if cx.wb.dirty_exceeded {
        ratelimit = ratelimit.min(32 >> (crate::units::PAGE_SHIFT - 10));
    }
    let cpu = task.cpu.min(cx.bdp_ratelimits.len().saturating_sub(1));
    if let Some(p) = cx.bdp_ratelimits.get_mut(cpu) {
        if task.nr_dirtied >= ratelimit {
            *p = 0;
        } else if *p >= cx.ratelimit_pages {
            *p = 0;
            ratelimit = 0;
        }
    }
    if task.nr_dirtied >= ratelimit {
        task.bdp_start = cx.clock.jiffies(cx.now);
        task.bdp_pages = task.nr_dirtied;
        return true;
    }
    false
}

/// The global dirty state for the current instant, and the `global_dirty_state` trace.
pub(crate) fn global_dtc(cx_vm: &VmStat, sysctl: &VmSysctl, dom: &WbDomain, out: &mut ThrottleOut) -> DirtyThrottleControl {
    let mut dtc = DirtyThrottleControl {
        avail: cx_vm.dirtyable(),
        dirty: cx_vm.dirty_level(),
        ..Default::default()
    };
    domain_dirty_limits(&mut dtc, sysctl);
    if out.trace_enabled {
        out.emit(TraceEvent::GlobalDirtyState {
            nr_dirty: cx_vm.file_dirty(),
            nr_writeback: cx_vm.nr_writeback,
            background_thresh: dtc.bg_thresh,
            dirty_thresh: dtc.thresh,
            dirty_limit: dom.dirty_limit,
            nr_dirtied: cx_vm.nr_dirtied,
            nr_written: cx_vm.nr_written,
        });
    }
    dtc
}

/// A memory cgroup's dirty domain as `balance_dirty_pages` sees it: the domain, and the
/// group's page counts (`mem_cgroup_wb_stats`).
pub(crate) struct MemcgCx<'a> {
    pub dom: &'a mut WbDomain,
    pub stats: MemcgWbStats,
}

/// `__wb_update_bandwidth`: refresh the rate estimates of a wb. With `update_ratelimit`
/// (only from a throttled task) also each domain's dirty_limit and the wb's dirty_ratelimit,
/// once per domain: the global one, then the memory cgroup's (`mdtc`) if there is one.
#[allow(clippy::too_many_arguments)]
pub(crate) fn __wb_update_bandwidth(
    gdtc: &mut DirtyThrottleControl,
    dom: &mut WbDomain,
    mdtc: Option<(&mut DirtyThrottleControl, &mut WbDomain)>,
    wb: &mut WbState,
    now: u64,
    hz: u64,
    update_ratelimit: bool,
    out: &mut ThrottleOut,
) {
    let elapsed = now.saturating_sub(wb.bw_time_stamp).max(1);
    let dirtied = wb.dirtied;
    let written = wb.written;
    if update_ratelimit {
        let old_bw = wb.write_bandwidth;
        let old_avg = wb.avg_write_bandwidth;
        let mut update = |dtc: &mut DirtyThrottleControl, dom: &mut WbDomain, wb: &mut WbState| {
            domain_update_dirty_limit(dom, dtc, now, hz);
            let u = wb_update_dirty_ratelimit(dtc, dom, wb, dirtied, elapsed, hz);
            if out.trace_enabled {
                out.emit(TraceEvent::BdiDirtyRatelimit {
                    bdi: wb.name,
                    write_bw: pages_to_kbps(old_bw),
                    avg_write_bw: pages_to_kbps(old_avg),
                    dirty_rate: pages_to_kbps(u.dirty_rate),
                    dirty_ratelimit: pages_to_kbps(wb.dirty_ratelimit),
                    task_ratelimit: pages_to_kbps(u.task_ratelimit),
                    balanced_dirty_ratelimit: pages_to_kbps(wb.balanced_dirty_ratelimit),
                    cgroup_ino: wb.cgroup_ino as u32,
                });
            }
        };
        update(gdtc, dom, wb);
        if let Some((mdtc, mdom)) = mdtc {
            update(mdtc, mdom, wb);
        }
    }
    wb_update_write_bandwidth(wb, elapsed, written, hz);
    wb.dirtied_stamp = dirtied;
    wb.written_stamp = written;
    wb.bw_time_stamp = now;
}

/// `wb_update_bandwidth`: the write-bandwidth-only update (end of `do_writepages`, and the
/// delayed work after an inode's writeback ends).
pub(crate) fn wb_update_bandwidth(dom: &mut WbDomain, wb: &mut WbState, now: u64, hz: u64) {
    let mut dtc = DirtyThrottleControl::default();
    let mut out = ThrottleOut::default();
    __wb_update_bandwidth(&mut dtc, dom, None, wb, now, hz, false, &mut out);
}

/// `wb_bandwidth_estimate_start`: after more than a second of idleness, restart the
/// measurement interval so idle time is not averaged in.
pub(crate) fn wb_bandwidth_estimate_start(wb: &mut WbState, now: u64, hz: u64) {
    if now > wb.bw_time_stamp + hz && wb.writeback_inodes == 0 {
        wb.dirtied_stamp = wb.dirtied;
        wb.written_stamp = wb.written;
        wb.bw_time_stamp = now;
    }
}

/// What `mem_cgroup_wb_stats` reports for a wb's group, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MemcgWbStats {
    pub filepages: u64,
    pub headroom: u64,
    pub dirty: u64,
    pub writeback: u64,
}

/// `mdtc_calc_avail`: the memory a group's dirty domain may grow into: its file pages plus
/// the room left below its limits, but no more than the clean memory outside the group.
pub(crate) fn mdtc_calc_avail(filepages: u64, headroom: u64, mdtc_dirty: u64, global_avail: u64, global_dirty: u64) -> u64 {
    let clean = filepages - filepages.min(mdtc_dirty);
    let global_clean = global_avail - global_avail.min(global_dirty);
    let other_clean = global_clean - global_clean.min(clean);
    filepages + headroom.min(other_clean)
}

/// A memory cgroup's dirty control for the instant (`balance_domain_limits` for an `mdtc`):
/// avail from the group's pages and headroom against the global control's, its thresholds,
/// and whether it is under its freerun ceiling.
pub(crate) fn memcg_dtc(m: &MemcgWbStats, gdtc: &DirtyThrottleControl, sysctl: &VmSysctl) -> DirtyThrottleControl {
    let mut mdtc = DirtyThrottleControl {
        dirty: m.dirty + m.writeback,
        memcg: true,
        ..Default::default()
    };
    mdtc.avail = mdtc_calc_avail(m.filepages, m.headroom, mdtc.dirty, gdtc.avail, gdtc.dirty);
    domain_dirty_limits_in(&mut mdtc, sysctl, Some(gdtc.avail));
    mdtc
}

/// `balance_wb_limits` for one domain: the wb's share of it (already known under
/// strictlimit, where it decided freerun), whether the wb exceeds it, and the position ratio.
/// (Only a `PF_LOCAL_THROTTLE` task, which the model has none of, may run free here.)
fn balance_wb_limits(dtc: &mut DirtyThrottleControl, dom: &WbDomain, wb: &mut WbState, strict: bool) {
    dtc.freerun = false;
    if !strict {
        wb_dirty_limits(dtc, dom, wb);
    }
    dtc.dirty_exceeded = dtc.wb_dirty > dtc.wb_thresh && (dtc.dirty > dtc.thresh || strict);
    wb_position_ratio(dtc, dom, wb);
}

/// `domain_poll_intv`: pages until the next check when the domain runs free.
fn domain_poll_intv(dtc: &DirtyThrottleControl, strict: bool) -> u64 {
    if strict {
        dirty_poll_interval(dtc.wb_dirty, dtc.wb_thresh)
    } else {
        dirty_poll_interval(dtc.dirty, dtc.thresh)
    }
}

/// One iteration of `balance_dirty_pages`: decide whether and how long the task sleeps.
pub(crate) fn balance_dirty_pages(cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
    let hz = cx.clock.hz;
    let jiffies = cx.clock.jiffies(cx.now);
    let mut now = jiffies;
    let pages_dirtied = task.bdp_pages;
    task.bdp_again = false;
    let strict = cx.wb.strict_limit;

    let nr_dirty = cx.vm.file_dirty();
    let mut gdtc = global_dtc(cx.vm, cx.sysctl, cx.dom, cx.out);
    let mut mdtc = cx.memcg.as_ref().map(|m| memcg_dtc(&m.stats, &gdtc, cx.sysctl));
    if strict {
        wb_dirty_limits(&mut gdtc, cx.dom, cx.wb);
        gdtc.freerun = gdtc.wb_dirty <= dirty_freerun_ceiling(gdtc.wb_thresh, gdtc.wb_bg_thresh);
        if let (Some(m), Some(mc)) = (mdtc.as_mut(), cx.memcg.as_ref()) {
            wb_dirty_limits(m, mc.dom, cx.wb);
            m.freerun = m.wb_dirty <= dirty_freerun_ceiling(m.wb_thresh, m.wb_bg_thresh);
        }
    } else {
        gdtc.freerun = gdtc.dirty <= dirty_freerun_ceiling(gdtc.thresh, gdtc.bg_thresh);
        if let Some(m) = mdtc.as_mut() {
            m.freerun = m.dirty <= dirty_freerun_ceiling(m.thresh, m.bg_thresh);
        }
    }
    if nr_dirty > gdtc.bg_thresh && !cx.writeback_in_progress {
        cx.out.kick_background = true;
    }
    if gdtc.freerun && mdtc.is_none_or(|m| m.freerun) {
        task.dirty_paused_when = now;
        task.nr_dirtied = 0;
        task.nr_dirtied_pause = domain_poll_intv(&gdtc, strict).min(mdtc.map_or(u64::MAX, |m| domain_poll_intv(&m, strict)));
        return Throttle::Proceed;
    }
    // Throttled region.
    if !cx.writeback_in_progress {
        cx.out.kick_background = true;
    }
    balance_wb_limits(&mut gdtc, cx.dom, cx.wb, strict);
    let mut use_memcg = false;
    if let (Some(m), Some(mc)) = (mdtc.as_mut(), cx.memcg.as_ref()) {
        balance_wb_limits(m, mc.dom, cx.wb, strict);
        use_memcg = m.pos_ratio < gdtc.pos_ratio;
    }
    cx.wb.dirty_exceeded = gdtc.dirty_exceeded || mdtc.is_some_and(|m| m.dirty_exceeded);

    if jiffies > cx.wb.bw_time_stamp + max_pause_jiffies(hz) {
        let mdtc_dom = match (mdtc.as_mut(), cx.memcg.as_mut()) {
            (Some(m), Some(mc)) => Some((m, &mut *mc.dom)),
            _ => None,
        };
        __wb_update_bandwidth(&mut gdtc, cx.dom, mdtc_dom, cx.wb, jiffies, hz, true, cx.out);
    }
    let sdtc = if use_memcg { mdtc.expect("memcg") } else { gdtc };

    let dirty_ratelimit = cx.wb.dirty_ratelimit;
    let task_ratelimit = ((dirty_ratelimit as u128 * sdtc.pos_ratio as u128) >> RATELIMIT_CALC_SHIFT) as u64;
    let max_pause = wb_max_pause(cx.wb, sdtc.wb_dirty, hz);
    let (min_pause, nr_dirtied_pause) = wb_min_pause(cx.wb, max_pause, task_ratelimit, dirty_ratelimit, hz);

    let (period, pause): (i64, i64);
    if let Some(per) = (hz * pages_dirtied).checked_div(task_ratelimit) {
        period = per as i64;
        let mut p = period;
        if task.dirty_paused_when != 0 {
            p -= now as i64 - task.dirty_paused_when as i64;
        }
        if p < min_pause as i64 {
            trace_bdp(
                cx,
                task,
                &sdtc,
                dirty_ratelimit,
                task_ratelimit,
                pages_dirtied,
                period,
                p.min(0),
                jiffies,
            );
            if p < -(hz as i64) {
                task.dirty_paused_when = now;
                task.nr_dirtied = 0;
            } else if period > 0 {
                task.dirty_paused_when += period as u64;
                task.nr_dirtied = 0;
            } else if task.nr_dirtied_pause <= pages_dirtied {
                task.nr_dirtied_pause += pages_dirtied;
            }
            return Throttle::Proceed;
        }
        if p > max_pause as i64 {
            now += (p as u64 - max_pause).min(max_pause);
            p = max_pause as i64;
        }
        pause = p;
    } else {
        // Hard limit (task_ratelimit 0): sleep the maximum and look again.
        period = max_pause as i64;
        pause = max_pause as i64;
    }
    trace_bdp(
        cx,
        task,
        &sdtc,
        dirty_ratelimit,
        task_ratelimit,
        pages_dirtied,
        period,
        pause,
        jiffies,
    );
    cx.wb.last_bdp_sleep = Some(cx.now);
    task.dirty_paused_when = now + pause as u64;
    task.nr_dirtied = 0;
    task.nr_dirtied_pause = nr_dirtied_pause;
    // After a rate-limited sleep the call returns; in the hard-limit state it loops until
    // the wb is nearly clean or the level drops.
    task.bdp_again = task_ratelimit == 0 && sdtc.wb_dirty > wb_stat_error(cx.ncpus);
    Throttle::Sleep(pause as u64)
}

#[allow(clippy::too_many_arguments)]
fn trace_bdp(
    cx: &mut ThrottleCx,
    task: &TaskDirty,
    dtc: &DirtyThrottleControl,
    dirty_ratelimit: u64,
    task_ratelimit: u64,
    dirtied: u64,
    period: i64,
    pause: i64,
    jiffies: u64,
) {
    if !cx.out.trace_enabled {
        return;
    }
    let c = cx.clock;
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    let setpoint = (dtc.limit + freerun) / 2;
    let think = if task.dirty_paused_when == 0 {
        0
    } else {
        c.jiffies_to_msecs(jiffies as i64 - task.dirty_paused_when as i64)
    };
    cx.out.emit(TraceEvent::BalanceDirtyPages {
        bdi: cx.wb.name,
        limit: dtc.limit,
        setpoint,
        dirty: dtc.dirty,
        wb_setpoint: div128(setpoint as u128 * dtc.wb_thresh as u128, (dtc.thresh + 1) as u128) as u64,
        wb_dirty: dtc.wb_dirty,
        dirty_ratelimit: pages_to_kbps(dirty_ratelimit),
        task_ratelimit: pages_to_kbps(task_ratelimit),
        dirtied: dirtied as u32,
        dirtied_pause: task.nr_dirtied_pause as u32,
        cgroup_ino: cx.wb.cgroup_ino as u32,
        paused: c.jiffies_to_msecs(jiffies as i64 - task.bdp_start as i64) as u64,
        pause: c.jiffies_to_msecs(pause),
        period: c.jiffies_to_msecs(period) as u64,
        think,
    });
}

/// `wb_over_bg_thresh`: should background writeback of this wb go on? Uses dirty pages
/// only (not writeback), globally and for the wb's share of bg_thresh; for a cgroup wb the
/// same against its group's domain (`memcg`: the domain and the group's page counts).
pub(crate) fn wb_over_bg_thresh(
    vm: &VmStat,
    sysctl: &VmSysctl,
    dom: &WbDomain,
    wb: &mut WbState,
    memcg: Option<(&WbDomain, &MemcgWbStats)>,
    out: &mut ThrottleOut,
) -> bool {
    let mut dtc = global_dtc(vm, sysctl, dom, out);
    dtc.dirty = vm.file_dirty();
    if dtc.dirty > dtc.bg_thresh {
        return true;
    }
    let wb_bg_thresh = __wb_calc_thresh(&dtc, dom, wb, dtc.bg_thresh);
    if wb.reclaimable > wb_bg_thresh {
        return true;
    }
    if let Some((mdom, stats)) = memcg {
        let no_writeback = MemcgWbStats { writeback: 0, ..*stats };
        let mut mdtc = memcg_dtc(&no_writeback, &dtc, sysctl);
        mdtc.dirty = stats.dirty;
        if mdtc.dirty > mdtc.bg_thresh {
            return true;
        }
        mdtc.memcg = true;
        if wb.reclaimable > __wb_calc_thresh(&mdtc, mdom, wb, mdtc.bg_thresh) {
            return true;
        }
    }
    false
}

/// `writeback_chunk_size` for WB_SYNC_NONE work: about half a second of bandwidth, at
/// least 4 MiB, in multiples of 4 MiB.
pub(crate) fn writeback_chunk_size(wb: &WbState, dom: &WbDomain, work_nr_pages: i64) -> u64 {
    let mut pages = (wb.avg_write_bandwidth / 2).min(dom.dirty_limit / 8);
    pages = pages.min(work_nr_pages.max(0) as u64);
    (pages + 1024) / 1024 * 1024
}

/// `writeback_set_ratelimit`: reset dirty_limit to thresh and size the per-CPU valve.
pub(crate) fn writeback_set_ratelimit(dom: &mut WbDomain, vm: &VmStat, sysctl: &VmSysctl, ncpus: u32) -> u64 {
    let mut dtc = DirtyThrottleControl {
        avail: vm.dirtyable(),
        ..Default::default()
    };
    domain_dirty_limits(&mut dtc, sysctl);
    dom.dirty_limit = dtc.thresh;
    (dtc.thresh / (ncpus.max(1) as u64 * 32)).max(16)
}

/// The throttling state of a wb at this instant, for `throttle.csv`.
pub(crate) fn throttle_sample(vm: &VmStat, sysctl: &VmSysctl, dom: &WbDomain, wb: &mut WbState, device: u16, t_ns: Ns) -> ThrottleSample {
    let mut dtc = DirtyThrottleControl {
        avail: vm.dirtyable(),
        dirty: vm.dirty_level(),
        ..Default::default()
    };
    domain_dirty_limits(&mut dtc, sysctl);
    wb_dirty_limits(&mut dtc, dom, wb);
    wb_position_ratio(&mut dtc, dom, wb);
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    ThrottleSample {
        t_ns,
        device,
        dirty: dtc.dirty,
        wb_dirty: dtc.wb_dirty,
        thresh: dtc.thresh,
        bg_thresh: dtc.bg_thresh,
        limit: dtc.limit,
        setpoint: (freerun + dtc.limit) / 2,
        freerun,
        wb_thresh: dtc.wb_thresh,
        write_bw: wb.write_bandwidth,
        avg_write_bw: wb.avg_write_bandwidth,
        dirty_ratelimit: wb.dirty_ratelimit,
        balanced_dirty_ratelimit: wb.balanced_dirty_ratelimit,
        dirty_rate: 0,
        pos_ratio: dtc.pos_ratio,
    }
}

#[cfg(test)]
mod tests {
    //! Hand-computed values from the 6.18 formulas (avail 6,093,620 pages, HZ 250,
    //! ratios 20/10) and the worked examples of §3.6 and §4.3.
    use super::*;

    fn wb() -> WbState {
        WbState::new(DevT { major: 8, minor: 0 }, &BdiConfig::default(), 1_000_000, 1)
    }

    #[test]
    fn domain_limits_use_per_page_size_ratios() {
        let mut dtc = DirtyThrottleControl {
            avail: 6_093_620,
            ..Default::default()
        };
        domain_dirty_limits(&mut dtc, &VmSysctl::default());
        assert_eq!(dtc.thresh, 1_218_426);
        assert_eq!(dtc.bg_thresh, 608_469);
        assert_eq!(dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh), 913_447);
        // Bytes knobs win; bg >= thresh is halved.
        let s = VmSysctl {
            dirty_bytes: 256 << 20,
            dirty_background_bytes: 512 << 20,
            ..Default::default()
        };
        domain_dirty_limits(&mut dtc, &s);
        assert_eq!((dtc.thresh, dtc.bg_thresh), (65_536, 32_768));
    }

    #[test]
    fn global_control_line_matches_appendix_a() {
        let (setpoint, limit) = (1_065_936, 1_218_426);
        assert_eq!(pos_ratio_polynom(setpoint, 913_447, limit), 2045);
        assert_eq!(pos_ratio_polynom(setpoint, 989_691, limit), 1151);
        assert_eq!(pos_ratio_polynom(setpoint, setpoint, limit), 1024);
        assert_eq!(pos_ratio_polynom(setpoint, 1_142_181, limit), 896);
        assert_eq!(pos_ratio_polynom(setpoint, limit - 1, limit), 2);
    }

    #[test]
    fn pause_bounds_and_chunk_at_100mb_s() {
        let mut w = wb();
        w.avg_write_bandwidth = 25_600;
        assert_eq!(wb_max_pause(&w, 1_000, 250), 2);
        assert_eq!(wb_max_pause(&w, 10_000, 250), 13);
        assert_eq!(wb_max_pause(&w, 40_000, 250), 50);
        let dom = WbDomain {
            dirty_limit: 1_218_426,
            ..Default::default()
        };
        assert_eq!(writeback_chunk_size(&w, &dom, i64::MAX), 13_312);
        // One dd at 100 MB/s: 2-jiffy target, 200 pages per pause (the live trace's dirtied_pause).
        let (min_pause, pages) = wb_min_pause(&w, 50, 25_600, 25_600, 250);
        assert_eq!((min_pause, pages), (2, 200));
        // More concurrent dirtiers (ratelimit = bw/16): longer target, larger steps.
        let (_, pages16) = wb_min_pause(&w, 50, 1_600, 1_600, 250);
        assert!(pages16 >= DIRTY_POLL_THRESH);
    }

    #[test]
    fn ratelimit_step_shrinks_near_target() {
        // §4.3 table: rate 25600, the bounded gap → applied step.
        for (gap, expect) in [
            (25_600u64, 3_200u64),
            (12_800, 1_600),
            (6_400, 400),
            (3_000, 24),
            (2_000, 4),
            (1_500, 1),
            (1_100, 0),
        ] {
            let rate = 25_600u64;
            let shift = rate / (2 * gap + 1);
            let step = if shift < 64 { (gap >> shift).div_ceil(8) } else { 0 };
            assert_eq!(step, expect, "gap {gap}");
        }
    }

    #[test]
    fn ratelimit_moves_only_when_position_and_rate_agree() {
        let mut w = wb();
        let dom = WbDomain {
            dirty_limit: 60_000,
            ..Default::default()
        };
        w.avg_write_bandwidth = 12_800;
        w.dirty_ratelimit = 25_600;
        // A previous balanced estimate as high as the rate blocks any step down...
        w.balanced_dirty_ratelimit = 25_600;
        let mut dtc = DirtyThrottleControl {
            thresh: 60_000,
            bg_thresh: 30_000,
            dirty: 55_000,
            pos_ratio: 700,
            ..Default::default()
        };
        wb_update_dirty_ratelimit(&mut dtc, &dom, &mut w, 25_600 * 2 / 5, 50, 250);
        assert_eq!(w.dirty_ratelimit, 25_600);
        // ...and once it agrees, the rate steps down.
        w.balanced_dirty_ratelimit = 10_000;
        // Above the setpoint (pos_ratio < 1) and dirtying twice as fast as writeout: go down.
        let mut dtc = DirtyThrottleControl {
            thresh: 60_000,
            bg_thresh: 30_000,
            dirty: 55_000,
            pos_ratio: 700,
            ..Default::default()
        };
        w.dirtied_stamp = 0;
        wb_update_dirty_ratelimit(&mut dtc, &dom, &mut w, 25_600 * 2 / 5, 50, 250);
        assert!(w.dirty_ratelimit < 25_600, "{}", w.dirty_ratelimit);
        assert!(w.balanced_dirty_ratelimit <= 12_800);
        // Below the setpoint but the rate estimate says "lower": no step up.
        let before = w.dirty_ratelimit;
        w.balanced_dirty_ratelimit = 1_000;
        let mut dtc = DirtyThrottleControl {
            thresh: 60_000,
            bg_thresh: 30_000,
            dirty: 40_000,
            pos_ratio: 1_300,
            ..Default::default()
        };
        wb_update_dirty_ratelimit(&mut dtc, &dom, &mut w, 25_600 * 2 / 5, 50, 250);
        assert!(w.dirty_ratelimit <= before);
    }

    #[test]
    fn idle_device_gets_the_bump_and_max_ratio_caps_it() {
        let dom = WbDomain::default();
        let mut w = wb();
        let dtc = DirtyThrottleControl {
            thresh: 80_000,
            dirty: 16_000,
            ..Default::default()
        };
        assert_eq!(__wb_calc_thresh(&dtc, &dom, &mut w, 80_000), 8_000);
        w.strict_limit = true;
        assert_eq!(__wb_calc_thresh(&dtc, &dom, &mut w, 80_000), 640);
        w.strict_limit = false;
        w.max_ratio_ppm = 10_000; // 1 %
        assert_eq!(__wb_calc_thresh(&dtc, &dom, &mut w, 80_000), 800);
        // §9.4 live check: strictlimit, max_ratio 1 %, thresh 1,214,219, dirty 15,888 → 11,983.
        let dtc = DirtyThrottleControl {
            thresh: 1_214_219,
            dirty: 15_888,
            ..Default::default()
        };
        w.strict_limit = true;
        assert_eq!(__wb_calc_thresh(&dtc, &dom, &mut w, 1_214_219), 11_983);
    }

    #[test]
    fn dirty_limit_follows_up_at_once_and_down_slowly() {
        let mut dom = WbDomain {
            dirty_limit: 1_000,
            ..Default::default()
        };
        let dtc = DirtyThrottleControl {
            thresh: 64_000,
            dirty: 10_000,
            ..Default::default()
        };
        domain_update_dirty_limit(&mut dom, &dtc, 100, 250);
        assert_eq!(dom.dirty_limit, 64_000);
        let dtc = DirtyThrottleControl {
            thresh: 32_000,
            dirty: 10_000,
            ..Default::default()
        };
        domain_update_dirty_limit(&mut dom, &dtc, 120, 250); // < 200 ms later: no update
        assert_eq!(dom.dirty_limit, 64_000);
        domain_update_dirty_limit(&mut dom, &dtc, 150, 250);
        assert_eq!(dom.dirty_limit, 64_000 - (32_000 >> 5));
    }

    #[test]
    fn write_bandwidth_ema_converges_and_avg_lags() {
        let mut w = wb();
        let mut written = 0;
        let mut now = 1;
        for _ in 0..100 {
            now += 50;
            written += 5_000; // 25,000 pages/s at HZ 250 with 50-jiffy intervals
            wb_update_write_bandwidth(&mut w, 50, written, 250);
            w.written_stamp = written;
            w.bw_time_stamp = now;
        }
        assert!((w.write_bandwidth as i64 - 25_000).abs() < 500, "{}", w.write_bandwidth);
        assert!((w.avg_write_bandwidth as i64 - 25_000).abs() < 1_000, "{}", w.avg_write_bandwidth);
    }

    /// A throttled machine with round numbers: dirty_bytes/dirty_background_bytes give
    /// thresh 400,000 and bg_thresh 200,000 pages (freerun 300,000); dom.dirty_limit is a stale
    /// 420,000, so limit = 420,000 and setpoint = 360,000. One device that did all recent
    /// completions (share 1000/1000), INIT_BW rates, HZ 250, 2 CPUs.
    struct Rig {
        vm: VmStat,
        sysctl: VmSysctl,
        dom: WbDomain,
        wb: WbState,
        bdp: Vec<u64>,
        out: ThrottleOut,
    }

    impl Rig {
        fn new(nr_dirty: u64, nr_writeback: u64) -> Self {
            let mut dom = WbDomain {
                dirty_limit: 420_000,
                ..Default::default()
            };
            dom.completions.events = 1_000;
            let mut wb = wb();
            wb.completions.events = 1_000;
            wb.reclaimable = nr_dirty;
            wb.writeback = nr_writeback;
            wb.dirtied = 5_120;
            wb.written = 2_560;
            Rig {
                vm: VmStat {
                    nr_dirty,
                    nr_writeback,
                    ..Default::default()
                },
                sysctl: VmSysctl {
                    dirty_bytes: 400_000 * PAGE_SIZE,
                    dirty_background_bytes: 200_000 * PAGE_SIZE,
                    ..Default::default()
                },
                dom,
                wb,
                bdp: vec![0, 0],
                out: ThrottleOut {
                    trace_enabled: true,
                    ..Default::default()
                },
            }
        }

        /// `f` runs with a ThrottleCx at jiffies `j` (HZ 250: jiffy j starts at (j−1)·4 ms).
        fn at<R>(&mut self, j: u64, f: impl FnOnce(&mut ThrottleCx) -> R) -> R {
            self.at_with(j, None, f)
        }

        /// As `at`, for a task of a memory cgroup whose domain is `mdom` and whose pages are
        /// `stats`.
        fn at_memcg<'s, R>(
            &'s mut self,
            j: u64,
            mdom: &'s mut WbDomain,
            stats: MemcgWbStats,
            f: impl FnOnce(&mut ThrottleCx<'s>) -> R,
        ) -> R {
            self.at_with(j, Some(MemcgCx { dom: mdom, stats }), f)
        }

        fn at_with<'s, R>(&'s mut self, j: u64, memcg: Option<MemcgCx<'s>>, f: impl FnOnce(&mut ThrottleCx<'s>) -> R) -> R {
            let mut cx = ThrottleCx {
                clock: Clock::new(250),
                now: (j - 1) * 4_000_000,
                vm: &self.vm,
                sysctl: &self.sysctl,
                dom: &mut self.dom,
                wb: &mut self.wb,
                ncpus: 2,
                bdp_ratelimits: &mut self.bdp,
                ratelimit_pages: 16,
                writeback_in_progress: false,
                out: &mut self.out,
                tid: 0,
                wb_index: 0,
                memcg,
            };
            f(&mut cx)
        }

        fn bdp_traces(&self) -> Vec<TraceEvent> {
            self.out
                .trace
                .events()
                .filter(|e| matches!(e, TraceEvent::BalanceDirtyPages { .. }))
                .cloned()
                .collect()
        }
    }

    #[test]
    fn wb_control_line_and_reserve_area_appendix_a() {
        // Appendix A, one device (wb_thresh = thresh = limit = 1,218,426), bw 25,600 pages/s:
        // x16 = (1,218,426 << 16) / 1,218,427 = 65,535; wb_setpoint = 1,065,936·65,535 >> 16
        // = 1,065,919; span = 204,800·65,535 >> 16 = 204,796; x_intercept = 1,270,715.
        let dom = WbDomain {
            dirty_limit: 1_218_426,
            ..Default::default()
        };
        let w = WbState {
            avg_write_bandwidth: 25_600,
            ..wb()
        };
        let base = DirtyThrottleControl {
            thresh: 1_218_426,
            bg_thresh: 608_469,
            dirty: 1_065_936,
            wb_thresh: 1_218_426,
            ..Default::default()
        };
        let pos = |wb_dirty: u64| {
            let mut dtc = DirtyThrottleControl { wb_dirty, ..base };
            wb_position_ratio(&mut dtc, &dom, &w);
            assert_eq!(dtc.limit, 1_218_426);
            dtc.pos_ratio
        };
        // On the linear part: 1024·(1,270,715 − 1,000,000) / (204,796 | 1) = 1353.
        assert_eq!(pos(1_000_000), 1_353);
        // Past x_intercept − span/4 = 1,219,516: the 1/4 floor.
        assert_eq!(pos(1_250_000), 256);
        // Reserve area (below wb_thresh/2 = 609,213): 1024·770,715/204,797 = 3853, then
        // ·609,213/500,000 = 4694.
        assert_eq!(pos(500_000), 4_694);
        // Below 609,213/8 = 76,151: ×8 instead (1024·1,220,715/204,797 = 6103 → 48,824).
        assert_eq!(pos(50_000), 48_824);
        // At or above the limit: 0.
        let mut dtc = DirtyThrottleControl {
            dirty: 1_218_426,
            wb_dirty: 1_000,
            ..base
        };
        wb_position_ratio(&mut dtc, &dom, &w);
        assert_eq!(dtc.pos_ratio, 0);
    }

    #[test]
    fn strictlimit_takes_the_lower_of_the_two_polynomials() {
        // Global: thresh 100,000, bg 50,000 → freerun 75,000, setpoint 87,500; dirty 20,000:
        // x = (67,500 << 10)/12,501 = 5529 → far above 2.0, clamped to 2048.
        assert_eq!(pos_ratio_polynom(87_500, 20_000, 100_000), 2_048);
        // wb: wb_thresh 10,000, wb_bg_thresh 5,000 → wb_setpoint 7,500; wb_dirty 9,000:
        // x = (−1,500 << 10)/2,501 = −614; 614² >> 10 = 368; 368·(−614) >> 10 = −221; +1024.
        let dom = WbDomain::default();
        let mut w = wb();
        w.strict_limit = true;
        let mut dtc = DirtyThrottleControl {
            thresh: 100_000,
            bg_thresh: 50_000,
            dirty: 20_000,
            wb_thresh: 10_000,
            wb_bg_thresh: 5_000,
            wb_dirty: 9_000,
            ..Default::default()
        };
        wb_position_ratio(&mut dtc, &dom, &w);
        assert_eq!(dtc.pos_ratio, 803);
        // wb at its threshold: 0 whatever the global state.
        dtc.wb_dirty = 10_000;
        wb_position_ratio(&mut dtc, &dom, &w);
        assert_eq!(dtc.pos_ratio, 0);
    }

    #[test]
    fn polynom_wraps_like_the_kernel_instead_of_panicking() {
        // limit − setpoint = 1 and dirty = 0: x = 65,535 << 10 = 67,107,840 and x³ overflows
        // 64 bits. With two's-complement wrapping the sum comes out negative → clamped to 0.
        assert_eq!(pos_ratio_polynom(65_535, 0, 65_536), 0);
    }

    #[test]
    fn min_pause_reads_the_concurrency_from_the_wb() {
        // hi = ilog2(25,600) = 14, lo = ilog2(wb.dirty_ratelimit = 1,600) = 10:
        // t = 2 + 4·2500/1024 = 11 (≤ 1 + 50/2); pages = 25,600·11/256 = 1,100;
        // est. pause 250·1,100/25,601 = 10 ≤ 50; min_pause = 1 + 11/2 = 6.
        let mut w = wb();
        w.avg_write_bandwidth = 25_600;
        w.dirty_ratelimit = 1_600;
        assert_eq!(wb_min_pause(&w, 50, 25_600, 25_600, 250), (6, 1_100));
        // Hard limit (task_ratelimit 0): the estimated pause explodes, t = max_pause and
        // pages = 0, so min_pause = max_pause and the next call comes after 0 pages.
        w.dirty_ratelimit = 25_600;
        assert_eq!(wb_min_pause(&w, 50, 0, 25_600, 250), (50, 0));
    }

    #[test]
    fn short_pause_traces_the_pre_update_limit_and_advances_virtual_time() {
        // dirty 360,000 (300,000 + 60,000 writeback) = setpoint, wb_dirty = 360,000.
        let mut r = Rig::new(300_000, 60_000);
        let mut task = TaskDirty {
            nr_dirtied: 256,
            dirty_paused_when: 97,
            ..Default::default()
        };
        let t = r.at(101, |cx| {
            cx.wb.bw_time_stamp = 1;
            balance_dirty_pages_ratelimited(cx, &mut task)
        });
        assert_eq!(t, Throttle::Proceed);
        // wb_position_ratio: global 1024; wb line 1024·204,790/204,797 = 1023 (see the
        // Appendix-A test for the method: x16 65,535, wb_setpoint 359,994, span 204,796).
        // 100 jiffies since the last update → dirty_limit 420,000 − 20,000/32 = 419,375.
        assert_eq!(r.dom.dirty_limit, 419_375);
        assert_eq!(r.dom.dirty_limit_tstamp, 101);
        // Ratelimit: dirty_rate = 5,120·250/100 = 12,800; task_ratelimit = 25,575 + 1;
        // balanced = min(25,576·25,600/12,801, 25,600) = 25,600. dirty 360,000 ≥ the new
        // setpoint (300,000 + 419,375)/2 = 359,687 → "down" side, max(…) = 25,600: no step.
        assert_eq!(r.wb.dirty_ratelimit, 25_600);
        assert_eq!(r.wb.balanced_dirty_ratelimit, 25_600);
        // Write bandwidth: (2,560·250 + 25,600·924) >> 10 = 23,725; avg stays.
        assert_eq!((r.wb.write_bandwidth, r.wb.avg_write_bandwidth), (23_725, 25_600));
        assert_eq!((r.wb.bw_time_stamp, r.wb.dirtied_stamp, r.wb.written_stamp), (101, 5_120, 2_560));
        assert!(!r.wb.dirty_exceeded);
        // task_ratelimit 25,575; period = 250·256/25,575 = 2; pause = 2 − (101 − 97) = −2
        // < min_pause 2 → no sleep; virtual time advances by the period.
        assert_eq!((task.dirty_paused_when, task.nr_dirtied, task.nr_dirtied_pause), (99, 0, 32));
        assert!(r.out.kick_background);
        let TraceEvent::BalanceDirtyPages {
            limit,
            setpoint,
            dirty,
            wb_setpoint,
            wb_dirty,
            dirty_ratelimit,
            task_ratelimit,
            dirtied,
            dirtied_pause,
            paused,
            pause,
            period,
            think,
            ..
        } = r.bdp_traces()[0]
        else {
            unreachable!()
        };
        // limit/setpoint from wb_position_ratio (before the dirty_limit update).
        assert_eq!((limit, setpoint, dirty), (420_000, 360_000, 360_000));
        // Display formula: 360,000·400,000/400,001.
        assert_eq!((wb_setpoint, wb_dirty), (359_999, 360_000));
        assert_eq!((dirty_ratelimit, task_ratelimit), (102_400, 102_300));
        assert_eq!((dirtied, dirtied_pause, paused), (256, 32, 0));
        assert_eq!((pause, period, think), (-8, 8, 16));
        // bdi_dirty_ratelimit: old bandwidths, dirty_rate 12,800, task_ratelimit 25,576.
        assert!(r.out.trace.events().any(|e| matches!(
            e,
            TraceEvent::BdiDirtyRatelimit {
                write_bw: 102_400,
                avg_write_bw: 102_400,
                dirty_rate: 51_200,
                dirty_ratelimit: 102_400,
                task_ratelimit: 102_304,
                balanced_dirty_ratelimit: 102_400,
                ..
            }
        )));
    }

    #[test]
    fn long_pause_is_clamped_and_the_rest_carried_as_virtual_time() {
        let mut r = Rig::new(300_000, 60_000);
        let mut task = TaskDirty {
            nr_dirtied: 12_800,
            ..Default::default()
        };
        let t = r.at(101, |cx| {
            cx.wb.bw_time_stamp = 1;
            balance_dirty_pages_ratelimited(cx, &mut task)
        });
        // period = 250·12,800/25,575 = 125 > max_pause = min(360,000/801 + 1, 50) = 50:
        // sleep 50, now += min(75, 50) → dirty_paused_when = 101 + 50 + 50.
        assert_eq!(t, Throttle::Sleep(50));
        assert_eq!((task.dirty_paused_when, task.nr_dirtied, task.nr_dirtied_pause), (201, 0, 200));
        assert!(!task.bdp_again);
        assert!(r.wb.last_bdp_sleep.is_some());
        let TraceEvent::BalanceDirtyPages {
            dirtied_pause,
            pause,
            period,
            think,
            ..
        } = r.bdp_traces()[0]
        else {
            unreachable!()
        };
        // dirtied_pause is the value before this call (fork's 32), think 0 (never paused).
        assert_eq!((dirtied_pause, pause, period, think), (32, 200, 500, 0));
    }

    #[test]
    fn more_than_a_second_of_credit_resets_the_clock() {
        let mut r = Rig::new(300_000, 60_000);
        let mut task = TaskDirty {
            nr_dirtied: 256,
            dirty_paused_when: 40,
            ..Default::default()
        };
        // pause = 2 − (301 − 40) = −259 < −HZ: reset instead of advancing.
        r.at(301, |cx| balance_dirty_pages_ratelimited(cx, &mut task));
        assert_eq!((task.dirty_paused_when, task.nr_dirtied), (301, 0));
        let TraceEvent::BalanceDirtyPages { pause, think, .. } = r.bdp_traces()[0] else {
            unreachable!()
        };
        assert_eq!((pause, think), (-1_036, 1_044));
    }

    #[test]
    fn hard_limit_loops_until_the_wb_is_nearly_clean() {
        // dirty 430,000 ≥ limit 420,000 → pos_ratio 0 → task_ratelimit 0.
        let mut r = Rig::new(400_000, 30_000);
        let mut task = TaskDirty {
            nr_dirtied: 256,
            ..Default::default()
        };
        let mut policy = Modern;
        let t = r.at(101, |cx| {
            cx.wb.bw_time_stamp = 110; // no bandwidth update in this test
            policy.ratelimited(cx, &mut task)
        });
        // max_pause = min(430,000/801 + 1, 50) = 50; wb_min_pause gives pages 0.
        assert_eq!(t, Throttle::Sleep(50));
        assert!(task.bdp_again, "wb_dirty 430,000 > wb_stat_error 32");
        assert_eq!((task.dirty_paused_when, task.nr_dirtied_pause), (151, 0));
        // wb_dirty 430,000 > wb_thresh 400,000 and dirty > thresh: the 8-page gate is on.
        assert!(r.wb.dirty_exceeded);
        // The flusher empties this wb (the global count stays over the limit): one more
        // iteration, max_pause = 30/801 + 1 = 1, then leave the loop.
        r.wb.reclaimable = 20;
        r.wb.writeback = 10;
        let t = r.at(151, |cx| policy.resume(cx, &mut task));
        assert_eq!(t, Throttle::Sleep(1));
        assert!(!task.bdp_again);
        let traces = r.bdp_traces();
        let TraceEvent::BalanceDirtyPages {
            task_ratelimit,
            pause,
            period,
            paused,
            dirtied,
            dirtied_pause,
            ..
        } = traces[1]
        else {
            unreachable!()
        };
        assert_eq!((task_ratelimit, pause, period), (0, 4, 4));
        // Same call: pages_dirtied is still the entry value, paused counts the first sleep.
        assert_eq!((dirtied, dirtied_pause, paused), (256, 0, 200));
        // Throttled iterations recompute the flag: wb_dirty 30 ≤ wb_thresh clears it.
        assert!(!r.wb.dirty_exceeded);
        assert_eq!(r.at(152, |cx| policy.resume(cx, &mut task)), Throttle::Proceed);
    }

    #[test]
    fn ratelimited_gate_honours_dirty_exceeded_and_the_per_cpu_valve() {
        // Freerun (dirty 100,000 ≤ 300,000): a call only resets the task and sets the poll
        // interval 1 << (ilog2(400,000 − 100,000) >> 1) = 1 << 9.
        let mut r = Rig::new(100_000, 0);
        r.wb.dirty_exceeded = true;
        r.bdp[0] = 5;
        let mut task = TaskDirty {
            nr_dirtied: 7,
            nr_dirtied_pause: 200,
            ..Default::default()
        };
        // dirty_exceeded caps the ratelimit at 8 pages: 7 does not call.
        assert_eq!(r.at(101, |cx| balance_dirty_pages_ratelimited(cx, &mut task)), Throttle::Proceed);
        assert_eq!((task.nr_dirtied, r.bdp[0]), (7, 5));
        // 8 does; the CPU counter is reset because the task itself reached its limit.
        task.nr_dirtied = 8;
        r.at(101, |cx| balance_dirty_pages_ratelimited(cx, &mut task));
        assert_eq!(
            (task.nr_dirtied, task.nr_dirtied_pause, task.dirty_paused_when, r.bdp[0]),
            (0, 512, 101, 0)
        );
        // Freerun never touches the sticky flag, emits no trace and no kick (100,000 ≤ bg).
        assert!(r.wb.dirty_exceeded);
        assert!(r.bdp_traces().is_empty());
        assert!(!r.out.kick_background);
        // Per-CPU valve: a CPU that dirtied ratelimit_pages (16) forces a call below the
        // task's own limit; one page less does not.
        r.wb.dirty_exceeded = false;
        task.nr_dirtied = 10;
        r.bdp[0] = 15;
        r.at(102, |cx| balance_dirty_pages_ratelimited(cx, &mut task));
        assert_eq!((task.nr_dirtied, r.bdp[0]), (10, 15));
        r.bdp[0] = 16;
        r.at(102, |cx| balance_dirty_pages_ratelimited(cx, &mut task));
        assert_eq!((task.nr_dirtied, task.dirty_paused_when, r.bdp[0]), (0, 102, 0));
    }

    #[test]
    fn zero_period_grows_the_poll_interval_instead_of_sleeping() {
        // Global dirty at the setpoint, but this wb holds only 10 pages: reserve area ×8.
        // wb line 1024·564,780/204,797 = 2823 → ×8 = 22,584; task_ratelimit =
        // 25,600·22,584 >> 10 = 564,600; period = 250·32/564,600 = 0.
        let mut r = Rig::new(300_000, 60_000);
        r.wb.reclaimable = 10;
        r.wb.writeback = 0;
        let mut task = TaskDirty {
            nr_dirtied: 32,
            ..Default::default()
        };
        let t = r.at(101, |cx| {
            cx.wb.bw_time_stamp = 1;
            balance_dirty_pages_ratelimited(cx, &mut task)
        });
        assert_eq!(t, Throttle::Proceed);
        // nr_dirtied_pause (32) ≤ pages_dirtied (32): it grows by 32; nr_dirtied and the
        // virtual clock are left alone.
        assert_eq!((task.nr_dirtied, task.nr_dirtied_pause, task.dirty_paused_when), (32, 64, 0));
        let TraceEvent::BalanceDirtyPages {
            task_ratelimit,
            pause,
            period,
            ..
        } = r.bdp_traces()[0]
        else {
            unreachable!()
        };
        assert_eq!((task_ratelimit, pause, period), (564_600 * 4, 0, 0));
    }

    /// A memory cgroup's thresholds from the byte sysctls: converted to ratios of the global
    /// dirtyable memory (1/4096 units, rounded up) and applied to the group's own avail.
    #[test]
    fn memcg_domain_limits_turn_byte_settings_into_ratios() {
        let vm = VmSysctl {
            dirty_bytes: 256 << 20,
            ..Default::default()
        };
        let mut m = DirtyThrottleControl {
            avail: 100_000,
            ..Default::default()
        };
        domain_dirty_limits_in(&mut m, &vm, Some(1_000_000));
        // ratio = ⌈268,435,456 / 1,000,000⌉ = 269 → 269·100,000/4096 = 6,567; the background
        // ratio stays 10 % (409) → 9,985 ≥ thresh → halved to 3,283.
        assert_eq!((m.thresh, m.bg_thresh), (6_567, 3_283));
        // The global domain takes the bytes as they are.
        let mut g = DirtyThrottleControl {
            avail: 1_000_000,
            ..Default::default()
        };
        domain_dirty_limits(&mut g, &vm);
        assert_eq!(g.thresh, 65_536);
    }

    /// The global domain runs free (30,000 dirty of a 300,000 freerun ceiling) but the
    /// group's is over its limit: the task sleeps the longest pause, and the trace shows the
    /// group's domain and cgroup.
    #[test]
    fn a_memcg_domain_over_its_limit_throttles_while_the_global_one_runs_free() {
        let mut r = Rig::new(30_000, 0);
        r.vm.nr_file = 2_000_000;
        let mut task = TaskDirty {
            bdp_pages: 32,
            ..Default::default()
        };
        assert_eq!(r.at(1_000, |cx| balance_dirty_pages(cx, &mut task)), Throttle::Proceed);

        r.wb.cgroup_ino = 1_000;
        r.wb.memcg_completions.events = 1_000;
        let mut mdom = WbDomain::default();
        mdom.completions.events = 1_000;
        // Full group: 120,000 file pages, no headroom, 30,000 dirty.
        let stats = MemcgWbStats {
            filepages: 120_000,
            headroom: 0,
            dirty: 30_000,
            writeback: 0,
        };
        let mut task = TaskDirty {
            bdp_pages: 32,
            ..Default::default()
        };
        let t = r.at_memcg(1_000, &mut mdom, stats, |cx| balance_dirty_pages(cx, &mut task));
        // Global avail 2,000,001: ratio ⌈1,638,400,000/2,000,001⌉ = 820, background 410.
        // Group avail = 120,000 + min(0, …) → thresh 820·120,000/4096 = 24,023; 30,000 dirty
        // is past it (limit = thresh on a new domain): pos_ratio 0, the hard limit.
        assert_eq!(t, Throttle::Sleep(wb_max_pause(&r.wb, 30_000, 250)));
        assert!(task.bdp_again, "at the hard limit the call loops");
        assert!(r.wb.dirty_exceeded);
        let TraceEvent::BalanceDirtyPages {
            limit,
            dirty,
            task_ratelimit,
            cgroup_ino,
            ..
        } = r.bdp_traces()[0]
        else {
            unreachable!()
        };
        assert_eq!((limit, dirty, task_ratelimit, cgroup_ino), (24_023, 30_000, 0, 1_000));
    }

    /// 2.6.38 keeps `dirty_exceeded` as a local that the free-run break does not recompute: a
    /// call that free-runs before any verdict clears the bdi's flag (the next call comes after
    /// `ratelimit_pages`, not 8), one that looped first leaves it set.
    #[test]
    fn free_run_clears_the_bdi_flag_only_before_the_first_verdict() {
        use super::super::throttle_per_bdi::{PerBdiThrottle, Variant};
        let call = |r: &mut Rig, j: u64, t: &mut PerBdiThrottle, task: &mut TaskDirty, first: bool| {
            r.at(j, |cx| if first { t.ratelimited(cx, task) } else { t.resume(cx, task) })
        };
        // Free run at once (250k < (200k + 400k)/2), the bdi far over its cold limit.
        let mut r = Rig::new(250_000, 0);
        let mut t = PerBdiThrottle::new(Variant::V2638, &r.vm, &r.sysctl, 2, 1, &[0], 1);
        r.wb.dirty_exceeded = true;
        r.bdp[0] = 8;
        let mut task = TaskDirty::default();
        assert_eq!(call(&mut r, 1, &mut t, &mut task, true), Throttle::Proceed);
        assert!(!r.wb.dirty_exceeded, "a call that never judged clears the flag");
        // Over the free-run line, all of it under writeback (nothing for the task to write):
        // the first iteration judges "exceeded" and sleeps; the count then falls under the
        // line and the loop leaves on it, the flag still set.
        let mut r = Rig::new(0, 350_000);
        let mut t = PerBdiThrottle::new(Variant::V2638, &r.vm, &r.sysctl, 2, 1, &[0], 1);
        r.bdp[0] = 16;
        let mut task = TaskDirty::default();
        assert!(matches!(call(&mut r, 1, &mut t, &mut task, true), Throttle::Sleep(1)));
        assert!(r.wb.dirty_exceeded);
        r.vm.nr_writeback = 250_000;
        assert_eq!(call(&mut r, 2, &mut t, &mut task, false), Throttle::Proceed);
        assert!(r.wb.dirty_exceeded, "the last verdict was exceeded");
    }
}
