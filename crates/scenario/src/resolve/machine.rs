//! `[machine]`: memory, CPUs and the cost of copying.

use crate::error::{Gather, Many};
use crate::section::Section;
use crate::units::format_size;
use wblab_sim::config::MachineConfig;
use wblab_sim::units::{GIB, MIB};

pub(super) const KEYS: &[&str] = &[
    "memory",
    "cpus",
    "memory_bandwidth",
    "unreclaimable",
    "highmem",
    "other_dirty",
    "syscall_overhead",
    "wakeup_cost",
    "context_switch_cost",
    "completion_cost",
    "wakeup_latency",
    "idle_wake_latency",
    "page_first_touch",
    "page_first_touch_read",
    "page_reporting_delay",
    "page_reporting_reserve",
    "page_reporting_order",
    "buddyinfo",
    "chance",
    "wait_recheck_cost",
    "page_wait_buckets",
    "struct_page_size",
    "page_size",
];
/// Below this the kernel's watermarks and reserves leave no page cache worth modelling.
const MIN_MEMORY: u64 = 64 * MIB;
/// A bound that keeps page counts far from overflow in the model's arithmetic.
const MAX_MEMORY: u64 = 64 * 1024 * GIB;

pub(super) fn build(sec: &Section<'_>) -> Many<MachineConfig> {
    let mut g = Gather::default();
    g.extend(sec.unknown_keys(KEYS, "key in [machine]"));
    let mut m = MachineConfig::default();
    g.read(sec, "memory", &mut m.memory, |e| e.size_in(MIN_MEMORY, MAX_MEMORY));
    // NR_CPUS of a distribution x86-64 kernel.
    g.read(sec, "cpus", &mut m.cpus, |e| e.u32(1, 4096));
    g.read(sec, "memory_bandwidth", &mut m.memory_bandwidth, |e| e.rate());
    g.read(sec, "unreclaimable", &mut m.unreclaimable, |e| e.size());
    g.read(sec, "highmem", &mut m.highmem, |e| e.size());
    g.read(sec, "other_dirty", &mut m.other_dirty, |e| e.size_in(0, MAX_MEMORY));
    g.read(sec, "syscall_overhead", &mut m.syscall_overhead, |e| {
        e.duration_in(0, 1_000_000_000)
    });
    g.read(sec, "wakeup_cost", &mut m.wakeup_cost, |e| e.duration_in(0, 1_000_000_000));
    g.read(sec, "context_switch_cost", &mut m.context_switch_cost, |e| {
        e.duration_in(0, 1_000_000_000)
    });
    g.read(sec, "completion_cost", &mut m.completion_cost, |e| e.duration_in(0, 1_000_000));
    g.read(sec, "wakeup_latency", &mut m.wakeup_latency, |e| e.duration_in(0, 1_000_000_000));
    g.read(sec, "idle_wake_latency", &mut m.idle_wake_latency, |e| {
        e.duration_in(0, 1_000_000_000)
    });
    g.read(sec, "page_first_touch", &mut m.page_first_touch, |e| e.duration_in(0, 1_000_000));
    if let Some(e) = sec.get("page_first_touch_read") {
        m.page_first_touch_read = g.keep(e.duration_in(0, 1_000_000));
    }
    g.read(sec, "page_reporting_delay", &mut m.page_reporting_delay, |e| {
        // The pass is delayed work on the jiffies clock (2 s upstream, not tunable there): a
        // delay under 10 ms has no kernel counterpart and would only make the run crawl.
        match e.duration_in(0, 3_600_000_000_000)? {
            d @ 1..10_000_000 => Err(e
                .problem(format!(
                    "{} is shorter than any reporting delay a kernel uses",
                    crate::units::format_duration(d)
                ))
                .hint("write 0 to turn reporting off, or a delay of 10ms or more (upstream: 2s)")),
            d => Ok(d),
        }
    });
    if let Some(e) = sec.get("page_reporting_reserve") {
        m.page_reporting_reserve = g.keep(e.size_in(0, MAX_MEMORY));
    }
    g.read(sec, "page_reporting_order", &mut m.page_reporting_order, |e| e.u32(0, 20));
    if let Some(e) = sec.get("buddyinfo") {
        m.buddyinfo = g.keep(buddyinfo(e));
    }
    g.read(sec, "chance", &mut m.chance, |e| e.boolean());
    g.read(sec, "wait_recheck_cost", &mut m.wait_recheck_cost, |e| {
        e.duration_in(0, 1_000_000_000)
    });
    g.read(sec, "page_wait_buckets", &mut m.page_wait_buckets, |e| e.u32(0, 1 << 20));
    g.read(sec, "struct_page_size", &mut m.struct_page_size, |e| e.u32(16, 1024));
    g.read(sec, "page_size", &mut m.page_size, |e| {
        let v = e.size_in(4096, 65536)?;
        e.power_of_two(v, "a page size", "4KiB (x86), 8KiB (sparc64), 16KiB or 64KiB (arm64, ppc64)")
    });
    g.sound()?;
    // Half of memory is generous: the model needs room for page cache and its watermarks.
    if m.unreclaimable > m.memory / 2 {
        return Err(vec![sec
            .conflict(
                &["unreclaimable", "memory"],
                format!(
                    "unreclaimable memory ({}) is more than half of memory ({})",
                    format_size(m.unreclaimable),
                    format_size(m.memory)
                ),
            )
            .hint("lower unreclaimable or raise memory")]);
    }
    // The level stands for pages other flushers keep writing; one past a sixteenth of memory
    // would be over the background threshold of the defaults and not steady.
    if m.other_dirty > m.memory / 16 {
        return Err(vec![sec
            .conflict(
                &["other_dirty", "memory"],
                format!(
                    "other_dirty ({}) is more than a sixteenth of memory ({})",
                    format_size(m.other_dirty),
                    format_size(m.memory)
                ),
            )
            .hint("a system's own files keep a few dozen pages dirty (`grep -E 'nr_dirty|nr_writeback' /proc/vmstat` on a quiet machine); a device written this hard belongs in the scenario as a job")]);
    }
    // A 32-bit kernel: lowmem (memory - highmem) holds the kernel and all of `unreclaimable`,
    // and needs room for its watermarks, reserve and buffer cache besides.
    if m.highmem > 0 && m.unreclaimable + LOWMEM_ROOM > m.memory.saturating_sub(m.highmem) {
        return Err(vec![sec
            .conflict(
                &["highmem", "memory"],
                format!(
                    "highmem ({}) leaves {} of lowmem, not enough for unreclaimable ({}) and {} of page cache",
                    format_size(m.highmem),
                    format_size(m.memory.saturating_sub(m.highmem)),
                    format_size(m.unreclaimable),
                    format_size(LOWMEM_ROOM)
                ),
            )
            .hint("an i386 kernel has 896 MiB of lowmem: highmem = memory - 896MiB")]);
    }
    Ok(m)
}

