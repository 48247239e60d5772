//! The policy pieces a kernel generation chooses (`[policy]` overrides any of them): dirty
//! throttling, flusher, reclaim, request allocation, writeback chunk, page wakeups, timers and
//! the read path (readahead, waits on pages under read).
//!
//! Every piece is a value chosen once, when the scenario is built: where a family of policies
//! changed between releases (2.4's two `fs/buffer.c`, the three per-bdi throttle loops, the
//! 2.4 and 2.6 request lists) the release is part of the value, never looked up from the
//! generation's name at run time. A scenario names a piece by its full name
//! (`per-bdi-2.6.24`) or by its family (`per-bdi`), which means the kernel's own member of the
//! family and is an error on a kernel that has none.

use serde::{Serialize, Serializer};

/// One kind of policy piece: its values, names and families.
pub trait PolicyPiece: Copy + Eq + Sized + 'static {
    /// What the piece is, for messages ("throttling policy").
    const WHAT: &'static str;
    /// Every value, in the order `wblab kernels` lists them.
    const ALL: &'static [Self];
    /// The full name, unique among the values ("per-bdi-2.6.38").
    fn full_name(self) -> &'static str;
    /// The family name ("per-bdi"); the full name for pieces without variants.
    fn family(self) -> &'static str {
        self.full_name()
    }

    /// The piece a scenario names with `name` on a kernel whose own choice is `own`.
    fn parse(name: &str, own: Self) -> Result<Self, PieceError> {
        if let Some(&v) = Self::ALL.iter().find(|v| v.full_name() == name) {
            return Ok(v);
        }
        let members: Vec<Self> = Self::ALL.iter().copied().filter(|v| v.family() == name).collect();
        if members.is_empty() {
            return Err(PieceError::Unknown);
        }
        if own.family() == name {
            return Ok(own);
        }
        Err(PieceError::NoOwnMember(members.iter().map(|v| v.full_name()).collect()))
    }

    /// Every name a scenario may use: full names, then families that have several members.
    fn names() -> Vec<&'static str> {
        let mut v: Vec<&'static str> = Self::ALL.iter().map(|p| p.full_name()).collect();
        for p in Self::ALL {
            if p.family() != p.full_name() && !v.contains(&p.family()) {
                v.push(p.family());
            }
        }
        v
    }

    /// How the resolved scenario names the piece: by family when it is the kernel's own
    /// member, by full name when a scenario chose another one.
    fn label(self, own: Self) -> &'static str {
        if self == own {
            self.family()
        } else {
            self.full_name()
        }
    }
}

/// Why a policy name was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PieceError {
    /// No value or family has this name.
    Unknown,
    /// A family name on a kernel that has no member of the family: these are its members.
    NoOwnMember(Vec<&'static str>),
}

/// Which 2.4 `fs/buffer.c` (used by both the bdflush throttle and the bdflush thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer24 {
    /// 2.4.8-pre5 → 2.4.17 (`write_some_buffers`, `wait_for_some_buffers`); LOCKED buffers
    /// count from 2.4.17-pre2, `tot` = low memory minus the zones' high watermarks.
    Mainline,
    /// 2.4.0 → 2.4.7 and the -ac trees (`flush_dirty_buffers`, Rik van Riel's VM): DIRTY
    /// only, the writer never waits for completions, `tot` = reclaimable memory.
    PreAc,
}

/// Which kernel's per-bdi throttle loop (see `mm/throttle_per_bdi.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerBdiLoop {
    V2624,
    V2632,
    V2638,
}

/// The dirty-throttling policy (`balance_dirty_pages` and friends) of a generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrottleKind {
    /// 2.4 (`fs/buffer.c`): `balance_dirty_state`/`balance_dirty` over the bdflush parameters.
    Bdflush(Buffer24),
    /// 2.6.0–2.6.23: one global threshold; the dirtier writes back `write_chunk` pages itself
    /// and sleeps in 100 ms congestion waits.
    Global,
    /// 2.6.24–3.1: per-bdi thresholds from floating proportions, the task limit, I/O-issuing
    /// dirtiers; the loop of one of three releases.
    PerBdi(PerBdiLoop),
    /// 3.2: the first IO-less, bandwidth-based pause controller, as merged.
    IoLess,
    /// 6.x (Linux 6.18).
    Modern,
}

