//! `throttle/*`: blk-throttle limits on the device, the values of the cgroup v1 files
//! `blkio.throttle.{read,write}_{bps,iops}_device` (cgroup v2: `io.max` `rbps`/`wbps`/`riops`/
//! `wiops`), as `block/blk-throttle.c` (`tg_set_conf`) accepts them: 0 means no limit. The
//! limits are declared once, in `THROTTLE_KNOBS`.

use crate::error::{Gather, Many, Result};
use crate::section::{Entry, Section};
use crate::units::RATE_SYNTAX;
use wblab_sim::config::{BlkThrottleConfig, KnobValue, ThrottleKnob, MAX_THROTTLE_IOPS, THROTTLE_KNOBS};

/// The keys, in the table's order.
pub(super) fn keys() -> Vec<&'static str> {
    THROTTLE_KNOBS.iter().map(|k| k.knob.key).collect()
}

pub(super) fn build(sec: &Section<'_>) -> Many<BlkThrottleConfig> {
    let mut g = Gather::default();
    let mut t = BlkThrottleConfig::default();
    for k in THROTTLE_KNOBS {
        if let Some(v) = sec.get(k.knob.key).and_then(|e| g.keep(value(e, k))) {
            (k.knob.set)(&mut t, KnobValue::Uint(v));
        }
    }
    g.finish(t)
}

/// A limit as written: a rate (or 0) for bytes, a count for I/Os.
fn value(e: &Entry<'_>, k: &ThrottleKnob) -> Result<u64> {
    if k.is_iops() {
        e.uint(0, MAX_THROTTLE_IOPS)
            .map_err(|p| p.hint(format!("I/O operations per second, 0 (no limit) to {MAX_THROTTLE_IOPS}")))
    } else {
        e.rate_or_zero().map_err(|p| p.hint(format!("{RATE_SYNTAX}; 0 = no limit")))
    }
}
