//! Memory management: the page cache (per-file extent maps), the global and per-wb counters,
//! dirty limits and throttling (`page_writeback`), completion proportions
//! (`flex_proportions`; the older event-counted `proportions`), the throttling policies of the
//! older generations (`throttle_global`, `throttle_per_bdi`, `throttle_ioless`), and reclaim
//! (`vmscan` for 6.x, `vmscan_pageout` for the generations whose reclaim wrote dirty pages),
//! and memory cgroups (`memcontrol`).

pub mod filemap;
pub mod flex_proportions;
pub mod free_lists;
pub mod highmem;
pub mod inactive_list;
pub mod memcontrol;
pub mod page_alloc;
pub mod page_cache;
pub mod page_reporting;
pub mod page_writeback;
pub mod proportions;
pub mod readahead;
pub mod throttle_bdflush;
pub mod throttle_global;
pub mod throttle_ioless;
pub mod throttle_per_bdi;
pub mod vmscan;
pub mod vmscan_pageout;
pub mod vmstat;
