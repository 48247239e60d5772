//! blk-throttle rules in the root cgroup of a v1 `blkio` hierarchy: a slow disk or USB key
//! stand-in. Root-group rules apply to every bio of the device, including the flusher's
//! writeback (which cgroup v2 would charge to the dirtying cgroup instead).

use crate::journal::{Entry, Journal};
use crate::sys;
use std::io;
use std::path::{Path, PathBuf};
use wblab_sim::config::{BlkThrottleConfig, THROTTLE_KNOBS};

/// Root of the v1 blkio hierarchy, if mounted.
pub fn blkio_root() -> Option<PathBuf> {
    sys::mounts()
        .into_iter()
        .find(|(_, _, ty, opts)| ty == "cgroup" && opts.split(',').any(|o| o == "blkio"))
        .map(|(_, m, _, _)| PathBuf::from(m))
}

/// The rule files and values of a throttle config: every limit it sets, from the table of
/// blk-throttle's limits.
pub fn rules(t: &BlkThrottleConfig) -> Vec<(&'static str, u64)> {
    THROTTLE_KNOBS.iter().filter_map(|k| k.limit(t).map(|v| (k.v1_file, v))).collect()
}

/// Install `rs` ([`rules`]) for device `dev` ("7:64"); each rule is journaled before it is
/// written.
pub fn apply(j: &mut Journal, dev: &str, rs: &[(&'static str, u64)]) -> io::Result<Vec<(String, u64)>> {
    if rs.is_empty() {
        return Ok(Vec::new());
    }
    let root = blkio_root().ok_or_else(|| {
        io::Error::other(
            "blk-throttle needs a cgroup v1 blkio hierarchy (root-group rules throttle the flusher too); \
             none is mounted here",
        )
    })?;
    let mut out = Vec::new();
    for &(name, v) in rs {
        let file = root.join(name);
        j.record(Entry::Throttle {
            file: file.clone(),
            dev: dev.to_string(),
        })?;
        sys::append_value(&file, &format!("{dev} {v}"))
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {dev} {v}: {e}", file.display())))?;
        let got = rule_of(&file, dev);
        if got != Some(v) {
            return Err(io::Error::other(format!("{}: wrote {dev} {v}, reads {got:?}", file.display())));
        }
        out.push((file.display().to_string(), v));
    }
    Ok(out)
}

/// The limit set for `dev` in a rule file.
pub fn rule_of(file: &Path, dev: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().find_map(|l| {
        let (d, v) = l.split_once(' ')?;
        (d == dev).then(|| v.trim().parse().ok()).flatten()
    })
}

/// Remove the rule for `dev` (writing 0 deletes it; queued bios are dispatched at once).
pub fn lift(file: &Path, dev: &str) -> io::Result<()> {
    if !file.exists() || rule_of(file, dev).is_none() {
        return Ok(());
    }
    match sys::append_value(file, &format!("{dev} 0")) {
        Ok(()) => Ok(()),
        // The device is gone, and its rules with it.
        Err(e) if e.raw_os_error() == Some(libc::ENODEV) || e.raw_os_error() == Some(libc::ENXIO) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Every rule line of every throttle file (for leak checks).
pub fn all_rules() -> Vec<String> {
    let Some(root) = blkio_root() else { return Vec::new() };
    let mut out = Vec::new();
    for name in THROTTLE_KNOBS.iter().map(|k| k.v1_file) {
        if let Ok(t) = std::fs::read_to_string(root.join(name)) {
            out.extend(t.lines().filter(|l| !l.trim().is_empty()).map(|l| format!("{name}: {l}")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wblab_sim::config::KnobValue;

    /// Each limit of the table, set alone, is the one rule `measure` writes, to its own v1
    /// file with its value: a table entry is all a new limit needs to reach the real kernel.
    #[test]
    fn every_limit_the_scenario_sets_is_written() {
        for (i, k) in THROTTLE_KNOBS.iter().enumerate() {
            let mut t = BlkThrottleConfig::default();
            let v = k.typical.1 / 2 + i as u64;
            (k.knob.set)(&mut t, KnobValue::Uint(v));
            assert_eq!(rules(&t), vec![(k.v1_file, v)], "{}", k.knob.key);
        }
        assert!(rules(&BlkThrottleConfig::default()).is_empty());
    }
}
