//! mq-deadline as in Linux 6.18 (`block/mq-deadline.c`).
//!
//! # Model
//!
//! Every queued request sits in two structures of its direction (read or write):
//!
//! * a sector-sorted set (the kernel's rb-tree, `sort_list`), keyed by `(sector, id)`;
//! * an arrival-ordered FIFO (`fifo_list`) whose entries carry a deadline
//!   `insert time + read_expire / write_expire` (`dd_insert_request`). All requests of one
//!   direction get the same offset, so arrival order is deadline order.
//!
//! Dispatch (`__dd_dispatch_request`):
//!
//! 1. *Batch continuation.* Look up the first request of the direction of the last dispatch
//!    (`last_dir`, initially write) whose start sector is `>=` the start sector of the last
//!    request dispatched in that direction (`deadline_next_request` → `deadline_from_pos`
//!    with `latest_pos`). If there is one and fewer than `fifo_batch` requests were
//!    dispatched in the current batch, dispatch it. An expired FIFO head does not interrupt
//!    a batch.
//! 2. *Direction choice.* If reads are queued, reads are chosen unless writes are queued and
//!    `starved++ >= writes_starved` (the counter is only bumped while writes wait); choosing
//!    writes resets `starved`. With no reads, writes are chosen if any.
//! 3. *Start of a batch.* In the chosen direction, if the FIFO head has expired
//!    (`deadline_check_fifo`: `now >= deadline`) or there is no request at or after that
//!    direction's `latest_pos` (the sorted list is exhausted going up), start from the FIFO
//!    head; otherwise continue in sector order from `latest_pos`. The batch counter restarts.
//! 4. The request leaves both structures; `latest_pos[dir]` becomes its start sector.
//!
//! I/O priorities (5.14+): each class (`ionice`: realtime, best effort, idle; kernel threads
//! count as best effort) has its own set of the structures above (`dd_per_prio`); batching,
//! `starved` and `last_dir` are shared. `dd_dispatch_request` first serves a best-effort or
//! idle request queued more than `prio_aging_expire` (10 s) ago when two classes or more have
//! requests queued or in the device (`dd_dispatch_prio_aged_requests`), then the classes in
//! order, going to a lower one only while the higher one has nothing queued *or in the
//! device* (`dd_queued` counts inserted minus completed).
//!
//! Bio merges (`blk_mq_sched_try_merge` → `elv_merge`), tried in the kernel's order:
//!
//! 1. the one-hit cache `last_merge` (set at insert when empty and after every bio merge,
//!    cleared when that request is dispatched): back merge if the request ends at the bio,
//!    front merge if it starts where the bio ends. This path ignores the `front_merges`
//!    tunable, as `blk_try_merge` does. With `nomerges = 1` only this path is tried;
//! 2. the back-merge hash (`elv_rqhash_find`): a request of the same direction ending where
//!    the bio starts;
//! 3. `dd_request_merge`, only if front merges are allowed: a request of the same direction
//!    starting where the bio ends (front merge; the sort key changes, as in
//!    `dd_request_merged`).
//!
//! The first candidate found is final: if the merged size would exceed `max_sectors`
//! (`ll_back_merge_fn` / `ll_front_merge_fn`) the bio is not merged anywhere, exactly as
//! `blk_mq_sched_try_merge` gives up after the first `elv_merge` answer.
//!
//! `async_depth` (`dd_limit_depth` / `dd_depth_updated`): the revision of `mq-deadline.c`
//! read for this model (with the 6.16+ `dd_init_sched(q, eq)` signature) sets
//! `dd->async_depth = q->nr_requests` in `dd_depth_updated` (called from `dd_init_hctx`),
//! and `dd_limit_depth` applies it as the shallow depth of every allocation except
//! synchronous reads, so by default it limits nothing. From 5.14 the value was
//! `max(1, 3 * nr_requests / 4)`; the 2024 fix "block/mq-deadline: Fix the tag reservation
//! code" changed it to `nr_requests`. A non-zero configured value stands for a sysfs write
//! (which the kernel clamps to at least 1).
//!
//! # Simplifications
//!
//! * Bio merges look for a candidate in every priority set (the kernel's merge checks refuse
//!   a request of another I/O priority).
//! * No `dispatch` list: nothing is inserted at the head (no requeues, no flush sequences,
//!   no passthrough).
//! * No request-to-request merges (`attempt_back_merge`/`attempt_front_merge` after a bio
//!   merge, insert-time merges in `blk_mq_sched_try_insert_merge`): the elevator API cannot
//!   free a request. The FIFO deadline of a request is therefore never inherited.
//! * The back-merge hash is per direction here (the kernel's hash is per queue and rejects a
//!   hit of the other operation); equal end sectors resolve to the smaller id.
//! * Segment limits (`max_segments`, `max_segment_size`) are not checked, only
//!   `max_sectors`. Zoned devices are not modelled (6.18 handles them in blk-zoned, not here).
//! * Deadlines are exact nanoseconds rather than jiffies.
//!
//! # Cost
//!
//! Insert, merge and dispatch are O(log n) in the number of queued requests. Per-request
//! state lives in a vector indexed by the block-layer request id (ids are dense pool
//! indices), FIFOs are ring buffers with lazy removal, so at steady state nothing is
//! allocated except B-tree nodes.
use super::sorted::{dir_of, SortedQueue, NSEC_PER_MSEC, READ, WRITE};
use super::{Elevator, ElvRq, Merge};
use super::{ElevatorInfo, SchedulerKind};
use crate::config::DeadlineTunables;
use crate::config::{Conflict, IoPrioClass, Knob, KnobKind, QueueConfig};
use crate::drivers::Op;
use crate::knob;
use crate::Ns;
/// `INT_MAX`: the bound of the deadline schedulers' `int` tunables.
pub(crate) const INT_MAX: u64 = i32::MAX as u64;

