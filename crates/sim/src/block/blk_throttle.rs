//! blk-throttle (`block/blk-throttle.c`): bandwidth and IOPS limits on a block device, applied
//! to bios before they reach the request queue.
//!
//! # Where it sits
//!
//! `submit_bio_noacct` calls `blk_throtl_bio` before `submit_bio_noacct_nocheck` hands the bio
//! to `blk_mq_submit_bio`, so a throttled bio has not been merged, has passed no wbt and holds no
//! tag: it waits *above* the scheduler in a FIFO per direction. The submitter does not wait at
//! all. For writeback this means the flusher is never blocked while blk-throttle holds
//! everything it has written: the pages are already under writeback (NR_WRITEBACK) and stay so
//! until the bio is released and completes, which is why a throttled device carries 120-180 MiB
//! of writeback (see docs/validation.md). Reads and O_DIRECT I/O are throttled the same way.
//!
//! # The algorithm (per throtl group; the root cgroup's is the one a v1 `blkio.throttle.*` rule makes)
//!
//! Per direction the group has a limit in bytes/s and in IOs/s (either may be unlimited), the
//! bytes and IOs charged in the current *slice*, and the slice's start and end in jiffies.
//!
//! - **Admission** (`__blk_throtl_bio` / `tg_within_limit`): a direction without a rule is not
//!   looked at (`blk_should_throtl`). If bios of the direction are already queued, the new one
//!   queues behind them (FIFO); if the bps queue is empty and the bio fits the byte budget, its
//!   bytes are charged now and it waits in the IOPS queue only. Otherwise the bio is dispatched
//!   directly if `tg_dispatch_time` is 0: first the byte budget (`tg_within_bps_limit`), then,
//!   with its bytes charged, the IO budget (`tg_within_iops_limit`).
//! - **Budget**: with `elapsed` = jiffies since the slice started, rounded *up* to whole slices
//!   (one slice when 0), `bps * elapsed / HZ` bytes are allowed; a bio that does not fit waits
//!   `extra_bytes * HZ / bps` jiffies (at least 1) plus the rounding. IOs likewise with
//!   `roundup(elapsed + 1)` and at least `HZ / iops + 1` jiffies of wait.
//! - **Slices** (`tg_update_slice`): a bio that finds the slice over and nothing queued starts a
//!   new slice with zero charge; otherwise the slice is extended to cover `now + throtl_slice`
//!   and the wait. After each dispatch `throtl_trim_slice` moves the slice start forward by the
//!   whole slices used beyond two (keeping one spare for rounding) and removes their budget from
//!   the charge, so credit cannot pile up during a long busy period, and after an idle period
//!   only one slice's budget is available at once.
//! - **Dispatch**: the group's `disptime` is now plus the smaller wait of the two queue heads
//!   (`tg_update_disptime`); the service queue's `pending_timer` fires then (at most 8 slices
//!   ahead). `throtl_pending_timer_fn` dispatches rounds of up to 6 reads and 2 writes
//!   (`THROTL_GRP_QUANTUM` = 8, 3/4 reads) until the heads must wait again, each bio charged one
//!   IO and followed by a trim; the released bios go to the `kthrotld` work, which submits them
//!   (reads of the batch first) into the request queue, where they can still wait for wbt or a
//!   tag. That work runs one bio at a time: while it sleeps in wbt, later bios wait behind.
//! - **Slice length**: `throtl_slice` is `HZ/10` (100 ms) on rotational queues and `HZ/50`
//!   (20 ms) on non-rotational ones in v6.18 (chosen when the first rule is set,
//!   `blk_throtl_init`). The 6.18.y stable series (upstream f76581f9f1d2, "Fix throttle slice
//!   time for SSDs") makes it `HZ/10` for every queue; [`throtl_slice`] is the one place to change.
//!
//! # Simplifications
//!
//! - Groups per device: the root cgroup's and one per cgroup with `io.max` rules here, served
//!   in `disptime` order. Flat: a bio meets the rules of one group (the nearest with rules),
//!   not each level's on its way up the tree; no per-cgroup round-robin between qnodes, no v2
//!   root exemption (the root's rules are the device's `throttle/*` keys).
//! - One bio is one request of the model (at most `max_sectors_kb`): bios are never split after
//!   throttling, so the split-bio IOPS re-charging (`BIO_BPS_THROTTLED`) never happens.
//! - Limits are fixed for the run: no carryover from configuration changes
//!   (`tg_update_carryover`), no `bio_issue_as_root_blkg` bypass (no metadata or swap I/O here).
//! - The pending timer fires on the tick at which it expires (the next tick if already due);
//!   the dispatch work runs at the same instant.

use crate::config::BlkThrottleConfig;
use crate::drivers::Op;
use std::collections::VecDeque;

