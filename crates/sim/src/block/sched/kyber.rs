//! Kyber as in Linux 6.18 (`block/kyber-iosched.c`): latency targets met by throttling how
//! many requests of each kind may be in the device at once.
//!
//! # Model
//!
//! * **Domains** (`kyber_sched_domain`): reads, writes, discards and other requests. Each has
//!   a token pool (`domain_tokens`) whose size starts at the domain's maximum (256, 128, 64,
//!   16) and is resized by the timer. A request needs a token of its domain to be dispatched
//!   and gives it back when it completes (`kyber_finish_request`).
//! * **Dispatch** (`kyber_dispatch_request`): keep dispatching from the current domain while
//!   its batch allows (16 reads, 8 writes, 1 of the others) and it has requests and tokens;
//!   then start a new batch with the next domain that has both, round robin, wrapping back
//!   to the current one. Within a domain, arrival order.
//! * **Latency histograms** (`add_latency_sample`): at each completion of a read or a write,
//!   its total latency (since the request was queued) and its I/O latency (since it was
//!   dispatched) go into 8 buckets of a quarter of the domain's target each (`read_lat_nsec`
//!   2 ms, `write_lat_nsec` 10 ms, discards 5 s); the last bucket is everything above 1¾
//!   targets. The completion arms the timer for 100 ms later unless it is due sooner
//!   (`timer_reduce`).
//! * **The timer** (`kyber_timer_fn`): a domain's percentile is computed once it has 500
//!   samples or one second after the first attempt (`calculate_percentile`, which then
//!   empties that histogram). If any domain's p90 I/O latency is beyond its target, the
//!   device is congested: every domain with a p99 total latency (this window's, or the one
//!   remembered from an earlier window) is resized to `depth × (p99 bucket + 1) / 4`, which
//!   throttles the domains doing well and eases the ones doing badly; without congestion only
//!   a domain whose own p99 is beyond target is resized (eased).
//! * **Depth limit** (`kyber_limit_depth`): requests that are not synchronous may hold at most
//!   75 % of `nr_requests` scheduler tags.
//! * **Merging** (`kyber_bio_merge` → `blk_bio_list_merge`): a bio merges with one of the last
//!   8 queued requests of its domain, as with `none`.
//!
//! # Simplifications
//!
//! * One software queue and one hardware queue: the per-CPU `kyber_ctx_queue` lists and the
//!   per-hctx lists are one FIFO per domain, mergeable until dispatched (the kernel stops
//!   merging once a request moved to the hctx list, which happens when a token is taken).
//! * Discards are not issued by any workload; flushes bypass the elevator (as the kernel's
//!   flush machinery does for most of them), so the discard and other domains stay idle.
//! * Times are exact nanoseconds: the timer and the one-second percentile timeout are not
//!   rounded to jiffies.

use super::{Elevator, ElevatorInfo, ElvRq, ElvTrace, Merge};
use crate::config::{Knob, KnobKind, KnobValue, QueueConfig, SchedulerKind};
use crate::drivers::Op;
use crate::Ns;
use std::collections::VecDeque;

const NSEC_PER_MSEC: Ns = 1_000_000;

/// Domains, in the kernel's order (`KYBER_READ` … `KYBER_OTHER`).
const READ: usize = 0;
const WRITE: usize = 1;
const DISCARD: usize = 2;
const OTHER: usize = 3;
const DOMAINS: usize = 4;
/// Domains with latency targets and histograms (all but `KYBER_OTHER`).
const MEASURED: usize = 3;

/// Maximum tokens of each domain (`kyber_depth`), also their initial number.
const MAX_DEPTH: [u32; DOMAINS] = [256, 128, 64, 16];
/// Requests dispatched in a row from one domain (`kyber_batch_size`).
const BATCH: [u32; DOMAINS] = [16, 8, 1, 1];
/// Discards' latency target (not a tunable).
const DISCARD_TARGET: Ns = 5_000 * NSEC_PER_MSEC;

