//! Flash SSD model (stub, being written).
use super::{DevRequest, Device};
use crate::config::SsdParams;
use crate::engine::RngStream;
use crate::Ns;

pub struct Ssd {
    p: SsdParams,
    _rng: RngStream,
    _size: u64,
}
impl Ssd {
    pub fn new(p: SsdParams, size: u64, rng: RngStream) -> Self {
        Ssd { p, _rng: rng, _size: size }
    }
}
impl Device for Ssd {
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }
    fn in_flight(&self) -> u32 {
        0
    }
    fn dispatch(&mut self, _now: Ns, _rq: DevRequest) {}
    fn next_event(&self) -> Option<Ns> {
        None
    }
    fn advance(&mut self, _now: Ns, _done: &mut Vec<u32>) {}
    fn busy_ns(&self, _now: Ns) -> Ns {
        0
    }
}
