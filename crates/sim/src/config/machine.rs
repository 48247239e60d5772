//! `[machine]`: RAM, CPUs and the costs of the CPU work the model charges.

/// `[machine] buddyinfo` has one count per order of the buddy allocator.
pub use crate::mm::free_lists::NR_ORDERS;
use crate::units::{GIB, MIB};
use crate::Ns;
use serde::Serialize;

/// The default [`MachineConfig::completion_cost`]: an estimate, not a measurement. This lab's
/// guest has no IRQ time accounting, so a completion's irq shows as system time; its softirq
/// measured 0.2 µs a read (fio's 4 KiB O_DIRECT reads on a loop, `/proc/stat`), and the rest
/// is an allowance for the interrupt itself.
pub const COMPLETION_COST_NS: Ns = 1_000;

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
    /// Page cache dirty or under writeback on devices outside the scenario, bytes: the
    /// system's own files (logs, the journal of its root file system), which their own
    /// flushers keep at a steady level. A constant the global counters carry, so throttling
    /// sees them as the kernel does; never written back by the model. A dozen pages move a
    /// lone `dd`'s pauses on a fast disk by a third (`measure` records the level its throttled
    /// writers saw in `machine.json`: `other_dirty_kib`).
    pub other_dirty: u64,
    /// Fixed cost of one read()/write() system call on top of the copy, ns.
    pub syscall_overhead: Ns,
    /// CPU cost of a wakeup (`try_to_wake_up`: run-queue lock, enqueue, IPI), ns. Today ~1 µs;
    /// a 2004 SMP (336 MHz UltraSPARC) an order of magnitude more.
    pub wakeup_cost: Ns,
    /// CPU of one request's completion, ns: the device's interrupt, the block softirq
    /// (`blk_mq_complete_request`, `blk_mq_end_request`, `bio_endio`) and the end of its
    /// pages' writeback or read. It runs at once on a CPU and stretches what was running there.
    pub completion_cost: Ns,
    /// CPU cost of the context switch into the woken task (`schedule`, `finish_task_switch`), ns.
    pub context_switch_cost: Ns,
    /// Mean delay from a sleep's timer expiring to the woken task running (softirq, wakeup,
    /// run-queue wait, timer slack), ns; each timed sleep adds an exponential draw from the
    /// run's seed. The one noise source every scenario has: with it `--seed` gives a
    /// distribution; 0 makes runs independent of the seed again.
    pub wakeup_latency: Ns,
    /// A kernel thread asleep on I/O (the journal thread between the steps of a commit) and a
    /// task woken by a commit start this much after the wake-up, ns: the woken CPU was idle
    /// (halted: a virtual machine's vCPU is resumed by its host; bare metal leaves a C-state).
    /// Measured in a block trace of fsyncs on this lab's 2-vCPU guest (ext4 on a loop device):
    /// the journal thread submitted its commit block 43 µs after its log write completed, and
    /// the fsync returned 35 µs after the commit's last flush, two wake-ups in it.
    pub idle_wake_latency: Ns,
    /// CPU a task pays the first time it touches a page frame its host does not back, ns per
    /// 4 KiB page: a virtual machine whose host allocates guest memory on demand and takes back
    /// what the guest reports free (virtio-balloon free page reporting) stalls the vCPU on a
    /// host page fault. 0 (bare metal, or a VM whose memory is all backed): free. 11 µs on this
    /// lab's Firecracker guest (see `crate::mm::page_reporting`).
    pub page_first_touch: Ns,
    /// The same for the copy out of a frame a read filled, ns per page; `None`: as
    /// `page_first_touch`. On this lab's Firecracker guest about 0.7× of it (6.5 against 9 µs,
    /// measured side by side): the host's I/O thread faulted the frame in when it filled it,
    /// so the vCPU's first touch finds host memory already there and, by our reading, pays
    /// only for mapping it into the guest, not for allocating and zeroing it.
    pub page_first_touch_read: Option<Ns>,
    /// CPU a reader pays on top of its copy (`memory_bandwidth`) for each 4 KiB page it copies
    /// out that a device read filled and no copy has touched since, ns: the data is in none of
    /// this CPU's caches (the device, or a virtual machine's host, wrote it), where the copy
    /// `memory_bandwidth` prices reads lines a recent copy left in them. 0: every copy as
    /// fast. On this lab's guest 0.23 µs (a 128 KiB read of pages readahead had just filled
    /// 14.9 µs against 7.4 µs read again from the cache, 2026-12-06); `wblab measure` times it
    /// (`memory_touch.fresh_read_us`).
    #[serde(skip_serializing_if = "super::is_zero")]
    pub cold_copy_cost: Ns,
    /// CPU of placing one new 4 KiB block at `write()` time, ns, where the file system
    /// allocates then (ext3 before the reservation windows of 2.6.10): `ext3_get_block`'s
    /// bitmap search under the journal and the bitmap, group descriptor, indirect block and
    /// inode it journals with each block (`journal_get_write_access`,
    /// `journal_dirty_metadata`). Charged to the writer with its copy, before it. 0: not
    /// charged (file systems that allocate at writeback are unaffected).
    #[serde(skip_serializing_if = "super::is_zero")]
    pub block_alloc_cost: Ns,
    /// How long a freed frame stays backed before the guest reports it to the host
    /// (`PAGE_REPORTING_DELAY`); 0: the guest never reports, so only never-touched memory
    /// pays `page_first_touch`.
    pub page_reporting_delay: Ns,
    /// Free memory a reporting pass leaves backed, bytes; `None`: upstream's rule, the low
    /// watermark and 32 blocks of 2 MiB (`PAGE_REPORTING_CAPACITY` × `pageblock_order`).
    pub page_reporting_reserve: Option<u64>,
    /// The smallest free block a reporting pass hands to the host, as an order of pages
    /// (`page_reporting.page_reporting_order`; upstream `pageblock_order`, 9 on x86-64: 2 MiB).
    /// A folio this large is cut from such a block, so a readahead's 2 MiB folios meet memory
    /// the host took back even while smaller allocations still find the reserve.
    pub page_reporting_order: u32,
    /// The free blocks of each order the machine starts with, as `/proc/buddyinfo` counts them
    /// (its zones summed), once reporting has settled: those below `page_reporting_order` are
    /// backed, the rest reported. Given, the model follows the free lists — a folio is cut
    /// from the smallest free block that holds it, so a copy in 64 KiB folios finds backed
    /// memory long after one in 1 MiB folios has run out — instead of one
    /// `page_reporting_reserve` for every folio size.
    pub buddyinfo: Option<Vec<u64>>,
    /// The system's chance: devices' service times (an SSD read meeting a program, a disk's
    /// spindle phase, firmware time), `wakeup_latency` and the run's start within a tick drawn
    /// from the run's seed. Off, every draw is its median, the run starts with a tick, and every
    /// seed gives the same run (workloads' random offsets still follow the seed).
    pub chance: bool,
    /// A woken page waiter that finds its page still busy: re-test, `finish_wait`,
    /// `prepare_to_wait` and the `io_schedule` back out, ns (on top of the wakeup and switch).
    pub wait_recheck_cost: Ns,
    /// Buckets of the hashed page wait table; 0 = the era's rule (per zone
    /// clamp(pow2(pages/256), 4, 4096) before 4.10, 256 global from 4.10).
    pub page_wait_buckets: u32,
    /// `sizeof(struct page)` of the simulated kernel, bytes: the stride of the addresses the
    /// page wait table hashes (64 on x86-64 since 3.2, and on sparc64 in 2004).
    pub struct_page_size: u32,
    /// The kernel's PAGE_SIZE, bytes (8 KiB on sparc64). The model's page cache keeps 4 KiB
    /// pages; page waits and wakeups (`unlock_page`) are per kernel page. (A buffered write reads
    /// only the 4 KiB blocks it covers in part, whatever the page: `__block_write_begin`.)
    pub page_size: u64,
    /// Keys kept by name rather than in a field of their own: the test-only one of
    /// `docs/extending.md`, or a prototype's before it earns a field. Empty in shipped
    /// scenarios (and then not written out).
    #[serde(skip_serializing_if = "super::Tunables::is_empty")]
    pub extra: super::Tunables,
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            memory: 4 * GIB,
            cpus: 2,
            memory_bandwidth: 4 * GIB,
            unreclaimable: 200 * MIB,
            highmem: 0,
            other_dirty: 0,
            syscall_overhead: 1_000,
            wakeup_cost: 1_000,
            context_switch_cost: 1_000,
            completion_cost: COMPLETION_COST_NS,
            wakeup_latency: 200_000,
            idle_wake_latency: 25_000,
            page_first_touch: 0,
            page_first_touch_read: None,
            cold_copy_cost: 0,
            block_alloc_cost: 0,
            page_reporting_delay: 2_000_000_000,
            page_reporting_reserve: None,
            page_reporting_order: 9,
            buddyinfo: None,
            chance: true,
            wait_recheck_cost: 300,
            page_wait_buckets: 0,
            struct_page_size: 64,
            page_size: 4096,
            extra: Default::default(),
        }
    }
}
