//! One block device's request queue: the request pool, blk-throttle, blk-wbt, tag allocation,
//! the elevator and the device, wired as `submit_bio_noacct` and `blk_mq_submit_bio` do: blk-throttle (`blk_throtl_bio`, which may hold the bio and let the
//! submitter go on) → merge attempt → wbt (`rq_qos_throttle`) → tag → elevator → dispatch up
//! to the device's queue depth → completion. Bios that blk-throttle held enter at the merge
//! attempt later, submitted by its dispatch work (the machine drives it, `throtl_issue`).
//!
//! Simplifications: writeback builds requests of up to `max_sectors_kb` directly from runs of
//! contiguous pages (what plug merging achieves for sequential writeback), so the plug list
//! itself is not modelled; request-to-request merges are not modelled.

use super::bio_chain::BioChains;
use super::blk_throttle::BlkThrottle;
use super::blk_trace::{BlkEvent, BlkWhat};
use super::blk_wbt::{Wbt, WbtFlags};
use super::request::NO_MEMBER;
use super::request_list::{RequestList, StripeReads};
use super::sched::{self, Elevator, ElvRq};
use crate::config::{DeviceConfig, IoPrio};
use crate::drivers::{self, DevRequest, Device, Op};
use crate::engine::{Clock, RngStream};
use crate::metrics::trace::DevT;
use crate::metrics::LatencyHist;
use crate::Ns;
use std::collections::VecDeque;

pub(crate) use super::request::{Request, RqStage, Seg, Submitter, NO_BIO};

/// The id a cache flush carries to the device (never an index of the request pool).
pub(crate) const FLUSH_ID: u32 = u32::MAX;

/// From a PREFLUSH bio to its flush's issue, ns, hot and cold
/// ([`crate::kernel::cpu::cold_cost`] of the time since the device's last flush): blk-flush
/// queues the flush request for the requeue work, which a kworker runs (`blk_kick_flush`,
/// `blk_mq_requeue_work`). Measured on this lab's 6.18 guest (ftrace, `block_bio_queue` of a
/// PREFLUSH write or an fdatasync's flush to the flush's `block_rq_issue` by a kworker, on a
/// loop device): 11–14 µs with a flush every 10 or 100 ms, 6–7 µs with one every 0.2–1 ms.
pub(crate) const BLK_FLUSH_KICK_NS: (Ns, Ns) = (6_000, 13_000);

/// Between the steps of a flush sequence, ns: after the pre-flush the write it preceded, after
/// that write the post-flush that stands for FUA on a device without it, each requeued from
/// the completion to the same kworker: 4–6 µs in that trace.
pub(crate) const BLK_FLUSH_STEP_NS: Ns = 5_000;

/// `BLK_MQ_BUDGET_DELAY`: how long blk-mq waits before it runs a hardware queue again whose
/// elevator had work and gave nothing (ms).
pub(crate) const BLK_MQ_BUDGET_DELAY_MS: u64 = 3;

/// blk-flush (`blk-flush.c`) for the empty PREFLUSH bios of fsync() and sync() (as
/// `blkdev_issue_flush` sends): callers that ask while a flush is in flight wait for the next
/// one, which then covers them all — the kernel's pending and running flush lists, which turn
/// a crowd of fsyncs into a few flushes. A flush goes to the device ahead of the elevator's
/// requests; where the device cannot queue it (SATA, [`Device::flush_queueable`]) it waits for
/// the device to go idle, nothing else is dispatched meanwhile, and the device gets nothing
/// else until it completes. Simplified: the flush takes no tag. The data of a PREFLUSH/FUA
/// write (a journal's commit record) is an ordinary request sent after the flush, past the
/// elevator ([`Request::in_flush_seq`]).
#[derive(Debug, Default)]
pub(crate) struct FlushQueue {
    /// Tasks waiting for the next flush.
    pub pending: Vec<u32>,
    /// Tasks the flush in flight serves.
    running: Vec<u32>,
    in_flight: bool,
    /// Flushes sent to the device.
    pub issued: u64,
    /// Whoever asked for the flush in flight first (the context it is issued from).
    pub first: u32,
    /// When the flush in flight went to the device.
    dispatched_ns: Ns,
    /// The pending flush goes to the device no earlier than this (blk-flush's kworker).
    ready_at: Ns,
    /// When the last flush completed.
    pub last_done: Ns,
}

impl FlushQueue {
    pub(crate) fn in_flight(&self) -> bool {
        self.in_flight
    }

    /// Whether task `tid` waits for this device's next flush or the one in flight.
    pub(crate) fn waits_for(&self, tid: u32) -> bool {
        self.pending.contains(&tid) || self.running.contains(&tid)
    }

    /// A pending flush waits at `now` for blk-flush's kworker to issue it.
    pub(crate) fn kick_pending(&self, now: Ns) -> bool {
        !self.pending.is_empty() && now < self.ready_at
    }
}

