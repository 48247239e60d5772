//! The files of a `[[cgroup]]` ([`CGROUP_FILES`]): each declared once — its name as the
//! kernel has it under `/sys/fs/cgroup/<path>/`, its hierarchy, how it is written, its default
//! and what the fuzzer writes — for the scenario parser (which files a group takes, which make
//! a v1 machine), the fuzzer and the reference table. Each file's grammar (per-device lines,
//! bfq's weight forms) stays with its reader in the parser; `wblab measure` writes the v1 ones
//! from the group they resolve to. The real files wblab refuses are listed too
//! ([`CGROUP_FILES_REFUSED`]), so that they are named as such rather than as unknown.

use super::CgroupVersion;

/// What the fuzzer writes for a file.
#[derive(Clone, Copy, Debug)]
pub enum CgroupFuzz {
    /// A size between the two, in bytes.
    Size { min: u64, max: u64 },
    /// Lines of `DEVICE` and one of these.
    DeviceLines(&'static [&'static str]),
    /// One of these TOML values as written.
    Raw(&'static [&'static str]),
}

/// One cgroup file wblab models.
#[derive(Debug)]
pub struct CgroupFile {
    pub name: &'static str,
    pub version: CgroupVersion,
    /// How it is written (the reference's "unit").
    pub value: &'static str,
    pub default: &'static str,
    /// What it does and takes (the reference's "accepted").
    pub doc: &'static str,
    pub fuzz: CgroupFuzz,
}

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const MEMORY: CgroupFuzz = CgroupFuzz::Size {
    min: 16 * MIB,
    max: 8 * GIB,
};
const WEIGHTS: CgroupFuzz = CgroupFuzz::Raw(&["100", "1", "1000", "\"default 300\"", "\"500\""]);
const V1_BPS: CgroupFuzz = CgroupFuzz::DeviceLines(&["10485760", "1048576", "0"]);
const V1_IOPS: CgroupFuzz = CgroupFuzz::DeviceLines(&["100", "20"]);

/// A v1 blk-throttle file: `"DEVICE VALUE"` lines.
const fn v1_throttle(name: &'static str, fuzz: CgroupFuzz) -> CgroupFile {
    CgroupFile {
        name,
        version: CgroupVersion::V1,
        value: "string or array of strings",
        default: "none",
        doc: "v1: `\"DEVICE VALUE\"` per device (0: no limit)",
        fuzz,
    }
}

/// Every file a `[[cgroup]]` may set besides its `path`, v2's first.
pub static CGROUP_FILES: &[CgroupFile] = &[
    CgroupFile {
        name: "memory.max",
        version: CgroupVersion::V2,
        value: "size or `\"max\"`",
        default: "`\"max\"`",
        doc: "v2: the hard limit; at least 16 MiB (smaller groups would OOM-kill their writer, which wblab does not model)",
        fuzz: MEMORY,
    },
    CgroupFile {
        name: "memory.high",
        version: CgroupVersion::V2,
        value: "size or `\"max\"`",
        default: "`\"max\"`",
        doc: "v2: the throttling limit: reclaim, then a penalty sleep of up to 2 s per allocation over it",
        fuzz: MEMORY,
    },
    CgroupFile {
        name: "memory.low",
        version: CgroupVersion::V2,
        value: "size or `\"max\"`",
        default: "`0`",
        doc: "v2: best-effort protection from the machine's reclaim: while the group (or the nearest ancestor that sets one) uses no more than this, global reclaim passes over its clean pages, and takes them only when nothing else is left (counted as `low_events`)",
        fuzz: MEMORY,
    },
    CgroupFile {
        name: "io.max",
        version: CgroupVersion::V2,
        value: "string or array of strings",
        default: "none",
        doc: "v2: blk-throttle limits of the group's I/O, one line per device: `\"DEVICE key=value...\"`, the device as `MAJ:MIN` or its name, keys `rbps`, `wbps` (bytes/s, with or without a unit), `riops`, `wiops`, each a number or `max`; 0 is refused, as the kernel does",
        fuzz: CgroupFuzz::DeviceLines(&["wbps=10MiB", "rbps=1048576 riops=100", "wiops=50 wbps=max"]),
    },
    CgroupFile {
        name: "io.latency",
        version: CgroupVersion::V2,
        value: "string or array of strings",
        default: "none",
        doc: "v2: a latency target per device, `\"DEVICE target=N\"` with N in µs as the kernel takes it (or with a unit, `target=10ms`; `target=max` for none). The group's siblings (the other children of its parent) get their queue depth halved while it misses the target: the mean latency of a window of 16 × the target (100 ms to 1 s) on a rotational disk, 10 % of its I/Os at or over it on others",
        fuzz: CgroupFuzz::DeviceLines(&["target=10000", "target=50ms", "target=max"]),
    },
    CgroupFile {
        name: "io.bfq.weight",
        version: CgroupVersion::V2,
        value: "integer, string or array of strings",
        default: "`100`",
        doc: "v2: the group's share of each device whose scheduler is `bfq`, 1–1000, as bfq takes the file: `200` or `\"default 200\"` for the group, `\"DEVICE 300\"` (`MAJ:MIN` or the device's name) for one device, `\"DEVICE default\"` to drop a device's own",
        fuzz: WEIGHTS,
    },
    CgroupFile {
        name: "memory.limit_in_bytes",
        version: CgroupVersion::V1,
        value: "size or `\"max\"`",
        default: "`\"max\"`",
        doc: "v1: the hard limit",
        fuzz: MEMORY,
    },
    CgroupFile {
        name: "blkio.bfq.weight",
        version: CgroupVersion::V1,
        value: "integer",
        default: "`100`",
        doc: "v1: bfq's group weight (1–1000)",
        fuzz: WEIGHTS,
    },
    CgroupFile {
        name: "blkio.bfq.weight_device",
        version: CgroupVersion::V1,
        value: "string or array of strings",
        default: "none",
        doc: "v1: bfq's weight of the group on one device, `\"DEVICE W\"` (`\"DEVICE default\"` drops it)",
        fuzz: CgroupFuzz::DeviceLines(&["300", "1", "default"]),
    },
    // blk-throttle's v1 files: the `v1_file`s of `THROTTLE_KNOBS`, in its order.
    v1_throttle("blkio.throttle.read_bps_device", V1_BPS),
    v1_throttle("blkio.throttle.write_bps_device", V1_BPS),
    v1_throttle("blkio.throttle.read_iops_device", V1_IOPS),
    v1_throttle("blkio.throttle.write_iops_device", V1_IOPS),
];

