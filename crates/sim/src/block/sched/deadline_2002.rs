//! The first deadline I/O scheduler, `drivers/block/deadline-iosched.c` as Jens Axboe posted it
//! for 2.5.38 (24 Sep 2002) and as Andrew Morton tuned it in the "horror test" thread: the
//! scheduler of the `2.5.38` generation (`deadline-2002`).
//!
//! # Model
//!
//! * Two sector-sorted lists, one per direction (the kernel's `sort_list[]`, linked lists in
//!   ascending sector order; here ordered sets keyed by `(sector, id)`).
//! * A FIFO of **reads only** (`read_fifo`), each read stamped `insert time + read_expire`.
//!   Writes never expire.
//! * A *dispatch list* (the driver's `q->queue_head`): requests are moved there in whole
//!   batches, and the driver takes its head. While it is non-empty the scheduler decides
//!   nothing — a read that arrives behind a batch of writes waits for the whole batch.
//! * `last_sector`: the end of the request most recently handed to the driver.
//!
//! When the driver wants a request and the dispatch list is empty (`deadline_next_request`):
//!
//! 1. if the oldest read has expired (`now > expires`): unless writes are queued and
//!    `starved++ >= writes_starved`, move a batch starting **at that read**;
//! 2. else if reads are queued: the same starvation check, then a batch starting at the
//!    **lowest-sector read**;
//! 3. else (or when the starvation check sends it here) a batch starting at the lowest-sector
//!    write; `starved = 0`.
//!
//! A batch (`deadline_move_requests`) walks the sorted list upward from its first request,
//! moving each to the tail of the dispatch list and charging it against a budget of
//! `fifo_batch`: 1 if it starts where the previous one ended (`last_sector` for the first),
//! `seek_cost` otherwise. The walk stops when the budget is used up (≤ 0) or the list ends.
//! With the defaults (64, 16) a batch is "4 seeks, or 64 contiguous": the first request of a
//! batch after a batch of the other direction is always a seek, so a write batch carries
//! 1 + (fifo_batch − seek_cost) contiguous requests — 49 at 64, 17 at 32, and a single request
//! at 16 or below. That is the whole of Morton's `fifo_batch` table: a synchronous reader has
//! one read queued at a time, the driver drains it as a one-request batch, finds only writes,
//! moves a full write batch, and the reader's next read waits behind all of it. `read_expire`
//! changes nothing because a read is never queued long enough to expire and expiry cannot cut
//! a batch already on the dispatch list; `writes_starved` changes nothing because reads are
//! never queued back to back, so the counter never reaches it.
//!
//! Bio merges: a back merge onto a sorted request ending at the bio (the kernel's end-sector
//! hash, after its one-hit `last_merge` cache), then a front merge onto one starting where the
//! bio ends (the kernel's backward scan of the sort list). Requests on the dispatch list are not
//! merge candidates.
//!
//! # Variants and simplifications
//!
//! * The cost rule is the one Morton measured (2.5.38 + the deadline patch): every moved request
//!   is charged, 1 per contiguous request. The version merged in 2.5.39 charged contiguous
//!   requests ⌈sectors/256⌉ and did not charge the last request of the list; with 128 KiB
//!   requests both give 1 per contiguous request, so the difference is one request per batch.
//! * Deadlines are exact nanoseconds rather than jiffies.
//! * No request-to-request merges, no barriers (the elevator API cannot free a request).
//! * The dispatch list is part of `queued()`: the block layer sees those requests as waiting.
//!
//! # Cost
//!
//! Insert, merge and each batch step are O(log n); the FIFO drops stale entries lazily.
use super::mq_deadline::{FIFO_BATCH, INT_MAX, READ_EXPIRE, WRITES_STARVED};
use super::sorted::{dir_of, SortedQueue, NSEC_PER_MSEC, READ, WRITE};
use super::{no_check, ElevatorInfo};
use super::{Elevator, ElvRq, Merge};
use crate::config::DeadlineTunables;
use crate::config::{Knob, KnobKind, QueueConfig, SchedulerKind};
use crate::drivers::Op;
use crate::knob;
use crate::Ns;
use std::collections::VecDeque;
/// `seek_cost`: the 2002 scheduler's batch cost of a seek.
pub(crate) const SEEK_COST: Knob<QueueConfig> = knob!(
    QueueConfig,
    "queue/iosched/seek_cost",
    KnobKind::Count { min: 1, max: INT_MAX },
    "the batch cost of a seek; a contiguous request costs 1",
    iosched.seek_cost: u32
);

