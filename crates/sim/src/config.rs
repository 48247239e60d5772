//! The resolved scenario: every knob of the simulated machine with its value made explicit.
//!
//! The scenario crate parses TOML into this; `summary.json` echoes it back (gem5's
//! `config.ini` habit), so a run documents exactly what it simulated. Knob names follow the
//! kernel's sysctl and sysfs names. Sizes are bytes, times nanoseconds unless a field says
//! otherwise (`*_centisecs`, `*_ms`, `*_usec` keep the kernel's own units).

use crate::units::{GIB, MIB};
use crate::Ns;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    /// A short name for tables and file names.
    pub name: String,
    /// The kernel release simulated, as written ("6.x", "2.6.20", "3.2").
    pub kernel: String,
    /// The policies that release runs (from its generation, then the `[policy]` overrides).
    pub policy: PolicyConfig,
    /// Simulated time to run, ns.
    pub duration: Ns,
    pub seed: u64,
    /// CONFIG_HZ of the simulated kernel.
    pub hz: u64,
    pub machine: MachineConfig,
    pub sysctl: VmSysctl,
    pub devices: Vec<DeviceConfig>,
    pub tasks: Vec<TaskConfig>,
    pub trace: TraceConfig,
}

#[derive(Clone, Debug, Serialize)]
pub struct MachineConfig {
    /// Installed RAM, bytes.
    pub memory: u64,
    /// Online CPUs.
    pub cpus: u32,
    /// Bandwidth of a page-cache copy (`copy_from_user`/`copy_to_user`), bytes per second.
    pub memory_bandwidth: u64,
    /// Memory that is neither page cache nor free: kernel text and slab, anonymous memory of
    /// the tasks. Not dirtyable, never reclaimed in the model.
    pub unreclaimable: u64,
    /// ZONE_HIGHMEM of a 32-bit (i386) kernel, bytes: memory above the 896 MiB of lowmem.
    /// 0 = a 64-bit machine (one zone). The `unreclaimable` memory is all lowmem.
    pub highmem: u64,
    /// Fixed cost of one read()/write() system call on top of the copy, ns.
    pub syscall_overhead: Ns,
    /// CPU cost of a wakeup (`try_to_wake_up`: run-queue lock, enqueue, IPI), ns. Today ~1 µs;
    /// a 2004 SMP (336 MHz UltraSPARC) an order of magnitude more.
    pub wakeup_cost: Ns,
    /// CPU cost of the context switch into the woken task (`schedule`, `finish_task_switch`), ns.
    pub context_switch_cost: Ns,
    /// A woken page waiter that finds its page still busy: re-test, `finish_wait`,
    /// `prepare_to_wait` and the `io_schedule` back out, ns (on top of the wakeup and switch).
    pub wait_recheck_cost: Ns,
    /// Buckets of the hashed page wait table; 0 = the era's rule (per zone
    /// clamp(pow2(pages/256), 4, 4096) before 4.10, 256 global from 4.10).
    pub page_wait_buckets: u32,
}

/// The dirty-throttling policy (`balance_dirty_pages` and friends) of a generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThrottleKind {
    /// 2.6.0–2.6.23: one global threshold; the dirtier writes back `write_chunk` pages itself
    /// and sleeps in 100 ms congestion waits.
    Global,
    /// 2.6.24–3.1: per-bdi thresholds from floating proportions, the task limit, I/O-issuing
    /// dirtiers.
    PerBdi,
    /// 3.2: the first IO-less, bandwidth-based pause controller, as merged.
    IoLess,
    /// 6.x (Linux 6.18).
    Modern,
    /// 2.4 (`fs/buffer.c`): `balance_dirty_state`/`balance_dirty` over the bdflush
    /// parameters; the variant (2.4.17 or 2.4.7/-ac) follows the generation.
    Bdflush,
}

/// Who writes back dirty pages in the background.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlusherKind {
    /// 2.6.0–2.6.31: a pool of 2–8 pdflush threads, background_writeout and wb_kupdate.
    Pdflush,
    /// 2.6.32–3.x: one flusher thread per bdi (`flush-MAJ:MIN`), work items.
    PerBdi,
    /// 6.x: per-wb work on workqueues (the same structure, 6.18 details).
    Modern,
    /// 2.4: the bdflush daemon (woken by `balance_dirty`) and kupdate (`interval`,
    /// `age_buffer`), `fs/buffer.c`.
    Bdflush,
}

/// How page reclaim treats dirty and writeback pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
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

/// The block layer's request allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueEra {
    /// Pre-blk-mq request lists: `nr_requests` slots per direction, congestion on/off
    /// thresholds, `get_request_wait` with batching, no blk-wbt.
    Legacy,
    /// blk-mq tags, blk-wbt.
    BlkMq,
}

/// How much a flusher writes of one inode before moving on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WritebackChunk {
    /// `MAX_WRITEBACK_PAGES` = 1024 pages (2.6.x–3.0).
    Fixed,
    /// About half a second of write bandwidth, at least 4 MiB (3.1+).
    Bandwidth,
}

/// Page wait-queue wakeup policy (`unlock_page`, `end_page_writeback` → the hashed bucket).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PageWake {
    /// 2.5.x–2.6.6: `wake_up_all(bucket)`: every waiter of every page in the bucket wakes.
    WakeAll,
    /// wli's first posting (2004): only waiters keyed on this page wake, lock waiters too.
    Filtered,
    /// 2.6.7–4.9: filtered by (page, bit clear); one exclusive `lock_page` waiter per unlock.
    #[serde(rename = "filtered+wake-one")]
    FilteredWakeOne,
    /// 4.10+: 256 global buckets, PG_waiters, FIFO, lock hand-off to the first lock waiter.
    Handoff,
}

impl PageWake {
    pub fn name(&self) -> &'static str {
        match self {
            PageWake::WakeAll => "wake-all",
            PageWake::Filtered => "filtered",
            PageWake::FilteredWakeOne => "filtered+wake-one",
            PageWake::Handoff => "handoff",
        }
    }
}

