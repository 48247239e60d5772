//! The journal at work in the machine: handles started by `write()`, reads (atime),
//! writeback's allocations and I/O completion; the commit (`jbd2_journal_commit_transaction`,
//! xfs's `xlog_cil_push_work`) as a state machine driven by its I/O; the commit timer; and
//! what fsync and sync wait for (`ext4_sync_file` → `jbd2_complete_transaction`,
//! `xfs_file_fsync` → `xfs_log_force_seq`, `ext4_sync_fs`). The journal's state is
//! [`crate::fs::jbd2::Journal`].

use crate::block::queue::{Submitter, BLK_FLUSH_STEP_NS};
use crate::config::{Atime, FsKind};
use crate::drivers::Op;
use crate::fs::jbd2::{self, CommitPhase, Journal, JournalIo, JournalWake, MetaBlock, Ordered, JOURNAL_WAITER};
use crate::kernel::cpu::cold_cost;
use crate::kernel::task::Phase;
use crate::kernel::waitqueue::{WaitSite, PG_LOCKED};
use crate::machine::{Event, Machine};
use crate::metrics::trace::TraceEvent;
use crate::units::PAGE_SIZE;
use crate::workload::state::SyncWait;
use crate::Ns;

/// Which of an inode's times a handle updates.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TimeStamp {
    Mtime,
    Atime,
}

impl Machine {
    /// The journal of device `dev`, if its file system has one.
    pub(crate) fn journal(&self, dev: u16) -> Option<&Journal> {
        self.journals.get(dev as usize).and_then(Option::as_ref)
    }

    fn jn(&mut self, dev: u16) -> &mut Journal {
        self.journals[dev as usize].as_mut().expect("a journalled device")
    }

    /// Does the file system on `dev` send cache flushes (`barrier`), and does the device want
    /// them? A device without a file system is flushed by fsync as before.
    pub(crate) fn fs_flushes(&self, dev: u16) -> bool {
        self.queues[dev as usize].wants_flush() && self.journal(dev).is_none_or(|j| j.p.barrier)
    }

    /// `start_this_handle`: false when the transaction is locked and the task now waits for
    /// it to reach T_FLUSH.
    fn start_handle(&mut self, tid: u32, dev: u16) -> bool {
        let now = self.now();
        let j = self.jn(dev);
        if j.handles_wait() {
            if !j.locked_waiters.iter().any(|&(t, _)| t == tid) {
                j.locked_waiters.push((tid, now));
            }
            return false;
        }
        if j.log_full() {
            if !j.space_waiters.iter().any(|&(t, _)| t == tid) {
                j.space_waiters.push((tid, now));
            }
            self.checkpoint_oldest(dev);
            return false;
        }
        true
    }

    /// `do_get_write_access` on a buffer being written to the log: the task sleeps on the
    /// buffer's hashed wait queue (`wait_event` there in 2.6, `wait_on_bit_io(BH_Shadow)`
    /// later) until the log write is done, and retries its handle. True if it sleeps.
    fn wait_on_shadow(&mut self, tid: u32, dev: u16, b: MetaBlock) -> bool {
        let block = self.home_of(b) / 8;
        if !self.journal(dev).is_some_and(|j| j.shadowed(block)) {
            return false;
        }
        self.page_wait(tid, jbd2::bdev_buffers(dev), block, PG_LOCKED, WaitSite::DoGetWriteAccess, false);
        true
    }

    /// `jbd2_log_do_checkpoint`: write home the oldest transaction whose metadata is not
    /// home yet, whatever its age, unless such writes are in flight already.
    fn checkpoint_oldest(&mut self, dev: u16) {
        let j = self.jn(dev);
        if j.checkpoints.iter().any(|c| c.writing > 0) {
            return;
        }
        if let Some(tid) = j.checkpoints.iter().find(|c| !c.blocks.is_empty()).map(|c| c.tid) {
            self.checkpoint_write(dev, tid);
            self.journal_submit(dev);
        } else if let Some(tid) = j.running.as_ref().map(|t| t.tid) {
            // Nothing to write home: the space is the transactions' own; commit them.
            self.request_commit(dev, tid);
        }
    }

    /// Log space freed: wake the handles that waited for it, or write the next transaction
    /// home if there is still not enough.
    fn log_space_freed(&mut self, dev: u16) {
        let j = self.jn(dev);
        if j.space_waiters.is_empty() {
            return;
        }
        if j.log_full() {
            self.checkpoint_oldest(dev);
            return;
        }
        let waiters = std::mem::take(&mut j.space_waiters);
        self.handles_go_on(dev, waiters);
    }

    /// Tasks that waited to start a handle go on: count their waits, wake them. Returns the
    /// longest wait (`t_max_wait`).
    fn handles_go_on(&mut self, dev: u16, waiters: Vec<(u32, Ns)>) -> Ns {
        let now = self.now();
        let j = self.jn(dev);
        let mut longest = 0;
        for &(_, since) in &waiters {
            j.stats.handle_waits += 1;
            j.stats.handle_wait_ns += now - since;
            longest = longest.max(now - since);
        }
        for (task, _) in waiters {
            self.wake_task(task);
        }
        longest
    }

