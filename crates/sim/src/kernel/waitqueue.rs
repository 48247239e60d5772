//! Hashed page wait queues: who sleeps on a page lock or on a page under I/O, and whom an
//! `unlock_page` / `end_page_writeback` wakes. Buffer waits (`__wait_on_buffer`: a block read
//! alone, a metadata buffer the journal is writing) sleep on a table of their own
//! ([`BH_WAIT_TABLE`], [`buffer_wake`]), which page events never disturb.
//!
//! A waiter sits in one bucket of a hash table keyed by its page (`page_waitqueue`). What an
//! unlock of page P does to the bucket depends on the era ([`PageWake`]):
//!
//! - **wake-all** (2.5.x–2.6.6, `wake_up_all`): every entry in the bucket wakes, whatever its
//!   page or bit; each re-tests its own page and all but the right ones sleep again (the
//!   thundering herd of wli's 2004 report). All waits are non-exclusive.
//! - **filtered** (wli's first posting, `wake_up_filtered`): only entries keyed on P wake,
//!   lock waiters included (no wake-one).
//! - **filtered+wake-one** (2.6.7–4.9, `wake_up_page` → `__wake_up(q, 1, key)`): entries for P
//!   whose bit is now clear; all non-exclusive ones, then the first exclusive (`__lock_page`,
//!   `prepare_to_wait_exclusive` adds at the tail) and the walk stops.
//! - **handoff** (4.10+ `folio_wake_bit`): as wake-one on one global 256-bucket table, FIFO;
//!   the first lock waiter is handed the lock.
//!
//! The bucket is `hash_ptr` of the page's `struct page` ([`PageHash`]): before 4.7 the 64-bit
//! multiplier was so sparse that a 64-byte `struct page` spread pages over only 128 buckets
//! of any table, four times more waiters per bucket than the table size suggests (pages get
//! a fixed pseudo-random frame, as an allocator gives them).
//!
//! The walk itself (filter calls, O(bucket)) is not charged; wakeups are, by the machine
//! (`wakeup_cost` + `context_switch_cost`, plus `wait_recheck_cost` for a waiter that finds its
//! page still busy). The table never allocates per wakeup: buckets and the woken list keep
//! their capacity.

use crate::config::{PageHash, PageWake};
use crate::engine::rng::splitmix64;
use crate::metrics::WaitStats;
use crate::units::PAGE_SIZE;
use crate::Ns;

/// PG_locked: the page is locked (here: under read I/O).
pub(crate) const PG_LOCKED: u8 = 1;
/// PG_writeback: the page is under write I/O.
pub(crate) const PG_WRITEBACK: u8 = 2;

/// `PAGES_PER_WAITQUEUE` of the per-zone tables (2.5 → 4.9).
pub(crate) const PAGES_PER_WAITQUEUE: u64 = 256;
/// `1 << PAGE_WAIT_TABLE_BITS`: the global table of 4.10+.
pub(crate) const GLOBAL_WAIT_TABLE: u32 = 256;
/// `1 << BH_WAIT_TABLE_ORDER`: 2.6's own table of buffer waits (`bh_waitq_head`, hashed by the
/// `buffer_head`), apart from the pages'. (Later kernels wait on a buffer's bit in the
/// 256-bucket `bit_wait_table`; with filtered wakeups the count of buckets changes nothing.)
pub(crate) const BH_WAIT_TABLE: u32 = 128;

/// How a buffer's unlock wakes its bucket: all of it in the wake-all era (`wake_up_buffer` →
/// `wake_up_all`), only the buffer's own waiters once wakeups are filtered (wli's "filter
/// wakeups by the bh being woken up for", then `wake_up_bit`). Buffer waits are never
/// exclusive here, so wake-one has nothing to add.
pub(crate) fn buffer_wake(page: PageWake) -> PageWake {
    match page {
        PageWake::WakeAll => PageWake::WakeAll,
        _ => PageWake::Filtered,
    }
}
/// `GOLDEN_RATIO_PRIME_64` of `hash_64` before 4.7.
const GOLDEN_RATIO_PRIME_64: u64 = 0x9e37_ffff_fffc_0001;
/// Where the `struct page` array starts (x86-64's vmemmap); only its low bits matter.
const MEM_MAP: u64 = 0xffff_ea00_0000_0000;

