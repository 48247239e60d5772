//! Tasks and CPUs: the CPUs and their run queue (`cpu`), each task's turns on them (`sched`),
//! the tasks' state (`task`), the hashed page wait queues (`waitqueue`) and pressure stall
//! accounting (`psi`).

pub mod cpu;
pub mod psi;
mod psi_tasks;
pub mod sched;
pub mod task;
pub mod waitqueue;
