//! The journal of a device's file system: jbd2 for ext4 (`fs/jbd2/`), jbd for ext3, and
//! xfs's delayed log (the CIL, `fs/xfs/xfs_log_cil.c`) in the same shape: a running
//! transaction collects the metadata blocks that handles change; a commit writes them to the
//! log area and ends with a commit record behind a cache flush.
//!
//! What makes fsync slow under a copy, and what this module models:
//! - **Commits are serial** (one committing transaction at a time) and an fsync waits for the
//!   commit of the transaction that last touched its inode (`jbd2_complete_transaction`,
//!   `xfs_log_force_seq`).
//! - **T_LOCKED** (jbd2 only): a commit first waits until every open handle has stopped
//!   (`jbd2_journal_wait_updates`), and meanwhile no new handle may start. ext4's writeback
//!   holds a handle while it maps an extent and submits its bios
//!   (`mpage_map_and_submit_extent`), so a flusher asleep on a tag or in blk-wbt holds the
//!   commit, and every writer's next `write()` that must update the inode waits behind it.
//! - **Ordered data**: ext3's `data=ordered` writes, at commit, every dirty page of the files
//!   the transaction touched and waits for them (`journal_submit_data_buffers`); ext4 without
//!   `dioread_nolock` waits for the writeback its allocations started; ext4 with
//!   `dioread_nolock` (5.6+) and xfs order nothing.
//! - **Log I/O**: descriptor and metadata blocks (jbd2) or iclogs of `logbsize` (xfs) are
//!   REQ_SYNC writes to the log area in the middle of the device; then, with barriers, a
//!   pre-flush and the commit record as a FUA write, or followed by a flush where the device
//!   takes no FUA (loop, USB, md), as blk-flush does.
//!
//! - **Checkpointing**: a committed transaction's metadata is written home
//!   `dirty_expire_centisecs` after the commit (the newest copy of each block only), and its
//!   log space frees once it and every older transaction are home.
//!
//!   A task's new handle waits for a forced checkpoint when the log is full.
//!
//! Simplified (listed in docs/model-scope.md): handles are counted, not their credits; the
//! flusher's handle joins the next transaction instead of waiting out
//! T_LOCKED; xfs's CIL is pushed only by fsync, sync and its 30 s worker.

use crate::config::{Atime, DataMode, FsKind, MountConfig};
use crate::Ns;
use std::collections::VecDeque;

/// The set of metadata blocks a transaction holds: hashed with a fixed seed (foldhash), as
/// cheap as hashing gets and the same on every run; nothing reads it in hash order without
/// sorting first.
pub(crate) type BlockSet = std::collections::HashSet<MetaBlock, foldhash::fast::FixedState>;

/// Bit marking a flush waiter as a journal (the rest is the device index), not a task.
pub(crate) const JOURNAL_WAITER: u32 = 1 << 31;
/// With [`JOURNAL_WAITER`]: the flush is a fast commit's (`fs/fast_commit.rs`).
pub(crate) const FC_WAITER: u32 = 1 << 30;
/// `MAX_WRITEPAGES_EXTENT_LEN`: ext4 maps at most 2048 blocks under one handle.
pub(crate) const EXTENT_PAGES_PER_HANDLE: u64 = 2048;
/// jbd2 tags per 4 KiB descriptor block (csum v3: 16-byte tags).
const TAGS_PER_DESCRIPTOR: u64 = 253;
/// Inodes per 4 KiB inode-table block (256-byte inodes).
const INODES_PER_BLOCK: u64 = 16;
/// Bytes an xfs log item takes in the log: an inode (core, fork, format header), a buffer
/// (a few 128-byte dirty chunks plus its format header).
const XFS_INODE_ITEM: u64 = 320;
const XFS_BUF_ITEM: u64 = 640;
/// An iclog's header (one basic block).
const XFS_ICLOG_HEADER: u64 = 512;

