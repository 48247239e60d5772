//! The request allocation of the legacy (pre-blk-mq) block layer, `struct request_list` of
//! `block/ll_rw_blk.c` (2.6.0–2.6.23) and `block/blk-core.c` (2.6.24–4.x): what made a queue
//! "congested" and what a writer blocked on when it was full.
//!
//! * Each direction has `nr_requests` (128) slots. A queue is marked congested when an
//!   allocation brings the count to `nr_congestion_on` (= nr − nr/8 + 1 = 113) and uncongested
//!   when a free brings it below `nr_congestion_off` (= nr − nr/8 − nr/16 − 1 = 103); the
//!   latter wakes every `congestion_wait` sleeper in the system.
//! * The task whose allocation fills the list becomes a *batcher*: for 32 more requests
//!   (`BLK_BATCH_REQ`) or 20 ms (`BLK_BATCH_TIME`) it may allocate past `nr_requests`, up to
//!   1.5 × `nr_requests`. Everyone else sleeps in `get_request_wait`, exclusively and in FIFO
//!   order; each freed request below the limit wakes one, who retries as a batcher.
//!
//! **2.4** (`drivers/block/ll_rw_blk.c` up to 2.4.18, [`RequestList::new_24`]):
//! `queue_nr_requests` (128 with more than 32 MiB of RAM) slots split evenly between READ and
//! WRITE, so 64 per direction, and `batch_requests` = `queue_nr_requests` / 4 = 32. Anyone may
//! take a free slot (`get_request` fails only on an empty free list); a submitter that finds
//! none sleeps in `__get_request_wait`, non-exclusively on the queue's one `wait_for_request`
//! queue, until at least `batch_requests` slots are free. `blkdev_release_request` then wakes
//! *all* sleepers; each retries, in the order they slept, while slots last, and the rest sleep
//! again. No batchers, no congestion flags (2.4 has no `congestion_wait`).
//!
//! Directions are READ/WRITE as in 2.6.20 (2.6.30 switched to sync/async; for buffered
//! writeback and reads the two coincide).

use super::request::Submitter;
use crate::drivers::Op;
use crate::Ns;
use std::collections::VecDeque;

/// `BLK_BATCH_REQ`.
pub(crate) const BLK_BATCH_REQ: u32 = 32;
/// `BLK_BATCH_TIME` = HZ/50, in ns.
pub(crate) const BLK_BATCH_TIME_NS: Ns = 20_000_000;

fn dir(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write | Op::Flush => 1,
    }
}

/// `struct io_context`'s batching fields for one submitter.
#[derive(Clone, Copy, Debug)]
struct Batcher {
    who: Submitter,
    nr_batch_requests: u32,
    last_waited: Ns,
}

#[derive(Debug)]
pub(crate) struct RequestList {
    pub nr_requests: u32,
    pub congestion_on: u32,
    pub congestion_off: u32,
    /// Allocated requests per direction (READ, WRITE): queued, dispatched, not yet freed.
    pub count: [u32; 2],
    /// `BDI_read_congested` / `BDI_write_congested`.
    pub congested: [bool; 2],
    /// `QUEUE_FLAG_READFULL` / `WRITEFULL`.
    full: [bool; 2],
    /// Requests whose submitter sleeps in `get_request_wait`, FIFO per direction.
    waiters: [VecDeque<u32>; 2],
    batchers: Vec<Batcher>,
    /// 2.4: `batch_requests`, the free slots that wake every sleeper at once. None: 2.6.
    batch24: Option<u32>,
    /// 2.4: woken waiters that got a slot, beyond the one `freed` returns.
    woken24: VecDeque<u32>,
}

/// `blk_queue_congestion_threshold`.
pub(crate) fn congestion_thresholds(nr: u32) -> (u32, u32) {
    let on = (nr - nr / 8 + 1).min(nr);
    let off = (nr as i64 - (nr / 8) as i64 - (nr / 16) as i64 - 1).max(1) as u32;
    (on, off)
}

