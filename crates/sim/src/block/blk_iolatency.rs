//! blk-iolatency (`block/blk-iolatency.c`): `io.latency` protects a cgroup's I/O latency by
//! shrinking the queue depth its siblings may use while it misses its target.
//!
//! # The algorithm, per device
//!
//! - Every cgroup has a group with an in-flight count and a `max_depth` (unlimited at first).
//!   A bio is admitted at each level of its cgroup's path, leaf first (`__blkcg_iolatency_throttle`
//!   per level): a level at its `max_depth` makes the submitter wait until one of that level's
//!   bios completes. This sits in front of wbt and the tags (rq-qos order: iolatency was
//!   registered after wbt, and the newest policy runs first).
//! - A group with a target (`min_lat_nsec`) measures each completed bio from its submission to
//!   its completion: on a rotational queue the window's mean is compared with the target; on
//!   others, the window is missed when 10 % or more of its bios took the target or longer.
//!   The window is 16 × the target, within 100 ms and 1 s, and is checked by the completion
//!   that finds it elapsed (`iolatency_check_latencies`).
//! - A group that missed (at most one scale event per parent each 500 ms) becomes its parent's
//!   `scale_grp` if its target is the tightest, and lowers the parent's `scale_cookie` by
//!   `nr_requests / 4`. A group that met its target with at least 5 samples, when it is the
//!   `scale_grp`, raises the cookie by `nr_requests / 16` (to the default at most).
//! - Each sibling compares the parent's cookie with its own at its next submission
//!   (`check_scale_change`): a lower cookie halves its `max_depth` (down to 1) — unless the
//!   sibling's own target is at least as tight as the scale group's, or it did no more than 5 %
//!   of the parent's samples; a higher cookie adds `nr_requests / 16`; the default cookie
//!   lifts the limit.
//! - A 1 s timer per device (`blkiolatency_timer_fn`) raises a cookie left low without a scale
//!   group, and forgets a scale group 5 s after its last scale event.
//!
//! # Simplifications
//!
//! No `use_delay` sleeps on return to user space (the kernel adds delay only for bios issued
//! as root, which the model has none of: a group at depth 1 stays at 1); no per-CPU stat
//! batching; every cgroup of the scenario has a group (the kernel makes them on first I/O).

use crate::Ns;
use std::collections::VecDeque;

/// `DEFAULT_SCALE_COOKIE`.
const DEFAULT_SCALE_COOKIE: u64 = 1_000_000;
/// `BLKIOLATENCY_MIN_WIN_SIZE`, `BLKIOLATENCY_MAX_WIN_SIZE`.
const MIN_WIN_NS: Ns = 100_000_000;
const MAX_WIN_NS: Ns = 1_000_000_000;
/// `BLKIOLATENCY_MIN_ADJUST_TIME`.
const MIN_ADJUST_NS: Ns = 500_000_000;
/// `BLKIOLATENCY_MIN_GOOD_SAMPLES`.
const MIN_GOOD_SAMPLES: u64 = 5;
/// The period of `blkiolatency_timer_fn`.
pub(crate) const TIMER_NS: Ns = 1_000_000_000;

/// One window's latencies (`struct latency_stat`).
#[derive(Clone, Copy, Debug, Default)]
struct Stat {
    /// Non-rotational: bios at or over the target, and all bios.
    missed: u64,
    total: u64,
    /// Rotational: the sum of latencies (with `total`, the mean).
    sum_ns: u128,
}

/// A cgroup's group on one device (`struct iolatency_grp`).
#[derive(Debug)]
struct Grp {
    parent: Option<usize>,
    /// io.latency target, ns (0: none).
    min_lat_nsec: Ns,
    max_depth: u64,
    inflight: u64,
    /// Requests waiting at this level, oldest first.
    waiters: VecDeque<u32>,
    /// Its view of the parent's scale cookie.
    scale_cookie: u64,
    cur_win_nsec: Ns,
    window_start: Ns,
    /// The window in progress, and the summary kept across windows (`cur_stat`).
    stat: Stat,
    cur_stat: Stat,
    nr_samples: u64,
}

