//! blk-wbt, writeback throttling as in Linux 6.18 (`block/blk-wbt.c`, `block/blk-rq-qos.c`,
//! the blk-stat window of `block/blk-stat.c`). See docs/model-scope.md#blk-wbt.
//!
//! # What is modelled
//!
//! **Init** (`wbt_init`, `wbt_update_limits`): `min_lat_nsec = wbt_lat_usec × 1000` (0 =
//! disabled), `default_depth = RWB_DEF_DEPTH` (16), `queue_depth = blk_queue_depth(q)` as
//! given by the caller, window `RWB_WINDOW_NSEC` (100 ms), `scale_step = 0`.
//!
//! **Depth** (`rq_depth_calc_max_depth`): with `d = min(16, qd)`, `max_depth` is `d` at step
//! 0, `1 + ((d − 1) >> step)` for step > 0 and `1 + ((d − 1) << −step)` for step < 0, capped
//! at `3·qd/4` (hitting the cap sets `scaled_max`, which stops further scale-ups); a device
//! of depth 1 gets 1 when step > 0 and 2 otherwise. **Limits** (`calc_wb_limits`):
//! `wb_normal = (max + 1)/2`, `wb_background = (max + 3)/4`, or `max`/1 when `max ≤ 2`.
//!
//! **Admission** (`wbt_wait` → `rq_qos_wait`, `get_limit`): one shared in-flight counter for
//! all tracked writes (the BG `rq_wait`). A write takes a slot at once if nobody waits and
//! the counter is below its limit; otherwise it joins a FIFO of exclusive waiters. The limit
//! is chosen per write, and re-evaluated whenever a waiter is retried:
//! REQ_SYNC / REQ_META (REQ_HIPRIO) or a `balance_dirty_pages` sleep on the bdi within the
//! last second (`wb_recent_wait`) → `max_depth`; else REQ_BACKGROUND or a read queued or
//! completed within the last 100 ms (`close_io`) → `wb_background`; else `wb_normal`.
//!
//! **Release** (`wbt_done` → `wbt_rqw_done`): decrement; the wake limit is 0 when the device
//! has a volatile write cache and no task slept in `balance_dirty_pages` within the last
//! second, else `wb_normal`. Nobody is woken while in-flight is non-zero and ≥ that limit.
//! Otherwise, if there are waiters and (in-flight is 0 or `limit − inflight ≥
//! wb_background/2`), all are woken: `rq_qos_wake_function` hands slots to waiters in FIFO
//! order and stops at the first one whose limit check fails. So with a write-back cache and
//! no throttled dirtier, waiters run only once the queue has drained to zero.
//!
//! **Window** (`wb_timer_fn`, `latency_exceeded`, `rwb_arm_timer`): the blk-stat callback
//! collects issue→completion latencies of reads and writes while its timer is pending, and
//! is reset when (re)armed. It is armed when a tracked write gets its slot and no window is
//! active, for `cur_win = 100 ms` at step ≤ 0 or `(100 ms << 4) / int_sqrt((step + 1) << 8)`
//! at step > 0. At expiry, with the in-flight count sampled first:
//!
//! 1. the oldest outstanding read (the "sync cookie", taken at device issue when none is
//!    held, dropped at its completion) outstanding longer than `cur_win`, or longer than
//!    `min_lat` with no read sample → `LAT_EXCEEDED`;
//! 2. fewer than 1 read or `RWB_MIN_WRITE_SAMPLES` (3) write samples → `LAT_UNKNOWN_WRITES` if
//!    there were write samples, a recent bdp sleep or writes in flight, else `LAT_UNKNOWN`;
//! 3. minimum read latency above `min_lat` → `LAT_EXCEEDED`; else `LAT_OK`.
//!
//! `LAT_EXCEEDED` → `scale_down(hard)` (a negative step jumps to 0, else step + 1; nothing
//! when `max_depth` is already 1). `LAT_OK` and `LAT_UNKNOWN_WRITES` → `scale_up` (step − 1
//! unless `scaled_max`; waiters are retried). `LAT_UNKNOWN` → after `RWB_UNKNOWN_BUMP` (5)
//! such windows in a row, one step toward 0. A successful step resets the unknown count and
//! records a `wbt:wbt_step` entry (its window is the `cur_win` of the window that just
//! ended, as the kernel prints it before re-arming). The timer is re-armed if the step is
//! non-zero or writes were in flight; otherwise wbt goes idle until the next tracked write.
//!
//! # Simplifications
//!
//! * Only the BG wait queue exists: the simulator issues no swap writes (`WBT_SWAP`) and no
//!   discards (`WBT_DISCARD`), so neither their queues nor their limits are modelled.
//! * Time is exact nanoseconds, not jiffies: `close_io` (HZ/10), `wb_recent_wait` (HZ) and
//!   the window timer (`nsecs_to_jiffies`, timer-wheel granularity) are not rounded.
//! * `wbt_init` runs "long before" the simulation starts: `last_issue`/`last_comp` start as
//!   never, instead of the init time.
//! * The first-waiter re-check of `rq_qos_wait` is implied: in a single-threaded simulator it
//!   sees the same state as the check made just before queueing.
//! * Requests are never requeued or freed by request-to-request merges, so `wbt_requeue` and
//!   the merge-free path of `wbt_done` do not occur; `wbt_cleanup` (allocation failure after
//!   throttling) cannot happen either.
//! * The `wbt:wbt_timer`, `wbt:wbt_lat` and `wbt:wbt_stat` tracepoints are not recorded;
//!   the last window's status is available through [`Wbt::last_status`].
//! * The wbt state is fixed for the run (no sysfs writes to `wbt_lat_usec`, no BFQ switch).
use crate::config::QueueConfig;
use crate::Ns;
use std::collections::VecDeque;

