//! The blk-throttle limits ([`THROTTLE_KNOBS`]): each declared once — its `throttle/*` key,
//! how it is written, its cgroup v1 file and its field of cgroup v2's `io.max` — for the
//! scenario parser (a device's keys and a cgroup's files), the fuzzer, the reference table and
//! `wblab measure`, which writes the v1 files.

use super::{BlkThrottleConfig, Knob, KnobKind, KnobValue};

/// One limit of blk-throttle (`tg_set_conf` for the v1 files, `tg_set_limit` for `io.max`).
pub struct ThrottleKnob {
    /// `throttle/read_bps`, its kind and range, what a value means (`doc`: the reference's
    /// "accepted"), and the accessors: 0 is no limit.
    pub knob: Knob<BlkThrottleConfig>,
    /// The cgroup v1 file (`blkio.throttle.read_bps_device`), `DEVICE VALUE` lines.
    pub v1_file: &'static str,
    /// Its key in a line of cgroup v2's `io.max` (`rbps`).
    pub io_max: &'static str,
    /// What the fuzzer draws from.
    pub typical: (u64, u64),
}

impl ThrottleKnob {
    /// Its limit in `t` (`None`: unlimited).
    pub fn limit(&self, t: &BlkThrottleConfig) -> Option<u64> {
        Some((self.knob.get)(t).uint()).filter(|&v| v > 0)
    }

    /// Whether it counts I/Os rather than bytes.
    pub fn is_iops(&self) -> bool {
        matches!(self.knob.kind, KnobKind::Count { .. })
    }
}

/// IOPS limits are `unsigned int` in the kernel; UINT_MAX itself means "max" (no limit).
pub const MAX_THROTTLE_IOPS: u64 = u32::MAX as u64;

const IOPS: KnobKind = KnobKind::Count {
    min: 0,
    max: MAX_THROTTLE_IOPS,
};

/// A limit as stored: 0 is none, and for IOPS so is UINT_MAX.
fn limit_of(v: u64, iops: bool) -> Option<u64> {
    Some(v).filter(|&v| v > 0 && !(iops && v >= MAX_THROTTLE_IOPS))
}

/// A limit stored as `Option<u64>`.
macro_rules! limit {
    ($key:literal, $kind:expr, $doc:literal, $field:ident, $v1:literal, $io_max:literal, $typical:expr) => {
        ThrottleKnob {
            knob: Knob {
                key: $key,
                kind: $kind,
                doc: $doc,
                get: |t| KnobValue::Uint(t.$field.unwrap_or(0)),
                set: |t, v| t.$field = limit_of(v.uint(), matches!($kind, KnobKind::Count { .. })),
            },
            v1_file: $v1,
            io_max: $io_max,
            typical: $typical,
        }
    };
}

pub static THROTTLE_KNOBS: &[ThrottleKnob] = &[
    limit!(
        "throttle/read_bps",
        KnobKind::Rate,
        "0 (no limit) or a rate, e.g. `\"8MiB/s\"`",
        read_bps,
        "blkio.throttle.read_bps_device",
        "rbps",
        (0, 200 << 20)
    ),
    limit!(
        "throttle/write_bps",
        KnobKind::Rate,
        "as above",
        write_bps,
        "blkio.throttle.write_bps_device",
        "wbps",
        (0, 200 << 20)
    ),
    limit!(
        "throttle/read_iops",
        IOPS,
        "0 (no limit) to 4294967295 I/Os per second",
        read_iops,
        "blkio.throttle.read_iops_device",
        "riops",
        (0, 10_000)
    ),
    limit!(
        "throttle/write_iops",
        IOPS,
        "as above",
        write_iops,
        "blkio.throttle.write_iops_device",
        "wiops",
        (0, 10_000)
    ),
];

/// The limit whose `io.max` key is `key`.
pub fn throttle_by_io_max(key: &str) -> Option<&'static ThrottleKnob> {
    THROTTLE_KNOBS.iter().find(|k| k.io_max == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_uint_max_are_no_limit() {
        for k in THROTTLE_KNOBS {
            let mut t = BlkThrottleConfig::default();
            (k.knob.set)(&mut t, KnobValue::Uint(1000));
            assert_eq!(k.limit(&t), Some(1000), "{}", k.knob.key);
            (k.knob.set)(&mut t, KnobValue::Uint(0));
            assert_eq!(k.limit(&t), None);
            assert!(!t.is_limited());
        }
        let iops = throttle_by_io_max("riops").unwrap();
        let mut t = BlkThrottleConfig::default();
        (iops.knob.set)(&mut t, KnobValue::Uint(MAX_THROTTLE_IOPS));
        assert_eq!(t.read_iops, None);
        let bps = throttle_by_io_max("rbps").unwrap();
        (bps.knob.set)(&mut t, KnobValue::Uint(MAX_THROTTLE_IOPS));
        assert_eq!(t.read_bps, Some(MAX_THROTTLE_IOPS), "a rate of 4 GiB/s is a limit");
    }
}
