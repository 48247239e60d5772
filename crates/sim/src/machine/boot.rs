//! Boot: the machine a scenario describes — its devices, cgroups, tasks and files — before
//! the first event.

use super::{Event, KernelThread, Machine, RunOptions};
use crate::block::queue::BlockQueue;
use crate::config::{FioLayout, FsKind, JobConfig, Scenario};
use crate::engine::{Clock, EventQueue, RngStream};
use crate::fs::block_alloc::{BlockMap, DevAllocator};
use crate::fs::fs_writeback::Wb;
use crate::fs::inode::Inode;
use crate::kernel::cpu::CpuPool;
use crate::kernel::task::Task;
use crate::mm::free_lists::FreeLists;
use crate::mm::page_reporting::{PageReporting, REPORTING_RESERVE_PAGES};
use crate::mm::page_writeback::{self, ThrottleOut, WbDomain, WbState};
use crate::mm::vmscan::Lru;
use crate::mm::vmstat::VmStat;
use crate::units::{bytes_to_pages, PAGE_SIZE};

/// Each device's writeback state, flusher and request queue, in the scenario's order.
fn attach_devices(cfg: &Scenario, clock: Clock, thresh: u64, now_j: u64) -> (Vec<WbState>, Vec<Wb>, Vec<BlockQueue>) {
    let mut wbs = Vec::new();
    let mut flushers = Vec::new();
    let mut queues = Vec::new();
    for d in &cfg.devices {
        let dev_t = crate::metrics::trace::DevT {
            major: d.major,
            minor: d.minor,
        };
        let mut wb = WbState::new(dev_t, &d.bdi, thresh, now_j);
        wb.dev = wbs.len() as u16;
        wbs.push(wb);
        flushers.push(Wb::new(now_j));
        let chance = RngStream::of_chance(cfg.machine.chance, cfg.seed, &format!("device/{}", d.name));
        queues.push(BlockQueue::new(d, chance, clock));
    }
    (wbs, flushers, queues)
}

/// The memory cgroups, with each task and its files placed in its group. On a cgroup v2
/// machine a group's files are written through a wb of their own per device
/// (`cgwb_create`), with its own lists, flusher work and bandwidth estimates, appended after
/// the devices' root wbs; not on NFS nor ext3/ext4 with data=journal, which do not support
/// cgroup writeback (`SB_I_CGROUPWB`), nor on v1.
fn attach_cgroups(
    cfg: &Scenario,
    (wbs, flushers): (&mut Vec<WbState>, &mut Vec<Wb>),
    inodes: &mut [Inode],
    tasks: &[Task],
    thresh: u64,
    now_j: u64,
) -> Vec<crate::mm::memcontrol::MemCgroup> {
    use crate::metrics::FIRST_CGROUP_INO;
    use crate::mm::memcontrol::MemCgroup;
    let min_ratio_sum = wbs.iter().map(|w| w.min_ratio_ppm).sum();
    let mut memcgs: Vec<MemCgroup> = cfg
        .cgroups
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| MemCgroup {
            parent: g.parent.map(|p| p as u16),
            max: g.memory_max.map_or(u64::MAX, |b| b / PAGE_SIZE),
            high: g.memory_high.map_or(u64::MAX, |b| b / PAGE_SIZE),
            low: g.memory_low.map_or(0, |b| b / PAGE_SIZE),
            domain: WbDomain {
                bdi_min_ratio_sum: min_ratio_sum,
                ..Default::default()
            },
            cgroup_ino: FIRST_CGROUP_INO + i as u64,
            ..Default::default()
        })
        .collect();
    let v2 = cfg.cgroups.version == crate::config::CgroupVersion::V2;
    for (tid, t) in tasks.iter().enumerate() {
        let Some(cg) = t.memcg else { continue };
        let g = &mut memcgs[cg as usize];
        g.tasks.push(tid as u32);
        // Every file the task uses (a fio job's several), each charged to one group only: a
        // file shared by tasks (fio's `filename`) goes to the first of them in a group, in
        // declaration order, as the kernel charges a page to whoever brings it in.
        let files = t.fio.as_ref().map_or(std::slice::from_ref(&t.file), |f| &f.files[..]);
        for &file in files {
            let inode = &mut inodes[file as usize];
            if inode.memcg.is_some() {
                continue;
            }
            g.inodes.push(file);
            inode.memcg = Some(cg);
            let d = &cfg.devices[inode.dev as usize];
            let cgroup_wb = !matches!(d.model, crate::config::DeviceModelConfig::Nfs(_))
                && !d.fs.as_ref().is_some_and(|m| m.data == crate::config::DataMode::Journal);
            if !v2 || !cgroup_wb {
                continue;
            }
            inode.wb = match wbs.iter().position(|w| w.dev == inode.dev && w.memcg == Some(cg)) {
                Some(w) => w as u16,
                None => {
                    let mut wb = WbState::new(wbs[inode.dev as usize].name, &d.bdi, thresh, now_j);
                    wb.dev = inode.dev;
                    wb.memcg = Some(cg);
                    wb.cgroup_ino = g.cgroup_ino;
                    g.has_wb = true;
                    wbs.push(wb);
                    flushers.push(Wb::new(now_j));
                    (wbs.len() - 1) as u16
                }
            };
        }
    }
    memcgs
}

