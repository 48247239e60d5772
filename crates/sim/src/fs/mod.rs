//! Files and the flushers: inodes and block allocation, the flusher's writeback of inodes
//! (`fs_writeback`; `pdflush` and `bdflush` for the older kernels), sync and fsync, the
//! journal (`jbd2`, `journal`, `fast_commit`), unwritten extents' end_io work, metadata and
//! `namei`.

pub(crate) mod bdflush;
pub(crate) mod block_alloc;
pub(crate) mod ext3_balloc;
pub(crate) mod fast_commit;
pub(crate) mod flusher;
pub(crate) mod fs_writeback;
pub(crate) mod inode;
pub(crate) mod jbd2;
pub(crate) mod journal;
pub(crate) mod metadata;
pub(crate) mod namei;
pub(crate) mod pdflush;
pub(crate) mod sync;
pub(crate) mod unwritten;
