//! Liveness: everything that waits has something that will move it on.
//!
//! - Every page under writeback is carried by a live write request or awaits an NFS COMMIT
//!   (per device: the pages of live write requests + unstable pages = the wb's writeback).
//! - Every live request is somewhere that moves it: on its submitter's pending list while the
//!   submitter runs or waits to submit the request ahead of it; in blk-throttle with its timer
//!   armed or its dispatch work waiting; in blk-wbt with tracked writes in flight or the window
//!   timer armed; waiting for a tag while tags are held; in the elevator while the device has
//!   a request inside, the elevator's timer is armed or a device event is due; in the device
//!   with a completion coming.
//! - No task sleeps with nothing that can wake it: a task that is not running has a wakeup or
//!   timeout pending, or sits on a wait list whose owner will wake it (a page wait queue whose
//!   page is still busy, a read waiter list, a request it waits to submit, its O_DIRECT
//!   requests, the sync work it waits for, the tiotest barrier, reclaim or congestion waits).
//!   A page waiter whose page is no longer busy is a lost wakeup, unless it waits in
//!   `__lock_page` behind a woken locker of that page that has yet to run: wake-one woke only
//!   that one, which takes the lock and whose unlock wakes the next.
//! - A flusher asleep on an inode's `I_SYNC` sleeps on one that another writer holds.

use super::{Law, LawViolation};
use crate::block::queue::{RqStage, Submitter};
use crate::fs::jbd2::{CommitPhase, JournalIo};
use crate::kernel::task::Phase;
use crate::kernel::waitqueue::{PageWaitState, WaitSite};
use crate::machine::Machine;
use crate::workload::state::SyncWait;

/// Which pending list holds a request id (see `pending_requests`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Listed {
    Nowhere,
    On(Submitter),
    Several,
}

impl Machine {
    pub(crate) fn law_liveness(&self) -> Option<LawViolation> {
        (0..self.queues.len())
            .find_map(|d| self.live_queue(d))
            .or_else(|| self.live_tasks())
            .or_else(|| self.live_inode_waits())
            .or_else(|| self.live_journal_runs())
            .or_else(|| self.live_journal_wakes())
    }

    /// A wake of the journal thread kept off the event queue (`Journal::wake_queued`) is
    /// one that would find its commit waiting for ordered data: once the data is all written
    /// before the wake's time, or the commit is past that wait, the wake is an event.
    fn live_journal_wakes(&self) -> Option<LawViolation> {
        let now = self.now();
        self.journals.iter().enumerate().find_map(|(d, j)| {
            let j = j.as_ref()?;
            if j.woken_for == 0 || j.wake_queued || j.wake_at < now {
                return None;
            }
            let waits = j
                .committing
                .as_ref()
                .is_some_and(|c| c.phase == CommitPhase::Flushing && c.ordered_met_now(&self.inodes) < c.ordered_targets.len());
            (!waits).then(|| {
                self.violation(
                    Law::Liveness,
                    format!("journal of device {d}"),
                    format!(
                        "its thread's wake at {} ns is kept off the queue, yet its commit no longer waits for ordered data",
                        j.wake_at
                    ),
                )
            })
        })
    }

    /// The journal thread builds an ordered run's requests as soon as the run reaches the
    /// front of its list, so between events the front is a request (or the list is empty).
    fn live_journal_runs(&self) -> Option<LawViolation> {
        self.journals.iter().enumerate().find_map(|(d, j)| {
            let j = j.as_ref()?;
            let Some(&JournalIo::Run { ino, start, pages }) = j.pending.front() else {
                return None;
            };
            Some(self.violation(
                Law::Liveness,
                format!("journal of device {d}"),
                format!("holds {pages} pages of inode {ino} from page {start} for writeout, unbuilt, at the front of its list"),
            ))
        })
    }

    /// A flusher asleep on an inode's `I_SYNC` is asleep on an inode someone holds, whose
    /// last request of the visit will reach the block layer and let it go.
    fn live_inode_waits(&self) -> Option<LawViolation> {
        self.flushers.iter().enumerate().find_map(|(w, f)| {
            let ino = f.waiting_on?;
            (!self.inodes[ino as usize].i_sync).then(|| {
                self.violation(
                    Law::Liveness,
                    format!("flusher {w}"),
                    format!("sleeps on inode {ino}'s I_SYNC, which nobody holds"),
                )
            })
        })
    }

