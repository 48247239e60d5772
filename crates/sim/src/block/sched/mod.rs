//! I/O schedulers ("elevators"). Each is one file behind [`Elevator`].
//!
//! The elevator keeps its own copy of what it needs to know about a queued request
//! ([`ElvRq`]); the block layer keeps the request's pages. Ids are block-layer request ids.

use crate::config::{Conflict, IoPrio, Knob, QueueConfig, SchedulerKind};
use crate::drivers::Op;
use crate::Ns;

pub(crate) mod bfq;
pub(crate) mod cfq;
pub(crate) mod deadline_2002;
pub(crate) mod deadline_26;
pub(crate) mod kyber;
mod merge_index;
pub(crate) mod mq_deadline;
pub(crate) mod none;
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
    /// The submitter's I/O priority (`rq->ioprio`: class and level).
    pub prio: IoPrio,
    /// The cgroup the request is charged to (index into the scenario's tree; `None`: the
    /// root), for schedulers that schedule groups (bfq).
    pub blkcg: Option<u16>,
}

/// A cgroup as a scheduler with group scheduling sees it: its parent (index in the same
/// list, `None` for a child of the root) and its weight on this device.
#[derive(Clone, Copy, Debug)]
pub struct ElvGroup {
    pub parent: Option<u16>,
    pub weight: u64,
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
        prio: IoPrio::default(),
        blkcg: None,
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

/// A tracepoint an elevator fired (`kyber:*`), with its time; the machine turns it into a
/// trace record of the queue's device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElvTrace {
    /// `kyber_latency`: the percentile bucket of a domain's histogram (`io`: I/O latency,
    /// else total), numerator = bucket + 1 over 4 quarters of the target.
    KyberLatency {
        domain: u8,
        io: bool,
        percentile: u8,
        numerator: u8,
        samples: u32,
    },
    /// `kyber_adjust`: a domain's token pool resized.
    KyberAdjust { domain: u8, depth: u32 },
    /// `kyber_throttled`: a domain had requests but no token.
    KyberThrottled { domain: u8 },
}

/// `blk_bio_list_merge`: try to merge a bio into one of the last [`BIO_LIST_MERGE_SCAN`]
/// requests of a software queue list, newest first (`queued`, oldest first). A request of
/// another operation is skipped; the first contiguous one is final: if the merge would exceed
/// `max_sectors` the bio is not merged at all.
pub(crate) fn bio_list_merge<'a>(
    queued: impl DoubleEndedIterator<Item = &'a mut ElvRq>,
    op: Op,
    sector: u64,
    nr_sectors: u64,
    max_sectors: u64,
) -> Option<(u32, Merge)> {
    let bio_end = sector + nr_sectors;
    for rq in queued.rev().take(BIO_LIST_MERGE_SCAN) {
        if rq.op != op {
            continue;
        }
        let side = if rq.end() == sector {
            Merge::Back
        } else if rq.sector == bio_end {
            Merge::Front
        } else {
            continue;
        };
        if rq.nr_sectors + nr_sectors > max_sectors {
            return None;
        }
        if side == Merge::Front {
            rq.sector = sector;
        }
        rq.nr_sectors += nr_sectors;
        return Some((rq.id, side));
    }
    None
}

