//! `/sys/block/<dev>/queue/` knobs, and the defaults each device model's driver sets at
//! probe time.

use super::{
    CfqTunables, DeadlineTunables, DeviceModelConfig, LoopParams, NfsParams, Raid0Params, SchedulerKind, UsbParams, USB_MAX_SECTORS_KB,
};
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
}

/// Queue defaults for a device model, as the kernel would set them at probe time.
pub fn default_queue(model: &DeviceModelConfig) -> QueueConfig {
    let (rotational, write_cache, qd) = match model {
        DeviceModelConfig::Hdd(p) => (true, p.write_cache, p.queue_depth),
        DeviceModelConfig::Ssd(p) => (false, p.write_cache, p.queue_depth),
        DeviceModelConfig::Loop(p) => return loop_queue(p),
        DeviceModelConfig::Usb(p) => return usb_queue(p),
        DeviceModelConfig::Nfs(p) => return nfs_queue(p),
        DeviceModelConfig::Raid0(p) => return raid0_queue(p),
        // A RAID5 logical drive behind a controller (cpqarray): one request queue with an
        // elevator in front of the array.
        DeviceModelConfig::Raid5(p) => (true, p.member.has_write_cache(), p.members.saturating_mul(p.member.queue_depth())),
    };
    let scheduler = if rotational {
        SchedulerKind::MqDeadline
    } else {
        SchedulerKind::None
    };
    // blk_mq_default_nr_requests: 2 * min(qd, 128) with an elevator, the tag-set depth without.
    let nr_requests = match scheduler {
        SchedulerKind::None => qd,
        _ => 2 * qd.min(128),
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
    }
}

/// The queue of a USB 2.0 flash key as `usb-storage` and `sd` set it up (6.18):
/// - `can_queue` = 1: one tag, so mq-deadline (the default elevator of a single-queue SCSI
///   disk) with `nr_requests` = 2 × min(1, 128) = 2;
/// - `max_sectors_kb` 120 ([`USB_MAX_SECTORS_KB`]);
/// - rotational: `usb-storage` skips the VPD pages, so `sd` never learns the medium does not
///   rotate and the flag keeps its default, 1 (what USB keys report); hence wbt's 75 ms and
///   read-ahead 2 × `max_sectors_kb` = 240 KiB (`blk_apply_bdi_limits` without io_opt);
/// - "write through": `usb-storage` skips the caching mode page and `sd` assumes no cache.
fn usb_queue(p: &UsbParams) -> QueueConfig {
    let max_sectors_kb = USB_MAX_SECTORS_KB;
    QueueConfig {
        scheduler: SchedulerKind::MqDeadline,
        nr_requests: 2 * p.queue_depth.clamp(1, 128),
        max_sectors_kb,
        wbt_lat_usec: 75_000,
        read_ahead_kb: (2 * max_sectors_kb).max(128),
        nomerges: 0,
        rotational: true,
        write_cache: false,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
    }
}

/// The "queue" of an NFS mount. NFS has no block queue: the model puts one in front of its
/// RPC slots so the data path stays the block layer's. Its knobs are chosen to be neutral:
/// no elevator (`nr_requests` = the RPC slots, whose wait plays NFS's own write congestion
/// wait), requests of up to `wsize`, no blk-wbt (it needs a blk-mq queue), read-ahead
/// 128 KiB (`VM_READAHEAD_PAGES`: NFS's default since 5.4; before, 15 × `rsize`),
/// non-rotational, and a write cache (the server's page cache holding UNSTABLE data).
fn nfs_queue(p: &NfsParams) -> QueueConfig {
    QueueConfig {
        scheduler: SchedulerKind::None,
        nr_requests: p.queue_depth,
        max_sectors_kb: (p.wsize / 1024).clamp(4, u64::from(u32::MAX)) as u32,
        wbt_lat_usec: 0,
        read_ahead_kb: 128,
        nomerges: 0,
        rotational: false,
        write_cache: true,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
    }
}

/// The queue of an md raid0 array (`raid0_set_limits`, 6.18): a bio-based device, so no
/// elevator and no blk-wbt; `max_hw_sectors` = the chunk (and no more than the members'
/// limit: the limits stack), `io_opt` = chunk × members, hence read-ahead 2 × io_opt
/// (`blk_apply_bdi_limits`); rotational and write cache inherited from the members. md has no
/// tags: the members' queues bound what is in flight, modelled as `nr_requests` = the sum of
/// the members' queue depths.
fn raid0_queue(p: &Raid0Params) -> QueueConfig {
    let member = default_queue(&p.member);
    let chunk_kb = (p.chunk / 1024).min(u64::from(u32::MAX)) as u32;
    let io_opt_kb = u64::from(chunk_kb) * u64::from(p.members);
    QueueConfig {
        scheduler: SchedulerKind::None,
        nr_requests: p.members.saturating_mul(p.member.queue_depth()).max(1),
        max_sectors_kb: chunk_kb.min(member.max_sectors_kb).max(4),
        wbt_lat_usec: 0,
        read_ahead_kb: (2 * io_opt_kb).clamp(128, u64::from(i32::MAX as u32)) as u32,
        nomerges: 0,
        rotational: member.rotational,
        write_cache: member.write_cache,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
    }
}

/// The queue of a loop device after `loop_add` and `loop_configure` (`drivers/block/loop.c`),
/// as a 6.18 loop over a file on this lab's `vda` reports it (`realkernel.md` §1):
/// - no elevator (`BLK_MQ_F_NO_SCHED_BY_DEFAULT`), so `nr_requests` = the tag-set depth
///   (`hw_queue_depth`, 128);
/// - `max_sectors_kb` 1280: the loop sets no hardware limit, so the block layer's default cap;
/// - rotational copied from the backing file's device (`loop_update_limits`): `vda` says 1;
/// - wbt 2 ms: wbt was initialised when the disk was added, before `loop_configure` copied the
///   rotational flag, so it kept the non-rotational default;
/// - read-ahead 2 × `max_sectors_kb` (2560), as for any rotational queue;
/// - a write cache ("write back"): the backing file can fsync.
fn loop_queue(p: &LoopParams) -> QueueConfig {
    let max_sectors_kb = 1280;
    QueueConfig {
        scheduler: SchedulerKind::None,
        nr_requests: p.queue_depth,
        max_sectors_kb,
        wbt_lat_usec: 2_000,
        read_ahead_kb: 2 * max_sectors_kb,
        nomerges: 0,
        rotational: true,
        write_cache: true,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
    }
}
