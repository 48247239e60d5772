//! The device model's parameters, keyed by their `HddParams`/`SsdParams`/`LoopParams`/
//! `UsbParams`/`NfsParams`/`Raid0Params` field names. A raid0 device also takes its members'
//! parameters (`member_model`'s keys), which apply to every member.

use crate::error::Result;
use crate::section::Section;
use crate::units::{format_duration, format_size};
use wblab_sim::config::{
    DestagePolicy, DeviceModelConfig, HddParams, LoopParams, NfsCommit, NfsParams, Raid0Params, Raid5Params, SsdParams, UsbParams,
};

pub(super) const MODELS: &[&str] = &["hdd", "ssd", "loop", "usb", "nfs", "raid0", "raid5"];

/// Models a raid0 array can be built of.
pub(super) const MEMBER_MODELS: &[&str] = &["hdd", "ssd", "usb"];

pub(super) const HDD_KEYS: &[&str] = &[
    "rpm",
    "seek_track_to_track",
    "seek_average",
    "seek_full_stroke",
    "transfer_outer",
    "transfer_inner",
    "interface_rate",
    "queue_depth",
    "write_cache",
    "cache_size",
    "command_overhead",
    "destage",
];

pub(super) const SSD_KEYS: &[&str] = &[
    "parallelism",
    "read_latency",
    "write_latency",
    "read_bandwidth",
    "write_bandwidth",
    "queue_depth",
    "write_cache",
];

pub(super) const LOOP_KEYS: &[&str] = &[
    "backing_read_bandwidth",
    "backing_write_bandwidth",
    "backing_latency",
    "queue_depth",
];

pub(super) const USB_KEYS: &[&str] = &[
    "read_bandwidth",
    "write_bandwidth",
    "command_overhead",
    "erase_block",
    "open_blocks",
    "queue_depth",
];

pub(super) const NFS_KEYS: &[&str] = &[
    "wsize",
    "link_bandwidth",
    "rtt",
    "server_write_bandwidth",
    "server_read_bandwidth",
    "server_cache",
    "commit_bytes",
    "commit",
    "queue_depth",
];

/// The array's own keys; its members' parameters come on top (see [`member_keys`]).
pub(super) const RAID0_KEYS: &[&str] = &["members", "member_model", "chunk"];

/// A RAID5 array's own keys; its members' parameters come on top, as for raid0.
pub(super) const RAID5_KEYS: &[&str] = &["members", "member_model", "chunk", "stripe_cache", "stripe_delay"];

/// md 1.x superblocks describe at most 1920 devices.
const MAX_MEMBERS: u32 = 1920;
/// RPC_MAX_SLOT_TABLE: the most RPC slots a transport has.
const MAX_RPC_SLOTS: u32 = 65536;
/// NFS_MAX_FILE_IO_SIZE: the largest rsize/wsize of the Linux client.
const NFS_MAX_IO: u64 = 4 << 20;

/// BLK_MQ_MAX_DEPTH: the deepest tag set the block layer allocates.
const MAX_QUEUE_DEPTH: u32 = 10240;
/// Any single latency above this is a typo, not a device (and would overflow rate arithmetic).
const MAX_LATENCY: u64 = 10_000_000_000;

pub(super) fn keys(model: &str) -> &'static [&'static str] {
    match model {
        "ssd" => SSD_KEYS,
        "loop" => LOOP_KEYS,
        "usb" => USB_KEYS,
        "nfs" => NFS_KEYS,
        "raid0" => RAID0_KEYS,
        "raid5" => RAID5_KEYS,
        _ => HDD_KEYS,
    }
}