/// The member request lists under a dm/md stripe (2.6 before blk-mq), kept for one question:
/// is the array read-congested? dm asks every member (`dm_table_any_congested`), so the array
/// is congested while any member's list holds `nr_congestion_on` reads, until that member falls
/// below `nr_congestion_off`. A read counts at the member of its first sector from its
/// allocation to its completion. The members' own allocation limits are not modelled: the
/// array's one [`RequestList`] of their summed size stands for them.
#[derive(Clone, Debug)]
pub(crate) struct StripeReads {
    chunk_sectors: u64,
    reads: Vec<u32>,
    congested: Vec<bool>,
    nr_congested: u32,
    on: u32,
    off: u32,
}

impl StripeReads {
    /// `members` disks striped in chunks of `chunk_sectors`, each with a request list of
    /// `nr_requests` reads.
    pub(crate) fn new(members: u32, chunk_sectors: u64, nr_requests: u32) -> Self {
        let n = members.clamp(1, u32::from(u16::MAX - 1)) as usize;
        let (on, off) = congestion_thresholds(nr_requests.max(4));
        StripeReads {
            chunk_sectors: chunk_sectors.max(1),
            reads: vec![0; n],
            congested: vec![false; n],
            nr_congested: 0,
            on,
            off,
        }
    }

    /// A read starting at array `sector` was allocated: count it at its member, returned.
    pub(crate) fn add(&mut self, sector: u64) -> u16 {
        let m = ((sector / self.chunk_sectors) % self.reads.len() as u64) as usize;
        self.reads[m] += 1;
        if self.reads[m] >= self.on && !self.congested[m] {
            self.congested[m] = true;
            self.nr_congested += 1;
        }
        m as u16
    }

    /// A read counted at member `m` completed.
    pub(crate) fn remove(&mut self, m: u16) {
        let m = m as usize;
        self.reads[m] -= 1;
        if self.reads[m] < self.off && self.congested[m] {
            self.congested[m] = false;
            self.nr_congested -= 1;
        }
    }

    /// `bdi_read_congested` of the array: some member is.
    pub(crate) fn read_congested(&self) -> bool {
        self.nr_congested > 0
    }
}

impl RequestList {
    pub(crate) fn new(nr_requests: u32) -> Self {
        let nr = nr_requests.max(4);
        let (on, off) = congestion_thresholds(nr);
        RequestList {
            nr_requests: nr,
            congestion_on: on,
            congestion_off: off,
            count: [0; 2],
            congested: [false; 2],
            full: [false; 2],
            waiters: [VecDeque::new(), VecDeque::new()],
            batchers: Vec::new(),
            batch24: None,
            woken24: VecDeque::new(),
        }
    }

    /// The 2.4 request list: `queue_nr_requests` = `total` slots (both directions), half per
    /// direction, `batch_requests` = total / 4, wake-all.
    pub(crate) fn new_24(total: u32) -> Self {
        let per_dir = (total / 2).max(2);
        let mut rl = RequestList::new(per_dir);
        rl.nr_requests = per_dir;
        rl.batch24 = Some((total / 4).clamp(1, per_dir));
        rl
    }

    /// 2.4: the next woken waiter that got a slot in the last `freed`.
    pub(crate) fn take_woken(&mut self) -> Option<u32> {
        self.woken24.pop_front()
    }

    fn batcher(&mut self, who: Submitter) -> Option<&mut Batcher> {
        self.batchers.iter_mut().find(|b| b.who == who)
    }

    /// `ioc_set_batching`.
    fn set_batching(&mut self, who: Submitter, now: Ns) {
        match self.batcher(who) {
            Some(b) => {
                b.nr_batch_requests = BLK_BATCH_REQ;
                b.last_waited = now;
            }
            None => self.batchers.push(Batcher {
                who,
                nr_batch_requests: BLK_BATCH_REQ,
                last_waited: now,
            }),
        }
    }

    /// `ioc_batching`: a fresh batcher, or one with requests left inside its 20 ms window.
    fn batching(&mut self, who: Submitter, now: Ns) -> bool {
        match self.batcher(who) {
            Some(b) => b.nr_batch_requests == BLK_BATCH_REQ || (b.nr_batch_requests > 0 && now < b.last_waited + BLK_BATCH_TIME_NS),
            None => false,
        }
    }

