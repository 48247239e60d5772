//! The `bdi/*` keys ([`BDI_KNOBS`]): `/sys/class/bdi/<maj:min>/` as `mm/backing-dev.c`
//! accepts it, each file declared once — kind, range, the reference's wording, and what
//! `wblab measure` writes — for the scenario parser, the fuzzer, the reference table and the
//! probe. Each limit has three spellings (percent, ppm, bytes) kept in one field; the parser
//! checks across them.

use super::{BdiConfig, Knob, KnobKind, KnobValue};

/// Parts per million in 100 %: the unit of the `*_ratio_fine` files.
pub const BDI_PPM: u64 = 1_000_000;

/// One file of a bdi.
pub struct BdiKnob {
    /// `bdi/min_ratio`, its kind and range, what it accepts (`doc`), and the accessors.
    pub knob: Knob<BdiConfig>,
    /// The reference's unit and default columns.
    pub unit: &'static str,
    pub default_text: &'static str,
    /// What `wblab measure` writes to the file (named by the key's last part) for `b`; `None`
    /// leaves it alone: another spelling of the same limit is written instead (the ratios as
    /// ppm), or the scenario did not set it (the byte limits).
    pub written: fn(&BdiConfig) -> Option<u64>,
    /// What the fuzzer draws from.
    pub typical: (u64, u64),
}

impl BdiKnob {
    /// The file under `/sys/class/bdi/<maj:min>/`.
    pub fn file(&self) -> &'static str {
        self.knob.key.trim_start_matches("bdi/")
    }
}

fn not_written(_: &BdiConfig) -> Option<u64> {
    None
}

const PERCENT: KnobKind = KnobKind::Count { min: 0, max: 100 };
const FINE: KnobKind = KnobKind::Count { min: 0, max: BDI_PPM };
const BYTES: KnobKind = KnobKind::Size {
    min: 0,
    max: u64::MAX,
    pages: false,
};

/// A limit in percent: the same field as its `_fine` spelling, which `measure` writes instead.
macro_rules! percent {
    ($key:literal, $field:ident, $default:literal) => {
        BdiKnob {
            knob: Knob {
                key: $key,
                kind: PERCENT,
                doc: "0 to 100",
                get: |b| KnobValue::Uint(b.$field / (BDI_PPM / 100)),
                set: |b, v| b.$field = v.uint() * (BDI_PPM / 100),
            },
            unit: "percent",
            default_text: $default,
            written: not_written,
            typical: (0, 100),
        }
    };
}

/// A limit in parts per million: the field itself, which `measure` writes.
macro_rules! fine {
    ($key:literal, $field:ident, $default:literal) => {
        BdiKnob {
            knob: crate::knob!(BdiConfig, $key, FINE, "0 to 1000000", $field: u64),
            unit: "ppm",
            default_text: $default,
            written: |b| Some(b.$field),
            typical: (0, BDI_PPM),
        }
    };
}

/// A limit in bytes, written when the scenario sets it.
macro_rules! bytes {
    ($key:literal, $doc:literal, $field:ident) => {
        BdiKnob {
            knob: Knob {
                key: $key,
                kind: BYTES,
                doc: $doc,
                get: |b| KnobValue::Uint(b.$field.unwrap_or(0)),
                set: |b, v| b.$field = Some(v.uint()),
            },
            unit: "size",
            default_text: "unset",
            written: |b| b.$field,
            typical: (0, 4 << 30),
        }
    };
}

pub static BDI_KNOBS: &[BdiKnob] = &[
    percent!("bdi/min_ratio", min_ratio_ppm, "`0`"),
    percent!("bdi/max_ratio", max_ratio_ppm, "`100`"),
    fine!("bdi/min_ratio_fine", min_ratio_ppm, "`0`"),
    fine!("bdi/max_ratio_fine", max_ratio_ppm, "`1000000`"),
    bytes!(
        "bdi/min_bytes",
        "any; converted to a ratio by the model as the kernel does",
        min_bytes
    ),
    bytes!("bdi/max_bytes", "any; likewise", max_bytes),
    BdiKnob {
        knob: crate::knob!(BdiConfig, "bdi/strict_limit", KnobKind::Bool, "0/1", strict_limit: bool),
        unit: "boolean",
        default_text: "`0`",
        written: |b| Some(u64::from(b.strict_limit)),
        typical: (0, 1),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every spelling of a limit lands in the field whose file `measure` writes.
    #[test]
    fn each_spelling_is_written_as_its_canonical_file() {
        for k in BDI_KNOBS {
            let mut b = BdiConfig::default();
            let v = if k.knob.kind == KnobKind::Bool { 1 } else { 37 };
            (k.knob.set)(&mut b, KnobValue::Uint(v));
            assert_eq!((k.knob.get)(&b).uint(), v, "{}", k.knob.key);
            let written: Vec<(&str, u64)> = BDI_KNOBS.iter().filter_map(|w| (w.written)(&b).map(|v| (w.file(), v))).collect();
            let expect = match k.file() {
                "min_ratio" => ("min_ratio_fine", 370_000),
                "max_ratio" => ("max_ratio_fine", 370_000),
                f => (f, v),
            };
            assert!(written.contains(&expect), "{}: {written:?}", k.knob.key);
        }
    }
}
