//! The undo journal: every change the harness makes to the machine is written here, and
//! fsync'd, *before* it is made (knob originals, throttle rules, mounts, trace instances) or
//! the instant it exists (a loop index, a scratch directory). Tear-down — after a normal end,
//! an error, SIGINT/SIGTERM, a panic, or `wblab measure --restore` after a SIGKILL — is one
//! function: replay the journal. Resources are undone in reverse order of creation, then the
//! knobs: schedulers first (switching a scheduler resets `nr_requests` and the iosched files),
//! then the other queue and bdi knobs, then sysctls, and the `vm.dirty_*` ratio/bytes pairs
//! last (writing one of a pair zeroes its twin).
//!
//! The journal lives in a state directory (`/run/wblab` unless `WBLAB_STATE_DIR` says
//! otherwise) next to a lock file: one measurement at a time, because two runs setting the
//! same sysctl would each record the other's value as the "original".

use crate::{cgroup, loopdev, sys, tracefs};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Marker file in every scratch directory we create; nothing without it is ever removed.
pub const SCRATCH_MARKER: &str = ".wblab-scratch";

const JOURNAL_FILE: &str = "measure.journal";
const LOCK_FILE: &str = "measure.lock";
/// How long to wait for another measurement to finish.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Where the journal and lock live: `WBLAB_STATE_DIR`, else `/run/wblab` for root, else
/// `$XDG_RUNTIME_DIR/wblab` (a directory only the user can enter), else `/tmp/wblab-<uid>`.
/// Whichever it is, [`secure_state_dir`] makes sure only we can write it.
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("WBLAB_STATE_DIR") {
        return PathBuf::from(d);
    }
    let uid = sys::geteuid();
    if uid == 0 {
        return PathBuf::from("/run/wblab");
    }
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(d) if d.is_absolute() => d.join("wblab"),
        _ => std::env::temp_dir().join(format!("wblab-{uid}")),
    }
}

/// Make the state directory (mode 0700) if it is missing, and refuse one that another user
/// could have prepared: a symbolic link, not a directory, not owned by us, or writable by
/// others. The journal it holds says what root undoes; nobody else may write it.
pub fn secure_state_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io::Error::new(e.kind(), format!("state directory {}: {e}", dir.display()))),
    }
    let m = std::fs::symlink_metadata(dir)?;
    let why = if m.file_type().is_symlink() {
        Some("is a symbolic link")
    } else if !m.is_dir() {
        Some("is not a directory")
    } else if m.uid() != sys::geteuid() {
        Some("belongs to another user")
    } else if m.mode() & 0o022 != 0 {
        Some("is writable by others")
    } else {
        None
    };
    match why {
        Some(w) => Err(io::Error::other(format!(
            "state directory {} {w}: refusing to keep the undo journal there (remove it, or set WBLAB_STATE_DIR \
             to a directory of your own)",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// Restore order of knobs: lower first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KnobClass {
    Scheduler,
    Queue,
    Sysctl,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// Header: who started the run.
    Run { pid: u32, started_unix: u64 },
    /// A sysfs/procfs knob and its value before we wrote it.
    Knob { path: PathBuf, original: String, class: KnobClass },
    /// `vm.dirty_ratio`/`vm.dirty_bytes` (or the background pair) before we wrote either.
    DirtyPair {
        ratio_path: PathBuf,
        bytes_path: PathBuf,
        ratio: u64,
        bytes: u64,
    },
    /// A directory we created (holds SCRATCH_MARKER).
    Scratch { path: PathBuf },
    /// A loop device index we created with LOOP_CTL_ADD.
    LoopDevice { index: u32 },
    /// We are about to bind / have bound this loop device to `backing`.
    LoopBinding { index: u32, backing: PathBuf },
    /// We are about to mount / have mounted something at `path` (always inside our scratch).
    Mount { path: PathBuf },
    /// A blk-throttle rule for `dev` ("7:64") in a cgroup v1 rule file.
    Throttle { file: PathBuf, dev: String },
    /// A tracefs instance directory we created.
    TraceInstance { path: PathBuf },
    /// A memory cgroup directory we are about to make / made.
    Cgroup { path: PathBuf },
    /// The run is fully torn down (only written just before the journal is deleted).
    Done,
}

pub struct Journal {
    path: PathBuf,
    file: File,
    entries: Vec<Entry>,
    _lock: File,
    torn_down: bool,
}

fn lock(dir: &Path) -> io::Result<File> {
    use std::os::unix::fs::MetadataExt;
    let path = dir.join(LOCK_FILE);
    let t0 = std::time::Instant::now();
    let mut told = false;
    loop {
        // The previous holder removes the lock file and the directory when it is done.
        secure_state_dir(dir)?;
        let lock = match OpenOptions::new().create(true).truncate(false).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        match sys::flock_exclusive(&lock) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                // Another measurement holds the machine: wait for it (one at a time).
                if t0.elapsed() >= LOCK_WAIT || crate::guard::aborted().is_some() {
                    return Err(io::Error::other(format!(
                        "another `wblab measure` or `wblab calibrate` has been running on this machine for {} s \
                         (lock {}); one measurement at a time",
                        t0.elapsed().as_secs(),
                        path.display()
                    )));
                }
                if !told {
                    eprintln!("waiting for another wblab measurement on this machine to finish...");
                    told = true;
                }
                drop(lock);
                std::thread::sleep(std::time::Duration::from_millis(200));
                continue;
            }
            Err(e) => return Err(e),
        }
        // The holder before us removes the lock file when it is done: if we locked a file
        // that is no longer the one at `path`, start again.
        match std::fs::metadata(&path) {
            Ok(m) if m.ino() == lock.metadata()?.ino() => return Ok(lock),
            _ => continue,
        }
    }
}

/// Remove the lock file and the state directory (if empty) while still holding the lock, so
/// that a finished run leaves nothing behind.
fn unlock_and_clean(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(LOCK_FILE));
    let _ = std::fs::remove_dir(dir);
}

