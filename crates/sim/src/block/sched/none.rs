//! `none` (stub, being written).
use super::{ElvRq, Elevator, Merge};
use crate::drivers::Op;
use crate::Ns;
pub struct NoneSched;
impl NoneSched { pub fn new() -> Self { NoneSched } }
impl Default for NoneSched { fn default() -> Self { Self::new() } }
impl Elevator for NoneSched {
    fn name(&self) -> &'static str { "none" }
    fn try_merge(&mut self, _op: Op, _s: u64, _n: u64, _m: u64) -> Option<(u32, Merge)> { None }
    fn insert(&mut self, _now: Ns, _rq: ElvRq) {}
    fn dispatch(&mut self, _now: Ns) -> Option<ElvRq> { None }
    fn queued(&self) -> usize { 0 }
}
