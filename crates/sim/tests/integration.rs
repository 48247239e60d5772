//! Every integration test of the simulator in one binary: one build, one link and one process
//! for all of them instead of one each, so their tests also run side by side (each file is
//! a module; `cargo test -p <crate> --test integration <file>::` runs one file's).

#[path = "cgroups.rs"]
mod cgroups;
#[path = "cpu_load.rs"]
mod cpu_load;
#[path = "devices.rs"]
mod devices;
#[path = "durability.rs"]
mod durability;
#[path = "generations.rs"]
mod generations;
#[path = "import_circles.rs"]
mod import_circles;
#[path = "invariants.rs"]
mod invariants;
#[path = "journal.rs"]
mod journal;
#[path = "launch.rs"]
mod launch;
#[path = "memory.rs"]
mod memory;
#[path = "realkernel_throttle.rs"]
mod realkernel_throttle;
#[path = "realkernel_v2.rs"]
mod realkernel_v2;
#[path = "schedulers.rs"]
mod schedulers;
#[path = "throttling.rs"]
mod throttling;

/// Cargo does not look for test files here (`autotests = false`): each must be listed above.
#[test]
fn every_test_file_is_in_this_binary() {
    wblab_testkit::suite::assert_every_test_file_is_in_the_binary(env!("CARGO_MANIFEST_DIR"));
}
