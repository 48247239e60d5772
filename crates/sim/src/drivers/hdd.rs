//! Rotating disk: zoned geometry, a seek curve, rotational position, NCQ with shortest
//! positioning time first, and a volatile write cache that destages in the background.
//!
//! # Parameters ([`HddParams`]) and where the defaults come from
//!
//! The defaults describe a 7200 rpm 3.5" 4 TB SATA drive as its datasheet gives it (WD Red /
//! Seagate IronWolf / Toshiba N300 class): ~210 MB/s sustained at the outer edge, about half
//! of that (~100 MB/s) at the inner edge, average seek ~8.5 ms, track-to-track ~1 ms, full
//! stroke ~16 ms, 256 MiB of cache, NCQ depth 32, SATA 6 Gb/s (~550 MB/s usable).
//!
//! | field | meaning in the model |
//! |---|---|
//! | `rpm` | rotation period `T = 60 s / rpm` (8.33 ms at 7200 rpm) |
//! | `transfer_outer`, `transfer_inner` | media rate at the first and the last LBA |
//! | `seek_track_to_track`, `seek_average`, `seek_full_stroke` | the three points the seek curve passes through |
//! | `command_overhead` | decode time of each command, from arrival until the drive may act on it |
//! | `interface_rate` | SATA transfer of a write into the cache, or of a read served from the cache |
//! | `interface_overhead` | link time of each command besides its data (bus phases) |
//! | `queue_depth` | NCQ depth: commands the drive holds and reorders (1 = no NCQ) |
//! | `write_cache`, `cache_size` | volatile write-back cache and its capacity |
//!
//! # Geometry
//!
//! The stroke is a continuum `x ∈ [0, 1]` (outer to inner edge) with a constant track pitch,
//! so there are `N` tracks of one revolution each, evenly spread over the stroke. Zoned recording
//! makes the media rate fall linearly with the radial position, `r(x) = r_outer·(1 − κx)`, with
//! `κ = 1 − r_inner / r_outer`: a track at `x` holds `r(x)·T` bytes. Integrating the track size over
//! the stroke gives the byte offset of a position, a quadratic, inverted in closed form to map an
//! LBA to its position; `N` follows from the device size (`size = N·T·(r_outer + r_inner)/2`).
//! The rate is therefore exactly `transfer_outer` at LBA 0 and `transfer_inner` at the last LBA and
//! falls a little faster than linearly in LBA ("linear-ish"), as measured zone curves do.
//!
//! Each LBA is located by one number, `pos` = revolutions from LBA 0 (= track index + angle):
//! `floor(pos)` is its track and `frac(pos)` its angle on the platter. A transfer of bytes
//! `[a, b)` takes `(pos(b) − pos(a))·T`, i.e. it streams at the local media rate and crosses
//! track boundaries for free (track and cylinder skew hide head and track switches; the quoted
//! sustained rates include them).
//!
//! # Seek and rotation
//!
//! Seek time as a function of the distance `d` (fraction of the stroke) is the usual curve:
//! `a + b·√d` up to a third of the stroke and linear beyond, fitted so that it passes exactly through
//! track-to-track (`d` = one track), average (`d = 1/3`, the mean distance between two uniformly
//! random positions) and full stroke (`d = 1`). A target on the head's current track needs no seek.
//!
//! The platter angle is a function of absolute time, `frac(t / T + φ)`, where the phase `φ` is
//! drawn from the device's random stream when the drive is built (the spindle turns on its own
//! clock): the same random reads meet the platter at other angles under another seed. After the seek, the drive
//! waits until the target's angle `frac(pos)` comes under the head. A request that starts exactly
//! where the previous transfer ended, and is ready when that transfer ends, pays neither seek
//! nor rotation, so a queued sequential stream runs at the media rate, while a random access pays
//! on average `T/2` (4.17 ms at 7200 rpm) on top of its seek.
//!
//! # Commands and NCQ
//!
//! A command becomes ready after its firmware time, drawn from the device's random stream
//! between half and one and a half `command_overhead` (its mean), and not before the command
//! that arrived before it. While the head works on one
//! command, the others wait inside the drive; the decode overlaps that work. When the head is
//! free the drive picks, among the queued media commands, the one with the shortest positioning
//! time (seek + rotational wait, computed exactly from the head position and the platter angle),
//! ties going to the oldest. Aging bound: if the oldest queued command has waited
//! `ncq_age_limit` (default [`NCQ_AGE_LIMIT`], 2 s) it is served next whatever its cost, so no
//! command starves longer than that (drive firmware does something similar; neither the rule
//! nor the bound is published, and they differ between drives). SPTF will keep
//! serving one sequential stream while another waits, up to that bound, as real NCQ drives do.
//!
//! # Read look-ahead and read segments
//!
//! After a read the drive keeps reading the following sectors into its buffer (up to
//! [`READ_LOOKAHEAD`] bytes) for as long as the head is not needed elsewhere. A read that starts
//! in that window while the look-ahead is still going is served as if the head had never
//! stopped, so a queue-depth-1 sequential reader gets the media rate instead of losing a
//! revolution per request. A write taken into the cache does not need the head, so while
//! reads follow one another (each starting within 64 KiB of the last one's end), the cache is
//! at most half full and no flush waits, the drive finishes the look-ahead before it starts
//! destaging; a random reader's look-ahead is not waited for. When the head leaves, what the
//! read and its look-ahead brought in stays in the buffer as a read segment (the oldest
//! dropped first beyond `cache_size` or [`READ_SEGMENTS`] segments); a later read inside one
//! is served from the buffer at interface rate. A write over a segment drops it. This is
//! what lets a reader of small files laid out together (an untarred tree) get most of them
//! from the drive's buffer while a writer's requests come between its reads.
//!
//! # Write cache (`write_cache = true`)
//!
//! A write is admitted into the cache if it has room: it completes after its SATA transfer at
//! `interface_rate` (the link is one at a time, so a burst of writes completes at interface speed)
//! plus the command overhead. Cached data is kept as merged extents; overwrites of dirty data take
//! no extra room. The drive destages the cache to the media in the background, in LBA order from
//! the head (C-LOOK), in chunks of at most [`DESTAGE_CHUNK`] bytes, with the same seek and
//! rotation mechanics (so a long stream destages at the media rate). Room is freed when a chunk
//! reaches the media. When the cache is full, writes wait inside the drive, in arrival order,
//! still holding their NCQ tag, until destage frees enough room: a long write stream converges to
//! the media rate.
//!
//! Reads and destage compete for the head: reads go first while the cache has room. Once writes
//! wait for room, the drive (`destage = "interleave"`, the default) alternates bursts of
//! `destage_burst` (default [`DESTAGE_BURST`], 4 MiB) of destage with one read, and a write
//! that has waited `ncq_age_limit` forces destage. With `destage = "drain"` it destages as long as any write waits for room, so
//! a read behind a stream of queued writes is served only by NCQ aging — the read starvation of
//! the NCQ drives of the mid-2000s that CFQ's 2.6.22 rules (no async dispatch while a read is in
//! flight, few async requests in the drive) and blk-wbt's `wb_cache_delay` were written against. A read entirely inside
//! dirty cached data is served from the cache at interface rate without touching the head.
//!
//! With `write_cache = false` a write is a media command like a read and completes when its data
//! is on the media; so does a FUA write (`DevRequest::fua`: a journal's commit record) with the
//! cache on. `DevRequest::sync` is only a hint and is ignored (a sync write completes when it
//! is in the cache).
//!
//! # Cache flush (`Op::Flush`, SYNCHRONIZE CACHE)
//!
//! A flush completes once the bytes that were in the cache when it arrived have been destaged
//! (counted in bytes: destage is C-LOOK, not arrival order); destage runs whenever the head is
//! idle. SATA's flush is not an NCQ command ([`Device::flush_queueable`] is false), so the block
//! layer sends it to an idle drive and nothing else until it completes: the flush then waits
//! for the whole cache to reach the media.
//!
//! # Utilisation
//!
//! [`Device::busy_ns`] is iostat's `%util`: the time with at least one request inside the device
//! (queued, in service, or waiting for cache room), like the kernel's `io_ticks`. Time the drive
//! spends destaging with no request outstanding is *not* counted there;
//! [`Hdd::media_busy_ns`] gives the time the head spent working (seek + rotation + transfer),
//! destage included.
//!
//! # Simplifications
//! - One continuous surface: no separate heads/surfaces, no serpentine layout, no spare or bad
//!   sectors; track and head switches inside a sequential transfer are free (skew).
//! - Seek time does not depend on direction, read vs write, or settle, and has no noise; the
//!   chance in the model is the spindle's phase and the firmware time (drawn from the
//!   device's [`RngStream`], so a seed still reproduces a run exactly). No missed revolutions
//!   from a seek that settles late.
//! - Transfers of reads to the host overlap the media transfer (the link is faster) and do not
//!   contend with cache writes for the link.
//! - A destaged chunk leaves the cache as a whole when it reaches the media; a write that
//!   overwrote part of it meanwhile is taken as destaged too. Destage starts as soon as the head
//!   is idle (no idle delay) — or, after a read, once its look-ahead is done. The read and
//!   write caches are kept apart, each up to `cache_size`; a real drive shares one buffer
//!   between its segments.
//! - Requests past the end of the device are placed beyond the last track at the inner rate.
//!
//! # Cost
//! Per request: a couple of square roots to place it, a scan of at most `queue_depth` queued
//! commands at each head decision, heap operations on a buffer reused across requests. The cache
//! extent map is a `BTreeMap` that stays at one extent per sequential stream; only scattered
//! random writes make it grow (and allocate) — bounded by `cache_size`.

