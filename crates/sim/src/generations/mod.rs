//! Kernel generations: which policy of each kind a kernel version runs, and that era's default
//! knobs. A scenario names a version (`kernel = "2.6.20"`); [`resolve`] finds the generation it
//! falls in and [`Generation::policy`] gives the pieces, each of which a scenario may override.
//!
//! The table is the one place that knows history. Sources are cited per row; where the version
//! of a change is from memory rather than a tree it says so (see docs/kernel-generations.md).

use crate::config::{
    Buffer24, FlusherKind, LegacyLists, NfsCommit, OwnPolicy, PerBdiLoop, PolicyConfig, QueueConfig, QueueEra, ReclaimKind, Scenario,
    SchedulerKind, ThrottleKind, VmSysctl, WritebackChunk,
};
use std::cmp::Ordering;

pub mod features;
pub(crate) mod runtime;
use std::fmt;

/// A kernel release as (major, minor, patch); "6.x" reads as (6, u32::MAX, 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u32, pub u32, pub u32);

impl Version {
    /// The 2.6 series numbers its releases in the third field; later series in the second.
    pub const fn new(a: u32, b: u32, c: u32) -> Self {
        Version(a, b, c)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version(a, u32::MAX, _) => write!(f, "{a}.x"),
            Version(2, 6, c) => write!(f, "2.6.{c}"),
            Version(2, 4, c) => write!(f, "2.4.{c}"),
            Version(2, 5, c) => write!(f, "2.5.{c}"),
            Version(a, b, 0) => write!(f, "{a}.{b}"),
            Version(a, b, c) => write!(f, "{a}.{b}.{c}"),
        }
    }
}

/// One generation of the writeback path.
#[derive(Clone, Debug)]
pub struct Generation {
    /// The name a scenario may use for it, e.g. "2.6.24".
    pub name: &'static str,
    /// First and last release the generation covers (inclusive).
    pub first: Version,
    pub last: Version,
    pub throttle: ThrottleKind,
    pub flusher: FlusherKind,
    pub reclaim: ReclaimKind,
    pub queue: QueueEra,
    pub chunk: WritebackChunk,
    /// What the generation is, in one line.
    pub summary: &'static str,
}

