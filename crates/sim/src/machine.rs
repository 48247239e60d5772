//! The simulated machine: owns every part of the model and drives them from one event queue.
//!
//! Parts talk through plain method calls on `Machine` (one owner, `&mut self`): no shared
//! pointers, no interior mutability. Kernel paths live in their own modules as `impl Machine`
//! blocks (`fs/fs_writeback.rs`, `workload/`), named after the kernel functions they model.

use crate::block::blk_trace::BlkWhat;
use crate::block::queue::{BlockQueue, Submit, Submitter, BLK_FLUSH_KICK_NS, BLK_FLUSH_STEP_NS, FLUSH_ID, NO_BIO};
use crate::block::sched::ElvTrace;
use crate::config::{FioLayout, FsKind, JobConfig, Scenario};
use crate::drivers::Op;
use crate::engine::time::NSEC_PER_SEC;
use crate::engine::{Clock, EventQueue, RngStream};
use crate::fs::block_alloc::{BlockMap, DevAllocator};
use crate::fs::fs_writeback::Wb;
use crate::fs::inode::Inode;
use crate::kernel::cpu::{cold_cost, CpuPool, Started, Who};
use crate::kernel::task::{Phase, Task};
use crate::laws::LawViolation;
use crate::metrics::trace::{BioEvent, Rwbs, TraceEvent, TraceRecord, TraceSink};
use crate::metrics::{DeviceResult, RunResult, TaskResult, ThrottleSample, VmstatSample};
use crate::mm::free_lists::FreeLists;
use crate::mm::page_cache::PageState;
use crate::mm::page_reporting::{PageReporting, REPORTING_RESERVE_PAGES};
use crate::mm::page_writeback::{self, DirtyThrottle, ThrottleOut, WbDomain, WbState};
use crate::mm::vmscan::{Lru, SWAP_CLUSTER_MAX};
use crate::mm::vmstat::VmStat;
use crate::units::{bytes_to_pages, PAGE_SIZE};
use crate::Ns;

/// Everything that can happen.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A task starts or continues (end of a sleep, a wakeup).
    TaskRun(u32),
    /// A task's timed wait ends, unless it was woken earlier (`gen` differs).
    TaskTimeout(u32, u32),
    /// The burst running on a CPU finished (its number on the CPU: a burst cut short leaves
    /// a stale one behind).
    CpuDone(u16, u32),
    /// A device has something due.
    Device(u16),
    /// blk-wbt window timer of a device.
    WbtTimer(u16),
    /// The elevator's own timer (CFQ's idle slice) on a device.
    ElvTimer(u16),
    /// blk-throttle `pending_timer` of a device.
    ThrotlTimer(u16),
    /// The flusher of a wb is woken.
    Flusher(u16),
    /// The delayed bandwidth update of a wb (`bw_dwork`).
    BwDwork(u16),
    /// The flex-proportions aging timer (`writeout_period`).
    FpropPeriod,
    /// Per-second vmstat sample.
    Sample,
    /// Per-200 ms throttling-state sample.
    ThrottleSample,
    /// Half-way through a task's life: snapshot bytes for steady-state throughput.
    TaskMid(u32),
    /// The commit timer of a device's journal.
    JournalTimer(u16),
    /// blk-iolatency's 1 s timer of a device.
    IolatTimer(u16),
    /// A device's journal thread runs after a wake-up.
    JournalWake(u16),
    /// The journal thread built the commit's log write (`fs::jbd2::JBD2_LOG_PREP_NS`).
    JournalLogPrepared(u16),
    /// blk-flush's kworker issues device `dev`'s pending flush.
    FlushKick(u16),
    /// The journal's pre-flush completed a step ago: its commit record goes
    /// (`block::queue::BLK_FLUSH_STEP_NS`).
    JournalFlushSeq(u16),
    /// Device `dev`'s end_io work converts extents and ends its pages' writeback.
    EndIoWork(u16),
    /// Free page reporting's pass (`page_reporting_process`): long-free frames go back to
    /// the host.
    PageReport,
}

/// The `rwbs` of a cache flush request.
const FLUSH_RWBS: Rwbs = Rwbs {
    flush: true,
    write: false,
    sync: false,
    readahead: false,
};

/// Progress reporting for long runs.
pub trait Progress {
    fn tick(&mut self, done: Ns, total: Ns);
}

/// How a run is carried out. Not part of the scenario: a run gives the same results whatever
/// these say, unless a law breaks.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Check the laws (`crate::laws`) while running. Always on in debug and test builds.
    pub check_laws: bool,
}

// In release builds `cfg!` is false and the impl looks derivable; it is not in debug builds.
#[allow(clippy::derivable_impls)]
impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            check_laws: cfg!(debug_assertions),
        }
    }
}

/// No progress output.
pub struct NoProgress;
impl Progress for NoProgress {
    fn tick(&mut self, _done: Ns, _total: Ns) {}
}

/// A device's kernel thread (the loop worker): CPU work handed to it while it ran or waited
/// for a CPU runs in its next burst, as a worker takes its whole list.
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelThread {
    pub pending: Ns,
    pub on_cpu: bool,
    /// Its burst waits in the run queue.
    pub queued: bool,
}

pub struct Machine {
    pub cfg: Scenario,
    /// When the run ended before `duration` (`until_done`: every task is done).
    pub run_end: Option<Ns>,
    pub clock: Clock,
    pub q: EventQueue<Event>,
    pub vm: VmStat,
    /// The frames a virtual machine's host backs, when touching others costs
    /// (`[machine] page_first_touch`, `page_first_touch_read`); `None` on a machine whose memory
    /// is all there.
    pub reporting: Option<PageReporting>,
    pub dom: WbDomain,
    /// mm side of each wb, one per device.
    pub wbs: Vec<WbState>,
    /// fs side (lists and flusher) of each wb.
    pub flushers: Vec<Wb>,
    pub queues: Vec<BlockQueue>,
    pub inodes: Vec<Inode>,
    /// Free-space allocator of each device (delayed allocation at writeback).
    pub allocs: Vec<DevAllocator>,
    pub tasks: Vec<Task>,
    pub cpus: CpuPool,
    /// The CPU each flusher entity last ran on (where its bios enter blk-mq).
    pub flusher_cpu: Vec<u16>,
    /// Each device's kernel thread: CPU work handed to it and not yet run.
    pub kthreads: Vec<KernelThread>,
    pub lru: Lru,
    pub policy: Box<dyn DirtyThrottle>,
    /// What the kernel generation adds at run time (congestion waits, pdflush, old LRU).
    pub era: crate::generations::runtime::EraState,
    pub bdp_ratelimits: Vec<u64>,
    pub ratelimit_pages: u64,
    pub tout: ThrottleOut,
    /// Tasks sleeping in `reclaim_throttle`, and pages written since the first of them slept.
    pub reclaim_waiters: Vec<u32>,
    pub reclaim_written: u64,
    pub fprop_armed: bool,
    pub vmstat: Vec<VmstatSample>,
    pub throttle: Vec<ThrottleSample>,
    /// Scratch vectors reused by the hot paths.
    pub scratch_done: Vec<u32>,
    pub scratch_ids: Vec<u32>,
    pub last_sample_dirtied: u64,
    pub rng: RngStream,
    /// The hashed page wait queues.
    pub pagewait: crate::kernel::waitqueue::PageWaitTable,
    /// tiotest's phase barrier and per-phase figures.
    pub tiotest: crate::workload::state::TiotestState,
    /// The run-time laws and their state.
    pub laws: crate::laws::Laws,
    /// Each device's journal, if its file system has one (`fs::jbd2`).
    pub journals: Vec<Option<crate::fs::jbd2::Journal>>,
    /// The memory cgroups, in the scenario's order (`mm::memcontrol`).
    pub memcgs: Vec<crate::mm::memcontrol::MemCgroup>,
    /// Pressure stall accounting of the system and each cgroup (`kernel::psi`).
    pub psi: crate::kernel::psi::Psi,
    /// Per second and group (0: the system, 1 + i: cgroup i), its pressure figures.
    pub pressure: Vec<crate::metrics::PressureSample>,
    /// The `[[task]]` groups, what waits for each, and how many tasks are left.
    pub groups: crate::kernel::task::TaskGroups,
}

/// Index of the first flusher in `RunResult::comms` (after "<idle>" and the tasks).
fn flusher_comm(m: &Machine, wb: u16) -> u32 {
    1 + m.tasks.len() as u32 + wb as u32
}

impl Machine {
    /// Index of device `dev`'s journal thread in `RunResult::comms` (after the flushers,
    /// one per journalled device).
    pub(crate) fn journal_comm(&self, dev: u16) -> u32 {
        let before = self.journals[..dev as usize].iter().filter(|j| j.is_some()).count() as u32;
        1 + self.tasks.len() as u32 + self.flushers.len() as u32 + before
    }

    /// Index of blk-throttle's dispatch worker in `RunResult::comms` (the last entry): it
    /// submits the bios the throttle released.
    fn throtl_comm(&self) -> u32 {
        let journals = self.journals.iter().filter(|j| j.is_some()).count() as u32;
        1 + self.tasks.len() as u32 + self.flushers.len() as u32 + journals
    }

    /// Who fires a block event of a request built by `sub`.
    fn submitter_comm(&self, sub: Submitter) -> u32 {
        match sub {
            Submitter::Task(t) => 1 + t,
            Submitter::Flusher(w) => flusher_comm(self, w),
            Submitter::Journal(d) => self.journal_comm(d),
        }
    }

