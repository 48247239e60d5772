//! Helpers shared by the CLI's integration tests.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run the built `wblab` with `args` and collect its output.
pub fn wblab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wblab")).args(args).output().expect("wblab runs")
}

/// A fresh scratch directory under the target dir, removed first if a previous run left it.
pub fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// The repository's top directory (where `scenarios/` lives).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
