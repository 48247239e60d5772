//! The `wblab` binary in tests: run it, give it a scratch directory, find the repository.
//!
//! The binary's path is the calling crate's `env!("CARGO_BIN_EXE_wblab")` (Cargo sets it for
//! the crate that owns the binary), so callers pass it in.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run `bin` with `args` and collect its output.
pub fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin).args(args).output().expect("wblab runs")
}

/// A fresh scratch directory `name` under `tmp` (the caller's `CARGO_TARGET_TMPDIR`), removed
/// first if a previous run left it.
pub fn scratch(tmp: &str, name: &str) -> PathBuf {
    let d = PathBuf::from(tmp).join(name);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// The repository's top directory (where `scenarios/` lives).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A shipped scenario file by name (`"default.toml"`).
pub fn shipped(file: &str) -> PathBuf {
    repo_root().join("scenarios").join(file)
}