/// What a parent keeps about its children (`struct child_latency_info`); index
/// `groups.len()` is the root's.
#[derive(Debug)]
struct ChildLat {
    scale_cookie: u64,
    scale_grp: Option<usize>,
    scale_lat: Ns,
    last_scale_event: Option<Ns>,
    nr_samples: u64,
}

/// blk-iolatency of one request queue.
#[derive(Debug)]
pub(crate) struct IoLatency {
    rotational: bool,
    /// `nr_requests` of the queue.
    qd: u64,
    grps: Vec<Grp>,
    child: Vec<ChildLat>,
    /// Times a level made a bio wait, and scale-down events, for the results.
    pub nr_waits: u64,
    pub nr_scale_downs: u64,
    /// Per cgroup, for the results: see [`IolatGroupStats`].
    pub stats: Vec<IolatGroupStats>,
}

/// What blk-iolatency did to and for one cgroup on one device over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IolatGroupStats {
    /// Its io.latency target, ns (0: none).
    pub target_ns: Ns,
    /// Windows in which it missed its target and cut its siblings' depth (scale-downs).
    pub missed: u64,
    /// Its bios that waited at some level for the depth blk-iolatency allowed, and how long
    /// in all (from submission to admission), ns.
    pub waits: u64,
    pub wait_ns: Ns,
    /// The smallest queue depth it was allowed (`u64::MAX`: never limited).
    pub min_depth: u64,
}

impl IoLatency {
    /// Groups for the cgroups `parents[i]` describes (the parent of cgroup i, `None`: the
    /// root), with io.latency targets `targets[i]` on this device (0: none).
    pub(crate) fn new(parents: &[Option<usize>], targets: &[Ns], rotational: bool, nr_requests: u32) -> Self {
        let grps = parents
            .iter()
            .zip(targets)
            .map(|(&parent, &t)| Grp {
                parent,
                min_lat_nsec: t,
                max_depth: u64::MAX,
                inflight: 0,
                waiters: VecDeque::new(),
                scale_cookie: DEFAULT_SCALE_COOKIE,
                cur_win_nsec: (t << 4).clamp(MIN_WIN_NS, MAX_WIN_NS),
                window_start: 0,
                stat: Stat::default(),
                cur_stat: Stat::default(),
                nr_samples: 0,
            })
            .collect();
        let child = (0..=parents.len())
            .map(|_| ChildLat {
                scale_cookie: DEFAULT_SCALE_COOKIE,
                scale_grp: None,
                scale_lat: 0,
                last_scale_event: None,
                nr_samples: 0,
            })
            .collect();
        IoLatency {
            rotational,
            qd: u64::from(nr_requests).max(1),
            stats: targets
                .iter()
                .map(|&t| IolatGroupStats {
                    target_ns: t,
                    min_depth: u64::MAX,
                    ..Default::default()
                })
                .collect(),
            grps,
            child,
            nr_waits: 0,
            nr_scale_downs: 0,
        }
    }

    /// The levels a bio of cgroup `cg` passes, leaf first.
    fn levels(&self, cg: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(Some(cg), move |&g| self.grps[g].parent)
    }

    fn parent_info(&self, g: usize) -> usize {
        self.grps[g].parent.unwrap_or(self.grps.len())
    }

    /// Admit request `id` of cgroup `cg` from level `from` (0: the leaf) upward: true when
    /// every level took it; else it waits at the level returned in `Err`.
    pub(crate) fn throttle(&mut self, id: u32, cg: usize, from: usize) -> Result<(), usize> {
        let levels: Vec<usize> = self.levels(cg).collect();
        for (k, &g) in levels.iter().enumerate().skip(from) {
            self.check_scale_change(g);
            let grp = &mut self.grps[g];
            if grp.inflight < grp.max_depth {
                grp.inflight += 1;
            } else {
                grp.waiters.push_back(id);
                self.nr_waits += 1;
                return Err(k);
            }
        }
        Ok(())
    }

