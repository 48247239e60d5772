//! The cgroup tree of a scenario: memory cgroups with their limits, and which tasks run in
//! which group. Paths and file names are the kernel's (`/sys/fs/cgroup/<path>/memory.max`).

use serde::Serialize;

/// Which cgroup hierarchy the machine mounts. The version decides how the memory
/// controller meets writeback: v2 has cgroup writeback (a `bdi_writeback` and a dirty
/// domain per memory cgroup); v1 has neither, and its reclaim waits on pages under writeback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    V1,
    #[default]
    V2,
}

/// One cgroup below the root (`Default`: no limits, a child of the root, an empty path).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CgroupConfig {
    /// Absolute path below the hierarchy's root, e.g. `/pods/web`.
    pub path: String,
    /// Index of the parent in [`CgroupTree::groups`]; `None` for a child of the root.
    #[serde(skip)]
    pub parent: Option<usize>,
    /// `memory.max` (v1: `memory.limit_in_bytes`), bytes; `None` = max.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_max: Option<u64>,
    /// `memory.high` (v2 only), bytes; `None` = max.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_high: Option<u64>,
    /// `memory.low` (v2 only), bytes: best-effort protection from global reclaim; `None` = 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_low: Option<u64>,
    /// `io.max` (v1: `blkio.throttle.*_device`): blk-throttle limits per device (index into
    /// `Scenario::devices`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub io_max: Vec<(usize, crate::config::BlkThrottleConfig)>,
    /// `io.latency`: the latency target per device (index, ns).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub io_latency: Vec<(usize, crate::Ns)>,
    /// `io.bfq.weight` (v1: `blkio.bfq.weight`): the group's share under bfq, 1–1000;
    /// `None` = the default, 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bfq_weight: Option<u64>,
    /// Per-device weights of `io.bfq.weight`'s `MAJ:MIN W` lines (v1:
    /// `blkio.bfq.weight_device`), overriding the group's default there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bfq_weight_device: Vec<(usize, u64)>,
}

impl CgroupConfig {
    /// The group's bfq weight on device `dev` (`bfq_group_set_weight`: a device's own
    /// weight, else the group's default).
    pub fn bfq_weight_on(&self, dev: usize) -> u64 {
        self.bfq_weight_device
            .iter()
            .find(|(d, _)| *d == dev)
            .map(|&(_, w)| w)
            .or(self.bfq_weight)
            .unwrap_or(crate::block::sched::bfq::DEFAULT_GROUP_WEIGHT)
    }
}

/// The scenario's cgroups, parents before children.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CgroupTree {
    pub version: CgroupVersion,
    pub groups: Vec<CgroupConfig>,
}

impl CgroupTree {
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Index of the group at `path`.
    pub fn find(&self, path: &str) -> Option<usize> {
        self.groups.iter().position(|g| g.path == path)
    }

    /// `cg` and its ancestors, innermost first.
    pub fn ancestry(&self, cg: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(Some(cg), move |&c| self.groups[c].parent)
    }

    /// The group whose `io.max` rules for device `dev` govern a bio of group `cg`: the
    /// nearest of `cg` and its ancestors with rules there (the model applies one level's).
    pub fn io_max_group(&self, cg: usize, dev: usize) -> Option<usize> {
        self.ancestry(cg)
            .find(|&c| self.groups[c].io_max.iter().any(|(d, t)| *d == dev && t.is_limited()))
    }

    /// Whether `cg` is `ancestor` or below it.
    pub fn is_within(&self, cg: usize, ancestor: usize) -> bool {
        self.ancestry(cg).any(|c| c == ancestor)
    }
}