/// A real cgroup file wblab refuses: what it is, and what to write instead (None: nothing
/// yet, it is not modelled).
#[derive(Debug)]
pub struct RefusedCgroupFile {
    pub name: &'static str,
    pub instead: Option<(&'static str, &'static str)>,
}

const fn not_modelled(name: &'static str) -> RefusedCgroupFile {
    RefusedCgroupFile { name, instead: None }
}

/// Real cgroup files a `[[cgroup]]` may not set, each named in its error.
pub static CGROUP_FILES_REFUSED: &[RefusedCgroupFile] = &[
    not_modelled("memory.min"),
    not_modelled("memory.swap.max"),
    not_modelled("memory.soft_limit_in_bytes"),
    not_modelled("memory.oom.group"),
    not_modelled("io.cost.qos"),
    not_modelled("io.cost.model"),
    RefusedCgroupFile {
        name: "io.weight",
        instead: Some((
            "io.cost's weight (blk-iocost), which wblab does not model yet",
            "with bfq as the device's scheduler, io.bfq.weight sets a group's share: io.bfq.weight = 200",
        )),
    },
    RefusedCgroupFile {
        name: "blkio.weight",
        instead: Some((
            "CFQ's group weight, gone with the legacy block layer in 5.0",
            "with bfq as the device's scheduler, blkio.bfq.weight sets a v1 group's share: blkio.bfq.weight = 200",
        )),
    },
];

/// The file called `name`, if wblab models it.
pub fn cgroup_file(name: &str) -> Option<&'static CgroupFile> {
    CGROUP_FILES.iter().find(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::THROTTLE_KNOBS;

    #[test]
    fn the_v1_throttle_files_are_blk_throttles_own() {
        let ours: Vec<&str> = CGROUP_FILES
            .iter()
            .filter(|f| f.name.starts_with("blkio.throttle."))
            .map(|f| f.name)
            .collect();
        let theirs: Vec<&str> = THROTTLE_KNOBS.iter().map(|k| k.v1_file).collect();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn every_file_is_declared_once_and_none_is_both_modelled_and_refused() {
        let mut names: Vec<&str> = CGROUP_FILES.iter().map(|f| f.name).collect();
        names.extend(CGROUP_FILES_REFUSED.iter().map(|f| f.name));
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
        // A file's hierarchy is in its name: v1's controllers are `memory.*_in_bytes` and `blkio.*`.
        for f in CGROUP_FILES {
            let v1 = f.name.starts_with("blkio.") || f.name.ends_with("_in_bytes");
            assert_eq!(f.version == CgroupVersion::V1, v1, "{}", f.name);
        }
    }
}
