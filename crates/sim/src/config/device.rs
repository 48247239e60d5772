//! `[[device]]`: a block device, its model, its queue and bdi knobs, and blk-throttle limits.

use super::{DeviceModelConfig, MountConfig, QueueConfig};
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct DeviceConfig {
    /// Block device name, e.g. "sda".
    pub name: String,
    /// Device number shown in traces ("8:0").
    pub major: u32,
    pub minor: u32,
    /// Capacity, bytes.
    pub size: u64,
    pub model: DeviceModelConfig,
    pub queue: QueueConfig,
    pub bdi: BdiConfig,
    /// File system the device carries and its mount options: mkfs'd and mounted by `wblab
    /// measure`; the simulator runs its journal (`fs::jbd2`). `None`: no journal, as before
    /// file systems were modelled (the block allocator is the same either way).
    pub fs: Option<MountConfig>,
    /// blk-throttle limits on the device (cgroup v2 `io.max`, v1 `blkio.throttle.*`).
    pub throttle: BlkThrottleConfig,
    /// Percent of the device already holding data (an aged file system): the files the
    /// scenario reads are part of it, and new files are allocated after it (towards the
    /// slower inner tracks of a disk).
    pub used_pct: u32,
    /// Percent of the machine's recent writeback completions the device already holds when
    /// the run starts: its share of the dirty threshold (`bdi_writeout_fraction`,
    /// `wb_calc_thresh`) before it completes anything. 0, a freshly booted machine, leaves the
    /// share to grow from nothing, which takes an old kernel (event-counted proportions) tens
    /// of seconds on a slow disk; 100 is a disk that was the only one written just before, as
    /// in runs made one after another. Model state only: `measure` cannot set it.
    #[serde(skip_serializing_if = "is_zero")]
    pub writeout_share_pct: u32,
    /// `wblab measure` serves this device's model to the real kernel as an emulated block
    /// device (`wblab-emulate`) instead of placing it on a plain loop device or the host's
    /// disk. The simulator does not look at it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub emulate: bool,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// Bandwidth and IOPS limits of blk-throttle; `None` = unlimited.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BlkThrottleConfig {
    pub read_bps: Option<u64>,
    pub write_bps: Option<u64>,
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
}

impl BlkThrottleConfig {
    pub fn is_limited(&self) -> bool {
        self.read_bps.is_some() || self.write_bps.is_some() || self.read_iops.is_some() || self.write_iops.is_some()
    }
}

/// Whether a device of `model` can be served to the real kernel by its model (`emulate`):
/// not a `loop` device, which is real already, nor an NFS mount, which is no block device.
pub fn can_be_emulated(model: &DeviceModelConfig) -> bool {
    !matches!(model, DeviceModelConfig::Loop(_) | DeviceModelConfig::Nfs(_))
}

/// Default capacity of a device of `model` (see each model's `default_size`).
pub fn default_size(model: &DeviceModelConfig) -> u64 {
    model.default_size()
}

/// `/sys/class/bdi/<maj:min>/` knobs.
#[derive(Clone, Debug, Serialize)]
pub struct BdiConfig {
    /// Parts per million of the dirty threshold (`min_ratio_fine`).
    pub min_ratio_ppm: u64,
    /// Parts per million of the dirty threshold (`max_ratio_fine`).
    pub max_ratio_ppm: u64,
    /// `max_bytes`, converted to `max_ratio` against the initial threshold, as the kernel does
    /// when the file is written. `None` = not set.
    pub max_bytes: Option<u64>,
    pub min_bytes: Option<u64>,
    pub strict_limit: bool,
}

impl Default for BdiConfig {
    fn default() -> Self {
        BdiConfig {
            min_ratio_ppm: 0,
            max_ratio_ppm: 1_000_000,
            max_bytes: None,
            min_bytes: None,
            strict_limit: false,
        }
    }
}

/// Minor number of the first NFS mount's anonymous device (`get_anon_bdev`): a typical value
/// on a booted system, where the kernel's own pseudo file systems took the first ones.
pub const NFS_FIRST_MINOR: u32 = 40;

#[cfg(test)]
mod tests {
    use super::*;

    /// `mm/backing-dev.c`: a new bdi has `min_ratio` 0 and `max_ratio` 100 %, no strictlimit
    /// (only FUSE and some network file systems set it); blk-throttle starts without rules.
    #[test]
    fn defaults_are_the_kernels() {
        let b = BdiConfig::default();
        assert_eq!((b.min_ratio_ppm, b.max_ratio_ppm, b.strict_limit), (0, 1_000_000, false));
        assert_eq!((b.min_bytes, b.max_bytes), (None, None));
        assert!(!BlkThrottleConfig::default().is_limited());
    }
}