    /// Writeback or an O_DIRECT write is about to submit request `id`, whose bios need a new
    /// handle: false when its submitter must wait — for the locked transaction to reach
    /// T_FLUSH (woken by [`Machine::commit_advance`]), or, when the handle allocates blocks, for
    /// the log write of the bitmap, group descriptor or inode it is about to change
    /// (`ext4_map_blocks` → `ext4_journal_get_write_access` → `do_get_write_access` sleeps
    /// on BH_Shadow). The second wait is what stops a streaming flusher at every commit
    /// until the commit's log blocks are on the device.
    pub(crate) fn journal_handle_for_submit(&mut self, dev: u16, id: u32) -> bool {
        let now = self.now();
        let r = self.queues[dev as usize].rq(id);
        let (sub, sector, allocates) = (r.submitter, r.sector, r.new_blocks || r.direct);
        let file = match (r.segs.first(), sub) {
            (Some(s), _) => Some(s.file),
            (None, Submitter::Task(t)) => Some(self.tasks[t as usize].file),
            (None, _) => None,
        };
        let Some(j) = self.journals[dev as usize].as_ref() else {
            return true;
        };
        if j.handles_wait() {
            let j = self.jn(dev);
            if !j.locked_submitters.iter().any(|&(s, _)| s == sub) {
                j.locked_submitters.push((sub, now));
            }
            return false;
        }
        let Some(ino) = file.filter(|_| allocates && j.p.locks_handles && j.committing.is_some()) else {
            return true;
        };
        let shadowed = jbd2::alloc_blocks(ino, sector).iter().any(|&b| j.shadowed(self.home_of(b) / 8));
        if !shadowed {
            return true;
        }
        let j = self.jn(dev);
        if !j.shadow_submitters.iter().any(|&(s, _)| s == sub) {
            j.shadow_submitters.push((sub, now));
        }
        false
    }

    /// Writeback submitters that waited for the journal (`locked_submitters`,
    /// `shadow_submitters`) go on: a task is woken, a flusher submits again.
    fn submitters_go_on(&mut self, submitters: Vec<(Submitter, Ns)>) {
        for (sub, _) in submitters {
            match sub {
                Submitter::Task(t) => {
                    self.tasks[t as usize].rq_wait = None;
                    self.wake_task(t);
                }
                Submitter::Flusher(w) => {
                    self.flushers[w as usize].blocked = false;
                    self.flusher_continue(w);
                }
                Submitter::Journal(_) => unreachable!("the journal thread starts no handle"),
            }
        }
    }

    /// A handle changed `blocks` of `ino`'s file system: the inode joins the running
    /// transaction (its `i_sync_tid`; its `i_datasync_tid` too when the change is one reading
    /// the data back needs, `datasync`), and with ext3's ordered data its file too.
    fn handle_touch(&mut self, ino: u32, dev: u16, blocks: &[MetaBlock], order: bool, datasync: bool) {
        let tid = self.journal_touch(dev, blocks);
        if order && self.jn(dev).p.ordered != Ordered::None && self.inodes[ino as usize].ordered_tid != tid {
            self.inodes[ino as usize].ordered_tid = tid;
            let t = self.jn(dev).running.as_mut().expect("touched");
            debug_assert_eq!(t.tid, tid);
            t.ordered.push(ino);
        }
        let inode = &mut self.inodes[ino as usize];
        inode.sync_tid = tid;
        inode.meta_seq += 1;
        if datasync {
            inode.datasync_tid = tid;
            inode.datasync_seq = inode.meta_seq;
        }
    }

    /// A handle changed `blocks`: they join the running transaction (made now if there is
    /// none), which commits at once if it is full and otherwise when its timer expires.
    /// Returns its tid.
    fn journal_touch(&mut self, dev: u16, blocks: &[MetaBlock]) -> u32 {
        let now = self.now();
        let j = self.jn(dev);
        let tid = j.touch(now, blocks);
        if j.running_full() {
            self.request_commit(dev, tid);
        }
        self.arm_commit_timer(dev);
        tid
    }

    /// `file_modified` in `write()`: a new mtime (once a tick) takes a handle on ext4 and
    /// xfs; every ext3 write takes one (`ext3_write_begin`). It may wait for a locked
    /// transaction.
    pub(crate) fn file_modified(&mut self, tid: u32) -> Option<Phase> {
        self.inode_time_update(tid, TimeStamp::Mtime).then_some(Phase::Gate)
    }

    /// `touch_atime` of a buffered read: `strictatime` once a tick, `relatime` once per file
    /// (the files are older than a day and unchanged since their last read), `noatime` never.
    pub(crate) fn file_accessed(&mut self, tid: u32) -> Option<Phase> {
        self.inode_time_update(tid, TimeStamp::Atime).then_some(Phase::WaitRead)
    }

    /// Update the task's file's mtime or atime in a handle when due. False when the task now
    /// waits for a locked transaction (it retries when woken).
    fn inode_time_update(&mut self, tid: u32, which: TimeStamp) -> bool {
        let ino = self.tasks[tid as usize].file;
        let dev = self.inodes[ino as usize].dev;
        let Some(j) = self.journal(dev) else { return true };
        let jif = self.jiffies();
        let inode = &self.inodes[ino as usize];
        let handle_per_write = j.p.handle_per_write;
        let due = match which {
            TimeStamp::Mtime => handle_per_write || inode.mtime_jiffy != Some(jif),
            TimeStamp::Atime => match j.p.atime {
                Atime::Noatime => false,
                Atime::Relatime => inode.atime_jiffy.is_none(),
                Atime::Strictatime => inode.atime_jiffy != Some(jif),
            },
        };
        if !due {
            return true;
        }
        if !self.start_handle(tid, dev) || self.wait_on_shadow(tid, dev, jbd2::inode_block(ino)) {
            return false;
        }
        let inode = &mut self.inodes[ino as usize];
        match which {
            TimeStamp::Mtime => inode.mtime_jiffy = Some(jif),
            TimeStamp::Atime => inode.atime_jiffy = Some(jif),
        }
        // The first write creates the file: its directory entry and an inode from the bitmap.
        let created = which == TimeStamp::Mtime && !std::mem::replace(&mut self.inodes[ino as usize].exists, true);
        let blocks = [jbd2::inode_block(ino), MetaBlock::InodeBitmap(0), MetaBlock::RootDir];
        let touched = if created { &blocks[..] } else { &blocks[..1] };
        if which == TimeStamp::Mtime && self.journal(dev).is_some_and(|j| j.p.journal_data) {
            // data=journal: the pages this write() copies are journalled with it
            // (`ext4_journalled_write_end`); they go to the log at commit and home later.
            let t = &self.tasks[tid as usize];
            let pages = (t.offset % PAGE_SIZE + t.op_left).div_ceil(PAGE_SIZE).max(1);
            let now = self.now();
            self.jn(dev).running_txn(now).data_blocks += pages;
        }
        // ext3's write() allocates the blocks it reaches (and grows the size) in this
        // handle: that is data-integrity metadata, as a new file is; a timestamp alone is not.
        let datasync = created || (which == TimeStamp::Mtime && handle_per_write && self.write_allocates(tid));
        // ext3's write() joins its file to the ordered data; a read orders nothing.
        self.handle_touch(ino, dev, touched, which == TimeStamp::Mtime, datasync);
        true
    }

