//! Every integration test of the real-kernel harness in one binary: one build, one link and one process
//! for all of them instead of one each, so their tests also run side by side (each file is
//! a module; `cargo test -p <crate> --test integration <file>::` runs one file's).

#[path = "emulated.rs"]
mod emulated;
#[path = "emulated_plan.rs"]
mod emulated_plan;
#[path = "fio_render.rs"]
mod fio_render;
#[path = "hostile_plans.rs"]
mod hostile_plans;
#[path = "real_kernel.rs"]
mod real_kernel;
#[path = "snapshot.rs"]
mod snapshot;

/// Cargo does not look for test files here (`autotests = false`): each must be listed above.
#[test]
fn every_test_file_is_in_this_binary() {
    wblab_testkit::suite::assert_every_test_file_is_in_the_binary(env!("CARGO_MANIFEST_DIR"));
}