/// Every generation, oldest first.
pub const GENERATIONS: &[Generation] = &[
    // 2.4 (fs/buffer.c, drivers/block/ll_rw_blk.c). The 2.4.8-pre5
    // write_some_buffers rewrite splits the series; a 2.4.x-ac release ("2.4.13-ac7") maps to
    // the 2.4.7 row, whose code the -ac trees kept (see `resolve`).
    Generation {
        name: "2.4.7",
        first: Version(2, 4, 0),
        last: Version(2, 4, 7),
        throttle: ThrottleKind::Bdflush(Buffer24::PreAc),
        flusher: FlusherKind::Bdflush(Buffer24::PreAc),
        reclaim: ReclaimKind::Pageout,
        queue: QueueEra::Legacy(LegacyLists::V24),
        chunk: WritebackChunk::Fixed,
        summary: "2.4.0-2.4.7 and the -ac trees: buffer-cache limits 30/60 % of reclaimable memory (DIRTY only); above 60 % the writer submits ndirty = 64 buffers without waiting; bdflush flushes 64 per loop; 64 write slots freed in batches of 32",
    },
    Generation {
        name: "2.4.17",
        first: Version(2, 4, 8),
        last: Version(2, 4, u32::MAX),
        throttle: ThrottleKind::Bdflush(Buffer24::Mainline),
        flusher: FlusherKind::Bdflush(Buffer24::Mainline),
        reclaim: ReclaimKind::Pageout,
        queue: QueueEra::Legacy(LegacyLists::V24),
        chunk: WritebackChunk::Fixed,
        summary: "2.4.8-2.4.x mainline: 40/60 % of low memory counting DIRTY + LOCKED; from 40 % every dirtied page makes the writer submit 32 buffers, above 60 % it also waits for the oldest in flight; bdflush without hysteresis; 64 write slots freed in batches of 32",
    },
    Generation {
        name: "2.5.38",
        first: Version(2, 5, 0),
        last: Version(2, 5, u32::MAX),
        throttle: ThrottleKind::Global,
        flusher: FlusherKind::Pdflush,
        reclaim: ReclaimKind::Pageout,
        queue: QueueEra::Legacy(LegacyLists::V26),
        chunk: WritebackChunk::Fixed,
        summary: "the 2.5 development series (Sep 2002): global dirty threshold (10/40 from 2.5.34/37), pdflush, 128-request queues, and the first deadline elevator (deadline-2002: fifo_batch 64, seek_cost 16) that 2.5.38 ran with the deadline patch",
    },
    Generation {
        name: "2.6.20",
        first: Version(2, 6, 0),
        last: Version(2, 6, 23),
        throttle: ThrottleKind::Global,
        flusher: FlusherKind::Pdflush,
        reclaim: ReclaimKind::Pageout,
        queue: QueueEra::Legacy(LegacyLists::V26),
        chunk: WritebackChunk::Fixed,
        summary: "one global dirty threshold; the dirtier writes back write_chunk pages itself and sleeps in 100 ms congestion waits; pdflush pool; reclaim writes dirty pages",
    },
    Generation {
        name: "2.6.24",
        first: Version(2, 6, 24),
        last: Version(2, 6, 31),
        throttle: ThrottleKind::PerBdi(PerBdiLoop::V2624),
        flusher: FlusherKind::Pdflush,
        reclaim: ReclaimKind::Pageout,
        queue: QueueEra::Legacy(LegacyLists::V26),
        chunk: WritebackChunk::Fixed,
        summary: "per-bdi thresholds from floating proportions of completions, heavy dirtiers get a 1/8 lower task limit (per-BDI v9); still I/O-issuing dirtiers, pdflush, pageout reclaim",
    },
    Generation {
        name: "2.6.32",
        first: Version(2, 6, 32),
        last: Version(2, 6, 34),
        throttle: ThrottleKind::PerBdi(PerBdiLoop::V2632),
        flusher: FlusherKind::PerBdi,
        reclaim: ReclaimKind::Pageout,
        queue: QueueEra::Legacy(LegacyLists::V26),
        chunk: WritebackChunk::Fixed,
        summary: "per-bdi flusher threads replace pdflush (1024-page chunks); throttling still per-bdi and I/O-issuing, bdi OR global exceeded, 100 ms congestion waits",
    },
    Generation {
        name: "2.6.38",
        first: Version(2, 6, 35),
        last: Version(3, 1, u32::MAX),
        throttle: ThrottleKind::PerBdi(PerBdiLoop::V2638),
        flusher: FlusherKind::PerBdi,
        reclaim: ReclaimKind::Pageout,
        queue: QueueEra::Legacy(LegacyLists::V26),
        chunk: WritebackChunk::Fixed,
        summary: "as 2.6.32 but the throttle loop sleeps 1, 2, 4 ... 100 ms instead of congestion waits: the erratic multi-second pauses of Wu's 2011 report",
    },
    Generation {
        name: "3.2",
        first: Version(3, 2, 0),
        last: Version(3, u32::MAX - 1, u32::MAX),
        throttle: ThrottleKind::IoLess,
        flusher: FlusherKind::PerBdi,
        reclaim: ReclaimKind::KswapdPageout,
        queue: QueueEra::Legacy(LegacyLists::V26),
        chunk: WritebackChunk::Bandwidth,
        summary: "IO-less balance_dirty_pages as merged in 3.2: bandwidth estimation, pos_ratio, dirty_ratelimit, pauses up to 200 ms; direct reclaim no longer writes file pages",
    },
    Generation {
        name: "6.x",
        first: Version(4, 0, 0),
        last: Version(6, u32::MAX, u32::MAX),
        throttle: ThrottleKind::Modern,
        flusher: FlusherKind::Modern,
        reclaim: ReclaimKind::Modern,
        queue: QueueEra::BlkMq,
        chunk: WritebackChunk::Bandwidth,
        summary: "Linux 6.18: wb domains, strictlimit, min/max pause, blk-mq with blk-wbt, reclaim never writes file pages and throttles in reclaim_throttle",
    },
];

/// Why a version string was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VersionError {
    /// Not a version at all.
    Garbage(String),
    /// A real version the model has no generation for yet.
    NotModelled(String),
}

impl VersionError {
    pub fn message(&self) -> String {
        match self {
            VersionError::Garbage(s) => format!("`{s}` is not a kernel version"),
            VersionError::NotModelled(s) => format!("kernel `{s}` is not modelled"),
        }
    }