/// The members' model of a raid0 device (`member_model`, default `ssd`); None for others.
pub(super) fn member_kind(kind: &str, sec: &Section<'_>) -> Result<Option<&'static str>> {
    if kind != "raid0" && kind != "raid5" {
        return Ok(None);
    }
    let default = if kind == "raid5" { "hdd" } else { "ssd" };
    let m = sec.value_or("member_model", default, |e| {
        let name = e.str()?.trim();
        let other_model = MODELS.iter().any(|m| m.eq_ignore_ascii_case(name));
        if other_model && !MEMBER_MODELS.iter().any(|m| m.eq_ignore_ascii_case(name)) {
            return Err(e.problem(format!("a `{name}` device cannot be a raid0 member")).hint(format!(
                "md raid0 members here are block devices: {}",
                crate::suggest::list(MEMBER_MODELS)
            )));
        }
        e.keyword(MEMBER_MODELS, "member model")
    })?;
    Ok(Some(m))
}

/// Parameter keys of a raid0 array's members (none for other models).
pub(super) fn member_keys(member: Option<&str>) -> &'static [&'static str] {
    member.map_or(&[], keys)
}

/// Whether `key` is a parameter of any model (for "does not apply to model" messages).
pub(super) fn is_param(key: &str) -> bool {
    [HDD_KEYS, SSD_KEYS, LOOP_KEYS, USB_KEYS, NFS_KEYS, RAID0_KEYS, RAID5_KEYS]
        .iter()
        .any(|k| k.contains(&key))
}

pub(super) fn build(model: &str, sec: &Section<'_>) -> Result<DeviceModelConfig> {
    Ok(match model {
        "ssd" => DeviceModelConfig::Ssd(ssd(sec)?),
        "loop" => DeviceModelConfig::Loop(loop_dev(sec)?),
        "usb" => DeviceModelConfig::Usb(usb(sec)?),
        "nfs" => DeviceModelConfig::Nfs(nfs(sec)?),
        "raid0" => DeviceModelConfig::Raid0(raid0(sec)?),
        "raid5" => DeviceModelConfig::Raid5(raid5(sec)?),
        _ => DeviceModelConfig::Hdd(hdd(sec)?),
    })
}

fn hdd(sec: &Section<'_>) -> Result<HddParams> {
    let mut p = HddParams::default();
    sec.read("rpm", &mut p.rpm, |e| e.u32(1, 100_000))?;
    sec.read("seek_track_to_track", &mut p.seek_track_to_track, |e| e.duration_in(0, MAX_LATENCY))?;
    sec.read("seek_average", &mut p.seek_average, |e| e.duration_in(0, MAX_LATENCY))?;
    sec.read("seek_full_stroke", &mut p.seek_full_stroke, |e| e.duration_in(0, MAX_LATENCY))?;
    sec.read("transfer_outer", &mut p.transfer_outer, |e| e.rate())?;
    sec.read("transfer_inner", &mut p.transfer_inner, |e| e.rate())?;
    sec.read("interface_rate", &mut p.interface_rate, |e| e.rate())?;
    sec.read("queue_depth", &mut p.queue_depth, |e| e.u32(1, MAX_QUEUE_DEPTH))?;
    sec.read("write_cache", &mut p.write_cache, |e| e.boolean())?;
    sec.read("cache_size", &mut p.cache_size, |e| e.size())?;
    sec.read("command_overhead", &mut p.command_overhead, |e| e.duration_in(0, MAX_LATENCY))?;
    if let Some(e) = sec.get("destage") {
        p.destage = match e.keyword(&["interleave", "drain"], "destage policy")? {
            "drain" => DestagePolicy::Drain,
            _ => DestagePolicy::Interleave,
        };
    }

    let seeks = ["seek_track_to_track", "seek_average", "seek_full_stroke"];
    if !(p.seek_track_to_track <= p.seek_average && p.seek_average <= p.seek_full_stroke) {
        return Err(sec
            .conflict(
                &seeks,
                format!(
                    "seek times must grow with distance: track-to-track {} <= average {} <= full stroke {}",
                    format_duration(p.seek_track_to_track),
                    format_duration(p.seek_average),
                    format_duration(p.seek_full_stroke)
                ),
            )
            .hint("defaults: 1ms, 8.5ms, 16ms"));
    }
    if p.transfer_inner > p.transfer_outer {
        return Err(sec
            .conflict(
                &["transfer_inner", "transfer_outer"],
                format!(
                    "the inner edge ({}/s) cannot be faster than the outer edge ({}/s)",
                    format_size(p.transfer_inner),
                    format_size(p.transfer_outer)
                ),
            )
            .hint("outer tracks hold more sectors per turn; defaults: transfer_outer = \"210MiB/s\", transfer_inner = \"100MiB/s\""));
    }
    Ok(p)
}

