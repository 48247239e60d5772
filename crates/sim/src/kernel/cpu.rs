//! N CPUs and one run queue ordered by virtual runtime.
//!
//! A CPU burst (a page-cache copy, a flusher's page walk, a wakeup) runs to completion once
//! it gets a CPU; there is no preemption or time slicing. Bursts in the model are short (a
//! 1 MiB copy is ~0.25 ms), so the error against CFS/EEVDF is a fraction of a millisecond of
//! queueing. What is kept from CFS/EEVDF is *who goes first*: the waiting entity that has
//! run least (smallest vruntime), with sleepers placed no further back than half a
//! scheduling latency behind the queue's minimum. This matters when a hundred writers wake
//! at the same jiffy: a FIFO would serve them in the same order every time and lock some of
//! them into a permanently worse phase, which the real scheduler does not.

use crate::Ns;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// CPU time from a wakeup to the task running again: `try_to_wake_up`, the context switch
/// and the return into the interrupted kernel path (a few µs on current x86).
pub const WAKEUP_COST_NS: Ns = 2_000;

/// `sysctl_sched_latency` / 2: the most vruntime credit a sleeper keeps (CFS `place_entity`).
const SLEEPER_CREDIT_NS: Ns = 3_000_000;

/// Who runs on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Who {
    Task(u32),
    Flusher(u16),
}

/// A burst waiting for a CPU, as the run queue orders it: vruntime at enqueue, then the
/// arrival sequence (upper 40 bits) with the slot of its details in `waiting` (lower 24): 16
/// bytes, so a sift moves little (a thousand writers waking at one jiffy make a deep queue).
type Queued = (Ns, u64);

const SLOT_BITS: u32 = 24;

/// What a queued burst is: the entity, the burst length and when it was queued.
#[derive(Clone, Copy)]
struct Waiting {
    who: Who,
    burst: Ns,
    queued: Ns,
}

pub struct CpuPool {
    running: Vec<Option<Who>>,
    runq: BinaryHeap<Reverse<Queued>>,
    waiting: Vec<Waiting>,
    free_slots: Vec<u32>,
    seq: u64,
    /// vruntime of tasks and flushers, indexed by their ids.
    vr_task: Vec<Ns>,
    vr_flusher: Vec<Ns>,
    min_vruntime: Ns,
    busy_ns: Ns,
}

/// A burst that starts now on `cpu` and ends at `end`.
pub struct Started {
    pub cpu: u16,
    pub who: Who,
    pub end: Ns,
    /// Time it waited in the run queue.
    pub waited: Ns,
}

impl CpuPool {
    pub fn new(n: u32, tasks: usize, flushers: usize) -> Self {
        CpuPool {
            running: vec![None; n.max(1) as usize],
            runq: BinaryHeap::new(),
            waiting: Vec::new(),
            free_slots: Vec::new(),
            seq: 0,
            vr_task: vec![0; tasks],
            vr_flusher: vec![0; flushers],
            min_vruntime: 0,
            busy_ns: 0,
        }
    }

    fn vruntime(&mut self, who: Who) -> &mut Ns {
        match who {
            Who::Task(t) => &mut self.vr_task[t as usize],
            Who::Flusher(f) => &mut self.vr_flusher[f as usize],
        }
    }

    /// Account `burst` to `who` as it starts; the queue's minimum follows the runner.
    fn charge(&mut self, who: Who, burst: Ns) {
        let v = self.vruntime(who);
        *v += burst;
        self.busy_ns += burst;
    }

    pub fn ncpus(&self) -> usize {
        self.running.len()
    }

