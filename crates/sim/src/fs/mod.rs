//! Files and the flushers.

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
