//! How each key's value is written, for the generator: its type and the range it usually
//! takes. Keys declared by registries (model parameters, elevator tunables) take their shape
//! from their [`KnobKind`]; every other key is listed here, and a test checks that every key of
//! the [`crate::catalogue`] has a shape.

use wblab_sim::config::{
    FlusherKind, KnobKind, PageHash, PageWake, PolicyPiece, QueueEra, ReadWait, Readahead, ReclaimKind, ThrottleKind, TimerWheel,
    WritebackChunk,
};

const K: u64 = 1024;
const M: u64 = 1024 * K;
const G: u64 = 1024 * M;
use wblab_sim::units::NSEC_PER_MSEC as MS;
const US: u64 = 1_000;
const S: u64 = 1_000_000_000;

/// A value's form and the range the generator usually draws it from (it also tries the
/// edges and far outside them).
#[derive(Clone, Debug)]
pub enum Shape {
    Int(u64, u64),
    Size(u64, u64),
    Duration(u64, u64),
    Rate(u64, u64),
    Bool,
    /// One of these words (a string value).
    Word(Vec<&'static str>),
    /// One of these raw TOML values (numbers, arrays...).
    Raw(&'static [&'static str]),
    /// A free-form name.
    Name,
    /// A declared cgroup's path (or `/`).
    CgroupPath,
    /// A cgroup file's line: one of the file's devices, then one of these settings.
    DeviceLimits(&'static [&'static str]),
    /// `kernel`: a release or an array of releases.
    Kernels,
    /// `vm.bdflush`: an array of up to 9 integers.
    Bdflush,
    /// `file_sizes`: a size or an array of sizes.
    Sizes,
    /// A task's `device`: one of the scenario's device names.
    DeviceName,
    /// A task's `file`: a path under `/mnt/<device>/`.
    FilePath,
    /// A `[[task]]`'s `fio`: job-file text with one to three jobs (their names start with the
    /// given prefix).
    FioText,
}

