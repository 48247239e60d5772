//! The digest of the source this binary is built from (`WBLAB_SOURCE_DIGEST`): what the
//! simulation blocks of the docs depend on besides their scenario files. `wblab docs` keeps it
//! beside each block it generates, so that a check can trust a block whose inputs have not
//! changed instead of simulating it again (docs/testing.md, "The docs").

use std::path::{Path, PathBuf};
use twox_hash::XxHash3_128;

/// The crates whose code the generated docs run, relative to this crate.
const CRATES: &[&str] = &[".", "../sim", "../scenario", "../report", "../sweep", "../probe"];

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let mut files = vec![PathBuf::from("../../Cargo.toml"), PathBuf::from("../../Cargo.lock")];
    for c in CRATES {
        let c = Path::new(c);
        files.push(c.join("Cargo.toml"));
        files_under(&c.join("src"), &mut files);
        println!("cargo:rerun-if-changed={}", c.join("src").display());
        println!("cargo:rerun-if-changed={}", c.join("Cargo.toml").display());
    }
    println!("cargo:rerun-if-changed=../../Cargo.toml");
    println!("cargo:rerun-if-changed=../../Cargo.lock");
    // Paths as they are inside the repository, in one order, so that every clone agrees.
    let mut named: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|p| (p.to_string_lossy().trim_start_matches("./").replace('\\', "/"), p))
        .collect();
    named.sort();
    let mut h = XxHash3_128::with_seed(0);
    for (name, path) in &named {
        let bytes = std::fs::read(path).unwrap_or_default();
        h.write(name.as_bytes());
        h.write(&[0]);
        h.write(&(bytes.len() as u64).to_le_bytes());
        h.write(&bytes);
    }
    println!("cargo:rustc-env=WBLAB_SOURCE_DIGEST={:032x}", h.finish_128());
}