    pub fn hint(&self) -> String {
        match self {
            VersionError::NotModelled(s) if s.starts_with("2.2") || s.starts_with("2.0") || s.starts_with("1.") => {
                "the oldest modelled series is 2.4; modelled generations: ".to_string() + &names()
            }
            _ => format!("write a release like \"2.6.20\", \"3.2\", \"6.18.2\" or a generation: {}", names()),
        }
    }
}

fn names() -> String {
    GENERATIONS.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
}

/// Parse "2.6.20", "2.6.38-rc7", "3.2", "4.19", "6.x", "6.18.2", "v3.2" into a version.
pub fn parse_version(s: &str) -> Result<Version, VersionError> {
    let t = s.trim();
    let t = t.strip_prefix(['v', 'V']).unwrap_or(t);
    // Drop a suffix: "-rc7", "-mm1", "+", "-generic".
    let core = t.split(['-', '+', ' ', '_']).next().unwrap_or("");
    let mut parts = core.split('.');
    let num = |p: Option<&str>| -> Option<u32> { p.filter(|x| !x.is_empty() && x.len() <= 6).and_then(|x| x.parse().ok()) };
    let garbage = || VersionError::Garbage(s.to_string());
    let a = num(parts.next()).ok_or_else(garbage)?;
    let b_raw = parts.next();
    let (b, c) = match b_raw {
        Some("x") | Some("X") => {
            if parts.next().is_some() {
                return Err(garbage());
            }
            (u32::MAX, 0)
        }
        other => {
            let b = num(other).ok_or_else(garbage)?;
            let c = match parts.next() {
                None => 0,
                p => num(p).ok_or_else(garbage)?,
            };
            // A fourth field (2.6.20.4 stable releases) is accepted and ignored.
            if let Some(d) = parts.next() {
                num(Some(d)).ok_or_else(garbage)?;
            }
            if parts.next().is_some() {
                return Err(garbage());
            }
            (b, c)
        }
    };
    if a == 0 || a > 99 {
        return Err(garbage());
    }
    Ok(Version(a, b, c))
}

/// The generation a version string falls in.
pub fn resolve(s: &str) -> Result<&'static Generation, VersionError> {
    let v = parse_version(s)?;
    // The 2.4.x-ac trees kept the pre-2.4.8 buffer-cache code (Rik van Riel's VM).
    if v.0 == 2 && v.1 == 4 && s.contains("-ac") {
        return Ok(&GENERATIONS[0]);
    }
    // "6.x" and other "N.x" names: the generation whose range contains N.0.
    let probe = if v.1 == u32::MAX { Version(v.0, 0, 0) } else { v };
    for g in GENERATIONS {
        if g.first.cmp(&probe) != Ordering::Greater && probe.cmp(&g.last) != Ordering::Greater {
            return Ok(g);
        }
    }
    Err(VersionError::NotModelled(s.trim().to_string()))
}

impl Generation {
    /// The resolved policy pieces of this generation for the release string `kernel`.
    pub fn policy(&self) -> PolicyConfig {
        PolicyConfig {
            generation: self.name.to_string(),
            throttle: self.throttle,
            flusher: self.flusher,
            reclaim: self.reclaim,
            queue: self.queue,
            writeback_chunk: self.chunk,
            page_wake: default_page_wake(self.last),
            page_hash: default_page_hash(self.last),
            timer_wheel: default_timer_wheel(self.last),
            readahead: default_readahead(self.last),
            read_wait: default_read_wait(self.last),
            own: OwnPolicy {
                throttle: self.throttle,
                flusher: self.flusher,
                queue: self.queue,
            },
        }
    }

    /// [`Generation::policy`] with the pieces that change inside the generation set for the
    /// exact release (page wakeups, timer wheel, readahead, read waits: 2.6.7, 2.6.23, 4.8 and
    /// 4.10 fall inside generations).
    pub fn policy_for(&self, kernel: &str) -> PolicyConfig {
        let mut p = self.policy();
        if let Ok(v) = parse_version(kernel) {
            let v = if v.1 == u32::MAX { Version(v.0, 99, 0) } else { v };
            p.page_wake = default_page_wake(v);
            p.page_hash = default_page_hash(v);
            p.timer_wheel = default_timer_wheel(v);
            p.readahead = default_readahead(v);
            p.read_wait = default_read_wait(v);
        }
        p
    }
}

