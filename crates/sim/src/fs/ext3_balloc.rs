//! ext2/ext3's block bitmap allocator as it was before reservation windows
//! (`fs/ext3/balloc.c`, 2.5.x–2.6.9; later kernels with `-o noreservation`).
//!
//! Those kernels allocate a file's blocks when `write()` reaches them (`ext3_get_block` from
//! `prepare_write`), one block at a time, each from a *goal*: the block after the one the file
//! got last (`ext3_find_goal`), or for a file's first block its inode's group start plus a
//! "colour" of the writer's pid (`ext3_find_near`: 16 colours, 1/16 of a group apart). When
//! the goal is taken, `find_next_usable_block` looks for a free bit up to the end of the
//! goal's 64-bit word, then for a wholly free *byte* of the bitmap (8 blocks) further on,
//! then for any free bit; `ext3_try_to_allocate` then steps back over up to 7 free blocks
//! before the one found. A group without room sends the search to the next groups, with no
//! goal.
//!
//! This is why many concurrent writers interleave their files on disk: each takes the goal
//! of its neighbour, jumps to the next free byte, and the next writer fills what is left of
//! that byte's word. Reservation windows (2.6.10) gave each file a private window and ended
//! it; the model treats them as the writeback-time allocator in [`super::block_alloc`], which
//! keeps a streaming file contiguous too.
//!
//! Blocks are the model's 4 KiB pages. Groups hold 32768 blocks (one bitmap block of bits)
//! and begin with their bitmaps and inode table (514 blocks: 16384 inodes of 128 bytes, as
//! mke2fs made a 4 KiB-block file system). Simplifications: no indirect blocks (one every
//! 1024 data blocks), no superblock backups, no journal's committed-bitmap copy (nothing is
//! freed during a run), all files' inodes in the first group (files created in one
//! directory: `find_group_other` keeps them in their directory's group).

/// Blocks per group: the bits of one 4 KiB bitmap block.
pub(crate) const BLOCKS_PER_GROUP: u64 = 32_768;
/// Blocks at the start of each group that hold no data: block bitmap, inode bitmap and the
/// inode table.
pub(crate) const GROUP_META_BLOCKS: u64 = 2 + 512;
const WORDS_PER_GROUP: usize = (BLOCKS_PER_GROUP / 64) as usize;

/// The block bitmaps of one file system; a set bit is a used block.
#[derive(Clone, Debug)]
pub(crate) struct Ext3Bitmap {
    blocks: u64,
    /// Blocks below this were in use before the run (pre-existing files).
    floor: u64,
    /// Each group's bitmap, made when first touched.
    groups: Vec<Option<Box<[u64]>>>,
    /// Free blocks per group (`bg_free_blocks_count`).
    free: Vec<u32>,
}

impl Ext3Bitmap {
    /// A file system of `blocks` blocks whose first `floor` blocks are in use.
    pub(crate) fn new(blocks: u64, floor: u64) -> Self {
        let ngroups = blocks.div_ceil(BLOCKS_PER_GROUP).max(1) as usize;
        let mut b = Ext3Bitmap {
            blocks,
            floor,
            groups: vec![None; ngroups],
            free: vec![0; ngroups],
        };
        for g in 0..ngroups {
            let (head, tail) = b.initially_free(g);
            b.free[g] = (tail - head) as u32;
        }
        b
    }

    /// The blocks of group `g` free from the start, `[head, tail)` within the group: its
    /// metadata and the pre-existing data come before, the device's end after.
    fn initially_free(&self, g: usize) -> (u64, u64) {
        let first = g as u64 * BLOCKS_PER_GROUP;
        let head = GROUP_META_BLOCKS.max(self.floor.clamp(first, first + BLOCKS_PER_GROUP) - first);
        let tail = self.blocks.clamp(first, first + BLOCKS_PER_GROUP) - first;
        (head.min(tail), tail)
    }