    /// `ext4_rename`'s handle for a file renamed over another: the directory entry, the
    /// renamed inode, and the replaced inode freed in the inode bitmap. False when the task
    /// now waits for the journal (it retries when woken).
    pub(crate) fn journal_rename(&mut self, tid: u32, ino: u32) -> bool {
        let dev = self.inodes[ino as usize].dev;
        if self.journal(dev).is_none() {
            return true;
        }
        if !self.start_handle(tid, dev) || self.wait_on_shadow(tid, dev, MetaBlock::RootDir) {
            return false;
        }
        let blocks = [MetaBlock::RootDir, jbd2::inode_block(ino), MetaBlock::InodeBitmap(0)];
        self.handle_touch(ino, dev, &blocks, false, false);
        // A rename is beyond what a fast commit can replay (`EXT4_FC_REASON_RENAME_DIR` and
        // kin): fsyncs needing this transaction wait for its full commit.
        let tid = self.inodes[ino as usize].sync_tid;
        self.jn(dev).fc.ineligible_tid = tid;
        true
    }

    /// Whether the metadata job of `tid` is about to read a directory whose atime is due.
    pub(crate) fn dir_atime_due(&self, tid: u32) -> bool {
        let Some(m) = self.tasks[tid as usize].meta.as_ref() else {
            return false;
        };
        let dev = self.inodes[m.tree.file as usize].dev;
        m.pos == 1 && m.dir >= m.atime_dirs && self.journal(dev).is_some_and(|j| j.p.atime != Atime::Noatime)
    }

    /// `touch_atime` of the directory the job starts to read (`iterate_dir`). False when the
    /// task now waits for the journal (it retries when woken).
    pub(crate) fn dir_accessed(&mut self, tid: u32) -> bool {
        let m = self.tasks[tid as usize].meta.as_ref().expect("metadata job");
        let (tree_file, dir, page) = (m.tree.file, m.dir, m.tree.inode_page(m.dir, 0));
        let dev = self.inodes[tree_file as usize].dev;
        if !self.start_handle(tid, dev) || self.wait_on_shadow(tid, dev, jbd2::tree_inode_block(tree_file, page)) {
            return false;
        }
        self.tasks[tid as usize].meta.as_mut().expect("metadata job").atime_dirs = dir + 1;
        self.journal_touch(dev, &[jbd2::tree_inode_block(tree_file, page)]);
        true
    }

    /// Writeback allocated blocks for `ino` at `sector` (`ext4_map_blocks` in
    /// `mpage_map_and_submit_extent`, xfs's delalloc conversion).
    pub(crate) fn journal_alloc(&mut self, ino: u32, dev: u16, sector: u64) {
        let order = self.journal(dev).is_some_and(|j| j.p.ordered == Ordered::WaitAllocated);
        self.handle_touch(ino, dev, &jbd2::alloc_blocks(ino, sector), order, true);
    }

    /// A write of newly allocated or fallocated blocks completed: ext4 converts the unwritten
    /// extent and updates the on-disk size, xfs logs the size, in a handle of the transaction
    /// running now — a change fdatasync must commit. ext3 did both in `write()`.
    pub(crate) fn journal_end_io(&mut self, ino: u32, dev: u16) {
        if self.journal(dev).is_some_and(|j| j.p.fs != crate::config::FsKind::Ext3) {
            self.handle_touch(ino, dev, &[jbd2::inode_block(ino)], false, true);
        }
    }

    /// Arm the commit timer at the running transaction's `t_expires`, rounded up to a second.
    fn arm_commit_timer(&mut self, dev: u16) {
        let now = self.now();
        let j = self.jn(dev);
        let Some(t) = j.running.as_ref() else { return };
        if t.requested.is_some() {
            // Its commit is asked for already (it waits for the one in progress).
            return;
        }
        let at = jbd2::round_up_to_second(t.expires).max(now);
        if j.timer_at.is_some_and(|a| a <= at) {
            return;
        }
        j.timer_at = Some(at);
        self.q.schedule(at, Event::JournalTimer(dev));
    }

    /// `commit_timeout` → kjournald2: commit the running transaction once it expired.
    pub(crate) fn on_journal_timer(&mut self, dev: u16) {
        let now = self.now();
        let j = self.jn(dev);
        if j.timer_at.is_some_and(|a| a <= now) {
            j.timer_at = None;
        }
        if j.checkpoint_at.is_some_and(|a| a <= now) {
            j.checkpoint_at = None;
            self.checkpoint_aged(dev);
        }
        let j = self.jn(dev);
        let expired = j.running.as_ref().is_some_and(|t| t.expires <= now);
        if expired {
            let tid = j.running.as_ref().expect("checked").tid;
            self.request_commit(dev, tid);
        } else {
            self.arm_commit_timer(dev);
        }
    }

    /// `jbd2_log_start_commit(tid)`: start it now if the journal is free, else remember it.
    /// (fsync does not make a commit synchronous: `t_synchronous_commit` is for O_SYNC
    /// handles, not modelled, so the trace's `sync` is 0 as on a real fsync.)
    fn request_commit(&mut self, dev: u16, tid: u32) {
        self.request_commit_from(dev, tid, false);
    }

