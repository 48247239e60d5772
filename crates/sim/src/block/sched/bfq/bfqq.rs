//! `struct bfq_queue`: one process's synchronous I/O, or the shared asynchronous I/O of one
//! priority, with its scheduling entity (`struct bfq_entity`) and the statistics BFQ keeps
//! about the process behind it.

use super::consts::*;
use super::wf2q::Entity;
use crate::config::{IoPrio, IoPrioClass};
use crate::Ns;
use std::collections::{BTreeSet, VecDeque};

/// Where an entity is in its service tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Tree {
    /// Not in any tree and not counted in `wsum`.
    #[default]
    None,
    /// Backlogged, waiting for service.
    Active,
    /// Emptied with a finish time still ahead of the tree's virtual time: kept (and its
    /// weight counted) until the virtual time passes it, so that a queue cannot gain by
    /// emptying and coming back (`bfq_idle_insert`).
    Idle,
    /// In service (extracted from the active tree, still counted in `wsum`).
    InService,
}

pub(super) struct Bfqq {
    pub sync: bool,
    /// Service-tree index: 0 realtime, 1 best effort, 2 idle.
    pub class: usize,
    pub orig_weight: u64,
    /// Its B-WF2Q+ entity; the weight is `orig_weight × wr_coeff`, applied when the entity
    /// is (re)queued or at once when weight raising starts or ends in service.
    pub en: Entity,
    pub prio_changed: bool,
    /// The weight this queue is counted under in the weights tree, if it is.
    pub weight_counter: Option<u64>,
    // Requests: sector-sorted, and in arrival order with their FIFO deadlines.
    pub sorted: BTreeSet<(u64, u32)>,
    pub fifo: VecDeque<(u32, Ns)>,
    pub next_rq: Option<u32>,
    pub dispatched: u32,
    pub max_budget: u64,
    /// When the budget runs out of time; also (when the queue empties with nothing in
    /// flight) when it became idle. None: minus infinity.
    pub budget_timeout: Option<Ns>,
    // Flags (`BFQQF_*`).
    pub busy: bool,
    /// Counted in its group's queues with pending requests.
    pub pending: bool,
    pub wait_request: bool,
    pub non_blocking_wait_rq: bool,
    pub fifo_expire: bool,
    pub has_short_ttime: bool,
    pub io_bound: bool,
    pub in_large_burst: bool,
    pub in_burst_list: bool,
    pub just_created: bool,
    pub softrt_update: bool,
    /// The queue whose completions this one's requests follow (`waker_bfqq`), once seen
    /// three times, and the candidate being counted.
    pub waker: Option<u32>,
    pub tentative_waker: Option<u32>,
    pub waker_detections: u32,
    pub waker_detection_started: Ns,
    /// I/O intensity (`bfq_update_io_intensity`): time since the measurement started and
    /// time spent with nothing queued or in flight.
    pub io_start_time: Ns,
    pub tot_idle_time: Ns,
    // Think time (`bfq_ttime`) and seeks.
    pub last_end_request: Ns,
    pub ttime_samples: u64,
    pub ttime_total: u64,
    pub ttime_mean: u64,
    pub seek_history: u32,
    pub last_request_pos: u64,
    // Weight raising.
    pub wr_coeff: u64,
    pub wr_cur_max_time: Ns,
    pub last_wr_start_finish: Ns,
    pub wr_start_at_switch_to_srt: Option<Ns>,
    pub soft_rt_next_start: Ns,
    pub last_idle_bklogged: Ns,
    pub service_from_backlogged: u64,
    pub service_from_wr: u64,
    // Injection.
    pub inject_limit: u32,
    pub last_serv_time_ns: Ns,
    pub decrease_time: Option<Ns>,
}

/// `bfq_ioprio_to_weight`: (`IOPRIO_NR_LEVELS` − level) × 10; best effort 4 gives 40.
pub(super) fn ioprio_to_weight(p: IoPrio) -> u64 {
    let level = match p.class {
        IoPrioClass::Idle => 7,
        _ => u64::from(p.level.min(7)),
    };
    (8 - level) * 10
}

pub(super) fn class_index(c: IoPrioClass) -> usize {
    match c {
        IoPrioClass::Rt => 0,
        IoPrioClass::Be => 1,
        IoPrioClass::Idle => 2,
    }
}

impl Bfqq {
    /// `bfq_init_bfqq` + `bfq_init_entity`.
    pub(super) fn new(sync: bool, prio: IoPrio, group: u32, max_budget: u64, now: Ns) -> Self {
        let class = class_index(prio.class);
        let weight = ioprio_to_weight(prio);
        Bfqq {
            sync,
            class,
            orig_weight: weight,
            en: Entity {
                weight,
                parent: group,
                ..Entity::default()
            },
            prio_changed: false,
            weight_counter: None,
            sorted: BTreeSet::new(),
            fifo: VecDeque::new(),
            next_rq: None,
            dispatched: 0,
            max_budget: 2 * max_budget / 3,
            budget_timeout: None,
            busy: false,
            pending: false,
            wait_request: false,
            non_blocking_wait_rq: false,
            fifo_expire: false,
            // Idle-class queues never idle, so they are not marked.
            has_short_ttime: sync && class != IDLE_CLASS,
            io_bound: true,
            in_large_burst: false,
            in_burst_list: false,
            just_created: sync,
            softrt_update: false,
            waker: None,
            tentative_waker: None,
            waker_detections: 0,
            waker_detection_started: 0,
            io_start_time: now,
            tot_idle_time: 0,
            // "Minus infinity from now" in the kernel's words, i.e. now + 1 ns.
            last_end_request: now + 1,
            ttime_samples: 0,
            ttime_total: 0,
            ttime_mean: 0,
            // The first request is almost certainly a seek.
            seek_history: 1,
            last_request_pos: 0,
            wr_coeff: 1,
            wr_cur_max_time: 0,
            last_wr_start_finish: now,
            wr_start_at_switch_to_srt: None,
            soft_rt_next_start: now,
            last_idle_bklogged: now,
            service_from_backlogged: 0,
            service_from_wr: 0,
            inject_limit: 0,
            last_serv_time_ns: 0,
            decrease_time: Some(now),
        }
    }

    pub(super) fn queued(&self) -> usize {
        self.sorted.len()
    }

    /// `bfq_bfqq_budget_left` (may be negative after time charging).
    pub(super) fn budget_left(&self) -> i64 {
        self.en.budget as i64 - self.en.service as i64
    }

    /// `BFQQ_SEEKY`: more than 19 of the last 32 requests were seeks.
    pub(super) fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 19
    }

    /// `BFQQ_TOTALLY_SEEKY`: all of the last 32.
    pub(super) fn totally_seeky(&self) -> bool {
        self.seek_history == u32::MAX
    }

    /// `bfq_update_io_thinktime`: a decayed mean of the time from the queue's last
    /// completion to its next request, each sample capped at twice `slice_idle`.
    pub(super) fn update_thinktime(&mut self, now: Ns, slice_idle: Ns) {
        // A new queue's last completion is in the future: the kernel's unsigned difference
        // wraps and the cap applies.
        let elapsed = now.checked_sub(self.last_end_request).unwrap_or(u64::MAX).min(2 * slice_idle);
        self.ttime_samples = (7 * self.ttime_samples + 256) / 8;
        self.ttime_total = (7 * self.ttime_total + 256 * elapsed) / 8;
        self.ttime_mean = (self.ttime_total + 128) / self.ttime_samples;
    }
}
