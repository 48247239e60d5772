//! `none`: no I/O scheduler. Requests are dispatched in insertion order.
//!
//! Without an elevator, blk-mq (6.18) inserts requests that could not be issued directly into
//! the per-CPU software queue (`ctx->rq_lists`) in arrival order and dispatches them in that
//! order. Bio merging against those queued requests is `blk_mq_sched_bio_merge` →
//! `blk_bio_list_merge`: walk the software queue from its tail (newest first), looking at
//! no more than 8 requests; a request of another operation is skipped; a request the bio is
//! contiguous with is merged at its back (`request end == bio start`) or front
//! (`request start == bio end`). If that merge would exceed `max_sectors`
//! (`bio_attempt_back_merge` / `bio_attempt_front_merge` return `BIO_MERGE_FAILED`) the walk
//! stops and the bio is not merged anywhere. There is no `front_merges` tunable without an
//! elevator, and `nomerges = 1` does not restrict this path (only `nomerges = 2`, which the
//! caller handles, does).
//!
//! # Simplifications
//!
//! * One software queue (one CPU context, one hardware queue) instead of one per CPU.
//! * In the kernel, requests leave the software queue when the hardware queue is run and
//!   then wait on `hctx->dispatch` if the driver is busy, where they are no longer
//!   mergeable; here they stay mergeable until the device takes them. With `none`,
//!   `nr_requests` equals the device depth, so few requests ever wait here and most merging
//!   is plug merging, which the queue glue does when it builds requests.
//! * Segment limits are not checked, only `max_sectors`.
use super::{no_check, ElevatorInfo};
use super::{Elevator, ElvRq, Merge};
use crate::config::{DeadlineTunables, SchedulerKind};
use crate::drivers::Op;
use crate::Ns;
use std::collections::VecDeque;
/// `none` in the list of elevators.
pub(crate) static INFO: ElevatorInfo = ElevatorInfo {
    kind: SchedulerKind::NONE,
    aliases: &[],
    summary: "no scheduler: requests go to the device in arrival order, merged against the last 8 queued",
    kernels: "blk-mq (3.13+); the default of non-rotational devices, md and loop",
    tunables: &[],
    defaults: |q| q.iosched = DeadlineTunables::default(),
    check: no_check,
    build: |_| Box::new(NoneSched::new()),
};

pub(crate) struct NoneSched(VecDeque<ElvRq>);

impl NoneSched {
    pub(crate) fn new() -> Self {
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

    fn try_merge(&mut self, op: Op, sector: u64, nr_sectors: u64, max_sectors: u64) -> Option<(u32, Merge)> {
        super::bio_list_merge(self.0.iter_mut(), op, sector, nr_sectors, max_sectors)
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

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_rq as rq;

    #[test]
    fn fifo_order() {
        let mut s = NoneSched::new();
        for (i, sec) in [900u64, 100, 500, 300].into_iter().enumerate() {
            s.insert(0, rq(i as u32, Op::Write, sec, 8));
        }
        s.insert(0, rq(9, Op::Read, 50, 8));
        assert_eq!(s.queued(), 5);
        let ids: Vec<u32> = std::iter::from_fn(|| s.dispatch(0)).map(|r| r.id).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 9]);
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn back_and_front_merge_newest_first() {
        let mut s = NoneSched::new();
        s.insert(0, rq(1, Op::Write, 1000, 8));
        s.insert(0, rq(2, Op::Read, 1008, 8));
        // The read is skipped (other op); the write takes the back merge.
        assert_eq!(s.try_merge(Op::Write, 1008, 8, 64), Some((1, Merge::Back)));
        // Front merge onto the read.
        assert_eq!(s.try_merge(Op::Read, 1000, 8, 64), Some((2, Merge::Front)));
        let out: Vec<ElvRq> = std::iter::from_fn(|| s.dispatch(0)).collect();
        assert_eq!((out[0].id, out[0].sector, out[0].nr_sectors), (1, 1000, 16));
        assert_eq!((out[1].id, out[1].sector, out[1].nr_sectors), (2, 1000, 16));
    }

    #[test]
    fn merge_cap_stops_the_walk() {
        let mut s = NoneSched::new();
        s.insert(0, rq(1, Op::Write, 0, 8));
        s.insert(0, rq(2, Op::Write, 1000, 60));
        // Newest candidate (2) is full: the walk stops and 1 is never tried.
        assert_eq!(s.try_merge(Op::Write, 1060, 8, 64), None);
        assert_eq!(s.try_merge(Op::Write, 1060, 4, 64), Some((2, Merge::Back)));
        assert_eq!(s.try_merge(Op::Write, 8, 8, 64), Some((1, Merge::Back)));
    }

    #[test]
    fn only_eight_newest_are_scanned() {
        let mut s = NoneSched::new();
        s.insert(0, rq(0, Op::Write, 0, 8));
        for i in 1..=8u32 {
            s.insert(0, rq(i, Op::Write, 100_000 * i as u64, 8));
        }
        assert_eq!(s.try_merge(Op::Write, 8, 8, 64), None);
        s.dispatch(0);
        assert_eq!(s.try_merge(Op::Write, 100_008, 8, 64), Some((1, Merge::Back)));
    }
}
