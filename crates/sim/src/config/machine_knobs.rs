//! The keys of `[machine]` ([`MACHINE_KNOBS`]): each declared once — kind, range, default,
//! what it means — for the scenario parser, the fuzzer and the reference table. What a key
//! means for the others (`unreclaimable` against `memory`, `highmem`'s lowmem) the parser
//! checks after reading them all.

use super::{Knob, KnobKind, KnobValue, MachineConfig};
use crate::units::{GIB, MIB};

/// One `[machine]` key.
pub struct MachineKnob {
    /// Key, kind and range, what it is (`doc`), and the accessors.
    pub knob: Knob<MachineConfig>,
    /// The reference's default where the field's own value does not say it (an unset
    /// option, a value meaning "the era's").
    pub default_text: Option<&'static str>,
    /// What the fuzzer draws from: the accepted range cut to values a run makes sense of.
    pub typical: (u64, u64),
    /// A value the kind's range admits but the model refuses: the problem and a hint.
    pub refuse: fn(u64) -> Option<(String, &'static str)>,
}

impl MachineKnob {
    /// The value in `m`.
    pub fn value(&self, m: &MachineConfig) -> KnobValue {
        (self.knob.get)(m)
    }
}

/// Refuses nothing beyond the kind's range.
fn refuse_nothing(_: u64) -> Option<(String, &'static str)> {
    None
}

/// The reporting pass is delayed work on the jiffies clock (2 s upstream, not tunable there):
/// a delay under 10 ms has no kernel counterpart and would only make the run crawl.
fn refuse_short_reporting_delay(ns: u64) -> Option<(String, &'static str)> {
    (1..10_000_000).contains(&ns).then(|| {
        (
            format!(
                "{} is shorter than any reporting delay a kernel uses",
                crate::units::format_duration(ns)
            ),
            "write 0 to turn reporting off, or a delay of 10ms or more (upstream: 2s)",
        )
    })
}

fn refuse_odd_page_size(bytes: u64) -> Option<(String, &'static str)> {
    (!bytes.is_power_of_two()).then(|| {
        (
            format!("a page size of {bytes} bytes is not a power of two"),
            "4KiB (x86), 8KiB (sparc64), 16KiB or 64KiB (arm64, ppc64)",
        )
    })
}

/// Below this the kernel's watermarks and reserves leave no page cache worth modelling.
pub const MIN_MEMORY: u64 = 64 * MIB;
/// A bound that keeps page counts far from overflow in the model's arithmetic.
pub const MAX_MEMORY: u64 = 64 * 1024 * GIB;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

/// A key of a whole-number field (`u64` or `u32`) or a `bool`, with its kind and doc.
macro_rules! machine {
    ($key:literal, $kind:expr, $typical:expr, $doc:literal, $field:ident: $t:ident) => {
        MachineKnob {
            knob: $crate::knob!(MachineConfig, $key, $kind, $doc, $field: $t),
            default_text: None,
            typical: $typical,
            refuse: refuse_nothing,
        }
    };
}

/// A duration of at most `max` ns.
const fn dur(max: u64) -> KnobKind {
    KnobKind::Duration { max }
}

const fn size(min: u64, max: u64) -> KnobKind {
    KnobKind::Size { min, max, pages: false }
}

// docs:begin machine-list
crate::registry!(SHIPPED_MACHINE_KNOBS, MACHINE_KNOBS: MachineKnob, "`[machine]` keys";
    machine!("memory", size(MIN_MEMORY, MAX_MEMORY), (512 * MIB, 4 * GIB), "installed RAM", memory: u64),
    machine!("cpus", KnobKind::Count { min: 1, max: 4096 }, (1, 16), "online CPUs (NR_CPUS of a distribution x86-64 kernel at most)", cpus: u32),
    machine!("memory_bandwidth", KnobKind::Rate, (100 * MIB, 16 * GIB), "speed of the page-cache copy in read()/write() (`copy_to_user`, `copy_from_user`) of data a recent copy left in the CPU's caches; `wblab validate` gives each case the day's (`memory_touch.cached_read_us`)", memory_bandwidth: u64),
    machine!("unreclaimable", size(0, MAX_MEMORY), (0, 32 * MIB), "at most half of `memory`; kernel and anonymous memory, never reclaimed", unreclaimable: u64),
    machine!("highmem", size(0, MAX_MEMORY), (0, 3 * GIB), "a 32-bit (i386) kernel's ZONE_HIGHMEM: `memory` − 896 MiB; 0 = 64-bit. Lowmem (the rest) must hold `unreclaimable` + 64 MiB; 2.6.x–3.x generations only. See [32-bit zones](kernel-generations.md#32-bit-zones)", highmem: u64),
    machine!("other_dirty", size(0, MAX_MEMORY), (0, 64 * MIB), "at most a sixteenth of `memory`; page cache dirty or under writeback on devices outside the scenario (the system's logs and root file system), a steady level the global counters carry: throttling and the background threshold see it, nothing writes it back. A quiet machine keeps a few dozen pages; `measure` records the level its throttled writers saw (`machine.json`: `other_dirty_kib`, the global dirty level less the scenario's devices' in the `balance_dirty_pages` events) and `validate` simulates each case with it", other_dirty: u64),
    machine!("syscall_overhead", dur(SEC), (0, 50 * US), "per read()/write(), on top of the copy", syscall_overhead: u64),
    machine!("wakeup_cost", dur(SEC), (0, 100 * US), "CPU of a wakeup (`try_to_wake_up`); a 2004 SMP: ~15 µs", wakeup_cost: u64),
    machine!("context_switch_cost", dur(SEC), (0, 100 * US), "CPU of the switch into a woken task; a 2004 SMP: ~30 µs", context_switch_cost: u64),
    machine!("completion_cost", dur(MS), (0, 100 * US), "CPU of one request's completion (the device's interrupt, the block softirq, `bio_endio`, the end of its pages' writeback or read): it runs at once on a CPU, the CPUs in turn, and stretches whatever ran there. The default is an estimate (0.2 µs of softirq measured per read here, plus an allowance for the interrupt). See [model scope](model-scope.md#cpus)", completion_cost: u64),
    machine!("wakeup_latency", dur(SEC), (0, 2 * MS), "mean delay from a timed sleep's end (a `balance_dirty_pages` pause, a think time) to the task running again, drawn per sleep from the run's seed (exponential). One of the system's chances (see `chance`); measured on a 2-vCPU 6.18 VM (see [model scope](model-scope.md#noise)); `\"0s\"` removes it", wakeup_latency: u64),
    machine!("idle_wake_latency", dur(SEC), (0, 500 * US), "the journal thread, asleep between the steps of a commit (its start, its log writes, its flushes), and the tasks a commit wakes run this much after their wake-up: the woken CPU was idle (a halted vCPU, a C-state). Measured in a block trace of fsyncs on a 2-vCPU 6.18 VM; `\"0s\"` for the instant hand-offs of earlier versions of the model", idle_wake_latency: u64),
    machine!("page_first_touch", dur(MS), (0, 50 * US), "CPU a task pays the first time it touches a page frame its host does not back (a VM with free page reporting: the host takes back what the guest reports free), per 4 KiB page: a buffered writer as it copies into new pages, a reader as it copies out what its readahead filled. 11 µs on a Firecracker guest on one day, 0 on bare metal; `wblab measure` times it (`memory_touch` in `machine.json`). See [model scope](model-scope.md#page-cache-and-dirty-accounting)", page_first_touch: u64),
    MachineKnob {
        knob: Knob {
            key: "page_first_touch_read",
            kind: dur(MS),
            doc: "the same for a reader's first copy out of a frame its read filled, per 4 KiB page. Where the host's I/O thread faulted the frame in as it filled it, the guest pays less: 0.7× the write's on this lab's Firecracker guest; `wblab measure` times it (`memory_touch.read_touch_us`)",
            get: |m| KnobValue::Uint(m.page_first_touch_read.unwrap_or(m.page_first_touch)),
            set: |m, v| m.page_first_touch_read = Some(v.uint()),
        },
        default_text: Some("as `page_first_touch`"),
        typical: (0, 50 * US),
        refuse: refuse_nothing,
    },
    machine!("cold_copy_cost", dur(MS), (0, 2 * US), "CPU a reader pays on top of its copy for each 4 KiB page it copies out that a device read filled and no copy has read since: the data is in no CPU cache yet, where `memory_bandwidth` prices a copy of data a recent copy left there. 0.23 µs on this lab's guest (a 128 KiB read of pages readahead had just filled 14.9 µs, read again from the cache 7.4 µs); `wblab measure` times it (`memory_touch.fresh_read_us`)", cold_copy_cost: u64),
    machine!("block_alloc_cost", dur(MS), (0, 500 * US), "CPU of placing one new 4 KiB block at `write()` time, where the file system allocates then (ext3 before 2.6.10's reservation windows: `ext3_get_block`'s bitmap search and the bitmap, group descriptor, indirect block and inode journalled with each block), charged to the writer with its copy; 0: not charged. Today's file systems allocate at writeback and are unaffected", block_alloc_cost: u64),
    MachineKnob {
        refuse: refuse_short_reporting_delay,
        ..machine!("page_reporting_delay", dur(3_600 * SEC), (10 * MS, 5 * SEC), "0, or 10 ms and more; how long a freed frame stays backed before the guest reports it (`PAGE_REPORTING_DELAY`); `\"0s\"`: never reported, only never-touched memory pays `page_first_touch`", page_reporting_delay: u64)
    },
    MachineKnob {
        knob: Knob {
            key: "page_reporting_reserve",
            kind: size(0, MAX_MEMORY),
            doc: "free memory a reporting pass leaves backed (upstream: the low watermark and 32 blocks of 2 MiB); the first this much of a copy's growth costs nothing. 0.1–1 GiB on this lab's guest; `wblab measure` times it (`memory_touch.reserve_mib`)",
            get: |m| KnobValue::Uint(m.page_reporting_reserve.unwrap_or(0)),
            set: |m, v| m.page_reporting_reserve = Some(v.uint()),
        },
        default_text: Some("the low watermark + 64 MiB"),
        typical: (0, 512 * MIB),
        refuse: refuse_nothing,
    },
    machine!("page_reporting_order", KnobKind::Count { min: 0, max: 20 }, (0, 11), "the smallest free block (an order of pages) a reporting pass gives the host (`page_reporting.page_reporting_order`; upstream `pageblock_order`, 9 on x86-64). Folios this large (a sequential reader's 2 MiB readahead folios on xfs, and ext4 since 6.16) are cut from such blocks and skip the reserve: in this lab's guest about two pages in five of a `cat` pay `page_first_touch` from its first read", page_reporting_order: u32),
    machine!("chance", KnobKind::Bool, (0, 1), "the system's chance: each device's service times (an SSD read meeting a program or an erase, a TLC page's read time, a disk's spindle phase and firmware time, a loop device's backing I/O), `wakeup_latency` and where in the kernel's tick the run starts are drawn from the run's seed; `false` takes each draw's median instead (and starts the run with a tick), so every seed gives the same run (a workload's random offsets still follow the seed)", chance: bool),
    machine!("wait_recheck_cost", dur(SEC), (0, 5 * US), "a page waiter woken for nothing: re-test, `finish_wait`, `prepare_to_wait`, sleep again", wait_recheck_cost: u64),
    MachineKnob {
        default_text: Some("`0` (the era's)"),
        ..machine!("page_wait_buckets", KnobKind::Count { min: 0, max: 1 << 20 }, (0, 4096), "hashed page wait table size; 0: per zone clamp(pow2(pages/256), 4, 4096) before 4.10, 256 from 4.10", page_wait_buckets: u32)
    },
    MachineKnob {
        refuse: refuse_odd_page_size,
        ..machine!("page_size", size(4096, 65536), (4096, 65536), "a power of two; the kernel's PAGE_SIZE (sparc64: 8 KiB): page waits and `unlock_page` wakeups are per kernel page, and the wait table is sized by it. The page cache keeps 4 KiB pages (the file system's blocks: a write reads only the blocks it covers in part)", page_size: u64)
    },
    machine!("struct_page_size", KnobKind::Count { min: 16, max: 1024 }, (16, 256), "bytes; `sizeof(struct page)`: before 4.7 (`[policy] page_hash`) a 2^k-byte multiple puts all pages in 2^(13−k) buckets of the wait table", struct_page_size: u32);
    // docs:begin machine-test
    test: MachineKnob {
        knob: Knob {
            key: "test_machine_cost",
            kind: dur(MS),
            doc: "test-only: a machine key kept by name, to show how",
            get: |m| KnobValue::Uint(m.extra.get("test_machine_cost").unwrap_or(0)),
            set: |m, v| m.extra.set("test_machine_cost", v.uint()),
        },
        default_text: None,
        typical: (0, 10 * US),
        refuse: refuse_nothing,
    }
    // docs:end machine-test
);
// docs:end machine-list

/// `[machine] buddyinfo`, a list the knob kinds do not hold: read by the parser on its own, and
/// listed after the table's keys in the reference.
pub const BUDDYINFO_KEY: &str = "buddyinfo";
/// What the reference says of `buddyinfo`.
pub const BUDDYINFO_DOC: &str = "up to 11 counts, order 0 first, as a line of `/proc/buddyinfo` shows them (zones summed); the free blocks the machine starts with once reporting has settled. Those below `page_reporting_order` are backed, the rest reported; an allocation takes the smallest free block that holds its folio, so a copy in 64 KiB folios finds backed memory in blocks a copy in 1 MiB folios cannot use. Given, it stands in for `page_reporting_reserve`; `wblab measure` records it as the workload starts (`buddyinfo` in `machine.json`)";

/// The `[machine]` key `key` names.
pub fn machine_knob(key: &str) -> Option<&'static MachineKnob> {
    MACHINE_KNOBS.iter().find(|k| k.knob.key == key)
}