/// Where a task sleeps: the kernel function that called `schedule()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitSite {
    /// `wait_on_page_bit`: `wait_on_page_locked` (reads) and `wait_on_page_writeback`.
    WaitOnPageBit = 0,
    /// `__lock_page`.
    LockPage = 1,
    /// `__wait_on_buffer`: a block read alone (the part of a block a write leaves), on the
    /// buffer wait table.
    WaitOnBuffer = 2,
    /// `do_get_write_access`: a journal handle waiting for a metadata buffer the commit is
    /// writing to the log (BH_Shadow). 2.6's jbd sleeps it right there (`wait_event` on the
    /// buffer's hashed queue), so a schedule profile names this function, not a buffer wait.
    DoGetWriteAccess = 3,
}

impl WaitSite {
    /// Whether the wait sleeps on the buffer wait table rather than the pages'.
    pub(crate) fn on_buffer(self) -> bool {
        matches!(self, WaitSite::WaitOnBuffer | WaitSite::DoGetWriteAccess)
    }
}

/// Per-task page-wait state and counters.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaskWait {
    /// The page wait in progress, if any.
    pub wait: Option<PageWaitState>,
    /// Calls of `schedule()` per [`WaitSite`].
    pub schedules: [u64; 4],
    /// Wakeups from page wait queues, and those that found the page still busy.
    pub wakeups: u64,
    pub spurious: u64,
    /// CPU to add to the next wakeup burst (the re-check and re-sleep of a spurious wakeup).
    pub wake_extra: Ns,
    /// User-mode CPU to carve out of the next bursts.
    pub user_pending: Ns,
    /// The user part of the burst in progress.
    pub user_burst: Ns,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct PageWaitState {
    pub file: u32,
    pub page: u64,
    /// Bits the task waits to see clear.
    pub bits: u8,
    pub site: WaitSite,
    pub exclusive: bool,
    /// On a bucket (false: woken, not yet run).
    pub queued: bool,
}