/// The deadline schedulers' tunables, shared by the variants that have them.
pub(crate) const READ_EXPIRE: Knob<QueueConfig> = knob!(
    QueueConfig,
    "queue/iosched/read_expire",
    KnobKind::Millis { max: INT_MAX, scale: 1 },
    "ms a read waits before its FIFO forces a batch",
    iosched.read_expire_ms: u64
);
pub(crate) const WRITE_EXPIRE: Knob<QueueConfig> = knob!(
    QueueConfig,
    "queue/iosched/write_expire",
    KnobKind::Millis { max: INT_MAX, scale: 1 },
    "ms a write waits before its FIFO forces a batch",
    iosched.write_expire_ms: u64
);
pub(crate) const FIFO_BATCH: Knob<QueueConfig> = knob!(
    QueueConfig,
    "queue/iosched/fifo_batch",
    KnobKind::Count { min: 1, max: INT_MAX },
    "requests dispatched in one sorted batch before the FIFOs are checked again",
    iosched.fifo_batch: u32
);
pub(crate) const WRITES_STARVED: Knob<QueueConfig> = knob!(
    QueueConfig,
    "queue/iosched/writes_starved",
    KnobKind::Count { min: 0, max: INT_MAX },
    "read batches that may pass waiting writes",
    iosched.writes_starved: u32
);
pub(crate) const FRONT_MERGES: Knob<QueueConfig> = knob!(
    QueueConfig,
    "queue/iosched/front_merges",
    KnobKind::Bool,
    "try merging a bio in front of a queued request",
    iosched.front_merges: bool
);
pub(crate) const ASYNC_DEPTH: Knob<QueueConfig> = knob!(
    QueueConfig,
    "queue/iosched/async_depth",
    KnobKind::Count { min: 0, max: INT_MAX },
    "tags writes and async reads may hold; 0 means nr_requests (the 6.18 default), larger values are capped by it",
    iosched.async_depth: u32
);

pub(crate) const PRIO_AGING_EXPIRE: Knob<QueueConfig> = knob!(
    QueueConfig,
    "queue/iosched/prio_aging_expire",
    KnobKind::Millis { max: INT_MAX, scale: 1 },
    "ms after which a request of a lower I/O priority class is served though higher ones wait",
    iosched.prio_aging_expire_ms: u64
);

/// `mq-deadline` in the list of elevators.
pub(crate) static INFO: ElevatorInfo = ElevatorInfo {
    kind: SchedulerKind::MQ_DEADLINE,
    aliases: &["deadline"],
    summary: "sorted batches with read and write FIFO deadlines; reads preferred, writes_starved bounds it",
    kernels: "blk-mq (4.11+); the default of rotational single-queue disks",
    tunables: &[
        READ_EXPIRE,
        WRITE_EXPIRE,
        FIFO_BATCH,
        WRITES_STARVED,
        FRONT_MERGES,
        ASYNC_DEPTH,
        PRIO_AGING_EXPIRE,
    ],
    defaults: |q| q.iosched = DeadlineTunables::default(),
    check: async_depth_fits,
    build: |q| Box::new(MqDeadline::new(&q.iosched, q.nr_requests, q.front_merges_allowed()).with_nomerges(q.nomerges)),
};

/// `async_depth` cannot exceed `nr_requests` (`dd_async_depth_store` clamps; the model
/// refuses, so the scenario says what runs).
fn async_depth_fits(q: &QueueConfig) -> Result<(), Conflict> {
    if q.iosched.async_depth > q.nr_requests {
        return Err(Conflict {
            keys: &["queue/iosched/async_depth", "queue/nr_requests"],
            message: format!("async_depth {} is more than nr_requests {}", q.iosched.async_depth, q.nr_requests),
            hint: format!("0 means nr_requests ({}); larger values are capped by it", q.nr_requests),
        });
    }
    Ok(())
}

