//! Queued requests by where they start and where they end, for elevators that keep a
//! queue per process (CFQ, bfq) but merge a bio into any queued request it continues, as
//! the block layer's request hash (back merges) and the elevator's sector tree (front
//! merges) find them.

use super::{ElvRq, Merge};
use crate::drivers::Op;
use std::collections::BTreeSet;

/// Keys are (write, sector, request id): reads merge only with reads, writes with writes.
#[derive(Default)]
pub(super) struct MergeIndex {
    by_end: BTreeSet<(bool, u64, u32)>,
    by_start: BTreeSet<(bool, u64, u32)>,
}

fn is_write(op: Op) -> bool {
    op != Op::Read
}

impl MergeIndex {
    pub(super) fn insert(&mut self, rq: &ElvRq) {
        let w = is_write(rq.op);
        self.by_end.insert((w, rq.end(), rq.id));
        self.by_start.insert((w, rq.sector, rq.id));
    }

    pub(super) fn remove(&mut self, rq: &ElvRq) {
        let w = is_write(rq.op);
        self.by_end.remove(&(w, rq.end(), rq.id));
        self.by_start.remove(&(w, rq.sector, rq.id));
    }

    /// The queued request a bio of `nr_sectors` at `sector` continues: one it extends at
    /// the back first (the common sequential case), else one it extends at the front.
    pub(super) fn find(&self, op: Op, sector: u64, nr_sectors: u64) -> Option<(u32, Merge)> {
        let w = is_write(op);
        let hit = |set: &BTreeSet<(bool, u64, u32)>, s: u64| set.range((w, s, 0)..=(w, s, u32::MAX)).next().map(|&(_, _, id)| id);
        if let Some(id) = hit(&self.by_end, sector) {
            Some((id, Merge::Back))
        } else {
            hit(&self.by_start, sector + nr_sectors).map(|id| (id, Merge::Front))
        }
    }
}

/// Grow queued request `rq` by a bio of `nr_sectors` merged at `side`, keeping `index` and
/// its queue's sector-sorted set (`sorted`, keyed (start, id)) in step.
pub(super) fn grow(index: &mut MergeIndex, sorted: &mut BTreeSet<(u64, u32)>, rq: &mut ElvRq, side: Merge, nr_sectors: u64) {
    index.remove(rq);
    sorted.remove(&(rq.sector, rq.id));
    if side == Merge::Front {
        rq.sector -= nr_sectors;
    }
    rq.nr_sectors += nr_sectors;
    index.insert(rq);
    sorted.insert((rq.sector, rq.id));
}