impl PolicyPiece for ThrottleKind {
    const WHAT: &'static str = "throttling policy";
    const ALL: &'static [Self] = &[
        ThrottleKind::Bdflush(Buffer24::PreAc),
        ThrottleKind::Bdflush(Buffer24::Mainline),
        ThrottleKind::Global,
        ThrottleKind::PerBdi(PerBdiLoop::V2624),
        ThrottleKind::PerBdi(PerBdiLoop::V2632),
        ThrottleKind::PerBdi(PerBdiLoop::V2638),
        ThrottleKind::IoLess,
        ThrottleKind::Modern,
    ];
    fn full_name(self) -> &'static str {
        match self {
            ThrottleKind::Bdflush(Buffer24::PreAc) => "bdflush-2.4.7",
            ThrottleKind::Bdflush(Buffer24::Mainline) => "bdflush-2.4.17",
            ThrottleKind::Global => "global",
            ThrottleKind::PerBdi(PerBdiLoop::V2624) => "per-bdi-2.6.24",
            ThrottleKind::PerBdi(PerBdiLoop::V2632) => "per-bdi-2.6.32",
            ThrottleKind::PerBdi(PerBdiLoop::V2638) => "per-bdi-2.6.38",
            ThrottleKind::IoLess => "io-less",
            ThrottleKind::Modern => "modern",
        }
    }
    fn family(self) -> &'static str {
        match self {
            ThrottleKind::Bdflush(_) => "bdflush",
            ThrottleKind::PerBdi(_) => "per-bdi",
            other => other.full_name(),
        }
    }
}

impl ThrottleKind {
    pub fn name(&self) -> &'static str {
        self.family()
    }
}

/// Who writes back dirty pages in the background.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlusherKind {
    /// 2.4: the bdflush daemon (woken by `balance_dirty`) and kupdate (`interval`,
    /// `age_buffer`), `fs/buffer.c` of one of the two 2.4 lines.
    Bdflush(Buffer24),
    /// 2.6.0–2.6.31: a pool of 2–8 pdflush threads, background_writeout and wb_kupdate.
    Pdflush,
    /// 2.6.32–3.x: one flusher thread per bdi (`flush-MAJ:MIN`), work items.
    PerBdi,
    /// 6.x: per-wb work on workqueues (the same structure, 6.18 details).
    Modern,
}

impl PolicyPiece for FlusherKind {
    const WHAT: &'static str = "flusher";
    const ALL: &'static [Self] = &[
        FlusherKind::Bdflush(Buffer24::PreAc),
        FlusherKind::Bdflush(Buffer24::Mainline),
        FlusherKind::Pdflush,
        FlusherKind::PerBdi,
        FlusherKind::Modern,
    ];
    fn full_name(self) -> &'static str {
        match self {
            FlusherKind::Bdflush(Buffer24::PreAc) => "bdflush-2.4.7",
            FlusherKind::Bdflush(Buffer24::Mainline) => "bdflush-2.4.17",
            FlusherKind::Pdflush => "pdflush",
            FlusherKind::PerBdi => "per-bdi",
            FlusherKind::Modern => "modern",
        }
    }
    fn family(self) -> &'static str {
        match self {
            FlusherKind::Bdflush(_) => "bdflush",
            other => other.full_name(),
        }
    }
}

impl FlusherKind {
    pub fn name(&self) -> &'static str {
        self.family()
    }

    /// A per-bdi flusher entity: 2.6.32's threads and 6.x's workqueue work (they share the
    /// flusher code, `fs/fs_writeback/`).
    pub fn is_per_bdi(self) -> bool {
        matches!(self, FlusherKind::PerBdi | FlusherKind::Modern)
    }
}

