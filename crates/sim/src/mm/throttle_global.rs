//! Dirty throttling of 2.6.0–2.6.23 (`mm/page-writeback.c`, checked against the 2.6.18–2.6.20
//! sources): one global threshold, a global `dirty_exceeded`, and dirtiers that do writeback
//! themselves.
//!
//! `balance_dirty_pages`:
//!
//! ```text
//! loop:
//!     (bg, thresh) = get_dirty_limits()
//!     if dirty + unstable + writeback <= thresh: break
//!     dirty_exceeded = 1                      # every dirtier now checks every 8 pages
//!     if dirty + unstable > 0:
//!         writeback_inodes(bdi, nr_to_write = write_chunk)   # in the task's context
//!         if dirty + unstable + writeback <= thresh: break
//!         pages_written += written; if pages_written >= write_chunk: break
//!     congestion_wait(WRITE, HZ/10)
//! clear dirty_exceeded if under; unless pdflush already works this bdi, start
//! background_writeout when dirty > bg.
//! ```
//!
//! `get_dirty_limits` takes its percentages of *all* page-cache-able memory (`vm_total_pages`,
//! not the dirtyable memory of 2.6.21+), and clamps `dirty_ratio` to half of the unmapped
//! share, at least 5 %. The model counts the machine's `unreclaimable` memory (kernel and
//! anonymous) as the mapped part.

use super::page_writeback::{DirtyThrottle, TaskDirty, Throttle, ThrottleCx, WbState};
use super::vmstat::VmStat;
use crate::config::VmSysctl;
use crate::units::PAGE_SIZE;

/// `vm_total_pages` (`nr_free_pagecache_pages()` at boot): everything above the high
/// watermarks.
pub(crate) fn vm_total_pages(vm: &VmStat) -> u64 {
    vm.total.saturating_sub(vm.wmark_high).max(1)
}

/// `set_ratelimit` / `writeback_set_ratelimit` before 3.2: vm_total_pages / (32 · CPUs), in
/// [16, 4 MiB worth of pages].
pub(crate) fn old_ratelimit_pages(vm: &VmStat, ncpus: u32) -> u64 {
    (vm_total_pages(vm) / (ncpus.max(1) as u64 * 32)).clamp(16, (4 << 20) / PAGE_SIZE)
}

/// The per-CPU `bdp_ratelimits` count of `cpu` before 3.2's per-task counting: pages the
/// CPU's dirtiers may still dirty before `balance_dirty_pages` runs (at least one).
pub(crate) fn cpu_ratelimit_left(bdp_ratelimits: &[u64], cpu: usize, ratelimit: u64) -> u64 {
    let cpu = cpu.min(bdp_ratelimits.len().saturating_sub(1));
    let p = bdp_ratelimits.get(cpu).copied().unwrap_or(0);
    ratelimit.saturating_sub(p).max(1)
}

/// `balance_dirty_pages_ratelimited_nr` before 3.2: once `cpu`'s count reaches `ratelimit`,
/// reset it and return what it held (the caller then runs `balance_dirty_pages`).
pub(crate) fn take_cpu_ratelimit(bdp_ratelimits: &mut [u64], cpu: usize, ratelimit: u64) -> Option<u64> {
    let cpu = cpu.min(bdp_ratelimits.len().saturating_sub(1));
    let p = bdp_ratelimits.get_mut(cpu)?;
    if *p < ratelimit {
        return None;
    }
    Some(std::mem::take(p))
}

/// `sync_writeback_pages()` before 2.6.31: 1.5 × ratelimit_pages.
pub(crate) fn sync_writeback_pages(ratelimit_pages: u64) -> u64 {
    ratelimit_pages + ratelimit_pages / 2
}

/// The byte knobs (2.6.29+) win over the ratios when set, as in every later kernel; the
/// model accepts them in every generation.
fn bytes_or(ratio_pages: u64, bytes: u64) -> u64 {
    if bytes > 0 {
        bytes.div_ceil(PAGE_SIZE)
    } else {
        ratio_pages
    }
}