/// The requests of one I/O priority class (`struct dd_per_prio`).
#[derive(Default)]
struct PerPrio {
    /// Per direction `sort_list` and `fifo_list`, plus the back-merge index.
    q: SortedQueue,
    /// Start sector of the request most recently dispatched in each direction.
    latest_pos: [u64; 2],
    /// Requests inserted and completed (`stats`): their difference is `dd_queued`, which
    /// counts the class's requests in the device as well as those waiting here.
    inserted: u32,
    completed: u32,
}

/// Priority sets in dispatch order (`DD_RT_PRIO`, `DD_BE_PRIO`, `DD_IDLE_PRIO`).
const PRIOS: usize = 3;
const BE_PRIO: usize = 1;

fn prio_index(class: IoPrioClass) -> usize {
    match class {
        IoPrioClass::Rt => 0,
        IoPrioClass::Be => BE_PRIO,
        IoPrioClass::Idle => 2,
    }
}

pub(crate) struct MqDeadline {
    per_prio: [PerPrio; PRIOS],
    /// The priority set of each request inserted and not completed, by request id.
    prio_of: Vec<Option<u8>>,
    /// `prio_aging_expire` in ns.
    prio_aging_expire: Ns,
    /// `fifo_expire[]` in ns.
    expire: [Ns; 2],
    fifo_batch: u32,
    writes_starved: u32,
    front_merges: bool,
    /// `nomerges = 1`: only the one-hit `last_merge` cache is tried.
    one_hit_only: bool,
    async_depth: u32,
    last_dir: usize,
    batching: u32,
    starved: u32,
    last_merge: Option<u32>,
}

impl MqDeadline {
    /// `t`: the iosched tunables; `nr_requests`: the queue's (sched tag) depth;
    /// `front_merges`: whether `dd_request_merge` front merges are allowed (the tunable and
    /// `nomerges == 0`).
    pub(crate) fn new(t: &DeadlineTunables, nr_requests: u32, front_merges: bool) -> Self {
        MqDeadline {
            per_prio: Default::default(),
            prio_of: Vec::new(),
            prio_aging_expire: t.prio_aging_expire_ms * NSEC_PER_MSEC,
            expire: [t.read_expire_ms * NSEC_PER_MSEC, t.write_expire_ms * NSEC_PER_MSEC],
            fifo_batch: t.fifo_batch,
            writes_starved: t.writes_starved,
            front_merges,
            one_hit_only: false,
            async_depth: if t.async_depth == 0 { nr_requests } else { t.async_depth },
            // dd_init_sched starts with last_dir = DD_WRITE.
            last_dir: WRITE,
            batching: 0,
            starved: 0,
            last_merge: None,
        }
    }

    /// Apply the queue's `nomerges` (1 = only one-hit merges through `last_merge`; 2 is
    /// handled by the caller, which then never calls `try_merge`).
    pub(crate) fn with_nomerges(mut self, nomerges: u32) -> Self {
        self.one_hit_only = nomerges == 1;
        self
    }

    /// Requests in the current batch (`dd->batching`).
    #[cfg(test)]
    pub(crate) fn batching(&self) -> u32 {
        self.batching
    }

    /// Times reads were preferred over waiting writes (`dd->starved`).
    #[cfg(test)]
    pub(crate) fn starved(&self) -> u32 {
        self.starved
    }

    /// First queued request of `dir` in set `p` at or after its `latest_pos`
    /// (`deadline_next_request`).
    fn next_request(&self, p: usize, dir: usize) -> Option<u32> {
        let pp = &self.per_prio[p];
        pp.q.next_from(dir, pp.latest_pos[dir], 0)
    }

    /// Take `id` off both structures of set `p` (`deadline_remove_request`).
    fn remove(&mut self, p: usize, id: u32) -> ElvRq {
        if self.last_merge == Some(id) {
            self.last_merge = None;
        }
        self.per_prio[p].q.remove(id)
    }

    /// The set request `id` waits in.
    fn prio_of(&self, id: u32) -> usize {
        self.prio_of[id as usize].expect("a queued request") as usize
    }

    /// Commit a merge candidate, or refuse it if the result would exceed `max_sectors`.
    fn finish_merge(&mut self, id: u32, side: Merge, nr_sectors: u64, max_sectors: u64) -> Option<(u32, Merge)> {
        let p = self.prio_of(id);
        let merged = self.per_prio[p].q.try_grow(id, side, nr_sectors, max_sectors);
        if merged.is_some() {
            self.last_merge = Some(id);
        }
        merged
    }

    /// `dd_queued`: requests of set `p` inserted and not completed.
    fn dd_queued(&self, p: usize) -> u32 {
        self.per_prio[p].inserted - self.per_prio[p].completed
    }

