//! fsync(2) and sync(2) (`fs/sync.c`): start writeback of a file's or of every file's dirty
//! pages, then wait until the pages under writeback at the time of the wait have completed.
//!
//! fsync is `vfs_fsync_range` → `file_write_and_wait_range`: a WB_SYNC_ALL `do_writepages` in
//! the caller's context (its requests are REQ_SYNC and submitted by the caller, who may block
//! on a tag or in blk-wbt), then `filemap_fdatawait`: a walk over the pages tagged writeback,
//! sleeping on each one's wait queue (`folio_wait_writeback`). fsync never touches the inode's
//! `I_DIRTY_PAGES` or `dirtied_when`: the inode stays where it is on its wb's dirty list and
//! only the flusher, finding it clean, takes it off. (Clearing the flag in fsync, as wblab once
//! did, made the next write re-stamp the inode in place at the old end of `b_dirty`, where it
//! hid every older inode from kupdate's `queue_io`.)
//!
//! sync is `ksys_sync`: start-all writeback on every wb, then per device in turn
//! `sync_inodes_sb`: a WB_SYNC_ALL work on the device's flusher, waited for, and
//! `wait_sb_inodes`: `filemap_fdatawait` of every inode of the device that has pages.
//!
//! A page written again during its writeback (`PG_writeback` + `PG_dirty`) cannot be written
//! by the WB_SYNC_ALL pass that meets it: the kernel's `write_cache_pages` waits for its I/O
//! and then writes it. The model does the same in the wait walk, in the caller's context:
//! after waiting on a page it writes whatever of the walk's range is dirty again (for sync,
//! the flusher's work would have written it; the I/O is the same, the submitter differs).
//!
//! Both end, once the data is written, with a cache flush of each device that caches writes
//! (`blkdev_issue_flush`: the file's device for fsync, every device for sync), merged with
//! other callers' by the block layer (`block::queue::FlushQueue`).
//!
//! On a journalled file system the data is followed by the commit of the transaction that
//! last changed the inode (fsync) or of every running transaction (sync), whose pre-flush
//! stands for the device flush when it was queued after the data was written
//! (`fs/journal.rs`).

use crate::block::queue::Submitter;
use crate::config::{FsKind, JobConfig, SyncFileRange};
use crate::fs::fs_writeback::{WbWork, WRITEBACK_NS_PER_PAGE};
use crate::kernel::cpu::{cold_cost, Who};
use crate::kernel::task::Phase;
use crate::kernel::waitqueue::{WaitSite, PG_WRITEBACK};
use crate::machine::Machine;
use crate::metrics::trace::WbReason;
use crate::mm::page_cache::PageState;
use crate::workload::state::SyncWait;
use crate::Ns;

/// ext4's fsync before its writepages submits (`ext4_sync_file`, the writepages setup), ns,
/// run back to back and cold ([`cold_cost`]). Measured on this lab's 6.18 guest (ftrace,
/// `sys_enter_fsync` to the data's `block_bio_queue` on ext4 on an idle loop device,
/// 2026-12-04, `validation/measured/fsync-steps/`): cold (an fsync every 10 or 100 ms) 30 µs
/// over written blocks, 45–46 µs when the pages were new (their blocks mapped at writeback:
/// [`EXT4_MAP_BLOCKS_NS`]); hot (fdatasync after each 4 KiB overwrite, v19) 5 µs.
pub const EXT4_FSYNC_NS: (Ns, Ns) = (4_000, 30_000);
/// ext4 mapping a writepages call's delayed-allocation blocks under a journal handle
/// (`mpage_map_and_submit_extent`), ns: cold, the 16 µs between the two cases above; hot,
/// not measured: the same share of it as the rest.
pub(crate) const EXT4_MAP_BLOCKS_NS: (Ns, Ns) = (2_000, 16_000);
/// xfs's fsync before its writepages submits (`xfs_file_fsync`), ns: cold, 20 µs appending
/// (the delalloc conversion included); hot, not measured: ext4's share.
pub const XFS_FSYNC_NS: (Ns, Ns) = (3_000, 20_000);
/// The block layer's submission of one request from the caller to the driver (the plug's
/// flush, the elevator, `queue_rq`), ns: `block_bio_queue` to `block_rq_issue`, cold 11–13 µs,
/// hot 2 µs.
pub(crate) const FSYNC_SUBMIT_NS: (Ns, Ns) = (2_000, 12_000);