    fn words(&mut self, g: usize) -> &mut [u64] {
        if self.groups[g].is_none() {
            let mut w = vec![0u64; WORDS_PER_GROUP].into_boxed_slice();
            let (head, tail) = self.initially_free(g);
            for i in (0..head).chain(tail..BLOCKS_PER_GROUP) {
                w[(i / 64) as usize] |= 1 << (i % 64);
            }
            self.groups[g] = Some(w);
        }
        self.groups[g].as_deref_mut().expect("made above")
    }

    /// Whether `block` is in use.
    pub(crate) fn used(&self, block: u64) -> bool {
        let g = (block / BLOCKS_PER_GROUP) as usize;
        match self.groups.get(g) {
            Some(Some(w)) => {
                let i = block % BLOCKS_PER_GROUP;
                w[(i / 64) as usize] >> (i % 64) & 1 == 1
            }
            Some(None) => {
                let (head, tail) = self.initially_free(g);
                !(head..tail).contains(&(block % BLOCKS_PER_GROUP))
            }
            None => true,
        }
    }

    /// Mark `n` blocks from `start` used (space handed out outside the bitmap search).
    pub(crate) fn mark_used(&mut self, start: u64, n: u64) {
        for b in start..(start + n).min(self.blocks) {
            if !self.used(b) {
                self.set(b);
            }
        }
    }

    fn set(&mut self, block: u64) {
        let g = (block / BLOCKS_PER_GROUP) as usize;
        let i = block % BLOCKS_PER_GROUP;
        self.words(g)[(i / 64) as usize] |= 1 << (i % 64);
        self.free[g] -= 1;
    }

    /// `ext3_new_block`: a free block, as near `goal` as the search finds one; `None` when
    /// the file system is full.
    pub(crate) fn new_block(&mut self, goal: Option<u64>) -> Option<u64> {
        let ngroups = self.groups.len();
        let goal = goal.filter(|&b| b < self.blocks);
        let g0 = goal.map_or(0, |b| (b / BLOCKS_PER_GROUP) as usize);
        for i in 0..ngroups {
            let g = (g0 + i) % ngroups;
            if self.free[g] == 0 {
                continue;
            }
            let in_group = if i == 0 { goal.map(|b| b % BLOCKS_PER_GROUP) } else { None };
            if let Some(b) = self.try_to_allocate(g, in_group) {
                let block = g as u64 * BLOCKS_PER_GROUP + b;
                self.set(block);
                return Some(block);
            }
        }
        None
    }

    /// `ext3_try_to_allocate`: the goal if free, else what `find_next_usable_block` finds,
    /// moved back over up to 7 free blocks before it. Offsets within group `g`.
    fn try_to_allocate(&mut self, g: usize, goal: Option<u64>) -> Option<u64> {
        let w = self.words(g);
        if let Some(x) = goal {
            if !bit(w, x) {
                return Some(x);
            }
        }
        let mut here = find_next_usable_block(w, goal)?;
        for _ in 0..7 {
            if here == 0 || bit(w, here - 1) {
                break;
            }
            here -= 1;
        }
        Some(here)
    }
}

fn bit(w: &[u64], i: u64) -> bool {
    w[(i / 64) as usize] >> (i % 64) & 1 == 1
}

/// First clear bit in `[from, to)`, if any.
fn next_zero_bit(w: &[u64], from: u64, to: u64) -> Option<u64> {
    let mut i = from;
    while i < to {
        let word = !w[(i / 64) as usize] >> (i % 64);
        if word != 0 {
            let at = i + word.trailing_zeros() as u64;
            return (at < to).then_some(at);
        }
        i = (i / 64 + 1) * 64;
    }
    None
}