/// What a handle changed, as a metadata block of the running transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum MetaBlock {
    /// An inode-table block (`ext4_mark_inode_dirty`), by its index ([`inode_block`]).
    Inode(u32),
    /// A block group's block bitmap (`ext4_mb_mark_diskspace_used`).
    Bitmap(u64),
    /// The group descriptor block of a group (64 descriptors to a block).
    GroupDesc(u64),
    /// An inode-table block of a metadata job's tree (its mapping, its page there).
    TreeInode(u32, u64),
    /// A block group's inode bitmap (file creation).
    InodeBitmap(u64),
    /// The block of the mount point's directory that holds the new entries.
    RootDir,
}

/// The journal's kind and settings, from the file system and its mount options.
#[derive(Clone, Debug)]
pub(crate) struct JournalParams {
    pub fs: FsKind,
    /// A commit waits for open handles and blocks new ones (jbd2/jbd: yes; xfs CIL: no).
    pub locks_handles: bool,
    /// Every `write()` starts a handle (ext3 allocates blocks in write_begin); ext4 and xfs
    /// only when the inode's times change (once a tick).
    pub handle_per_write: bool,
    pub ordered: Ordered,
    pub commit_interval: Ns,
    pub barrier: bool,
    pub async_commit: bool,
    pub atime: Atime,
    pub logbsize: u64,
    /// ext4 `auto_da_alloc`: a rename over a file flushes the renamed file's delalloc data.
    pub auto_da_alloc: bool,
    /// `data=journal`: every `write()` journals the pages it wrote.
    pub journal_data: bool,
    /// ext4 fast commits (off with data=journal, which ext4 refuses them for).
    pub fast_commit: bool,
}

/// What a commit does with file data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ordered {
    /// Nothing (data=writeback, ext4 with dioread_nolock, xfs).
    None,
    /// Wait for the writeback the transaction's allocations started (ext4 data=ordered
    /// without dioread_nolock: `ext4_jbd2_inode_add_wait`).
    WaitAllocated,
    /// Write every dirty page of the transaction's files, then wait (ext3 data=ordered).
    WriteAll,
}

impl JournalParams {
    pub(crate) fn new(m: &MountConfig) -> Self {
        let ordered = match (m.fs, m.data) {
            (FsKind::Ext3, DataMode::Ordered) => Ordered::WriteAll,
            (FsKind::Ext4, DataMode::Ordered) if !m.dioread_nolock => Ordered::WaitAllocated,
            _ => Ordered::None,
        };
        let journal_data = m.data == DataMode::Journal && m.fs != FsKind::Xfs;
        JournalParams {
            fs: m.fs,
            locks_handles: m.fs != FsKind::Xfs,
            // data=journal has no delayed allocation: write_begin starts a handle, as ext3's.
            handle_per_write: m.fs == FsKind::Ext3 || journal_data,
            ordered,
            commit_interval: m.commit_interval,
            barrier: m.barrier,
            async_commit: m.journal_async_commit,
            atime: m.atime,
            logbsize: m.logbsize,
            auto_da_alloc: m.fs == FsKind::Ext4 && m.auto_da_alloc && !journal_data,
            journal_data,
            fast_commit: m.fs == FsKind::Ext4 && m.fast_commit && !journal_data,
        }
    }
}

/// A running transaction (`transaction_t` in T_RUNNING).
#[derive(Debug)]
pub(crate) struct Txn {
    pub tid: u32,
    pub created: Ns,
    /// `t_expires`: the commit timer's deadline.
    pub expires: Ns,
    /// First commit request (`t_requested`).
    pub requested: Option<Ns>,
    pub blocks: BlockSet,
    /// Inodes on `t_inode_list` (ordered data).
    pub ordered: Vec<u32>,
    /// Handles started in it (`t_handle_count`).
    pub handles: u32,
    /// Longest a handle waited for it to exist (`t_max_wait`).
    pub max_wait: Ns,
    /// Data blocks journalled by `write()` with `data=journal`.
    pub data_blocks: u64,
}

/// Where a commit is (`t_state` of the committing transaction, with the commit record's
/// steps spelled out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommitPhase {
    /// T_LOCKED: waiting for open handles to stop.
    Locked,
    /// T_FLUSH: ordered data written and waited for.
    Flushing,
    /// T_COMMIT: descriptor and metadata blocks (or iclogs) in flight.
    Logging,
    /// The pre-flush before the commit record (xfs: before the checkpoint's iclogs).
    PreFlush,
    /// The commit record in flight.
    Record,
    /// The flush after the record on a device without FUA (or async_commit's single flush).
    PostFlush,
}

