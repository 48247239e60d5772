//! The crates whose integration tests are one binary (`autotests = false` in their manifest,
//! `tests/integration.rs` taking each file as a module by `#[path]`): Cargo no longer finds
//! their test files itself, so a file left out of that list would never be compiled or run,
//! and nothing would say so. Each such binary checks its list with
//! [`assert_every_test_file_is_in_the_binary`]. A file kept as a binary of its own (a
//! `[[test]]` target of the manifest: the CLI's measurement tests, which must not run beside
//! each other on a real kernel) is in a binary too.

use std::path::Path;

/// Panics naming every test file of the crate at `manifest_dir` (a `tests/*.rs` file, or a
/// `tests/<dir>/mod.rs`) that neither its `tests/integration.rs` takes as a module nor its
/// manifest names as a `[[test]]` target's `path`.
pub fn assert_every_test_file_is_in_the_binary(manifest_dir: &str) {
    let tests = Path::new(manifest_dir).join("tests");
    let binary = tests.join("integration.rs");
    let list = std::fs::read_to_string(&binary).unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let manifest = Path::new(manifest_dir).join("Cargo.toml");
    let manifest = std::fs::read_to_string(&manifest).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&tests).unwrap_or_else(|e| panic!("{}: {e}", tests.display())) {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().expect("a file name").to_string_lossy().into_owned();
        let module = if path.is_dir() {
            if !path.join("mod.rs").is_file() {
                continue;
            }
            format!("{name}/mod.rs")
        } else if name.ends_with(".rs") && name != "integration.rs" {
            name
        } else {
            continue;
        };
        let own_target = manifest.contains(&format!("path = \"tests/{module}\""));
        if !list.contains(&format!("#[path = \"{module}\"]")) && !own_target {
            missing.push(module);
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "{}: these test files are not in the test binary, so they never run: {}\n  hint: add `#[path = \"<file>\"] mod <name>;` for each",
        binary.display(),
        missing.join(", ")
    );
}
