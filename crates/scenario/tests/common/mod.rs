//! Helpers shared by the tests that run the shipped scenarios in a short form.
#![allow(dead_code)]

use std::path::Path;
use wblab_sim::metrics::RunResult;

/// The kernels of `scenarios/<file>` that `keep` accepts, each run for `secs` simulated seconds
/// without the writeback trace.
pub fn run_shipped(file: &str, secs: u64, keep: impl Fn(&str) -> bool) -> Vec<RunResult> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
    let all = wblab_scenario::load_all(&path).unwrap_or_else(|e| panic!("{e}"));
    all.into_iter()
        .filter(|sc| keep(&sc.kernel))
        .map(|mut sc| {
            sc.duration = secs * 1_000_000_000;
            sc.trace.writeback = false;
            wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
        })
        .collect()
}

pub use wblab_testkit::sim::max_pause;