/// `deadline-2002` in the list of elevators.
pub(crate) static INFO: ElevatorInfo = ElevatorInfo {
    kind: SchedulerKind::DEADLINE_2002,
    aliases: &[],
    summary: "the first deadline scheduler: a read FIFO and sorted batches costed by seek_cost; writes never expire",
    kernels: "2.5.38 with the deadline patch, 2.5.39-2.5.56 (the 2.5 generation's default)",
    tunables: &[READ_EXPIRE, FIFO_BATCH, WRITES_STARVED, SEEK_COST],
    defaults: |q| q.iosched = DeadlineTunables::deadline_2002(),
    check: no_check,
    build: |q| Box::new(Deadline2002::new(&q.iosched)),
};

pub(crate) struct Deadline2002 {
    /// The sort lists and the read FIFO (writes are never put on a FIFO).
    q: SortedQueue,
    dispatch: VecDeque<u32>,
    read_expire: Ns,
    fifo_batch: i64,
    seek_cost: i64,
    writes_starved: u32,
    last_sector: u64,
    starved: u32,
    /// Batches moved so far, per direction (for tests and reports).
    batches: [u64; 2],
}

impl Deadline2002 {
    pub(crate) fn new(t: &DeadlineTunables) -> Self {
        Deadline2002 {
            q: SortedQueue::default(),
            dispatch: VecDeque::new(),
            read_expire: t.read_expire_ms * NSEC_PER_MSEC,
            fifo_batch: i64::from(t.fifo_batch),
            seek_cost: i64::from(t.seek_cost),
            writes_starved: t.writes_starved,
            last_sector: 0,
            starved: 0,
            batches: [0; 2],
        }
    }

    /// `dd->starved`: read batches moved while writes waited, since the last write batch.
    #[cfg(test)]
    pub(crate) fn starved(&self) -> u32 {
        self.starved
    }

    /// Batches moved to the dispatch list: (reads, writes).
    #[cfg(test)]
    pub(crate) fn batches(&self) -> (u64, u64) {
        (self.batches[READ], self.batches[WRITE])
    }

    /// Requests on the dispatch list.
    #[cfg(test)]
    pub(crate) fn dispatch_len(&self) -> usize {
        self.dispatch.len()
    }

    /// `deadline_move_requests`: move a batch starting at `id` to the dispatch list.
    fn move_batch(&mut self, mut id: u32) {
        let dir = dir_of(self.q.rq(id).op);
        self.batches[dir] += 1;
        let mut last_sec = self.last_sector;
        let mut budget = self.fifo_batch;
        loop {
            let rq = self.q.remove(id);
            self.dispatch.push_back(id);
            budget -= if rq.sector == last_sec { 1 } else { self.seek_cost };
            last_sec = rq.end();
            if budget <= 0 {
                break;
            }
            match self.q.next_from(dir, rq.sector, id) {
                Some(next) => id = next,
                None => break,
            }
        }
    }

    /// The starvation check of steps 1 and 2: true = serve writes instead.
    fn starve_writes(&mut self, writes: bool) -> bool {
        if !writes {
            return false;
        }
        let s = self.starved;
        self.starved += 1;
        s >= self.writes_starved
    }
}

