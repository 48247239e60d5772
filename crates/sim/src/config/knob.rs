//! Knobs declared by the parts that own them: a device model's parameters, an elevator's
//! `queue/iosched/` tunables. Each knob says how it is written (its kind, range and unit) and
//! how to read and set it, so the scenario parser, `wblab check`, `wblab device` and the
//! reference tables all work from the same declaration.

/// How a knob's value is written in a scenario file, and its accepted range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobKind {
    /// A whole number in `[min, max]` (counts, KiB, ratios as sysfs takes them).
    Count { min: u64, max: u64 },
    /// Bytes, written with units (`"4MiB"`), in `[min, max]`; `pages`: whole 4 KiB pages.
    Size { min: u64, max: u64, pages: bool },
    /// Bytes per second, written with units (`"60MB/s"`).
    Rate,
    /// A time, written with units (`"8.5ms"`), stored in ns, at most `max` ns.
    Duration { max: u64 },
    /// Milliseconds as sysfs shows them (a bare number), stored in the unit the knob's
    /// `scale` gives (1 for ms, 1_000_000 for ns), at most `max` ms.
    Millis { max: u64, scale: u64 },
    /// `true`/`false` (or 1/0, as sysfs takes it).
    Bool,
    /// One of `words`; `what` names the choice in messages ("destage policy").
    Word {
        words: &'static [&'static str],
        what: &'static str,
    },
}

/// A knob's value as parsed (in the stored unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobValue {
    Uint(u64),
    Bool(bool),
    Word(&'static str),
}

impl KnobValue {
    pub fn uint(self) -> u64 {
        match self {
            KnobValue::Uint(v) => v,
            KnobValue::Bool(b) => u64::from(b),
            KnobValue::Word(_) => 0,
        }
    }

    pub fn bool(self) -> bool {
        matches!(self, KnobValue::Bool(true)) || matches!(self, KnobValue::Uint(v) if v != 0)
    }

    pub fn word(self) -> &'static str {
        match self {
            KnobValue::Word(w) => w,
            _ => "",
        }
    }
}

/// A knob of a `T` (a model's parameters, a queue's tunables).
pub struct Knob<T> {
    /// The key as a scenario writes it (`rpm`, `queue/iosched/fifo_batch`).
    pub key: &'static str,
    pub kind: KnobKind,
    /// One line: what it is, and its default or typical values where that helps.
    pub doc: &'static str,
    pub get: fn(&T) -> KnobValue,
    pub set: fn(&mut T, KnobValue),
}

/// What a knob is, without its accessors: what tools list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnobSpec {
    pub key: &'static str,
    pub kind: KnobKind,
    pub doc: &'static str,
}

impl<T> Knob<T> {
    pub fn spec(&self) -> KnobSpec {
        KnobSpec {
            key: self.key,
            kind: self.kind,
            doc: self.doc,
        }
    }
}

/// Look `key` up in `knobs`.
pub fn find<'a, T>(knobs: &'a [Knob<T>], key: &str) -> Option<&'a Knob<T>> {
    knobs.iter().find(|k| k.key == key)
}

/// Settings that are each valid but contradict each other: the keys involved (the last one
/// the file sets is blamed), what is wrong and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub keys: &'static [&'static str],
    pub message: String,
    pub hint: String,
}

/// A `Knob` over a field (or a path of fields) of `T` stored as the kind's value:
/// `knob!(HddParams, "rpm", KnobKind::Count { .. }, "doc", rpm: u32)`. Knobs stored
/// otherwise write their `get`/`set` out.
#[macro_export]
macro_rules! knob {
    ($t:ty, $key:expr, $kind:expr, $doc:expr, $($field:ident).+: u64) => {
        $crate::config::Knob::<$t> {
            key: $key,
            kind: $kind,
            doc: $doc,
            get: |p| $crate::config::KnobValue::Uint(p.$($field).+),
            set: |p, v| p.$($field).+ = v.uint(),
        }
    };
    ($t:ty, $key:expr, $kind:expr, $doc:expr, $($field:ident).+: u32) => {
        $crate::config::Knob::<$t> {
            key: $key,
            kind: $kind,
            doc: $doc,
            get: |p| $crate::config::KnobValue::Uint(u64::from(p.$($field).+)),
            set: |p, v| p.$($field).+ = v.uint() as u32,
        }
    };
    ($t:ty, $key:expr, $kind:expr, $doc:expr, $($field:ident).+: bool) => {
        $crate::config::Knob::<$t> {
            key: $key,
            kind: $kind,
            doc: $doc,
            get: |p| $crate::config::KnobValue::Bool(p.$($field).+),
            set: |p, v| p.$($field).+ = v.bool(),
        }
    };
}

impl KnobKind {
    /// `v` as a scenario would write it (`"256MiB"`, `"8.5ms"`, `16`, `true`, `"drain"`).
    pub fn show(self, v: KnobValue) -> String {
        use crate::units::{format_duration, format_size};
        match (self, v) {
            (KnobKind::Size { .. }, KnobValue::Uint(b)) => format!("\"{}\"", format_size(b)),
            (KnobKind::Rate, KnobValue::Uint(r)) => format!("\"{}/s\"", format_size(r)),
            (KnobKind::Duration { .. }, KnobValue::Uint(ns)) => format!("\"{}\"", format_duration(ns)),
            (KnobKind::Millis { scale, .. }, KnobValue::Uint(x)) => (x / scale.max(1)).to_string(),
            (_, KnobValue::Uint(n)) => n.to_string(),
            (_, KnobValue::Bool(b)) => b.to_string(),
            (_, KnobValue::Word("")) => "(the kernel's)".to_string(),
            (_, KnobValue::Word(w)) => format!("\"{w}\""),
        }
    }

    /// How the value is written and its accepted range, for reference tables: "integer 1–1024",
    /// "size, 4KiB–256MiB, whole pages", "duration ≤ 10s".
    pub fn describe(self) -> String {
        use crate::units::{format_duration, format_size};
        match self {
            KnobKind::Count { min, max } if max >= i32::MAX as u64 => format!("integer ≥ {min}"),
            KnobKind::Count { min, max } => format!("integer {min}–{max}"),
            KnobKind::Size { min, max, pages } => {
                let range = match (min, max) {
                    (0, u64::MAX) => String::new(),
                    (min, u64::MAX) => format!(", ≥ {}", format_size(min)),
                    (min, max) => format!(", {}–{}", format_size(min), format_size(max)),
                };
                format!("size{range}{}", if pages { ", whole pages" } else { "" })
            }
            KnobKind::Rate => "rate".to_string(),
            KnobKind::Duration { max } if max == u64::MAX => "duration".to_string(),
            KnobKind::Duration { max } => format!("duration ≤ {}", format_duration(max)),
            KnobKind::Millis { max, .. } if max >= i32::MAX as u64 => "ms (integer)".to_string(),
            KnobKind::Millis { max, .. } => format!("ms (integer) ≤ {max}"),
            KnobKind::Bool => "boolean".to_string(),
            KnobKind::Word { words, .. } => words.join(" | "),
        }
    }
}
