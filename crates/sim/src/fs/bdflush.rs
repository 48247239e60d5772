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

use crate::block::queue::Submitter;
use crate::fs::fs_writeback::WRITEBACK_NS_PER_PAGE;
use crate::generations::runtime::WriteWaiter;
use crate::kernel::cpu::Who;
use crate::machine::{Event, Machine};
use crate::mm::throttle_bdflush::{ndirty_pages, state_of, Variant, NRSYNC};
use std::collections::VecDeque;

/// Thread index of bdflush and kupdate within the pair; the timer is index 2.
const BDFLUSH: usize = 0;
const KUPDATE: usize = 1;
pub const THREADS: usize = 2;

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

pub struct BdflushState {
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
    pub fn new(ndev: usize, variant: Variant) -> Self {
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
    pub fn expired(&self, before: u64, dirtied_now: u64, dirty_now: u64) -> u64 {
        let then = self.marks.iter().rev().find(|(j, _)| *j <= before).map(|&(_, d)| d);
        let cleaned = dirtied_now.saturating_sub(dirty_now);
        then.map_or(0, |d| d.saturating_sub(cleaned)).min(dirty_now)
    }

    /// Record the dirtied count at `j`, keeping marks no older than `keep` jiffies before.
    pub fn mark(&mut self, j: u64, dirtied: u64, keep: u64) {
        self.marks.push_back((j, dirtied));
        while self.marks.len() > 2 && self.marks[1].0 + keep <= j {
            self.marks.pop_front();
        }
    }
}

impl Machine {
    /// bdflush or kupdate thread `w` is in a pass or waiting for its I/O (not asleep).
    pub(crate) fn bdflush_thread_active(&self, w: u16) -> bool {
        let b = self.era.bdflush.as_ref().expect("bdflush generation");
        b.st.get((w - b.base) as usize).is_some_and(|st| *st != St::Sleeping)
    }

    fn bd(&mut self) -> &mut BdflushState {
        self.era.bdflush.as_mut().expect("2.4 generation")
    }

    /// Is `w` the bdflush or kupdate flusher index (or the kupdate timer)?
    pub(crate) fn is_bdflush(&self, w: u16) -> bool {
        self.era.bdflush.as_ref().is_some_and(|b| w >= b.base)
    }

    /// Arm kupdate's first run, `interval` jiffies after boot.
    pub(crate) fn bdflush_start(&mut self) {
        self.kupdate_arm();
    }

    fn kupdate_arm(&mut self) {
        let interval = self.cfg.sysctl.bdflush.interval as u64;
        if interval == 0 {
            return;
        }
        let at = self.clock.at_jiffies(self.jiffies() + interval);
        let timer = self.bd().base + THREADS as u16;
        self.q.schedule(at, Event::Flusher(timer));
    }

    /// `wakeup_bdflush()`: wake the daemon if it sleeps on `bdflush_wait`.
    pub(crate) fn wakeup_bdflush(&mut self) {
        let b = self.bd();
        if b.st[BDFLUSH] != St::Sleeping {
            return;
        }
        b.st[BDFLUSH] = St::Write;
        b.wakeups += 1;
        let w = b.base;
        self.q.schedule_in(0, Event::Flusher(w));
    }

    /// Event::Flusher at or past the base: a wakeup of a thread, or the kupdate timer.
    pub(crate) fn bdflush_event(&mut self, w: u16) {
        let base = self.bd().base;
        let k = (w - base) as usize;
        if k >= THREADS {
            return self.kupdate_timer();
        }
        if self.bd().st[k] != St::Sleeping && self.bd().st[k] != St::WaitIo {
            self.bdflush_continue(w);
        }
    }

    /// kupdate's `interval` elapsed: write the buffers older than `age_buffer`.
    fn kupdate_timer(&mut self) {
        let j = self.jiffies();
        let p = self.cfg.sysctl.bdflush;
        let (dirtied, dirty) = (self.vm.nr_dirtied, self.vm.nr_dirty);
        let b = self.bd();
        b.mark(j, dirtied, p.age_buffer as u64 + p.interval as u64);
        if b.st[KUPDATE] == St::Sleeping {
            let n = b.expired(j.saturating_sub(p.age_buffer as u64), dirtied, dirty);
            if n > 0 {
                b.kupdate_left = n;
                b.st[KUPDATE] = St::Write;
                let w = b.base + KUPDATE as u16;
                self.kupdate_arm();
                return self.bdflush_continue(w);
            }
        }
        self.kupdate_arm();
    }

