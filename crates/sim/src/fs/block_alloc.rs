//! Where a file's pages live on the device: a per-file extent map filled by delayed
//! allocation, and a per-device allocator.
//!
//! ext4 and xfs allocate blocks for buffered writes only when writeback maps the pages
//! (`ext4_map_blocks` from `ext4_do_writepages`, delalloc), trying first to continue the
//! file's last extent (the allocation "goal"). So when several `dd` stream at once, the
//! flusher's consecutive chunks of different files land next to each other on disk and the
//! device sees a nearly sequential stream. Laying files out in fixed far-apart regions
//! instead would turn every inode switch into a long seek and put each file in a different
//! recording zone.
//!
//! ext3 before reservation windows allocates at `write()` instead, by its bitmap search
//! ([`super::ext3_balloc`]); a device mounted so carries that bitmap here, and every
//! allocation on it goes through the bitmap.
//!
//! ext4's mballoc also reserves more than a request asks for: a file larger than
//! `mb_stream_req` (16 blocks) gets an *inode preallocation* sized from its size
//! (`ext4_mb_normalize_request`: up to an 8 MiB-aligned window), and its next allocations
//! inside that window come from it (`ext4_mb_use_inode_pa`). So files that grow at the same
//! time own separate windows: a fast stream and a slow one (a copy beside O_DIRECT appenders,
//! measured on 6.18: their writes megabytes apart) do not share one sequential run, and the
//! slow file's window falls behind the fast one's — which a sorted elevator sees.
//!
//! Simplification: mballoc is reduced to a bump allocator with the per-file goal (continue
//! the last extent if it ends where free space begins) and one inode preallocation per file
//! (ext4 only). No block groups, no locality-group preallocation for small files (they are
//! packed as they come), no fragmentation of free space, no metadata or journal blocks.
//! Pre-existing files (readers' data) are laid out contiguously before any allocation happens.

use super::ext3_balloc::Ext3Bitmap;
use crate::units::PAGE_SIZE;

const SECTORS_PER_PAGE: u64 = PAGE_SIZE / 512;

/// One contiguous run of a file's pages on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Extent {
    page: u64,
    sector: u64,
    pages: u64,
}

impl Extent {
    fn end_page(&self) -> u64 {
        self.page + self.pages
    }
    fn end_sector(&self) -> u64 {
        self.sector + self.pages * SECTORS_PER_PAGE
    }
}

/// A file's logical-to-physical map, sorted by page.
#[derive(Clone, Debug, Default)]
pub(crate) struct BlockMap {
    extents: Vec<Extent>,
    /// `i_next_alloc_block` / `i_next_alloc_goal` of ext3's write-time allocation: the page
    /// allocated last and its block.
    next_alloc: Option<(u64, u64)>,
    /// The inode preallocation: reserved pages not yet mapped, `[page, page + pages)` at
    /// `sector` (`ext4_prealloc_space`).
    pa: Option<Extent>,
    /// The extent the last lookup found, where the next one starts searching
    /// ([`BlockMap::first_ending_after`]).
    hint: std::cell::Cell<usize>,
    /// Pages mapped (extents are only ever added): equal to the last extent's end when the
    /// file has no holes, so that "is this page mapped?" needs no search ([`BlockMap::mapped`]).
    mapped: u64,
}

/// The free-space cursor of one device.
#[derive(Clone, Debug)]
pub(crate) struct DevAllocator {
    /// First sector that allocation may use (after the pre-existing files).
    base: u64,
    /// Next free sector.
    next: u64,
    /// Device capacity in sectors; allocation wraps to `base` past it (old data is not
    /// modelled, so reusing space is harmless).
    capacity: u64,
    /// ext3 without reservation windows: the block bitmap every allocation searches.
    bitmap: Option<Box<Ext3Bitmap>>,
    /// Sectors no file gets: the journal's (mkfs puts it in the middle of the device).
    reserved: Option<std::ops::Range<u64>>,
    /// ext4's mballoc: files larger than `mb_stream_req` allocate in preallocation windows.
    inode_prealloc: bool,
}

