//! Numbers as fio reads them: sizes with `kb_base` prefixes (`4k`, `1m`, `64KiB`, `0x1000`),
//! times with a default unit (`runtime=30` is seconds, `thinktime=500` microseconds),
//! percentages, booleans, and the per-direction lists (`bs=4k,64k`: reads, writes).

use wblab_sim::Ns;

/// A size: decimal or `0x` hex, then an optional unit prefix and `b`. With `kb_base=1024`
/// (fio's default) `k` is 1024 and `ki` 1000, as fio's compatibility mode has it; with 1000,
/// the other way round.
pub fn size(text: &str, kb_base: u64) -> Result<u64, String> {
    let t = text.trim();
    let (digits, rest) = split_number(t)?;
    let n: f64 = if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).map_err(|_| format!("`{t}` is not a number"))? as f64
    } else {
        digits.parse::<f64>().map_err(|_| format!("`{t}` is not a number"))?
    };
    let unit = rest.trim().to_ascii_lowercase();
    let unit = unit.strip_suffix('b').unwrap_or(&unit);
    let (prefix, iec) = match unit.strip_suffix('i') {
        Some(p) => (p, true),
        None => (unit, false),
    };
    let power = match prefix {
        "" if !iec => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => return Err(format!("`{t}` has an unknown unit `{}`", rest.trim())),
    };
    // kb_base=1024: plain prefixes are powers of 2, `ki`-style ones powers of 10.
    let base: f64 = match (kb_base, iec) {
        (1000, false) | (1024, true) => 1000.0,
        _ => 1024.0,
    };
    let v = n * base.powi(power);
    if !(0.0..1.8e19).contains(&v) {
        return Err(format!("`{t}` is out of range"));
    }
    Ok(v.round() as u64)
}

/// The leading number of `t` (digits, a point, or a hex literal) and the rest.
fn split_number(t: &str) -> Result<(&str, &str), String> {
    let end = if t.starts_with("0x") || t.starts_with("0X") {
        2 + t[2..].find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(t.len() - 2)
    } else {
        t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len())
    };
    if end == 0 {
        return Err(format!("`{t}` does not start with a number"));
    }
    Ok((&t[..end], &t[end..]))
}

/// A time; `default_ns` is the unit of a bare number (seconds for `runtime`, microseconds for
/// `thinktime`).
pub fn time(text: &str, default_ns: Ns) -> Result<Ns, String> {
    let t = text.trim();
    let (digits, rest) = split_number(t)?;
    let n: f64 = digits.parse().map_err(|_| format!("`{t}` is not a number"))?;
    let unit = match rest.trim().to_ascii_lowercase().as_str() {
        "" => default_ns as f64,
        "d" => 86_400e9,
        "h" => 3_600e9,
        "m" => 60e9,
        "s" | "sec" => 1e9,
        "ms" | "msec" => 1e6,
        "us" | "usec" => 1e3,
        "ns" | "nsec" => 1.0,
        u => return Err(format!("`{t}` has an unknown time unit `{u}`")),
    };
    let v = (n * unit).round();
    // `as` would saturate silently (and a sum of saturated times wraps).
    if !(0.0..1.8e19).contains(&v) {
        return Err(format!("`{t}` is out of range"));
    }
    Ok(v as Ns)
}

/// A boolean option: `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`; absent value = true.
pub fn boolean(text: Option<&str>) -> Result<bool, String> {
    match text.map(|t| t.trim().to_ascii_lowercase()) {
        None => Ok(true),
        Some(t) => match t.as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!("`{t}` is not a boolean (1 or 0)")),
        },
    }
}

/// An unsigned integer within `[lo, hi]`.
pub fn int(text: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let t = text.trim();
    let v: u64 = t.parse().map_err(|_| format!("`{t}` is not a whole number"))?;
    if v < lo || v > hi {
        return Err(format!("{v} is not within {lo}..={hi}"));
    }
    Ok(v)
}

/// A per-direction value `READ[,WRITE[,TRIM]]`: one value is both; an empty part keeps that
/// direction's default. Trim is not modelled: a third part must be empty or absent.
pub fn per_dir<T: Clone>(text: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<[Option<T>; 2], String> {
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() > 3 {
        return Err(format!("`{text}` has more than three comma-separated parts (read, write, trim)"));
    }
    if parts.len() == 3 && !parts[2].trim().is_empty() {
        return Err("a trim value is given; trim I/O is not modelled".into());
    }
    let one = |s: &str| -> Result<Option<T>, String> {
        if s.trim().is_empty() {
            Ok(None)
        } else {
            parse(s).map(Some)
        }
    };
    if parts.len() == 1 {
        let v = one(parts[0])?;
        return Ok([v.clone(), v]);
    }
    Ok([one(parts[0])?, one(parts[1])?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_fios_kb_base() {
        // fio's HOWTO, kb_base=1024 (default): 4k = 4 KiB, 1mi = 1 MB.
        assert_eq!(size("4k", 1024), Ok(4096));
        assert_eq!(size("4KB", 1024), Ok(4096));
        assert_eq!(size("1m", 1024), Ok(1 << 20));
        assert_eq!(size("1mi", 1024), Ok(1_000_000));
        assert_eq!(size("4096b", 1024), Ok(4096));
        assert_eq!(size("0x1000", 1024), Ok(4096));
        assert_eq!(size("1.5g", 1024), Ok(3 << 29));
        // kb_base=1000: 1m = 1 MB, 4ki = 4 KiB.
        assert_eq!(size("1m", 1000), Ok(1_000_000));
        assert_eq!(size("4KiB", 1000), Ok(4096));
        assert!(size("4q", 1024).is_err());
        assert!(size("k", 1024).is_err());
    }

    #[test]
    fn times_take_the_options_default_unit() {
        assert_eq!(time("30", 1_000_000_000), Ok(30_000_000_000));
        assert_eq!(time("500", 1_000), Ok(500_000));
        assert_eq!(time("2m", 1_000_000_000), Ok(120_000_000_000));
        assert_eq!(time("250ms", 1_000), Ok(250_000_000));
        assert!(time("3 fortnights", 1).is_err());
    }

    #[test]
    fn per_direction_lists() {
        let p = |s: &str| size(s, 1024);
        assert_eq!(per_dir("4k", p), Ok([Some(4096), Some(4096)]));
        assert_eq!(per_dir("4k,64k", p), Ok([Some(4096), Some(65536)]));
        assert_eq!(per_dir(",64k", p), Ok([None, Some(65536)]));
        assert!(per_dir("4k,4k,4k", p).is_err());
    }
}
