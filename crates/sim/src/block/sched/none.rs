//! `none` (temporary FIFO stub).
use super::{Elevator, ElvRq, Merge};
use crate::drivers::Op;
use crate::Ns;
use std::collections::VecDeque;
pub struct NoneSched(VecDeque<ElvRq>);
impl NoneSched {
    pub fn new() -> Self {
        NoneSched(VecDeque::new())
    }
}
impl Default for NoneSched {
    fn default() -> Self {
        Self::new()
    }
}
impl Elevator for NoneSched {
    fn name(&self) -> &'static str {
        "none"
    }
    fn try_merge(&mut self, _op: Op, _s: u64, _n: u64, _m: u64) -> Option<(u32, Merge)> {
        None
    }
    fn insert(&mut self, _now: Ns, rq: ElvRq) {
        self.0.push_back(rq)
    }
    fn dispatch(&mut self, _now: Ns) -> Option<ElvRq> {
        self.0.pop_front()
    }
    fn queued(&self) -> usize {
        self.0.len()
    }
}
