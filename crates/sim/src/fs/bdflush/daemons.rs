//! bdflush and kupdate on the machine (2.4): the two daemons' passes over the dirty buffers.

use super::*;
use crate::block::queue::Submitter;
use crate::fs::fs_writeback::WRITEBACK_NS_PER_PAGE;
use crate::generations::runtime::WriteWaiter;
use crate::kernel::cpu::Who;
use crate::machine::{Event, Machine};
use crate::mm::throttle_bdflush::{ndirty_pages, state_of, Variant, NRSYNC};

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