/// How page reclaim treats dirty and writeback pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimKind {
    /// 2.6.0–3.1: kswapd and direct reclaim `pageout()` dirty pages from the LRU tail and
    /// sleep in `congestion_wait(HZ/10)` when a scan frees too little.
    Pageout,
    /// 3.2–3.x: only kswapd writes file pages; direct reclaim wakes the flushers and waits
    /// only while a bdi is congested (`wait_iff_congested`).
    KswapdPageout,
    /// 6.x: reclaim never writes file pages; `reclaim_throttle`.
    Modern,
}

impl PolicyPiece for ReclaimKind {
    const WHAT: &'static str = "reclaim policy";
    const ALL: &'static [Self] = &[ReclaimKind::Pageout, ReclaimKind::KswapdPageout, ReclaimKind::Modern];
    fn full_name(self) -> &'static str {
        match self {
            ReclaimKind::Pageout => "pageout",
            ReclaimKind::KswapdPageout => "kswapd-pageout",
            ReclaimKind::Modern => "modern",
        }
    }
}

impl ReclaimKind {
    pub fn name(&self) -> &'static str {
        self.full_name()
    }
}

/// Which legacy request lists (`drivers/block/ll_rw_blk.c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LegacyLists {
    /// 2.4: `queue_nr_requests` slots shared by READ and WRITE, freed in batches, every
    /// waiter woken.
    V24,
    /// 2.5–4.x: `nr_requests` per direction, congestion thresholds, batching.
    V26,
}

/// The block layer's request allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueEra {
    /// Pre-blk-mq request lists, no blk-wbt.
    Legacy(LegacyLists),
    /// blk-mq tags, blk-wbt.
    BlkMq,
}

impl PolicyPiece for QueueEra {
    const WHAT: &'static str = "request queue";
    const ALL: &'static [Self] = &[
        QueueEra::Legacy(LegacyLists::V24),
        QueueEra::Legacy(LegacyLists::V26),
        QueueEra::BlkMq,
    ];
    fn full_name(self) -> &'static str {
        match self {
            QueueEra::Legacy(LegacyLists::V24) => "legacy-2.4",
            QueueEra::Legacy(LegacyLists::V26) => "legacy-2.6",
            QueueEra::BlkMq => "blk-mq",
        }
    }
    fn family(self) -> &'static str {
        match self {
            QueueEra::Legacy(_) => "legacy",
            other => other.full_name(),
        }
    }
}

impl QueueEra {
    pub fn name(&self) -> &'static str {
        self.family()
    }

    pub fn is_legacy(self) -> bool {
        matches!(self, QueueEra::Legacy(_))
    }
}

/// How much a flusher writes of one inode before moving on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WritebackChunk {
    /// `MAX_WRITEBACK_PAGES` = 1024 pages (2.6.x–3.0).
    Fixed,
    /// About half a second of write bandwidth, at least 4 MiB (3.1+).
    Bandwidth,
}

impl PolicyPiece for WritebackChunk {
    const WHAT: &'static str = "writeback chunk rule";
    const ALL: &'static [Self] = &[WritebackChunk::Fixed, WritebackChunk::Bandwidth];
    fn full_name(self) -> &'static str {
        match self {
            WritebackChunk::Fixed => "fixed",
            WritebackChunk::Bandwidth => "bandwidth",
        }
    }
}

impl WritebackChunk {
    pub fn name(&self) -> &'static str {
        self.full_name()
    }
}

/// Page wait-queue wakeup policy (`unlock_page`, `end_page_writeback` → the hashed bucket).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageWake {
    /// 2.5.x–2.6.6: `wake_up_all(bucket)`: every waiter of every page in the bucket wakes.
    WakeAll,
    /// wli's first posting (2004): only waiters keyed on this page wake, lock waiters too.
    Filtered,
    /// 2.6.7–4.9: filtered by (page, bit clear); one exclusive `lock_page` waiter per unlock.
    FilteredWakeOne,
    /// 4.10+: 256 global buckets, PG_waiters, FIFO, lock hand-off to the first lock waiter.
    Handoff,
}

