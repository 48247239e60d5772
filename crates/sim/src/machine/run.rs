//! The event loop: each event dispatched to the part it is for, tasks started in their
//! order, and the laws checked as it goes.

use super::{Event, Machine, Progress};
use crate::engine::time::NSEC_PER_SEC;
use crate::kernel::task::Phase;
use crate::laws::LawViolation;
use crate::mm::page_reporting::PageReporting;
use crate::mm::page_writeback;

impl Machine {
    pub(crate) fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::TaskRun(t) => {
                self.tasks[t as usize].runs_pending -= 1;
                self.task_wake(t)
            }
            Event::TaskTimeout(t, gen) => {
                if self.tasks[t as usize].timeout_gen == Some(gen) {
                    self.tasks[t as usize].timeout_gen = None;
                }
                if self.tasks[t as usize].wait_gen == gen {
                    // The sleep is over: wakeups registered for it are stale now.
                    self.tasks[t as usize].wait_gen = gen.wrapping_add(1);
                    self.reclaim_waiters.retain(|&w| w != t);
                    self.task_wake(t);
                }
            }
            Event::CpuDone(c, gen) => self.on_cpu_done(c, gen),
            Event::Device(d) => self.on_device(d),
            Event::WbtTimer(d) => self.on_wbt_timer(d),
            Event::IolatTimer(d) => self.on_iolat_timer(d),
            Event::ElvTimer(d) => self.on_elv_timer(d),
            Event::ThrotlTimer(d) => self.on_throtl_timer(d),
            Event::DelayedRun(d) => self.on_delayed_run(d),
            Event::Flusher(w) => self.flusher_wakeup_fired(w),
            Event::FlusherInodeFree(w) => self.wb_inode_free(w),
            Event::BwDwork(w) => {
                self.flushers[w as usize].bw_dwork_pending = false;
                let j = self.jiffies();
                page_writeback::wb_update_bandwidth(&mut self.dom, &mut self.wbs[w as usize], j, self.clock.hz);
            }
            Event::FpropPeriod => self.on_fprop_period(),
            Event::JournalTimer(d) => self.on_journal_timer(d),
            Event::JournalWake(d) => self.journal_woken(d),
            Event::JournalLogPrepared(d) => self.commit_advance(d),
            Event::FlushKick(d) => self.kick_queue(d),
            Event::JournalFlushSeq(d) => self.journal_flushed_now(d),
            Event::EndIoWork(d) => self.end_io_work(d),
            Event::PageReport => self.page_report(),
            Event::Sample => self.on_sample(),
            Event::ThrottleSample => self.on_throttle_sample(),
            Event::TaskMid(t) => {
                let task = &mut self.tasks[t as usize];
                task.mid_bytes = Some(task.bytes_written + task.bytes_read);
                task.mid_ns = self.q.now();
            }
        }
    }

    /// Schedule the tasks' starts and the samplers.
    pub fn start(&mut self) {
        let dur = self.cfg.duration;
        for t in 0..self.tasks.len() {
            let task = &self.tasks[t];
            // Tasks after a stonewall start when the jobs before them are done.
            if task.start < task.stop && task.waits_for.is_empty() {
                let (start, stop) = (task.start, task.stop);
                self.run_task_at(t as u32, start);
                self.q.schedule(start + (stop - start) / 2, Event::TaskMid(t as u32));
            }
        }
        self.q.schedule(NSEC_PER_SEC.min(dur), Event::Sample);
        self.q.schedule(0, Event::ThrottleSample);
        if let Some(delay) = self.reporting.as_ref().map(PageReporting::delay).filter(|&d| d > 0) {
            self.q.schedule(delay, Event::PageReport);
        }
        self.start_era();
    }

    /// Task `tid` finished its job: it is done from now on.
    pub(crate) fn mark_done(&mut self, tid: u32) {
        let now = self.now();
        let task = &mut self.tasks[tid as usize];
        let first = !task.is_done();
        task.phase = Phase::Done;
        task.ended = Some(now.min(task.stop));
        if first {
            let live = task.start < task.stop;
            self.groups.done(tid, live);
        }
    }

    /// Task `tid` is done: the tasks that waited for its group (fio's `stonewall`,
    /// `wait_for`) start once every task of it is done, their `start` counted from now. One
    /// whose start lands at or past its stop never runs, and what waits for it never starts.
    pub(crate) fn start_dependents(&mut self, tid: u32) {
        let g = self.groups.group_of(tid);
        if self.groups.running(g) {
            return;
        }
        let now = self.now();
        for i in self.groups.dependents(g) {
            let u = self.groups.dependent(i);
            if !self.groups.released(u) || self.tasks[u as usize].phase != Phase::Idle {
                continue;
            }
            let task = &mut self.tasks[u as usize];
            let was = task.start < task.stop;
            task.start = now.saturating_add(task.start);
            let (start, stop) = (task.start, task.stop);
            self.groups.restarted(u, was, start < stop);
            if start < stop {
                self.run_task_at(u, start);
                self.q.schedule(start + (stop - start) / 2, Event::TaskMid(u));
            }
        }
        self.check_until_done();
    }

    /// With `until_done`, the run ends once every task is done.
    pub(crate) fn check_until_done(&mut self) {
        if self.cfg.until_done && self.groups.all_done() {
            let now = self.now();
            self.run_end = Some(now);
        }
    }

    /// Run the scenario to its end, or until a law breaks.
    pub fn run(&mut self, progress: &mut dyn Progress) -> Result<(), LawViolation> {
        self.start();
        if self.laws.on {
            self.event_loop::<true>(progress)?;
        } else {
            self.event_loop::<false>(progress)?;
        }
        if self.laws.on {
            if let Some(v) = self.check_laws() {
                return Err(v);
            }
        }
        Ok(())
    }

    /// The event loop, with or without the laws: the check is made once per run, not per
    /// event, so a release run pays nothing for them.
    pub(crate) fn event_loop<const LAWS: bool>(&mut self, progress: &mut dyn Progress) -> Result<(), LawViolation> {
        let dur = self.cfg.duration;
        let report_every = (dur / 100).max(1);
        let mut next_report = report_every;
        while let Some((t, ev)) = self.q.pop_until(dur) {
            self.dispatch(ev);
            if self.run_end.is_some() {
                break;
            }
            if LAWS {
                self.laws_after_event(t, &ev);
                if let Some(v) = &self.laws.broken {
                    return Err(v.clone());
                }
            }
            if t >= next_report {
                progress.tick(t, dur);
                next_report = t + report_every;
            }
        }
        progress.tick(dur, dur);
        Ok(())
    }

    /// Process one event. Returns false when the run is over (no event left before the end)
    /// or a law broke ([`Machine::broken`] says which).
    pub fn step(&mut self) -> bool {
        if self.laws.broken.is_some() {
            return false;
        }
        if self.run_end.is_some() {
            return false;
        }
        match self.q.pop_until(self.cfg.duration) {
            Some((t, ev)) => {
                self.dispatch(ev);
                self.laws_after_event(t, &ev);
                self.laws.broken.is_none()
            }
            _ => false,
        }
    }

    /// The law that broke, if one did.
    pub fn broken(&self) -> Option<&LawViolation> {
        self.laws.broken.as_ref()
    }
}