#[derive(Debug)]
pub(crate) struct Commit {
    pub txn: Txn,
    pub phase: CommitPhase,
    pub locked_at: Ns,
    pub flushing_at: Ns,
    pub logging_at: Ns,
    /// Log sectors in flight.
    pub io_left: u64,
    /// Ordered inodes and the count of their completed pages to reach.
    pub ordered_targets: Vec<(u32, u64)>,
    /// How many targets from the front are known met (a written count only grows).
    pub ordered_met: usize,
    /// Blocks written to the log, descriptors and commit block included.
    pub blocks_logged: u64,
    /// Home 4 KiB blocks of the metadata being written to the log (BH_Shadow), sorted: a
    /// handle that changes one of them waits until the log write is done.
    pub shadow: Vec<u64>,
    /// Sectors of the write that carries REQ_PREFLUSH | REQ_FUA: jbd2's commit block (8), or
    /// xfs's iclogs, the whole checkpoint (xfs writes no commit block apart).
    pub record_sectors: u64,
    /// When the journal thread will have built the log write ([`JBD2_LOG_PREP_NS`] after the
    /// logging phase began); `None` before.
    pub log_ready_at: Option<Ns>,
}

impl Commit {
    /// How many ordered targets from the front are met by `inodes`' written counts: the
    /// known ones, and those met since.
    pub fn ordered_met_now(&self, inodes: &[crate::fs::inode::Inode]) -> usize {
        let rest = &self.ordered_targets[self.ordered_met..];
        let unmet = rest.iter().position(|&(ino, target)| inodes[ino as usize].nr_written < target);
        self.ordered_met + unmet.unwrap_or(rest.len())
    }
}

/// The journal thread's work from the start of a commit to its first log block's bio
/// (`jbd2_journal_commit_transaction`: locking and flushing the transaction, the descriptor
/// block, copying each metadata buffer to the log), ns, hot and cold
/// ([`crate::kernel::cpu::cold_cost`] of the time since its last commit ended). Measured on
/// this lab's 6.18 guest (ftrace, `jbd2_start_commit` to the first `block_bio_queue` of the
/// journal thread, 3–5 blocks logged, 2026-12-04, `validation/measured/fsync-steps/`): 18–23 µs
/// with a commit every 10 or 100 ms, 10 µs with one every millisecond. How it grows with the
/// blocks logged these commits do not say.
pub(crate) const JBD2_LOG_PREP_NS: (Ns, Ns) = (8_000, 20_000);

/// A committed transaction whose metadata is not yet written home (on the checkpoint list).
#[derive(Debug)]
pub(crate) struct Checkpoint {
    pub tid: u32,
    /// Log blocks it holds until it is checkpointed (and every older one is).
    pub logged: u64,
    /// Its metadata blocks not journalled again by a later transaction.
    pub blocks: Vec<MetaBlock>,
    pub committed: Ns,
    /// Home writes in flight.
    pub writing: u32,
}

/// Per-journal counters for the summary.
#[derive(Clone, Debug, Default)]
pub(crate) struct JournalStats {
    pub commits: u64,
    pub blocks_logged: u64,
    pub commit_ns_total: Ns,
    pub commit_ns_max: Ns,
    /// Time spent in each phase, summed over commits: T_LOCKED (waiting for handles),
    /// T_FLUSH (ordered data), logging (log blocks, flushes, commit record).
    pub locked_ns: Ns,
    pub flushing_ns: Ns,
    pub logging_ns: Ns,
    /// Time handles spent waiting for a locked transaction, summed over handles.
    pub handle_wait_ns: Ns,
    pub handle_waits: u64,
    /// Metadata blocks written home by checkpointing.
    pub checkpoint_blocks: u64,
    /// Fast commits written, and fsyncs that fell back to a full commit.
    pub fast_commits: u64,
    pub fc_fallbacks: u64,
}

