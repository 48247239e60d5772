//! Rotating disk model (stub, being written).
use crate::config::HddParams;
use crate::engine::RngStream;
use crate::Ns;
use super::{DevRequest, Device};

pub struct Hdd { p: HddParams, _rng: RngStream, _size: u64 }
impl Hdd { pub fn new(p: HddParams, size: u64, rng: RngStream) -> Self { Hdd { p, _rng: rng, _size: size } } }
impl Device for Hdd {
    fn queue_depth(&self) -> u32 { self.p.queue_depth }
    fn in_flight(&self) -> u32 { 0 }
    fn dispatch(&mut self, _now: Ns, _rq: DevRequest) {}
    fn next_event(&self) -> Option<Ns> { None }
    fn advance(&mut self, _now: Ns, _done: &mut Vec<u32>) {}
    fn busy_ns(&self, _now: Ns) -> Ns { 0 }
}
