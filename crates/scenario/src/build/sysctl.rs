//! `[sysctl]`: the `vm.*` knobs, with the ranges and the ratio/bytes exclusivity of
//! `mm/page-writeback.c`.

use crate::error::Result;
use crate::section::Section;
use crate::suggest;
use wblab_sim::config::VmSysctl;
use wblab_sim::units::PAGE_SIZE;

const KEYS: &[&str] = &[
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_bytes",
    "vm.dirty_background_bytes",
    "vm.dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs",
    "vm.min_free_kbytes",
    "vm.watermark_scale_factor",
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

/// `INT_MAX`: the bound of the kernel's `int` sysctls.
const INT_MAX: u32 = i32::MAX as u32;

/// Also accepts the `/proc/sys/vm/dirty_ratio` and `vm/dirty_ratio` spellings `sysctl` takes.
pub(super) fn normalize(key: String) -> String {
    key.strip_prefix("/proc/sys/").unwrap_or(&key).replace('/', ".")
}

/// The `[sysctl]` section over `defaults` (the kernel release's boot-time values).
pub(super) fn build(sec: &Section<'_>, defaults: VmSysctl) -> Result<VmSysctl> {
    if let Some(e) = sec.entries.iter().find(|e| !KEYS.contains(&e.key.as_str())) {
        let p = e.key_problem("unknown sysctl");
        return Err(if UNMODELLED.contains(&e.key.as_str()) {
            e.key_problem("is a real sysctl but the model does not use it")
                .hint(format!("remove it; the modelled sysctls are {}", suggest::list(KEYS)))
        } else {
            p.hint(suggest::did_you_mean(&e.key, KEYS).unwrap_or_else(|| format!("modelled sysctls: {}", suggest::list(KEYS))))
        });
    }
    let mut s = defaults;
    sec.read("vm.dirty_ratio", &mut s.dirty_ratio, |e| e.u32(0, 100))?;
    sec.read("vm.dirty_background_ratio", &mut s.dirty_background_ratio, |e| e.u32(0, 100))?;
    // 0 reads as "not set" (what `sysctl -a` shows while the ratio is in use); a real write
    // must be at least `dirty_bytes_min` = 2 pages (dirty_bytes) or 1 byte (background).
    sec.read("vm.dirty_bytes", &mut s.dirty_bytes, |e| match e.size()? {
        b @ 1..8192 => Err(e
            .problem(format!(
                "must be 0 (not set) or at least {} bytes (2 pages), got {b}",
                2 * PAGE_SIZE
            ))
            .hint("the kernel refuses smaller values (dirty_bytes_min)")),
        b => Ok(b),
    })?;
    sec.read("vm.dirty_background_bytes", &mut s.dirty_background_bytes, |e| e.size())?;
    sec.read("vm.dirty_expire_centisecs", &mut s.dirty_expire_centisecs, |e| e.u32(0, INT_MAX))?;
    sec.read("vm.dirty_writeback_centisecs", &mut s.dirty_writeback_centisecs, |e| {
        e.u32(0, INT_MAX)
    })?;
    sec.read("vm.min_free_kbytes", &mut s.min_free_kbytes, |e| e.uint(0, u64::from(INT_MAX)))?;
    sec.read("vm.watermark_scale_factor", &mut s.watermark_scale_factor, |e| e.u32(1, 3000))?;

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
                return Err(sec
                    .conflict(&[ratio_key, bytes_key], format!("`{ratio_key}` and `{bytes_key}` are both set"))
                    .hint("keep one of the two: writing one zeroes the other in the kernel"))
            }
            _ => *ratio = 0,
        }
    }
    Ok(s)
}