/// The page wait-queue hash of a (64-bit) release: `hash_64`'s bit-sparse multiplier until
/// Linus's fix of May 2016 (4.7; from memory, not checked in a tree), a full one since.
pub fn default_page_hash(v: Version) -> crate::config::PageHash {
    use crate::config::PageHash;
    if v < Version(4, 7, 0) {
        PageHash::SparseGoldenRatio
    } else {
        PageHash::GoldenRatio
    }
}

/// The page wait-queue wakeup of a release: hashed wake-all until 2.6.6, wli's filtered
/// wakeups with wake-one lock_page from 2.6.7 (merged 2004-05-14), the global table with
/// PG_waiters and lock hand-off from 4.10 (hand-off proper 5.9; from memory, not
/// checked in a tree).
pub fn default_page_wake(v: Version) -> crate::config::PageWake {
    use crate::config::PageWake;
    if v < Version(2, 6, 7) {
        PageWake::WakeAll
    } else if v < Version(4, 10, 0) {
        PageWake::FilteredWakeOne
    } else {
        PageWake::Handoff
    }
}

/// The timer wheel of a release: Thomas Gleixner's non-cascading wheel from 4.8.
pub fn default_timer_wheel(v: Version) -> crate::config::TimerWheel {
    use crate::config::TimerWheel;
    if v < Version(4, 8, 0) {
        TimerWheel::Cascading
    } else {
        TimerWheel::Rounded
    }
}

/// The readahead of a release: akpm's windows with the "adaptive lazy readahead" heuristics
/// (merged for 2.6.5-rc1, March 2004), until Steven Pratt's rewrite of the window sizing
/// (2.6.11, early 2005; from memory). The windows before the lazy heuristics (2.5.8–2.6.4),
/// the rewrite's rules (2.6.11–2.6.22) and 2.4's `generic_file_readahead` are not modelled:
/// those releases get on-demand readahead (2.6.23's), the rules nearest to what a sequential
/// reader sees.
pub fn default_readahead(v: Version) -> crate::config::Readahead {
    use crate::config::Readahead;
    if v >= Version(2, 6, 5) && v < Version(2, 6, 11) {
        Readahead::Windowed
    } else {
        Readahead::OnDemand
    }
}

/// How a read waits for a page under another read: `lock_page` until Mel Gorman's
/// `wait_on_page_locked` first (4.8; from memory, dated by a follow-up patch of August 2016).
pub fn default_read_wait(v: Version) -> crate::config::ReadWait {
    use crate::config::ReadWait;
    if v < Version(4, 8, 0) {
        ReadWait::LockPage
    } else {
        ReadWait::WaitLocked
    }
}

/// The `vm.dirty_*` defaults a release booted with: (dirty_background_ratio, dirty_ratio).
///
/// 40/10 from 2.5.37 to 2.6.21; cut to 10/5 for 2.6.22 ("we also cut the default dirty
/// percentage by a factor of four", Linus, Aug 2007; the 2.6.24 tree has 10/5); doubled to
/// 20/10 for 2.6.30 (from memory: the 2.6.29-era tree with `vm_dirty_bytes` already has 20).
///
/// The 2.5 series: 40/50 (with a 60 % sync ratio) until 2.5.33, then 10/40 ("reduce the
/// default dirty memory thresholds", 2.5.34; the sync ratio went in 2.5.37).
pub fn default_dirty_ratios(v: Version) -> (u32, u32) {
    if v < Version(2, 5, 34) {
        (40, 50)
    } else if v < Version(2, 6, 22) {
        (10, 40)
    } else if v < Version(2, 6, 30) {
        (5, 10)
    } else {
        (10, 20)
    }
}

/// The sysctl defaults of a release: today's, with that era's dirty ratios.
pub fn default_sysctl(kernel: &str) -> VmSysctl {
    let mut s = VmSysctl::default();
    if let Ok(v) = parse_version(kernel) {
        let v = if v.1 == u32::MAX { Version(v.0, 99, 0) } else { v };
        let (bg, dirty) = default_dirty_ratios(v);
        s.dirty_background_ratio = bg;
        s.dirty_ratio = dirty;
        s.bdflush = default_bdflush(v, kernel.contains("-ac"));
    }
    s
}

/// `bdf_prm` a 2.4 release booted with: {30, 64, 64, 256, 5·HZ, 30·HZ, 60, 0, 0} through
/// 2.4.12 (and in the -ac trees), {40, 0, 0, 0, 5·HZ, 30·HZ, 60, 0, 0} from 2.4.13 (checked in
/// the v2.4.7/9/12/13/15 trees). Jiffies at HZ = 100, as on i386.
pub fn default_bdflush(v: Version, ac: bool) -> crate::config::Bdflush {
    if ac || v < Version(2, 4, 13) {
        crate::config::Bdflush::V247
    } else {
        crate::config::Bdflush::V2417
    }
}