/// Parse a journal's lines; a torn last line (crash mid-write) is ignored.
pub fn read_entries(path: &Path) -> io::Result<Vec<Entry>> {
    let f = File::open(path)?;
    let mut out = Vec::new();
    for line in BufReader::new(f).lines() {
        let line = line?;
        if let Ok(e) = serde_json::from_str::<Entry>(&line) {
            out.push(e);
        }
    }
    Ok(out)
}

impl Journal {
    /// Lock the state directory and start a new journal. Refuses if an interrupted run left one.
    pub fn begin() -> io::Result<Journal> {
        let dir = state_dir();
        let lock = lock(&dir)?;
        let path = dir.join(JOURNAL_FILE);
        if path.exists() {
            return Err(io::Error::other(format!(
                "an interrupted measurement left changes to undo (journal {}): run `wblab measure --restore` first",
                path.display()
            )));
        }
        let file = OpenOptions::new().create_new(true).append(true).open(&path)?;
        sys::fsync_dir(&dir)?;
        let mut j = Journal {
            path,
            file,
            entries: Vec::new(),
            _lock: lock,
            torn_down: false,
        };
        let started_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        j.record(Entry::Run {
            pid: sys::getpid(),
            started_unix,
        })?;
        Ok(j)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append an entry and make it durable before returning.
    pub fn record(&mut self, e: Entry) -> io::Result<()> {
        let mut line = serde_json::to_string(&e).map_err(io::Error::other)?;
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.sync_data()?;
        self.entries.push(e);
        Ok(())
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Undo one kind of resource early (e.g. lift throttle rules so queued bios drain before
    /// unmounting). The entries stay: replaying them again is harmless.
    pub fn undo_where(&self, pred: impl Fn(&Entry) -> bool) -> Vec<String> {
        let mut problems = Vec::new();
        for e in self.entries.iter().rev().filter(|e| pred(e)) {
            if let Err(msg) = undo(e) {
                problems.push(msg);
            }
        }
        problems
    }

    /// Undo everything. On success the journal file is deleted; otherwise it stays for
    /// `wblab measure --restore` and the problems are returned.
    pub fn teardown(&mut self) -> Vec<String> {
        if self.torn_down {
            return Vec::new();
        }
        self.torn_down = true;
        let problems = replay(&self.entries);
        if problems.is_empty() {
            let _ = self.record(Entry::Done);
            let _ = std::fs::remove_file(&self.path);
            if let Some(dir) = self.path.parent() {
                unlock_and_clean(dir);
            }
        }
        problems
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        let problems = self.teardown();
        for p in problems {
            eprintln!("wblab measure: cleanup: {p}");
        }
    }
}

/// `wblab measure --restore`: undo what an interrupted run left. Returns what was undone (for
/// the user) or the problems.
pub fn restore() -> Result<Vec<String>, Vec<String>> {
    let dir = state_dir();
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let _lock = lock(&dir).map_err(|e| vec![e.to_string()])?;
    let path = dir.join(JOURNAL_FILE);
    if !path.exists() {
        unlock_and_clean(&dir);
        return Ok(Vec::new());
    }
    let entries = read_entries(&path).map_err(|e| vec![format!("{}: {e}", path.display())])?;
    let odd = implausible(&entries);
    if !odd.is_empty() {
        return Err(odd
            .into_iter()
            .map(|o| format!("{}: {o}: no measurement writes such an entry; nothing was replayed", path.display()))
            .collect());
    }
    let done: Vec<String> = entries
        .iter()
        .filter(|e| !matches!(e, Entry::Run { .. } | Entry::Done))
        .map(describe)
        .collect();
    let problems = replay(&entries);
    if problems.is_empty() {
        std::fs::remove_file(&path).map_err(|e| vec![format!("{}: {e}", path.display())])?;
        unlock_and_clean(&dir);
        Ok(done)
    } else {
        Err(problems)
    }
}

/// Entries no measurement or calibration writes (the journal is read back as root: it must
/// not name what to unmount, detach or remove elsewhere than a run's own objects). Mounts and
/// backing files lie in a scratch directory of the same journal; knobs are the kernel's
/// vm, queue and bdi files; trace instances and cgroups are named `wblab-*`.
pub fn implausible(entries: &[Entry]) -> Vec<String> {
    use std::path::Component;
    let plain = |p: &Path| p.is_absolute() && p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    let scratches: Vec<&PathBuf> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Scratch { path } => Some(path),
            _ => None,
        })
        .collect();
    let in_scratch = |p: &Path| plain(p) && scratches.iter().any(|s| p.starts_with(s) && p != s.as_path());
    let named = |p: &Path, prefix: &str| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix));
    let knob = |p: &Path| plain(p) && ["/proc/sys/vm/", "/sys/block/", "/sys/class/bdi/"].iter().any(|r| p.starts_with(r));
    entries
        .iter()
        .filter(|e| match e {
            Entry::Run { .. } | Entry::Done => false,
            Entry::Scratch { path } => !(plain(path) && (named(path, "wblab-measure-") || named(path, "wblab-calibrate-"))),
            Entry::Mount { path } => !in_scratch(path),
            Entry::LoopBinding { index, backing } => *index < loopdev::FIRST_INDEX || !in_scratch(backing),
            Entry::LoopDevice { index } => *index < loopdev::FIRST_INDEX,
            Entry::Knob { path, .. } => !knob(path),
            Entry::DirtyPair {
                ratio_path, bytes_path, ..
            } => {
                !(ratio_path.starts_with("/proc/sys/vm/")
                    && bytes_path.starts_with("/proc/sys/vm/")
                    && plain(ratio_path)
                    && plain(bytes_path))
            }
            Entry::Throttle { file, dev } => {
                !(plain(file)
                    && named(file, "blkio.throttle.")
                    && dev
                        .split_once(':')
                        .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok()))
            }
            Entry::TraceInstance { path } => {
                !(plain(path) && named(path, "wblab-") && path.parent().is_some_and(|p| named(p, "instances")))
            }
            Entry::Cgroup { path } => !(plain(path) && path.components().any(|c| c.as_os_str().to_string_lossy().starts_with("wblab-"))),
        })
        .map(describe)
        .collect()
}