/// Page cache a 32-bit machine's lowmem must have room for besides `unreclaimable`.
const LOWMEM_ROOM: u64 = 64 * MIB;

/// `[machine] buddyinfo`: free blocks per order from order 0, as a line of `/proc/buddyinfo`
/// shows them after its zone's name.
fn buddyinfo(e: &crate::section::Entry<'_>) -> crate::error::Result<Vec<u64>> {
    const ORDERS: usize = wblab_sim::config::NR_ORDERS;
    let hint = || "copy the numbers of a line of /proc/buddyinfo, order 0 first: \"17507 9681 5549 3005 1116 696 1531 1625 1113 720 1762\"";
    let counts = e
        .str()?
        .split_whitespace()
        .map(|w| {
            w.parse::<u64>()
                .map_err(|_| e.problem(format!("{w:?} is not a count of free blocks")).hint(hint()))
        })
        .collect::<crate::error::Result<Vec<u64>>>()?;
    match counts.len() {
        0 => Err(e.problem("lists no free blocks").hint(hint())),
        n if n > ORDERS => Err(e
            .problem(format!("has {n} orders; the page allocator has {ORDERS} (0 to 10)"))
            .hint(hint())),
        _ if counts.iter().any(|&c| c > 1 << 40) => Err(e.problem("a count is larger than any machine's memory").hint(hint())),
        _ => Ok(counts),
    }
}