impl Machine {
    /// fsync() of the task's file: write its dirty pages, submit them, and wait.
    pub(crate) fn vfs_fsync(&mut self, tid: u32) -> Option<Phase> {
        self.tasks[tid as usize].op_start = self.now();
        self.vfs_fsync_range(tid, 0, u64::MAX, false)
    }

    /// fdatasync() of the task's file: as fsync, but the journal is committed only for
    /// changes reading the data back needs (`i_datasync_tid`), not for timestamps.
    pub(crate) fn vfs_fdatasync(&mut self, tid: u32) -> Option<Phase> {
        self.tasks[tid as usize].op_start = self.now();
        self.vfs_fsync_range(tid, 0, u64::MAX, true)
    }

    /// `vfs_fsync_range(file, start, end, datasync)` on pages [`first`, `end`) of the task's
    /// file: fsync and fdatasync (the whole file) and `generic_write_sync` after an O_SYNC or
    /// O_DSYNC write (its range). The caller set `op_start`.
    pub(crate) fn vfs_fsync_range(&mut self, tid: u32, first: u64, end: u64, datasync: bool) -> Option<Phase> {
        let t = tid as usize;
        let ino = self.tasks[t].file;
        let dev = self.inodes[ino as usize].dev;
        self.tasks[t].datasync = datasync;
        self.tasks[t].sync_range_only = false;
        self.tasks[t].sync_wait = (0, self.now(), [0; 3]);
        self.durability_begin_range(tid, ino, first, end, datasync);
        self.write_range(tid, ino, first, end, true);
        // The file system's fsync and its writepages run on the caller's CPU before the first
        // request reaches the driver; the wait starts when they are done (`fsync_entered`).
        let burst = self.fsync_entry_ns(tid, dev);
        self.set_wait_range(tid, dev, ino, first, end);
        self.tasks[t].phase = Phase::SyncEntry;
        self.cpu_run(Who::Task(tid), burst);
        None
    }

    /// The CPU of an fsync's entry ran: submit its requests and wait.
    pub(crate) fn fsync_entered(&mut self, tid: u32) {
        self.tasks[tid as usize].phase = Phase::WaitSync;
        self.task_run(tid);
    }

    /// The CPU an fsync spends before its first request is issued: the file system's own
    /// (`ext4_sync_file`, `xfs_file_fsync`), the writepages call's (with ext4 mapping its new
    /// blocks under a journal handle), and the block layer's for each request the task
    /// submits — as cold as the caller's last sleep was long.
    fn fsync_entry_ns(&self, tid: u32, dev: u16) -> Ns {
        let fs = self.cfg.devices[dev as usize].fs.as_ref().map(|m| m.fs);
        let idle = self.tasks[tid as usize].slept;
        let cost = |(hot, cold): (Ns, Ns)| cold_cost(hot, cold, idle);
        let mut ns = match fs {
            Some(FsKind::Xfs) => cost(XFS_FSYNC_NS),
            Some(_) => cost(EXT4_FSYNC_NS),
            None => 0,
        };
        let mut maps = false;
        let mut pages = 0;
        let mut requests = 0;
        for &(d, id) in &self.tasks[tid as usize].pending {
            let rq = self.queues[d as usize].rq(id);
            requests += 1;
            pages += rq.nr_sectors / 8;
            maps |= rq.new_blocks;
        }
        if maps && matches!(fs, Some(FsKind::Ext4 | FsKind::Ext3)) {
            ns += cost(EXT4_MAP_BLOCKS_NS);
        }
        ns + requests * cost(FSYNC_SUBMIT_NS) + pages * WRITEBACK_NS_PER_PAGE
    }

    /// `__filemap_fdatawrite_range` of pages [`first`, `end`) of `ino` by task `tid`:
    /// `WB_SYNC_ALL` (`sync`) or `WB_SYNC_NONE`, which leaves pages under writeback alone.
    fn write_range(&mut self, tid: u32, ino: u32, first: u64, end: u64, sync: bool) {
        if first == 0 && end == u64::MAX {
            self.do_writepages(ino, 0, u64::MAX, Submitter::Task(tid), sync, false);
            return;
        }
        let mut idx = first;
        while let Some((s, n)) = self.inodes[ino as usize].mapping.next_dirty(idx, end.saturating_sub(idx)) {
            if s >= end {
                break;
            }
            let n = n.min(end - s);
            self.do_writepages(ino, s, n, Submitter::Task(tid), sync, false);
            idx = s + n;
        }
    }