impl DevAllocator {
    pub(crate) fn new(capacity_sectors: u64) -> Self {
        DevAllocator {
            base: 0,
            next: 0,
            capacity: capacity_sectors.max(SECTORS_PER_PAGE),
            bitmap: None,
            reserved: None,
            inode_prealloc: false,
        }
    }

    /// Allocate as ext4's mballoc: in inode preallocation windows (see the module doc).
    pub(crate) fn use_inode_prealloc(&mut self) {
        self.inode_prealloc = true;
    }

    /// Keep `sectors` (whole pages) out of every file: the journal's area.
    pub(crate) fn reserve(&mut self, sectors: std::ops::Range<u64>) {
        let start = sectors.start / SECTORS_PER_PAGE * SECTORS_PER_PAGE;
        let end = sectors.end.div_ceil(SECTORS_PER_PAGE) * SECTORS_PER_PAGE;
        if start < end && end <= self.capacity {
            self.reserved = Some(start..end);
        }
    }

    /// Move the cursor past the reserved area if it stands in it; how many pages may be
    /// taken from it before reaching the area.
    fn skip_reserved(&mut self) -> u64 {
        match &self.reserved {
            Some(r) if r.contains(&self.next) => {
                self.next = r.end;
                (self.capacity - self.next) / SECTORS_PER_PAGE
            }
            Some(r) if self.next < r.start => (r.start - self.next) / SECTORS_PER_PAGE,
            _ => (self.capacity - self.next) / SECTORS_PER_PAGE,
        }
    }

    /// From now on allocate by ext3's bitmap search (a file system mounted without
    /// reservation windows); what is allocated so far stays in use.
    pub(crate) fn use_ext3_bitmap(&mut self) {
        let blocks = self.capacity / SECTORS_PER_PAGE;
        let mut bitmap = Box::new(Ext3Bitmap::new(blocks, self.next / SECTORS_PER_PAGE));
        if let Some(r) = &self.reserved {
            bitmap.mark_used(r.start / SECTORS_PER_PAGE, (r.end - r.start) / SECTORS_PER_PAGE);
        }
        self.bitmap = Some(bitmap);
    }

    /// Whether blocks are allocated at `write()` by ext3's bitmap search.
    pub(crate) fn allocates_at_write(&self) -> bool {
        self.bitmap.is_some()
    }

    /// Reserve `pages` contiguous pages at the cursor for a pre-existing file, before the run.
    pub(crate) fn preallocate(&mut self, pages: u64) -> u64 {
        // Contiguous: past the reserved area if it would cross it.
        if let Some(r) = &self.reserved {
            if self.next < r.end && self.next + pages * SECTORS_PER_PAGE > r.start {
                self.next = r.end;
            }
        }
        let s = self.next;
        self.next = (self.next + pages * SECTORS_PER_PAGE).min(self.capacity);
        self.base = self.next;
        if let Some(b) = self.bitmap.as_mut() {
            b.mark_used(s / SECTORS_PER_PAGE, pages);
        }
        s
    }

    /// Where the space of the files that exist before the run ends: every sector below it
    /// holds data (laid-out files, an aged file system's used part).
    pub(crate) fn preexisting_end(&self) -> u64 {
        self.base
    }

    /// Start allocating after the first `pct` percent of the device: the space an aged file
    /// system already uses (the pre-existing files lie inside it).
    pub(crate) fn skip_used(&mut self, pct: u32) {
        let used = self.capacity / 100 * pct.min(100) as u64 / SECTORS_PER_PAGE * SECTORS_PER_PAGE;
        if used > self.next && used < self.capacity {
            self.next = used;
            self.base = used;
        }
    }

    /// Up to `pages` contiguous pages: from the cursor, or with a bitmap from the bitmap
    /// search at `goal` (a block) and on while the blocks after it are free.
    fn take_near(&mut self, goal: Option<u64>, pages: u64) -> (u64, u64) {
        let Some(b) = self.bitmap.as_mut() else {
            return self.take(pages);
        };
        let Some(first) = b.new_block(goal) else {
            // Full: reuse space as the cursor does (old data is not modelled).
            return self.take(pages);
        };
        let mut got = 1;
        while got < pages && (first + got) % super::ext3_balloc::BLOCKS_PER_GROUP != 0 && !b.used(first + got) {
            b.mark_used(first + got, 1);
            got += 1;
        }
        (first * SECTORS_PER_PAGE, got)
    }

