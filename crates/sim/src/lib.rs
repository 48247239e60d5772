//! wblab-sim: a deterministic discrete-event model of the Linux writeback and block I/O path.
//!
//! The module tree mirrors the kernel's (`mm/page_writeback.rs`, `fs/fs_writeback/`,
//! `block/mq_deadline.rs`), and functions keep the kernel's names where they model a kernel
//! function, so a kernel developer can read a patch side by side with the model.
//!
//! This crate does no I/O and prints nothing: it takes a resolved [`config::Scenario`] and
//! returns [`metrics::RunResult`]. Parsing and output files live in other crates.

//! Its public face: the scenario ([`config`]), running it ([`run`], [`run_with`],
//! [`run_streaming`], or a [`machine::Machine`] stepped by hand), the results ([`metrics`]),
//! the registries of kernel generations, elevators and device models ([`generations`],
//! [`block::sched`], [`drivers`]) and [`units`]. The kernel's paths are the crate's own.

pub mod block;
pub mod config;
pub mod drivers;
pub(crate) mod engine;
pub(crate) mod fs;
pub mod generations;
pub mod jobs;
pub(crate) mod kernel;
pub(crate) mod laws;
pub mod machine;
pub mod metrics;
pub(crate) mod mm;
mod registry;
pub mod units;
pub(crate) mod workload;

pub use engine::time::Ns;
pub use engine::RngStream;
pub use kernel::cpu::CpuGauge;
pub use laws::{Law, LawViolation};

/// The model's fixed costs that tests and documents quote.
pub mod costs {
    pub use crate::fs::sync::{EXT4_FSYNC_NS, XFS_FSYNC_NS};
    pub use crate::fs::unwritten::END_IO_CONVERT_NS;
}
pub use machine::finish::{run, run_streaming, run_with};
pub use machine::{NoProgress, Progress, RunOptions};
