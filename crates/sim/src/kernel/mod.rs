//! Tasks and CPUs.

pub mod cpu;
pub mod psi;
mod psi_tasks;
pub mod sched;
pub mod task;
pub mod waitqueue;