    /// The requests of device `d` and its pages under writeback.
    fn live_queue(&self, d: usize) -> Option<LawViolation> {
        let q = &self.queues[d];
        let dev = format!("device {}", q.name);
        let stranded = |id: u32, stage: RqStage, why: &str| {
            let r = q.rq(id);
            let who = match r.submitter {
                Submitter::Task(t) => self.task_label(t),
                Submitter::Flusher(w) => format!("flusher {w}"),
                Submitter::Journal(d) => format!("journal of device {d}"),
            };
            Some(self.violation(
                Law::Liveness,
                &dev,
                format!(
                    "{:?} request {id} (sector {}, {} sectors, submitted by {who}) is stranded in {stage:?}: {why}",
                    r.op, r.sector, r.nr_sectors
                ),
            ))
        };
        let mut wb_pages = 0;
        // Which built requests sit on their submitters' pending lists: gathered once, as a
        // commit's ordered data can leave hundreds of thousands of them built at one time.
        let mut pending: Option<Vec<Listed>> = None;
        let has_inside = q.device.in_flight() > 0;
        let queued_or_inside = q.live_requests().any(|(_, r)| matches!(r.stage, RqStage::Queued | RqStage::Device));
        for (id, r) in q.live_requests() {
            // A direct request's segments are the buffered bios merged into it. A request not
            // yet submitted still has its pages counted dirty.
            if r.op == crate::drivers::Op::Write && !r.set_writeback_at_submit {
                wb_pages += r.segs.iter().map(|s| s.pages).sum::<u64>();
            }
            match r.stage {
                RqStage::Free => {}
                RqStage::Built => {
                    let pending = pending.get_or_insert_with(|| self.pending_requests(d as u16));
                    if let Some(why) = self.submitter_stuck(d as u16, r.submitter, id, pending) {
                        return stranded(id, r.stage, &why);
                    }
                }
                RqStage::Throttled => {
                    let t = q.throtl.as_ref();
                    if !t.is_some_and(|t| t.timer().is_some() || t.sleeping_on().is_some() || t.issue_len() > 0) {
                        return stranded(id, r.stage, "blk-throttle has no timer armed and no dispatch in progress");
                    }
                }
                RqStage::IolatWait => {
                    // It waits at a level whose depth is full: one of that level's requests
                    // in flight will make room when it completes.
                    let l = q.iolat.as_ref();
                    let cg = r.blkcg.map(|c| c as usize);
                    let ok = l.zip(cg).is_some_and(|(l, cg)| {
                        let level = l.waits_at(id, cg);
                        let mut g = Some(cg);
                        for _ in 0..level.unwrap_or(usize::MAX).min(64) {
                            g = g.and_then(|x| self.cfg.cgroups.groups[x].parent);
                        }
                        level.is_some() && g.is_some_and(|g| l.inflight(g) > 0)
                    });
                    if !ok {
                        return stranded(id, r.stage, "blk-iolatency holds it at a level with nothing in flight");
                    }
                }
                RqStage::WbtWait => {
                    if q.wbt.inflight() == 0 && q.wbt_timer_at.is_none() {
                        return stranded(id, r.stage, "no tracked write in flight and no wbt timer to admit it");
                    }
                }
                RqStage::TagWait => {
                    if !queued_or_inside {
                        return stranded(id, r.stage, "no request holds a tag or slot that could be freed");
                    }
                }
                RqStage::Queued => {
                    if !has_inside && q.elv_timer_at.is_none() && q.tick_at.is_none() && q.delay_run_at.is_none() {
                        return stranded(
                            id,
                            r.stage,
                            "the device is idle and neither an elevator timer, blk-mq's delayed run nor a device event is due",
                        );
                    }
                }
                RqStage::Device => {
                    if q.device.next_event().is_none() || q.tick_at.is_none() {
                        return stranded(id, r.stage, "the device has no completion coming");
                    }
                }
            }
        }
        // Pages awaiting a COMMIT: under the 2.6.35–3.x rule the COMMIT waits for more of the
        // mount's pages to be unstable, so dirty pages still to be written (the flusher's
        // business, held by the expiry law) are a way forward; an idle device with only
        // unstable pages left and no flusher at work is not.
        // A write still on its way (built, throttled, waiting for wbt or a tag) will reply and
        // have the COMMIT rule checked again.
        let writes_on_the_way = q
            .live_requests()
            .any(|(_, r)| r.op == crate::drivers::Op::Write && r.stage != RqStage::Free);
        let idle = !has_inside && q.device.next_event().is_none() && !queued_or_inside && !writes_on_the_way;
        if q.unstable_pages > 0 && idle && self.wbs[d].reclaimable == 0 && !self.flusher_active(d as u16) {
            return Some(self.violation(
                Law::Liveness,
                &dev,
                format!(
                    "{} pages await a COMMIT that nothing will send (no dirty pages, device idle)",
                    q.unstable_pages
                ),
            ));
        }
        // Over every wb of the device: its root wb and its cgroups'.
        let wb: u64 = self.wbs.iter().filter(|w| w.dev as usize == d).map(|w| w.writeback).sum();
        // Pages of split bios whose other parts are still in flight stay under writeback, and
        // pages whose end_io work is queued.
        if q.end_io.pages > 0 && !q.end_io.armed {
            return Some(self.violation(
                Law::Liveness,
                &dev,
                format!("{} pages wait for an end_io work that is not queued", q.end_io.pages),
            ));
        }
        let wb_pages = wb_pages + q.chains.waiting_pages + q.end_io.pages;
        if wb_pages + q.unstable_pages != wb {
            return Some(self.violation(
                Law::Liveness,
                &dev,
                format!(
                    "{wb} pages under writeback, but live write requests carry {wb_pages} and {} await a COMMIT",
                    q.unstable_pages
                ),
            ));
        }
        None
    }

