//! Durability: fsync(), fdatasync(), an O_SYNC/O_DSYNC write, `conv=fsync` and sync() return
//! only after every page that was dirty or under writeback at the call (in the call's range)
//! has completed writeback, and, where such a page lives on a device that caches writes, after
//! a cache flush of that device completed for the call; on a journalled file system, only
//! after the metadata needed to read the data back is durable too: the transaction that last
//! made such a change before the call (`i_datasync_tid`; for fsync and O_SYNC any change,
//! timestamps included, `i_sync_tid`) and every transaction that converted a promised page's
//! unwritten extent during the call are committed (or written by an ext4 fast commit).
//!
//! At the call the law notes the runs of dirty and writeback pages of the file (fsync) or of
//! every file (sync); from then on it logs the ranges dirtied again in those files and the
//! ranges converted, with their transaction. When the call returns, no noted page may still
//! be dirty or under writeback unless it was dirtied again after the call (which the call does
//! not promise to cover).

mod check;

use crate::Ns;
use std::collections::HashMap;

/// What one fsync()/sync() call promised: (inode, first page, pages) runs, and where each
/// inode's redirty log stood at the call.
struct Promise {
    what: &'static str,
    called: Ns,
    runs: Vec<(u32, u64, u64)>,
    log_from: Vec<(u32, usize)>,
    /// The file of an fsync/fdatasync, the transaction (and change count) its metadata
    /// needed at the call, and where the file's conversion log stood.
    meta: Option<(u32, u32, u64, usize)>,
    datasync: bool,
}

/// Ranges dirtied in a file while a call watches it, and ranges whose unwritten extents were
/// converted, with the converting transaction.
#[derive(Default)]
struct Watch {
    watchers: u32,
    log: Vec<(u64, u64)>,
    converted: Vec<(u64, u64, u32, u64)>,
}

/// The open promises, per task, and the files they watch.
pub(crate) struct Obligations {
    promises: Vec<Option<Promise>>,
    watched: HashMap<u32, Watch>,
}

impl Obligations {
    pub(crate) fn new(ntasks: usize) -> Self {
        Obligations {
            promises: (0..ntasks).map(|_| None).collect(),
            watched: HashMap::new(),
        }
    }

    /// Pages of `ino` dirtied at [start, start + n): log them if a call watches the file.
    #[inline]
    pub(crate) fn dirtied(&mut self, ino: u32, start: u64, n: u64) {
        if self.watched.is_empty() {
            return;
        }
        if let Some(w) = self.watched.get_mut(&ino) {
            w.log.push((start, n));
        }
    }

    /// Pages of `ino` at [start, start + n) were converted from unwritten in transaction
    /// `tid`, the inode's change `seq`: log them if a call watches the file.
    pub(crate) fn converted(&mut self, ino: u32, start: u64, n: u64, tid: u32, seq: u64) {
        if let Some(w) = self.watched.get_mut(&ino) {
            w.converted.push((start, n, tid, seq));
        }
    }
}