    /// Ask for a CPU for `burst` ns. Returns the start if a CPU is free now.
    pub fn request(&mut self, now: Ns, who: Who, burst: Ns) -> Option<Started> {
        let floor = self.min_vruntime.saturating_sub(SLEEPER_CREDIT_NS);
        let v = self.vruntime(who);
        *v = (*v).max(floor);
        let key = *v;
        if let Some(cpu) = self.running.iter().position(|c| c.is_none()) {
            self.running[cpu] = Some(who);
            self.min_vruntime = self.min_vruntime.max(key);
            self.charge(who, burst);
            return Some(Started {
                cpu: cpu as u16,
                who,
                end: now + burst,
                waited: 0,
            });
        }
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
        None
    }

    /// The burst on `cpu` finished: returns who finished and the next burst started on it.
    pub fn finish(&mut self, now: Ns, cpu: u16) -> (Option<Who>, Option<Started>) {
        let who = self.running[cpu as usize].take();
        let next = self.runq.pop().map(|Reverse((key, tag))| {
            let slot = (tag & ((1 << SLOT_BITS) - 1)) as u32;
            let Waiting { who: w, burst, queued } = self.waiting[slot as usize];
            self.free_slots.push(slot);
            self.running[cpu as usize] = Some(w);
            self.min_vruntime = self.min_vruntime.max(key);
            self.charge(w, burst);
            Started {
                cpu,
                who: w,
                end: now + burst,
                waited: now - queued,
            }
        });
        (who, next)
    }

    /// Entities running or waiting for a CPU (vmstat `r`).
    pub fn runnable(&self) -> u32 {
        (self.running.iter().filter(|c| c.is_some()).count() + self.runq.len()) as u32
    }

    pub fn busy_ns(&self) -> Ns {
        self.busy_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_queue_when_cpus_are_busy() {
        let mut p = CpuPool::new(1, 3, 0);
        let a = p.request(0, Who::Task(0), 100).expect("free cpu");
        assert_eq!(a.end, 100);
        assert!(p.request(10, Who::Task(1), 50).is_none());
        assert!(p.request(20, Who::Task(2), 50).is_none());
        assert_eq!(p.runnable(), 3);
        let (who, next) = p.finish(100, 0);
        assert_eq!(who, Some(Who::Task(0)));
        let n = next.expect("queued burst starts");
        assert_eq!((n.who, n.end, n.waited), (Who::Task(1), 150, 90));
    }

    #[test]
    fn the_entity_that_ran_least_goes_first() {
        let mut p = CpuPool::new(1, 3, 1);
        // Task 0 has run a lot, task 1 a little.
        p.request(0, Who::Task(0), 2_000_000).expect("free cpu");
        p.finish(2_000_000, 0);
        p.request(2_000_000, Who::Task(1), 100).expect("free cpu");
        p.finish(2_000_100, 0);
        p.request(2_000_100, Who::Flusher(0), 500).expect("free cpu");
        // Both wake while the CPU is busy; task 0 asked first but task 1 is served first.
        assert!(p.request(2_000_200, Who::Task(0), 10).is_none());
        assert!(p.request(2_000_300, Who::Task(1), 10).is_none());
        let (_, n) = p.finish(2_000_600, 0);
        assert_eq!(n.expect("next").who, Who::Task(1));
        let (_, n) = p.finish(2_000_610, 0);
        assert_eq!(n.expect("next").who, Who::Task(0));
    }

    #[test]
    fn a_long_sleeper_keeps_only_bounded_credit() {
        let mut p = CpuPool::new(1, 2, 0);
        // Task 1 runs 20 ms while task 0 sleeps; then both queue behind a burst.
        p.request(0, Who::Task(1), 20_000_000).expect("free cpu");
        p.finish(20_000_000, 0);
        p.request(20_000_000, Who::Task(1), 1).expect("free cpu");
        assert!(p.request(20_000_000, Who::Task(0), 1).is_none());
        // Task 0 was placed at min_vruntime - credit, not at 0: it has at most 3 ms of lead.
        assert!(p.vr_task[0] >= 20_000_000 - SLEEPER_CREDIT_NS, "vruntime {}", p.vr_task[0]);
    }
}
