//! wblab-sim: a deterministic discrete-event model of the Linux writeback and block I/O path.
//!
//! The module tree mirrors the kernel's (`mm/page_writeback.rs`, `fs/fs_writeback/`,
//! `block/mq_deadline.rs`), and functions keep the kernel's names where they model a kernel
//! function, so a kernel developer can read a patch side by side with the model.
//!
//! This crate does no I/O and prints nothing: it takes a resolved [`config::Scenario`] and
//! returns [`metrics::RunResult`]. Parsing and output files live in other crates.

pub mod block;
pub mod config;
pub mod drivers;
pub mod engine;
pub mod fs;
pub mod generations;
pub mod kernel;
pub mod laws;
pub mod machine;
pub mod metrics;
pub mod mm;
pub mod units;
pub mod workload;

pub use engine::time::Ns;
pub use laws::LawViolation;
pub use machine::finish::{run, run_streaming, run_with};
pub use machine::{NoProgress, Progress, RunOptions};