/// `THROTL_GRP_QUANTUM`: bios a group may dispatch per round, 3/4 of them reads.
pub(crate) const THROTL_GRP_QUANTUM: u32 = 8;
/// `THROTL_QUANTUM`: bios dispatched from all groups per round.
pub(crate) const THROTL_QUANTUM: u32 = 32;

/// `throtl_slice` in jiffies for a queue, as `blk_throtl_init` picks it in v6.18.
pub(crate) fn throtl_slice(hz: u64, rotational: bool) -> u64 {
    let slice = if rotational { hz / 10 } else { hz / 50 };
    slice.max(1)
}

const READ: usize = 0;
const WRITE: usize = 1;

fn dir(op: Op) -> usize {
    match op {
        Op::Read => READ,
        // A flush never reaches blk-throttle (see `BlockQueue`); empty PREFLUSH bios are writes.
        Op::Write | Op::Flush => WRITE,
    }
}

fn roundup(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

fn rounddown(x: u64, to: u64) -> u64 {
    x / to * to
}

/// A bio waiting in blk-throttle.
#[derive(Clone, Copy, Debug)]
struct Bio {
    /// Block-layer request id.
    id: u32,
    bytes: u64,
    /// Its bytes are already charged (`BIO_TG_BPS_THROTTLED`): only the IO budget is left.
    bps_charged: bool,
}

/// One direction of the throtl group.
#[derive(Debug)]
struct Dir {
    bps: Option<u64>,
    iops: Option<u32>,
    /// Bytes and IOs charged in the current slice.
    bytes_disp: i64,
    io_disp: i64,
    slice_start: u64,
    slice_end: u64,
    /// `qnode->bios_bps`: bios still waiting for byte budget.
    q_bps: VecDeque<Bio>,
    /// `qnode->bios_iops`: bios with bytes charged, waiting for IO budget (served first).
    q_iops: VecDeque<Bio>,
}

impl Dir {
    fn new(bps: Option<u64>, iops: Option<u32>) -> Self {
        Dir {
            bps,
            iops,
            bytes_disp: 0,
            io_disp: 0,
            slice_start: 0,
            slice_end: 0,
            q_bps: VecDeque::new(),
            q_iops: VecDeque::new(),
        }
    }

    /// `sq_queued`.
    fn queued(&self) -> usize {
        self.q_bps.len() + self.q_iops.len()
    }

    /// The head of the queue: the IOPS queue first (`throtl_peek_queued`).
    fn head(&mut self) -> Option<&mut Bio> {
        if self.q_iops.is_empty() {
            self.q_bps.front_mut()
        } else {
            self.q_iops.front_mut()
        }
    }

    fn pop(&mut self) -> Option<Bio> {
        self.q_iops.pop_front().or_else(|| self.q_bps.pop_front())
    }
}

/// One throttle group (`struct throtl_grp`): a cgroup's limits on this queue.
#[derive(Debug)]
struct ThrotlGrp {
    dirs: [Dir; 2],
    /// On the service queue's pending tree (`THROTL_TG_PENDING`).
    pending: bool,
    /// When the group may dispatch next, jiffies.
    disptime: u64,
}

impl ThrotlGrp {
    fn new(cfg: &BlkThrottleConfig) -> Self {
        // An iops limit of UINT_MAX or more is the kernel's "max".
        let iops = |v: Option<u64>| v.filter(|&v| v > 0 && v < u64::from(u32::MAX)).map(|v| v as u32);
        let bps = |v: Option<u64>| v.filter(|&v| v > 0 && v < u64::MAX);
        ThrotlGrp {
            dirs: [
                Dir::new(bps(cfg.read_bps), iops(cfg.read_iops)),
                Dir::new(bps(cfg.write_bps), iops(cfg.write_iops)),
            ],
            pending: false,
            disptime: 0,
        }
    }

    fn has_rules(&self) -> bool {
        self.dirs.iter().any(|d| d.bps.is_some() || d.iops.is_some())
    }
}

/// The blk-throttle state of one request queue (`throtl_data`): the root cgroup's group
/// (the device's `throttle/*` rules) and one group per cgroup with rules of its own here.
#[derive(Debug)]
pub(crate) struct BlkThrottle {
    hz: u64,
    /// Any rule at all: without one, bios never look at the throttle.
    active: bool,
    /// `td->throtl_slice`, jiffies.
    slice: u64,
    /// Group 0 is the root's.
    groups: Vec<ThrotlGrp>,
    /// Jiffy at which `pending_timer` fires, if armed.
    timer: Option<u64>,
    /// Released bios of the current timer run, per direction (`td->service_queue.queued[]`).
    released: [Vec<u32>; 2],
    /// Bios the dispatch work has still to submit, in order; the head may be waiting for wbt
    /// or a tag (`blocked`).
    issue: VecDeque<u32>,
    blocked: bool,
    /// Split parts of queued bios, as (head, part) in submission order; a head is listed
    /// with itself first (see [`super::bio_chain`]).
    chains: Vec<(u32, u32)>,
    /// Bios throttled (queued) and passed directly since the start, per direction.
    pub nr_throttled: [u64; 2],
    pub nr_direct: [u64; 2],
    /// Times the dispatch work slept on a bio (wbt or tags).
    pub nr_work_sleeps: u64,
}

impl BlkThrottle {
    /// The root group's rules `cfg` and, after it, one group per entry of `cgroups`.
    pub(crate) fn new(cfg: &BlkThrottleConfig, cgroups: &[BlkThrottleConfig], hz: u64, rotational: bool) -> Self {
        let groups: Vec<ThrotlGrp> = std::iter::once(cfg).chain(cgroups).map(ThrotlGrp::new).collect();
        BlkThrottle {
            hz: hz.max(1),
            active: groups.iter().any(ThrotlGrp::has_rules),
            slice: throtl_slice(hz, rotational),
            groups,
            timer: None,
            released: [Vec::new(), Vec::new()],
            issue: VecDeque::new(),
            blocked: false,
            chains: Vec::new(),
            nr_throttled: [0; 2],
            nr_direct: [0; 2],
            nr_work_sleeps: 0,
        }
    }

    /// Any rule at all (`blk_throtl_activated`).
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        self.active
    }

    /// `throtl_slice` of this queue, jiffies.
    #[cfg(test)]
    pub(crate) fn slice(&self) -> u64 {
        self.slice
    }

    /// Bios of `op` waiting in the throttle.
    #[cfg(test)]
    pub(crate) fn queued(&self, op: Op) -> usize {
        self.groups.iter().map(|g| g.dirs[dir(op)].queued()).sum()
    }

    /// Jiffy at which the pending timer fires, if armed.
    pub(crate) fn timer(&self) -> Option<u64> {
        self.timer
    }

    /// `blk_throtl_bio` for a new bio at jiffy `j`: true if it was queued (the caller goes on
    /// and the bio is submitted later by the dispatch work), false if it may go on to the
    /// request queue now.
    /// `g` is the bio's group (0: the root cgroup's).
    pub(crate) fn bio(&mut self, j: u64, id: u32, op: Op, bytes: u64, g: usize) -> bool {
        let rw = dir(op);
        // blk_should_throtl: a direction without rules is not looked at.
        if self.groups[g].dirs[rw].bps.is_none() && self.groups[g].dirs[rw].iops.is_none() {
            return false;
        }
        let mut bio = Bio {
            id,
            bytes,
            bps_charged: false,
        };
        if self.within_limit(g, j, rw, &mut bio) {
            self.charge_iops(g, rw);
            self.trim_slice(g, j, rw);
            self.nr_direct[rw] += 1;
            return false;
        }
        self.nr_throttled[rw] += 1;
        let was_empty = self.groups[g].dirs[rw].queued() == 0;
        let d = &mut self.groups[g].dirs[rw];
        if bio.bps_charged {
            d.q_iops.push_back(bio);
        } else {
            d.q_bps.push_back(bio);
        }
        self.groups[g].pending = true;
        if was_empty {
            self.update_disptime(g, j);
            self.schedule_next_dispatch(j, true);
        }
        true
    }

    /// `throtl_pending_timer_fn` at jiffy `j`, followed by the dispatch work: the released
    /// bios are appended to the issue list (reads of this run first, then writes).
    pub(crate) fn timer_fn(&mut self, j: u64) {
        self.timer = None;
        loop {
            self.select_dispatch(j);
            if self.schedule_next_dispatch(j, false) {
                break;
            }
        }
        // blk_throtl_dispatch_work_fn pops the READ list, then the WRITE list.
        for rw in [READ, WRITE] {
            for i in 0..self.released[rw].len() {
                let id = self.released[rw][i];
                self.issue.push_back(id);
                if !self.chains.is_empty() {
                    // The split parts of a released bio go down right behind it.
                    self.issue
                        .extend(self.chains.iter().filter(|c| c.0 == id && c.1 != id).map(|c| c.1));
                    self.chains.retain(|c| c.0 != id);
                }
            }
            self.released[rw].clear();
        }
    }

    /// The bio `head` just queued is the head of a split bio whose later parts will
    /// [`BlkThrottle::follow`] it.
    pub(crate) fn lead(&mut self, head: u32) {
        self.chains.push((head, head));
    }

    /// `part` of the split bio led by `head`: held behind the head if the head is still queued
    /// (true), else free to go on (the head was dispatched, its bytes were charged for all).
    pub(crate) fn follow(&mut self, head: u32, part: u32) -> bool {
        if self.chains.iter().any(|c| c.0 == head) {
            self.chains.push((head, part));
            true
        } else {
            false
        }
    }

    /// The next released bio the dispatch work should submit, unless the work is asleep on the
    /// previous one or nothing is left.
    pub(crate) fn next_to_issue(&self) -> Option<u32> {
        if self.blocked {
            None
        } else {
            self.issue.front().copied()
        }
    }

    /// The bio the dispatch work sleeps on, if it sleeps.
    pub(crate) fn sleeping_on(&self) -> Option<u32> {
        self.issue.front().copied().filter(|_| self.blocked)
    }

    /// The head of the issue list entered the request queue.
    pub(crate) fn issued(&mut self) {
        self.issue.pop_front();
        self.blocked = false;
    }

    /// The head of the issue list waits for wbt or a tag: the dispatch work sleeps.
    pub(crate) fn set_blocked(&mut self) {
        self.blocked = true;
        self.nr_work_sleeps += 1;
    }

    /// Released bios not yet in the request queue.
    pub(crate) fn issue_len(&self) -> usize {
        self.issue.len()
    }

    // ---- kernel functions, one direction `rw` ----

    /// `tg_within_limit` for a bio not yet queued (it may get its bytes charged).
    fn within_limit(&mut self, g: usize, j: u64, rw: usize, bio: &mut Bio) -> bool {
        if self.groups[g].dirs[rw].queued() > 0 {
            // FIFO: queue behind the others; charge the bytes now if the bps queue is empty
            // and they fit, so the bio only waits for IO budget.
            if self.groups[g].dirs[rw].q_bps.is_empty() && self.dispatch_bps_time(g, j, rw, bio.bytes, bio.bps_charged) == 0 {
                self.charge_bps(g, rw, bio);
            }
            return false;
        }
        self.dispatch_time(g, j, rw, bio) == 0
    }

    /// `tg_dispatch_time`: jiffies `bio` (the head of `rw`, or a new bio with nothing queued)
    /// must wait; charges its bytes when they fit.
    fn dispatch_time(&mut self, g: usize, j: u64, rw: usize, bio: &mut Bio) -> u64 {
        let wait = self.dispatch_bps_time(g, j, rw, bio.bytes, bio.bps_charged);
        if wait != 0 {
            return wait;
        }
        self.charge_bps(g, rw, bio);
        self.dispatch_iops_time(g, j, rw)
    }

    /// `tg_dispatch_time` for the head of the `rw` queue.
    fn head_dispatch_time(&mut self, g: usize, j: u64, rw: usize) -> Option<u64> {
        let mut bio = *self.groups[g].dirs[rw].head()?;
        let wait = self.dispatch_time(g, j, rw, &mut bio);
        if let Some(h) = self.groups[g].dirs[rw].head() {
            h.bps_charged = bio.bps_charged;
        }
        Some(wait)
    }

    fn charge_bps(&mut self, g: usize, rw: usize, bio: &mut Bio) {
        if !bio.bps_charged {
            bio.bps_charged = true;
            self.groups[g].dirs[rw].bytes_disp += bio.bytes as i64;
        }
    }

    fn charge_iops(&mut self, g: usize, rw: usize) {
        self.groups[g].dirs[rw].io_disp += 1;
    }

    /// `tg_dispatch_bps_time`.
    fn dispatch_bps_time(&mut self, g: usize, j: u64, rw: usize, bytes: u64, charged: bool) -> u64 {
        let Some(bps) = self.groups[g].dirs[rw].bps else { return 0 };
        if charged {
            return 0;
        }
        self.update_slice(g, j, rw);
        let wait = self.within_bps_limit(g, j, rw, bytes, bps);
        self.extend_slice(g, rw, j + wait);
        wait
    }

    /// `tg_dispatch_iops_time`.
    fn dispatch_iops_time(&mut self, g: usize, j: u64, rw: usize) -> u64 {
        let Some(iops) = self.groups[g].dirs[rw].iops else { return 0 };
        self.update_slice(g, j, rw);
        let wait = self.within_iops_limit(g, j, rw, iops);
        self.extend_slice(g, rw, j + wait);
        wait
    }

    /// `calculate_bytes_allowed`: `None` when the product would not fit (unlimited).
    fn bytes_allowed(&self, bps: u64, jiffies: u64) -> Option<i64> {
        let v = u128::from(bps) * u128::from(jiffies) / u128::from(self.hz);
        i64::try_from(v).ok()
    }

    /// `calculate_io_allowed`.
    fn io_allowed(&self, iops: u32, jiffies: u64) -> i64 {
        let v = u128::from(iops) * u128::from(jiffies) / u128::from(self.hz);
        v.min(u128::from(u32::MAX)) as i64
    }

    /// `tg_within_bps_limit`: jiffies to wait before `bytes` fit the byte budget.
    fn within_bps_limit(&self, g: usize, j: u64, rw: usize, bytes: u64, bps: u64) -> u64 {
        let d = &self.groups[g].dirs[rw];
        let elapsed = j - d.slice_start;
        let rnd = roundup(if elapsed == 0 { self.slice } else { elapsed }, self.slice);
        let Some(allowed) = self.bytes_allowed(bps, rnd) else { return 0 };
        let need = d.bytes_disp + bytes as i64;
        if allowed > 0 && need <= allowed {
            return 0;
        }
        let extra = (need - allowed).max(0) as u128;
        let wait = ((extra * u128::from(self.hz)) / u128::from(bps)) as u64;
        wait.max(1) + (rnd - elapsed)
    }

    /// `tg_within_iops_limit`: jiffies to wait before one more IO fits the IO budget.
    fn within_iops_limit(&self, g: usize, j: u64, rw: usize, iops: u32) -> u64 {
        let d = &self.groups[g].dirs[rw];
        let elapsed = j - d.slice_start;
        let rnd = roundup(elapsed + 1, self.slice);
        let allowed = self.io_allowed(iops, rnd);
        if allowed > 0 && d.io_disp < allowed {
            return 0;
        }
        (rnd - elapsed).max(self.hz / u64::from(iops) + 1)
    }

    /// `throtl_slice_used`.
    fn slice_used(&self, g: usize, j: u64, rw: usize) -> bool {
        let d = &self.groups[g].dirs[rw];
        !(d.slice_start <= j && j <= d.slice_end)
    }

    /// `throtl_start_new_slice`.
    fn start_new_slice(&mut self, g: usize, j: u64, rw: usize, clear: bool) {
        let slice = self.slice;
        let d = &mut self.groups[g].dirs[rw];
        if clear {
            d.bytes_disp = 0;
            d.io_disp = 0;
        }
        d.slice_start = j;
        d.slice_end = j + slice;
    }

    /// `throtl_extend_slice`: the slice ends no earlier than `end`, rounded up to a slice.
    fn extend_slice(&mut self, g: usize, rw: usize, end: u64) {
        let slice = self.slice;
        let d = &mut self.groups[g].dirs[rw];
        if d.slice_end < end {
            d.slice_end = roundup(end, slice);
        }
    }

    /// `tg_update_slice`.
    fn update_slice(&mut self, g: usize, j: u64, rw: usize) {
        if self.slice_used(g, j, rw) && self.groups[g].dirs[rw].queued() == 0 {
            self.start_new_slice(g, j, rw, true);
        } else {
            self.extend_slice(g, rw, j + self.slice);
        }
    }

    /// `throtl_trim_slice`: drop the budget of whole slices used, keeping two.
    fn trim_slice(&mut self, g: usize, j: u64, rw: usize) {
        if self.slice_used(g, j, rw) {
            return;
        }
        let slice = self.slice;
        self.groups[g].dirs[rw].slice_end = roundup(j + slice, slice);
        let elapsed = rounddown(j - self.groups[g].dirs[rw].slice_start, slice);
        if elapsed < 2 * slice {
            return;
        }
        let elapsed = elapsed - slice;
        let bytes_trim = match self.groups[g].dirs[rw].bps {
            Some(bps) => {
                let d_disp = self.groups[g].dirs[rw].bytes_disp;
                let trim = self.bytes_allowed(bps, elapsed).unwrap_or(-1);
                let d = &mut self.groups[g].dirs[rw];
                if trim <= 0 || d_disp < trim {
                    d.bytes_disp = 0;
                    d_disp
                } else {
                    d.bytes_disp -= trim;
                    trim
                }
            }
            None => 0,
        };
        let io_trim = match self.groups[g].dirs[rw].iops {
            Some(iops) => {
                let trim = self.io_allowed(iops, elapsed);
                let d = &mut self.groups[g].dirs[rw];
                if trim <= 0 || d.io_disp < trim {
                    let t = d.io_disp;
                    d.io_disp = 0;
                    t
                } else {
                    d.io_disp -= trim;
                    trim
                }
            }
            None => 0,
        };
        if bytes_trim == 0 && io_trim == 0 {
            return;
        }
        self.groups[g].dirs[rw].slice_start += elapsed;
    }

    /// `tg_update_disptime`.
    fn update_disptime(&mut self, g: usize, j: u64) {
        let r = self.head_dispatch_time(g, j, READ).unwrap_or(u64::MAX);
        let w = self.head_dispatch_time(g, j, WRITE).unwrap_or(u64::MAX);
        self.groups[g].disptime = j.saturating_add(r.min(w));
    }

    /// The pending group that may dispatch first (`throtl_rb_first`): the earliest
    /// `disptime`, the lower index (the older group) on a tie.
    fn first_pending(&self) -> Option<usize> {
        (0..self.groups.len())
            .filter(|&g| self.groups[g].pending)
            .min_by_key(|&g| self.groups[g].disptime)
    }

    /// `throtl_schedule_next_dispatch`: true if the timer is armed or nothing is pending,
    /// false if the dispatch window is open (dispatch again now).
    fn schedule_next_dispatch(&mut self, j: u64, force: bool) -> bool {
        let Some(first) = self.first_pending() else {
            return true;
        };
        let disptime = self.groups[first].disptime;
        if force || disptime > j {
            // throtl_schedule_pending_timer: never more than 8 slices ahead; a timer already
            // due fires on the next tick.
            let expires = disptime.min(j + 8 * self.slice);
            self.timer = Some(expires.max(j + 1));
            return true;
        }
        false
    }

    /// `throtl_select_dispatch`: serve the pending groups in `disptime` order, each up to
    /// its quantum, until one must wait or the round's quantum is spent.
    fn select_dispatch(&mut self, j: u64) {
        let mut nr_disp = 0;
        while let Some(g) = self.first_pending().filter(|&g| j >= self.groups[g].disptime) {
            nr_disp += self.dispatch_tg(g, j);
            if self.groups[g].dirs[READ].queued() + self.groups[g].dirs[WRITE].queued() > 0 {
                self.update_disptime(g, j);
            } else {
                self.groups[g].pending = false;
            }
            if nr_disp >= THROTL_QUANTUM {
                break;
            }
        }
    }

    /// `throtl_dispatch_tg`: up to 6 reads and 2 writes whose budget allows them now.
    fn dispatch_tg(&mut self, g: usize, j: u64) -> u32 {
        let max_reads = THROTL_GRP_QUANTUM * 3 / 4;
        let max_writes = THROTL_GRP_QUANTUM - max_reads;
        let mut n = 0;
        for (rw, max) in [(READ, max_reads), (WRITE, max_writes)] {
            let mut done = 0;
            while self.head_dispatch_time(g, j, rw) == Some(0) {
                self.dispatch_one(g, j, rw);
                done += 1;
                if done >= max {
                    break;
                }
            }
            n += done;
        }
        n
    }

    /// `tg_dispatch_one_bio` into the top-level service queue.
    fn dispatch_one(&mut self, g: usize, j: u64, rw: usize) {
        let Some(bio) = self.groups[g].dirs[rw].pop() else { return };
        self.charge_iops(g, rw);
        self.released[rw].push(bio.id);
        self.trim_slice(g, j, rw);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MIB;

    const HZ: u64 = 250;

    fn limits(read_bps: Option<u64>, write_bps: Option<u64>, read_iops: Option<u64>, write_iops: Option<u64>) -> BlkThrottleConfig {
        BlkThrottleConfig {
            read_bps,
            write_bps,
            read_iops,
            write_iops,
        }
    }

    /// A closed system around the throttle: `submit(j)` gives the bios a user submits at
    /// jiffy `j`; bios passed directly or released by the timer are dispatched at that jiffy.
    /// Returns (jiffy, id, op) of every dispatch, in order, up to jiffy `end`.
    fn drive(t: &mut BlkThrottle, end: u64, mut submit: impl FnMut(u64) -> Vec<(u32, Op, u64)>) -> Vec<(u64, u32, Op)> {
        let mut ops = std::collections::HashMap::new();
        let mut out = Vec::new();
        for j in 1..=end {
            if t.timer() == Some(j) {
                t.timer_fn(j);
                while let Some(id) = t.next_to_issue() {
                    t.issued();
                    out.push((j, id, ops[&id]));
                }
            }
            for (id, op, bytes) in submit(j) {
                ops.insert(id, op);
                if !t.bio(j, id, op, bytes, 0) {
                    out.push((j, id, op));
                }
            }
            if let Some(tj) = t.timer() {
                assert!(tj > j, "timer armed in the past");
            }
        }
        out
    }

    /// Bytes (of `size` bios) dispatched per second over `[from, to)` jiffies.
    fn rate(out: &[(u64, u32, Op)], op: Op, size: u64, from: u64, to: u64) -> f64 {
        let n = out.iter().filter(|&&(j, _, o)| o == op && j >= from && j < to).count();
        n as f64 * size as f64 / ((to - from) as f64 / HZ as f64)
    }

    /// A writer that offers `per_jiffy` bios of `size` bytes every jiffy, more than the limit
    /// lets through (like the flusher: submitting never blocks, so the throttle's queue grows).
    fn backlog(per_jiffy: usize, size: u64) -> impl FnMut(u64) -> Vec<(u32, Op, u64)> {
        let mut next = 0u32;
        move |_| {
            let want = per_jiffy;
            (0..want)
                .map(|_| {
                    next += 1;
                    (next, Op::Write, size)
                })
                .collect()
        }
    }

    #[test]
    fn a_split_bios_parts_follow_their_head_out_of_the_throttle() {
        let mut t = BlkThrottle::new(&limits(None, Some(8 * MIB), None, None), &[], HZ, true);
        // A 512 KiB head fits the first slice's budget (0.8 MiB) and passes; its parts go on
        // unheld.
        assert!(!t.bio(1, 1, Op::Write, MIB / 2, 0));
        assert!(!t.follow(1, 2), "the part of a head that passed is not held");
        // The next 8 MiB bio waits for budget; its parts wait behind it, not after it.
        assert!(t.bio(2, 10, Op::Write, 8 * MIB, 0));
        t.lead(10);
        assert!(t.follow(10, 11) && t.follow(10, 12));
        // An unrelated bio queued after the parts were submitted.
        assert!(t.bio(3, 20, Op::Write, MIB, 0));
        let mut out = Vec::new();
        for j in 3..=2 * HZ {
            if t.timer() == Some(j) {
                t.timer_fn(j);
                while let Some(id) = t.next_to_issue() {
                    t.issued();
                    out.push((j, id));
                }
            }
        }
        let ids: Vec<u32> = out.iter().map(|&(_, id)| id).collect();
        assert_eq!(ids, [10, 11, 12, 20], "the parts leave with their head, in order");
        assert_eq!(out[0].0, out[2].0, "at the same jiffy");
        // The head was charged the whole bio: 8.5 MiB at 8 MiB/s, so about a second in.
        assert!((HZ * 3 / 4..=HZ * 3 / 2).contains(&out[0].0), "released at jiffy {}", out[0].0);
        assert!(!t.follow(10, 13), "a released head holds nothing back");
    }

    #[test]
    fn a_write_stream_is_dispatched_at_write_bps() {
        for (bps, rotational) in [(8 * MIB, true), (32 * MIB, true), (32 * MIB, false), (100 * MIB, true)] {
            let mut t = BlkThrottle::new(&limits(None, Some(bps), None, None), &[], HZ, rotational);
            // 60 s, 250 MiB/s offered.
            let out = drive(&mut t, 60 * HZ, backlog(1, MIB));
            let r = rate(&out, Op::Write, MIB, 10 * HZ, 60 * HZ);
            let err = (r - bps as f64).abs() / bps as f64;
            assert!(err < 0.03, "{} MiB/s limit: {:.2} MiB/s", bps / MIB, r / MIB as f64);
        }
    }

    #[test]
    fn small_bios_are_paced_too() {
        let bps = 8 * MIB;
        let mut t = BlkThrottle::new(&limits(None, Some(bps), None, None), &[], HZ, true);
        // 16 MiB/s offered.
        let out = drive(&mut t, 30 * HZ, backlog(16, 4096));
        let r = rate(&out, Op::Write, 4096, 5 * HZ, 30 * HZ);
        assert!((r - bps as f64).abs() / (bps as f64) < 0.03, "{:.2} MiB/s", r / MIB as f64);
    }

    #[test]
    fn an_iops_limit_paces_ios() {
        for iops in [50u64, 200, 1000] {
            let mut t = BlkThrottle::new(&limits(None, None, None, Some(iops)), &[], HZ, true);
            // 2500 IOPS offered.
            let out = drive(&mut t, 40 * HZ, backlog(10, 4096));
            let n = out.iter().filter(|&&(j, _, _)| (10 * HZ..40 * HZ).contains(&j)).count() as f64 / 30.0;
            assert!((n - iops as f64).abs() / iops as f64 <= 0.03, "{iops} IOPS limit: {n:.1}/s");
        }
    }

    #[test]
    fn read_and_write_limits_are_independent() {
        let mut t = BlkThrottle::new(&limits(Some(4 * MIB), Some(16 * MIB), None, None), &[], HZ, true);
        let mut next = 0u32;
        let out = drive(&mut t, 40 * HZ, |j| {
            let n = if j == 1 { 200 } else { 1 };
            let mut v = Vec::new();
            for _ in 0..n {
                next += 2;
                v.push((next, Op::Write, MIB));
                v.push((next + 1, Op::Read, MIB));
            }
            v
        });
        let w = rate(&out, Op::Write, MIB, 10 * HZ, 40 * HZ) / MIB as f64;
        let r = rate(&out, Op::Read, MIB, 10 * HZ, 40 * HZ) / MIB as f64;
        assert!((w - 16.0).abs() / 16.0 < 0.03, "writes {w:.2} MiB/s");
        assert!((r - 4.0).abs() / 4.0 < 0.03, "reads {r:.2} MiB/s");

        // A write-only rule does not touch reads at all.
        let mut t = BlkThrottle::new(&limits(None, Some(MIB), None, None), &[], HZ, true);
        for id in 0..1000 {
            assert!(!t.bio(1, id, Op::Read, MIB, 0), "read {id} throttled by a write rule");
        }
        assert_eq!(t.queued(Op::Read), 0);
    }

    #[test]
    fn after_idle_a_burst_gets_one_slice_of_budget() {
        let bps = 8 * MIB;
        let mut t = BlkThrottle::new(&limits(None, Some(bps), None, None), &[], HZ, true);
        let slice = t.slice();
        // Some traffic, then 10 s of silence, then 64 bios of 64 KiB at once.
        let mut next = 0u32;
        let burst_at = 20 * HZ;
        let out = drive(&mut t, 30 * HZ, |j| {
            let n = match j {
                1 => 20,
                j if j == burst_at => 64,
                _ => 0,
            };
            (0..n)
                .map(|_| {
                    next += 1;
                    (next, Op::Write, 64 << 10)
                })
                .collect()
        });
        let burst: Vec<u64> = out.iter().filter(|&&(j, _, _)| j >= burst_at).map(|&(j, _, _)| j).collect();
        assert_eq!(burst.len(), 64);
        // By every jiffy, no more than the budget of the time since the burst plus one slice
        // has gone (tg_within_bps_limit rounds elapsed time up to whole slices).
        let per_jiffy = bps as f64 / HZ as f64;
        for (k, &j) in burst.iter().enumerate() {
            let sent = (k + 1) as f64 * 65536.0;
            let budget = per_jiffy * ((j - burst_at) + slice) as f64;
            assert!(sent <= budget + 1.0, "{sent} bytes by jiffy +{}, budget {budget}", j - burst_at);
        }
        // And the first slice's worth went at once: the idle time is not a debt.
        let immediate = burst.iter().filter(|&&j| j == burst_at).count() as f64 * 65536.0;
        assert!(immediate >= per_jiffy * slice as f64 - 65536.0, "{immediate} bytes at once");
        // The whole burst (4 MiB) takes about 4 MiB / 8 MiB/s = 0.5 s, less the first slice.
        let took = (burst[63] - burst_at) as f64 / HZ as f64;
        assert!((0.35..=0.55).contains(&took), "burst drained in {took} s");
    }

    #[test]
    fn a_fifo_per_direction() {
        let mut t = BlkThrottle::new(&limits(None, Some(MIB), None, None), &[], HZ, true);
        let mut next = 0u32;
        let out = drive(&mut t, 20 * HZ, |_| {
            next += 1;
            vec![(next, Op::Write, 256 << 10)]
        });
        let ids: Vec<u32> = out.iter().map(|&(_, id, _)| id).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(ids, sorted, "bios overtook each other");
        assert!(t.queued(Op::Write) > 0, "an offered load above the limit must queue");
    }

    #[test]
    fn slice_length_follows_the_queue() {
        assert_eq!(throtl_slice(250, true), 25);
        assert_eq!(throtl_slice(250, false), 5);
        assert_eq!(throtl_slice(1000, true), 100);
        assert_eq!(throtl_slice(100, false), 2);
    }

    /// Two cgroups' groups on one queue: each keeps its own budget, an unlimited one passes
    /// untouched, and the root's rules do not apply to them.
    #[test]
    fn each_cgroup_group_keeps_its_own_budget() {
        let slow = limits(None, Some(MIB), None, None);
        let fast = limits(None, Some(4 * MIB), None, None);
        let mut t = BlkThrottle::new(
            &limits(None, Some(64 * 1024), None, None),
            &[slow, fast, BlkThrottleConfig::default()],
            HZ,
            true,
        );
        // The unlimited group's write goes straight through, whatever the root's rule.
        assert!(!t.bio(1, 1_000_000, Op::Write, MIB, 3));
        // Keep two 256 KiB writes queued in groups 1 and 2 for 10 s; count what each releases.
        let mut released = [0u64; 3];
        let mut queued = [0usize; 3];
        let mut next_id = 0u32;
        let mut group_of = std::collections::HashMap::new();
        for j in 1..=10 * HZ {
            for g in [1usize, 2] {
                while queued[g] < 2 {
                    next_id += 1;
                    group_of.insert(next_id, g);
                    if t.bio(j, next_id, Op::Write, 256 * 1024, g) {
                        queued[g] += 1;
                    } else {
                        released[g] += 256 * 1024;
                    }
                }
            }
            if t.timer().is_some_and(|at| at <= j) {
                t.timer_fn(j);
                while let Some(id) = t.next_to_issue() {
                    let g = group_of[&id];
                    queued[g] -= 1;
                    released[g] += 256 * 1024;
                    t.issued();
                }
            }
        }
        let mb = |b: u64| b as f64 / MIB as f64;
        assert!(
            (mb(released[1]) - 10.0).abs() <= 1.0,
            "1 MiB/s group released {} MiB in 10 s",
            mb(released[1])
        );
        assert!(
            (mb(released[2]) - 40.0).abs() <= 1.5,
            "4 MiB/s group released {} MiB in 10 s",
            mb(released[2])
        );
    }
}