use super::model::{DeviceModel, Naming, LATENCY, QUEUE_DEPTH};
use super::{BusyClock, DevRequest, Device, Op};
use crate::config::{blk_mq_queue, Conflict, Knob, KnobKind, KnobValue, QueueConfig};
use crate::engine::RngStream;
use crate::knob;
use crate::units::{format_duration, format_size, MIB};
use crate::Ns;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// A rotating disk. Defaults: a 7200 rpm 3.5" SATA drive of today (4 TB class).
#[derive(Clone, Debug, Serialize)]
pub struct HddParams {
    pub rpm: u32,
    /// Seek time for a track-to-track move, ns.
    pub seek_track_to_track: Ns,
    /// Average seek (one third of full stroke), ns.
    pub seek_average: Ns,
    /// Full-stroke seek, ns.
    pub seek_full_stroke: Ns,
    /// Media transfer rate at the outer edge (LBA 0), bytes/s.
    pub transfer_outer: u64,
    /// Media transfer rate at the inner edge (last LBA), bytes/s.
    pub transfer_inner: u64,
    /// Interface (SATA) rate, bytes/s: the speed of a write-cache hit.
    pub interface_rate: u64,
    /// Link time of each command besides its data, ns: a parallel SCSI bus's arbitration,
    /// selection, message and status phases (and reselection after a disconnect), which a
    /// host-driven chip paces by interrupts. SATA's frames make it negligible (0).
    pub interface_overhead: Ns,
    /// Native command queue depth (1 = no NCQ).
    pub queue_depth: u32,
    /// Volatile write cache enabled (`write_cache` = "write back").
    pub write_cache: bool,
    /// Write cache size, bytes.
    pub cache_size: u64,
    /// Command overhead per request, ns.
    pub command_overhead: Ns,
    /// What the firmware does with reads while writes wait for cache room.
    pub destage: DestagePolicy,
    /// NCQ aging: the longest the oldest queued command waits for the head, ns. Firmware
    /// sets it and no datasheet gives it; it bounds a read's starvation under `drain`.
    pub ncq_age_limit: Ns,
    /// `interleave`: bytes destaged between two reads while writes wait for cache room.
    pub destage_burst: u64,
}

impl HddParams {
    /// A 2002 7200 rpm IDE (ATA-100) disk, the class of Morton's "horror test" machine: 40 MB/s
    /// at the outer edge falling to 24 MB/s inside (the 30–40 MB/s of the time's 40–80 GB
    /// drives), 8.5 ms average / 1 ms track-to-track / 15 ms full-stroke seeks, UDMA100,
    /// a 2 MiB buffer with write caching on (the IDE default), ~0.3 ms per command (taskfile
    /// setup and the interrupt), and no command queueing: `queue_depth` 1, the drive sees one
    /// request at a time (IDE TCQ was experimental and off).
    pub fn ide_2002() -> Self {
        HddParams {
            rpm: 7200,
            seek_track_to_track: 1_000_000,
            seek_average: 8_500_000,
            seek_full_stroke: 15_000_000,
            transfer_outer: 40_000_000,
            transfer_inner: 24_000_000,
            interface_rate: 100_000_000,
            interface_overhead: 0,
            queue_depth: 1,
            write_cache: true,
            cache_size: 2 * MIB,
            command_overhead: 300_000,
            destage: DestagePolicy::Interleave,
            ncq_age_limit: NCQ_AGE_LIMIT,
            destage_burst: DESTAGE_BURST,
        }
    }
}

impl Default for HddParams {
    fn default() -> Self {
        HddParams {
            rpm: 7200,
            seek_track_to_track: 1_000_000,
            seek_average: 8_500_000,
            seek_full_stroke: 16_000_000,
            transfer_outer: 210 * MIB,
            transfer_inner: 100 * MIB,
            interface_rate: 550 * MIB,
            interface_overhead: 0,
            queue_depth: 32,
            write_cache: true,
            cache_size: 256 * MIB,
            command_overhead: 50_000,
            destage: DestagePolicy::Interleave,
            ncq_age_limit: NCQ_AGE_LIMIT,
            destage_burst: DESTAGE_BURST,
        }
    }
}

/// How a drive with a full write cache shares the head between destaging and queued reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DestagePolicy {
    /// Up to 4 MiB of destage between two reads (today's drives: reads are not starved).
    #[default]
    Interleave,
    /// Destage as long as any write waits for room; a read is served only when no write
    /// waits, or when it has aged out of NCQ (2 s). The behaviour CFQ's 2.6.22 rules (no
    /// async dispatch while a read is in flight, at most `quantum` async requests in the
    /// drive) were written against.
    Drain,
}

impl DeviceModel for HddParams {
    const KIND: &'static str = "hdd";
    const SUMMARY: &'static str = "a 7200 rpm SATA disk with NCQ and a write cache";
    const NAMING: Naming = Naming::Sd;
    const MEMBER: bool = true;

    fn knobs() -> &'static [Knob<Self>] {
        &HDD_KNOBS
    }

    fn validate(&self) -> Result<(), Conflict> {
        if !(self.seek_track_to_track <= self.seek_average && self.seek_average <= self.seek_full_stroke) {
            return Err(Conflict {
                keys: &["seek_track_to_track", "seek_average", "seek_full_stroke"],
                message: format!(
                    "seek times must grow with distance: track-to-track {} <= average {} <= full stroke {}",
                    format_duration(self.seek_track_to_track),
                    format_duration(self.seek_average),
                    format_duration(self.seek_full_stroke)
                ),
                hint: "defaults: 1ms, 8.5ms, 16ms".into(),
            });
        }
        if self.transfer_inner > self.transfer_outer {
            return Err(Conflict {
                keys: &["transfer_inner", "transfer_outer"],
                message: format!(
                    "the inner edge ({}/s) cannot be faster than the outer edge ({}/s)",
                    format_size(self.transfer_inner),
                    format_size(self.transfer_outer)
                ),
                hint: "outer tracks hold more sectors per turn; defaults: transfer_outer = \"210MiB/s\", transfer_inner = \"100MiB/s\""
                    .into(),
            });
        }
        Ok(())
    }

    /// A 4 TB disk.
    fn default_size(&self) -> u64 {
        4_000_000_000_000
    }

    fn default_queue(&self) -> QueueConfig {
        blk_mq_queue(true, self.write_cache, self.queue_depth)
    }

    fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    fn has_write_cache(&self) -> bool {
        self.write_cache
    }

    fn build(&self, size: u64, rng: RngStream) -> Box<dyn Device> {
        Box::new(Hdd::new(self.clone(), size, rng))
    }

    fn write_cache_bytes(&self) -> u64 {
        if self.write_cache {
            self.cache_size
        } else {
            0
        }
    }
}

static HDD_KNOBS: [Knob<HddParams>; 15] = [
    knob!(HddParams, "rpm", KnobKind::Count { min: 1, max: 100_000 }, "spindle speed", rpm: u32),
    knob!(HddParams, "seek_track_to_track", LATENCY, "seek to the next track", seek_track_to_track: u64),
    knob!(HddParams, "seek_average", LATENCY, "average seek, one third of full stroke", seek_average: u64),
    knob!(HddParams, "seek_full_stroke", LATENCY, "seek across the whole disk", seek_full_stroke: u64),
    knob!(HddParams, "transfer_outer", KnobKind::Rate, "media rate at the outer edge, LBA 0", transfer_outer: u64),
    knob!(HddParams, "transfer_inner", KnobKind::Rate, "media rate at the inner edge", transfer_inner: u64),
    knob!(HddParams, "interface_rate", KnobKind::Rate, "SATA link rate: the speed of a write-cache hit", interface_rate: u64),
    knob!(HddParams, "interface_overhead", LATENCY, "link time per command besides its data: a SCSI bus's phases (0 for SATA)", interface_overhead: u64),
    knob!(HddParams, "queue_depth", QUEUE_DEPTH, "NCQ depth; 1 = no command queueing", queue_depth: u32),
    knob!(HddParams, "write_cache", KnobKind::Bool, "volatile write cache on", write_cache: bool),
    knob!(HddParams, "cache_size", KnobKind::Size { min: 0, max: u64::MAX, pages: false }, "write cache size", cache_size: u64),
    knob!(HddParams, "command_overhead", LATENCY, "firmware time per command", command_overhead: u64),
    knob!(HddParams, "destage_burst", KnobKind::Size { min: DESTAGE_CHUNK, max: u64::MAX, pages: false }, "`interleave`: data destaged between two reads while writes wait for cache room", destage_burst: u64),
    knob!(HddParams, "ncq_age_limit", LATENCY, "NCQ aging: the longest the oldest queued command waits for the head", ncq_age_limit: u64),
    Knob {
        key: "destage",
        kind: KnobKind::Word {
            words: &["interleave", "drain"],
            what: "destage policy",
        },
        doc:
            "reads while writes wait for cache room: `interleave` one read per `destage_burst` destaged (default), `drain` only aged reads",
        get: |p| {
            KnobValue::Word(match p.destage {
                DestagePolicy::Interleave => "interleave",
                DestagePolicy::Drain => "drain",
            })
        },
        set: |p, v| {
            p.destage = if v.word() == "drain" {
                DestagePolicy::Drain
            } else {
                DestagePolicy::Interleave
            }
        },
    },
];

/// Default `ncq_age_limit`: no queued command waits longer than this for the head once it is
/// the oldest (NCQ aging).
pub const NCQ_AGE_LIMIT: Ns = 2_000_000_000;
/// Largest piece of cached data destaged in one head operation, bytes.
pub const DESTAGE_CHUNK: u64 = 1 << 20;
/// Default `destage_burst`: data destaged in a row while reads wait and writes wait for cache
/// room, bytes.
pub const DESTAGE_BURST: u64 = 4 * DESTAGE_CHUNK;
/// How far the drive keeps reading ahead after a read while idle, bytes.
pub const READ_LOOKAHEAD: u64 = 2 << 20;
/// Read segments the drive's buffer holds at most (firmware cuts its buffer into a few
/// dozen); it also bounds the scan a read's lookup costs.
pub const READ_SEGMENTS: usize = 32;
/// A read starting at most this far past the last one's end continues its stream.
const SEQ_GAP: u64 = 64 << 10;
/// Smallest device the geometry is built for (smaller sizes are rounded up), bytes.
const MIN_SIZE: u64 = 64 << 20;
/// Radial distance (fraction of the stroke) where the seek curve turns from √d to linear.
const SEEK_KNEE: f64 = 1.0 / 3.0;