/// Bucket width: a target / (1 << `KYBER_LATENCY_SHIFT`).
const LATENCY_SHIFT: u32 = 2;
/// Buckets at or under the target (`KYBER_GOOD_BUCKETS`).
const GOOD_BUCKETS: usize = 1 << LATENCY_SHIFT;
/// All buckets (`KYBER_LATENCY_BUCKETS`).
const BUCKETS: usize = 2 << LATENCY_SHIFT;
/// Histogram kinds: latency since the request was queued, and since it was dispatched.
const TOTAL: usize = 0;
const IO: usize = 1;
/// A percentile waits for this many samples, or for [`PERCENTILE_TIMEOUT`].
const PERCENTILE_SAMPLES: u32 = 500;
const PERCENTILE_TIMEOUT: Ns = 1_000 * NSEC_PER_MSEC;
/// A completion arms the timer this much later (`HZ / 10`).
const TIMER_DELAY: Ns = 100 * NSEC_PER_MSEC;
/// Share of the scheduler tags that requests which are not synchronous may hold.
const ASYNC_PERCENT: u32 = 75;

pub(crate) const READ_LAT_NSEC: Knob<QueueConfig> = Knob {
    key: "queue/iosched/read_lat_nsec",
    kind: KnobKind::Count { min: 0, max: u64::MAX },
    doc: "target latency of reads, ns",
    get: |q| KnobValue::Uint(q.tunables.get("read_lat_nsec").unwrap_or(2 * NSEC_PER_MSEC)),
    set: |q, v| q.tunables.set("read_lat_nsec", v.uint()),
};
pub(crate) const WRITE_LAT_NSEC: Knob<QueueConfig> = Knob {
    key: "queue/iosched/write_lat_nsec",
    kind: KnobKind::Count { min: 0, max: u64::MAX },
    doc: "target latency of writes, ns",
    get: |q| KnobValue::Uint(q.tunables.get("write_lat_nsec").unwrap_or(10 * NSEC_PER_MSEC)),
    set: |q, v| q.tunables.set("write_lat_nsec", v.uint()),
};

/// `kyber` in the list of elevators.
pub(crate) static INFO: ElevatorInfo = ElevatorInfo {
    kind: SchedulerKind::KYBER,
    aliases: &[],
    summary: "token pools per request kind (reads, writes) resized every 100 ms to meet read and write latency targets",
    kernels: "blk-mq (4.12+); meant for fast multi-queue devices",
    tunables: &[READ_LAT_NSEC, WRITE_LAT_NSEC],
    defaults: |q| {
        q.tunables.clear();
        q.tunables.set("read_lat_nsec", 2 * NSEC_PER_MSEC);
        q.tunables.set("write_lat_nsec", 10 * NSEC_PER_MSEC);
    },
    check: super::no_check,
    build: |q| {
        let target = |k: &Knob<QueueConfig>| (k.get)(q).uint();
        Box::new(Kyber::new(target(&READ_LAT_NSEC), target(&WRITE_LAT_NSEC), q.nr_requests))
    },
};

/// A dispatched request: its domain and when it was queued and dispatched.
#[derive(Clone, Copy, Default)]
struct InDevice {
    domain: u8,
    has_token: bool,
    queued: Ns,
    dispatched: Ns,
}

pub(crate) struct Kyber {
    /// Queued requests per domain, with the time each was queued.
    lists: [VecDeque<(ElvRq, Ns)>; DOMAINS],
    /// Token pool sizes (`domain_tokens[].sb.depth`) and tokens held.
    depth: [u32; DOMAINS],
    in_flight: [u32; DOMAINS],
    cur_domain: usize,
    batching: u32,
    targets: [Ns; MEASURED],
    /// Latency histograms per measured domain and kind, emptied when a percentile is taken.
    buckets: [[[u32; BUCKETS]; 2]; MEASURED],
    latency_timeout: [Option<Ns>; MEASURED],
    /// The p99 bucket remembered for the next congestion (`domain_p99`; -1: none).
    domain_p99: [i32; MEASURED],
    timer: Option<Ns>,
    async_depth: u32,
    /// Requests in the device, by block-layer request id.
    in_device: Vec<InDevice>,
    /// Tracepoints on (`kyber_latency`, `kyber_adjust`), and `kyber_throttled` too.
    trace: bool,
    trace_throttled: bool,
    events: Vec<(Ns, ElvTrace)>,
}

/// `kyber_domain_names`.
pub(crate) const DOMAIN_NAMES: [&str; DOMAINS] = ["READ", "WRITE", "DISCARD", "OTHER"];

fn domain_of(op: Op) -> usize {
    match op {
        Op::Read => READ,
        Op::Write => WRITE,
        Op::Flush => OTHER,
    }
}

