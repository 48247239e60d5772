//! The scenario's cgroups on cgroup v1 for a measurement: its tree of groups made below the
//! harness's own group (`<its group>/wblab-<pid>/<path>`) in the `memory` hierarchy (each
//! `memory.limit_in_bytes` written) and, when a group has blkio files, in the `blkio`
//! hierarchy too (`blkio.bfq.weight`, `blkio.bfq.weight_device`, `blkio.throttle.*`); the
//! tasks placed in both, their memory sampled each second, and everything removed afterwards.
//! Each directory is journaled before it is made, so a killed run is undone by
//! `wblab measure --restore`; a group's blkio rules go with its directory.

use crate::journal::{Entry, Journal};
use crate::sys;
use std::io;
use std::path::{Path, PathBuf};
use wblab_sim::config::{CgroupConfig, CgroupTree, CgroupVersion};
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

/// This process's group in the v1 hierarchy of `controller` ("/" for its root).
pub fn own_group(controller: &str) -> String {
    std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
                ctrl.split(',').any(|c| c == controller).then(|| path.to_string())
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
    if tree.groups.iter().any(has_blkio_files) && crate::cgroup::blkio_root().is_none() {
        return Err("the scenario's blkio files need a cgroup v1 blkio hierarchy; none is mounted here".to_string());
    }
    if memory_root().is_none() {
        return Err("the scenario's memory cgroups need a cgroup v1 memory hierarchy; none is mounted here".to_string());
    }
    Ok(())
}

/// Whether a group sets files of the blkio controller.
pub fn has_blkio_files(g: &CgroupConfig) -> bool {
    g.bfq_weight.is_some() || !g.bfq_weight_device.is_empty() || !g.io_max.is_empty()
}

/// The group directories of a measurement, in the tree's order.
#[derive(Default)]
pub struct GroupDirs {
    pub memory: Vec<PathBuf>,
    /// Empty when no group has blkio files.
    pub blkio: Vec<PathBuf>,
}

impl GroupDirs {
    /// The `tasks` files a task of group `cg` writes its id to, one per hierarchy.
    pub fn tasks_files(&self, cg: usize) -> Vec<PathBuf> {
        [self.memory.get(cg), self.blkio.get(cg)]
            .into_iter()
            .flatten()
            .map(|d| d.join("tasks"))
            .collect()
    }
}

/// Make the tree below the harness's own group in each hierarchy it needs, each directory
/// journaled first, and write the files. `devnums[d]` is device `d`'s `MAJ:MIN`, for the
/// per-device lines.
pub fn create(j: &mut Journal, tree: &CgroupTree, devnums: &[Option<String>]) -> io::Result<GroupDirs> {
    let mut dirs = GroupDirs::default();
    if tree.is_empty() {
        return Ok(dirs);
    }
    let root = memory_root().ok_or_else(|| io::Error::other("no cgroup v1 memory hierarchy"))?;
    let planned = tree_dirs(&root, &own_group("memory"), std::process::id(), tree);
    for d in &planned {
        make_dir(j, d)?;
    }
    for (g, dir) in tree.groups.iter().zip(planned.into_iter().skip(1)) {
        if let Some(max) = g.memory_max {
            write_checked(&dir.join("memory.limit_in_bytes"), &max.to_string())?;
        }
        dirs.memory.push(dir);
    }
    if !tree.groups.iter().any(has_blkio_files) {
        return Ok(dirs);
    }
    let root = crate::cgroup::blkio_root().ok_or_else(|| io::Error::other("no cgroup v1 blkio hierarchy"))?;
    let planned = tree_dirs(&root, &own_group("blkio"), std::process::id(), tree);
    for d in &planned {
        make_dir(j, d)?;
    }
    let devnum = |d: usize| devnums.get(d).cloned().flatten();
    for (g, dir) in tree.groups.iter().zip(planned.into_iter().skip(1)) {
        for (name, value) in blkio_files(g, &devnum)? {
            let file = dir.join(&name);
            if name == "blkio.bfq.weight" && !file.exists() {
                return Err(io::Error::other(format!("{}: no such file (is bfq built in?)", file.display())));
            }
            if name.starts_with("blkio.throttle.") {
                sys::append_value(&file, &value).map_err(|e| io::Error::new(e.kind(), format!("{}: {value}: {e}", file.display())))?;
                let dn = value.split(' ').next().unwrap_or("");
                let got = crate::cgroup::rule_of(&file, dn);
                if got.map(|v| v.to_string()).as_deref() != value.split(' ').nth(1) {
                    return Err(io::Error::other(format!("{}: wrote {value}, reads {got:?}", file.display())));
                }
            } else if name == "blkio.bfq.weight" {
                write_checked(&file, &value)?;
            } else {
                std::fs::write(&file, &value).map_err(|e| io::Error::new(e.kind(), format!("{}: {value}: {e}", file.display())))?;
            }
        }
        dirs.blkio.push(dir);
    }
    Ok(dirs)
}

