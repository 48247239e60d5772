//! One digest of a set of files, by name and content: the build script hashes the simulator's
//! source with it, `wblab docs` the scenario and validation files, so both sides of the lock
//! (docs/generated.lock) agree on what a digest covers. Included by `#[path]` in build.rs.

use std::io;
use std::path::{Path, PathBuf};
use twox_hash::XxHash3_128;

/// Every file under `dir`, at any depth, appended to `out`; a missing directory adds none.
pub fn files_under(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            files_under(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// The digest of `files`, each given as (its name inside the repository, where to read it),
/// taken in name order so that every clone agrees: name, a NUL, the length, the bytes.
pub fn digest(mut files: Vec<(String, PathBuf)>) -> io::Result<u128> {
    files.sort();
    let mut h = XxHash3_128::with_seed(0);
    for (name, path) in &files {
        let bytes = std::fs::read(path)?;
        h.write(name.as_bytes());
        h.write(&[0]);
        h.write(&(bytes.len() as u64).to_le_bytes());
        h.write(&bytes);
    }
    Ok(h.finish_128())
}
