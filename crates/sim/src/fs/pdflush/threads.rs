//! The pdflush threads on the machine (2.6.0–2.6.31): the pool's work handed out and each
//! thread's steps through `background_writeout` and `wb_kupdate`.

use super::*;
use crate::block::queue::Submitter;
use crate::fs::fs_writeback::WRITEBACK_NS_PER_PAGE;
use crate::generations::runtime::CongestionWaiter;
use crate::kernel::cpu::Who;
use crate::machine::{Event, Machine};
use crate::Ns;

impl Machine {
    fn pd(&mut self) -> &mut PdflushPool {
        self.era.pdflush.as_mut().expect("pdflush generation")
    }

    /// Is `w` a pdflush thread's flusher index?
    pub(crate) fn is_pdflush(&self, w: u16) -> bool {
        self.era.pdflush.as_ref().is_some_and(|p| w >= p.base)
    }

    /// pdflush thread `w` has work (running, waiting to submit, or in a congestion wait).
    pub(crate) fn pdflush_thread_active(&self, w: u16) -> bool {
        let p = self.era.pdflush.as_ref().expect("pdflush generation");
        p.threads.get((w - p.base) as usize).is_some_and(|t| t.work.is_some())
    }

    /// Arm the kupdate timer (`wb_timer`) at boot.
    pub(crate) fn pdflush_start(&mut self) {
        let cs = self.cfg.sysctl.dirty_writeback_centisecs as u64;
        if cs == 0 {
            return;
        }
        let at = cs * 10_000_000;
        self.pd().kupdate_at = Some(at);
        let base = self.pd().base;
        // The timer fires as a wakeup of thread index `base + MAX` (no thread): dispatched
        // to `pdflush_timer`.
        self.q.schedule(at, Event::Flusher(base + MAX_PDFLUSH_THREADS as u16));
    }

    /// `pdflush_operation(fn)`: hand `work` to an idle thread. False if none is idle.
    pub(crate) fn pdflush_operation(&mut self, work: PdWork, min_pages: i64) -> bool {
        let now = self.now();
        let Some(k) = self.pd().idle_thread() else {
            return false;
        };
        let pool = self.pd();
        if pool.threads.iter().filter(|t| t.alive && t.work.is_none()).count() == 1 {
            pool.last_empty = now;
        }
        let j = self.jiffies();
        let hz = self.clock.hz;
        let expire = self.cfg.sysctl.dirty_expire_centisecs as u64 * hz / 100;
        let interval = self.cfg.sysctl.dirty_writeback_centisecs as u64 * hz / 100;
        let nr_inodes = self.inodes.iter().filter(|i| i.dirty).count() as i64;
        let nr_dirty = self.vm.file_dirty() as i64;
        let t = &mut self.pd().threads[k];
        t.work = Some(work);
        t.idle_since = None;
        t.step = Step::Chunk;
        t.min_pages = min_pages;
        if work == PdWork::Kupdate {
            t.oldest_jif = j.saturating_sub(expire);
            t.next_jif = j + interval;
            t.kupdate_left = nr_dirty + nr_inodes;
        }
        let w = self.pd().base + k as u16;
        self.q.schedule_in(0, Event::Flusher(w));
        true
    }

    /// `wakeup_pdflush(nr)` (reclaim, sync): background writeout of `nr` pages (0: all).
    pub(crate) fn wakeup_pdflush(&mut self, nr: u64) {
        let nr = if nr == 0 { self.vm.file_dirty() } else { nr };
        self.pdflush_operation(PdWork::Background, nr as i64);
    }

    /// Event::Flusher for an index at or past the pool's base.
    pub(crate) fn pdflush_event(&mut self, w: u16) {
        let base = self.pd().base;
        let k = (w - base) as usize;
        if k >= MAX_PDFLUSH_THREADS {
            return self.pdflush_timer();
        }
        let now = self.now();
        let t = &self.pd().threads[k];
        if t.wait_until.is_some_and(|u| u <= now) {
            // The congestion wait timed out.
            self.pdflush_wake(w);
        } else if t.work.is_some() && t.wait_until.is_none() {
            self.pdflush_continue(w);
        }
    }

    /// `wb_timer_fn`: start kupdate, or retry in a second when no thread is idle.
    fn pdflush_timer(&mut self) {
        let now = self.now();
        if self.pd().kupdate_at.is_some_and(|t| t > now) {
            return;
        }
        self.pd().kupdate_at = None;
        if !self.pdflush_operation(PdWork::Kupdate, 0) {
            self.pdflush_arm_timer(now + 1_000_000_000);
        }
    }

