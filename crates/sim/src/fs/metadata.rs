//! On-disk metadata of a directory tree, as ext3/ext4 lay it out: the disk is cut into block
//! groups (128 MiB); each holds an inode table (`inode_size`-byte inodes, 4096/size to a
//! block) and the blocks of its directories. A tree's directories fill the groups in order,
//! each directory's entries getting consecutive inode numbers right after the directory's own.
//!
//! The model keeps the cached metadata blocks in the page cache of one mapping per tree (the
//! block device's page cache in the kernel), so they compete with dirty pages for memory.
//! `lstat` of an inode whose table block is cached costs only CPU; otherwise it is one 4 KiB
//! synchronous read of that block. Reading a directory (`getdents`) reads its blocks the
//! same way. Dentries and in-memory inodes (the slab caches) are not modelled: a cached
//! inode-table block stands for a cached inode.

use crate::Ns;

/// Blocks (pages) per ext3/ext4 block group of 4 KiB blocks: 32768 = 128 MiB.
pub const BLOCKS_PER_GROUP: u64 = 32_768;
/// Inodes per group for `mke2fs` defaults (one inode per 8 KiB of disk).
pub const INODES_PER_GROUP: u64 = 16_384;
/// Bytes of a directory entry: 8-byte header plus a ~12-byte name, rounded to 4.
pub const DIRENT_BYTES: u64 = 20;

#[derive(Clone, Debug)]
pub struct MetaTree {
    /// The mapping (inode index of the machine) holding the tree's metadata pages.
    pub file: u32,
    pub dirs: u64,
    /// Entries (files) per directory.
    pub entries: u64,
    pub inodes_per_block: u64,
    /// Blocks of one directory.
    pub dir_blocks: u64,
    pub dirs_per_group: u64,
    /// Pages one group of the tree spans on disk (its inode table, directory blocks and the
    /// data blocks between them).
    pub group_pages: u64,
}

impl MetaTree {
    /// A tree of `dirs` directories of `entries` entries each. `spread` puts every directory
    /// in a group of its own (system directories like /etc, /usr, /var live far apart);
    /// otherwise directories pack into groups of `INODES_PER_GROUP` inodes.
    pub fn new(dirs: u64, entries: u64, inode_size: u64, spread: bool) -> Self {
        let inodes_per_block = (4096 / inode_size.clamp(128, 4096)).max(1);
        let dir_blocks = ((entries + 2) * DIRENT_BYTES).div_ceil(4096).max(1);
        let dirs_per_group = if spread { 1 } else { (INODES_PER_GROUP / (entries + 1)).max(1) };
        MetaTree {
            file: 0,
            dirs: dirs.max(1),
            entries,
            inodes_per_block,
            dir_blocks,
            dirs_per_group,
            group_pages: BLOCKS_PER_GROUP,
        }
    }

    pub fn groups(&self) -> u64 {
        self.dirs.div_ceil(self.dirs_per_group)
    }

    /// Pages of disk the tree spans (whole groups).
    pub fn span_pages(&self) -> u64 {
        self.groups() * self.group_pages
    }

    /// Files in the tree (directories not counted).
    pub fn files(&self) -> u64 {
        self.dirs * self.entries
    }

    fn itable_pages(&self) -> u64 {
        (self.dirs_per_group * (self.entries + 1)).div_ceil(self.inodes_per_block)
    }

    /// Page of the inode of entry `e` of directory `d` (e = 0: the directory itself).
    pub fn inode_page(&self, d: u64, e: u64) -> u64 {
        let g = d / self.dirs_per_group;
        let ino_in_group = (d % self.dirs_per_group) * (self.entries + 1) + e;
        g * self.group_pages + ino_in_group / self.inodes_per_block
    }

    /// Page `k` of directory `d`'s blocks. A directory's blocks were allocated from its
    /// group's data area as the tree was written, among its files' data: the group's
    /// directories lie evenly spread over the space after the inode table, so a walk
    /// alternates between the inode table at the head of the group and blocks further in.
    pub fn dir_page(&self, d: u64, k: u64) -> u64 {
        let g = d / self.dirs_per_group;
        let data = self.group_pages.saturating_sub(self.itable_pages());
        let stride = (data / self.dirs_per_group).max(self.dir_blocks);
        g * self.group_pages + self.itable_pages() + (d % self.dirs_per_group) * stride + k
    }
}

