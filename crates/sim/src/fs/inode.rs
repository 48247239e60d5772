//! Inodes: a file's page cache, where its blocks are on the device, and its place on the
//! wb's dirty lists.

use crate::fs::block_alloc::BlockMap;
use crate::mm::page_cache::AddressSpace;
use crate::mm::vmscan::Mappings;
use rangemap::RangeSet;

/// Which of its wb's lists an inode is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnList {
    None,
    Dirty,
    Io,
    MoreIo,
}

pub(crate) struct Inode {
    pub mapping: AddressSpace,
    /// The wb whose lists the inode is on: its device's root wb, or with cgroup writeback the
    /// wb of the memory cgroup that first dirtied it (`inode_attach_wb`).
    pub wb: u16,
    /// The device that holds the file.
    pub dev: u16,
    /// The memory cgroup its pages are charged to (`None`: the root). The model charges a
    /// file's pages to one group, its owner's.
    pub memcg: Option<u16>,
    /// Where the file's pages are on the device (filled by delayed allocation at writeback).
    pub blocks: BlockMap,
    /// Size of the pre-existing data, pages (readers' files).
    pub size_pages: u64,
    /// `I_DIRTY_PAGES`.
    pub dirty: bool,
    /// jiffies when the inode went from clean to dirty.
    pub dirtied_when: u64,
    pub list: OnList,
    /// `mapping->writeback_index`: where range-cyclic writeback resumes.
    pub writeback_index: u64,
    /// Tasks waiting for pages of this file to be read.
    pub read_waiters: Vec<u32>,
    /// Pages dirtied (clean or absent pages made dirty), cumulative.
    pub nr_dirtied: u64,
    /// Pages whose writeback completed, cumulative.
    pub nr_written: u64,
    /// The block device's page cache (metadata read through the buffer cache): allocated
    /// `GFP_NOFS`, from lowmem only (`grow_dev_page`).
    pub buffer_cache: bool,
    /// Cached pages whose frames no one has touched since the host backed them again (a read
    /// filled them by DMA): the first copy out pays `[machine] page_first_touch`.
    pub untouched: u64,
    /// Cached pages a device read filled that no copy out has read since: the next copies
    /// pay `[machine] cold_copy_cost` for them.
    pub cold: u64,
    /// `i_sync_tid`: the journal transaction that last changed the inode, timestamps
    /// included (`I_DIRTY_SYNC`; what fsync commits; 0: none).
    pub sync_tid: u32,
    /// `i_datasync_tid`: the last transaction that changed what reading the data back needs
    /// (`I_DIRTY_DATASYNC`: size, block allocation, unwritten-extent conversion); what
    /// fdatasync and O_DSYNC commit. An overwrite of written blocks leaves it alone.
    pub datasync_tid: u32,
    /// The transaction whose ordered-data list holds the inode (0: none yet): it joins each
    /// running transaction's list once, without a search of the list.
    pub ordered_tid: u32,
    /// Journalled changes to the inode so far (every handle that touched it), the count at
    /// its last data-integrity change, and the count an ext4 fast commit last made durable
    /// (the fast commit logs the inode as it is, ahead of the transaction's full commit).
    pub meta_seq: u64,
    pub datasync_seq: u64,
    pub fc_seq: u64,
    /// Tick of the last mtime and atime updates (a handle each).
    pub mtime_jiffy: Option<u64>,
    pub atime_jiffy: Option<u64>,
    /// Pages whose blocks are unwritten extents (fallocated, or allocated by a direct write
    /// into a hole, and not yet written): they read as zeros, so a write covering part of a
    /// page need not read it first, and the write that reaches them converts the extent at
    /// I/O completion, in a journal handle (`ext4_convert_unwritten_extents`,
    /// `xfs_iomap_write_unwritten`).
    pub unwritten: RangeSet<u64>,
    /// The file is on disk already; false for a writer's new file until its first write
    /// creates it (`open(O_CREAT)`: a directory entry, an inode from the inode bitmap).
    pub exists: bool,
    /// The largest folio its page cache holds, pages (a power of two; 1 without large
    /// folios): a buffered write's folios follow the write's length and alignment
    /// (`fgf_set_order`), readahead's its window. One size per file, not per folio: the model
    /// keeps no folio boundaries, and counts a request's physically contiguous segments as if
    /// every folio of the file were this large (`crate::block::request::folio_segments`).
    pub folio_pages: u32,
    /// `I_SYNC`: a WB_SYNC_NONE visit (the flusher's, or a 2.6.3x dirtier's own writeback)
    /// has built requests of this inode that the block layer has not all taken yet; the
    /// kernel holds the bit across the whole `do_writepages`, which sleeps in request
    /// allocation. Other WB_SYNC_NONE walks pass the inode by (per-bdi flusher generations).
    pub i_sync: bool,
}

impl Inode {
    /// A file on device `dev`, on the device's root wb, charged to the root cgroup.
    pub(crate) fn new(dev: u16, blocks: BlockMap, size_pages: u64) -> Self {
        Inode {
            mapping: AddressSpace::new(),
            wb: dev,
            dev,
            memcg: None,
            blocks,
            size_pages,
            dirty: false,
            dirtied_when: 0,
            list: OnList::None,
            writeback_index: 0,
            read_waiters: Vec::new(),
            nr_dirtied: 0,
            nr_written: 0,
            buffer_cache: false,
            untouched: 0,
            cold: 0,
            sync_tid: 0,
            datasync_tid: 0,
            ordered_tid: 0,
            meta_seq: 0,
            datasync_seq: 0,
            fc_seq: 0,
            mtime_jiffy: None,
            atime_jiffy: None,
            exists: true,
            unwritten: RangeSet::new(),
            folio_pages: 1,
            i_sync: false,
        }
    }

    /// The change a sync must make durable: (transaction, change count) of the last change
    /// (fsync) or of the last data-integrity change (`datasync`).
    pub(crate) fn sync_need(&self, datasync: bool) -> (u32, u64) {
        if datasync {
            (self.datasync_tid, self.datasync_seq)
        } else {
            (self.sync_tid, self.meta_seq)
        }
    }

    /// Whether any of pages [start, start + n) is an unwritten extent.
    pub(crate) fn has_unwritten(&self, start: u64, n: u64) -> bool {
        !self.unwritten.is_empty() && self.unwritten.overlaps(&(start..start.saturating_add(n.max(1))))
    }
}

impl Mappings for Vec<Inode> {
    fn mapping(&mut self, file: u32) -> &mut AddressSpace {
        &mut self[file as usize].mapping
    }

    fn device(&self, file: u32) -> u16 {
        self[file as usize].dev
    }

    fn memcg(&self, file: u32) -> Option<u16> {
        self[file as usize].memcg
    }
}
