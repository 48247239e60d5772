//! CFQ, the "completely fair queueing" elevator of the legacy block layer
//! (`block/cfq-iosched.c`), in the two forms that matter for a reader beside a writer:
//!
//! * **`cfq-2.6.20`** (2.6.18–2.6.21, checked against the 2.6.20 release): round-robin lists of
//!   per-process queues, plus `busy_rr` for queues that still have requests in the driver.
//!   A synchronous request that arrives while another queue is active never preempts it: the
//!   preemption test first asks whether the *new* queue is waiting for a request, which only
//!   the active queue can be. Nothing bounds how many requests one queue has in the driver,
//!   so the shared async queue fills every NCQ tag, 4 per dispatch round (`cfq_quantum`), for
//!   up to 16 requests (`cfq_prio_to_maxrq`) or 40 ms (`slice_async`) per slice. A reader then
//!   waits for the async slice to end and for the writes already in the drive.
//! * **`cfq-2.6.22`** (the service-tree rework of 2.6.22, through about 2.6.28): a sync request
//!   preempts an active async queue at once and goes to the front; while another queue is
//!   busy a queue may have only `quantum` requests in the driver (`4 × quantum` alone); and
//!   no async request is dispatched while a sync one is in the driver (`sync_flight`). The
//!   slice starts at the queue's first completion.
//!
//! Common to both: sync requests (reads, `REQ_SYNC` writes) go to the submitting process's
//! queue, async writes to one shared queue (one I/O priority: best effort 4); a queue's FIFO
//! head is served first once per slice if older than `fifo_expire` (125 ms sync, 250 ms
//! async); otherwise requests go in the order of `cfq_choose_req` (sync first, then nearest
//! ahead of the head, backwards up to 16 MiB at twice the cost). An emptied sync queue may
//! idle `slice_idle` (8 ms) for its process's next request, unless the process thinks longer
//! than that or, on a queueing (NCQ) device, seeks far (mean over 64 MiB in 2.6.20, 4 MiB in
//! 2.6.22, where a seeky queue idles 2 ms only).
//!
//! `ionice` (the process's I/O priority, taken when its queue is created): the realtime class
//! is served before best effort, the idle class only when no other queue has requests and
//! 100 ms after the last other request completed (`CFQ_IDLE_GRACE`); the level sets the slice,
//! `slice + slice/5 × (4 − level)` (`cfq_prio_slice`: 180 ms at level 0, 40 ms at 7 for a
//! sync queue); 2.6.22 lets any request preempt an idle-class queue.
//!
//! Simplified: best-effort queues of every level are served in turn (2.6.20's per-level
//! lists and 2.6.22's level offset in the service tree are not modelled: levels set slice
//! lengths, not the order), no metadata preemption, the 2.6.22 service tree as a FIFO with
//! front insertion, merges searched across queues (a bio is merged only into a request of
//! its own direction), exact-ns slices.

use super::merge_index::{grow, MergeIndex};
use super::mq_deadline::INT_MAX;
use super::{no_check, ElevatorInfo};
use super::{ElvRq, Merge};
pub(crate) use crate::config::CfqTunables;
use crate::config::{DeadlineTunables, Knob, KnobKind, QueueConfig, SchedulerKind};
use crate::config::{IoPrio, IoPrioClass};
use crate::drivers::Op;
use crate::knob;
use crate::Ns;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
/// CFQ's tunables (`block/cfq-iosched.c`, 2.6.18-2.6.31); times in ms as sysfs shows them.
static CFQ_TUNABLES: [Knob<QueueConfig>; 9] = [
    knob!(QueueConfig, "queue/iosched/quantum", KnobKind::Count { min: 1, max: INT_MAX }, "requests a queue moves to the driver per round", cfq.quantum: u32),
    knob!(QueueConfig, "queue/iosched/fifo_expire_sync", MS, "ms before a sync request's FIFO wins", cfq.fifo_expire_sync: u64),
    knob!(QueueConfig, "queue/iosched/fifo_expire_async", MS, "ms before an async request's FIFO wins", cfq.fifo_expire_async: u64),
    knob!(QueueConfig, "queue/iosched/back_seek_max", KnobKind::Count { min: 0, max: INT_MAX }, "KiB behind the head the next request may lie", cfq.back_seek_max_kb: u64),
    knob!(QueueConfig, "queue/iosched/back_seek_penalty", KnobKind::Count { min: 1, max: INT_MAX }, "cost of a backward seek against a forward one", cfq.back_seek_penalty: u64),
    knob!(QueueConfig, "queue/iosched/slice_sync", MS, "ms of a sync queue's slice", cfq.slice_sync: u64),
    knob!(QueueConfig, "queue/iosched/slice_async", MS, "ms of the async queue's slice", cfq.slice_async: u64),
    knob!(QueueConfig, "queue/iosched/slice_async_rq", KnobKind::Count { min: 1, max: INT_MAX }, "base of the async request budget per slice", cfq.slice_async_rq: u32),
    knob!(QueueConfig, "queue/iosched/slice_idle", MS, "ms an emptied sync queue waits for its process's next request; 0 disables idling", cfq.slice_idle: u64),
];

/// A CFQ time tunable: ms in sysfs, ns in the model.
const MS: KnobKind = KnobKind::Millis {
    max: INT_MAX,
    scale: 1_000_000,
};