    fn pdflush_arm_timer(&mut self, at: Ns) {
        let base = self.pd().base;
        self.pd().kupdate_at = Some(at);
        self.q.schedule(at, Event::Flusher(base + MAX_PDFLUSH_THREADS as u16));
    }

    /// Drive thread `w` until it sleeps.
    pub(crate) fn pdflush_continue(&mut self, w: u16) {
        let wi = w as usize;
        loop {
            if self.flushers[wi].blocked || self.flushers[wi].on_cpu {
                return;
            }
            // Submit the chunk's requests; blocking in get_request_wait holds the bdi.
            while let Some(&id) = self.flushers[wi].pending.front() {
                let dev = self.queue_of_request(w, id);
                if self.submit_request(dev, id) {
                    self.flushers[wi].pending.pop_front();
                } else {
                    self.flushers[wi].blocked = true;
                    return;
                }
            }
            let k = (w - self.pd().base) as usize;
            let step = self.pd().threads[k].step;
            match step {
                Step::Chunk => {
                    if !self.pdflush_chunk(w, k) {
                        return;
                    }
                }
                Step::ChunkDone | Step::Waited => {
                    if !self.pdflush_after_chunk(w, k, step) {
                        return;
                    }
                }
            }
        }
    }

    /// The device a pending request of flusher `w` belongs to (pdflush writes any bdi).
    fn queue_of_request(&self, w: u16, _id: u32) -> u16 {
        let k = (w - self.era.pdflush.as_ref().map_or(0, |p| p.base)) as usize;
        self.era
            .pdflush
            .as_ref()
            .and_then(|p| p.threads.get(k))
            .and_then(|t| t.holding.first().copied())
            .unwrap_or(0)
    }

    /// Loop top of background_writeout / wb_kupdate; writes one chunk. False if the thread
    /// now sleeps (CPU walk, blocked, or done).
    fn pdflush_chunk(&mut self, w: u16, k: usize) -> bool {
        let t = self.pd().threads[k].clone();
        let work = t.work.expect("working");
        match work {
            PdWork::Background => {
                let (bg, _) = self.era_dirty_limits();
                // NR_FILE_DIRTY + NR_UNSTABLE_NFS < background_thresh.
                if self.vm.file_dirty() + self.nr_unstable() < bg && t.min_pages <= 0 {
                    return self.pdflush_done(w, k);
                }
            }
            PdWork::Kupdate => {
                if t.kupdate_left <= 0 {
                    return self.pdflush_done(w, k);
                }
            }
        }
        // writeback_inodes(nonblocking): every bdi in turn, skipping congested ones and those
        // another pdflush holds, until the chunk is written.
        let mut left = MAX_WRITEBACK_PAGES;
        let mut congested = false;
        let mut holding = Vec::new();
        let j = self.jiffies();
        let older = if work == PdWork::Kupdate { t.oldest_jif } else { j };
        for dev in 0..self.queues.len() as u16 {
            if left == 0 {
                break;
            }
            if self.era.pdflush_holding[dev as usize] && !self.pd().threads[k].holding.contains(&dev) {
                // writeback_acquire failed: another pdflush works this bdi.
                continue;
            }
            let room = self.nonblocking_room(dev);
            if room == 0 {
                congested = true;
                continue;
            }
            let budget = left.min(room);
            let wrote = self.writeback_inodes_wb(dev, budget, older, Submitter::Flusher(w));
            if budget < left && wrote == budget {
                congested = true;
            }
            if wrote > 0 {
                holding.push(dev);
                self.era.pdflush_holding[dev as usize] = true;
            }
            left -= wrote;
            // Requests of one chunk go to one device in the model's pending list; stop at the
            // first bdi that took pages so the pending requests all belong to it.
            if wrote > 0 {
                break;
            }
        }
        let wrote = MAX_WRITEBACK_PAGES - left;
        let th = &mut self.pd().threads[k];
        th.chunk_wrote = wrote;
        th.encountered_congestion = congested;
        th.holding = holding;
        th.step = Step::ChunkDone;
        if wrote > 0 {
            self.flushers[w as usize].on_cpu = true;
            self.cpu_run(Who::Flusher(w), wrote * WRITEBACK_NS_PER_PAGE);
            return false;
        }
        true
    }

