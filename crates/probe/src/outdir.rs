//! The results directory of a measurement, which runs as root: reached without following a
//! symbolic link at any component of its path (each is opened with `O_NOFOLLOW` relative to
//! the one before, made where missing), and each file written into it made new — any entry
//! of that name is unlinked first and the file created with `O_EXCL | O_NOFOLLOW` — so that
//! whoever can write to the directory or its parents cannot point root's writes elsewhere.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

pub struct OutDir {
    dir: File,
    path: PathBuf,
}

fn c_name(name: &std::ffi::OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))
}

/// `openat(dir, name, O_DIRECTORY | O_NOFOLLOW)`.
fn open_dir_at(dir: &File, name: &CString) -> io::Result<File> {
    // SAFETY: a valid directory fd and NUL-terminated name; the new fd is owned by the File.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { File::from_raw_fd(fd) })
}

impl OutDir {
    /// Reach (or make) `path` as a results directory: refused if a component is a symbolic
    /// link or not a directory, or if it already holds something other than a previous
    /// results directory. Errors are sentences naming the path.
    pub fn prepare(path: &Path) -> Result<OutDir, String> {
        let shown = path.display();
        let mut dir = File::open(if path.is_absolute() { "/" } else { "." }).map_err(|e| format!("{shown}: {e}"))?;
        let mut walked = PathBuf::new();
        for c in path.components() {
            let name = match c {
                Component::RootDir => {
                    walked.push("/");
                    continue;
                }
                Component::CurDir | Component::Prefix(_) => continue,
                Component::ParentDir => std::ffi::OsStr::new(".."),
                Component::Normal(n) => n,
            };
            walked.push(name);
            let cname = c_name(name).map_err(|e| format!("{shown}: {e}"))?;
            if matches!(c, Component::Normal(_)) {
                // SAFETY: valid fd and name.
                let r = unsafe { libc::mkdirat(dir.as_raw_fd(), cname.as_ptr(), 0o755) };
                if r < 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(format!("cannot make {}: {e}", walked.display()));
                    }
                }
            }
            // With O_DIRECTORY a link fails as ENOTDIR: the message tells which it was (the
            // refusal itself did not depend on it).
            let is_link = || std::fs::symlink_metadata(&walked).is_ok_and(|m| m.file_type().is_symlink());
            dir = open_dir_at(&dir, &cname).map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP | libc::ENOTDIR) if is_link() => format!(
                    "{} is a symbolic link: wblab measure runs as root and writes its results only through real \
                     directories; give the path the link points to",
                    walked.display()
                ),
                Some(libc::ENOTDIR) => format!("{} is not a directory", walked.display()),
                _ => format!("{}: {e}", walked.display()),
            })?;
        }
        let out = OutDir {
            dir,
            path: path.to_path_buf(),
        };
        out.check_contents()?;
        Ok(out)
    }

    /// Empty, a previous results directory (it holds summary.json as a regular file), or what
    /// a measurement that failed left (its record of changes).
    fn check_contents(&self) -> Result<(), String> {
        let listing = PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_raw_fd()));
        let names: Vec<String> = std::fs::read_dir(&listing)
            .map_err(|e| format!("{}: {e}", self.path.display()))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let summary_is_a_file = std::fs::symlink_metadata(listing.join(wblab_report::SUMMARY_FILE)).is_ok_and(|m| m.is_file());
        let failed_run = names
            .iter()
            .all(|n| n == crate::leaks::CHANGES_FILE || n == crate::measure::MACHINE_FILE);
        if names.is_empty() || summary_is_a_file || failed_run {
            return Ok(());
        }
        Err(format!(
            "{} already holds other data ({}): give an empty or new directory",
            self.path.display(),
            names.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new file `name` in the directory, replacing any entry of that name (a file, a link):
    /// what is written lands in a file of its own, never through a link.
    pub fn create(&self, name: &str) -> io::Result<File> {
        if name.contains('/') || name == ".." || name == "." || name.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("`{name}` is not a file name")));
        }
        let cname = c_name(std::ffi::OsStr::new(name))?;
        // SAFETY: valid fd and name.
        if unsafe { libc::unlinkat(self.dir.as_raw_fd(), cname.as_ptr(), 0) } < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ENOENT) {
                return Err(io::Error::new(e.kind(), format!("{}: {e}", self.path.join(name).display())));
            }
        }
        // SAFETY: valid fd and name; the new fd is owned by the File.
        let fd = unsafe {
            libc::openat(
                self.dir.as_raw_fd(),
                cname.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o644 as libc::c_uint,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("{}: {e}", self.path.join(name).display())));
        }
        // SAFETY: fd is a fresh descriptor we own.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// [`OutDir::create`] `name` with `bytes`.
    pub fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.create(name)?.write_all(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wblab-outdir-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn results_are_never_written_through_a_link() {
        let d = tmp("links");
        let victim = d.join("victim");
        std::fs::write(&victim, "ORIGINAL").unwrap();
        let out = d.join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join(wblab_report::SUMMARY_FILE), "{}").unwrap();
        std::os::unix::fs::symlink(&victim, out.join("timeseries.csv")).unwrap();
        std::fs::hard_link(&victim, out.join("trace.txt")).unwrap();
        let o = OutDir::prepare(&out).unwrap();
        o.write("timeseries.csv", b"t_s\n").unwrap();
        o.write("trace.txt", b"# tracer: nop\n").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "ORIGINAL");
        assert_eq!(std::fs::read_to_string(out.join("timeseries.csv")).unwrap(), "t_s\n");
        assert!(!std::fs::symlink_metadata(out.join("timeseries.csv"))
            .unwrap()
            .file_type()
            .is_symlink());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_link_anywhere_on_the_path_is_refused() {
        let d = tmp("path");
        let real = d.join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, d.join("link")).unwrap();
        let e = OutDir::prepare(&d.join("link").join("out")).err().unwrap();
        assert!(e.contains("is a symbolic link"), "{e}");
        assert!(!real.join("out").exists(), "nothing was made through the link");
        std::os::unix::fs::symlink(&real, d.join("last")).unwrap();
        assert!(OutDir::prepare(&d.join("last")).err().unwrap().contains("symbolic link"));
        // Missing parents are made; a file where a directory should be is named.
        let made = d.join("a").join("b");
        assert!(OutDir::prepare(&made).is_ok() && made.is_dir());
        std::fs::write(d.join("f"), "").unwrap();
        assert!(OutDir::prepare(&d.join("f").join("x")).err().unwrap().contains("not a directory"));
        // Other data is not overwritten.
        std::fs::write(real.join("notes.txt"), "mine").unwrap();
        assert!(OutDir::prepare(&real).err().unwrap().contains("already holds other data"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
