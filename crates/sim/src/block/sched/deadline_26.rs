//! The 2.6 deadline scheduler, `drivers/block/deadline-iosched.c` after the rbtree rewrite
//! (2.5.57, Jan 2003) as it stood through about 2.6.23 (checked against the 2.6.12-era code):
//! `deadline-2.6`.
//!
//! # How it differs from mq-deadline (and why it is its own file)
//!
//! * **A batch ends on a seek.** Each dispatch first looks at the next request in sector order
//!   in the direction of the last dispatch (`next_drq`); if it does not start where the last
//!   request ended (`last_sector`) the batch is over (`batching += fifo_batch`). mq-deadline
//!   keeps a batch going across gaps for `fifo_batch` requests.
//! * **A one-way elevator.** Without an expired FIFO head, a new batch continues from
//!   `next_drq` of the chosen direction, or restarts at the **lowest sector** when the sweep
//!   ran off the top (or the last dispatch was the other direction). mq-deadline restarts at
//!   the FIFO head.
//! * Continuing the sweep does not reset `batching` (only an expired FIFO head or a restart at
//!   the lowest sector does), so a sweep continued after a full batch yields one request per
//!   direction decision until one of those happens.
//!
//! Everything else is as in mq-deadline: reads and writes both expire (`read_expire` 500 ms,
//! `write_expire` 5 s), `fifo_batch` 16 counts requests, `writes_starved` 2 read batches per
//! write batch, `front_merges`. The deadline-2002 scheduler's cost budget and `seek_cost` are
//! gone. In the legacy block layer the scheduler moves one request at a time to the driver's
//! dispatch queue, when that is empty, which is what [`Elevator::dispatch`] models.
//!
//! Simplifications: as mq-deadline's (no request-to-request merges, exact-ns deadlines, the
//! merge hash per direction).
use super::mq_deadline::{FIFO_BATCH, FRONT_MERGES, READ_EXPIRE, WRITES_STARVED, WRITE_EXPIRE};
use super::sorted::{dir_of, SortedQueue, NSEC_PER_MSEC, READ, WRITE};
use super::{no_check, ElevatorInfo};
use super::{Elevator, ElvRq, Merge};
use crate::config::DeadlineTunables;
use crate::config::SchedulerKind;
use crate::drivers::Op;
use crate::Ns;
/// `deadline-2.6` in the list of elevators.
pub(crate) static INFO: ElevatorInfo = ElevatorInfo {
    kind: SchedulerKind::DEADLINE_26,
    aliases: &[],
    summary: "the 2.6 deadline scheduler (rbtree rewrite): mq-deadline's rules without async_depth",
    kernels: "2.5.57-2.6.x (2.6.0-2.6.17 defaulted to the anticipatory scheduler, not modelled)",
    tunables: &[READ_EXPIRE, WRITE_EXPIRE, FIFO_BATCH, WRITES_STARVED, FRONT_MERGES],
    defaults: |q| q.iosched = DeadlineTunables::deadline_26(),
    check: no_check,
    build: |q| Box::new(Deadline26::new(&q.iosched, q.front_merges_allowed())),
};

pub(crate) struct Deadline26 {
    q: SortedQueue,
    expire: [Ns; 2],
    fifo_batch: u32,
    writes_starved: u32,
    front_merges: bool,
    /// `next_drq[]`: the next request in sector order after the last one dispatched, only in
    /// that request's direction.
    next: [Option<u32>; 2],
    last_sector: u64,
    batching: u32,
    starved: u32,
}

impl Deadline26 {
    pub(crate) fn new(t: &DeadlineTunables, front_merges: bool) -> Self {
        Deadline26 {
            q: SortedQueue::default(),
            expire: [t.read_expire_ms * NSEC_PER_MSEC, t.write_expire_ms * NSEC_PER_MSEC],
            fifo_batch: t.fifo_batch,
            writes_starved: t.writes_starved,
            front_merges,
            next: [None, None],
            last_sector: 0,
            batching: 0,
            starved: 0,
        }
    }

    #[cfg(test)]
    pub(crate) fn batching(&self) -> u32 {
        self.batching
    }

    /// `deadline_move_request`: dispatch `id`, remember the next one in its direction.
    fn move_request(&mut self, id: u32) -> ElvRq {
        let rq = self.q.remove(id);
        let d = dir_of(rq.op);
        self.next = [None, None];
        self.next[d] = self.q.next_from(d, rq.sector, id);
        self.last_sector = rq.end();
        rq
    }
}