    fn take(&mut self, pages: u64) -> (u64, u64) {
        let mut room = self.skip_reserved();
        if room == 0 {
            self.next = if self.base < self.capacity { self.base } else { 0 };
            room = self.skip_reserved();
            if room == 0 {
                // Nothing outside the reserved area after the base: start over at 0.
                self.next = 0;
                room = self.skip_reserved().max(1);
            }
        }
        let got = pages.min(room);
        let s = self.next;
        self.next += got * SECTORS_PER_PAGE;
        (s, got)
    }
}

/// Pages between the last lookup's extent and a new page, past which a search starts from the
/// estimate ([`BlockMap::first_ending_after`]): beyond a read-ahead window.
const FAR_PAGES: u64 = 512;

impl BlockMap {
    /// A file whose `pages` pages are already on disk, contiguous from `sector`.
    pub(crate) fn contiguous(sector: u64, pages: u64) -> Self {
        let mut m = BlockMap::default();
        if pages > 0 {
            m.insert(Extent { page: 0, sector, pages });
        }
        m
    }

    /// Index of the extent containing `page`, if mapped.
    fn find(&self, page: u64) -> Option<usize> {
        if self.extents.last().is_none_or(|l| page >= l.end_page()) {
            // Past the end: a file being appended to.
            return None;
        }
        let i = self.first_ending_after(page);
        let found = self.extents[i].page <= page;
        if found {
            self.hint.set(i);
        }
        found.then_some(i)
    }

    /// Index of the first extent that ends after `page` (the last one does), searched from
    /// the last lookup's extent outwards: one or two probes for a file walked in order, and a
    /// few, all near each other, for read-ahead jumping a window ahead of the reader and back.
    /// A binary search of the whole map of a fragmented file — thousands of one-page extents
    /// on ext3 under 512 writers — missed the cache at most of its steps and was 6 % of the
    /// wall time of such a run.
    ///
    /// A lookup far from the last one (a random read) starts instead where the page would be
    /// if the extents were of even length: exact for a file of one-page extents, close for
    /// most, where walking out from a distant hint took a dozen probes, each a cache miss.
    /// Either start finds the same extent.
    fn first_ending_after(&self, page: u64) -> usize {
        let ext = &self.extents;
        let ends_by = |e: &Extent| e.end_page() <= page;
        let last = ext.len() - 1;
        let mut h = self.hint.get().min(last);
        if ext[h].page.abs_diff(page) > FAR_PAGES {
            let (first, end) = (ext[0].page, ext[last].end_page());
            if page >= first && page < end {
                h = (u128::from(page - first) * last as u128 / u128::from(end - first)) as usize;
            }
        }
        if ends_by(&ext[h]) {
            // Forward: the answer lies in (h, len), and the last extent ends after `page`.
            let (mut lo, mut probe, mut step) = (h + 1, h + 1, 1);
            while ends_by(&ext[probe]) {
                lo = probe + 1;
                probe = (probe + step).min(ext.len() - 1);
                step *= 2;
            }
            lo + ext[lo..=probe].partition_point(ends_by)
        } else {
            // Backward: the answer lies in [0, h].
            let (mut hi, mut step) = (h, 1);
            loop {
                if hi == 0 {
                    return 0;
                }
                let probe = hi.saturating_sub(step);
                if ends_by(&ext[probe]) {
                    return probe + 1 + ext[probe + 1..=hi].partition_point(ends_by);
                }
                hi = probe;
                step *= 2;
            }
        }
    }