/// How long a task that keeps asking for the CPU runs before a waiting one of equal standing
/// takes over ([`crate::kernel::cpu::CpuPool`]), and whether that is noticed only at a
/// scheduler tick.
///
/// - 2.4: `NICE_TO_TICKS(0)`, 6 ticks of HZ = 100 (60 ms); the O(1) scheduler (2.6.0–2.6.22):
///   a nice-0 task's 100 ms `DEF_TIMESLICE`, preempted only for a better dynamic priority.
/// - CFS (2.6.23–6.5): 0 — `check_preempt_wakeup` preempts the running task for a woken one
///   that has run less, which the run queue's least-vruntime-first order at the end of each
///   burst stands for.
/// - EEVDF (6.6+): `pick_eevdf` keeps the running task while its slice is protected
///   (`RUN_TO_PARITY`: from its pick until it has run its slice, `sysctl_sched_base_slice`,
///   0.75 ms scaled by 1 + log2 of the CPUs up to 8); a wakeup with the same slice does not
///   end the protection (only a shorter slice does, `PREEMPT_SHORT`), and the reschedule
///   that ends it comes from `update_curr` at the next tick. A task woken on a CPU kept busy
///   waits for that tick: up to 4 ms at HZ = 250, as traced on 6.18 (a loop reader beside two
///   CPU-bound processes ran at the CPU's next tick, 3–4 ms after its completion's wakeup).
pub fn sched_slice(kernel: &str, ncpus: u32) -> SchedSlice {
    const MS: crate::Ns = 1_000_000;
    let slice = |ns, at_tick| SchedSlice { ns, at_tick };
    match parse_version(kernel) {
        Ok(v) if v < Version(2, 6, 0) => slice(60 * MS, false),
        Ok(v) if v < Version(2, 6, 23) => slice(100 * MS, false),
        Ok(v) if v < Version(6, 6, 0) => slice(0, false),
        _ => {
            let factor = 1 + u64::from(ncpus.clamp(1, 8).ilog2());
            slice(750_000 * factor, true)
        }
    }
}

/// A CPU scheduler's time slice as [`crate::kernel::cpu::CpuPool`] applies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedSlice {
    /// ns; 0: the CPU goes to the first waiter at the end of every burst.
    pub ns: crate::Ns,
    /// The slice's end takes effect at the first scheduler tick after it.
    pub at_tick: bool,
}

/// The default elevator of a release's rotational disks where it is not today's: the 2.5
/// series runs `deadline-2002`. (deadline-iosched.c was merged in 2.5.39; Morton's 2.5.38 had
/// the patch applied, and the model uses it for all of 2.5 — the 2.5.0–2.5.38 `elevator_linus`
/// and the 2.5.57 rbtree rewrite are not modelled.) CFQ became the default in 2.6.18:
/// `cfq-2.6.20` up to 2.6.21, `cfq-2.6.22` (the service-tree rework) from 2.6.22 to 2.6.31.
/// Not modelled, so left at the device's default: the anticipatory scheduler of 2.6.0–2.6.17
/// and the CFQ of 2.6.32+ (workload service trees, `low_latency`). `None` keeps the device's
/// default.
pub fn default_elevator(kernel: &str) -> Option<SchedulerKind> {
    match parse_version(kernel) {
        Ok(Version(2, 5, _)) => Some(SchedulerKind::DEADLINE_2002),
        Ok(Version(2, 6, 18..=21)) => Some(SchedulerKind::CFQ_2620),
        Ok(Version(2, 6, 22..=31)) => Some(SchedulerKind::CFQ_2622),
        _ => None,
    }
}

/// The NFS client's COMMIT rule of a release: from 2.6.35 (`nfs_commit_unstable_pages`) through
/// the 3.x series, background writeback commits only once more than half of an inode's
/// requests are unstable; the model's 6.x generation (4.0 on) commits per writeback pass, and
/// so do the releases before 2.6.35 (`nfs_write_inode` committed on every call).
pub fn default_nfs_commit(kernel: &str) -> NfsCommit {
    match parse_version(kernel) {
        Ok(v) if v >= Version(2, 6, 35) && v < Version(4, 0, 0) => NfsCommit::Half,
        _ => NfsCommit::Pass,
    }
}

