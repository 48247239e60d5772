//! The metadata jobs (`du`, `ls`, `launch`) for real: the directory tree each one walks, laid
//! out before the run in the task's own directory, and the walks themselves.
//!
//! The trees have the shape the model lays out (`fs/metadata.rs` of the simulator): `du`'s
//! directories of `files_per_dir` empty files and `subdirs` subdirectories each, numbered
//! breadth first and created depth first as `cp -a` would; `ls`'s `dirs` directories of
//! `entries` files; a launch's `files` files of `file_sizes` in turn, `files_per_dir` to a
//! directory, their data written with O_DIRECT. The model starts with all of it on disk and
//! none of it cached: `measure` mounts each file system holding a tree again after laying it
//! out, which empties its inode, dentry and buffer caches.
//!
//! Not as the model: where the blocks land is the real file system's choice (the trees lie
//! under the task's directory, so ext4's Orlov allocator does not spread `ls`'s directories
//! as the model's block groups do), the file system keeps the inode size its `mkfs` gave it
//! (a `du`'s `inode_size` and `inode_spacing` are the model's alone), and entries are walked in the order they were
//! made (ext4 hands them out in hash order).

use crate::workload::{prefill, sleep_until, TaskSpec};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use wblab_sim::config::JobConfig;
use wblab_sim::jobs::launch::TouchOrder;
use wblab_sim::units::PAGE_SIZE;

/// Files and directories a measurement lays out at most before its run (all trees of a
/// task): the 2007 report's `du` walked two million; ten million take the better part of an
/// hour to create.
pub const MAX_ENTRIES: u64 = 10_000_000;

/// Where a metadata job's tree lies: beside its file, `<file>.tree`.
pub fn root_of(spec: &TaskSpec) -> PathBuf {
    let mut p = spec.file.clone().into_os_string();
    p.push(".tree");
    PathBuf::from(p)
}

/// What a job's tree holds, for the plan and the log: (files, directories, data bytes).
pub fn size_of(job: &JobConfig) -> Option<(u64, u64, u64)> {
    match job {
        JobConfig::Du { files, files_per_dir, .. } => {
            let (fpd, dirs) = du_shape(*files, *files_per_dir);
            Some((dirs * fpd, dirs, 0))
        }
        JobConfig::Ls { dirs, entries, .. } => Some((u64::from(*dirs) * u64::from(*entries), u64::from(*dirs), 0)),
        JobConfig::Launch {
            files,
            files_per_dir,
            file_sizes,
            ..
        } => {
            let (n, per_dir) = launch_shape(*files, *files_per_dir);
            let bytes = (0..n).map(|i| launch_file_size(file_sizes, i)).sum();
            Some((n, n.div_ceil(per_dir), bytes))
        }
        _ => None,
    }
}

/// `du`'s tree: (files to a directory, directories), as the model shapes it.
fn du_shape(files: u64, files_per_dir: u32) -> (u64, u64) {
    let fpd = u64::from(files_per_dir.max(1));
    (fpd, files.div_ceil(fpd).max(1))
}

/// A launch's files: (how many, how many to a directory).
fn launch_shape(files: u32, files_per_dir: u32) -> (u64, u64) {
    let n = u64::from(files.max(1));
    (n, u64::from(files_per_dir.max(1)).min(n))
}

fn launch_file_size(sizes: &[u64], i: u64) -> u64 {
    if sizes.is_empty() {
        0
    } else {
        sizes[i as usize % sizes.len()]
    }
}

/// `du`'s directory `i` (breadth-first number) has these subdirectories: a complete tree of
/// `fanout` children a directory, as shallow as `dirs` allows (the model's `TreeShape`).
fn children(i: u64, fanout: u64, dirs: u64) -> std::ops::Range<u64> {
    let b = fanout.max(1);
    (b * i + 1).min(dirs)..(b * i + b + 1).min(dirs)
}

