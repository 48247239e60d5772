//! Every integration test of the scenario files in one binary: one build, one link and one process
//! for all of them instead of one each, so their tests also run side by side (each file is
//! a module; `cargo test -p <crate> --test integration <file>::` runs one file's).

#[path = "bad.rs"]
mod bad;
#[path = "common/mod.rs"]
mod common;
#[path = "devices_2011.rs"]
mod devices_2011;
#[path = "durability_fio.rs"]
mod durability_fio;
#[path = "fio_jobs.rs"]
mod fio_jobs;
#[path = "fuzz_corpus.rs"]
mod fuzz_corpus;
#[path = "generations.rs"]
mod generations;
#[path = "good.rs"]
mod good;
#[path = "historical.rs"]
mod historical;
#[path = "horror_2002.rs"]
mod horror_2002;
#[path = "hostile.rs"]
mod hostile;
#[path = "no_panic.rs"]
mod no_panic;
#[path = "pressure.rs"]
mod pressure;
#[path = "repro.rs"]
mod repro;
#[path = "sweep_points.rs"]
mod sweep_points;
#[path = "tiotest_2004.rs"]
mod tiotest_2004;
#[path = "writeout_2002.rs"]
mod writeout_2002;

/// Cargo does not look for test files here (`autotests = false`): each must be listed above.
#[test]
fn every_test_file_is_in_this_binary() {
    wblab_testkit::suite::assert_every_test_file_is_in_the_binary(env!("CARGO_MANIFEST_DIR"));
}
