//! A swept key's range, `{ min = "16MiB", max = "1GiB", steps = 7, log = true }`: evenly (or
//! log-evenly) spaced values for a grid, or values drawn anywhere between the bounds for
//! `random = N`. Bounds are integers, floats, sizes or durations; a drawn value is rounded to
//! the bounds' kind (a size to whole MiB when the range starts at 1 MiB or more, else to 4 KiB
//! pages, as the kernel counts dirty memory; a duration to whole ms from 1 ms, else whole µs),
//! so a range only yields values one would write by hand.

use crate::error::Result;
use crate::section::{describe, Entry, Nesting, Section};
use toml::de::DeValue;

/// A range's keys: a table of only these is a range, not a nest of sweep keys.
pub(crate) const KEYS: &[&str] = &["min", "max", "steps", "log"];
/// Most values one range may give a grid.
const MAX_STEPS: u64 = 1_000_000;
const PAGE: f64 = 4096.0;
const MIB: f64 = 1048576.0;

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Float,
    Size,
    Duration,
}

/// A parsed range.
pub(crate) struct Range {
    lo: f64,
    hi: f64,
    kind: Kind,
    log: bool,
    /// Values a grid takes (required there); with `random`, draws are among these if set.
    pub steps: Option<usize>,
}

const EXAMPLE: &str = "e.g. { min = \"16MiB\", max = \"1GiB\", steps = 7, log = true }";
const BOUND_SYNTAX: &str = "a range's bounds are numbers, sizes (\"16MiB\") or durations (\"500ms\", \"2min\"; a bare `m` is MiB)";

fn bound(e: &Entry<'_>) -> Result<(f64, Kind)> {
    match e.value {
        DeValue::Integer(_) => Ok((e.int(i64::MIN, i64::MAX)? as f64, Kind::Int)),
        DeValue::Float(f) => {
            let v: f64 = f.as_str().replace('_', "").parse().map_err(|_| e.problem("not a number"))?;
            if v.is_finite() {
                Ok((v, Kind::Float))
            } else {
                Err(e.problem("a range's bound must be finite"))
            }
        }
        // A size where the text is one (`"1m"` is 1 MiB), else a duration (`"1s"`, `"1min"`).
        DeValue::String(s) => match (crate::units::parse_size(s), crate::units::parse_duration(s)) {
            (Ok(b), _) => Ok((b as f64, Kind::Size)),
            (Err(_), Ok(ns)) => Ok((ns as f64, Kind::Duration)),
            (Err(why), Err(_)) => Err(e
                .problem(format!("`{s}` is neither a size nor a duration: {why}"))
                .hint(BOUND_SYNTAX)),
        },
        other => Err(e
            .problem(format!(
                "a range's bound is a number, a size or a duration, found {}",
                describe(other)
            ))
            .hint(EXAMPLE)),
    }
}

impl Range {
    /// The range written as the value of `key` (an inline table), or `None` if it is not a table.
    pub fn parse(e: &Entry<'_>) -> Option<Result<Range>> {
        let DeValue::Table(_) = e.value else { return None };
        Some(Self::parse_table(e))
    }

    fn parse_table(e: &Entry<'_>) -> Result<Range> {
        let sec: Section<'_> = e.table(Nesting::Keep, |k| k)?;
        sec.reject_unknown(KEYS, "key of a sweep range").map_err(|p| p.hint(EXAMPLE))?;
        let lo = sec
            .get("min")
            .ok_or_else(|| sec.missing("min", "a range needs `min`").hint(EXAMPLE))?;
        let hi = sec
            .get("max")
            .ok_or_else(|| sec.missing("max", "a range needs `max`").hint(EXAMPLE))?;
        let ((lo_v, lo_k), (hi_v, hi_k)) = (bound(lo)?, bound(hi)?);
        let kind = match (lo_k, hi_k) {
            (a, b) if a == b => a,
            (Kind::Int, Kind::Float) | (Kind::Float, Kind::Int) => Kind::Float,
            _ => {
                return Err(hi
                    .problem("`min` and `max` must be of one kind: both sizes, both durations or both numbers")
                    .hint(EXAMPLE))
            }
        };
        if hi_v < lo_v {
            return Err(hi.problem("`max` is below `min`").hint(EXAMPLE));
        }
        let log = sec.value_or("log", false, |e| e.boolean())?;
        if log && lo_v <= 0.0 {
            return Err(lo
                .problem("a log range needs `min` above 0")
                .hint("use a linear range (log = false), or start at 1"));
        }
        let steps = match sec.get("steps") {
            Some(s) => Some(s.uint(1, MAX_STEPS)? as usize),
            None => None,
        };
        Ok(Range {
            lo: lo_v,
            hi: hi_v,
            kind,
            log,
            steps,
        })
    }

    /// The value at `t` in [0, 1] along the range, as TOML text the key reads, and the label
    /// the tables show.
    pub fn value_at(&self, t: f64) -> (String, String) {
        let t = t.clamp(0.0, 1.0);
        let v = if self.log {
            (self.lo.ln() + t * (self.hi.ln() - self.lo.ln())).exp()
        } else {
            self.lo + t * (self.hi - self.lo)
        };
        let v = v.clamp(self.lo, self.hi);
        match self.kind {
            Kind::Int => {
                let s = format!("{}", v.round() as i64);
                (s.clone(), s)
            }
            Kind::Float => {
                // Six significant decimals keep labels short and drawn values reproducible.
                let r = (v * 1e6).round() / 1e6;
                let mut s = format!("{r}");
                if !s.contains(['.', 'e', 'E']) {
                    s.push_str(".0");
                }
                (s.clone(), s)
            }
            Kind::Size => {
                // Whole MiB for ranges of MiB and more, whole pages for smaller ones.
                let grain = if self.lo >= MIB {
                    MIB
                } else if self.lo >= PAGE {
                    PAGE
                } else {
                    1.0
                };
                let bytes = (v / grain).round() * grain;
                let bytes = (bytes as u64).clamp(self.lo as u64, self.hi as u64);
                let label = crate::units::format_size(bytes);
                (format!("\"{label}\""), label)
            }
            Kind::Duration => {
                // Whole milliseconds from 1 ms, whole microseconds below.
                let grain = if self.lo >= 1e6 { 1e6 } else { 1e3 };
                let ns = ((v / grain).round() * grain) as u64;
                let label = crate::units::format_duration(ns.clamp(self.lo as u64, self.hi as u64));
                (format!("\"{label}\""), label)
            }
        }
    }
}