/// Lay out `spec`'s tree under [`root_of`]; `progress` hears of every 100,000 files.
pub fn lay_out(spec: &TaskSpec, progress: &mut dyn FnMut(u64)) -> io::Result<()> {
    let root = root_of(spec);
    fs::create_dir_all(&root)?;
    let mut made = 0u64;
    let mut touch = |path: &Path, made: &mut u64| -> io::Result<()> {
        File::create(path)?;
        *made += 1;
        if made.is_multiple_of(100_000) {
            progress(*made);
        }
        Ok(())
    };
    match &spec.job {
        JobConfig::Du {
            files,
            files_per_dir,
            subdirs,
            ..
        } => {
            let (fpd, dirs) = du_shape(*files, *files_per_dir);
            // Depth first from the root: a directory, its files, then each subdirectory's tree.
            let mut stack = vec![(0u64, root.join("d0"))];
            while let Some((d, path)) = stack.pop() {
                crate::guard::check()?;
                fs::create_dir(&path)?;
                for f in 0..fpd {
                    touch(&path.join(format!("f{f}")), &mut made)?;
                }
                let kids: Vec<u64> = if *subdirs == 0 {
                    // A flat sequence: the next directory beside this one.
                    if d + 1 < dirs {
                        stack.push((d + 1, root.join(format!("d{}", d + 1))));
                    }
                    Vec::new()
                } else {
                    children(d, u64::from(*subdirs), dirs).collect()
                };
                for (k, c) in kids.iter().enumerate().rev() {
                    stack.push((*c, path.join(format!("s{k}"))));
                }
            }
        }
        JobConfig::Ls { dirs, entries, .. } => {
            for d in 0..*dirs {
                let dir = root.join(format!("d{d}"));
                fs::create_dir(&dir)?;
                for e in 0..*entries {
                    touch(&dir.join(format!("f{e}")), &mut made)?;
                }
            }
        }
        JobConfig::Launch {
            files,
            files_per_dir,
            file_sizes,
            ..
        } => {
            let (n, per_dir) = launch_shape(*files, *files_per_dir);
            for i in 0..n {
                crate::guard::check()?;
                let dir = root.join(format!("d{}", i / per_dir));
                if i % per_dir == 0 {
                    fs::create_dir(&dir)?;
                }
                prefill(&dir.join(format!("f{}", i % per_dir)), launch_file_size(file_sizes, i))?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// A metadata job's walks, timed: `op` hears each operation's latency (an `lstat` for `du`,
/// the whole command for `ls` and a launch); returns the bytes read and written.
pub fn run(spec: &TaskSpec, t0: Instant, stop: &AtomicBool, op: &mut dyn FnMut(u64)) -> io::Result<(u64, u64)> {
    let root = root_of(spec);
    let now = || t0.elapsed().as_nanos() as u64;
    let (mut read, mut written) = (0u64, 0u64);
    let (interval, repeat) = match &spec.job {
        JobConfig::Du { repeat, .. } => (None, *repeat),
        JobConfig::Ls { interval, .. } | JobConfig::Launch { interval, .. } => (*interval, interval.is_some()),
        other => return Err(io::Error::other(format!("job `{}` has no tree", other.kind()))),
    };
    let mut own = None;
    loop {
        let start = now();
        let t = Instant::now();
        let completed = match &spec.job {
            JobConfig::Du { .. } => walk(&root, stop, op)?,
            JobConfig::Ls { dirs, .. } => {
                let mut all = true;
                for d in 0..*dirs {
                    all &= list(&root.join(format!("d{d}")), stop, &mut |_| {})?.is_some();
                }
                all
            }
            JobConfig::Launch { bs, mmap, writes, .. } => {
                let done = launch(&root, *bs, *mmap, stop, &mut read)?;
                if done && *writes > 0 {
                    let f = match own.as_mut() {
                        Some(f) => f,
                        None => own.insert(OpenOptions::new().create(true).append(true).open(&spec.file)?),
                    };
                    let page = vec![0x5au8; PAGE_SIZE as usize];
                    let mut left = *writes;
                    while left > 0 {
                        let n = left.min(PAGE_SIZE);
                        f.write_all(&page[..n as usize])?;
                        written += n;
                        left -= n;
                    }
                }
                done
            }
            _ => unreachable!("checked above"),
        };
        if !completed || stop.load(Ordering::SeqCst) {
            break;
        }
        if !matches!(spec.job, JobConfig::Du { .. }) {
            op(t.elapsed().as_nanos() as u64);
        }
        if !repeat {
            break;
        }
        if let Some(i) = interval {
            if !sleep_until(t0, start.saturating_add(i), stop) {
                break;
            }
        }
    }
    Ok((read, written))
}

/// `ls -l` of one directory: its entries, each `lstat`ed and timed for `lstat`. None when
/// stopped first; else the subdirectories found.
fn list(dir: &Path, stop: &AtomicBool, lstat: &mut dyn FnMut(u64)) -> io::Result<Option<Vec<PathBuf>>> {
    let mut names: Vec<PathBuf> = fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<io::Result<_>>()?;
    // ext4 hands entries out in hash order; the model visits them in inode order, the order
    // they were made in.
    names.sort_by_key(|p| entry_number(p));
    let mut subdirs = Vec::new();
    for p in names {
        if stop.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let t = Instant::now();
        let m = fs::symlink_metadata(&p)?;
        lstat(t.elapsed().as_nanos() as u64);
        if m.is_dir() {
            subdirs.push(p);
        }
    }
    Ok(Some(subdirs))
}

/// `f12` → (0, 12), `s3` → (1, 3): files before subdirectories, each in creation order.
fn entry_number(p: &Path) -> (u8, u64) {
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let class = u8::from(!name.starts_with('f'));
    (class, name.get(1..).and_then(|n| n.parse().ok()).unwrap_or(u64::MAX))
}

/// `du -s`: list a directory and `lstat` its entries, then descend (as fts does). False when
/// stopped first.
fn walk(top: &Path, stop: &AtomicBool, op: &mut dyn FnMut(u64)) -> io::Result<bool> {
    let mut stack = vec![top.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Some(subdirs) = list(&dir, stop, op)? else {
            return Ok(false);
        };
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(true)
}

/// A launch's reads: every file of every directory, whole, `bs` at a time, or (`mmap`) mapped
/// and every 4 KiB page touched once in the model's order ([`TouchOrder`]), so the kernel
/// reads them by page faults. False when stopped first.
fn launch(root: &Path, bs: u64, mmap: bool, stop: &AtomicBool, read: &mut u64) -> io::Result<bool> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root)?.map(|e| e.map(|e| e.path())).collect::<io::Result<_>>()?;
    dirs.sort_by_key(|p| entry_number(p));
    let mut buf = vec![0u8; bs.max(1) as usize];
    for d in dirs {
        let mut files: Vec<PathBuf> = fs::read_dir(&d)?.map(|e| e.map(|e| e.path())).collect::<io::Result<_>>()?;
        files.sort_by_key(|p| entry_number(p));
        for f in files {
            let mut file = File::open(&f)?;
            if mmap {
                if !fault_in(&file, stop, read)? {
                    return Ok(false);
                }
                continue;
            }
            loop {
                if stop.load(Ordering::SeqCst) {
                    return Ok(false);
                }
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                *read += n as u64;
            }
        }
    }
    Ok(true)
}

/// Map `file` read-only and touch each of its 4 KiB pages once, in the model's order. False
/// when stopped first.
fn fault_in(file: &File, stop: &AtomicBool, read: &mut u64) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(true);
    }
    // SAFETY: a fresh read-only private mapping of the whole file; it is only read through
    // volatile loads below, within `len`, and unmapped before returning.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let pages = len.div_ceil(PAGE_SIZE);
    let order = TouchOrder::new(pages);
    let mut done = true;
    for k in 0..pages {
        if stop.load(Ordering::SeqCst) {
            done = false;
            break;
        }
        let at = order.page(k) * PAGE_SIZE;
        // SAFETY: `at` < `len`, inside the mapping.
        unsafe { std::ptr::read_volatile((base as *const u8).add(at as usize)) };
        *read += PAGE_SIZE.min(len - at);
    }
    // SAFETY: the mapping made above, of `len` bytes.
    unsafe { libc::munmap(base, len as usize) };
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wblab_sim::units::KIB;

    fn spec(dir: &Path, job: JobConfig) -> TaskSpec {
        TaskSpec {
            name: "meta".into(),
            instance: 0,
            job,
            file: dir.join("meta0"),
            device: "tmp".into(),
            start: 0,
            stop: 60_000_000_000,
            seed: 1,
            ioprio: Default::default(),
            cgroup_tasks: Vec::new(),
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wblab-trees-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn count(dir: &Path) -> (u64, u64) {
        let (mut files, mut dirs) = (0, 0);
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                let (f, d) = count(&e.path());
                files += f;
                dirs += d + 1;
            } else {
                files += 1;
            }
        }
        (files, dirs)
    }

    /// du's tree holds what the model's holds, and the walk `lstat`s every entry of it once
    /// (files and subdirectories), each an operation.
    #[test]
    fn du_walks_every_entry_of_the_tree_it_laid_out() {
        let dir = scratch("du");
        let job = JobConfig::Du {
            files: 1000,
            files_per_dir: 20,
            subdirs: 4,
            inode_size: 256,
            inode_spacing: 1,
            repeat: false,
        };
        let s = spec(&dir, job.clone());
        lay_out(&s, &mut |_| {}).unwrap();
        let (files, dirs, _) = size_of(&job).unwrap();
        let (f, d) = count(&root_of(&s));
        assert_eq!((f, d), (files, dirs), "files and directories laid out");
        let mut lstats = 0u64;
        let stop = AtomicBool::new(false);
        run(&s, Instant::now(), &stop, &mut |_| lstats += 1).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        // Every file and every directory, each found by its parent's listing.
        assert_eq!(lstats, files + dirs);
    }

    /// A launch reads every byte of its files and appends its writes; ls and launch are one
    /// operation a run.
    #[test]
    fn a_launch_reads_its_files_whole_and_writes_its_settings() {
        let dir = scratch("launch");
        let job = JobConfig::Launch {
            files: 7,
            files_per_dir: 3,
            file_sizes: vec![64 * KIB, 6000],
            bs: 16 * KIB,
            mmap: false,
            writes: 10 * KIB,
            interval: None,
        };
        let s = spec(&dir, job.clone());
        lay_out(&s, &mut |_| {}).unwrap();
        let (_, _, bytes) = size_of(&job).unwrap();
        let mut ops = 0;
        let stop = AtomicBool::new(false);
        let (read, written) = run(&s, Instant::now(), &stop, &mut |_| ops += 1).unwrap();
        let own = fs::metadata(&s.file).unwrap().len();
        let mut ls = spec(
            &dir,
            JobConfig::Ls {
                dirs: 3,
                entries: 5,
                interval: None,
            },
        );
        ls.file = dir.join("ls0");
        lay_out(&ls, &mut |_| {}).unwrap();
        let mut ls_ops = 0;
        run(&ls, Instant::now(), &stop, &mut |_| ls_ops += 1).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(read, bytes, "every byte of the application's files");
        assert_eq!((written, own), (10 * KIB, 10 * KIB));
        assert_eq!((ops, ls_ops), (1, 1));
    }

    /// A mapped launch touches every page of its files once through the mapping: each touch
    /// is a page fault of the process, and every byte counts as read.
    #[test]
    fn a_mapped_launch_faults_every_page_in() {
        let dir = scratch("launch-mmap");
        let job = JobConfig::Launch {
            files: 5,
            files_per_dir: 2,
            file_sizes: vec![256 * KIB, 6000],
            bs: 16 * KIB,
            mmap: true,
            writes: 0,
            interval: None,
        };
        let s = spec(&dir, job.clone());
        lay_out(&s, &mut |_| {}).unwrap();
        let (_, _, bytes) = size_of(&job).unwrap();
        let faults = || {
            // SAFETY: getrusage fills the struct it is given.
            let mut u: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
            (u.ru_minflt + u.ru_majflt) as u64
        };
        let stop = AtomicBool::new(false);
        let before = faults();
        let (read, _) = run(&s, Instant::now(), &stop, &mut |_| {}).unwrap();
        let taken = faults() - before;
        fs::remove_dir_all(&dir).unwrap();
        let pages = 3 * (256 * KIB / PAGE_SIZE) + 2;
        assert_eq!(read, bytes, "every byte of the application's files");
        // The kernel may map a few cached neighbours in one fault (fault-around), never all.
        assert!(taken * 16 >= pages && taken > 5, "{taken} faults for {pages} pages");
    }
}