/// `blk_bio_list_merge` looks at this many requests from the tail of a list.
pub(crate) const BIO_LIST_MERGE_SCAN: usize = 8;

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
    /// Whether a request of `op` (synchronous or not) counts against [`Elevator::async_depth`]:
    /// mq-deadline's `dd_limit_depth` spares only synchronous reads, kyber's every
    /// synchronous request.
    fn depth_limited(&self, op: Op, _sync: bool) -> bool {
        op != Op::Read
    }
    /// The scheduler-tag limit for a request of `op` (synchronous or not) out of
    /// `nr_requests` when it changes with the elevator's state (bfq's `bfq_limit_depth`);
    /// `None` = no limit. Asked only of elevators whose [`Elevator::has_shallow_depth`] is
    /// true; the others declare a fixed [`Elevator::async_depth`].
    fn shallow_depth(&self, _op: Op, _sync: bool, _nr_requests: u32) -> Option<u32> {
        None
    }
    /// Whether [`Elevator::shallow_depth`] sets the tag limits.
    fn has_shallow_depth(&self) -> bool {
        false
    }
    /// The scenario's cgroups, parents first: a scheduler that schedules groups (bfq) makes
    /// one for each. Called once, before any request.
    fn set_cgroups(&mut self, _groups: &[ElvGroup]) {}
    /// The device completed request `id` (schedulers that track requests in the driver).
    fn completed(&mut self, _now: Ns, _id: u32) {}
    /// Whether a completion runs the queue though the device had room: kyber's token waits
    /// and bfq's `bfq_schedule_dispatch` do (the model runs them on every completion); where
    /// it does not, a request the elevator declined waits for the next insert, a tag freed on
    /// a full device, or blk-mq's delayed run.
    fn runs_queue_on_completion(&self) -> bool {
        true
    }
    /// When the scheduler wants to be run again though nothing else happens (CFQ's idle
    /// slice timer).
    fn next_timer(&self) -> Option<Ns> {
        None
    }
    /// The timer of [`Elevator::next_timer`] ran out: do what the kernel's timer callback does
    /// (CFQ's `cfq_idle_slice_timer` expires the slice whether or not the driver has room).
    /// Afterwards `next_timer` must be later than `now` or None.
    fn timer_fired(&mut self, _now: Ns) {}
    /// Start recording tracepoints: the regular ones, and with `frequent` those that may fire
    /// on every dispatch. False for an elevator without any, which the machine then never
    /// asks for them.
    fn trace_on(&mut self, _frequent: bool) -> bool {
        false
    }
    /// Move the tracepoints recorded since the last call into `out`, oldest first.
    fn take_trace(&mut self, _out: &mut Vec<(Ns, ElvTrace)>) {}
}

/// What an elevator declares about itself, so the scenario parser, `wblab kernels`, the
/// reference tables and the queue all work from one list ([`ELEVATORS`]).
pub struct ElevatorInfo {
    pub kind: SchedulerKind,
    /// Other names `queue/scheduler` accepts for it (`deadline` for mq-deadline).
    pub aliases: &'static [&'static str],
    /// One line: what it is.
    pub summary: &'static str,
    /// The kernels that shipped it, as the reference says it.
    pub kernels: &'static str,
    /// Its `queue/iosched/` tunables.
    pub tunables: &'static [Knob<QueueConfig>],
    /// Set its tunables to its defaults (when it is selected).
    pub defaults: fn(&mut QueueConfig),
    /// Checks across its tunables and the queue's knobs.
    pub check: fn(&QueueConfig) -> Result<(), Conflict>,
    pub build: fn(&QueueConfig) -> Box<dyn Elevator>,
}

/// An elevator without cross-knob checks.
pub fn no_check(_: &QueueConfig) -> Result<(), Conflict> {
    Ok(())
}

// docs:begin elevator-list
crate::registry!(SHIPPED_ELEVATORS, ELEVATORS: &ElevatorInfo, "elevators";
    &none::INFO,
    &mq_deadline::INFO,
    &kyber::INFO,
    &bfq::INFO,
    &deadline_26::INFO,
    &deadline_2002::INFO,
    &cfq::INFO_2620,
    &cfq::INFO_2622;
    test: &test_noop::INFO
);
// docs:end elevator-list

#[cfg(any(test, feature = "test-extensions"))]
pub mod test_noop;

/// The elevator `kind`.
pub fn elevator(kind: SchedulerKind) -> Option<&'static ElevatorInfo> {
    ELEVATORS.iter().copied().find(|e| e.kind == kind)
}