    /// The level (from the leaf) request `id` of cgroup `cg` waits at, if it waits.
    pub(crate) fn waits_at(&self, id: u32, cg: usize) -> Option<usize> {
        self.levels(cg).position(|g| self.grps[g].waiters.contains(&id))
    }

    /// `blkcg_iolatency_done_bio` for a request of cgroup `cg` issued at `issue_ns`: release
    /// each level, record the latency where there is a target, and check a window that has
    /// ended. Returns the waiters that may go on: (request, cgroup level it got through).
    pub(crate) fn done(&mut self, now: Ns, issue_ns: Ns, cg: usize, woken: &mut Vec<(u32, usize)>) {
        let levels: Vec<usize> = self.levels(cg).collect();
        for (k, &g) in levels.iter().enumerate() {
            let grp = &mut self.grps[g];
            grp.inflight = grp.inflight.saturating_sub(1);
            if grp.min_lat_nsec > 0 && now > issue_ns {
                let lat = now - issue_ns;
                grp.stat.total += 1;
                grp.stat.sum_ns += u128::from(lat);
                if lat >= grp.min_lat_nsec {
                    grp.stat.missed += 1;
                }
                if now > grp.window_start && now - grp.window_start >= grp.cur_win_nsec {
                    grp.window_start = now;
                    self.check_latencies(g, now);
                }
            }
            // wake_up: the oldest waiter of the level gets the freed slot.
            let grp = &mut self.grps[g];
            if grp.inflight < grp.max_depth {
                if let Some(w) = grp.waiters.pop_front() {
                    grp.inflight += 1;
                    woken.push((w, k + 1));
                }
            }
        }
    }

    fn samples(s: &Stat) -> u64 {
        s.total
    }

    /// `latency_sum_ok`.
    fn sum_ok(&self, g: usize, s: &Stat) -> bool {
        let t = self.grps[g].min_lat_nsec;
        if self.rotational {
            s.total == 0 || s.sum_ns / u128::from(s.total) <= u128::from(t)
        } else {
            s.missed < (s.total / 10).max(1)
        }
    }

    /// `iolatency_check_latencies`: a window of group `g` ended.
    fn check_latencies(&mut self, g: usize, now: Ns) {
        let stat = std::mem::take(&mut self.grps[g].stat);
        let p = self.parent_info(g);
        if self.sum_ok(g, &stat) && self.child[p].scale_cookie == DEFAULT_SCALE_COOKIE {
            return;
        }
        let grp = &mut self.grps[g];
        grp.cur_stat.total += stat.total;
        grp.cur_stat.missed += stat.missed;
        grp.cur_stat.sum_ns += stat.sum_ns;
        let n = Self::samples(&grp.cur_stat);
        let lat = &mut self.child[p];
        lat.nr_samples = lat.nr_samples - lat.nr_samples.min(grp.nr_samples) + n;
        grp.nr_samples = n;
        if lat.last_scale_event.is_some_and(|t| t >= now || now - t < MIN_ADJUST_NS) {
            return;
        }
        let cur = self.grps[g].cur_stat;
        let min_lat = self.grps[g].min_lat_nsec;
        if self.sum_ok(g, &cur) && self.sum_ok(g, &stat) {
            if Self::samples(&cur) < MIN_GOOD_SAMPLES {
                return;
            }
            if self.child[p].scale_grp == Some(g) {
                self.child[p].last_scale_event = Some(now);
                self.scale_cookie_change(p, true);
            }
        } else if self.child[p].scale_lat == 0 || self.child[p].scale_lat >= min_lat {
            let lat = &mut self.child[p];
            lat.last_scale_event = Some(now);
            if lat.scale_grp.is_none() || lat.scale_lat > min_lat {
                lat.scale_lat = min_lat;
                lat.scale_grp = Some(g);
            }
            self.nr_scale_downs += 1;
            self.stats[g].missed += 1;
            self.scale_cookie_change(p, false);
        }
        self.grps[g].cur_stat = Stat::default();
    }

