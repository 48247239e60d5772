//! The file system on a device and its mount options (`fs`, `mount` in `[[device]]`): which
//! journal the simulator runs for it and with what settings. Resolved once, when the scenario
//! is built, with the kernel release's defaults made explicit.

use crate::engine::time::NSEC_PER_SEC;
use crate::generations::Version;
use crate::Ns;
use serde::Serialize;

/// File systems a device may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    Ext4,
    Ext3,
    Xfs,
    /// Made by `wblab measure`; the simulator runs no journal for it.
    Btrfs,
}

impl FsKind {
    pub const ALL: &'static [FsKind] = &[FsKind::Ext4, FsKind::Ext3, FsKind::Xfs, FsKind::Btrfs];

    pub fn name(self) -> &'static str {
        match self {
            FsKind::Ext4 => "ext4",
            FsKind::Ext3 => "ext3",
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
        }
    }
}

/// `data=` of ext3/ext4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DataMode {
    Ordered,
    Writeback,
    /// File data goes through the journal too: logged at commit, then written home.
    Journal,
}

/// Access-time updates: `strictatime` (every read), `relatime` (the first read after a
/// change, or once a day: default from 2.6.30), `noatime`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Atime {
    Strictatime,
    Relatime,
    Noatime,
}

/// ext3's block reservation windows (Mingming Cao's, merged for 2.6.10) and its
/// `reservation` / `noreservation` mount options.
pub const RESERVATION_WINDOWS: Version = Version(2, 6, 10);

/// A mounted file system, every option resolved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MountConfig {
    pub fs: FsKind,
    /// ext3/ext4 `data=`; xfs has no ordered mode (always `writeback`).
    pub data: DataMode,
    /// jbd2 `commit=` (ext3/ext4, default 5 s); xfs's log worker period
    /// (`fs.xfs.xfssyncd_centisecs`, 30 s).
    pub commit_interval: Ns,
    /// `barrier=1`: commits carry a cache flush (ext4 and xfs default; ext3 before 3.1: off).
    pub barrier: bool,
    /// ext4 `journal_async_commit`: the commit block goes with the metadata, one flush after.
    pub journal_async_commit: bool,
    /// ext4 `dioread_nolock` (default from 5.6): writeback allocates unwritten extents, so
    /// data=ordered has no data to wait for at commit.
    pub dioread_nolock: bool,
    pub atime: Atime,
    /// ext4 `auto_da_alloc` (default on): a rename over an existing file, or a truncate to
    /// zero, starts writeback of the delayed-allocation data of the file renamed or truncated.
    pub auto_da_alloc: bool,
    /// xfs `logbsize`: bytes of one in-core log buffer (the unit of log I/O).
    pub logbsize: u64,
    /// The journal's size as mkfs made it (`mke2fs -J size=`), bytes; `None`: mke2fs's
    /// default for the device's size.
    pub journal_size: Option<u64>,
    /// ext4's fast commits (5.10+; `mkfs.ext4 -O fast_commit`): an fsync whose changes it can
    /// describe writes a block to the fast-commit area instead of waiting for a full commit.
    pub fast_commit: bool,
    /// The page cache of its files holds large folios (xfs from 5.18, ext4 from 6.16), so a
    /// writeback bio is no longer bounded by one request ([`MountConfig::writeback_bio_pages`]).
    pub large_folios: bool,
    /// ext4's `s_max_writeback_mb_bump` (2.6.31 – 3.9), pages: a range-cyclic writepages of
    /// an inode writes at least its run of dirty pages from `writeback_index`, up to this
    /// many, whatever `nr_to_write` asked (0: no bump). A throttled 2.6.3x dirtier asked for
    /// 1.5 × ratelimit pages thus writes up to 128 MiB before it may return.
    pub writeback_bump_pages: u64,
    /// ext3 without reservation windows (before 2.6.10, or `noreservation`): blocks are
    /// allocated at `write()` by the block bitmap search (`fs::ext3_balloc`), so concurrent
    /// writers interleave their files on disk. Otherwise the allocator at writeback places
    /// them (ext4/xfs delayed allocation; ext3's reservation windows keep a streaming file
    /// contiguous likewise).
    pub bitmap_alloc: bool,
    /// The `mount` string as written, for `wblab measure` (it passes it to mount(2)).
    pub options: String,
}

impl MountConfig {
    /// `fs` mounted with no options on `release`: ext3 barriers off before 3.1, `relatime`
    /// from 2.6.30, ext4 `dioread_nolock` from 5.6, commits every 5 s (xfs's log worker:
    /// 30 s), 32 KiB xfs log buffers, large folios on xfs from 5.18 and ext4 from 6.16,
    /// ext4's 128 MiB writeback bump from 2.6.31 until the 3.10 rewrite of its writepages,
    /// ext3's write-time bitmap allocation before the reservation windows of 2.6.10.
    pub fn defaults(fs: FsKind, release: Version) -> Self {
        let xfs = fs == FsKind::Xfs;
        MountConfig {
            fs,
            data: if xfs { DataMode::Writeback } else { DataMode::Ordered },
            commit_interval: if xfs { 30 } else { 5 } * NSEC_PER_SEC,
            barrier: !(fs == FsKind::Ext3 && release < Version(3, 1, 0)),
            journal_async_commit: false,
            dioread_nolock: fs == FsKind::Ext4 && release >= Version(5, 6, 0),
            atime: if release >= Version(2, 6, 30) {
                Atime::Relatime
            } else {
                Atime::Strictatime
            },
            auto_da_alloc: fs == FsKind::Ext4,
            logbsize: 32 * 1024,
            journal_size: None,
            fast_commit: false,
            large_folios: (fs == FsKind::Xfs && release >= Version(5, 18, 0)) || (fs == FsKind::Ext4 && release >= Version(6, 16, 0)),
            writeback_bump_pages: if fs == FsKind::Ext4 && release >= Version(2, 6, 31) && release < Version(3, 10, 0) {
                (128 << 20) / crate::units::PAGE_SIZE
            } else {
                0
            },
            bitmap_alloc: fs == FsKind::Ext3 && release < RESERVATION_WINDOWS,
            options: String::new(),
        }
    }

    /// The most pages one writeback bio carries. Without large folios a bio holds 256 pages
    /// (`BIO_MAX_VECS`), less than one request, so the model builds requests directly. With
    /// them, ext4 submits one bio per mapped extent (`MAX_WRITEPAGES_EXTENT_LEN` = 2048
    /// blocks) and iomap one per contiguous run of the writeback call (256 folios of up to
    /// 1 MiB; taken as 256 MiB).
    pub fn writeback_bio_pages(&self) -> u64 {
        match (self.large_folios, self.fs) {
            (false, _) => 256,
            (true, FsKind::Ext4) => crate::fs::jbd2::EXTENT_PAGES_PER_HANDLE,
            (true, _) => 65_536,
        }
    }

    /// Whether the simulator runs a journal for this file system.
    pub fn journalled(&self) -> bool {
        self.fs != FsKind::Btrfs
    }
}
