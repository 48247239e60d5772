//! On-disk metadata of a directory tree, as ext3/ext4 lay it out: the disk is cut into block
//! groups (128 MiB); each holds an inode table (`inode_size`-byte inodes, 4096/size to a
//! block) and the blocks of its directories. A tree's directories fill the groups in order,
//! each directory's entries getting consecutive inode numbers right after the directory's own.
//!
//! With `subdirs` > 0 the directories form a tree as `cp -a` or `tar x` creates it: depth
//! first, a directory then its files then each subdirectory's whole subtree, so directories
//! are numbered (and their inodes laid out) in preorder, and a subdirectory other than the
//! first lies past its elder siblings' subtrees — often in another block group (the Orlov
//! allocator keeps a subdirectory in its parent's group only while the group has room). A
//! walk like `du`'s (fts) lists a directory, `lstat`s its files and then its subdirectories,
//! and only then descends: so a subdirectory's inode is read while its parent is listed,
//! usually from a block far from the one just read. With `subdirs` = 0 the directories are
//! a flat sequence and each one's own inode is looked up right before its blocks.
//! Simplified: every directory has the same number of files and subdirectories, filled
//! breadth first (a complete tree), and a directory's entries are visited in inode order
//! (ext3's htree hands them out in hash order; with a directory's inodes in one or two
//! blocks that changes little).
//!
//! The model keeps the cached metadata blocks in the page cache of one mapping per tree (the
//! block device's page cache in the kernel), so they compete with dirty pages for memory.
//! `lstat` of an inode whose table block is cached costs only CPU; otherwise it is one 4 KiB
//! synchronous read of that block. Reading a directory (`getdents`) reads its blocks the
//! same way. Dentries and in-memory inodes (the slab caches) are not modelled: a cached
//! inode-table block stands for a cached inode.

use crate::Ns;
use std::sync::Arc;

/// Blocks (pages) per ext3/ext4 block group of 4 KiB blocks: 32768 = 128 MiB.
pub(crate) const BLOCKS_PER_GROUP: u64 = 32_768;
/// Inodes per group for `mke2fs` defaults (one inode per 8 KiB of disk).
pub(crate) const INODES_PER_GROUP: u64 = 16_384;
/// Bytes of a directory entry: 8-byte header plus a ~12-byte name, rounded to 4.
pub(crate) const DIRENT_BYTES: u64 = 20;

#[derive(Clone, Debug)]
pub(crate) struct MetaTree {
    /// The mapping (inode index of the machine) holding the tree's metadata pages.
    pub file: u32,
    pub dirs: u64,
    /// Entries (files) per directory.
    pub entries: u64,
    pub inodes_per_block: u64,
    /// Inode-table slots per inode of the tree (the others hold files outside it).
    pub spacing: u64,
    /// Blocks of one directory.
    pub dir_blocks: u64,
    pub dirs_per_group: u64,
    /// Pages one group of the tree spans on disk (its inode table, directory blocks and the
    /// data blocks between them).
    pub group_pages: u64,
    /// The tree's shape when directories nest (`subdirs` > 0); `None` for a flat sequence.
    pub shape: Option<Arc<TreeShape>>,
}

/// Which directories are whose children, by preorder number (the walk's and the layout's
/// order), for a tree where every directory has `fanout` subdirectories until the count runs
/// out (breadth first: the tree is as shallow as the count allows).
#[derive(Debug)]
pub(crate) struct TreeShape {
    /// `children[start[d]..start[d + 1]]`: the preorder numbers of directory `d`'s children,
    /// in the order the walk visits them.
    start: Vec<u32>,
    children: Vec<u32>,
}

impl TreeShape {
    pub(crate) fn new(dirs: u64, fanout: u64) -> Self {
        let n = dirs as usize;
        let b = fanout.max(1) as usize;
        // Breadth-first numbering gives the shape: the children of i are b*i+1 ..= b*i+b.
        let kids = |i: usize| (b * i + 1).min(n)..(b * i + b + 1).min(n);
        let mut size = vec![1u32; n];
        for i in (0..n).rev() {
            for c in kids(i) {
                size[i] += size[c];
            }
        }
        // Preorder numbers: a child follows its parent, or its elder sibling's whole subtree.
        let mut pre = vec![0u32; n];
        for i in 0..n {
            let mut next = pre[i] + 1;
            for c in kids(i) {
                pre[c] = next;
                next += size[c];
            }
        }
        let mut count = vec![0u32; n];
        for i in 0..n {
            count[pre[i] as usize] = kids(i).len() as u32;
        }
        let mut start = Vec::with_capacity(n + 1);
        start.push(0u32);
        for d in 0..n {
            start.push(start[d] + count[d]);
        }
        let mut children = vec![0u32; n.saturating_sub(1)];
        for i in 0..n {
            let at = start[pre[i] as usize] as usize;
            for (k, c) in kids(i).enumerate() {
                children[at + k] = pre[c];
            }
        }
        TreeShape { start, children }
    }