    /// Who fires the issue of a flush first asked for by waiter `w` (a task or a journal).
    fn flush_waiter_comm(&self, w: u32) -> u32 {
        if w & crate::fs::jbd2::JOURNAL_WAITER != 0 {
            self.journal_comm((w & !crate::fs::jbd2::JOURNAL_WAITER) as u16)
        } else {
            1 + w
        }
    }
}

/// Each device's writeback state, flusher and request queue, in the scenario's order.
fn attach_devices(cfg: &Scenario, thresh: u64, now_j: u64) -> (Vec<WbState>, Vec<Wb>, Vec<BlockQueue>) {
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
        queues.push(BlockQueue::new(d, chance, cfg.hz));
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
    use crate::mm::memcontrol::{MemCgroup, FIRST_CGROUP_INO};
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
    fn attach_io_latency(&mut self) {
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

    fn on_iolat_timer(&mut self, dev: u16) {
        let now = self.now();
        let q = &mut self.queues[dev as usize];
        if let Some(l) = q.iolat.as_mut() {
            l.timer(now);
            let at = now + crate::block::blk_iolatency::TIMER_NS;
            q.iolat_timer_at = Some(at);
            self.q.schedule(at, Event::IolatTimer(dev));
        }
    }

    /// The cgroups for the schedulers that schedule groups (bfq), with each one's weight on
    /// the device.
    fn attach_elv_groups(&mut self) {
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
    fn attach_io_max(&mut self) {
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
            let size_pages = match &tc.job {
                JobConfig::Cat { file_size, .. } | JobConfig::Randread { file_size, .. } => bytes_to_pages(*file_size),
                _ => 0,
            };
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
        let clock = Clock::new(cfg.hz);
        let total = cfg.machine.memory / PAGE_SIZE;
        let unreclaimable = cfg.machine.unreclaimable / PAGE_SIZE;
        let mut vm = VmStat::boot(total, unreclaimable, cfg.sysctl.min_free_kbytes, cfg.sysctl.watermark_scale_factor);
        vm.highmem = cfg.machine.highmem / PAGE_SIZE;
        vm.other_dirty = cfg.machine.other_dirty / PAGE_SIZE;
        let mut dom = WbDomain::default();
        let ratelimit_pages = page_writeback::writeback_set_ratelimit(&mut dom, &vm, &cfg.sysctl, cfg.machine.cpus);
        let thresh = dom.dirty_limit;
        let now_j = clock.jiffies(0);
        let (mut wbs, mut flushers, mut queues) = attach_devices(cfg, thresh, now_j);
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
            last_sample_dirtied: 0,
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
        for (q, d) in m.queues.iter_mut().zip(&cfg.devices) {
            q.map_queues(d.model.nr_hw_queues(), ncpus);
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
    fn mark_preexisting(&mut self) {
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

    pub fn now(&self) -> Ns {
        self.q.now()
    }

    pub fn jiffies(&self) -> u64 {
        self.clock.jiffies(self.q.now())
    }

    /// Record a trace event fired by `who` on `cpu`.
    pub fn trace_ev(&mut self, who: u32, cpu: u16, ev: TraceEvent) {
        self.tout.trace.push(TraceRecord {
            t_ns: self.q.now(),
            who,
            cpu,
            ev,
        });
    }

    /// The throttling code's trace events from now on are fired by `who` on `cpu`.
    pub fn stamp_tout(&mut self, who: u32, cpu: u16) {
        self.tout.stamp = (self.q.now(), who, cpu);
    }

    /// Run `burst` ns of CPU for `who`; the entity continues when `CpuDone` fires.
    pub fn cpu_run(&mut self, who: Who, burst: Ns) {
        let now = self.now();
        let mut burst = burst;
        if let Who::Task(t) = who {
            let task = &mut self.tasks[t as usize];
            task.on_cpu = true;
            // User-mode work of the job (tiotest's buffers) runs in the same burst.
            let user = std::mem::take(&mut task.wq.user_pending);
            task.wq.user_burst = user;
            burst += user;
        }
        match self.cpus.request(now, who, burst.max(1)) {
            Some(s) => self.cpu_started(s),
            None => self.preempt_spinner(),
        }
        if let Who::Task(t) = who {
            // Runnable, and on the CPU if it got one: one change of its PSI states.
            self.psi_task_refresh(t);
        }
    }

    /// A wakeup found every CPU busy and asked a runner to give way. The kernel preempts it
    /// within microseconds; the model's bursts run to their end, except a spinner's, which
    /// has nothing to finish: it ends now.
    fn preempt_spinner(&mut self) {
        let Some((cpu, Who::Task(victim))) = self.cpus.take_preempted() else {
            return;
        };
        if self.tasks[victim as usize].phase != Phase::Spin {
            return;
        }
        let now = self.q.now();
        let (left, gen) = self.cpus.cut_short(now, cpu);
        let t = &mut self.tasks[victim as usize];
        t.cpu_user = t.cpu_user.saturating_sub(left);
        self.q.schedule(now, Event::CpuDone(cpu, gen));
    }

    /// `ns` of CPU for device `dev`'s kernel thread (the loop worker's commands): added to
    /// what it has to do, run when the scheduler gives it a CPU.
    fn kthread_work(&mut self, dev: u16, ns: Ns) {
        let k = &mut self.kthreads[dev as usize];
        k.pending += ns;
        if k.on_cpu || k.queued || k.pending == 0 {
            return;
        }
        let burst = std::mem::take(&mut k.pending);
        k.queued = true;
        match self.cpus.request(self.q.now(), Who::Kernel(dev), burst) {
            Some(s) => self.cpu_started(s),
            None => self.preempt_spinner(),
        }
    }

    fn cpu_started(&mut self, s: Started) {
        if !matches!(s.who, Who::Task(_)) {
            self.psi_oncpu(s.who, s.cpu, true);
        }
        if let Who::Kernel(d) = s.who {
            let k = &mut self.kthreads[d as usize];
            k.queued = false;
            k.on_cpu = true;
        }
        if let Who::Task(t) = s.who {
            let task = &mut self.tasks[t as usize];
            task.running = true;
            task.runq_wait += s.waited;
            let user = std::mem::take(&mut task.wq.user_burst).min(s.end - self.q.now());
            task.cpu_user += user;
            task.cpu_sys += s.end - self.q.now() - user;
            task.dirty.cpu = s.cpu as usize;
            self.psi_task_refresh(t);
        } else if let Who::Flusher(f) = s.who {
            self.flusher_cpu[f as usize] = s.cpu;
        }
        self.q.schedule(s.end, Event::CpuDone(s.cpu, s.gen));
    }

    // ---- page-cache accounting shared by the write, read and writeback paths ----

    /// `folio_account_dirtied` for the pages [start, start+n) of `file` that a write makes
    /// dirty, and `__mark_inode_dirty` if the inode was clean. Absent and clean pages become
    /// dirty; a page under writeback becomes dirty as well (`PG_writeback` + `PG_dirty`); an
    /// already dirty page is not dirtied again. The pages were allocated by the caller; the
    /// allocations of pages that were already cached are given back.
    pub fn account_dirtied(&mut self, tid: u32, file: u32, start: u64, n: u64) {
        let dev = self.inodes[file as usize].dev as usize;
        if self.allocs[dev].allocates_at_write() {
            // prepare_write's get_block: ext3 without reservation windows places each block now.
            let blocks = &mut self.inodes[file as usize].blocks;
            for p in start..start + n {
                blocks.ext3_get_block(p, &mut self.allocs[dev], u64::from(tid));
            }
        }
        let (mut absent, mut newly) = (0, 0);
        let mut idx = start;
        while idx < start + n {
            let m = &mut self.inodes[file as usize].mapping;
            let (st, run) = m.run_at(idx, start + n - idx);
            let to = match st {
                None | Some(PageState::Clean) => Some(PageState::Dirty),
                Some(PageState::Writeback) => Some(PageState::WritebackDirty),
                Some(PageState::Dirty) | Some(PageState::WritebackDirty) | Some(PageState::Queued) => None,
                // A read started on pages the writer had allocated but not yet inserted (the
                // kernel's writer holds them locked, so readahead would skip them): the write's
                // data wins, the read's completion finds them dirty and leaves them so.
                Some(PageState::Reading) => Some(PageState::Dirty),
            };
            if let Some(to) = to {
                m.set_range(idx, run, Some(to));
                newly += run;
                if st.is_none() {
                    absent += run;
                    self.page_inserted(file, idx, run);
                }
                if st == Some(PageState::Reading) {
                    // Whoever waits for those pages finds them uptodate now.
                    self.wake_pages(file, idx, run, crate::kernel::waitqueue::PG_LOCKED);
                }
            }
            idx += run;
        }
        self.vm.nr_alloc_pending -= n;
        self.tasks[tid as usize].alloc_pending -= n;
        self.memcg_pending(tid, -(n as i64));
        self.memcg_account(file, absent as i64, newly as i64, 0);
        self.vm.nr_file += absent;
        self.vm.nr_free += n - absent;
        self.inodes[file as usize].nr_dirtied += newly;
        self.laws.durability.dirtied(file, start, n);
        self.vm.nr_dirty += newly;
        self.vm.nr_dirtied += newly;
        let wb = self.inodes[file as usize].wb as usize;
        self.wbs[wb].reclaimable += newly;
        self.wbs[wb].dirtied += newly;
        self.policy.dirtied(tid, newly);
        let task = &mut self.tasks[tid as usize];
        task.dirty.nr_dirtied += newly;
        let cpu = task.dirty.cpu.min(self.bdp_ratelimits.len() - 1);
        self.bdp_ratelimits[cpu] += newly;
        self.mark_inode_dirty(file);
    }

    /// Writeback of `n` pages of `file` from `start` completed (`__folio_end_writeback`).
    pub fn end_page_writeback(&mut self, file: u32, start: u64, n: u64) {
        let inode = &mut self.inodes[file as usize];
        // A page written again during its I/O stays dirty (`folio_end_writeback` clears only
        // PG_writeback).
        let moved = inode.mapping.end_writeback(start, n);
        self.wake_pages(file, start, n, crate::kernel::waitqueue::PG_WRITEBACK);
        let inode = &mut self.inodes[file as usize];
        inode.nr_written += moved;
        let wb = inode.wb as usize;
        let inode_idle = inode.mapping.nr_writeback == 0;
        self.vm.nr_writeback -= moved;
        self.vm.nr_written += moved;
        self.memcg_account(file, 0, 0, -(moved as i64));
        self.wbs[wb].writeback -= moved;
        self.wbs[wb].writeout_add(&mut self.dom, moved);
        if let Some(cg) = self.wbs[wb].memcg {
            let w = &mut self.wbs[wb];
            w.memcg_completions
                .add_max(&mut self.memcgs[cg as usize].domain.completions, w.max_prop_frac, moved);
        }
        self.policy.writeout(wb, moved);
        match self.era.inactive.as_mut() {
            None => self.lru_add_clean(file, start, n),
            Some(l) => {
                l.rotate_reclaimable(file, start, n);
                if let Some(z) = self.era.zones.as_mut() {
                    z.high_list.rotate_reclaimable(file, start, n);
                }
            }
        }
        if !self.fprop_armed {
            self.fprop_armed = true;
            let period = 3 * NSEC_PER_SEC;
            self.q.schedule_in(period, Event::FpropPeriod);
        }
        if inode_idle {
            // wb_inode_writeback_end: one less inode under writeback, bandwidth update later.
            self.wbs[wb].writeback_inodes = self.wbs[wb].writeback_inodes.saturating_sub(1);
            if !self.flushers[wb].bw_dwork_pending {
                self.flushers[wb].bw_dwork_pending = true;
                let d = self.clock.tick_ns() * page_writeback::max_pause_jiffies(self.clock.hz);
                self.q.schedule_in(d, Event::BwDwork(wb as u16));
            }
        }
        // acct_reclaim_writeback: wake reclaim-throttled tasks once enough was written.
        if !self.reclaim_waiters.is_empty() {
            self.reclaim_written += moved;
            if self.reclaim_written > SWAP_CLUSTER_MAX * self.reclaim_waiters.len() as u64 {
                self.reclaim_written = 0;
                let ws = std::mem::take(&mut self.reclaim_waiters);
                for t in ws {
                    self.wake_task(t);
                }
            }
        }
    }

    /// Wake a sleeping task now (cancels its pending timeout).
    pub fn wake_task(&mut self, tid: u32) {
        self.wake_task_at(tid, self.q.now());
    }

    /// Wake a task now that runs at `at` (a wake-up that lands on an idle CPU): its timed
    /// wait, if any, is over.
    pub fn wake_task_at(&mut self, tid: u32, at: Ns) {
        let t = &mut self.tasks[tid as usize];
        t.wait_gen = t.wait_gen.wrapping_add(1);
        self.run_task_at(tid, at);
    }

    /// Let the task run at `at` (a `TaskRun` event), leaving any timed wait in place.
    pub fn run_task_at(&mut self, tid: u32, at: Ns) {
        self.tasks[tid as usize].runs_pending += 1;
        self.q.schedule(at, Event::TaskRun(tid));
        // What woke it (a completion, a wakeup) may have moved it on already.
        self.psi_task_refresh(tid);
    }

    /// A job run every `interval` (`fsync`, `sync`, `replace`) ended an operation: sleep until
    /// the next is due, `interval` after this one was due — not after it started, so that the
    /// wake-up's latency does not shift the rest of the run, as `wblab measure` runs them (a
    /// drifting cadence slides across periodic work such as blk-throttle's 100 ms slices). One
    /// overdue starts at once.
    pub(crate) fn think_until_due(&mut self, tid: u32, interval: Ns) {
        let now = self.now();
        let task = &mut self.tasks[tid as usize];
        let due = task.op_due.unwrap_or(task.op_start).saturating_add(interval);
        task.op_due = Some(due);
        task.phase = crate::kernel::task::Phase::Think;
        self.sleep_task(tid, due.saturating_sub(now));
    }

    /// Sleep a task for `ns`, unless woken earlier by `wake_task`.
    pub fn sleep_task(&mut self, tid: u32, ns: Ns) {
        // The timer fires on time; the task runs a little later (`[machine] wakeup_latency`).
        let ns = ns.saturating_add(self.rng.exp(self.cfg.machine.wakeup_latency));
        let t = &mut self.tasks[tid as usize];
        t.wait_gen = t.wait_gen.wrapping_add(1);
        let gen = t.wait_gen;
        t.timeout_gen = Some(gen);
        self.q.schedule_in(ns, Event::TaskTimeout(tid, gen));
        // The sleep may begin outside the task's own step (a completion that ends its
        // operation and starts its think time): its pressure states change now.
        self.psi_task_refresh(tid);
    }

    /// Get `n` free pages for the page cache. Returns false when the task must wait in
    /// `reclaim_throttle` (the task is then queued to be woken).
    pub fn alloc_pages(&mut self, tid: u32, n: u64) -> bool {
        let ok = self.try_alloc_pages(tid, n);
        self.account_reclaim_wait(tid, ok)
    }

    /// A task's wait for memory lasts from its first failed allocation to the one that
    /// succeeds (reclaim throttling, memcg reclaim, memory.high's penalty, the pageout
    /// generations' `try_to_free_pages`): counted for the verdict's reclaim rule.
    pub(crate) fn account_reclaim_wait(&mut self, tid: u32, ok: bool) -> bool {
        let now = self.q.now();
        let t = &mut self.tasks[tid as usize];
        match (ok, t.reclaim_since) {
            (false, None) => t.reclaim_since = Some(now),
            (true, Some(since)) => {
                t.reclaim_since = None;
                t.reclaim_waits += 1;
                t.reclaim_wait += now - since;
            }
            _ => {}
        }
        ok
    }

    /// kswapd, folded into allocation: before `n` pages are taken, bring free memory from
    /// under the low watermark back to the high one by evicting clean pages.
    pub(crate) fn kswapd_top_up(&mut self, n: u64) {
        if self.vm.nr_free < n + self.vm.wmark_low {
            let want = n + self.vm.wmark_high - self.vm.nr_free.min(n + self.vm.wmark_high);
            let got = self.global_shrink(want);
            self.vm.nr_free += got;
            self.vm.nr_file -= got;
        }
    }

    fn try_alloc_pages(&mut self, tid: u32, n: u64) -> bool {
        if self.era.inactive.is_some() {
            return self.alloc_pages_pageout(tid, n);
        }
        if !self.try_charge_memcg(tid, n) {
            return false;
        }
        self.kswapd_top_up(n);
        if self.vm.nr_free >= n + self.vm.wmark_min {
            self.vm.nr_free -= n;
            self.vm.nr_alloc_pending += n;
            self.tasks[tid as usize].alloc_pending += n;
            self.memcg_pending(tid, n as i64);
            return true;
        }
        // Nothing clean left: wake the flushers (start-all, reason vmscan) and throttle.
        self.wakeup_flusher_threads(crate::metrics::trace::WbReason::Vmscan);
        self.reclaim_throttle(tid);
        false
    }

    /// `reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)`: sleep up to HZ/10, woken early once
    /// enough pages finished writeback (`acct_reclaim_writeback`).
    pub(crate) fn reclaim_throttle(&mut self, tid: u32) {
        if self.reclaim_waiters.is_empty() {
            self.reclaim_written = 0;
        }
        self.reclaim_waiters.push(tid);
        self.tasks[tid as usize].memstall = true;
        let timeout = self.clock.tick_ns() * (self.clock.hz / 10).max(1);
        self.sleep_task(tid, timeout);
    }

    /// Insert `n` pages that task `tid` allocated by `alloc_pages` into the page cache of
    /// `file`.
    pub fn map_pages(&mut self, tid: u32, file: u32, n: u64) {
        self.vm.nr_alloc_pending -= n;
        self.tasks[tid as usize].alloc_pending -= n;
        self.memcg_pending(tid, -(n as i64));
        self.memcg_account(file, n as i64, 0, 0);
        self.vm.nr_file += n;
    }

    // ---- block layer glue ----

    /// The CPU a submitter's bios enter blk-mq on: where the task or the flusher last ran;
    /// a journal thread is taken to run on its device's CPU in turn.
    fn submitter_cpu(&self, s: Submitter) -> u16 {
        match s {
            Submitter::Task(t) => self.tasks[t as usize].dirty.cpu as u16,
            Submitter::Flusher(f) => self.flusher_cpu.get(f as usize).copied().unwrap_or(0),
            Submitter::Journal(d) => d % self.cpus.ncpus() as u16,
        }
    }

    /// Hand request `id` to device `dev`'s queue. Returns true if accepted (the submitter
    /// goes on), false if the submitter must wait.
    pub fn submit_request(&mut self, dev: u16, id: u32) -> bool {
        if self.queues[dev as usize].rq(id).handle_start && !self.journal_handle_for_submit(dev, id) {
            return false;
        }
        if self.queues[dev as usize].rq(id).set_writeback_at_submit {
            self.account_set_writeback(dev, id);
        }
        let q = &self.queues[dev as usize];
        if q.nr_hw_queues() > 1 {
            let h = q.hctx_of_cpu(self.submitter_cpu(q.rq(id).submitter));
            self.queues[dev as usize].rq_mut(id).hctx = h;
        }
        let now = self.now();
        let last = self.wbs[dev as usize].last_bdp_sleep;
        // vmstat `bo` is PGPGOUT, counted as bios are submitted (`submit_bio`; 2.4's
        // `submit_bh`), not as they complete.
        let q = &mut self.queues[dev as usize];
        if q.rq(id).op == Op::Write {
            q.sec_submitted_written += q.rq(id).bytes();
        }
        let blkcg = self.bio_blkcg(id, dev);
        let r = self.queues[dev as usize].submit(now, id, last, blkcg);
        if r == Submit::Blocked && self.queues[dev as usize].rq(id).in_handle {
            let q = &mut self.queues[dev as usize];
            q.rq_mut(id).handle_wait = true;
            q.handles_blocked += 1;
        }
        self.kick_queue(dev);
        r != Submit::Blocked
    }

    /// `folio_start_writeback` for the pages of writeback request `id`, as it is submitted:
    /// `Queued` pages (written again meanwhile or not: still one dirty page each) go under
    /// writeback and leave `NR_FILE_DIRTY` (and the wb's and memory cgroup's dirty counts)
    /// for `NR_WRITEBACK`.
    fn account_set_writeback(&mut self, dev: u16, id: u32) {
        let r = self.queues[dev as usize].rq_mut(id);
        r.set_writeback_at_submit = false;
        let Some(seg) = r.segs.first() else { return };
        let (ino, start, pages) = (seg.file, seg.start, seg.pages);
        debug_assert_eq!(r.segs.len(), 1, "a request is accounted before it can merge");
        let inode = &mut self.inodes[ino as usize];
        let had_wb = inode.mapping.nr_writeback > 0;
        // A queued page stays queued until here (a rewrite leaves it so), so the whole range is.
        let n = inode.mapping.set_range(start, pages, Some(PageState::Writeback)).queued;
        debug_assert_eq!(n, pages, "every page of a request stays queued until it is submitted");
        let wbi = inode.wb as usize;
        if !had_wb && n > 0 {
            self.wbs[wbi].writeback_inodes += 1;
        }
        self.vm.nr_dirty -= n;
        self.vm.nr_writeback += n;
        self.memcg_account(ino, 0, -(n as i64), n as i64);
        self.wbs[wbi].reclaimable -= n;
        self.wbs[wbi].writeback += n;
    }

    /// The cgroup a request is charged to (`bio_associate_blkg`): a flusher's, its wb's
    /// group; a task's write of page-cache pages (fsync), the file's wb's group
    /// (`wbc_init_bio`); a task's own reads and O_DIRECT I/O, the task's group; the journal's,
    /// the root.
    fn bio_blkcg(&self, id: u32, dev: u16) -> Option<u16> {
        if self.memcgs.is_empty() {
            return None;
        }
        let r = self.queues[dev as usize].rq(id);
        match r.submitter {
            Submitter::Flusher(w) => self.wbs.get(w as usize).and_then(|wb| wb.memcg),
            Submitter::Task(t) => match r.segs.first() {
                Some(s) if r.op == Op::Write && !r.direct => self.wbs[self.inodes[s.file as usize].wb as usize].memcg,
                _ => self.tasks[t as usize].memcg,
            },
            Submitter::Journal(_) => None,
        }
    }

    /// blk-throttle's dispatch work (`blk_throtl_dispatch_work_fn`): submit the released bios
    /// in order; it sleeps when one has to wait for wbt or a tag, and the rest wait behind it.
    fn throtl_issue(&mut self, dev: u16) {
        let now = self.now();
        let d = dev as usize;
        let last = self.wbs[d].last_bdp_sleep;
        while let Some(id) = self.queues[d].throtl.as_ref().and_then(|t| t.next_to_issue()) {
            let blocked = self.queues[d].blk_mq_submit_bio(now, id, last) == Submit::Blocked;
            let t = self.queues[d].throtl_mut();
            if blocked {
                t.set_blocked();
                break;
            }
            t.issued();
        }
        self.kick_queue(dev);
    }

    fn on_throtl_timer(&mut self, dev: u16) {
        let now = self.now();
        let d = dev as usize;
        let q = &mut self.queues[d];
        if q.throtl_timer_at.is_some_and(|t| t <= now) {
            q.throtl_timer_at = None;
        }
        let j = q.jiffies(now);
        let Some(t) = q.throtl.as_mut() else { return };
        if t.timer() != Some(j) {
            return; // re-armed since this event was scheduled
        }
        t.timer_fn(j);
        self.throtl_issue(dev);
    }

    /// Dispatch what can be dispatched and (re)arm the device and wbt timers.
    pub fn kick_queue(&mut self, dev: u16) {
        let now = self.now();
        let mut issued = std::mem::take(&mut self.scratch_ids);
        issued.clear();
        self.queues[dev as usize].run_queue(now, &mut issued);
        self.charge_commands(dev, &issued);
        if self.queues[dev as usize].elv_trace {
            self.trace_elevator(dev);
        }
        if self.cfg.trace.block {
            self.trace_block_events(dev);
            for &id in &issued {
                let q = &self.queues[dev as usize];
                if id == FLUSH_ID {
                    let comm = self.flush_waiter_comm(q.flush.first);
                    let ev = TraceEvent::BlockRqIssue {
                        dev: q.devt,
                        rwbs: FLUSH_RWBS,
                        bytes: 0,
                        sector: 0,
                        nr_sector: 0,
                        ioprio: None,
                        comm,
                    };
                    self.trace_ev(comm, 0, ev);
                    continue;
                }
                let r = q.rq(id);
                let comm = self.submitter_comm(r.submitter);
                let ev = TraceEvent::BlockRqIssue {
                    dev: q.devt,
                    rwbs: Rwbs::data(r.op == Op::Write, r.sync, r.readahead),
                    bytes: r.bytes() as u32,
                    sector: r.sector,
                    nr_sector: r.nr_sectors as u32,
                    ioprio: Some(q.submitter_prio(r.submitter)),
                    comm,
                };
                self.trace_ev(comm, 0, ev);
            }
        }
        self.scratch_ids = issued;
        let q = &mut self.queues[dev as usize];
        if let Some(t) = q.device.next_event() {
            if q.tick_at.is_none_or(|s| t < s || s < now) {
                q.tick_at = Some(t);
                self.q.schedule(t.max(now), Event::Device(dev));
            }
        }
        if let Some(t) = q.elv.next_timer() {
            if q.elv_timer_at != Some(t) {
                q.elv_timer_at = Some(t);
                self.q.schedule(t.max(now), Event::ElvTimer(dev));
            }
        }
        if let Some(t) = q.wbt.next_timer() {
            if q.wbt_timer_at != Some(t) {
                q.wbt_timer_at = Some(t);
                self.q.schedule(t.max(now), Event::WbtTimer(dev));
            }
        }
        if let Some(j) = q.throtl.as_ref().and_then(|t| t.timer()) {
            let t = q.at_jiffies(j);
            if q.throtl_timer_at != Some(t) {
                q.throtl_timer_at = Some(t);
                self.q.schedule(t.max(now), Event::ThrotlTimer(dev));
            }
        }
    }

    /// The driver's CPU for the commands just issued: the kernel thread's part queued for it,
    /// the submitter's part taken at once.
    fn charge_commands(&mut self, dev: u16, issued: &[u32]) {
        let (mut worker, mut inline) = (0, 0);
        let q = &self.queues[dev as usize];
        for &id in issued {
            let op = if id == FLUSH_ID { Op::Flush } else { q.rq(id).op };
            let c = q.device.command_cpu(op);
            worker += c.worker;
            inline += c.inline;
        }
        if inline > 0 {
            self.cpus.steal(self.q.now(), inline);
        }
        if worker > 0 {
            self.kthread_work(dev, worker);
        }
    }

    fn on_device(&mut self, dev: u16) {
        let now = self.now();
        {
            let q = &mut self.queues[dev as usize];
            if q.tick_at.is_some_and(|t| t <= now) {
                q.tick_at = None;
            }
        }
        let mut done = std::mem::take(&mut self.scratch_done);
        done.clear();
        self.report_client_outstanding(dev);
        self.queues[dev as usize].device.advance(now, &mut done);
        let irq = self.cfg.machine.completion_cost * done.len() as Ns;
        if irq > 0 {
            self.cpus.steal(now, irq);
        }
        for &id in &done {
            if id == FLUSH_ID {
                self.flush_completed(dev);
            } else {
                self.complete_request(dev, id);
            }
        }
        self.scratch_done = done;
        // NFS: writeback of the pages of UNSTABLE writes ends when a COMMIT covering them
        // replies (`nfs_commit_release_pages`); until then they count against the dirty limit.
        let mut released = false;
        while let Some(s) = self.queues[dev as usize].pop_stable() {
            self.end_page_writeback(s.file, s.start, s.pages);
            released = true;
        }
        if released {
            self.report_client_outstanding(dev);
        }
        self.kick_queue(dev);
    }

    /// Tell an NFS device how much of its mount is dirty, under writeback or unstable.
    fn report_client_outstanding(&mut self, dev: u16) {
        let d = dev as usize;
        if self.queues[d].unstable_device {
            let now = self.now();
            let bytes = (self.wbs[d].reclaimable + self.wbs[d].writeback) * crate::units::PAGE_SIZE;
            self.queues[d].device.set_client_outstanding(now, bytes);
        }
    }

    /// `waiter` asks for a cache flush of device `dev`, which blk-flush issues a little later:
    /// [`BLK_FLUSH_KICK_NS`] for a new sequence (as cold as the device's
    /// last flush is old), [`BLK_FLUSH_STEP_NS`] for a sequence's next
    /// `step`.
    pub(crate) fn blk_flush(&mut self, dev: u16, waiter: u32, step: bool) {
        let now = self.now();
        let delay = if step {
            BLK_FLUSH_STEP_NS
        } else {
            let (hot, cold) = BLK_FLUSH_KICK_NS;
            cold_cost(hot, cold, now.saturating_sub(self.queues[dev as usize].flush.last_done))
        };
        let ready = now + delay;
        if self.queues[dev as usize].queue_flush(waiter, ready) && delay > 0 {
            self.q.schedule(ready, Event::FlushKick(dev));
        } else {
            self.kick_queue(dev);
        }
    }

    /// A cache flush finished: the fsync()/sync() callers it served go on.
    fn flush_completed(&mut self, dev: u16) {
        let d = dev as usize;
        if self.cfg.trace.block {
            let ev = TraceEvent::BlockRqComplete {
                dev: self.queues[d].devt,
                rwbs: FLUSH_RWBS,
                sector: 0,
                nr_sector: 0,
                ioprio: None,
                error: 0,
            };
            self.trace_ev(0, 0, ev);
        }
        let now = self.now();
        for w in self.queues[d].flush_completed(now) {
            if w & crate::fs::jbd2::JOURNAL_WAITER != 0 && w & crate::fs::jbd2::FC_WAITER != 0 {
                self.fast_commit_flushed((w & 0xffff) as u16);
            } else if w & crate::fs::jbd2::JOURNAL_WAITER != 0 {
                self.journal_flushed((w & !crate::fs::jbd2::JOURNAL_WAITER) as u16);
            } else {
                self.cache_flushed(w);
            }
        }
    }

    /// A request finished on the device: end writeback or reads of its pages, release wbt
    /// and the tag, wake whoever waits.
    fn complete_request(&mut self, dev: u16, id: u32) {
        let now = self.now();
        let d = dev as usize;
        let (op, tracked, direct, submitter, latency, bytes, direct_bytes, log_bytes, ticks, aio) = {
            let r = self.queues[d].rq(id);
            (
                r.op,
                r.wbt_tracked,
                r.direct,
                r.submitter,
                now - r.issue_ns,
                r.bytes(),
                r.direct_sectors * 512,
                r.log_sectors * 512,
                now.saturating_sub(r.start_ns),
                r.aio,
            )
        };
        {
            let q = &mut self.queues[d];
            q.latency.record(latency);
            match op {
                Op::Write => {
                    q.bytes_written += bytes;
                    q.direct_bytes_written += direct_bytes;
                    q.log_bytes_written += log_bytes;
                    q.sec_written += bytes;
                    q.requests_written += 1;
                    q.fua_writes += u64::from(q.rq(id).fua);
                    q.sec_io.writes += 1;
                    q.sec_io.write_ticks_ns += ticks;
                }
                Op::Read => {
                    q.bytes_read += bytes;
                    q.sec_read += bytes;
                    q.requests_read += 1;
                    q.sec_io.reads += 1;
                    q.sec_io.read_ticks_ns += ticks;
                }
                // Flushes complete in `flush_completed`, outside the request pool.
                Op::Flush => {}
            }
        }
        // io.stat: the group the request was charged to (none for the root's and jbd2's).
        if let Some(cg) = self.queues[d].rq(id).blkcg {
            let g = &mut self.memcgs[cg as usize];
            match op {
                Op::Read => g.io_rbytes += bytes,
                Op::Write => g.io_wbytes += bytes,
                Op::Flush => {}
            }
        }
        if self.cfg.trace.block {
            let q = &self.queues[d];
            let r = q.rq(id);
            let ev = TraceEvent::BlockRqComplete {
                dev: q.devt,
                rwbs: Rwbs::data(r.op == Op::Write, r.sync, r.readahead),
                sector: r.sector,
                nr_sector: r.nr_sectors as u32,
                ioprio: Some(q.submitter_prio(r.submitter)),
                error: 0,
            };
            self.trace_ev(0, 0, ev);
        }
        // An NFS WRITE that replied UNSTABLE keeps its pages under writeback (the queue holds
        // them until a COMMIT, see `on_device`).
        let held = op == Op::Write && self.queues[d].hold_unstable(id);
        let nsegs = if held { 0 } else { self.queues[d].rq(id).segs.len() };
        let new_blocks = self.queues[d].rq(id).new_blocks;
        let ckpt_tid = self.queues[d].rq(id).ckpt_tid;
        // New blocks, or fallocated pages (a merge may have brought some into a request that
        // was not built for them).
        let over_unwritten = op == Op::Write
            && self.journals[d].is_some()
            && self.queues[d].rq(id).segs[..nsegs]
                .iter()
                .any(|s| self.inodes[s.file as usize].has_unwritten(s.start, s.pages));
        let converts = new_blocks || over_unwritten;
        let first_file = if converts {
            self.queues[d].rq(id).segs.first().map(|s| s.file)
        } else {
            None
        };
        // The write reached new or fallocated blocks: the extent is converted (and the size
        // updated) in a handle before the pages end writeback (ext4's end_io work, xfs's
        // ioend). ext3 did both in write().
        let converted_in = match first_file {
            Some(f) if op == Op::Write && !held && self.journals[d].is_some() => {
                self.journal_end_io(f, dev);
                Some(self.inodes[f as usize].datasync_tid)
            }
            _ => None,
        };
        // A kworker's end_io work converts (or updates the size) before the pages end
        // writeback: ext4's for unwritten extents (every new block with dioread_nolock, which
        // allocates them unwritten), xfs's for every ioend that converts or grows the file.
        let deferred = converted_in.is_some()
            && self.cfg.devices[d].fs.as_ref().is_some_and(|m| match m.fs {
                FsKind::Ext3 | FsKind::Btrfs => false,
                FsKind::Ext4 => m.dioread_nolock || over_unwritten,
                FsKind::Xfs => true,
            });
        for i in 0..nsegs {
            let s = self.queues[d].rq(id).segs[i];
            if let Some(tid) = converted_in {
                self.unwritten_converted(s.file, s.start, s.pages, tid);
            }
            match op {
                Op::Write => {
                    // A part of a split bio: its pages end writeback with the last part.
                    let written = if s.bio != NO_BIO {
                        self.queues[d].chains.done(s.bio, s.pages)
                    } else {
                        Some(s)
                    };
                    if let Some(w) = written {
                        if deferred {
                            self.end_writeback_after_conversion(dev, w.file, w.start, w.pages);
                        } else {
                            self.end_page_writeback(w.file, w.start, w.pages);
                        }
                    }
                }
                Op::Read => self.end_page_read(s.file, s.start, s.pages),
                Op::Flush => {}
            }
        }
        let mut admitted = std::mem::take(&mut self.scratch_ids);
        admitted.clear();
        let last = self.wbs[d].last_bdp_sleep;
        // blk-iolatency: release the request's slots; a woken waiter goes on up its levels,
        // then through wbt and the tag allocator like a new submission.
        let mut after_iolat = Vec::new();
        {
            let q = &mut self.queues[d];
            let (cg, submit_ns, held) = {
                let r = q.rq(id);
                (r.blkcg, r.submit_ns, r.iolat_in)
            };
            if let (Some(l), Some(cg), true) = (q.iolat.as_mut(), cg, held) {
                let mut woken = Vec::new();
                l.done(now, submit_ns, cg as usize, &mut woken);
                for (w, level) in woken {
                    let wcg = q.rq(w).blkcg.expect("a waiter has a cgroup") as usize;
                    if q.iolat.as_mut().expect("iolat").throttle(w, wcg, level).is_ok() {
                        let submitted = q.rq(w).submit_ns;
                        q.iolat.as_mut().expect("iolat").admitted_after_wait(wcg, submitted, now);
                        q.rq_mut(w).iolat_in = true;
                        match q.rq_qos_after_iolatency(now, w, last) {
                            Submit::Accepted => after_iolat.push(w),
                            Submit::Blocked | Submit::Throttled => {}
                        }
                    }
                }
            }
        }
        match op {
            Op::Write if tracked => {
                let q = &mut self.queues[d];
                q.wbt.write_completed(now, latency);
                q.wbt.done(now, last, &mut admitted);
            }
            Op::Write | Op::Flush => self.queues[d].wbt.write_completed(now, latency),
            Op::Read => self.queues[d].wbt.read_completed(now, id, latency),
        }
        // Waiters admitted by wbt now need a tag.
        let mut accepted = after_iolat;
        for &w in &admitted {
            if self.queues[d].get_tag(now, w) {
                accepted.push(w);
            }
        }
        self.queues[d].elv.completed(now, id);
        let hctx = self.queues[d].rq(id).hctx;
        self.queues[d].release(id);
        self.release_slot(d, op, hctx, &mut accepted);
        self.scratch_ids = admitted;
        for w in accepted {
            self.request_accepted(dev, w);
        }
        if direct {
            if let Submitter::Task(t) = submitter {
                self.direct_done(t, aio);
            }
        }
        if self.journals[d].is_some() && op == Op::Write {
            if ckpt_tid == crate::fs::fast_commit::FC_WRITE {
                self.fast_commit_written(dev);
            } else if ckpt_tid > 0 {
                self.checkpoint_written(dev, ckpt_tid);
            } else {
                self.journal_io_done(dev, log_bytes / 512);
            }
        }
    }

    /// A blocked submitter's request `id` entered the queue: let it go on.
    fn request_accepted(&mut self, dev: u16, id: u32) {
        if self.queues[dev as usize].rq(id).handle_wait {
            // The submitter's ext4 handle may stop now: a commit may wait for that.
            let q = &mut self.queues[dev as usize];
            q.rq_mut(id).handle_wait = false;
            q.handles_blocked -= 1;
            if self.journals[dev as usize].is_some() {
                self.commit_advance(dev);
            }
        }
        if self.queues[dev as usize].rq(id).throttled {
            let t = self.queues[dev as usize].throtl_mut();
            debug_assert_eq!(t.sleeping_on(), Some(id));
            t.issued();
            self.throtl_issue(dev);
            return;
        }
        match self.queues[dev as usize].rq(id).submitter {
            Submitter::Task(t) => {
                self.tasks[t as usize].pending.pop_front();
                self.wake_task(t);
            }
            Submitter::Flusher(w) => {
                self.flushers[w as usize].pending.pop_front();
                self.flushers[w as usize].blocked = false;
                self.flusher_continue(w);
            }
            Submitter::Journal(d) => self.journal_request_accepted(d),
        }
    }

    /// The elevator's timer (CFQ's idle slice) ran out: run its callback, which works even
    /// when the device is full, then let it dispatch again.
    fn on_elv_timer(&mut self, dev: u16) {
        let now = self.now();
        let q = &mut self.queues[dev as usize];
        if q.elv_timer_at.is_some_and(|t| t <= now) {
            q.elv_timer_at = None;
            q.elv.timer_fired(now);
        }
        if self.queues[dev as usize].elv_trace {
            self.trace_elevator(dev);
        }
        self.kick_queue(dev);
    }

    /// Record the request-path block tracepoints the queue of `dev` fired (bio queue, split,
    /// merges, getrq, insert), each with its submitter's name. `kick_queue` calls it, and
    /// every event that submits or admits requests ends in `kick_queue` at the same instant,
    /// so the trace stays in time order (crates/report/tests/btt.rs checks it).
    fn trace_block_events(&mut self, dev: u16) {
        let mut events = std::mem::take(&mut self.queues[dev as usize].blk_events);
        let dev_t = self.queues[dev as usize].devt;
        for e in &events {
            let comm = if e.throttled {
                self.throtl_comm()
            } else {
                self.submitter_comm(e.submitter)
            };
            let rwbs = Rwbs::data(e.op == Op::Write, e.sync, e.readahead);
            let bio = |what| TraceEvent::BlockBio {
                what,
                dev: dev_t,
                rwbs,
                sector: e.sector,
                nr_sector: e.nr_sectors as u32,
                comm,
            };
            let ev = match e.what {
                BlkWhat::Queue => bio(BioEvent::Queue),
                BlkWhat::GetRq => bio(BioEvent::GetRq),
                BlkWhat::BackMerge => bio(BioEvent::BackMerge),
                BlkWhat::FrontMerge => bio(BioEvent::FrontMerge),
                BlkWhat::Split { from } => TraceEvent::BlockSplit {
                    dev: dev_t,
                    rwbs,
                    sector: from,
                    new_sector: e.sector,
                    comm,
                },
                BlkWhat::Insert => TraceEvent::BlockRqInsert {
                    dev: dev_t,
                    rwbs,
                    bytes: (e.nr_sectors * 512) as u32,
                    sector: e.sector,
                    nr_sector: e.nr_sectors as u32,
                    ioprio: Some(e.prio),
                    comm,
                },
            };
            self.tout.trace.push(TraceRecord {
                t_ns: e.t_ns,
                who: comm,
                cpu: 0,
                ev,
            });
        }
        events.clear();
        self.queues[dev as usize].blk_events = events;
    }

    /// Record the tracepoints the elevator of `dev` fired (softirq or dispatch context: no
    /// task of ours, like wbt's).
    fn trace_elevator(&mut self, dev: u16) {
        let q = &mut self.queues[dev as usize];
        let mut events = std::mem::take(&mut q.elv_events);
        q.elv.take_trace(&mut events);
        let dev_t = q.devt;
        for &(t_ns, e) in &events {
            let name = |d: u8| crate::block::sched::kyber::DOMAIN_NAMES[d as usize];
            let ev = match e {
                ElvTrace::KyberLatency {
                    domain,
                    io,
                    percentile,
                    numerator,
                    samples,
                } => TraceEvent::KyberLatency {
                    dev: dev_t,
                    domain: name(domain),
                    kind: if io { "I/O" } else { "total" },
                    percentile,
                    numerator,
                    denominator: 4,
                    samples,
                },
                ElvTrace::KyberAdjust { domain, depth } => TraceEvent::KyberAdjust {
                    dev: dev_t,
                    domain: name(domain),
                    depth,
                },
                ElvTrace::KyberThrottled { domain } => TraceEvent::KyberThrottled {
                    dev: dev_t,
                    domain: name(domain),
                },
            };
            self.tout.trace.push(TraceRecord { t_ns, who: 0, cpu: 0, ev });
        }
        events.clear();
        self.queues[dev as usize].elv_events = events;
    }

    fn on_wbt_timer(&mut self, dev: u16) {
        let now = self.now();
        let d = dev as usize;
        if self.queues[d].wbt_timer_at.is_some_and(|t| t <= now) {
            self.queues[d].wbt_timer_at = None;
        }
        let mut admitted = Vec::new();
        let last = self.wbs[d].last_bdp_sleep;
        self.queues[d].wbt.timer_fn(now, last, &mut admitted);
        let mut steps = Vec::new();
        self.queues[d].wbt.take_steps(&mut steps);
        if self.tout.trace_enabled {
            let devt = self.queues[d].devt;
            for (t, msg, step, window_us, background, normal, max) in steps {
                self.tout.trace.push(TraceRecord {
                    t_ns: t,
                    who: 0,
                    cpu: 0,
                    ev: TraceEvent::WbtStep {
                        dev: devt,
                        msg,
                        step,
                        window_us,
                        background,
                        normal,
                        max,
                    },
                });
            }
        }
        let mut accepted = Vec::new();
        for &w in &admitted {
            if self.queues[d].get_tag(now, w) {
                accepted.push(w);
            }
        }
        for w in accepted {
            self.request_accepted(dev, w);
        }
        self.kick_queue(dev);
    }

    fn on_fprop_period(&mut self) {
        let memcgs_aging = self.memcg_domains_new_period();
        if self.dom.completions.new_period(1) || memcgs_aging {
            self.q.schedule_in(3 * NSEC_PER_SEC, Event::FpropPeriod);
        } else {
            self.fprop_armed = false;
        }
    }

    fn on_sample(&mut self) {
        let now = self.now();
        self.psi_sample(now);
        let mut dtc = page_writeback::DirtyThrottleControl {
            avail: self.vm.dirtyable(),
            ..Default::default()
        };
        page_writeback::domain_dirty_limits(&mut dtc, &self.cfg.sysctl);
        if self.cfg.policy.throttle != crate::config::ThrottleKind::Modern {
            (dtc.bg_thresh, dtc.thresh) = self.era_dirty_limits();
        }
        let (mut bi, mut bo) = (0, 0);
        let mut dw = Vec::with_capacity(self.queues.len());
        let mut dr = Vec::with_capacity(self.queues.len());
        let mut du = Vec::with_capacity(self.queues.len());
        let mut dio = Vec::with_capacity(self.queues.len());
        let since = self.vmstat.last().map_or(0, |s| s.t_ns);
        for q in &mut self.queues {
            bo += std::mem::take(&mut q.sec_submitted_written) / 1024;
            bi += q.sec_read / 1024;
            dw.push(q.sec_written);
            dr.push(q.sec_read);
            q.sec_written = 0;
            q.sec_read = 0;
            dio.push(std::mem::take(&mut q.sec_io));
            // iostat %util over the interval: device time with a request in service.
            let busy = q.device.busy_ns(now);
            du.push(busy.saturating_sub(q.sec_busy_mark) as f64 / now.saturating_sub(since).max(1) as f64);
            q.sec_busy_mark = busy;
        }
        // Latency over time for the tasks whose operations someone waits on; a bulk writer's
        // write() calls are its pauses, kept in throttle.csv and the trace.
        let mut task_ops = Vec::new();
        for (i, t) in self.tasks.iter_mut().enumerate() {
            let ops = std::mem::take(&mut t.sec_ops);
            if ops.ops > 0 && t.job.latency_sensitive() {
                task_ops.push((i as u32, ops));
            }
        }
        let blocked = self
            .tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.phase,
                    Phase::WaitRead | Phase::WaitDirect | Phase::WaitSync | Phase::AfterBdpSleep | Phase::BdpWriteback
                ) || (t.phase == Phase::Alloc && !t.is_done())
                    || (t.phase == Phase::Meta && !t.on_cpu)
            })
            .count() as u32;
        self.vmstat.push(VmstatSample {
            t_ns: now,
            nr_dirty: self.vm.file_dirty(),
            nr_writeback: self.vm.nr_writeback,
            nr_free: self.vm.nr_free,
            nr_file: self.vm.nr_file,
            nr_dirtied: self.vm.nr_dirtied,
            nr_written: self.vm.nr_written,
            dirty_thresh: dtc.thresh,
            dirty_background_thresh: dtc.bg_thresh,
            bi_kb: bi,
            bo_kb: bo,
            procs_running: self.cpus.runnable(),
            procs_blocked: blocked,
            dev_write_bytes: dw,
            dev_read_bytes: dr,
            dev_util: du,
            dev_io: dio,
            task_ops,
        });
        if !self.memcgs.is_empty() {
            dtc.avail = self.vm.dirtyable();
            dtc.dirty = self.vm.dirty_level();
            self.sample_memcgs(now, &dtc);
        }
        if now + NSEC_PER_SEC <= self.cfg.duration {
            self.q.schedule_in(NSEC_PER_SEC, Event::Sample);
        }
    }

    fn on_throttle_sample(&mut self) {
        let now = self.now();
        // The devices' root wbs (a cgroup's wb is sampled with its group).
        for d in 0..self.queues.len() {
            let mut s = page_writeback::throttle_sample(&self.vm, &self.cfg.sysctl, &self.dom, &mut self.wbs[d], d as u16, now);
            s.dirty_rate = 0;
            if let Some(l) = self.policy.era_limits(&self.vm, &self.cfg.sysctl, &self.dom, &self.wbs[d], d) {
                s.era_only(l);
            }
            self.throttle.push(s);
        }
        let step = self.clock.tick_ns() * page_writeback::max_pause_jiffies(self.clock.hz);
        if now + step <= self.cfg.duration {
            self.q.schedule_in(step, Event::ThrottleSample);
        }
    }

    /// A sleeping task was woken: it goes on once the scheduler gives it a CPU
    /// (`try_to_wake_up`, then the context switch back into the task).
    fn task_wake(&mut self, tid: u32) {
        let task = &mut self.tasks[tid as usize];
        if task.is_done() || task.on_cpu || task.waking {
            return;
        }
        task.waking = true;
        task.memstall = false;
        task.slept = self.q.now().saturating_sub(task.off_cpu_at);
        // try_to_wake_up, the switch into the task, and for a woken page waiter whose page is
        // still busy its re-test and re-sleep.
        let m = &self.cfg.machine;
        let cost = m.wakeup_cost + m.context_switch_cost + std::mem::take(&mut task.wq.wake_extra);
        self.cpu_run(Who::Task(tid), cost);
    }

    fn on_cpu_done(&mut self, cpu: u16, gen: u32) {
        let now = self.now();
        if !self.cpus.is_current(cpu, gen) {
            return; // a burst cut short: its end came earlier
        }
        let end = self.cpus.ends_at(cpu);
        if end > now {
            // Interrupts took part of the burst: it ends later.
            self.q.schedule(end, Event::CpuDone(cpu, gen));
            return;
        }
        let (who, next) = self.cpus.finish(now, cpu);
        match who {
            Some(Who::Task(t)) => {
                let task = &mut self.tasks[t as usize];
                task.running = false;
                task.off_cpu_at = now;
            }
            Some(w) => self.psi_oncpu(w, cpu, false),
            None => {}
        }
        if let Some(s) = next {
            self.cpu_started(s);
        }
        match who {
            Some(Who::Task(t)) => {
                let task = &mut self.tasks[t as usize];
                task.on_cpu = false;
                if std::mem::take(&mut task.waking) {
                    self.task_run(t);
                } else {
                    self.task_cpu_done(t);
                }
                self.psi_task_refresh(t);
            }
            Some(Who::Flusher(w)) => {
                self.flushers[w as usize].on_cpu = false;
                self.flusher_continue(w);
            }
            Some(Who::Kernel(d)) => {
                self.kthreads[d as usize].on_cpu = false;
                self.kthread_work(d, 0);
            }
            None => {}
        }
        // Held for a slice but not asked for again: the first waiter gets the CPU.
        if let Some(s) = self.cpus.fill(now, cpu) {
            self.cpu_started(s);
        }
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::TaskRun(t) => {
                self.tasks[t as usize].runs_pending -= 1;
                self.task_wake(t)
            }
            Event::TaskTimeout(t, gen) => {
                if self.tasks[t as usize].timeout_gen == Some(gen) {
                    self.tasks[t as usize].timeout_gen = None;
                }
                if self.tasks[t as usize].wait_gen == gen {
                    // The sleep is over: wakeups registered for it are stale now.
                    self.tasks[t as usize].wait_gen = gen.wrapping_add(1);
                    self.reclaim_waiters.retain(|&w| w != t);
                    self.task_wake(t);
                }
            }
            Event::CpuDone(c, gen) => self.on_cpu_done(c, gen),
            Event::Device(d) => self.on_device(d),
            Event::WbtTimer(d) => self.on_wbt_timer(d),
            Event::IolatTimer(d) => self.on_iolat_timer(d),
            Event::ElvTimer(d) => self.on_elv_timer(d),
            Event::ThrotlTimer(d) => self.on_throtl_timer(d),
            Event::Flusher(w) => self.flusher_wakeup_fired(w),
            Event::BwDwork(w) => {
                self.flushers[w as usize].bw_dwork_pending = false;
                let j = self.jiffies();
                page_writeback::wb_update_bandwidth(&mut self.dom, &mut self.wbs[w as usize], j, self.clock.hz);
            }
            Event::FpropPeriod => self.on_fprop_period(),
            Event::JournalTimer(d) => self.on_journal_timer(d),
            Event::JournalWake(d) => self.journal_woken(d),
            Event::JournalLogPrepared(d) => self.commit_advance(d),
            Event::FlushKick(d) => self.kick_queue(d),
            Event::JournalFlushSeq(d) => self.journal_flushed_now(d),
            Event::EndIoWork(d) => self.end_io_work(d),
            Event::PageReport => self.page_report(),
            Event::Sample => self.on_sample(),
            Event::ThrottleSample => self.on_throttle_sample(),
            Event::TaskMid(t) => {
                let task = &mut self.tasks[t as usize];
                task.mid_bytes = Some(task.bytes_written + task.bytes_read);
                task.mid_ns = self.q.now();
            }
        }
    }

    /// Schedule the tasks' starts and the samplers.
    pub fn start(&mut self) {
        let dur = self.cfg.duration;
        for t in 0..self.tasks.len() {
            let task = &self.tasks[t];
            // Tasks after a stonewall start when the jobs before them are done.
            if task.start < task.stop && task.waits_for.is_empty() {
                let (start, stop) = (task.start, task.stop);
                self.run_task_at(t as u32, start);
                self.q.schedule(start + (stop - start) / 2, Event::TaskMid(t as u32));
            }
        }
        self.q.schedule(NSEC_PER_SEC.min(dur), Event::Sample);
        self.q.schedule(0, Event::ThrottleSample);
        if let Some(delay) = self.reporting.as_ref().map(PageReporting::delay).filter(|&d| d > 0) {
            self.q.schedule(delay, Event::PageReport);
        }
        self.start_era();
    }

    /// Task `tid` finished its job: it is done from now on.
    pub(crate) fn mark_done(&mut self, tid: u32) {
        let now = self.now();
        let task = &mut self.tasks[tid as usize];
        let first = !task.is_done();
        task.phase = Phase::Done;
        task.ended = Some(now.min(task.stop));
        if first {
            let live = task.start < task.stop;
            self.groups.done(tid, live);
        }
    }

    /// Task `tid` is done: the tasks that waited for its group (fio's `stonewall`,
    /// `wait_for`) start once every task of it is done, their `start` counted from now. One
    /// whose start lands at or past its stop never runs, and what waits for it never starts.
    pub(crate) fn start_dependents(&mut self, tid: u32) {
        let g = self.groups.group_of(tid);
        if self.groups.running(g) {
            return;
        }
        let now = self.now();
        for i in self.groups.dependents(g) {
            let u = self.groups.dependent(i);
            if !self.groups.released(u) || self.tasks[u as usize].phase != Phase::Idle {
                continue;
            }
            let task = &mut self.tasks[u as usize];
            let was = task.start < task.stop;
            task.start = now.saturating_add(task.start);
            let (start, stop) = (task.start, task.stop);
            self.groups.restarted(u, was, start < stop);
            if start < stop {
                self.run_task_at(u, start);
                self.q.schedule(start + (stop - start) / 2, Event::TaskMid(u));
            }
        }
        self.check_until_done();
    }

    /// With `until_done`, the run ends once every task is done.
    fn check_until_done(&mut self) {
        if self.cfg.until_done && self.groups.all_done() {
            let now = self.now();
            self.run_end = Some(now);
        }
    }

    /// Run the scenario to its end, or until a law breaks.
    pub fn run(&mut self, progress: &mut dyn Progress) -> Result<(), LawViolation> {
        self.start();
        if self.laws.on {
            self.event_loop::<true>(progress)?;
        } else {
            self.event_loop::<false>(progress)?;
        }
        if self.laws.on {
            if let Some(v) = self.check_laws() {
                return Err(v);
            }
        }
        Ok(())
    }

    /// The event loop, with or without the laws: the check is made once per run, not per
    /// event, so a release run pays nothing for them.
    fn event_loop<const LAWS: bool>(&mut self, progress: &mut dyn Progress) -> Result<(), LawViolation> {
        let dur = self.cfg.duration;
        let report_every = (dur / 100).max(1);
        let mut next_report = report_every;
        while let Some((t, ev)) = self.q.pop_until(dur) {
            self.dispatch(ev);
            if self.run_end.is_some() {
                break;
            }
            if LAWS {
                self.laws_after_event(t, &ev);
                if let Some(v) = &self.laws.broken {
                    return Err(v.clone());
                }
            }
            if t >= next_report {
                progress.tick(t, dur);
                next_report = t + report_every;
            }
        }
        progress.tick(dur, dur);
        Ok(())
    }

    /// Process one event. Returns false when the run is over (no event left before the end)
    /// or a law broke ([`Machine::broken`] says which).
    pub fn step(&mut self) -> bool {
        if self.laws.broken.is_some() {
            return false;
        }
        if self.run_end.is_some() {
            return false;
        }
        match self.q.pop_until(self.cfg.duration) {
            Some((t, ev)) => {
                self.dispatch(ev);
                self.laws_after_event(t, &ev);
                self.laws.broken.is_none()
            }
            _ => false,
        }
    }

    /// The law that broke, if one did.
    pub fn broken(&self) -> Option<&LawViolation> {
        self.laws.broken.as_ref()
    }

    /// `comm` and pid of everything that can appear in the trace, indexed by
    /// `TraceRecord::who`: known before the run starts, so a [`TraceSink`] can name them.
    pub fn comms(&self) -> Vec<(String, u32)> {
        let mut comms = vec![("<idle>".to_string(), 0)];
        for t in &self.tasks {
            comms.push((t.name.clone(), t.pid));
        }
        for (i, _) in self.flushers.iter().enumerate() {
            comms.push((crate::generations::runtime::flusher_comm_name(&self.cfg, i), 10 + i as u32));
        }
        for (i, d) in self.cfg.devices.iter().enumerate().filter(|(i, _)| self.journals[*i].is_some()) {
            // The journal thread of ext4 on the whole device (`jbd2/<dev>-8`: 8 is the journal
            // inode), kjournald for ext3, xfs's CIL push worker.
            let name = match d.fs.as_ref().map(|m| m.fs) {
                Some(crate::config::FsKind::Ext3) => "kjournald".to_string(),
                Some(crate::config::FsKind::Xfs) => format!("kworker/u{}:{}", 2 * self.cfg.machine.cpus.max(1), 16 + i),
                _ => format!("jbd2/{}-8", d.name),
            };
            comms.push((name, 300 + i as u32));
        }
        // blk-throttle's dispatch work runs on a per-CPU kworker (seen as `kworker/1:2` on
        // 6.18).
        comms.push(("kworker/0:2".to_string(), 250));
        comms
    }

    /// Hand the trace to `sink` as it is recorded instead of keeping it (see [`TraceSink`]).
    pub fn set_trace_sink(&mut self, sink: Box<dyn TraceSink>) {
        self.tout.trace.set_sink(sink);
    }

    /// Collect the results.
    pub fn finish(mut self) -> RunResult {
        if let Some(end) = self.run_end {
            // The run ended with its tasks: its length is theirs.
            self.cfg.duration = end.max(1);
        }
        let tiotest = self.tio_results();
        let fio = self.fio_results();
        let dur = self.cfg.duration;
        let comms = self.comms();
        let tasks = self
            .tasks
            .iter_mut()
            .map(|t| {
                let ended = t.ended.unwrap_or(t.stop.min(dur)).max(t.start);
                let total = t.bytes_written + t.bytes_read;
                // The second half of the task's life; a task that ended before the run's
                // midpoint reached it has only its whole life (as `measure` without a sample).
                let (steady_bytes, steady_ns) = match t.mid_bytes {
                    Some(b) if t.mid_ns < ended => (total - b, ended - t.mid_ns),
                    _ => (total, ended.saturating_sub(t.start)),
                };
                TaskResult {
                    name: t.name.clone(),
                    instance: t.instance,
                    job: t.job.kind(),
                    pid: t.pid,
                    device: self.cfg.devices[t.dev as usize].name.clone(),
                    bytes_written: t.bytes_written,
                    bytes_read: t.bytes_read,
                    started: t.start,
                    ended,
                    steady_bytes,
                    steady_ns,
                    pauses: std::mem::take(&mut t.pauses),
                    op_latency: std::mem::take(&mut t.op_latency),
                    ops: std::mem::take(&mut t.op_log),
                    cpu_sys_ns: t.cpu_sys,
                    cpu_user_ns: t.cpu_user,
                    runqueue_wait_ns: t.runq_wait,
                    reclaim_waits: t.reclaim_waits + u64::from(t.reclaim_since.is_some()),
                    reclaim_wait_ns: t.reclaim_wait + t.reclaim_since.map_or(0, |s| ended.saturating_sub(s)),
                    sched: t.wq.stats(),
                    syncs: t.sync_parts,
                }
            })
            .collect();
        let devices = self
            .queues
            .iter_mut()
            .enumerate()
            .map(|(i, q)| DeviceResult {
                name: q.name.clone(),
                model: self.cfg.devices[i].model.kind(),
                bytes_written: q.bytes_written,
                bytes_read: q.bytes_read,
                util: if dur > 0 { q.device.busy_ns(dur) as f64 / dur as f64 } else { 0.0 },
                request_latency: std::mem::take(&mut q.latency),
                requests_written: q.requests_written,
                requests_read: q.requests_read,
                flushes: q.flush.issued,
                fua_writes: q.fua_writes,
                journal: self.journals[i].as_ref().map(|j| crate::metrics::JournalResult {
                    fs: j.p.fs.name(),
                    commits: j.stats.commits,
                    blocks_logged: j.stats.blocks_logged,
                    commit_mean_ns: j.stats.commit_ns_total / j.stats.commits.max(1),
                    commit_max_ns: j.stats.commit_ns_max,
                    locked_mean_ns: j.stats.locked_ns / j.stats.commits.max(1),
                    flushing_mean_ns: j.stats.flushing_ns / j.stats.commits.max(1),
                    logging_mean_ns: j.stats.logging_ns / j.stats.commits.max(1),
                    handle_waits: j.stats.handle_waits,
                    handle_wait_ns: j.stats.handle_wait_ns,
                    checkpoint_blocks: j.stats.checkpoint_blocks,
                    fast_commits: j.stats.fast_commits,
                }),
                iolatency: q.iolat.as_ref().map(|l| l.stats.clone()).unwrap_or_default(),
            })
            .collect();
        let cgroups = self
            .memcgs
            .iter_mut()
            .zip(&self.cfg.cgroups.groups)
            .map(|(m, g)| crate::metrics::CgroupResult {
                path: g.path.clone(),
                cgroup_ino: m.cgroup_ino,
                memory_max: g.memory_max,
                memory_high: g.memory_high,
                events: m.stats,
                samples: std::mem::take(&mut m.samples),
            })
            .collect();
        // The run's end, unless the last second's sample fell on it.
        if self.pressure.last().is_none_or(|p| p.t_ns < dur) {
            self.psi_sample(dur);
        }
        RunResult {
            sim_ns: dur,
            cgroups,
            pressure: std::mem::take(&mut self.pressure),
            events: self.q.events(),
            tasks,
            devices,
            trace: self.tout.trace.finish(),
            trace_streamed: self.tout.trace.streamed,
            trace_dropped: self.tout.trace.dropped,
            comms,
            vmstat: self.vmstat,
            throttle: self.throttle,
            tiotest,
            fio,
            scenario: self.cfg,
        }
    }
}

/// Simulate `scenario` and return its results; the laws are checked in debug and test builds.
pub fn run(scenario: &Scenario, progress: &mut dyn Progress) -> Result<RunResult, LawViolation> {
    run_with(scenario, progress, RunOptions::default())
}

/// Simulate `scenario` with `opts`; a broken law ends the run with its violation.
pub fn run_with(scenario: &Scenario, progress: &mut dyn Progress, opts: RunOptions) -> Result<RunResult, LawViolation> {
    let mut m = Machine::with_options(scenario, opts);
    m.run(progress)?;
    Ok(m.finish())
}

/// Simulate `scenario` with `opts`, handing the trace to the sink `make_sink` returns as it is
/// recorded (it is given the comms table the records index). The result's `trace` is empty.
pub fn run_streaming(
    scenario: &Scenario,
    progress: &mut dyn Progress,
    opts: RunOptions,
    make_sink: impl FnOnce(Vec<(String, u32)>) -> Box<dyn TraceSink>,
) -> Result<RunResult, LawViolation> {
    let mut m = Machine::with_options(scenario, opts);
    m.set_trace_sink(make_sink(m.comms()));
    m.run(progress)?;
    Ok(m.finish())
}
