//! Number helpers shared by the writers: fixed rounding for stable output, and integer
//! formatting straight into a `String` without going through `fmt` machinery.

/// Decimals kept for every float in summary.json and the CSV files.
pub const DECIMALS: i32 = 3;

/// Round `x` to `DECIMALS` decimals so that the printed value is short and stable.
/// Non-finite values become 0 (JSON has no NaN).
pub fn round3(x: f64) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    let scale = 10f64.powi(DECIMALS);
    let r = (x * scale).round() / scale;
    // Avoid "-0.0" in the output.
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// ns → ms, rounded.
pub fn ns_to_ms(ns: u64) -> f64 {
    round3(ns as f64 / 1e6)
}

/// Append the decimal digits of `v` (itoa: two digits per step from a table, no UTF-8 check;
/// a trace of millions of lines is mostly numbers).
#[inline]
pub fn push_u64(out: &mut String, v: u64) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// Append the decimal digits of `v` with a leading '-' when negative.
pub fn push_i64(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Append `v` zero-padded to `width` digits.
pub fn push_u64_padded(out: &mut String, v: u64, width: usize) {
    let start = out.len();
    push_u64(out, v);
    let n = out.len() - start;
    if n < width {
        out.insert_str(start, &"0000000000000000000000"[..width - n]);
    }
}

/// Append `v` right-aligned in `width` columns (space padding).
pub fn push_u64_right(out: &mut String, v: u64, width: usize) {
    let start = out.len();
    push_u64(out, v);
    let n = out.len() - start;
    if n < width {
        out.insert_str(start, &"                        "[..width - n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        let mut s = String::new();
        push_u64(&mut s, 0);
        s.push(' ');
        push_i64(&mut s, i64::MIN);
        s.push(' ');
        push_u64(&mut s, u64::MAX);
        s.push(' ');
        push_u64_padded(&mut s, 7, 3);
        s.push(' ');
        push_u64_padded(&mut s, 1234, 3);
        s.push(' ');
        push_u64_right(&mut s, 42, 5);
        assert_eq!(s, "0 -9223372036854775808 18446744073709551615 007 1234    42");
    }

    #[test]
    fn rounding() {
        assert_eq!(round3(1.23456), 1.235);
        assert_eq!(round3(-0.0001), 0.0);
        assert_eq!(round3(f64::NAN), 0.0);
        assert_eq!(ns_to_ms(1_234_567), 1.235);
    }
}
