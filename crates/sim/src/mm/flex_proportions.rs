//! Flexible proportions (`lib/flex_proportions.c`): each wb's share of recent writeback
//! completions, aged by halving every `VM_COMPLETIONS_PERIOD_LEN` (3 s). The kernel keeps these
//! in per-CPU counters; the model keeps exact sums (the batching error is ignored).

/// `FPROP_FRAC_SHIFT`: fractions are in 1/1024.
pub(crate) const FPROP_FRAC_SHIFT: u32 = 10;
pub(crate) const FPROP_FRAC_BASE: u64 = 1 << FPROP_FRAC_SHIFT;

/// The domain-wide side (`struct fprop_global`).
#[derive(Clone, Debug)]
pub(crate) struct FpropGlobal {
    pub events: u64,
    pub period: u64,
}

impl Default for FpropGlobal {
    fn default() -> Self {
        FpropGlobal { events: 1, period: 0 }
    }
}

/// One wb's side (`struct fprop_local_percpu`).
#[derive(Clone, Debug, Default)]
pub(crate) struct FpropLocal {
    pub events: u64,
    pub period: u64,
}

impl FpropGlobal {
    /// `fprop_new_period`: declare `periods` new periods. Returns false (and ages nothing)
    /// when there were no events, which stops the aging timer until the next event.
    pub(crate) fn new_period(&mut self, periods: u32) -> bool {
        if self.events <= 1 {
            return false;
        }
        self.events = if periods < 64 { self.events >> periods } else { 0 };
        self.period += periods as u64;
        true
    }
}

impl FpropLocal {
    /// `fprop_reflect_period_percpu`: age this counter lazily to the global period.
    fn reflect_period(&mut self, g: &FpropGlobal) {
        if self.period == g.period {
            return;
        }
        let gap = g.period - self.period;
        self.events = if gap < 64 { self.events >> gap } else { 0 };
        self.period = g.period;
    }

    /// `fprop_fraction_percpu`: this wb's share as num/den.
    pub(crate) fn fraction(&mut self, g: &FpropGlobal) -> (u64, u64) {
        self.reflect_period(g);
        let num = self.events;
        let den = g.events.max(num).max(1);
        (num, den)
    }

    /// `__fprop_add_percpu_max`: count `nr` completions, but never let the share exceed
    /// `max_frac`/1024 (the bdi's `max_ratio`).
    pub(crate) fn add_max(&mut self, g: &mut FpropGlobal, max_frac: u64, nr: u64) {
        let mut nr = nr;
        if max_frac < FPROP_FRAC_BASE {
            let (num, den) = self.fraction(g);
            let room = (den as i128) * (max_frac as i128) - ((num as i128) << FPROP_FRAC_SHIFT);
            if room < 0 {
                return;
            }
            let per = (FPROP_FRAC_BASE - max_frac) as i128;
            if room < nr as i128 * per {
                nr = ((room + per - 1) / per) as u64;
            }
        }
        self.reflect_period(g);
        self.events += nr;
        g.events += nr;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_follow_completions_and_halve_each_period() {
        let mut g = FpropGlobal::default();
        let mut a = FpropLocal::default();
        let mut b = FpropLocal::default();
        a.add_max(&mut g, FPROP_FRAC_BASE, 3000);
        b.add_max(&mut g, FPROP_FRAC_BASE, 1000);
        let (n, d) = a.fraction(&g);
        assert!((n as f64 / d as f64 - 0.75).abs() < 0.01);
        // b goes idle: after two periods a's recent events dominate.
        assert!(g.new_period(1));
        a.add_max(&mut g, FPROP_FRAC_BASE, 3000);
        assert!(g.new_period(1));
        let (nb, db) = b.fraction(&g);
        assert!(nb * 8 < db, "idle wb share should decay: {nb}/{db}");
    }

    #[test]
    fn max_frac_caps_the_share() {
        let mut g = FpropGlobal::default();
        let mut a = FpropLocal::default();
        let mut b = FpropLocal::default();
        b.add_max(&mut g, FPROP_FRAC_BASE, 1000);
        for _ in 0..100 {
            a.add_max(&mut g, FPROP_FRAC_BASE / 10, 1000);
        }
        let (n, d) = a.fraction(&g);
        assert!(n * 1024 <= d * 103, "share {n}/{d} above 10 %");
    }

    #[test]
    fn aging_stops_without_events() {
        let mut g = FpropGlobal::default();
        assert!(!g.new_period(1));
    }

    #[test]
    fn add_max_tops_up_exactly_to_the_cap() {
        // max_ratio 10 % → max_frac = 1024·100,000/1,000,000 = 102.
        let mut g = FpropGlobal::default();
        let mut a = FpropLocal::default();
        let mut b = FpropLocal::default();
        b.add_max(&mut g, FPROP_FRAC_BASE, 1000);
        assert_eq!((b.events, g.events), (1000, 1001));
        // a at 0/1001: room = 1001·102 − 0 = 102,102 < 1000·(1024 − 102), so only
        // ceil(102,102/922) = 111 events count.
        a.add_max(&mut g, 102, 1000);
        assert_eq!((a.events, g.events), (111, 1112));
        // Now 1112·102 − 111·1024 = −240 < 0: nothing counts.
        a.add_max(&mut g, 102, 1000);
        assert_eq!((a.events, g.events), (111, 1112));
        assert_eq!(a.fraction(&g), (111, 1112));
    }

    #[test]
    fn aging_halves_global_at_once_and_locals_lazily() {
        let mut g = FpropGlobal::default();
        let mut a = FpropLocal::default();
        a.add_max(&mut g, FPROP_FRAC_BASE, 1000); // a 1000, g 1001
                                                  // Three missed periods at once: 1001 >> 3 = 125; a is aged on its next read.
        assert!(g.new_period(3));
        assert_eq!((g.events, g.period, a.events), (125, 3, 1000));
        assert_eq!(a.fraction(&g), (125, 125));
        assert_eq!((a.events, a.period), (125, 3));
        // 64 or more periods zero everything; a local 64 periods behind reads 0 (den 1).
        assert!(g.new_period(64));
        assert_eq!(g.events, 0);
        assert_eq!(a.fraction(&g), (0, 1));
        assert!(!g.new_period(1));
    }
}