    /// Wait on the writeback of pages [`first`, `end`) of `ino` (`filemap_fdatawait_range`),
    /// once the task's requests are submitted.
    fn wait_range(&mut self, tid: u32, dev: u16, ino: u32, first: u64, end: u64) -> Option<Phase> {
        let t = tid as usize;
        self.set_wait_range(tid, dev, ino, first, end);
        self.tasks[t].phase = Phase::WaitSync;
        if !self.task_submit_pending(tid) {
            return None;
        }
        Some(Phase::WaitSync)
    }

    /// The task's sync walk is to wait on pages [`first`, `end`) of `ino`.
    fn set_wait_range(&mut self, tid: u32, dev: u16, ino: u32, first: u64, end: u64) {
        self.tasks[tid as usize].sync = Some(SyncWait::Wait {
            all: false,
            dev,
            ino,
            index: first,
            end: self.inodes[ino as usize].mapping.end().min(end),
        });
    }

    /// `ksys_sync_file_range` on pages [`first`, `end`) of the task's file: wait for the
    /// writeback under way (`WAIT_BEFORE`), start writeback of the dirty pages (`WRITE`), wait
    /// for it (`WAIT_AFTER`) — data only: no metadata, no journal commit, no cache flush, so
    /// nothing is promised durable. All three are a data-integrity write since 5.2
    /// (`WB_SYNC_ALL`: a page dirtied again under writeback is waited for and written).
    pub(crate) fn ksys_sync_file_range(&mut self, tid: u32, first: u64, end: u64, f: SyncFileRange) -> Option<Phase> {
        let t = tid as usize;
        let ino = self.tasks[t].file;
        let dev = self.inodes[ino as usize].dev;
        let now = self.now();
        let task = &mut self.tasks[t];
        task.op_start = now;
        task.sync_range_only = true;
        task.sfr_writes = f.write_and_wait();
        task.sfr_then = None;
        task.sync_wait = (0, now, [0; 3]);
        if f.write_and_wait() {
            self.write_range(tid, ino, first, end, true);
            return self.wait_range(tid, dev, ino, first, end);
        }
        if f.wait_before {
            // The write (and the second wait) come when this wait ends (`sync_step`).
            self.tasks[t].sfr_then = Some((f.write, f.wait_after, first, end));
            return self.wait_range(tid, dev, ino, first, end);
        }
        self.sfr_write_then_wait(tid, f.write, f.wait_after, first, end)
    }

    /// The rest of a sync_file_range of the task's file after its first wait: the write, then
    /// the last wait or the call's end.
    fn sfr_write_then_wait(&mut self, tid: u32, write: bool, wait: bool, first: u64, end: u64) -> Option<Phase> {
        let ino = self.tasks[tid as usize].file;
        let dev = self.inodes[ino as usize].dev;
        if write {
            self.write_range(tid, ino, first, end, false);
        }
        if wait {
            return self.wait_range(tid, dev, ino, first, end);
        }
        self.tasks[tid as usize].sync = None;
        if !self.task_submit_pending(tid) {
            // Its requests wait for a tag: the call returns once they are submitted.
            self.tasks[tid as usize].phase = Phase::WaitSync;
            return None;
        }
        self.sync_done(tid)
    }

    /// sync(): wake every flusher, then sync the devices one after the other.
    pub(crate) fn ksys_sync(&mut self, tid: u32) -> Option<Phase> {
        self.tasks[tid as usize].op_start = self.now();
        self.tasks[tid as usize].datasync = false;
        self.tasks[tid as usize].sync_range_only = false;
        self.tasks[tid as usize].sync_wait = (0, self.now(), [0; 3]);
        self.durability_begin(tid, None);
        self.wakeup_flusher_threads(WbReason::Sync);
        self.sync_inodes_sb(tid, 0);
        Some(Phase::WaitSync)
    }