impl ThrottleKind {
    pub fn name(&self) -> &'static str {
        match self {
            ThrottleKind::Global => "global",
            ThrottleKind::PerBdi => "per-bdi",
            ThrottleKind::IoLess => "io-less",
            ThrottleKind::Modern => "modern",
            ThrottleKind::Bdflush => "bdflush",
        }
    }
}

impl FlusherKind {
    pub fn name(&self) -> &'static str {
        match self {
            FlusherKind::Pdflush => "pdflush",
            FlusherKind::PerBdi => "per-bdi",
            FlusherKind::Modern => "modern",
            FlusherKind::Bdflush => "bdflush",
        }
    }
}

impl ReclaimKind {
    pub fn name(&self) -> &'static str {
        match self {
            ReclaimKind::Pageout => "pageout",
            ReclaimKind::KswapdPageout => "kswapd-pageout",
            ReclaimKind::Modern => "modern",
        }
    }
}

impl QueueEra {
    pub fn name(&self) -> &'static str {
        match self {
            QueueEra::Legacy => "legacy",
            QueueEra::BlkMq => "blk-mq",
        }
    }
}

impl WritebackChunk {
    pub fn name(&self) -> &'static str {
        match self {
            WritebackChunk::Fixed => "fixed",
            WritebackChunk::Bandwidth => "bandwidth",
        }
    }
}

/// The resolved policies: the generation's choices, each overridable in `[policy]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
        }
    }
}

/// `/proc/sys/vm` knobs that the model reads.
#[derive(Clone, Debug, Serialize)]
pub struct VmSysctl {
    pub dirty_ratio: u32,
    pub dirty_bytes: u64,
    pub dirty_background_ratio: u32,
    pub dirty_background_bytes: u64,
    pub dirty_expire_centisecs: u32,
    pub dirty_writeback_centisecs: u32,
    /// 0 = computed as the kernel does at boot (`sqrt(lowmem_kbytes * 16)`, clamped).
    pub min_free_kbytes: u64,
    pub watermark_scale_factor: u32,
    /// 2.4's `/proc/sys/vm/bdflush` (used by the 2.4 generations only).
    pub bdflush: Bdflush,
}

/// `union bdflush_param` of 2.4 `fs/buffer.c`: the nine integers of `/proc/sys/vm/bdflush` in
/// their order; the slots the model reads are named. Defaults: 2.4.13–2.4.17's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Bdflush {
    /// Percent of `tot` dirty (2.4.17: dirty + locked) that starts writeout.
    pub nfract: u32,
    /// Buffers per `flush_dirty_buffers` call (2.4.0–2.4.7; unused from 2.4.8).
    pub ndirty: u32,
    /// Slots 2 and 3 (`nrefill`, `dummy3`): not used by the model.
    pub nrefill: u32,
    pub dummy3: u32,
    /// kupdate period, jiffies (0 stops kupdate).
    pub interval: u32,
    /// Age at which kupdate writes a dirty buffer, jiffies.
    pub age_buffer: u32,
    /// Percent of `tot` above which the writer also waits for I/O (2.4.17) or flushes
    /// itself (2.4.7).
    pub nfract_sync: u32,
    /// Slots 7 and 8: unused in mainline.
    pub dummy7: u32,
    pub dummy8: u32,
}

impl Bdflush {
    /// 2.4.13–2.4.17 mainline: {40, 0, 0, 0, 5·HZ, 30·HZ, 60, 0, 0} at HZ = 100.
    pub const V2417: Bdflush = Bdflush {
        nfract: 40,
        ndirty: 0,
        nrefill: 0,
        dummy3: 0,
        interval: 500,
        age_buffer: 3000,
        nfract_sync: 60,
        dummy7: 0,
        dummy8: 0,
    };
    /// 2.4.0–2.4.12: {30, 64, 64, 256, 5·HZ, 30·HZ, 60, 0, 0}.
    pub const V247: Bdflush = Bdflush {
        nfract: 30,
        ndirty: 64,
        nrefill: 64,
        dummy3: 256,
        interval: 500,
        age_buffer: 3000,
        nfract_sync: 60,
        dummy7: 0,
        dummy8: 0,
    };

    pub fn to_array(self) -> [u32; 9] {
        [
            self.nfract,
            self.ndirty,
            self.nrefill,
            self.dummy3,
            self.interval,
            self.age_buffer,
            self.nfract_sync,
            self.dummy7,
            self.dummy8,
        ]
    }

    pub fn from_array(a: [u32; 9]) -> Self {
        Bdflush {
            nfract: a[0],
            ndirty: a[1],
            nrefill: a[2],
            dummy3: a[3],
            interval: a[4],
            age_buffer: a[5],
            nfract_sync: a[6],
            dummy7: a[7],
            dummy8: a[8],
        }
    }
}

impl Default for Bdflush {
    fn default() -> Self {
        Bdflush::V2417
    }
}

