//! Expiry: with periodic writeback on, dirty data does not outlive `dirty_expire` by more than
//! the flusher's period, unless the device is busy writing what was queued ahead of it.
//!
//! Every `period` the law marks each inode's cumulative dirtied count. At a mark, for each
//! device that is idle (no request anywhere in its queue, no NFS COMMIT pending, no flusher at
//! work for it), every inode must have had at least as many pages written or put under
//! writeback as it had dirtied by `bound` ago, where `bound` = expire + 2 × interval + 1 s
//! (kupdate runs every interval and writes what is older than expire; one more interval and a
//! second of slack for the flusher's own run). This assumes oldest-first cleaning, which is
//! what range-cyclic writeback does for the model's appending writers; writeback that cleans
//! newer pages first can only hide a violation, never invent one.
//!
//! 2.4 kernels use bdflush's `interval` and `age_buffer` (jiffies) for the same rule.

mod check;

use crate::Ns;

/// The marks of every inode's dirtied count, one row per mark, `slots` rows in a ring.
#[derive(Default)]
pub(crate) struct ExpiryMarks {
    /// Time between marks, ns (0: not set up yet).
    period: Ns,
    /// Marks between a mark and the one `bound` before it.
    lag: usize,
    next: Ns,
    /// Number of marks taken.
    taken: usize,
    rows: Vec<Vec<u64>>,
}