impl PolicyPiece for PageWake {
    const WHAT: &'static str = "page wake policy";
    const ALL: &'static [Self] = &[PageWake::WakeAll, PageWake::Filtered, PageWake::FilteredWakeOne, PageWake::Handoff];
    fn full_name(self) -> &'static str {
        match self {
            PageWake::WakeAll => "wake-all",
            PageWake::Filtered => "filtered",
            PageWake::FilteredWakeOne => "filtered+wake-one",
            PageWake::Handoff => "handoff",
        }
    }
}

impl PageWake {
    pub fn name(&self) -> &'static str {
        self.full_name()
    }
}

/// How `page_waitqueue` picks a page's bucket: `hash_ptr` of its `struct page` address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageHash {
    /// Up to 4.6 on 64-bit: `hash_64` multiplies by the bit-sparse GOLDEN_RATIO_PRIME_64
    /// (2^63 + 2^61 − 2^57 + 2^54 − 2^51 − 2^18 + 1), so the top bits see only the low 13 bits
    /// of the address: with a `struct page` of 2^k·odd bytes only 2^(13−k) buckets are used.
    SparseGoldenRatio,
    /// 4.7+: GOLDEN_RATIO_64, a full multiplier; every bucket is used.
    GoldenRatio,
}

impl PolicyPiece for PageHash {
    const WHAT: &'static str = "page wait hash";
    const ALL: &'static [Self] = &[PageHash::SparseGoldenRatio, PageHash::GoldenRatio];
    fn full_name(self) -> &'static str {
        match self {
            PageHash::SparseGoldenRatio => "golden-ratio-2.6",
            PageHash::GoldenRatio => "golden-ratio-4.7",
        }
    }
}

/// When a jiffies timeout (`schedule_timeout`, `io_schedule_timeout`) fires, as the timer
/// wheel of a release decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerWheel {
    /// Up to 4.7: the cascading wheel runs a timer on the tick its `expires` is reached.
    Cascading,
    /// 4.8+: the non-cascading wheel rounds every expiry up to the next bucket of its level
    /// (`calc_index`), so a sleep of `n` jiffies ends on tick `now + n + 1` (below 63
    /// jiffies), later for longer sleeps.
    Rounded,
}

impl PolicyPiece for TimerWheel {
    const WHAT: &'static str = "timer wheel";
    const ALL: &'static [Self] = &[TimerWheel::Cascading, TimerWheel::Rounded];
    fn full_name(self) -> &'static str {
        match self {
            TimerWheel::Cascading => "cascading",
            TimerWheel::Rounded => "rounded",
        }
    }
}

impl TimerWheel {
    /// The jiffy on whose tick a timer armed at jiffy `now` for `timeout` jiffies fires
    /// (`calc_wheel_index` / `calc_index` for the rounded wheel: 64 buckets per level, each
    /// level 8 times coarser, level `l` taking timeouts below `63 << 3l`).
    pub fn fire_jiffy(self, now: u64, timeout: u64) -> u64 {
        let expires = now + timeout;
        match self {
            TimerWheel::Cascading => expires,
            TimerWheel::Rounded => {
                let mut shift = 0;
                while shift < 3 * 8 && timeout >= 63 << shift {
                    shift += 3;
                }
                ((expires >> shift) + 1) << shift
            }
        }
    }
}

/// How a buffered read decides which pages to read ahead (`mm/readahead.c`; the rules are in
/// [`crate::mm::readahead`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readahead {
    /// 2.6.5–2.6.10, as 2.6.6 has it: current and ahead windows grown by two pages per hit and
    /// shrunk per miss, skipped while the device is read-congested; a page the windows missed
    /// is read alone.
    Windowed,
    /// 2.6.23+ (and the releases whose rules are not modelled: 2.4–2.6.4, 2.6.11–2.6.22): on-demand
    /// readahead, a window from each miss and the next one started at the current one's
    /// marker page; no congestion test.
    OnDemand,
}

