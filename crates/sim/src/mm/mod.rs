//! Memory management: the page cache (per-file extent maps), the global and per-wb counters,
//! dirty limits and throttling (`page_writeback`), completion proportions
//! (`flex_proportions`), and reclaim (`vmscan`).

pub mod flex_proportions;
pub mod page_cache;
pub mod page_writeback;
pub mod vmscan;
pub mod vmstat;
