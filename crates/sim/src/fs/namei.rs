//! rename() for the `replace` job (`fs/namei.c` → `ext4_rename`): the new content, written
//! to a temporary file, replaces the file. On ext4 with `auto_da_alloc` (the default) the
//! rename starts writeback of the renamed file's delayed-allocation data at once
//! (`ext4_alloc_da_blocks` → `filemap_flush`), so that after a crash the file holds the old
//! or the new content, not a zero-length file; it does not wait for that writeback.

use crate::block::queue::Submitter;
use crate::config::JobConfig;
use crate::kernel::task::Phase;
use crate::machine::Machine;

impl Machine {
    /// `vfs_rename` of the task's freshly written file over its target.
    pub(crate) fn vfs_rename(&mut self, tid: u32) -> Option<Phase> {
        let ino = self.tasks[tid as usize].file;
        if !self.journal_rename(tid, ino) {
            return None;
        }
        let dev = self.inodes[ino as usize].dev;
        if self.journal(dev).is_some_and(|j| j.p.auto_da_alloc) {
            self.do_writepages(ino, 0, u64::MAX, Submitter::Task(tid), false, false);
        }
        self.tasks[tid as usize].phase = Phase::Renamed;
        if !self.task_submit_pending(tid) {
            return None;
        }
        Some(Phase::Renamed)
    }

    /// The replacement is done: its latency is the write and the rename; the next one is due
    /// `interval` after this one was.
    pub(crate) fn rename_done(&mut self, tid: u32) -> Option<Phase> {
        let now = self.now();
        let task = &mut self.tasks[tid as usize];
        task.record_op(now, now - task.op_start);
        let JobConfig::Replace { interval, .. } = task.job else {
            unreachable!("only the replace job renames")
        };
        self.think_until_due(tid, interval);
        None
    }
}
