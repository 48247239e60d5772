//! Fresh loop devices through `/dev/loop-control`.
//!
//! `LOOP_CTL_ADD` with an index nobody uses makes a new gendisk and so a new bdi, whose
//! writeback state starts clean (`write_bw = dirty_ratelimit = INIT_BW` = 100 MiB/s); reusing
//! loop0–7 would inherit the bandwidth estimates of whatever ran there before. The device is
//! bound to its backing file with `LOOP_CONFIGURE` and `LO_FLAGS_DIRECT_IO` (as
//! `losetup --direct-io=on`), so the backing file system caches nothing twice.

use crate::journal::{Entry, Journal};
use crate::sys;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

// include/uapi/linux/loop.h
const LOOP_SET_FD: libc::c_ulong = 0x4C00;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;
const LOOP_SET_DIRECT_IO: libc::c_ulong = 0x4C08;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CTL_ADD: libc::c_ulong = 0x4C80;
const LOOP_CTL_REMOVE: libc::c_ulong = 0x4C81;
const LO_FLAGS_DIRECT_IO: u32 = 16;
const LO_NAME_SIZE: usize = 64;

#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; LO_NAME_SIZE],
    lo_crypt_name: [u8; LO_NAME_SIZE],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// First index tried: far above the pre-created loop0–7 and what losetup hands out.
pub const FIRST_INDEX: u32 = 64;

#[derive(Clone, Debug)]
pub struct LoopDev {
    pub index: u32,
    pub major: u32,
    pub minor: u32,
}

impl LoopDev {
    pub fn name(&self) -> String {
        format!("loop{}", self.index)
    }
    pub fn dev_path(&self) -> PathBuf {
        PathBuf::from(format!("/dev/loop{}", self.index))
    }
    pub fn devnum(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }
}

fn control() -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/loop-control")
        .map_err(|e| io::Error::new(e.kind(), format!("/dev/loop-control: {e}")))
}

/// Create a loop device with an index that did not exist before; journal it at once.
pub fn add_fresh(j: &mut Journal) -> io::Result<LoopDev> {
    let ctl = control()?;
    for index in FIRST_INDEX..FIRST_INDEX + 1024 {
        if Path::new(&format!("/sys/block/loop{index}")).exists() {
            continue;
        }
        match sys::ioctl_int(&ctl, LOOP_CTL_ADD, index as libc::c_ulong) {
            Ok(n) => {
                let index = n as u32;
                j.record(Entry::LoopDevice { index })?;
                let dev = sys::read_trim(Path::new(&format!("/sys/block/loop{index}/dev")))?;
                let (ma, mi) = dev
                    .split_once(':')
                    .ok_or_else(|| io::Error::other(format!("odd device number {dev}")))?;
                let node = PathBuf::from(format!("/dev/loop{index}"));
                // devtmpfs creates the node; give it a moment.
                for _ in 0..100 {
                    if node.exists() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                if !node.exists() {
                    return Err(io::Error::other(format!("{} did not appear (no devtmpfs?)", node.display())));
                }
                return Ok(LoopDev {
                    index,
                    major: ma.parse().map_err(io::Error::other)?,
                    minor: mi.parse().map_err(io::Error::other)?,
                });
            }
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("LOOP_CTL_ADD {index}: {e}"))),
        }
    }
    Err(io::Error::other("no free loop index in 64..1088"))
}