    /// `scale_amount`.
    fn scale_amount(&self, up: bool) -> u64 {
        (if up { self.qd >> 4 } else { self.qd >> 2 }).max(1)
    }

    /// `scale_cookie_change`.
    fn scale_cookie_change(&mut self, p: usize, up: bool) {
        let scale = self.scale_amount(up);
        let max_scale = self.qd << 1;
        let lat = &mut self.child[p];
        let old = lat.scale_cookie;
        let diff = DEFAULT_SCALE_COOKIE.saturating_sub(old);
        if up {
            if scale + old > DEFAULT_SCALE_COOKIE {
                lat.scale_cookie = DEFAULT_SCALE_COOKIE;
            } else if diff > self.qd {
                lat.scale_cookie += 1;
            } else {
                lat.scale_cookie += scale;
            }
        } else if diff <= max_scale {
            lat.scale_cookie -= scale;
        }
    }

    /// `check_scale_change` for group `g` at a submission.
    fn check_scale_change(&mut self, g: usize) {
        let p = self.parent_info(g);
        let (cur, scale_lat, parent_samples) = {
            let lat = &self.child[p];
            (lat.scale_cookie, lat.scale_lat, lat.nr_samples)
        };
        let ours = self.grps[g].scale_cookie;
        if cur == ours {
            return;
        }
        let down = cur < ours;
        self.grps[g].scale_cookie = cur;
        let grp = &self.grps[g];
        if down && grp.min_lat_nsec > 0 {
            if scale_lat == 0 || grp.min_lat_nsec <= scale_lat {
                return;
            }
            let thresh = (parent_samples * 5 / 100).max(1);
            if grp.nr_samples <= thresh {
                return;
            }
        }
        if grp.max_depth == 1 && down {
            return;
        }
        if cur == DEFAULT_SCALE_COOKIE {
            self.grps[g].max_depth = u64::MAX;
            return;
        }
        self.scale_change(g, !down);
    }

    /// `scale_change`: up by `nr_requests / 16` (to unlimited at `nr_requests`), down by half.
    fn scale_change(&mut self, g: usize, up: bool) {
        let qd = self.qd;
        let scale = self.scale_amount(up);
        let grp = &mut self.grps[g];
        let old = grp.max_depth.min(qd);
        if up {
            if old < qd {
                grp.max_depth = (old + scale).min(qd);
            }
        } else {
            grp.max_depth = (old >> 1).max(1);
        }
        let d = self.grps[g].max_depth;
        self.stats[g].min_depth = self.stats[g].min_depth.min(d);
    }

    /// A bio of cgroup `cg` submitted at `submit_ns` passed every level at `now` after
    /// waiting at one or more.
    pub(crate) fn admitted_after_wait(&mut self, cg: usize, submit_ns: Ns, now: Ns) {
        let s = &mut self.stats[cg];
        s.waits += 1;
        s.wait_ns += now.saturating_sub(submit_ns);
    }

    /// `blkiolatency_timer_fn` at `now`.
    pub(crate) fn timer(&mut self, now: Ns) {
        for p in 0..self.child.len() {
            if self.child[p].scale_cookie >= DEFAULT_SCALE_COOKIE {
                continue;
            }
            let last = self.child[p].last_scale_event;
            if last.is_some_and(|t| t >= now) {
                continue;
            }
            if self.child[p].scale_grp.is_none() {
                self.scale_cookie_change(p, true);
                continue;
            }
            if last.is_none_or(|t| now - t >= 5 * TIMER_NS) {
                self.child[p].scale_grp = None;
            }
        }
    }