/// `get_dirty_limits` of 2.6.20: (background, dirty) thresholds in pages. On a 32-bit
/// machine the percentages are of lowmem only ("We always exclude high memory from our
/// count", Linus, 2.6.20-rc3) — all of lowmem, its kernel and slab included; the unmapped
/// ratio stays a share of `vm_total_pages`.
pub(crate) fn get_dirty_limits_2620(vm: &VmStat, sysctl: &VmSysctl) -> (u64, u64) {
    let total = vm_total_pages(vm);
    let available = total.saturating_sub(vm.highmem).max(1);
    let mapped = vm.unreclaimable.min(total);
    let unmapped_ratio = 100 - (mapped * 100 / total) as u32;
    let mut dirty_ratio = sysctl.dirty_ratio;
    if dirty_ratio > unmapped_ratio / 2 {
        dirty_ratio = unmapped_ratio / 2;
    }
    dirty_ratio = dirty_ratio.max(5);
    let mut bg_ratio = sysctl.dirty_background_ratio;
    if bg_ratio >= dirty_ratio {
        bg_ratio = dirty_ratio / 2;
    }
    let dirty = bytes_or(dirty_ratio as u64 * available / 100, sysctl.dirty_bytes);
    let mut bg = bytes_or(bg_ratio as u64 * available / 100, sysctl.dirty_background_bytes);
    if bg >= dirty {
        bg = dirty / 2;
    }
    (bg, dirty)
}

/// The 2.6.0–2.6.23 policy.
pub(crate) struct GlobalThrottle {
    /// The global `dirty_exceeded` flag.
    pub dirty_exceeded: bool,
    pub ratelimit_pages: u64,
}

impl GlobalThrottle {
    pub(crate) fn new(vm: &VmStat, ncpus: u32) -> Self {
        GlobalThrottle {
            dirty_exceeded: false,
            ratelimit_pages: old_ratelimit_pages(vm, ncpus),
        }
    }

    fn ratelimit(&self) -> u64 {
        if self.dirty_exceeded {
            8
        } else {
            self.ratelimit_pages
        }
    }

    /// The loop top: over the limit? Then write back (if anything is dirty) or wait.
    fn loop_top(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        let (_, thresh) = get_dirty_limits_2620(cx.vm, cx.sysctl);
        let reclaimable = cx.vm.file_dirty();
        if reclaimable + cx.vm.nr_writeback <= thresh {
            return self.finish(cx, task);
        }
        self.dirty_exceeded = true;
        if reclaimable > 0 {
            task.bdp_step = 1;
            return Throttle::Writeback(task.write_chunk);
        }
        task.bdp_step = 0;
        Throttle::CongestionWait(cx.clock.hz / 10)
    }

    /// After the task's own writeback.
    fn after_writeback(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        let (_, thresh) = get_dirty_limits_2620(cx.vm, cx.sysctl);
        if cx.vm.dirty_level() <= thresh {
            return self.finish(cx, task);
        }
        task.pages_written += task.bdp_written;
        if task.pages_written >= task.write_chunk {
            return self.finish(cx, task);
        }
        task.bdp_step = 0;
        Throttle::CongestionWait(cx.clock.hz / 10)
    }

    fn finish(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        let (bg, thresh) = get_dirty_limits_2620(cx.vm, cx.sysctl);
        if cx.vm.dirty_level() <= thresh {
            self.dirty_exceeded = false;
        }
        task.bdp_step = 0;
        if !cx.writeback_in_progress && cx.vm.file_dirty() > bg {
            cx.out.kick_background = true;
        }
        Throttle::Proceed
    }
}

impl DirtyThrottle for GlobalThrottle {
    fn gate_after_dirtying(&self) -> bool {
        true
    }