impl Kyber {
    pub(crate) fn new(read_lat_nsec: Ns, write_lat_nsec: Ns, nr_requests: u32) -> Self {
        let mut targets = [0; MEASURED];
        targets[READ] = read_lat_nsec;
        targets[WRITE] = write_lat_nsec;
        targets[DISCARD] = DISCARD_TARGET;
        Kyber {
            lists: Default::default(),
            depth: MAX_DEPTH,
            in_flight: [0; DOMAINS],
            cur_domain: READ,
            batching: 0,
            targets,
            buckets: [[[0; BUCKETS]; 2]; MEASURED],
            latency_timeout: [None; MEASURED],
            domain_p99: [-1; MEASURED],
            timer: None,
            async_depth: nr_requests * ASYNC_PERCENT / 100,
            in_device: Vec::new(),
            trace: false,
            trace_throttled: false,
            events: Vec::new(),
        }
    }

    /// The token pool sizes now, reads first (`/sys/kernel/debug/block/*/sched/*_tokens`).
    #[cfg(test)]
    pub(crate) fn depths(&self) -> [u32; DOMAINS] {
        self.depth
    }

    /// `kyber_dispatch_cur_domain`: the head of the current domain, if it can get a token.
    fn dispatch_cur(&mut self, now: Ns) -> Option<ElvRq> {
        let d = self.cur_domain;
        if self.lists[d].is_empty() {
            return None;
        }
        if self.in_flight[d] >= self.depth[d] {
            if self.trace_throttled {
                self.events.push((now, ElvTrace::KyberThrottled { domain: d as u8 }));
            }
            return None;
        }
        let (rq, queued) = self.lists[d].pop_front().expect("checked");
        self.in_flight[d] += 1;
        self.batching += 1;
        let i = rq.id as usize;
        if self.in_device.len() <= i {
            self.in_device.resize(i + 1, InDevice::default());
        }
        self.in_device[i] = InDevice {
            domain: d as u8,
            has_token: true,
            queued,
            dispatched: now,
        };
        Some(rq)
    }

    /// `add_latency_sample`.
    fn sample(&mut self, d: usize, kind: usize, latency: Ns) {
        let divisor = (self.targets[d] >> LATENCY_SHIFT).max(1);
        let bucket = if latency > 0 {
            ((latency - 1) / divisor).min(BUCKETS as u64 - 1) as usize
        } else {
            0
        };
        self.buckets[d][kind][bucket] += 1;
    }

    /// `calculate_percentile`: the bucket holding the `percentile`, or -1 while there are
    /// too few samples; a computed histogram starts again empty.
    fn percentile(&mut self, now: Ns, d: usize, kind: usize, percentile: u32) -> i32 {
        let buckets = &mut self.buckets[d][kind];
        let samples: u32 = buckets.iter().sum();
        if samples == 0 {
            return -1;
        }
        let timeout = *self.latency_timeout[d].get_or_insert(now + PERCENTILE_TIMEOUT);
        if samples < PERCENTILE_SAMPLES && timeout > now {
            return -1;
        }
        self.latency_timeout[d] = None;
        let mut rank = (samples * percentile).div_ceil(100);
        let mut bucket = 0;
        while bucket < BUCKETS - 1 {
            if buckets[bucket] >= rank {
                break;
            }
            rank -= buckets[bucket];
            bucket += 1;
        }
        *buckets = [0; BUCKETS];
        if self.trace {
            let ev = ElvTrace::KyberLatency {
                domain: d as u8,
                io: kind == IO,
                percentile: percentile as u8,
                numerator: bucket as u8 + 1,
                samples,
            };
            self.events.push((now, ev));
        }
        bucket as i32
    }

    /// `kyber_timer_fn`.
    fn adjust(&mut self, now: Ns) {
        let mut congested = false;
        for d in 0..MEASURED {
            if self.percentile(now, d, IO, 90) >= GOOD_BUCKETS as i32 {
                congested = true;
            }
        }
        for (d, &max_depth) in MAX_DEPTH.iter().enumerate().take(MEASURED) {
            let mut p99 = self.percentile(now, d, TOTAL, 99);
            if congested {
                if p99 < 0 {
                    p99 = self.domain_p99[d];
                }
                self.domain_p99[d] = -1;
            } else if p99 >= 0 {
                self.domain_p99[d] = p99;
            }
            if p99 < 0 {
                continue;
            }
            if congested || p99 >= GOOD_BUCKETS as i32 {
                let depth = ((self.depth[d] * (p99 as u32 + 1)) >> LATENCY_SHIFT).clamp(1, max_depth);
                // kyber_resize_domain
                if depth != self.depth[d] {
                    self.depth[d] = depth;
                    if self.trace {
                        self.events.push((now, ElvTrace::KyberAdjust { domain: d as u8, depth }));
                    }
                }
            }
        }
    }
}

