//! Units the kernel and the model count in.

/// Bytes per page (x86-64 base page).
pub const PAGE_SIZE: u64 = 4096;
/// log2(PAGE_SIZE).
pub const PAGE_SHIFT: u32 = 12;
/// Bytes per sector.
pub const SECTOR_SIZE: u64 = 512;

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const GIB: u64 = 1024 * MIB;

/// Pages needed to hold `bytes` (rounded up).
pub fn bytes_to_pages(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE_SIZE)
}

/// Pages per second → KB/s, as the writeback tracepoints print rates (`KBps()`).
pub fn pages_to_kbps(pages: u64) -> u64 {
    pages << (PAGE_SHIFT - 10)
}