impl Elevator for Deadline26 {
    fn name(&self) -> &'static str {
        "deadline-2.6"
    }

    fn try_merge(&mut self, op: Op, sector: u64, nr_sectors: u64, max_sectors: u64) -> Option<(u32, Merge)> {
        self.q.try_merge(op, sector, nr_sectors, max_sectors, self.front_merges)
    }

    fn insert(&mut self, now: Ns, rq: ElvRq) {
        self.q.insert(rq, now + self.expire[dir_of(rq.op)], true);
    }

    fn dispatch(&mut self, now: Ns) -> Option<ElvRq> {
        // Batches are reads XOR writes.
        let pending = self.next[WRITE].or(self.next[READ]);
        if let Some(id) = pending {
            if self.last_sector != self.q.rq(id).sector {
                self.batching += self.fifo_batch;
            }
            if self.batching < self.fifo_batch {
                self.batching += 1;
                return Some(self.move_request(id));
            }
        }
        let reads = !self.q.is_empty(READ);
        let writes = !self.q.is_empty(WRITE);
        let dir = if reads
            && !(writes && {
                let s = self.starved;
                self.starved += 1;
                s >= self.writes_starved
            }) {
            READ
        } else if writes {
            self.starved = 0;
            WRITE
        } else {
            return None;
        };
        let head = self.q.fifo_head(dir).expect("a direction with requests has a FIFO head");
        let id = if now > self.q.expires(head) {
            self.batching = 0;
            head
        } else if let Some(n) = self.next[dir] {
            n
        } else {
            self.batching = 0;
            self.q.first(dir).expect("queued")
        };
        self.batching += 1;
        Some(self.move_request(id))
    }

    fn queued(&self) -> usize {
        self.q.len(READ) + self.q.len(WRITE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Ns = NSEC_PER_MSEC;

    use super::super::test_rq as rq;

    fn drain(s: &mut Deadline26, now: Ns) -> Vec<u32> {
        std::iter::from_fn(|| s.dispatch(now)).map(|r| r.id).collect()
    }

    #[test]
    fn defaults() {
        let t = DeadlineTunables::deadline_26();
        assert_eq!(
            (t.read_expire_ms, t.write_expire_ms, t.fifo_batch, t.writes_starved, t.front_merges),
            (500, 5000, 16, 2, true)
        );
    }

    #[test]
    fn a_seek_ends_the_batch_and_the_sweep_restarts_at_the_lowest_sector() {
        let t = DeadlineTunables::deadline_26();
        let mut s = Deadline26::new(&t, true);
        // Reads: a contiguous run at 1000 and a lone read at 50_000; writes waiting.
        for i in 0..3u32 {
            s.insert(0, rq(i, Op::Read, 1000 + 8 * u64::from(i), 8));
        }
        s.insert(0, rq(3, Op::Read, 50_000, 8));
        s.insert(0, rq(10, Op::Write, 500, 8));
        // Read batch from the lowest read: 0, 1, 2 contiguous; 3 is a seek → the batch ends,
        // starved (1 → 2) keeps reads going: the sweep continues at 3.
        let order = drain(&mut s, MS);
        assert_eq!(order, vec![0, 1, 2, 3, 10]);
    }

    #[test]
    fn writes_get_a_batch_after_writes_starved_read_batches() {
        let t = DeadlineTunables::deadline_26();
        let mut s = Deadline26::new(&t, true);
        // Scattered reads: every read is its own batch.
        for i in 0..6u32 {
            s.insert(0, rq(i, Op::Read, 100_000 * u64::from(i + 1), 8));
        }
        for i in 0..3u32 {
            s.insert(0, rq(10 + i, Op::Write, 10_000_000 + 8 * u64::from(i), 8));
        }
        let dirs: Vec<Op> = std::iter::from_fn(|| s.dispatch(MS)).map(|r| r.op).take(6).collect();
        // Two read batches, then the writes (contiguous: one batch of 3), then reads.
        assert_eq!(dirs, vec![Op::Read, Op::Read, Op::Write, Op::Write, Op::Write, Op::Read]);
    }

    #[test]
    fn both_directions_expire() {
        let t = DeadlineTunables::deadline_26();
        let mut s = Deadline26::new(&t, true);
        s.insert(0, rq(1, Op::Write, 9_000_000, 8));
        s.insert(0, rq(2, Op::Write, 100, 8));
        // Not expired: lowest sector first; expired (after 5 s): the FIFO head.
        assert_eq!(s.dispatch(MS).unwrap().id, 2);
        let mut s = Deadline26::new(&t, true);
        s.insert(0, rq(1, Op::Write, 9_000_000, 8));
        s.insert(0, rq(2, Op::Write, 100, 8));
        assert_eq!(s.dispatch(5001 * MS).unwrap().id, 1);
    }

    #[test]
    fn fifo_batch_caps_contiguous_batches() {
        let t = DeadlineTunables {
            fifo_batch: 4,
            ..DeadlineTunables::deadline_26()
        };
        let mut s = Deadline26::new(&t, true);
        for i in 0..10u32 {
            s.insert(0, rq(i, Op::Write, 8 * u64::from(i), 8));
        }
        s.insert(0, rq(20, Op::Read, 1_000_000, 8));
        let ops: Vec<Op> = std::iter::from_fn(|| s.dispatch(MS)).map(|r| r.op).collect();
        // The read goes first (reads are preferred while writes_starved allows), then the
        // writes: a full batch of 4 ends it, but with only writes queued the sweep goes on.
        assert_eq!(ops[0], Op::Read);
        assert_eq!(ops.len(), 11);
        assert!(s.batching() > 4);
    }

    #[test]
    fn front_merges_switch() {
        let t = DeadlineTunables::deadline_26();
        let mut s = Deadline26::new(&t, false);
        s.insert(0, rq(1, Op::Write, 1000, 8));
        assert_eq!(s.try_merge(Op::Write, 992, 8, 256), None);
        assert_eq!(s.try_merge(Op::Write, 1008, 8, 256), Some((1, Merge::Back)));
        let mut s = Deadline26::new(&t, true);
        s.insert(0, rq(1, Op::Write, 1000, 8));
        assert_eq!(s.try_merge(Op::Write, 992, 8, 256), Some((1, Merge::Front)));
    }
}