impl Default for VmSysctl {
    fn default() -> Self {
        VmSysctl {
            dirty_ratio: 20,
            dirty_bytes: 0,
            dirty_background_ratio: 10,
            dirty_background_bytes: 0,
            dirty_expire_centisecs: 3000,
            dirty_writeback_centisecs: 500,
            min_free_kbytes: 0,
            watermark_scale_factor: 10,
            bdflush: Bdflush::default(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct DeviceConfig {
    /// Block device name, e.g. "sda".
    pub name: String,
    /// Device number shown in traces ("8:0").
    pub major: u32,
    pub minor: u32,
    /// Capacity, bytes.
    pub size: u64,
    pub model: DeviceModelConfig,
    pub queue: QueueConfig,
    pub bdi: BdiConfig,
    /// File system the device carries (`ext4`, `xfs`, `btrfs`): mkfs'd by `wblab measure`;
    /// the simulator's allocator does not depend on it yet.
    pub fs: Option<String>,
    /// blk-throttle limits on the device (cgroup v2 `io.max`, v1 `blkio.throttle.*`).
    pub throttle: BlkThrottleConfig,
}

/// Bandwidth and IOPS limits of blk-throttle; `None` = unlimited.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BlkThrottleConfig {
    pub read_bps: Option<u64>,
    pub write_bps: Option<u64>,
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
}

impl BlkThrottleConfig {
    pub fn is_limited(&self) -> bool {
        self.read_bps.is_some() || self.write_bps.is_some() || self.read_iops.is_some() || self.write_iops.is_some()
    }
}

/// A loop block device over a file on a faster disk, as `losetup --direct-io=on` makes it
/// (`drivers/loopdev.rs`). Defaults: a 2 GiB image file on this lab's root disk `vda`, a
/// host-cached virtio disk (`realkernel.md` §3: fio O_DIRECT, queue depth 32, 1 MiB sequential
/// writes 944 MiB/s and reads 1065 MiB/s (medians of 3), 4 KiB reads at queue depth 1 in 21 µs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoopParams {
    /// Bandwidth of the backing store for reads and writes, bytes/s.
    pub backing_read_bandwidth: u64,
    pub backing_write_bandwidth: u64,
    /// Latency of one backing I/O on top of its transfer, ns.
    pub backing_latency: Ns,
    /// Tags of the loop queue (`hw_queue_depth`): requests the loop driver works on at once.
    pub queue_depth: u32,
}

impl Default for LoopParams {
    fn default() -> Self {
        LoopParams {
            backing_read_bandwidth: 1065 * MIB,
            backing_write_bandwidth: 944 * MIB,
            backing_latency: 20_000,
            queue_depth: 128,
        }
    }
}

/// A 2011-era USB 2.0 flash key behind `usb-storage` (`drivers/usb.rs`): the "UKEY" of Wu's
/// 2011 tests. Defaults: a cheap 8 GB key of the time, ~9 MB/s sequential writes and ~25 MB/s
/// reads (flash and the USB 2.0 bulk pipe), 4 MiB erase blocks of which the controller keeps 2
/// open (flashbench surveys of 2011 keys: 4 MiB allocation units, 1–5 open), ~1 ms per command
/// (bulk-only transport: command block, data, status), one command at a time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UsbParams {
    /// Sequential read rate, bytes/s.
    pub read_bandwidth: u64,
    /// Rate the key programs flash, bytes/s: the sequential write rate, and the speed of the
    /// copies that erase-block garbage collection makes.
    pub write_bandwidth: u64,
    /// Fixed cost of each command on top of its transfer, ns.
    pub command_overhead: Ns,
    /// Erase block (allocation unit), bytes.
    pub erase_block: u64,
    /// Erase blocks the controller keeps open for appending at once.
    pub open_blocks: u32,
    /// Commands the device takes at once (`usb-storage`: `can_queue` = 1).
    pub queue_depth: u32,
}

impl Default for UsbParams {
    fn default() -> Self {
        UsbParams {
            read_bandwidth: 25_000_000,
            write_bandwidth: 9_000_000,
            command_overhead: 1_000_000,
            erase_block: 4 * MIB,
            open_blocks: 2,
            queue_depth: 1,
        }
    }
}

/// An NFS mount seen as a "network block device" (`drivers/nfs.rs`): WRITE/READ RPCs over a
/// link to a server that takes UNSTABLE writes into its page cache and makes them stable on
/// COMMIT. Defaults: gigabit Ethernet (~117 MB/s of RPC payload, 0.2 ms RTT), a server with one
/// 100 MB/s disk and ~512 MiB of dirty page cache, `wsize` = 1 MiB (the Linux server's
/// maximum), 16 RPC slots (`RPC_DEF_SLOT_TABLE`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NfsParams {
    /// Largest WRITE (and READ) RPC, bytes; the queue's `max_sectors_kb`.
    pub wsize: u64,
    /// Payload bandwidth of the network link, each direction, bytes/s.
    pub link_bandwidth: u64,
    /// Network round-trip time, ns.
    pub rtt: Ns,
    /// Rate the server's disk writes its dirty page cache, bytes/s.
    pub server_write_bandwidth: u64,
    /// Rate the server's disk reads, bytes/s.
    pub server_read_bandwidth: u64,
    /// Unstable (uncommitted) data the server's page cache holds before WRITE replies wait
    /// for its disk, bytes.
    pub server_cache: u64,
    /// The client sends a COMMIT after this many bytes of UNSTABLE replies (and whenever no
    /// WRITE is left in flight), bytes.
    pub commit_bytes: u64,
    /// RPCs in flight at once (RPC slots).
    pub queue_depth: u32,
    /// When the client sends a COMMIT; `None` until the kernel generation fills it in
    /// (see [`NfsCommit`]).
    pub commit: Option<NfsCommit>,
}

/// The NFS client's COMMIT rule for background (`WB_SYNC_NONE`) writeback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NfsCommit {
    /// 4.x–6.x: a COMMIT per writeback pass (`commit_bytes`), and whenever no WRITE is left
    /// in flight.
    Pass,
    /// 2.6.35–3.x (`nfs_commit_unstable_pages`): commit only once more than half of the
    /// inode's requests (dirty, under writeback, unstable) await a COMMIT.
    Half,
}

impl Default for NfsParams {
    fn default() -> Self {
        NfsParams {
            wsize: MIB,
            link_bandwidth: 117_000_000,
            rtt: 200_000,
            server_write_bandwidth: 100_000_000,
            server_read_bandwidth: 100_000_000,
            server_cache: 512 * MIB,
            commit_bytes: 48 * MIB,
            queue_depth: 16,
            commit: None,
        }
    }
}

/// md RAID0 (`drivers/raid0.rs`): `members` devices of one model, striped in `chunk`s.
/// Defaults: two default SSDs, mdadm's default 512 KiB chunk.
#[derive(Clone, Debug, Serialize)]
pub struct Raid0Params {
    /// Member devices (`raid_disks`).
    pub members: u32,
    /// Chunk size, bytes (`chunk_sectors` × 512).
    pub chunk: u64,
    /// The model of every member, with its parameters.
    pub member: Box<DeviceModelConfig>,
}