/// The fast-commit machinery of an ext4 journal (`jbd2_fc_begin_commit` .. `_end_commit`).
#[derive(Debug, Default)]
pub(crate) struct FastCommits {
    /// A fast commit is being written: (task, inode, the inode's change count it logs).
    pub running: Vec<(u32, u32, u64)>,
    /// Fsyncs that asked while one was being written, served by the next.
    pub queued: Vec<(u32, u32, u64)>,
    /// The running fast commit's block is written (the flush now awaited is its post-flush).
    pub written: bool,
    /// The newest transaction a fast commit cannot describe (a rename): an fsync that needs it
    /// falls back to the full commit (`s_fc_ineligible_tid`).
    pub ineligible_tid: u32,
    /// Blocks of the fast-commit area written since the last full commit (`j_fc_off`).
    pub used: u32,
}

/// Blocks of the fast-commit area (`EXT4_NUM_FC_BLKS`, what mkfs gives by default).
pub(crate) const FC_AREA_BLOCKS: u32 = 256;

/// Bytes one inode takes in a fast commit: its inode record (the on-disk inode, 256 bytes
/// on today's mkfs) and its range and tag headers.
const FC_INODE_BYTES: u32 = 320;

impl FastCommits {
    /// Blocks a fast commit of `inodes` inodes writes: its records then a tail that pads the
    /// last block (`ext4_fc_write_tail`), so at least one.
    pub(crate) fn blocks_for(inodes: usize) -> u32 {
        (inodes as u32 * FC_INODE_BYTES).div_ceil(4096).max(1)
    }

    /// Whether a fast commit of `inodes` inodes still fits before the next full commit
    /// (`jbd2_fc_get_buf` fails once `j_fc_off` reaches the area's end).
    pub(crate) fn fits(&self, inodes: usize) -> bool {
        self.used + Self::blocks_for(inodes) <= FC_AREA_BLOCKS
    }
}

/// One entry of the journal thread's submission list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JournalIo {
    /// A built request.
    Rq(u32),
    /// `pages` dirty pages of `ino` from `start`, taken for the commit's ordered writeout
    /// (`Queued`), whose requests are built [`ORDERED_BATCH_PAGES`] at a time as the run
    /// reaches the front of the list.
    Run { ino: u32, start: u64, pages: u64 },
}

/// How much of an ordered run, in pages, the commit builds requests for at once. jbd's commit
/// gathers its ordered data in batches of `j_wbufsize` buffers (a 4 KiB block's worth of 8-byte
/// block tags: 512, a page each where pages and blocks are 4 KiB), submits a batch and goes on
/// to the next; jbd2 writes each ordered inode through its
/// writepages, a bio at a time. Either way a commit of a gigabyte of data never holds a request
/// for each of its pages at once, and one that sleeps for a request slot has built no further.
pub(crate) const ORDERED_BATCH_PAGES: u64 = 512;

