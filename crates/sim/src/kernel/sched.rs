//! The tasks' and kernel threads' turns on the CPUs (`kernel/sched/core.c`): bursts of CPU
//! work, wake-ups, sleeps and timed waits, as the machine's events drive them.

use crate::kernel::cpu::{Started, Who};
use crate::kernel::task::Phase;
use crate::machine::{Event, Machine};
use crate::Ns;

impl Machine {
    /// Run `burst` ns of CPU for `who`; the entity continues when `CpuDone` fires.
    pub(crate) fn cpu_run(&mut self, who: Who, burst: Ns) {
        let now = self.now();
        let mut burst = burst;
        if let Who::Task(t) = who {
            let task = &mut self.tasks[t as usize];
            task.on_cpu = true;
            // User-mode work of the job (tiotest's buffers) runs in the same burst.
            let user = std::mem::take(&mut task.wq.user_pending);
            task.wq.user_burst = user;
            burst += user;
        }
        match self.cpus.request(now, who, burst.max(1)) {
            Some(s) => self.cpu_started(s),
            None => self.preempt_spinner(),
        }
        if let Who::Task(t) = who {
            // Runnable, and on the CPU if it got one: one change of its PSI states.
            self.psi_task_refresh(t);
        }
    }

    /// A wakeup found every CPU busy and asked a runner to give way. The kernel preempts it
    /// within microseconds; the model's bursts run to their end, except a spinner's, which
    /// has nothing to finish: it ends now.
    pub(crate) fn preempt_spinner(&mut self) {
        let Some((cpu, Who::Task(victim))) = self.cpus.take_preempted() else {
            return;
        };
        if self.tasks[victim as usize].phase != Phase::Spin {
            return;
        }
        let now = self.q.now();
        let (left, gen) = self.cpus.cut_short(now, cpu);
        let t = &mut self.tasks[victim as usize];
        t.cpu_user = t.cpu_user.saturating_sub(left);
        self.q.schedule(now, Event::CpuDone(cpu, gen));
    }

    /// `ns` of CPU for device `dev`'s kernel thread (the loop worker's commands): added to
    /// what it has to do, run when the scheduler gives it a CPU.
    pub(crate) fn kthread_work(&mut self, dev: u16, ns: Ns) {
        let k = &mut self.kthreads[dev as usize];
        k.pending += ns;
        if k.on_cpu || k.queued || k.pending == 0 {
            return;
        }
        let burst = std::mem::take(&mut k.pending);
        k.queued = true;
        match self.cpus.request(self.q.now(), Who::Kernel(dev), burst) {
            Some(s) => self.cpu_started(s),
            None => self.preempt_spinner(),
        }
    }

    pub(crate) fn cpu_started(&mut self, s: Started) {
        if !matches!(s.who, Who::Task(_)) {
            self.psi_oncpu(s.who, s.cpu, true);
        }
        if let Who::Kernel(d) = s.who {
            let k = &mut self.kthreads[d as usize];
            k.queued = false;
            k.on_cpu = true;
        }
        if let Who::Task(t) = s.who {
            let task = &mut self.tasks[t as usize];
            task.running = true;
            task.runq_wait += s.waited;
            let user = std::mem::take(&mut task.wq.user_burst).min(s.end - self.q.now());
            task.cpu_user += user;
            task.cpu_sys += s.end - self.q.now() - user;
            task.dirty.cpu = s.cpu as usize;
            self.psi_task_refresh(t);
        } else if let Who::Flusher(f) = s.who {
            self.flusher_cpu[f as usize] = s.cpu;
        }
        self.q.schedule(s.end, Event::CpuDone(s.cpu, s.gen));
    }

    // ---- page-cache accounting shared by the write, read and writeback paths ----

    /// Wake a sleeping task now (cancels its pending timeout).
    pub(crate) fn wake_task(&mut self, tid: u32) {
        self.wake_task_at(tid, self.q.now());
    }

    /// Wake a task now that runs at `at` (a wake-up that lands on an idle CPU): its timed
    /// wait, if any, is over.
    pub(crate) fn wake_task_at(&mut self, tid: u32, at: Ns) {
        let t = &mut self.tasks[tid as usize];
        t.wait_gen = t.wait_gen.wrapping_add(1);
        self.run_task_at(tid, at);
    }