/// Whether an interrupted run left a journal.
pub fn pending() -> bool {
    state_dir().join(JOURNAL_FILE).exists()
}

pub fn describe(e: &Entry) -> String {
    match e {
        Entry::Run { pid, .. } => format!("run by pid {pid}"),
        Entry::Knob { path, original, .. } => format!("{} back to {original}", path.display()),
        Entry::DirtyPair {
            ratio_path,
            bytes_path,
            ratio,
            bytes,
        } => format!("{} = {ratio}, {} = {bytes}", ratio_path.display(), bytes_path.display()),
        Entry::Scratch { path } => format!("remove {}", path.display()),
        Entry::LoopDevice { index } => format!("remove loop{index}"),
        Entry::LoopBinding { index, .. } => format!("detach loop{index}"),
        Entry::Mount { path } => format!("unmount {}", path.display()),
        Entry::Throttle { dev, file } => format!("lift throttle {dev} in {}", file.display()),
        Entry::TraceInstance { path } => format!("remove trace instance {}", path.display()),
        Entry::Cgroup { path } => format!("remove cgroup {}", path.display()),
        Entry::Done => "done".to_string(),
    }
}

fn is_resource(e: &Entry) -> bool {
    !matches!(e, Entry::Run { .. } | Entry::Done | Entry::Knob { .. } | Entry::DirtyPair { .. })
}

