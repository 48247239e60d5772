//! Backing files, mkfs and mounts — always inside the run's scratch directory.

use crate::journal::{Entry, Journal};
use crate::sys;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Create a backing file of `size` bytes (allocated, so the loop's writes never fail for
/// lack of space). Refuses an existing file.
pub fn make_backing(path: &Path, size: u64) -> io::Result<()> {
    let f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    // SAFETY: valid fd; fallocate(2) with mode 0 allocates blocks.
    let r = unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(&f), 0, 0, size as libc::off_t) };
    if r < 0 {
        f.set_len(size)?;
    }
    f.sync_all()
}

/// The mkfs program and arguments for a `fs` on the backing *file* `target`, made before it
/// is attached so that the fresh bdi never sees mkfs's writes. ext4 initialises its inode
/// tables and journal now rather than lazily: the background `ext4lazyinit` thread would
/// otherwise write through the throttled device during the measurement. `journal_size`
/// (bytes, ext3/4) becomes `-J size=` in MiB. With `lazy_inode_tables` (an emulated ext4
/// device, mounted with `noinit_itable`) the inode tables are left for the kernel to treat as
/// zeroed: initialising them would allocate about 1/64 of the device on the scratch file
/// system (64 GiB for a 4 TB disk), and the mount option keeps `ext4lazyinit` from writing them
/// through the device's model during the measurement.
pub fn mkfs_command(
    fs: &str,
    target: &Path,
    journal_size: Option<u64>,
    fast_commit: bool,
    lazy_inode_tables: bool,
) -> io::Result<(&'static str, Vec<String>)> {
    let init = if lazy_inode_tables && fs == "ext4" {
        "lazy_itable_init=1,lazy_journal_init=0"
    } else {
        "lazy_itable_init=0,lazy_journal_init=0"
    };
    let (tool, mut args): (&'static str, Vec<String>) = match fs {
        "ext4" | "ext3" | "ext2" => (
            match fs {
                "ext4" => "mkfs.ext4",
                "ext3" => "mkfs.ext3",
                _ => "mkfs.ext2",
            },
            ["-F", "-q", "-E", init].map(String::from).to_vec(),
        ),
        "xfs" => ("mkfs.xfs", ["-f", "-q"].map(String::from).to_vec()),
        "btrfs" => ("mkfs.btrfs", ["-f", "-q"].map(String::from).to_vec()),
        other => {
            return Err(io::Error::other(format!(
                "file system `{other}` is not supported by wblab measure (ext2/3/4, xfs, btrfs)"
            )))
        }
    };
    if fast_commit {
        if fs != "ext4" {
            return Err(io::Error::other(format!("fast_commit is an ext4 feature, not {fs}'s")));
        }
        args.extend(["-O".to_string(), "fast_commit".to_string()]);
    }
    if let Some(b) = journal_size {
        if !fs.starts_with("ext") {
            return Err(io::Error::other(format!("a journal size is only taken by ext3/ext4, not {fs}")));
        }
        args.extend(["-J".to_string(), format!("size={}", b >> 20)]);
    }
    // `--`: the target is never read as an option, whatever its name.
    args.push("--".into());
    args.push(target.display().to_string());
    Ok((tool, args))
}

/// Run [`mkfs_command`].
pub fn mkfs(fs: &str, target: &Path, journal_size: Option<u64>, fast_commit: bool, lazy_inode_tables: bool) -> io::Result<()> {
    let (tool, args) = mkfs_command(fs, target, journal_size, fast_commit, lazy_inode_tables)?;
    let exe = sys::which(tool).ok_or_else(|| {
        io::Error::other(format!(
            "{tool} is not installed: cannot make a {fs} file system (scripts/setup-measure installs the mkfs tools)"
        ))
    })?;
    let out = Command::new(exe).args(args).stdin(Stdio::null()).output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{tool} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Mount `source` (a block device or "tracefs") on `target` with the scenario's `mount`
/// options, journaled first. The VFS flags (`noatime`, `relatime`, `strictatime`) become
/// mount(2) flags; the rest go to the file system as its data string.
pub fn mount(j: &mut Journal, source: &Path, target: &Path, fstype: &str, options: &str) -> io::Result<()> {
    j.record(Entry::Mount {
        path: target.to_path_buf(),
    })?;
    let (flags, data) = split_options(options);
    sys::mount(source, target, fstype, flags, &data).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("mount -o '{options}' {} on {}: {e}", source.display(), target.display()),
        )
    })
}

/// Split a mount option string into mount(2) flags and the file system's own options.
pub fn split_options(options: &str) -> (libc::c_ulong, String) {
    let mut flags = 0;
    let mut data = Vec::new();
    for o in options.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        match o {
            "noatime" => flags |= libc::MS_NOATIME,
            "relatime" => flags |= libc::MS_RELATIME,
            "strictatime" => flags |= libc::MS_STRICTATIME,
            _ => data.push(o),
        }
    }
    (flags, data.join(","))
}

/// Unmount `path` if something is mounted there; retry while busy, then detach lazily.
pub fn unmount(path: &Path) -> io::Result<()> {
    for _ in 0..50 {
        if !sys::is_mount_point(path) {
            return Ok(());
        }
        match sys::umount(path, 0) {
            Ok(()) => continue,
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    sys::umount(path, libc::MNT_DETACH)
}