    /// Insert a new extent, merging with its left neighbour when physically contiguous.
    fn insert(&mut self, e: Extent) {
        self.mapped += e.pages;
        // Appending (a file written in order) needs no search.
        let i = match self.extents.last() {
            Some(l) if l.page < e.page => self.extents.len(),
            None => 0,
            Some(_) => self.extents.partition_point(|x| x.page < e.page),
        };
        // Pages are mapped once: `mapped` counts them, and a lookup finds one extent.
        debug_assert!(
            i == 0 || self.extents[i - 1].end_page() <= e.page,
            "extent {e:?} overlaps {:?}",
            self.extents[i - 1]
        );
        debug_assert!(
            self.extents.get(i).is_none_or(|n| e.end_page() <= n.page),
            "extent {e:?} overlaps {:?}",
            self.extents[i]
        );
        if i > 0 {
            let l = &mut self.extents[i - 1];
            if l.end_page() == e.page && l.end_sector() == e.sector {
                l.pages += e.pages;
                return;
            }
        }
        self.extents.insert(i, e);
    }

    /// Physical location of `page` and how many following pages (up to `max`) are
    /// contiguous on disk, allocating unmapped pages from `alloc` as they come (a read of a
    /// hole).
    pub(crate) fn map(&mut self, page: u64, max: u64, alloc: &mut DevAllocator) -> (u64, u64) {
        self.map_with(page, max, None, alloc)
    }

    /// [`BlockMap::map`] for a write that allocates (delayed allocation at writeback, an
    /// O_DIRECT write): on ext4, unmapped pages come out of the file's preallocation window,
    /// sized from `size`, the file's size in pages (`i_size`).
    pub(crate) fn map_for_write(&mut self, page: u64, max: u64, size: u64, alloc: &mut DevAllocator) -> (u64, u64) {
        self.map_with(page, max, Some(size), alloc)
    }

    fn map_with(&mut self, page: u64, max: u64, size: Option<u64>, alloc: &mut DevAllocator) -> (u64, u64) {
        let max = max.max(1);
        if let Some(i) = self.find(page) {
            let e = self.extents[i];
            let off = page - e.page;
            return (e.sector + off * SECTORS_PER_PAGE, (e.pages - off).min(max));
        }
        // Unmapped: allocate up to the next mapped page.
        let i = self.extents.partition_point(|e| e.end_page() <= page);
        let hole = self.extents.get(i).map_or(u64::MAX, |e| e.page - page);
        let want = max.min(hole);
        if let (Some(size), true, None) = (size, alloc.inode_prealloc, &alloc.bitmap) {
            let prev_end = i.checked_sub(1).map_or(0, |p| self.extents[p].end_page());
            return self.map_from_prealloc(page, want, prev_end..page.saturating_add(hole), size, alloc);
        }
        // The goal: continue the previous extent if free space starts right after it.
        let goal = i.checked_sub(1).map(|p| self.extents[p].end_sector() / SECTORS_PER_PAGE);
        let (sector, got) = alloc.take_near(goal, want);
        self.insert(Extent { page, sector, pages: got });
        (sector, got)
    }

    /// Map up to `want` pages from `page`, which lies in the unmapped range `free`, out of
    /// the inode preallocation, making a new one first if `page` is outside it
    /// (`ext4_mb_use_inode_pa`, else `ext4_mb_normalize_request` and a new window). A run
    /// goes on into the next window when that one starts where this one ends on disk, as one
    /// extent would.
    fn map_from_prealloc(&mut self, page: u64, want: u64, free: std::ops::Range<u64>, size: u64, alloc: &mut DevAllocator) -> (u64, u64) {
        let mut done = 0;
        let mut first = 0;
        loop {
            let p = page + done;
            if !self.pa.is_some_and(|pa| pa.page <= p && p < pa.end_page()) {
                if done > 0 && self.pa.is_some_and(|pa| pa.end_sector() != alloc.next) {
                    break;
                }
                let (start, len) = normalized_window(p, want - done, size, p.max(free.start)..free.end);
                let (sector, got) = alloc.take(len);
                if done > 0 && self.pa.is_some_and(|pa| pa.end_sector() != sector) {
                    // Wrapped or past the journal: the run ends; the window stays for later.
                    self.pa = Some(Extent {
                        page: start.max(p),
                        sector,
                        pages: got,
                    });
                    break;
                }
                // Cut short by the end of the device or the journal: keep the asked pages first.
                let start = if start + got > p { start } else { p };
                self.pa = Some(Extent {
                    page: start,
                    sector,
                    pages: got,
                });
            }
            let pa = self.pa.expect("made above");
            let n = (want - done).min(pa.end_page() - p);
            let sector = pa.sector + (p - pa.page) * SECTORS_PER_PAGE;
            if done == 0 {
                first = sector;
            }
            self.insert(Extent { page: p, sector, pages: n });
            done += n;
            if done == want {
                break;
            }
        }
        (first, done)
    }