/// The elevator `queue/scheduler` names `name` (its name or an alias).
pub fn elevator_named(name: &str) -> Option<&'static ElevatorInfo> {
    ELEVATORS
        .iter()
        .copied()
        .find(|e| e.kind.name() == name || e.aliases.contains(&name))
}

/// Build the scheduler a queue is configured with.
pub fn build(q: &QueueConfig) -> Box<dyn Elevator> {
    let info = elevator(q.scheduler).expect("the scenario names a listed elevator");
    (info.build)(q)
}

impl QueueConfig {
    /// Switch to elevator `kind` as writing `queue/scheduler` does: its tunables start at
    /// their defaults. (The caller sets `nr_requests`, which the switch also resets.)
    pub fn select_elevator(&mut self, kind: SchedulerKind) {
        self.scheduler = kind;
        self.tunables.clear();
        if let Some(info) = elevator(kind) {
            (info.defaults)(self);
        }
    }

    /// `nomerges` = 0 allows front merges if the scheduler tunable does.
    pub fn front_merges_allowed(&self) -> bool {
        self.nomerges == 0 && self.iosched.front_merges
    }
}

#[cfg(test)]
mod registry_tests {
    use super::*;
    use crate::config::{blk_mq_queue, KnobKind, KnobValue};

    #[test]
    fn every_elevator_is_listed_once_under_unique_names() {
        let mut names: Vec<&str> = ELEVATORS
            .iter()
            .flat_map(|e| std::iter::once(e.kind.name()).chain(e.aliases.iter().copied()))
            .collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "a name or alias is used twice");
        for e in ELEVATORS {
            assert_eq!(elevator_named(e.kind.name()).map(|x| x.kind), Some(e.kind));
            assert!(!e.summary.is_empty() && !e.kernels.is_empty(), "{}", e.kind.name());
        }
    }

    #[test]
    fn every_elevator_builds_and_its_tunables_set_what_they_read() {
        for e in ELEVATORS {
            let mut q = blk_mq_queue(true, true, 32);
            q.select_elevator(e.kind);
            assert_eq!((e.check)(&q), Ok(()), "{}: defaults fail its own check", e.kind.name());
            let el = (e.build)(&q);
            assert_eq!(el.queued(), 0);
            for t in e.tunables {
                let was = (t.get)(&q);
                let v = match t.kind {
                    KnobKind::Bool => KnobValue::Bool(!was.bool()),
                    KnobKind::Count { min, .. } => KnobValue::Uint(min.max(was.uint()) + 1),
                    KnobKind::Millis { scale, .. } => KnobValue::Uint(was.uint() + scale),
                    _ => panic!("{}: {} has a kind elevators do not use", e.kind.name(), t.key),
                };
                (t.set)(&mut q, v);
                assert_eq!((t.get)(&q), v, "{}: {}", e.kind.name(), t.key);
                assert!(t.key.starts_with("queue/iosched/"), "{}", t.key);
            }
        }
    }

    #[test]
    fn the_test_elevator_runs_a_machine() {
        // The worked example of docs/extending.md: registered by its file and one line.
        use crate::config::{DeviceModelConfig, HddParams, JobConfig, Scenario};
        let mut sc = Scenario::one_device("noop", DeviceModelConfig::Hdd(HddParams::default()), 1 << 30, 2, 2_000_000_000);
        sc.devices[0].queue.select_elevator(SchedulerKind("noop-test"));
        sc.add_task(
            "dd",
            2,
            0,
            JobConfig::Dd {
                bs: 1 << 20,
                size: None,
                fsync: false,
                direct: false,
            },
        );
        let r = crate::run(&sc, &mut crate::machine::NoProgress).expect("laws hold");
        assert!(r.devices[0].bytes_written > 0);
        assert_eq!(
            serde_json::to_value(&sc.devices[0].queue).unwrap()["tunables"]["noop_test_depth"],
            0
        );
    }
}
