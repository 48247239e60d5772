//! Floating proportions as `lib/proportions.c` had them (2.6.24 → 3.4): shares of events
//! counted in *events*, not time. The global counter's period is 2^`shift` events; a local
//! counter is halved once for every half period it missed, lazily, when it is next read or
//! bumped. A share is `local / (period/2 + global mod period/2)`.
//!
//! The writeback code keeps two descriptors: `vm_completions` (per bdi, writeback
//! completions; the bdi's share of the dirty threshold) and, until 3.2, `vm_dirties` (per
//! task, pages dirtied; the task dirty limit). Both use `calc_period_shift()` = 2 +
//! ilog2(dirty threshold − 1), so a share decays over about a dirty limit's worth of events.
//! The kernel keeps per-CPU counters with a batch; the model keeps exact sums.

/// `PROP_FRAC_SHIFT`: `max_prop_frac` is in 1/1024.
pub(crate) const PROP_FRAC_SHIFT: u32 = 10;
pub(crate) const PROP_FRAC_BASE: u64 = 1 << PROP_FRAC_SHIFT;

fn ilog2(x: u64) -> u32 {
    63 - x.max(1).leading_zeros()
}

/// `calc_period_shift`: 2 + ilog2(dirty_total − 1), so that period/2 ≈ the dirty limit.
pub(crate) fn calc_period_shift(dirty_total: u64) -> u32 {
    2 + ilog2(dirty_total.saturating_sub(1).max(1))
}

/// `struct prop_global` (one of the descriptor's two; the model never changes the shift).
#[derive(Clone, Debug)]
pub(crate) struct PropGlobal {
    pub shift: u32,
    pub events: u64,
}

/// `struct prop_local_percpu` / `prop_local_single`: one source's decayed count.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PropLocal {
    pub events: u64,
    /// The global half-period count this counter was last normalised to.
    pub period: u64,
}

impl PropGlobal {
    pub(crate) fn new(shift: u32) -> Self {
        PropGlobal {
            shift: shift.clamp(1, 62),
            events: 0,
        }
    }

    fn half(&self) -> u64 {
        1 << (self.shift - 1)
    }

    /// The current period counter, masked to whole half periods.
    fn global_period(&self) -> u64 {
        self.events & !(self.half() - 1)
    }
}

/// A descriptor and one local counter per source, as a machine leaves them after writing
/// for a while: `shares_pct[i]` percent of one half period's events counted for source `i`
/// (all zero: freshly booted). The global count stands at exactly one half period, so each
/// share is read back whole and the first real events start diluting it at once.
pub(crate) fn with_prior_shares(shift: u32, shares_pct: &[u32], nr_locals: usize) -> (PropGlobal, Vec<PropLocal>) {
    let mut g = PropGlobal::new(shift);
    let mut locals = vec![PropLocal::default(); nr_locals];
    if shares_pct.iter().any(|&s| s > 0) {
        g.events = g.half();
        let period = g.global_period();
        for (l, &pct) in locals.iter_mut().zip(shares_pct) {
            *l = PropLocal {
                events: g.half() * u64::from(pct.min(100)) / 100,
                period,
            };
        }
    }
    (g, locals)
}

impl PropLocal {
    /// `prop_norm_percpu` / `prop_norm_single`: halve once per missed half period.
    pub(crate) fn norm(&mut self, g: &PropGlobal) {
        let gp = g.global_period();
        if self.period == gp {
            return;
        }
        let missed = (gp - self.period) >> (g.shift - 1);
        self.events = if missed < 64 { self.events >> missed } else { 0 };
        self.period = gp;
    }

    /// `__prop_inc_percpu` for `n` events at once.
    pub(crate) fn inc(&mut self, g: &mut PropGlobal, n: u64) {
        self.norm(g);
        self.events += n;
        g.events += n;
    }

    /// `__prop_inc_percpu_max`: count only while the share is below `max_frac`/1024.
    pub(crate) fn inc_max(&mut self, g: &mut PropGlobal, max_frac: u64, n: u64) {
        if max_frac < PROP_FRAC_BASE {
            let (num, den) = self.fraction(g);
            if (num << PROP_FRAC_SHIFT) >= max_frac * den {
                return;
            }
        }
        self.inc(g, n);
    }

    /// `prop_fraction_percpu` / `prop_fraction_single`: (numerator, denominator).
    pub(crate) fn fraction(&mut self, g: &PropGlobal) -> (u64, u64) {
        self.norm(g);
        let half = g.half();
        let den = half + (g.events & (half - 1));
        (self.events, den.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn period_shift_follows_the_dirty_limit() {
        // 10 % of ~500k dirtyable pages = 52,428 → ilog2(52,427) = 15 → shift 17:
        // a half period of 65,536 pages (256 MiB) of completions.
        assert_eq!(calc_period_shift(52_428), 17);
        assert_eq!(calc_period_shift(2), 2);
    }

    #[test]
    fn shares_decay_by_half_per_missed_half_period() {
        let mut g = PropGlobal::new(4); // half period = 8 events
        let (mut a, mut b) = (PropLocal::default(), PropLocal::default());
        a.inc(&mut g, 6);
        b.inc(&mut g, 1);
        // 7 events: den = 8 + 7 = 15.
        assert_eq!(a.fraction(&g), (6, 15));
        // b does the next 17 events: global 24 = 3 half periods; a missed 3 → 6 >> 3 = 0.
        b.inc(&mut g, 17);
        assert_eq!(a.fraction(&g), (0, 8));
        // b was normalised at 7 (period 0) before adding: 1 + 17 = 18, now 3 periods late → 2.
        assert_eq!(b.fraction(&g).0, 2);
    }

    #[test]
    fn prior_shares_read_back_and_dilute() {
        let (mut g, mut l) = with_prior_shares(10, &[75, 25], 3); // half period 512
        assert_eq!(l[0].fraction(&g), (384, 512));
        assert_eq!(l[1].fraction(&g), (128, 512));
        assert_eq!(l[2].fraction(&g).0, 0);
        // The third source does the next half period alone: a period closes, and every count
        // made before it halves, its own included.
        l[2].inc(&mut g, 512);
        let (a, den) = l[0].fraction(&g);
        let (c, _) = l[2].fraction(&g);
        assert_eq!((a, c, den), (192, 256, 512));
        // Freshly booted: nothing counted anywhere.
        let (g, mut l) = with_prior_shares(10, &[0, 0], 2);
        assert_eq!((g.events, l[0].fraction(&g).0), (0, 0));
    }

    #[test]
    fn max_frac_stops_counting_at_the_cap() {
        let mut g = PropGlobal::new(10);
        let mut a = PropLocal::default();
        let mut other = PropLocal::default();
        other.inc(&mut g, 100);
        // Cap at 50 %: a counts while a/den < 1/2.
        for _ in 0..1000 {
            a.inc_max(&mut g, PROP_FRAC_BASE / 2, 1);
        }
        let (num, den) = a.fraction(&g);
        assert!(num * 2 <= den + 1, "{num}/{den}");
    }
}
