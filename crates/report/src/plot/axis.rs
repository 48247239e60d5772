//! Data to pixel mapping and tick placement of one axis.

use super::ticks::{self, Ticks};
use super::Axis;

/// Data → pixel mapping of one axis.
#[derive(Clone, Copy)]
pub(super) struct Map {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub nines: bool,
    pub p0: f64,
    pub p1: f64,
}

/// The nines transform, with values at or past the top clamped to it.
fn nines_t(v: f64, hi: f64) -> f64 {
    -(1.0 - v.clamp(0.0, hi)).log10()
}

impl Map {
    /// The mapping with its transform of `lo` and `hi` computed once, for mapping many points.
    pub fn prepared(self) -> impl Fn(f64) -> f64 {
        let t = move |v: f64| {
            if self.log {
                v.log10()
            } else if self.nines {
                nines_t(v, self.hi)
            } else {
                v
            }
        };
        let (lo, hi) = (t(self.lo), t(self.hi));
        let (p0, p1) = (self.p0, self.p1);
        move |v| {
            let f = if hi > lo { (t(v) - lo) / (hi - lo) } else { 0.5 };
            p0 + f * (p1 - p0)
        }
    }

    pub fn px_of(self, v: f64) -> f64 {
        let (lo, hi, v) = if self.log {
            (self.lo.log10(), self.hi.log10(), v.log10())
        } else if self.nines {
            (nines_t(self.lo, self.hi), nines_t(self.hi, self.hi), nines_t(v, self.hi))
        } else {
            (self.lo, self.hi, v)
        };
        let f = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        self.p0 + f * (self.p1 - self.p0)
    }
}

pub(super) fn axis_ticks(axis: &Axis, values: &mut dyn Iterator<Item = f64>, target: usize) -> Ticks {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in values {
        if v.is_finite() && (!axis.log || v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if let Some(m) = axis.min {
        lo = m;
    }
    if let Some(m) = axis.max {
        hi = m;
    }
    if axis.nines {
        let top = axis.max.unwrap_or(0.999);
        let mut major = vec![(0.0, "0%".to_string()), (0.5, "50%".to_string())];
        let mut k = 1;
        loop {
            let v = 1.0 - 10f64.powi(-k);
            if v > top + 1e-12 {
                break;
            }
            let pct = 100.0 * v;
            let decimals = (k - 2).max(0) as usize;
            major.push((v, format!("{pct:.decimals$}%")));
            k += 1;
        }
        return Ticks {
            lo: 0.0,
            hi: top,
            major,
            minor: Vec::new(),
        };
    }
    if axis.log {
        if !(lo.is_finite() && hi.is_finite()) {
            return ticks::log10(1.0, 10.0);
        }
        let mut t = ticks::log10(lo, hi);
        // Keep explicit limits exact.
        if let Some(m) = axis.min {
            t.lo = m;
        }
        if let Some(m) = axis.max {
            t.hi = m;
        }
        t
    } else {
        if !(lo.is_finite() && hi.is_finite()) {
            lo = 0.0;
            hi = 1.0;
        }
        if axis.zero {
            lo = lo.min(0.0);
            hi = hi.max(0.0);
        }
        let mut t = ticks::linear(lo, hi, target);
        if let (Some(a), Some(b)) = (axis.min, axis.max) {
            t.lo = a;
            t.hi = b;
            t.major
                .retain(|(v, _)| *v >= a - 1e-9 * (b - a).abs() && *v <= b + 1e-9 * (b - a).abs());
        }
        t
    }
}