impl Machine {
    /// blk-iolatency on each device where a cgroup has an `io.latency` target, with its 1 s
    /// timer.
    pub(crate) fn attach_io_latency(&mut self) {
        let tree = &self.cfg.cgroups;
        for (d, dc) in self.cfg.devices.iter().enumerate() {
            let targets: Vec<crate::Ns> = tree
                .groups
                .iter()
                .map(|g| g.io_latency.iter().find(|(dev, _)| *dev == d).map_or(0, |&(_, t)| t))
                .collect();
            if targets.iter().all(|&t| t == 0) {
                continue;
            }
            let parents: Vec<Option<usize>> = tree.groups.iter().map(|g| g.parent).collect();
            let q = &mut self.queues[d];
            q.iolat = Some(Box::new(crate::block::blk_iolatency::IoLatency::new(
                &parents,
                &targets,
                dc.queue.rotational,
                q.nr_requests,
            )));
            let at = crate::block::blk_iolatency::TIMER_NS;
            q.iolat_timer_at = Some(at);
            self.q.schedule(at, Event::IolatTimer(d as u16));
        }
    }

    /// The cgroups for the schedulers that schedule groups (bfq), with each one's weight on
    /// the device.
    pub(crate) fn attach_elv_groups(&mut self) {
        let tree = &self.cfg.cgroups;
        if tree.is_empty() {
            return;
        }
        for (d, q) in self.queues.iter_mut().enumerate() {
            let groups: Vec<crate::block::sched::ElvGroup> = tree
                .groups
                .iter()
                .map(|g| crate::block::sched::ElvGroup {
                    parent: g.parent.map(|p| p as u16),
                    weight: g.bfq_weight_on(d),
                })
                .collect();
            q.elv.set_cgroups(&groups);
        }
    }

    /// The cgroups' `io.max` rules: a throttle group per rule on each device's queue, and
    /// which group each cgroup's bios fall in.
    pub(crate) fn attach_io_max(&mut self) {
        let tree = &self.cfg.cgroups;
        for (d, dc) in self.cfg.devices.iter().enumerate() {
            let owners: Vec<usize> = (0..tree.groups.len())
                .filter(|&c| tree.groups[c].io_max.iter().any(|(dev, t)| *dev == d && t.is_limited()))
                .collect();
            if owners.is_empty() {
                continue;
            }
            let cfgs: Vec<_> = owners
                .iter()
                .map(|&c| tree.groups[c].io_max.iter().find(|(dev, _)| *dev == d).expect("owner").1.clone())
                .collect();
            let rules: Vec<Option<usize>> = (0..tree.groups.len())
                .map(|c| tree.io_max_group(c, d).and_then(|o| owners.iter().position(|&x| x == o)))
                .collect();
            let rotational = dc.queue.rotational;
            self.queues[d].set_cgroup_throttle(&dc.throttle, &rules, &cfgs, self.cfg.hz, rotational);
        }
    }
}