    /// `__dd_dispatch_request` on set `p`: the next request by the batch, direction and FIFO
    /// rules, unless it was queued after `latest_start` (then nothing, as the kernel returns
    /// NULL after choosing).
    fn dispatch_from(&mut self, p: usize, now: Ns, latest_start: Ns) -> Option<ElvRq> {
        let id = 'pick: {
            // Continue the current batch in sector order.
            if let Some(id) = self.next_request(p, self.last_dir) {
                if self.batching < self.fifo_batch {
                    break 'pick id;
                }
            }
            let q = &self.per_prio[p].q;
            // Choose a direction.
            let dir = if !q.is_empty(READ) {
                if !q.is_empty(WRITE) && {
                    let s = self.starved;
                    self.starved += 1;
                    s >= self.writes_starved
                } {
                    self.starved = 0;
                    WRITE
                } else {
                    READ
                }
            } else if !q.is_empty(WRITE) {
                self.starved = 0;
                WRITE
            } else {
                return None;
            };
            let q = &mut self.per_prio[p].q;
            let head = q.fifo_head(dir).expect("direction with queued requests has a FIFO head");
            let expired = now >= q.expires(head);
            let id = match self.next_request(p, dir) {
                Some(next) if !expired => next,
                _ => head,
            };
            self.last_dir = dir;
            self.batching = 0;
            id
        };
        let q = &self.per_prio[p].q;
        let dir = dir_of(q.rq(id).op);
        // started_after: the request's start time is its deadline less its direction's expiry.
        if q.expires(id) - self.expire[dir] > latest_start {
            return None;
        }
        self.batching += 1;
        let rq = self.remove(p, id);
        self.per_prio[p].latest_pos[dir] = rq.sector;
        Some(rq)
    }

    /// `dd_dispatch_prio_aged_requests`: with requests of two classes or more in play, a
    /// best-effort or idle request queued more than `prio_aging_expire` ago goes first.
    fn dispatch_aged(&mut self, now: Ns) -> Option<ElvRq> {
        if (0..PRIOS).filter(|&p| self.dd_queued(p) > 0).count() < 2 {
            return None;
        }
        let latest_start = now.checked_sub(self.prio_aging_expire)?;
        (BE_PRIO..PRIOS).find_map(|p| self.dispatch_from(p, now, latest_start))
    }
}

