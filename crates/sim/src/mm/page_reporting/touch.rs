//! Fresh frames on the machine: which of an allocation's frames the host took back, who pays
//! their first touch (the writer, or a reader copying out what readahead filled), and the
//! reporting passes (`page_reporting_process`) that take long-free frames back.

use crate::machine::{Event, Machine};
use crate::mm::free_lists::Orders;
use crate::Ns;

impl Machine {
    /// The frames the last allocation (`orders[k]` pages in folios of each order `k`) took
    /// that the host did not back: the task that touches them first pays
    /// `[machine] page_first_touch` for each.
    pub(crate) fn fresh_frames(&mut self, orders: &Orders) -> u64 {
        let in_use = self.vm.in_use();
        self.reporting.as_mut().map_or(0, |r| r.allocated_folios(in_use, orders))
    }

    /// CPU for the first touch of `frames` fresh frames, ns.
    pub(crate) fn first_touch_ns(&self, frames: u64) -> Ns {
        frames * self.cfg.machine.page_first_touch
    }

    /// The last allocation's fresh frames are pages of `ino` that a read fills, `orders[k]`
    /// of them in folios of each order `k`: whoever copies them out first pays for them.
    pub(crate) fn fresh_frames_for_readahead(&mut self, ino: u32, orders: &Orders) {
        let fresh = self.fresh_frames(orders);
        self.inodes[ino as usize].untouched += fresh;
    }

    /// The same for a read of `pages` single pages.
    pub(crate) fn fresh_frames_for(&mut self, ino: u32, pages: u64) {
        if self.reporting.is_none() {
            return;
        }
        self.fresh_frames_for_readahead(ino, &crate::mm::free_lists::in_folios(pages, 0));
    }

    /// CPU for copying `pages` of `ino` out, for the untouched frames among them: a read
    /// copies its file's pages in the order readahead filled them, so the file's untouched
    /// frames are spent from the front. Each pays `[machine] page_first_touch_read`.
    pub(crate) fn copy_out_touch_ns(&mut self, ino: u32, pages: u64) -> Ns {
        let u = &mut self.inodes[ino as usize].untouched;
        let n = (*u).min(pages);
        *u -= n;
        let m = &self.cfg.machine;
        n * m.page_first_touch_read.unwrap_or(m.page_first_touch)
    }

    /// `page_reporting_process`: a pass, and the next one a delay later.
    pub(crate) fn page_report(&mut self) {
        let (in_use, free) = (self.vm.in_use(), self.vm.nr_free);
        if let Some(r) = self.reporting.as_mut() {
            r.pass(in_use, free);
            let delay = r.delay();
            self.q.schedule_in(delay, Event::PageReport);
        }
    }
}
