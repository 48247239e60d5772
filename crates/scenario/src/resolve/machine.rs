//! `[machine]`: memory, CPUs and the cost of copying.

use crate::error::{Gather, Many};
use crate::section::Section;
use crate::units::format_size;
use wblab_sim::config::{KnobKind, KnobSpec, KnobValue, MachineConfig, BUDDYINFO_KEY, MACHINE_KNOBS};
use wblab_sim::units::MIB;

/// The keys of `[machine]`: the table's and `buddyinfo`.
pub(super) fn keys() -> Vec<&'static str> {
    MACHINE_KNOBS.iter().map(|k| k.knob.key).chain([BUDDYINFO_KEY]).collect()
}

pub(super) fn build(sec: &Section<'_>) -> Many<MachineConfig> {
    let mut g = Gather::default();
    g.extend(sec.unknown_keys(&keys(), "key in [machine]"));
    let mut m = MachineConfig::default();
    for k in MACHINE_KNOBS {
        let Some(e) = sec.get(k.knob.key) else { continue };
        let v = value(e, &k.knob.spec()).and_then(|v| match (k.refuse)(v.uint()) {
            Some((problem, hint)) => Err(e.problem(problem).hint(hint)),
            None => Ok(v),
        });
        if let Some(v) = g.keep(v) {
            (k.knob.set)(&mut m, v);
        }
    }
    if let Some(e) = sec.get(BUDDYINFO_KEY) {
        m.buddyinfo = g.keep(buddyinfo(e));
    }
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

/// The value of a `[machine]` key as its kind reads it, with the reader's own errors and hints
/// (`remove the quotes`, `sizes are bytes`): a machine key's doc is a description, not a hint.
fn value(e: &crate::section::Entry<'_>, spec: &KnobSpec) -> crate::error::Result<KnobValue> {
    Ok(match spec.kind {
        KnobKind::Count { min, max } => KnobValue::Uint(e.uint(min, max)?),
        KnobKind::Size { min, max, .. } => KnobValue::Uint(e.size_in(min, max)?),
        KnobKind::Rate => KnobValue::Uint(e.rate()?),
        KnobKind::Duration { max } => KnobValue::Uint(e.duration_in(0, max)?),
        KnobKind::Bool => KnobValue::Bool(e.boolean()?),
        _ => super::model::knob_value(e, spec)?,
    })
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