/// `find_next_usable_block`: after an occupied goal, a free bit before the end of the goal's
/// 64-bit word; else the first wholly free byte from the goal's byte on; else any free bit
/// from the goal on. Without a goal, the byte and bit searches start at the group's start.
fn find_next_usable_block(w: &[u64], start: Option<u64>) -> Option<u64> {
    let max = BLOCKS_PER_GROUP;
    if let Some(s) = start.filter(|&s| s > 0) {
        let end_goal = ((s + 63) & !63).min(max);
        if let Some(h) = next_zero_bit(w, s, end_goal) {
            return Some(h);
        }
    }
    let here = start.unwrap_or(0);
    let mut byte = here / 8;
    while byte < max / 8 {
        if w[(byte / 8) as usize] >> (8 * (byte % 8)) & 0xff == 0 {
            return Some(byte * 8);
        }
        byte += 1;
    }
    next_zero_bit(w, here, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = BLOCKS_PER_GROUP;

    #[test]
    fn a_lone_writer_gets_consecutive_blocks_from_its_goal() {
        let mut b = Ext3Bitmap::new(4 * G, 0);
        let first = b.new_block(Some(3 * 2048)).unwrap();
        assert_eq!(first, 3 * 2048, "a free goal is taken as it is");
        let mut last = first;
        for _ in 0..100 {
            let n = b.new_block(Some(last + 1)).unwrap();
            assert_eq!(n, last + 1);
            last = n;
        }
    }

    #[test]
    fn group_metadata_and_pre_existing_data_are_never_handed_out() {
        let mut b = Ext3Bitmap::new(2 * G, 1000);
        let first = b.new_block(None).unwrap();
        assert_eq!(first, 1000, "the first free byte after the pre-existing data");
        let next_group = b.new_block(Some(G)).unwrap();
        assert_eq!(next_group, G + GROUP_META_BLOCKS, "a group starts with its bitmaps and inode table");
    }

    #[test]
    fn a_taken_goal_finds_a_free_bit_in_its_word_then_a_free_byte() {
        let mut b = Ext3Bitmap::new(G, 0);
        let base = 4096;
        // Another file holds base..base+3 and base+5; the word has holes at base+4, base+6...
        b.mark_used(base, 4);
        b.mark_used(base + 5, 1);
        assert_eq!(b.new_block(Some(base + 1)), Some(base + 4), "the next free bit of the goal's word");
        // Fill the rest of the goal's word: the search jumps to the next wholly free byte.
        b.mark_used(base + 6, 64 - 6);
        b.mark_used(base + 64, 8);
        assert_eq!(b.new_block(Some(base + 2)), Some(base + 72), "the next wholly free byte");
    }

    #[test]
    fn a_found_byte_is_moved_back_over_free_blocks_before_it() {
        let mut b = Ext3Bitmap::new(G, 0);
        let base = 8192;
        b.mark_used(base, 64);
        // Blocks base+64..base+69 used, base+70..base+71 free, the next byte free.
        b.mark_used(base + 64, 6);
        assert_eq!(
            b.new_block(Some(base + 10)),
            Some(base + 70),
            "back over the two free blocks before byte base+72"
        );
    }

    #[test]
    fn a_full_group_sends_the_search_on_without_a_goal() {
        let mut b = Ext3Bitmap::new(2 * G, 0);
        b.mark_used(0, G);
        assert_eq!(b.new_block(Some(100)), Some(G + GROUP_META_BLOCKS));
        let mut full = Ext3Bitmap::new(G, 0);
        full.mark_used(0, G);
        assert_eq!(full.new_block(Some(5)), None);
    }

    #[test]
    fn two_interleaved_writers_fragment_each_other() {
        // Two files written a block at a time in turn, both from the same goal (same colour).
        let mut b = Ext3Bitmap::new(G, 0);
        let goal = 4096;
        let (mut fa, mut fb) = (vec![b.new_block(Some(goal)).unwrap()], vec![b.new_block(Some(goal)).unwrap()]);
        for _ in 0..200 {
            fa.push(b.new_block(Some(fa.last().unwrap() + 1)).unwrap());
            fb.push(b.new_block(Some(fb.last().unwrap() + 1)).unwrap());
        }
        let runs = |f: &[u64]| 1 + f.windows(2).filter(|p| p[1] != p[0] + 1).count();
        assert!(runs(&fa) > 10 && runs(&fb) > 10, "runs {} and {}", runs(&fa), runs(&fb));
        let mut all: Vec<u64> = fa.iter().chain(&fb).copied().collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), fa.len() + fb.len(), "no block handed out twice");
    }
}