impl Default for Raid0Params {
    fn default() -> Self {
        Raid0Params {
            members: 2,
            chunk: 512 * 1024,
            member: Box::new(DeviceModelConfig::Ssd(SsdParams::default())),
        }
    }
}

/// RAID5 (`drivers/raid5.rs`): `members` devices of one model, rotating parity.
/// Defaults: four default HDDs, 64 KiB chunks, a 256-stripe cache, a 3 ms gathering delay.
#[derive(Clone, Debug, Serialize)]
pub struct Raid5Params {
    /// Member devices, at least 3.
    pub members: u32,
    /// Stripe unit, bytes.
    pub chunk: u64,
    /// Stripes the cache holds while gathering writes (2.4 md: `NR_STRIPES` = 256).
    pub stripe_cache: u32,
    /// How long a partly written stripe waits for the rest of its data, ns.
    pub stripe_delay: Ns,
    /// The model of every member, with its parameters.
    pub member: Box<DeviceModelConfig>,
}

impl Default for Raid5Params {
    fn default() -> Self {
        Raid5Params {
            members: 4,
            chunk: 64 * 1024,
            stripe_cache: 256,
            stripe_delay: 3_000_000,
            member: Box::new(DeviceModelConfig::Hdd(HddParams::default())),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DeviceModelConfig {
    Hdd(HddParams),
    Ssd(SsdParams),
    Loop(LoopParams),
    Usb(UsbParams),
    Nfs(NfsParams),
    Raid0(Raid0Params),
    Raid5(Raid5Params),
}

impl DeviceModelConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceModelConfig::Hdd(_) => "hdd",
            DeviceModelConfig::Ssd(_) => "ssd",
            DeviceModelConfig::Loop(_) => "loop",
            DeviceModelConfig::Usb(_) => "usb",
            DeviceModelConfig::Nfs(_) => "nfs",
            DeviceModelConfig::Raid0(_) => "raid0",
            DeviceModelConfig::Raid5(_) => "raid5",
        }
    }

    /// Requests the device takes at once (tags; for raid0 the members' sum).
    pub fn queue_depth(&self) -> u32 {
        match self {
            DeviceModelConfig::Hdd(p) => p.queue_depth,
            DeviceModelConfig::Ssd(p) => p.queue_depth,
            DeviceModelConfig::Loop(p) => p.queue_depth,
            DeviceModelConfig::Usb(p) => p.queue_depth,
            DeviceModelConfig::Nfs(p) => p.queue_depth,
            DeviceModelConfig::Raid0(p) => p.members.saturating_mul(p.member.queue_depth()),
            DeviceModelConfig::Raid5(p) => p.members.saturating_mul(p.member.queue_depth()),
        }
    }

    /// Whether the device has a volatile write cache ("write back" is possible): a loop's
    /// backing file can always fsync, an NFS server's page cache holds UNSTABLE writes until a
    /// COMMIT, md inherits its members'.
    pub fn has_write_cache(&self) -> bool {
        match self {
            DeviceModelConfig::Hdd(p) => p.write_cache,
            DeviceModelConfig::Ssd(p) => p.write_cache,
            DeviceModelConfig::Loop(_) | DeviceModelConfig::Nfs(_) => true,
            DeviceModelConfig::Usb(_) => false,
            DeviceModelConfig::Raid0(p) => p.member.has_write_cache(),
            DeviceModelConfig::Raid5(p) => p.member.has_write_cache(),
        }
    }

    /// `max_hw_sectors_kb` where the driver sets one below the block layer's cap: usb-storage's
    /// 120 KiB, the NFS `wsize`, md raid0's chunk (or its members' limit if lower).
    pub fn max_hw_sectors_kb(&self) -> Option<u32> {
        let kb = |bytes: u64| (bytes / 1024).min(u64::from(u32::MAX)) as u32;
        match self {
            DeviceModelConfig::Usb(_) => Some(USB_MAX_SECTORS_KB),
            DeviceModelConfig::Nfs(p) => Some(kb(p.wsize)),
            DeviceModelConfig::Raid0(p) => {
                let chunk = kb(p.chunk);
                Some(p.member.max_hw_sectors_kb().map_or(chunk, |m| m.min(chunk)))
            }
            _ => None,
        }
    }
}

/// Default capacity of a device of `model`: a 4 TB disk, a 1 TB SSD, a 2 GiB loop image, an
/// 8 GB USB key, a 1 TB NFS export, and `members` × the member's default for raid0.
pub fn default_size(model: &DeviceModelConfig) -> u64 {
    match model {
        DeviceModelConfig::Hdd(_) => 4_000_000_000_000,
        DeviceModelConfig::Ssd(_) => 1_000_000_000_000,
        DeviceModelConfig::Loop(_) => 2 * GIB,
        DeviceModelConfig::Usb(_) => 8_000_000_000,
        DeviceModelConfig::Nfs(_) => 1_000_000_000_000,
        DeviceModelConfig::Raid0(p) => default_size(&p.member).saturating_mul(u64::from(p.members)),
        DeviceModelConfig::Raid5(p) => default_size(&p.member).saturating_mul(u64::from(p.members.max(3) - 1)),
    }
}

/// A rotating disk. Defaults: a 7200 rpm 3.5" SATA drive of today (4 TB class).
#[derive(Clone, Debug, Serialize)]
pub struct HddParams {
    pub rpm: u32,
    /// Seek time for a track-to-track move, ns.
    pub seek_track_to_track: Ns,
    /// Average seek (one third of full stroke), ns.
    pub seek_average: Ns,
    /// Full-stroke seek, ns.
    pub seek_full_stroke: Ns,
    /// Media transfer rate at the outer edge (LBA 0), bytes/s.
    pub transfer_outer: u64,
    /// Media transfer rate at the inner edge (last LBA), bytes/s.
    pub transfer_inner: u64,
    /// Interface (SATA) rate, bytes/s: the speed of a write-cache hit.
    pub interface_rate: u64,
    /// Native command queue depth (1 = no NCQ).
    pub queue_depth: u32,
    /// Volatile write cache enabled (`write_cache` = "write back").
    pub write_cache: bool,
    /// Write cache size, bytes.
    pub cache_size: u64,
    /// Command overhead per request, ns.
    pub command_overhead: Ns,
    /// What the firmware does with reads while writes wait for cache room.
    pub destage: DestagePolicy,
}

