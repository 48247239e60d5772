//! `[sysctl]`: the `vm.*` knobs, with the ranges and the ratio/bytes exclusivity of
//! `mm/page-writeback.c`.

use crate::error::{Gather, Many, Result};
use crate::section::{Entry, Section};
use crate::suggest;
use wblab_sim::config::{KnobKind, KnobValue, VmSysctl, SYSCTLS};

/// 2.4's `vm.bdflush` and its slots: read by the 2.4 generations only, and not a file of
/// today's kernel, so not in the table of [`SYSCTLS`].
const BDFLUSH_KEYS: &[&str] = &[
    "vm.bdflush",
    "vm.bdflush.nfract",
    "vm.bdflush.ndirty",
    "vm.bdflush.nrefill",
    "vm.bdflush.interval",
    "vm.bdflush.age_buffer",
    "vm.bdflush.nfract_sync",
];

/// Every key of the section: the table's, then 2.4's bdflush.
pub(super) fn keys() -> Vec<&'static str> {
    SYSCTLS.iter().map(|k| k.knob.key).chain(BDFLUSH_KEYS.iter().copied()).collect()
}

/// 2.4's `/proc/sys/vm/bdflush` slots as `bdflush_min`/`bdflush_max` bound them (2.4.15; HZ =
/// 100): name, min, max. Slots 3, 7 and 8 are unused in mainline and must stay 0..=20000.
const BDFLUSH_SLOTS: [(&str, u32, u32); 9] = [
    ("nfract", 0, 100),
    ("ndirty", 0, 50_000),
    ("nrefill", 0, 20_000),
    ("dummy3", 0, 20_000),
    ("interval", 0, 1_000_000),
    ("age_buffer", 100, 600_000),
    ("nfract_sync", 0, 100),
    ("dummy7", 0, 20_000),
    ("dummy8", 0, 20_000),
];

/// Real sysctls that the model does not read: named as such instead of "unknown", so a user
/// pasting `sysctl -a` output learns they have no effect here.
const UNMODELLED: &[&str] = &[
    "vm.swappiness",
    "vm.vfs_cache_pressure",
    "vm.dirtytime_expire_seconds",
    "vm.laptop_mode",
    "vm.overcommit_memory",
    "vm.overcommit_ratio",
    "vm.overcommit_kbytes",
    "vm.page-cluster",
    "vm.drop_caches",
    "vm.zone_reclaim_mode",
    "vm.min_unmapped_ratio",
    "vm.min_slab_ratio",
    "vm.watermark_boost_factor",
    "vm.highmem_is_dirtyable",
    "vm.stat_interval",
    "vm.max_map_count",
    "vm.admin_reserve_kbytes",
    "vm.user_reserve_kbytes",
    "vm.percpu_pagelist_high_fraction",
    "vm.compaction_proactiveness",
    "vm.extfrag_threshold",
    "vm.page_lock_unfairness",
];

/// Also accepts the `/proc/sys/vm/dirty_ratio` and `vm/dirty_ratio` spellings `sysctl` takes.
pub(super) fn normalize(key: String) -> String {
    key.strip_prefix("/proc/sys/").unwrap_or(&key).replace('/', ".")
}

