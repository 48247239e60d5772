//! The few raw system calls the harness needs, each wrapped once with an `io::Result`.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub fn cstring(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `ioctl(fd, req, arg)` with an integer argument.
pub fn ioctl_int(f: &File, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<libc::c_int> {
    // SAFETY: the fd is open for the lifetime of `f`; the argument is a plain integer.
    check(unsafe { libc::ioctl(f.as_raw_fd(), req as _, arg) })
}

/// `ioctl(fd, req, &arg)` with a pointer to a C struct.
pub fn ioctl_ptr<T>(f: &File, req: libc::c_ulong, arg: &T) -> io::Result<libc::c_int> {
    // SAFETY: `arg` is a valid, properly laid-out #[repr(C)] struct for this request.
    check(unsafe { libc::ioctl(f.as_raw_fd(), req as _, arg as *const T) })
}

/// `ioctl(fd, req, &mut arg)`: a request that fills a C struct.
pub fn ioctl_mut<T>(f: &File, req: libc::c_ulong, arg: &mut T) -> io::Result<libc::c_int> {
    // SAFETY: `arg` is a valid, properly laid-out #[repr(C)] struct the kernel may write.
    check(unsafe { libc::ioctl(f.as_raw_fd(), req as _, arg as *mut T) })
}

pub fn mount(source: &Path, target: &Path, fstype: &str, flags: libc::c_ulong, data: &str) -> io::Result<()> {
    let (s, t) = (cstring(source)?, cstring(target)?);
    let fs = CString::new(fstype).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "fstype"))?;
    let data = CString::new(data).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mount options"))?;
    let data_ptr = if data.as_bytes().is_empty() {
        std::ptr::null()
    } else {
        data.as_ptr().cast()
    };
    // SAFETY: all pointers are valid NUL-terminated strings or NULL.
    check(unsafe { libc::mount(s.as_ptr(), t.as_ptr(), fs.as_ptr(), flags, data_ptr) }).map(|_| ())
}

pub fn umount(target: &Path, flags: libc::c_int) -> io::Result<()> {
    let t = cstring(target)?;
    // SAFETY: valid NUL-terminated path.
    check(unsafe { libc::umount2(t.as_ptr(), flags) }).map(|_| ())
}

pub fn geteuid() -> u32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() }
}

/// `ioprio_set(IOPRIO_WHO_PROCESS, 0, ioprio)`: the calling thread's I/O priority, as
/// `ionice` sets it (glibc has no wrapper).
pub fn ioprio_set_self(ioprio: u32) -> std::io::Result<()> {
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    // SAFETY: a plain system call with integer arguments.
    let r = unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0 as libc::c_long, ioprio as libc::c_long) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

pub fn gettid() -> u32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::gettid() as u32 }
}

pub fn getpid() -> u32 {
    std::process::id()
}

pub fn kill(pid: u32, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain syscall on a pid we spawned.
    check(unsafe { libc::kill(pid as libc::pid_t, sig) }).map(|_| ())
}

/// A child's exit status and resource usage once it has exited; `None` while it runs.
pub struct Exited {
    pub status: libc::c_int,
    pub utime_ns: u64,
    pub stime_ns: u64,
}

pub fn wait4_nohang(pid: u32) -> io::Result<Option<Exited>> {
    let mut status = 0;
    // SAFETY: rusage is plain old data, zero is a valid bit pattern.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to locals.
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, libc::WNOHANG, &mut ru) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    if r == 0 {
        return Ok(None);
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Ok(Some(Exited {
        status,
        utime_ns: tv(ru.ru_utime),
        stime_ns: tv(ru.ru_stime),
    }))
}

/// Take an exclusive, non-blocking `flock` on `f`.
pub fn flock_exclusive(f: &File) -> io::Result<()> {
    // SAFETY: valid fd.
    check(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }).map(|_| ())
}

/// CLOCK_MONOTONIC in ns.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A sysfs/procfs value, trimmed.
pub fn read_trim(p: &Path) -> io::Result<String> {
    let mut s = String::new();
    File::open(p)?.read_to_string(&mut s)?;
    Ok(s.trim().to_string())
}