    /// Subdirectories of directory `d` (preorder number).
    pub(crate) fn count(&self, d: u64) -> u64 {
        u64::from(self.start[d as usize + 1] - self.start[d as usize])
    }

    /// The `k`-th (0-based) subdirectory of directory `d`.
    pub(crate) fn child(&self, d: u64, k: u64) -> u64 {
        u64::from(self.children[self.start[d as usize] as usize + k as usize])
    }
}

impl MetaTree {
    /// A tree of `dirs` directories of `entries` entries each. `spread` puts every directory
    /// in a group of its own (system directories like /etc, /usr, /var live far apart);
    /// otherwise directories pack into groups of `INODES_PER_GROUP` inodes.
    pub(crate) fn new(dirs: u64, entries: u64, inode_size: u64, spread: bool) -> Self {
        Self::nested(dirs, entries, 0, inode_size, spread)
    }

    /// A tree of `dirs` directories of `entries` files each and `subdirs` subdirectories
    /// (0: a flat sequence of directories).
    pub(crate) fn nested(dirs: u64, entries: u64, subdirs: u64, inode_size: u64, spread: bool) -> Self {
        let inodes_per_block = (4096 / inode_size.clamp(128, 4096)).max(1);
        let dir_blocks = ((entries + 2) * DIRENT_BYTES).div_ceil(4096).max(1);
        let dirs_per_group = if spread { 1 } else { (INODES_PER_GROUP / (entries + 1)).max(1) };
        MetaTree {
            file: 0,
            dirs: dirs.max(1),
            entries,
            inodes_per_block,
            spacing: 1,
            dir_blocks,
            dirs_per_group,
            group_pages: BLOCKS_PER_GROUP,
            shape: (subdirs > 0).then(|| Arc::new(TreeShape::new(dirs.max(1), subdirs))),
        }
    }

    /// The tree's inodes one in `spacing` table slots, the rest other files' (an aged file
    /// system): a group holds `spacing` times fewer of the tree's directories.
    pub(crate) fn spaced(mut self, spacing: u64) -> Self {
        let s = spacing.max(1);
        if self.dirs_per_group > 1 {
            self.dirs_per_group = (INODES_PER_GROUP / ((self.entries + 1) * s)).max(1);
        }
        self.spacing = s;
        self
    }

    /// Subdirectories of directory `d` whose inodes its listing looks up.
    pub(crate) fn subdirs_of(&self, d: u64) -> u64 {
        self.shape.as_ref().map_or(0, |s| s.count(d))
    }

    /// Position in a directory where its walk starts: its own inode (a flat tree's
    /// directories and a nested tree's root), or its first block (a nested subdirectory,
    /// whose inode its parent's listing already looked up).
    pub(crate) fn first_pos(&self, d: u64) -> u64 {
        u64::from(self.shape.is_some() && d > 0)
    }

    pub(crate) fn groups(&self) -> u64 {
        self.dirs.div_ceil(self.dirs_per_group)
    }

    /// Pages of disk the tree spans (whole groups).
    pub(crate) fn span_pages(&self) -> u64 {
        self.groups() * self.group_pages
    }

    /// Files in the tree (directories not counted).
    #[cfg(test)]
    pub(crate) fn files(&self) -> u64 {
        self.dirs * self.entries
    }

    fn itable_pages(&self) -> u64 {
        (self.dirs_per_group * (self.entries + 1) * self.spacing).div_ceil(self.inodes_per_block)
    }

    /// Page of the inode of entry `e` of directory `d` (e = 0: the directory itself).
    pub(crate) fn inode_page(&self, d: u64, e: u64) -> u64 {
        let g = d / self.dirs_per_group;
        let ino_in_group = ((d % self.dirs_per_group) * (self.entries + 1) + e) * self.spacing;
        g * self.group_pages + ino_in_group / self.inodes_per_block
    }

    /// Page `k` of directory `d`'s blocks. A directory's blocks were allocated from its
    /// group's data area as the tree was written, among its files' data: the group's
    /// directories lie evenly spread over the space after the inode table, so a walk
    /// alternates between the inode table at the head of the group and blocks further in.
    pub(crate) fn dir_page(&self, d: u64, k: u64) -> u64 {
        let g = d / self.dirs_per_group;
        let data = self.group_pages.saturating_sub(self.itable_pages());
        let stride = (data / self.dirs_per_group).max(self.dir_blocks);
        g * self.group_pages + self.itable_pages() + (d % self.dirs_per_group) * stride + k
    }
}