/// One device's journal.
#[derive(Debug)]
pub(crate) struct Journal {
    pub p: JournalParams,
    /// First sector of the log area and its length in sectors.
    pub area_start: u64,
    pub area_len: u64,
    /// Next log sector, relative to `area_start`.
    pub head: u64,
    /// tid the next transaction gets (`j_transaction_sequence`).
    pub next_tid: u32,
    /// Last committed tid (`j_commit_sequence`); 0 before the first commit.
    pub commit_sequence: u32,
    /// Highest tid someone asked to commit (`j_commit_request`).
    pub commit_request: u32,
    pub running: Option<Txn>,
    pub committing: Option<Commit>,
    /// Tasks waiting for a commit: (task, tid it needs).
    pub commit_waiters: Vec<(u32, u32)>,
    /// Tasks waiting for the locked transaction to reach T_FLUSH: (task, since).
    pub locked_waiters: Vec<(u32, Ns)>,
    /// Tasks waiting for a checkpoint to free log space: (task, since).
    pub space_waiters: Vec<(u32, Ns)>,
    /// Writeback submitters waiting for it to start the handle of their next bios.
    pub locked_submitters: Vec<(crate::block::request::Submitter, Ns)>,
    /// Submitters whose next bios need blocks whose bitmap, group descriptor or inode the
    /// commit is writing to the log (BH_Shadow): they go on when the log write completes.
    pub shadow_submitters: Vec<(crate::block::request::Submitter, Ns)>,
    /// What the journal thread submits, in order: built requests (log blocks, checkpoint
    /// writes) and the ordered data's dirty runs, built when they reach the front.
    pub pending: VecDeque<JournalIo>,
    /// The journal thread sleeps on the front request (tag or wbt wait).
    pub blocked: bool,
    /// When the commit timer is armed.
    pub timer_at: Option<Ns>,
    /// When the last pre-flush of a commit was queued (a later fsync's data is not covered
    /// by an earlier flush: `jbd2_trans_will_send_data_barrier`).
    pub last_barrier_at: Option<Ns>,
    /// What the journal thread was woken for and will do once it runs ([`JournalWake`]
    /// bits); non-zero while a wake is pending.
    pub woken_for: u8,
    /// When the pending wake runs the thread.
    pub wake_at: crate::Ns,
    /// The pending wake is a `JournalWake` event. A wake for ordered data that is not all
    /// written yet is kept off the queue: the thread would find the commit unable to move
    /// and sleep again. It becomes an event once the data is written before its time
    /// (`Machine::ordered_written`) or the thread is woken for something else.
    pub wake_queued: bool,
    /// Every wake is an event at once (tests compare the two ways).
    pub wakes_all_queued: bool,
    /// Committed transactions, oldest first, until their metadata is home
    /// (`j_checkpoint_transactions`); the log from the oldest on is in use.
    pub checkpoints: VecDeque<Checkpoint>,
    /// When the checkpoint timer is armed.
    pub checkpoint_at: Option<Ns>,
    pub fc: FastCommits,
    pub stats: JournalStats,
    /// When its last commit ended (how warm its thread's path is).
    pub last_commit_end: Ns,
}

impl Journal {
    /// Whether a commit can start now: none is under way and the running transaction's was
    /// asked for.
    pub(crate) fn commit_due(&self) -> bool {
        self.committing.is_none() && self.running.as_ref().is_some_and(|t| t.tid <= self.commit_request)
    }

    /// A journal of `m` on a device of `capacity` sectors: the log sits in the middle of the
    /// device, where mke2fs (1.43+) and mkfs.xfs put it; its size is mke2fs's default for
    /// the file system's size (`ext2fs_default_journal_size`) unless `journal_size` says
    /// otherwise; xfs's is taken alike.
    pub(crate) fn new(m: &MountConfig, capacity: u64) -> Self {
        let bytes = capacity * 512;
        const M: u64 = 1 << 20;
        let log_bytes = m.journal_size.unwrap_or(match bytes {
            b if b < 1 << 30 => 16 * M,
            b if b < 2 << 30 => 32 * M,
            b if b < 16 << 30 => 64 * M,
            b if b < 32 << 30 => 128 * M,
            b if b < 64 << 30 => 256 * M,
            b if b < 128 << 30 => 512 * M,
            _ => 1024 * M,
        });
        let area_len = (log_bytes / 512).min(capacity / 4).max(8);
        Journal {
            p: JournalParams::new(m),
            area_start: (capacity / 2) & !7,
            area_len,
            head: 0,
            next_tid: 1,
            commit_sequence: 0,
            commit_request: 0,
            running: None,
            committing: None,
            commit_waiters: Vec::new(),
            locked_waiters: Vec::new(),
            space_waiters: Vec::new(),
            locked_submitters: Vec::new(),
            shadow_submitters: Vec::new(),
            pending: VecDeque::new(),
            blocked: false,
            timer_at: None,
            last_barrier_at: None,
            woken_for: 0,
            wake_at: 0,
            wake_queued: false,
            wakes_all_queued: false,
            checkpoints: VecDeque::new(),
            checkpoint_at: None,
            fc: FastCommits::default(),
            stats: JournalStats::default(),
            last_commit_end: 0,
        }
    }

    /// Whether the home block `block` (4 KiB units) is being written to the log (BH_Shadow):
    /// `do_get_write_access` must wait before a handle changes it. xfs relogs freely.
    pub(crate) fn shadowed(&self, block: u64) -> bool {
        self.committing.as_ref().is_some_and(|c| c.shadow.binary_search(&block).is_ok())
    }