    /// `get_request`: allocate a slot for `who`, or fail (the caller then waits).
    pub(crate) fn get_request(&mut self, op: Op, who: Submitter, now: Ns) -> bool {
        let rw = dir(op);
        if self.batch24.is_some() {
            if self.count[rw] < self.nr_requests {
                self.count[rw] += 1;
                return true;
            }
            return false;
        }
        let c = self.count[rw];
        if c + 1 >= self.congestion_on {
            if c + 1 >= self.nr_requests {
                if !self.full[rw] {
                    self.set_batching(who, now);
                    self.full[rw] = true;
                } else if !self.batching(who, now) {
                    return false;
                }
            }
            self.congested[rw] = true;
        }
        // Batchers may go up to 50 % over the limit, never further.
        if c >= 3 * self.nr_requests / 2 {
            return false;
        }
        self.count[rw] += 1;
        if self.batching(who, now) {
            if let Some(b) = self.batcher(who) {
                b.nr_batch_requests = b.nr_batch_requests.saturating_sub(1);
            }
        }
        true
    }

    /// The submitter of request `id` sleeps in `get_request_wait`.
    pub(crate) fn wait(&mut self, op: Op, id: u32) {
        self.waiters[dir(op)].push_back(id);
    }

    /// `freed_request`: a request of direction `op` was freed. Returns whether the queue just
    /// became uncongested in that direction (`clear_queue_congested` wakes the
    /// `congestion_wait` sleepers), and the waiter woken to retry, if any: it retries at once
    /// as a batcher (`ioc_set_batching` after the sleep) and gets the slot.
    pub(crate) fn freed(&mut self, op: Op, now: Ns, waiter_of: impl Fn(u32) -> Submitter) -> (bool, Option<u32>) {
        let rw = dir(op);
        if let Some(batch) = self.batch24 {
            self.count[rw] = self.count[rw].saturating_sub(1);
            if self.waiters[rw].is_empty() || self.nr_requests - self.count[rw] < batch {
                return (false, None);
            }
            // wake_up(&q->wait_for_request): every sleeper retries, in order, while slots last.
            let mut first = None;
            while self.count[rw] < self.nr_requests {
                let Some(id) = self.waiters[rw].pop_front() else { break };
                self.count[rw] += 1;
                if first.is_none() {
                    first = Some(id);
                } else {
                    self.woken24.push_back(id);
                }
            }
            return (false, first);
        }
        self.count[rw] = self.count[rw].saturating_sub(1);
        let mut cleared = false;
        if self.count[rw] < self.congestion_off {
            cleared = true;
            self.congested[rw] = false;
        }
        let mut woken = None;
        if self.count[rw] < self.nr_requests {
            self.full[rw] = false;
            if let Some(id) = self.waiters[rw].pop_front() {
                let who = waiter_of(id);
                self.set_batching(who, now);
                let ok = self.get_request(op, who, now);
                debug_assert!(ok, "a woken waiter below the limit gets its slot");
                woken = Some(id);
            }
        }
        // Forget batchers whose window has closed, so the list stays short.
        self.batchers
            .retain(|b| b.nr_batch_requests > 0 && now < b.last_waited + BLK_BATCH_TIME_NS);
        (cleared, woken)
    }

    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.waiters[0].len() + self.waiters[1].len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v24_frees_slots_in_batches_and_wakes_everyone() {
        let mut rl = RequestList::new_24(128);
        let (a, b) = (Submitter::Task(0), Submitter::Flusher(1));
        assert_eq!((rl.nr_requests, rl.batch24), (64, Some(32)));
        for _ in 0..64 {
            assert!(rl.get_request(Op::Write, a, 0));
        }
        // No batching past the limit: both block.
        assert!(!rl.get_request(Op::Write, a, 0));
        assert!(!rl.get_request(Op::Write, b, 0));
        rl.wait(Op::Write, 10);
        rl.wait(Op::Write, 11);
        // 31 frees wake nobody (free < batch_requests)...
        for _ in 0..31 {
            assert_eq!(rl.freed(Op::Write, 0, |_| a), (false, None));
        }
        // ...but a running task may take a free slot meanwhile (stealing).
        assert!(rl.get_request(Op::Write, a, 0));
        assert_eq!(rl.freed(Op::Write, 0, |_| a), (false, None));
        // The 32nd free slot wakes both sleepers, who both get slots.
        assert_eq!(rl.freed(Op::Write, 0, |_| a), (false, Some(10)));
        assert_eq!(rl.take_woken(), Some(11));
        assert_eq!(rl.take_woken(), None);
        assert_eq!(rl.count[1], 64 - 32 + 2);
        assert_eq!(rl.waiting(), 0);
        // Reads have their own 64.
        for _ in 0..64 {
            assert!(rl.get_request(Op::Read, a, 0));
        }
        assert!(!rl.get_request(Op::Read, a, 0));
    }

