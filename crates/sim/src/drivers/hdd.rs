//! Rotating disk model (temporary FIFO stub until the real model lands).
use super::{DevRequest, Device};
use crate::config::HddParams;
use crate::engine::RngStream;
use crate::Ns;
use std::collections::VecDeque;

pub struct Hdd {
    p: HddParams,
    q: VecDeque<(u32, Ns)>,
    busy_until: Ns,
    busy: Ns,
    head: u64,
}
impl Hdd {
    pub fn new(p: HddParams, _size: u64, _rng: RngStream) -> Self {
        Hdd {
            p,
            q: VecDeque::new(),
            busy_until: 0,
            busy: 0,
            head: 0,
        }
    }
}
impl Device for Hdd {
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }
    fn in_flight(&self) -> u32 {
        self.q.len() as u32
    }
    fn dispatch(&mut self, now: Ns, rq: DevRequest) {
        let start = self.busy_until.max(now);
        let seek = if rq.sector == self.head { 0 } else { self.p.seek_average / 2 };
        let xfer = rq.bytes * 1_000_000_000 / self.p.transfer_outer;
        let end = start + seek + xfer + self.p.command_overhead;
        self.busy += end - start;
        self.busy_until = end;
        self.head = rq.sector + rq.bytes / 512;
        self.q.push_back((rq.id, end));
    }
    fn next_event(&self) -> Option<Ns> {
        self.q.front().map(|x| x.1)
    }
    fn advance(&mut self, now: Ns, done: &mut Vec<u32>) {
        while let Some(&(id, t)) = self.q.front() {
            if t > now {
                break;
            }
            self.q.pop_front();
            done.push(id);
        }
    }
    fn busy_ns(&self, _now: Ns) -> Ns {
        self.busy
    }
}
