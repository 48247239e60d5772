//! N CPUs and one run queue ordered by virtual runtime.
//!
//! A CPU burst (a page-cache copy, a flusher's page walk, a wakeup) runs to completion once
//! it gets a CPU; there is no preemption. Bursts in the model are short (a 1 MiB copy is
//! ~0.25 ms), so the error against CFS/EEVDF is a fraction of a millisecond of queueing. What
//! is kept from CFS/EEVDF is *who goes first*: the waiting entity that has run least
//! (smallest vruntime), with sleepers placed no further back than half a scheduling latency
//! behind the queue's minimum. This matters when a hundred writers wake at the same jiffy: a
//! FIFO would serve them in the same order every time and lock some of them into a
//! permanently worse phase, which the real scheduler does not.
//!
//! What is kept of time slices, for the schedulers before CFS (the pool's `slice`, from
//! [`crate::generations::sched_slice`]: 100 ms for the O(1) scheduler, 60 ms for 2.4): an
//! entity whose burst ends and that asks for the CPU again at once (its next `write()` after
//! the last) keeps the CPU until its slice is used up, as a running task does until the tick
//! finds its slice over; only then do the waiting ones get the CPU. Without it, every system
//! call would hand the CPU to the next waiter, and 512 writers on 6 CPUs would take turns one
//! page at a time — which matters wherever the order of their calls is visible, as in the
//! blocks a file system hands out at `write()`. From 2.6.23 to 6.5 the slice is 0: the CPU
//! goes to the queue's first at the end of every burst, which stands for CFS's wakeup
//! preemption of a task that has run more than the one woken. From 6.6 (EEVDF) a task that
//! keeps asking is protected for its slice from its pick, and the scheduler notices the end
//! only at the next tick: a task woken during the protection waits for that tick, one woken
//! after it takes the CPU at the end of the runner's burst.
//!
//! The I/O path costs CPU too. A device's kernel thread (the loop worker, `Who::Kernel`) is
//! an entity like the others and waits its turn. An interrupt does not wait: a completion's
//! hard and soft interrupt run at once on a CPU and stretch the burst they interrupt
//! ([`CpuPool::steal`]), as the kernel's irq time is taken from whatever runs there.

use crate::Ns;
use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;

/// How long a kernel path stays warm after its last run here, ns: see [`cold_cost`].
pub(crate) const COLD_TAU_NS: Ns = 2_000_000;

/// The CPU a kernel path costs when its thread was away for `idle` ns: `hot` run back to back,
/// `cold` once the caches, TLB and predictors it needs went to others — on a virtual machine
/// whose halted vCPU's core the host lends to other guests, within milliseconds. Measured on
/// this lab's 6.18 guest (ftrace, `validation/measured/fsync-steps/`): an fsync's path from
/// the call to its first request took 5 + 2 µs in a loop of fdatasyncs (one every 0.2 ms),
/// 20 + 3 µs with the caller asleep ~0.8 ms between calls, and 45 + 11 µs after 10 or 100 ms:
/// `cold − (cold − hot)·e^(−idle / 2 ms)` within a few µs.
pub(crate) fn cold_cost(hot: Ns, cold: Ns, idle: Ns) -> Ns {
    if cold <= hot {
        return hot;
    }
    let warm = (-(idle as f64) / COLD_TAU_NS as f64).exp();
    cold - ((cold - hot) as f64 * warm) as Ns
}

/// `sysctl_sched_latency` / 2: the most vruntime credit a sleeper keeps (CFS `place_entity`).
const SLEEPER_CREDIT_NS: Ns = 3_000_000;

/// A read-only view of the CPUs' work so far, for a device whose host shares the machine's
/// CPUs (a virtual machine's disk, whose host thread competes with busy vCPUs): the CPU time
/// charged so far, bursts counted when they start, and the number of CPUs.
#[derive(Clone, Debug, Default)]
pub struct CpuGauge {
    busy: Rc<Cell<Ns>>,
    ncpus: u32,
}

