//! BFQ, Budget Fair Queueing, as in Linux 6.18 (`block/bfq-iosched.c`, `bfq-wf2q.c`):
//! per-process queues served one at a time with budgets in sectors, scheduled by B-WF2Q+
//! so that each gets a share of the device proportional to its weight, plus heuristics
//! that give interactive and soft real-time processes low latency.
//!
//! # Model
//!
//! * **Queues** (`bfq_get_queue`): synchronous requests (reads, `REQ_SYNC` writes) go to
//!   their process's queue; asynchronous writes to one queue shared by every process of
//!   the same I/O priority (the flushers' best-effort 4, in practice). Weight =
//!   (8 − ioprio level) × 10, so 40 by default; the classes realtime, best effort and idle
//!   are served in strict priority, the idle class at least every 200 ms.
//! * **B-WF2Q+** ([`wf2q`]): a queue that becomes backlogged gets a start time (the tree's
//!   virtual time, or its old finish time while that is still ahead) and a finish time
//!   start + budget/weight; the eligible queue (start ≤ virtual time) with the smallest
//!   finish is served; service advances the virtual time by service/Σweights. A queue that
//!   empties stays on the idle tree, counted in the weight sum, until the virtual time
//!   passes its finish.
//! * **Budgets** (`__bfq_bfqq_recalc_budget`): a queue keeps the device until its budget
//!   (sectors; async requests cost three times their size unless the scenario is
//!   asymmetric) runs out, its `timeout_sync` (125 ms) passes, or it empties and BFQ does
//!   not idle for it. The next budget of a sync queue doubles after a timeout, quadruples
//!   when exhausted, shrinks when idling was in vain, and follows the service received
//!   when the queue ran dry; async queues always get the maximum. The maximum is autotuned
//!   to what the device transfers in `timeout_sync` at its estimated peak rate
//!   ([`peak_rate`]). Slow (seeky) queues are charged for the time they held the device
//!   rather than the sectors (`bfq_bfqq_charge_time`).
//! * **Idling** (`bfq_better_to_idle`): an emptied sync queue keeps the device
//!   `slice_idle` (8 ms; 2 ms for a seeky queue in a symmetric scenario; at least 20 ms
//!   for a weight-raised one) if that boosts throughput (rotational, or sequential and
//!   I/O-bound with a short think time on a device without internal queueing) or if its
//!   service guarantee needs it (weight raised, or weights or classes differ).
//!   `strict_guarantees` always idles and keeps one request in the device at a time.
//! * **Injection** (`bfq_choose_bfqq_for_injection`): while idling, requests of other
//!   queues are dispatched up to the in-service queue's inject limit, which grows while
//!   its requests' service time stays within 1.5× the time measured without injection and
//!   shrinks otherwise; a queue found to be woken by another's completions (its waker) gets
//!   the waker's requests injected first.
//! * **Weight raising** (`low_latency`): a sync queue that becomes backlogged after being
//!   idle for 2 s, or is new, is interactive: its weight is raised 30× for the time a large
//!   application takes to start at the device's peak rate (3–25 s) or until it has had
//!   120 000 sectors. A queue whose requests come isochronously at under 7000 sectors/s is
//!   soft real-time: 3000× for 300 ms, renewed at each batch. Queues created in a large
//!   burst (8 within 180 ms of each other) are not raised. While any queue is raised,
//!   async requests may hold only 3/16 of the scheduler tags (1/2 otherwise) and sync
//!   writes 6/16 (3/4).
//! * **Within a queue** (`bfq_choose_req`, `bfq_check_fifo`): sync before async, then the
//!   nearest request ahead of the head, up to `back_seek_max` behind it at
//!   `back_seek_penalty` times the cost; the FIFO head is served first once per slot when
//!   its `fifo_expire_*` deadline passed.
//! * **`hw_tag`** (`bfq_update_hw_tag`): whether the device queues internally, learnt from
//!   how many requests it holds at once.
//! * **Groups** (`CONFIG_BFQ_GROUP_IOSCHED`, [`wf2q`]): each cgroup is a group with its own
//!   service trees and an entity of weight `io.bfq.weight` (100 by default, 1–1000) in its
//!   parent's, beside the parent's own queues (weight 40 at the default priority). A request
//!   goes to its process's queue (sync) or its priority's async queue in the group of the
//!   cgroup it is charged to. Service is charged up the hierarchy, so groups share the device
//!   by weight whatever the number of queues inside them. Requests pending in more than one
//!   group (the root counts) make the scenario asymmetric, so BFQ idles for the queue in
//!   service; a new queue preempts only if its class is better or, where the two queues
//!   meet in different groups, its group is heavier.
//!
//! # Simplifications
//!
//! * Groups: a group entity is always taken out of its tree while in service (the kernel
//!   leaves one with several active children in it) and is not repositioned when a child
//!   joins it while in service; a group's budget is its next child's, set when it is
//!   activated or requeued. Group weights are fixed for the run.
//! * No queue merging of cooperating processes (`bfq_setup_cooperator`), no
//!   `REQ_META` preference, and a bio may merge into a request of another queue (the
//!   kernel merges only within the bio's own queue).
//! * A process's own async queue is never injected for it: our processes' buffered writes
//!   are written back by the flushers.
//! * The idle tree forgets every entity the virtual time has passed at once; the kernel
//!   checks its first and last entity per lookup.
//! * Times are exact nanoseconds, not jiffies (`timeout_sync`, weight-raising periods).
//! * The tag limits apply to the whole tag space rather than per sbitmap word.
//! * A queue's process is assumed alive (no `bfqq_process_refs` test).

mod bfqq;
mod consts;
mod peak_rate;
mod tunables;
mod wf2q;

#[cfg(test)]
mod tests;

use self::bfqq::{Bfqq, Tree};
pub(crate) use self::consts::DEFAULT_GROUP_WEIGHT;
use self::consts::*;
use self::peak_rate::PeakRate;
pub(crate) use self::tunables::BfqTunables;
use self::wf2q::BfqGroup;
use super::merge_index::{grow, MergeIndex};
use super::{Elevator, ElevatorInfo, ElvGroup, ElvRq, Merge};
use crate::config::{DeadlineTunables, QueueConfig, SchedulerKind};
use crate::drivers::Op;
use crate::Ns;
use std::collections::BTreeMap;

/// `bfq` in the list of elevators.
pub(crate) static INFO: ElevatorInfo = ElevatorInfo {
    kind: SchedulerKind::BFQ,
    aliases: &[],
    summary: "per-process queues with sector budgets shared by weight (B-WF2Q+), device idling for sync processes, weight raising for interactive ones",
    kernels: "blk-mq (4.12+); the default of many desktop distributions",
    tunables: &tunables::TUNABLES,
    defaults: |q: &mut QueueConfig| {
        q.iosched = DeadlineTunables::default();
        q.tunables.clear();
        // bfq_init_queue → wbt_disable_default: bfq does its own latency control.
        q.wbt_lat_usec = 0;
    },
    check: super::no_check,
    build: |q| Box::new(Bfq::new(BfqTunables::of(q), !q.rotational)),
};

/// Why the in-service queue stops being served (`enum bfqq_expiration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expiration {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    Preempted,
}

