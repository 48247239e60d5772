//! The device models' parameters, with defaults that stand for a typical device of the kind
//! (each model's behaviour is in `drivers/`).

use super::DeviceModelConfig;
use crate::units::MIB;
use crate::Ns;
use serde::Serialize;

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

/// `max_hw_sectors_kb` of a USB 2.0 mass-storage device: the `usb-storage` host template's
/// `max_sectors` = 240 ("limit the total size of a transfer to 120 KB",
/// `drivers/usb/storage/scsiglue.c`; USB 3 devices get 2048 sectors).
pub const USB_MAX_SECTORS_KB: u32 = 120;