fn ssd(sec: &Section<'_>) -> Result<SsdParams> {
    let mut p = SsdParams::default();
    sec.read("parallelism", &mut p.parallelism, |e| e.u32(1, 1024))?;
    sec.read("read_latency", &mut p.read_latency, |e| e.duration_in(0, MAX_LATENCY))?;
    sec.read("write_latency", &mut p.write_latency, |e| e.duration_in(0, MAX_LATENCY))?;
    sec.read("read_bandwidth", &mut p.read_bandwidth, |e| e.rate())?;
    sec.read("write_bandwidth", &mut p.write_bandwidth, |e| e.rate())?;
    sec.read("queue_depth", &mut p.queue_depth, |e| e.u32(1, MAX_QUEUE_DEPTH))?;
    sec.read("write_cache", &mut p.write_cache, |e| e.boolean())?;
    Ok(p)
}

fn loop_dev(sec: &Section<'_>) -> Result<LoopParams> {
    let mut p = LoopParams::default();
    sec.read("backing_read_bandwidth", &mut p.backing_read_bandwidth, |e| e.rate())?;
    sec.read("backing_write_bandwidth", &mut p.backing_write_bandwidth, |e| e.rate())?;
    sec.read("backing_latency", &mut p.backing_latency, |e| e.duration_in(0, MAX_LATENCY))?;
    // loop's hw_queue_depth module parameter: at least 1, at most BLK_MQ_MAX_DEPTH.
    sec.read("queue_depth", &mut p.queue_depth, |e| e.u32(1, MAX_QUEUE_DEPTH))?;
    Ok(p)
}

/// A size that is a whole number of 4 KiB pages, in `[lo, hi]`.
fn pages(e: &crate::section::Entry<'_>, lo: u64, hi: u64, what: &str) -> Result<u64> {
    let v = e.size_in(lo, hi)?;
    if v % 4096 == 0 {
        Ok(v)
    } else {
        Err(e
            .problem(format!("{} is not a whole number of 4 KiB pages", format_size(v)))
            .hint(what.to_string()))
    }
}

fn usb(sec: &Section<'_>) -> Result<UsbParams> {
    let mut p = UsbParams::default();
    sec.read("read_bandwidth", &mut p.read_bandwidth, |e| e.rate())?;
    sec.read("write_bandwidth", &mut p.write_bandwidth, |e| e.rate())?;
    sec.read("command_overhead", &mut p.command_overhead, |e| e.duration_in(0, MAX_LATENCY))?;
    sec.read("erase_block", &mut p.erase_block, |e| {
        pages(
            e,
            4096,
            1 << 30,
            "the flash erase block (allocation unit): whole pages, 4 KiB to 1 GiB, e.g. \"4MiB\"",
        )
    })?;
    sec.read("open_blocks", &mut p.open_blocks, |e| {
        e.u32(1, 64)
            .map_err(|p| p.hint("erase blocks the controller keeps open: cheap keys 1-5"))
    })?;
    // usb-storage: can_queue = 1; UAS devices queue more.
    sec.read("queue_depth", &mut p.queue_depth, |e| e.u32(1, MAX_QUEUE_DEPTH))?;
    Ok(p)
}