    /// The oldest write bdflush waited for completed.
    pub(crate) fn bdflush_io_done(&mut self, w: u16) {
        let k = (w - self.bd().base) as usize;
        if self.bd().st[k] == St::WaitIo {
            // wait_for_some_buffers returned: back to sleep on bdflush_wait.
            self.bd().st[k] = St::Sleeping;
        }
    }

    /// Drive bdflush or kupdate until it sleeps.
    pub(crate) fn bdflush_continue(&mut self, w: u16) {
        let wi = w as usize;
        let k = (w - self.bd().base) as usize;
        loop {
            if self.flushers[wi].blocked || self.flushers[wi].on_cpu {
                return;
            }
            let dev = self.bd().dev[k];
            while let Some(&id) = self.flushers[wi].pending.front() {
                if self.submit_request(dev, id) {
                    self.flushers[wi].pending.pop_front();
                } else {
                    // __get_request_wait.
                    self.flushers[wi].blocked = true;
                    return;
                }
            }
            match self.bd().st[k] {
                St::Sleeping | St::WaitIo => return,
                St::Write => {
                    if !self.bdflush_pass(w, k) {
                        return;
                    }
                }
                St::AfterWrite => {
                    if !self.bdflush_after(w, k) {
                        return;
                    }
                }
            }
        }
    }

    /// One `write_some_buffers` / `flush_dirty_buffers` pass. False if the thread now waits
    /// (CPU walk).
    fn bdflush_pass(&mut self, w: u16, k: usize) -> bool {
        let variant = self.bd().variant;
        let p = self.cfg.sysctl.bdflush;
        let ask = match (k, variant) {
            (BDFLUSH, Variant::Mainline) => NRSYNC,
            (BDFLUSH, Variant::PreAc) => ndirty_pages(&p),
            (_, Variant::Mainline) => NRSYNC.min(self.bd().kupdate_left),
            (_, Variant::PreAc) => self.bd().kupdate_left,
        };
        // NODEV: the first device with dirty inodes (the DIRTY list is global).
        let j = self.jiffies();
        let mut wrote = 0;
        let mut dev = self.bd().dev[k];
        for d in 0..self.queues.len() as u16 {
            if !self.flushers[d as usize].has_dirty_io() {
                continue;
            }
            wrote = self.writeback_inodes_wb(d, ask, j, Submitter::Flusher(w));
            if wrote > 0 {
                dev = d;
                break;
            }
        }
        let b = self.bd();
        b.asked[k] = ask;
        b.wrote[k] = wrote;
        b.dev[k] = dev;
        b.st[k] = St::AfterWrite;
        if wrote > 0 {
            self.flushers[w as usize].on_cpu = true;
            self.cpu_run(Who::Flusher(w), wrote * WRITEBACK_NS_PER_PAGE);
            return false;
        }
        true
    }

    /// After a pass: loop, wait for the oldest buffer, or sleep. False if the thread sleeps.
    fn bdflush_after(&mut self, w: u16, k: usize) -> bool {
        let p = self.cfg.sysctl.bdflush;
        let variant = self.bd().variant;
        let state = state_of(&self.vm, &p, variant);
        let b = self.bd();
        let (asked, wrote, dev) = (b.asked[k], b.wrote[k], b.dev[k]);
        if k == KUPDATE {
            b.kupdate_left = b.kupdate_left.saturating_sub(wrote);
            b.st[k] = if b.kupdate_left == 0 || wrote < asked {
                St::Sleeping
            } else {
                St::Write
            };
            return b.st[k] == St::Write;
        }
        match variant {
            Variant::Mainline => {
                if wrote < asked || state < 0 {
                    b.st[k] = St::WaitIo;
                    if !self.wait_oldest_write(dev, WriteWaiter::Bdflush(w)) {
                        self.bd().st[k] = St::Sleeping;
                    }
                    return false;
                }
            }
            Variant::PreAc => {
                if wrote == 0 || state < 0 {
                    b.st[k] = St::Sleeping;
                    return false;
                }
            }
        }
        self.bd().st[k] = St::Write;
        true
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