/// Fill in the kernel's NFS commit rule where a device does not set its own.
pub fn apply_nfs_commit(devices: &mut [crate::config::DeviceConfig], kernel: &str) {
    for d in devices {
        if let crate::config::DeviceModelConfig::Nfs(p) = &mut d.model {
            p.commit.get_or_insert(default_nfs_commit(kernel));
        }
    }
}

/// `BLKDEV_MAX_RQ`: request slots per direction of a legacy (pre-blk-mq) queue.
pub const LEGACY_NR_REQUESTS: u32 = 128;
/// `BLK_DEF_MAX_SECTORS` (1024 sectors) of the legacy era, in KiB.
pub const LEGACY_MAX_SECTORS_KB: u32 = 512;

/// Queue knobs a legacy-era kernel set at probe time: 128 requests per direction (per member
/// of a striped array), 512 KiB requests, 128 KiB readahead (`VM_MAX_READAHEAD`), no blk-wbt
/// (4.10+).
///
/// The request size never exceeds what the driver allows (usb-storage's 120 KiB, md's chunk,
/// NFS's wsize), and an NFS mount has no request queue at all, so it keeps its own defaults.
pub fn legacy_queue(q: &mut QueueConfig, model: &crate::config::DeviceModelConfig) {
    if matches!(model, crate::config::DeviceModelConfig::Nfs(_)) {
        return;
    }
    q.nr_requests = match model {
        // md/dm striping is bio-based: each member disk has its own queue of 128 requests.
        crate::config::DeviceModelConfig::Raid0(p) => LEGACY_NR_REQUESTS * p.members.max(1),
        _ => LEGACY_NR_REQUESTS,
    };
    q.max_sectors_kb = model
        .max_hw_sectors_kb()
        .map_or(LEGACY_MAX_SECTORS_KB, |m| m.min(LEGACY_MAX_SECTORS_KB));
    q.read_ahead_kb = 128;
    q.wbt_lat_usec = 0;
}