fn nfs(sec: &Section<'_>) -> Result<NfsParams> {
    let mut p = NfsParams::default();
    // nfs_io_size: a multiple of the page size up to NFS_MAX_FILE_IO_SIZE (over TCP).
    sec.read("wsize", &mut p.wsize, |e| {
        pages(
            e,
            4096,
            NFS_MAX_IO,
            "wsize: whole pages, 4 KiB to 4 MiB (NFS_MAX_FILE_IO_SIZE), e.g. \"1MiB\"",
        )
    })?;
    sec.read("link_bandwidth", &mut p.link_bandwidth, |e| e.rate())?;
    sec.read("rtt", &mut p.rtt, |e| e.duration_in(0, MAX_LATENCY))?;
    sec.read("server_write_bandwidth", &mut p.server_write_bandwidth, |e| e.rate())?;
    sec.read("server_read_bandwidth", &mut p.server_read_bandwidth, |e| e.rate())?;
    sec.read("server_cache", &mut p.server_cache, |e| e.size())?;
    sec.read("commit_bytes", &mut p.commit_bytes, |e| e.size_in(4096, u64::MAX))?;
    if let Some(e) = sec.get("commit") {
        p.commit = Some(match e.keyword(&["pass", "half"], "commit rule")? {
            "half" => NfsCommit::Half,
            _ => NfsCommit::Pass,
        });
    }
    sec.read("queue_depth", &mut p.queue_depth, |e| {
        e.u32(1, MAX_RPC_SLOTS.min(MAX_QUEUE_DEPTH))
            .map_err(|p| p.hint(format!("RPC slots in flight: 1 to {MAX_QUEUE_DEPTH}")))
    })?;
    if p.server_cache < p.wsize {
        return Err(sec
            .conflict(
                &["server_cache", "wsize"],
                format!(
                    "the server cache ({}) cannot hold one WRITE of wsize ({})",
                    format_size(p.server_cache),
                    format_size(p.wsize)
                ),
            )
            .hint("server_cache is the unstable data the server holds; make it at least wsize"));
    }
    Ok(p)
}

fn raid5(sec: &Section<'_>) -> Result<Raid5Params> {
    let mut p = Raid5Params::default();
    sec.read("members", &mut p.members, |e| {
        e.u32(3, MAX_MEMBERS).map_err(|p| {
            p.hint(format!(
                "RAID5 needs at least 3 members (N - 1 data chunks + parity per stripe), at most {MAX_MEMBERS}"
            ))
        })
    })?;
    sec.read("chunk", &mut p.chunk, |e| {
        pages(
            e,
            4096,
            256 << 20,
            "RAID5 chunk sizes are whole pages, 4 KiB to 256 MiB; 64 KiB is the 2.4 md and SMART-2 default",
        )
    })?;
    sec.read("stripe_cache", &mut p.stripe_cache, |e| {
        e.u32(1, 32768).map_err(|p| {
            p.hint("stripes held while gathering writes: 2.4 md had 256 (NR_STRIPES); 6.x stripe_cache_size allows 17 to 32768")
        })
    })?;
    sec.read("stripe_delay", &mut p.stripe_delay, |e| e.duration_in(0, MAX_LATENCY))?;
    let member = member_kind("raid5", sec)?.unwrap_or("hdd");
    p.member = Box::new(build(member, sec)?);
    Ok(p)
}

fn raid0(sec: &Section<'_>) -> Result<Raid0Params> {
    let mut p = Raid0Params::default();
    sec.read("members", &mut p.members, |e| {
        e.u32(1, MAX_MEMBERS)
            .map_err(|p| p.hint(format!("member devices (raid_disks): 1 to {MAX_MEMBERS}")))
    })?;
    sec.read("chunk", &mut p.chunk, |e| {
        pages(
            e,
            4096,
            256 << 20,
            "md chunk sizes are whole pages, 4 KiB to 256 MiB; mdadm's default is \"512KiB\"",
        )
    })?;
    let member = member_kind("raid0", sec)?.unwrap_or("ssd");
    p.member = Box::new(build(member, sec)?);
    Ok(p)
}
