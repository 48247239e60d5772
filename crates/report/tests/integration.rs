//! Every integration test of the report in one binary: one build, one link and one process
//! for all of them instead of one each, so their tests also run side by side (each file is
//! a module; `cargo test -p <crate> --test integration <file>::` runs one file's).

#[path = "btt.rs"]
mod btt;
#[path = "ftrace_format.rs"]
mod ftrace_format;
#[path = "hostile_results.rs"]
mod hostile_results;
#[path = "report_figures.rs"]
mod report_figures;
#[path = "results_dir.rs"]
mod results_dir;
#[path = "stem_r.rs"]
mod stem_r;
#[path = "verdict.rs"]
mod verdict;

/// Cargo does not look for test files here (`autotests = false`): each must be listed above.
#[test]
fn every_test_file_is_in_this_binary() {
    wblab_testkit::suite::assert_every_test_file_is_in_the_binary(env!("CARGO_MANIFEST_DIR"));
}