/// How a drive with a full write cache shares the head between destaging and queued reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DestagePolicy {
    /// Up to 4 MiB of destage between two reads (today's drives: reads are not starved).
    #[default]
    Interleave,
    /// Destage as long as any write waits for room; a read is served only when no write
    /// waits, or when it has aged out of NCQ (2 s). The behaviour CFQ's 2.6.22 rules (no
    /// async dispatch while a read is in flight, at most `quantum` async requests in the
    /// drive) were written against.
    Drain,
}

impl HddParams {
    /// A 2002 7200 rpm IDE (ATA-100) disk, the class of Morton's "horror test" machine: 40 MB/s
    /// at the outer edge falling to 24 MB/s inside (the 30–40 MB/s of the time's 40–80 GB
    /// drives), 8.5 ms average / 1 ms track-to-track / 15 ms full-stroke seeks, UDMA100,
    /// a 2 MiB buffer with write caching on (the IDE default), ~0.3 ms per command (taskfile
    /// setup and the interrupt), and no command queueing: `queue_depth` 1, the drive sees one
    /// request at a time (IDE TCQ was experimental and off).
    pub fn ide_2002() -> Self {
        HddParams {
            rpm: 7200,
            seek_track_to_track: 1_000_000,
            seek_average: 8_500_000,
            seek_full_stroke: 15_000_000,
            transfer_outer: 40_000_000,
            transfer_inner: 24_000_000,
            interface_rate: 100_000_000,
            queue_depth: 1,
            write_cache: true,
            cache_size: 2 * MIB,
            command_overhead: 300_000,
            destage: DestagePolicy::Interleave,
        }
    }
}

impl Default for HddParams {
    fn default() -> Self {
        HddParams {
            rpm: 7200,
            seek_track_to_track: 1_000_000,
            seek_average: 8_500_000,
            seek_full_stroke: 16_000_000,
            transfer_outer: 210 * MIB,
            transfer_inner: 100 * MIB,
            interface_rate: 550 * MIB,
            queue_depth: 32,
            write_cache: true,
            cache_size: 256 * MIB,
            command_overhead: 50_000,
            destage: DestagePolicy::Interleave,
        }
    }
}

/// A flash SSD. Defaults: a SATA/NVMe-class consumer TLC drive past its SLC cache.
#[derive(Clone, Debug, Serialize)]
pub struct SsdParams {
    /// Independent channels/dies that serve requests in parallel.
    pub parallelism: u32,
    /// Latency of a 4 KiB read, ns.
    pub read_latency: Ns,
    /// Latency of a 4 KiB program into the write buffer, ns.
    pub write_latency: Ns,
    /// Sustained sequential read bandwidth, bytes/s.
    pub read_bandwidth: u64,
    /// Sustained sequential write bandwidth, bytes/s.
    pub write_bandwidth: u64,
    /// Hardware queue depth.
    pub queue_depth: u32,
    pub write_cache: bool,
}

impl Default for SsdParams {
    fn default() -> Self {
        SsdParams {
            parallelism: 8,
            read_latency: 80_000,
            write_latency: 25_000,
            read_bandwidth: 3_000 * MIB,
            write_bandwidth: 1_800 * MIB,
            queue_depth: 64,
            write_cache: true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerKind {
    None,
    MqDeadline,
    /// The 2002 deadline scheduler (2.5.38 + the deadline patch, 2.5.39-2.5.56).
    #[serde(rename = "deadline-2002")]
    Deadline2002,
    /// The 2.6 deadline scheduler (rbtree rewrite, 2.5.57 to about 2.6.23).
    #[serde(rename = "deadline-2.6")]
    Deadline26,
    /// CFQ as in 2.6.18–2.6.21 (`block/cfq-iosched.c` of 2.6.20).
    #[serde(rename = "cfq-2.6.20")]
    Cfq2620,
    /// CFQ after the 2.6.22 service-tree rework, through about 2.6.28.
    #[serde(rename = "cfq-2.6.22")]
    Cfq2622,
}

impl SchedulerKind {
    pub fn name(&self) -> &'static str {
        match self {
            SchedulerKind::None => "none",
            SchedulerKind::MqDeadline => "mq-deadline",
            SchedulerKind::Deadline2002 => "deadline-2002",
            SchedulerKind::Deadline26 => "deadline-2.6",
            SchedulerKind::Cfq2620 => "cfq-2.6.20",
            SchedulerKind::Cfq2622 => "cfq-2.6.22",
        }
    }
}

/// `/sys/block/<dev>/queue/` knobs.
#[derive(Clone, Debug, Serialize)]
pub struct QueueConfig {
    pub scheduler: SchedulerKind,
    pub nr_requests: u32,
    pub max_sectors_kb: u32,
    /// Target read latency of blk-wbt, µs; 0 disables wbt.
    pub wbt_lat_usec: u64,
    pub read_ahead_kb: u32,
    /// 0 = all merges, 1 = simple one-hit merges only, 2 = none.
    pub nomerges: u32,
    pub rotational: bool,
    /// "write back" (true) or "write through" (false): a volatile cache changes wbt's wake rule.
    pub write_cache: bool,
    pub iosched: DeadlineTunables,
    /// CFQ's tunables (used when `scheduler` is one of the CFQs).
    pub cfq: CfqTunables,
}

/// `/sys/block/<dev>/queue/iosched/` of CFQ (2.6.18–2.6.31 defaults; sysfs shows times in ms).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CfqTunables {
    /// Requests one queue moves to the driver per dispatch round (`cfq_quantum`).
    pub quantum: u32,
    pub fifo_expire_sync: Ns,
    pub fifo_expire_async: Ns,
    /// How far back (KiB) the next request may lie and still be taken in sort order.
    pub back_seek_max_kb: u64,
    /// Cost factor of a backward seek against a forward one.
    pub back_seek_penalty: u64,
    pub slice_sync: Ns,
    pub slice_async: Ns,
    /// Base of the async request budget per slice (`cfq_prio_to_maxrq`).
    pub slice_async_rq: u32,
    /// How long an emptied sync queue waits for its process's next request.
    pub slice_idle: Ns,
}

impl Default for CfqTunables {
    fn default() -> Self {
        const MS: Ns = 1_000_000;
        CfqTunables {
            quantum: 4,
            fifo_expire_sync: 125 * MS,
            fifo_expire_async: 250 * MS,
            back_seek_max_kb: 16 * 1024,
            back_seek_penalty: 2,
            slice_sync: 100 * MS,
            slice_async: 40 * MS,
            slice_async_rq: 2,
            slice_idle: 8 * MS,
        }
    }
}

/// `/sys/block/<dev>/queue/iosched/` of mq-deadline (defaults as in 6.18).
#[derive(Clone, Debug, Serialize)]
pub struct DeadlineTunables {
    pub read_expire_ms: u64,
    pub write_expire_ms: u64,
    pub fifo_batch: u32,
    pub writes_starved: u32,
    pub front_merges: bool,
    /// 0 = nr_requests (the 6.18 default).
    pub async_depth: u32,
    /// deadline-2002 only: the batch cost of a non-contiguous request (a contiguous one costs 1).
    pub seek_cost: u32,
}

impl DeadlineTunables {
    /// The defaults of the 2002 deadline scheduler as Morton tested it on 2.5.38: read_expire
    /// HZ/2, fifo_batch 64 ("4 seeks, or 64 contig"), seek_cost 16, writes_starved 2; no write
    /// expiry and no front_merges tunable (fields kept at the mq-deadline values, unused).
    pub fn deadline_2002() -> Self {
        DeadlineTunables {
            fifo_batch: 64,
            ..Default::default()
        }
    }