impl Elevator for Kyber {
    fn name(&self) -> &'static str {
        "kyber"
    }

    fn try_merge(&mut self, op: Op, sector: u64, nr_sectors: u64, max_sectors: u64) -> Option<(u32, Merge)> {
        let list = self.lists[domain_of(op)].iter_mut().map(|(rq, _)| rq);
        super::bio_list_merge(list, op, sector, nr_sectors, max_sectors)
    }

    fn insert(&mut self, now: Ns, rq: ElvRq) {
        self.lists[domain_of(rq.op)].push_back((rq, now));
    }

    fn dispatch(&mut self, now: Ns) -> Option<ElvRq> {
        if self.batching < BATCH[self.cur_domain] {
            if let Some(rq) = self.dispatch_cur(now) {
                return Some(rq);
            }
        }
        self.batching = 0;
        for _ in 0..DOMAINS {
            self.cur_domain = (self.cur_domain + 1) % DOMAINS;
            if let Some(rq) = self.dispatch_cur(now) {
                return Some(rq);
            }
        }
        None
    }

    fn queued(&self) -> usize {
        self.lists.iter().map(VecDeque::len).sum()
    }

    fn async_depth(&self) -> Option<u32> {
        Some(self.async_depth)
    }

    /// `kyber_limit_depth` limits every request that is not synchronous, writes that are
    /// (O_DIRECT, fsync's) included.
    fn depth_limited(&self, _op: Op, sync: bool) -> bool {
        !sync
    }

    fn completed(&mut self, now: Ns, id: u32) {
        let Some(r) = self.in_device.get_mut(id as usize).filter(|r| r.has_token) else {
            return;
        };
        r.has_token = false;
        let r = *r;
        let d = r.domain as usize;
        self.in_flight[d] -= 1;
        if d == OTHER {
            return;
        }
        self.sample(d, TOTAL, now - r.queued);
        self.sample(d, IO, now - r.dispatched);
        let due = now + TIMER_DELAY;
        self.timer = Some(self.timer.map_or(due, |t| t.min(due)));
    }

    fn next_timer(&self) -> Option<Ns> {
        self.timer
    }

    fn timer_fired(&mut self, now: Ns) {
        self.timer = None;
        self.adjust(now);
    }

    fn trace_on(&mut self, frequent: bool) -> bool {
        self.trace = true;
        self.trace_throttled = frequent;
        true
    }

    fn take_trace(&mut self, out: &mut Vec<(Ns, ElvTrace)>) {
        out.append(&mut self.events);
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_rq as rq;
    use super::*;

    const MS: Ns = NSEC_PER_MSEC;

    fn kyber() -> Kyber {
        Kyber::new(2 * MS, 10 * MS, 256)
    }

    #[test]
    fn reads_and_writes_take_turns_in_batches_of_16_and_8() {
        let mut k = kyber();
        for i in 0..40 {
            k.insert(0, rq(i, Op::Write, 1_000_000 + 8 * i as u64 * 100, 8));
            k.insert(0, rq(100 + i, Op::Read, 8 * i as u64 * 100, 8));
        }
        let ops: Vec<Op> = (0..48).map(|_| k.dispatch(0).unwrap().op).collect();
        assert!(ops[..16].iter().all(|&o| o == Op::Read));
        assert!(ops[16..24].iter().all(|&o| o == Op::Write));
        assert!(ops[24..40].iter().all(|&o| o == Op::Read));
        assert!(ops[40..48].iter().all(|&o| o == Op::Write));
    }

    #[test]
    fn a_domain_without_tokens_waits_while_another_goes_on() {
        let mut k = kyber();
        k.depth[WRITE] = 2;
        for i in 0..4 {
            k.insert(0, rq(i, Op::Write, 1000 * i as u64, 8));
        }
        k.insert(0, rq(10, Op::Read, 50_000, 8));
        let first: Vec<u32> = std::iter::from_fn(|| k.dispatch(0)).map(|r| r.id).collect();
        assert_eq!(first, vec![10, 0, 1], "two write tokens, the read has its own");
        assert_eq!(k.queued(), 2);
        k.completed(MS, 0);
        assert_eq!(k.dispatch(MS).map(|r| r.id), Some(2), "a returned token lets the next write go");
        assert!(k.dispatch(MS).is_none());
    }

    /// Complete `n` requests of `op` that each spent `queued` waiting and `io` in the device.
    fn complete(k: &mut Kyber, op: Op, n: u32, now: Ns, queued: Ns, io: Ns) {
        for i in 0..n {
            let id = 1000 + i;
            k.insert(now - queued - io, rq(id, op, 8 * i as u64, 8));
            k.cur_domain = domain_of(op);
            k.batching = 0;
            let r = k.dispatch(now - io).expect("a token");
            assert_eq!(r.id, id);
            k.completed(now, id);
        }
    }

    #[test]
    fn congestion_throttles_the_domain_doing_well_and_eases_the_one_doing_badly() {
        let mut k = kyber();
        // Reads: 600 samples whose I/O alone takes 3 ms (target 2 ms): the device is
        // congested. Writes: 600 samples at 2 ms in all, a fifth of their 10 ms target.
        complete(&mut k, Op::Read, 600, 100 * MS, MS, 3 * MS);
        complete(&mut k, Op::Write, 600, 100 * MS, MS, MS);
        assert_eq!(k.next_timer(), Some(200 * MS), "the first completion armed the timer");
        k.depth[READ] = 64;
        k.timer_fired(200 * MS);
        // Writes' p99 is bucket 0 (≤ 2.5 ms): 128 × 1/4. Reads' p99 total (4 ms) is bucket 7
        // (beyond 1¾ targets): 64 × 8/4.
        assert_eq!(k.depths()[WRITE], 32);
        assert_eq!(k.depths()[READ], 128);
        assert_eq!(k.next_timer(), None);
    }

    #[test]
    fn without_congestion_only_a_domain_beyond_its_target_moves() {
        let mut k = kyber();
        k.depth[WRITE] = 16;
        // Writes wait 25 ms in all but their I/O is quick: no congestion, but their p99 is
        // beyond target, so their depth grows (16 × 8/4); reads at 1 ms stay.
        complete(&mut k, Op::Write, 600, 100 * MS, 24 * MS, MS);
        complete(&mut k, Op::Read, 600, 100 * MS, 0, MS);
        k.timer_fired(200 * MS);
        assert_eq!(k.depths()[WRITE], 32);
        assert_eq!(k.depths()[READ], MAX_DEPTH[READ]);
    }

    #[test]
    fn a_percentile_waits_for_500_samples_or_one_second() {
        let mut k = kyber();
        complete(&mut k, Op::Read, 10, 100 * MS, 0, 5 * MS);
        assert_eq!(k.percentile(100 * MS, READ, IO, 90), -1, "10 samples, first attempt");
        assert_eq!(k.percentile(600 * MS, READ, IO, 90), -1, "half a second on");
        assert_eq!(k.percentile(1100 * MS, READ, IO, 90), 7, "a second on: 5 ms is beyond 1¾ × 2 ms");
        assert_eq!(k.percentile(1100 * MS, READ, IO, 90), -1, "the histogram starts again");
    }

    #[test]
    fn only_requests_that_are_not_synchronous_count_against_the_async_depth() {
        let k = kyber();
        assert_eq!(k.async_depth(), Some(192));
        assert!(k.depth_limited(Op::Write, false));
        assert!(!k.depth_limited(Op::Write, true));
        assert!(!k.depth_limited(Op::Read, true));
    }

    #[test]
    fn bios_merge_within_their_domain() {
        let mut k = kyber();
        k.insert(0, rq(1, Op::Write, 1000, 8));
        k.insert(0, rq(2, Op::Read, 1008, 8));
        assert_eq!(k.try_merge(Op::Write, 1008, 8, 64), Some((1, Merge::Back)));
        assert_eq!(k.try_merge(Op::Read, 1000, 8, 64), Some((2, Merge::Front)));
        assert_eq!(k.try_merge(Op::Read, 5000, 8, 64), None);
    }
}
