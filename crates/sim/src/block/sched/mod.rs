//! I/O schedulers ("elevators"). Each is one file behind [`Elevator`].
//!
//! The elevator keeps its own copy of what it needs to know about a queued request
//! ([`ElvRq`]); the block layer keeps the request's pages. Ids are block-layer request ids.

use crate::config::{QueueConfig, SchedulerKind};
use crate::drivers::Op;
use crate::Ns;

pub mod cfq;
pub mod deadline_2002;
pub mod deadline_26;
pub mod mq_deadline;
pub mod none;
mod sorted;

/// What an elevator knows about one queued request.
#[derive(Clone, Copy, Debug)]
pub struct ElvRq {
    pub id: u32,
    pub op: Op,
    pub sector: u64,
    pub nr_sectors: u64,
    /// Synchronous request (reads, REQ_SYNC writes).
    pub sync: bool,
    /// The submitting process, for per-process schedulers (CFQ): a task's id + 1, 0 for a
    /// kernel thread.
    pub owner: u32,
}

impl ElvRq {
    pub fn end(&self) -> u64 {
        self.sector + self.nr_sectors
    }
}

/// A request for the schedulers' tests (reads are synchronous).
#[cfg(test)]
pub(crate) fn test_rq(id: u32, op: Op, sector: u64, nr: u64) -> ElvRq {
    ElvRq {
        id,
        op,
        sector,
        nr_sectors: nr,
        sync: op == Op::Read,
        owner: 0,
    }
}

/// The block layer's view of the requests an elevator holds, for the elevators' property
/// tests: ids handed out and reused, and each live request as merges left it.
#[cfg(test)]
pub(crate) mod book {
    use super::{ElvRq, Merge};
    use crate::drivers::Op;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Default)]
    pub struct Book {
        pub live: HashMap<u32, (Op, u64, u64)>,
        free: Vec<u32>,
        next: u32,
    }

    impl Book {
        /// A new request: its id (a freed one first, as the block layer's pool does).
        pub fn add(&mut self, op: Op, sector: u64, nr: u64) -> u32 {
            let id = self.free.pop().unwrap_or_else(|| {
                self.next += 1;
                self.next - 1
            });
            self.live.insert(id, (op, sector, nr));
            id
        }

        /// The elevator merged a bio into `id` on `side`: it must fit there.
        pub fn merged(&mut self, id: u32, side: Merge, op: Op, sector: u64, nr: u64, max: u64) -> Result<(), TestCaseError> {
            let e = self.live.get_mut(&id).expect("merged into a live request");
            prop_assert_eq!(e.0, op);
            match side {
                Merge::Back => prop_assert_eq!(e.1 + e.2, sector),
                Merge::Front => prop_assert_eq!(sector + nr, e.1),
            }
            e.1 = e.1.min(sector);
            e.2 += nr;
            prop_assert!(e.2 <= max);
            Ok(())
        }

        /// The elevator handed `r` out: it was live, and is as the block layer knows it.
        pub fn out(&mut self, r: &ElvRq) -> Result<(), TestCaseError> {
            let e = self.live.remove(&r.id).expect("dispatched a live request");
            prop_assert_eq!((r.op, r.sector, r.nr_sectors), e);
            Ok(())
        }

        /// The request's slot is free for reuse.
        pub fn release(&mut self, id: u32) {
            self.free.push(id);
        }
    }
}

/// Which side of a queued request a bio merged onto.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merge {
    /// The bio starts where the request ends.
    Back,
    /// The bio ends where the request starts.
    Front,
}

pub trait Elevator {
    fn name(&self) -> &'static str;
    /// Try to merge a bio (`op`, `sector`, `nr_sectors`) into a queued request without
    /// exceeding `max_sectors`. On success the elevator updates its copy of the request and
    /// returns the request id and the merge side.
    fn try_merge(&mut self, op: Op, sector: u64, nr_sectors: u64, max_sectors: u64) -> Option<(u32, Merge)>;
    /// Queue a new request at `now`.
    fn insert(&mut self, now: Ns, rq: ElvRq);
    /// Pick the next request to send to the device at `now`, if any.
    fn dispatch(&mut self, now: Ns) -> Option<ElvRq>;
    /// Requests queued and not yet dispatched.
    fn queued(&self) -> usize;
    /// Depth limit for allocations that are not synchronous reads (`dd_limit_depth`);
    /// `None` = no extra limit.
    fn async_depth(&self) -> Option<u32> {
        None
    }
    /// The device completed request `id` (schedulers that track requests in the driver).
    fn completed(&mut self, _now: Ns, _id: u32) {}
    /// When the scheduler wants to be run again though nothing else happens (CFQ's idle
    /// slice timer).
    fn next_timer(&self) -> Option<Ns> {
        None
    }
    /// The timer of [`Elevator::next_timer`] ran out: do what the kernel's timer callback does
    /// (CFQ's `cfq_idle_slice_timer` expires the slice whether or not the driver has room).
    /// Afterwards `next_timer` must be later than `now` or None.
    fn timer_fired(&mut self, _now: Ns) {}
}

/// Build the scheduler a queue is configured with.
pub fn build(q: &QueueConfig) -> Box<dyn Elevator> {
    match q.scheduler {
        SchedulerKind::None => Box::new(none::NoneSched::new()),
        SchedulerKind::Deadline2002 => Box::new(deadline_2002::Deadline2002::new(&q.iosched)),
        SchedulerKind::Deadline26 => Box::new(deadline_26::Deadline26::new(&q.iosched, q.front_merges_allowed())),
        SchedulerKind::Cfq2620 => Box::new(cfq::Cfq::new(cfq::CfqVersion::V2620, q.cfq)),
        SchedulerKind::Cfq2622 => Box::new(cfq::Cfq::new(cfq::CfqVersion::V2622, q.cfq)),
        SchedulerKind::MqDeadline => {
            Box::new(mq_deadline::MqDeadline::new(&q.iosched, q.nr_requests, q.front_merges_allowed()).with_nomerges(q.nomerges))
        }
    }
}

impl QueueConfig {
    /// `nomerges` = 0 allows front merges if the scheduler tunable does.
    pub fn front_merges_allowed(&self) -> bool {
        self.nomerges == 0 && self.iosched.front_merges
    }
}
