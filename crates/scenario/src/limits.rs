//! What a scenario may ask for at most. Each bound keeps a run's memory and time within what a
//! laptop gives in minutes; none is a limit of the kernel being modelled. The simulator keeps
//! per-task latency histograms (tens of KiB each), per-second samples and the trace in memory,
//! so tasks and simulated time are what memory grows with.

use wblab_sim::Ns;

/// Simulated time: one day. Writeback questions are answered in minutes of simulated time;
/// a longer run only grows the samples and the trace.
pub const MAX_DURATION: Ns = 24 * 3600 * 1_000_000_000;
/// Task instances in one scenario (the sum of every `[[task]]`'s `count`): 10,000 `dd` need
/// about 2 GiB today.
pub const MAX_TASKS: u64 = 10_000;
/// `[[device]]` tables in one scenario.
pub const MAX_DEVICES: usize = 256;

/// The limits as the scenario reference lists them: key, bound, why.
pub const LIMITS: &[(&str, &str, &str)] = &[
    ("duration", "24 h", "samples and traces are kept in memory"),
    (
        "count (summed over every [[task]])",
        "10,000 task instances",
        "each task keeps its own latency histograms",
    ),
    ("[[device]] tables", "256", "each device has its own queue, flusher and samples"),
];