/// `cfq-2.6.20` in the list of elevators.
pub(crate) static INFO_2620: ElevatorInfo = ElevatorInfo {
    kind: SchedulerKind::CFQ_2620,
    aliases: &[],
    summary: "CFQ before the service-tree rework: per-process sync queues, one async queue, time slices; reads never preempt writes",
    kernels: "2.6.18-2.6.21 (the default elevator)",
    tunables: &CFQ_TUNABLES,
    defaults: |q| q.iosched = DeadlineTunables::default(),
    check: no_check,
    build: |q| Box::new(Cfq::new(CfqVersion::V2620, q.cfq)),
};

/// `cfq-2.6.22` in the list of elevators.
pub(crate) static INFO_2622: ElevatorInfo = ElevatorInfo {
    kind: SchedulerKind::CFQ_2622,
    aliases: &[],
    summary: "CFQ after the 2.6.22 rework: sync preemption, a time-keyed service tree, async depth bounded while others wait",
    kernels: "2.6.22-2.6.31 (the default elevator)",
    tunables: &CFQ_TUNABLES,
    defaults: |q| q.iosched = DeadlineTunables::default(),
    check: no_check,
    build: |q| Box::new(Cfq::new(CfqVersion::V2622, q.cfq)),
};

/// Which CFQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CfqVersion {
    V2620,
    V2622,
}

/// `CFQ_MIN_TT`: how long a seeky process's emptied queue still waits (2 ms).
const CFQ_MIN_TT: Ns = 2_000_000;
/// `CFQ_IDLE_GRACE` (HZ / 10): the idle class waits this long after other I/O completed.
const CFQ_IDLE_GRACE: Ns = 100_000_000;
/// `CFQ_SLICE_SCALE`: each I/O priority level changes the slice by a fifth of the base.
const CFQ_SLICE_SCALE: i64 = 5;

/// The async queue's key; sync queues are keyed by their process.
pub(crate) const ASYNC_KEY: u32 = 0;

/// `sample_valid`: decayed sample counts above 80 are trusted.
const SAMPLE_VALID: u64 = 80;

#[derive(Clone, Debug, Default)]
struct Cfqq {
    key: u32,
    /// The process's I/O priority (`ioprio_class`, `ioprio`); the async queue is best effort 4.
    class: IoPrioClass,
    level: u8,
    /// Sector-sorted pending requests.
    sorted: BTreeSet<(u64, u32)>,
    /// Arrival order.
    fifo: VecDeque<u32>,
    next_rq: Option<u32>,
    /// Requests dispatched and not yet completed.
    dispatched: u32,
    on_rr: bool,
    /// End of the current slice, once set.
    slice_end: Option<Ns>,
    fifo_checked: bool,
    /// Never serviced yet (`queue_new`): goes in front of older queues.
    new: bool,
    /// The process's think time and seek statistics (`cfq_io_context`).
    last_end: Option<Ns>,
    ttime_samples: u64,
    ttime_total: u64,
    ttime_mean: u64,
    last_pos: Option<u64>,
    seek_samples: u64,
    seek_total: u64,
    seek_mean: u64,
    idle_window: bool,
}

impl Cfqq {
    fn sync(&self) -> bool {
        self.key != ASYNC_KEY
    }
}

#[derive(Clone, Copy, Debug)]
struct RqInfo {
    rq: ElvRq,
    queue: u32,
    arrived: Ns,
    queued: bool,
}

pub(crate) struct Cfq {
    v: CfqVersion,
    t: CfqTunables,
    qs: Vec<Cfqq>,
    by_key: BTreeMap<u32, u32>,
    rqs: Vec<Option<RqInfo>>,
    /// Merge indexes over all pending requests: `(dir, end sector, id)`, `(dir, start, id)`.
    merges: MergeIndex,
    /// Queues with pending requests waiting for a slice.
    rr: VecDeque<u32>,
    /// 2.6.20: those of them that still have requests in the driver (served last).
    busy_rr: VecDeque<u32>,
    /// Idle-class queues with requests (`idle_rr`), served when nothing else waits.
    idle_rr: VecDeque<u32>,
    /// When the last request of a non-idle queue completed (`last_end_request`).
    last_end_request: Ns,
    /// The idle class's grace timer (`idle_class_timer`).
    idle_class_timer: Option<Ns>,
    active: Option<u32>,
    dispatch_slice: u32,
    /// Requests moved to the dispatch list and not yet taken by the driver.
    dispatch_list: VecDeque<u32>,
    rq_in_driver: u32,
    sync_flight: u32,
    hw_tag: bool,
    idle_timer: Option<Ns>,
    last_sector: u64,
    pending: usize,
}

impl Cfq {
    pub(crate) fn new(v: CfqVersion, t: CfqTunables) -> Self {
        Cfq {
            v,
            t,
            qs: Vec::new(),
            by_key: BTreeMap::new(),
            rqs: Vec::new(),
            merges: MergeIndex::default(),
            rr: VecDeque::new(),
            busy_rr: VecDeque::new(),
            idle_rr: VecDeque::new(),
            last_end_request: 0,
            idle_class_timer: None,
            active: None,
            dispatch_slice: 0,
            dispatch_list: VecDeque::new(),
            rq_in_driver: 0,
            sync_flight: 0,
            hw_tag: false,
            idle_timer: None,
            last_sector: 0,
            pending: 0,
        }
    }

    fn queue_of(&mut self, key: u32, prio: IoPrio) -> u32 {
        if let Some(&q) = self.by_key.get(&key) {
            return q;
        }
        let q = self.qs.len() as u32;
        // The shared async queue is the flushers': best effort 4.
        let prio = if key == ASYNC_KEY { IoPrio::default() } else { prio };
        self.qs.push(Cfqq {
            key,
            class: prio.class,
            level: prio.level,
            new: true,
            // 2.6.20 marks every new queue idle-capable (the async one keeps it: its requests
            // never update it); 2.6.22 never idles on async.
            idle_window: key != ASYNC_KEY || self.v == CfqVersion::V2620,
            ..Default::default()
        });
        self.by_key.insert(key, q);
        q
    }