fn words(w: &[&'static str]) -> Shape {
    Shape::Word(w.to_vec())
}

/// The shape of a registry knob.
pub fn of_knob(kind: KnobKind) -> Shape {
    match kind {
        KnobKind::Count { min, max } => Shape::Int(min, max.min(min.saturating_add(4096))),
        KnobKind::Size { min, max, .. } => Shape::Size(min.max(4 * K), max.min(256 * M)),
        KnobKind::Rate => Shape::Rate(M, 4 * G),
        KnobKind::Duration { max } => Shape::Duration(0, max.min(20 * MS)),
        KnobKind::Millis { max, .. } => Shape::Int(0, max.min(10_000)),
        KnobKind::Bool => Shape::Bool,
        KnobKind::Word { words, .. } => Shape::Word(words.to_vec()),
    }
}

pub fn top(key: &str) -> Option<Shape> {
    Some(match key {
        "name" => Shape::Name,
        "kernel" => Shape::Kernels,
        "duration" => Shape::Duration(10 * MS, 2 * S),
        "until_done" => Shape::Bool,
        "seed" => Shape::Int(0, u64::MAX),
        "hz" => Shape::Raw(&["100", "250", "300", "1000"]),
        _ => return None,
    })
}

/// A `[machine]` key's shape: its table's typical range; `buddyinfo` and `page_size` (a power
/// of two) from lists of values.
pub fn machine(key: &str) -> Option<Shape> {
    match key {
        "buddyinfo" => {
            return Some(Shape::Raw(&[
                "\"17507 9681 5549 3005 1116 696 1531 1625 1113 720 1762\"",
                "\"0 0 0 0 0 0 0 0 256\"",
                "\"5000 3000 1000\"",
                "\"0\"",
            ]))
        }
        "page_size" => return Some(Shape::Raw(&["\"4KiB\"", "\"8KiB\"", "\"16KiB\"", "\"64KiB\""])),
        _ => {}
    }
    let k = wblab_sim::config::machine_knob(key)?;
    let (lo, hi) = k.typical;
    Some(match k.knob.kind {
        KnobKind::Size { .. } => Shape::Size(lo, hi),
        KnobKind::Rate => Shape::Rate(lo, hi),
        KnobKind::Duration { .. } => Shape::Duration(lo, hi),
        KnobKind::Bool => Shape::Bool,
        KnobKind::Count { .. } => Shape::Int(lo, hi),
        kind => of_knob(kind),
    })
}

/// A sysctl's shape: its table's typical range, or 2.4's bdflush slots.
pub fn sysctl(key: &str) -> Option<Shape> {
    if let Some(k) = wblab_sim::config::sysctl_knob(key) {
        let (lo, hi) = k.typical;
        return Some(match k.knob.kind {
            KnobKind::Size { .. } => Shape::Size(lo, hi),
            _ => Shape::Int(lo, hi),
        });
    }
    Some(match key {
        "vm.bdflush" => Shape::Bdflush,
        "vm.bdflush.nfract" | "vm.bdflush.nfract_sync" => Shape::Int(0, 100),
        "vm.bdflush.ndirty" => Shape::Int(0, 50_000),
        "vm.bdflush.nrefill" => Shape::Int(0, 20_000),
        "vm.bdflush.interval" => Shape::Int(0, 2_000),
        "vm.bdflush.age_buffer" => Shape::Int(100, 6_000),
        _ => return None,
    })
}

pub fn policy(key: &str) -> Option<Shape> {
    Some(Shape::Word(match key {
        "throttle" => ThrottleKind::names(),
        "flusher" => FlusherKind::names(),
        "reclaim" => ReclaimKind::names(),
        "queue" => QueueEra::names(),
        "writeback_chunk" => WritebackChunk::names(),
        "page_wake" => PageWake::names(),
        "page_hash" => PageHash::names(),
        "timer_wheel" => TimerWheel::names(),
        "readahead" => Readahead::names(),
        "read_wait" => ReadWait::names(),
        _ => return None,
    }))
}

pub fn trace(key: &str) -> Option<Shape> {
    matches!(key, "writeback" | "block").then_some(Shape::Bool)
}

/// Device keys not declared by a registry (identity, `queue/*`, `bdi/*`, `throttle/*`);
/// `models` are the model names for `model` and `member_model`.
pub fn device(key: &str, models: &[&'static str]) -> Option<Shape> {
    Some(match key {
        "name" => Shape::Name,
        "model" | "member_model" => Shape::Word(models.to_vec()),
        "size" => Shape::Size(M, 64 * G),
        "major" | "minor" => Shape::Int(0, 300),
        "fs" => words(&["ext4", "ext3", "xfs", "btrfs", "zfs"]),
        "mount" => words(&[
            "data=ordered",
            "data=writeback",
            "data=journal",
            "commit=1",
            "commit=30",
            "noatime",
            "strictatime",
            "nobarrier",
            "barrier=0",
            "journal_async_commit",
            "nodioread_nolock,noatime",
            "noauto_da_alloc",
            "logbsize=256k",
            "logbufs=2",
            "noreservation",
            "reservation,noatime",
            "commit=5,data=bogus",
        ]),
        "journal_size" => Shape::Size(M, 64 * M),
        "fast_commit" => Shape::Bool,
        "used" => Shape::Int(0, 100),
        "writeout_share" => Shape::Int(0, 100),
        "emulate" => Shape::Bool,
        "queue/scheduler" => {
            let mut w: Vec<&'static str> = Vec::new();
            for e in wblab_sim::block::sched::ELEVATORS {
                w.push(e.kind.name());
                w.extend(e.aliases);
            }
            w.extend(["kyber", "bfq", "cfq"]);
            Shape::Word(w)
        }
        _ if key.starts_with("queue/") => {
            let k = wblab_sim::config::QUEUE_KNOBS.iter().find(|k| k.key == key)?;
            match k.kind {
                KnobKind::Bool => Shape::Bool,
                KnobKind::Word { words: w, .. } => words(w),
                _ => Shape::Int(k.typical.0, k.typical.1),
            }
        }
        _ if key.starts_with("bdi/") => {
            let k = wblab_sim::config::BDI_KNOBS.iter().find(|k| k.knob.key == key)?;
            let (lo, hi) = k.typical;
            match k.knob.kind {
                KnobKind::Bool => Shape::Bool,
                KnobKind::Size { .. } => Shape::Size(lo, hi),
                _ => Shape::Int(lo, hi),
            }
        }
        _ => {
            let k = wblab_sim::config::THROTTLE_KNOBS.iter().find(|k| k.knob.key == key)?;
            let (lo, hi) = k.typical;
            if k.is_iops() {
                Shape::Int(lo, hi)
            } else {
                Shape::Rate(lo, hi)
            }
        }
    })
}

/// Task keys, common and per job (the same key means the same thing in every job).
pub fn task(key: &str, jobs: &[&'static str]) -> Option<Shape> {
    Some(match key {
        "name" => Shape::Name,
        "fio" => Shape::FioText,
        "job" => Shape::Word(jobs.to_vec()),
        "count" => Shape::Int(1, 8),
        "device" => Shape::DeviceName,
        "file" => Shape::FilePath,
        "start" | "stop" => Shape::Duration(0, 2 * S),
        "stagger" => Shape::Duration(0, 5 * MS),
        "cgroup" => Shape::CgroupPath,
        "ionice" => words(&["idle", "be/7", "rt/0", "best-effort", "be/2", "rt", "idle", "be/9"]),
        "bs" => Shape::Size(512, 4 * M),
        "size" => Shape::Size(4 * K, 512 * M),
        "blocks" => Shape::Int(1, 1000),
        "fsync" | "direct" | "repeat" | "mmap" => Shape::Bool,
        "conv" => words(&["fsync", "fdatasync", "fsync,fdatasync", "notrunc"]),
        "oflag" => words(&["direct", "sync"]),
        "rate" => Shape::Rate(M, 200 * M),
        "file_size" => Shape::Size(4 * K, G),
        "think" => Shape::Duration(0, 10 * MS),
        "bytes" => Shape::Size(0, M),
        "interval" => Shape::Duration(MS, 2 * S),
        "files" => Shape::Int(1, 5000),
        "files_per_dir" => Shape::Int(1, 100),
        "inode_spacing" => Shape::Int(1, 8),
        "subdirs" => Shape::Int(0, 8),
        "inode_size" => Shape::Raw(&["128", "256", "512", "100"]),
        "file_sizes" => Shape::Sizes,
        "writes" => Shape::Size(0, 64 * M),
        "dirs" => Shape::Int(1, 50),
        "entries" => Shape::Int(1, 2000),
        "random_ops" => Shape::Int(0, 2000),
        "user_cost" => Shape::Duration(0, 10 * US),
        _ => return None,
    })
}

/// Shapes of the files of a `[[cgroup]]` (its `path` is written by the generator).
pub fn cgroup(key: &str) -> Option<Shape> {
    use wblab_sim::config::CgroupFuzz;
    if key == "path" {
        return Some(Shape::CgroupPath);
    }
    Some(match wblab_sim::config::cgroup_file(key)?.fuzz {
        CgroupFuzz::Size { min, max } => Shape::Size(min, max),
        CgroupFuzz::DeviceLines(v) => Shape::DeviceLimits(v),
        CgroupFuzz::Raw(v) => Shape::Raw(v),
    })
}