impl TaskWait {
    pub(crate) fn stats(&self) -> WaitStats {
        WaitStats {
            wait_on_page_bit: self.schedules[0],
            lock_page: self.schedules[1],
            wait_on_buffer: self.schedules[2],
            do_get_write_access: self.schedules[3],
            wakeups: self.wakeups,
            spurious_wakeups: self.spurious,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Waiter {
    key: u64,
    tid: u32,
    bits: u8,
    exclusive: bool,
}

/// A task the last wake walk woke, and whether its page and bit are now clear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Woken {
    pub tid: u32,
    pub matched: bool,
}

/// The hashed table and its wake policy.
pub(crate) struct PageWaitTable {
    buckets: Vec<Vec<Waiter>>,
    shift: u32,
    policy: PageWake,
    hash: PageHash,
    /// `sizeof(struct page)` and page frames, for [`PageHash::SparseGoldenRatio`].
    struct_page: u64,
    frames: u64,
    /// log2 of model pages per kernel page (1 for sparc64's 8 KiB pages): waits and wakeups
    /// are per kernel page.
    sub_shift: u32,
    waiters: u32,
    /// Filled by [`PageWaitTable::wake`]; reused.
    pub woken: Vec<Woken>,
}

/// The key of a page: (file, index).
pub(crate) fn page_key(file: u32, page: u64) -> u64 {
    ((file as u64) << 40) ^ page
}

/// The era's bucket count for a machine of `memory` bytes in `page_size` pages (one zone),
/// or `explicit` if set.
pub(crate) fn table_size(policy: PageWake, memory: u64, page_size: u64, explicit: u32) -> u32 {
    if explicit > 0 {
        return explicit.next_power_of_two();
    }
    match policy {
        PageWake::Handoff => GLOBAL_WAIT_TABLE,
        // wait_table_size(): pages / PAGES_PER_WAITQUEUE rounded up to a power of 2, [4, 4096].
        _ => ((memory / page_size.max(1) / PAGES_PER_WAITQUEUE).max(1).next_power_of_two()).clamp(4, 4096) as u32,
    }
}

impl PageWaitTable {
    pub(crate) fn new(policy: PageWake, buckets: u32) -> Self {
        let n = buckets.max(1).next_power_of_two();
        PageWaitTable {
            buckets: vec![Vec::new(); n as usize],
            shift: 64 - n.trailing_zeros(),
            policy,
            hash: PageHash::GoldenRatio,
            struct_page: 64,
            frames: 1,
            sub_shift: 0,
            waiters: 0,
            woken: Vec::new(),
        }
    }

    /// Key waits on kernel pages of `page_size` bytes (a power of two, at least the model's
    /// 4 KiB page) and hash them as `hash` does the `struct page` addresses (`struct_page`
    /// bytes each) of a machine with `memory` bytes.
    pub(crate) fn hashed_as(mut self, hash: PageHash, struct_page: u32, page_size: u64, memory: u64) -> Self {
        self.hash = hash;
        self.struct_page = struct_page.max(1) as u64;
        self.sub_shift = (page_size.max(PAGE_SIZE) / PAGE_SIZE).trailing_zeros();
        self.frames = (memory / page_size.max(PAGE_SIZE)).max(1);
        self
    }

    /// log2 of the model pages in one kernel page.
    pub(crate) fn sub_shift(&self) -> u32 {
        self.sub_shift
    }

    /// The wait key of model page `page` of `file`: its kernel page.
    pub(crate) fn key(&self, file: u32, page: u64) -> u64 {
        page_key(file, page >> self.sub_shift)
    }

    pub(crate) fn policy(&self) -> PageWake {
        self.policy
    }

    #[cfg(test)]
    pub(crate) fn nr_buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Waiters on all buckets.
    pub(crate) fn waiters(&self) -> u32 {
        self.waiters
    }

    /// `hash_ptr(page, bits)`: multiplicative (golden ratio) hash, top bits.
    fn bucket(&self, key: u64) -> usize {
        if self.shift >= 64 {
            return 0;
        }
        match self.hash {
            PageHash::GoldenRatio => (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize,
            PageHash::SparseGoldenRatio => {
                // The page's frame is wherever the allocator put it: a fixed pseudo-random one.
                let pfn = splitmix64(key) % self.frames;
                let addr = MEM_MAP.wrapping_add(pfn * self.struct_page);
                (addr.wrapping_mul(GOLDEN_RATIO_PRIME_64) >> self.shift) as usize
            }
        }
    }

    /// `prepare_to_wait{,_exclusive}`: queue `tid` on the bucket of `key` (at the tail).
    pub(crate) fn enqueue(&mut self, key: u64, tid: u32, bits: u8, exclusive: bool) {
        let b = self.bucket(key);
        self.buckets[b].push(Waiter { key, tid, bits, exclusive });
        self.waiters += 1;
    }

    /// `finish_wait` of a task that stopped waiting without being woken.
    pub(crate) fn remove(&mut self, key: u64, tid: u32) {
        let b = self.bucket(key);
        if let Some(i) = self.buckets[b].iter().position(|w| w.tid == tid) {
            self.buckets[b].remove(i);
            self.waiters -= 1;
        }
    }

    /// `waitqueue_active(bucket)`.
    pub(crate) fn active(&self, key: u64) -> bool {
        !self.buckets[self.bucket(key)].is_empty()
    }

    /// Wake for page `key` whose busy bits are now `now_bits`: fills `self.woken` (cleared
    /// first) with the tasks woken, each removed from the bucket (autoremove).
    pub(crate) fn wake(&mut self, key: u64, now_bits: u8) {
        self.woken.clear();
        let b = self.bucket(key);
        let bucket = &mut self.buckets[b];
        let woken = &mut self.woken;
        let clear = |w: &Waiter| w.key == key && w.bits & now_bits == 0;
        match self.policy {
            PageWake::WakeAll => {
                woken.extend(bucket.iter().map(|w| Woken {
                    tid: w.tid,
                    matched: clear(w),
                }));
                bucket.clear();
            }
            PageWake::Filtered => bucket.retain(|w| {
                if w.key != key {
                    return true;
                }
                woken.push(Woken {
                    tid: w.tid,
                    matched: clear(w),
                });
                false
            }),
            PageWake::FilteredWakeOne | PageWake::Handoff => {
                // Non-exclusive entries sit before exclusive ones (head vs tail insertion):
                // all matching shared waiters, then the first matching lock waiter.
                bucket.retain(|w| {
                    if w.exclusive || !clear(w) {
                        return true;
                    }
                    woken.push(Woken { tid: w.tid, matched: true });
                    false
                });
                if let Some(i) = bucket.iter().position(|w| w.exclusive && clear(w)) {
                    let w = bucket.remove(i);
                    woken.push(Woken { tid: w.tid, matched: true });
                }
            }
        }
        self.waiters -= self.woken.len() as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two keys that hash to the same bucket of a `n`-bucket table.
    fn colliding(t: &PageWaitTable) -> (u64, u64) {
        let a = page_key(0, 0);
        let b = (1..).map(|p| page_key(1, p)).find(|&k| t.bucket(k) == t.bucket(a)).unwrap();
        (a, b)
    }

    fn woken(t: &PageWaitTable) -> Vec<(u32, bool)> {
        t.woken.iter().map(|w| (w.tid, w.matched)).collect()
    }

    #[test]
    fn table_sizes_follow_the_era() {
        // 3.5 GB of 4 KiB pages: 896k pages / 256 = 3584 → 4096; 16 MB → 16; tiny → 4.
        assert_eq!(table_size(PageWake::WakeAll, 3584 << 20, 4096, 0), 4096);
        // sparc64's 8 KiB pages: 448k pages / 256 = 1792 → 2048.
        assert_eq!(table_size(PageWake::WakeAll, 3584 << 20, 8192, 0), 2048);
        assert_eq!(table_size(PageWake::FilteredWakeOne, 16 << 20, 4096, 0), 16);
        assert_eq!(table_size(PageWake::WakeAll, 1 << 20, 4096, 0), 4);
        assert_eq!(table_size(PageWake::WakeAll, 1 << 40, 4096, 0), 4096);
        assert_eq!(table_size(PageWake::Handoff, 1 << 40, 4096, 0), 256);
        assert_eq!(table_size(PageWake::Handoff, 1 << 40, 4096, 2000), 2048);
    }

    #[test]
    fn wake_all_wakes_the_whole_bucket() {
        let mut t = PageWaitTable::new(PageWake::WakeAll, 64);
        let (a, b) = colliding(&t);
        t.enqueue(a, 1, PG_LOCKED, false);
        t.enqueue(b, 2, PG_LOCKED, false);
        t.enqueue(a, 3, PG_LOCKED, true);
        t.wake(a, 0);
        // Everyone wakes; the waiter for the other page is spurious.
        assert_eq!(woken(&t), vec![(1, true), (2, false), (3, true)]);
        assert_eq!(t.waiters(), 0);
    }

    #[test]
    fn filtered_skips_other_pages_but_wakes_every_lock_waiter() {
        let mut t = PageWaitTable::new(PageWake::Filtered, 64);
        let (a, b) = colliding(&t);
        t.enqueue(a, 1, PG_LOCKED, true);
        t.enqueue(b, 2, PG_LOCKED, false);
        t.enqueue(a, 3, PG_LOCKED, true);
        t.wake(a, 0);
        assert_eq!(woken(&t), vec![(1, true), (3, true)]);
        assert_eq!(t.waiters(), 1);
        // A writeback waiter is woken by an unlock of its page even though its bit is set.
        t.enqueue(b, 4, PG_WRITEBACK, false);
        t.wake(b, PG_WRITEBACK);
        assert_eq!(woken(&t), vec![(2, true), (4, false)]);
    }

    #[test]
    fn wake_one_wakes_shared_waiters_and_one_lock_waiter() {
        let mut t = PageWaitTable::new(PageWake::FilteredWakeOne, 64);
        let (a, b) = colliding(&t);
        t.enqueue(a, 1, PG_LOCKED, true);
        t.enqueue(a, 2, PG_LOCKED, true);
        t.enqueue(b, 3, PG_LOCKED, false);
        t.enqueue(a, 4, PG_LOCKED, false);
        t.enqueue(a, 5, PG_WRITEBACK, false);
        // Page a unlocked but still under writeback: the reader and the first locker wake;
        // the second locker, the other page's waiter and the writeback waiter stay.
        t.wake(a, PG_WRITEBACK);
        assert_eq!(woken(&t), vec![(4, true), (1, true)]);
        assert_eq!(t.waiters(), 3);
        t.wake(a, 0);
        assert_eq!(woken(&t), vec![(5, true), (2, true)]);
        t.wake(b, 0);
        assert_eq!(woken(&t), vec![(3, true)]);
        assert_eq!(t.waiters(), 0);
    }

    #[test]
    fn handoff_is_fifo_one_lock_waiter_per_unlock() {
        let mut t = PageWaitTable::new(PageWake::Handoff, GLOBAL_WAIT_TABLE);
        assert_eq!(t.nr_buckets(), 256);
        let a = page_key(7, 3);
        for tid in [10, 11, 12] {
            t.enqueue(a, tid, PG_LOCKED, true);
        }
        for tid in [10, 11, 12] {
            t.wake(a, 0);
            assert_eq!(woken(&t), vec![(tid, true)]);
        }
        t.wake(a, 0);
        assert!(t.woken.is_empty());
    }

    #[test]
    fn releases_pick_their_page_wake() {
        use crate::generations::{default_page_wake, resolve, Version};
        assert_eq!(default_page_wake(Version(2, 6, 6)), PageWake::WakeAll);
        assert_eq!(default_page_wake(Version(2, 6, 7)), PageWake::FilteredWakeOne);
        assert_eq!(default_page_wake(Version(4, 9, 0)), PageWake::FilteredWakeOne);
        assert_eq!(default_page_wake(Version(4, 10, 0)), PageWake::Handoff);
        // Inside one generation the release decides.
        let g = resolve("2.6.6").unwrap();
        assert_eq!(g.policy_for("2.6.6-rc3-mm1").page_wake, PageWake::WakeAll);
        assert_eq!(g.policy_for("2.6.20").page_wake, PageWake::FilteredWakeOne);
        assert_eq!(resolve("6.x").unwrap().policy_for("6.x").page_wake, PageWake::Handoff);
    }

    /// Buckets a table puts 100,000 distinct pages in.
    fn buckets_used(t: &PageWaitTable) -> usize {
        let mut used = std::collections::BTreeSet::new();
        for p in 0..100_000 {
            used.insert(t.bucket(page_key((p % 512) as u32, p / 512)));
        }
        used.len()
    }

    #[test]
    fn the_old_64_bit_hash_uses_few_buckets_of_a_64_byte_struct_page() {
        let memory = 3584 << 20;
        let table = |hash, size| PageWaitTable::new(PageWake::WakeAll, 2048).hashed_as(hash, size, 4096, memory);
        // 64 = 2^6: 2^(13-6) buckets; 56 = 2^3 x 7: 2^10; 88 = 2^3 x 11: 2^10.
        assert_eq!(buckets_used(&table(PageHash::SparseGoldenRatio, 64)), 128);
        assert_eq!(buckets_used(&table(PageHash::SparseGoldenRatio, 56)), 1024);
        assert_eq!(buckets_used(&table(PageHash::SparseGoldenRatio, 88)), 1024);
        assert_eq!(buckets_used(&table(PageHash::GoldenRatio, 64)), 2048);
    }

    #[test]
    fn releases_pick_their_page_hash() {
        use crate::generations::{default_page_hash, resolve, Version};
        assert_eq!(default_page_hash(Version(4, 6, 0)), PageHash::SparseGoldenRatio);
        assert_eq!(default_page_hash(Version(4, 7, 0)), PageHash::GoldenRatio);
        assert_eq!(resolve("2.6.6").unwrap().policy_for("2.6.6").page_hash, PageHash::SparseGoldenRatio);
        assert_eq!(resolve("6.x").unwrap().policy_for("6.x").page_hash, PageHash::GoldenRatio);
    }

    #[test]
    fn kernel_pages_larger_than_the_models_share_one_key() {
        let t = PageWaitTable::new(PageWake::WakeAll, 64).hashed_as(PageHash::GoldenRatio, 64, 8192, 1 << 30);
        assert_eq!(t.key(3, 10), t.key(3, 11));
        assert_ne!(t.key(3, 11), t.key(3, 12));
        let t = PageWaitTable::new(PageWake::WakeAll, 64);
        assert_ne!(t.key(3, 10), t.key(3, 11));
    }

    #[test]
    fn remove_takes_the_task_off_its_bucket() {
        let mut t = PageWaitTable::new(PageWake::WakeAll, 4);
        t.enqueue(page_key(1, 1), 1, PG_LOCKED, false);
        t.enqueue(page_key(1, 2), 2, PG_LOCKED, false);
        t.remove(page_key(1, 1), 1);
        assert_eq!(t.waiters(), 1);
        t.remove(page_key(1, 1), 1);
        assert_eq!(t.waiters(), 1);
    }
}
