//! Memory cgroups of a cgroup v1 `memory` hierarchy for a measurement: the scenario's tree of
//! groups made below the harness's own group (`<its group>/wblab-<pid>/<path>`), each
//! `memory.limit_in_bytes` written, the tasks placed in them, their usage sampled each second,
//! and everything removed afterwards. Each directory is journaled before it is made, so a
//! killed run is undone by `wblab measure --restore`.

use crate::journal::{Entry, Journal};
use crate::sys;
use std::io;
use std::path::{Path, PathBuf};
use wblab_sim::config::{CgroupTree, CgroupVersion};
use wblab_sim::metrics::MemcgSample;
use wblab_sim::units::PAGE_SIZE;

/// Prefix of the directory a measurement makes for its groups.
pub const DIR_PREFIX: &str = "wblab-";

/// Mount point of the v1 memory hierarchy, if there is one.
pub fn memory_root() -> Option<PathBuf> {
    sys::mounts()
        .into_iter()
        .find(|(_, _, ty, opts)| ty == "cgroup" && opts.split(',').any(|o| o == "memory"))
        .map(|(_, m, _, _)| PathBuf::from(m))
}

/// This process's group in the v1 memory hierarchy ("/" for its root).
fn own_group() -> String {
    std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
                ctrl.split(',').any(|c| c == "memory").then(|| path.to_string())
            })
        })
        .unwrap_or_else(|| "/".to_string())
}

/// Why the scenario's cgroups cannot be measured here, if they cannot.
pub fn check(tree: &CgroupTree) -> Result<(), String> {
    if tree.is_empty() {
        return Ok(());
    }
    if tree.version == CgroupVersion::V2 {
        return Err(
            "cgroup v2 files (memory.max, memory.high, io.max) are not measured yet: the harness drives a \
                    cgroup v1 memory hierarchy (write memory.limit_in_bytes)"
                .to_string(),
        );
    }
    if tree.groups.iter().any(|g| !g.io_max.is_empty()) {
        return Err("blkio.throttle rules of child cgroups are not measured yet (the device's throttle/* keys are)".to_string());
    }
    if memory_root().is_none() {
        return Err("the scenario's memory cgroups need a cgroup v1 memory hierarchy; none is mounted here".to_string());
    }
    Ok(())
}

/// Make the tree below the harness's own group, each directory journaled first, and write the
/// limits. Returns each group's directory, in the tree's order.
pub fn create(j: &mut Journal, tree: &CgroupTree) -> io::Result<Vec<PathBuf>> {
    if tree.is_empty() {
        return Ok(Vec::new());
    }
    let root = memory_root().ok_or_else(|| io::Error::other("no cgroup v1 memory hierarchy"))?;
    let base = root
        .join(own_group().trim_start_matches('/'))
        .join(format!("{DIR_PREFIX}{}", std::process::id()));
    make_dir(j, &base)?;
    let mut dirs = Vec::with_capacity(tree.groups.len());
    for g in &tree.groups {
        let dir = base.join(g.path.trim_start_matches('/'));
        make_dir(j, &dir)?;
        if let Some(max) = g.memory_max {
            let file = dir.join("memory.limit_in_bytes");
            std::fs::write(&file, max.to_string()).map_err(|e| io::Error::new(e.kind(), format!("{}: {max}: {e}", file.display())))?;
            let got = sys::read_trim(&file)?;
            if got != max.to_string() {
                return Err(io::Error::other(format!("{}: wrote {max}, reads {got}", file.display())));
            }
        }
        dirs.push(dir);
    }
    Ok(dirs)
}

fn make_dir(j: &mut Journal, dir: &Path) -> io::Result<()> {
    j.record(Entry::Cgroup { path: dir.to_path_buf() })?;
    std::fs::create_dir(dir).map_err(|e| io::Error::new(e.kind(), format!("mkdir {}: {e}", dir.display())))
}

/// Move whatever still runs in `dir` to its parent and remove it (idempotent). Its page cache
/// stays charged to the parent, as the kernel reparents it.
pub fn remove(dir: &Path) -> io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let parent_tasks = dir
        .parent()
        .map(|p| p.join("tasks"))
        .ok_or_else(|| io::Error::other("a cgroup has a parent"))?;
    for attempt in 0..50 {
        if let Ok(t) = std::fs::read_to_string(dir.join("tasks")) {
            for tid in t.lines().filter(|l| !l.trim().is_empty()) {
                // A thread that exits meanwhile cannot be moved: ESRCH is fine.
                let _ = std::fs::write(&parent_tasks, tid.trim());
            }
        }
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if attempt == 49 => return Err(io::Error::new(e.kind(), format!("rmdir {}: {e}", dir.display()))),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    Ok(())
}

/// The file a task writes its thread id to, to join the group at `dir`.
pub fn tasks_file(dir: &Path) -> PathBuf {
    dir.join("tasks")
}

/// A group's usage and page cache (`memory.usage_in_bytes`, `memory.stat`'s hierarchical
/// `total_cache`, `total_dirty`, `total_writeback`), in pages, at `t_ns`.
pub fn sample(dir: &Path, t_ns: u64) -> Option<MemcgSample> {
    let usage: u64 = sys::read_trim(&dir.join("memory.usage_in_bytes")).ok()?.parse().ok()?;
    let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
    let field = |name: &str| {
        stat.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    Some(MemcgSample {
        t_ns,
        usage: usage / PAGE_SIZE,
        file: field("total_cache") / PAGE_SIZE,
        dirty: field("total_dirty") / PAGE_SIZE,
        writeback: field("total_writeback") / PAGE_SIZE,
        dirty_thresh: 0,
        dirty_background_thresh: 0,
    })
}

/// Every group directory a measurement made that is still there (leak checks).
pub fn left_behind() -> Vec<String> {
    let Some(root) = memory_root() else { return Vec::new() };
    let mut out = Vec::new();
    let mut stack = vec![(root, 0)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if !p.is_dir() {
                continue;
            }
            if e.file_name().to_string_lossy().starts_with(DIR_PREFIX) {
                out.push(p.display().to_string());
            } else if depth < 4 {
                stack.push((p, depth + 1));
            }
        }
    }
    out.sort();
    out
}
