//! ext4 fast commits (`fs/ext4/fast_commit.c`, 5.10+, `mkfs.ext4 -O fast_commit`): an fsync
//! whose inode's changes since the last full commit can be described as a delta writes them
//! to the fast-commit area after the log — one block for one inode — as a REQ_PREFLUSH |
//! REQ_FUA write, and returns without waiting for the running transaction to commit
//! (`ext4_fc_commit` → `ext4_fc_perform_commit`). The full commit still comes, by its timer.
//!
//! Every fsync whose transaction is still running writes one, whether or not its inode changed
//! since the last (`jbd2_fc_begin_commit` skips only a committed transaction): where most
//! fsyncs would otherwise find their transaction committed and only flush — overwrites, whose
//! mtime changes once a tick — fast commits make them slower. Measured on 6.18 (validation
//! v22 against v27): 0.16 ms against 0.35 ms at the median.
//!
//! It falls back to the full commit (`jbd2_complete_transaction`) when the transaction it needs
//! is already committing (`jbd2_fc_begin_commit` says -EALREADY) or when the transaction holds
//! a change fast commits cannot replay (a rename: `ext4_fc_mark_ineligible`). One fast commit
//! is written at a time; fsyncs that arrive meanwhile are served together by the next, as
//! the kernel's next `ext4_fc_commit` writes every inode on its list.
//!
//! The fast-commit area is 256 blocks after the log, and each fast commit ends on a block
//! boundary, so about every 256th fsync finds it full and falls back to a full commit, which
//! empties it (`jbd2_fc_get_buf`'s error; `j_fc_off` reset by the commit). Measured on 6.18
//! (v27): 0.0039 full commits per fsync.
//!
//! Simplified: the block is queued by the journal's submitter rather than the fsyncing task;
//! a full commit does not wait for a fast commit in progress; fsyncs queued behind a running
//! fast commit are written by it even when that overruns the area by a block.

use crate::block::queue::Submitter;
use crate::drivers::Op;
use crate::fs::jbd2::{FastCommits, FC_WAITER, JOURNAL_WAITER};
use crate::machine::Machine;

/// `ckpt_tid` of the request carrying a fast-commit block.
pub(crate) const FC_WRITE: u32 = u32::MAX;

impl Machine {
    /// `ext4_fc_commit` for task `tid`'s fsync of `ino`, which needs transaction `need` of
    /// `dev`'s journal: true when it goes as a fast commit (the task now waits for it), false
    /// when it must wait for the full commit.
    pub(crate) fn fast_commit(&mut self, tid: u32, dev: u16, ino: u32, need: u32) -> bool {
        let Some(j) = self.journals[dev as usize].as_mut() else {
            return false;
        };
        if !j.p.fast_commit {
            return false;
        }
        if j.running.as_ref().is_none_or(|t| t.tid != need) || j.fc.ineligible_tid >= need || !j.fc.fits(1) {
            j.stats.fc_fallbacks += 1;
            return false;
        }
        if !j.fc.running.is_empty() {
            j.fc.queued.push((tid, ino, 0));
            return true;
        }
        j.fc.running.push((tid, ino, 0));
        self.fc_start(dev);
        true
    }

    /// The tail block is REQ_PREFLUSH | REQ_FUA: its pre-flush first, which also covers the
    /// data the fsyncs wrote (so no flush follows: the transaction "will send a barrier").
    fn fc_start(&mut self, dev: u16) {
        let now = self.now();
        let j = self.journals[dev as usize].as_mut().expect("journal");
        // Each inode is logged as it is now.
        for e in &mut j.fc.running {
            e.2 = self.inodes[e.1 as usize].meta_seq;
        }
        j.fc.written = false;
        j.fc.used += FastCommits::blocks_for(j.fc.running.len());
        j.last_barrier_at = Some(now);
        self.blk_flush(dev, JOURNAL_WAITER | FC_WAITER | dev as u32, false);
    }

    /// A flush of the fast commit completed: after the pre-flush, write the block; after the
    /// post-flush that stands for FUA on a device without it, the commit is done.
    pub(crate) fn fast_commit_flushed(&mut self, dev: u16) {
        let d = dev as usize;
        let j = self.journals[d].as_ref().expect("journal");
        if j.fc.written {
            self.fast_commit_done(dev);
            return;
        }
        // The fast-commit area follows the log (`j_fc_first`); this commit's last block.
        let sector = j.area_start + j.area_len + 8 * (j.fc.used.max(1) - 1) as u64;
        let fua = self.queues[d].supports_fua();
        let id = self.queues[d].alloc(Op::Write, sector, 8, None, Submitter::Journal(dev), true, false, false, false);
        let r = self.queues[d].rq_mut(id);
        r.wbt_tracked = false;
        r.fua = fua;
        // REQ_PREFLUSH | REQ_FUA: its pre-flush is done, the block follows it past the elevator.
        r.flush_seq = true;
        r.ckpt_tid = FC_WRITE;
        r.log_sectors = 8;
        self.journals[d]
            .as_mut()
            .expect("journal")
            .pending
            .push_back(crate::fs::jbd2::JournalIo::Rq(id));
        self.journal_submit(dev);
    }

    /// The fast-commit block is written: done with FUA, else after a post-flush.
    pub(crate) fn fast_commit_written(&mut self, dev: u16) {
        let d = dev as usize;
        self.journals[d].as_mut().expect("journal").fc.written = true;
        if self.queues[d].supports_fua() || !self.fs_flushes(dev) {
            self.fast_commit_done(dev);
        } else {
            self.blk_flush(dev, JOURNAL_WAITER | FC_WAITER | dev as u32, true);
        }
    }

    /// The fast commit is on stable storage: its inodes' changes up to the transactions their
    /// fsyncs needed are durable; those fsyncs go on; the next fast commit starts.
    fn fast_commit_done(&mut self, dev: u16) {
        let j = self.journals[dev as usize].as_mut().expect("journal");
        j.stats.fast_commits += 1;
        let served = std::mem::take(&mut j.fc.running);
        let next = std::mem::take(&mut j.fc.queued);
        for &(_, ino, seq) in &served {
            let inode = &mut self.inodes[ino as usize];
            inode.fc_seq = inode.fc_seq.max(seq);
        }
        for (task, ..) in served {
            self.commit_waited(task);
        }
        if !next.is_empty() {
            self.journals[dev as usize].as_mut().expect("journal").fc.running = next;
            self.fc_start(dev);
        }
    }
}