/// Switch a scenario built in code to `kernel`: its generation's policies, that release's
/// default dirty ratios and, for legacy-queue eras, the probe-time queue knobs. (Scenario files
/// do the same while parsing, keeping what the file sets explicitly.)
pub fn set_kernel(sc: &mut Scenario, kernel: &str) -> Result<(), VersionError> {
    let g = resolve(kernel)?;
    sc.kernel = kernel.to_string();
    sc.policy = g.policy_for(kernel);
    let d = default_sysctl(kernel);
    sc.sysctl.dirty_ratio = d.dirty_ratio;
    sc.sysctl.dirty_background_ratio = d.dirty_background_ratio;
    sc.sysctl.bdflush = d.bdflush;
    if g.queue.is_legacy() {
        for dev in &mut sc.devices {
            legacy_queue(&mut dev.queue, &dev.model);
        }
    }
    for d in &mut sc.devices {
        if let crate::config::DeviceModelConfig::Nfs(p) = &mut d.model {
            p.commit = Some(default_nfs_commit(kernel));
        }
    }
    if let Some(k) = default_elevator(kernel) {
        for dev in &mut sc.devices {
            if dev.queue.scheduler != SchedulerKind::NONE {
                dev.queue.select_elevator(k);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_with_suffixes_and_generations_cover_them() {
        assert_eq!(parse_version("2.6.20"), Ok(Version(2, 6, 20)));
        assert_eq!(parse_version("2.6.38-rc7"), Ok(Version(2, 6, 38)));
        assert_eq!(parse_version("3.2"), Ok(Version(3, 2, 0)));
        assert_eq!(parse_version("v4.19"), Ok(Version(4, 19, 0)));
        assert_eq!(parse_version("6.18.2"), Ok(Version(6, 18, 2)));
        assert_eq!(parse_version("2.6.20.4"), Ok(Version(2, 6, 20)));
        assert_eq!(parse_version("6.x"), Ok(Version(6, u32::MAX, 0)));
        for bad in ["", "six", "6.", "2..6", "2.6.x.1", "x.6", "1.2.3.4.5", "0.1"] {
            assert!(matches!(parse_version(bad), Err(VersionError::Garbage(_))), "{bad}");
        }
        let name = |s: &str| resolve(s).map(|g| g.name);
        assert_eq!(name("2.6.0"), Ok("2.6.20"));
        assert_eq!(name("2.6.23"), Ok("2.6.20"));
        assert_eq!(name("2.6.24"), Ok("2.6.24"));
        assert_eq!(name("2.6.31"), Ok("2.6.24"));
        assert_eq!(name("2.6.32"), Ok("2.6.32"));
        assert_eq!(name("2.6.38-rc7"), Ok("2.6.38"));
        assert_eq!(name("3.0"), Ok("2.6.38"));
        assert_eq!(name("3.1.10"), Ok("2.6.38"));
        assert_eq!(name("3.2"), Ok("3.2"));
        assert_eq!(name("3.19"), Ok("3.2"));
        assert_eq!(name("4.19"), Ok("6.x"));
        assert_eq!(name("6.x"), Ok("6.x"));
        assert_eq!(name("6.18.2"), Ok("6.x"));
        assert_eq!(name("2.4.17"), Ok("2.4.17"));
        assert_eq!(name("2.4.8"), Ok("2.4.17"));
        assert_eq!(name("2.4.18-pre2"), Ok("2.4.17"));
        assert_eq!(name("2.4.7"), Ok("2.4.7"));
        assert_eq!(name("2.4.0"), Ok("2.4.7"));
        assert_eq!(name("2.4.13-ac7"), Ok("2.4.7"));
        assert!(matches!(resolve("2.2.20"), Err(VersionError::NotModelled(_))));
        assert!(matches!(resolve("7.0"), Err(VersionError::NotModelled(_))));
        // Every generation's own name resolves to itself.
        for g in GENERATIONS {
            assert_eq!(resolve(g.name).map(|x| x.name), Ok(g.name));
        }
    }

    #[test]
    fn era_2_5() {
        let name = |s: &str| resolve(s).map(|g| g.name);
        assert_eq!(name("2.5.38"), Ok("2.5.38"));
        assert_eq!(name("2.5.1"), Ok("2.5.38"));
        assert_eq!(name("2.5.75"), Ok("2.5.38"));
        assert_eq!(name("2.6.0"), Ok("2.6.20"));
        let g = resolve("2.5.38").unwrap();
        assert_eq!(
            (g.throttle, g.flusher, g.reclaim, g.queue),
            (
                ThrottleKind::Global,
                FlusherKind::Pdflush,
                ReclaimKind::Pageout,
                QueueEra::Legacy(LegacyLists::V26)
            )
        );
        assert_eq!(default_dirty_ratios(Version(2, 5, 38)), (10, 40));
        assert_eq!(default_dirty_ratios(Version(2, 5, 20)), (40, 50));
        assert_eq!(default_elevator("2.5.38"), Some(SchedulerKind::DEADLINE_2002));
        assert_eq!(default_elevator("2.6.17"), None);
        assert_eq!(default_elevator("2.6.20"), Some(SchedulerKind::CFQ_2620));
        assert_eq!(default_elevator("2.6.23"), Some(SchedulerKind::CFQ_2622));
        assert_eq!(default_elevator("2.6.31"), Some(SchedulerKind::CFQ_2622));
        assert_eq!(default_elevator("2.6.32"), None);
        assert_eq!(default_elevator("6.x"), None);
        let model = crate::config::DeviceModelConfig::Hdd(crate::config::HddParams::ide_2002());
        let mut sc = Scenario::one_device("hda", model, 512 << 20, 1, 1_000_000_000);
        set_kernel(&mut sc, "2.5.38").unwrap();
        let q = &sc.devices[0].queue;
        assert_eq!(
            (q.scheduler, q.nr_requests, q.iosched.fifo_batch, q.iosched.seek_cost),
            (SchedulerKind::DEADLINE_2002, 128, 64, 16)
        );
        assert_eq!((sc.sysctl.dirty_background_ratio, sc.sysctl.dirty_ratio), (10, 40));
    }

    #[test]
    fn ratio_history() {
        assert_eq!(default_dirty_ratios(Version(2, 6, 20)), (10, 40));
        assert_eq!(default_dirty_ratios(Version(2, 6, 24)), (5, 10));
        assert_eq!(default_dirty_ratios(Version(2, 6, 38)), (10, 20));
        let s = default_sysctl("6.x");
        assert_eq!((s.dirty_background_ratio, s.dirty_ratio), (10, 20));
        let s = default_sysctl("2.6.20");
        assert_eq!((s.dirty_background_ratio, s.dirty_ratio), (10, 40));
    }
}
