//! Units the kernel and the model count in.

/// Bytes per page (x86-64 base page).
pub use crate::engine::time::{NSEC_PER_MSEC, NSEC_PER_SEC, NSEC_PER_USEC};

pub const PAGE_SIZE: u64 = 4096;
/// log2(PAGE_SIZE).
pub const PAGE_SHIFT: u32 = 12;
/// Bytes per sector.
pub const SECTOR_SIZE: u64 = 512;

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const GIB: u64 = 1024 * MIB;
pub const TIB: u64 = 1024 * GIB;
pub const PIB: u64 = 1024 * TIB;

/// Pages needed to hold `bytes` (rounded up).
pub fn bytes_to_pages(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE_SIZE)
}

/// The pages a byte range touches: [first, end), the partial pages at either end included.
pub fn page_range(offset: u64, bytes: u64) -> (u64, u64) {
    (offset / PAGE_SIZE, (offset + bytes).div_ceil(PAGE_SIZE))
}

/// Pages per second → KB/s, as the writeback tracepoints print rates (`KBps()`).
pub fn pages_to_kbps(pages: u64) -> u64 {
    pages << (PAGE_SHIFT - 10)
}

/// `bytes` in the shortest exact form (`64MiB`, `4TB`, `4097`), for messages.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 10] = [
        ("PiB", PIB),
        ("TiB", TIB),
        ("GiB", GIB),
        ("MiB", MIB),
        ("KiB", KIB),
        ("PB", 1_000_000_000_000_000),
        ("TB", 1_000_000_000_000),
        ("GB", 1_000_000_000),
        ("MB", 1_000_000),
        ("KB", 1_000),
    ];
    UNITS
        .iter()
        .filter(|&&(_, mult)| bytes >= mult && bytes.is_multiple_of(mult))
        .map(|&(unit, mult)| format!("{}{unit}", bytes / mult))
        .chain(std::iter::once(bytes.to_string()))
        .min_by_key(String::len)
        .unwrap_or_default()
}

/// `ns` in the largest of s, ms, us, ns that keeps it short (`8.5ms`), for messages.
pub fn format_duration(ns: u64) -> String {
    for (unit, mult) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns >= mult {
            let frac = ns % mult;
            let whole = ns / mult;
            if frac == 0 {
                return format!("{whole}{unit}");
            }
            let width = mult.ilog10() as usize;
            let digits = format!("{frac:0width$}");
            return format!("{whole}.{}{unit}", digits.trim_end_matches('0'));
        }
    }
    format!("{ns}ns")
}