    /// `sync_inodes_sb` of device `dev`: queue its WB_SYNC_ALL work with `tid` as the waiter.
    fn sync_inodes_sb(&mut self, tid: u32, dev: u16) {
        let work = WbWork {
            nr_pages: i64::MAX,
            sync_all: true,
            for_kupdate: false,
            for_background: false,
            reason: WbReason::Sync,
            waiter: Some(tid),
        };
        // `bdi_split_work_to_wbs`: one work per wb of the bdi (its root wb, then its cgroups').
        let wbs: Vec<u16> = (0..self.wbs.len() as u16).filter(|&w| self.wbs[w as usize].dev == dev).collect();
        self.tasks[tid as usize].sync = Some(SyncWait::Work {
            dev,
            left: wbs.len() as u16,
        });
        for w in wbs {
            self.wb_queue_work(w, work);
        }
    }

    /// A flusher finished a sync work `tid` waits for (`complete(work->done)`); the task goes
    /// on when every wb of the device has.
    pub(crate) fn sync_work_done(&mut self, tid: u32) {
        if let Some(SyncWait::Work { left, .. }) = self.tasks[tid as usize].sync.as_mut() {
            *left -= 1;
            if *left == 0 {
                self.wake_task(tid);
            }
        }
    }

    /// Advance the task's fsync()/sync(): the next wait, or the end of the call.
    pub(crate) fn sync_step(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        loop {
            match self.tasks[t].sync {
                None if self.tasks[t].sync_range_only => {
                    // sync_file_range: its data steps only.
                    if let Some((write, wait, first, end)) = self.tasks[t].sfr_then.take() {
                        match self.sfr_write_then_wait(tid, write, wait, first, end) {
                            Some(Phase::WaitSync) => continue,
                            other => return other,
                        }
                    }
                    return self.sync_done(tid);
                }
                None => {
                    let only = self.sync_device(tid);
                    self.sync_wait_now(tid, 1);
                    if self.journal_force(tid, only) {
                        return None;
                    }
                    self.sync_wait_now(tid, 2);
                    if self.issue_cache_flushes(tid, None) {
                        return None;
                    }
                    return self.sync_done(tid);
                }
                Some(SyncWait::Commit { left: 0, since }) => {
                    self.sync_wait_now(tid, 2);
                    if self.issue_cache_flushes(tid, Some(since)) {
                        return None;
                    }
                    // Every device's flush came with its commit.
                    self.tasks[t].sync = Some(SyncWait::Flush { left: 0 });
                    return self.sync_done(tid);
                }
                Some(SyncWait::Commit { .. }) => return None,
                Some(SyncWait::Flush { left: 0 }) => return self.sync_done(tid),
                Some(SyncWait::Flush { .. }) => return None,
                Some(SyncWait::Work { left: 1.., .. }) => return None,
                Some(SyncWait::Work { dev, left: 0 }) => {
                    if !self.sync_walk_inode(tid, dev, 0) {
                        return None;
                    }
                }
                Some(SyncWait::Wait { all, dev, ino, index, end }) => {
                    let m = &self.inodes[ino as usize].mapping;
                    // A wait of sync_file_range without all its flags only waits: the dirty
                    // pages it meets are not its to write.
                    let writes = !self.tasks[t].sync_range_only || self.tasks[t].sfr_writes;
                    match m.next_matching(index, end, |st| {
                        (writes && st.is_dirty()) || st.under_writeback() || st == PageState::Queued
                    }) {
                        // Under writeback, or taken by a writepages call whose request waits
                        // to be submitted: it will be written, wait for that.
                        Some((page, _, st)) if st.under_writeback() || st == PageState::Queued => {
                            self.set_walk(tid, all, dev, ino, page, end);
                            self.page_wait(tid, ino, page, PG_WRITEBACK, WaitSite::WaitOnPageBit, false);
                            return None;
                        }
                        Some((page, len, _)) => {
                            // Dirty again after its writeback (or never written by the work):
                            // write it now, then wait on it.
                            self.set_walk(tid, all, dev, ino, page, end);
                            self.do_writepages(ino, page, len, Submitter::Task(tid), true, false);
                            if !self.task_submit_pending(tid) {
                                return None;
                            }
                        }
                        None if !all => self.tasks[t].sync = None,
                        None => {
                            if !self.sync_walk_inode(tid, dev, ino + 1) {
                                return None;
                            }
                        }
                    }
                }
            }
        }
    }

