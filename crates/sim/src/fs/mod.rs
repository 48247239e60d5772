//! Files and the flushers: inodes and block allocation, the flusher's writeback of inodes
//! (`fs_writeback`; `pdflush` and `bdflush` for the older kernels), sync and fsync, the
//! journal (`jbd2`, `journal`, `fast_commit`), unwritten extents' end_io work, metadata and
//! `namei`.

pub mod bdflush;
pub mod block_alloc;
pub mod ext3_balloc;
pub mod fast_commit;
pub mod flusher;
pub mod fs_writeback;
pub mod inode;
pub mod jbd2;
pub mod journal;
pub mod metadata;
pub mod namei;
pub mod pdflush;
pub mod sync;
pub mod unwritten;