/// Every task instance with its file. Readers' pre-existing files are laid out contiguously
/// from the start of their device, in declaration order; written files get blocks at
/// writeback (delalloc).
fn spawn_tasks(cfg: &Scenario, allocs: &mut [DevAllocator]) -> (Vec<Inode>, Vec<Task>) {
    let mut inodes = Vec::new();
    let mut tasks = Vec::new();
    let mut pid = 1000;
    // fio's files by path: jobs that name the same `filename` share it.
    let mut fio_files: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    for tc in &cfg.tasks {
        for i in 0..tc.count {
            if let JobConfig::Fio(job) = &tc.job {
                let path = tc.file.replace("{n}", &i.to_string());
                let names: Vec<String> = if job.shared_file {
                    vec![path]
                } else {
                    (0..job.nrfiles).map(|k| format!("{path}.{k}")).collect()
                };
                // fio lays out (writes out), fallocates or truncates each file before the
                // job (`FioLayout`): laid out and fallocated blocks are contiguous.
                let pages = bytes_to_pages(job.file_size);
                let unwritten_extents = cfg.devices[tc.device]
                    .fs
                    .as_ref()
                    .is_some_and(|m| matches!(m.fs, FsKind::Ext4 | FsKind::Xfs));
                let files: Vec<u32> = names
                    .into_iter()
                    .map(|name| {
                        let f = *fio_files.entry(name).or_insert_with(|| {
                            let reserved = if job.layout == FioLayout::Sparse { 0 } else { pages };
                            let blocks = BlockMap::contiguous(allocs[tc.device].preallocate(reserved), reserved);
                            let mut inode = Inode::new(tc.device as u16, blocks, pages);
                            // ext3 has no unwritten extents: glibc's posix_fallocate writes
                            // the blocks instead. A bare device has no extents at all.
                            if job.layout == FioLayout::Preallocated && unwritten_extents {
                                inode.unwritten.insert(0..pages);
                            }
                            inodes.push(inode);
                            (inodes.len() - 1) as u32
                        });
                        // A file any job lays out is written out, whatever another job
                        // sharing it asked for.
                        if job.layout == FioLayout::Written {
                            let inode = &mut inodes[f as usize];
                            inode.unwritten.clear();
                            if inode.blocks.extents() == 0 {
                                inode.blocks = BlockMap::contiguous(allocs[tc.device].preallocate(pages), pages);
                            }
                        }
                        f
                    })
                    .collect();
                let stop = tc.stop.unwrap_or(cfg.duration).min(cfg.duration);
                let mut task = Task::new(tc, i, pid, files[0], stop, cfg.seed);
                task.fio = Some(Box::new(crate::workload::fio::FioState::new(job, files, cfg.seed, i)));
                tasks.push(task);
                pid += 1;
                continue;
            }
            let size_pages = tc.job.read_file_size().map_or(0, bytes_to_pages);
            let blocks = BlockMap::contiguous(allocs[tc.device].preallocate(size_pages), size_pages);
            let file = inodes.len() as u32;
            let mut inode = Inode::new(tc.device as u16, blocks, size_pages);
            // Writers create their files (dd's of=, the probes', tiotest's).
            inode.exists = size_pages > 0 || !tc.job.writes_own_file();
            inodes.push(inode);
            let stop = tc.stop.unwrap_or(cfg.duration).min(cfg.duration);
            tasks.push(Task::new(tc, i, pid, file, stop, cfg.seed));
            pid += 1;
        }
    }
    (inodes, tasks)
}

impl Machine {
    /// A machine for `cfg`, with the laws checked in debug and test builds.
    pub fn new(cfg: &Scenario) -> Self {
        Self::with_options(cfg, RunOptions::default())
    }