    /// The defaults of the 2.6 deadline scheduler (2.6.12's `deadline-iosched.c`): the same
    /// numbers as mq-deadline's, `async_depth` unused.
    pub fn deadline_26() -> Self {
        Self::default()
    }

    /// The tunables an elevator starts with when it is selected.
    pub fn for_scheduler(kind: SchedulerKind) -> Self {
        match kind {
            SchedulerKind::Deadline2002 => Self::deadline_2002(),
            _ => Self::default(),
        }
    }
}

impl Default for DeadlineTunables {
    fn default() -> Self {
        DeadlineTunables {
            read_expire_ms: 500,
            write_expire_ms: 5000,
            fifo_batch: 16,
            writes_starved: 2,
            front_merges: true,
            async_depth: 0,
            seek_cost: 16,
        }
    }
}

/// `/sys/class/bdi/<maj:min>/` knobs.
#[derive(Clone, Debug, Serialize)]
pub struct BdiConfig {
    /// Parts per million of the dirty threshold (`min_ratio_fine`).
    pub min_ratio_ppm: u64,
    /// Parts per million of the dirty threshold (`max_ratio_fine`).
    pub max_ratio_ppm: u64,
    /// `max_bytes`, converted to `max_ratio` against the initial threshold, as the kernel does
    /// when the file is written. `None` = not set.
    pub max_bytes: Option<u64>,
    pub min_bytes: Option<u64>,
    pub strict_limit: bool,
}

impl Default for BdiConfig {
    fn default() -> Self {
        BdiConfig {
            min_ratio_ppm: 0,
            max_ratio_ppm: 1_000_000,
            max_bytes: None,
            min_bytes: None,
            strict_limit: false,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TraceConfig {
    /// Record `writeback:*` events.
    pub writeback: bool,
    /// Record `block:block_rq_issue` / `block_rq_complete` (large).
    pub block: bool,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            writeback: true,
            block: false,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TaskConfig {
    /// Name shown in tables and as the trace comm.
    pub name: String,
    /// Number of identical instances (`count = 100` makes 100 tasks).
    pub count: u32,
    /// Index into `Scenario::devices` of the device that holds the task's file.
    pub device: usize,
    /// File path; `{n}` is replaced by the instance number.
    pub file: String,
    /// Start time, ns.
    pub start: Ns,
    /// Stop time, ns (None = run to the end of the scenario or of the job).
    pub stop: Option<Ns>,
    pub job: JobConfig,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "job", rename_all = "lowercase")]
pub enum JobConfig {
    /// Buffered sequential writer (`dd if=/dev/zero of=FILE bs=BS [count=N]`).
    Dd {
        bs: u64,
        /// Bytes to write; None = until the task stops.
        size: Option<u64>,
        /// `conv=fsync`: fsync the file before exiting.
        fsync: bool,
        /// `oflag=direct`: O_DIRECT writes that bypass the page cache.
        direct: bool,
    },
    /// A network receiver writing what arrives (an FTP server storing an upload): buffered
    /// sequential writes of `bs` paced at `rate` (the link). A write starts no earlier than
    /// `bs / rate` after the previous one started; while the task is blocked nothing is
    /// received, and afterwards it goes on at `rate` (no catching up beyond one `bs`, as TCP's
    /// window stops the sender). The transfer time is the task's end.
    Netwrite {
        bs: u64,
        /// Bytes to transfer; None = until the task stops.
        size: Option<u64>,
        /// Link rate, bytes per second.
        rate: u64,
    },
    /// Buffered sequential reader of an existing file (`cat FILE > /dev/null`).
    Cat {
        bs: u64,
        /// Size of the pre-existing file, bytes.
        file_size: u64,
    },
    /// Random reads of `bs` bytes, one at a time: a latency probe.
    Randread {
        bs: u64,
        file_size: u64,
        direct: bool,
        /// Think time between reads, ns.
        think: Ns,
    },
    /// Writes `bytes` then calls fsync(), every `interval`: a database-commit probe.
    Fsync { bytes: u64, interval: Ns },
    /// Calls sync() every `interval`.
    Sync { interval: Ns },
    /// `du -s DIR`: readdir and `lstat` of every entry of a tree of small files. An uncached
    /// inode costs one 4 KiB read of its inode-table block; op latency is per `lstat`.
    Du {
        /// Files in the tree.
        files: u64,
        /// Entries per directory.
        files_per_dir: u32,
        /// On-disk inode size (ext3: 128, ext4: 256): inodes per 4 KiB block = 4096 / size.
        inode_size: u32,
        /// Start over when the walk ends (the tree stays on disk, its cache may be gone).
        repeat: bool,
    },
    /// An application start: look up and read `files` files, sizes taken in turn from
    /// `file_sizes`. Op latency is the whole launch.
    Launch {
        files: u32,
        file_sizes: Vec<u64>,
        /// Read size of each read().
        bs: u64,
        /// Bytes the application writes while starting (configuration, history, profile:
        /// buffered 4 KiB writes to a file of its own), after reading its files.
        writes: u64,
        /// Launch again this long after the previous start (None = once).
        interval: Option<Ns>,
    },
    /// `ls -l DIR...`: readdir and `lstat` of every entry of `dirs` directories. Op latency
    /// is the whole command.
    Ls {
        dirs: u32,
        entries: u32,
        /// Run again this long after the previous start (None = once).
        interval: Option<Ns>,
    },
    /// One thread of `tiotest -t N`: its own file, four phases (write, random write, read,
    /// random read) separated by barriers across all tiotest threads of the scenario.
    Tiotest {
        /// Size of the thread's file (`-f`), bytes.
        file_size: u64,
        /// Block size of each read()/write() (`-b`), bytes.
        bs: u64,
        /// Random operations per thread and random phase (`-r`).
        random_ops: u64,
        /// Pages read around a random read miss (the era's minimum readahead window), bytes.
        random_readahead: u64,
        /// User-space CPU per operation (tiotest's buffer fill and check), ns.
        user_cost: Ns,
    },
}

impl JobConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            JobConfig::Dd { .. } => "dd",
            JobConfig::Netwrite { .. } => "netwrite",
            JobConfig::Cat { .. } => "cat",
            JobConfig::Randread { .. } => "randread",
            JobConfig::Fsync { .. } => "fsync",
            JobConfig::Sync { .. } => "sync",
            JobConfig::Du { .. } => "du",
            JobConfig::Launch { .. } => "launch",
            JobConfig::Ls { .. } => "ls",
            JobConfig::Tiotest { .. } => "tiotest",
        }
    }
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            memory: 4 * GIB,
            cpus: 2,
            memory_bandwidth: 4 * GIB,
            unreclaimable: 200 * MIB,
            highmem: 0,
            syscall_overhead: 1_000,
            wakeup_cost: 1_000,
            context_switch_cost: 1_000,
            wait_recheck_cost: 300,
            page_wait_buckets: 0,
        }
    }
}

