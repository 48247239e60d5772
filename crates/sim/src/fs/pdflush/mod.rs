//! pdflush, 2.6.0–2.6.31 (`mm/pdflush.c`, `mm/page-writeback.c`: `background_writeout`,
//! `wb_kupdate`, `wakeup_pdflush`): a pool of 2 to 8 kernel threads that anybody may hand a
//! writeback function to.
//!
//! * `pdflush_operation(fn)` gives `fn` to the most recently idle thread, or fails when none
//!   is idle (the caller just goes on; nobody queues).
//! * After a thread finishes a function: if no thread has been idle for a second, and there
//!   are fewer than 8, a new one is started; if the longest-idle thread has slept more than a
//!   second and there are more than 2, it exits.
//! * `background_writeout(min_pages)`: until dirty < background threshold and `min_pages` are
//!   written, `writeback_inodes` in chunks of `MAX_WRITEBACK_PAGES` = 1024, *nonblocking*: a
//!   congested queue is skipped (`encountered_congestion`). A chunk that wrote less than
//!   asked sleeps `congestion_wait(WRITE, HZ/10)`, and ends the work unless congestion was the
//!   reason.
//! * `wb_kupdate`, every `dirty_writeback_centisecs` from a timer: the inodes dirtied more than
//!   `dirty_expire_centisecs` ago, in the same nonblocking chunks; then the timer is re-armed
//!   for the next interval, or a second after the end if the run overran.
//! * Only one pdflush writes a given bdi at a time (`writeback_acquire`, `BDI_pdflush`): that
//!   flag is what `balance_dirty_pages` reads as `writeback_in_progress`.
//!
//! Each thread is a flusher entity of the machine (index `ndev + k`), so it runs on a CPU and
//! can block in request allocation like the per-bdi flushers.

mod threads;

use crate::Ns;

pub(crate) const MIN_PDFLUSH_THREADS: usize = 2;
pub(crate) const MAX_PDFLUSH_THREADS: usize = 8;
/// `MAX_WRITEBACK_PAGES`.
pub(crate) const MAX_WRITEBACK_PAGES: u64 = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PdWork {
    /// `background_writeout(min_pages)`.
    Background,
    /// `wb_kupdate`.
    Kupdate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Look at the loop condition and write the next chunk.
    Chunk,
    /// The chunk's CPU walk is done and its requests submitted: evaluate it.
    ChunkDone,
    /// Back from `congestion_wait`.
    Waited,
}

#[derive(Clone, Debug)]
pub(crate) struct PdThread {
    /// The thread exists.
    pub alive: bool,
    /// Idle since (ns); None while working.
    pub idle_since: Option<Ns>,
    pub work: Option<PdWork>,
    step: Step,
    min_pages: i64,
    /// kupdate: pages still to write, and the dirtied-before cut-off (jiffies).
    kupdate_left: i64,
    oldest_jif: u64,
    next_jif: u64,
    /// The current chunk: asked, written, congestion met, bdis held.
    chunk_wrote: u64,
    encountered_congestion: bool,
    holding: Vec<u16>,
    /// End of the current `congestion_wait`, if sleeping in one.
    pub wait_until: Option<Ns>,
}

impl PdThread {
    fn new(alive: bool) -> Self {
        PdThread {
            alive,
            idle_since: Some(0),
            work: None,
            step: Step::Chunk,
            min_pages: 0,
            kupdate_left: 0,
            oldest_jif: 0,
            next_jif: 0,
            chunk_wrote: 0,
            encountered_congestion: false,
            holding: Vec::new(),
            wait_until: None,
        }
    }
}

pub(crate) struct PdflushPool {
    /// Flusher index of thread 0 (= number of devices).
    pub base: u16,
    pub threads: Vec<PdThread>,
    /// When the pool last ran out of idle threads.
    pub last_empty: Ns,
    /// The wb_timer is armed for this time.
    pub kupdate_at: Option<Ns>,
}

impl PdflushPool {
    pub(crate) fn new(ndev: usize) -> Self {
        PdflushPool {
            base: ndev as u16,
            threads: (0..MAX_PDFLUSH_THREADS).map(|i| PdThread::new(i < MIN_PDFLUSH_THREADS)).collect(),
            last_empty: 0,
            kupdate_at: None,
        }
    }

    pub(crate) fn nr_threads(&self) -> usize {
        self.threads.iter().filter(|t| t.alive).count()
    }

    /// The idle thread that went to sleep last (`pdflush_list.next`).
    fn idle_thread(&self) -> Option<usize> {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, t)| t.alive && t.work.is_none())
            .max_by_key(|(i, t)| (t.idle_since, std::cmp::Reverse(*i)))
            .map(|(i, _)| i)
    }
}