    /// Whose pending list holds each request id of device `dev`. A flusher's list holds ids
    /// without their device (pdflush and bdflush threads serve several), so an id may be on
    /// more than one list; those are looked up in the submitter's own list.
    fn pending_requests(&self, dev: u16) -> Vec<Listed> {
        let mut on = vec![Listed::Nowhere; self.queues[dev as usize].request_slots()];
        let mut mark = |id: u32, who: Submitter| {
            if let Some(slot) = on.get_mut(id as usize) {
                *slot = match *slot {
                    Listed::Nowhere => Listed::On(who),
                    _ => Listed::Several,
                };
            }
        };
        for (t, task) in self.tasks.iter().enumerate() {
            for &(_, id) in task.pending.iter().filter(|&&(d, _)| d == dev) {
                mark(id, Submitter::Task(t as u32));
            }
        }
        for (w, f) in self.flushers.iter().enumerate() {
            for &id in &f.pending {
                mark(id, Submitter::Flusher(w as u16));
            }
        }
        if let Some(j) = self.journal(dev) {
            for io in &j.pending {
                if let JournalIo::Rq(id) = *io {
                    mark(id, Submitter::Journal(dev));
                }
            }
        }
        on
    }

    /// Whether request `id` of device `dev` is on `sub`'s pending list.
    fn on_pending_list(&self, dev: u16, sub: Submitter, id: u32, pending: &[Listed]) -> bool {
        match pending.get(id as usize) {
            Some(&Listed::On(who)) => who == sub,
            Some(Listed::Several) => match sub {
                Submitter::Task(t) => self.tasks[t as usize].pending.contains(&(dev, id)),
                Submitter::Flusher(w) => self.flushers[w as usize].pending.contains(&id),
                Submitter::Journal(d) => self.journal(d).is_some_and(|j| j.pending.contains(&JournalIo::Rq(id))),
            },
            _ => false,
        }
    }

    /// Why a request built by `sub` and not yet submitted will never be submitted, if so.
    /// `pending`: whose pending list holds each of the device's requests.
    fn submitter_stuck(&self, dev: u16, sub: Submitter, id: u32, pending: &[Listed]) -> Option<String> {
        if !self.on_pending_list(dev, sub, id, pending) {
            return Some("it is on no pending list".into());
        }
        match sub {
            Submitter::Task(t) => {
                let task = &self.tasks[t as usize];
                // It submits its pending requests first thing whenever it runs: a timed sleep (reclaim,
                // a pause) will get there; a sleep that waits for these very requests will not.
                let submitting = task.on_cpu
                    || task.waking
                    || task.runs_pending > 0
                    || task.rq_wait.is_some()
                    || task.timeout_gen == Some(task.wait_gen);
                (!submitting).then(|| format!("{} sleeps in {:?} without submitting it", self.task_label(t), task.phase))
            }
            Submitter::Flusher(w) => {
                let f = &self.flushers[w as usize];
                let submitting = f.blocked || f.on_cpu || self.flusher_active(w);
                (!submitting).then(|| format!("flusher {w} sleeps without submitting it"))
            }
            Submitter::Journal(d) => {
                let Some(j) = self.journal(d) else {
                    return Some("its device has no journal".into());
                };
                // The journal thread submits in order and sleeps only on its front request.
                (!j.blocked && j.pending.front() == Some(&JournalIo::Rq(id)))
                    .then(|| format!("the journal of device {d} is not blocked yet holds it unsubmitted"))
            }
        }
    }

