//! Writeback bios larger than one request: split after blk-throttle, completed as one.
//!
//! With large folios (ext4 from 6.16, xfs from 5.18) a writeback bio holds up to 256 folios,
//! so it is no longer bounded by one request: ext4 submits one bio per mapped extent (at most
//! `MAX_WRITEPAGES_EXTENT_LEN`, 8 MiB), iomap one per contiguous run of the writeback call.
//! `submit_bio_noacct` runs blk-throttle on the whole bio (`blk_throtl_bio`), and only
//! `blk_mq_submit_bio` splits it to `max_sectors` (`bio_split_to_limits`); the split parts
//! are chained to the parent, whose end_io (`ext4_end_bio`, `iomap_writepage_end_bio`) ends
//! writeback of all its folios when the last part completes.
//!
//! Measured on 6.18 (docs/validation.md): under a throttled loop device a `dd`'s dirty count
//! falls in steps of 2048 pages on ext4 and of the whole writeback chunk (5120 pages at
//! 32 MiB/s) on xfs, where requests of `max_sectors` would give steps of 320.
//!
//! The model keeps one request per split part (built together, submitted in order by the same
//! submitter); the first part is the bio's head and carries the bio's bytes through blk-throttle,
//! the later parts follow it ([`super::blk_throttle::BlkThrottle::follow`]). Their segments name
//! the chained bio, and [`BioChains::done`] says when the last one has completed.
//!
//! Simplifications: the split parts are charged no IOPS of their own in blk-throttle (the
//! kernel charges each split bio one IO again); a bio never spans two files.

use super::request::{Seg, NO_BIO};

/// One chained writeback bio.
#[derive(Clone, Copy, Debug)]
struct Chained {
    /// The pages of the whole bio.
    seg: Seg,
    /// Its first request (the one blk-throttle sees).
    head: u32,
    /// Bytes of all its requests.
    bytes: u64,
    /// Segments not yet completed.
    left: u32,
    /// Pages of segments that completed while others are still in flight.
    done_pages: u64,
    /// The sector of the part submitted last (for `block_split`, which names it).
    last_part_sector: u64,
}

/// The chained bios of one request queue: a pool, reused without allocation once warm.
#[derive(Debug, Default)]
pub(crate) struct BioChains {
    pool: Vec<Chained>,
    free: Vec<u32>,
    /// Pages whose request completed but whose bio has parts still in flight: still under
    /// writeback (the conservation law counts them).
    pub waiting_pages: u64,
}

impl BioChains {
    /// A new chained bio over pages `start..start + pages` of `file`; add its requests with
    /// [`BioChains::add`].
    pub(crate) fn begin(&mut self, file: u32, start: u64, pages: u64) -> u32 {
        let c = Chained {
            seg: Seg::new(file, start, pages),
            head: u32::MAX,
            bytes: 0,
            left: 0,
            done_pages: 0,
            last_part_sector: u64::MAX,
        };
        match self.free.pop() {
            Some(b) => {
                self.pool[b as usize] = c;
                b
            }
            None => {
                self.pool.push(c);
                (self.pool.len() - 1) as u32
            }
        }
    }

    /// Request `id` of `bytes` is the next part of bio `b` (the first one is its head).
    pub(crate) fn add(&mut self, b: u32, id: u32, bytes: u64) {
        let c = &mut self.pool[b as usize];
        if c.left == 0 {
            c.head = id;
        }
        c.left += 1;
        c.bytes += bytes;
    }

    /// The head request of bio `b` and the bytes of the whole bio.
    pub(crate) fn head(&self, b: u32) -> (u32, u64) {
        let c = &self.pool[b as usize];
        (c.head, c.bytes)
    }

    /// A part of bio `b` at `sector` is submitted: the sector of the part before it (itself
    /// for the first), where the kernel's `block_split` says the bio was cut.
    pub(crate) fn part_submitted(&mut self, b: u32, sector: u64) -> u64 {
        let c = &mut self.pool[b as usize];
        let before = if c.last_part_sector == u64::MAX {
            sector
        } else {
            c.last_part_sector
        };
        c.last_part_sector = sector;
        before
    }

    /// A segment of `pages` of bio `b` completed: the whole bio's pages when it was the last.
    pub(crate) fn done(&mut self, b: u32, pages: u64) -> Option<Seg> {
        debug_assert_ne!(b, NO_BIO);
        let c = &mut self.pool[b as usize];
        c.left -= 1;
        if c.left > 0 {
            c.done_pages += pages;
            self.waiting_pages += pages;
            return None;
        }
        self.waiting_pages -= c.done_pages;
        self.free.push(b);
        Some(c.seg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bio_ends_when_its_last_part_completes() {
        let mut c = BioChains::default();
        let b = c.begin(7, 100, 30);
        for (id, pages) in [(3u32, 10u64), (4, 10), (5, 10)] {
            c.add(b, id, pages * 4096);
        }
        assert_eq!(c.head(b), (3, 30 * 4096));
        assert!(c.done(b, 10).is_none());
        assert!(c.done(b, 10).is_none());
        assert_eq!(c.waiting_pages, 20);
        let whole = c.done(b, 10).expect("the last part ends the bio");
        assert_eq!((whole.file, whole.start, whole.pages), (7, 100, 30));
        assert_eq!(c.waiting_pages, 0);
        // The slot is reused.
        assert_eq!(c.begin(1, 0, 1), b);
    }
}