    fn info(&self, id: u32) -> RqInfo {
        self.rqs[id as usize].expect("known request")
    }

    /// `cfq_prio_to_maxrq` at the best-effort priority every task has by default (4, of
    /// `IOPRIO_BE_NR` = 8 levels): requests an async queue may dispatch per slice.
    fn async_maxrq(&self) -> u32 {
        const PRIO_LISTS: u32 = 8;
        const PRIO: u32 = 4;
        let base = self.t.slice_async_rq;
        2 * (base + base * (PRIO_LISTS - 1 - PRIO))
    }

    /// `cfq_prio_slice`: the slice of queue `q`, longer for a better (lower) level.
    fn prio_slice(&self, q: u32) -> Ns {
        let c = &self.qs[q as usize];
        let base = if c.sync() { self.t.slice_sync } else { self.t.slice_async } as i64;
        (base + base / CFQ_SLICE_SCALE * (4 - i64::from(c.level))).max(1) as Ns
    }

    /// `CIC_SEEKY`: a mean seek distance above this many sectors makes a process seeky.
    fn seeky_sectors(&self) -> u64 {
        match self.v {
            CfqVersion::V2620 => 128 * 1024,
            CfqVersion::V2622 => 8 * 1024,
        }
    }

    /// `cfq_choose_req`: which of two candidates to serve next from the head at
    /// `last_sector`: sync before async, then the nearest ahead, a short way back at twice
    /// the distance, else the one that needs only one backward seek.
    fn choose(&self, a: Option<u32>, b: Option<u32>) -> Option<u32> {
        let (a, b) = match (a, b) {
            (None, x) | (x, None) => return x,
            (Some(a), Some(b)) if a == b => return Some(a),
            (Some(a), Some(b)) => (a, b),
        };
        let (ra, rb) = (self.info(a).rq, self.info(b).rq);
        if ra.sync != rb.sync {
            return Some(if ra.sync { a } else { b });
        }
        let last = self.last_sector;
        let back_max = self.t.back_seek_max_kb * 2;
        let dist = |s: u64| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + back_max >= last {
                Some((last - s) * self.t.back_seek_penalty)
            } else {
                None
            }
        };
        match (dist(ra.sector), dist(rb.sector)) {
            (Some(da), Some(db)) => Some(if da < db || (da == db && ra.sector >= rb.sector) { a } else { b }),
            (Some(_), None) => Some(a),
            (None, Some(_)) => Some(b),
            (None, None) => Some(if ra.sector <= rb.sector { a } else { b }),
        }
    }

    /// `cfq_find_next_rq`: after `id` leaves, the better of its sort-order neighbours.
    fn find_next(&self, q: u32, id: u32) -> Option<u32> {
        let c = &self.qs[q as usize];
        let key = (self.info(id).rq.sector, id);
        let next = c
            .sorted
            .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded))
            .next()
            .or_else(|| c.sorted.iter().next())
            .map(|&(_, n)| n)
            .filter(|&n| n != id);
        let prev = c.sorted.range(..key).next_back().map(|&(_, n)| n);
        self.choose(next, prev)
    }

    /// Put a queue with pending requests on its service list (`cfq_resort_rr_list` /
    /// `cfq_service_tree_add`): at the back, or in front when preempted or new.
    fn resort(&mut self, q: u32, front: bool) {
        self.rr.retain(|&x| x != q);
        self.busy_rr.retain(|&x| x != q);
        self.idle_rr.retain(|&x| x != q);
        let c = &self.qs[q as usize];
        if c.class == IoPrioClass::Idle {
            self.idle_rr.push_back(q);
            return;
        }
        if c.class == IoPrioClass::Rt {
            // Ahead of every best-effort queue, behind the realtime ones (2.6.20's `cur_rr`,
            // 2.6.22's service tree sorts them first).
            let qs = &self.qs;
            let at = self.rr.iter().take_while(|&&x| qs[x as usize].class == IoPrioClass::Rt).count();
            self.rr.insert(at, q);
            return;
        }
        let list = if self.v == CfqVersion::V2620 && c.dispatched > 0 {
            &mut self.busy_rr
        } else {
            &mut self.rr
        };
        // 2.6.20 puts a preempted or never-served queue first; the 2.6.22 service tree keys a
        // queue by the time it is (re)added, so only a preempting queue goes in front.
        let new = self.v == CfqVersion::V2620 && c.new;
        if front || new {
            // In front, but behind the realtime queues and the other never-served ones.
            let qs = &self.qs;
            let at = list
                .iter()
                .take_while(|&&x| qs[x as usize].class == IoPrioClass::Rt || qs[x as usize].new)
                .count();
            list.insert(at, q);
        } else {
            list.push_back(q);
        }
    }

    fn del_rr(&mut self, q: u32) {
        self.qs[q as usize].on_rr = false;
        self.rr.retain(|&x| x != q);
        self.busy_rr.retain(|&x| x != q);
        self.idle_rr.retain(|&x| x != q);
    }

    fn slice_used(&self, q: u32, now: Ns) -> bool {
        self.qs[q as usize].slice_end.is_some_and(|e| now > e)
    }

    /// `__cfq_slice_expired`.
    fn slice_expired(&mut self, preempted: bool) {
        let Some(q) = self.active.take() else { return };
        self.idle_timer = None;
        let c = &mut self.qs[q as usize];
        c.new = false;
        c.slice_end = None;
        c.fifo_checked = false;
        if c.on_rr {
            self.resort(q, preempted && self.v == CfqVersion::V2620);
        }
        self.dispatch_slice = 0;
    }

    /// `cfq_set_active_queue`: the first queue of the service list (2.6.20: `busy_rr` after
    /// it), an idle-class queue only when none has requests and the grace period is over.
    fn set_active(&mut self, now: Ns) -> Option<u32> {
        let q = match self.rr.pop_front().or_else(|| self.busy_rr.pop_front()) {
            Some(q) => q,
            None => {
                self.idle_rr.front()?;
                let ready = self.last_end_request + CFQ_IDLE_GRACE;
                if now < ready {
                    self.idle_class_timer = Some(ready);
                    return None;
                }
                self.idle_class_timer = None;
                self.idle_rr.pop_front()?
            }
        };
        self.active = Some(q);
        self.dispatch_slice = 0;
        let c = &mut self.qs[q as usize];
        c.slice_end = None;
        c.fifo_checked = false;
        Some(q)
    }

    /// `cfq_arm_slice_timer`: idle on the emptied active sync queue for its next request.
    fn arm_slice_timer(&mut self, q: u32, now: Ns) -> bool {
        let c = &self.qs[q as usize];
        if self.t.slice_idle == 0 || !c.idle_window || !c.sync() {
            return false;
        }
        let mut sl = self.t.slice_idle;
        if c.seek_samples > SAMPLE_VALID && c.seek_mean > self.seeky_sectors() {
            sl = sl.min(CFQ_MIN_TT);
        }
        self.idle_timer = Some(now + sl);
        true
    }

    /// `cfq_select_queue`: keep the active queue, wait for it, or move on.
    fn select_queue(&mut self, now: Ns) -> Option<u32> {
        if let Some(q) = self.active {
            let c = &self.qs[q as usize];
            let expire = match self.v {
                CfqVersion::V2620 => {
                    if self.slice_used(q, now) {
                        true
                    } else if !c.sorted.is_empty() {
                        return Some(q);
                    } else if c.dispatched > 0 {
                        // Wait for the queue's requests in the driver before anyone else.
                        return None;
                    } else {
                        !(c.sync() && self.arm_slice_timer(q, now))
                    }
                }
                CfqVersion::V2622 => {
                    if self.slice_used(q, now) {
                        true
                    } else if !c.sorted.is_empty() {
                        return Some(q);
                    } else {
                        !(self.idle_timer.is_some() || (c.dispatched > 0 && c.idle_window))
                    }
                }
            };
            if !expire {
                return None;
            }
            self.slice_expired(false);
        }
        self.set_active(now)
    }

    /// `__cfq_dispatch_requests`: up to `max` requests of queue `q` to the dispatch list.
    fn dispatch_from(&mut self, q: u32, max: u32, now: Ns) -> u32 {
        let mut n = 0;
        loop {
            let fifo_rq = {
                let c = &mut self.qs[q as usize];
                let mut head = None;
                if !c.fifo_checked {
                    while let Some(&id) = c.fifo.front() {
                        if self.rqs[id as usize].is_some_and(|r| r.queued && r.queue == q) {
                            head = Some(id);
                            break;
                        }
                        c.fifo.pop_front();
                    }
                }
                let expire = if c.sync() {
                    self.t.fifo_expire_sync
                } else {
                    self.t.fifo_expire_async
                };
                head.filter(|&id| now > self.rqs[id as usize].expect("queued").arrived + expire)
            };
            let id = match fifo_rq {
                Some(id) => {
                    self.qs[q as usize].fifo_checked = true;
                    id
                }
                None => match self.qs[q as usize].next_rq {
                    Some(id) => id,
                    None => break,
                },
            };
            self.dispatch_insert(q, id);
            self.dispatch_slice += 1;
            n += 1;
            if self.qs[q as usize].sorted.is_empty() || n >= max {
                break;
            }
        }
        if self.v == CfqVersion::V2620 && self.qs[q as usize].slice_end.is_none() {
            let slice = self.prio_slice(q);
            self.qs[q as usize].slice_end = Some(now + slice);
        }
        // An async queue that used its request budget expires at once; in 2.6.20 so does a
        // queue that may not idle (its process seeks or thinks too much).
        let busy_others = self.rr.len() + self.busy_rr.len() > 0;
        let c = &self.qs[q as usize];
        let used = !c.sync() && self.dispatch_slice >= self.async_maxrq();
        let expire = match self.v {
            CfqVersion::V2620 => used || !c.idle_window,
            CfqVersion::V2622 => used && busy_others,
        };
        if expire && self.active == Some(q) {
            self.slice_expired(false);
        }
        n
    }

    /// `cfq_dispatch_insert`: off the queue, onto the dispatch list.
    fn dispatch_insert(&mut self, q: u32, id: u32) {
        let next = if self.qs[q as usize].next_rq == Some(id) {
            self.find_next(q, id)
        } else {
            self.qs[q as usize].next_rq
        };
        self.remove_pending(id);
        let c = &mut self.qs[q as usize];
        c.next_rq = next.filter(|&n| n != id);
        c.dispatched += 1;
        if c.sync() {
            self.sync_flight += 1;
        }
        if c.sorted.is_empty() {
            c.next_rq = None;
            self.del_rr(q);
        }
        self.last_sector = self.info(id).rq.end();
        self.dispatch_list.push_back(id);
    }

    fn remove_pending(&mut self, id: u32) {
        let mut r = self.info(id);
        self.merges.remove(&r.rq);
        self.qs[r.queue as usize].sorted.remove(&(r.rq.sector, id));
        r.queued = false;
        self.rqs[id as usize] = Some(r);
        self.pending -= 1;
    }

    /// `cfq_dispatch_requests`: fill the dispatch list for the driver.
    fn dispatch_requests(&mut self, now: Ns) {
        if self.idle_timer.is_some_and(|t| t <= now) {
            self.idle_timer_fired(now);
        }
        let mut prev = None;
        while let Some(q) = self.select_queue(now) {
            if self.v == CfqVersion::V2620 {
                if prev == Some(q) {
                    break;
                }
            } else {
                let max = self.t.quantum;
                let busy = self.rr.len() + self.busy_rr.len() + usize::from(!self.qs[q as usize].sorted.is_empty());
                let d = self.qs[q as usize].dispatched;
                if d >= max && (busy > 1 || d >= 4 * max) {
                    break;
                }
                if self.sync_flight > 0 && !self.qs[q as usize].sync() {
                    break;
                }
            }
            self.idle_timer = None;
            let n = self.dispatch_from(q, self.t.quantum, now);
            let idling = self.qs[q as usize].idle_window && self.active == Some(q);
            if n == 0 || (self.v == CfqVersion::V2620 && idling) || !self.dispatch_list.is_empty() {
                break;
            }
            prev = Some(q);
        }
    }

    /// `cfq_idle_slice_timer`: the idled queue got nothing in time (or its slice ran out).
    fn idle_timer_fired(&mut self, now: Ns) {
        self.idle_timer = None;
        if let Some(q) = self.active {
            if !self.slice_used(q, now) && !self.qs[q as usize].sorted.is_empty() {
                return;
            }
        }
        self.slice_expired(false);
    }

    /// Think time and seek distance of the submitting process, then its idle window
    /// (`cfq_update_io_thinktime`, `cfq_update_io_seektime`, `cfq_update_idle_window`).
    fn update_stats(&mut self, q: u32, rq: &ElvRq, now: Ns) {
        let slice_idle = self.t.slice_idle;
        let hw_tag = self.hw_tag;
        let seeky_limit = self.seeky_sectors();
        let c = &mut self.qs[q as usize];
        if !c.sync() {
            return;
        }
        if let Some(end) = c.last_end {
            let tt = now.saturating_sub(end).min(2 * slice_idle);
            c.ttime_samples = (7 * c.ttime_samples + 256) / 8;
            c.ttime_total = (7 * c.ttime_total + 256 * tt) / 8;
            c.ttime_mean = (c.ttime_total + 128) / c.ttime_samples;
        }
        if let Some(pos) = c.last_pos {
            let mut sdist = pos.abs_diff(rq.sector);
            let cap = if c.seek_samples <= 60 { 2 * 1024 * 1024 } else { 2 * 1024 * 64 };
            sdist = sdist.min(c.seek_mean * 4 + cap);
            c.seek_samples = (7 * c.seek_samples + 256) / 8;
            c.seek_total = (7 * c.seek_total + 256 * sdist) / 8;
            c.seek_mean = (c.seek_total + c.seek_samples / 2) / c.seek_samples.max(1);
        }
        c.last_pos = Some(rq.end());
        if slice_idle == 0 || (hw_tag && c.seek_mean > seeky_limit) {
            c.idle_window = false;
        } else if c.ttime_samples > SAMPLE_VALID {
            c.idle_window = c.ttime_mean <= slice_idle;
        }
    }

    /// Queue a request of process `owner` (`cfq_insert_request`, `cfq_rq_enqueued`).
    pub(crate) fn insert_owned(&mut self, now: Ns, rq: ElvRq, owner: u32) {
        let key = if rq.sync { owner.max(1) } else { ASYNC_KEY };
        let q = self.queue_of(key, rq.prio);
        let idx = rq.id as usize;
        if idx >= self.rqs.len() {
            self.rqs.resize(idx + 1, None);
        }
        self.rqs[idx] = Some(RqInfo {
            rq,
            queue: q,
            arrived: now,
            queued: true,
        });
        self.merges.insert(&rq);
        self.pending += 1;
        self.update_stats(q, &rq, now);
        let c = &mut self.qs[q as usize];
        c.sorted.insert((rq.sector, rq.id));
        c.fifo.push_back(rq.id);
        let cur = c.next_rq;
        let next = self.choose(cur, Some(rq.id));
        self.qs[q as usize].next_rq = next;
        if !self.qs[q as usize].on_rr {
            self.qs[q as usize].on_rr = true;
            if self.active != Some(q) {
                self.resort(q, false);
            }
        }
        if self.active == Some(q) {
            // The idled-for request arrived: dispatch it now.
            self.idle_timer = None;
        } else if self.should_preempt(q, &rq) {
            self.slice_expired(true);
            self.rr.retain(|&x| x != q);
            self.busy_rr.retain(|&x| x != q);
            self.rr.push_front(q);
        }
    }

    /// `cfq_should_preempt`. 2.6.20 first requires the new queue to be waiting for a request,
    /// which only the active queue can be: no preemption. 2.6.22: a request of a queue not
    /// of the idle class preempts an idle-class queue, and a sync request an async queue.
    fn should_preempt(&self, new: u32, rq: &ElvRq) -> bool {
        let Some(a) = self.active else { return false };
        match self.v {
            CfqVersion::V2620 => false,
            CfqVersion::V2622 => {
                let (n, a) = (&self.qs[new as usize], &self.qs[a as usize]);
                if n.class == IoPrioClass::Idle {
                    return false;
                }
                a.class == IoPrioClass::Idle || (rq.sync && !a.sync())
            }
        }
    }

    /// The driver finished request `id` (`cfq_completed_request`).
    pub(crate) fn completed(&mut self, now: Ns, id: u32) {
        let Some(r) = self.rqs.get(id as usize).copied().flatten() else {
            return;
        };
        let q = r.queue;
        self.rqs[id as usize] = None;
        self.rq_in_driver = self.rq_in_driver.saturating_sub(1);
        let c = &mut self.qs[q as usize];
        c.dispatched = c.dispatched.saturating_sub(1);
        let sync = c.sync();
        if sync {
            self.sync_flight = self.sync_flight.saturating_sub(1);
            c.last_end = Some(now);
        }
        if c.class != IoPrioClass::Idle {
            self.last_end_request = now;
        }
        if self.v == CfqVersion::V2620 && c.on_rr && c.dispatched == 0 {
            // Off busy_rr: its requests in the driver are done.
            if self.busy_rr.contains(&q) {
                self.resort(q, false);
            }
        }
        if self.active == Some(q) {
            let c = &mut self.qs[q as usize];
            if self.v == CfqVersion::V2622 && c.slice_end.is_none() {
                let slice = self.prio_slice(q);
                self.qs[q as usize].slice_end = Some(now + slice);
            }
            if self.slice_used(q, now) {
                self.slice_expired(self.v == CfqVersion::V2622);
            } else if sync && self.qs[q as usize].sorted.is_empty() {
                self.arm_slice_timer(q, now);
            }
        }
    }
}