fn replay(entries: &[Entry]) -> Vec<String> {
    let mut problems = Vec::new();
    // Resources in reverse order of creation.
    for e in entries.iter().rev().filter(|e| is_resource(e)) {
        if let Err(msg) = undo(e) {
            problems.push(msg);
        }
    }
    // Knobs: by class, and within a class in reverse order; the first record of a path holds
    // its true original (a later record of the same path would hold our own value).
    let mut knobs: Vec<(usize, &Entry)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Entry::Knob { .. } | Entry::DirtyPair { .. }))
        .collect();
    let mut seen = std::collections::HashSet::new();
    knobs.retain(|(_, e)| match e {
        Entry::Knob { path, .. } => seen.insert(path.clone()),
        Entry::DirtyPair { ratio_path, .. } => seen.insert(ratio_path.clone()),
        _ => false,
    });
    let rank = |e: &Entry| match e {
        Entry::Knob { class, .. } => *class as u8,
        _ => 10,
    };
    knobs.sort_by_key(|(i, e)| (rank(e), std::cmp::Reverse(*i)));
    for (_, e) in knobs {
        if let Err(msg) = undo(e) {
            problems.push(msg);
        }
    }
    problems
}

/// Undo one entry; idempotent (undoing something already undone is a no-op).
pub fn undo(e: &Entry) -> Result<(), String> {
    let ctx = |what: String| move |err: io::Error| format!("{what}: {err}");
    match e {
        Entry::Run { .. } | Entry::Done => Ok(()),
        Entry::Knob { path, original, .. } => crate::knobs::restore_knob(path, original),
        Entry::DirtyPair {
            ratio_path,
            bytes_path,
            ratio,
            bytes,
        } => crate::knobs::restore_pair(ratio_path, bytes_path, *ratio, *bytes),
        Entry::TraceInstance { path } => tracefs::remove_instance(path).map_err(ctx(format!("trace instance {}", path.display()))),
        Entry::Throttle { file, dev } => cgroup::lift(file, dev).map_err(ctx(format!("throttle rule {dev}"))),
        Entry::Mount { path } => crate::mount::unmount(path).map_err(ctx(format!("unmount {}", path.display()))),
        Entry::LoopBinding { index, backing } => loopdev::detach(*index, backing).map_err(ctx(format!("detach /dev/loop{index}"))),
        Entry::LoopDevice { index } => loopdev::remove(*index).map_err(ctx(format!("remove loop{index}"))),
        Entry::Scratch { path } => remove_scratch(path),
        Entry::Cgroup { path } => crate::memcg::remove(path).map_err(ctx(format!("cgroup {}", path.display()))),
    }
}

