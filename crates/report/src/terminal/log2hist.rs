//! bcc-style log2 histograms (`biolatency`, `funclatency`): power-of-two buckets
//! `low -> high : count |****|`, printed the way bcc's `print_log2_hist` does.

use crate::results::histograms::Hist;

/// Bar width in characters (bcc's `stars_max`).
const STARS_MAX: u64 = 40;

/// bcc's `_stars`: `width · val / val_max` stars, at most `width`.
fn stars(val: u64, val_max: u64, width: u64) -> String {
    let mut s = String::new();
    let mut i = 0u64;
    loop {
        // i > width·val/val_max − 1, in exact arithmetic: (i + 1)·val_max > width·val.
        if (i + 1) * val_max > width * val || i > width - 1 {
            break;
        }
        s.push('*');
        i += 1;
    }
    if val > val_max {
        s.pop();
        s.push('+');
    }
    s
}

/// Print slot counts (`slots[i]` holds values in [2^(i-1), 2^i - 1]; slot 0 holds 0) with the
/// unit name in the header, as bcc does (leading empty slots from 1 on are printed, not
/// stripped).
pub fn print_log2_slots(slots: &[u64], unit: &str) -> String {
    let idx_max = slots.iter().rposition(|&v| v > 0);
    let val_max = slots.iter().copied().max().unwrap_or(0);
    let mut out = String::new();
    let Some(idx_max) = idx_max else {
        return out;
    };
    let wide = idx_max > 32;
    let stars_w = if wide { STARS_MAX / 2 } else { STARS_MAX };
    if idx_max > 0 {
        if wide {
            out.push_str(&format!("               {unit:<29} : count     distribution\n"));
        } else {
            out.push_str(&format!("     {unit:<19} : count     distribution\n"));
        }
    }
    for (i, &val) in slots.iter().enumerate().take(idx_max + 1).skip(1) {
        let mut low: u64 = (1u64 << i) >> 1;
        let high: u64 = (1u64 << i).wrapping_sub(1);
        if low == high {
            low -= 1;
        }
        let bar = stars(val, val_max, stars_w);
        let w = stars_w as usize;
        if wide {
            out.push_str(&format!("{low:>20} -> {high:<20} : {val:<8} |{bar:<w$}|\n"));
        } else {
            out.push_str(&format!("{low:>10} -> {high:<10} : {val:<8} |{bar:<w$}|\n"));
        }
    }
    out
}

/// The log2 histogram of a latency distribution, in µs ("usecs"), or ms ("msecs") when its
/// largest value is 10 s or more.
pub fn log2_hist(h: &Hist) -> String {
    let (div, unit) = if h.max >= 10_000_000_000 {
        (1_000_000, "msecs")
    } else {
        (1_000, "usecs")
    };
    let mut slots = vec![0u64; 65];
    for &(v, c) in &h.buckets {
        let x = v / div;
        let slot = if x == 0 { 0 } else { 64 - x.leading_zeros() as usize };
        slots[slot] += c;
    }
    print_log2_slots(&slots, unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_scale_like_bcc() {
        assert_eq!(stars(52, 52, 40).len(), 40);
        assert_eq!(stars(12, 52, 40), "*".repeat(9));
        assert_eq!(stars(0, 52, 40), "");
        assert_eq!(stars(1, 52, 40), "");
    }
}