/// Seek time as a function of distance (fraction of the full stroke).
#[derive(Clone, Copy, Debug)]
pub struct SeekCurve {
    /// One track, as a fraction of the stroke.
    d1: f64,
    a: f64,
    b: f64,
    c: f64,
    e: f64,
}

impl SeekCurve {
    /// Fit `a + b·√d` through (one track, `t2t`) and (1/3, `avg`), and a line through
    /// (1/3, `avg`) and (1, `full`). Times in ns; `tracks` is the number of tracks on the stroke.
    pub fn new(t2t: Ns, avg: Ns, full: Ns, tracks: f64) -> Self {
        let (t2t, avg, full) = (t2t as f64, avg as f64, full as f64);
        let d1 = (1.0 / tracks.max(1.0)).min(SEEK_KNEE / 2.0);
        let b = ((avg - t2t) / (SEEK_KNEE.sqrt() - d1.sqrt())).max(0.0);
        let a = t2t - b * d1.sqrt();
        let e = ((full - avg) / (1.0 - SEEK_KNEE)).max(0.0);
        let c = (a + b * SEEK_KNEE.sqrt()) - e * SEEK_KNEE;
        SeekCurve { d1, a, b, c, e }
    }

    /// Seek time in ns for a move of `d` (fraction of the stroke); 0 for `d <= 0`.
    pub fn ns(&self, d: f64) -> f64 {
        if d <= 0.0 {
            0.0
        } else if d <= SEEK_KNEE {
            (self.a + self.b * d.max(self.d1).sqrt()).max(0.0)
        } else {
            (self.c + self.e * d.min(1.0)).max(0.0)
        }
    }

    /// One track as a fraction of the stroke (the shortest seek).
    pub fn one_track(&self) -> f64 {
        self.d1
    }
}

/// Zoned-recording geometry: byte offset ↔ position in revolutions from LBA 0.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    size: f64,
    /// 1 − r_inner / r_outer.
    kappa: f64,
    /// Tracks on the stroke.
    tracks: f64,
    /// Rotation period, ns.
    rev_ns: f64,
    /// Bytes per track at the inner edge.
    inner_track: f64,
    r_outer: f64,
}

impl Geometry {
    pub fn new(p: &HddParams, size: u64) -> Self {
        let size = size.max(MIN_SIZE) as f64;
        let r_outer = p.transfer_outer.max(1) as f64;
        let r_inner = (p.transfer_inner.max(1) as f64).min(r_outer);
        let rev_ns = 60e9 / p.rpm.max(1) as f64;
        let tracks = size / (rev_ns * 1e-9 * (r_outer + r_inner) / 2.0);
        Geometry {
            size,
            kappa: 1.0 - r_inner / r_outer,
            tracks,
            rev_ns,
            inner_track: r_inner * rev_ns * 1e-9,
            r_outer,
        }
    }

    /// Position of byte `b`: revolutions from LBA 0 (integer part = track, fraction = angle).
    #[inline]
    pub fn pos(&self, b: u64) -> f64 {
        let bf = b as f64;
        if bf > self.size {
            return self.tracks + (bf - self.size) / self.inner_track;
        }
        let u = bf / self.size;
        let k = self.kappa;
        let m = 1.0 - k / 2.0;
        // Solve x − κx²/2 = u·(1 − κ/2) for x in [0, 1], in the cancellation-free form.
        let x = 2.0 * u * m / (1.0 + (1.0 - 2.0 * k * u * m).max(0.0).sqrt());
        x * self.tracks
    }

    /// Byte at position `pos` (the inverse of [`Geometry::pos`]).
    pub fn byte_at(&self, pos: f64) -> u64 {
        let x = pos / self.tracks;
        if x > 1.0 {
            return (self.size + (pos - self.tracks) * self.inner_track) as u64;
        }
        let k = self.kappa;
        (self.size * (x - k * x * x / 2.0) / (1.0 - k / 2.0)).max(0.0) as u64
    }

    /// Radial position of byte `b` as a fraction of the stroke (0 = outer edge).
    pub fn radial(&self, b: u64) -> f64 {
        self.pos(b) / self.tracks
    }

    /// Media rate at byte `b`, bytes/s.
    pub fn rate_at(&self, b: u64) -> f64 {
        self.r_outer * (1.0 - self.kappa * self.radial(b).min(1.0))
    }

    pub fn tracks(&self) -> f64 {
        self.tracks
    }

    pub fn rev_ns(&self) -> f64 {
        self.rev_ns
    }
}

/// A command inside the drive.
#[derive(Clone, Copy, Debug)]
struct Cmd {
    id: u32,
    write: bool,
    byte: u64,
    end: u64,
    pos_s: f64,
    pos_e: f64,
    arrival: Ns,
    ready: Ns,
}

const EMPTY_CMD: Cmd = Cmd {
    id: 0,
    write: false,
    byte: 0,
    end: 0,
    pos_s: 0.0,
    pos_e: 0.0,
    arrival: 0,
    ready: 0,
};

#[derive(Clone, Copy, Debug, PartialEq)]
enum HeadOp {
    Idle,
    /// A read or a write-through write; its completion is already scheduled.
    Media,
    /// Destage of cached bytes `[start, end)`.
    Destage {
        start: u64,
        end: u64,
    },
}

pub struct Hdd {
    p: HddParams,
    geo: Geometry,
    seek: SeekCurve,
    /// SATA transfer time per byte, ns.
    iface_ns: f64,
    /// Media commands wait for the link too: `interface_rate` is below `transfer_outer`, or
    /// each command takes bus phases (`interface_overhead`).
    slow_link: bool,
    slots: Vec<Cmd>,
    free_slots: Vec<u32>,
    /// Media commands waiting for the head, in arrival order.
    queue: Vec<u32>,
    /// Cached writes waiting for room, in arrival order.
    waiting: VecDeque<u32>,
    /// Scheduled completions: (time, sequence, id).
    completions: BinaryHeap<Reverse<(Ns, u64, u32)>>,
    seq: u64,
    in_flight: u32,
    /// Head: position (revolutions) and byte where the last transfer ended, and when.
    head_pos: f64,
    head_byte: u64,
    head_free: Ns,
    head_op: HeadOp,
    /// The last head operation was a read (look-ahead running while idle).
    last_read: bool,
    /// The look-ahead of the current read stream: where the stream's first read started
    /// (the segment it fills) and where the look-ahead stops.
    ra_start: u64,
    ra_limit: u64,
    /// Read segments the drive still holds (clean data of earlier reads and their
    /// look-ahead), oldest first, and their bytes (at most `cache_size` in at most
    /// [`READ_SEGMENTS`] segments).
    read_segs: VecDeque<(u64, u64)>,
    read_seg_bytes: u64,
    /// Where the last read (from the media or the buffer) ended, and whether reads have
    /// been following one another there (the firmware's sequential-stream detection).
    last_read_end: u64,
    seq_reads: bool,
    /// A head decision pending while the drive decodes a command that woke it up.
    decide_at: Option<Ns>,
    /// Dirty cached extents, start → end (bytes), merged when adjacent.
    cache: BTreeMap<u64, u64>,
    cache_used: u64,
    /// Flushes waiting for the cache: (request id, when the command was taken, `cache_in` then).
    flushes: Vec<(u32, Ns, u64)>,
    /// Bytes that ever entered the cache (net of overwrites) and that ever left it for the
    /// media: a flush is done once as many bytes have left as had entered when it came.
    cache_in: u64,
    cache_out: u64,
    /// Destage chunks in a row while reads wait.
    streak: u32,
    link_free: Ns,
    busy: BusyClock,
    media_busy: Ns,
    /// When the last command to arrive is decoded.
    last_ready: Ns,
    /// The platter's angle at time 0: nothing ties the spindle's phase to the host's clock.
    phase: f64,
    rng: RngStream,
}

impl Hdd {
    pub fn new(p: HddParams, size: u64, mut rng: RngStream) -> Self {
        let phase = rng.next_f64();
        let geo = Geometry::new(&p, size);
        let seek = SeekCurve::new(p.seek_track_to_track, p.seek_average, p.seek_full_stroke, geo.tracks);
        let qd = p.queue_depth.max(1) as usize;
        Hdd {
            iface_ns: 1e9 / p.interface_rate.max(1) as f64,
            slow_link: p.interface_rate < p.transfer_outer || p.interface_overhead > 0,
            p,
            geo,
            seek,
            slots: Vec::with_capacity(qd),
            free_slots: Vec::with_capacity(qd),
            queue: Vec::with_capacity(qd),
            waiting: VecDeque::with_capacity(qd),
            completions: BinaryHeap::with_capacity(qd + 1),
            seq: 0,
            in_flight: 0,
            head_pos: 0.0,
            head_byte: 0,
            head_free: 0,
            head_op: HeadOp::Idle,
            last_read: false,
            ra_start: 0,
            ra_limit: 0,
            read_segs: VecDeque::new(),
            read_seg_bytes: 0,
            last_read_end: 0,
            seq_reads: false,
            decide_at: None,
            cache: BTreeMap::new(),
            cache_used: 0,
            flushes: Vec::new(),
            cache_in: 0,
            cache_out: 0,
            streak: 0,
            link_free: 0,
            busy: BusyClock::default(),
            media_busy: 0,
            last_ready: 0,
            phase,
            rng,
        }
    }