/// Where a metadata job (`du`, `ls`, launch) is in its walk of a tree.
#[derive(Clone, Debug)]
pub(crate) struct MetaJob {
    pub tree: MetaTree,
    /// Current directory, and position in it: 0 the directory's inode, 1..=dir_blocks its
    /// blocks, then its entries (`dir_blocks + 1 + e`), then its subdirectories' inodes.
    pub dir: u64,
    pub pos: u64,
    /// Launch: the machine inode of the first data file, the file being read, file count.
    pub first_data: u32,
    pub launch_file: u32,
    pub launch_files: u32,
    /// Launch: the data of the current file is being read.
    pub reading_data: bool,
    /// Mapped launch: the current file's `file_ra_state.mmap_miss` (major faults less hits).
    pub mmap_miss: u32,
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
        if e <= t.entries {
            return Next::Page(t.inode_page(self.dir, e));
        }
        let child = t
            .shape
            .as_ref()
            .expect("a subdirectory lookup in a nested tree")
            .child(self.dir, e - t.entries - 1);
        Next::Page(t.inode_page(child, 0))
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
        let counted = is_entry || self.pos == 0;
        self.pos += 1;
        if self.pos > t.dir_blocks + t.entries + t.subdirs_of(self.dir) {
            self.dir += 1;
            self.pos = t.first_pos(self.dir);
        }
        counted
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

    fn walk(t: &MetaTree) -> (Vec<u64>, u64) {
        let mut m = MetaJob {
            tree: t.clone(),
            dir: 0,
            pos: 0,
            first_data: 0,
            launch_file: 0,
            launch_files: 0,
            reading_data: false,
            mmap_miss: 0,
            op_start: 0,
            lookup_start: None,
            own_file: 0,
            own_offset: 0,
            write_left: 0,
            atime_dirs: 0,
        };
        let (mut pages, mut counted) = (Vec::new(), 0);
        while let Next::Page(p) = m.next() {
            pages.push(p);
            counted += u64::from(m.advance(false));
        }
        (pages, counted)
    }

    /// An aged file system: the tree's inodes one slot in `spacing`, so a directory's files
    /// span that many times the inode-table blocks, and its groups hold fewer directories.
    #[test]
    fn spaced_inodes_spread_a_directory_over_more_table_blocks() {
        let blocks = |t: &MetaTree, d: u64| {
            (0..=t.entries)
                .map(|e| t.inode_page(d, e))
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        };
        let dense = MetaTree::nested(2_000, 20, 4, 128, false);
        let spaced = MetaTree::nested(2_000, 20, 4, 128, false).spaced(3);
        let total = |t: &MetaTree| (0..600).map(|d| blocks(t, d)).sum::<usize>();
        let (d, sp) = (total(&dense), total(&spaced));
        // 21 inodes, 32 to a block: 1.6 blocks a directory; spread over 63 slots, 2.9.
        assert!(d < 1000 && sp * 10 >= d * 17, "blocks of 600 directories: {d} dense, {sp} spaced");
        assert_eq!(spaced.dirs_per_group, dense.dirs_per_group / 3);
        // The inode table keeps its size: the slots the tree leaves are other files'.
        assert!(spaced.itable_pages() <= dense.itable_pages() && spaced.itable_pages() * 10 > dense.itable_pages() * 9);
        // Every inode still lies in its group's table.
        assert!((0..2_000).all(|d| spaced.inode_page(d, 20) % spaced.group_pages < spaced.itable_pages()));
    }

    #[test]
    fn a_nested_walk_looks_up_every_entry_once_and_lists_before_it_descends() {
        // 85 directories, 4 subdirectories each (1 + 4 + 16 + 64), 10 files each.
        let t = MetaTree::nested(85, 10, 4, 128, false);
        let (pages, counted) = walk(&t);
        // Every file and every directory but the root is an entry someone lstat()s; the root
        // is looked up once, at the start.
        assert_eq!(counted, 85 * 10 + 84 + 1);
        // Directory blocks: each read once.
        let dir_blocks = pages.iter().filter(|&&p| p >= t.itable_pages()).count();
        assert_eq!(dir_blocks, 85);
        // The root lists its four children before reading any of their blocks: the second
        // child's inode lies past the first child's whole subtree (21 directories of 11
        // inodes), so it is in a later inode-table block than the first's.
        let shape = t.shape.as_ref().expect("nested");
        assert_eq!((shape.count(0), shape.child(0, 0), shape.child(0, 1)), (4, 1, 22));
        assert!(t.inode_page(22, 0) > t.inode_page(1, 0) + 5);
        let first_child_block = pages.iter().position(|&p| p == t.dir_page(1, 0)).expect("child 1 read");
        let second_child_inode = pages.iter().position(|&p| p == t.inode_page(22, 0)).expect("child 2 looked up");
        assert!(second_child_inode < first_child_block, "fts lists a directory before it descends");
        // Leaves have no subdirectories; the flat form has none anywhere.
        assert_eq!(shape.count(84), 0);
        assert_eq!(MetaTree::new(85, 10, 128, false).subdirs_of(0), 0);
    }
}