    /// The transaction is locked: new handles wait (`start_this_handle` on T_LOCKED).
    pub(crate) fn handles_wait(&self) -> bool {
        self.p.locks_handles && self.committing.as_ref().is_some_and(|c| c.phase == CommitPhase::Locked)
    }

    /// The running transaction, created by the first handle after a commit started
    /// (`jbd2_get_transaction`): its commit timer runs from now.
    pub(crate) fn running_txn(&mut self, now: Ns) -> &mut Txn {
        if self.running.is_none() {
            let tid = self.next_tid;
            self.next_tid += 1;
            self.running = Some(Txn {
                tid,
                created: now,
                expires: now + self.p.commit_interval,
                requested: None,
                blocks: BlockSet::default(),
                ordered: Vec::new(),
                handles: 0,
                max_wait: 0,
                data_blocks: 0,
            });
        }
        self.running.as_mut().expect("just made")
    }

    /// Record that a handle changed `blocks` of the running transaction.
    pub(crate) fn touch(&mut self, now: Ns, blocks: &[MetaBlock]) -> u32 {
        let t = self.running_txn(now);
        t.handles += 1;
        for b in blocks {
            t.blocks.insert(*b);
        }
        t.tid
    }

    /// `j_max_transaction_buffers`: a quarter of the log (a third from 6.10; the model keeps
    /// the older fraction for every release), in 4 KiB blocks.
    pub(crate) fn max_transaction_blocks(&self) -> usize {
        (self.area_len / 8 / 4) as usize
    }

    /// The running transaction holds as many blocks as one may: it must commit
    /// (`add_transaction_credits` asks for the commit and waits).
    pub(crate) fn running_full(&self) -> bool {
        self.running
            .as_ref()
            .is_some_and(|t| t.blocks.len() as u64 + t.data_blocks >= self.max_transaction_blocks() as u64)
    }

    /// Transaction `tid` committed: its metadata joins the checkpoint list, and a block it
    /// journalled again leaves the older transactions' lists (`__jbd2_journal_refile_buffer`:
    /// only the newest copy is written home).
    pub(crate) fn add_checkpoint(&mut self, tid: u32, blocks: &BlockSet, logged: u64, now: Ns) {
        for c in self.checkpoints.iter_mut() {
            c.blocks.retain(|b| !blocks.contains(b));
        }
        let mut mine: Vec<MetaBlock> = blocks.iter().copied().collect();
        // Home order (the elevator would sort them anyway); deterministic across runs.
        mine.sort_by_key(|b| (home_sector(*b), *b));
        self.checkpoints.push_back(Checkpoint {
            tid,
            logged,
            blocks: mine,
            committed: now,
            writing: 0,
        });
        self.advance_tail();
    }

    /// Drop checkpointed transactions from the front: their log space is free
    /// (`jbd2_cleanup_journal_tail`; space frees only from the oldest end).
    pub(crate) fn advance_tail(&mut self) {
        while self.checkpoints.front().is_some_and(|c| c.blocks.is_empty() && c.writing == 0) {
            self.checkpoints.pop_front();
        }
    }

    /// 4 KiB log blocks from the tail (oldest unchecked transaction) to the head.
    pub(crate) fn log_used(&self) -> u64 {
        self.checkpoints.iter().map(|c| c.logged).sum::<u64>() + self.committing.as_ref().map_or(0, |c| c.blocks_logged)
    }

    /// `jbd2_log_space_left` is below what a transaction may need: a new handle must wait for
    /// a checkpoint to free log space (`__jbd2_log_wait_for_space`).
    pub(crate) fn log_full(&self) -> bool {
        let total = self.area_len / 8;
        total.saturating_sub(self.log_used()) < self.max_transaction_blocks() as u64
    }

    /// Whether transaction `tid` is committed.
    pub(crate) fn committed(&self, tid: u32) -> bool {
        tid <= self.commit_sequence
    }