impl PolicyPiece for Readahead {
    const WHAT: &'static str = "readahead";
    const ALL: &'static [Self] = &[Readahead::Windowed, Readahead::OnDemand];
    fn full_name(self) -> &'static str {
        match self {
            Readahead::Windowed => "windowed",
            Readahead::OnDemand => "on-demand",
        }
    }
}

/// How a buffered read waits for a page someone else's read holds locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadWait {
    /// Up to 4.7: `lock_page` (the reader sleeps in `__lock_page`, exclusively, and unlocks
    /// at once when it finds the page uptodate).
    LockPage,
    /// 4.8+: `wait_on_page_locked` first (Mel Gorman, 2016), so readers of a page under I/O
    /// sleep in `wait_on_page_bit` and do not take the lock.
    WaitLocked,
}

impl PolicyPiece for ReadWait {
    const WHAT: &'static str = "read wait";
    const ALL: &'static [Self] = &[ReadWait::LockPage, ReadWait::WaitLocked];
    fn full_name(self) -> &'static str {
        match self {
            ReadWait::LockPage => "lock-page",
            ReadWait::WaitLocked => "wait-locked",
        }
    }
}

/// The pieces of a policy that have variants, as the kernel generation chose them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnPolicy {
    pub throttle: ThrottleKind,
    pub flusher: FlusherKind,
    pub queue: QueueEra,
}

/// The resolved policies: the generation's choices, each overridable in `[policy]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Name of the generation the kernel release falls in ("2.6.24").
    pub generation: String,
    pub throttle: ThrottleKind,
    pub flusher: FlusherKind,
    pub reclaim: ReclaimKind,
    pub queue: QueueEra,
    pub writeback_chunk: WritebackChunk,
    /// Who an unlock or end of writeback wakes on the hashed page wait queues.
    pub page_wake: PageWake,
    /// How a page is hashed to its wait-queue bucket.
    pub page_hash: PageHash,
    /// When jiffies sleeps (a balance_dirty_pages pause) end.
    pub timer_wheel: TimerWheel,
    /// Which pages a buffered read reads ahead.
    pub readahead: Readahead,
    /// How a read waits for a page under someone else's read.
    pub read_wait: ReadWait,
    /// The generation's own choices, so that the resolved scenario names an overridden piece
    /// by its full name.
    pub own: OwnPolicy,
}

