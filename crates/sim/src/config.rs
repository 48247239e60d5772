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
    /// The kernel generation simulated ("6.x").
    pub kernel: String,
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
    /// Fixed cost of one read()/write() system call on top of the copy, ns.
    pub syscall_overhead: Ns,
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

/// A loop block device over a file on a faster disk, as `losetup --direct-io` makes it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoopParams {
    /// Bandwidth of the backing store for reads and writes, bytes/s.
    pub backing_read_bandwidth: u64,
    pub backing_write_bandwidth: u64,
    /// Latency of one backing I/O, ns.
    pub backing_latency: Ns,
    /// Requests the loop driver works on at once.
    pub queue_depth: u32,
}

impl Default for LoopParams {
    fn default() -> Self {
        LoopParams {
            backing_read_bandwidth: 1_500 * MIB,
            backing_write_bandwidth: 1_000 * MIB,
            backing_latency: 100_000,
            queue_depth: 128,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DeviceModelConfig {
    Hdd(HddParams),
    Ssd(SsdParams),
    Loop(LoopParams),
}

impl DeviceModelConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceModelConfig::Hdd(_) => "hdd",
            DeviceModelConfig::Ssd(_) => "ssd",
            DeviceModelConfig::Loop(_) => "loop",
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
}

impl SchedulerKind {
    pub fn name(&self) -> &'static str {
        match self {
            SchedulerKind::None => "none",
            SchedulerKind::MqDeadline => "mq-deadline",
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
}

impl JobConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            JobConfig::Dd { .. } => "dd",
            JobConfig::Cat { .. } => "cat",
            JobConfig::Randread { .. } => "randread",
            JobConfig::Fsync { .. } => "fsync",
            JobConfig::Sync { .. } => "sync",
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
            syscall_overhead: 1_000,
        }
    }
}

/// Queue defaults for a device model, as the kernel would set them at probe time.
pub fn default_queue(model: &DeviceModelConfig) -> QueueConfig {
    let (rotational, write_cache, qd) = match model {
        DeviceModelConfig::Hdd(p) => (true, p.write_cache, p.queue_depth),
        DeviceModelConfig::Ssd(p) => (false, p.write_cache, p.queue_depth),
        DeviceModelConfig::Loop(p) => (false, false, p.queue_depth),
    };
    let scheduler = if rotational {
        SchedulerKind::MqDeadline
    } else {
        SchedulerKind::None
    };
    // blk_mq_default_nr_requests: 2 * min(qd, 128) with an elevator, the tag-set depth without.
    let nr_requests = match scheduler {
        SchedulerKind::MqDeadline => 2 * qd.min(128),
        SchedulerKind::None => qd,
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
    }
}

impl Scenario {
    /// A machine with one device and no tasks, every knob at its default. The scenario crate
    /// builds scenarios from files; this is for tests and benchmarks that build them in code.
    pub fn one_device(name: &str, model: DeviceModelConfig, memory: u64, cpus: u32, duration: Ns) -> Scenario {
        let queue = default_queue(&model);
        let size = match model {
            DeviceModelConfig::Hdd(_) => 4_000_000_000_000,
            DeviceModelConfig::Ssd(_) => 1_000_000_000_000,
            DeviceModelConfig::Loop(_) => 2 * GIB,
        };
        Scenario {
            name: name.to_string(),
            kernel: "6.x".to_string(),
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
                name: "sda".to_string(),
                major: 8,
                minor: 0,
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
            file: format!("/mnt/sda/{name}{{n}}"),
            start,
            stop: None,
            job,
        });
        self
    }
}