    /// Sectors of log a transaction of these blocks takes, and the blocks counted in
    /// `jbd2_run_stats`'s `blocks_logged` (jbd2) or the log's basic blocks (xfs).
    pub(crate) fn log_size(&self, blocks: &BlockSet, data_blocks: u64) -> (u64, u64) {
        let n = blocks.len() as u64 + data_blocks;
        if self.p.fs == FsKind::Xfs {
            let inodes = blocks
                .iter()
                .filter(|b| matches!(b, MetaBlock::Inode(_) | MetaBlock::TreeInode(..)))
                .count() as u64;
            let items = inodes * XFS_INODE_ITEM + (n - inodes) * XFS_BUF_ITEM;
            let iclog_data = self.p.logbsize - XFS_ICLOG_HEADER;
            let iclogs = items.div_ceil(iclog_data).max(1);
            let bytes = (items + iclogs * XFS_ICLOG_HEADER).div_ceil(512) * 512;
            return (bytes / 512, bytes / 512);
        }
        // Descriptors, metadata blocks, and the commit block (written apart).
        let logged = n + n.div_ceil(TAGS_PER_DESCRIPTOR);
        (logged * 8, logged + 1)
    }

    /// The largest piece of log one write carries: an iclog (xfs), else the device's limit.
    pub(crate) fn log_io_sectors(&self, max_sectors: u64) -> u64 {
        if self.p.fs == FsKind::Xfs {
            (self.p.logbsize / 512).min(max_sectors).max(1)
        } else {
            max_sectors.max(8)
        }
    }
}

/// The metadata blocks an allocation of blocks at `sector` changes: the file's inode (extent
/// tree and size), the group's bitmap and its descriptor.
pub(crate) fn alloc_blocks(ino: u32, sector: u64) -> [MetaBlock; 3] {
    let group = sector / (crate::fs::metadata::BLOCKS_PER_GROUP * 8);
    [inode_block(ino), MetaBlock::Bitmap(group), MetaBlock::GroupDesc(group / 64)]
}

/// The inode-table block of an inode: inodes sharing a block count once.
pub(crate) fn inode_block(ino: u32) -> MetaBlock {
    MetaBlock::Inode((ino as u64 / INODES_PER_BLOCK) as u32)
}

/// The page-wait "file" of device `dev`'s metadata buffers (its block device's mapping), so
/// buffer waits share the hashed page wait queues as they did in 2.6: far above any inode.
pub(crate) fn bdev_buffers(dev: u16) -> u32 {
    BDEV_BUFFERS - u32::from(dev)
}

/// [`bdev_buffers`] of device 0; those of the other devices count down from it.
pub(crate) const BDEV_BUFFERS: u32 = u32::MAX;

/// The device whose metadata buffers `file` stands for, if it is one of [`bdev_buffers`].
pub(crate) fn bdev_of(file: u32) -> Option<u16> {
    (file > BDEV_BUFFERS - (1 << 16)).then(|| (BDEV_BUFFERS - file) as u16)
}

/// The inode-table block `page` of a metadata job's tree (mapping `tree_file`), kept apart
/// from the files' inode blocks.
pub(crate) fn tree_inode_block(tree_file: u32, page: u64) -> MetaBlock {
    MetaBlock::TreeInode(tree_file, page)
}

/// Where a metadata block lives on the device, in sectors: group descriptors after the
/// superblock, a group's bitmap at its start, inode tables right after it. `None` for a
/// tree's block, which its mapping places (see `Machine::home_of`).
pub(crate) fn home_sector(b: MetaBlock) -> Option<u64> {
    let group_sectors = crate::fs::metadata::BLOCKS_PER_GROUP * 8;
    Some(match b {
        MetaBlock::GroupDesc(k) => 8 * (1 + k),
        MetaBlock::Bitmap(g) => g * group_sectors + 8,
        MetaBlock::Inode(k) => {
            let per_group = crate::fs::metadata::INODES_PER_GROUP / INODES_PER_BLOCK;
            let k = k as u64;
            (k / per_group) * group_sectors + 8 * (2 + k % per_group)
        }
        MetaBlock::InodeBitmap(g) => g * group_sectors + 16,
        // The root directory's first block: after the first group's bitmaps and inode table.
        MetaBlock::RootDir => 8 * (2 + crate::fs::metadata::INODES_PER_GROUP / INODES_PER_BLOCK + 1),
        MetaBlock::TreeInode(..) => return None,
    })
}

