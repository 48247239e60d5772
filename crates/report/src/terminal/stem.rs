//! R's `stem()`: a stem-and-leaf display printed exactly as R's graphics/src/stem.c prints it
//! (its scale choice, integer truncations, the "decimal point is N digit(s) to the left/right
//! of the |" line, leaves cut at `width - 12` and the `+N` count past `width`). The 2007
//! per-bdi throttling report showed lstat latency this way.

/// R's defaults: `stem(x, scale = 1, width = 80, atom = 1e-08)`.
pub const DEFAULT_WIDTH: i32 = 80;
pub const DEFAULT_ATOM: f64 = 1e-8;

/// 10^e, correctly rounded (as C's `pow(10., e)` is for integer e).
fn pow10(e: i32) -> f64 {
    format!("1e{e}").parse().expect("a power of ten parses")
}

/// One stem label: `"  %*d | "` of `close / 10` (C integer division), or `-0` for the first
/// stem above zero of a negative cell.
fn stem_label(out: &mut String, close: i32, dist: i32, ndigits: usize) {
    if close / 10 == 0 && dist < 0 {
        out.push_str(&format!("  {:>ndigits$} | ", "-0"));
    } else {
        out.push_str(&format!("  {:>ndigits$} | ", close / 10));
    }
}

/// The text R's `stem(x, scale, width, atom)` prints. Non-finite values are dropped, as R's
/// wrapper does; with fewer than two values R prints nothing, and so does this.
///
/// # Panics
/// If `scale` is not positive (R stops with "'scale' must be positive").
pub fn stem(x: &[f64], scale: f64, width: i32, atom: f64) -> String {
    assert!(scale > 0.0, "'scale' must be positive");
    let mut x: Vec<f64> = x.iter().copied().filter(|v| v.is_finite()).collect();
    x.sort_by(f64::total_cmp);
    let n = x.len();
    let mut out = String::new();
    if n <= 1 {
        return out;
    }
    out.push('\n');
    let (first, last) = (x[0], x[n - 1]);
    let mut c;
    let k: i32;
    if last > first {
        let r = atom + (last - first) / scale;
        c = pow10(11 - (r.log10() + 10.0) as i32);
        let mm = ((r * c / 25.0) as i32).clamp(0, 2);
        k = 3 * mm + 2 - 150 / (n as i32 + 50);
        if (k - 1) * (k - 2) * (k - 5) == 0 {
            c *= 10.0;
        }
        // Keep x[i]·c within a C int.
        let x1 = first.abs().max(last.abs());
        while x1 * c > i32::MAX as f64 {
            c /= 10.0;
        }
    } else {
        let r = atom + first.abs() / scale;
        c = pow10(11 - (r.log10() + 10.0) as i32);
        k = 2;
    }
    let mu: f64 = if k * (k - 4) * (k - 8) == 0 {
        5.0
    } else if (k - 1) * (k - 5) * (k - 6) == 0 {
        20.0
    } else {
        10.0
    };

    // Print width of the stems.
    let mut lo = (first * c / mu).floor() * mu;
    let mut hi = (last * c / mu).floor() * mu;
    let ldigits = if lo < 0.0 { (-lo).log10().floor() as i32 + 1 } else { 0 };
    let hdigits = if hi > 0.0 { hi.log10().floor() as i32 } else { 0 };
    let ndigits = ldigits.max(hdigits).max(0) as usize;

    // Starting cell.
    if lo < 0.0 && (first * c).floor() == lo {
        lo -= mu;
    }
    hi = lo + mu;
    if (first * c + 0.5).floor() > hi {
        lo = hi;
        hi = lo + mu;
    }

    let pdigits = 1 - (c.log10() + 0.5).floor() as i32;
    out.push_str("  The decimal point is ");
    if pdigits == 0 {
        out.push_str("at the |\n\n");
    } else {
        out.push_str(&format!(
            "{} digit(s) to the {} of the |\n\n",
            pdigits.abs(),
            if pdigits > 0 { "right" } else { "left" }
        ));
    }

    let mut i = 0;
    loop {
        if lo < 0.0 {
            stem_label(&mut out, hi as i32, lo as i32, ndigits);
        } else {
            stem_label(&mut out, lo as i32, hi as i32, ndigits);
        }
        let mut j: i32 = 0;
        loop {
            let xi = if x[i] < 0.0 {
                (x[i] * c - 0.5) as i32
            } else {
                (x[i] * c + 0.5) as i32
            };
            if (hi == 0.0 && x[i] >= 0.0) || (lo < 0.0 && xi as f64 > hi) || (lo >= 0.0 && xi as f64 >= hi) {
                break;
            }
            j += 1;
            if j <= width - 12 {
                out.push(char::from(b'0' + (xi.unsigned_abs() % 10) as u8));
            }
            i += 1;
            if i >= n {
                break;
            }
        }
        if j > width {
            out.push_str(&format!("+{}", j - width));
        }
        out.push('\n');
        if i >= n {
            break;
        }
        hi += mu;
        lo += mu;
    }
    out.push('\n');
    out
}