    /// The queue depth group `g` may use now (`u64::MAX`: unlimited).
    #[cfg(test)]
    pub(crate) fn max_depth(&self, g: usize) -> u64 {
        self.grps[g].max_depth
    }

    /// Requests in flight at group `g`'s level.
    pub(crate) fn inflight(&self, g: usize) -> u64 {
        self.grps[g].inflight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Ns = 1_000_000;

    /// Two siblings on an SSD with 64 requests: /db (target 5 ms) and /batch (none). /db
    /// misses: the cookie falls by 16; /batch's next submission halves its depth from 64 to 32,
    /// then 16, ...; once /db meets its target again the cookie climbs by 4 and /batch's depth
    /// with it.
    #[test]
    fn a_missing_group_halves_its_siblings_depth_and_recovery_raises_it() {
        let mut l = IoLatency::new(&[None, None], &[5 * MS, 0], false, 64);
        let (db, batch) = (0, 1);
        let mut woken = Vec::new();
        // One window (100 ms, the minimum) of /db bios all over the target.
        let mut t = 0;
        for i in 0..20 {
            l.throttle(i, db, 0).unwrap();
            t += 6 * MS;
            l.done(t, t - 6 * MS, db, &mut woken);
        }
        assert_eq!(l.child[2].scale_cookie, DEFAULT_SCALE_COOKIE - 16);
        assert_eq!(l.child[2].scale_grp, Some(db));
        l.throttle(100, batch, 0).unwrap();
        assert_eq!(l.max_depth(batch), 32);
        // More misses 500 ms later: another 16 off, and 16 more off the batch depth.
        for i in 0..100 {
            l.throttle(200 + i, db, 0).unwrap();
            t += 6 * MS;
            l.done(t, t - 6 * MS, db, &mut woken);
        }
        l.throttle(101, batch, 0).unwrap();
        assert_eq!(l.max_depth(batch), 16);
        // /batch at its depth (two in flight already, fourteen more): the 17th waits.
        for i in 0..14 {
            l.throttle(300 + i, batch, 0).unwrap();
        }
        assert_eq!(l.throttle(400, batch, 0), Err(0));
        // One of them completes: the waiter takes its slot.
        l.done(t, t - MS, batch, &mut woken);
        assert_eq!(woken, vec![(400, 1)]);
        // /db fast again (1 ms) for long enough: the cookie climbs back, 4 per scale event.
        for i in 0..2000 {
            l.throttle(1000 + i, db, 0).unwrap();
            t += MS;
            l.done(t, t - MS, db, &mut woken);
        }
        assert!(l.child[2].scale_cookie > DEFAULT_SCALE_COOKIE - 32);
        l.throttle(500, batch, 0).ok();
        assert!(l.max_depth(batch) > 16, "depth {}", l.max_depth(batch));
    }

    /// A sibling with a tighter target than the missing group's is not scaled down; the window
    /// follows the target (16×, 100 ms – 1 s).
    #[test]
    fn tighter_targets_are_spared_and_windows_follow_targets() {
        let mut l = IoLatency::new(&[None, None], &[50 * MS, MS], false, 64);
        assert_eq!(l.grps[0].cur_win_nsec, 800 * MS);
        assert_eq!(l.grps[1].cur_win_nsec, 100 * MS);
        l.grps[1].nr_samples = 100;
        l.child[2].nr_samples = 100;
        l.child[2].scale_cookie -= 16;
        l.child[2].scale_lat = 50 * MS;
        l.throttle(1, 1, 0).unwrap();
        assert_eq!(l.max_depth(1), u64::MAX);
        assert_eq!(IoLatency::new(&[None], &[200 * MS], true, 64).grps[0].cur_win_nsec, MAX_WIN_NS);
    }
}
