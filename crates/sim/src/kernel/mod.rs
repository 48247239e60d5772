//! Tasks and CPUs.

pub mod cpu;
pub mod task;
pub mod waitqueue;
