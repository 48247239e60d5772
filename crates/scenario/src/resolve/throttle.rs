//! `throttle/*`: blk-throttle limits on the device, the values of the cgroup v1 files
//! `blkio.throttle.{read,write}_{bps,iops}_device` (cgroup v2: `io.max` `rbps`/`wbps`/`riops`/
//! `wiops`), as `block/blk-throttle.c` (`tg_set_conf`) accepts them: 0 means no limit.

use crate::error::{Gather, Many, Result};
use crate::section::{Entry, Section};
use crate::units::RATE_SYNTAX;
use wblab_sim::config::BlkThrottleConfig;

pub(super) const KEYS: &[&str] = &[
    "throttle/read_bps",
    "throttle/write_bps",
    "throttle/read_iops",
    "throttle/write_iops",
];

/// IOPS limits are `unsigned int` in the kernel; UINT_MAX itself means "max".
const MAX_IOPS: u64 = u32::MAX as u64;

pub(super) fn build(sec: &Section<'_>) -> Many<BlkThrottleConfig> {
    let mut g = Gather::default();
    let mut t = BlkThrottleConfig::default();
    g.read(sec, "throttle/read_bps", &mut t.read_bps, bps);
    g.read(sec, "throttle/write_bps", &mut t.write_bps, bps);
    g.read(sec, "throttle/read_iops", &mut t.read_iops, iops);
    g.read(sec, "throttle/write_iops", &mut t.write_iops, iops);
    g.finish(t)
}

fn bps(e: &Entry<'_>) -> Result<Option<u64>> {
    let v = e.rate_or_zero().map_err(|p| p.hint(format!("{RATE_SYNTAX}; 0 = no limit")))?;
    Ok((v > 0).then_some(v))
}

fn iops(e: &Entry<'_>) -> Result<Option<u64>> {
    let v = e
        .uint(0, MAX_IOPS)
        .map_err(|p| p.hint(format!("I/O operations per second, 0 (no limit) to {MAX_IOPS}")))?;
    Ok((v > 0 && v < MAX_IOPS).then_some(v))
}
