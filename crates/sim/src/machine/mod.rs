//! The simulated machine: owns every part of the model and drives them from one event queue.
//!
//! Parts talk through plain method calls on `Machine` (one owner, `&mut self`): no shared
//! pointers, no interior mutability. Kernel paths live in their own modules as `impl Machine`
//! blocks named after the kernel functions they model (`fs/fs_writeback/writeback.rs`,
//! `block/blk_mq.rs`, `mm/filemap.rs`). This file holds the machine's state and imports only
//! the modules that define it; where a kernel file has both state the machine owns and paths
//! on the machine, the state is its module (`fs/fs_writeback/mod.rs`: `Wb`) and the paths a
//! child of it, so that no module the machine takes state from imports `Machine`
//! (`crates/sim/tests/import_circles.rs` holds it so). Here too: boot (`boot.rs`), the event
//! loop and dispatch (`run.rs`), the periodic samples (`sample.rs`) and the results
//! (`finish.rs`).

mod boot;
pub(crate) mod event;
pub(crate) mod finish;
mod run;
mod sample;
#[cfg(test)]
mod tests;

pub use event::Event;

use crate::block::queue::{BlockQueue, Submitter};
use crate::config::Scenario;
use crate::engine::{Clock, EventQueue, RngStream};
use crate::fs::block_alloc::DevAllocator;
use crate::fs::fs_writeback::Wb;
use crate::fs::inode::Inode;
use crate::kernel::cpu::CpuPool;
use crate::kernel::task::Task;
use crate::metrics::trace::{TraceEvent, TraceRecord};
use crate::metrics::{ThrottleSample, VmstatSample};
use crate::mm::page_reporting::PageReporting;
use crate::mm::page_writeback::{DirtyThrottle, ThrottleOut, WbDomain, WbState};
use crate::mm::vmscan::Lru;
use crate::mm::vmstat::VmStat;
use crate::Ns;

/// Progress reporting for long runs.
pub trait Progress {
    fn tick(&mut self, done: Ns, total: Ns);
}

/// How a run is carried out. Not part of the scenario: a run gives the same results whatever
/// these say, unless a law breaks.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Check the laws (`crate::laws`) while running. Always on in debug and test builds.
    pub check_laws: bool,
}

// In release builds `cfg!` is false and the impl looks derivable; it is not in debug builds.
#[allow(clippy::derivable_impls)]
impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            check_laws: cfg!(debug_assertions),
        }
    }
}

/// No progress output.
pub struct NoProgress;
impl Progress for NoProgress {
    fn tick(&mut self, _done: Ns, _total: Ns) {}
}

/// A device's kernel thread (the loop worker): CPU work handed to it while it ran or waited
/// for a CPU runs in its next burst, as a worker takes its whole list.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KernelThread {
    pub pending: Ns,
    pub on_cpu: bool,
    /// Its burst waits in the run queue.
    pub queued: bool,
}