/// Bind `dev` to `backing` with direct I/O. Journaled before binding, so a crash right after
/// still detaches.
pub fn attach(j: &mut Journal, dev: &LoopDev, backing: &Path) -> io::Result<bool> {
    j.record(Entry::LoopBinding {
        index: dev.index,
        backing: backing.to_path_buf(),
    })?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(sys::O_DIRECT)
        .open(backing)
        .or_else(|_| OpenOptions::new().read(true).write(true).open(backing))?;
    let loopf = OpenOptions::new().read(true).write(true).open(dev.dev_path())?;
    let mut info = LoopInfo64 {
        lo_device: 0,
        lo_inode: 0,
        lo_rdevice: 0,
        lo_offset: 0,
        lo_sizelimit: 0,
        lo_number: 0,
        lo_encrypt_type: 0,
        lo_encrypt_key_size: 0,
        lo_flags: LO_FLAGS_DIRECT_IO,
        lo_file_name: [0; LO_NAME_SIZE],
        lo_crypt_name: [0; LO_NAME_SIZE],
        lo_encrypt_key: [0; 32],
        lo_init: [0; 2],
    };
    let name = backing.to_string_lossy();
    for (d, s) in info.lo_file_name.iter_mut().zip(name.bytes().take(LO_NAME_SIZE - 1)) {
        *d = s;
    }
    let cfg = LoopConfig {
        fd: std::os::fd::AsRawFd::as_raw_fd(&file) as u32,
        block_size: 0,
        info,
        reserved: [0; 8],
    };
    if let Err(e) = sys::ioctl_ptr(&loopf, LOOP_CONFIGURE, &cfg) {
        if e.raw_os_error() != Some(libc::EINVAL) && e.raw_os_error() != Some(libc::ENOTTY) {
            return Err(io::Error::new(
                e.kind(),
                format!("LOOP_CONFIGURE {}: {e}", dev.dev_path().display()),
            ));
        }
        // Kernels before 5.8: bind, then ask for direct I/O.
        sys::ioctl_int(&loopf, LOOP_SET_FD, cfg.fd as libc::c_ulong)?;
        let _ = sys::ioctl_int(&loopf, LOOP_SET_DIRECT_IO, 1);
    }
    let dio = sys::read_trim(Path::new(&format!("/sys/block/{}/loop/dio", dev.name()))).unwrap_or_default() == "1";
    Ok(dio)
}

/// The file a loop device is bound to (None if unbound).
pub fn backing_file(index: u32) -> Option<String> {
    sys::read_trim(Path::new(&format!("/sys/block/loop{index}/loop/backing_file"))).ok()
}

/// Unbind loop `index` if it is bound to `backing` (never someone else's binding).
pub fn detach(index: u32, backing: &Path) -> io::Result<()> {
    let Some(bound) = backing_file(index) else { return Ok(()) };
    // The sysfs path may carry " (deleted)" once the file is unlinked.
    let want = backing.to_string_lossy();
    if bound.trim_end_matches(" (deleted)") != want {
        return Err(io::Error::other(format!(
            "loop{index} is bound to {bound}, not to our {want}: left alone"
        )));
    }
    let f = match OpenOptions::new().read(true).open(format!("/dev/loop{index}")) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut last = None;
    for _ in 0..50 {
        match sys::ioctl_int(&f, LOOP_CLR_FD, 0) {
            Ok(_) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                last = Some(e);
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("busy")))
}

/// The device (major, minor) of the file loop `index` is bound to; None when unbound.
pub fn backing_device(index: u32) -> Option<(u32, u32)> {
    let f = OpenOptions::new().read(true).open(format!("/dev/loop{index}")).ok()?;
    // SAFETY: LoopInfo64 is plain data, all zeroes a valid value.
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    sys::ioctl_mut(&f, LOOP_GET_STATUS64, &mut info).ok()?;
    let dev = info.lo_device as libc::dev_t;
    Some((libc::major(dev), libc::minor(dev)))
}

/// Remove loop `index` (created by us) once it is unbound. One still bound to an emulated
/// device's file whose server is gone (the file system on it lazily unmounted, its I/O
/// waiting on nobody) is freed by aborting that FUSE connection: identified through our own
/// loop device, it is ours.
pub fn remove(index: u32) -> io::Result<()> {
    if !Path::new(&format!("/sys/block/loop{index}")).exists() {
        return Ok(());
    }
    if backing_file(index).is_some() {
        // Major 0: an anonymous device, which a FUSE file system's is.
        if let Some((0, conn)) = backing_device(index) {
            crate::fusectl::abort(&[conn]);
            for _ in 0..100 {
                if backing_file(index).is_none() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    if let Some(b) = backing_file(index) {
        return Err(io::Error::other(format!("loop{index} is still bound to {b}")));
    }
    let ctl = control()?;
    let mut last = None;
    // Unbinding finishes asynchronously (`__loop_clr_fd` runs on the last close).
    for _ in 0..50 {
        match sys::ioctl_int(&ctl, LOOP_CTL_REMOVE, index as libc::c_ulong) {
            Ok(_) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) || e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                last = Some(e);
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("busy")))
}

/// Loop devices bound to a file under `dir` (for leak checks).
pub fn bound_under(dir: &Path) -> Vec<String> {
    let d = dir.to_string_lossy().to_string();
    let Ok(rd) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let idx: u32 = name.strip_prefix("loop")?.parse().ok()?;
            let b = backing_file(idx)?;
            b.starts_with(&d).then_some(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uapi_struct_sizes() {
        // sizeof(struct loop_info64) = 232, sizeof(struct loop_config) = 304 on every arch.
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
        assert_eq!(std::mem::size_of::<LoopConfig>(), 304);
    }
}
