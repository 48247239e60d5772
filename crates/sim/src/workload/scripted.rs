//! The model's side of a scripted job kind (`jobs::Script`): each call the script returns
//! enters the path the kernel takes for it — `ksys_pwrite64` into the buffered write path,
//! `ksys_pread64` into the page cache's read path, `vfs_fsync` — and its completion comes
//! back through those paths' common ends (`write_op_done`, the read copy, `sync_done`),
//! which record it as one operation and ask for the next call.

use crate::config::JobConfig;
use crate::jobs::{Call, Progress};
use crate::kernel::task::Phase;
use crate::machine::Machine;

impl Machine {
    /// Start the scripted job's next call.
    pub(super) fn script_next(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let task = &mut self.tasks[t];
        let JobConfig::Scripted(job) = &task.job else {
            return self.task_done(tid);
        };
        let done = Progress {
            calls: task.calls,
            written: task.bytes_written,
            read: task.bytes_read,
        };
        let rng = &mut task.rng;
        let call = job.next(&done, &mut |n| rng.below(n));
        task.calls += 1;
        match call {
            Call::Write { offset, bytes } if bytes > 0 => {
                task.offset = offset;
                task.op_left = bytes;
                Some(Phase::FileModified)
            }
            Call::Read { offset, bytes } if bytes > 0 => {
                task.offset = offset;
                task.op_left = bytes;
                Some(Phase::FileAccessed)
            }
            Call::Fsync => self.vfs_fsync(tid),
            Call::Sleep(ns) if ns > 0 => {
                task.phase = Phase::Think;
                self.sleep_task(tid, ns);
                None
            }
            // An empty write, read or sleep returns at once.
            Call::Write { .. } | Call::Read { .. } | Call::Sleep(_) => Some(Phase::NextOp),
            Call::Exit => self.task_done(tid),
        }
    }
}
