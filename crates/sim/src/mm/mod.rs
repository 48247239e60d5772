//! Memory management: the page cache (per-file extent maps), the global and per-wb counters,
//! dirty limits and throttling (`page_writeback`), completion proportions
//! (`flex_proportions`; the older event-counted `proportions`), the throttling policies of the
//! older generations (`throttle_global`, `throttle_per_bdi`, `throttle_ioless`), and reclaim
//! (`vmscan` for 6.x, `vmscan_pageout` for the generations whose reclaim wrote dirty pages),
//! and memory cgroups (`memcontrol`).

pub(crate) mod filemap;
pub(crate) mod flex_proportions;
pub(crate) mod free_lists;
pub(crate) mod highmem;
pub(crate) mod inactive_list;
pub(crate) mod memcontrol;
pub(crate) mod page_alloc;
pub(crate) mod page_cache;
pub(crate) mod page_reporting;
pub(crate) mod page_writeback;
pub(crate) mod proportions;
pub(crate) mod readahead;
pub(crate) mod throttle_bdflush;
pub(crate) mod throttle_global;
pub(crate) mod throttle_ioless;
pub(crate) mod throttle_per_bdi;
pub(crate) mod vmscan;
pub(crate) mod vmscan_pageout;
pub(crate) mod vmstat;
