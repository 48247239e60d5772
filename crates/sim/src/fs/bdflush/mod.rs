//! bdflush and kupdate, Linux 2.4 (`fs/buffer.c`): the two kernel threads that wrote the
//! buffer cache back before pdflush (2.5.x).
//!
//! * **bdflush** sleeps on `bdflush_wait` until `wakeup_bdflush()` (from `balance_dirty`, and
//!   from reclaim when a page's buffers are busy). Then it loops:
//!   - 2.4.8-pre5 → 2.4.17 ([`Variant::Mainline`]): `write_some_buffers(NODEV)`, the 32
//!     oldest dirty buffers. If that pass ran dry (wrote fewer than 32) or
//!     `balance_dirty_state() < 0`, it runs `wait_for_some_buffers()` (sleeps until the
//!     oldest buffer in flight completes) and goes back to sleep; otherwise it loops at once.
//!     There is no hysteresis: it stops as soon as dirty (+ locked) is under `nfract`.
//!   - 2.4.0 → 2.4.7 ([`Variant::PreAc`]): `flush_dirty_buffers(0)`, up to `ndirty` = 64
//!     buffers, never waiting for their I/O; it sleeps when nothing was flushed or the state
//!     is < 0.
//! * **kupdate** wakes every `interval` jiffies (0 stops it) and writes every buffer dirtied
//!   more than `age_buffer` jiffies ago: in `NRSYNC` passes (mainline `sync_old_buffers`) or
//!   all at once (`flush_dirty_buffers(1)`, 2.4.7).
//!
//! Both threads are flusher entities after the per-device ones (indices `ndev`, `ndev + 1`),
//! so they walk pages on a CPU and sleep in request allocation like any submitter. The DIRTY
//! list is in time order; the model keeps its order as marks of the cumulative dirtied count
//! taken at each kupdate run (every `interval`): the pages dirtied before `now − age_buffer`
//! that are still dirty are the oldest `dirtied_then − (dirtied_now − dirty_now)` pages, which
//! is what one sequential writer's oldest-first writeout takes (several files: approximate).

mod daemons;

use crate::mm::throttle_bdflush::Variant;
use std::collections::VecDeque;

/// Thread index of bdflush and kupdate within the pair; the timer is index 2.
const BDFLUSH: usize = 0;
const KUPDATE: usize = 1;
pub(crate) const THREADS: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    /// On `bdflush_wait` (or kupdate between runs).
    Sleeping,
    /// Write the next pass.
    Write,
    /// The pass's pages are walked and its requests submitted: decide.
    AfterWrite,
    /// In `wait_for_some_buffers`.
    WaitIo,
}

pub(crate) struct BdflushState {
    /// Flusher index of bdflush (= number of devices); kupdate is `base + 1`.
    pub base: u16,
    pub variant: Variant,
    st: [St; THREADS],
    /// The current pass: pages asked, pages written, device written.
    asked: [u64; THREADS],
    wrote: [u64; THREADS],
    dev: [u16; THREADS],
    /// kupdate: pages of expired buffers still to write in this run.
    kupdate_left: u64,
    /// (jiffies, cumulative pages dirtied) at each kupdate run, oldest first.
    marks: VecDeque<(u64, u64)>,
    /// `wakeup_bdflush` calls that found bdflush asleep (for tests and the report).
    pub wakeups: u64,
}

impl BdflushState {
    pub(crate) fn new(ndev: usize, variant: Variant) -> Self {
        BdflushState {
            base: ndev as u16,
            variant,
            st: [St::Sleeping; THREADS],
            asked: [0; THREADS],
            wrote: [0; THREADS],
            dev: [0; THREADS],
            kupdate_left: 0,
            marks: VecDeque::new(),
            wakeups: 0,
        }
    }

    /// Pages of buffers dirtied at or before `before` (jiffies) that are still dirty, given the
    /// cumulative dirtied count and the dirty pages now.
    pub(crate) fn expired(&self, before: u64, dirtied_now: u64, dirty_now: u64) -> u64 {
        let then = self.marks.iter().rev().find(|(j, _)| *j <= before).map(|&(_, d)| d);
        let cleaned = dirtied_now.saturating_sub(dirty_now);
        then.map_or(0, |d| d.saturating_sub(cleaned)).min(dirty_now)
    }

    /// Record the dirtied count at `j`, keeping marks no older than `keep` jiffies before.
    pub(crate) fn mark(&mut self, j: u64, dirtied: u64, keep: u64) {
        self.marks.push_back((j, dirtied));
        while self.marks.len() > 2 && self.marks[1].0 + keep <= j {
            self.marks.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_buffers_follow_the_dirty_lists_time_order() {
        let mut b = BdflushState::new(1, Variant::Mainline);
        // Dirtied 1000 pages by j=500, 3000 by j=1000, 5000 by j=1500.
        b.mark(500, 1000, 3500);
        b.mark(1000, 3000, 3500);
        b.mark(1500, 5000, 3500);
        // At j=1500 with 2500 pages dirty (2500 cleaned): of those dirtied by j=1000 (3000),
        // 500 are still dirty.
        assert_eq!(b.expired(1000, 5000, 2500), 500);
        // Nothing dirtied that early is still dirty.
        assert_eq!(b.expired(500, 5000, 2500), 0);
        // No mark old enough: nothing has expired.
        assert_eq!(b.expired(100, 5000, 2500), 0);
        // Marks older than the keep window go, but one before it stays.
        b.mark(5000, 6000, 3500);
        assert!(b.marks.len() >= 2 && b.marks[0].0 <= 1500);
    }
}