/// What BFQ keeps about a request it holds or dispatched.
#[derive(Clone, Copy)]
struct RqInfo {
    rq: ElvRq,
    queue: u32,
    /// Still queued (not yet dispatched).
    queued: bool,
}

/// Counts a test can check: how BFQ spent its decisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BfqStats {
    pub expirations: [u64; 5],
    pub idle_timer_armed: u64,
    pub injected: u64,
    pub weight_raised: u64,
}

pub(crate) struct Bfq {
    t: BfqTunables,
    nonrot: bool,
    qs: Vec<Bfqq>,
    /// Queue index by group and key: a sync queue by its process, async ones by priority.
    by_key: BTreeMap<(u32, u32), u32>,
    rqs: Vec<Option<RqInfo>>,
    /// Merge indexes over queued requests: `(write, end, id)` and `(write, start, id)`.
    merges: MergeIndex,
    /// The root group (0) and one per cgroup (cgroup index + 1), with their service trees.
    groups: Vec<BfqGroup>,
    /// Groups with a queue that has requests queued or in flight
    /// (`num_groups_with_pending_reqs`): more than one makes the scenario asymmetric.
    groups_with_pending: u32,
    /// Queues in the active trees, oldest insertion first (`bfqd->active_list` reversed).
    active_list: Vec<u32>,
    seq: u64,
    in_service: Option<u32>,
    busy: [u32; CLASSES],
    wr_busy: u32,
    /// Weights of busy (or still dispatching) queues that are not weight raised → count.
    weights: BTreeMap<u64, u32>,
    queued: usize,
    rq_in_driver: u32,
    max_rq_in_driver: u32,
    /// -1 unknown (treated as queueing), 0 no, 1 yes.
    hw_tag: i8,
    hw_tag_samples: u32,
    budgets_assigned: u32,
    /// `bfqd->bfq_max_budget`.
    max_budget: u64,
    peak: PeakRate,
    last_position: u64,
    last_completion: Ns,
    last_completed_q: Option<u32>,
    last_budget_start: Ns,
    last_idling_start: Ns,
    idle_timer: Option<Ns>,
    // Injection's measurement of the in-service queue's first requests.
    wait_dispatch: bool,
    waited_rq: Option<u32>,
    rqs_injected: bool,
    last_empty_occupied: Ns,
    // Burst detection.
    burst_list: Vec<u32>,
    burst_size: u32,
    large_burst: bool,
    last_ins_in_burst: Option<Ns>,
    pub stats: BfqStats,
}

/// What `bfq_bfqq_handle_idle_busy_switch` found about a queue that got its first request,
/// for the weight-raising decision.
#[derive(Clone, Copy)]
struct Arrival {
    old_wr: u64,
    deserves: bool,
    interactive: bool,
    in_burst: bool,
    soft_rt: bool,
}

/// Whether `now` is past `t + d`, `t` None meaning minus infinity.
fn after(now: Ns, t: Option<Ns>, d: Ns) -> bool {
    t.is_none_or(|t| now > t + d)
}

/// Whether `now` is at or past `t + d` (`time_is_before_eq_jiffies`).
fn at_or_after(now: Ns, t: Option<Ns>, d: Ns) -> bool {
    t.is_none_or(|t| now >= t + d)
}

/// The key of the async queue of a priority (sync queues use their owner, below 2^30 + 2^16).
fn async_key(rq: &ElvRq) -> u32 {
    0x8000_0000 | (bfqq::class_index(rq.prio.class) as u32) << 4 | u32::from(rq.prio.level)
}

impl Bfq {
    pub(crate) fn new(t: BfqTunables, nonrot: bool) -> Self {
        let rate = REF_RATE[usize::from(nonrot)] * 2 / 3;
        let max_budget = if t.user_max_budget > 0 {
            t.user_max_budget
        } else {
            DEFAULT_MAX_BUDGET
        };
        Bfq {
            t,
            nonrot,
            qs: Vec::new(),
            by_key: BTreeMap::new(),
            rqs: Vec::new(),
            merges: MergeIndex::default(),
            groups: vec![BfqGroup::new(0, DEFAULT_GROUP_WEIGHT)],
            groups_with_pending: 0,
            active_list: Vec::new(),
            seq: 0,
            in_service: None,
            busy: [0; CLASSES],
            wr_busy: 0,
            weights: BTreeMap::new(),
            queued: 0,
            rq_in_driver: 0,
            max_rq_in_driver: 0,
            hw_tag: -1,
            hw_tag_samples: 0,
            budgets_assigned: 0,
            max_budget,
            peak: PeakRate {
                rate,
                ..Default::default()
            },
            last_position: 0,
            last_completion: 0,
            last_completed_q: None,
            last_budget_start: 0,
            last_idling_start: 0,
            idle_timer: None,
            wait_dispatch: false,
            waited_rq: None,
            rqs_injected: false,
            last_empty_occupied: 0,
            burst_list: Vec::new(),
            burst_size: 0,
            large_burst: false,
            last_ins_in_burst: None,
            stats: BfqStats::default(),
        }
    }

    fn q(&self, q: u32) -> &Bfqq {
        &self.qs[q as usize]
    }

    fn qm(&mut self, q: u32) -> &mut Bfqq {
        &mut self.qs[q as usize]
    }

    fn info(&self, id: u32) -> RqInfo {
        self.rqs[id as usize].expect("a request BFQ holds")
    }

    fn tot_busy(&self) -> u32 {
        self.busy.iter().sum()
    }

    /// `hw_tag` as the kernel tests it: unknown counts as queueing.
    fn hw_tag_on(&self) -> bool {
        self.hw_tag != 0
    }

    /// `bfq_max_budget`: the default until enough budgets were assigned.
    fn max_budget_eff(&self) -> u64 {
        if self.budgets_assigned < STATS_MIN_BUDGETS {
            DEFAULT_MAX_BUDGET
        } else {
            self.max_budget
        }
    }

    fn min_budget(&self) -> u64 {
        self.max_budget_eff() / 32
    }

    /// `BFQ_RQ_SEEKY`.
    fn rq_seeky(&self, last_pos: u64, sector: u64, sectors: u64) -> bool {
        let dist = if last_pos == 0 { 0 } else { sector.abs_diff(last_pos) };
        dist > SEEK_THR && (!self.nonrot || sectors < SECT_THR_NONROT)
    }

    /// `bfq_asymmetric_scenario`: queues' weights differ (and this one is not the
    /// lightest), several classes are busy, or several groups have requests pending.
    fn asymmetric(&self, q: u32) -> bool {
        let smallest = self.q(q).weight_counter.is_some() && self.q(q).weight_counter == self.weights.keys().next().copied();
        let varied = !smallest && self.weights.len() >= 2;
        let classes = self.busy.iter().filter(|&&b| b > 0).count();
        varied || classes > 1 || self.groups_with_pending > 1
    }

    /// `bfq_serv_to_charge`.
    fn serv_to_charge(&self, id: u32, q: u32) -> u64 {
        let n = self.info(id).rq.nr_sectors;
        if self.q(q).sync || self.q(q).wr_coeff > 1 || self.asymmetric(q) {
            n
        } else {
            n * ASYNC_CHARGE_FACTOR
        }
    }

