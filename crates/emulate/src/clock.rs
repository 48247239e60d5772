//! The device model's clock: real time since the device started, in integer nanoseconds
//! like the simulator's.

use std::time::{Duration, Instant};
use wblab_sim::Ns;

#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    pub fn start() -> Clock {
        Clock { start: Instant::now() }
    }

    pub fn now(&self) -> Ns {
        self.start.elapsed().as_nanos() as Ns
    }

    /// How long from now until `t` (zero if it has passed).
    pub fn until(&self, t: Ns) -> Duration {
        Duration::from_nanos(t.saturating_sub(self.now()))
    }
}

/// Make this thread's timed sleeps end when asked: a thread's timer slack is 50 µs by
/// default, which alone would add a fifth of an SSD model's read latency to every answer.
pub fn tight_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer (nanoseconds) for the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Mark this thread as one that serves block I/O (`PR_SET_IO_FLUSHER`): its own memory
/// allocations then never wait for writeback or reclaim I/O, which could be I/O to the very
/// device it serves -- the deadlock every user-space block server must avoid. Needs
/// CAP_SYS_RESOURCE; without it the thread runs unmarked.
pub fn io_flusher() {
    const PR_SET_IO_FLUSHER: libc::c_int = 57;
    // SAFETY: a plain prctl with integer arguments for the calling thread.
    unsafe { libc::prctl(PR_SET_IO_FLUSHER, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Real-time priority (SCHED_FIFO) for the serving threads: a real disk has its own
/// processor, and the model's answers must not wait behind the workload for a CPU. They
/// sleep between requests, so the workload loses only the CPU the serving really takes.
/// The model's thread is above the threads sending answers, which are above those moving
/// data (a real-time thread is never preempted by one of its own priority). Without
/// CAP_SYS_NICE the thread keeps its priority.
pub fn real_time(role: Role) {
    let param = libc::sched_param {
        sched_priority: RT_PRIORITY + role as libc::c_int,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid struct.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}

/// Low among real-time priorities: above every normal task, below the kernel's own
/// real-time threads.
const RT_PRIORITY: libc::c_int = 10;

/// A serving thread's job, in rising priority.
#[derive(Clone, Copy, Debug)]
pub enum Role {
    /// Moving data between FUSE and the backing file.
    Data = 0,
    /// Sending answers.
    Answer = 1,
    /// Running the model.
    Model = 2,
}
