//! Whether a measurement left anything behind — judged on what it changed, not on the whole
//! machine, so that other work on the machine (loop devices, mounts, cgroups made and removed
//! by other jobs) cannot make a clean run look dirty. A measurement's results directory
//! holds its journal ([`CHANGES_FILE`]); a killed one leaves the journal in its state
//! directory. [`not_undone`] checks each entry: a knob back at its original, a loop device,
//! mount, throttle rule, trace instance, cgroup or scratch directory gone.

use crate::journal::Entry;
use crate::{cgroup, knobs, loopdev, sys};
use std::path::Path;

/// The results directory's copy of the measurement's journal: every change it made, in
/// order, one JSON object per line (all of them undone when the run ended).
pub const CHANGES_FILE: &str = "changes.jsonl";

/// The entries of `changes` that are not undone now, each as a sentence.
pub fn not_undone(changes: &[Entry]) -> Vec<String> {
    let mut left = Vec::new();
    for e in changes {
        let problem = match e {
            Entry::Run { .. } | Entry::Done => None,
            Entry::Knob { path, original, .. } => match knobs::read_knob(path) {
                Ok(v) if &v != original => Some(format!("{} is {v}, was {original}", path.display())),
                _ => None,
            },
            Entry::DirtyPair {
                ratio_path,
                bytes_path,
                ratio,
                bytes,
            } => {
                let read = |p: &Path| sys::read_trim(p).ok().and_then(|v| v.parse::<u64>().ok());
                let now = (read(ratio_path), read(bytes_path));
                (now != (Some(*ratio), Some(*bytes))).then(|| {
                    format!(
                        "{} / {} are {now:?}, were {ratio} / {bytes}",
                        ratio_path.display(),
                        bytes_path.display()
                    )
                })
            }
            Entry::Scratch { path } => path
                .exists()
                .then(|| format!("scratch directory {} is still there", path.display())),
            Entry::LoopDevice { index } => {
                let ours = changes
                    .iter()
                    .any(|b| matches!(b, Entry::LoopBinding { index: i, backing } if i == index && loopdev::backing_file(*i).is_some_and(|f| f.trim_end_matches(" (deleted)") == backing.to_string_lossy())));
                ours.then(|| format!("loop{index} is still bound to our backing file"))
            }
            Entry::LoopBinding { index, backing } => loopdev::backing_file(*index)
                .filter(|f| f.trim_end_matches(" (deleted)") == backing.to_string_lossy())
                .map(|f| format!("loop{index} is still bound to {f}")),
            Entry::Mount { path } => sys::is_mount_point(path).then(|| format!("{} is still mounted", path.display())),
            Entry::Throttle { file, dev } => {
                cgroup::rule_of(file, dev).map(|v| format!("{}: the rule {dev} {v} is still there", file.display()))
            }
            Entry::TraceInstance { path } => path.exists().then(|| format!("trace instance {} is still there", path.display())),
            Entry::Cgroup { path } => path.exists().then(|| format!("cgroup {} is still there", path.display())),
        };
        left.extend(problem);
    }
    left
}

/// The changes a results directory records ([`CHANGES_FILE`]).
pub fn changes_of(results: &Path) -> std::io::Result<Vec<Entry>> {
    crate::journal::read_entries(&results.join(CHANGES_FILE))
}

/// Serialise real-kernel tests across processes (two `cargo test` runs on one machine would
/// otherwise wait on each other's measurement lock or see each other's sysctls): an
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