pub struct Machine {
    pub(crate) cfg: Scenario,
    /// When the run ended before `duration` (`until_done`: every task is done).
    pub(crate) run_end: Option<Ns>,
    pub(crate) clock: Clock,
    pub(crate) q: EventQueue<Event>,
    pub(crate) vm: VmStat,
    /// The frames a virtual machine's host backs, when touching others costs
    /// (`[machine] page_first_touch`, `page_first_touch_read`); `None` on a machine whose memory
    /// is all there.
    pub(crate) reporting: Option<PageReporting>,
    pub(crate) dom: WbDomain,
    /// mm side of each wb, one per device.
    pub(crate) wbs: Vec<WbState>,
    /// fs side (lists and flusher) of each wb.
    pub(crate) flushers: Vec<Wb>,
    pub(crate) queues: Vec<BlockQueue>,
    pub(crate) inodes: Vec<Inode>,
    /// Free-space allocator of each device (delayed allocation at writeback).
    pub(crate) allocs: Vec<DevAllocator>,
    pub(crate) tasks: Vec<Task>,
    pub(crate) cpus: CpuPool,
    /// The CPU each flusher entity last ran on (where its bios enter blk-mq).
    pub(crate) flusher_cpu: Vec<u16>,
    /// Each device's kernel thread: CPU work handed to it and not yet run.
    pub(crate) kthreads: Vec<KernelThread>,
    pub(crate) lru: Lru,
    pub(crate) policy: Box<dyn DirtyThrottle>,
    /// What the kernel generation adds at run time (congestion waits, pdflush, old LRU).
    pub(crate) era: crate::generations::runtime::EraState,
    pub(crate) bdp_ratelimits: Vec<u64>,
    pub(crate) ratelimit_pages: u64,
    pub(crate) tout: ThrottleOut,
    /// Tasks sleeping in `reclaim_throttle`, and pages written since the first of them slept.
    pub(crate) reclaim_waiters: Vec<u32>,
    pub(crate) reclaim_written: u64,
    pub(crate) fprop_armed: bool,
    pub(crate) vmstat: Vec<VmstatSample>,
    pub(crate) throttle: Vec<ThrottleSample>,
    /// Scratch vectors reused by the hot paths.
    pub(crate) scratch_done: Vec<u32>,
    pub(crate) scratch_ids: Vec<u32>,
    pub(crate) rng: RngStream,
    /// The hashed page wait queues.
    pub(crate) pagewait: crate::kernel::waitqueue::PageWaitTable,
    /// The hashed buffer wait queues (`bh_waitq_head`), keyed by block.
    pub(crate) bufwait: crate::kernel::waitqueue::PageWaitTable,
    /// tiotest's phase barrier and per-phase figures.
    pub(crate) tiotest: crate::workload::state::TiotestState,
    /// The run-time laws and their state.
    pub(crate) laws: crate::laws::Laws,
    /// Each device's journal, if its file system has one (`fs::jbd2`).
    pub(crate) journals: Vec<Option<crate::fs::jbd2::Journal>>,
    /// The memory cgroups, in the scenario's order (`mm::memcontrol`).
    pub(crate) memcgs: Vec<crate::mm::memcontrol::MemCgroup>,
    /// Pressure stall accounting of the system and each cgroup (`kernel::psi`).
    pub(crate) psi: crate::kernel::psi::Psi,
    /// Per second and group (0: the system, 1 + i: cgroup i), its pressure figures.
    pub(crate) pressure: Vec<crate::metrics::PressureSample>,
    /// The `[[task]]` groups, what waits for each, and how many tasks are left.
    pub(crate) groups: crate::kernel::task::TaskGroups,
}

/// Index of the first flusher in `RunResult::comms` (after "<idle>" and the tasks).
pub(crate) fn flusher_comm(m: &Machine, wb: u16) -> u32 {
    1 + m.tasks.len() as u32 + wb as u32
}

impl Machine {
    /// Index of device `dev`'s journal thread in `RunResult::comms` (after the flushers,
    /// one per journalled device).
    pub(crate) fn journal_comm(&self, dev: u16) -> u32 {
        let before = self.journals[..dev as usize].iter().filter(|j| j.is_some()).count() as u32;
        1 + self.tasks.len() as u32 + self.flushers.len() as u32 + before
    }

    /// Index of blk-throttle's dispatch worker in `RunResult::comms` (the last entry): it
    /// submits the bios the throttle released.
    pub(crate) fn throtl_comm(&self) -> u32 {
        let journals = self.journals.iter().filter(|j| j.is_some()).count() as u32;
        1 + self.tasks.len() as u32 + self.flushers.len() as u32 + journals
    }

    /// Who fires a block event of a request built by `sub`.
    pub(crate) fn submitter_comm(&self, sub: Submitter) -> u32 {
        match sub {
            Submitter::Task(t) => 1 + t,
            Submitter::Flusher(w) => flusher_comm(self, w),
            Submitter::Journal(d) => self.journal_comm(d),
        }
    }

    /// Who fires the issue of a flush first asked for by waiter `w` (a task or a journal).
    pub(crate) fn flush_waiter_comm(&self, w: u32) -> u32 {
        if w & crate::fs::jbd2::JOURNAL_WAITER != 0 {
            self.journal_comm((w & !crate::fs::jbd2::JOURNAL_WAITER) as u16)
        } else {
            1 + w
        }
    }
}

impl Machine {
    pub fn now(&self) -> Ns {
        self.q.now()
    }

    pub(crate) fn jiffies(&self) -> u64 {
        self.clock.jiffies(self.q.now())
    }

    /// Record a trace event fired by `who` on `cpu`.
    pub(crate) fn trace_ev(&mut self, who: u32, cpu: u16, ev: TraceEvent) {
        self.tout.trace.push(TraceRecord {
            t_ns: self.q.now(),
            who,
            cpu,
            ev,
        });
    }

    /// The throttling code's trace events from now on are fired by `who` on `cpu`.
    pub(crate) fn stamp_tout(&mut self, who: u32, cpu: u16) {
        self.tout.stamp = (self.q.now(), who, cpu);
    }
}