/// Write `v` to an existing sysfs/procfs/tracefs file in one write() (never creates it).
pub fn write_value(p: &Path, v: &str) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).open(p)?;
    f.write_all(v.as_bytes())
}

/// Append to a file that must exist (cgroup rule files take one rule per write).
pub fn append_value(p: &Path, v: &str) -> io::Result<()> {
    let mut f = OpenOptions::new().append(true).open(p)?;
    f.write_all(v.as_bytes())
}

/// fsync a directory so that a newly created entry in it is durable.
pub fn fsync_dir(p: &Path) -> io::Result<()> {
    File::open(p)?.sync_all()
}

/// The thread's comm (at most 15 bytes) for the trace.
pub fn set_thread_comm(name: &str) {
    let mut b: Vec<u8> = name.bytes().filter(|&c| c != 0).take(15).collect();
    b.push(0);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, b.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// Page-aligned heap buffer for O_DIRECT I/O (the emulated device's own).
pub use wblab_emulate::AlignedBuf;

/// An anonymous file in memory (`memfd_create`, close-on-exec): its pages are shared memory,
/// which no writeback ever sees.
pub fn memfd(name: &std::ffi::CStr) -> io::Result<File> {
    // SAFETY: a valid NUL-terminated name; the returned descriptor is ours alone.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor no one else owns.
    Ok(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)`: drop the file's clean pages.
pub fn fadvise_dontneed(f: &File) {
    // SAFETY: valid fd.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// Open flags for O_DIRECT.
pub const O_DIRECT: i32 = libc::O_DIRECT;

/// Find `name` on PATH, and in /sbin and /usr/sbin where mkfs lives.
pub fn which(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file());
    found
}

/// Mount points listed in /proc/self/mounts: (source, mount point, fs type, options).
pub fn mounts() -> Vec<(String, String, String, String)> {
    parse_mounts(&std::fs::read_to_string("/proc/self/mounts").unwrap_or_default())
}

/// One line of `/proc/mounts`: (source, mount point, fs type, options).
pub type MountLine = (String, String, String, String);

/// The lines of a `/proc/mounts` text.
pub fn parse_mounts(text: &str) -> Vec<MountLine> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split(' ');
            Some((
                unescape_mount(it.next()?),
                unescape_mount(it.next()?),
                it.next()?.to_string(),
                it.next()?.to_string(),
            ))
        })
        .collect()
}

/// /proc/mounts escapes blanks, tabs, newlines and backslashes as `\ooo`.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `p` as the mount table names it: its canonical path (`.`, `..` and links resolved), so
/// that `a/mnt/..` is found mounted where `a` is.
fn canonical(p: &Path) -> Option<std::path::PathBuf> {
    std::fs::canonicalize(p).ok()
}

/// Whether something is mounted on `p` (compared as canonical paths, never as text).
pub fn is_mount_point(p: &Path) -> bool {
    let Some(c) = canonical(p) else { return false };
    mounts().iter().any(|(_, m, _, _)| Path::new(m) == c)
}

/// Mount points at or below `dir` (compared as canonical paths).
pub fn mounts_under(dir: &Path) -> Vec<String> {
    let Some(d) = canonical(dir) else { return Vec::new() };
    mounts()
        .into_iter()
        .map(|(_, m, _, _)| m)
        .filter(|m| Path::new(m).starts_with(&d))
        .collect()
}

/// Write this process's pid to the cgroup file `file` (`tasks` or `cgroup.procs`) with no
/// allocation: safe between fork and exec.
pub fn join_cgroup_raw(file: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: open/write/close on a NUL-terminated path and a stack buffer.
    unsafe {
        let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = [0u8; 20];
        let mut n = libc::getpid() as u64;
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let len = buf.len() - i;
        let r = libc::write(fd, buf[i..].as_ptr().cast(), len);
        libc::close(fd);
        if r != len as isize {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_escapes() {
        assert_eq!(unescape_mount("/a\\040b"), "/a b");
        assert_eq!(unescape_mount("/plain"), "/plain");
        assert_eq!(unescape_mount("/x\\134"), "/x\\");
    }
}