fn remove_scratch(path: &Path) -> Result<(), String> {
    if !path.exists() {
        return Ok(());
    }
    if !path.join(SCRATCH_MARKER).exists() {
        return Err(format!("{} has no {SCRATCH_MARKER} marker: not removing it", path.display()));
    }
    let mounted = sys::mounts_under(path);
    if !mounted.is_empty() {
        return Err(format!(
            "{} still has mounts under it ({}): not removing it",
            path.display(),
            mounted.join(", ")
        ));
    }
    std::fs::remove_dir_all(path).map_err(|e| format!("remove {}: {e}", path.display()))
}

/// Create a fresh scratch directory `parent/name` (must not exist), journal it and mark it.
pub fn make_scratch(j: &mut Journal, parent: &Path, name: &str) -> io::Result<PathBuf> {
    if !parent.is_dir() {
        return Err(io::Error::other(format!("{} is not a directory", parent.display())));
    }
    let path = parent.join(name);
    std::fs::create_dir(&path).map_err(|e| io::Error::other(format!("cannot create scratch {}: {e}", path.display())))?;
    j.record(Entry::Scratch { path: path.clone() })?;
    File::create(path.join(SCRATCH_MARKER))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_torn_lines_are_ignored() {
        let dir = std::env::temp_dir().join(format!("wblab-journal-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("j");
        let e1 = Entry::Knob {
            path: "/proc/sys/vm/dirty_expire_centisecs".into(),
            original: "3000".into(),
            class: KnobClass::Sysctl,
        };
        let e2 = Entry::LoopDevice { index: 64 };
        let text = format!(
            "{}\n{}\n{{\"kind\":\"mou",
            serde_json::to_string(&e1).unwrap(),
            serde_json::to_string(&e2).unwrap()
        );
        std::fs::write(&p, text).unwrap();
        assert_eq!(read_entries(&p).unwrap(), vec![e1, e2]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_journal_naming_objects_not_a_runs_own_is_not_replayed() {
        let scratch = PathBuf::from("/var/tmp/wblab-measure-1-2");
        let ok = vec![
            Entry::Run { pid: 1, started_unix: 0 },
            Entry::Scratch { path: scratch.clone() },
            Entry::LoopDevice { index: 64 },
            Entry::LoopBinding {
                index: 64,
                backing: scratch.join("key.img"),
            },
            Entry::Mount {
                path: scratch.join("mnt/key"),
            },
            Entry::Knob {
                path: "/sys/block/loop64/queue/scheduler".into(),
                original: "none".into(),
                class: KnobClass::Scheduler,
            },
            Entry::Throttle {
                file: "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device".into(),
                dev: "7:64".into(),
            },
            Entry::TraceInstance {
                path: "/sys/kernel/tracing/instances/wblab-1".into(),
            },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/memory/wblab-1/g".into(),
            },
        ];
        assert_eq!(implausible(&ok), Vec::<String>::new());
        for bad in [
            Entry::Scratch { path: "/home".into() },
            Entry::Mount { path: "/".into() },
            Entry::Mount {
                path: scratch.join("../../../home"),
            },
            Entry::LoopBinding {
                index: 0,
                backing: scratch.join("x"),
            },
            Entry::Knob {
                path: "/etc/passwd".into(),
                original: "x".into(),
                class: KnobClass::Sysctl,
            },
            Entry::TraceInstance { path: "/home/x".into() },
            Entry::Cgroup {
                path: "/sys/fs/cgroup/memory/system.slice".into(),
            },
        ] {
            let mut v = ok.clone();
            v.push(bad.clone());
            assert_eq!(implausible(&v).len(), 1, "{bad:?}");
        }
    }

    #[test]
    fn scratch_without_marker_is_never_removed() {
        let dir = std::env::temp_dir().join(format!("wblab-scratch-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("data"), "x").unwrap();
        assert!(remove_scratch(&dir).is_err());
        assert!(dir.join("data").exists());
        std::fs::write(dir.join(SCRATCH_MARKER), "").unwrap();
        remove_scratch(&dir).unwrap();
        assert!(!dir.exists());
    }
}