/// The files a group writes in the blkio hierarchy and their values, in order; `devnum(d)`
/// is device `d`'s `MAJ:MIN`.
pub fn blkio_files(g: &CgroupConfig, devnum: &dyn Fn(usize) -> Option<String>) -> io::Result<Vec<(String, String)>> {
    let dn = |d: usize| devnum(d).ok_or_else(|| io::Error::other(format!("device {d} has no block device here for its blkio rules")));
    let mut out = Vec::new();
    if let Some(w) = g.bfq_weight {
        out.push(("blkio.bfq.weight".to_string(), w.to_string()));
    }
    for &(d, w) in &g.bfq_weight_device {
        out.push(("blkio.bfq.weight_device".to_string(), format!("{} {w}", dn(d)?)));
    }
    for (d, t) in &g.io_max {
        let n = dn(*d)?;
        for (name, v) in crate::cgroup::rules(t) {
            out.push((name.to_string(), format!("{n} {v}")));
        }
    }
    Ok(out)
}

/// The directories of `tree` in the hierarchy at `root`: `<own group>/wblab-<pid>` first, then
/// each group below it, in the tree's order (parents first).
pub fn tree_dirs(root: &Path, own_group: &str, pid: u32, tree: &CgroupTree) -> Vec<PathBuf> {
    let base = root.join(own_group.trim_start_matches('/')).join(format!("{DIR_PREFIX}{pid}"));
    let mut dirs = vec![base.clone()];
    dirs.extend(tree.groups.iter().map(|g| base.join(g.path.trim_start_matches('/'))));
    dirs
}

/// Write `value` to a cgroup file and read it back.
fn write_checked(file: &Path, value: &str) -> io::Result<()> {
    std::fs::write(file, value).map_err(|e| io::Error::new(e.kind(), format!("{}: {value}: {e}", file.display())))?;
    let got = sys::read_trim(file)?;
    if got != value {
        return Err(io::Error::other(format!("{}: wrote {value}, reads {got}", file.display())));
    }
    Ok(())
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

/// A group's usage and page cache (`memory.usage_in_bytes`, `memory.stat`'s hierarchical
/// `total_cache`, `total_dirty`, `total_writeback`), in pages, at `t_ns`; and, where it has a
/// blkio directory, the bytes it read and wrote on every device so far
/// (`blkio.throttle.io_service_bytes_recursive`, counted as blk-throttle passes the bios on,
/// where the simulator's io.stat counts completions).
pub fn sample(dir: &Path, blkio: Option<&Path>, t_ns: u64) -> Option<MemcgSample> {
    let usage: u64 = sys::read_trim(&dir.join("memory.usage_in_bytes")).ok()?.parse().ok()?;
    let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
    let io = blkio
        .and_then(|b| std::fs::read_to_string(b.join("blkio.throttle.io_service_bytes_recursive")).ok())
        .and_then(|t| io_service_bytes(&t));
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
        io_rbytes: io.map(|(r, _)| r),
        io_wbytes: io.map(|(_, w)| w),
    })
}

/// `blkio.throttle.io_service_bytes_recursive`'s `Read` and `Write` lines, summed over the
/// devices.
pub fn io_service_bytes(text: &str) -> Option<(u64, u64)> {
    let (mut r, mut w, mut any) = (0u64, 0u64, false);
    for l in text.lines() {
        let mut f = l.split_whitespace();
        let (Some(dev), Some(op), Some(v)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if !dev.contains(':') {
            continue;
        }
        let Ok(v) = v.parse::<u64>() else { continue };
        match op {
            "Read" => r += v,
            "Write" => w += v,
            _ => continue,
        }
        any = true;
    }
    // A group that has done no I/O lists no device: nothing yet, not unknown.
    if !any && !text.lines().any(|l| l.starts_with("Total")) {
        return None;
    }
    Some((r, w))
}

/// Every group directory a measurement made that is still there, in either hierarchy (leak
/// checks).
pub fn left_behind() -> Vec<String> {
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, u32)> = [memory_root(), crate::cgroup::blkio_root()]
        .into_iter()
        .flatten()
        .map(|r| (r, 0))
        .collect();
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

#[cfg(test)]
mod io_tests {
    use super::io_service_bytes;

    #[test]
    fn io_service_bytes_sums_the_devices() {
        let t = "7:0 Read 4096\n7:0 Write 1048576\n7:0 Sync 0\n7:0 Async 1052672\n7:0 Discard 0\n7:0 Total 1052672\n\
                 8:0 Read 8192\n8:0 Write 0\n8:0 Total 8192\nTotal 1060864\n";
        assert_eq!(io_service_bytes(t), Some((12288, 1048576)));
        assert_eq!(io_service_bytes("Total 0\n"), Some((0, 0)), "a group without I/O yet");
        assert_eq!(io_service_bytes(""), None);
    }
}