impl Elevator for MqDeadline {
    fn name(&self) -> &'static str {
        "mq-deadline"
    }

    fn try_merge(&mut self, op: Op, sector: u64, nr_sectors: u64, max_sectors: u64) -> Option<(u32, Merge)> {
        let dir = dir_of(op);
        let bio_end = sector + nr_sectors;
        // 1. One-hit cache (blk_try_merge on q->last_merge).
        if let Some(id) = self.last_merge {
            let rq = self.per_prio[self.prio_of(id)].q.rq(id);
            if rq.op == op {
                if rq.end() == sector {
                    return self.finish_merge(id, Merge::Back, nr_sectors, max_sectors);
                }
                if rq.sector == bio_end {
                    return self.finish_merge(id, Merge::Front, nr_sectors, max_sectors);
                }
            }
        }
        if self.one_hit_only {
            return None;
        }
        // 2. Back merge through the end-sector index (the kernel's hash spans the classes).
        if let Some(id) = self.per_prio.iter().find_map(|pp| pp.q.ending_at(dir, sector)) {
            return self.finish_merge(id, Merge::Back, nr_sectors, max_sectors);
        }
        // 3. dd_request_merge: front merge through the sort tree.
        if self.front_merges {
            if let Some(id) = self.per_prio.iter().find_map(|pp| pp.q.starting_at(dir, bio_end)) {
                return self.finish_merge(id, Merge::Front, nr_sectors, max_sectors);
            }
        }
        None
    }

    fn insert(&mut self, now: Ns, rq: ElvRq) {
        let p = prio_index(rq.prio.class);
        let i = rq.id as usize;
        if self.prio_of.len() <= i {
            self.prio_of.resize(i + 1, None);
        }
        self.prio_of[i] = Some(p as u8);
        self.per_prio[p].inserted += 1;
        self.per_prio[p].q.insert(rq, now + self.expire[dir_of(rq.op)], true);
        if self.last_merge.is_none() {
            self.last_merge = Some(rq.id);
        }
    }

    /// `dd_dispatch_request`: aged lower-class requests first, then the classes in order,
    /// a lower one only while no higher one has requests queued or in the device.
    fn dispatch(&mut self, now: Ns) -> Option<ElvRq> {
        // Only best effort in play (no ionice): the rules below come to this.
        if self.dd_queued(0) == 0 && self.dd_queued(PRIOS - 1) == 0 {
            return self.dispatch_from(BE_PRIO, now, now);
        }
        if let Some(rq) = self.dispatch_aged(now) {
            return Some(rq);
        }
        for p in 0..PRIOS {
            let rq = self.dispatch_from(p, now, now);
            if rq.is_some() || self.dd_queued(p) > 0 {
                return rq;
            }
        }
        None
    }

    /// `dd_finish_request` only counts the completion: an idle or best-effort request held back
    /// behind a higher class's requests in the device waits for the next insert or blk-mq's
    /// 3 ms delayed run, not for the higher class's last completion.
    fn runs_queue_on_completion(&self) -> bool {
        false
    }

    fn queued(&self) -> usize {
        self.per_prio.iter().map(|pp| pp.q.len(READ) + pp.q.len(WRITE)).sum()
    }

    fn completed(&mut self, _now: Ns, id: u32) {
        if let Some(p) = self.prio_of.get_mut(id as usize).and_then(Option::take) {
            self.per_prio[p as usize].completed += 1;
        }
    }

    fn async_depth(&self) -> Option<u32> {
        Some(self.async_depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Ns = NSEC_PER_MSEC;

    fn tun() -> DeadlineTunables {
        DeadlineTunables::default()
    }

    use super::super::test_rq as rq;

    fn drain(dd: &mut MqDeadline, now: Ns) -> Vec<u32> {
        let mut v = Vec::new();
        while let Some(r) = dd.dispatch(now) {
            v.push(r.id);
        }
        v
    }

    fn with_class(id: u32, op: Op, sector: u64, class: IoPrioClass) -> ElvRq {
        ElvRq {
            prio: crate::config::IoPrio { class, level: 4 },
            blkcg: None,
            ..rq(id, op, sector, 8)
        }
    }

    #[test]
    fn an_idle_request_waits_while_best_effort_ones_are_queued_or_in_the_device() {
        let mut dd = MqDeadline::new(&tun(), 256, true);
        dd.insert(0, with_class(1, Op::Write, 1000, IoPrioClass::Idle));
        dd.insert(0, with_class(2, Op::Read, 5000, IoPrioClass::Be));
        dd.insert(0, with_class(3, Op::Read, 0, IoPrioClass::Rt));
        assert_eq!(drain(&mut dd, MS), vec![3], "realtime first; best effort waits for it to complete");
        dd.completed(2 * MS, 3);
        assert_eq!(
            drain(&mut dd, 2 * MS),
            vec![2],
            "then best effort; idle waits while it is in the device"
        );
        dd.completed(3 * MS, 2);
        assert_eq!(drain(&mut dd, 3 * MS), vec![1], "idle once nothing else is in play");
    }

    #[test]
    fn a_lower_class_request_older_than_prio_aging_expire_goes_first() {
        let mut dd = MqDeadline::new(&tun(), 256, true);
        dd.insert(0, with_class(1, Op::Write, 1000, IoPrioClass::Idle));
        dd.insert(0, with_class(2, Op::Read, 5000, IoPrioClass::Be));
        dd.insert(9_000 * MS, with_class(3, Op::Read, 9000, IoPrioClass::Be));
        assert_eq!(dd.dispatch(9_000 * MS).map(|r| r.id), Some(2));
        assert_eq!(dd.dispatch(9_999 * MS).map(|r| r.id), Some(3));
        assert!(dd.dispatch(9_999 * MS).is_none(), "best effort is in the device: idle waits");
        // 10 s after it was queued, the idle write is served though best effort is in play.
        assert_eq!(dd.dispatch(10_000 * MS).map(|r| r.id), Some(1));
    }

    #[test]
    fn async_depth_defaults_to_nr_requests() {
        let dd = MqDeadline::new(&tun(), 256, true);
        assert_eq!(dd.async_depth(), Some(256));
        let t = DeadlineTunables { async_depth: 17, ..tun() };
        assert_eq!(MqDeadline::new(&t, 256, true).async_depth(), Some(17));
    }

    #[test]
    fn writes_dispatch_in_sector_order_and_wrap_to_fifo_head() {
        let mut dd = MqDeadline::new(&tun(), 64, true);
        // Inserted out of order; the first dispatch starts from the FIFO head (latest_pos 0
        // finds sector 100 first in sort order, which is also fine), then goes up.
        for (i, s) in [500u64, 100, 300, 200, 400].into_iter().enumerate() {
            dd.insert(0, rq(i as u32, Op::Write, s * 8, 8));
        }
        let order: Vec<u64> = std::iter::from_fn(|| dd.dispatch(MS)).map(|r| r.sector / 8).collect();
        assert_eq!(order, vec![100, 200, 300, 400, 500]);
        assert_eq!(dd.queued(), 0);

        // After dispatching sector 500, a new request below it is not "next" in sort order;
        // the batch goes on from the FIFO head when the sorted list is exhausted upward.
        let mut dd = MqDeadline::new(&tun(), 64, true);
        dd.insert(0, rq(1, Op::Write, 5000, 8));
        assert_eq!(dd.dispatch(0).unwrap().id, 1);
        dd.insert(0, rq(2, Op::Write, 3000, 8));
        dd.insert(0, rq(3, Op::Write, 1000, 8));
        dd.insert(0, rq(4, Op::Write, 6000, 8));
        assert_eq!(drain(&mut dd, 0), vec![4, 2, 3]);
    }

    #[test]
    fn batch_of_fifo_batch_then_direction_switch_and_starvation() {
        let t = DeadlineTunables {
            fifo_batch: 4,
            writes_starved: 2,
            ..tun()
        };
        let mut dd = MqDeadline::new(&t, 256, true);
        // 20 reads and 20 writes, non-contiguous so nothing merges.
        for i in 0..20u32 {
            dd.insert(0, rq(i, Op::Read, 1_000_000 + i as u64 * 16, 8));
            dd.insert(0, rq(100 + i, Op::Write, 2_000_000 + i as u64 * 16, 8));
        }
        let ops: Vec<Op> = std::iter::from_fn(|| dd.dispatch(MS)).map(|r| r.op).collect();
        assert_eq!(ops.len(), 40);
        // dd_init_sched starts with last_dir = write and batching = 0, so the very first
        // dispatch continues a (virtual) write batch: W. After that, reads are preferred and
        // writes are starved twice (starved 0 -> 1 -> 2) before a write batch: R R W ...
        let expect_batch = |k: usize| if k.is_multiple_of(3) { Op::Write } else { Op::Read };
        for k in 0..8 {
            for j in 0..4 {
                assert_eq!(ops[k * 4 + j], expect_batch(k), "batch {k} item {j}: {ops:?}");
            }
        }
        // 5 read batches (k = 1, 2, 4, 5, 7) used up the reads; only writes remain.
        assert!(ops[32..].iter().all(|&o| o == Op::Write));
    }

    #[test]
    fn batch_is_sector_ordered_and_fifo_batch_long() {
        let t = DeadlineTunables { fifo_batch: 3, ..tun() };
        let mut dd = MqDeadline::new(&t, 256, true);
        // Reads at descending sectors (FIFO head is the highest sector).
        for i in 0..6u32 {
            dd.insert(0, rq(i, Op::Read, 10_000 - i as u64 * 100, 8));
        }
        for i in 0..3u32 {
            dd.insert(0, rq(10 + i, Op::Write, 50_000 + i as u64 * 100, 8));
        }
        // First dispatch continues the initial write "batch" (last_dir = write).
        let first = dd.dispatch(0).unwrap();
        assert_eq!(first.op, Op::Write);
        assert_eq!(dd.batching(), 1);
        // Two more writes complete that batch of 3.
        assert_eq!(dd.dispatch(0).unwrap().id, 11);
        assert_eq!(dd.dispatch(0).unwrap().id, 12);
        assert_eq!(dd.batching(), 3);
        // Reads now: the batch starts at the first read at/after latest_pos[read] = 0, the
        // lowest sector (9500), and goes up for exactly 3 requests.
        let ids: Vec<u32> = (0..3).map(|_| dd.dispatch(0).unwrap().id).collect();
        assert_eq!(ids, vec![5, 4, 3]);
        assert_eq!(dd.batching(), 3);
        // Next batch: no writes left, reads again from latest_pos (9700): 2, 1, 0.
        let ids: Vec<u32> = (0..3).map(|_| dd.dispatch(0).unwrap().id).collect();
        assert_eq!(ids, vec![2, 1, 0]);
        assert!(dd.dispatch(0).is_none());
    }

    #[test]
    fn starved_counts_only_while_writes_wait() {
        let t = DeadlineTunables { fifo_batch: 1, ..tun() };
        let mut dd = MqDeadline::new(&t, 256, true);
        for i in 0..5 {
            dd.insert(0, rq(i, Op::Read, i as u64 * 100, 8));
        }
        drain(&mut dd, 0);
        assert_eq!(dd.starved(), 0);
        dd.insert(0, rq(10, Op::Read, 10_000, 8));
        dd.insert(0, rq(11, Op::Read, 10_100, 8));
        dd.insert(0, rq(13, Op::Read, 10_200, 8));
        dd.insert(0, rq(12, Op::Write, 20_000, 8));
        // fifo_batch 1: every dispatch is a new direction choice.
        // starved: 0 >= 2? no -> read (1); 1 >= 2? no -> read (2); 2 >= 2 -> write (0).
        assert_eq!(dd.dispatch(0).unwrap().id, 10);
        assert_eq!(dd.starved(), 1);
        assert_eq!(dd.dispatch(0).unwrap().id, 11);
        assert_eq!(dd.starved(), 2);
        assert_eq!(dd.dispatch(0).unwrap().id, 12);
        assert_eq!(dd.starved(), 0);
        assert_eq!(dd.dispatch(0).unwrap().id, 13);
        assert_eq!(dd.starved(), 0);
    }

    #[test]
    fn expired_fifo_head_starts_the_batch() {
        let mut dd = MqDeadline::new(&tun(), 256, true);
        // Dispatch one write at a high sector so latest_pos is high.
        dd.insert(0, rq(1, Op::Write, 100_000, 8));
        assert_eq!(dd.dispatch(0).unwrap().id, 1);
        // Oldest write is at a low sector; newer ones are above latest_pos.
        dd.insert(10 * MS, rq(2, Op::Write, 1_000, 8));
        dd.insert(20 * MS, rq(3, Op::Write, 200_000, 8));
        dd.insert(20 * MS, rq(4, Op::Write, 300_000, 8));
        // The batch is still running (batching 1 < 16): sector order from latest_pos.
        assert_eq!(dd.dispatch(30 * MS).unwrap().id, 3);
        // Put back the situation at a batch boundary: exhaust the batch budget.
        let mut dd = MqDeadline::new(&DeadlineTunables { fifo_batch: 1, ..tun() }, 256, true);
        dd.insert(0, rq(1, Op::Write, 100_000, 8));
        assert_eq!(dd.dispatch(0).unwrap().id, 1);
        dd.insert(10 * MS, rq(2, Op::Write, 1_000, 8));
        dd.insert(20 * MS, rq(3, Op::Write, 200_000, 8));
        // Not expired (write_expire 5 s): continue upward from latest_pos.
        assert_eq!(dd.dispatch(1000 * MS).unwrap().id, 3);
        dd.insert(1000 * MS, rq(4, Op::Write, 400_000, 8));
        // Request 2 expires at 5010 ms: now it is served first even though 4 is next up.
        assert_eq!(dd.dispatch(5010 * MS).unwrap().id, 2);
        assert_eq!(dd.dispatch(5010 * MS).unwrap().id, 4);
    }

    #[test]
    fn expired_read_served_from_fifo_head() {
        let t = DeadlineTunables { fifo_batch: 2, ..tun() };
        let mut dd = MqDeadline::new(&t, 256, true);
        dd.insert(0, rq(1, Op::Read, 50_000, 8));
        assert_eq!(dd.dispatch(0).unwrap().id, 1);
        dd.insert(0, rq(2, Op::Read, 10, 8)); // old, low sector
        dd.insert(100 * MS, rq(3, Op::Read, 60_000, 8));
        dd.insert(100 * MS, rq(4, Op::Read, 70_000, 8));
        // Batch continues (batching 1 < 2): 3.
        assert_eq!(dd.dispatch(600 * MS).unwrap().id, 3);
        // New batch: read FIFO head (2, deadline 500 ms) expired -> 2 first, then 4.
        assert_eq!(dd.dispatch(600 * MS).unwrap().id, 2);
        assert_eq!(dd.dispatch(600 * MS).unwrap().id, 4);
    }

    #[test]
    fn back_and_front_merges_with_cap() {
        let mut dd = MqDeadline::new(&tun(), 256, true);
        dd.insert(0, rq(1, Op::Write, 1000, 8));
        dd.insert(0, rq(2, Op::Write, 5000, 8));
        // Back merge onto 1 (also the one-hit cache).
        assert_eq!(dd.try_merge(Op::Write, 1008, 8, 32), Some((1, Merge::Back)));
        // Back merge onto 2 through the end index.
        assert_eq!(dd.try_merge(Op::Write, 5008, 8, 32), Some((2, Merge::Back)));
        // Front merge onto 1: starts at 992.
        assert_eq!(dd.try_merge(Op::Write, 992, 8, 32), Some((1, Merge::Front)));
        // Other op does not merge.
        assert_eq!(dd.try_merge(Op::Read, 1016, 8, 32), None);
        // Cap: request 1 is 24 sectors; 24 + 16 > 32 fails, and no other candidate is tried.
        assert_eq!(dd.try_merge(Op::Write, 1016, 16, 32), None);
        assert_eq!(dd.try_merge(Op::Write, 1016, 8, 32), Some((1, Merge::Back)));
        let mut out: Vec<ElvRq> = std::iter::from_fn(|| dd.dispatch(0)).collect();
        out.sort_by_key(|r| r.id);
        assert_eq!((out[0].sector, out[0].nr_sectors), (992, 32));
        assert_eq!((out[1].sector, out[1].nr_sectors), (5000, 16));
    }

    #[test]
    fn front_merge_repositions_sort_key() {
        let t = DeadlineTunables { fifo_batch: 16, ..tun() };
        let mut dd = MqDeadline::new(&t, 256, true);
        dd.insert(0, rq(1, Op::Write, 100, 8));
        dd.insert(0, rq(2, Op::Write, 2000, 8));
        dd.insert(0, rq(3, Op::Write, 50, 8)); // last_merge stays 1
                                               // Front merge onto 2 via the sort tree: 2 now starts at 1992.
        assert_eq!(dd.try_merge(Op::Write, 1992, 8, 1024), Some((2, Merge::Front)));
        // Front merge onto 3 (starts at 50): it now starts at 42 -> sort order 3, 1, 2.
        assert_eq!(dd.try_merge(Op::Write, 42, 8, 1024), Some((3, Merge::Front)));
        let v: Vec<(u32, u64)> = std::iter::from_fn(|| dd.dispatch(0)).map(|r| (r.id, r.sector)).collect();
        assert_eq!(v, vec![(3, 42), (1, 100), (2, 1992)]);
    }

    #[test]
    fn front_merges_disabled() {
        let t = DeadlineTunables {
            front_merges: false,
            ..tun()
        };
        let mut dd = MqDeadline::new(&t, 256, false);
        dd.insert(0, rq(1, Op::Write, 1000, 8));
        dd.insert(0, rq(2, Op::Write, 2000, 8));
        // One-hit cache (request 1) still front-merges, like blk_try_merge.
        assert_eq!(dd.try_merge(Op::Write, 992, 8, 64), Some((1, Merge::Front)));
        // The sort-tree front merge is off: no merge onto 2.
        assert_eq!(dd.try_merge(Op::Write, 1992, 8, 64), None);
        // Back merges still work.
        assert_eq!(dd.try_merge(Op::Write, 2008, 8, 64), Some((2, Merge::Back)));
    }

    #[test]
    fn nomerges_one_only_uses_last_merge() {
        let mut dd = MqDeadline::new(&tun(), 256, false).with_nomerges(1);
        dd.insert(0, rq(1, Op::Write, 1000, 8));
        dd.insert(0, rq(2, Op::Write, 2000, 8));
        assert_eq!(dd.try_merge(Op::Write, 2008, 8, 64), None);
        assert_eq!(dd.try_merge(Op::Write, 1008, 8, 64), Some((1, Merge::Back)));
        // Once 1 is dispatched the cache is empty until the next insert.
        assert_eq!(dd.dispatch(0).unwrap().id, 1);
        assert_eq!(dd.try_merge(Op::Write, 2008, 8, 64), None);
        dd.insert(0, rq(3, Op::Write, 9000, 8));
        assert_eq!(dd.try_merge(Op::Write, 9008, 8, 64), Some((3, Merge::Back)));
    }

    #[test]
    fn last_merge_follows_merges() {
        let mut dd = MqDeadline::new(&tun(), 256, true);
        dd.insert(0, rq(1, Op::Write, 1000, 8));
        dd.insert(0, rq(2, Op::Write, 2000, 8));
        assert_eq!(dd.try_merge(Op::Write, 2008, 8, 64), Some((2, Merge::Back)));
        assert_eq!(dd.last_merge, Some(2));
        assert_eq!(dd.dispatch(0).unwrap().id, 1);
        assert_eq!(dd.last_merge, Some(2));
        assert_eq!(dd.dispatch(0).unwrap().id, 2);
        assert_eq!(dd.last_merge, None);
    }

    #[derive(Clone, Debug)]
    enum Act {
        Insert { write: bool, sector: u64, nr: u64 },
        Merge { write: bool, sector: u64, nr: u64 },
        Dispatch,
        Advance(u64),
    }

    fn act() -> impl Strategy<Value = Act> {
        prop_oneof![
            4 => (any::<bool>(), 0u64..64, 1u64..4).prop_map(|(w, s, n)| Act::Insert { write: w, sector: s * 8, nr: n * 8 }),
            3 => (any::<bool>(), 0u64..64, 1u64..4).prop_map(|(w, s, n)| Act::Merge { write: w, sector: s * 8, nr: n * 8 }),
            3 => Just(Act::Dispatch),
            1 => (0u64..2000).prop_map(Act::Advance),
        ]
    }

    proptest! {
        #[test]
        fn no_request_lost_or_duplicated(
            acts in proptest::collection::vec(act(), 1..300),
            batch in 0u32..6,
            starved in 0u32..4,
            front in any::<bool>(),
            nomerges in 0u32..2,
        ) {
            let t = DeadlineTunables { fifo_batch: batch, writes_starved: starved, front_merges: front, ..tun() };
            let mut dd = MqDeadline::new(&t, 64, front && nomerges == 0).with_nomerges(nomerges);
            let max = 64u64;
            let mut now: Ns = 0;
            let mut book = super::super::book::Book::default();
            for a in acts {
                match a {
                    Act::Insert { write, sector, nr } => {
                        let op = if write { Op::Write } else { Op::Read };
                        let id = book.add(op, sector, nr);
                        dd.insert(now, rq(id, op, sector, nr));
                    }
                    Act::Merge { write, sector, nr } => {
                        let op = if write { Op::Write } else { Op::Read };
                        if let Some((id, side)) = dd.try_merge(op, sector, nr, max) {
                            book.merged(id, side, op, sector, nr, max)?;
                        }
                    }
                    Act::Dispatch => {
                        if let Some(r) = dd.dispatch(now) {
                            book.out(&r)?;
                            book.release(r.id);
                        } else {
                            prop_assert!(book.live.is_empty());
                        }
                    }
                    Act::Advance(ms) => now += ms * MS,
                }
                prop_assert_eq!(dd.queued(), book.live.len());
            }
            // Drain: everything left comes out exactly once.
            now += 10_000 * MS;
            while let Some(r) = dd.dispatch(now) {
                book.out(&r)?;
            }
            prop_assert!(book.live.is_empty());
            prop_assert_eq!(dd.queued(), 0);
        }
    }
}
