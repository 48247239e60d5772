//! `/sys/block/<dev>/queue/` knobs, and the defaults each device model's driver sets at
//! probe time.

use super::{CfqTunables, DeadlineTunables, DeviceModelConfig, SchedulerKind};
use serde::Serialize;

/// `/sys/block/<dev>/queue/` knobs.
#[derive(Clone, Debug, Serialize)]
pub struct QueueConfig {
    pub scheduler: SchedulerKind,
    pub nr_requests: u32,
    pub max_sectors_kb: u32,
    /// Target read latency of blk-wbt, µs; 0 disables wbt.
    pub wbt_lat_usec: u64,
    pub read_ahead_kb: u32,
    /// 0 = all merges, 1 = simple one-hit merges only, 2 = none.
    pub nomerges: u32,
    pub rotational: bool,
    /// "write back" (true) or "write through" (false): a volatile cache changes wbt's wake rule.
    pub write_cache: bool,
    pub iosched: DeadlineTunables,
    /// CFQ's tunables (used when `scheduler` is one of the CFQs).
    pub cfq: CfqTunables,
    /// The tunables of elevators that keep them by name (the deadline family and CFQ have
    /// the typed fields above); absent from the resolved scenario when empty.
    #[serde(skip_serializing_if = "Tunables::is_empty")]
    pub tunables: Tunables,
}

/// `queue/iosched/` values kept by name, in the order they were first set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tunables(Vec<(&'static str, u64)>);

impl Tunables {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }

    pub fn set(&mut self, name: &'static str, v: u64) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 = v,
            None => self.0.push((name, v)),
        }
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }
}

impl Serialize for Tunables {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Queue defaults for a device model, as its driver sets them at probe time.
pub fn default_queue(model: &DeviceModelConfig) -> QueueConfig {
    model.default_queue()
}

/// The queue blk-mq gives a SCSI-like disk of `depth` tags: mq-deadline on rotational
/// media, none otherwise.
pub fn blk_mq_queue(rotational: bool, write_cache: bool, depth: u32) -> QueueConfig {
    let scheduler = if rotational {
        SchedulerKind::MQ_DEADLINE
    } else {
        SchedulerKind::NONE
    };
    // blk_mq_default_nr_requests: 2 * min(qd, 128) with an elevator, the tag-set depth without.
    let nr_requests = match scheduler {
        SchedulerKind::NONE => depth,
        _ => 2 * depth.min(128),
    };
    let max_sectors_kb = 4096;
    QueueConfig {
        scheduler,
        nr_requests,
        max_sectors_kb,
        // wbt_default_latency_nsec: 75 ms rotational, 2 ms otherwise.
        wbt_lat_usec: if rotational { 75_000 } else { 2_000 },
        // blk_apply_bdi_limits: rotational devices without io_opt read ahead 2 * max_sectors.
        read_ahead_kb: if rotational { 2 * max_sectors_kb } else { 128 },
        nomerges: 0,
        rotational,
        write_cache,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
        tunables: Tunables::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// blk-mq at probe time (6.18): mq-deadline on rotational single-queue disks with
    /// `nr_requests` = 2 × min(depth, BLKDEV_DEFAULT_RQ = 128), the tag-set depth without an
    /// elevator; `wbt_default_latency_nsec` 75 ms rotational, 2 ms otherwise; read-ahead
    /// 2 × `max_sectors_kb` for rotational devices without `io_opt`, else
    /// `VM_READAHEAD_PAGES` (128 KiB).
    #[test]
    fn blk_mq_defaults_are_the_kernels() {
        let hdd = blk_mq_queue(true, true, 32);
        assert_eq!(hdd.scheduler, SchedulerKind::MQ_DEADLINE);
        assert_eq!((hdd.nr_requests, hdd.wbt_lat_usec, hdd.read_ahead_kb), (64, 75_000, 8192));
        let deep = blk_mq_queue(true, true, 1024);
        assert_eq!(deep.nr_requests, 256);
        let ssd = blk_mq_queue(false, true, 64);
        assert_eq!(ssd.scheduler, SchedulerKind::NONE);
        assert_eq!((ssd.nr_requests, ssd.wbt_lat_usec, ssd.read_ahead_kb), (64, 2_000, 128));
        assert!(ssd.tunables.is_empty());
    }
}
