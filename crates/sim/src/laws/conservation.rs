//! Conservation: pages and bytes are neither made nor lost.
//!
//! - Machine: free + page cache + pages being allocated + unreclaimable = RAM, and dirty +
//!   writeback fit in the page cache.
//! - Per file, per device (wb) and machine-wide: pages dirtied = pages written + dirty + under
//!   writeback (the model truncates nothing, so nothing is dropped dirty), and the files'
//!   counts add up to the device's and the machine's.
//! - Per device: bytes the device completed as writes = (pages whose writeback completed +
//!   NFS pages awaiting a COMMIT) × page size + O_DIRECT bytes + journal log bytes.
//! - Per memory cgroup: its usage (page cache of its files and its descendants', and their
//!   tasks' allocations in progress) stays within its memory.max.
//! - Dirty pages stay under the dirty limit plus the overshoot the throttling allows: each
//!   writer may dirty one ratelimit period or one write chunk past the limit before it is
//!   checked, and the limit itself may be the era's own.

use super::{Law, LawViolation};
use crate::machine::Machine;
use crate::units::PAGE_SIZE;

/// Pages a writer can dirty between two throttle checks, at most: the largest ratelimit
/// period the eras use (2.6's `ratelimit_pages` up to 4 MiB of `write_chunk` ×1.5, 6.x's
/// `nr_dirtied_pause` ≤ `dirty_poll_interval` ≈ 32 MiB of folios) plus one 2 MiB folio.
const WRITER_OVERSHOOT_PAGES: u64 = (32 << 20) / PAGE_SIZE + (2 << 20) / PAGE_SIZE;

impl Machine {
    /// The pressure accounting's task counts are the tasks' states, recounted: per group and
    /// CPU, those in I/O wait, in a memory stall, runnable, and the entity on the CPU; and no
    /// group was ever fully stalled longer than partly.
    fn law_pressure(&self) -> Option<LawViolation> {
        use crate::kernel::cpu::Who;
        use crate::kernel::psi::{IO_FULL, IO_SOME, MEM_FULL, MEM_SOME, TSK_IOWAIT, TSK_MEMSTALL, TSK_ONCPU, TSK_RUNNING};
        let ncpu = self.cpus.ncpus();
        let ngroups = self.memcgs.len() + 1;
        let mut want = vec![[0u32; 4]; ngroups * ncpu];
        let mut add = |memcg: Option<u16>, cpu: usize, flags: u8| {
            let path = std::iter::once(0).chain(std::iter::successors(memcg, |&c| self.memcgs[c as usize].parent).map(|c| c as usize + 1));
            for g in path {
                for (bit, flag) in [TSK_IOWAIT, TSK_MEMSTALL, TSK_RUNNING, TSK_ONCPU].into_iter().enumerate() {
                    want[g * ncpu + cpu][bit] += u32::from(flags & flag != 0);
                }
            }
        };
        for t in &self.tasks {
            add(t.memcg, t.psi.1 as usize, t.psi.0);
        }
        for cpu in 0..ncpu {
            // A task's burst is among its own states; a kernel thread's is counted here.
            if let Some(Who::Flusher(_) | Who::Kernel(_)) = self.cpus.running_on(cpu) {
                add(None, cpu, TSK_ONCPU | TSK_RUNNING);
            }
        }
        for g in 0..ngroups {
            for cpu in 0..ncpu {
                let have = self.psi.counts(g, cpu);
                if have != want[g * ncpu + cpu] {
                    return Some(self.violation(
                        Law::Conservation,
                        format!("pressure group {g} cpu {cpu}"),
                        format!(
                            "task counts (iowait, memstall, running, oncpu) {have:?} != the tasks' states {:?}",
                            want[g * ncpu + cpu]
                        ),
                    ));
                }
            }
            for (some, full) in [(IO_SOME, IO_FULL), (MEM_SOME, MEM_FULL)] {
                if self.psi.total(g, full) > self.psi.total(g, some) {
                    return Some(self.violation(Law::Conservation, format!("pressure group {g}"), "fully stalled longer than partly"));
                }
            }
        }
        None
    }