    pub fn with_options(cfg: &Scenario, opts: RunOptions) -> Self {
        let mut clock = Clock::new(cfg.hz);
        // One of the system's chances: without it the tick starts with the run.
        if cfg.machine.chance {
            clock.phase = RngStream::new(cfg.seed, "tick-phase").below(clock.tick_ns());
        }
        let total = cfg.machine.memory / PAGE_SIZE;
        let unreclaimable = cfg.machine.unreclaimable / PAGE_SIZE;
        let mut vm = VmStat::boot(total, unreclaimable, cfg.sysctl.min_free_kbytes, cfg.sysctl.watermark_scale_factor);
        vm.highmem = cfg.machine.highmem / PAGE_SIZE;
        vm.other_dirty = cfg.machine.other_dirty / PAGE_SIZE;
        let mut dom = WbDomain::default();
        let ratelimit_pages = page_writeback::writeback_set_ratelimit(&mut dom, &vm, &cfg.sysctl, cfg.machine.cpus);
        let thresh = dom.dirty_limit;
        let now_j = clock.jiffies(0);
        let (mut wbs, mut flushers, mut queues) = attach_devices(cfg, clock, thresh, now_j);
        page_writeback::seed_writeout_shares(&mut dom, &mut wbs, cfg.devices.iter().map(|d| d.writeout_share_pct));
        // The I/O priority each task's own requests carry, by task id, for the elevators.
        let prio: Vec<_> = cfg
            .tasks
            .iter()
            .flat_map(|tc| std::iter::repeat_n(tc.ioprio, tc.count as usize))
            .collect();
        for q in &mut queues {
            q.task_prio = prio.clone();
            // The elevators' own tracepoints (kyber's) go with the writeback events; those
            // that may fire on every dispatch only with the block events.
            q.elv_trace = cfg.trace.writeback && q.elv.trace_on(cfg.trace.block);
            q.blk_trace = cfg.trace.block;
        }
        let queues_capacity: Vec<u64> = queues.iter().map(|q| q.capacity_sectors).collect();
        let ndevs = queues.len();
        dom.bdi_min_ratio_sum = wbs.iter().map(|w| w.min_ratio_ppm).sum();

        let journals: Vec<Option<crate::fs::jbd2::Journal>> = cfg
            .devices
            .iter()
            .zip(&queues_capacity)
            .map(|(d, &cap)| {
                d.fs.as_ref()
                    .filter(|m| m.journalled())
                    .map(|m| crate::fs::jbd2::Journal::new(m, cap))
            })
            .collect();
        let mut allocs: Vec<DevAllocator> = queues.iter().map(|q| DevAllocator::new(q.capacity_sectors)).collect();
        // No file's blocks in the journal's area.
        for (a, j) in allocs.iter_mut().zip(&journals) {
            if let Some(j) = j {
                let fc = if j.p.fast_commit {
                    8 * crate::fs::jbd2::FC_AREA_BLOCKS as u64
                } else {
                    0
                };
                a.reserve(j.area_start..j.area_start + j.area_len + fc);
            }
        }
        let (mut inodes, tasks) = spawn_tasks(cfg, &mut allocs);
        for (a, d) in allocs.iter_mut().zip(&cfg.devices) {
            a.skip_used(d.used_pct);
            if d.fs.as_ref().is_some_and(|m| m.bitmap_alloc) {
                a.use_ext3_bitmap();
            } else if d.fs.as_ref().is_some_and(|m| m.fs == crate::config::FsKind::Ext4) {
                a.use_inode_prealloc();
            }
        }
        let memcgs = attach_cgroups(cfg, (&mut wbs, &mut flushers), &mut inodes, &tasks, thresh, now_j);
        let ncpus = cfg.machine.cpus.max(1);
        let ntasks = tasks.len();
        let policy = crate::generations::runtime::build_policy(cfg, &vm);
        let era = crate::generations::runtime::EraState::new(cfg, ntasks);
        let nflushers = wbs.len() + era.extra_flushers();
        let mut m = Machine {
            clock,
            q: EventQueue::new(),
            reporting: (cfg.machine.page_first_touch > 0 || cfg.machine.page_first_touch_read > Some(0)).then(|| {
                let m = &cfg.machine;
                let r = PageReporting::new(
                    m.page_reporting_delay,
                    vm.in_use(),
                    m.page_reporting_reserve
                        .map_or(vm.wmark_low + REPORTING_RESERVE_PAGES, |b| b / PAGE_SIZE),
                    m.page_reporting_order,
                );
                match &m.buddyinfo {
                    Some(blocks) => r.with_free_lists(FreeLists::new(blocks, m.page_reporting_order)),
                    None => r,
                }
            }),
            vm,
            dom,
            wbs,
            flushers,
            queues,
            inodes,
            allocs,
            kthreads: vec![KernelThread::default(); ndevs],
            cpus: CpuPool::new(ncpus, ntasks, nflushers, ndevs, {
                let s = crate::generations::sched_slice(&cfg.kernel, ncpus);
                (s.ns, if s.at_tick { clock.tick_ns() } else { 0 })
            }),
            flusher_cpu: vec![0; nflushers],
            lru: Lru::default(),
            policy,
            era,
            bdp_ratelimits: vec![0; ncpus as usize],
            ratelimit_pages,
            tout: ThrottleOut {
                trace_enabled: cfg.trace.writeback,
                ..Default::default()
            },
            reclaim_waiters: Vec::new(),
            reclaim_written: 0,
            fprop_armed: false,
            vmstat: Vec::new(),
            throttle: Vec::new(),
            scratch_done: Vec::new(),
            run_end: None,
            scratch_ids: Vec::new(),
            rng: RngStream::of_chance(cfg.machine.chance, cfg.seed, "machine"),
            pagewait: crate::kernel::waitqueue::PageWaitTable::new(
                cfg.policy.page_wake,
                crate::kernel::waitqueue::table_size(
                    cfg.policy.page_wake,
                    cfg.machine.memory,
                    cfg.machine.page_size,
                    cfg.machine.page_wait_buckets,
                ),
            )
            .hashed_as(
                cfg.policy.page_hash,
                cfg.machine.struct_page_size,
                cfg.machine.page_size,
                cfg.machine.memory,
            ),
            bufwait: crate::kernel::waitqueue::PageWaitTable::new(
                crate::kernel::waitqueue::buffer_wake(cfg.policy.page_wake),
                crate::kernel::waitqueue::BH_WAIT_TABLE,
            ),
            tiotest: Default::default(),
            laws: crate::laws::Laws::new(opts.check_laws, ntasks),
            journals,
            psi: crate::kernel::psi::Psi::new(ncpus as usize, memcgs.len()),
            pressure: Vec::new(),
            memcgs,
            groups: crate::kernel::task::TaskGroups::new(&cfg.tasks, &tasks),
            tasks,
            cfg: cfg.clone(),
        };
        let gauge = m.cpus.gauge();
        for (q, d) in m.queues.iter_mut().zip(&cfg.devices) {
            q.map_queues(d.model.nr_hw_queues(), ncpus);
            q.device.watch_cpus(gauge.clone());
        }
        m.mark_preexisting();
        m.attach_io_max();
        m.attach_io_latency();
        m.attach_elv_groups();
        m.setup_era();
        m
    }