    #[test]
    fn thresholds_of_128_requests() {
        assert_eq!(congestion_thresholds(128), (113, 103));
        assert_eq!(congestion_thresholds(4), (4, 3));
    }

    #[test]
    fn filling_the_list_makes_a_batcher_and_blocks_the_rest() {
        let mut rl = RequestList::new(128);
        let a = Submitter::Task(0);
        let b = Submitter::Task(1);
        for i in 0..127 {
            assert!(rl.get_request(Op::Write, a, 0), "request {i}");
        }
        assert!(rl.congested[1], "congested from 113 on");
        // The 128th fills the list and makes `a` the batcher; `b` now fails.
        assert!(rl.get_request(Op::Write, a, 0));
        assert!(!rl.get_request(Op::Write, b, 0));
        // `a` may go on for its batch (31 left after the one that filled the list).
        for _ in 0..31 {
            assert!(rl.get_request(Op::Write, a, 1_000_000));
        }
        assert!(!rl.get_request(Op::Write, a, 1_000_000), "batch used up");
        assert_eq!(rl.count[1], 159);
        // Reads have their own slots.
        assert!(rl.get_request(Op::Read, b, 0));
        // Frees above the limit wake nobody; below it the first waiter gets the slot.
        rl.wait(Op::Write, 77);
        for _ in 0..31 {
            assert_eq!(rl.freed(Op::Write, 2_000_000, |_| b), (false, None));
        }
        assert_eq!(rl.count[1], 128);
        let (cleared, woken) = rl.freed(Op::Write, 2_000_000, |_| b);
        assert_eq!((cleared, woken), (false, Some(77)));
        assert_eq!(rl.count[1], 128, "the woken waiter took the freed slot");
        // Draining below 103 clears congestion.
        let mut cleared_at = None;
        for _ in 0..30 {
            let (c, _) = rl.freed(Op::Write, 3_000_000, |_| b);
            if c && cleared_at.is_none() {
                cleared_at = Some(rl.count[1]);
            }
        }
        assert_eq!(cleared_at, Some(102));
        assert!(!rl.congested[1]);
    }

    #[test]
    fn a_stripe_is_read_congested_while_any_member_is() {
        // Ten members in 64-sector chunks, 128 reads each: congested at 113, clear below 103.
        let mut st = StripeReads::new(10, 64, 128);
        // Reads spread over every member never congest the array...
        let spread: Vec<u16> = (0..1000u64).map(|i| st.add(i * 64)).collect();
        assert!(!st.read_congested(), "100 reads per member");
        for m in spread {
            st.remove(m);
        }
        // ...113 on one member do, and it stays so until that member is below 103.
        let on_three: Vec<u16> = (0..113u64).map(|i| st.add(3 * 64 + i * 640)).collect();
        assert!(on_three.iter().all(|&m| m == 3));
        assert!(st.read_congested());
        let mut cleared_at = None;
        for (left, m) in (0..113).rev().zip(on_three) {
            st.remove(m);
            if !st.read_congested() && cleared_at.is_none() {
                cleared_at = Some(left);
            }
        }
        assert_eq!(cleared_at, Some(102));
    }
}