impl Serialize for PolicyConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("PolicyConfig", 11)?;
        st.serialize_field("generation", &self.generation)?;
        st.serialize_field("throttle", self.throttle.label(self.own.throttle))?;
        st.serialize_field("flusher", self.flusher.label(self.own.flusher))?;
        st.serialize_field("reclaim", self.reclaim.full_name())?;
        st.serialize_field("queue", self.queue.label(self.own.queue))?;
        st.serialize_field("writeback_chunk", self.writeback_chunk.full_name())?;
        st.serialize_field("page_wake", self.page_wake.full_name())?;
        st.serialize_field("page_hash", self.page_hash.full_name())?;
        st.serialize_field("timer_wheel", self.timer_wheel.full_name())?;
        st.serialize_field("readahead", self.readahead.full_name())?;
        st.serialize_field("read_wait", self.read_wait.full_name())?;
        st.end()
    }
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            generation: "6.x".to_string(),
            throttle: ThrottleKind::Modern,
            flusher: FlusherKind::Modern,
            reclaim: ReclaimKind::Modern,
            queue: QueueEra::BlkMq,
            writeback_chunk: WritebackChunk::Bandwidth,
            page_wake: PageWake::Handoff,
            page_hash: PageHash::GoldenRatio,
            timer_wheel: TimerWheel::Rounded,
            readahead: Readahead::OnDemand,
            read_wait: ReadWait::WaitLocked,
            own: OwnPolicy {
                throttle: ThrottleKind::Modern,
                flusher: FlusherKind::Modern,
                queue: QueueEra::BlkMq,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_are_unique<P: PolicyPiece + std::fmt::Debug>() {
        let mut seen = std::collections::HashSet::new();
        for p in P::ALL {
            assert!(seen.insert(p.full_name()), "{p:?}: duplicate name");
        }
        for n in P::names() {
            assert!(P::parse(n, P::ALL[0]).is_ok() || matches!(P::parse(n, P::ALL[0]), Err(PieceError::NoOwnMember(_))));
        }
    }

    #[test]
    fn the_rounded_wheel_fires_a_bucket_late_the_cascading_one_on_time() {
        let (c, r) = (TimerWheel::Cascading, TimerWheel::Rounded);
        // A 6 ms pause at HZ = 250 from jiffy 1000: 2 jiffies.
        assert_eq!(c.fire_jiffy(1000, 2), 1002);
        assert_eq!(r.fire_jiffy(1000, 2), 1003, "one tick after the expiry");
        assert_eq!(r.fire_jiffy(1000, 62), 1063, "the last timeout of level 0");
        // Level 1 (63..504 jiffies): buckets of 8, rounded up past the expiry.
        assert_eq!(r.fire_jiffy(0, 100), 104);
        assert_eq!(r.fire_jiffy(5, 100), 112);
        assert_eq!(r.fire_jiffy(0, 63), 64);
        // Never early, at most one bucket of the level late.
        for now in [0u64, 7, 1000, 123_457] {
            for n in [1u64, 10, 62, 63, 200, 503, 504, 5000, 40_000] {
                let f = r.fire_jiffy(now, n);
                let gran = match n {
                    0..63 => 1,
                    63..504 => 8,
                    504..4032 => 64,
                    4032..32256 => 512,
                    _ => 4096,
                };
                assert!(f > now + n && f <= now + n + gran, "now {now} + {n}: fires at {f}");
            }
        }
    }

    #[test]
    fn every_piece_has_unique_names_that_parse() {
        names_are_unique::<ThrottleKind>();
        names_are_unique::<FlusherKind>();
        names_are_unique::<ReclaimKind>();
        names_are_unique::<QueueEra>();
        names_are_unique::<WritebackChunk>();
        names_are_unique::<PageWake>();
    }

    #[test]
    fn a_family_means_the_kernels_own_member_or_is_refused() {
        let own = ThrottleKind::PerBdi(PerBdiLoop::V2632);
        assert_eq!(ThrottleKind::parse("per-bdi", own), Ok(own));
        assert_eq!(
            ThrottleKind::parse("per-bdi-2.6.24", own),
            Ok(ThrottleKind::PerBdi(PerBdiLoop::V2624))
        );
        // On 6.x, "per-bdi" names no loop: the scenario must say which.
        match ThrottleKind::parse("per-bdi", ThrottleKind::Modern) {
            Err(PieceError::NoOwnMember(m)) => assert_eq!(m, ["per-bdi-2.6.24", "per-bdi-2.6.32", "per-bdi-2.6.38"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(ThrottleKind::parse("per-bdj", own), Err(PieceError::Unknown));
        assert_eq!(
            QueueEra::parse("legacy", QueueEra::Legacy(LegacyLists::V24)),
            Ok(QueueEra::Legacy(LegacyLists::V24))
        );
        assert!(QueueEra::parse("legacy", QueueEra::BlkMq).is_err());
    }

    #[test]
    fn the_resolved_scenario_names_overrides_in_full() {
        let mut p = PolicyConfig::default();
        let json = |p: &PolicyConfig| serde_json::to_value(p).unwrap();
        assert_eq!(json(&p)["throttle"], "modern");
        p.throttle = ThrottleKind::PerBdi(PerBdiLoop::V2638);
        assert_eq!(json(&p)["throttle"], "per-bdi-2.6.38");
        p.own.throttle = p.throttle;
        assert_eq!(json(&p)["throttle"], "per-bdi");
    }
}
