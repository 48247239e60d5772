//! Tasks and CPUs: the CPUs and their run queue (`cpu`), each task's turns on them (`sched`),
//! the tasks' state (`task`), the hashed page wait queues (`waitqueue`) and pressure stall
//! accounting (`psi`).

pub(crate) mod cpu;
pub(crate) mod psi;
mod psi_tasks;
pub(crate) mod sched;
pub(crate) mod task;
pub(crate) mod waitqueue;
