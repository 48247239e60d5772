//! A snapshot of everything a measurement may touch, to check that a run left the machine as
//! it found it: sysctls, every block device's queue knobs, every bdi's knobs, block devices,
//! loop bindings, mounts, blk-throttle rules, tracefs state, the journal.

use crate::{cgroup, journal, knobs, sys, tracefs};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub values: BTreeMap<String, String>,
}

fn bdi_knobs(out: &mut BTreeMap<String, String>) {
    let Ok(rd) = std::fs::read_dir("/sys/class/bdi") else { return };
    for e in rd.flatten() {
        // min_bytes/max_bytes are derived from the current dirty threshold: they move by themselves.
        for k in ["min_ratio_fine", "max_ratio_fine", "strict_limit", "read_ahead_kb"] {
            let p = e.path().join(k);
            if let Ok(v) = sys::read_trim(&p) {
                out.insert(p.display().to_string(), v);
            }
        }
    }
}

/// Take a snapshot.
pub fn snapshot() -> Snapshot {
    let mut v = BTreeMap::new();
    for (k, x) in knobs::sysctl_snapshot() {
        v.insert(k, x);
    }
    let mut devs: Vec<String> = std::fs::read_dir("/sys/block")
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect())
        .unwrap_or_default();
    devs.sort();
    v.insert("block devices".into(), devs.join(" "));
    for d in &devs {
        for (k, x) in knobs::queue_snapshot(d) {
            // Read-only and statistics-like files that change by themselves are left out.
            if k.ends_with("/stat") {
                continue;
            }
            v.insert(k, x);
        }
        if let Some(idx) = d.strip_prefix("loop").and_then(|i| i.parse::<u32>().ok()) {
            if let Some(b) = crate::loopdev::backing_file(idx) {
                v.insert(format!("{d} backing"), b);
            }
        }
    }
    v.insert("wblab memory cgroups".into(), crate::memcg::left_behind().join(" "));
    bdi_knobs(&mut v);
    let mut mounts: Vec<String> = sys::mounts().into_iter().map(|(s, m, t, _)| format!("{s} {m} {t}")).collect();
    mounts.sort();
    v.insert("mounts".into(), mounts.join("\n"));
    v.insert("blk-throttle rules".into(), cgroup::all_rules().join("\n"));
    match tracefs::find() {
        Some(root) => {
            for f in ["tracing_on", "set_event", "buffer_size_kb", "current_tracer"] {
                v.insert(format!("tracefs {f}"), sys::read_trim(&root.join(f)).unwrap_or_default());
            }
            let mut inst: Vec<String> = std::fs::read_dir(root.join("instances"))
                .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect())
                .unwrap_or_default();
            inst.sort();
            v.insert("tracefs instances".into(), inst.join(" "));
        }
        None => {
            v.insert("tracefs".into(), "not mounted".into());
        }
    }
    v.insert("journal pending".into(), journal::pending().to_string());
    v.insert("state dir exists".into(), journal::state_dir().exists().to_string());
    Snapshot { values: v }
}

/// Differences between two snapshots, one line each.
pub fn diff(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (k, a) in &before.values {
        match after.values.get(k) {
            Some(b) if b == a => {}
            Some(b) => out.push(format!("{k}: was {a:?}, now {b:?}")),
            None => out.push(format!("{k}: was {a:?}, now gone")),
        }
    }
    for (k, b) in &after.values {
        if !before.values.contains_key(k) {
            out.push(format!("{k}: new, {b:?}"));
        }
    }
    out
}

/// Serialise real-kernel tests across processes (two `cargo test` runs on one machine would
/// otherwise see each other's loop devices and knobs in their before/after snapshots): an
/// exclusive `flock` on the temporary directory itself, so no lock file is left behind.
/// Held until the returned file is dropped.
pub fn serial_lock() -> std::fs::File {
    let f = std::fs::File::open(std::env::temp_dir()).expect("open the temporary directory");
    // SAFETY: valid fd; blocking exclusive lock.
    unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX) };
    f
}

/// Anything of ours left under `parent`: `wblab-measure-*` / `wblab-calibrate-*` directories.
pub fn scratch_left(parent: &Path) -> Vec<String> {
    std::fs::read_dir(parent)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("wblab-measure-") || n.starts_with("wblab-calibrate-"))
                .collect()
        })
        .unwrap_or_default()
}
