//! The machine's `/proc` and `/sys` as files under a root: `/` for this machine, a directory
//! of copied files (a fixture, another machine's) otherwise. Every read is bounded and every
//! failure is an absence, since files vanish while devices and cgroups come and go.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most of one file read: sysfs and procfs attributes are a page; `/proc/mounts` and a
/// pasted `sysctl -a` are longer but not megabytes.
const MAX_FILE_BYTES: u64 = 1 << 20;
/// The most entries one directory listing returns (a cgroup tree of a busy host has
/// thousands; the snapshot needs the first ones).
const MAX_DIR_ENTRIES: usize = 4096;

/// Files read relative to a root directory.
#[derive(Clone, Debug)]
pub struct Root {
    dir: PathBuf,
    /// The root resolved, to keep a copied tree's links from reading outside it.
    canonical: Option<PathBuf>,
    /// Every file read and link followed, for [`Root::save`]: the copy another machine's
    /// snapshot is taken from.
    seen: RefCell<BTreeMap<String, Seen>>,
}

#[derive(Clone, Debug)]
enum Seen {
    File(String),
    Link(String),
}

impl Root {
    pub fn new(dir: &Path) -> Root {
        Root {
            dir: dir.to_path_buf(),
            canonical: std::fs::canonicalize(dir).ok(),
            seen: RefCell::default(),
        }
    }

    /// Whether this is the live machine (`/`).
    pub fn is_live(&self) -> bool {
        self.dir == Path::new("/")
    }

    /// `rel` (an absolute path such as `/proc/meminfo`) under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel.trim_start_matches('/'))
    }

    /// The text of `rel`, trimmed, or `None` if it is missing, unreadable or not text.
    pub fn read(&self, rel: &str) -> Option<String> {
        let path = self.path(rel);
        if !self.is_live() {
            // A copied tree's links must stay inside it: a fixture is data, not a way to read
            // this machine's files into a scenario.
            let inside = std::fs::canonicalize(&path).ok()?;
            if !self.canonical.as_ref().is_some_and(|c| inside.starts_with(c)) {
                return None;
            }
        }
        let f = std::fs::File::open(path).ok()?;
        let mut buf = Vec::new();
        f.take(MAX_FILE_BYTES).read_to_end(&mut buf).ok()?;
        let text = String::from_utf8(buf).ok()?.trim().to_string();
        self.seen.borrow_mut().insert(rel.to_string(), Seen::File(text.clone()));
        Some(text)
    }

    /// `rel` parsed as an unsigned integer.
    pub fn read_u64(&self, rel: &str) -> Option<u64> {
        self.read(rel)?.parse().ok()
    }

    /// The names in directory `rel`, sorted (so the snapshot does not depend on the order
    /// the file system lists them in), at most [`MAX_DIR_ENTRIES`].
    pub fn list(&self, rel: &str) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(self.path(rel)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = dir
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .take(MAX_DIR_ENTRIES)
            .collect();
        names.sort();
        names
    }

    /// Whether `rel` is a directory (not following a final symlink out of a fixture is not
    /// needed: sysfs's are links into `/sys/devices`, which a fixture copies as directories).
    pub fn is_dir(&self, rel: &str) -> bool {
        self.path(rel).is_dir()
    }

    /// Where the symlink `rel` points, as text (`../devices/pci0000:00/.../usb2/...`).
    pub fn link(&self, rel: &str) -> Option<String> {
        let target = std::fs::read_link(self.path(rel)).ok()?.to_string_lossy().into_owned();
        self.seen.borrow_mut().insert(rel.to_string(), Seen::Link(target.clone()));
        Some(target)
    }

    /// Writes every file read (and link followed) so far under `dir`, at the same paths, so
    /// that `--root dir` on any machine reads what this one did. `dir` must not exist yet or be
    /// empty: the copy is never mixed into other files.
    pub fn save(&self, dir: &Path) -> std::io::Result<usize> {
        if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} is not empty", dir.display()),
            ));
        }
        let seen = self.seen.borrow();
        // A link read (`/sys/block/sdb` → `../devices/.../usb2/.../block/sdb`) is also the
        // directory of files read through it: they are written where it points, inside the
        // copy, and the link beside them, as sysfs lays them out.
        let links: Vec<(String, String, String)> = seen
            .iter()
            .filter_map(|(rel, what)| match what {
                Seen::Link(target) => Some((rel.clone(), target.clone(), resolve(rel, target)?)),
                Seen::File(_) => None,
            })
            .collect();
        let place = |rel: &str| -> String {
            for (link, _, to) in &links {
                if let Some(rest) = rel.strip_prefix(link.as_str()).and_then(|r| r.strip_prefix('/')) {
                    return format!("{to}/{rest}");
                }
            }
            rel.to_string()
        };
        for (rel, what) in seen.iter() {
            let Seen::File(text) = what else { continue };
            let Some(path) = inside(dir, &place(rel)) else { continue };
            std::fs::create_dir_all(path.parent().unwrap_or(dir))?;
            std::fs::write(&path, format!("{text}\n"))?;
        }
        for (rel, target, to) in &links {
            let (Some(path), Some(_)) = (inside(dir, rel), inside(dir, to)) else {
                continue;
            };
            std::fs::create_dir_all(path.parent().unwrap_or(dir))?;
            if !path.exists() {
                std::os::unix::fs::symlink(target, &path)?;
            }
        }
        Ok(seen.len())
    }
}

/// `rel` under `dir`, unless it has an empty, `.` or `..` component.
fn inside(dir: &Path, rel: &str) -> Option<PathBuf> {
    let rel = rel.trim_start_matches('/');
    (!rel.is_empty() && !rel.split('/').any(|c| c.is_empty() || c == "." || c == "..")).then(|| dir.join(rel))
}

/// Where the link `rel` with the relative `target` points, as a path from the root; `None` if
/// it is absolute or climbs out of the root.
fn resolve(rel: &str, target: &str) -> Option<String> {
    if target.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = rel.trim_start_matches('/').split('/').collect();
    parts.pop();
    for c in target.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_binary_files_are_absent_not_errors() {
        let dir = std::env::temp_dir().join(format!("wblab-snapfiles-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        std::fs::write(dir.join("proc/x"), b"\xff\xfe").unwrap();
        std::fs::write(dir.join("proc/n"), " 42\n").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.join("proc/out")).unwrap();
        let r = Root::new(&dir);
        assert_eq!(r.read("/proc/x"), None);
        assert_eq!(r.read("/proc/none"), None);
        assert_eq!(r.read("/proc/out"), None, "a link out of the tree is not followed");
        assert_eq!(r.read_u64("/proc/n"), Some(42));
        assert_eq!(r.list("/proc"), vec!["n".to_string(), "out".to_string(), "x".to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