    pub(crate) fn law_conservation(&self) -> Option<LawViolation> {
        if let Some(v) = self.law_pressure() {
            return Some(v);
        }
        let c = |subject: &str, detail: String| Some(self.violation(Law::Conservation, subject, detail));
        let vm = &self.vm;
        if !vm.check_conservation() {
            return c(
                "memory",
                format!(
                    "free {} + file {} + allocating {} + unreclaimable {} != total {} pages, or dirty {} + writeback {} > file",
                    vm.nr_free, vm.nr_file, vm.nr_alloc_pending, vm.unreclaimable, vm.total, vm.nr_dirty, vm.nr_writeback
                ),
            );
        }
        if vm.nr_dirtied != vm.nr_written + vm.nr_dirty + vm.nr_writeback {
            return c(
                "memory",
                format!(
                    "pages dirtied {} != written {} + dirty {} + writeback {}",
                    vm.nr_dirtied, vm.nr_written, vm.nr_dirty, vm.nr_writeback
                ),
            );
        }
        let (mut file, mut dirty, mut wb) = (0, 0, 0);
        let nwb = self.wbs.len();
        let mut per_dev = vec![(0u64, 0u64, 0u64, 0u64); nwb];
        for (i, inode) in self.inodes.iter().enumerate() {
            let m = &inode.mapping;
            if inode.nr_dirtied != inode.nr_written + m.nr_dirty + m.nr_writeback {
                return c(
                    &self.inode_label(i as u32),
                    format!(
                        "pages dirtied {} != written {} + dirty {} + writeback {}",
                        inode.nr_dirtied, inode.nr_written, m.nr_dirty, m.nr_writeback
                    ),
                );
            }
            file += m.nr_pages;
            dirty += m.nr_dirty;
            wb += m.nr_writeback;
            let d = &mut per_dev[inode.wb as usize];
            d.0 += m.nr_dirty;
            d.1 += m.nr_writeback;
            d.2 += inode.nr_dirtied;
            d.3 += inode.nr_written;
        }
        if file != vm.nr_file || dirty != vm.nr_dirty || wb != vm.nr_writeback {
            return c(
                "memory",
                format!(
                    "files' pages/dirty/writeback {file}/{dirty}/{wb} != machine's {}/{}/{}",
                    vm.nr_file, vm.nr_dirty, vm.nr_writeback
                ),
            );
        }
        for (i, w) in self.wbs.iter().enumerate() {
            let (fd, fw, fdirtied, fwritten) = per_dev[i];
            if (w.reclaimable, w.writeback, w.dirtied, w.written) != (fd, fw, fdirtied, fwritten) {
                let cgroup = w.memcg.map_or(String::new(), |cg| {
                    format!(" (cgroup {})", self.cfg.cgroups.groups[cg as usize].path)
                });
                return c(
                    &format!("device {}{cgroup}", self.queues[w.dev as usize].name),
                    format!(
                        "wb dirty/writeback/dirtied/written {}/{}/{}/{} != its files' {fd}/{fw}/{fdirtied}/{fwritten}",
                        w.reclaimable, w.writeback, w.dirtied, w.written
                    ),
                );
            }
        }
        for (d, q) in self.queues.iter().enumerate() {
            // Every wb of the device wrote through its queue.
            let written: u64 = self.wbs.iter().filter(|w| w.dev as usize == d).map(|w| w.written).sum();
            // Parts of split bios that completed before the rest are written but not yet ended.
            // And pages waiting for the file system's end_io work.
            let expect = (written + q.unstable_pages + q.chains.waiting_pages + q.end_io.pages) * PAGE_SIZE
                + q.direct_bytes_written
                + q.log_bytes_written;
            if q.bytes_written != expect {
                return c(
                    &format!("device {}", q.name),
                    format!(
                        "wrote {} bytes, but written pages {} + unstable {} + split-bio parts {} (× {PAGE_SIZE}) + O_DIRECT {} + journal {} = {expect}",
                        q.bytes_written, written, q.unstable_pages, q.chains.waiting_pages, q.direct_bytes_written, q.log_bytes_written
                    ),
                );
            }
        }
        if let Some(why) = self.memcg_counters_check() {
            return c("memory cgroups", why);
        }
        for (cg, g) in self.memcgs.iter().enumerate() {
            let usage = self.memcg_usage(cg as u16).usage;
            if usage > g.max {
                return c(
                    &format!("cgroup {}", self.cfg.cgroups.groups[cg].path),
                    format!("usage {usage} pages is over memory.max {} pages", g.max),
                );
            }
        }
        self.law_dirty_limit()
    }

    /// Dirty (and NFS-unstable) pages within the limit plus every writer's overshoot.
    fn law_dirty_limit(&self) -> Option<LawViolation> {
        let (bg, thresh) = self.era_dirty_limits();
        let mut limit = thresh.max(bg).max(self.dom.dirty_limit);
        if matches!(self.cfg.policy.throttle, crate::config::ThrottleKind::Bdflush(_)) {
            // 2.4 counts against `nfract_sync` percent of its buffer total, at most RAM.
            let b = &self.cfg.sysctl.bdflush;
            limit = limit.max(self.vm.total * u64::from(b.nfract.max(b.nfract_sync).min(100)) / 100);
        }
        let writers = self.tasks.iter().filter(|t| !t.is_done()).count() as u64;
        let cpus = self.cfg.machine.cpus as u64;
        let bound = limit + limit / 4 + (writers + cpus) * WRITER_OVERSHOOT_PAGES + self.ratelimit_pages * cpus;
        let dirty = self.vm.nr_dirty + self.nr_unstable();
        if dirty > bound {
            return Some(self.violation(
                Law::Conservation,
                "dirty limit",
                format!(
                    "{dirty} dirty pages > limit {limit} + overshoot for {writers} writers on {cpus} CPUs (bound {bound}); \
                     background threshold {bg}"
                ),
            ));
        }
        None
    }
}
