//! The CLI's integration tests in one binary: one build and link for all of them, and their
//! slow tests (the docs' shell blocks, the instruction-count guard, the browser's report) run
//! side by side. Each file is a module: `cargo test -p wblab --test integration <file>::` runs
//! one file's. The measurement tests (`measure.rs`, `measure_signals.rs`) are binaries of their
//! own (see the manifest).

#[path = "cli.rs"]
mod cli;
#[path = "common/mod.rs"]
mod common;
#[path = "docs.rs"]
mod docs;
#[path = "docs_shell.rs"]
mod docs_shell;
#[path = "fio_cli.rs"]
mod fio_cli;
#[path = "fuzz.rs"]
mod fuzz;
#[path = "kernels.rs"]
mod kernels;
#[path = "registries.rs"]
mod registries;
#[path = "report_cli.rs"]
mod report_cli;
#[path = "speed_guard.rs"]
mod speed_guard;
#[path = "sweep.rs"]
mod sweep;
#[path = "validate.rs"]
mod validate;

/// Cargo does not look for test files here (`autotests = false`): each must be listed above
/// or be a `[[test]]` target of the manifest.
#[test]
fn every_test_file_is_in_this_binary() {
    wblab_testkit::suite::assert_every_test_file_is_in_the_binary(env!("CARGO_MANIFEST_DIR"));
}