impl super::Elevator for Cfq {
    fn name(&self) -> &'static str {
        match self.v {
            CfqVersion::V2620 => "cfq-2.6.20",
            CfqVersion::V2622 => "cfq-2.6.22",
        }
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

    fn insert(&mut self, now: Ns, rq: ElvRq) {
        self.insert_owned(now, rq, rq.owner);
    }

    fn dispatch(&mut self, now: Ns) -> Option<ElvRq> {
        if self.dispatch_list.is_empty() {
            self.dispatch_requests(now);
        }
        let id = self.dispatch_list.pop_front()?;
        self.rq_in_driver += 1;
        if self.rq_in_driver > 4 {
            self.hw_tag = true;
        }
        Some(self.info(id).rq)
    }

    fn queued(&self) -> usize {
        self.pending + self.dispatch_list.len()
    }

    fn completed(&mut self, now: Ns, id: u32) {
        Cfq::completed(self, now, id);
    }

    fn next_timer(&self) -> Option<Ns> {
        match (self.idle_timer, self.idle_class_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn timer_fired(&mut self, now: Ns) {
        if self.idle_timer.is_some_and(|t| t <= now) {
            self.idle_timer_fired(now);
        }
        if self.idle_class_timer.is_some_and(|t| t <= now) {
            // The grace period is over: the next dispatch may serve the idle class.
            self.idle_class_timer = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Elevator;
    use super::*;

    const T0: Ns = 1_000_000_000;

    fn write(id: u32, sector: u64) -> ElvRq {
        ElvRq {
            id,
            op: Op::Write,
            sector,
            nr_sectors: 1024,
            sync: false,
            owner: 1,
            prio: Default::default(),
            blkcg: None,
        }
    }

    fn read(id: u32, sector: u64, owner: u32) -> ElvRq {
        ElvRq {
            id,
            op: Op::Read,
            sector,
            nr_sectors: 8,
            sync: true,
            owner,
            prio: Default::default(),
            blkcg: None,
        }
    }

    fn cfq(v: CfqVersion) -> Cfq {
        Cfq::new(v, CfqTunables::default())
    }

    /// A flood of async writes, two of them already dispatched, then one read: how many
    /// more writes go to the drive before the read?
    fn writes_ahead_of_a_read(v: CfqVersion) -> usize {
        let mut s = cfq(v);
        for i in 0..40 {
            s.insert(T0, write(i, 1_000_000 + 1024 * i as u64));
        }
        assert_eq!(s.dispatch(T0).map(|r| r.id), Some(0));
        assert_eq!(s.dispatch(T0).map(|r| r.id), Some(1));
        s.insert(T0, read(100, 5_000, 7));
        let mut n = 0;
        while let Some(r) = s.dispatch(T0) {
            if r.id == 100 {
                return n;
            }
            n += 1;
        }
        panic!("the read was never dispatched");
    }

    #[test]
    fn async_slice_budget_and_preemption() {
        // cfq_prio_to_maxrq at priority 4 with slice_async_rq = 2: 16 requests per slice.
        assert_eq!(cfq(CfqVersion::V2620).async_maxrq(), 16);
        // 2.6.20: the read waits for the async slice's budget (16 requests, 2 already out,
        // and the round of 4 in progress is on the dispatch list).
        assert_eq!(writes_ahead_of_a_read(CfqVersion::V2620), 14);
        // 2.6.22: the read preempts the async queue; only the dispatch list's leftovers of the
        // round already taken go first.
        assert!(writes_ahead_of_a_read(CfqVersion::V2622) <= 2);
    }

    #[test]
    fn no_async_dispatch_while_a_read_is_in_flight() {
        for v in [CfqVersion::V2620, CfqVersion::V2622] {
            let mut s = cfq(v);
            s.insert(T0, read(50, 5_000, 7));
            assert_eq!(s.dispatch(T0).map(|r| r.id), Some(50));
            for i in 0..8 {
                s.insert(T0, write(i, 1_000_000 + 1024 * i as u64));
            }
            // 2.6.20: the active reader's queue waits for its request in the driver before any
            // other queue runs; 2.6.22: `sync_flight` holds back async.
            let during = std::iter::from_fn(|| s.dispatch(T0)).count();
            assert_eq!(during, 0, "{v:?}");
            s.completed(T0 + 5_000_000, 50);
            // The reader may idle for its next request (it has not been seen to seek): the
            // writes flow once the idle slice timer has run out.
            let t = s.next_timer().unwrap_or(T0 + 5_000_000);
            assert!(t <= T0 + 5_000_000 + s.t.slice_idle);
            let after = std::iter::from_fn(|| s.dispatch(t)).count();
            assert!(after > 0, "{v:?}: writes dispatched after the read");
        }
    }

    #[test]
    fn async_depth_is_capped_while_another_queue_waits_from_2_6_22() {
        // Reader A is active and idling; writes arrive, then reader B's read (no preemption:
        // the active queue is sync). When A's idle slice runs out the async queue is next:
        // 2.6.22 gives it at most `quantum` requests in the drive while B waits, 2.6.20 its
        // whole budget of 16.
        let depth = |v| {
            let mut s = cfq(v);
            s.insert(T0, read(50, 5_000, 7));
            assert_eq!(s.dispatch(T0).map(|r| r.id), Some(50));
            s.completed(T0 + 1_000_000, 50);
            for i in 0..40 {
                s.insert(T0 + 1_000_000, write(i, 1_000_000 + 1024 * i as u64));
            }
            s.insert(T0 + 1_000_000, read(60, 9_000_000, 8));
            let t = s.next_timer().expect("A idles") + 1;
            let mut writes = 0;
            while let Some(r) = s.dispatch(t) {
                if r.op == Op::Read {
                    break;
                }
                writes += 1;
            }
            writes
        };
        assert_eq!(depth(CfqVersion::V2620), 16);
        assert_eq!(depth(CfqVersion::V2622), 4);
    }

    fn read_at(id: u32, sector: u64, owner: u32, class: IoPrioClass, level: u8) -> ElvRq {
        ElvRq {
            prio: IoPrio { class, level },
            blkcg: None,
            ..read(id, sector, owner)
        }
    }

    /// Two sequential readers kept busy for 2 s, each with its own `ionice`, one request in
    /// the drive at a time taking 1 ms: the share of reads each got.
    fn shares(v: CfqVersion, a: IoPrio, b: IoPrio) -> (u32, u32) {
        let mut s = cfq(v);
        let mut next = 0u32;
        let mut pos = [0u64, 1 << 30];
        let mut t = T0;
        for (owner, p) in [(1u32, a), (2, b)] {
            s.insert(t, read_at(next, pos[owner as usize - 1], owner, p.class, p.level));
            next += 1;
        }
        let mut got = (0, 0);
        while t < T0 + 2_000_000_000 {
            let Some(r) = s.dispatch(t) else {
                // Idling for the active queue: its timer decides.
                t = s.next_timer().expect("a timer while nothing is dispatched");
                s.timer_fired(t);
                continue;
            };
            t += 1_000_000;
            s.completed(t, r.id);
            let (owner, p) = if r.owner == 1 { (1, a) } else { (2, b) };
            if owner == 1 {
                got.0 += 1;
            } else {
                got.1 += 1;
            }
            // The reader's next request follows at once.
            pos[owner as usize - 1] += 8;
            s.insert(t, read_at(next, pos[owner as usize - 1], owner, p.class, p.level));
            next += 1;
        }
        got
    }

    #[test]
    fn ionice_level_sets_the_slice_length() {
        // cfq_prio_slice: a sync slice of 100 ms is 180 ms at level 0 and 40 ms at level 7,
        // so the level-0 reader gets about 4.5 times the reads.
        for v in [CfqVersion::V2620, CfqVersion::V2622] {
            let hi = IoPrio {
                class: IoPrioClass::Be,
                level: 0,
            };
            let lo = IoPrio {
                class: IoPrioClass::Be,
                level: 7,
            };
            let (a, b) = shares(v, hi, lo);
            let ratio = a as f64 / b as f64;
            assert!((3.5..5.5).contains(&ratio), "{v:?}: {a} reads at be/0, {b} at be/7");
            let (a, b) = shares(v, IoPrio::default(), IoPrio::default());
            assert!((a as f64 / b as f64 - 1.0).abs() < 0.1, "{v:?}: {a} and {b} at be/4");
        }
    }

    #[test]
    fn realtime_goes_first_and_idle_class_waits_for_a_quiet_disk() {
        for v in [CfqVersion::V2620, CfqVersion::V2622] {
            let mut s = cfq(v);
            s.insert(T0, read_at(1, 0, 1, IoPrioClass::Idle, 7));
            s.insert(T0, read_at(2, 1000, 2, IoPrioClass::Be, 4));
            s.insert(T0, read_at(3, 2000, 3, IoPrioClass::Rt, 4));
            let first = s.dispatch(T0).expect("a request");
            assert_eq!(first.owner, 3, "{v:?}: the realtime reader first");
            s.completed(T0 + 1_000_000, first.id);
            // Its queue idles for more; then the best-effort reader.
            let mut t = T0 + 1_000_000;
            let second = loop {
                if let Some(r) = s.dispatch(t) {
                    break r;
                }
                t = s.next_timer().expect("idle timer");
                s.timer_fired(t);
            };
            assert_eq!(second.owner, 2, "{v:?}");
            let done = t + 1_000_000;
            s.completed(done, second.id);
            // Nothing else has requests, but the idle class waits 100 ms after the last
            // completion of another class.
            let mut t = done;
            let third = loop {
                if let Some(r) = s.dispatch(t) {
                    break r;
                }
                t = s.next_timer().expect("a timer");
                s.timer_fired(t);
            };
            assert_eq!(third.owner, 1, "{v:?}");
            assert!(
                t >= done + CFQ_IDLE_GRACE,
                "{v:?}: idle class served {} ms after the disk went quiet",
                (t - done) / 1_000_000
            );
        }
    }

    #[test]
    fn seeky_readers_lose_their_idle_window_on_a_queueing_drive() {
        // A reader jumping 32 MiB (65,536 sectors) between reads: seeky by 2.6.22's 4 MiB rule,
        // not by 2.6.20's 64 MiB. Once the drive has shown queueing (hw_tag), 2.6.22 stops
        // idling for it.
        for (v, idles) in [(CfqVersion::V2620, true), (CfqVersion::V2622, false)] {
            let mut s = cfq(v);
            for i in 0..6 {
                s.insert(T0, write(i, 1_000_000 + 1024 * i as u64));
            }
            while s.dispatch(T0).is_some() {}
            assert!(s.hw_tag, "more than 4 requests in the drive");
            let mut t = T0;
            for k in 0..200u32 {
                s.insert(t, read(100 + k, (k as u64 % 2) * 65_536, 7));
                while let Some(r) = s.dispatch(t) {
                    if r.op == Op::Read {
                        t += 1_000_000;
                        s.completed(t, r.id);
                    }
                }
            }
            let q = s.by_key[&7];
            assert_eq!(s.qs[q as usize].idle_window, idles, "{v:?}");
        }
    }

    #[test]
    fn merges_grow_the_request_in_its_queue() {
        let mut s = cfq(CfqVersion::V2622);
        s.insert(T0, write(1, 1_000));
        assert_eq!(s.try_merge(Op::Write, 2_024, 8, 2048), Some((1, Merge::Back)));
        assert_eq!(s.try_merge(Op::Write, 992, 8, 2048), Some((1, Merge::Front)));
        assert_eq!(s.try_merge(Op::Read, 2_032, 8, 2048), None, "reads do not merge into writes");
        let r = s.dispatch(T0).expect("queued");
        assert_eq!((r.sector, r.nr_sectors), (992, 1040));
        assert_eq!(s.queued(), 0);
    }

    #[derive(Clone, Debug)]
    enum Act {
        Insert {
            write: bool,
            sync: bool,
            owner: u32,
            sector: u64,
            nr: u64,
        },
        Merge {
            write: bool,
            sector: u64,
            nr: u64,
        },
        Dispatch,
        Complete,
        Advance(u64),
    }

    fn act() -> impl proptest::strategy::Strategy<Value = Act> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (any::<bool>(), any::<bool>(), 1u32..4, 0u64..64, 1u64..4).prop_map(|(w, sy, o, s, n)| Act::Insert {
                write: w,
                sync: sy || !w,
                owner: o,
                sector: s * 8,
                nr: n * 8
            }),
            2 => (any::<bool>(), 0u64..64, 1u64..4).prop_map(|(w, s, n)| Act::Merge { write: w, sector: s * 8, nr: n * 8 }),
            3 => Just(Act::Dispatch),
            2 => Just(Act::Complete),
            1 => (0u64..200).prop_map(Act::Advance),
        ]
    }

    proptest::proptest! {
        /// Every request comes out exactly once, as the block layer last saw it, and none is
        /// stranded: with completions and the idle timer honoured, the queue always drains.
        #[test]
        fn no_request_lost_duplicated_or_stranded(
            acts in proptest::collection::vec(act(), 1..300),
            new in proptest::prelude::any::<bool>(),
        ) {
            use proptest::prelude::*;
            let v = if new { CfqVersion::V2622 } else { CfqVersion::V2620 };
            let mut s = cfq(v);
            let max = 64u64;
            let mut now: Ns = T0;
            let mut book = super::super::book::Book::default();
            let mut in_flight: std::collections::VecDeque<u32> = Default::default();
            for a in acts {
                match a {
                    Act::Insert { write, sync, owner, sector, nr } => {
                        let op = if write { Op::Write } else { Op::Read };
                        let id = book.add(op, sector, nr);
                        s.insert(now, ElvRq { id, op, sector, nr_sectors: nr, sync, owner, prio: Default::default(), blkcg: None });
                    }
                    Act::Merge { write, sector, nr } => {
                        let op = if write { Op::Write } else { Op::Read };
                        if let Some((id, side)) = s.try_merge(op, sector, nr, max) {
                            book.merged(id, side, op, sector, nr, max)?;
                        }
                    }
                    Act::Dispatch => {
                        if let Some(r) = s.dispatch(now) {
                            book.out(&r)?;
                            in_flight.push_back(r.id);
                        }
                    }
                    Act::Complete => {
                        if let Some(id) = in_flight.pop_front() {
                            s.completed(now, id);
                            book.release(id);
                        }
                    }
                    Act::Advance(ms) => now += ms * 1_000_000,
                }
                prop_assert_eq!(s.queued(), book.live.len());
            }
            // Drain as the block layer would: dispatch, complete, run the timer.
            for _ in 0..100_000 {
                if book.live.is_empty() {
                    break;
                }
                while let Some(r) = s.dispatch(now) {
                    book.out(&r)?;
                    in_flight.push_back(r.id);
                }
                now = match in_flight.pop_front() {
                    Some(id) => {
                        now += 1_000_000;
                        s.completed(now, id);
                        now
                    }
                    None => s.next_timer().map_or(now + 1_000_000, |t| t.max(now)),
                };
            }
            prop_assert!(book.live.is_empty(), "stranded: {:?}", book.live);
        }
    }
}