    /// The same from the journal thread itself (`awake`: it starts the commit without a
    /// wake-up) or from a task or timer, which wake it.
    fn request_commit_from(&mut self, dev: u16, tid: u32, awake: bool) {
        let now = self.now();
        let j = self.jn(dev);
        j.commit_request = j.commit_request.max(tid);
        if let Some(t) = j.running.as_mut().filter(|t| t.tid == tid) {
            t.requested.get_or_insert(now);
        }
        if j.commit_due() {
            if awake {
                self.start_commit(dev);
            } else {
                self.journal_wake(dev, JournalWake::START);
            }
        }
    }

    /// Wake the journal thread for `why`: it runs `[machine] idle_wake_latency` later (at
    /// once when that is 0), doing everything it was woken for meanwhile.
    fn journal_wake(&mut self, dev: u16, why: u8) {
        let lat = self.cfg.machine.idle_wake_latency;
        if lat == 0 {
            self.jn(dev).woken_for |= why;
            return self.journal_woken(dev);
        }
        self.forget_passed_wake(dev);
        // Woken only to see whether the ordered data is written, and it is not: the wake
        // needs no event yet (`Journal::wake_queued`).
        let futile = why == JournalWake::ADVANCE && !self.jn(dev).wakes_all_queued && self.ordered_unwritten(dev);
        let now = self.now();
        let j = self.jn(dev);
        if j.woken_for == 0 {
            j.wake_at = now + lat;
            j.wake_queued = false;
        }
        j.woken_for |= why;
        if !futile {
            self.queue_wake(dev);
        }
    }

    /// The pending wake becomes a `JournalWake` event, if it is not one yet.
    fn queue_wake(&mut self, dev: u16) {
        let j = self.jn(dev);
        if !j.wake_queued {
            j.wake_queued = true;
            let at = j.wake_at;
            self.q.schedule(at, Event::JournalWake(dev));
        }
    }

    /// A wake kept off the queue whose time has passed: the thread ran then, found the
    /// ordered data unwritten and slept again.
    fn forget_passed_wake(&mut self, dev: u16) {
        let now = self.now();
        let j = self.jn(dev);
        if j.woken_for != 0 && !j.wake_queued && j.wake_at < now {
            j.woken_for = 0;
        }
    }

    /// The commit waits for ordered data not all written yet.
    fn ordered_unwritten(&mut self, dev: u16) -> bool {
        let flushing = self.jn(dev).committing.as_ref().is_some_and(|c| c.phase == CommitPhase::Flushing);
        flushing && !self.ordered_done(dev)
    }

    /// Pages of an inode on `dev` ended writeback: a wake kept off the queue becomes an
    /// event if the ordered data is now all written, as the thread would find at its time.
    /// A write's completion wakes the thread itself (`journal_io_done`); this is for pages
    /// that end writeback later, after their end_io work converted fallocated extents.
    pub(crate) fn ordered_written(&mut self, dev: u16) {
        let Some(j) = self.journals[dev as usize].as_ref() else { return };
        if j.woken_for == 0 || j.wake_queued {
            return;
        }
        self.forget_passed_wake(dev);
        if self.jn(dev).woken_for != 0 && !self.ordered_unwritten(dev) {
            self.queue_wake(dev);
        }
    }

    /// The journal thread runs: what it was woken for, in the order it finds it.
    pub(crate) fn journal_woken(&mut self, dev: u16) {
        self.jn(dev).wake_queued = false;
        let why = std::mem::take(&mut self.jn(dev).woken_for);
        if why & JournalWake::FLUSHED != 0 {
            self.journal_flushed_now(dev);
        }
        if why & JournalWake::ADVANCE != 0 {
            self.commit_advance(dev);
        }
        if why & JournalWake::START != 0 && self.jn(dev).commit_due() {
            self.start_commit(dev);
        }
    }

    fn start_commit(&mut self, dev: u16) {
        let now = self.now();
        let j = self.jn(dev);
        let mut txn = j.running.take().expect("a running transaction");
        txn.requested.get_or_insert(now);
        // A full commit makes the fast commits before it redundant: their area starts over.
        j.fc.used = 0;
        j.committing = Some(jbd2::Commit {
            txn,
            phase: CommitPhase::Locked,
            locked_at: now,
            flushing_at: now,
            logging_at: now,
            io_left: 0,
            ordered_targets: Vec::new(),
            ordered_met: 0,
            blocks_logged: 0,
            shadow: Vec::new(),
            record_sectors: 8,
            log_ready_at: None,
        });
        self.trace_commit_phase(dev, "start_commit");
        self.trace_commit_phase(dev, "commit_locking");
        self.commit_advance(dev);
    }

