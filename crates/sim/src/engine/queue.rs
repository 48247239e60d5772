//! The event queue, ordered by (time, insertion sequence), so events at the same instant run
//! in the order they were scheduled. That total order is what makes a run byte-identical for
//! the same scenario and seed.
//!
//! A radix heap: events are never scheduled before the last one popped, so the queue is
//! monotone, and a key (time and sequence as one 128-bit number) can be filed by the highest
//! bit where it differs from the last key popped. Popping empties the lowest non-empty bucket
//! into lower ones around its minimum; each event moves down a few buckets in its life, in
//! sequential memory, where a binary heap's sift is a dozen dependent, unpredictable
//! comparisons per pop. Any correct priority queue gives the same order: keys are unique.
//! Measured on the 1000-`dd` benchmark: 4 % faster than `std`'s binary heap, 7 % faster than
//! a 4-ary heap; with pauses 200 ms ahead of events a microsecond apart, an event sinks
//! through many buckets, so the gain is small.

use super::time::Ns;

/// Buckets: 0 holds the key equal to the last popped, `b` the keys whose highest bit
/// differing from it is bit `b - 1`.
const BUCKETS: usize = 129;

struct Entry<E> {
    key: u128,
    ev: E,
}

/// Pending events of one simulation run.
pub struct EventQueue<E> {
    buckets: Vec<Vec<Entry<E>>>,
    /// Bit `b` set when bucket `b` is non-empty, so the first one is found in two instructions.
    occupied: [u64; 3],
    /// Key of the last event popped: every pending key is greater or equal.
    last: u128,
    len: usize,
    seq: u64,
    now: Ns,
    popped: u64,
    /// Scratch for a bucket being redistributed (its allocation is reused).
    spill: Vec<Entry<E>>,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

fn key(at: Ns, seq: u64) -> u128 {
    ((at as u128) << 64) | seq as u128
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: [0; 3],
            last: 0,
            len: 0,
            seq: 0,
            now: 0,
            popped: 0,
            spill: Vec::new(),
        }
    }

    /// Current virtual time: the time of the last event popped.
    pub fn now(&self) -> Ns {
        self.now
    }

    /// Number of events processed so far.
    pub fn events(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn file(&mut self, e: Entry<E>) {
        let b = (128 - (e.key ^ self.last).leading_zeros()) as usize;
        self.buckets[b].push(e);
        self.occupied[b / 64] |= 1 << (b % 64);
    }

    /// The first non-empty bucket.
    #[inline]
    fn first_bucket(&self) -> Option<usize> {
        self.occupied
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }

    /// Schedule `ev` at absolute time `at`. Scheduling in the past is a bug in the caller;
    /// it is clamped to `now` so that time never goes backwards.
    pub fn schedule(&mut self, at: Ns, ev: E) {
        debug_assert!(at >= self.now, "event scheduled in the past: {at} < {}", self.now);
        let at = at.max(self.now);
        self.seq += 1;
        self.len += 1;
        self.file(Entry {
            key: key(at, self.seq),
            ev,
        });
    }

    /// Schedule `ev` `delay` nanoseconds from now.
    pub fn schedule_in(&mut self, delay: Ns, ev: E) {
        let at = self.now.saturating_add(delay);
        self.schedule(at, ev);
    }

    /// The smallest key pending and the bucket holding it.
    fn min(&self) -> Option<(usize, usize, u128)> {
        let b = self.first_bucket()?;
        let (i, k) = self.buckets[b]
            .iter()
            .enumerate()
            .map(|(i, e)| (i, e.key))
            .min_by_key(|x| x.1)
            .expect("an occupied bucket holds an entry");
        Some((b, i, k))
    }

    /// Time of the next pending event.
    pub fn peek_time(&self) -> Option<Ns> {
        self.min().map(|(_, _, k)| (k >> 64) as Ns)
    }

    /// Remove the earliest event and advance `now` to it.
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        self.pop_until(Ns::MAX)
    }

    /// Remove the earliest event if it is due at or before `limit`, and advance `now` to it.
    pub fn pop_until(&mut self, limit: Ns) -> Option<(Ns, E)> {
        let (b, i, k) = self.min()?;
        let at = (k >> 64) as Ns;
        if at > limit {
            return None;
        }
        let e = self.buckets[b].swap_remove(i);
        if b > 0 {
            // The new floor is `k`: the rest of its bucket moves to lower buckets.
            self.last = k;
            let mut spill = std::mem::take(&mut self.spill);
            std::mem::swap(&mut spill, &mut self.buckets[b]);
            self.occupied[b / 64] &= !(1 << (b % 64));
            for x in spill.drain(..) {
                self.file(x);
            }
            self.spill = spill;
        } else if self.buckets[0].is_empty() {
            self.occupied[0] &= !1;
        }
        self.len -= 1;
        self.now = at;
        self.popped += 1;
        Some((at, e.ev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BinaryHeap;

    #[test]
    fn same_time_events_keep_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(10, 'a');
        q.schedule(5, 'b');
        q.schedule(10, 'c');
        q.schedule(5, 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
        assert_eq!(q.now(), 10);
        assert_eq!(q.events(), 4);
        assert!(q.is_empty());
    }

    #[test]
    fn pops_in_the_order_a_binary_heap_gives() {
        // A simulation's pattern: pop one, schedule a few at now + a random delay (some zero,
        // some far), against a reference heap of (time, sequence).
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut reference: BinaryHeap<std::cmp::Reverse<(u64, u64)>> = BinaryHeap::new();
        let mut q = EventQueue::new();
        let mut seq = 0u64;
        for _ in 0..1000 {
            seq += 1;
            let at = next() % 1000;
            q.schedule(at, seq);
            reference.push(std::cmp::Reverse((at, seq)));
        }
        for step in 0..200_000u64 {
            let Some((t, ev)) = q.pop() else { break };
            let std::cmp::Reverse((rt, rs)) = reference.pop().expect("same length");
            assert_eq!((t, ev), (rt, rs), "step {step}");
            assert_eq!(q.peek_time(), reference.peek().map(|r| r.0 .0));
            for _ in 0..(next() % 3) {
                seq += 1;
                let delay = match next() % 4 {
                    0 => 0,
                    1 => next() % 100,
                    2 => next() % 1_000_000,
                    _ => next() % 10_000_000_000,
                };
                q.schedule_in(delay, seq);
                reference.push(std::cmp::Reverse((t + delay, seq)));
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    #[test]
    fn pop_until_leaves_later_events() {
        let mut q = EventQueue::new();
        q.schedule(10, 1);
        q.schedule(30, 2);
        assert_eq!(q.pop_until(20), Some((10, 1)));
        assert_eq!(q.pop_until(20), None);
        assert_eq!(q.now(), 10);
        q.schedule(15, 3);
        assert_eq!(q.pop_until(20), Some((15, 3)));
        assert_eq!(q.pop(), Some((30, 2)));
    }
}
