//! `[[device]]`: a block device, its model, its queue and bdi knobs, and blk-throttle limits.

use super::{HddParams, LoopParams, NfsParams, QueueConfig, Raid0Params, Raid5Params, SsdParams, UsbParams, USB_MAX_SECTORS_KB};
use crate::units::GIB;
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
    /// File system the device carries (`ext4`, `xfs`, `btrfs`): mkfs'd by `wblab measure`;
    /// the simulator's allocator does not depend on it yet.
    pub fs: Option<String>,
    /// blk-throttle limits on the device (cgroup v2 `io.max`, v1 `blkio.throttle.*`).
    pub throttle: BlkThrottleConfig,
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

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DeviceModelConfig {
    Hdd(HddParams),
    Ssd(SsdParams),
    Loop(LoopParams),
    Usb(UsbParams),
    Nfs(NfsParams),
    Raid0(Raid0Params),
    Raid5(Raid5Params),
}

impl DeviceModelConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceModelConfig::Hdd(_) => "hdd",
            DeviceModelConfig::Ssd(_) => "ssd",
            DeviceModelConfig::Loop(_) => "loop",
            DeviceModelConfig::Usb(_) => "usb",
            DeviceModelConfig::Nfs(_) => "nfs",
            DeviceModelConfig::Raid0(_) => "raid0",
            DeviceModelConfig::Raid5(_) => "raid5",
        }
    }

    /// Requests the device takes at once (tags; for raid0 the members' sum).
    pub fn queue_depth(&self) -> u32 {
        match self {
            DeviceModelConfig::Hdd(p) => p.queue_depth,
            DeviceModelConfig::Ssd(p) => p.queue_depth,
            DeviceModelConfig::Loop(p) => p.queue_depth,
            DeviceModelConfig::Usb(p) => p.queue_depth,
            DeviceModelConfig::Nfs(p) => p.queue_depth,
            DeviceModelConfig::Raid0(p) => p.members.saturating_mul(p.member.queue_depth()),
            DeviceModelConfig::Raid5(p) => p.members.saturating_mul(p.member.queue_depth()),
        }
    }

    /// Whether the device has a volatile write cache ("write back" is possible): a loop's
    /// backing file can always fsync, an NFS server's page cache holds UNSTABLE writes until a
    /// COMMIT, md inherits its members'.
    pub fn has_write_cache(&self) -> bool {
        match self {
            DeviceModelConfig::Hdd(p) => p.write_cache,
            DeviceModelConfig::Ssd(p) => p.write_cache,
            DeviceModelConfig::Loop(_) | DeviceModelConfig::Nfs(_) => true,
            DeviceModelConfig::Usb(_) => false,
            DeviceModelConfig::Raid0(p) => p.member.has_write_cache(),
            DeviceModelConfig::Raid5(p) => p.member.has_write_cache(),
        }
    }

    /// `max_hw_sectors_kb` where the driver sets one below the block layer's cap: usb-storage's
    /// 120 KiB, the NFS `wsize`, md raid0's chunk (or its members' limit if lower).
    pub fn max_hw_sectors_kb(&self) -> Option<u32> {
        let kb = |bytes: u64| (bytes / 1024).min(u64::from(u32::MAX)) as u32;
        match self {
            DeviceModelConfig::Usb(_) => Some(USB_MAX_SECTORS_KB),
            DeviceModelConfig::Nfs(p) => Some(kb(p.wsize)),
            DeviceModelConfig::Raid0(p) => {
                let chunk = kb(p.chunk);
                Some(p.member.max_hw_sectors_kb().map_or(chunk, |m| m.min(chunk)))
            }
            _ => None,
        }
    }
}

/// Default capacity of a device of `model`: a 4 TB disk, a 1 TB SSD, a 2 GiB loop image, an
/// 8 GB USB key, a 1 TB NFS export, and `members` × the member's default for raid0.
pub fn default_size(model: &DeviceModelConfig) -> u64 {
    match model {
        DeviceModelConfig::Hdd(_) => 4_000_000_000_000,
        DeviceModelConfig::Ssd(_) => 1_000_000_000_000,
        DeviceModelConfig::Loop(_) => 2 * GIB,
        DeviceModelConfig::Usb(_) => 8_000_000_000,
        DeviceModelConfig::Nfs(_) => 1_000_000_000_000,
        DeviceModelConfig::Raid0(p) => default_size(&p.member).saturating_mul(u64::from(p.members)),
        DeviceModelConfig::Raid5(p) => default_size(&p.member).saturating_mul(u64::from(p.members.max(3) - 1)),
    }
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