    /// Move the commit on as far as it can go now.
    pub(crate) fn commit_advance(&mut self, dev: u16) {
        loop {
            let now = self.now();
            let held = self.queues[dev as usize].handles_blocked > 0;
            let flushes = self.fs_flushes(dev);
            let j = self.jn(dev);
            let Some(c) = j.committing.as_mut() else { return };
            match c.phase {
                CommitPhase::Locked => {
                    if j.p.locks_handles && held {
                        return;
                    }
                    c.phase = CommitPhase::Flushing;
                    c.flushing_at = now;
                    self.commit_flush_data(dev);
                }
                CommitPhase::Flushing => {
                    if !self.ordered_done(dev) {
                        return;
                    }
                    if self.jn(dev).p.fs == FsKind::Xfs {
                        return self.xlog_write_checkpoint(dev, flushes);
                    }
                    // The logging phase begins; the log write leaves once the thread built it.
                    let j = self.jn(dev);
                    let since = now.saturating_sub(j.last_commit_end);
                    let c = j.committing.as_mut().expect("committing");
                    match c.log_ready_at {
                        None => {
                            let (hot, cold) = jbd2::JBD2_LOG_PREP_NS;
                            let prep = cold_cost(hot, cold, since);
                            c.log_ready_at = Some(now + prep);
                            c.logging_at = now;
                            self.trace_commit_phase(dev, "commit_logging");
                            self.q.schedule_in(prep, Event::JournalLogPrepared(dev));
                            return;
                        }
                        Some(at) if now < at => return,
                        Some(_) => {}
                    }
                    self.commit_write_log(dev);
                }
                CommitPhase::Logging => {
                    if c.io_left > 0 {
                        return;
                    }
                    if !c.shadow.is_empty() {
                        // The log blocks are written: the shadows clear and their waiters wake.
                        let shadow = std::mem::take(&mut c.shadow);
                        let submitters = std::mem::take(&mut j.shadow_submitters);
                        let file = jbd2::bdev_buffers(dev);
                        for &block in &shadow {
                            self.wake_pages(file, block, 1, 0);
                        }
                        self.submitters_go_on(submitters);
                        continue;
                    }
                    if flushes && j.p.async_commit {
                        // The commit block went with the metadata: one flush makes it all stable.
                        c.phase = CommitPhase::PostFlush;
                        self.journal_flush(dev, false);
                        return;
                    }
                    if flushes {
                        c.phase = CommitPhase::PreFlush;
                        j.last_barrier_at = Some(now);
                        self.journal_flush(dev, false);
                        return;
                    }
                    c.phase = CommitPhase::Record;
                    self.journal_log_write(dev, 8, false, false);
                }
                CommitPhase::Record => {
                    if c.io_left > 0 {
                        return;
                    }
                    // Its post-flush, where the device has no FUA, went at once (journal_io_done).
                    return self.commit_done(dev);
                }
                CommitPhase::PreFlush | CommitPhase::PostFlush => return,
            }
        }
    }

    /// T_FLUSH: a new transaction may start (the waiting handles go on); the ordered data is
    /// written (ext3) and waited for.
    fn commit_flush_data(&mut self, dev: u16) {
        let now = self.now();
        let j = self.jn(dev);
        let c = j.committing.as_mut().expect("committing");
        let waiters = std::mem::take(&mut j.locked_waiters);
        let submitters = std::mem::take(&mut j.locked_submitters);
        let order = j.p.ordered;
        let inodes = std::mem::take(&mut c.txn.ordered);
        self.trace_commit_phase(dev, "commit_flushing");
        let longest = self.handles_go_on(dev, waiters);
        let c = self.jn(dev).committing.as_mut().expect("committing");
        c.txn.max_wait = c.txn.max_wait.max(longest);
        let j = self.jn(dev);
        for &(_, since) in &submitters {
            j.stats.handle_wait_ns += now - since;
            j.stats.handle_waits += 1;
        }
        self.submitters_go_on(submitters);
        let mut targets = Vec::with_capacity(inodes.len());
        for ino in inodes {
            if order == Ordered::WriteAll {
                let mut from = 0;
                while let Some((start, pages)) = self.take_dirty_run(ino, from, u64::MAX) {
                    self.jn(dev).pending.push_back(JournalIo::Run { ino, start, pages });
                    from = start + pages;
                }
            }
            // Pages under writeback and pages taken for it (their requests not yet submitted,
            // the flusher's or this commit's): the commit waits for all of them.
            let i = &self.inodes[ino as usize];
            targets.push((ino, i.nr_written + i.mapping.nr_writeback + i.mapping.nr_queued));
        }
        self.jn(dev).committing.as_mut().expect("committing").ordered_targets = targets;
        self.journal_submit(dev);
    }

    /// Every ordered inode has written what the commit waits for. The targets met are passed
    /// over for good (an inode's written count only grows), so that each of a commit's
    /// completions does not walk every file again (ext3's ordered flush of 512 files).
    fn ordered_done(&mut self, dev: u16) -> bool {
        let inodes = &self.inodes;
        let c = self.journals[dev as usize]
            .as_mut()
            .and_then(|j| j.committing.as_mut())
            .expect("committing");
        c.ordered_met = c.ordered_met_now(inodes);
        c.ordered_met == c.ordered_targets.len()
    }

    /// T_COMMIT: write the descriptors and metadata blocks (xfs: the iclogs) to the log.
    fn commit_write_log(&mut self, dev: u16) {
        let j = self.journals[dev as usize].as_ref().expect("journal");
        // jbd2_journal_write_metadata_buffer shadows every buffer it copies to the log.
        let mut shadow = Vec::new();
        if j.p.locks_handles {
            let txn = &j.committing.as_ref().expect("committing").txn;
            shadow.extend(txn.blocks.iter().map(|&b| self.home_of(b) / 8));
            shadow.sort_unstable();
        }
        let j = self.jn(dev);
        let txn = &j.committing.as_ref().expect("committing").txn;
        let (sectors, logged) = j.log_size(&txn.blocks, txn.data_blocks);
        let c = j.committing.as_mut().expect("committing");
        c.shadow = shadow;
        c.phase = CommitPhase::Logging;
        c.blocks_logged = logged;
        let with_record = j.p.async_commit;
        self.journal_log_write(dev, sectors + if with_record { 8 } else { 0 }, false, false);
    }

    /// xfs's log force of a checkpoint (`xlog_cil_push_work`, `xlog_sync`): its iclogs, the
    /// first with REQ_PREFLUSH and the last, which holds the commit record, with REQ_FUA —
    /// one write with both for a checkpoint that fits one iclog, and no commit block apart
    /// as jbd2 writes. Without barriers, the iclogs alone.
    fn xlog_write_checkpoint(&mut self, dev: u16, flushes: bool) {
        let now = self.now();
        let j = self.jn(dev);
        let txn = &j.committing.as_ref().expect("committing").txn;
        let (sectors, logged) = j.log_size(&txn.blocks, txn.data_blocks);
        let c = j.committing.as_mut().expect("committing");
        c.logging_at = now;
        c.blocks_logged = logged;
        c.record_sectors = sectors;
        self.trace_commit_phase(dev, "commit_logging");
        let j = self.jn(dev);
        let c = j.committing.as_mut().expect("committing");
        if flushes {
            c.phase = CommitPhase::PreFlush;
            j.last_barrier_at = Some(now);
            self.journal_flush(dev, false);
        } else {
            c.phase = CommitPhase::Record;
            self.journal_log_write(dev, sectors, false, false);
        }
    }