/// `RWB_DEF_DEPTH`.
pub(crate) const RWB_DEF_DEPTH: u32 = 16;
/// `RWB_WINDOW_NSEC`.
pub(crate) const RWB_WINDOW_NSEC: Ns = 100_000_000;
/// `RWB_MIN_WRITE_SAMPLES`.
pub(crate) const RWB_MIN_WRITE_SAMPLES: u64 = 3;
/// `RWB_UNKNOWN_BUMP`.
pub(crate) const RWB_UNKNOWN_BUMP: u32 = 5;
/// `close_io`: HZ/10.
const CLOSE_IO_NS: Ns = 100_000_000;
/// `wb_recent_wait`: HZ.
const RECENT_WAIT_NS: Ns = 1_000_000_000;

/// Window verdicts of `latency_exceeded` (the values of `wbt:wbt_timer`'s `status`).
pub(crate) const LAT_OK: u8 = 1;
pub(crate) const LAT_UNKNOWN: u8 = 2;
pub(crate) const LAT_UNKNOWN_WRITES: u8 = 3;
pub(crate) const LAT_EXCEEDED: u8 = 4;

/// One `wbt:wbt_step` record: (time ns, msg, step, window µs, background, normal, max).
pub(crate) type WbtStep = (Ns, &'static str, i32, u64, u32, u32, u32);

/// The bio flags that decide a tracked write's limit (`get_limit`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WbtFlags {
    /// REQ_SYNC.
    pub sync: bool,
    /// REQ_BACKGROUND.
    pub background: bool,
    /// REQ_META or REQ_PRIO.
    pub meta: bool,
}

/// One blk-stat bucket (`struct blk_rq_stat`) for the current window.
#[derive(Clone, Copy, Debug, Default)]
struct Stat {
    nr: u64,
    min: Ns,
    max: Ns,
    sum: Ns,
}

impl Stat {
    fn add(&mut self, v: Ns) {
        if self.nr == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.nr += 1;
        self.sum += v;
    }
}

/// Integer square root (floor), as `int_sqrt`.
fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

pub(crate) struct Wbt {
    enabled: bool,
    min_lat_nsec: Ns,
    /// Volatile write cache (`write_cache` = "write back").
    wc: bool,
    // struct rq_depth
    queue_depth: u32,
    default_depth: u32,
    scale_step: i32,
    scaled_max: bool,
    max_depth: u32,
    // limits
    wb_normal: u32,
    wb_background: u32,
    unknown_cnt: u32,
    win_nsec: Ns,
    cur_win_nsec: Ns,
    /// Expiry of the pending window timer; `Some` = the stat callback is active.
    timer_at: Option<Ns>,
    /// blk-stat buckets: [READ, WRITE].
    stat: [Stat; 2],
    /// Block-layer id of the read held as the sync cookie, with its issue time.
    sync_cookie: Option<(u32, Ns)>,
    last_issue: Option<Ns>,
    last_comp: Option<Ns>,
    /// In-flight tracked writes (the BG `rq_wait`).
    inflight: u32,
    /// Throttled writes in arrival order, with the flags their limit depends on.
    waiters: VecDeque<(u32, WbtFlags)>,
    steps: Vec<WbtStep>,
    last_status: u8,
}