    /// `ext3_get_block` from `prepare_write` on a file system without reservation windows:
    /// give unmapped `page` a block now, by the bitmap search from `ext3_find_goal`'s goal —
    /// the block after the file's last if this page follows the last allocated one, else the
    /// block of the page before it, else the writer's colour in the inode's group (the
    /// first). `pid` picks the colour, 1/16 of a group apart.
    pub(crate) fn ext3_get_block(&mut self, page: u64, alloc: &mut DevAllocator, pid: u64) {
        if self.mapped(page) {
            return;
        }
        let goal = match self.next_alloc {
            Some((p, b)) if p + 1 == page => b + 1,
            _ => match page.checked_sub(1).and_then(|p| self.lookup(p)) {
                Some(s) => s / SECTORS_PER_PAGE,
                None => (pid % 16) * (super::ext3_balloc::BLOCKS_PER_GROUP / 16),
            },
        };
        let (sector, _) = alloc.take_near(Some(goal), 1);
        self.insert(Extent { page, sector, pages: 1 });
        self.next_alloc = Some((page, sector / SECTORS_PER_PAGE));
    }

    /// Whether `page` has a block: a file without holes answers from its length alone (the
    /// write and writeback paths ask for every page they touch; a search of a fragmented map
    /// for each was 17 % of the 512-thread tiotest's random-write phase).
    pub(crate) fn mapped(&self, page: u64) -> bool {
        match self.extents.last() {
            None => false,
            Some(l) if page >= l.end_page() => false,
            Some(l) if self.mapped == l.end_page() => true,
            Some(_) => self.find(page).is_some(),
        }
    }

    /// Physical location of a mapped `page` (no allocation), for tests and reads.
    pub(crate) fn lookup(&self, page: u64) -> Option<u64> {
        self.find(page).map(|i| {
            let e = self.extents[i];
            e.sector + (page - e.page) * SECTORS_PER_PAGE
        })
    }

    /// Number of extents (a fragmentation measure).
    pub(crate) fn extents(&self) -> usize {
        self.extents.len()
    }
}