impl CpuGauge {
    /// CPU time charged so far (runs and interrupts), ns.
    pub fn busy_ns(&self) -> Ns {
        self.busy.get()
    }

    pub fn ncpus(&self) -> u32 {
        self.ncpus
    }
}

#[cfg(test)]
impl CpuGauge {
    /// A gauge of `ncpus` CPUs that only the test charges.
    pub(crate) fn standalone(ncpus: u32) -> Self {
        CpuGauge {
            busy: Rc::default(),
            ncpus,
        }
    }

    pub(crate) fn charge(&self, ns: Ns) {
        self.busy.set(self.busy.get() + ns);
    }
}

/// Who runs on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Who {
    Task(u32),
    Flusher(u16),
    /// A device's kernel thread (the loop device's worker).
    Kernel(u16),
}

/// A burst waiting for a CPU, as the run queue orders it: vruntime at enqueue, then the
/// arrival sequence (upper 40 bits) with the slot of its details in `waiting` (lower 24): 16
/// bytes, so a sift moves little (a thousand writers waking at one jiffy make a deep queue).
type Queued = (Ns, u64);

const SLOT_BITS: u32 = 24;

/// The slot in `waiting` a queued burst's tag names.
fn slot_of(tag: u64) -> u32 {
    (tag & ((1 << SLOT_BITS) - 1)) as u32
}

/// What a queued burst is: the entity, the burst length and when it was queued.
#[derive(Clone, Copy)]
struct Waiting {
    who: Who,
    burst: Ns,
    queued: Ns,
}

pub(crate) struct CpuPool {
    running: Vec<Option<Who>>,
    /// A CPU whose burst just ended, kept for its entity while the machine runs what the
    /// entity does next: if that asks for a CPU within the slice, it keeps this one.
    held: Vec<Option<Who>>,
    /// When the slice of the entity running on each CPU ends: where the scheduler notices
    /// that its protection is over (the tick after it, with EEVDF).
    slice_end: Vec<Ns>,
    /// When its protection ends: a task woken after it takes the CPU at the end of the
    /// runner's burst (EEVDF's wakeup preemption once the runner is no longer protected).
    protect_end: Vec<Ns>,
    /// A woken entity made the runner ineligible: it gives up the CPU at its burst's end.
    preempt: Vec<bool>,
    /// The runner the last wakeup preempted, for the machine to cut its burst short where it
    /// can ([`CpuPool::take_preempted`]).
    preempted: Option<(u16, Who)>,
    /// Each CPU's burst number: a `CpuDone` of an earlier burst (cut short) is stale.
    gen: Vec<u32>,
    slice: Ns,
    /// The scheduler tick a slice's end waits for (EEVDF); 0: the slice ends on time.
    tick: Ns,
    runq: BinaryHeap<Reverse<Queued>>,
    waiting: Vec<Waiting>,
    free_slots: Vec<u32>,
    seq: u64,
    /// vruntime of tasks and flushers, indexed by their ids.
    vr_task: Vec<Ns>,
    vr_flusher: Vec<Ns>,
    vr_kernel: Vec<Ns>,
    /// When the burst running on each CPU ends, interrupts included: its `CpuDone` comes at
    /// the end it had when it started and is put off to this (see [`CpuPool::ends_at`]).
    burst_end: Vec<Ns>,
    /// The CPU the next interrupt lands on: they take turns.
    irq_cpu: usize,
    min_vruntime: Ns,
    busy_ns: Ns,
    irq_ns: Ns,
    /// `busy_ns` as devices see it.
    gauge: CpuGauge,
}

/// A burst that starts now on `cpu` and ends at `end`.
pub(crate) struct Started {
    pub cpu: u16,
    pub who: Who,
    pub end: Ns,
    /// Time it waited in the run queue.
    pub waited: Ns,
    /// The burst's number on its CPU (see [`CpuPool::is_current`]).
    pub gen: u32,
}