    /// Queue `sectors` of log writes at the head of the log, in pieces a request (xfs: an
    /// iclog) carries, wrapping at the end of the area, the last with REQ_FUA if `fua`; then
    /// submit them.
    /// `preflushed`: the write is the data of a REQ_PREFLUSH bio whose flush is done.
    fn journal_log_write(&mut self, dev: u16, sectors: u64, fua: bool, preflushed: bool) {
        let d = dev as usize;
        let max = self.queues[d].max_sectors;
        let mut left = sectors;
        while left > 0 {
            let j = self.journals[d].as_mut().expect("journal");
            let piece = j.log_io_sectors(max).min(left).min(j.area_len - j.head);
            let sector = j.area_start + j.head;
            j.head = (j.head + piece) % j.area_len;
            let id = self.queues[d].alloc(Op::Write, sector, piece, None, Submitter::Journal(dev), true, false, false, false);
            let r = self.queues[d].rq_mut(id);
            // REQ_SYNC | REQ_META | REQ_IDLE: blk-wbt leaves log writes alone.
            r.wbt_tracked = false;
            r.log_sectors = piece;
            r.fua = fua && piece == left;
            // The REQ_PREFLUSH bio is the first; the others but the FUA one are plain.
            r.flush_seq = preflushed && left == sectors;
            let j = self.journals[d].as_mut().expect("journal");
            j.pending.push_back(JournalIo::Rq(id));
            j.committing.as_mut().expect("committing").io_left += piece;
            left -= piece;
        }
        self.journal_submit(dev);
    }

    /// The journal thread submits its list in order, building an ordered run's requests
    /// when it comes to it; it sleeps on a request that must wait for a tag or for wbt.
    pub(crate) fn journal_submit(&mut self, dev: u16) {
        loop {
            let j = self.jn(dev);
            if j.blocked {
                return;
            }
            let id = match j.pending.front() {
                None => return,
                Some(&JournalIo::Rq(id)) => id,
                Some(&JournalIo::Run { ino, start, pages }) => {
                    self.build_ordered_batch(dev, ino, start, pages);
                    continue;
                }
            };
            if self.submit_request(dev, id) {
                self.jn(dev).pending.pop_front();
            } else {
                self.jn(dev).blocked = true;
                return;
            }
        }
    }

    /// Build the requests of the first batch ([`jbd2::ORDERED_BATCH_PAGES`]) of the ordered
    /// run at the front of the journal's list, in its place; the rest of the run stays behind
    /// them. The batch ends where a bio and a request end anyway, so the requests are those
    /// the whole run would have been built into.
    fn build_ordered_batch(&mut self, dev: u16, ino: u32, start: u64, pages: u64) {
        let (max_pages, bio_pages) = self.writeback_units(dev);
        let end = if bio_pages > max_pages {
            start + jbd2::ORDERED_BATCH_PAGES.next_multiple_of(bio_pages)
        } else {
            (start + jbd2::ORDERED_BATCH_PAGES).next_multiple_of(max_pages)
        };
        let end = end.min(start + pages);
        let j = self.jn(dev);
        j.pending.pop_front();
        if end < start + pages {
            let rest = start + pages - end;
            j.pending.push_front(JournalIo::Run {
                ino,
                start: end,
                pages: rest,
            });
        }
        let before = j.pending.len();
        self.build_writeback_run(ino, start, end - start, Submitter::Journal(dev), true, false);
        // Built onto the back of the list: they go first.
        let j = self.jn(dev);
        let built = j.pending.len() - before;
        j.pending.rotate_right(built);
    }

    /// A request the journal thread slept on entered the queue.
    pub(crate) fn journal_request_accepted(&mut self, dev: u16) {
        let j = self.jn(dev);
        j.pending.pop_front();
        j.blocked = false;
        self.journal_submit(dev);
    }

    /// A write completed on `dev`: its log sectors count down (log bios merge, so the count
    /// is in sectors); any write may be ordered data a commit waits for.
    pub(crate) fn journal_io_done(&mut self, dev: u16, log_sectors: u64) {
        let Some(j) = self.journals[dev as usize].as_mut() else { return };
        let Some(c) = j.committing.as_mut() else { return };
        let log_write = log_sectors > 0;
        if log_write {
            c.io_left -= log_sectors;
        }
        // The thread sleeps until the step's I/O is all done.
        let step_done = match c.phase {
            CommitPhase::Flushing => true,
            CommitPhase::Logging | CommitPhase::Record => log_write && c.io_left == 0,
            _ => false,
        };
        let record_done = step_done && c.phase == CommitPhase::Record;
        if record_done && self.fs_flushes(dev) && !self.queues[dev as usize].supports_fua() {
            // blk-flush turns the record's REQ_FUA into a flush after it, sent from the
            // write's completion: the thread sleeps on until that flush is done.
            self.jn(dev).committing.as_mut().expect("committing").phase = CommitPhase::PostFlush;
            self.journal_flush(dev, true);
            return;
        }
        if step_done {
            self.journal_wake(dev, JournalWake::ADVANCE);
        }
    }

    /// The journal's flush: a new flush sequence, or the next `step` of one (blk-flush).
    fn journal_flush(&mut self, dev: u16, step: bool) {
        self.blk_flush(dev, JOURNAL_WAITER | dev as u32, step);
    }