    /// `balance_dirty_pages_ratelimited_nr`: the per-CPU count (bumped as pages are dirtied)
    /// reaching the ratelimit, 8 pages while `dirty_exceeded`, calls `balance_dirty_pages`.
    fn ratelimited(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        if take_cpu_ratelimit(cx.bdp_ratelimits, task.cpu, self.ratelimit()).is_none() {
            return Throttle::Proceed;
        }
        task.nr_dirtied = 0;
        task.pages_written = 0;
        task.write_chunk = sync_writeback_pages(self.ratelimit_pages);
        task.bdp_start = cx.clock.jiffies(cx.now);
        self.loop_top(cx, task)
    }

    fn resume(&mut self, cx: &mut ThrottleCx, task: &mut TaskDirty) -> Throttle {
        match task.bdp_step {
            1 => self.after_writeback(cx, task),
            _ => self.loop_top(cx, task),
        }
    }

    fn chunk_limit(&self, _wb: &WbState, bdp_ratelimits: &[u64], task: &TaskDirty) -> u64 {
        cpu_ratelimit_left(bdp_ratelimits, task.cpu, self.ratelimit())
    }

    fn pause_per_call(&self) -> bool {
        true
    }

    fn era_limits(
        &mut self,
        vm: &VmStat,
        sysctl: &VmSysctl,
        _dom: &super::page_writeback::WbDomain,
        _wb: &WbState,
        _wb_index: usize,
    ) -> Option<crate::metrics::EraLimits> {
        let (bg_thresh, thresh) = get_dirty_limits_2620(vm, sysctl);
        Some(crate::metrics::EraLimits {
            bg_thresh,
            thresh,
            wb_thresh: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm_2g(unreclaimable_mib: u64) -> VmStat {
        VmStat::boot(524_288, unreclaimable_mib * 256, 0, 10)
    }

    #[test]
    fn limits_are_a_share_of_all_memory_clamped_by_the_unmapped_share() {
        let vm = vm_2g(300);
        let total = vm_total_pages(&vm);
        // 300 MiB of 2 GiB mapped: unmapped 86 % → 40 % stands (43 > 40).
        let s = VmSysctl {
            dirty_ratio: 40,
            dirty_background_ratio: 10,
            ..Default::default()
        };
        let (bg, dirty) = get_dirty_limits_2620(&vm, &s);
        assert_eq!((bg, dirty), (total / 10, 40 * total / 100));
        // 1.2 GiB mapped: unmapped 40 % → dirty_ratio = 20, background stays 10.
        let vm = vm_2g(1228);
        let total = vm_total_pages(&vm);
        let (bg, dirty) = get_dirty_limits_2620(&vm, &s);
        assert_eq!((bg, dirty), (10 * total / 100, 20 * total / 100));
        // Ratios below 5 % are raised to 5 %; bg >= dirty is halved.
        let s = VmSysctl {
            dirty_ratio: 2,
            dirty_background_ratio: 10,
            ..Default::default()
        };
        let (bg, dirty) = get_dirty_limits_2620(&vm, &s);
        assert_eq!((bg, dirty), (2 * total / 100, 5 * total / 100));
    }

    #[test]
    fn ratelimit_and_write_chunk() {
        // 2 GiB, 2 CPUs: ~520k pages / 64 = 8,100 → capped at 1024; write_chunk 1536.
        let vm = vm_2g(300);
        assert_eq!(old_ratelimit_pages(&vm, 2), 1024);
        assert_eq!(sync_writeback_pages(1024), 1536);
        // 64 MiB and 4 CPUs: 16,384 − watermarks over 128 ≈ 127.
        let small = VmStat::boot(16_384, 1_024, 0, 10);
        let r = old_ratelimit_pages(&small, 4);
        assert!((120..=128).contains(&r), "{r}");
        assert_eq!(old_ratelimit_pages(&VmStat::boot(2_048, 0, 0, 10), 64), 16);
    }
}
