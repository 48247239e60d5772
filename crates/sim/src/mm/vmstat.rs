//! Global page counters (`global_node_page_state` in the kernel), exact: the model has no
//! per-CPU counter drift (see docs/model-scope.md).

/// Node-wide page counters of the simulated machine.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct VmStat {
    /// Pages of RAM.
    pub total: u64,
    /// Pages neither in the page cache nor free (kernel, anonymous memory).
    pub unreclaimable: u64,
    /// Free pages.
    pub nr_free: u64,
    /// Page-cache pages: clean + dirty + under writeback (file LRU).
    pub nr_file: u64,
    /// `NR_FILE_DIRTY`.
    pub nr_dirty: u64,
    /// `NR_WRITEBACK`.
    pub nr_writeback: u64,
    /// Dirty and writeback pages of devices outside the scenario (`[machine] other_dirty`):
    /// the system's own files, which its other flushers keep at a steady level. A constant:
    /// counted wherever the kernel reads the global counters, never written back here.
    pub other_dirty: u64,
    /// `NR_DIRTIED` (cumulative).
    pub nr_dirtied: u64,
    /// `NR_WRITTEN` (cumulative).
    pub nr_written: u64,
    /// Pages allocated for the page cache but not yet inserted (a write's folio between
    /// allocation and copy).
    pub nr_alloc_pending: u64,
    /// `totalreserve_pages`: not dirtyable.
    pub totalreserve: u64,
    /// Zone watermarks, pages.
    pub wmark_min: u64,
    pub wmark_low: u64,
    pub wmark_high: u64,
    /// Pages of ZONE_HIGHMEM (32-bit machines; 0 on 64-bit), and the page-cache pages in it
    /// (see `highmem.rs`).
    pub highmem: u64,
    pub high_file: u64,
}

impl VmStat {
    /// `NR_FILE_DIRTY` as the kernel's global counter has it: the scenario's dirty pages and
    /// the other devices'.
    pub(crate) fn file_dirty(&self) -> u64 {
        self.nr_dirty + self.other_dirty
    }

    /// `NR_FILE_DIRTY + NR_WRITEBACK`, all devices: the global dirty level throttling
    /// compares with its thresholds.
    pub(crate) fn dirty_level(&self) -> u64 {
        self.file_dirty() + self.nr_writeback
    }

    /// Frames not free: page cache, kernel and anonymous memory, allocations in flight.
    pub(crate) fn in_use(&self) -> u64 {
        self.total - self.nr_free
    }

    /// Readahead's allocation into the page cache: `n` free pages if that leaves the min
    /// watermark intact (it gives up rather than reclaim hard).
    pub(crate) fn take_for_readahead(&mut self, n: u64) -> bool {
        if self.nr_free < n + self.wmark_min {
            return false;
        }
        self.nr_free -= n;
        self.nr_file += n;
        true
    }

    /// Set up counters and watermarks for `total` pages of RAM, of which `unreclaimable` are
    /// kernel/anon, as the kernel does at boot (`init_per_zone_wmark_min`,
    /// `__setup_per_zone_wmarks`, `calculate_totalreserve_pages`), for a single zone.
    pub(crate) fn boot(total: u64, unreclaimable: u64, min_free_kbytes: u64, watermark_scale_factor: u32) -> Self {
        let managed = total.saturating_sub(unreclaimable).max(1);
        let min_free_kb = if min_free_kbytes > 0 {
            min_free_kbytes
        } else {
            // sqrt(lowmem_kbytes * 16), clamped to [128 KiB, 256 MiB] (6.x).
            let lowmem_kb = total * 4;
            ((lowmem_kb * 16) as f64).sqrt().clamp(128.0, 262_144.0) as u64
        };
        let min = (min_free_kb / 4).min(managed / 4);
        let scaled = managed * watermark_scale_factor as u64 / 10_000;
        let delta = (min / 4).max(scaled);
        let low = min + delta;
        let high = min + 2 * delta;
        VmStat {
            total,
            unreclaimable,
            nr_free: managed,
            totalreserve: high.min(managed),
            wmark_min: min,
            wmark_low: low,
            wmark_high: high,
            ..Default::default()
        }
    }

    /// `global_dirtyable_memory`: free pages above the reserve plus the file LRU, less
    /// highmem's (`vm_highmem_is_dirtyable` = 0).
    pub(crate) fn dirtyable(&self) -> u64 {
        let x = self.nr_free - self.nr_free.min(self.totalreserve) + self.nr_file;
        x - self.highmem_dirtyable(x) + 1
    }

    /// `highmem_dirtyable_memory(total)`: highmem's free and LRU pages (all of the zone in
    /// the model, which keeps no kernel memory there), at most `total`.
    pub(crate) fn highmem_dirtyable(&self, total: u64) -> u64 {
        self.highmem.min(total)
    }

    /// Pages that are neither free nor kernel: must equal the page cache (conservation).
    pub(crate) fn check_conservation(&self) -> bool {
        // A page dirty again under writeback is in both counts, so each alone fits the cache.
        self.nr_free + self.nr_file + self.nr_alloc_pending + self.unreclaimable == self.total
            && self.nr_dirty <= self.nr_file
            && self.nr_writeback <= self.nr_file
    }
}