    /// Let the task run at `at` (a `TaskRun` event), leaving any timed wait in place.
    pub(crate) fn run_task_at(&mut self, tid: u32, at: Ns) {
        self.tasks[tid as usize].runs_pending += 1;
        self.q.schedule(at, Event::TaskRun(tid));
        // What woke it (a completion, a wakeup) may have moved it on already.
        self.psi_task_refresh(tid);
    }

    /// A job run every `interval` (`fsync`, `sync`, `replace`) ended an operation: sleep until
    /// the next is due, `interval` after this one was due — not after it started, so that the
    /// wake-up's latency does not shift the rest of the run, as `wblab measure` runs them (a
    /// drifting cadence slides across periodic work such as blk-throttle's 100 ms slices). One
    /// overdue starts at once.
    pub(crate) fn think_until_due(&mut self, tid: u32, interval: Ns) {
        let now = self.now();
        let task = &mut self.tasks[tid as usize];
        let due = task.op_due.unwrap_or(task.op_start).saturating_add(interval);
        task.op_due = Some(due);
        task.phase = crate::kernel::task::Phase::Think;
        self.sleep_task(tid, due.saturating_sub(now));
    }

    /// Sleep a task for `ns`, unless woken earlier by `wake_task`.
    pub(crate) fn sleep_task(&mut self, tid: u32, ns: Ns) {
        // The timer fires on time; the task runs a little later (`[machine] wakeup_latency`).
        let ns = ns.saturating_add(self.rng.exp(self.cfg.machine.wakeup_latency));
        let t = &mut self.tasks[tid as usize];
        t.wait_gen = t.wait_gen.wrapping_add(1);
        let gen = t.wait_gen;
        t.timeout_gen = Some(gen);
        self.q.schedule_in(ns, Event::TaskTimeout(tid, gen));
        // The sleep may begin outside the task's own step (a completion that ends its
        // operation and starts its think time): its pressure states change now.
        self.psi_task_refresh(tid);
    }

    /// A sleeping task was woken: it goes on once the scheduler gives it a CPU
    /// (`try_to_wake_up`, then the context switch back into the task).
    pub(crate) fn task_wake(&mut self, tid: u32) {
        let task = &mut self.tasks[tid as usize];
        if task.is_done() || task.on_cpu || task.waking {
            return;
        }
        task.waking = true;
        task.memstall = false;
        task.slept = self.q.now().saturating_sub(task.off_cpu_at);
        // try_to_wake_up, the switch into the task, and for a woken page waiter whose page is
        // still busy its re-test and re-sleep.
        let m = &self.cfg.machine;
        let cost = m.wakeup_cost + m.context_switch_cost + std::mem::take(&mut task.wq.wake_extra);
        self.cpu_run(Who::Task(tid), cost);
    }

    pub(crate) fn on_cpu_done(&mut self, cpu: u16, gen: u32) {
        let now = self.now();
        if !self.cpus.is_current(cpu, gen) {
            return; // a burst cut short: its end came earlier
        }
        let end = self.cpus.ends_at(cpu);
        if end > now {
            // Interrupts took part of the burst: it ends later.
            self.q.schedule(end, Event::CpuDone(cpu, gen));
            return;
        }
        let (who, next) = self.cpus.finish(now, cpu);
        match who {
            Some(Who::Task(t)) => {
                let task = &mut self.tasks[t as usize];
                task.running = false;
                task.off_cpu_at = now;
            }
            Some(w) => self.psi_oncpu(w, cpu, false),
            None => {}
        }
        if let Some(s) = next {
            self.cpu_started(s);
        }
        match who {
            Some(Who::Task(t)) => {
                let task = &mut self.tasks[t as usize];
                task.on_cpu = false;
                if std::mem::take(&mut task.waking) {
                    self.task_run(t);
                } else {
                    self.task_cpu_done(t);
                }
                self.psi_task_refresh(t);
            }
            Some(Who::Flusher(w)) => {
                self.flushers[w as usize].on_cpu = false;
                self.flusher_continue(w);
            }
            Some(Who::Kernel(d)) => {
                self.kthreads[d as usize].on_cpu = false;
                self.kthread_work(d, 0);
            }
            None => {}
        }
        // Held for a slice but not asked for again: the first waiter gets the CPU.
        if let Some(s) = self.cpus.fill(now, cpu) {
            self.cpu_started(s);
        }
    }
}
