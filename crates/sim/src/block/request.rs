//! A block request and who it belongs to: the data the queue, its request lists, the
//! elevators' callers and the machine share.

use crate::drivers::Op;
use crate::Ns;

/// Who submitted a request and waits for it to enter the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Submitter {
    Task(u32),
    Flusher(u16),
    /// The journal thread of a device (ordered data, log blocks).
    Journal(u16),
}

/// Pages of a file carried by a request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seg {
    pub file: u32,
    pub start: u64,
    pub pages: u64,
    /// The chained writeback bio these pages belong to ([`NO_BIO`]: the request is the whole
    /// bio): their writeback ends when every request of that bio has completed.
    pub bio: u32,
}

/// [`Seg::bio`] of pages whose request is their whole bio.
pub(crate) const NO_BIO: u32 = u32::MAX;

impl Seg {
    /// Pages `start..start + pages` of `file`, in a request that is its own bio.
    pub(crate) fn new(file: u32, start: u64, pages: u64) -> Seg {
        Seg {
            file,
            start,
            pages,
            bio: NO_BIO,
        }
    }
}

/// Where a request is on its way through the block layer. Kept so the liveness law can
/// check that every request is somewhere that will move it on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RqStage {
    /// In the pool, unused.
    Free,
    /// Built by writeback or a read, on its submitter's pending list (the plug).
    Built,
    /// Held by blk-throttle.
    Throttled,
    /// Waiting in blk-iolatency for its cgroup's (or an ancestor's) queue depth.
    IolatWait,
    /// Waiting in blk-wbt (`rq_qos_wait`).
    WbtWait,
    /// Waiting for a tag (blk-mq) or a request slot (legacy lists).
    TagWait,
    /// In the elevator.
    Queued,
    /// Dispatched to the device.
    Device,
}

#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub stage: RqStage,
    pub op: Op,
    pub sector: u64,
    pub nr_sectors: u64,
    /// The file pages it carries: one run, or more after merges (kept inline for the first
    /// two: no heap block to chase at submission and completion).
    pub segs: smallvec::SmallVec<[Seg; 2]>,
    /// REQ_SYNC.
    pub sync: bool,
    /// REQ_BACKGROUND (kupdate/background flusher writes).
    pub background: bool,
    /// REQ_RAHEAD.
    pub readahead: bool,
    /// Direct I/O: no page cache pages; wake `submitter` on completion.
    pub direct: bool,
    /// Sectors that came from the O_DIRECT bio. A direct request can take buffered bios in
    /// a merge (the kernel does not tell them apart), so its size alone does not say how much
    /// bypassed the page cache.
    pub direct_sectors: u64,
    /// Counted by blk-wbt.
    pub wbt_tracked: bool,
    /// Held by blk-throttle: its submitter went on, blk-throttle's dispatch work submits it.
    pub throttled: bool,
    pub submitter: Submitter,
    pub issue_ns: Ns,
    /// Its submission starts a journal handle (the first bio of an ext4 extent's mapping, or
    /// of an ext3 `writepage`): a locked transaction makes the submitter wait first.
    pub handle_start: bool,
    /// Built under an ext4 handle that stays open until it is submitted (every bio of an
    /// extent but its last, `mpage_map_and_submit_extent`).
    pub in_handle: bool,
    /// Its submitter sleeps on it holding that handle (counted in the queue's
    /// `handles_blocked`).
    pub handle_wait: bool,
    /// Writes blocks writeback just allocated: its completion updates the inode in a handle
    /// (unwritten-extent conversion, on-disk size).
    pub new_blocks: bool,
    /// Sectors of journal log blocks it carries (no page-cache pages behind them).
    pub log_sectors: u64,
    /// REQ_FUA (a journal's commit record on a device that takes FUA).
    pub fua: bool,
    /// The data of a REQ_PREFLUSH write (a journal's commit record after its pre-flush).
    /// See [`Request::in_flush_seq`].
    pub flush_seq: bool,
    /// A checkpoint write (metadata home) of this journal transaction; 0: none.
    pub ckpt_tid: u32,
    /// The hardware context (blk-mq `hctx`) of the CPU it was submitted on; its tag is there.
    pub hctx: u16,
    /// When it got its tag (`start_time_ns`): diskstats' ticks run from here.
    pub start_ns: Ns,
    /// The cgroup it is charged to (its blkcg: bfq's group, blk-iolatency's), and when it
    /// was submitted (`bio_issue_time`); `iolat_in`: it passed every level of blk-iolatency
    /// and holds a slot at each.
    pub blkcg: Option<u16>,
    pub submit_ns: Ns,
    pub iolat_in: bool,
    /// The in-flight I/O of its submitter's fio job it belongs to (asynchronous direct I/O).
    pub aio: u16,
    /// Its pages were taken for writeback but are still counted dirty: the kernel sets
    /// `PG_writeback` on a page only as it adds it to the bio it is about to submit, so the
    /// pages of bios a writepages call has not reached yet (its submitter blocked in request
    /// allocation) are still in `NR_FILE_DIRTY`. Cleared when it is first submitted.
    pub set_writeback_at_submit: bool,
    /// The last request of a WB_SYNC_NONE inode visit: its acceptance by the block layer ends
    /// the visit's `writepages` and clears the inode's `I_SYNC` ([`crate::fs::inode::Inode::i_sync`]).
    pub ends_i_sync: bool,
    /// A read counted in the member list of a striped device ([`super::request_list::StripeReads`]):
    /// the member, or `NO_MEMBER`.
    pub stripe_member: u16,
    /// `nr_phys_segments`: physically contiguous runs of memory it carries, what a driver's
    /// scatter list (a virtqueue's descriptors) takes one entry each for. A user buffer of
    /// O_DIRECT and a journal's buffers are a segment per 4 KiB page; page-cache pages a
    /// segment per folio.
    pub phys_segs: u32,
}

