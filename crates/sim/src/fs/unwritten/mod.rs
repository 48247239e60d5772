//! Unwritten extents: blocks a file owns whose contents were never written. `fallocate`
//! reserves them (fio's default `fallocate=posix` does it for every file it creates), ext4
//! with `dioread_nolock` (the default since 5.6) and xfs allocate writeback's and direct
//! writes' new blocks as unwritten too. They read as zeros; the write that reaches them is
//! followed, at I/O completion, by a conversion in a journal handle (ext4's end_io work,
//! `ext4_convert_unwritten_extents`; xfs's `xfs_iomap_write_unwritten`), a change to what
//! reading the data back needs, so `i_datasync_tid` moves with it and the next fdatasync
//! commits. An overwrite of written blocks converts nothing: its fdatasync is the data and a
//! cache flush.
//!
//! The model keeps each inode's unwritten pages as a set of page ranges
//! ([`crate::fs::inode::Inode::unwritten`]) and converts at the completion of the request
//! (buffered writeback) or of the whole direct write. A buffered writeback's pages end their
//! writeback only after the conversion work ran ([`EndIoWork`]: a kworker woken by the
//! completion, [`END_IO_CONVERT_NS`] later); a direct write's conversion takes no time. The
//! work is a delay, not CPU time taken from the machine's CPUs (a busy machine does not make
//! it later), and it never waits for a locked transaction (the kernel's can).

mod end_io;

use crate::Ns;

/// From the completion of a writeback request over unwritten extents to its pages' end of
/// writeback, ns, hot and cold ([`cold_cost`] of the time since the work last ran): ext4's
/// end_io work (`ext4_end_io_rsv_work`, a kworker woken from the completion) converts the
/// extents in a handle, then ends the pages' writeback, which wakes their waiters. Measured
/// on this lab's 6.18 guest (ftrace with the scheduler's events, an fsync of 64 KiB appended
/// every 10 or 100 ms on ext4 on a loop, `validation/measured/fsync-steps/`): 58–65 µs from
/// `block_rq_complete` to the fsync's wake-up, a kworker running 25–50 µs of it; with the
/// calls back to back (every ~1 ms) the whole step to the commit took 21 µs less.
pub const END_IO_CONVERT_NS: (Ns, Ns) = (28_000, 55_000);

/// A device's end_io work: the writeback pages waiting for their extents' conversion.
#[derive(Debug, Default)]
pub(crate) struct EndIoWork {
    /// (file, first page, pages) whose writeback ends when the work runs.
    items: Vec<(u32, u64, u64)>,
    /// Their pages, still under writeback (the laws count them).
    pub pages: u64,
    /// The work is queued to run ([`Event::EndIoWork`]).
    pub armed: bool,
    last_run: Ns,
}
