//! Files and the flushers.

pub mod fs_writeback;
pub mod inode;
