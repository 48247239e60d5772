//! The bookkeeping the deadline variants share: per direction a sector-sorted set (the
//! kernel's `sort_list`), an end-sector index (the back-merge hash) and a FIFO of arrivals,
//! plus per-request state in a vector indexed by the block-layer request id (ids are dense
//! pool indices). FIFO entries carry a generation so entries of dispatched (or re-used) ids
//! are recognised and dropped lazily.
use super::{ElvRq, Merge};
use crate::drivers::Op;
use crate::Ns;
use std::collections::{BTreeSet, VecDeque};

pub(super) const NSEC_PER_MSEC: Ns = 1_000_000;
pub(super) const READ: usize = 0;
pub(super) const WRITE: usize = 1;

pub(super) fn dir_of(op: Op) -> usize {
    match op {
        Op::Read => READ,
        Op::Write | Op::Flush => WRITE,
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    rq: ElvRq,
    /// FIFO deadline.
    expires: Ns,
    /// Bumped at every insert of this id, to recognise stale FIFO entries.
    gen: u32,
    /// On the sorted set (not yet dispatched).
    queued: bool,
}

/// Per-direction sorted sets and FIFOs over a slot vector.
#[derive(Default)]
pub(super) struct SortedQueue {
    /// Sector-sorted requests: `(start sector, id)`.
    sorted: [BTreeSet<(u64, u32)>; 2],
    /// Requests by end sector (the elevator's merge hash): `(end sector, id)`.
    by_end: [BTreeSet<(u64, u32)>; 2],
    /// Arrival order: `(id, gen)`.
    fifo: [VecDeque<(u32, u32)>; 2],
    slots: Vec<Slot>,
}

impl SortedQueue {
    /// The request `id` as last inserted or merged.
    pub(super) fn rq(&self, id: u32) -> ElvRq {
        self.slots[id as usize].rq
    }

    /// FIFO deadline of `id`.
    pub(super) fn expires(&self, id: u32) -> Ns {
        self.slots[id as usize].expires
    }

    /// Queued requests in `dir`.
    pub(super) fn len(&self, dir: usize) -> usize {
        self.sorted[dir].len()
    }

    pub(super) fn is_empty(&self, dir: usize) -> bool {
        self.sorted[dir].is_empty()
    }

    /// Lowest-sector request of `dir`.
    pub(super) fn first(&self, dir: usize) -> Option<u32> {
        self.sorted[dir].first().map(|&(_, id)| id)
    }

    /// First request of `dir` at or after the sort key `(sector, id)`.
    pub(super) fn next_from(&self, dir: usize, sector: u64, id: u32) -> Option<u32> {
        self.sorted[dir].range((sector, id)..).next().map(|&(_, n)| n)
    }

    /// Queue `rq` with deadline `expires`; `fifo`: also append it to its direction's FIFO.
    pub(super) fn insert(&mut self, rq: ElvRq, expires: Ns, fifo: bool) {
        let idx = rq.id as usize;
        if idx >= self.slots.len() {
            self.slots.resize(
                idx + 1,
                Slot {
                    rq,
                    expires: 0,
                    gen: 0,
                    queued: false,
                },
            );
        }
        let d = dir_of(rq.op);
        let s = &mut self.slots[idx];
        debug_assert!(!s.queued, "request {} inserted twice", rq.id);
        s.rq = rq;
        s.gen = s.gen.wrapping_add(1);
        s.queued = true;
        s.expires = expires;
        let gen = s.gen;
        self.sorted[d].insert((rq.sector, rq.id));
        self.by_end[d].insert((rq.end(), rq.id));
        if fifo {
            self.fifo[d].push_back((rq.id, gen));
        }
    }

    /// Take `id` off the sorted set and the merge index; its FIFO entry goes stale (and is
    /// dropped now if it is at the head, to keep the ring short).
    pub(super) fn remove(&mut self, id: u32) -> ElvRq {
        let s = &mut self.slots[id as usize];
        debug_assert!(s.queued);
        s.queued = false;
        let rq = s.rq;
        let d = dir_of(rq.op);
        self.sorted[d].remove(&(rq.sector, id));
        self.by_end[d].remove(&(rq.end(), id));
        if let Some(&(hid, _)) = self.fifo[d].front() {
            if hid == id {
                self.fifo[d].pop_front();
            }
        }
        rq
    }

    /// Oldest live FIFO entry of `dir`, dropping stale entries on the way.
    pub(super) fn fifo_head(&mut self, dir: usize) -> Option<u32> {
        let slots = &self.slots;
        let fifo = &mut self.fifo[dir];
        while let Some(&(id, gen)) = fifo.front() {
            let s = &slots[id as usize];
            if s.queued && s.gen == gen {
                return Some(id);
            }
            fifo.pop_front();
        }
        None
    }

    /// A request of `dir` ending at `sector` (back-merge candidate; smallest id first).
    pub(super) fn ending_at(&self, dir: usize, sector: u64) -> Option<u32> {
        self.by_end[dir].range((sector, 0)..=(sector, u32::MAX)).next().map(|&(_, id)| id)
    }

    /// A request of `dir` starting at `sector` (front-merge candidate; smallest id first).
    pub(super) fn starting_at(&self, dir: usize, sector: u64) -> Option<u32> {
        self.sorted[dir].range((sector, 0)..=(sector, u32::MAX)).next().map(|&(_, id)| id)
    }

    /// Grow `id`'s request by `nr_sectors` on `side`, keeping both indexes right.
    pub(super) fn grow(&mut self, id: u32, side: Merge, nr_sectors: u64) {
        let s = &mut self.slots[id as usize];
        let d = dir_of(s.rq.op);
        match side {
            Merge::Back => {
                self.by_end[d].remove(&(s.rq.end(), id));
                s.rq.nr_sectors += nr_sectors;
                self.by_end[d].insert((s.rq.end(), id));
            }
            Merge::Front => {
                self.sorted[d].remove(&(s.rq.sector, id));
                s.rq.sector -= nr_sectors;
                s.rq.nr_sectors += nr_sectors;
                self.sorted[d].insert((s.rq.sector, id));
            }
        }
    }

    /// Merge `nr_sectors` onto `id` on `side` unless the result would exceed `max_sectors`.
    pub(super) fn try_grow(&mut self, id: u32, side: Merge, nr_sectors: u64, max_sectors: u64) -> Option<(u32, Merge)> {
        if self.rq(id).nr_sectors + nr_sectors > max_sectors {
            return None;
        }
        self.grow(id, side, nr_sectors);
        Some((id, side))
    }

    /// The common merge lookup: a back merge onto a request ending at the bio, then (if
    /// `front` allows) a front merge onto one starting where the bio ends. The first
    /// candidate found is final.
    pub(super) fn try_merge(&mut self, op: Op, sector: u64, nr_sectors: u64, max_sectors: u64, front: bool) -> Option<(u32, Merge)> {
        let d = dir_of(op);
        if let Some(id) = self.ending_at(d, sector) {
            return self.try_grow(id, Merge::Back, nr_sectors, max_sectors);
        }
        if front {
            if let Some(id) = self.starting_at(d, sector + nr_sectors) {
                return self.try_grow(id, Merge::Front, nr_sectors, max_sectors);
            }
        }
        None
    }
}