/// Queue defaults for a device model, as the kernel would set them at probe time.
pub fn default_queue(model: &DeviceModelConfig) -> QueueConfig {
    let (rotational, write_cache, qd) = match model {
        DeviceModelConfig::Hdd(p) => (true, p.write_cache, p.queue_depth),
        DeviceModelConfig::Ssd(p) => (false, p.write_cache, p.queue_depth),
        DeviceModelConfig::Loop(p) => return loop_queue(p),
        DeviceModelConfig::Usb(p) => return usb_queue(p),
        DeviceModelConfig::Nfs(p) => return nfs_queue(p),
        DeviceModelConfig::Raid0(p) => return raid0_queue(p),
        // A RAID5 logical drive behind a controller (cpqarray): one request queue with an
        // elevator in front of the array.
        DeviceModelConfig::Raid5(p) => (true, p.member.has_write_cache(), p.members.saturating_mul(p.member.queue_depth())),
    };
    let scheduler = if rotational {
        SchedulerKind::MqDeadline
    } else {
        SchedulerKind::None
    };
    // blk_mq_default_nr_requests: 2 * min(qd, 128) with an elevator, the tag-set depth without.
    let nr_requests = match scheduler {
        SchedulerKind::None => qd,
        _ => 2 * qd.min(128),
    };
    let max_sectors_kb = 4096;
    QueueConfig {
        scheduler,
        nr_requests,
        max_sectors_kb,
        // wbt_default_latency_nsec: 75 ms rotational, 2 ms otherwise.
        wbt_lat_usec: if rotational { 75_000 } else { 2_000 },
        // blk_apply_bdi_limits: rotational devices without io_opt read ahead 2 * max_sectors.
        read_ahead_kb: if rotational { 2 * max_sectors_kb } else { 128 },
        nomerges: 0,
        rotational,
        write_cache,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
    }
}

/// Minor number of the first NFS mount's anonymous device (`get_anon_bdev`): a typical value
/// on a booted system, where the kernel's own pseudo file systems took the first ones.
pub const NFS_FIRST_MINOR: u32 = 40;

/// `max_hw_sectors_kb` of a USB 2.0 mass-storage device: the `usb-storage` host template's
/// `max_sectors` = 240 ("limit the total size of a transfer to 120 KB",
/// `drivers/usb/storage/scsiglue.c`; USB 3 devices get 2048 sectors).
pub const USB_MAX_SECTORS_KB: u32 = 120;

/// The queue of a USB 2.0 flash key as `usb-storage` and `sd` set it up (6.18):
/// - `can_queue` = 1: one tag, so mq-deadline (the default elevator of a single-queue SCSI
///   disk) with `nr_requests` = 2 × min(1, 128) = 2;
/// - `max_sectors_kb` 120 ([`USB_MAX_SECTORS_KB`]);
/// - rotational: `usb-storage` skips the VPD pages, so `sd` never learns the medium does not
///   rotate and the flag keeps its default, 1 (what USB keys report); hence wbt's 75 ms and
///   read-ahead 2 × `max_sectors_kb` = 240 KiB (`blk_apply_bdi_limits` without io_opt);
/// - "write through": `usb-storage` skips the caching mode page and `sd` assumes no cache.
fn usb_queue(p: &UsbParams) -> QueueConfig {
    let max_sectors_kb = USB_MAX_SECTORS_KB;
    QueueConfig {
        scheduler: SchedulerKind::MqDeadline,
        nr_requests: 2 * p.queue_depth.clamp(1, 128),
        max_sectors_kb,
        wbt_lat_usec: 75_000,
        read_ahead_kb: (2 * max_sectors_kb).max(128),
        nomerges: 0,
        rotational: true,
        write_cache: false,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
    }
}