impl Wbt {
    /// `wbt_init` for a queue whose `blk_queue_depth()` is `queue_depth`.
    pub(crate) fn new(q: &QueueConfig, queue_depth: u32) -> Wbt {
        let mut w = Wbt {
            enabled: q.wbt_lat_usec > 0,
            min_lat_nsec: q.wbt_lat_usec * 1000,
            wc: q.write_cache,
            queue_depth: queue_depth.max(1),
            default_depth: RWB_DEF_DEPTH,
            scale_step: 0,
            scaled_max: false,
            max_depth: 0,
            wb_normal: 0,
            wb_background: 0,
            unknown_cnt: 0,
            win_nsec: RWB_WINDOW_NSEC,
            cur_win_nsec: RWB_WINDOW_NSEC,
            timer_at: None,
            stat: [Stat::default(); 2],
            sync_cookie: None,
            last_issue: None,
            last_comp: None,
            inflight: 0,
            waiters: VecDeque::new(),
            steps: Vec::new(),
            last_status: 0,
        };
        // wbt_update_limits: the return value of the depth calculation is ignored here.
        w.calc_max_depth();
        w.calc_wb_limits();
        w
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// `rq_depth_calc_max_depth`; returns true when the depth cannot grow further.
    fn calc_max_depth(&mut self) -> bool {
        let qd = self.queue_depth;
        let mut at_max = false;
        if qd == 1 {
            if self.scale_step > 0 {
                self.max_depth = 1;
            } else {
                self.max_depth = 2;
                at_max = true;
            }
            return at_max;
        }
        let mut depth = self.default_depth.min(qd) as u64;
        if self.scale_step > 0 {
            depth = 1 + ((depth - 1) >> self.scale_step.min(31));
        } else if self.scale_step < 0 {
            let maxd = 3 * qd as u64 / 4;
            let shift = (-self.scale_step).min(40) as u32;
            depth = 1 + ((depth - 1) << shift);
            if depth > maxd {
                depth = maxd;
                at_max = true;
            }
        }
        self.max_depth = depth as u32;
        at_max
    }

    /// `calc_wb_limits`.
    fn calc_wb_limits(&mut self) {
        if self.min_lat_nsec == 0 {
            self.wb_normal = 0;
            self.wb_background = 0;
        } else if self.max_depth <= 2 {
            self.wb_normal = self.max_depth;
            self.wb_background = 1;
        } else {
            self.wb_normal = self.max_depth.div_ceil(2);
            self.wb_background = self.max_depth.div_ceil(4);
        }
    }

    fn recent_wait(now: Ns, last_bdp_sleep: Option<Ns>) -> bool {
        last_bdp_sleep.is_some_and(|t| now < t + RECENT_WAIT_NS)
    }

    fn close_io(&self, now: Ns) -> bool {
        let near = |t: Option<Ns>| t.is_some_and(|t| now < t + CLOSE_IO_NS);
        near(self.last_issue) || near(self.last_comp)
    }

    /// `get_limit` for a write with `flags`.
    fn get_limit(&self, now: Ns, flags: WbtFlags, last_bdp_sleep: Option<Ns>) -> u32 {
        if flags.sync || flags.meta || Self::recent_wait(now, last_bdp_sleep) {
            self.max_depth
        } else if flags.background || self.close_io(now) {
            self.wb_background
        } else {
            self.wb_normal
        }
    }

    /// The limit a write with `flags` would get now.
    #[cfg(test)]
    pub(crate) fn limit_for(&self, now: Ns, flags: WbtFlags, last_bdp_sleep: Option<Ns>) -> u32 {
        self.get_limit(now, flags, last_bdp_sleep)
    }

    /// `rwb_arm_timer`: compute the window for the current step, reset the stats and start
    /// the timer.
    fn arm_timer(&mut self, now: Ns) {
        self.cur_win_nsec = if self.scale_step > 0 {
            (self.win_nsec << 4) / int_sqrt(((self.scale_step + 1) as u64) << 8)
        } else {
            self.win_nsec
        };
        self.stat = [Stat::default(); 2];
        self.timer_at = Some(now + self.cur_win_nsec);
    }

    /// What a task admitted by `wbt_wait` does last: start a window if none is active.
    fn arm_if_idle(&mut self, now: Ns) {
        if self.timer_at.is_none() {
            self.arm_timer(now);
        }
    }

    /// `wake_up_all` on the wait queue with `rq_qos_wake_function`: admit waiters in FIFO
    /// order while each one's limit allows.
    fn wake_all(&mut self, now: Ns, last_bdp_sleep: Option<Ns>, admitted: &mut Vec<u32>) -> bool {
        let mut any = false;
        while let Some(&(id, flags)) = self.waiters.front() {
            if self.inflight >= self.get_limit(now, flags, last_bdp_sleep) {
                break;
            }
            self.waiters.pop_front();
            self.inflight += 1;
            admitted.push(id);
            any = true;
        }
        any
    }

    /// `rq_qos_throttle` → `wbt_wait` for a tracked write that needs a new request. Returns
    /// true if it got a slot; false if request `waiter` now sleeps in wbt (it is reported in
    /// `admitted` by a later [`Wbt::done`] or [`Wbt::timer_fn`]).
    pub(crate) fn throttle(&mut self, now: Ns, waiter: u32, flags: WbtFlags, last_bdp_sleep: Option<Ns>) -> bool {
        if !self.enabled {
            return true;
        }
        if self.waiters.is_empty() && self.inflight < self.get_limit(now, flags, last_bdp_sleep) {
            self.inflight += 1;
            self.arm_if_idle(now);
            return true;
        }
        self.waiters.push_back((waiter, flags));
        false
    }

    /// `wbt_done` for a tracked write (`wbt_rqw_done`): release its slot and wake waiters if
    /// the wake rule allows. Admitted waiter ids are appended to `admitted`.
    pub(crate) fn done(&mut self, now: Ns, last_bdp_sleep: Option<Ns>, admitted: &mut Vec<u32>) {
        if !self.enabled {
            return;
        }
        debug_assert!(self.inflight > 0, "wbt_done without a tracked write in flight");
        self.inflight = self.inflight.saturating_sub(1);
        let limit = if self.wc && !Self::recent_wait(now, last_bdp_sleep) {
            0
        } else {
            self.wb_normal
        };
        let inflight = self.inflight;
        if inflight != 0 && inflight >= limit {
            return;
        }
        if !self.waiters.is_empty()
            && (inflight == 0 || limit - inflight >= self.wb_background / 2)
            && self.wake_all(now, last_bdp_sleep, admitted)
        {
            self.arm_if_idle(now);
        }
    }

    /// `rq_qos_throttle` → `wbt_wait` for a read that needs a new request: stamps
    /// `last_issue` (used by `close_io`). Merged reads do not come here.
    pub(crate) fn read_queued(&mut self, now: Ns) {
        if self.enabled {
            self.last_issue = Some(now);
        }
    }

    /// `wbt_issue` for a read sent to the device: it becomes the sync cookie if none is held.
    pub(crate) fn read_issued(&mut self, now: Ns, rq: u32) {
        if self.enabled && self.sync_cookie.is_none() {
            self.sync_cookie = Some((rq, now));
        }
    }

    /// A read completed after `latency` (issue → completion): blk-stat sample, then
    /// `wbt_done` for a read (drop the cookie if it was this read, stamp `last_comp`).
    pub(crate) fn read_completed(&mut self, now: Ns, rq: u32, latency: Ns) {
        if !self.enabled {
            return;
        }
        if self.timer_at.is_some() {
            self.stat[0].add(latency);
        }
        if self.sync_cookie.is_some_and(|(id, _)| id == rq) {
            self.sync_cookie = None;
        }
        self.last_comp = Some(now);
    }

    /// A write (tracked or not) completed after `latency`: blk-stat sample.
    pub(crate) fn write_completed(&mut self, _now: Ns, latency: Ns) {
        if self.enabled && self.timer_at.is_some() {
            self.stat[1].add(latency);
        }
    }

    /// When the window timer expires, if one is pending.
    pub(crate) fn next_timer(&self) -> Option<Ns> {
        self.timer_at
    }

    /// `latency_exceeded` for the window that just ended.
    fn latency_exceeded(&self, now: Ns, inflight: u32, last_bdp_sleep: Option<Ns>) -> u8 {
        let [read, write] = self.stat;
        let thislat = self.sync_cookie.map_or(0, |(_, t)| now.saturating_sub(t));
        if thislat > self.cur_win_nsec || (thislat > self.min_lat_nsec && read.nr == 0) {
            return LAT_EXCEEDED;
        }
        if !(read.nr >= 1 && write.nr >= RWB_MIN_WRITE_SAMPLES) {
            if write.nr > 0 || Self::recent_wait(now, last_bdp_sleep) || inflight > 0 {
                return LAT_UNKNOWN_WRITES;
            }
            return LAT_UNKNOWN;
        }
        if read.min > self.min_lat_nsec {
            return LAT_EXCEEDED;
        }
        LAT_OK
    }

    fn record_step(&mut self, now: Ns, msg: &'static str) {
        self.steps.push((
            now,
            msg,
            self.scale_step,
            self.cur_win_nsec / 1000,
            self.wb_background,
            self.wb_normal,
            self.max_depth,
        ));
    }

    /// `scale_up` (`rq_depth_scale_up`): returns whether the step changed.
    fn scale_up(&mut self, now: Ns, last_bdp_sleep: Option<Ns>, admitted: &mut Vec<u32>) -> bool {
        if self.scaled_max {
            return false;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        self.calc_wb_limits();
        self.unknown_cnt = 0;
        self.wake_all(now, last_bdp_sleep, admitted);
        self.record_step(now, "scale up");
        true
    }

    /// `scale_down` (`rq_depth_scale_down`).
    fn scale_down(&mut self, now: Ns, hard: bool) {
        if self.max_depth == 1 {
            return;
        }
        if self.scale_step < 0 && hard {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        self.calc_wb_limits();
        self.unknown_cnt = 0;
        self.record_step(now, "scale down");
    }

    /// `wb_timer_fn`: the window timer fired at `now`. Calls that do not match the pending
    /// expiry (stale events) are ignored. Waiters admitted by a scale-up are appended to
    /// `admitted`.
    pub(crate) fn timer_fn(&mut self, now: Ns, last_bdp_sleep: Option<Ns>, admitted: &mut Vec<u32>) {
        if !self.enabled || self.timer_at.is_none_or(|t| now < t) {
            return;
        }
        self.timer_at = None;
        let inflight = self.inflight;
        let status = self.latency_exceeded(now, inflight, last_bdp_sleep);
        self.last_status = status;
        let before = admitted.len();
        match status {
            LAT_EXCEEDED => self.scale_down(now, true),
            LAT_OK | LAT_UNKNOWN_WRITES => {
                self.scale_up(now, last_bdp_sleep, admitted);
            }
            _ => {
                self.unknown_cnt += 1;
                if self.unknown_cnt >= RWB_UNKNOWN_BUMP {
                    if self.scale_step > 0 {
                        self.scale_up(now, last_bdp_sleep, admitted);
                    } else if self.scale_step < 0 {
                        self.scale_down(now, false);
                    }
                }
            }
        }
        if self.scale_step != 0 || inflight != 0 || admitted.len() > before {
            self.arm_timer(now);
        }
    }

    /// Tracked writes in flight (holding a wbt slot).
    pub(crate) fn inflight(&self) -> u32 {
        self.inflight
    }

    /// Writes sleeping in wbt.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.waiters.len()
    }

    #[cfg(test)]
    pub(crate) fn scale_step(&self) -> i32 {
        self.scale_step
    }

    /// (wb_background, wb_normal, max_depth).
    #[cfg(test)]
    pub(crate) fn limits(&self) -> (u32, u32, u32) {
        (self.wb_background, self.wb_normal, self.max_depth)
    }

    /// `cur_win_nsec` (debugfs `curr_win_nsec`).
    #[cfg(test)]
    pub(crate) fn cur_win_nsec(&self) -> Ns {
        self.cur_win_nsec
    }

    #[cfg(test)]
    pub(crate) fn min_lat_nsec(&self) -> Ns {
        self.min_lat_nsec
    }

    /// Status of the last window (`LAT_*`; 0 before the first window).
    #[cfg(test)]
    pub(crate) fn last_status(&self) -> u8 {
        self.last_status
    }

    /// Move the `wbt:wbt_step` records accumulated since the last call to `out`.
    pub(crate) fn take_steps(&mut self, out: &mut Vec<WbtStep>) {
        out.append(&mut self.steps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{default_queue, DeviceModelConfig, HddParams};

    const MS: Ns = 1_000_000;

    fn qcfg(lat_usec: u64, wc: bool) -> QueueConfig {
        let mut q = default_queue(&DeviceModelConfig::Hdd(HddParams::default()));
        q.wbt_lat_usec = lat_usec;
        q.write_cache = wc;
        q
    }

    fn wbt(qd: u32) -> Wbt {
        Wbt::new(&qcfg(75_000, true), qd)
    }

    const BG: WbtFlags = WbtFlags {
        sync: false,
        background: true,
        meta: false,
    };
    const NORMAL: WbtFlags = WbtFlags {
        sync: false,
        background: false,
        meta: false,
    };
    const SYNC: WbtFlags = WbtFlags {
        sync: true,
        background: false,
        meta: false,
    };

    /// Run the pending window timer.
    fn fire(w: &mut Wbt, admitted: &mut Vec<u32>) -> Ns {
        let t = w.next_timer().expect("timer armed");
        w.timer_fn(t, None, admitted);
        t
    }

    #[test]
    fn int_sqrt_floor() {
        for x in 0..2000u64 {
            let r = int_sqrt(x);
            assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
        }
        assert_eq!(int_sqrt(512), 22);
    }

    #[test]
    fn limits_at_step_zero() {
        // calc_wb_limits by hand: max = min(16, qd) = 16; normal = 17/2 = 8; bg = 19/4 = 4.
        for qd in [32, 256] {
            let w = wbt(qd);
            assert_eq!(w.limits(), (4, 8, 16), "qd {qd}");
            assert_eq!(w.scale_step(), 0);
            assert_eq!(w.min_lat_nsec(), 75 * MS);
        }
        // qd 8: max 8, normal 4, bg 11/4 = 2. qd 2 and 1: max 2 -> normal 2, bg 1.
        assert_eq!(wbt(8).limits(), (2, 4, 8));
        assert_eq!(wbt(2).limits(), (1, 2, 2));
        assert_eq!(wbt(1).limits(), (1, 2, 2));
        // Disabled: everything 0 and nothing is throttled.
        let mut off = Wbt::new(&qcfg(0, true), 32);
        assert!(!off.enabled());
        assert_eq!(off.limits(), (0, 0, 16));
        for i in 0..100 {
            assert!(off.throttle(0, i, BG, None));
        }
        assert_eq!(off.inflight(), 0);
        assert_eq!(off.next_timer(), None);
    }

    #[test]
    fn limit_per_bio_class() {
        let mut w = wbt(256);
        let now = 10_000 * MS;
        assert_eq!(w.limit_for(now, NORMAL, None), 8);
        assert_eq!(w.limit_for(now, BG, None), 4);
        assert_eq!(w.limit_for(now, SYNC, None), 16);
        let meta = WbtFlags { meta: true, ..NORMAL };
        assert_eq!(w.limit_for(now, meta, None), 16);
        // A balance_dirty_pages sleep within the last second: max for every write.
        assert_eq!(w.limit_for(now, BG, Some(now - 999 * MS)), 16);
        assert_eq!(w.limit_for(now, NORMAL, Some(now - 1000 * MS)), 8);
        // A read queued within 100 ms: background limit for non-sync writes.
        w.read_queued(now - 50 * MS);
        assert_eq!(w.limit_for(now, NORMAL, None), 4);
        assert_eq!(w.limit_for(now, SYNC, None), 16);
        assert_eq!(w.limit_for(now + 50 * MS, NORMAL, None), 8);
        // A read completion also counts.
        w.read_completed(now + 60 * MS, 7, 5 * MS);
        assert_eq!(w.limit_for(now + 100 * MS, NORMAL, None), 4);
        assert_eq!(w.limit_for(now + 160 * MS, NORMAL, None), 8);
    }

    /// One window with `reads` read samples of `rlat` and `writes` write samples.
    fn window(w: &mut Wbt, reads: u32, rlat: Ns, writes: u32, admitted: &mut Vec<u32>) -> Ns {
        let t0 = w.next_timer().expect("armed") - 1;
        for i in 0..reads {
            w.read_issued(t0 - rlat, 1000 + i);
            w.read_completed(t0, 1000 + i, rlat);
        }
        for _ in 0..writes {
            w.write_completed(t0, 5 * MS);
        }
        fire(w, admitted)
    }

    #[test]
    fn scale_down_on_exceeded_read_latency() {
        let mut w = wbt(256);
        let mut adm = Vec::new();
        // Keep writes in flight so the timer stays armed.
        for i in 0..4 {
            assert!(w.throttle(0, i, NORMAL, None));
        }
        assert_eq!(w.next_timer(), Some(100 * MS));
        let mut expect = vec![(1, 8), (2, 4), (3, 2), (4, 1)];
        for (step, max) in expect.drain(..) {
            window(&mut w, 2, 80 * MS, 5, &mut adm);
            assert_eq!(w.last_status(), LAT_EXCEEDED);
            assert_eq!(w.scale_step(), step);
            assert_eq!(w.limits().2, max);
        }
        // Halving: max 16 -> 8 -> 4 -> 2 -> 1; limits at max <= 2 are (1, max, max).
        assert_eq!(w.limits(), (1, 1, 1));
        // Further violations: no-op once max_depth is 1.
        window(&mut w, 2, 80 * MS, 5, &mut adm);
        assert_eq!(w.scale_step(), 4);
        // Window shrinks with the step: 100 ms << 4 / int_sqrt(5 << 8 = 1280 -> 35).
        assert_eq!(w.cur_win_nsec(), (RWB_WINDOW_NSEC << 4) / 35);
        let mut steps = Vec::new();
        w.take_steps(&mut steps);
        assert_eq!(steps.len(), 4);
        // The first record carries the window that just ended (100 ms) and the new limits;
        // the second the 1-step window: 1.6e9 / int_sqrt(512) = 1.6e9 / 22 ns.
        assert_eq!(steps[0].1, "scale down");
        assert_eq!((steps[0].2, steps[0].3, steps[0].4, steps[0].5, steps[0].6), (1, 100_000, 2, 4, 8));
        assert_eq!(steps[1].3, (RWB_WINDOW_NSEC << 4) / 22 / 1000);
        assert_eq!((steps[3].4, steps[3].5, steps[3].6), (1, 1, 1));
        // Good latency scales back up, one step per window.
        window(&mut w, 2, MS, 5, &mut adm);
        assert_eq!(w.last_status(), LAT_OK);
        assert_eq!(w.scale_step(), 3);
    }

    #[test]
    fn exceeded_from_negative_step_jumps_to_zero() {
        let mut w = wbt(256);
        let mut adm = Vec::new();
        assert!(w.throttle(0, 1, NORMAL, None));
        for _ in 0..3 {
            window(&mut w, 0, 0, 5, &mut adm);
        }
        assert_eq!(w.scale_step(), -3);
        window(&mut w, 1, 100 * MS, 5, &mut adm);
        assert_eq!(w.scale_step(), 0);
        assert_eq!(w.limits(), (4, 8, 16));
    }

    #[test]
    fn writes_only_load_reaches_negative_steps() {
        // Appendix A: qd 256, rotational (75 ms): step -4, max 192, normal 96, background 48.
        let mut w = wbt(256);
        let mut adm = Vec::new();
        assert!(w.throttle(0, 1, BG, None));
        let mut t = 0;
        for _ in 0..8 {
            t = window(&mut w, 0, 0, 10, &mut adm);
            assert_eq!(w.last_status(), LAT_UNKNOWN_WRITES);
        }
        assert_eq!(w.scale_step(), -4);
        assert_eq!(w.limits(), (48, 96, 192));
        let mut steps = Vec::new();
        w.take_steps(&mut steps);
        let got: Vec<(i32, u64, u32, u32, u32)> = steps.iter().map(|s| (s.2, s.3, s.4, s.5, s.6)).collect();
        assert_eq!(
            got,
            vec![
                (-1, 100_000, 8, 16, 31),
                (-2, 100_000, 16, 31, 61),
                (-3, 100_000, 31, 61, 121),
                (-4, 100_000, 48, 96, 192),
            ]
        );
        assert!(steps.iter().all(|s| s.1 == "scale up"));
        assert_eq!(steps[3].0, 400 * MS);
        assert_eq!(t, 800 * MS);
        // qd 32 (SATA NCQ): the cap is 3*32/4 = 24 at step -1.
        let mut w = wbt(32);
        assert!(w.throttle(0, 1, BG, None));
        for _ in 0..3 {
            window(&mut w, 0, 0, 10, &mut adm);
        }
        assert_eq!(w.scale_step(), -1);
        assert_eq!(w.limits(), (6, 12, 24));
    }

    #[test]
    fn unknown_windows_return_step_to_zero_slowly() {
        let mut w = wbt(256);
        let mut adm = Vec::new();
        assert!(w.throttle(0, 1, BG, None));
        for _ in 0..4 {
            window(&mut w, 0, 0, 10, &mut adm);
        }
        assert_eq!(w.scale_step(), -4);
        w.done(450 * MS, None, &mut adm);
        assert_eq!(w.inflight(), 0);
        // Idle windows: LAT_UNKNOWN; every 5th moves one step toward 0. The timer keeps
        // running while the step is non-zero.
        let mut windows = 0;
        while w.scale_step() != 0 {
            window(&mut w, 0, 0, 0, &mut adm);
            assert_eq!(w.last_status(), LAT_UNKNOWN);
            windows += 1;
            assert!(windows <= 20);
        }
        assert_eq!(windows, 20);
        // Step 0 and nothing in flight: the timer stops.
        assert_eq!(w.next_timer(), None);
        let mut steps = Vec::new();
        w.take_steps(&mut steps);
        let downs: Vec<i32> = steps.iter().filter(|s| s.1 == "scale down").map(|s| s.2).collect();
        assert_eq!(downs, vec![-3, -2, -1, 0]);
    }

    #[test]
    fn timer_arms_on_activity_and_stops_when_idle() {
        let mut w = wbt(256);
        let mut adm = Vec::new();
        assert_eq!(w.next_timer(), None);
        assert!(w.throttle(5 * MS, 1, BG, None));
        assert_eq!(w.next_timer(), Some(105 * MS));
        // A stale call before the expiry does nothing.
        w.timer_fn(50 * MS, None, &mut adm);
        assert_eq!(w.next_timer(), Some(105 * MS));
        w.done(60 * MS, None, &mut adm);
        // Window with no samples, nothing in flight, step 0: LAT_UNKNOWN, not re-armed.
        w.timer_fn(105 * MS, None, &mut adm);
        assert_eq!(w.last_status(), LAT_UNKNOWN);
        assert_eq!(w.next_timer(), None);
        // Samples are only collected while a window is active.
        w.write_completed(110 * MS, MS);
        assert!(w.throttle(120 * MS, 2, BG, None));
        assert_eq!(w.next_timer(), Some(220 * MS));
        w.timer_fn(220 * MS, None, &mut adm);
        // The write in flight makes it LAT_UNKNOWN_WRITES even without samples.
        assert_eq!(w.last_status(), LAT_UNKNOWN_WRITES);
        assert_eq!(w.scale_step(), -1);
    }

    #[test]
    fn recent_bdp_sleep_counts_as_writes() {
        let mut w = wbt(256);
        let mut adm = Vec::new();
        assert!(w.throttle(0, 1, BG, None));
        w.done(1, None, &mut adm);
        w.timer_fn(100 * MS, Some(50 * MS), &mut adm);
        assert_eq!(w.last_status(), LAT_UNKNOWN_WRITES);
    }

    #[test]
    fn stuck_sync_read_is_a_violation() {
        let mut w = wbt(256);
        let mut adm = Vec::new();
        assert!(w.throttle(0, 1, NORMAL, None));
        // A read issued at 10 ms is still outstanding at 100 ms: 90 ms > 75 ms and no read
        // sample in the window.
        w.read_issued(10 * MS, 77);
        // A later read does not replace the cookie.
        w.read_issued(20 * MS, 78);
        for _ in 0..5 {
            w.write_completed(50 * MS, MS);
        }
        fire(&mut w, &mut adm);
        assert_eq!(w.last_status(), LAT_EXCEEDED);
        assert_eq!(w.scale_step(), 1);
        // Once it completes, the cookie is gone.
        w.read_completed(120 * MS, 77, 110 * MS);
        w.read_completed(121 * MS, 78, 101 * MS);
        let t = w.next_timer().unwrap();
        w.read_issued(t - MS, 79);
        w.read_completed(t - MS / 2, 79, MS / 2);
        for _ in 0..3 {
            w.write_completed(t - MS, MS);
        }
        w.timer_fn(t, None, &mut adm);
        // min read latency in the window is 0.5 ms (the two slow ones count too, but min
        // decides): OK.
        assert_eq!(w.last_status(), LAT_OK);
        assert_eq!(w.scale_step(), 0);
    }

    #[test]
    fn waiters_admitted_fifo_only_under_limit() {
        // Write-through cache: the wake limit is wb_normal.
        let mut w = Wbt::new(&qcfg(75_000, false), 256);
        let mut adm = Vec::new();
        let now = 10 * MS;
        // Background limit 4: four slots, then everyone waits, even a sync write whose
        // limit (16) has room: FIFO fairness.
        for i in 0..4 {
            assert!(w.throttle(now, i, BG, None));
        }
        assert!(!w.throttle(now, 10, BG, None));
        assert!(!w.throttle(now, 11, SYNC, None));
        assert!(!w.throttle(now, 12, BG, None));
        assert_eq!(w.inflight(), 4);
        assert_eq!(w.waiting(), 3);
        // One completion: inflight 3 < normal 8 and 8 - 3 >= 4/2: wake. Head (bg, limit 4)
        // takes a slot (4); the sync write behind it (limit 16) takes one (5); the next bg
        // write fails (5 >= 4) and stops the walk.
        w.done(now, None, &mut adm);
        assert_eq!(adm, vec![10, 11]);
        assert_eq!(w.inflight(), 5);
        assert_eq!(w.waiting(), 1);
        // Completions down to 3 in flight: 3 < 4 admits 12.
        adm.clear();
        w.done(now, None, &mut adm);
        assert!(adm.is_empty());
        w.done(now, None, &mut adm);
        assert_eq!(adm, vec![12]);
        assert_eq!(w.inflight(), 4);
    }

    #[test]
    fn write_back_cache_wakes_only_when_drained() {
        let mut w = wbt(256);
        let mut adm = Vec::new();
        let now = 10 * MS;
        for i in 0..4 {
            assert!(w.throttle(now, i, BG, None));
        }
        assert!(!w.throttle(now, 10, BG, None));
        assert!(!w.throttle(now, 11, BG, None));
        // Volatile cache, no dirty throttling: limit 0, so no wake until in-flight is 0.
        for _ in 0..3 {
            w.done(now, None, &mut adm);
            assert!(adm.is_empty());
        }
        assert_eq!(w.inflight(), 1);
        w.done(now, None, &mut adm);
        assert_eq!(adm, vec![10, 11]);
        assert_eq!(w.inflight(), 2);
        // With a recent balance_dirty_pages sleep the wake limit is wb_normal (8), and the
        // writes' limit is max_depth: waiters move on without draining.
        adm.clear();
        let bdp = Some(now);
        for i in 2..16 {
            assert!(w.throttle(now, 100 + i, BG, bdp));
        }
        assert_eq!(w.inflight(), 16);
        assert!(!w.throttle(now, 200, BG, bdp));
        // 15 in flight >= 8: no wake.
        w.done(now, bdp, &mut adm);
        assert!(adm.is_empty());
        for _ in 0..8 {
            w.done(now, bdp, &mut adm);
        }
        // Down to 7 < 8, and 8 - 7 = 1 >= 4/2? no. Down to 6: 8 - 6 = 2 >= 2: wake.
        assert_eq!(w.inflight(), 7);
        assert!(adm.is_empty());
        w.done(now, bdp, &mut adm);
        assert_eq!(adm, vec![200]);
        assert_eq!(w.inflight(), 7);
    }

    #[test]
    fn scale_up_retries_waiters() {
        let mut w = wbt(256);
        let mut adm = Vec::new();
        for i in 0..4 {
            assert!(w.throttle(0, i, BG, None));
        }
        for i in 10..15 {
            assert!(!w.throttle(0, i, BG, None));
        }
        // Writes-only window: step -1, background limit 8: four more are admitted.
        for _ in 0..5 {
            w.write_completed(50 * MS, MS);
        }
        fire(&mut w, &mut adm);
        assert_eq!(w.scale_step(), -1);
        assert_eq!(adm, vec![10, 11, 12, 13]);
        assert_eq!(w.inflight(), 8);
        assert!(w.next_timer().is_some());
    }
}
