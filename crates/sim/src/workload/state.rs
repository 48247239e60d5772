//! Per-task state of jobs and system calls as plain data; the logic that moves it on is in
//! the job's module (`tiotest.rs`, `fs/sync.rs`). Kept apart so that the task type does not
//! depend on the machine.

use crate::metrics::tiotest::TiotestPhase;
use crate::Ns;

/// The phases, in tiotest's order and naming.
pub(crate) const PHASES: [&str; 4] = ["Write", "Random Write", "Read", "Random Read"];

/// A thread's place in the test.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TioTask {
    pub phase: u8,
    /// Bytes (sequential phases) or operations (random phases) issued in this phase.
    pub done: u64,
    /// A random write's offset, kept while the thread waits for the page lock.
    pub pending_off: Option<u64>,
    /// The thread's `fsync()` at the end of a write phase has run.
    pub synced: bool,
}

/// The barrier and the per-phase accounting of all tiotest threads of a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct TiotestState {
    pub threads: u32,
    pub phase: u8,
    pub finished: u32,
    pub waiting: Vec<u32>,
    pub phase_start: Ns,
    /// Totals at the phase start: usr, sys, wait_on_page_bit, lock_page, wait_on_buffer,
    /// do_get_write_access.
    pub mark: [u64; 6],
    pub bytes: [u64; 4],
    pub planned: [u64; 4],
    pub results: Vec<TiotestPhase>,
}

/// Where a task is in an fsync() or sync() call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SyncWait {
    /// sync(): the WB_SYNC_ALL works queued on the wbs of device `dev`; `left` of them not yet
    /// completed (`wb_wait_for_completion`).
    Work { dev: u16, left: u16 },
    /// `filemap_fdatawait` of `ino`, walking its pages in [`index`, `end`) (`end`: the file's
    /// end when its walk began, so that a writer appending to it cannot keep the walk going).
    /// With `all` (sync's `wait_sb_inodes`) the walk goes on with the device's later inodes,
    /// then with the next device.
    Wait {
        all: bool,
        dev: u16,
        ino: u32,
        index: u64,
        end: u64,
    },
    /// The data is written: waiting for the cache flushes still in flight (`left`) of the
    /// devices that cache writes (`blkdev_issue_flush`).
    Flush { left: u32 },
    /// The data is written (at `since`): waiting for `left` journal commits
    /// (`jbd2_log_wait_commit`, an xfs log force).
    Commit { left: u32, since: crate::Ns },
}
