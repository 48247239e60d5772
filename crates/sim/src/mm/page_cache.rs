//! The page cache of one file (`struct address_space`), as an extent map: runs of pages in
//! the same state, never one object per page. A page not in the map is not cached.
//!
//! The starts of the dirty runs are also kept in an index of their own, as the kernel tags
//! dirty pages in the xarray (`PAGECACHE_TAG_DIRTY`): writeback finds the next dirty run
//! without walking the clean and writeback runs before it, which a file with thousands of
//! scattered dirty pages (random writes) would make a walk over the whole file per call.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

/// State of a cached page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageState {
    /// Uptodate and clean: reclaimable.
    Clean,
    /// Dirty (`PG_dirty`), counted in `NR_FILE_DIRTY`.
    Dirty,
    /// Under writeback I/O (`PG_writeback`), counted in `NR_WRITEBACK`.
    Writeback,
    /// Written again while its writeback I/O is in flight (`PG_writeback` and `PG_dirty`: a
    /// write smaller than a page at a file's tail, a rewrite): counted in both
    /// `NR_FILE_DIRTY` and `NR_WRITEBACK`, and dirty again when the I/O completes.
    WritebackDirty,
    /// Being read from the device (locked, not uptodate).
    Reading,
    /// Taken by a writepages call whose request for it is not submitted yet: still
    /// `PG_dirty` and in `NR_FILE_DIRTY` (the kernel sets `PG_writeback` on a page only as it
    /// adds it to the bio it is about to submit), but no other writeback takes it again. It
    /// becomes `Writeback` when its request is submitted.
    Queued,
}

impl PageState {
    /// `PG_dirty`: counted in `NR_FILE_DIRTY`.
    pub(crate) fn is_dirty(self) -> bool {
        matches!(self, PageState::Dirty | PageState::WritebackDirty | PageState::Queued)
    }

    /// `PG_writeback`: counted in `NR_WRITEBACK`.
    pub(crate) fn under_writeback(self) -> bool {
        matches!(self, PageState::Writeback | PageState::WritebackDirty)
    }

    /// `PG_uptodate`: its data can be copied out.
    pub(crate) fn is_uptodate(self) -> bool {
        self != PageState::Reading
    }
}

/// Page counts by previous state, returned when a range changes state, so the caller can
/// move the global counters by exactly what changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Changed {
    pub absent: u64,
    pub clean: u64,
    pub dirty: u64,
    pub writeback: u64,
    pub writeback_dirty: u64,
    pub reading: u64,
    pub queued: u64,
}