    /// A flush the journal queued completed: its thread wakes — unless it was the pre-flush of
    /// a write that carries REQ_PREFLUSH, which blk-flush sends on a step later
    /// (`blk_flush_complete_seq`).
    pub(crate) fn journal_flushed(&mut self, dev: u16) {
        let pre = self.jn(dev).committing.as_ref().is_some_and(|c| c.phase == CommitPhase::PreFlush);
        if pre {
            self.q.schedule_in(BLK_FLUSH_STEP_NS, Event::JournalFlushSeq(dev));
        } else {
            self.journal_wake(dev, JournalWake::FLUSHED);
        }
    }

    pub(crate) fn journal_flushed_now(&mut self, dev: u16) {
        let j = self.jn(dev);
        let c = j.committing.as_mut().expect("a commit waits for the flush");
        match c.phase {
            CommitPhase::PreFlush => {
                c.phase = CommitPhase::Record;
                // The commit record (xfs: the checkpoint's iclogs): REQ_PREFLUSH (done) | REQ_FUA.
                let sectors = c.record_sectors;
                let fua = self.queues[dev as usize].supports_fua();
                self.journal_log_write(dev, sectors, fua, true);
            }
            _ => self.commit_done(dev),
        }
    }

    /// The commit is on stable storage: `j_commit_sequence` moves on, waiters wake, the
    /// statistics and the trace record it; a commit asked for meanwhile starts.
    fn commit_done(&mut self, dev: u16) {
        let now = self.now();
        let hz = self.clock.hz;
        let devt = self.queues[dev as usize].devt;
        let j = self.jn(dev);
        let c = j.committing.take().expect("committing");
        let t = c.txn.tid;
        j.commit_sequence = t;
        j.last_commit_end = now;
        j.add_checkpoint(t, &c.txn.blocks, c.blocks_logged, now);
        j.stats.commits += 1;
        j.stats.blocks_logged += c.blocks_logged;
        j.stats.commit_ns_total += now - c.locked_at;
        j.stats.commit_ns_max = j.stats.commit_ns_max.max(now - c.locked_at);
        j.stats.locked_ns += c.flushing_at - c.locked_at;
        j.stats.flushing_ns += c.logging_at - c.flushing_at;
        j.stats.logging_ns += now - c.logging_at;
        let mut woken = Vec::new();
        j.commit_waiters.retain(|&(task, need)| {
            if need <= t {
                woken.push(task);
                false
            } else {
                true
            }
        });
        let ms = |a: Ns, b: Ns| (b.saturating_sub(a) * hz / crate::engine::time::NSEC_PER_SEC * 1000 / hz) as u32;
        let stats = TraceEvent::Jbd2RunStats {
            dev: devt,
            tid: t,
            wait: ms(0, c.txn.max_wait),
            request_delay: c.txn.requested.map_or(0, |r| ms(r, c.locked_at)),
            running: ms(c.txn.created, c.locked_at),
            locked: ms(c.locked_at, c.flushing_at),
            flushing: ms(c.flushing_at, c.logging_at),
            logging: ms(c.logging_at, now),
            handle_count: c.txn.handles,
            blocks: c.txn.blocks.len() as u32,
            blocks_logged: c.blocks_logged as u32,
        };
        // `t_synchronous_commit` is set by O_SYNC handles only (not modelled), not by fsync.
        let sync = false;
        // jbd2 prints its run statistics just before the end of the commit.
        self.trace_jbd2(dev, stats);
        self.trace_jbd2(
            dev,
            TraceEvent::Jbd2EndCommit {
                dev: devt,
                tid: t,
                sync,
                head: t,
            },
        );
        for task in woken {
            self.commit_waited(task);
        }
        self.log_space_freed(dev);
        self.arm_checkpoint_timer(dev);
        let j = self.jn(dev);
        if let Some(next) = j.running.as_ref().map(|r| r.tid).filter(|&r| r <= j.commit_request) {
            self.request_commit_from(dev, next, true);
        }
    }

    /// The oldest transaction with metadata to write home is due `dirty_expire_centisecs` after
    /// its commit: the block device's dirty buffers age like any dirty page (kupdate writes
    /// them; xfsaild pushes the AIL alike).
    fn checkpoint_due(&self, committed: Ns) -> Ns {
        committed + self.cfg.sysctl.dirty_expire_centisecs as Ns * 10_000_000
    }

    fn arm_checkpoint_timer(&mut self, dev: u16) {
        let now = self.now();
        let Some(committed) = self
            .journal(dev)
            .and_then(|j| j.checkpoints.iter().find(|c| !c.blocks.is_empty() && c.writing == 0))
            .map(|c| c.committed)
        else {
            return;
        };
        let at = self.checkpoint_due(committed).max(now);
        let j = self.jn(dev);
        if j.checkpoint_at.is_some_and(|a| a <= at) {
            return;
        }
        j.checkpoint_at = Some(at);
        self.q.schedule(at, Event::JournalTimer(dev));
    }

    /// Write home the metadata of every transaction committed long enough ago
    /// (`jbd2_log_do_checkpoint`'s writes, done here by the journal thread).
    fn checkpoint_aged(&mut self, dev: u16) {
        let now = self.now();
        let mut due: Vec<u32> = Vec::new();
        for c in &self.journals[dev as usize].as_ref().expect("journal").checkpoints {
            if self.checkpoint_due(c.committed) > now {
                break;
            }
            if !c.blocks.is_empty() && c.writing == 0 {
                due.push(c.tid);
            }
        }
        for tid in due {
            self.checkpoint_write(dev, tid);
        }
        self.journal_submit(dev);
        self.arm_checkpoint_timer(dev);
    }

    /// The sector a metadata block is written home to.
    fn home_of(&self, b: MetaBlock) -> u64 {
        match b {
            MetaBlock::TreeInode(file, page) => self.inodes[file as usize].blocks.lookup(page).unwrap_or(0),
            other => jbd2::home_sector(other).expect("a fixed place"),
        }
    }