impl Elevator for Deadline2002 {
    fn name(&self) -> &'static str {
        "deadline-2002"
    }

    fn try_merge(&mut self, op: Op, sector: u64, nr_sectors: u64, max_sectors: u64) -> Option<(u32, Merge)> {
        self.q.try_merge(op, sector, nr_sectors, max_sectors, true)
    }

    fn insert(&mut self, now: Ns, rq: ElvRq) {
        self.q.insert(rq, now + self.read_expire, dir_of(rq.op) == READ);
    }

    fn dispatch(&mut self, now: Ns) -> Option<ElvRq> {
        if self.dispatch.is_empty() {
            let writes = !self.q.is_empty(WRITE);
            let expired = self.q.fifo_head(READ).filter(|&h| now > self.q.expires(h));
            // Steps 1 and 2: the expired read, else the lowest read, unless writes starve.
            let start = expired.or_else(|| self.q.first(READ)).filter(|_| !self.starve_writes(writes));
            match start {
                Some(id) => self.move_batch(id),
                None => {
                    let low = self.q.first(WRITE)?;
                    self.move_batch(low);
                    self.starved = 0;
                }
            }
        }
        let id = self.dispatch.pop_front()?;
        let rq = self.q.rq(id);
        self.last_sector = rq.end();
        Some(rq)
    }

    fn queued(&self) -> usize {
        self.q.len(READ) + self.q.len(WRITE) + self.dispatch.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Ns = NSEC_PER_MSEC;

    fn tun(fifo_batch: u32, writes_starved: u32) -> DeadlineTunables {
        DeadlineTunables {
            fifo_batch,
            writes_starved,
            ..DeadlineTunables::deadline_2002()
        }
    }

    use super::super::test_rq as rq;

    /// `n` contiguous 128 KiB writes from sector `at`, ids from `first`.
    fn stream(s: &mut Deadline2002, first: u32, at: u64, n: u32) {
        for i in 0..n {
            s.insert(0, rq(first + i, Op::Write, at + 256 * u64::from(i), 256));
        }
    }

    /// Requests the next batch puts on the dispatch list.
    fn next_batch(s: &mut Deadline2002, now: Ns) -> Vec<ElvRq> {
        let mut v = vec![s.dispatch(now).expect("a request")];
        while s.dispatch_len() > 0 {
            v.push(s.dispatch(now).unwrap());
        }
        v
    }

    #[test]
    fn defaults_are_the_2002_ones() {
        let t = DeadlineTunables::deadline_2002();
        assert_eq!((t.read_expire_ms, t.fifo_batch, t.seek_cost, t.writes_starved), (500, 64, 16, 2));
    }

    #[test]
    fn batch_is_four_seeks_or_contiguous_requests() {
        // After a read far away, the first write of a batch is a seek (16), the rest cost 1.
        for (fifo_batch, expect) in [(64u32, 49usize), (32, 17), (16, 1), (8, 1), (17, 2)] {
            let mut s = Deadline2002::new(&tun(fifo_batch, 2));
            stream(&mut s, 0, 1_000_000, 100);
            assert_eq!(next_batch(&mut s, MS).len(), expect, "fifo_batch {fifo_batch}");
        }
        // Four scattered requests use up a 64 budget exactly.
        let mut s = Deadline2002::new(&tun(64, 2));
        for i in 0..6u32 {
            s.insert(0, rq(i, Op::Write, 10_000 * u64::from(i + 1), 8));
        }
        assert_eq!(next_batch(&mut s, MS).len(), 4);
        // A batch continuing where the last request ended starts with a contiguous charge.
        let mut s = Deadline2002::new(&tun(16, 2));
        stream(&mut s, 0, 0, 40);
        assert_eq!(next_batch(&mut s, MS).len(), 16, "last_sector 0 = the first write's sector");
        assert_eq!(next_batch(&mut s, MS).len(), 16);
    }

    #[test]
    fn batches_walk_up_the_sorted_list_from_the_lowest_request() {
        let mut s = Deadline2002::new(&tun(64, 2));
        for (i, sec) in [900u64, 100, 500, 300].into_iter().enumerate() {
            s.insert(0, rq(i as u32, Op::Write, sec * 8, 8));
        }
        let order: Vec<u64> = next_batch(&mut s, MS).iter().map(|r| r.sector / 8).collect();
        assert_eq!(order, vec![100, 300, 500, 900]);
    }

    #[test]
    fn a_read_waits_behind_the_whole_write_batch() {
        let mut s = Deadline2002::new(&tun(64, 2));
        stream(&mut s, 0, 1_000_000, 100);
        let first = s.dispatch(0).unwrap();
        assert_eq!(first.op, Op::Write);
        // A read arrives, and even expires: the dispatch list is served first.
        s.insert(0, rq(500, Op::Read, 8, 8));
        let mut before = 0;
        loop {
            let r = s.dispatch(10_000 * MS).unwrap();
            if r.op == Op::Read {
                break;
            }
            before += 1;
        }
        assert_eq!(before, 48, "the rest of the 49-request batch");
    }

    #[test]
    fn only_reads_expire() {
        let mut s = Deadline2002::new(&tun(16, 100));
        // Writes inserted at 0 never expire; with writes_starved high, reads go first.
        stream(&mut s, 0, 1_000_000, 4);
        s.insert(0, rq(10, Op::Read, 5_000_000, 8));
        s.insert(0, rq(11, Op::Read, 8, 8));
        // Not expired: the lowest-sector read starts the batch.
        let b = next_batch(&mut s, 100 * MS);
        assert_eq!(b[0].id, 11);
        // Read 10 (older) expires at 500 ms; a new low read arrives; the expired one goes first.
        s.insert(400 * MS, rq(12, Op::Read, 16, 8));
        let b = next_batch(&mut s, 501 * MS);
        assert_eq!(b[0].id, 10);
        // At exactly the deadline a read is not yet expired (time_after).
        let mut s = Deadline2002::new(&tun(16, 100));
        s.insert(0, rq(1, Op::Read, 5_000_000, 8));
        s.insert(0, rq(2, Op::Read, 8, 8));
        assert_eq!(next_batch(&mut s, 500 * MS)[0].id, 2);
    }

    #[test]
    fn writes_starved_counts_read_batches_while_writes_wait() {
        for ws in [0u32, 1, 2, 4] {
            let mut s = Deadline2002::new(&tun(16, ws));
            stream(&mut s, 0, 1_000_000, 50);
            for i in 0..20u32 {
                s.insert(0, rq(100 + i, Op::Read, 100_000 * u64::from(i), 8));
            }
            // Scattered reads: each read batch is one seek, one request.
            let mut dirs = Vec::new();
            for _ in 0..(ws as usize + 1) * 2 {
                dirs.push(next_batch(&mut s, MS)[0].op);
            }
            let mut expect = Vec::new();
            for _ in 0..2 {
                expect.extend(std::iter::repeat_n(Op::Read, ws as usize));
                expect.push(Op::Write);
            }
            assert_eq!(dirs, expect, "writes_starved {ws}");
            assert_eq!(s.starved(), 0);
        }
        // Without writes, the counter does not move.
        let mut s = Deadline2002::new(&tun(16, 2));
        for i in 0..5u32 {
            s.insert(0, rq(i, Op::Read, 100_000 * u64::from(i + 1), 8));
        }
        for _ in 0..5 {
            next_batch(&mut s, MS);
        }
        assert_eq!(s.starved(), 0);
        assert_eq!(s.batches(), (5, 0));
    }

    #[test]
    fn merges_only_onto_sorted_requests() {
        let mut s = Deadline2002::new(&tun(16, 2));
        s.insert(0, rq(1, Op::Write, 1000, 8));
        assert_eq!(s.try_merge(Op::Write, 1008, 8, 256), Some((1, Merge::Back)));
        assert_eq!(s.try_merge(Op::Write, 992, 8, 256), Some((1, Merge::Front)));
        assert_eq!(s.try_merge(Op::Read, 1024, 8, 256), None);
        assert_eq!(s.try_merge(Op::Write, 1016, 8, 24), None, "max_sectors");
        let r = s.dispatch(0).unwrap();
        assert_eq!((r.sector, r.nr_sectors), (992, 24));
        let mut s = Deadline2002::new(&tun(64, 2));
        s.insert(0, rq(2, Op::Write, 5000, 8));
        s.insert(0, rq(3, Op::Write, 5008, 8));
        s.dispatch(0);
        // Request 3 sits on the dispatch list now: no merge.
        assert_eq!(s.try_merge(Op::Write, 5016, 8, 256), None);
        assert_eq!(s.queued(), 1);
    }
}