impl Changed {
    fn add(&mut self, st: Option<PageState>, n: u64) {
        match st {
            None => self.absent += n,
            Some(PageState::Clean) => self.clean += n,
            Some(PageState::Dirty) => self.dirty += n,
            Some(PageState::Writeback) => self.writeback += n,
            Some(PageState::WritebackDirty) => self.writeback_dirty += n,
            Some(PageState::Reading) => self.reading += n,
            Some(PageState::Queued) => self.queued += n,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Extent {
    len: u64,
    state: PageState,
}

/// Page states of one file, keyed by first page index.
#[derive(Clone, Debug, Default)]
pub(crate) struct AddressSpace {
    map: BTreeMap<u64, Extent>,
    /// First page of every extent in state `Dirty`.
    dirty_runs: BTreeSet<u64>,
    pub nr_pages: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    /// Of `nr_dirty`, the pages `Queued` for writeback.
    pub nr_queued: u64,
    /// The run the last lookup found, (start, len, state), until the next change: a reader
    /// or writer asks about the pages of one run call after call, and each lookup in the tree
    /// was a walk down it.
    finger: Cell<Option<(u64, u64, PageState)>>,
}

impl AddressSpace {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// State of page `idx`.
    pub(crate) fn state(&self, idx: u64) -> Option<PageState> {
        if let Some((_, st)) = self.at_finger(idx) {
            return Some(st);
        }
        let (&s, e) = self.map.range(..=idx).next_back()?;
        (idx < s + e.len).then(|| {
            self.finger.set(Some((s, e.len, e.state)));
            e.state
        })
    }

    /// The run the finger holds, if it covers `idx`: (pages from `idx` to its end, state).
    #[inline]
    fn at_finger(&self, idx: u64) -> Option<(u64, PageState)> {
        let (s, len, st) = self.finger.get()?;
        (s <= idx && idx < s + len).then(|| (s + len - idx, st))
    }

    /// Length of the run of pages starting at `idx` that share `idx`'s state (absent runs
    /// end at the next cached page), capped at `max`.
    pub(crate) fn run_at(&self, idx: u64, max: u64) -> (Option<PageState>, u64) {
        if let Some((left, st)) = self.at_finger(idx) {
            return (Some(st), left.min(max));
        }
        if self.map.last_key_value().is_none_or(|(&s, e)| idx >= s + e.len) {
            // Past the last cached page (a writer appending): one walk down the tree's edge.
            return (None, max);
        }
        if let Some((&s, e)) = self.map.range(..=idx).next_back() {
            if idx < s + e.len {
                self.finger.set(Some((s, e.len, e.state)));
                return (Some(e.state), (s + e.len - idx).min(max));
            }
        }
        let next = self.map.range(idx..).next().map(|(&s, _)| s).unwrap_or(u64::MAX);
        (None, (next - idx).min(max))
    }

    /// First dirty run at or after `from`, at most `max` pages: (start, len). A lookup in the
    /// dirty-run index, not a walk over the runs before it.
    pub(crate) fn next_dirty(&self, from: u64, max: u64) -> Option<(u64, u64)> {
        if let Some((&s, e)) = self.map.range(..from).next_back() {
            if e.state == PageState::Dirty && from < s + e.len {
                return Some((from, (s + e.len - from).min(max)));
            }
        }
        let &s = self.dirty_runs.range(from..).next()?;
        Some((s, self.map[&s].len.min(max)))
    }

    /// First run of pages in `state` at or after `from`, at most `max` pages: (start, len).
    /// The radix-tree tag walk of the kernel (`PAGECACHE_TAG_DIRTY`, `_WRITEBACK`).
    pub(crate) fn next_in_state(&self, from: u64, max: u64, state: PageState) -> Option<(u64, u64)> {
        if let Some((&s, e)) = self.map.range(..from).next_back() {
            if e.state == state && from < s + e.len {
                return Some((from, (s + e.len - from).min(max)));
            }
        }
        self.map
            .range(from..)
            .find(|(_, e)| e.state == state)
            .map(|(&s, e)| (s, e.len.min(max)))
    }

    /// The first run of pages at or after `from` and before `end` whose state `pick` accepts:
    /// (start, len, state), the run cut at `end`.
    pub(crate) fn next_matching(&self, from: u64, end: u64, pick: impl Fn(PageState) -> bool) -> Option<(u64, u64, PageState)> {
        if from >= end {
            return None;
        }
        let before = self.map.range(..from).next_back().filter(|(&s, e)| from < s + e.len);
        let at = before.map(|(&s, e)| (from, s + e.len - from, e.state));
        let after = self.map.range(from..end).map(|(&s, e)| (s, e.len, e.state));
        at.into_iter()
            .chain(after)
            .find(|&(_, _, st)| pick(st))
            .filter(|&(s, _, _)| s < end)
            .map(|(s, n, st)| (s, n.min(end - s), st))
    }

    /// One past the last cached page (0 for an empty file).
    pub(crate) fn end(&self) -> u64 {
        self.map.iter().next_back().map_or(0, |(&s, e)| s + e.len)
    }

    /// The runs of pages in `state`, in index order: (start, len).
    pub(crate) fn runs_in_state(&self, state: PageState) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().filter(move |(_, e)| e.state == state).map(|(&s, e)| (s, e.len))
    }

    /// Set pages [start, start+n) to `state` (None = drop from the cache). Returns what
    /// they were before.
    pub(crate) fn set_range(&mut self, start: u64, n: u64, state: Option<PageState>) -> Changed {
        // The run a lookup just found (writeback ending on the run it looked at) spares
        // `set_within_run` its own lookup.
        let found = self.finger.take();
        let mut ch = Changed::default();
        if n == 0 {
            return ch;
        }
        let end = start + n;
        if let Some(st) = state {
            if self.extend_run(start, n, st) {
                ch.add(None, n);
                return ch;
            }
        }
        if let Some(old) = self.set_within_run(start, n, state, found) {
            ch.add(Some(old), n);
            return ch;
        }
        if self.set_in_gap(start, n, state) {
            ch.add(None, n);
            return ch;
        }
        self.split_at(start);
        self.split_at(end);
        let mut covered = 0;
        while let Some((&s, &e)) = self.map.range(start..end).next() {
            self.take(s);
            ch.add(Some(e.state), e.len);
            covered += e.len;
        }
        ch.add(None, n - covered);
        self.nr_pages -= n - ch.absent;
        self.nr_dirty -= ch.dirty + ch.writeback_dirty + ch.queued;
        self.nr_writeback -= ch.writeback + ch.writeback_dirty;
        self.nr_queued -= ch.queued;
        if let Some(st) = state {
            self.put(start, Extent { len: n, state: st });
            self.count_in(n, st);
            self.coalesce(start);
        }
        ch
    }

    /// A writer appending: [start, start+n) is not cached and the run before it, in
    /// `state`, ends at `start` (and no run of that state follows at once), so it only grows —
    /// what the general path's splits, insertion and merge would come to, in one lookup.
    fn extend_run(&mut self, start: u64, n: u64, state: PageState) -> bool {
        if let Some(mut last) = self.map.last_entry() {
            // The usual append: the last run ends at `start`, nothing follows it.
            let (s, e) = (*last.key(), last.get_mut());
            if s + e.len == start && e.state == state {
                e.len += n;
                self.count_in(n, state);
                return true;
            }
        }
        let end = start + n;
        if self
            .map
            .range(start..)
            .next()
            .is_some_and(|(&s, e)| s < end || (s == end && e.state == state))
        {
            return false;
        }
        let Some((&ps, pe)) = self.map.range_mut(..start).next_back() else {
            return false;
        };
        if ps + pe.len != start || pe.state != state {
            return false;
        }
        pe.len += n;
        self.count_in(n, state);
        true
    }

    /// [`AddressSpace::set_range`] when [start, start+n) lies inside one run, the common case
    /// (a request's pages going under writeback, a completion ending it, a run read in): the
    /// same runs and counters as the general path's splits, removals and merges, in a few
    /// lookups instead of a dozen. Returns the run's old state, or None when the range is not
    /// inside one run. `found` is a run the last lookup found, used if it holds `start`.
    fn set_within_run(&mut self, start: u64, n: u64, state: Option<PageState>, found: Option<(u64, u64, PageState)>) -> Option<PageState> {
        let end = start + n;
        let (s, e) = match found.filter(|&(s, len, _)| s <= start && start < s + len) {
            Some((s, len, state)) => (s, Extent { len, state }),
            None => self.map.range(..=start).next_back().map(|(&s, &e)| (s, e))?,
        };
        if end > s + e.len {
            return None;
        }
        let old = e.state;
        if state == Some(old) {
            return Some(old);
        }
        self.count_out(n, old);
        let (before, after) = (start - s, s + e.len - end);
        // Neighbours in the new state that touch the range merge with it, as `coalesce` would;
        // a remainder of the old run between them stops that.
        let (left, right) = match state {
            Some(st) => (
                (before == 0).then(|| self.touching_before(s, st)).flatten(),
                (after == 0).then(|| self.touching_after(end, st)).flatten(),
            ),
            None => (None, None),
        };
        // The old run keeps what lies before the range; what lies after is a run of its own.
        if before > 0 {
            self.map.get_mut(&s).expect("the run found above").len = before;
        } else {
            self.take(s);
        }
        if after > 0 {
            self.put(end, Extent { len: after, state: old });
        }
        if let Some(st) = state {
            self.place(start, n, st, left, right);
        }
        Some(old)
    }

    /// [`AddressSpace::set_range`] when no page of [start, start+n) is cached (a read brought
    /// in between cached runs): the range joins a touching neighbour in its state, or is a run
    /// of its own. Returns false when some page of the range is cached.
    fn set_in_gap(&mut self, start: u64, n: u64, state: Option<PageState>) -> bool {
        let end = start + n;
        if self.map.range(..start).next_back().is_some_and(|(&s, e)| s + e.len > start) || self.map.range(start..end).next().is_some() {
            return false;
        }
        if let Some(st) = state {
            let (left, right) = (self.touching_before(start, st), self.touching_after(end, st));
            self.place(start, n, st, left, right);
        }
        true
    }

    /// The run in `state` that ends exactly at `at`, if any: (its first page, the run).
    fn touching_before(&self, at: u64, state: PageState) -> Option<(u64, Extent)> {
        self.map
            .range(..at)
            .next_back()
            .map(|(&s, &e)| (s, e))
            .filter(|&(s, e)| s + e.len == at && e.state == state)
    }

    /// The run in `state` that starts exactly at `at`, if any.
    fn touching_after(&self, at: u64, state: PageState) -> Option<(u64, Extent)> {
        self.map.get(&at).filter(|e| e.state == state).map(|&e| (at, e))
    }

    /// `n` pages enter [start, start+n) in `state`, where no run is now, merged with the
    /// touching runs of that state the caller found: the counters follow.
    fn place(&mut self, start: u64, n: u64, state: PageState, left: Option<(u64, Extent)>, right: Option<(u64, Extent)>) {
        self.count_in(n, state);
        let mut len = n;
        if let Some((s, e)) = right {
            self.take(s);
            len += e.len;
        }
        match left {
            Some((ps, pe)) => self.map.get_mut(&ps).expect("the neighbour found above").len = pe.len + len,
            None => self.put(start, Extent { len, state }),
        }
    }

    /// `n` pages in `state` left the cache or their state: the counters follow.
    fn count_out(&mut self, n: u64, state: PageState) {
        self.nr_pages -= n;
        if state.is_dirty() {
            self.nr_dirty -= n;
        }
        if state.under_writeback() {
            self.nr_writeback -= n;
        }
        if state == PageState::Queued {
            self.nr_queued -= n;
        }
    }

    /// `n` pages entered the cache in `state`: the counters follow.
    fn count_in(&mut self, n: u64, state: PageState) {
        self.nr_pages += n;
        if state.is_dirty() {
            self.nr_dirty += n;
        }
        if state.under_writeback() {
            self.nr_writeback += n;
        }
        if state == PageState::Queued {
            self.nr_queued += n;
        }
    }

    /// Change only the pages of [start, start+n) that are in state `from` to `to`
    /// (None = drop). Returns how many changed.
    pub(crate) fn transition(&mut self, start: u64, n: u64, from: PageState, to: Option<PageState>) -> u64 {
        let end = start + n;
        let mut idx = start;
        let mut moved = 0;
        while idx < end {
            let (st, len) = self.run_at(idx, end - idx);
            if st == Some(from) {
                self.set_range(idx, len, to);
                moved += len;
            }
            idx += len;
        }
        moved
    }

    /// Writeback of [start, start+n) completed: pages under writeback become clean, pages
    /// dirtied again during it stay dirty (`folio_end_writeback` clears only PG_writeback).
    /// Returns how many pages left writeback. One walk over the range.
    pub(crate) fn end_writeback(&mut self, start: u64, n: u64) -> u64 {
        let end = start + n;
        let mut idx = start;
        let mut moved = 0;
        while idx < end {
            let (st, len) = self.run_at(idx, end - idx);
            let to = match st {
                Some(PageState::Writeback) => PageState::Clean,
                Some(PageState::WritebackDirty) => PageState::Dirty,
                _ => {
                    idx += len;
                    continue;
                }
            };
            self.set_range(idx, len, Some(to));
            moved += len;
            idx += len;
        }
        moved
    }

    /// Split the extent containing `at` so that one starts exactly at `at`.
    fn split_at(&mut self, at: u64) {
        if let Some((&s, &e)) = self.map.range(..at).next_back() {
            if at < s + e.len {
                self.put(
                    s,
                    Extent {
                        len: at - s,
                        state: e.state,
                    },
                );
                self.put(
                    at,
                    Extent {
                        len: s + e.len - at,
                        state: e.state,
                    },
                );
            }
        }
    }

    /// Insert (or replace) the extent at `start`, keeping the dirty-run index in step.
    /// The index is touched only when a dirty run comes or goes: most runs put here are
    /// clean, under writeback or being read, and need no lookup in a second tree.
    fn put(&mut self, start: u64, e: Extent) {
        let was_dirty = self.map.insert(start, e).is_some_and(|old| old.state == PageState::Dirty);
        match (was_dirty, e.state == PageState::Dirty) {
            (false, true) => {
                self.dirty_runs.insert(start);
            }
            (true, false) => {
                self.dirty_runs.remove(&start);
            }
            _ => {}
        }
    }

    /// Remove the extent at `start`, and its entry in the dirty-run index.
    fn take(&mut self, start: u64) {
        if self.map.remove(&start).is_some_and(|old| old.state == PageState::Dirty) {
            self.dirty_runs.remove(&start);
        }
    }

    /// Merge the extent at `start` with same-state neighbours that touch it.
    fn coalesce(&mut self, start: u64) {
        let mut start = start;
        let Some(&cur) = self.map.get(&start) else { return };
        let mut cur = cur;
        if let Some((&ps, &pe)) = self.map.range(..start).next_back() {
            if ps + pe.len == start && pe.state == cur.state {
                self.take(start);
                cur.len += pe.len;
                start = ps;
                self.put(start, cur);
            }
        }
        let next = start + cur.len;
        if let Some(&ne) = self.map.get(&next) {
            if ne.state == cur.state {
                self.take(next);
                cur.len += ne.len;
                self.put(start, cur);
            }
        }
    }

    /// Number of extents (for tests and memory estimates).
    #[cfg(test)]
    pub(crate) fn extents(&self) -> usize {
        self.map.len()
    }

    /// The runs are in their one canonical form — none overlap, no two that touch share a
    /// state — and the dirty-run index lists exactly the dirty runs: every path of
    /// [`AddressSpace::set_range`] must leave the same runs, since writeback walks them.
    #[cfg(test)]
    fn canonical(&self) -> bool {
        let touching_twins = self
            .map
            .iter()
            .zip(self.map.iter().skip(1))
            .any(|((&s1, e1), (&s2, e2))| s1 + e1.len > s2 || (s1 + e1.len == s2 && e1.state == e2.state));
        let dirty: BTreeSet<u64> = self
            .map
            .iter()
            .filter(|(_, e)| e.state == PageState::Dirty)
            .map(|(&s, _)| s)
            .collect();
        !touching_twins && dirty == self.dirty_runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn appends_coalesce_into_one_extent() {
        let mut a = AddressSpace::new();
        for i in 0..100 {
            let ch = a.set_range(i * 256, 256, Some(PageState::Dirty));
            assert_eq!(ch.absent, 256);
        }
        assert_eq!(a.extents(), 1);
        assert_eq!(a.nr_dirty, 25_600);
        assert_eq!(a.next_dirty(1000, 10_000), Some((1000, 10_000)));
        let ch = a.set_range(0, 512, Some(PageState::Writeback));
        assert_eq!(ch.dirty, 512);
        assert_eq!(a.next_dirty(0, 10), Some((512, 10)));
        assert_eq!(a.transition(0, 1000, PageState::Writeback, Some(PageState::Clean)), 512);
        assert_eq!(a.nr_writeback, 0);
        assert_eq!(a.nr_pages, 25_600);
    }

    proptest! {
        /// Against a page-per-entry model: states and counters always agree.
        #[test]
        fn extent_map_matches_page_array(ops in prop::collection::vec((0u64..200, 1u64..50, 0u8..7), 1..60)) {
            let mut a = AddressSpace::new();
            let mut naive: Vec<Option<PageState>> = vec![None; 260];
            for (start, n, s) in ops {
                let st = match s { 0 => None, 1 => Some(PageState::Clean), 2 => Some(PageState::Dirty), 3 => Some(PageState::Writeback), 4 => Some(PageState::WritebackDirty), 5 => Some(PageState::Queued), _ => Some(PageState::Reading) };
                let mut expect = Changed::default();
                for p in naive.iter_mut().skip(start as usize).take(n as usize) {
                    expect.add(*p, 1);
                    *p = st;
                }
                if s % 2 == 0 {
                    // A lookup of the range's first run just before: the change starts from
                    // the run it remembers instead of a lookup of its own.
                    let _ = a.run_at(start, n);
                }
                prop_assert_eq!(a.set_range(start, n, st), expect);
                prop_assert!(a.canonical());
                for (i, p) in naive.iter().enumerate() {
                    prop_assert_eq!(a.state(i as u64), *p);
                }
                prop_assert_eq!(a.nr_pages, naive.iter().filter(|p| p.is_some()).count() as u64);
                prop_assert_eq!(a.nr_dirty, naive.iter().filter(|p| p.is_some_and(PageState::is_dirty)).count() as u64);
                prop_assert_eq!(a.nr_writeback, naive.iter().filter(|p| p.is_some_and(PageState::under_writeback)).count() as u64);
                prop_assert_eq!(a.nr_queued, naive.iter().filter(|p| **p == Some(PageState::Queued)).count() as u64);
                prop_assert_eq!(a.end(), naive.iter().rposition(|p| p.is_some()).map_or(0, |i| i as u64 + 1));
                // One extent per maximal run of one state, whichever path (an append growing
                // the run before it, or the general splits and merges) made it.
                let runs = (0..naive.len()).filter(|&i| naive[i].is_some() && (i == 0 || naive[i - 1] != naive[i])).count();
                prop_assert_eq!(a.extents(), runs);
                let from = start / 2;
                let want = naive.iter().enumerate().skip(from as usize).take(150usize.saturating_sub(from as usize)).find(|(_, p)| p.is_some_and(PageState::is_dirty)).map(|(i, _)| i as u64);
                prop_assert_eq!(a.next_matching(from, 150, PageState::is_dirty).map(|r| r.0), want);
                // The dirty-run index finds what a walk over the runs finds.
                prop_assert_eq!(a.next_dirty(from, 7), a.next_in_state(from, 7, PageState::Dirty));
            }
        }
    }
}