impl CpuPool {
    /// `n` CPUs whose entities run for `slice` before a waiting one takes over, at the first
    /// multiple of `tick` after it if `tick` is not 0 (`(slice, tick)`); `kernels` device
    /// threads.
    pub(crate) fn new(n: u32, tasks: usize, flushers: usize, kernels: usize, (slice, tick): (Ns, Ns)) -> Self {
        let n = n.max(1) as usize;
        CpuPool {
            running: vec![None; n],
            held: vec![None; n],
            slice_end: vec![0; n],
            protect_end: vec![0; n],
            preempt: vec![false; n],
            preempted: None,
            gen: vec![0; n],
            slice,
            tick,
            runq: BinaryHeap::new(),
            waiting: Vec::new(),
            free_slots: Vec::new(),
            seq: 0,
            vr_task: vec![0; tasks],
            vr_flusher: vec![0; flushers],
            vr_kernel: vec![0; kernels],
            burst_end: vec![0; n],
            irq_cpu: 0,
            min_vruntime: 0,
            busy_ns: 0,
            irq_ns: 0,
            gauge: CpuGauge {
                busy: Rc::default(),
                ncpus: n as u32,
            },
        }
    }

    fn vruntime(&mut self, who: Who) -> &mut Ns {
        match who {
            Who::Task(t) => &mut self.vr_task[t as usize],
            Who::Flusher(f) => &mut self.vr_flusher[f as usize],
            Who::Kernel(k) => &mut self.vr_kernel[k as usize],
        }
    }

    fn vruntime_of(&self, who: Who) -> Ns {
        match who {
            Who::Task(t) => self.vr_task[t as usize],
            Who::Flusher(f) => self.vr_flusher[f as usize],
            Who::Kernel(k) => self.vr_kernel[k as usize],
        }
    }

    /// Account `burst` to `who` as it starts; the queue's minimum follows the runner.
    fn charge(&mut self, who: Who, burst: Ns) {
        let v = self.vruntime(who);
        *v += burst;
        self.busy_ns += burst;
        self.gauge.busy.set(self.busy_ns);
    }

    /// The gauge devices read the CPUs' work from.
    pub(crate) fn gauge(&self) -> CpuGauge {
        self.gauge.clone()
    }

    pub(crate) fn ncpus(&self) -> usize {
        self.running.len()
    }

    /// Ask for a CPU for `burst` ns. Returns what starts now: the requester on a free CPU (or
    /// on the one it holds, within its slice), or, when its slice is over and others wait,
    /// the first of them on the CPU it gives up.
    pub(crate) fn request(&mut self, now: Ns, who: Who, burst: Ns) -> Option<Started> {
        let floor = self.min_vruntime.saturating_sub(SLEEPER_CREDIT_NS);
        let v = self.vruntime(who);
        *v = (*v).max(floor);
        let key = *v;
        if let Some(cpu) = self.held.iter().position(|h| *h == Some(who)) {
            self.held[cpu] = None;
            // It keeps the CPU while nobody waits, or within its slice for those that woke
            // while it was protected (unless one of them made it ineligible, `preempt`); one
            // that woke after takes the CPU now.
            let within = now < self.slice_end[cpu] && !self.preempt[cpu] && self.first_queued().is_some_and(|q| q < self.protect_end[cpu]);
            if within || self.runq.is_empty() {
                if now >= self.slice_end[cpu] {
                    // The tick that ended its slice picked it again: a new slice from there.
                    let picked = now.checked_div(self.tick).map_or(now, |ticks| ticks * self.tick);
                    self.new_slice(cpu, picked);
                }
                return Some(self.start(now, cpu, who, burst, key, 0));
            }
            // Its slice is over and others wait: it queues behind them.
            self.enqueue(now, who, burst, key);
            return self.fill(now, cpu as u16);
        }
        if let Some(cpu) = (0..self.running.len()).find(|&c| self.running[c].is_none() && self.held[c].is_none()) {
            self.new_slice(cpu, now);
            return Some(self.start(now, cpu, who, burst, key, 0));
        }
        self.wakeup_preempt(key);
        self.enqueue(now, who, burst, key);
        None
    }

