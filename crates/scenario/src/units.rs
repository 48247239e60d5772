//! Sizes, durations and rates as people write them: `4GiB`, `8.5ms`, `60MB/s`.
//!
//! A number may carry a decimal fraction (`1.5GiB`, `8.5ms`) as long as the result is a whole
//! number of the base unit (bytes, nanoseconds). All arithmetic is checked, so an absurd value
//! is an error and never a wrap-around or a panic.

use std::fmt;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;
const PIB: u64 = 1 << 50;

/// Size suffixes, matched case-insensitively: a bare letter or `xiB` is binary, `xB` decimal.
const SIZE_UNITS: &[(&str, u64)] = &[
    ("", 1),
    ("b", 1),
    ("k", KIB),
    ("kib", KIB),
    ("kb", 1_000),
    ("m", MIB),
    ("mib", MIB),
    ("mb", 1_000_000),
    ("g", GIB),
    ("gib", GIB),
    ("gb", 1_000_000_000),
    ("t", TIB),
    ("tib", TIB),
    ("tb", 1_000_000_000_000),
    ("p", PIB),
    ("pib", PIB),
    ("pb", 1_000_000_000_000_000),
];

/// Duration suffixes, matched case-insensitively; the value is nanoseconds per unit.
const DURATION_UNITS: &[(&str, u64)] = &[
    ("", 1),
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),  // µ, MICRO SIGN
    ("\u{3bc}s", 1_000), // μ, GREEK SMALL LETTER MU
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("sec", 1_000_000_000),
    ("m", 60_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Accepted size syntax, for hints.
pub const SIZE_SYNTAX: &str =
    "sizes are bytes (4096) or a number with a unit: k, KiB (x1024), KB (x1000), M/MiB/MB, G/GiB/GB, T/TiB/TB, e.g. \"4KiB\", \"1.5GiB\"";
/// Accepted duration syntax, for hints.
pub const DURATION_SYNTAX: &str =
    "durations are integer nanoseconds or a number with a unit: ns, us (or µs), ms, s, m (or min), h, e.g. \"8.5ms\", \"60s\"";
/// Accepted rate syntax, for hints.
pub const RATE_SYNTAX: &str = "rates are bytes per second (an integer) or a size per second, e.g. \"60MB/s\", \"4GiB/s\"";

/// Why a unit string was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitError {
    Empty,
    Negative,
    NotANumber,
    UnknownUnit(String),
    MissingPerSecond,
    NotWhole,
    Overflow,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnitError::Empty => f.write_str("empty value"),
            UnitError::Negative => f.write_str("must not be negative"),
            UnitError::NotANumber => f.write_str("expected a number, then an optional unit"),
            UnitError::UnknownUnit(u) => write!(f, "unknown unit `{u}`"),
            UnitError::MissingPerSecond => f.write_str("a rate needs `/s`"),
            UnitError::NotWhole => f.write_str("is not a whole number of the base unit"),
            UnitError::Overflow => f.write_str("is too large (does not fit in 64 bits)"),
        }
    }
}

/// A decimal number `mantissa / 10^scale`, kept exact.
struct Decimal {
    mantissa: u128,
    scale: u32,
}

impl Decimal {
    /// `self * mult`, which must be a whole number that fits in a u64.
    fn times(&self, mult: u64) -> Result<u64, UnitError> {
        let product = self.mantissa.checked_mul(u128::from(mult)).ok_or(UnitError::Overflow)?;
        let divisor = 10u128.checked_pow(self.scale).ok_or(UnitError::NotWhole)?;
        if product % divisor != 0 {
            return Err(UnitError::NotWhole);
        }
        u64::try_from(product / divisor).map_err(|_| UnitError::Overflow)
    }
}

/// Splits `"8.5 ms"` into the exact number and the lower-cased unit.
fn split(text: &str) -> Result<(Decimal, String), UnitError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(UnitError::Empty);
    }
    if s.starts_with('-') {
        return Err(UnitError::Negative);
    }
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (number, unit) = s.split_at(end);
    let (int, frac) = match number.split_once('.') {
        Some((i, f)) => (i, f.trim_end_matches('0')),
        None => (number, ""),
    };
    let well_formed = !int.is_empty() && number.matches('.').count() <= 1 && !number.ends_with('.');
    if !well_formed {
        return Err(UnitError::NotANumber);
    }
    let mut mantissa: u128 = 0;
    for c in int.chars().chain(frac.chars()) {
        let digit = u128::from(c.to_digit(10).ok_or(UnitError::NotANumber)?);
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(digit))
            .ok_or(UnitError::Overflow)?;
    }
    let scale = u32::try_from(frac.len()).map_err(|_| UnitError::NotWhole)?;
    Ok((Decimal { mantissa, scale }, unit.trim().to_lowercase()))
}

fn lookup(table: &[(&str, u64)], unit: &str) -> Result<u64, UnitError> {
    table
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|&(_, mult)| mult)
        .ok_or_else(|| UnitError::UnknownUnit(unit.to_string()))
}

/// Bytes in `"4GiB"`, `"4 k"`, `"1.5GB"`, `"4096"`.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (number, unit) = split(text)?;
    number.times(lookup(SIZE_UNITS, &unit)?)
}