/// `ext4_mb_normalize_request`, in pages: the logical window a new allocation reserves
/// around `page` for a file of `size` pages (or up to the request's end if larger) — the
/// request alone for a file of at most `mb_stream_req` (16 blocks), else a size class of up to
/// 1 MiB from the file's start, then 2 MiB, 4 MiB and 8 MiB windows aligned to their size —
/// cut to the unmapped range `free` around it.
fn normalized_window(page: u64, want: u64, size: u64, free: std::ops::Range<u64>) -> (u64, u64) {
    const MB_STREAM_REQ: u64 = 16;
    let size = size.max(page + want);
    if size <= MB_STREAM_REQ {
        return (page, want);
    }
    let (start, len) = match size {
        0..=256 => (0, size.next_power_of_two()),
        257..=1024 => (page / 512 * 512, 512),
        1025..=2048 => (page / 1024 * 1024, 1024),
        _ => (page / 2048 * 2048, 2048),
    };
    let end = (start + len).min(free.end).max(page + want);
    let start = start.max(free.start);
    (start, end - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_file_gets_the_journals_sectors() {
        // A 1 GiB device with a 64 MiB journal in its middle: a laid-out file, then files
        // written until the device wraps, never land in it.
        let cap = (1u64 << 30) / 512;
        let journal = cap / 2..cap / 2 + (64 << 20) / 512;
        let mut a = DevAllocator::new(cap);
        a.reserve(journal.clone());
        let outside = |s: u64, pages: u64| s + pages * SECTORS_PER_PAGE <= journal.start || s >= journal.end;
        let laid = a.preallocate(100_000);
        assert!(outside(laid, 100_000), "a laid-out file across the journal at {laid}");
        let mut f = BlockMap::default();
        let mut mapped = 0;
        let mut page = 0;
        while mapped < 2 * cap / SECTORS_PER_PAGE {
            let (s, n) = f.map(page, 4096, &mut a);
            assert!(n > 0);
            assert!(outside(s, n), "pages {page}.. at sector {s} (+{n}) in the journal");
            mapped += n;
            page += n;
        }
    }

    #[test]
    fn interleaved_writeback_of_two_files_is_sequential_on_disk() {
        let mut a = DevAllocator::new(1 << 30);
        let (mut f, mut g) = (BlockMap::default(), BlockMap::default());
        // The flusher writes 1024 pages of f, then of g, then f again.
        let (s1, n1) = f.map(0, 1024, &mut a);
        let (s2, n2) = g.map(0, 1024, &mut a);
        let (s3, n3) = f.map(1024, 1024, &mut a);
        assert_eq!((n1, n2, n3), (1024, 1024, 1024));
        assert_eq!(s2, s1 + 1024 * 8, "g continues where f's chunk ended");
        assert_eq!(s3, s2 + 1024 * 8, "f's next chunk continues after g's");
        assert_eq!(f.extents(), 2);
    }

    #[test]
    fn a_lone_stream_stays_one_extent_and_lookups_agree() {
        let mut a = DevAllocator::new(1 << 30);
        let base = a.preallocate(100);
        assert_eq!(base, 0);
        let mut f = BlockMap::default();
        for c in 0..10 {
            let (s, n) = f.map(c * 256, 256, &mut a);
            assert_eq!(n, 256);
            assert_eq!(s, 800 + c * 256 * 8);
        }
        assert_eq!(f.extents(), 1);
        assert_eq!(f.lookup(1000), Some(800 + 1000 * 8));
        assert_eq!(f.lookup(5000), None);
        // Mapped pages are found again, not reallocated, and a run stops at the extent end.
        let (s, n) = f.map(2550, 100, &mut a);
        assert_eq!((s, n), (800 + 2550 * 8, 10));
    }

    #[test]
    fn a_used_file_system_allocates_new_files_after_its_data() {
        let mut a = DevAllocator::new(8 * 1000);
        a.preallocate(100);
        a.skip_used(70);
        let mut f = BlockMap::default();
        assert_eq!(f.map(0, 10, &mut a), (8 * 700, 10));
        // Already past the used share: nothing moves.
        let mut b = DevAllocator::new(8 * 1000);
        b.preallocate(800);
        b.skip_used(70);
        assert_eq!(BlockMap::default().map(0, 1, &mut b).0, 8 * 800);
    }

    #[test]
    fn allocation_stops_at_a_mapped_page_and_wraps_past_the_end() {
        let mut a = DevAllocator::new(8 * 100);
        a.preallocate(10);
        let mut f = BlockMap::contiguous(0, 0);
        let (_, n) = f.map(50, 80, &mut a);
        assert_eq!(n, 80);
        let (_, n) = f.map(0, 100, &mut a);
        assert_eq!(n, 10, "device has 100 pages, 90 after the preallocated file");
        let (s, n) = f.map(10, 100, &mut a);
        assert_eq!(n, 40, "the hole before page 50 is 40 pages");
        assert_eq!(s, 80, "wrapped to the first allocatable sector");
    }

    #[test]
    fn files_growing_together_keep_their_own_preallocation_windows() {
        // ext4: a fast stream (8 MiB chunks from writeback) and a slow O_DIRECT appender (1 MiB
        // writes), interleaved. Each allocates in its own window, so the slow file's later
        // writes continue its window instead of landing at the fast one's front.
        let mut a = DevAllocator::new(1 << 30);
        a.use_inode_prealloc();
        let (mut fast, mut slow) = (BlockMap::default(), BlockMap::default());
        let mut slow_sectors = Vec::new();
        for i in 0..16u64 {
            fast.map_for_write(i * 2048, 2048, (i + 64) * 2048, &mut a);
            let (s, n) = slow.map_for_write(i * 256, 256, i * 256 + 256, &mut a);
            assert_eq!(n, 256);
            slow_sectors.push(s);
        }
        // Its 9th to 16th MiB came from one 8 MiB window: contiguous, while the fast file
        // took 64 MiB meanwhile.
        for w in slow_sectors[8..].windows(2) {
            assert_eq!(w[1], w[0] + 256 * 8, "the slow file's writes left its window: {slow_sectors:?}");
        }
        // Without windows (xfs here, ext4 before this model) it follows the cursor.
        let mut b = DevAllocator::new(1 << 30);
        let (mut fast, mut slow) = (BlockMap::default(), BlockMap::default());
        fast.map_for_write(0, 2048, 0, &mut b);
        let (s1, _) = slow.map_for_write(0, 256, 256, &mut b);
        fast.map_for_write(2048, 2048, 0, &mut b);
        let (s2, _) = slow.map_for_write(256, 256, 512, &mut b);
        assert!(s2 > s1 + 2048 * 8, "the bump allocator puts it after the fast file's chunk");
    }

    #[test]
    fn the_window_grows_with_the_file_as_ext4_normalizes_requests() {
        let free = 0..u64::MAX;
        // Up to mb_stream_req (16 blocks): the request alone.
        assert_eq!(normalized_window(3, 1, 4, free.clone()), (3, 1));
        // Small files: a power-of-two size class from the file's start.
        assert_eq!(normalized_window(20, 4, 24, free.clone()), (0, 32));
        assert_eq!(normalized_window(200, 56, 256, free.clone()), (0, 256));
        // Then 2, 4 and 8 MiB windows aligned to their size.
        assert_eq!(normalized_window(600, 10, 700, free.clone()), (512, 512));
        assert_eq!(normalized_window(1500, 10, 1800, free.clone()), (1024, 1024));
        assert_eq!(normalized_window(5000, 256, 1 << 20, free), (4096, 2048));
        // Cut to the unmapped range around the page, never short of the request.
        assert_eq!(normalized_window(5000, 256, 1 << 20, 4500..5400), (4500, 900));
        assert_eq!(normalized_window(5000, 256, 1 << 20, 5000..5256), (5000, 256));
    }

    #[test]
    fn a_lone_ext4_stream_runs_on_across_its_windows() {
        // One file alone: each new window starts where the last ended, so a request that
        // crosses a window's end is not cut there (it would be two requests, then a merge).
        let mut a = DevAllocator::new(1 << 30);
        a.use_inode_prealloc();
        let mut f = BlockMap::default();
        let (s0, n0) = f.map_for_write(0, 1500, 1 << 20, &mut a);
        let (s1, n1) = f.map_for_write(1500, 1500, 1 << 20, &mut a);
        assert_eq!((n0, n1), (1500, 1500), "the second run crosses the 8 MiB window at page 2048");
        assert_eq!(s1, s0 + 1500 * 8);
        assert_eq!(f.extents(), 1);
    }

    proptest::proptest! {
        /// The search from the last lookup finds what a scan of every extent finds, whatever
        /// the order of the lookups — near ones and far ones (from the estimate), in maps of
        /// short extents and of long ones.
        #[test]
        fn a_lookup_finds_the_page_a_scan_finds(
            extents in proptest::collection::vec((0u64..4, 1u64..5), 0..60),
            holes in proptest::bool::ANY,
            scale in proptest::sample::select(vec![1u64, 50, 300]),
            lookups in proptest::collection::vec(0u64..300, 1..80),
        ) {
            let mut m = BlockMap::default();
            let mut page = 0;
            for (k, (gap, pages)) in extents.into_iter().enumerate() {
                page += if holes { gap * scale } else { 0 };
                // Every other extent long: the estimate is off where lengths are uneven.
                let pages = if k % 2 == 0 { pages * scale } else { pages };
                m.insert(Extent { page, sector: 1_000_000 * (k as u64 + 1), pages });
                page += pages;
            }
            for p in lookups.into_iter().map(|p| p * scale) {
                let scan = m.extents.iter().find(|e| e.page <= p && p < e.end_page())
                    .map(|e| e.sector + (p - e.page) * SECTORS_PER_PAGE);
                proptest::prop_assert_eq!(m.lookup(p), scan, "page {}", p);
                proptest::prop_assert_eq!(m.mapped(p), scan.is_some(), "page {}", p);
            }
        }
    }
}