/// Result of handing a new request to the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Submit {
    /// Merged into a queued request or queued: the submitter goes on.
    Accepted,
    /// Held by blk-throttle: the submitter goes on; the dispatch work submits it later.
    Throttled,
    /// The submitter must sleep until the request is accepted (wbt or tag wait).
    Blocked,
}

pub(crate) struct BlockQueue {
    pub name: String,
    pub devt: DevT,
    pub max_sectors: u64,
    /// Device capacity in sectors: requests past the end wrap to the start (files that
    /// outgrow their region).
    pub capacity_sectors: u64,
    pub nomerges: u32,
    pub nr_requests: u32,
    pub async_depth: u32,
    /// The elevator sets tag limits by its state (bfq): asked per allocation.
    pub shallow_depth: bool,
    pub elv: Box<dyn Elevator>,
    /// blk-throttle, on queues with a rule only.
    pub throtl: Option<Box<BlkThrottle>>,
    /// The throttle group of each cgroup's bios (0: the root's), where cgroups have `io.max`
    /// rules on this device.
    pub throtl_group_of: Vec<u16>,
    /// blk-iolatency, where a cgroup has an `io.latency` target on this device.
    pub iolat: Option<Box<crate::block::blk_iolatency::IoLatency>>,
    /// When its 1 s timer fires next.
    pub iolat_timer_at: Option<Ns>,
    /// Legacy-era request allocation (pre-blk-mq generations): replaces the tags.
    pub legacy: Option<RequestList>,
    /// A striped device's member lists, for its read congestion (legacy era).
    pub stripe: Option<StripeReads>,
    pub wbt: Wbt,
    pub device: Box<dyn Device>,
    pool: Vec<Request>,
    free: Vec<u32>,
    /// Tags in use in each hardware context (`nr_requests` each).
    tags_used: Vec<u32>,
    /// Hardware contexts (blk-mq `hctx`): the device's queues, at most one per CPU.
    nr_hw_queues: u16,
    /// CPUs, for the CPU → hardware context map.
    ncpus: u16,
    /// Requests waiting for a tag, per hardware context, in arrival order.
    tag_waiters: Vec<VecDeque<u32>>,
    /// The hardware context's dispatch list (`hctx->dispatch`): blk-flush's writes, which
    /// go to the device before anything the elevator holds.
    bypass: VecDeque<u32>,
    /// Whether blk-flush's writes go there: blk-mq, and the request queue from 2.6.37
    /// (`blk-flush.c` inserts a flush sequence's data at the front, `ELEVATOR_INSERT_FRONT`).
    /// Before, a barrier write waited in the elevator like any other.
    pub(crate) flush_front: bool,
    /// Time of the device event already scheduled, if any.
    pub tick_at: Option<Ns>,
    pub wbt_timer_at: Option<Ns>,
    /// When the elevator's timer event is scheduled.
    pub elv_timer_at: Option<Ns>,
    /// Time of the blk-throttle timer event already scheduled, if any.
    pub throtl_timer_at: Option<Ns>,
    /// blk-mq's delayed run, pending (`BLK_MQ_BUDGET_DELAY` after the elevator declined).
    pub delay_run: Option<Ns>,
    /// When the event of `delay_run` is scheduled.
    pub delay_run_at: Option<Ns>,
    clock: Clock,
    pub bytes_written: u64,
    /// Of `bytes_written`, O_DIRECT writes (no page cache pages behind them).
    pub direct_bytes_written: u64,
    /// Bytes of journal (log) writes completed.
    pub log_bytes_written: u64,
    pub bytes_read: u64,
    pub requests_written: u64,
    /// Writes that carried REQ_FUA.
    pub fua_writes: u64,
    pub requests_read: u64,
    pub latency: LatencyHist,
    /// Bytes completed this second (for vmstat bi/bo).
    pub sec_written: u64,
    pub sec_read: u64,
    /// Requests completed since the last per-second sample (diskstats, for iostat).
    pub sec_io: crate::metrics::DevIo,
    /// Write bytes submitted since the last per-second sample (vmstat `bo`, PGPGOUT).
    pub sec_submitted_written: u64,
    /// The device's busy time at the last per-second sample (for per-second %util).
    pub sec_busy_mark: Ns,
    /// NFS (a device whose writes complete unstable, [`Device::unstable_writes`]): the pages of
    /// completed writes that no COMMIT has covered yet, each tagged with the number of its
    /// write completion. They stay under writeback until the device's
    /// [`Device::stable_writes`] passes their tag.
    unstable: VecDeque<(u64, Seg)>,
    /// Write completions held so far (the next tag).
    writes_held: u64,
    /// `device.unstable_writes()`, read once.
    pub unstable_device: bool,
    /// Pages of completed writes held until a COMMIT (`NR_UNSTABLE_NFS` before 5.8).
    pub unstable_pages: u64,
    /// Writeback bios split into several requests (large folios).
    pub chains: BioChains,
    /// The file system's end_io work for pages written over unwritten extents.
    pub end_io: crate::fs::unwritten::EndIoWork,
    /// `queue/write_cache` is "write back": fsync and sync end with a cache flush.
    pub write_cache: bool,
    /// `device.flush_queueable()`, read once.
    flush_queueable: bool,
    pub flush: FlushQueue,
    /// Submitters asleep on a request while holding an ext4 handle (a jbd2 commit in
    /// T_LOCKED waits for them).
    pub handles_blocked: u32,
    /// The I/O priority class of each task's requests, by task id (kernel threads: BE).
    pub task_prio: Vec<IoPrio>,
    /// The elevator records tracepoints; `elv_events` is the buffer they are moved through.
    pub elv_trace: bool,
    pub elv_events: Vec<(Ns, crate::block::sched::ElvTrace)>,
    /// Fire the request-path block tracepoints into `blk_events` (`[trace] block`); the
    /// machine moves them into the run's trace.
    pub blk_trace: bool,
    pub blk_events: Vec<BlkEvent>,
}