    /// Every task that is not running has a way to be woken.
    fn live_tasks(&self) -> Option<LawViolation> {
        // Tasks on some wait list, by task id (a bitmap: the lists can hold thousands).
        let mut listed = vec![false; self.tasks.len()];
        let mut list = |t: u32| {
            if let Some(l) = listed.get_mut(t as usize) {
                *l = true;
            }
        };
        for i in &self.inodes {
            i.read_waiters.iter().for_each(|&t| list(t));
        }
        self.tiotest.waiting.iter().for_each(|&t| list(t));
        self.reclaim_waiters.iter().for_each(|&t| list(t));
        for w in &self.era.congestion_waiters {
            if let crate::generations::runtime::CongestionWaiter::Task(t, _) = w {
                list(*t);
            }
        }
        for (_, w) in &self.era.write_waiters {
            if let crate::generations::runtime::WriteWaiter::Task(t, _) = w {
                list(*t);
            }
        }
        for j in self.journals.iter().flatten() {
            j.commit_waiters.iter().for_each(|&(t, _)| list(t));
            // A fast commit's fsyncs: its flush or block is on the device queue.
            j.fc.running.iter().chain(&j.fc.queued).for_each(|&(t, ..)| list(t));
            j.locked_waiters.iter().for_each(|&(t, _)| list(t));
            j.space_waiters.iter().for_each(|&(t, _)| list(t));
            for &(s, _) in j.locked_submitters.iter().chain(&j.shadow_submitters) {
                if let Submitter::Task(t) = s {
                    list(t);
                }
            }
        }
        // The kernel pages whose lock a woken `__lock_page` waiter is about to take and drop
        // (`page_wait_recheck` hands the wakeup on): usually none, so no allocation.
        let mut handing_on: Vec<u64> = self
            .tasks
            .iter()
            .filter_map(|t| t.wq.wait.filter(|w| !t.is_done() && !w.queued && is_locker(w)))
            .map(|w| self.pagewait.key(w.file, w.page))
            .collect();
        handing_on.sort_unstable();
        for tid in 0..self.tasks.len() as u32 {
            if let Some(v) = self.task_wakeable(tid, &listed, &handing_on) {
                return Some(v);
            }
        }
        None
    }

    fn task_wakeable(&self, tid: u32, listed: &[bool], handing_on: &[u64]) -> Option<LawViolation> {
        let t = &self.tasks[tid as usize];
        if t.is_done() || t.on_cpu || t.waking || t.runs_pending > 0 || t.timeout_gen == Some(t.wait_gen) {
            return None;
        }
        if let Some(w) = t.wq.wait.filter(|w| w.queued) {
            // A locker queued behind a woken one: the lock is the woken one's until it runs
            // (its own wakeup is checked as its own).
            let behind = is_locker(&w) && handing_on.binary_search(&self.wait_key(&w)).is_ok();
            if self.wait_state_bits(&w) & w.bits == 0 && !behind {
                return Some(self.violation(
                    Law::Liveness,
                    self.task_label(tid),
                    format!(
                        "lost wakeup: sleeps on page {} of {} for bits {:#x}, which are clear",
                        w.page,
                        self.inode_label(w.file),
                        w.bits
                    ),
                ));
            }
            return None;
        }
        if listed[tid as usize] {
            return None;
        }
        if let Some((dev, id)) = t.rq_wait {
            let stage = self.queues[dev as usize].rq(id).stage;
            if matches!(stage, RqStage::IolatWait | RqStage::WbtWait | RqStage::TagWait) {
                return None;
            }
        }
        if t.phase == Phase::WaitDirect && t.inflight > 0 {
            return None;
        }
        // Never to start: the run ends before its start (a fio job's `startdelay` past it).
        if t.phase == Phase::Idle && t.start >= t.stop {
            return None;
        }
        // Not started: it waits for the tasks of earlier groups (fio's stonewall), one of which
        // is still running.
        if t.phase == Phase::Idle && t.waits_for.iter().any(|&g| self.groups.running(g)) {
            return None;
        }
        if let Some(SyncWait::Work { dev, left: 1.. }) = t.sync {
            let wbs = (0..self.wbs.len() as u16).filter(|&w| self.wbs[w as usize].dev == dev);
            if wbs.into_iter().any(|w| self.flusher_has_waiter(w, tid)) {
                return None;
            }
        }
        if let Some(SyncWait::Flush { left }) = t.sync {
            // Waiting for cache flushes: on a device's flush lists, with the flush in flight
            // or the device busy (its next completion dispatches the flush).
            let waiting = self.queues.iter().filter(|q| q.flush.waits_for(tid)).count() as u32;
            let moving = self
                .queues
                .iter()
                .filter(|q| q.flush.waits_for(tid))
                .all(|q| q.flush.in_flight() || q.device.in_flight() > 0 || q.flush.kick_pending(self.now()));
            if left > 0 && waiting == left && moving {
                return None;
            }
        }
        Some(self.violation(
            Law::Liveness,
            self.task_label(tid),
            format!(
                "sleeps in {:?} with nothing that can wake it (no wakeup or timeout pending, on no wait list; sync {:?}, rq_wait {:?})",
                t.phase, t.sync, t.rq_wait
            ),
        ))
    }
}

/// An exclusive `__lock_page` wait: woken one at a time, each passing the wakeup on.
fn is_locker(w: &PageWaitState) -> bool {
    w.exclusive && w.site == WaitSite::LockPage
}