/// `vm.bdflush` (2.4): the nine integers `echo ... > /proc/sys/vm/bdflush` takes, or single
/// named slots (`vm.bdflush.nfract`), not both.
fn bdflush(sec: &Section<'_>, s: &mut VmSysctl) -> Result<()> {
    let mut a = s.bdflush.to_array();
    if let Some(e) = sec.get("vm.bdflush") {
        let example = "e.g. \"vm.bdflush\" = [40, 0, 0, 0, 500, 3000, 60, 0, 0] (nfract, ndirty, nrefill, -, interval, age_buffer, nfract_sync, -, -)";
        let toml::de::DeValue::Array(items) = e.value else {
            return Err(e.problem("must be an array of up to nine integers").hint(example));
        };
        if items.is_empty() || items.len() > 9 {
            return Err(e
                .problem(format!("has {} values; /proc/sys/vm/bdflush takes one to nine", items.len()))
                .hint(example));
        }
        for (i, item) in items.iter().enumerate() {
            let (name, lo, hi) = BDFLUSH_SLOTS[i];
            let one = Entry {
                key: format!("{}[{i}] ({name})", e.key),
                key_at: e.key_at,
                value: item.get_ref(),
                value_at: item.span().start,
            };
            a[i] = one.u32(lo, hi)?;
        }
        if let Some(single) = sec.entries.iter().find(|x| x.key.starts_with("vm.bdflush.")) {
            return Err(sec
                .conflict(
                    &["vm.bdflush", &single.key],
                    format!("`vm.bdflush` and `{}` are both set", single.key),
                )
                .hint("set the whole vector or single slots, not both"));
        }
    }
    for (i, (name, lo, hi)) in BDFLUSH_SLOTS.iter().enumerate() {
        sec.read(&format!("vm.bdflush.{name}"), &mut a[i], |e| e.u32(*lo, *hi))?;
    }
    s.bdflush = wblab_sim::config::Bdflush::from_array(a);
    Ok(())
}

/// The `[sysctl]` section over `defaults` (the kernel release's boot-time values).
pub(super) fn build(sec: &Section<'_>, defaults: VmSysctl) -> Many<VmSysctl> {
    let mut g = Gather::default();
    let keys = keys();
    for e in sec.entries.iter().filter(|e| !keys.contains(&e.key.as_str())) {
        g.push(if UNMODELLED.contains(&e.key.as_str()) {
            e.key_problem("is a real sysctl but the model does not use it")
                .hint(format!(
                    "remove it (the modelled sysctls are {}); `wblab snapshot --lenient FILE` turns a whole `sysctl -a` paste into a scenario, listing such sysctls as comments",
                    suggest::list(&keys)
                ))
        } else {
            e.key_problem("unknown sysctl")
                .hint(suggest::did_you_mean(&e.key, &keys).unwrap_or_else(|| format!("modelled sysctls: {}", suggest::list(&keys))))
        });
    }
    let mut s = defaults;
    for k in SYSCTLS {
        let mut v = k.value(&s);
        g.read(sec, k.knob.key, &mut v, |e| {
            // The entry's own range errors and hints ("allowed: ..."), as for any integer.
            let v = match k.knob.kind {
                KnobKind::Count { min, max } => e.uint(min, max)?,
                KnobKind::Size { min, max, .. } => e.size_in(min, max)?,
                _ => super::model::knob_value(e, &k.knob.spec())?.uint(),
            };
            match (k.refuse)(v) {
                Some((problem, hint)) => Err(e.problem(problem).hint(hint)),
                None => Ok(v),
            }
        });
        if sec.get(k.knob.key).is_some() {
            (k.knob.set)(&mut s, KnobValue::Uint(v));
        }
    }
    let r = bdflush(sec, &mut s);
    g.keep(r);
    g.sound()?;

    // Writing one of a ratio/bytes pair zeroes the other in the kernel, so only one can be set.
    for (ratio_key, bytes_key, ratio, bytes) in [
        ("vm.dirty_ratio", "vm.dirty_bytes", &mut s.dirty_ratio, s.dirty_bytes),
        (
            "vm.dirty_background_ratio",
            "vm.dirty_background_bytes",
            &mut s.dirty_background_ratio,
            s.dirty_background_bytes,
        ),
    ] {
        if bytes == 0 {
            continue;
        }
        match sec.get(ratio_key) {
            Some(_) if *ratio != 0 => {
                return Err(vec![sec
                    .conflict(&[ratio_key, bytes_key], format!("`{ratio_key}` and `{bytes_key}` are both set"))
                    .hint("keep one of the two: writing one zeroes the other in the kernel")])
            }
            _ => *ratio = 0,
        }
    }
    Ok(s)
}
