//! The end_io work on the machine: a device's completed writes into unwritten extents wait
//! for its worker, which converts them and then ends their pages' writeback.

use super::*;
use crate::kernel::cpu::cold_cost;
use crate::machine::{Event, Machine};
use crate::units::{page_range, PAGE_SIZE};

impl Machine {
    /// The writeback of pages [start, start + pages) of `file` on device `dev` completed over
    /// unwritten extents: they end writeback when the device's end_io work runs.
    pub(crate) fn end_writeback_after_conversion(&mut self, dev: u16, file: u32, start: u64, pages: u64) {
        let now = self.now();
        let w = &mut self.queues[dev as usize].end_io;
        w.items.push((file, start, pages));
        w.pages += pages;
        if !w.armed {
            w.armed = true;
            let (hot, cold) = END_IO_CONVERT_NS;
            let at = now + cold_cost(hot, cold, now.saturating_sub(w.last_run));
            self.q.schedule(at, Event::EndIoWork(dev));
        }
    }

    /// The end_io work of device `dev` runs: every page queued for it ends writeback.
    pub(crate) fn end_io_work(&mut self, dev: u16) {
        let now = self.now();
        let w = &mut self.queues[dev as usize].end_io;
        let items = std::mem::take(&mut w.items);
        w.pages = 0;
        w.armed = false;
        w.last_run = now;
        for &(file, start, pages) in &items {
            self.end_page_writeback(file, start, pages);
        }
        // Keep the list's allocation for the next batch.
        let w = &mut self.queues[dev as usize].end_io;
        if w.items.is_empty() {
            w.items = items;
            w.items.clear();
        }
    }

    /// Pages [start, start + n) of `ino` were written: those that were unwritten extents are
    /// now converted, in the handle of transaction `tid`.
    pub(crate) fn unwritten_converted(&mut self, ino: u32, start: u64, n: u64, tid: u32) {
        let inode = &mut self.inodes[ino as usize];
        if !inode.has_unwritten(start, n) {
            return;
        }
        inode.unwritten.remove(start..start + n.max(1));
        let seq = inode.datasync_seq;
        self.laws.durability.converted(ino, start, n, tid, seq);
    }

    /// A direct write of `bytes` at `offset` into `ino` is about to be mapped: pages without
    /// blocks get them now, as unwritten extents, in a handle (`ext4_iomap_alloc`), so the
    /// write converts them when it completes. Only on a journalled file system. Returns
    /// whether it allocated (the write's first bio then needs the handle).
    pub(crate) fn dio_write_begin(&mut self, ino: u32, offset: u64, bytes: u64) -> bool {
        let dev = self.inodes[ino as usize].dev;
        if self.journal(dev).is_none() || bytes == 0 {
            return false;
        }
        let mut allocated = false;
        let (first, end) = page_range(offset, bytes);
        let mut p = first;
        while p < end {
            if self.inodes[ino as usize].blocks.mapped(p) {
                p += 1;
                continue;
            }
            let hole = (p..end).take_while(|&q| !self.inodes[ino as usize].blocks.mapped(q)).count() as u64;
            let (sector, got) = self.inodes[ino as usize]
                .blocks
                .map_for_write(p, hole, end, &mut self.allocs[dev as usize]);
            self.inodes[ino as usize].unwritten.insert(p..p + got);
            self.journal_alloc(ino, dev, sector);
            allocated = true;
            p += got.max(1);
        }
        allocated
    }

    /// A direct write of `bytes` at `offset` into `ino` completed (`iomap_dio_complete` →
    /// the file system's end_io): convert what of it was unwritten.
    pub(crate) fn dio_write_end(&mut self, ino: u32, offset: u64, bytes: u64) {
        let (first, end) = page_range(offset, bytes);
        if !self.inodes[ino as usize].has_unwritten(first, end - first) {
            return;
        }
        let dev = self.inodes[ino as usize].dev;
        self.journal_end_io(ino, dev);
        let tid = self.inodes[ino as usize].datasync_tid;
        self.unwritten_converted(ino, first, end - first, tid);
    }

    /// Whether the task's write() reaches pages without blocks (ext3 allocates them in the
    /// write, under its handle).
    pub(crate) fn write_allocates(&self, tid: u32) -> bool {
        let t = &self.tasks[tid as usize];
        let inode = &self.inodes[t.file as usize];
        let (first, last) = (t.offset / PAGE_SIZE, (t.offset + t.op_left.max(1) - 1) / PAGE_SIZE);
        !inode.blocks.mapped(first) || !inode.blocks.mapped(last)
    }

    /// Whether an O_DSYNC direct write of `bytes` at `offset` into `ino` may go as FUA writes
    /// and skip `generic_write_sync` (`iomap_dio_can_use_fua`): the device takes FUA, every
    /// block is written already (an unwritten or new one needs its conversion committed), and
    /// the inode has no uncommitted data-integrity change (`IOMAP_F_DIRTY`).
    pub(crate) fn dio_write_through(&self, ino: u32, offset: u64, bytes: u64) -> bool {
        let inode = &self.inodes[ino as usize];
        let dev = inode.dev;
        if !self.queues[dev as usize].supports_fua() {
            return false;
        }
        let (first, end) = page_range(offset, bytes);
        if inode.has_unwritten(first, end - first) || (first..end).any(|p| !inode.blocks.mapped(p)) {
            return false;
        }
        self.journal(dev).is_none_or(|j| self.inode_durable(j, ino, true))
    }
}