    /// `idling_boosts_thr_without_issues`.
    fn idling_boosts_thr_without_issues(&self, q: u32) -> bool {
        let b = self.q(q);
        let rot_without_queueing = !self.nonrot && !self.hw_tag_on();
        let seq_io_bound = !b.seeky() && b.io_bound && b.has_short_ttime;
        let boosts = rot_without_queueing || ((!self.nonrot || !self.hw_tag_on()) && seq_io_bound);
        boosts && self.wr_busy == 0
    }

    /// `idling_needed_for_service_guarantees`.
    fn idling_needed_for_service_guarantees(&self, q: u32) -> bool {
        let b = self.q(q);
        let tot_busy = self.tot_busy();
        (b.wr_coeff > 1 && (self.wr_busy < tot_busy || self.rq_in_driver >= b.dispatched + 4)) || self.asymmetric(q) || tot_busy == 1
    }

    /// `bfq_better_to_idle`.
    fn better_to_idle(&self, q: u32) -> bool {
        if self.t.strict_guarantees {
            return true;
        }
        let b = self.q(q);
        if self.t.slice_idle == 0 || !b.sync || b.class == IDLE_CLASS {
            return false;
        }
        self.idling_boosts_thr_without_issues(q) || self.idling_needed_for_service_guarantees(q)
    }

    /// `bfq_bfqq_must_idle`.
    fn must_idle(&self, q: u32) -> bool {
        self.q(q).sorted.is_empty() && self.better_to_idle(q)
    }

    /// `bfq_may_expire_for_budg_timeout`.
    fn may_expire_for_budg_timeout(&self, q: u32, now: Ns) -> bool {
        let b = self.q(q);
        (!b.wait_request || b.budget_left() >= b.en.budget as i64 / 3) && b.budget_timeout.is_some_and(|t| now >= t)
    }

    /// `bfq_choose_req`: sync first, then the nearest ahead of `last`, a short way back at
    /// `back_seek_penalty` times the distance, else the one needing one backward seek.
    fn choose_req(&self, a: Option<u32>, b: Option<u32>, last: u64) -> Option<u32> {
        let (a, b) = match (a, b) {
            (None, x) | (x, None) => return x,
            (Some(a), Some(b)) if a == b => return Some(b),
            (Some(a), Some(b)) => (a, b),
        };
        let (ra, rb) = (self.info(a).rq, self.info(b).rq);
        if ra.sync != rb.sync {
            return Some(if ra.sync { a } else { b });
        }
        let dist = |s: u64| {
            if s >= last {
                Some(s - last)
            } else if s + self.t.back_max_sectors >= last {
                Some((last - s) * self.t.back_penalty)
            } else {
                None
            }
        };
        Some(match (dist(ra.sector), dist(rb.sector)) {
            (Some(d1), Some(d2)) if d1 != d2 => {
                if d1 < d2 {
                    a
                } else {
                    b
                }
            }
            (Some(_), Some(_)) => {
                if ra.sector >= rb.sector {
                    a
                } else {
                    b
                }
            }
            (Some(_), None) => a,
            (None, Some(_)) => b,
            (None, None) => {
                if ra.sector <= rb.sector {
                    a
                } else {
                    b
                }
            }
        })
    }