/// Where a metadata job (`du`, `ls`, launch) is in its walk of a tree.
#[derive(Clone, Debug)]
pub struct MetaJob {
    pub tree: MetaTree,
    /// Current directory, and position in it: 0 the directory's inode, 1..=dir_blocks its
    /// blocks, then its entries (`dir_blocks + 1 + e`).
    pub dir: u64,
    pub pos: u64,
    /// Launch: the machine inode of the first data file, the file being read, file count.
    pub first_data: u32,
    pub launch_file: u32,
    pub launch_files: u32,
    /// Launch: the data of the current file is being read.
    pub reading_data: bool,
    /// Start of the current lookup (du: per lstat) or command (ls, launch).
    pub op_start: Ns,
    /// When the current lookup first found its block absent (du latency).
    pub lookup_start: Option<Ns>,
    /// Launch: the application's own file (for its writes), where the next write goes (it
    /// appends), and bytes still to write in this launch.
    pub own_file: u32,
    pub own_offset: u64,
    pub write_left: u64,
    /// Directories (in walk order) whose atime a `getdents` already updated: with relatime a
    /// directory's first read since it changed is the only one that writes.
    pub atime_dirs: u64,
}

/// What to look up next.
pub(crate) enum Next {
    Page(u64),
    Data,
    EndOfRun,
}

impl MetaJob {
    pub(crate) fn next(&self) -> Next {
        if self.dir >= self.tree.dirs {
            return Next::EndOfRun;
        }
        if self.reading_data {
            return Next::Data;
        }
        let t = &self.tree;
        if self.pos == 0 {
            return Next::Page(t.inode_page(self.dir, 0));
        }
        if self.pos <= t.dir_blocks {
            return Next::Page(t.dir_page(self.dir, self.pos - 1));
        }
        let e = self.pos - t.dir_blocks; // 1-based entry
        Next::Page(t.inode_page(self.dir, e))
    }

    /// After a lookup: move on. Returns true when an entry's lstat completed (du counts it).
    pub(crate) fn advance(&mut self, launch: bool) -> bool {
        let t = &self.tree;
        let is_entry = self.pos > t.dir_blocks;
        if launch && is_entry {
            // Launch: the file's inode is found; read its data next.
            self.reading_data = true;
            return true;
        }
        self.pos += 1;
        if self.pos > t.dir_blocks + t.entries {
            self.dir += 1;
            self.pos = 0;
        }
        is_entry || self.pos == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_packs_inodes_and_directories_into_groups() {
        // ext3, 128-byte inodes: 32 per block; 20 files per dir → 21 inodes per dir,
        // 780 dirs per group, 16,380 inodes → 512 table blocks.
        let t = MetaTree::new(2_000, 20, 128, false);
        assert_eq!((t.inodes_per_block, t.dir_blocks, t.dirs_per_group), (32, 1, 780));
        assert_eq!(t.groups(), 3);
        assert_eq!(t.files(), 40_000);
        assert_eq!(t.inode_page(0, 0), 0);
        assert_eq!(t.inode_page(0, 20), 0);
        assert_eq!(t.inode_page(1, 11), 1, "inode 32 is in the second block");
        assert_eq!(t.dir_page(0, 0), 512);
        // The rest of the group (32,256 blocks) is shared out among its 780 directories.
        assert_eq!(t.dir_page(1, 0), 512 + 41);
        assert_eq!(t.dir_page(779, 0), 512 + 779 * 41);
        assert_eq!(t.inode_page(780, 0), BLOCKS_PER_GROUP);
        // ls of system directories: one group each, 200 entries fit one block.
        let t = MetaTree::new(8, 200, 256, true);
        assert_eq!((t.dirs_per_group, t.dir_blocks, t.inodes_per_block), (1, 1, 16));
        assert_eq!(t.dir_page(3, 0), 3 * BLOCKS_PER_GROUP + 13);
    }
}