    /// The device an fsync is about (its file's); `None` for sync (every device).
    fn sync_device(&self, tid: u32) -> Option<u16> {
        let t = tid as usize;
        match self.tasks[t].job {
            JobConfig::Sync { .. } => None,
            _ => Some(self.inodes[self.tasks[t].file as usize].dev),
        }
    }

    /// The data of the call is on the devices: ask each device that caches writes for a flush
    /// (fsync: the file's device; sync: every device), as `blkdev_issue_flush` does at the end
    /// of `->fsync` and `->sync_fs`, unless the file system mounted with `barrier=0` or a
    /// journal commit queued its pre-flush after the data was written (`covered_since`).
    /// Returns whether the task now waits for one.
    fn issue_cache_flushes(&mut self, tid: u32, covered_since: Option<crate::Ns>) -> bool {
        let t = tid as usize;
        let only = self.sync_device(tid);
        let mut left = 0;
        for d in 0..self.queues.len() as u16 {
            if only.is_some_and(|o| o != d) || !self.fs_flushes(d) {
                continue;
            }
            if covered_since.is_some_and(|s| self.commit_flushed_since(d, s)) {
                continue;
            }
            self.blk_flush(d, tid, false);
            left += 1;
        }
        if left == 0 {
            return false;
        }
        self.tasks[t].sync = Some(SyncWait::Flush { left });
        true
    }

    /// A cache flush that task `tid` waited for completed.
    pub(crate) fn cache_flushed(&mut self, tid: u32) {
        if let Some(SyncWait::Flush { left }) = self.tasks[tid as usize].sync.as_mut() {
            *left -= 1;
            if *left == 0 {
                self.wake_task(tid);
            }
        }
    }

    fn set_walk(&mut self, tid: u32, all: bool, dev: u16, ino: u32, index: u64, end: u64) {
        self.tasks[tid as usize].sync = Some(SyncWait::Wait { all, dev, ino, index, end });
    }

    /// sync(): walk the first inode with pages at or after `from` on `dev`, or move on to the
    /// next device. False when the task now waits for that device's work.
    fn sync_walk_inode(&mut self, tid: u32, dev: u16, from: u32) -> bool {
        match self.next_inode_with_pages(dev, from) {
            Some(ino) => {
                let end = self.inodes[ino as usize].mapping.end();
                self.set_walk(tid, true, dev, ino, 0, end);
                true
            }
            None => self.sync_next_device(tid, dev),
        }
    }

    /// sync() is done with device `dev`: queue the next device's work (false: the task now
    /// waits for it) or end the walk (true: the call is complete).
    fn sync_next_device(&mut self, tid: u32, dev: u16) -> bool {
        if (dev as usize) + 1 < self.queues.len() {
            self.sync_inodes_sb(tid, dev + 1);
            return false;
        }
        self.tasks[tid as usize].sync = None;
        true
    }

    /// The first inode at or after `from` on device `dev` with pages in the cache (the
    /// `wait_sb_inodes` walk skips inodes without pages).
    fn next_inode_with_pages(&self, dev: u16, from: u32) -> Option<u32> {
        (from as usize..self.inodes.len())
            .find(|&i| self.inodes[i].dev == dev && self.inodes[i].mapping.nr_pages > 0)
            .map(|i| i as u32)
    }

    /// The sync call of `tid` moves on to wait `next` (1: the journal, 2: the cache flush):
    /// the time since the last move goes to the wait it leaves.
    fn sync_wait_now(&mut self, tid: u32, next: usize) {
        let now = self.now();
        let (cur, since, parts) = &mut self.tasks[tid as usize].sync_wait;
        parts[*cur] += now - *since;
        (*cur, *since) = (next, now);
    }

    /// The call returns: check durability, record its latency, go on with the job.
    fn sync_done(&mut self, tid: u32) -> Option<Phase> {
        self.durability_end(tid);
        self.sync_wait_now(tid, 0);
        let now = self.now();
        let task = &mut self.tasks[tid as usize];
        task.sync_parts.record(task.sync_wait.2);
        task.record_op(now, now - task.op_start);
        if task.fio.is_some() {
            return self.fio_sync_done(tid);
        }
        match task.job {
            JobConfig::Fsync { interval, .. } | JobConfig::Sync { interval } => {
                self.think_until_due(tid, interval);
                None
            }
            _ => Some(Phase::NextOp),
        }
    }
}