    /// `bfq_find_next_rq`: after `last` leaves, the FIFO head if expired (once per slot),
    /// else the better of its sector neighbours.
    fn find_next_rq(&mut self, q: u32, last: u32, now: Ns) -> Option<u32> {
        let b = self.q(q);
        if !b.fifo_expire {
            self.qm(q).fifo_expire = true;
            let b = self.q(q);
            if let Some(&(head, t)) = b.fifo.front() {
                if head != last && now >= t {
                    return Some(head);
                }
            }
        }
        let b = self.q(q);
        let key = (self.info(last).rq.sector, last);
        let prev = b.sorted.range(..key).next_back().map(|&(_, id)| id);
        let next = b
            .sorted
            .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded))
            .next()
            .or_else(|| b.sorted.iter().next().filter(|&&(_, id)| id != last))
            .map(|&(_, id)| id);
        self.choose_req(next, prev, key.0)
    }

    /// `bfq_updated_next_req`: a queue waiting for service gets a budget that fits its new
    /// first request.
    fn updated_next_req(&mut self, q: u32) {
        let Some(next) = self.q(q).next_rq else { return };
        if Some(q) == self.in_service || self.q(q).en.tree != Tree::Active {
            return;
        }
        let b = self.q(q);
        let new_budget = b.max_budget.max(self.serv_to_charge(next, q)).max(b.en.service);
        if b.en.budget != new_budget {
            self.qm(q).en.budget = new_budget;
            self.requeue(q);
        }
    }

    /// `bfq_get_queue`: the queue of the request's process (sync) or priority (async) in
    /// the group of its cgroup (`bfq_bio_bfqg`; cgroups without a group here use the root).
    fn queue_of(&mut self, rq: &ElvRq, now: Ns) -> u32 {
        let key = if rq.sync { rq.owner } else { async_key(rq) };
        let group = rq.blkcg.map_or(0, |c| u32::from(c) + 1);
        let group = if (group as usize) < self.groups.len() { group } else { 0 };
        if let Some(&q) = self.by_key.get(&(group, key)) {
            return q;
        }
        let q = self.qs.len() as u32;
        let mb = self.max_budget_eff();
        self.qs.push(Bfqq::new(rq.sync, rq.prio, group, mb, now));
        self.by_key.insert((group, key), q);
        q
    }

    /// `bfq_add_bfqq_in_groups_with_pending_reqs`.
    fn add_pending(&mut self, q: u32) {
        let b = &mut self.qs[q as usize];
        if b.pending {
            return;
        }
        b.pending = true;
        let g = &mut self.groups[b.en.parent as usize];
        g.pending_queues += 1;
        if g.pending_queues == 1 {
            self.groups_with_pending += 1;
        }
    }

    /// `bfq_del_bfqq_in_groups_with_pending_reqs`.
    fn del_pending(&mut self, q: u32) {
        let b = &mut self.qs[q as usize];
        if !b.pending {
            return;
        }
        b.pending = false;
        let g = &mut self.groups[b.en.parent as usize];
        g.pending_queues -= 1;
        if g.pending_queues == 0 {
            self.groups_with_pending -= 1;
        }
    }

    // ----- weight raising -----

    /// `bfq_bfqq_end_wr`.
    fn end_wr(&mut self, q: u32, now: Ns) {
        let b = self.qm(q);
        if b.wr_cur_max_time != WR_RT_MAX_TIME {
            b.soft_rt_next_start = now;
        }
        let was_busy = b.busy;
        b.wr_coeff = 1;
        b.wr_cur_max_time = 0;
        b.last_wr_start_finish = now;
        b.prio_changed = true;
        if was_busy {
            self.wr_busy -= 1;
        }
    }

    fn switch_back_to_interactive_wr(&mut self, q: u32) {
        let d = self.wr_duration();
        let b = self.qm(q);
        b.wr_coeff = WR_COEFF;
        b.wr_cur_max_time = d;
        b.last_wr_start_finish = b.wr_start_at_switch_to_srt.unwrap_or(0);
    }

    /// `bfq_update_bfqq_wr_on_rq_arrival`.
    fn update_wr_on_rq_arrival(&mut self, q: u32, a: Arrival, now: Ns) {
        let Arrival {
            old_wr,
            deserves,
            interactive,
            in_burst,
            soft_rt,
        } = a;
        let d = self.wr_duration();
        let min_budget = self.min_budget();
        let b = self.qm(q);
        if old_wr == 1 && deserves {
            if interactive {
                b.service_from_wr = 0;
                b.wr_coeff = WR_COEFF;
                b.wr_cur_max_time = d;
            } else {
                b.wr_start_at_switch_to_srt = None;
                b.wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                b.wr_cur_max_time = WR_RT_MAX_TIME;
            }
            b.en.budget = b.en.budget.min(2 * min_budget);
            self.stats.weight_raised += 1;
        } else if old_wr > 1 {
            if interactive {
                b.wr_coeff = WR_COEFF;
                b.wr_cur_max_time = d;
            } else if in_burst {
                b.wr_coeff = 1;
            } else if soft_rt {
                if b.wr_cur_max_time != WR_RT_MAX_TIME {
                    b.wr_start_at_switch_to_srt = Some(b.last_wr_start_finish);
                    b.wr_cur_max_time = WR_RT_MAX_TIME;
                    b.wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                }
                b.last_wr_start_finish = now;
            }
        }
    }

    /// `bfq_update_wr_data`: end weight raising that ran its time or its service, and apply
    /// the weight at once.
    fn update_wr_data(&mut self, q: u32, now: Ns) {
        let b = self.q(q);
        if b.wr_coeff > 1 {
            if b.in_large_burst {
                self.end_wr(q, now);
            } else if now > b.last_wr_start_finish + b.wr_cur_max_time {
                if b.wr_cur_max_time != WR_RT_MAX_TIME || after(now, b.wr_start_at_switch_to_srt, self.wr_duration()) {
                    self.end_wr(q, now);
                } else {
                    self.switch_back_to_interactive_wr(q);
                    self.qm(q).prio_changed = true;
                }
            }
            let b = self.q(q);
            if b.wr_coeff > 1 && b.wr_cur_max_time != WR_RT_MAX_TIME && b.service_from_wr > MAX_SERVICE_FROM_WR {
                self.end_wr(q, now);
            }
        }
        let b = self.q(q);
        if (b.en.weight > b.orig_weight) != (b.wr_coeff > 1) {
            self.update_weight(q);
        }
    }

    /// `bfq_bfqq_softrt_next_start`: the earliest time the next batch may come for the
    /// process to still need less than the soft real-time rate.
    fn softrt_next_start(&self, q: u32, now: Ns) -> Ns {
        let b = self.q(q);
        let by_rate = b.last_idle_bklogged + 1_000_000_000 * b.service_from_backlogged / WR_MAX_SOFTRT_RATE;
        b.soft_rt_next_start.max(by_rate).max(now + self.t.slice_idle + SOFTRT_SLACK)
    }

    // ----- bursts -----

    /// `bfq_handle_burst`: queues created within 180 ms of each other, 8 or more, are a
    /// large burst and are not weight raised.
    fn handle_burst(&mut self, q: u32, now: Ns) {
        if self.q(q).in_burst_list || self.q(q).in_large_burst {
            return;
        }
        if after(now, self.last_ins_in_burst, BURST_INTERVAL) {
            self.large_burst = false;
            for &x in &self.burst_list {
                self.qs[x as usize].in_burst_list = false;
            }
            self.burst_list.clear();
            if self.tot_busy() == 0 {
                self.burst_list.push(q);
                self.qm(q).in_burst_list = true;
                self.burst_size = 1;
            } else {
                self.burst_size = 0;
            }
        } else if self.large_burst {
            self.qm(q).in_large_burst = true;
        } else {
            self.burst_size += 1;
            if self.burst_size == LARGE_BURST_THRESH {
                self.large_burst = true;
                for x in std::mem::take(&mut self.burst_list) {
                    let b = &mut self.qs[x as usize];
                    b.in_large_burst = true;
                    b.in_burst_list = false;
                }
                self.qm(q).in_large_burst = true;
            } else {
                self.burst_list.push(q);
                self.qm(q).in_burst_list = true;
            }
        }
        self.last_ins_in_burst = Some(now);
    }

    // ----- busy / idle -----

    /// `bfq_add_bfqq_busy`.
    fn add_busy(&mut self, q: u32) {
        let nbw = self.q(q).non_blocking_wait_rq;
        self.activate(q, nbw);
        self.add_pending(q);
        let b = self.qm(q);
        b.non_blocking_wait_rq = false;
        b.busy = true;
        let (class, dispatched, wr) = (b.class, b.dispatched, b.wr_coeff);
        self.busy[class] += 1;
        if dispatched == 0 && wr == 1 {
            self.weights_add(q);
        }
        if wr > 1 {
            self.wr_busy += 1;
        }
    }

    /// `bfq_del_bfqq_busy`.
    fn del_busy(&mut self, q: u32) {
        let b = self.qm(q);
        b.busy = false;
        let (class, dispatched, wr) = (b.class, b.dispatched, b.wr_coeff);
        self.busy[class] -= 1;
        if wr > 1 {
            self.wr_busy -= 1;
        }
        self.deactivate(q);
        if dispatched == 0 {
            self.del_pending(q);
            self.weights_remove(q);
        }
    }

    /// `bfq_bfqq_update_budg_for_activation`: a queue that expired empty and whose next
    /// request came in time resumes its budget (and asks to preempt).
    fn update_budg_for_activation(&mut self, q: u32, arrived_in_time: bool) -> bool {
        let b = self.q(q);
        if b.non_blocking_wait_rq && arrived_in_time && b.budget_left() > 0 {
            let budget = (b.budget_left() as u64).min(b.max_budget);
            let b = self.qm(q);
            b.en.budget = budget;
            b.en.service = 0;
            return true;
        }
        let charge = b.next_rq.map_or(0, |n| self.serv_to_charge(n, q));
        let b = self.qm(q);
        b.en.service = 0;
        b.en.budget = b.max_budget.max(charge);
        b.non_blocking_wait_rq = false;
        false
    }

    /// `bfq_bfqq_handle_idle_busy_switch`: a queue gets its first request.
    fn handle_idle_busy_switch(&mut self, q: u32, old_wr: u64, now: Ns) -> bool {
        let b = self.q(q);
        let idle_for_long_time = b.dispatched == 0 && after(now, b.budget_timeout, WR_MIN_IDLE_TIME);
        let arrived_in_time = now <= b.last_end_request + 3 * self.t.slice_idle;
        let in_burst = b.in_large_burst;
        // Since 5.x only queues of the default weight are raised: an explicit ionice wins.
        let default_weight = b.orig_weight == DEFAULT_WEIGHT;
        let soft_rt = !b.totally_seeky() && !in_burst && now > b.soft_rt_next_start && b.dispatched == 0 && default_weight;
        let interactive = !in_burst && idle_for_long_time && default_weight;
        let deserves = self.t.low_latency && (b.wr_coeff > 1 || (b.sync && (interactive || soft_rt)));
        let wants_to_preempt = self.update_budg_for_activation(q, arrived_in_time);
        let b = self.qm(q);
        if !b.just_created && idle_for_long_time && after(now, b.budget_timeout, 10_000 * MSEC) {
            b.in_large_burst = false;
            if b.in_burst_list {
                b.in_burst_list = false;
                self.burst_list.retain(|&x| x != q);
            }
        }
        self.qm(q).just_created = false;
        if self.t.low_latency {
            let a = Arrival {
                old_wr,
                deserves,
                interactive,
                in_burst,
                soft_rt,
            };
            self.update_wr_on_rq_arrival(q, a, now);
            let b = self.qm(q);
            if old_wr != b.wr_coeff {
                b.prio_changed = true;
            }
        }
        let b = self.qm(q);
        b.last_idle_bklogged = now;
        b.service_from_backlogged = 0;
        b.softrt_update = false;
        self.add_busy(q);
        if let Some(s) = self.in_service {
            let higher = self.higher_class_or_weight(q, s);
            let (b, sb) = (self.q(q), self.q(s));
            // next_queue_may_preempt: q has just become a candidate, so it holds.
            if (wants_to_preempt && b.wr_coeff >= sb.wr_coeff) || higher || !self.better_to_idle(s) {
                self.expire(s, false, Expiration::Preempted, now);
            }
        }
        interactive
    }

    /// `bfq_bfqq_higher_class_or_weight`: a better class, or a heavier entity at the level
    /// where the two meet — the queues' own weights in the same group, else their groups'.
    fn higher_class_or_weight(&self, q: u32, s: u32) -> bool {
        let (b, sb) = (self.q(q), self.q(s));
        if b.class < sb.class {
            return true;
        }
        let weight = |x: &Bfqq| match x.en.parent {
            0 => x.en.weight,
            g => self.groups[g as usize].en.weight,
        };
        if b.en.parent == sb.en.parent {
            b.en.weight > sb.en.weight
        } else {
            weight(b) > weight(sb)
        }
    }

    /// `bfq_check_waker`: a sync queue with a long think time that fills within 4 ms of
    /// another queue's completion, three times within 128 × slice_idle, is woken by it.
    fn check_waker(&mut self, q: u32, now: Ns) {
        let Some(w) = self.last_completed_q else { return };
        if w == q || self.q(q).has_short_ttime || now - self.last_completion >= WAKER_WINDOW {
            return;
        }
        let window = 128 * self.t.slice_idle;
        let b = self.qm(q);
        if b.tentative_waker != Some(w) || now > b.waker_detection_started + window {
            b.tentative_waker = Some(w);
            b.waker_detections = 1;
            b.waker_detection_started = now;
        } else {
            b.waker_detections += 1;
        }
        if b.waker_detections == WAKER_DETECTIONS {
            b.waker = Some(w);
            b.tentative_waker = None;
        }
    }

    /// `bfq_update_io_intensity`: I/O-bound while idle (nothing queued or in flight) for
    /// at most a fifth of the time, measured over a window that halves past 200 ms.
    fn update_io_intensity(&mut self, q: u32, now: Ns) {
        let b = self.qm(q);
        let tot_io_time = now - b.io_start_time;
        if b.sorted.is_empty() && b.dispatched == 0 {
            b.tot_idle_time += now.saturating_sub(b.last_end_request);
        }
        if b.just_created {
            return;
        }
        b.io_bound = b.tot_idle_time * 5 <= tot_io_time;
        if tot_io_time > 200 * MSEC {
            b.io_start_time = now - tot_io_time / 2;
            b.tot_idle_time /= 2;
        }
    }

    /// `bfq_reset_inject_limit`.
    fn reset_inject_limit(&mut self, q: u32, now: Ns) {
        self.waited_rq = None;
        let b = self.qm(q);
        b.last_serv_time_ns = 0;
        b.inject_limit = u32::from(!b.has_short_ttime);
        b.decrease_time = Some(now);
    }

    /// `bfq_add_request`.
    fn add_request(&mut self, q: u32, id: u32, now: Ns) {
        let old_wr = self.q(q).wr_coeff;
        self.queued += 1;
        // `RQ_BIC(rq)->requests <= 1`: this is the process's only request in BFQ or in
        // flight.
        let alone = self.q(q).queued() == 0 && self.q(q).dispatched == 0;
        if self.q(q).sync && alone {
            self.check_waker(q, now);
            if at_or_after(now, self.q(q).decrease_time, 1_000 * MSEC) {
                self.reset_inject_limit(q, now);
            }
            let b = self.q(q);
            if Some(q) == self.in_service
                && (self.rq_in_driver == 0 || (b.last_serv_time_ns > 0 && self.rqs_injected && self.rq_in_driver > 0))
                && at_or_after(now, b.decrease_time, 10 * MSEC)
            {
                self.last_empty_occupied = now;
                self.wait_dispatch = true;
                if self.rq_in_driver == 0 {
                    self.rqs_injected = false;
                }
            }
        }
        if self.q(q).sync {
            self.update_io_intensity(q, now);
        }
        let sector = self.info(id).rq.sector;
        self.qm(q).sorted.insert((sector, id));
        let prev = self.q(q).next_rq;
        let next = self.choose_req(prev, Some(id), self.last_position);
        self.qm(q).next_rq = next;
        let mut interactive = false;
        if !self.q(q).busy {
            interactive = self.handle_idle_busy_switch(q, old_wr, now);
        } else {
            let b = self.q(q);
            if self.t.low_latency && old_wr == 1 && !self.info(id).rq.sync && now > b.last_wr_start_finish + WR_MIN_INTER_ARR_ASYNC {
                let d = self.wr_duration();
                let b = self.qm(q);
                b.wr_coeff = WR_COEFF;
                b.wr_cur_max_time = d;
                b.prio_changed = true;
                self.wr_busy += 1;
                self.stats.weight_raised += 1;
            }
            if prev != self.q(q).next_rq {
                self.updated_next_req(q);
            }
        }
        let low_latency = self.t.low_latency;
        let b = self.qm(q);
        if low_latency && (old_wr == 1 || b.wr_coeff == 1 || interactive) {
            b.last_wr_start_finish = now;
        }
    }

    /// `bfq_rq_enqueued`: a request for the idling in-service queue ends the idling.
    fn rq_enqueued(&mut self, q: u32, id: u32, now: Ns) {
        let rq = self.info(id).rq;
        self.qm(q).last_request_pos = rq.end();
        let b = self.q(q);
        if Some(q) == self.in_service && b.wait_request {
            let small_req = b.queued() == 1 && rq.nr_sectors < 32;
            let budget_timeout = b.budget_timeout.is_some_and(|t| now >= t);
            if small_req && self.idling_boosts_thr_without_issues(q) && !budget_timeout {
                return;
            }
            self.qm(q).wait_request = false;
            self.idle_timer = None;
            if budget_timeout {
                self.expire(q, false, Expiration::BudgetTimeout, now);
            }
        }
    }

    /// `bfq_update_has_short_ttime`.
    fn update_has_short_ttime(&mut self, q: u32, now: Ns) {
        let b = self.q(q);
        if !b.sync || b.class == IDLE_CLASS || self.t.slice_idle == 0 {
            return;
        }
        let short = !(b.ttime_samples > 80 && b.ttime_mean > self.t.slice_idle / 2);
        let changed = short != b.has_short_ttime;
        self.qm(q).has_short_ttime = short;
        let b = self.q(q);
        if changed && b.last_serv_time_ns == 0 && (at_or_after(now, b.decrease_time, 100 * MSEC) || !short) {
            self.reset_inject_limit(q, now);
        }
    }

    /// `bfq_update_io_seektime`.
    fn update_io_seektime(&mut self, q: u32, rq: &ElvRq, now: Ns) {
        let seeky = self.rq_seeky(self.q(q).last_request_pos, rq.sector, rq.nr_sectors);
        let b = self.qm(q);
        b.seek_history = b.seek_history << 1 | u32::from(seeky);
        if b.wr_coeff > 1 && b.wr_cur_max_time == WR_RT_MAX_TIME && b.totally_seeky() {
            // Random I/O is not soft real-time: back to interactive raising if its period
            // is not over.
            if after(now, b.wr_start_at_switch_to_srt, self.wr_duration()) {
                self.end_wr(q, now);
            } else {
                self.switch_back_to_interactive_wr(q);
                self.qm(q).prio_changed = true;
            }
        }
    }

    // ----- service -----

    /// `bfq_set_budget_timeout`.
    fn set_budget_timeout(&mut self, q: u32, now: Ns) {
        self.last_budget_start = now;
        let timeout = self.t.timeout;
        let b = self.qm(q);
        let coeff = if b.wr_cur_max_time == WR_RT_MAX_TIME {
            1
        } else {
            b.en.weight / b.orig_weight
        };
        b.budget_timeout = Some(now + timeout * coeff);
    }

    /// `bfq_set_in_service_queue`.
    fn set_in_service_queue(&mut self, now: Ns) -> Option<u32> {
        if self.tot_busy() == 0 {
            return None;
        }
        let q = self.get_next_queue(now)?;
        self.qm(q).fifo_expire = false;
        self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
        let b = self.qm(q);
        if b.last_wr_start_finish < now
            && b.wr_coeff > 1
            && b.wr_cur_max_time == WR_RT_MAX_TIME
            && b.budget_timeout.is_some_and(|t| t < now)
        {
            let bt = b.budget_timeout.unwrap_or(0);
            if bt > b.last_wr_start_finish {
                b.last_wr_start_finish += now - bt;
            } else {
                b.last_wr_start_finish = now;
            }
        }
        self.set_budget_timeout(q, now);
        self.in_service = Some(q);
        Some(q)
    }

    /// `bfq_arm_slice_timer`.
    fn arm_slice_timer(&mut self, now: Ns) {
        let Some(q) = self.in_service else { return };
        self.qm(q).wait_request = true;
        let b = self.q(q);
        let mut sl = self.t.slice_idle;
        if b.seeky() && b.wr_coeff == 1 && !self.asymmetric(q) {
            sl = sl.min(MIN_TT);
        } else if b.wr_coeff > 1 {
            sl = sl.max(20 * MSEC);
        }
        self.last_idling_start = now;
        self.idle_timer = Some(now + sl);
        self.stats.idle_timer_armed += 1;
    }

    /// `bfq_bfqq_is_slow`: a sync queue that used less than half the maximum budget in an
    /// interval over 20 ms (or a seeky one), and how long its slot took in ms.
    fn is_slow(&self, q: u32, compensate: bool, now: Ns) -> (bool, u64) {
        let b = self.q(q);
        let mut slow = b.seeky();
        if !b.sync {
            return (false, 0);
        }
        let end = if compensate { self.last_idling_start } else { now };
        let delta_us = end.saturating_sub(self.last_budget_start) / USEC;
        if delta_us < 1000 {
            let ms = if self.nonrot { MIN_TT / MSEC } else { 8 };
            return (slow, ms);
        }
        if delta_us > 20_000 {
            slow = b.en.service < self.max_budget / 2;
        }
        (slow, delta_us / 1000)
    }

    /// `bfq_bfqq_charge_time`: charge the share of the maximum budget the time used is of
    /// the budget timeout.
    fn charge_time(&mut self, q: u32, time_ms: u64) {
        let timeout_ms = TIMEOUT / MSEC;
        let serv_for_time = self.max_budget * time_ms.min(timeout_ms) / timeout_ms;
        let b = self.qm(q);
        let tot = serv_for_time.max(b.en.service);
        if tot > b.en.budget {
            b.en.budget = tot;
        }
        let extra = tot - b.en.service;
        self.served(q, extra);
    }

    /// `__bfq_bfqq_recalc_budget`.
    fn recalc_budget(&mut self, q: u32, reason: Expiration) {
        let min_budget = self.min_budget();
        let max = self.max_budget;
        let b = self.q(q);
        let mut budget = if b.wr_coeff == 1 { b.max_budget } else { 2 * min_budget };
        if b.sync && b.wr_coeff == 1 {
            budget = match reason {
                Expiration::TooIdle => {
                    if b.dispatched > 0 {
                        (budget * 2).min(max)
                    } else if budget > 5 * min_budget {
                        budget - 4 * min_budget
                    } else {
                        min_budget
                    }
                }
                Expiration::BudgetTimeout => (budget * 2).min(max),
                Expiration::BudgetExhausted => (budget * 4).min(max),
                Expiration::NoMoreRequests => b.en.service.max(min_budget),
                Expiration::Preempted => return,
            };
        } else if !b.sync {
            budget = max;
        }
        let stats_ok = self.budgets_assigned >= STATS_MIN_BUDGETS && self.t.user_max_budget == 0;
        let charge = b.next_rq.map(|n| self.serv_to_charge(n, q));
        let b = self.qm(q);
        b.max_budget = if stats_ok { budget.min(max) } else { budget };
        if let Some(c) = charge {
            b.en.budget = b.max_budget.max(c);
        }
    }

    /// `bfq_bfqq_expire`.
    fn expire(&mut self, q: u32, compensate: bool, reason: Expiration, now: Ns) {
        self.stats.expirations[reason as usize] += 1;
        let (slow, delta) = self.is_slow(q, compensate, now);
        let b = self.q(q);
        if b.wr_coeff == 1 && (slow || (reason == Expiration::BudgetTimeout && b.budget_left() >= b.en.budget as i64 / 3)) {
            self.charge_time(q, delta);
        }
        let low_latency = self.t.low_latency;
        let b = self.qm(q);
        if low_latency && b.wr_coeff == 1 {
            b.last_wr_start_finish = now;
        }
        if low_latency && b.sorted.is_empty() {
            if b.dispatched == 0 {
                let t = self.softrt_next_start(q, now);
                self.qm(q).soft_rt_next_start = t;
            } else if b.dispatched > 0 {
                b.softrt_update = true;
            }
        }
        self.rqs_injected = false;
        self.wait_dispatch = false;
        self.waited_rq = None;
        self.recalc_budget(q, reason);
        // __bfq_bfqq_expire
        if self.q(q).sorted.is_empty() && !(reason == Expiration::Preempted && self.idling_needed_for_service_guarantees(q)) {
            if self.q(q).dispatched == 0 {
                self.qm(q).budget_timeout = Some(now);
            }
            self.del_busy(q);
        } else {
            self.requeue(q);
        }
        // __bfq_bfqd_reset_in_service
        let b = self.qm(q);
        b.wait_request = false;
        if b.en.tree == Tree::InService {
            b.en.tree = Tree::None;
        }
        self.idle_timer = None;
        self.in_service = None;
        let b = self.qm(q);
        if !b.busy && reason != Expiration::BudgetTimeout && reason != Expiration::BudgetExhausted {
            b.non_blocking_wait_rq = true;
        } else {
            b.en.service = 0;
        }
    }

    /// `bfq_choose_bfqq_for_injection`.
    fn choose_for_injection(&mut self, now: Ns) -> Option<u32> {
        let s = self.in_service?;
        let sb = self.q(s);
        let mut limit = sb.inject_limit;
        let always = sb.wr_coeff == 1 || !sb.has_short_ttime;
        if limit == 0 && sb.last_serv_time_ns == 0 && sb.wait_request && now >= self.last_idling_start + self.t.slice_idle {
            limit = 1;
        }
        if self.rq_in_driver >= limit {
            return None;
        }
        for i in (0..self.active_list.len()).rev() {
            let q = self.active_list[i];
            let b = self.q(q);
            let Some(next) = b.next_rq else { continue };
            if (always || b.wr_coeff > 1) && self.serv_to_charge(next, q) as i64 <= b.budget_left() {
                // On flash, one large injected request at a time.
                if self.nonrot && self.info(next).rq.nr_sectors >= SECT_THR_NONROT && self.rq_in_driver >= 1 {
                    continue;
                }
                self.rqs_injected = true;
                return Some(q);
            }
        }
        None
    }

    /// `bfq_select_queue`: keep the in-service queue, idle for it (possibly injecting
    /// another queue's request), or expire it and pick the next.
    fn select_queue(&mut self, now: Ns) -> Option<u32> {
        let mut cur = self.in_service;
        if let Some(q) = cur {
            if self.may_expire_for_budg_timeout(q, now) && !self.must_idle(q) {
                self.expire(q, false, Expiration::BudgetTimeout, now);
                cur = None;
            }
        }
        loop {
            let q = match cur {
                Some(q) => q,
                None => self.set_in_service_queue(now)?,
            };
            if let Some(next) = self.q(q).next_rq {
                if self.serv_to_charge(next, q) as i64 > self.q(q).budget_left() {
                    self.expire(q, false, Expiration::BudgetExhausted, now);
                    cur = None;
                    continue;
                }
                if self.q(q).wait_request {
                    self.qm(q).wait_request = false;
                    self.idle_timer = None;
                }
                return Some(q);
            }
            let b = self.q(q);
            if b.wait_request || (b.dispatched != 0 && self.better_to_idle(q)) {
                // The queue that wakes this one, then the first one this one wakes.
                let blocked = self.qs.iter().position(|x| x.waker == Some(q)).map(|i| i as u32);
                for w in [b.waker, blocked].into_iter().flatten() {
                    let wb = self.q(w);
                    if let Some(n) = wb.next_rq.filter(|_| wb.busy) {
                        if self.serv_to_charge(n, w) as i64 <= wb.budget_left() {
                            return Some(w);
                        }
                    }
                }
                let b = self.q(q);
                if !self.idling_boosts_thr_without_issues(q) && (b.wr_coeff == 1 || self.wr_busy > 1 || !b.has_short_ttime) {
                    return self.choose_for_injection(now);
                }
                return None;
            }
            self.expire(q, false, Expiration::NoMoreRequests, now);
            cur = None;
        }
    }

    /// `bfq_remove_request`, for a request leaving the scheduler.
    fn remove_request(&mut self, q: u32, id: u32, now: Ns) {
        if self.q(q).next_rq == Some(id) {
            let n = self.find_next_rq(q, id, now);
            self.qm(q).next_rq = n;
            self.updated_next_req(q);
        }
        let info = self.info(id);
        self.merges.remove(&info.rq);
        let b = self.qm(q);
        b.sorted.remove(&(info.rq.sector, id));
        if let Some(i) = b.fifo.iter().position(|&(x, _)| x == id) {
            b.fifo.remove(i);
        }
        self.queued -= 1;
        if let Some(r) = self.rqs[id as usize].as_mut() {
            r.queued = false;
        }
        if self.q(q).sorted.is_empty() {
            self.qm(q).next_rq = None;
            if self.q(q).busy && Some(q) != self.in_service {
                self.del_busy(q);
                let b = self.qm(q);
                b.en.budget = 0;
                b.en.service = 0;
            }
        }
    }

    /// `bfq_dispatch_rq_from_bfqq`.
    fn dispatch_from(&mut self, q: u32, now: Ns) -> u32 {
        let id = self.q(q).next_rq.expect("a queue chosen for dispatch has a request");
        let charge = self.serv_to_charge(id, q);
        self.served(q, charge);
        if Some(q) == self.in_service && self.wait_dispatch {
            self.wait_dispatch = false;
            self.waited_rq = Some(id);
        }
        if Some(q) != self.in_service {
            self.stats.injected += 1;
        }
        self.qm(q).dispatched += 1;
        let rq = self.info(id).rq;
        self.update_peak_rate(rq.sector, rq.nr_sectors, now);
        self.remove_request(q, id, now);
        if Some(q) == self.in_service {
            self.update_wr_data(q, now);
            if self.tot_busy() > 1 && self.q(q).class == IDLE_CLASS {
                self.expire(q, false, Expiration::BudgetExhausted, now);
            }
        }
        id
    }

    /// `bfq_update_hw_tag`.
    fn update_hw_tag(&mut self) {
        self.max_rq_in_driver = self.max_rq_in_driver.max(self.rq_in_driver);
        if self.hw_tag == 1 || self.rq_in_driver + self.queued as u32 <= HW_QUEUE_THRESHOLD {
            return;
        }
        if let Some(s) = self.in_service {
            let b = self.q(s);
            if b.has_short_ttime && b.dispatched + (b.queued() as u32) < HW_QUEUE_THRESHOLD && self.rq_in_driver < HW_QUEUE_THRESHOLD {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = i8::from(self.max_rq_in_driver > HW_QUEUE_THRESHOLD);
        self.max_rq_in_driver = 0;
        self.hw_tag_samples = 0;
    }

    /// `bfq_update_inject_limit`: the first request of the in-service queue completed;
    /// compare its service time with the baseline measured without injection.
    fn update_inject_limit(&mut self, q: u32, now: Ns) {
        let tot = now - self.last_empty_occupied;
        let max_in_driver = self.max_rq_in_driver;
        let injected = self.rqs_injected;
        let in_driver = self.rq_in_driver;
        let b = self.qm(q);
        let old = b.inject_limit;
        if b.last_serv_time_ns > 0 && injected {
            let threshold = b.last_serv_time_ns * 3 / 2;
            if tot >= threshold && old > 0 {
                b.inject_limit -= 1;
                b.decrease_time = Some(now);
            } else if tot < threshold && old <= max_in_driver {
                b.inject_limit += 1;
            }
        }
        if (b.last_serv_time_ns == 0 && in_driver == 1) || tot < b.last_serv_time_ns {
            if b.last_serv_time_ns == 0 {
                b.inject_limit = old.max(1);
            }
            b.last_serv_time_ns = tot;
        } else if !injected && in_driver == 1 {
            b.last_serv_time_ns = tot;
        }
        self.waited_rq = None;
        self.rqs_injected = false;
    }

    /// `bfq_completed_request`.
    fn completed_request(&mut self, q: u32, now: Ns) {
        self.update_hw_tag();
        self.rq_in_driver -= 1;
        let b = self.qm(q);
        b.dispatched -= 1;
        if b.dispatched == 0 && !b.busy {
            b.budget_timeout = Some(now);
            self.del_pending(q);
            self.weights_remove(q);
        }
        self.qm(q).last_end_request = now;
        let delta_us = now.saturating_sub(self.last_completion) / USEC;
        if delta_us > MIN_TT / USEC && (self.peak.last_rq_max_size << RATE_SHIFT) / delta_us < 1 << (RATE_SHIFT - 10) {
            self.update_rate_reset(None, now);
        }
        self.last_completion = now;
        self.last_completed_q = Some(q);
        let b = self.q(q);
        if b.softrt_update && b.dispatched == 0 && b.sorted.is_empty() && b.wr_coeff != WR_COEFF {
            let t = self.softrt_next_start(q, now);
            self.qm(q).soft_rt_next_start = t;
        }
        if self.in_service == Some(q) {
            if self.must_idle(q) {
                if self.q(q).dispatched == 0 {
                    self.arm_slice_timer(now);
                }
            } else if self.may_expire_for_budg_timeout(q, now) {
                self.expire(q, false, Expiration::BudgetTimeout, now);
            } else if self.q(q).sorted.is_empty() && (self.q(q).dispatched == 0 || !self.better_to_idle(q)) {
                self.expire(q, false, Expiration::NoMoreRequests, now);
            }
        }
    }

    /// `bfq_idle_slice_timer_body`.
    fn idle_slice_timer(&mut self, now: Ns) {
        self.idle_timer = None;
        let Some(q) = self.in_service else { return };
        self.qm(q).wait_request = false;
        let reason = if self.q(q).budget_timeout.is_some_and(|t| now >= t) {
            Expiration::BudgetTimeout
        } else if self.q(q).queued() == 0 {
            Expiration::TooIdle
        } else {
            return;
        };
        self.expire(q, true, reason, now);
    }

    /// The weight a queue of the process `owner` has now (for tests and reports).
    #[cfg(test)]
    pub(crate) fn weight_of(&self, owner: u32) -> Option<u64> {
        self.by_key
            .iter()
            .find(|((_, k), _)| *k == owner)
            .map(|(_, &q)| self.q(q).en.weight)
    }
}

impl Elevator for Bfq {
    fn name(&self) -> &'static str {
        "bfq"
    }

    fn try_merge(&mut self, op: Op, sector: u64, nr_sectors: u64, max_sectors: u64) -> Option<(u32, Merge)> {
        let (id, side) = self.merges.find(op, sector, nr_sectors)?;
        let mut r = self.info(id);
        if r.rq.nr_sectors + nr_sectors > max_sectors {
            return None;
        }
        grow(&mut self.merges, &mut self.qs[r.queue as usize].sorted, &mut r.rq, side, nr_sectors);
        self.rqs[id as usize] = Some(r);
        Some((id, side))
    }

    /// `bfq_insert_request` → `__bfq_insert_request`.
    fn insert(&mut self, now: Ns, rq: ElvRq) {
        let q = self.queue_of(&rq, now);
        if self.q(q).just_created && (self.burst_size > 0 || self.tot_busy() == 0) {
            self.handle_burst(q, now);
        }
        let idx = rq.id as usize;
        if self.rqs.len() <= idx {
            self.rqs.resize(idx + 1, None);
        }
        let sync = usize::from(rq.sync);
        let fifo_time = now + self.t.fifo_expire[sync];
        self.rqs[idx] = Some(RqInfo {
            rq,
            queue: q,

            queued: true,
        });
        self.merges.insert(&rq);
        let slice_idle = self.t.slice_idle;
        if self.q(q).dispatched == 0 && !self.q(q).busy {
            self.qm(q).update_thinktime(now, slice_idle);
        }
        self.update_has_short_ttime(q, now);
        self.update_io_seektime(q, &rq, now);
        self.add_request(q, rq.id, now);
        self.qm(q).fifo.push_back((rq.id, fifo_time));
        self.rq_enqueued(q, rq.id, now);
    }

    /// `__bfq_dispatch_request`.
    fn dispatch(&mut self, now: Ns) -> Option<ElvRq> {
        if self.tot_busy() == 0 || (self.t.strict_guarantees && self.rq_in_driver > 0) {
            return None;
        }
        let q = self.select_queue(now)?;
        let id = self.dispatch_from(q, now);
        self.rq_in_driver += 1;
        Some(self.info(id).rq)
    }

    fn queued(&self) -> usize {
        self.queued
    }

    /// `bfq_limit_depth`: async requests and sync writes may hold only part of the tags,
    /// less while a queue is weight raised.
    fn shallow_depth(&self, op: Op, sync: bool, nr_requests: u32) -> Option<u32> {
        if sync && op == Op::Read {
            return None;
        }
        let (num, den) = match (self.wr_busy > 0, sync) {
            (false, false) => (1, 2),
            (false, true) => (3, 4),
            (true, false) => (3, 16),
            (true, true) => (6, 16),
        };
        Some((nr_requests * num / den).max(1))
    }

    fn has_shallow_depth(&self) -> bool {
        true
    }

    /// `bfq_finish_requeue_request`.
    fn completed(&mut self, now: Ns, id: u32) {
        let Some(info) = self.rqs.get(id as usize).copied().flatten() else {
            return;
        };
        if info.queued {
            return;
        }
        self.rqs[id as usize] = None;
        if self.waited_rq == Some(id) {
            self.update_inject_limit(info.queue, now);
        }
        self.completed_request(info.queue, now);
    }

    /// `bfq_create_group_hierarchy` and `bfq_pd_init`: a group per cgroup, its entity in
    /// its parent's trees with the cgroup's `io.bfq.weight` on this device.
    fn set_cgroups(&mut self, groups: &[ElvGroup]) {
        self.groups.truncate(1);
        for g in groups {
            let parent = g.parent.map_or(0, |p| u32::from(p) + 1);
            self.groups.push(BfqGroup::new(parent, g.weight.clamp(MIN_WEIGHT, MAX_WEIGHT)));
        }
    }

    fn next_timer(&self) -> Option<Ns> {
        self.idle_timer
    }

    fn timer_fired(&mut self, now: Ns) {
        if self.idle_timer.is_some_and(|t| t <= now) {
            self.idle_slice_timer(now);
        }
    }
}
