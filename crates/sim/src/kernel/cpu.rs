//! N CPUs and one FIFO run queue.
//!
//! A CPU burst (a page-cache copy, a flusher's page walk) runs to completion once it gets a
//! CPU; there is no preemption or time slicing. Bursts in the model are short (a 1 MiB copy
//! is ~0.25 ms), so the error against CFS/EEVDF is a fraction of a millisecond of queueing.

use crate::Ns;
use std::collections::VecDeque;

/// Who runs on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    Task(u32),
    Flusher(u16),
}

pub struct CpuPool {
    running: Vec<Option<Who>>,
    runq: VecDeque<(Who, Ns, Ns)>,
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
    pub fn new(n: u32) -> Self {
        CpuPool {
            running: vec![None; n.max(1) as usize],
            runq: VecDeque::new(),
            busy_ns: 0,
        }
    }

    pub fn ncpus(&self) -> usize {
        self.running.len()
    }

    /// Ask for a CPU for `burst` ns. Returns the start if a CPU is free now.
    pub fn request(&mut self, now: Ns, who: Who, burst: Ns) -> Option<Started> {
        if let Some(cpu) = self.running.iter().position(|c| c.is_none()) {
            self.running[cpu] = Some(who);
            self.busy_ns += burst;
            return Some(Started {
                cpu: cpu as u16,
                who,
                end: now + burst,
                waited: 0,
            });
        }
        self.runq.push_back((who, burst, now));
        None
    }

    /// The burst on `cpu` finished: returns who finished and the next burst started on it.
    pub fn finish(&mut self, now: Ns, cpu: u16) -> (Option<Who>, Option<Started>) {
        let who = self.running[cpu as usize].take();
        let next = self.runq.pop_front().map(|(w, burst, queued)| {
            self.running[cpu as usize] = Some(w);
            self.busy_ns += burst;
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
    fn bursts_queue_fifo_when_cpus_are_busy() {
        let mut p = CpuPool::new(1);
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
}