    /// The chunk is submitted (or the congestion wait is over): account it and decide.
    fn pdflush_after_chunk(&mut self, w: u16, k: usize, step: Step) -> bool {
        // writeback_release of the bdis this chunk held.
        let held = std::mem::take(&mut self.pd().threads[k].holding);
        for dev in held {
            self.era.pdflush_holding[dev as usize] = false;
        }
        if step == Step::Waited {
            self.pd().threads[k].step = Step::Chunk;
            let t = &self.pd().threads[k];
            // After the wait: stop unless congestion was why the chunk fell short.
            if !t.encountered_congestion && t.chunk_wrote < MAX_WRITEBACK_PAGES {
                return self.pdflush_done(w, k);
            }
            return true;
        }
        let t = self.pd().threads[k].clone();
        let wrote = t.chunk_wrote as i64;
        let th = &mut self.pd().threads[k];
        match t.work.expect("working") {
            PdWork::Background => th.min_pages -= wrote,
            PdWork::Kupdate => th.kupdate_left -= wrote,
        }
        if t.chunk_wrote < MAX_WRITEBACK_PAGES {
            if t.work == Some(PdWork::Kupdate) && !t.encountered_congestion {
                // "All the old data is written".
                return self.pdflush_done(w, k);
            }
            // congestion_wait(WRITE, HZ/10).
            th.step = Step::Waited;
            let d = self.clock.tick_ns() * (self.clock.hz / 10).max(1);
            let until = self.now() + d;
            self.pd().threads[k].wait_until = Some(until);
            self.era.congestion_waiters.push(CongestionWaiter::Pdflush(w));
            self.q.schedule(until, Event::Flusher(w));
            self.flushers[w as usize].blocked = true;
            return false;
        }
        th.step = Step::Chunk;
        true
    }

    /// A pdflush thread's congestion wait ended (timeout or woken).
    pub(crate) fn pdflush_wake(&mut self, w: u16) {
        let k = (w - self.pd().base) as usize;
        if self.pd().threads[k].wait_until.take().is_some() {
            self.flushers[w as usize].blocked = false;
            self.pdflush_continue(w);
        }
    }

    /// The function returned: the thread goes idle; grow or shrink the pool.
    fn pdflush_done(&mut self, w: u16, k: usize) -> bool {
        let now = self.now();
        let hz_ns = 1_000_000_000;
        let was_kupdate = self.pd().threads[k].work == Some(PdWork::Kupdate);
        let next_jif = self.pd().threads[k].next_jif;
        let _ = w;
        let pool = self.pd();
        // Thread creation: nobody idle for a second and room for more.
        if now.saturating_sub(pool.last_empty) > hz_ns
            && pool.threads.iter().all(|t| !t.alive || t.work.is_some())
            && pool.nr_threads() < MAX_PDFLUSH_THREADS
        {
            if let Some(t) = pool.threads.iter_mut().find(|t| !t.alive) {
                t.alive = true;
                t.idle_since = Some(now);
                t.work = None;
            }
        }
        let t = &mut pool.threads[k];
        t.work = None;
        t.idle_since = Some(now);
        // Thread destruction: the longest-idle one exits after a second, down to two.
        if pool.nr_threads() > MIN_PDFLUSH_THREADS {
            if let Some((i, _)) = pool
                .threads
                .iter()
                .enumerate()
                .filter(|(i, t)| t.alive && t.work.is_none() && *i != k)
                .min_by_key(|(_, t)| t.idle_since)
            {
                if pool.threads[i].idle_since.is_some_and(|s| now.saturating_sub(s) > hz_ns) {
                    pool.threads[i].alive = false;
                }
            }
        }
        if was_kupdate && self.cfg.sysctl.dirty_writeback_centisecs > 0 {
            // Next run at the next interval, or a second from now if this one overran.
            let next = self.clock.at_jiffies(next_jif).max(now + hz_ns);
            self.pdflush_arm_timer(next);
        }
        false
    }

    /// Pages a nonblocking writer may submit to `dev` before its queue is congested.
    fn nonblocking_room(&self, dev: u16) -> u64 {
        let q = &self.queues[dev as usize];
        let per_rq = (q.max_sectors / 8).max(1);
        match &q.legacy {
            Some(rl) => {
                if rl.congested[1] {
                    0
                } else {
                    (rl.congestion_on.saturating_sub(rl.count[1]) as u64).max(1) * per_rq
                }
            }
            None => u64::MAX,
        }
    }

    /// The dirty limits the generation's policy uses (for background writeout).
    pub(crate) fn era_dirty_limits(&self) -> (u64, u64) {
        match self.cfg.policy.throttle {
            crate::config::ThrottleKind::Global => crate::mm::throttle_global::get_dirty_limits_2620(&self.vm, &self.cfg.sysctl),
            _ => crate::mm::throttle_per_bdi::global_dirty_limits_old(&self.vm, &self.cfg.sysctl),
        }
    }
}