/// The "queue" of an NFS mount. NFS has no block queue: the model puts one in front of its
/// RPC slots so the data path stays the block layer's. Its knobs are chosen to be neutral:
/// no elevator (`nr_requests` = the RPC slots, whose wait plays NFS's own write congestion
/// wait), requests of up to `wsize`, no blk-wbt (it needs a blk-mq queue), read-ahead
/// 128 KiB (`VM_READAHEAD_PAGES`: NFS's default since 5.4; before, 15 × `rsize`),
/// non-rotational, and a write cache (the server's page cache holding UNSTABLE data).
fn nfs_queue(p: &NfsParams) -> QueueConfig {
    QueueConfig {
        scheduler: SchedulerKind::None,
        nr_requests: p.queue_depth,
        max_sectors_kb: (p.wsize / 1024).clamp(4, u64::from(u32::MAX)) as u32,
        wbt_lat_usec: 0,
        read_ahead_kb: 128,
        nomerges: 0,
        rotational: false,
        write_cache: true,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
    }
}

/// The queue of an md raid0 array (`raid0_set_limits`, 6.18): a bio-based device, so no
/// elevator and no blk-wbt; `max_hw_sectors` = the chunk (and no more than the members'
/// limit: the limits stack), `io_opt` = chunk × members, hence read-ahead 2 × io_opt
/// (`blk_apply_bdi_limits`); rotational and write cache inherited from the members. md has no
/// tags: the members' queues bound what is in flight, modelled as `nr_requests` = the sum of
/// the members' queue depths.
fn raid0_queue(p: &Raid0Params) -> QueueConfig {
    let member = default_queue(&p.member);
    let chunk_kb = (p.chunk / 1024).min(u64::from(u32::MAX)) as u32;
    let io_opt_kb = u64::from(chunk_kb) * u64::from(p.members);
    QueueConfig {
        scheduler: SchedulerKind::None,
        nr_requests: p.members.saturating_mul(p.member.queue_depth()).max(1),
        max_sectors_kb: chunk_kb.min(member.max_sectors_kb).max(4),
        wbt_lat_usec: 0,
        read_ahead_kb: (2 * io_opt_kb).clamp(128, u64::from(i32::MAX as u32)) as u32,
        nomerges: 0,
        rotational: member.rotational,
        write_cache: member.write_cache,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
    }
}

/// The queue of a loop device after `loop_add` and `loop_configure` (`drivers/block/loop.c`),
/// as a 6.18 loop over a file on this lab's `vda` reports it (`realkernel.md` §1):
/// - no elevator (`BLK_MQ_F_NO_SCHED_BY_DEFAULT`), so `nr_requests` = the tag-set depth
///   (`hw_queue_depth`, 128);
/// - `max_sectors_kb` 1280: the loop sets no hardware limit, so the block layer's default cap;
/// - rotational copied from the backing file's device (`loop_update_limits`): `vda` says 1;
/// - wbt 2 ms: wbt was initialised when the disk was added, before `loop_configure` copied the
///   rotational flag, so it kept the non-rotational default;
/// - read-ahead 2 × `max_sectors_kb` (2560), as for any rotational queue;
/// - a write cache ("write back"): the backing file can fsync.
fn loop_queue(p: &LoopParams) -> QueueConfig {
    let max_sectors_kb = 1280;
    QueueConfig {
        scheduler: SchedulerKind::None,
        nr_requests: p.queue_depth,
        max_sectors_kb,
        wbt_lat_usec: 2_000,
        read_ahead_kb: 2 * max_sectors_kb,
        nomerges: 0,
        rotational: true,
        write_cache: true,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
    }
}

impl Scenario {
    /// A machine with one device and no tasks, every knob at its default. The scenario crate
    /// builds scenarios from files; this is for tests and benchmarks that build them in code.
    pub fn one_device(name: &str, model: DeviceModelConfig, memory: u64, cpus: u32, duration: Ns) -> Scenario {
        let queue = default_queue(&model);
        let size = default_size(&model);
        let (dev, major, minor) = match model {
            DeviceModelConfig::Hdd(_) | DeviceModelConfig::Ssd(_) | DeviceModelConfig::Usb(_) | DeviceModelConfig::Raid5(_) => {
                ("sda", 8, 0)
            }
            DeviceModelConfig::Loop(_) => ("loop0", 7, 0),
            // An NFS superblock has an anonymous device number (0:N, N from 1); md arrays are 9:N.
            DeviceModelConfig::Nfs(_) => ("nfs0", 0, NFS_FIRST_MINOR),
            DeviceModelConfig::Raid0(_) => ("md0", 9, 0),
        };
        Scenario {
            name: name.to_string(),
            kernel: "6.x".to_string(),
            policy: PolicyConfig::default(),
            duration,
            seed: 1,
            hz: 250,
            machine: MachineConfig {
                memory,
                cpus,
                ..Default::default()
            },
            sysctl: VmSysctl::default(),
            devices: vec![DeviceConfig {
                name: dev.to_string(),
                major,
                minor,
                size,
                model,
                queue,
                bdi: BdiConfig::default(),
                fs: None,
                throttle: BlkThrottleConfig::default(),
            }],
            tasks: Vec::new(),
            trace: TraceConfig::default(),
        }
    }

    /// Add `count` instances of `job` on device 0, starting at `start`.
    pub fn add_task(&mut self, name: &str, count: u32, start: Ns, job: JobConfig) -> &mut Self {
        self.tasks.push(TaskConfig {
            name: name.to_string(),
            count,
            device: 0,
            file: format!("/mnt/{}/{name}{{n}}", self.devices[0].name),
            start,
            stop: None,
            job,
        });
        self
    }
}