/// Why the journal thread was woken (bits of [`Journal::woken_for`]).
pub(crate) struct JournalWake;

impl JournalWake {
    /// A commit was asked for while it slept.
    pub(crate) const START: u8 = 1;
    /// The I/O a commit step waited for completed (ordered data, log blocks, the record).
    pub(crate) const ADVANCE: u8 = 2;
    /// The flush it waited for completed.
    pub(crate) const FLUSHED: u8 = 4;
}

/// `round_jiffies_up` of an absolute time: the next whole second (the commit timer's
/// alignment).
pub(crate) fn round_up_to_second(t: Ns) -> Ns {
    t.div_ceil(crate::engine::time::NSEC_PER_SEC) * crate::engine::time::NSEC_PER_SEC
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generations::Version;

    fn journal(capacity_bytes: u64) -> Journal {
        Journal::new(&MountConfig::defaults(FsKind::Ext4, Version(6, 18, 0)), capacity_bytes / 512)
    }

    #[test]
    fn the_log_is_mke2fs_sized_and_in_the_middle() {
        let j = journal(2 << 30);
        assert_eq!(j.area_len * 512, 64 << 20, "64 MiB below 16 GiB");
        assert_eq!(j.area_start * 512, 1 << 30);
        assert_eq!(journal(512 << 20).area_len * 512, 16 << 20);
    }

    #[test]
    fn a_transaction_outgrowing_a_quarter_of_the_log_is_full() {
        let mut j = journal(512 << 20);
        let max = j.max_transaction_blocks();
        assert_eq!(max, 1024, "16 MiB of 4 KiB blocks / 4");
        for ino in 0..(max as u32 - 1) * INODES_PER_BLOCK as u32 {
            j.touch(0, &[inode_block(ino)]);
        }
        assert!(!j.running_full());
        j.touch(0, &[inode_block(max as u32 * INODES_PER_BLOCK as u32)]);
        assert!(j.running_full());
    }

    #[test]
    fn log_space_frees_from_the_oldest_transaction_and_refiled_blocks_go_home_once() {
        let mut j = journal(512 << 20);
        let total = j.area_len / 8;
        let max = j.max_transaction_blocks() as u64;
        let set = |blocks: &[MetaBlock]| blocks.iter().copied().collect::<BlockSet>();
        // Transaction 1 journals a bitmap nobody journals again; 2 and 3 share an inode block.
        j.add_checkpoint(1, &set(&[MetaBlock::Bitmap(7)]), total - max - 10, 0);
        j.add_checkpoint(2, &set(&[inode_block(1)]), 5, 0);
        j.add_checkpoint(3, &set(&[inode_block(1)]), 6, 0);
        assert!(j.log_full(), "fewer than a transaction's worth of blocks left");
        // The inode block left 2's list (3 has the newer copy), but 2 cannot free its space
        // before 1 does: the log frees from the tail.
        assert!(j.checkpoints[1].blocks.is_empty());
        assert_eq!(j.checkpoints.len(), 3);
        j.checkpoints[0].blocks.clear();
        j.advance_tail();
        // 1 went home: 1 and the emptied 2 leave; 3 still holds its 6 blocks.
        assert_eq!(j.checkpoints.iter().map(|c| c.tid).collect::<Vec<_>>(), vec![3]);
        assert_eq!(j.log_used(), 6);
        assert!(!j.log_full());
    }

    #[test]
    fn the_log_holds_descriptors_and_a_commit_block() {
        let mut j = journal(2 << 30);
        for ino in 0..300 * INODES_PER_BLOCK as u32 {
            j.touch(0, &[inode_block(ino)]);
        }
        let (sectors, logged) = j.log_size(&j.running.as_ref().unwrap().blocks, 0);
        // 300 blocks need two descriptors (253 tags each); the commit block is logged apart.
        assert_eq!((sectors, logged), (302 * 8, 303));
    }
}