impl BlockQueue {
    /// The queue of device `cfg`; `rng` is the device's stream of chance, `clock` the
    /// machine's (its timers count the same jiffies).
    pub(crate) fn new(cfg: &DeviceConfig, rng: RngStream, clock: Clock) -> Self {
        let hz = clock.hz;
        let device = drivers::build(cfg, rng);
        let q = &cfg.queue;
        // blk_queue_depth(): SCSI-like devices report the device queue depth to wbt.
        // wbt scales from one hardware queue's depth (the device's queues are pooled).
        let wbt = Wbt::new(q, device.queue_depth() / cfg.model.nr_hw_queues().max(1));
        let unstable_device = device.unstable_writes();
        let flush_queueable = device.flush_queueable();
        let elv = sched::build(q);
        let async_depth = elv.async_depth().unwrap_or(q.nr_requests);
        BlockQueue {
            name: cfg.name.clone(),
            devt: DevT {
                major: cfg.major,
                minor: cfg.minor,
            },
            max_sectors: q.max_sectors_kb as u64 * 2,
            capacity_sectors: (cfg.size / 512).max(1 << 20),
            nomerges: q.nomerges,
            nr_requests: q.nr_requests,
            async_depth,
            shallow_depth: elv.has_shallow_depth(),
            elv,
            throtl: Some(Box::new(BlkThrottle::new(&cfg.throttle, &[], hz, q.rotational))).filter(|t| t.is_active()),
            throtl_group_of: Vec::new(),
            iolat: None,
            iolat_timer_at: None,
            wbt,
            device,
            pool: Vec::new(),
            free: Vec::new(),
            tags_used: vec![0],
            nr_hw_queues: 1,
            ncpus: 1,
            tag_waiters: vec![VecDeque::new()],
            bypass: VecDeque::new(),
            flush_front: true,
            tick_at: None,
            wbt_timer_at: None,
            elv_timer_at: None,
            throtl_timer_at: None,
            delay_run: None,
            delay_run_at: None,
            legacy: None,
            stripe: None,
            clock,
            bytes_written: 0,
            direct_bytes_written: 0,
            log_bytes_written: 0,
            bytes_read: 0,
            requests_written: 0,
            fua_writes: 0,
            requests_read: 0,
            latency: LatencyHist::new(),
            sec_written: 0,
            sec_read: 0,
            sec_io: Default::default(),
            sec_submitted_written: 0,
            sec_busy_mark: 0,
            unstable: VecDeque::new(),
            writes_held: 0,
            unstable_device,
            unstable_pages: 0,
            chains: BioChains::default(),
            end_io: Default::default(),
            write_cache: q.write_cache,
            flush_queueable,
            flush: FlushQueue::default(),
            handles_blocked: 0,
            task_prio: Vec::new(),
            elv_trace: false,
            elv_events: Vec::new(),
            blk_trace: false,
            blk_events: Vec::new(),
        }
    }

