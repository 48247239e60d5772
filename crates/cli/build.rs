//! The digest of the source this binary is built from (`WBLAB_SOURCE_DIGEST`): what the
//! simulation blocks of the docs depend on besides their scenario files. `wblab docs` keeps it
//! beside each block it generates, so that a check can trust a block whose inputs have not
//! changed instead of simulating it again (docs/testing.md, "The docs").

#[path = "src/docs/file_digest.rs"]
mod file_digest;

use std::path::{Path, PathBuf};

/// The crates whose code the generated docs run, relative to this crate.
const CRATES: &[&str] = &[".", "../sim", "../scenario", "../report", "../sweep", "../probe"];

fn main() {
    let mut files = vec![PathBuf::from("../../Cargo.toml"), PathBuf::from("../../Cargo.lock")];
    for c in CRATES {
        let c = Path::new(c);
        files.push(c.join("Cargo.toml"));
        file_digest::files_under(&c.join("src"), &mut files).expect("listing the source to digest it");
        println!("cargo:rerun-if-changed={}", c.join("src").display());
        println!("cargo:rerun-if-changed={}", c.join("Cargo.toml").display());
    }
    println!("cargo:rerun-if-changed=../../Cargo.toml");
    println!("cargo:rerun-if-changed=../../Cargo.lock");
    // Paths as they are inside the repository, so that every clone agrees.
    let named = files
        .into_iter()
        .map(|p| (p.to_string_lossy().trim_start_matches("./").replace('\\', "/"), p))
        .collect();
    let digest = file_digest::digest(named).expect("reading the source to digest it");
    println!("cargo:rustc-env=WBLAB_SOURCE_DIGEST={digest:032x}");
}