    /// Whether the head's steps may be taken late, at the next completion or arrival,
    /// instead of as events of their own: behind a slow link (`slow_link`), with no flush
    /// waiting. Every completion but a flush's then goes through the link, which carries the
    /// commands one at a time in the order they were taken or admitted to the cache: what a
    /// step of the head starts or admits ends after the link has carried everything already
    /// scheduled, and after the step itself. No step can complete anything before the
    /// completion already due, so taking the steps when the drive is next touched, each at
    /// the time it was due, gives the same decisions with fewer events (about half of a busy
    /// array of such drives: the 2004 tiotest's ten disks on one SCSI bus). A flush waits for
    /// the head's destage and completes from its step, so while one waits the steps are
    /// events again.
    fn head_may_wait(&self) -> bool {
        self.slow_link && self.flushes.is_empty()
    }

    /// Take every head step due at or before `now`, in time order.
    fn run_head(&mut self, now: Ns) {
        while let Some(t) = self.head_event() {
            if t > now {
                break;
            }
            match self.head_op {
                HeadOp::Idle => self.decide_at = None,
                HeadOp::Media => self.head_op = HeadOp::Idle,
                HeadOp::Destage { start, end } => {
                    self.head_op = HeadOp::Idle;
                    self.cache_remove(start, end);
                    self.admit_waiters(t);
                }
            }
            self.start_next(t);
            if self.head_op != HeadOp::Idle {
                self.decide_at = None;
            }
            self.finish_flushes(t);
        }
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    pub fn seek_curve(&self) -> &SeekCurve {
        &self.seek
    }

    /// Dirty bytes in the write cache.
    pub fn cache_used(&self) -> u64 {
        self.cache_used
    }

    /// Time the head spent seeking, rotating and transferring (destage included), ns.
    pub fn media_busy_ns(&self) -> Ns {
        self.media_busy
    }

    fn alloc(&mut self, c: Cmd) -> u32 {
        match self.free_slots.pop() {
            Some(s) => {
                self.slots[s as usize] = c;
                s
            }
            None => {
                self.slots.push(c);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// When a command arriving at `now` is decoded: after its firmware time, `command_overhead`
    /// on average, anywhere from half to one and a half of it (the firmware's path differs with
    /// the command and the cache's state), and never before the command that came before it.
    fn decoded_at(&mut self, now: Ns) -> Ns {
        let o = self.p.command_overhead;
        self.last_ready = (now + o / 2 + self.rng.below(o + 1)).max(self.last_ready);
        self.last_ready
    }

    fn complete_at(&mut self, t: Ns, id: u32) {
        self.seq += 1;
        self.completions.push(Reverse((t, self.seq, id)));
    }

    /// Wake an idle head: it decides what to do once the command is decoded.
    fn kick(&mut self, at: Ns) {
        if self.head_op == HeadOp::Idle {
            self.decide_at = Some(self.decide_at.map_or(at, |d| d.min(at)));
        }
    }

    /// Link transfer of a command carrying `bytes`, starting no earlier than `t`: its bus
    /// phases, then the data. Returns its end.
    fn link(&mut self, t: Ns, bytes: u64) -> Ns {
        let start = t.max(self.link_free);
        self.link_free = start + self.link_ns(bytes);
        self.link_free
    }

    /// Link time of a command carrying `bytes`: its bus phases, then the data.
    #[inline]
    fn link_ns(&self, bytes: u64) -> Ns {
        self.p.interface_overhead + (bytes as f64 * self.iface_ns).round() as Ns
    }

    #[inline]
    fn xfer_ns(&self, pos_s: f64, pos_e: f64) -> Ns {
        ((pos_e - pos_s).max(0.0) * self.geo.rev_ns).round() as Ns
    }

    /// Time at which the transfer of data at (`byte`, `pos`) can start if the head starts
    /// positioning at `s`: seek, then wait for the target angle.
    #[inline]
    fn locate(&self, s: Ns, byte: u64, pos: f64) -> Ns {
        if byte == self.head_byte && s == self.head_free {
            return s;
        }
        let seek = if pos.floor() == self.head_pos.floor() {
            0
        } else {
            let d = ((pos - self.head_pos).abs() / self.geo.tracks).max(self.seek.one_track());
            self.seek.ns(d).round() as Ns
        };
        let arrive = s + seek;
        let rev = self.geo.rev_ns;
        let head_angle = (arrive as f64 / rev + self.phase).fract();
        let mut wait = (pos.fract() - head_angle).rem_euclid(1.0);
        if wait > 1.0 - 1e-7 {
            wait = 0.0;
        }
        arrive + (wait * rev).round() as Ns
    }

    /// (transfer start, end) of media command `c` if the head takes it at `t`.
    #[inline]
    fn plan(&self, t: Ns, c: &Cmd) -> (Ns, Ns) {
        let s = t.max(c.ready);
        if self.streams_on(s, c) {
            // Look-ahead: the drive kept streaming from head_byte since head_free.
            let start = self.head_free + self.xfer_ns(self.head_pos, c.pos_s);
            let media_end = self.head_free + self.xfer_ns(self.head_pos, c.pos_e);
            let host_end = s + self.link_ns(c.end - c.byte);
            return (start, media_end.max(host_end));
        }
        let start = self.locate(s, c.byte, c.pos_s);
        (start, start + self.xfer_ns(c.pos_s, c.pos_e))
    }

    /// Read `c`, taken at `s`, starts inside the window the running look-ahead streams.
    #[inline]
    fn in_lookahead(&self, s: Ns, c: &Cmd) -> bool {
        !c.write && self.last_read && s >= self.head_free && c.byte >= self.head_byte && c.byte <= self.ra_limit
    }

    /// Read `c`, taken at `s`, is met by the look-ahead still streaming towards `ra_limit`:
    /// it continues the stream without a seek.
    #[inline]
    fn streams_on(&self, s: Ns, c: &Cmd) -> bool {
        self.in_lookahead(s, c) && s <= self.lookahead_done()
    }

    /// When the running look-ahead reaches `ra_limit`.
    fn lookahead_done(&self) -> Ns {
        self.head_free + self.xfer_ns(self.head_pos, self.geo.pos(self.ra_limit))
    }

    /// The head leaves the read stream at `t`: what the look-ahead read so far stays in the
    /// drive as a read segment, and the head is where the look-ahead stopped.
    fn retire_lookahead(&mut self, t: Ns) {
        if !self.last_read {
            return;
        }
        self.last_read = false;
        if t > self.head_free {
            let streamed = self.head_pos + (t - self.head_free) as f64 / self.geo.rev_ns;
            let end = self.geo.byte_at(streamed).clamp(self.head_byte, self.ra_limit.max(self.head_byte));
            self.head_byte = end;
            self.head_pos = self.geo.pos(end);
            self.head_free = t;
        }
        self.keep_segment(self.ra_start, self.head_byte);
    }

    /// Hold `[s, e)` as a read segment, dropping the oldest beyond the cache's size.
    fn keep_segment(&mut self, s: u64, e: u64) {
        if e <= s {
            return;
        }
        let cap = self.p.cache_size.max(READ_LOOKAHEAD);
        let (s, e) = (s.max(e.saturating_sub(cap)), e);
        self.drop_segments(s, e);
        self.read_segs.push_back((s, e));
        self.read_seg_bytes += e - s;
        while self.read_seg_bytes > cap || self.read_segs.len() > READ_SEGMENTS {
            let Some((os, oe)) = self.read_segs.pop_front() else { break };
            self.read_seg_bytes -= oe - os;
        }
    }

    /// Forget the read segments overlapping `[s, e)` (written, or about to be re-held).
    fn drop_segments(&mut self, s: u64, e: u64) {
        // Most writes meet no segment: a read-only scan first, the rebuilding `retain` only
        // when one overlaps.
        if !self.read_segs.iter().any(|&(a, b)| b > s && a < e) {
            return;
        }
        let mut freed = 0;
        self.read_segs.retain(|&(a, b)| {
            let keep = b <= s || a >= e;
            if !keep {
                freed += b - a;
            }
            keep
        });
        self.read_seg_bytes -= freed;
    }

    /// A read of `[s, e)`: it continues a sequential stream if it starts within
    /// [`SEQ_GAP`] of where the last one ended.
    fn note_read(&mut self, s: u64, e: u64) {
        self.seq_reads = s >= self.last_read_end && s - self.last_read_end <= SEQ_GAP;
        self.last_read_end = e;
    }

    /// `[s, e)` lies in one read segment.
    fn segment_hit(&self, s: u64, e: u64) -> bool {
        self.read_segs.iter().any(|&(a, b)| a <= s && e <= b)
    }

    fn has_room(&self, bytes: u64) -> bool {
        self.cache_used == 0 || self.cache_used + bytes <= self.p.cache_size
    }

    fn cache_hit(&self, s: u64, e: u64) -> bool {
        self.cache.range(..=s).next_back().is_some_and(|(_, &pe)| pe >= e)
    }

    /// Add `[s, e)` to the dirty extents, merging with overlapping and adjacent ones.
    fn cache_insert(&mut self, s: u64, e: u64) {
        if e <= s {
            return;
        }
        let (mut ns, mut ne, mut removed) = (s, e, 0);
        if let Some((&ps, &pe)) = self.cache.range(..=s).next_back() {
            if pe >= s {
                ns = ps;
                ne = ne.max(pe);
                removed += pe - ps;
                self.cache.remove(&ps);
            }
        }
        while let Some((&qs, &qe)) = self.cache.range(ns..=ne).next() {
            ne = ne.max(qe);
            removed += qe - qs;
            self.cache.remove(&qs);
        }
        self.cache.insert(ns, ne);
        self.cache_used = self.cache_used + (ne - ns) - removed;
        self.cache_in += (ne - ns) - removed;
    }

    /// Remove `[s, e)` from the dirty extents (data reached the media).
    fn cache_remove(&mut self, s: u64, e: u64) {
        // Extents overlapping [s, e): the one starting before s, and those starting inside.
        let mut cur = match self.cache.range(..s).next_back() {
            Some((&ps, &pe)) if pe > s => ps,
            _ => s,
        };
        while cur < e {
            let Some((&qs, &qe)) = self.cache.range(cur..e).next() else { break };
            self.cache.remove(&qs);
            let (os, oe) = (qs.max(s), qe.min(e));
            self.cache_used -= oe - os;
            self.cache_out += oe - os;
            if qs < s {
                self.cache.insert(qs, s);
            }
            if qe > e {
                self.cache.insert(e, qe);
            }
            cur = qe;
        }
    }

    /// Next cached range to destage: C-LOOK from the head.
    fn pick_destage(&self) -> Option<(u64, u64)> {
        let h = self.head_byte;
        if let Some((_, &pe)) = self.cache.range(..=h).next_back() {
            if pe > h {
                return Some((h, pe.min(h + DESTAGE_CHUNK)));
            }
        }
        let (&s, &e) = self.cache.range(h..).next().or_else(|| self.cache.iter().next())?;
        Some((s, e.min(s + DESTAGE_CHUNK)))
    }

    /// Admit a cached write: the data crosses the link into the cache.
    fn admit(&mut self, t: Ns, slot: u32) {
        let c = self.slots[slot as usize];
        self.free_slots.push(slot);
        self.drop_segments(c.byte, c.end);
        self.cache_insert(c.byte, c.end);
        let done = self.link(t.max(c.ready), c.end - c.byte);
        self.complete_at(done, c.id);
        self.kick(done);
    }

    fn admit_waiters(&mut self, t: Ns) {
        while let Some(&slot) = self.waiting.front() {
            let c = &self.slots[slot as usize];
            if !self.has_room(c.end - c.byte) {
                break;
            }
            self.waiting.pop_front();
            self.admit(t, slot);
        }
    }

    /// Whether the command in `slot` has waited `ncq_age_limit` at `t` (NCQ aging).
    fn aged(&self, slot: u32, t: Ns) -> bool {
        t.saturating_sub(self.slots[slot as usize].arrival) >= self.p.ncq_age_limit
    }

    /// Index in `queue` of the command to serve at `t`: the oldest if it has aged out,
    /// else shortest positioning time.
    fn pick_media(&self, t: Ns) -> usize {
        if self.aged(self.queue[0], t) {
            return 0;
        }
        let mut best = (Ns::MAX, 0);
        for (i, &slot) in self.queue.iter().enumerate() {
            let c = &self.slots[slot as usize];
            let (start, _) = self.plan(t, c);
            if start < best.0 {
                best = (start, i);
            }
        }
        best.1
    }

    /// The head is free at `t`: pick and start its next operation.
    fn start_next(&mut self, t: Ns) {
        let has_media = !self.queue.is_empty();
        let has_cache = !self.cache.is_empty();
        if !has_media && !has_cache {
            return;
        }
        // Destage when there is nothing else to do; with reads waiting, only while writes wait
        // for room (in bursts), unless the oldest read has aged out or the oldest waiting write has.
        let media_aged = has_media && self.aged(self.queue[0], t);
        let burst_left = match self.p.destage {
            DestagePolicy::Interleave => u64::from(self.streak) * DESTAGE_CHUNK < self.p.destage_burst,
            DestagePolicy::Drain => true,
        };
        let write_pressure = self.waiting.front().map(|&w| (burst_left, self.aged(w, t)));
        let destage = has_cache && (!has_media || (!media_aged && write_pressure.is_some_and(|(in_burst, aged)| in_burst || aged)));
        if destage
            && !has_media
            && self.waiting.is_empty()
            && self.flushes.is_empty()
            && 2 * self.cache_used <= self.p.cache_size
            && self.seq_reads
            && self.last_read
            && t >= self.head_free
        {
            // A sequential reader and nothing pressing for room (the cache at most half full):
            // the drive finishes the read's look-ahead before it goes to destage (a cached
            // write does not need the head). A random reader's look-ahead is not waited for.
            let done = self.lookahead_done();
            if t < done {
                self.decide_at = Some(done);
                return;
            }
        }
        if destage {
            self.retire_lookahead(t);
            if has_media {
                self.streak += 1;
            }
            let Some((a, b)) = self.pick_destage() else { return };
            let (pa, pb) = (self.geo.pos(a), self.geo.pos(b));
            let start = self.locate(t, a, pa);
            let end = start + self.xfer_ns(pa, pb);
            self.media_busy += end - t;
            self.head_pos = pb;
            self.head_byte = b;
            self.head_free = end;
            self.head_op = HeadOp::Destage { start: a, end: b };
            self.last_read = false;
        } else {
            self.streak = 0;
            let i = self.pick_media(t);
            let slot = self.queue.remove(i);
            let c = self.slots[slot as usize];
            self.free_slots.push(slot);
            if !c.write {
                self.note_read(c.byte, c.end);
            }
            if self.streams_on(t.max(c.ready), &c) {
                // The stream goes on: the look-ahead window moves with it.
                self.ra_limit = c.end + READ_LOOKAHEAD;
            } else {
                self.retire_lookahead(t);
                if !c.write {
                    self.ra_start = c.byte;
                    self.ra_limit = c.end + READ_LOOKAHEAD;
                } else {
                    self.drop_segments(c.byte, c.end);
                }
            }
            let (start, end) = self.plan(t, &c);
            self.media_busy += end - t.max(c.ready);
            self.head_pos = c.pos_e;
            self.head_byte = c.end;
            self.head_free = end;
            self.head_op = HeadOp::Media;
            self.last_read = !c.write;
            // On a link slower than the media (a shared SCSI bus), or one whose commands
            // take bus phases besides their data, the data crosses it one command at a time
            // while the head goes on: the command ends when both are done.
            let done = if self.slow_link {
                end.max(self.link(start, c.end - c.byte))
            } else {
                end
            };
            self.complete_at(done, c.id);
        }
    }

    /// Complete the flushes whose cached data has reached the media (all of the cache when the
    /// drive got nothing after the flush; destage is C-LOOK, so with writes still arriving
    /// the bytes counted out are not exactly the ones that were in).
    fn finish_flushes(&mut self, t: Ns) {
        let mut i = 0;
        while i < self.flushes.len() {
            let (id, ready, target) = self.flushes[i];
            if self.cache_out >= target || self.cache.is_empty() {
                self.flushes.swap_remove(i);
                self.complete_at(t.max(ready), id);
            } else {
                i += 1;
            }
        }
    }

    /// Time of the next head event (end of the current operation or a pending decision).
    fn head_event(&self) -> Option<Ns> {
        match self.head_op {
            HeadOp::Idle => self.decide_at,
            _ => Some(self.head_free),
        }
    }
}

impl Device for Hdd {
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth.max(1)
    }

    fn in_flight(&self) -> u32 {
        self.in_flight
    }

    fn flush_queueable(&self) -> bool {
        false
    }

    /// SATA NCQ's FUA bit (libata uses it when the drive reports support) and SCSI's DPOFUA.
    fn supports_fua(&self) -> bool {
        true
    }

    fn dispatch(&mut self, now: Ns, rq: DevRequest) {
        if self.slow_link {
            // The steps the head took before this command arrived (`head_may_wait`).
            self.run_head(now);
        }
        self.busy.enter(now, self.in_flight == 0);
        self.in_flight += 1;
        let byte = rq.sector * 512;
        let end = byte + rq.bytes;
        let ready = self.decoded_at(now);
        let mut c = Cmd {
            id: rq.id,
            write: rq.op == Op::Write,
            byte,
            end,
            arrival: now,
            ready,
            ..EMPTY_CMD
        };
        if rq.op == Op::Flush {
            // SYNCHRONIZE CACHE: done when the cache is destaged (the drive gets nothing else
            // meanwhile, see `flush_queueable`); destage runs whenever the head is idle.
            self.flushes.push((rq.id, ready, self.cache_in));
            self.finish_flushes(now);
            self.kick(ready);
            return;
        }
        if self.p.write_cache {
            // A FUA write skips the cache: a media command like a read.
            if c.write && !rq.fua {
                let slot = self.alloc(c);
                if self.waiting.is_empty() && self.has_room(rq.bytes) {
                    self.admit(now, slot);
                } else {
                    self.waiting.push_back(slot);
                    self.kick(ready);
                }
                return;
            }
            if !c.write && self.cache_hit(byte, end) {
                let done = self.link(ready, rq.bytes);
                self.complete_at(done, rq.id);
                return;
            }
        }
        if !c.write && self.segment_hit(byte, end) {
            self.note_read(byte, end);
            let done = self.link(ready, rq.bytes);
            self.complete_at(done, rq.id);
            return;
        }
        c.pos_s = self.geo.pos(byte);
        c.pos_e = self.geo.pos(end);
        let slot = self.alloc(c);
        self.queue.push(slot);
        self.kick(ready);
    }

    fn next_event(&self) -> Option<Ns> {
        let c = self.completions.peek().map(|r| r.0 .0);
        if c.is_some() && self.head_may_wait() {
            return c;
        }
        match (c, self.head_event()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: Ns, done: &mut Vec<u32>) {
        self.run_head(now);
        while let Some(&Reverse((t, _, id))) = self.completions.peek() {
            if t > now {
                break;
            }
            self.completions.pop();
            done.push(id);
            self.in_flight -= 1;
            self.busy.leave(t, self.in_flight == 0);
        }
    }

    fn busy_ns(&self, now: Ns) -> Ns {
        self.busy.busy_ns(now, self.in_flight == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::testkit::{check_no_request_lost, mb, rate, run};
    use proptest::prelude::*;

    const SIZE: u64 = 4_000_000_000_000;
    const MIB: u64 = 1 << 20;

    fn hdd(p: HddParams) -> Hdd {
        Hdd::new(p, SIZE, RngStream::new(1, "test/hdd"))
    }

    fn no_cache() -> HddParams {
        HddParams {
            write_cache: false,
            ..HddParams::default()
        }
    }

    fn random_4k(seed: u64, n: usize) -> Vec<u64> {
        let mut r = RngStream::new(seed, "test/random");
        (0..n).map(|_| r.below(SIZE / 4096) * 4096).collect()
    }

    #[test]
    fn seek_curve_hits_datasheet_points_and_is_monotone() {
        let p = HddParams::default();
        let d = hdd(p.clone());
        let s = d.seek_curve();
        let close = |a: f64, b: Ns| (a - b as f64).abs() < 1.0;
        assert!(close(s.ns(s.one_track()), p.seek_track_to_track));
        assert!(close(s.ns(1.0 / 3.0), p.seek_average));
        assert!(close(s.ns(1.0), p.seek_full_stroke));
        assert_eq!(s.ns(0.0), 0.0);
        let mut last = 0.0;
        for i in 1..=10_000 {
            let x = s.ns(i as f64 / 10_000.0);
            assert!(x >= last, "seek curve not monotone at {i}");
            last = x;
        }
        // Short seeks are concave (√d): half of the knee costs more than half of avg − t2t.
        assert!(s.ns(1.0 / 6.0) > (p.seek_track_to_track + p.seek_average) as f64 / 2.0);
    }

    #[test]
    fn geometry_maps_ends_and_rates() {
        let p = HddParams::default();
        let d = hdd(p.clone());
        let g = d.geometry();
        assert_eq!(g.pos(0), 0.0);
        assert!((g.pos(SIZE) - g.tracks()).abs() < 1e-6 * g.tracks());
        assert!((g.rate_at(0) - p.transfer_outer as f64).abs() < 1.0);
        assert!((g.rate_at(SIZE) - p.transfer_inner as f64).abs() / (p.transfer_inner as f64) < 1e-6);
        // Bytes per revolution match the local rate (one track per revolution).
        for &b in &[0, SIZE / 3, SIZE - 100 * MIB] {
            let dp = g.pos(b + MIB) - g.pos(b);
            let local = MIB as f64 / (dp * g.rev_ns() * 1e-9);
            assert!((local / g.rate_at(b) - 1.0).abs() < 1e-3, "{local} vs {}", g.rate_at(b));
        }
        // Monotone, rate falls with LBA.
        assert!(g.pos(SIZE / 2) < g.pos(SIZE / 2 + 512));
        assert!(g.rate_at(SIZE / 2) < g.rate_at(SIZE / 4));
    }

    #[test]
    fn sequential_runs_at_media_rate() {
        let p = no_cache();
        for op in [Op::Read, Op::Write] {
            for qd in [2, 4, 32] {
                let mut d = hdd(p.clone());
                let done = run(&mut d, qd, 400, |i| (op, i as u64 * MIB, MIB));
                let r = rate(&done, MIB, 50);
                assert!(r >= 0.95 * mb(p.transfer_outer), "{op:?} qd{qd}: {r:.1} MB/s");
                assert!(r <= 1.001 * mb(p.transfer_outer), "{op:?} qd{qd}: {r:.1} MB/s");
            }
        }
        // qd1 reads keep the media rate thanks to the look-ahead.
        let mut d = hdd(p.clone());
        let done = run(&mut d, 1, 400, |i| (Op::Read, i as u64 * MIB, MIB));
        let r = rate(&done, MIB, 50);
        assert!(r >= 0.95 * mb(p.transfer_outer), "read qd1: {r:.1} MB/s");
        // qd1 write-through writes lose a revolution each (the next command arrives too late).
        let mut d = hdd(p.clone());
        let done = run(&mut d, 1, 100, |i| (Op::Write, i as u64 * MIB, MIB));
        let r = rate(&done, MIB, 10);
        assert!(r < 0.8 * mb(p.transfer_outer), "write-through qd1: {r:.1} MB/s");
    }

    #[test]
    fn inner_zone_runs_at_inner_rate() {
        let p = no_cache();
        let mut d = hdd(p.clone());
        let first = SIZE - 400 * MIB;
        let done = run(&mut d, 4, 400, |i| (Op::Read, first + i as u64 * MIB, MIB));
        let r = rate(&done, MIB, 20);
        let inner = mb(p.transfer_inner);
        assert!((r / inner - 1.0).abs() < 0.03, "inner {r:.1} MB/s vs {inner:.1}");
    }

    #[test]
    fn random_reads_pay_seek_and_rotation() {
        let p = HddParams::default();
        let rev = 60e9 / p.rpm as f64;
        let lbas = random_4k(3, 2000);
        let mut d = hdd(p.clone());
        let done = run(&mut d, 1, lbas.len(), |i| (Op::Read, lbas[i], 4096));
        let mean = done.iter().map(|&(a, b, _)| (b - a) as f64).sum::<f64>() / done.len() as f64;
        let lo = p.seek_average as f64 * 0.85;
        let hi = p.seek_average as f64 + rev + p.command_overhead as f64;
        assert!(mean >= lo && mean <= hi, "mean latency {:.2} ms", mean / 1e6);
        let iops1 = done.len() as f64 / (done.last().unwrap().1 as f64 * 1e-9);
        assert!((70.0..=90.0).contains(&iops1), "qd1 {iops1:.1} IOPS");
        // Every access is at least a rotation-less seek away.
        assert!(done.iter().all(|&(a, b, _)| b - a >= p.command_overhead));

        let mut d = hdd(p.clone());
        let done = run(&mut d, 32, lbas.len(), |i| (Op::Read, lbas[i], 4096));
        let iops32 = done.len() as f64 / (done.last().unwrap().1 as f64 * 1e-9);
        let gain = iops32 / iops1;
        assert!((1.5..=3.0).contains(&gain), "NCQ gain {gain:.2} ({iops32:.1} IOPS)");

        // Without NCQ, qd32 is qd1.
        let mut d = hdd(HddParams {
            queue_depth: 1,
            ..p.clone()
        });
        let done = run(&mut d, 32, lbas.len(), |i| (Op::Read, lbas[i], 4096));
        let iops = done.len() as f64 / (done.last().unwrap().1 as f64 * 1e-9);
        assert!((iops / iops1 - 1.0).abs() < 0.05);
    }

    #[test]
    fn ncq_aging_bounds_waits() {
        // One far read among an endless sequential stream: SPTF always prefers the stream's
        // continuation (no positioning), aging serves the far read at the bound.
        let p = no_cache();
        let mut d = hdd(p);
        let bs = 256 * 1024;
        let done = run(&mut d, 32, 4000, |i| {
            if i == 0 {
                (Op::Read, SIZE / 2, 4096)
            } else {
                (Op::Read, i as u64 * bs, bs)
            }
        });
        let (a, b, _) = *done.iter().find(|x| x.2 == 0).unwrap();
        let wait = b - a;
        assert!(
            (NCQ_AGE_LIMIT..=NCQ_AGE_LIMIT + 50_000_000).contains(&wait),
            "far read waited {} ms",
            wait / 1_000_000
        );
        // Aging bounds every wait: the stream's own first request too, when the platter's
        // phase lets SPTF start the stream at its second.
        let max_wait = done.iter().map(|&(a, b, _)| b - a).max().unwrap();
        assert!(max_wait <= NCQ_AGE_LIMIT + 50_000_000, "a read waited {} ms", max_wait / 1_000_000);
    }

    #[test]
    fn write_cache_burst_at_interface_speed_then_media_rate() {
        let p = HddParams::default();
        // A burst much smaller than the cache completes at the interface rate.
        let mut d = hdd(p.clone());
        let done = run(&mut d, 4, 64, |i| (Op::Write, i as u64 * MIB, MIB));
        let r = (64 * MIB) as f64 / (done.last().unwrap().1 as f64 * 1e-9) / 1e6;
        assert!(
            r >= 0.9 * mb(p.interface_rate) && r <= 1.001 * mb(p.interface_rate),
            "burst {r:.1} MB/s"
        );
        // Drains afterwards: the head destages everything, nothing left.
        let mut ids = Vec::new();
        while let Some(t) = d.next_event() {
            d.advance(t, &mut ids);
        }
        assert!(ids.is_empty());
        assert_eq!(d.cache_used(), 0);
        // A long stream converges to the media rate once the cache is full.
        let mut d = hdd(p.clone());
        let n = (p.cache_size / MIB) as usize + 1024;
        let done = run(&mut d, 4, n, |i| (Op::Write, i as u64 * MIB, MIB));
        let r = rate(&done, MIB, n - 512);
        assert!((r / mb(p.transfer_outer) - 1.0).abs() < 0.03, "stream {r:.1} MB/s");
        assert!(d.cache_used() <= p.cache_size);
    }

    #[test]
    fn a_slow_bus_with_command_phases_carries_less_in_small_commands() {
        // A 2 MB/s share of a SCSI bus: a burst of cached writes completes at the link's pace,
        // each command paying its phases on top of its data, so small commands lose more.
        let bus = |overhead: Ns, size: u64| {
            let p = HddParams {
                interface_rate: 2_000_000,
                interface_overhead: overhead,
                ..HddParams::default()
            };
            let mut d = hdd(p);
            let done = run(&mut d, 4, 64, |i| (Op::Write, i as u64 * size, size));
            (64 * size) as f64 / (done.last().unwrap().1 as f64 * 1e-9) / 1e6
        };
        let (plain_4k, slow_4k, slow_64k) = (bus(0, 4096), bus(1_000_000, 4096), bus(1_000_000, 64 * 1024));
        // 4 KiB takes 2.05 ms of data: one more ms of phases is a third of the link.
        assert!(
            (plain_4k / slow_4k - 3.05 / 2.05).abs() < 0.05,
            "{plain_4k:.2} vs {slow_4k:.2} MB/s"
        );
        // 64 KiB takes 32.8 ms of data: the same phases cost 3 %.
        assert!(slow_64k > 0.95 * plain_4k && slow_64k > 1.4 * slow_4k, "{slow_64k:.2} MB/s");
    }

    /// A qd1 random reader (every 100th command) next to a saturating stream of 1 MiB writes:
    /// the longest any read took.
    fn worst_read_beside_writes(destage: DestagePolicy) -> Ns {
        worst_read_beside_writes_on(HddParams {
            destage,
            ..HddParams::default()
        })
    }

    fn worst_read_beside_writes_on(p: HddParams) -> Ns {
        let mut d = hdd(p);
        let lbas = random_4k(5, 200);
        let done = run(&mut d, 32, 20_000, |i| {
            if i % 100 == 0 {
                (Op::Read, lbas[i / 100], 4096)
            } else {
                (Op::Write, i as u64 * MIB, MIB)
            }
        });
        done.iter()
            .filter(|&&(_, _, id)| id % 100 == 0)
            .map(|&(a, b, _)| b - a)
            .max()
            .unwrap()
    }

    #[test]
    fn reads_get_the_head_while_writes_stream() {
        // Reads complete within a few destage bursts.
        let worst = worst_read_beside_writes(DestagePolicy::Interleave);
        assert!(worst < 500_000_000, "read waited {} ms", worst / 1_000_000);
    }

    #[test]
    fn a_draining_drive_serves_reads_behind_a_write_stream_only_by_aging() {
        // The same load on a drive that destages while writes wait for room: the reads wait
        // for NCQ aging (2 s), not for a 4 MiB destage burst.
        let drain = worst_read_beside_writes(DestagePolicy::Drain);
        assert!(drain >= NCQ_AGE_LIMIT, "drain: {} ms", drain / 1_000_000);
        assert!(
            drain < NCQ_AGE_LIMIT + 500_000_000,
            "aging bounds the wait: {} ms",
            drain / 1_000_000
        );
    }

    #[test]
    fn the_destage_burst_and_the_aging_bound_set_how_long_a_read_starves() {
        // 16 MiB more destage between two reads: the worst read waits at least the time
        // that takes at the outer edge's rate, and at most 16 chunks each at the inner rate
        // with a full-stroke seek; a read starved by `drain` is served at the drive's own
        // aging bound.
        let p = HddParams::default();
        let short = worst_read_beside_writes(DestagePolicy::Interleave);
        let long = worst_read_beside_writes_on(HddParams {
            destage_burst: 20 * MIB,
            ..HddParams::default()
        });
        let extra = long.saturating_sub(short);
        let fastest = 16 * MIB * 1_000_000_000 / p.transfer_outer;
        let slowest = 16 * (MIB * 1_000_000_000 / p.transfer_inner + p.seek_full_stroke);
        assert!(
            (fastest..=slowest).contains(&extra),
            "4 MiB: {} ms, 20 MiB: {} ms",
            short / 1_000_000,
            long / 1_000_000
        );
        let aged = worst_read_beside_writes_on(HddParams {
            destage: DestagePolicy::Drain,
            ncq_age_limit: 500_000_000,
            ..HddParams::default()
        });
        assert!(
            (500_000_000..700_000_000).contains(&aged),
            "aging at 0.5 s: {} ms",
            aged / 1_000_000
        );
    }

    #[test]
    fn small_files_laid_together_come_from_the_read_segment_between_cached_writes() {
        // `cat dir/*.c` beside a writer on a queue-depth-1 IDE drive: 16 KiB files one after
        // another on the disk, each read followed by a 128 KiB write far away. Once the drive
        // sees the reads follow one another, a write going into the cache no longer stops the
        // look-ahead, and the later files are in the buffer when asked for.
        let p = HddParams::ide_2002();
        let mut d = hdd(p.clone());
        let n = 20; // 10 reads, 10 writes: 1.25 MiB of writes, within the 2 MiB cache
        let done = run(&mut d, 1, n, |i| {
            if i % 2 == 0 {
                (Op::Read, 100 * MIB + (i as u64 / 2) * 16 * 1024, 16 * 1024)
            } else {
                (Op::Write, 20_000 * MIB + i as u64 * 128 * 1024, 128 * 1024)
            }
        });
        let reads: Vec<Ns> = done.iter().filter(|&&(_, _, id)| id % 2 == 0).map(|&(a, b, _)| b - a).collect();
        assert!(reads[0] > 2_000_000, "the first read goes to the media: {} µs", reads[0] / 1000);
        let media = reads[1..].iter().filter(|&&r| r >= 1_000_000).count();
        assert!(
            media <= 1,
            "one more trip to the media at most, while the stream is learnt: {reads:?}"
        );
        assert!(
            reads[6..].iter().all(|&r| r < 1_000_000),
            "then every file from the buffer: {reads:?}"
        );
    }

    #[test]
    fn a_random_reader_does_not_hold_back_destage() {
        // The same drive with the reads scattered: the look-ahead is not waited for, so the
        // head goes to destage as soon as a write is in the cache.
        let mut d = hdd(HddParams::ide_2002());
        let lbas = random_4k(3, 8);
        run(&mut d, 1, 16, |i| {
            if i % 2 == 0 {
                (Op::Read, lbas[i / 2], 4096)
            } else {
                (Op::Write, 20_000 * MIB + i as u64 * 128 * 1024, 128 * 1024)
            }
        });
        assert!(!d.seq_reads);
        assert!(
            d.cache_used() <= 128 * 1024,
            "all but the last write reached the media: {} bytes cached",
            d.cache_used()
        );
    }

    #[test]
    fn a_write_drops_the_read_segment_it_overlaps() {
        let mut d = hdd(HddParams::default());
        d.keep_segment(0, 4 * MIB);
        d.keep_segment(10 * MIB, 12 * MIB);
        assert!(d.segment_hit(MIB, 2 * MIB) && d.segment_hit(10 * MIB, 11 * MIB));
        d.drop_segments(3 * MIB, 3 * MIB + 4096);
        assert!(!d.segment_hit(MIB, 2 * MIB), "written over: no longer served from the buffer");
        assert!(d.segment_hit(10 * MIB, 11 * MIB));
        assert_eq!(d.read_seg_bytes, 2 * MIB);
        // Segments beyond the buffer's size push out the oldest.
        let cap = d.p.cache_size;
        d.keep_segment(100 * MIB, 100 * MIB + cap);
        assert!(!d.segment_hit(10 * MIB, 11 * MIB) && d.read_seg_bytes <= cap);
        // So do segments beyond their number, however small.
        for k in 0..2 * READ_SEGMENTS as u64 {
            d.keep_segment(k * MIB, k * MIB + 4096);
        }
        assert_eq!(d.read_segs.len(), READ_SEGMENTS);
        assert!(d.segment_hit((2 * READ_SEGMENTS as u64 - 1) * MIB, (2 * READ_SEGMENTS as u64 - 1) * MIB + 4096));
        assert!(!d.segment_hit(0, 4096), "the oldest went first");
    }

    #[test]
    fn read_hit_in_dirty_cache_at_interface_rate() {
        let p = HddParams::default();
        let mut d = hdd(p.clone());
        let done = run(&mut d, 1, 2, |i| {
            if i == 0 {
                (Op::Write, 10 * MIB, MIB)
            } else {
                (Op::Read, 10 * MIB + 4096, 4096)
            }
        });
        let (a, b, _) = done[1];
        assert!(b - a < p.command_overhead + 100_000, "cache hit took {} ns", b - a);
    }

    #[test]
    fn cache_extents_merge_and_split() {
        let mut d = hdd(HddParams::default());
        d.cache_insert(0, 100);
        d.cache_insert(200, 300);
        d.cache_insert(100, 200);
        assert_eq!(d.cache.len(), 1);
        assert_eq!(d.cache_used, 300);
        d.cache_insert(50, 250);
        assert_eq!(d.cache_used, 300);
        d.cache_remove(100, 150);
        assert_eq!(d.cache_used, 250);
        assert_eq!(d.cache.len(), 2);
        d.cache_insert(400, 500);
        d.cache_remove(0, 450);
        assert_eq!(d.cache_used, 50);
        assert_eq!(d.cache.iter().next(), Some((&450, &500)));
    }

    #[test]
    fn busy_counts_time_with_requests_inside() {
        let p = no_cache();
        let mut d = hdd(p);
        let done = run(&mut d, 1, 1, |_| (Op::Read, 5 * MIB, 4096));
        let t = done[0].1;
        assert_eq!(d.busy_ns(10 * t), t);
        assert!(d.media_busy_ns() <= t);
    }

    fn trace(p: &HddParams, seed: u64) -> Vec<(Ns, Ns, u32)> {
        let mut d = hdd(p.clone());
        let mut r = RngStream::new(seed, "test/mix");
        let ops: Vec<(Op, u64, u64)> = (0..3000)
            .map(|_| {
                let op = if r.below(3) == 0 { Op::Read } else { Op::Write };
                let bytes = (1 + r.below(256)) * 4096;
                let byte = if r.below(2) == 0 {
                    r.below(SIZE / 4096) * 4096
                } else {
                    r.below(1024) * MIB
                };
                (op, byte, bytes)
            })
            .collect();
        run(&mut d, 32, ops.len(), |i| ops[i])
    }

    #[test]
    fn deterministic() {
        for p in [HddParams::default(), no_cache()] {
            assert_eq!(trace(&p, 9), trace(&p, 9));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Every dispatched request completes exactly once, never before it was dispatched,
        /// whatever the mix, the dispatch times and the cache, and the drive ends idle.
        #[test]
        fn no_request_lost(
            reqs in prop::collection::vec((any::<bool>(), 0u64..4096, 1u64..2048, 0u64..20_000_000, any::<bool>()), 1..300),
            qd in 1u32..40,
            cache in prop::option::of(0u64..64),
        ) {
            let p = HddParams {
                queue_depth: qd,
                write_cache: cache.is_some(),
                cache_size: cache.unwrap_or(0) * MIB,
                ..HddParams::default()
            };
            let reqs: Vec<_> = reqs
                .iter()
                .enumerate()
                .map(|(i, &(w, region, len, gap, far))| {
                    let byte = if far { region * (SIZE / 4096) } else { region * 64 * 1024 };
                    let rq = DevRequest {
                        id: i as u32,
                        op: if w { Op::Write } else { Op::Read },
                        sector: byte / 512,
                        bytes: len * 512,
                        segments: (len * 512).div_ceil(4096) as u32,
                        sync: w && far,
                        fua: false,
                        prio: Default::default(),
                    };
                    (rq, gap)
                })
                .collect();
            let mut d = hdd(p);
            check_no_request_lost(&mut d, &reqs)?;
            prop_assert_eq!(d.cache_used(), 0);
        }
    }
}

/// Behind a slow link the head's steps are not events of their own (`Hdd::head_may_wait`):
/// they are taken when the drive is next touched. Driving the same drive both ways — advanced
/// at every step of the head, or only at its completions and at arrivals — must give the same
/// completions at the same times, whatever the mix, the link, the cache and the flushes.
#[cfg(test)]
mod late_head_steps {
    use super::*;
    use crate::drivers::{DevRequest, Op};
    use proptest::prelude::*;

    /// (completion time, id) in order, advancing at every head step when `eager`. As the
    /// machine does, requests go in at their arrival between the drive's events, and the
    /// drive is advanced only at its events.
    fn drive(p: &HddParams, seed: u64, reqs: &[(DevRequest, Ns)], eager: bool) -> (Vec<(Ns, u32)>, usize) {
        let mut d = Hdd::new(p.clone(), 1_000_000_000_000, RngStream::new(seed, "test/hdd-late-head"));
        let (mut now, mut out, mut ids, mut next, mut advances) = (0, Vec::new(), Vec::new(), 0, 0);
        let mut arrival = reqs.first().map_or(0, |r| r.1);
        let mut flush_in = false;
        loop {
            let mut ev = d.next_event();
            if eager {
                ev = match (ev, d.head_event()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            // The next request goes in at its arrival if the drive has room (a flush only to
            // an idle drive, and nothing beside a flush).
            let can_take =
                next < reqs.len() && !flush_in && d.in_flight() < d.queue_depth() && (reqs[next].0.op != Op::Flush || d.in_flight() == 0);
            let at = arrival.max(now);
            match ev {
                Some(t) if !can_take || t <= at => {
                    now = t;
                    ids.clear();
                    d.advance(now, &mut ids);
                    advances += 1;
                    if !ids.is_empty() {
                        flush_in = false;
                    }
                    out.extend(ids.iter().map(|&id| (now, id)));
                }
                _ if can_take => {
                    now = at;
                    let rq = reqs[next].0;
                    flush_in = rq.op == Op::Flush;
                    d.dispatch(now, rq);
                    next += 1;
                    arrival = now + reqs.get(next).map_or(0, |r| r.1);
                }
                _ => break,
            }
        }
        assert_eq!(out.len(), reqs.len(), "every request completes");
        (out, advances)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn the_same_completions_at_the_same_times(
            seed in 0u64..1_000_000,
            reqs in prop::collection::vec((0u8..12, 0u64..(1u64 << 26), 1u64..=64, 0u64..4_000_000), 1..250),
            rate_mb in 1u64..400,
            overhead_us in 0u64..3000,
            cache in any::<bool>(),
            interleave in any::<bool>(),
            qd in 1u32..33,
        ) {
            let p = HddParams {
                interface_rate: rate_mb * 1_000_000,
                interface_overhead: overhead_us * 1000,
                write_cache: cache,
                destage: if interleave { DestagePolicy::Interleave } else { DestagePolicy::Drain },
                queue_depth: qd,
                ..HddParams::default()
            };
            // Sequential runs (look-ahead) and far jumps, reads, writes, FUA writes, flushes.
            let reqs: Vec<_> = reqs
                .iter()
                .enumerate()
                .map(|(i, &(kind, page, pages, gap))| {
                    let op = match kind { 0 => Op::Flush, 1..=5 => Op::Read, _ => Op::Write };
                    let page = if kind % 2 == 0 { page } else { (i as u64) * 64 };
                    let bytes = if op == Op::Flush { 0 } else { pages * 4096 };
                    let rq = DevRequest { id: i as u32, op, sector: page * 8, bytes, segments: pages as u32, sync: false, fua: kind == 11, prio: Default::default() };
                    (rq, gap)
                })
                .collect();
            let (late, late_steps) = drive(&p, seed, &reqs, false);
            let (eager, eager_steps) = drive(&p, seed, &reqs, true);
            prop_assert_eq!(&late, &eager);
            prop_assert!(late_steps <= eager_steps);
        }
    }

    /// The events saved are real: a busy drive on a slow bus is advanced about half as often.
    #[test]
    fn a_busy_drive_on_a_slow_bus_needs_about_half_the_steps() {
        let p = HddParams {
            interface_rate: 2_000_000,
            interface_overhead: 2_000_000,
            write_cache: false,
            ..HddParams::default()
        };
        let reqs: Vec<_> = (0..400u32)
            .map(|i| {
                let page = u64::from(i).wrapping_mul(2_654_435_761) % (1 << 26);
                let rq = DevRequest {
                    id: i,
                    op: Op::Read,
                    sector: page * 8,
                    bytes: 8192,
                    segments: 2,
                    sync: false,
                    fua: false,
                    prio: Default::default(),
                };
                (rq, 0)
            })
            .collect();
        let (late, late_steps) = drive(&p, 7, &reqs, false);
        let (eager, eager_steps) = drive(&p, 7, &reqs, true);
        assert_eq!(late, eager);
        assert!(
            late_steps * 10 < eager_steps * 6,
            "{late_steps} advances taking steps late, {eager_steps} at every step"
        );
    }
}

/// The emulator's way of driving the model (`wblab-emulate`'s server): requests arrive at
/// real times, the model is advanced to whatever time the server wakes at — often past the
/// event it woke for — and a flush goes in alone. Whatever the mix, every request completes
/// and an advance leaves no event at or before the time it advanced to (else the server,
/// which loops until the next event lies ahead, would spin).
#[cfg(test)]
mod emulator_drive {
    use super::*;
    use crate::drivers::{DevRequest, Op};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn every_request_completes_and_no_event_is_left_behind(
            seed in 0u64..1_000_000,
            reqs in prop::collection::vec((0u8..10, 0u64..(1u64 << 28), 1u64..=128, 0u64..3_000_000), 1..300),
            cache in any::<bool>(),
            interleave in any::<bool>(),
        ) {
            let p = HddParams {
                write_cache: cache,
                destage: if interleave { DestagePolicy::Interleave } else { DestagePolicy::Drain },
                ..HddParams::default()
            };
            let mut d = Hdd::new(p, 1_000_000_000_000, RngStream::new(seed, "test/hdd-emulator"));
            let (mut now, mut done, mut left) = (0, Vec::new(), 0usize);
            let mut waiting: std::collections::VecDeque<DevRequest> = Default::default();
            let mut flush_in = false;
            for (i, &(kind, page, pages, gap)) in reqs.iter().enumerate() {
                let op = match kind { 0 => Op::Flush, 1..=4 => Op::Read, _ => Op::Write };
                let bytes = if op == Op::Flush { 0 } else { pages * 4096 };
                waiting.push_back(DevRequest { id: i as u32, op, sector: page * 8, bytes, segments: pages as u32, sync: op != Op::Write, fua: false, prio: Default::default() });
                left += 1;
                // The server wakes late, by up to 3 ms.
                now += gap;
                let mut guard = 0;
                loop {
                    guard += 1;
                    prop_assert!(guard < 100_000, "the model made no progress at {now}");
                    done.clear();
                    d.advance(now, &mut done);
                    left -= done.len();
                    if !done.is_empty() { flush_in = false; }
                    if let Some(e) = d.next_event() {
                        prop_assert!(e > now, "an event at {e} left behind at {now}");
                    }
                    let Some(w) = waiting.front() else { break };
                    let alone = w.op == Op::Flush;
                    if flush_in || d.in_flight() >= d.queue_depth() || (alone && d.in_flight() > 0) {
                        break;
                    }
                    let w = waiting.pop_front().unwrap();
                    flush_in = alone;
                    d.dispatch(now, w);
                }
            }
            // Drain: jump from event to event.
            let mut guard = 0;
            while left > 0 {
                guard += 1;
                prop_assert!(guard < 1_000_000, "{left} requests never completed");
                if let Some(w) = waiting.front() {
                    let alone = w.op == Op::Flush;
                    if !flush_in && d.in_flight() < d.queue_depth() && !(alone && d.in_flight() > 0) {
                        let w = waiting.pop_front().unwrap();
                        flush_in = alone;
                        d.dispatch(now, w);
                        continue;
                    }
                }
                let Some(e) = d.next_event() else {
                    prop_assert!(false, "{left} requests inside, {} waiting, and no event", waiting.len());
                    unreachable!()
                };
                now = now.max(e) + 1_000;
                done.clear();
                d.advance(now, &mut done);
                left -= done.len();
                if !done.is_empty() { flush_in = false; }
            }
        }
    }
}