    /// Take a request from the pool (reusing its segment vector).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alloc(
        &mut self,
        op: Op,
        sector: u64,
        nr_sectors: u64,
        seg: Option<Seg>,
        submitter: Submitter,
        sync: bool,
        background: bool,
        readahead: bool,
        direct: bool,
    ) -> u32 {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.pool.push(Request {
                    stage: RqStage::Free,
                    op,
                    sector: 0,
                    nr_sectors: 0,
                    segs: smallvec::SmallVec::new(),
                    sync: false,
                    background: false,
                    readahead: false,
                    direct: false,
                    direct_sectors: 0,
                    wbt_tracked: false,
                    throttled: false,
                    submitter,
                    issue_ns: 0,
                    handle_start: false,
                    in_handle: false,
                    handle_wait: false,
                    new_blocks: false,
                    log_sectors: 0,
                    fua: false,
                    flush_seq: false,
                    ckpt_tid: 0,
                    hctx: 0,
                    start_ns: 0,
                    blkcg: None,
                    submit_ns: 0,
                    iolat_in: false,
                    aio: 0,
                    set_writeback_at_submit: false,
                    ends_i_sync: false,
                    stripe_member: NO_MEMBER,
                    phys_segs: 0,
                });
                (self.pool.len() - 1) as u32
            }
        };
        let sector = if sector + nr_sectors > self.capacity_sectors {
            sector % (self.capacity_sectors - nr_sectors.min(self.capacity_sectors / 2))
        } else {
            sector
        };
        let r = &mut self.pool[id as usize];
        r.stage = RqStage::Built;
        r.op = op;
        r.sector = sector;
        r.nr_sectors = nr_sectors;
        r.segs.clear();
        if let Some(s) = seg {
            r.segs.push(s);
        }
        r.sync = sync;
        r.background = background;
        r.readahead = readahead;
        r.direct = direct;
        r.direct_sectors = if direct { nr_sectors } else { 0 };
        // bio_to_wbt_flags: every write but O_DIRECT (REQ_SYNC|REQ_IDLE) is tracked.
        r.wbt_tracked = op == Op::Write && !direct;
        r.throttled = false;
        r.submitter = submitter;
        r.issue_ns = 0;
        r.handle_start = false;
        r.in_handle = false;
        r.handle_wait = false;
        r.new_blocks = false;
        r.log_sectors = 0;
        r.fua = false;
        r.flush_seq = false;
        r.ckpt_tid = 0;
        r.hctx = 0;
        r.blkcg = None;
        r.submit_ns = 0;
        r.iolat_in = false;
        r.aio = 0;
        r.set_writeback_at_submit = false;
        r.ends_i_sync = false;
        r.stripe_member = NO_MEMBER;
        // A segment per 4 KiB page; page-cache bios with large folios say fewer.
        r.phys_segs = nr_sectors.div_ceil(8) as u32;
        id
    }

    pub(crate) fn rq(&self, id: u32) -> &Request {
        &self.pool[id as usize]
    }

    pub(crate) fn rq_mut(&mut self, id: u32) -> &mut Request {
        &mut self.pool[id as usize]
    }

    pub(crate) fn release(&mut self, id: u32) {
        let m = std::mem::replace(&mut self.pool[id as usize].stripe_member, NO_MEMBER);
        if let Some(st) = self.stripe.as_mut().filter(|_| m != NO_MEMBER) {
            st.remove(m);
        }
        self.pool[id as usize].stage = RqStage::Free;
        self.free.push(id);
    }

    /// Request slots ever allocated (in use or free): the largest request id + 1.
    pub(crate) fn request_slots(&self) -> usize {
        self.pool.len()
    }

    /// The requests in use, with their ids.
    pub(crate) fn live_requests(&self) -> impl Iterator<Item = (u32, &Request)> {
        self.pool
            .iter()
            .enumerate()
            .filter(|(_, r)| r.stage != RqStage::Free)
            .map(|(i, r)| (i as u32, r))
    }

    /// `submit_bio_noacct` for a new request: blk-throttle, then `blk_mq_submit_bio`.
    /// `Throttled` means blk-throttle holds it (the submitter goes on); `Blocked` means it waits
    /// in wbt or for a tag and the submitter sleeps.
    /// `blkcg` is the cgroup the bio is charged to (`None`: the root).
    pub(crate) fn submit(&mut self, now: Ns, id: u32, last_bdp_sleep: Option<Ns>, blkcg: Option<u16>) -> Submit {
        let r = &mut self.pool[id as usize];
        r.blkcg = blkcg;
        if self.iolat.is_some() {
            r.submit_ns = now;
        }
        // Journal log writes (REQ_META) pass blk-throttle: measured on 6.18, jbd2's log bios
        // reach the queue within microseconds while seconds of data wait in the throttle's
        // FIFO (docs/validation.md, v6).
        if self.throtl.is_some() && self.pool[id as usize].log_sectors == 0 {
            let j = self.clock.jiffies(now);
            let r = &self.pool[id as usize];
            let (op, mut bytes) = (r.op, r.bytes());
            let chain = r.segs.first().map_or(NO_BIO, |s| s.bio);
            let mut lead = false;
            if chain != NO_BIO {
                // A part of a split bio: the head went through blk-throttle for all of them.
                let (head, all) = self.chains.head(chain);
                if head != id {
                    let t = self.throtl.as_mut().expect("checked");
                    if t.follow(head, id) {
                        self.pool[id as usize].throttled = true;
                        self.pool[id as usize].stage = RqStage::Throttled;
                        return Submit::Throttled;
                    }
                    return self.blk_mq_submit_bio(now, id, last_bdp_sleep);
                }
                (bytes, lead) = (all, true);
            }
            let g = blkcg.and_then(|c| self.throtl_group_of.get(c as usize)).map_or(0, |&g| g as usize);
            if self.throtl.as_mut().is_some_and(|t| t.bio(j, id, op, bytes, g)) {
                if lead {
                    self.throtl.as_mut().expect("checked").lead(id);
                }
                self.pool[id as usize].throttled = true;
                self.pool[id as usize].stage = RqStage::Throttled;
                return Submit::Throttled;
            }
        }
        self.blk_mq_submit_bio(now, id, last_bdp_sleep)
    }

    /// `blk_mq_submit_bio`: merge, wbt, tag. `Blocked` means the request waits in wbt or for a
    /// tag and whoever submits it sleeps.
    pub(crate) fn blk_mq_submit_bio(&mut self, now: Ns, id: u32, last_bdp_sleep: Option<Ns>) -> Submit {
        if self.blk_trace {
            self.trace_bio_queue(now, id);
        }
        let (op, sector, nr) = {
            let r = &self.pool[id as usize];
            (r.op, r.sector, r.nr_sectors)
        };
        let r = &self.pool[id as usize];
        // A checkpoint write keeps its own completion (its transaction counts them).
        if self.nomerges < 2 && !r.direct && !r.in_flush_seq() && r.ckpt_tid == 0 {
            if let Some((target, side)) = self.elv.try_merge(op, sector, nr, self.max_sectors) {
                if self.blk_trace {
                    let what = match side {
                        sched::Merge::Back => BlkWhat::BackMerge,
                        sched::Merge::Front => BlkWhat::FrontMerge,
                    };
                    self.fire(now, what, id, nr);
                }
                if op == Op::Read {
                    self.sec_io.read_merges += 1;
                } else {
                    self.sec_io.write_merges += 1;
                }
                let segs = std::mem::take(&mut self.pool[id as usize].segs);
                let (log, new_blocks, phys) = (
                    self.pool[id as usize].log_sectors,
                    self.pool[id as usize].new_blocks,
                    self.pool[id as usize].phys_segs,
                );
                let t = &mut self.pool[target as usize];
                t.phys_segs += phys;
                t.sector = t.sector.min(sector);
                t.nr_sectors += nr;
                t.log_sectors += log;
                t.new_blocks |= new_blocks;
                t.segs.extend_from_slice(&segs);
                self.pool[id as usize].segs = segs;
                self.release(id);
                return Submit::Accepted;
            }
        }
        // rq-qos: blk-iolatency first (registered after wbt, so earlier in the list).
        if let (Some(l), Some(cg)) = (self.iolat.as_mut(), self.pool[id as usize].blkcg) {
            if l.throttle(id, cg as usize, 0).is_err() {
                self.pool[id as usize].stage = RqStage::IolatWait;
                return Submit::Blocked;
            }
            self.pool[id as usize].iolat_in = true;
        }
        self.rq_qos_after_iolatency(now, id, last_bdp_sleep)
    }

    /// The rest of `blk_mq_submit_bio` after blk-iolatency admitted request `id`: wbt, then
    /// a tag.
    pub(crate) fn rq_qos_after_iolatency(&mut self, now: Ns, id: u32, last_bdp_sleep: Option<Ns>) -> Submit {
        let (op, tracked, sync, background) = {
            let r = &self.pool[id as usize];
            (r.op, r.wbt_tracked, r.sync, r.background)
        };
        if op == Op::Read {
            // wbt_wait for a read: stamps last_issue (close_io).
            self.wbt.read_queued(now);
        }
        if tracked && self.wbt.enabled() {
            let flags = WbtFlags {
                sync,
                background,
                meta: false,
            };
            if !self.wbt.throttle(now, id, flags, last_bdp_sleep) {
                self.pool[id as usize].stage = RqStage::WbtWait;
                return Submit::Blocked;
            }
        }
        if self.get_tag(now, id) {
            Submit::Accepted
        } else {
            Submit::Blocked
        }
    }

    /// Allocate a tag and queue the request, or wait FIFO for one.
    pub(crate) fn get_tag(&mut self, now: Ns, id: u32) -> bool {
        if let Some(rl) = self.legacy.as_mut() {
            let r = &self.pool[id as usize];
            if rl.get_request(r.op, r.submitter, now) {
                self.insert(now, id);
                return true;
            }
            rl.wait(r.op, id);
            self.pool[id as usize].stage = RqStage::TagWait;
            return false;
        }
        // As blk_mq_get_tag: a request takes a free tag within its own depth even while
        // others wait, so a read is not stuck behind writes held by a shallower limit.
        let limit = self.tag_limit(id);
        let h = self.pool[id as usize].hctx as usize;
        if self.tags_used[h] < limit {
            self.tags_used[h] += 1;
            self.insert(now, id);
            true
        } else {
            self.tag_waiters[h].push_back(id);
            self.pool[id as usize].stage = RqStage::TagWait;
            false
        }
    }

    fn insert(&mut self, now: Ns, id: u32) {
        if let Some(st) = self.stripe.as_mut() {
            let r = &mut self.pool[id as usize];
            if r.op == Op::Read {
                r.stripe_member = st.add(r.sector);
            }
        }
        self.pool[id as usize].stage = RqStage::Queued;
        // blk_mq_rq_ctx_init: the request's life for diskstats starts with its tag.
        self.pool[id as usize].start_ns = now;
        if self.blk_trace {
            let nr = self.pool[id as usize].nr_sectors;
            self.fire(now, BlkWhat::GetRq, id, nr);
            self.fire(now, BlkWhat::Insert, id, nr);
        }
        let r = &self.pool[id as usize];
        if r.in_flush_seq() && self.flush_front {
            self.bypass.push_back(id);
            return;
        }
        self.elv.insert(
            now,
            ElvRq {
                id,
                op: r.op,
                sector: r.sector,
                nr_sectors: r.nr_sectors,
                sync: r.sync || r.op == Op::Read,
                owner: match r.submitter {
                    Submitter::Task(t) => t + 1,
                    Submitter::Flusher(_) => 0,
                    // jbd2 is a process of its own to a per-process scheduler.
                    Submitter::Journal(d) => 0x4000_0000 | d as u32,
                },
                prio: self.submitter_prio(r.submitter),
                blkcg: r.blkcg,
            },
        );
    }

    /// `block_bio_queue` for request `id` entering `blk_mq_submit_bio`, or `block_split` for
    /// a later part of a split bio (its head was queued with the whole bio's sectors), which
    /// names the part before it. The kernel traces each split before the part it cuts off gets
    /// its request; here it shows just before the next part's.
    fn trace_bio_queue(&mut self, now: Ns, id: u32) {
        let r = &self.pool[id as usize];
        let (sector, nr) = (r.sector, r.nr_sectors);
        let chain = r.segs.first().map_or(NO_BIO, |s| s.bio);
        let (what, nr) = if chain == NO_BIO {
            (BlkWhat::Queue, nr)
        } else {
            let (head, all) = self.chains.head(chain);
            let from = self.chains.part_submitted(chain, sector);
            if head == id {
                (BlkWhat::Queue, all / 512)
            } else {
                (BlkWhat::Split { from }, nr)
            }
        };
        self.fire(now, what, id, nr);
    }

    /// Keep tracepoint `what` of request `id` (over `nr` sectors) for the machine.
    fn fire(&mut self, now: Ns, what: BlkWhat, id: u32, nr: u64) {
        let r = &self.pool[id as usize];
        let prio = self.submitter_prio(r.submitter);
        let mut ev = BlkEvent::of(now, what, r, nr, prio);
        // Everything blk_mq_submit_bio does for a released bio runs in the throttle's worker.
        ev.throttled = r.throttled;
        self.blk_events.push(ev);
    }

    /// The I/O priority a submitter's requests carry: the task's `ionice`; kernel threads
    /// (flushers, jbd2) are best effort at level 4.
    pub(crate) fn submitter_prio(&self, s: Submitter) -> IoPrio {
        match s {
            Submitter::Task(t) => self.task_prio.get(t as usize).copied().unwrap_or_default(),
            Submitter::Flusher(_) | Submitter::Journal(_) => IoPrio::default(),
        }
    }

    /// A tag was freed: hand tags to waiters in order. Returns the requests now queued.
    /// Legacy era: a request of direction `op` was freed (`freed_request`). A woken waiter's
    /// request is queued and pushed to `accepted`. Returns whether the queue just became
    /// uncongested for `op` (the machine wakes the `congestion_wait` sleepers).
    pub(crate) fn legacy_freed(&mut self, now: Ns, op: Op, accepted: &mut Vec<u32>) -> bool {
        let pool = &self.pool;
        let Some(rl) = self.legacy.as_mut() else { return false };
        let (cleared, woken) = rl.freed(op, now, |id| pool[id as usize].submitter);
        if let Some(id) = woken {
            self.insert(now, id);
            accepted.push(id);
        }
        // 2.4's wake-all: the other woken waiters that got a slot.
        while let Some(id) = self.legacy.as_mut().and_then(|rl| rl.take_woken()) {
            self.insert(now, id);
            accepted.push(id);
        }
        cleared
    }

    /// The scheduler tags request `id` may take: all of them, or the elevator's async depth
    /// for the requests it limits (`limit_depth`).
    fn tag_limit(&self, id: u32) -> u32 {
        let r = &self.pool[id as usize];
        if self.shallow_depth {
            let d = self.elv.shallow_depth(r.op, r.sync || r.op == Op::Read, self.nr_requests);
            return d.map_or(self.nr_requests, |d| d.min(self.nr_requests));
        }
        if self.elv.depth_limited(r.op, r.sync || r.op == Op::Read) {
            self.async_depth.min(self.nr_requests)
        } else {
            self.nr_requests
        }
    }

    /// A request of hardware context `hctx` gave back its tag.
    pub(crate) fn put_tag(&mut self, now: Ns, hctx: u16, accepted: &mut Vec<u32>) {
        let h = hctx as usize;
        self.tags_used[h] -= 1;
        // Wake waiters in order, each within its own depth: one whose limit is reached
        // does not hold back those behind it with a deeper one.
        let mut i = 0;
        while i < self.tag_waiters[h].len() && self.tags_used[h] < self.nr_requests {
            let id = self.tag_waiters[h][i];
            if self.tags_used[h] >= self.tag_limit(id) {
                i += 1;
                continue;
            }
            self.tag_waiters[h].remove(i);
            self.tags_used[h] += 1;
            self.insert(now, id);
            accepted.push(id);
        }
    }

    /// Map the machine's CPUs onto the device's hardware queues, as `blk_mq_map_queues`
    /// does: at most one queue per CPU (the NVMe driver asks for no more), each serving a
    /// contiguous group of CPUs.
    pub(crate) fn map_queues(&mut self, device_queues: u32, ncpus: u32) {
        let n = device_queues.clamp(1, ncpus.max(1)) as u16;
        self.nr_hw_queues = n;
        self.ncpus = ncpus.max(1) as u16;
        self.tags_used = vec![0; n as usize];
        self.tag_waiters = vec![VecDeque::new(); n as usize];
    }

    /// The hardware context a request submitted on `cpu` enters (`blk_mq_map_queue`).
    pub(crate) fn hctx_of_cpu(&self, cpu: u16) -> u16 {
        ((cpu % self.ncpus) as u32 * self.nr_hw_queues as u32 / self.ncpus as u32) as u16
    }

    /// Hardware contexts in use.
    pub(crate) fn nr_hw_queues(&self) -> u16 {
        self.nr_hw_queues
    }

    /// Whether fsync() and sync() must end with a cache flush here: a volatile write cache
    /// (`queue/write_cache` "write back"; "write through" makes the block layer complete
    /// PREFLUSH bios at once), on a block device (NFS's fsync is a COMMIT instead).
    pub(crate) fn wants_flush(&self) -> bool {
        self.write_cache && !self.unstable_device
    }

    /// Whether the device takes FUA writes (`queue/fua` in sysfs).
    pub(crate) fn supports_fua(&self) -> bool {
        self.device.supports_fua()
    }

    /// Task `tid` waits for the next cache flush of this device, which may go to the device
    /// from `ready`. True when `tid` starts the pending flush (whoever asks while one is
    /// pending joins it, at its time).
    pub(crate) fn queue_flush(&mut self, tid: u32, ready: Ns) -> bool {
        let starts = self.flush.pending.is_empty();
        if starts {
            self.flush.ready_at = ready;
            if !self.flush.in_flight {
                self.flush.first = tid;
            }
        }
        self.flush.pending.push(tid);
        starts
    }

    /// The flush in flight completed at `now`: the tasks it served.
    pub(crate) fn flush_completed(&mut self, now: Ns) -> Vec<u32> {
        self.flush.in_flight = false;
        self.flush.last_done = now;
        self.sec_io.flushes += 1;
        self.sec_io.flush_ticks_ns += now.saturating_sub(self.flush.dispatched_ns);
        if let Some(&t) = self.flush.pending.first() {
            self.flush.first = t;
        }
        std::mem::take(&mut self.flush.running)
    }

    /// Send the pending flush to the device if it can take it. Returns false when nothing
    /// else may be dispatched now (an unqueueable flush in flight or waiting for idle).
    fn dispatch_flush(&mut self, now: Ns, issued: &mut Vec<u32>) -> bool {
        if self.flush.in_flight {
            return self.flush_queueable;
        }
        if self.flush.pending.is_empty() || now < self.flush.ready_at {
            return true;
        }
        let inside = self.device.in_flight();
        if inside < self.device.queue_depth() && (self.flush_queueable || inside == 0) {
            self.flush.running = std::mem::take(&mut self.flush.pending);
            self.flush.in_flight = true;
            self.flush.issued += 1;
            self.flush.dispatched_ns = now;
            self.device.dispatch(
                now,
                DevRequest {
                    id: FLUSH_ID,
                    op: Op::Flush,
                    sector: 0,
                    bytes: 0,
                    segments: 0,
                    sync: true,
                    fua: false,
                    prio: Default::default(),
                },
            );
            issued.push(FLUSH_ID);
        }
        self.flush_queueable
    }

    /// Whether a completion must run the queue: requests wait for room in a full device (a
    /// tag's wait queue, the dispatch list's restart), a flush is under way, the legacy
    /// request queue (its `request_fn` runs on every completion), or an elevator whose
    /// completion hook runs it ([`Elevator::runs_queue_on_completion`]).
    pub(crate) fn restart_on_completion(&self, was_full: bool) -> bool {
        was_full
            || self.legacy.is_some()
            || !self.bypass.is_empty()
            || self.flush.in_flight
            || !self.flush.pending.is_empty()
            || self.elv.runs_queue_on_completion()
    }

    /// Dispatch queued requests into the device while it has room. Returns issued ids.
    pub(crate) fn run_queue(&mut self, now: Ns, issued: &mut Vec<u32>) {
        if !self.dispatch_flush(now, issued) {
            return;
        }
        let mut count = 0;
        while self.device.in_flight() < self.device.queue_depth() {
            // `blk_mq_sched_dispatch_requests`: the dispatch list first, then the elevator.
            let Some(id) = self.bypass.pop_front().or_else(|| self.elv.dispatch(now).map(|e| e.id)) else {
                if count == 0 && self.legacy.is_none() && self.elv.queued() > 0 {
                    // `__blk_mq_do_dispatch_sched`: the elevator has work but gave nothing, and
                    // nobody else may run the queue: run it again in 3 ms (re-armed, as
                    // `mod_delayed_work` does).
                    let j = self.clock.jiffies(now) + (BLK_MQ_BUDGET_DELAY_MS * self.clock.hz).div_ceil(1000);
                    self.delay_run = Some(self.clock.at_jiffies(j));
                }
                break;
            };
            count += 1;
            let prio = self.submitter_prio(self.pool[id as usize].submitter);
            let r = &mut self.pool[id as usize];
            r.issue_ns = now;
            r.stage = RqStage::Device;
            if r.op == Op::Read {
                self.wbt.read_issued(now, id);
            }
            self.device.dispatch(
                now,
                DevRequest {
                    id,
                    op: r.op,
                    sector: r.sector,
                    bytes: r.bytes(),
                    segments: r.phys_segs,
                    sync: r.sync,
                    fua: r.fua,
                    prio,
                },
            );
            issued.push(id);
        }
    }

    /// The write `id` completed on a device whose writes complete unstable (NFS): keep its
    /// pages under writeback until a COMMIT covers it, and return true. Returns false (and
    /// keeps nothing) on other devices, whose completed writes are stable.
    pub(crate) fn hold_unstable(&mut self, id: u32) -> bool {
        if !self.unstable_device {
            return false;
        }
        let tag = self.writes_held;
        self.writes_held += 1;
        for &s in &self.pool[id as usize].segs {
            self.unstable.push_back((tag, s));
            self.unstable_pages += s.pages;
        }
        true
    }

    /// Pages of held writes that the device's COMMITs have made stable, one run at a time.
    pub(crate) fn pop_stable(&mut self) -> Option<Seg> {
        let &(tag, s) = self.unstable.front()?;
        if tag < self.device.stable_writes() {
            self.unstable.pop_front();
            self.unstable_pages -= s.pages;
            Some(s)
        } else {
            None
        }
    }

    /// blk-throttle of a queue that has limits (one that throttled or released a request).
    /// Give the cgroups' `io.max` rules for this device their throttle groups, beside the
    /// root's (`rules[c]`: the rules governing cgroup `c`'s bios here, by the group that set
    /// them).
    pub(crate) fn set_cgroup_throttle(
        &mut self,
        root: &crate::config::BlkThrottleConfig,
        rules: &[Option<usize>],
        cfgs: &[crate::config::BlkThrottleConfig],
        hz: u64,
        rotational: bool,
    ) {
        let t = BlkThrottle::new(root, cfgs, hz, rotational);
        self.throtl = Some(Box::new(t)).filter(|t| t.is_active());
        self.throtl_group_of = rules.iter().map(|r| r.map_or(0, |i| i as u16 + 1)).collect();
    }

    pub(crate) fn throtl_mut(&mut self) -> &mut BlkThrottle {
        self.throtl.as_deref_mut().expect("the queue has blk-throttle limits")
    }

    /// Jiffies at `now`, as the queue's timers count them.
    pub(crate) fn jiffies(&self, now: Ns) -> u64 {
        self.clock.jiffies(now)
    }

    /// Time at which jiffies reach `j`.
    pub(crate) fn at_jiffies(&self, j: u64) -> Ns {
        self.clock.at_jiffies(j)
    }
}