/// [`Request::stripe_member`] of a request not counted at any member.
pub(crate) const NO_MEMBER: u16 = u16::MAX;

impl Request {
    /// In blk-flush's sequence (REQ_FUA, or the data of a REQ_PREFLUSH write):
    /// `blk_insert_flush` sends it to the hardware context's dispatch list, past the
    /// elevator (`blk_mq_request_bypass_insert`), so a commit record never waits behind
    /// writeback in a sorted queue, and it merges with nothing.
    pub fn in_flush_seq(&self) -> bool {
        self.fua || self.flush_seq
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.nr_sectors * 512
    }
}

/// Physically contiguous segments of pages `start..start + pages` of a page cache whose folios
/// are `folio_pages` long and aligned to their size: the folios the range touches (adjacent
/// folios are taken to be apart in memory).
pub(crate) fn folio_segments(start: u64, pages: u64, folio_pages: u32) -> u32 {
    if pages == 0 {
        return 0;
    }
    let f = u64::from(folio_pages.max(1));
    ((start + pages - 1) / f - start / f + 1) as u32
}

/// The folio a buffered write of `len` pages at page `index` gets (`fgf_set_order` and the
/// index alignment of `__filemap_get_folio`): the largest power of two that fits the write,
/// divides the index and is at most `max_pages`.
pub(crate) fn write_folio_pages(index: u64, len: u64, max_pages: u64) -> u32 {
    let mut f = len.clamp(1, max_pages.max(1));
    f = 1 << f.ilog2();
    if index != 0 {
        f = f.min(1 << index.trailing_zeros().min(63));
    }
    f as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_has_a_segment_per_folio_it_touches() {
        assert_eq!(folio_segments(0, 256, 1), 256, "4 KiB folios: a page each");
        assert_eq!(folio_segments(0, 256, 256), 1, "one 1 MiB folio");
        assert_eq!(folio_segments(128, 320, 256), 2, "the second half of one and a whole next");
        assert_eq!(folio_segments(255, 2, 256), 2, "across a folio boundary");
        assert_eq!(folio_segments(7, 0, 256), 0);
    }

    #[test]
    fn a_writes_folio_follows_its_length_and_alignment() {
        assert_eq!(write_folio_pages(0, 256, 512), 256, "1 MiB at 0: a 1 MiB folio");
        assert_eq!(write_folio_pages(0, 1, 512), 1, "4 KiB: a page");
        assert_eq!(write_folio_pages(0, 300, 512), 256, "the largest power of two that fits");
        assert_eq!(write_folio_pages(64, 256, 512), 64, "an index aligned to 64 pages only");
        assert_eq!(write_folio_pages(0, 4096, 512), 512, "at most the largest folio");
    }
}