/// Nanoseconds in `"8.5ms"`, `"60s"`, `"2min"`, `"1000"` (bare numbers are nanoseconds).
pub fn parse_duration(text: &str) -> Result<u64, UnitError> {
    let (number, unit) = split(text)?;
    number.times(lookup(DURATION_UNITS, &unit)?)
}

/// Bytes per second in `"60MB/s"`, `"4 GiB / s"`, or a bare number of bytes per second.
pub fn parse_rate(text: &str) -> Result<u64, UnitError> {
    match text.split_once('/') {
        Some((size, per)) => match per.trim().to_lowercase().as_str() {
            "s" | "sec" => parse_size(size),
            _ => Err(UnitError::MissingPerSecond),
        },
        None => {
            let (number, unit) = split(text)?;
            if unit.is_empty() {
                number.times(1)
            } else {
                Err(UnitError::MissingPerSecond)
            }
        }
    }
}

pub use wblab_sim::units::{format_duration, format_size};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let table: &[(&str, u64)] = &[
            ("4096", 4096),
            ("0", 0),
            ("4k", 4096),
            ("4K", 4096),
            ("4KiB", 4096),
            ("4kib", 4096),
            ("4KB", 4000),
            ("4kB", 4000),
            ("1MiB", MIB),
            ("1MB", 1_000_000),
            ("1M", MIB),
            ("4 GiB", 4 * GIB),
            ("  4GiB  ", 4 * GIB),
            ("1.5GiB", 3 * GIB / 2),
            ("4TB", 4_000_000_000_000),
            ("1TiB", TIB),
            ("2p", 2 * PIB),
            ("10B", 10),
            ("0.5k", 512),
            ("1.000", 1),
            ("18446744073709551615", u64::MAX),
        ];
        for &(text, want) in table {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn bad_sizes() {
        let table: &[(&str, UnitError)] = &[
            ("", UnitError::Empty),
            ("   ", UnitError::Empty),
            ("-4k", UnitError::Negative),
            ("k", UnitError::NotANumber),
            (".5k", UnitError::NotANumber),
            ("1.k", UnitError::NotANumber),
            ("1..5k", UnitError::NotANumber),
            ("1.2.3", UnitError::NotANumber),
            ("4XB", UnitError::UnknownUnit("xb".into())),
            ("15EiB", UnitError::UnknownUnit("eib".into())),
            ("4 GiBs", UnitError::UnknownUnit("gibs".into())),
            ("0.3", UnitError::NotWhole),
            ("1.0001k", UnitError::NotWhole),
            ("18446744073709551616", UnitError::Overflow),
            ("16384PiB", UnitError::Overflow),
            ("99999999999999999999999999999999999999999999999", UnitError::Overflow),
        ];
        for (text, want) in table {
            assert_eq!(parse_size(text).as_ref(), Err(want), "{text}");
        }
    }

    #[test]
    fn durations() {
        let table: &[(&str, u64)] = &[
            ("0", 0),
            ("1500", 1500),
            ("1ns", 1),
            ("1us", 1_000),
            ("1µs", 1_000),
            ("1μs", 1_000),
            ("8.5ms", 8_500_000),
            ("1.5s", 1_500_000_000),
            ("60s", 60_000_000_000),
            ("60 S", 60_000_000_000),
            ("2m", 120_000_000_000),
            ("2min", 120_000_000_000),
            ("1h", 3_600_000_000_000),
            ("0.25us", 250),
        ];
        for &(text, want) in table {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
        assert_eq!(parse_duration(""), Err(UnitError::Empty));
        assert_eq!(parse_duration("1.5ns"), Err(UnitError::NotWhole));
        assert_eq!(parse_duration("5 fortnights"), Err(UnitError::UnknownUnit("fortnights".into())));
        assert_eq!(parse_duration("-1s"), Err(UnitError::Negative));
        assert_eq!(parse_duration("999999999999h"), Err(UnitError::Overflow));
        assert_eq!(
            parse_duration("0.000000000000000000000000000000000000000001s"),
            Err(UnitError::NotWhole)
        );
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("60MB/s"), Ok(60_000_000));
        assert_eq!(parse_rate("4GiB/s"), Ok(4 * GIB));
        assert_eq!(parse_rate("4 GiB / s"), Ok(4 * GIB));
        assert_eq!(parse_rate("210MiB/sec"), Ok(210 * MIB));
        assert_eq!(parse_rate("1000"), Ok(1000));
        assert_eq!(parse_rate("60MB"), Err(UnitError::MissingPerSecond));
        assert_eq!(parse_rate("60MB/h"), Err(UnitError::MissingPerSecond));
        assert_eq!(parse_rate("60XB/s"), Err(UnitError::UnknownUnit("xb".into())));
        assert_eq!(parse_rate("/s"), Err(UnitError::Empty));
    }

    #[test]
    fn formatting() {
        assert_eq!(format_size(64 * MIB), "64MiB");
        assert_eq!(format_size(4096), "4KiB");
        assert_eq!(format_size(4_000_000_000_000), "4TB");
        assert_eq!(format_size(4097), "4097");
        assert_eq!(format_size(0), "0");
        assert_eq!(format_duration(8_500_000), "8.5ms");
        assert_eq!(format_duration(60_000_000_000), "60s");
        assert_eq!(format_duration(1_000), "1us");
        assert_eq!(format_duration(999), "999ns");
        assert_eq!(format_duration(1_000_000_001), "1.000000001s");
    }
}
