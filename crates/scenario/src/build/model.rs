//! The device model's parameters, keyed by their `HddParams`/`SsdParams` field names.

use crate::error::Result;
use crate::section::Section;
use crate::units::{format_duration, format_size};
use wblab_sim::config::{DeviceModelConfig, HddParams, SsdParams};

pub(super) const MODELS: &[&str] = &["hdd", "ssd"];

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

/// BLK_MQ_MAX_DEPTH: the deepest tag set the block layer allocates.
const MAX_QUEUE_DEPTH: u32 = 10240;
/// Any single latency above this is a typo, not a device (and would overflow rate arithmetic).
const MAX_LATENCY: u64 = 10_000_000_000;

pub(super) fn keys(model: &str) -> &'static [&'static str] {
    if model == "ssd" {
        SSD_KEYS
    } else {
        HDD_KEYS
    }
}

/// Whether `key` is a parameter of any model (for "does not apply to model" messages).
pub(super) fn is_param(key: &str) -> bool {
    HDD_KEYS.contains(&key) || SSD_KEYS.contains(&key)
}

pub(super) fn build(model: &str, sec: &Section<'_>) -> Result<DeviceModelConfig> {
    Ok(if model == "ssd" {
        DeviceModelConfig::Ssd(ssd(sec)?)
    } else {
        DeviceModelConfig::Hdd(hdd(sec)?)
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
