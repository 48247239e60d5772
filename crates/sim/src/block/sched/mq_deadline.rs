//! mq-deadline (stub, being written).
use super::{Elevator, ElvRq, Merge};
use crate::config::DeadlineTunables;
use crate::drivers::Op;
use crate::Ns;
pub struct MqDeadline;
impl MqDeadline {
    pub fn new(_t: &DeadlineTunables, _nr_requests: u32, _front_merges: bool) -> Self {
        MqDeadline
    }
}
impl Elevator for MqDeadline {
    fn name(&self) -> &'static str {
        "mq-deadline"
    }
    fn try_merge(&mut self, _op: Op, _s: u64, _n: u64, _m: u64) -> Option<(u32, Merge)> {
        None
    }
    fn insert(&mut self, _now: Ns, _rq: ElvRq) {}
    fn dispatch(&mut self, _now: Ns) -> Option<ElvRq> {
        None
    }
    fn queued(&self) -> usize {
        0
    }
}