    /// EEVDF's wakeup preemption (`check_preempt_wakeup_fair`): a woken entity that has run
    /// less than a runner (a sleeper placed with the lag it is owed) makes that runner
    /// ineligible, and `pick_eevdf` protects only an eligible current: the runner that has
    /// run most among those gives up its CPU at the end of its burst (the kernel's preempts
    /// it within microseconds: traced on 6.18, fio woken beside two spinners ran 5 µs later).
    /// Only under EEVDF (`tick` set): the older schedulers' slices hold whoever waits.
    fn wakeup_preempt(&mut self, key: Ns) {
        if self.tick == 0 {
            return;
        }
        let mut victim: Option<(usize, Ns)> = None;
        for (c, who) in self.running.iter().enumerate() {
            let Some(w) = *who else { continue };
            let v = self.vruntime_of(w);
            if v > key && !self.preempt[c] && victim.is_none_or(|(_, best)| v > best) {
                victim = Some((c, v));
            }
        }
        if let Some((c, _)) = victim {
            self.preempt[c] = true;
            self.preempted = self.running[c].map(|w| (c as u16, w));
        }
    }

    /// A slice picked at `at` on `cpu`: protected for `slice`, over at the first tick after
    /// that, where the scheduler notices (EEVDF's `update_curr` at the tick).
    fn new_slice(&mut self, cpu: usize, at: Ns) {
        let end = at + self.slice;
        self.protect_end[cpu] = end;
        self.slice_end[cpu] = if self.tick == 0 { end } else { end.div_ceil(self.tick) * self.tick };
    }

    /// When the next burst to run was queued.
    fn first_queued(&self) -> Option<Ns> {
        let Reverse((_, tag)) = *self.runq.peek()?;
        Some(self.waiting[slot_of(tag) as usize].queued)
    }

    fn start(&mut self, now: Ns, cpu: usize, who: Who, burst: Ns, key: Ns, waited: Ns) -> Started {
        self.running[cpu] = Some(who);
        self.gen[cpu] = self.gen[cpu].wrapping_add(1);
        self.burst_end[cpu] = now + burst;
        self.min_vruntime = self.min_vruntime.max(key);
        self.charge(who, burst);
        Started {
            cpu: cpu as u16,
            who,
            end: now + burst,
            waited,
            gen: self.gen[cpu],
        }
    }