    /// Tell each device which of its sectors hold data before the run: the files laid out
    /// beforehand, less the blocks fallocated as unwritten extents. Not the file system's
    /// journal or inode tables: `mke2fs` on a preallocated image discards it (punches holes)
    /// and zeroes its journal with `FALLOC_FL_ZERO_RANGE`, so after it `filefrag` shows a
    /// 2 GiB image with ~300 blocks written and the 64 MiB journal unwritten; the first pass
    /// of the journal writes new blocks of the image.
    pub(crate) fn mark_preexisting(&mut self) {
        for d in 0..self.queues.len() {
            let mut written = rangemap::RangeSet::new();
            let end = self.allocs[d].preexisting_end();
            if end > 0 {
                written.insert(0..end);
            }
            for inode in self.inodes.iter().filter(|i| i.dev as usize == d) {
                for pages in inode.unwritten.iter() {
                    if let Some(s) = inode.blocks.lookup(pages.start) {
                        written.remove(s..s + (pages.end - pages.start) * (PAGE_SIZE / 512));
                    }
                }
            }
            if let Some(j) = &self.journals[d] {
                written.remove(j.area_start..j.area_start + j.area_len);
            }
            for r in written.iter() {
                self.queues[d].device.mark_written(r.clone());
            }
        }
    }
}