    /// Queue the home writes of transaction `tid`'s metadata on the journal thread (as
    /// background writes of the block device's dirty buffers).
    fn checkpoint_write(&mut self, dev: u16, tid: u32) {
        let d = dev as usize;
        let blocks = match self.jn(dev).checkpoints.iter().find(|c| c.tid == tid) {
            Some(c) if c.writing == 0 => c.blocks.clone(),
            _ => return,
        };
        for b in &blocks {
            let home = self.home_of(*b);
            let id = self.queues[d].alloc(Op::Write, home, 8, None, Submitter::Journal(dev), false, true, false, false);
            let r = self.queues[d].rq_mut(id);
            r.log_sectors = 8;
            r.ckpt_tid = tid;
            self.journals[d].as_mut().expect("journal").pending.push_back(JournalIo::Rq(id));
        }
        if let Some(c) = self.jn(dev).checkpoints.iter_mut().find(|c| c.tid == tid) {
            c.writing = blocks.len() as u32;
        }
    }

    /// A checkpoint write of transaction `tid` completed: once all are, its log space frees
    /// (with every older transaction's).
    pub(crate) fn checkpoint_written(&mut self, dev: u16, tid: u32) {
        let j = self.jn(dev);
        j.stats.checkpoint_blocks += 1;
        if let Some(c) = j.checkpoints.iter_mut().find(|c| c.tid == tid) {
            c.writing -= 1;
            if c.writing == 0 {
                c.blocks.clear();
            }
        }
        j.advance_tail();
        self.log_space_freed(dev);
        self.arm_checkpoint_timer(dev);
    }

    /// `jbd2_<what>` of the committing transaction.
    fn trace_commit_phase(&mut self, dev: u16, what: &'static str) {
        let devt = self.queues[dev as usize].devt;
        let Some(c) = self.journal(dev).and_then(|j| j.committing.as_ref()) else {
            return;
        };
        let tid = c.txn.tid;
        let sync = false;
        self.trace_jbd2(
            dev,
            TraceEvent::Jbd2Commit {
                dev: devt,
                tid,
                sync,
                what,
            },
        );
    }

    /// Record a `jbd2:*` event, fired by the journal thread. Only ext4's journal is jbd2
    /// (ext3's jbd and xfs's log have tracepoints of their own, not modelled).
    fn trace_jbd2(&mut self, dev: u16, ev: TraceEvent) {
        if self.tout.trace_enabled && self.journal(dev).is_some_and(|j| j.p.fs == crate::config::FsKind::Ext4) {
            let who = self.journal_comm(dev);
            self.trace_ev(who, 0, ev);
        }
    }

    /// fsync/sync: the data is written. Force the commits the call needs (fsync: of the
    /// transaction that last touched the file; sync: every journal's running one). Returns
    /// whether the task now waits for one.
    pub(crate) fn journal_force(&mut self, tid: u32, only: Option<u16>) -> bool {
        let t = tid as usize;
        let now = self.now();
        let mut left = 0;
        for dev in 0..self.queues.len() as u16 {
            if only.is_some_and(|o| o != dev) {
                continue;
            }
            let Some(j) = self.journal(dev) else { continue };
            let inode = &self.inodes[self.tasks[t].file as usize];
            let need = match only {
                // `ext4_fsync_journal`: fdatasync commits `i_datasync_tid`, fsync `i_sync_tid`
                // (xfs: the log force skips an inode whose only change is a timestamp).
                Some(_) if self.tasks[t].datasync => inode.datasync_tid,
                Some(_) => inode.sync_tid,
                None => j
                    .running
                    .as_ref()
                    .map_or(j.commit_sequence.max(j.committing.as_ref().map_or(0, |c| c.txn.tid)), |r| r.tid),
            };
            let ino = self.tasks[t].file;
            if need == 0 || j.committed(need) {
                continue;
            }
            // With fast commits, every fsync whose transaction is still running writes a fast
            // commit, whether or not the inode changed since the last one (`jbd2_fc_begin_commit`
            // only skips a transaction already committed): measured on 6.18 (validation v27),
            // an fsync of overwrites takes twice as long with fast commits as without.
            if only.is_some() && self.fast_commit(tid, dev, ino, need) {
                left += 1;
                continue;
            }
            self.jn(dev).commit_waiters.push((tid, need));
            left += 1;
            self.request_commit(dev, need);
        }
        // request_commit may not finish a commit synchronously, so `left` is exact here.
        if left == 0 {
            return false;
        }
        self.tasks[t].sync = Some(SyncWait::Commit { left, since: now });
        true
    }

    /// Whether the changes to `ino` an fsync (or, with `datasync`, an fdatasync) must make
    /// durable are: committed, or written by a fast commit.
    pub(crate) fn inode_durable(&self, j: &Journal, ino: u32, datasync: bool) -> bool {
        let i = &self.inodes[ino as usize];
        let (need, seq) = i.sync_need(datasync);
        need == 0 || j.committed(need) || i.fc_seq >= seq
    }

    /// A commit task `tid` waited for is done.
    pub(crate) fn commit_waited(&mut self, tid: u32) {
        if let Some(SyncWait::Commit { left, .. }) = self.tasks[tid as usize].sync.as_mut() {
            *left -= 1;
            if *left == 0 {
                // Woken by the journal thread: it runs once its CPU is back from idle.
                let at = self.q.now() + self.cfg.machine.idle_wake_latency;
                self.wake_task_at(tid, at);
            }
        }
    }

    /// After the commits: is device `dev`'s flush already covered by a commit's pre-flush
    /// queued after the data was written (`since`)?
    pub(crate) fn commit_flushed_since(&self, dev: u16, since: Ns) -> bool {
        self.journal(dev).is_some_and(|j| j.last_barrier_at.is_some_and(|b| b >= since))
    }
}

#[cfg(test)]
mod tests;
