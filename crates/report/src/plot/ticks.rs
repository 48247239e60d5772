//! Axis ranges and tick positions with "nice" numbers (1, 2, 5 × 10^k on linear axes, decades
//! and their 2/5 multiples on log axes), and tick labels that show only the digits the step
//! needs.

/// Ticks of one axis: the range drawn and the labelled (major) and unlabelled (minor) ticks.
#[derive(Clone, Debug, PartialEq)]
pub struct Ticks {
    pub lo: f64,
    pub hi: f64,
    pub major: Vec<(f64, String)>,
    pub minor: Vec<f64>,
}

/// The nice number (1, 2, 2.5, 5 or 10 × 10^k) nearest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let f = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 2.5 {
        2.5
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    f * mag
}

/// Decimals needed to print multiples of `step` exactly (0.25 → 2, 5 → 0).
fn decimals_for(step: f64) -> usize {
    let mut d = 0;
    let mut s = step;
    while d < 9 && (s - s.round()).abs() > 1e-9 * s.abs().max(1.0) {
        s *= 10.0;
        d += 1;
    }
    d
}

/// `12000` → "12k", `1500000` → "1.5M"; plain digits below 10000.
pub fn format_value(v: f64, decimals: usize) -> String {
    let a = v.abs();
    if a >= 1e9 - 0.5 {
        return trim_zeros(format!("{:.2}", v / 1e9)) + "G";
    }
    if a >= 1e6 - 0.5 {
        return trim_zeros(format!("{:.2}", v / 1e6)) + "M";
    }
    if a >= 1e4 - 0.5 {
        return trim_zeros(format!("{:.2}", v / 1e3)) + "k";
    }
    let s = format!("{v:.decimals$}");
    if s.starts_with('-') && s[1..].bytes().all(|b| b == b'0' || b == b'.') {
        s[1..].to_string()
    } else {
        s
    }
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Linear ticks covering [lo, hi] with about `target` intervals; the range is widened to whole
/// steps.
pub fn linear(lo: f64, hi: f64, target: usize) -> Ticks {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    if hi <= lo {
        // A flat series: open a window around it.
        let v = lo;
        let pad = if v == 0.0 { 1.0 } else { v.abs() * 0.1 };
        lo = if v >= 0.0 { (v - pad).max(0.0) } else { v - pad };
        hi = v + pad;
    }
    let step = nice_step((hi - lo) / target.max(1) as f64);
    let first = (lo / step + 1e-9).floor();
    let last = (hi / step - 1e-9).ceil();
    let decimals = decimals_for(step);
    let mut major = Vec::new();
    let mut i = first;
    while i <= last + 0.5 {
        let v = i * step;
        let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
        major.push((v, format_value(v, decimals)));
        i += 1.0;
    }
    Ticks {
        lo: first * step,
        hi: last * step,
        major,
        minor: Vec::new(),
    }
}

/// Log10 ticks covering [lo, hi] (both > 0), widened to whole decades. Decades are labelled;
/// with few decades the 2 and 5 multiples are labelled too; the other multiples are minor ticks.
pub fn log10(lo: f64, hi: f64) -> Ticks {
    let (lo, hi) = if lo > 0.0 && hi.is_finite() && hi >= lo {
        (lo, hi)
    } else {
        (1.0, 10.0)
    };
    let mut d0 = (lo.log10() + 1e-9).floor() as i32;
    let mut d1 = (hi.log10() - 1e-9).ceil() as i32;
    if d1 <= d0 {
        d1 = d0 + 1;
    }
    // Keep the plot from being mostly empty decades when the data sit near a boundary.
    if d1 - d0 > 12 {
        d0 = d1 - 12;
    }
    let decades = d1 - d0;
    let every = if decades > 8 { 2 } else { 1 };
    let mut major = Vec::new();
    let mut minor = Vec::new();
    for d in d0..=d1 {
        let base = 10f64.powi(d);
        if (d - d0) % every == 0 {
            major.push((base, log_label(d, 1)));
        } else {
            minor.push(base);
        }
        if d == d1 {
            break;
        }
        for m in 2..=9 {
            let v = base * m as f64;
            if decades <= 2 && (m == 2 || m == 5) {
                major.push((v, log_label(d, m)));
            } else {
                minor.push(v);
            }
        }
    }
    Ticks {
        lo: 10f64.powi(d0),
        hi: 10f64.powi(d1),
        major,
        minor,
    }
}

/// The label of m × 10^d: "0.05", "2", "100", "10k".
fn log_label(d: i32, m: u32) -> String {
    if d < 0 {
        let decimals = (-d) as usize;
        format!("{:.decimals$}", m as f64 * 10f64.powi(d))
    } else {
        format_value(m as f64 * 10f64.powi(d), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(t: &Ticks) -> Vec<&str> {
        t.major.iter().map(|(_, s)| s.as_str()).collect()
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.13), 0.2);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(22.0), 25.0);
        assert_eq!(nice_step(100.0), 100.0);
    }

    #[test]
    fn linear_ticks_cover_the_data_with_round_labels() {
        let t = linear(0.0, 60.0, 6);
        assert_eq!(labels(&t), ["0", "10", "20", "30", "40", "50", "60"]);
        let t = linear(0.0, 104.0, 6);
        assert_eq!((t.lo, t.hi), (0.0, 120.0));
        assert_eq!(labels(&t), ["0", "20", "40", "60", "80", "100", "120"]);
        let t = linear(0.0, 0.9, 6);
        assert_eq!(labels(&t)[1], "0.2");
        let t = linear(-3.0, 3.0, 6);
        assert_eq!(labels(&t), ["-3", "-2", "-1", "0", "1", "2", "3"]);
        let t = linear(0.0, 45000.0, 5);
        assert_eq!(labels(&t), ["0", "10k", "20k", "30k", "40k", "50k"]);
        // A flat series still gets a range.
        let t = linear(5.0, 5.0, 5);
        assert!(t.lo < 5.0 && t.hi > 5.0);
    }

    #[test]
    fn log_ticks() {
        let t = log10(0.031, 180.0);
        assert_eq!((t.lo, t.hi), (0.01, 1000.0));
        assert_eq!(labels(&t), ["0.01", "0.1", "1", "10", "100", "1000"]);
        assert!(t.minor.contains(&(0.02)));
        let t = log10(4.0, 104.0);
        assert_eq!(labels(&t), ["1", "10", "100", "1000"]);
        let t = log10(4.0, 90.0);
        assert_eq!(labels(&t), ["1", "2", "5", "10", "20", "50", "100"]);
        let t = log10(1e-3, 1e7);
        assert_eq!(labels(&t), ["0.001", "0.1", "10", "1000", "100k", "10M"]);
    }
}
