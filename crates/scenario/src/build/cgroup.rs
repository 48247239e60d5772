//! `[[cgroup]]`: the cgroup tree, with the files of each group as the kernel names them
//! (`memory.max`, or `memory.limit_in_bytes` on a cgroup v1 hierarchy). The version follows
//! from the files: v1 files make a v1 machine, and the two cannot be mixed.

use crate::error::{Problem, Result};
use crate::section::{Entry, Section};
use crate::units::SIZE_SYNTAX;
use wblab_sim::config::{CgroupConfig, CgroupTree, CgroupVersion};
use wblab_sim::units::PAGE_SIZE;

/// Keys of a `[[cgroup]]` that wblab models.
pub(super) const KEYS: &[&str] = &["path", "memory.max", "memory.high", "memory.limit_in_bytes"];
/// Files of cgroup v1 only.
const V1_KEYS: &[&str] = &["memory.limit_in_bytes"];
/// Files of cgroup v2 only.
const V2_KEYS: &[&str] = &["memory.max", "memory.high"];
/// Real cgroup files wblab does not model yet: named as such rather than as unknown.
const NOT_MODELLED: &[&str] = &[
    "memory.low",
    "memory.min",
    "memory.swap.max",
    "memory.soft_limit_in_bytes",
    "memory.oom.group",
    "io.max",
    "io.weight",
    "io.bfq.weight",
    "io.latency",
    "io.cost.qos",
    "io.cost.model",
    "blkio.weight",
    "blkio.throttle.read_bps_device",
    "blkio.throttle.write_bps_device",
    "blkio.throttle.read_iops_device",
    "blkio.throttle.write_iops_device",
];
/// The most groups a scenario may declare.
const MAX_GROUPS: usize = 256;

/// Keys as written: `memory.max = ...` is a nested table in TOML, flattened back with '.'.
pub(super) fn normalize(key: String) -> String {
    key
}

/// The tree from the `[[cgroup]]` sections, in file order (a parent before its children).
pub(super) fn build(root_at: usize, sections: &[Section<'_>]) -> Result<CgroupTree> {
    let mut tree = CgroupTree::default();
    let mut version_from: Option<(&Entry<'_>, CgroupVersion)> = None;
    if sections.len() > MAX_GROUPS {
        return Err(Problem::new(root_at, format!("{} cgroups; at most {MAX_GROUPS}", sections.len())).key("cgroup"));
    }
    for sec in sections {
        if let Some(e) = sec.entries.iter().find(|e| NOT_MODELLED.contains(&e.key.as_str())) {
            return Err(e
                .key_problem(format!("`{}` is a cgroup file wblab does not model yet", e.key))
                .hint(format!("modelled: {}", KEYS[1..].join(", "))));
        }
        sec.reject_unknown(KEYS, "cgroup file")?;
        for e in &sec.entries {
            let v = if V1_KEYS.contains(&e.key.as_str()) {
                CgroupVersion::V1
            } else if V2_KEYS.contains(&e.key.as_str()) {
                CgroupVersion::V2
            } else {
                continue;
            };
            match version_from {
                Some((first, was)) if was != v => {
                    return Err(e
                        .key_problem(format!(
                            "`{}` is a cgroup {} file, but `{}` made this a {} hierarchy",
                            e.key,
                            name(v),
                            first.key,
                            name(was)
                        ))
                        .hint("a machine mounts one hierarchy: use memory.max/memory.high (v2) or memory.limit_in_bytes (v1)"))
                }
                None => version_from = Some((e, v)),
                _ => {}
            }
        }
        let g = group(sec, &tree)?;
        tree.groups.push(g);
    }
    tree.version = version_from.map_or(CgroupVersion::V2, |(_, v)| v);
    Ok(tree)
}

fn name(v: CgroupVersion) -> &'static str {
    match v {
        CgroupVersion::V1 => "v1",
        CgroupVersion::V2 => "v2",
    }
}

fn group(sec: &Section<'_>, tree: &CgroupTree) -> Result<CgroupConfig> {
    let Some(e) = sec.get("path") else {
        return Err(sec
            .missing("path", "this [[cgroup]] has no path")
            .hint("add path = \"/pod-a\": the group's place below the cgroup root"));
    };
    let path = e.str()?.to_string();
    let hint = "an absolute path of names, e.g. \"/pods/web\"";
    let parts: Vec<&str> = path.strip_prefix('/').unwrap_or("").split('/').collect();
    if !path.starts_with('/') || path.len() == 1 || parts.iter().any(|p| p.is_empty() || *p == "." || *p == "..") {
        return Err(e.problem(format!("`{path}` is not a cgroup path")).hint(hint));
    }
    if tree.find(&path).is_some() {
        return Err(e
            .problem(format!("cgroup `{path}` is declared twice"))
            .hint("merge the two [[cgroup]] tables"));
    }
    let parent_path = &path[..path.rfind('/').expect("starts with /")];
    let parent = if parent_path.is_empty() {
        None
    } else {
        match tree.find(parent_path) {
            Some(i) => Some(i),
            None => {
                return Err(e.problem(format!("the parent `{parent_path}` is not declared above")).hint(format!(
                    "declare [[cgroup]] path = \"{parent_path}\" before this group (mkdir makes parents first)"
                )))
            }
        }
    };
    let mut g = CgroupConfig {
        path,
        parent,
        memory_max: None,
        memory_high: None,
    };
    sec.read("memory.max", &mut g.memory_max, limit)?;
    sec.read("memory.limit_in_bytes", &mut g.memory_max, limit)?;
    sec.read("memory.high", &mut g.memory_high, limit)?;
    Ok(g)
}

/// The smallest memory limit accepted: below it a writer's allocation (up to a 2 MiB folio)
/// and its group's readahead would not fit beside the writeback in flight, and the kernel
/// would call the OOM killer, which wblab does not model.
const MIN_LIMIT: u64 = 16 << 20;

/// A memory limit: bytes with a unit, or `"max"` (no limit), as `page_counter_memparse`
/// takes it; rounded down to whole pages. At least [`MIN_LIMIT`].
fn limit(e: &Entry<'_>) -> Result<Option<u64>> {
    if let Ok("max") = e.str().map(str::trim) {
        return Ok(None);
    }
    let bytes = e.size().map_err(|p| p.hint(format!("{SIZE_SYNTAX}, or \"max\" for no limit")))?;
    if bytes < MIN_LIMIT {
        return Err(e
            .problem(format!("{} is below 16 MiB", crate::units::format_size(bytes)))
            .hint("a group that small would OOM-kill its writer, which wblab does not model; e.g. \"512MiB\", or \"max\""));
    }
    Ok(Some(bytes / PAGE_SIZE * PAGE_SIZE))
}