    fn enqueue(&mut self, now: Ns, who: Who, burst: Ns, key: Ns) {
        self.seq += 1;
        let w = Waiting { who, burst, queued: now };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.waiting[s as usize] = w;
                s
            }
            None => {
                self.waiting.push(w);
                (self.waiting.len() - 1) as u32
            }
        };
        debug_assert!(slot < 1 << SLOT_BITS && self.seq < 1 << (64 - SLOT_BITS));
        self.runq.push(Reverse((key, (self.seq << SLOT_BITS) | slot as u64)));
    }

    /// The burst on `cpu` finished: returns who finished and, without slices, the first
    /// waiting burst, started on it now. With slices the CPU stays held for the entity until
    /// [`CpuPool::fill`], so that its next burst, asked for meanwhile, continues its slice.
    pub(crate) fn finish(&mut self, now: Ns, cpu: u16) -> (Option<Who>, Option<Started>) {
        let who = self.running[cpu as usize].take();
        if self.slice == 0 {
            return (who, self.fill(now, cpu));
        }
        self.held[cpu as usize] = who;
        (who, None)
    }

    /// What followed a finished burst has run: a CPU its entity did not ask for again goes to
    /// the first waiting burst, which starts a slice; returns it.
    pub(crate) fn fill(&mut self, now: Ns, cpu: u16) -> Option<Started> {
        let c = cpu as usize;
        self.held[c] = None;
        if self.running[c].is_some() {
            return None;
        }
        // The CPU changes hands (or goes idle): a preemption asked of its runner is done.
        self.preempt[c] = false;
        let Reverse((key, tag)) = self.runq.pop()?;
        let slot = slot_of(tag);
        let Waiting { who, burst, queued } = self.waiting[slot as usize];
        self.free_slots.push(slot);
        self.new_slice(c, now);
        Some(self.start(now, c, who, burst, key, now - queued))
    }

    /// Entities running or waiting for a CPU (vmstat `r`).
    /// The entity whose burst runs on `cpu`, if any.
    pub(crate) fn running_on(&self, cpu: usize) -> Option<Who> {
        self.running[cpu]
    }

    pub(crate) fn runnable(&self) -> u32 {
        (self.running.iter().filter(|c| c.is_some()).count() + self.runq.len()) as u32
    }

    #[cfg(test)]
    pub(crate) fn busy_ns(&self) -> Ns {
        self.busy_ns
    }

    /// CPU time interrupts took, ns (part of [`CpuPool::busy_ns`]).
    #[cfg(test)]
    pub(crate) fn irq_ns(&self) -> Ns {
        self.irq_ns
    }

    /// An interrupt's `cost` ns at `now` (a completion's hard and soft irq): it runs at once
    /// on the next CPU in turn, and a burst running there ends that much later. On an idle or
    /// held CPU it takes time nobody was using. Returns the CPU.
    pub(crate) fn steal(&mut self, now: Ns, cost: Ns) -> u16 {
        let cpu = self.irq_cpu;
        self.irq_cpu = (cpu + 1) % self.running.len();
        if self.running[cpu].is_some() && self.burst_end[cpu] > now {
            self.burst_end[cpu] += cost;
        }
        self.busy_ns += cost;
        self.gauge.busy.set(self.busy_ns);
        self.irq_ns += cost;
        cpu as u16
    }

    /// Whether burst number `gen` is still the one on `cpu`: one cut short by a preemption
    /// left a `CpuDone` behind that must be ignored.
    pub(crate) fn is_current(&self, cpu: u16, gen: u32) -> bool {
        self.gen[cpu as usize] == gen
    }

    /// The runner the last wakeup asked to give up its CPU, once.
    pub(crate) fn take_preempted(&mut self) -> Option<(u16, Who)> {
        self.preempted.take()
    }

    /// Cut the burst on `cpu` short at `now` (a preempted burst whose work needs no finishing,
    /// a spinner's): it ends now, and the time it did not run is given back. Returns that time
    /// and the burst's new number, for its `CpuDone`.
    pub(crate) fn cut_short(&mut self, now: Ns, cpu: u16) -> (Ns, u32) {
        let c = cpu as usize;
        let left = self.burst_end[c].saturating_sub(now);
        if let Some(who) = self.running[c] {
            let v = self.vruntime(who);
            *v = v.saturating_sub(left);
        }
        self.busy_ns -= left;
        self.gauge.busy.set(self.busy_ns);
        self.burst_end[c] = now;
        self.gen[c] = self.gen[c].wrapping_add(1);
        (left, self.gen[c])
    }

    /// When the burst on `cpu` ends: a `CpuDone` that fires before it was put off by
    /// interrupts and must be scheduled again.
    pub(crate) fn ends_at(&self, cpu: u16) -> Ns {
        self.burst_end[cpu as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLICE: Ns = 3_000_000;

    /// A burst ends and nothing follows it at once: the CPU goes to the first waiter.
    fn finish_and_fill(p: &mut CpuPool, now: Ns, cpu: u16) -> (Option<Who>, Option<Started>) {
        let (who, next) = p.finish(now, cpu);
        (who, next.or_else(|| p.fill(now, cpu)))
    }

    #[test]
    fn bursts_queue_when_cpus_are_busy() {
        let mut p = CpuPool::new(1, 3, 0, 0, (SLICE, 0));
        let a = p.request(0, Who::Task(0), 100).expect("free cpu");
        assert_eq!(a.end, 100);
        assert!(p.request(10, Who::Task(1), 50).is_none());
        assert!(p.request(20, Who::Task(2), 50).is_none());
        assert_eq!(p.runnable(), 3);
        let (who, next) = finish_and_fill(&mut p, 100, 0);
        assert_eq!(who, Some(Who::Task(0)));
        let n = next.expect("queued burst starts");
        assert_eq!((n.who, n.end, n.waited), (Who::Task(1), 150, 90));
    }

    #[test]
    fn the_entity_that_ran_least_goes_first() {
        let mut p = CpuPool::new(1, 3, 1, 0, (SLICE, 0));
        // Task 0 has run a lot, task 1 a little.
        p.request(0, Who::Task(0), 2_000_000).expect("free cpu");
        finish_and_fill(&mut p, 2_000_000, 0);
        p.request(2_000_000, Who::Task(1), 100).expect("free cpu");
        finish_and_fill(&mut p, 2_000_100, 0);
        p.request(2_000_100, Who::Flusher(0), 500).expect("free cpu");
        // Both wake while the CPU is busy; task 0 asked first but task 1 is served first.
        assert!(p.request(2_000_200, Who::Task(0), 10).is_none());
        assert!(p.request(2_000_300, Who::Task(1), 10).is_none());
        let (_, n) = finish_and_fill(&mut p, 2_000_600, 0);
        assert_eq!(n.expect("next").who, Who::Task(1));
        let (_, n) = finish_and_fill(&mut p, 2_000_610, 0);
        assert_eq!(n.expect("next").who, Who::Task(0));
    }

    #[test]
    fn a_running_task_keeps_its_cpu_for_its_slice_then_yields() {
        let mut p = CpuPool::new(1, 2, 0, 0, (SLICE, 0));
        p.request(0, Who::Task(0), 1_000_000).expect("free cpu");
        assert!(p.request(10, Who::Task(1), 1_000_000).is_none(), "task 1 waits");
        // Task 0's next burst follows at once, 1 ms into its 3 ms slice: it goes on running.
        assert_eq!(p.finish(1_000_000, 0).0, Some(Who::Task(0)));
        let again = p.request(1_000_000, Who::Task(0), 1_000_000).expect("continues");
        assert_eq!((again.who, again.cpu), (Who::Task(0), 0));
        assert!(p.fill(1_000_000, 0).is_none(), "the CPU is taken");
        p.finish(2_000_000, 0);
        p.request(2_000_000, Who::Task(0), 1_000_000).expect("2 ms in: still its slice");
        p.fill(2_000_000, 0);
        // 3 ms: the slice is over and task 1 has waited: task 0 queues, task 1 runs.
        p.finish(3_000_000, 0);
        let next = p.request(3_000_000, Who::Task(0), 1_000_000).expect("the CPU changes hands");
        assert_eq!((next.who, next.waited), (Who::Task(1), 3_000_000 - 10));
        assert_eq!(p.runnable(), 2);
    }

    #[test]
    fn a_cpu_whose_task_goes_to_sleep_goes_to_the_waiter_and_is_not_given_twice() {
        let mut p = CpuPool::new(1, 3, 0, 0, (SLICE, 0));
        p.request(0, Who::Task(0), 100).expect("free cpu");
        assert!(p.request(10, Who::Task(1), 100).is_none());
        p.finish(100, 0);
        // While task 0's next step runs, task 2 wakes: the held CPU is not free for it.
        assert!(p.request(100, Who::Task(2), 100).is_none());
        let n = p.fill(100, 0).expect("task 0 slept: the first waiter runs");
        assert_eq!(n.who, Who::Task(1));
        assert_eq!(p.runnable(), 2);
    }

    #[test]
    fn without_slices_the_first_waiter_takes_the_cpu_as_a_burst_ends() {
        let mut p = CpuPool::new(1, 2, 0, 0, (0, 0));
        p.request(0, Who::Task(0), 100).expect("free cpu");
        assert!(p.request(10, Who::Task(1), 100).is_none());
        let (who, next) = p.finish(100, 0);
        assert_eq!((who, next.map(|n| n.who)), (Some(Who::Task(0)), Some(Who::Task(1))));
        assert!(p.request(100, Who::Task(0), 100).is_none(), "task 0 waits its turn");
    }

    /// A CPU-bound task (100 µs bursts back to back from 0) and a task woken at `wake` that
    /// has run `ran` ns before: when the woken one gets the CPU, under EEVDF's 1.5 ms protected
    /// slice and a 4 ms tick.
    fn eevdf_wait(wake: Ns, ran: Ns) -> Ns {
        let mut p = CpuPool::new(1, 2, 0, 0, (1_500_000, 4_000_000));
        p.vr_task[1] = ran;
        p.request(0, Who::Task(0), 100_000).expect("free cpu");
        let mut t = 0;
        loop {
            t += 100_000;
            if t > wake && p.runq.is_empty() {
                // It wakes during the burst that ends at t.
                assert!(p.request(wake, Who::Task(1), 10).is_none(), "the CPU is busy");
            }
            p.finish(t, 0);
            let next = p.request(t, Who::Task(0), 100_000).expect("the CPU is taken");
            if next.who == Who::Task(1) {
                return t;
            }
            assert!(p.fill(t, 0).is_none());
        }
    }

    #[test]
    fn eevdf_a_task_woken_while_an_eligible_runner_is_protected_waits_for_the_tick() {
        // The woken task has run as much as the runner when it wakes: no preemption.
        let more = |wake: Ns| wake + 50_000;
        // Woken 0.45 ms after the runner's pick (within its 1.5 ms): it runs at the 4 ms tick.
        assert_eq!(eevdf_wait(450_000, more(450_000)), 4_000_000);
        // Woken at 2.05 ms, after the protection: at the end of the runner's burst.
        assert_eq!(eevdf_wait(2_050_000, more(2_050_000)), 2_100_000);
        // From the tick at 4 ms the runner, picked again, is protected anew until 5.5 ms.
        assert_eq!(eevdf_wait(4_250_000, more(4_250_000)), 8_000_000);
    }

    /// Traced on 6.18 (fio reading at queue depth 1 beside two CPU-bound processes on two
    /// CPUs): the completion's wakeup switched to fio 5 µs later (p99 18 µs), the spinner
    /// preempted. The sleeper wakes with the lag it is owed, which makes the runner ineligible,
    /// and an ineligible runner is not protected.
    #[test]
    fn eevdf_a_woken_sleeper_that_ran_less_takes_the_cpu_from_a_spinner() {
        assert_eq!(eevdf_wait(450_000, 0), 500_000, "at the end of the spinner's burst");
        assert_eq!(eevdf_wait(4_250_000, 0), 4_300_000);
    }

    #[test]
    fn an_interrupt_stretches_the_burst_it_lands_on_and_takes_turns_among_cpus() {
        let mut p = CpuPool::new(2, 1, 0, 1, (0, 0));
        p.request(0, Who::Task(0), 100).expect("free cpu");
        assert_eq!(p.steal(10, 5), 0, "the first interrupt lands on CPU 0");
        assert_eq!(p.ends_at(0), 105, "the task's burst ends 5 ns later");
        assert_eq!(p.steal(20, 7), 1, "the next on CPU 1, idle");
        assert_eq!(p.ends_at(0), 105);
        let b = p.request(20, Who::Kernel(0), 3).expect("an idle CPU is not held by an interrupt");
        assert_eq!((b.cpu, b.end), (1, 23));
        assert_eq!((p.busy_ns(), p.irq_ns()), (100 + 3 + 12, 12));
    }

    #[test]
    fn a_long_sleeper_keeps_only_bounded_credit() {
        let mut p = CpuPool::new(1, 2, 0, 0, (SLICE, 0));
        // Task 1 runs 20 ms while task 0 sleeps; then both queue behind a burst.
        p.request(0, Who::Task(1), 20_000_000).expect("free cpu");
        finish_and_fill(&mut p, 20_000_000, 0);
        p.request(20_000_000, Who::Task(1), 1).expect("free cpu");
        assert!(p.request(20_000_000, Who::Task(0), 1).is_none());
        // Task 0 was placed at min_vruntime - credit, not at 0: it has at most 3 ms of lead.
        assert!(p.vr_task[0] >= 20_000_000 - SLEEPER_CREDIT_NS, "vruntime {}", p.vr_task[0]);
    }
}
