//! The CLI's integration tests: `wblab` runs and scratch directories (see `wblab-testkit`).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Output;

/// Run the built `wblab` with `args` and collect its output.
pub fn wblab(args: &[&str]) -> Output {
    wblab_testkit::cli::run(env!("CARGO_BIN_EXE_wblab"), args)
}

/// A fresh scratch directory under the target dir, removed first if a previous run left it.
pub fn scratch(name: &str) -> PathBuf {
    wblab_testkit::cli::scratch(env!("CARGO_TARGET_TMPDIR"), name)
}

/// The repository's top directory (where `scenarios/` lives).
pub fn repo_root() -> PathBuf {
    wblab_testkit::cli::repo_root()
}
