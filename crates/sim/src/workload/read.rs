//! The buffered read path (`do_generic_mapping_read`, `filemap_read`): readahead by the
//! release's rules ([`crate::mm::readahead`]), the waits for pages under read, the copy out.

use crate::block::queue::Submitter;
use crate::config::{JobConfig, ReadWait, Readahead};
use crate::drivers::Op;
use crate::kernel::cpu::Who;
use crate::kernel::task::Phase;
use crate::kernel::waitqueue::{WaitSite, PG_LOCKED};
use crate::machine::Machine;
use crate::mm::page_cache::PageState;
use crate::mm::readahead::{async_ra_window, get_init_ra_size, get_next_ra_size, FileRaState, ReadaheadIo};
use crate::units::PAGE_SIZE;
use crate::Ns;

/// `VM_MIN_READAHEAD`: the smallest window a miss shrinks the windowed readahead to.
const VM_MIN_READAHEAD: u64 = 16 * 1024;

/// The windowed readahead's `do_page_cache_readahead` on the machine: nothing while the
/// device is read-congested, else the absent pages' reads on the task's plug (`f` 4 KiB pages
/// to a kernel page).
struct RaIo<'a> {
    m: &'a mut Machine,
    tid: u32,
    dev: usize,
    f: u64,
}

impl ReadaheadIo for RaIo<'_> {
    fn do_page_cache_readahead(&mut self, start: u64, n: u64) -> u64 {
        if self.m.bdi_read_congested(self.dev) {
            return 0;
        }
        self.m.issue_reads(self.tid, start * self.f, n * self.f).div_ceil(self.f)
    }
}

impl Machine {
    /// `bdi_read_congested`: a legacy request list at or past its congestion mark for reads,
    /// or, for a dm stripe, any member's. blk-mq queues are never congested.
    pub(crate) fn bdi_read_congested(&self, dev: usize) -> bool {
        let q = &self.queues[dev];
        let Some(rl) = q.legacy.as_ref() else { return false };
        q.stripe.as_ref().map_or(rl.congested[0], |s| s.read_congested())
    }

    /// Issue reads for the absent pages of [start, start+n) of the task's file; returns how
    /// many pages it started reading.
    pub(super) fn issue_reads(&mut self, tid: u32, start: u64, n: u64) -> u64 {
        let t = tid as usize;
        let ino = self.tasks[t].file;
        let size = self.inodes[ino as usize].size_pages;
        let end = (start + n).min(size);
        let dev = self.tasks[t].dev as usize;
        let max_pages = (self.queues[dev].max_sectors / 8).max(1);
        // Readahead's folios follow its window (`page_cache_ra_order`), as a write's follow
        // the write.
        if self.large_folios(ino as usize) {
            let f = crate::block::request::write_folio_pages(
                start,
                end.saturating_sub(start),
                super::MAX_FOLIO_BYTES / crate::units::PAGE_SIZE,
            );
            let inode = &mut self.inodes[ino as usize];
            inode.folio_pages = inode.folio_pages.max(f);
        }
        let folio = self.inodes[ino as usize].folio_pages;
        let mut idx = start;
        let mut started = 0;
        while idx < end {
            let (st, run) = self.inodes[ino as usize].mapping.run_at(idx, end - idx);
            if st.is_some() {
                idx += run;
                continue;
            }
            let (sector, contig) = self.inodes[ino as usize].blocks.map(idx, run.min(max_pages), &mut self.allocs[dev]);
            let run = contig;
            // Readahead allocations give up rather than wait (__GFP_NORETRY).
            if !self.alloc_pages_noretry(tid, run) {
                break;
            }
            if self.reporting.is_some() {
                let orders = crate::mm::readahead::ra_folio_orders(start..end, idx..idx + run, self.tasks[t].ra.order);
                self.fresh_frames_for_readahead(ino, &orders);
            }
            self.inodes[ino as usize].mapping.set_range(idx, run, Some(PageState::Reading));
            self.memcg_account(ino, run as i64, 0, 0);
            self.page_inserted(ino, idx, run);
            let seg = crate::block::queue::Seg::new(ino, idx, run);
            let id = self.queues[dev].alloc(Op::Read, sector, run * 8, Some(seg), Submitter::Task(tid), true, false, true, false);
            self.queues[dev].rq_mut(id).phys_segs = crate::block::request::folio_segments(idx, run, folio);
            self.tasks[t].pending.push_back((dev as u16, id));
            idx += run;
            started += run;
        }
        started
    }

    fn alloc_pages_noretry(&mut self, tid: u32, n: u64) -> bool {
        if self.era.inactive.is_some() {
            return self.alloc_pages_noretry_pageout(n);
        }
        if !self.try_charge_memcg_noretry(tid, n) {
            return false;
        }
        self.kswapd_top_up(n);
        self.vm.take_for_readahead(n)
    }

    /// A buffered read: readahead, wait for the pages, then copy them out
    /// (`do_generic_mapping_read`, `filemap_read`).
    pub(super) fn read_step(&mut self, tid: u32) -> Option<Phase> {
        match self.cfg.policy.readahead {
            Readahead::OnDemand => self.read_step_ondemand(tid),
            Readahead::Windowed => self.read_step_windowed(tid),
        }
    }

    /// The read's pages are all uptodate: copy them out.
    fn read_copy(&mut self, tid: u32) -> Option<Phase> {
        let t = &self.tasks[tid as usize];
        let (ino, left) = (t.file, t.op_left);
        let pages = left.div_ceil(PAGE_SIZE);
        let touch = self.copy_out_touch_ns(ino, pages) + self.copy_out_cold_ns(ino, pages);
        self.tasks[tid as usize].phase = Phase::ReadCopyDone;
        let burst = self.copy_ns(left) + self.cfg.machine.syscall_overhead + touch;
        self.cpu_run(Who::Task(tid), burst);
        None
    }

    /// CPU for copying `pages` of `ino` out, for those among them a device read filled and no
    /// copy has read since (spent from the front, as `copy_out_touch_ns` spends untouched frames): each pays
    /// `[machine] cold_copy_cost`.
    fn copy_out_cold_ns(&mut self, ino: u32, pages: u64) -> Ns {
        let c = &mut self.inodes[ino as usize].cold;
        let n = (*c).min(pages);
        *c -= n;
        n * self.cfg.machine.cold_copy_cost
    }

    /// Wait for page `idx` of `ino`, locked under a read: the reader's own `readpage`
    /// (`wait_on_page_locked`), or someone's read, readahead included, which the release waits
    /// for as its [`ReadWait`] says. Then submit the task's plugged reads.
    fn read_wait(&mut self, tid: u32, ino: u32, idx: u64, own_readpage: bool) -> Option<Phase> {
        if own_readpage || self.cfg.policy.read_wait == ReadWait::WaitLocked {
            self.page_wait(tid, ino, idx, PG_LOCKED, WaitSite::WaitOnPageBit, false);
        } else {
            self.page_wait(tid, ino, idx, PG_LOCKED, WaitSite::LockPage, true);
        }
        self.tasks[tid as usize].phase = Phase::WaitRead;
        self.task_submit_pending(tid);
        None
    }

    /// The device's `ra_pages` in 4 KiB pages (at least one): the on-demand window's maximum
    /// and a mapped fault's read-around.
    pub(super) fn ra_pages(&self, dev: usize) -> u64 {
        (self.cfg.devices[dev].queue.read_ahead_kb as u64 * 1024 / PAGE_SIZE).max(1)
    }

    /// The device's `ra_pages` and `VM_MIN_READAHEAD` in the kernel's pages, and how many
    /// 4 KiB pages make one of those.
    fn ra_limits(&self, dev: usize) -> (u64, u64, u64) {
        let kpage = self.cfg.machine.page_size.max(PAGE_SIZE);
        let max = self.cfg.devices[dev].queue.read_ahead_kb as u64 * 1024 / kpage;
        (max, (VM_MIN_READAHEAD / kpage).max(1), kpage / PAGE_SIZE)
    }

    /// `file_ra_state_init`: the task opened a file.
    pub(crate) fn ra_open(&mut self, tid: u32) {
        let (max, _, _) = self.ra_limits(self.tasks[tid as usize].dev as usize);
        self.tasks[tid as usize].ra = FileRaState::opened(max);
    }

    /// `do_generic_mapping_read` of 2.6.6 with the windowed readahead: every kernel page of
    /// the request in turn is shown to `page_cache_readahead`, then looked up. A page not in
    /// the cache is a readahead miss (`handle_ra_miss`) and read alone (`readpage`, then
    /// `wait_on_page_locked`); a page under a read is waited for as the release's
    /// [`ReadWait`] says.
    fn read_step_windowed(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let ino = self.tasks[t].file;
        let offset = self.tasks[t].offset;
        let p0 = offset / PAGE_SIZE;
        let p1 = (offset + self.tasks[t].op_left).div_ceil(PAGE_SIZE).max(p0 + 1);
        let dev = self.tasks[t].dev as usize;
        let (max, min, f) = self.ra_limits(dev);
        let (k0, k1) = (p0 / f, (p1 - 1) / f);
        let ra = &mut self.tasks[t].ra;
        if ra.op_offset != offset || ra.op_next < k0 {
            ra.op_offset = offset;
            ra.op_next = k0;
        }
        for k in k0..=k1 {
            if self.tasks[t].ra.op_next <= k {
                let mut ra = self.tasks[t].ra;
                ra.op_next = k + 1;
                ra.page_cache_readahead(k, max, &mut RaIo { m: self, tid, dev, f });
                self.tasks[t].ra = ra;
            }
            // The request's part of kernel page k.
            let (a, b) = ((k * f).max(p0), ((k + 1) * f).min(p1));
            let mut idx = a;
            while idx < b {
                let (st, run) = self.inodes[ino as usize].mapping.run_at(idx, b - idx);
                match st {
                    Some(st) if st.is_uptodate() => idx += run,
                    Some(_) => return self.read_wait(tid, ino, idx, false),
                    None => {
                        // find_get_page missed: read the whole kernel page alone.
                        let size = self.inodes[ino as usize].size_pages;
                        let (ka, kb) = (k * f, ((k + 1) * f).min(size.max(k * f + 1)));
                        let (mut s, mut e) = (idx, idx + 1);
                        while s > ka && self.inodes[ino as usize].mapping.state(s - 1).is_none() {
                            s -= 1;
                        }
                        while e < kb && self.inodes[ino as usize].mapping.state(e).is_none() {
                            e += 1;
                        }
                        if !self.alloc_pages(tid, e - s) {
                            return None;
                        }
                        self.fresh_frames_for(ino, e - s);
                        self.tasks[t].ra.handle_ra_miss(k, max, min);
                        self.start_pages_read(tid, ino, s, e - s);
                        return self.read_wait(tid, ino, idx, true);
                    }
                }
            }
        }
        self.read_copy(tid)
    }

    /// The on-demand read: readahead, wait for the pages, then copy them out.
    fn read_step_ondemand(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let ino = self.tasks[t].file;
        let p0 = self.tasks[t].offset / PAGE_SIZE;
        let p1 = (self.tasks[t].offset + self.tasks[t].op_left).div_ceil(PAGE_SIZE);
        let sequential = match &self.tasks[t].job {
            JobConfig::Cat { .. } | JobConfig::Launch { .. } => true,
            JobConfig::Fio(j) => !j.rw.random(),
            _ => self.tio_sequential_read(tid),
        };
        let ra_max = self.ra_pages(self.tasks[t].dev as usize);
        // Async readahead when the reader reaches the marker of the current window.
        if sequential && self.tasks[t].ra.size > 0 {
            let task = &self.tasks[t];
            let marker = task.ra.start + task.ra.size - task.ra.async_size;
            if p1 > marker && task.ra.async_size > 0 {
                let start = task.ra.start + task.ra.size;
                let mut size = get_next_ra_size(task.ra.size, ra_max);
                let mut order = 0;
                if self.large_folios(ino as usize) {
                    let max_order = (super::MAX_FOLIO_BYTES / PAGE_SIZE).ilog2();
                    (size, order) = async_ra_window(start, size, self.tasks[t].ra.order, ra_max, max_order);
                }
                let task = &mut self.tasks[t];
                task.ra.start = start;
                task.ra.size = size;
                task.ra.async_size = size;
                task.ra.order = order;
                self.issue_reads(tid, start, size);
            }
        }
        // First page of the request that is not uptodate.
        let mut idx = p0;
        let mut missing = None;
        while idx < p1 {
            let (st, run) = self.inodes[ino as usize].mapping.run_at(idx, p1 - idx);
            match st {
                Some(st) if st.is_uptodate() => idx += run,
                other => {
                    missing = Some((idx, other));
                    break;
                }
            }
        }
        match missing {
            None => self.read_copy(tid),
            Some((idx, st)) => {
                let mut own_readpage = false;
                if st.is_none() {
                    // Sync readahead (page_cache_sync_ra): a new window from the miss; a
                    // random read reads what it asked for.
                    let req = p1 - idx;
                    let (size, async_size) = if sequential {
                        let size = get_init_ra_size(req, ra_max);
                        (size, size.saturating_sub(req))
                    } else {
                        (req, 0)
                    };
                    let task = &mut self.tasks[t];
                    task.ra.start = idx;
                    task.ra.size = size;
                    task.ra.async_size = async_size;
                    task.ra.order = 0;
                    self.issue_reads(tid, idx, size);
                    // Readahead gave up on memory: read the one page the read needs.
                    if self.inodes[ino as usize].mapping.state(idx).is_none() {
                        if !self.read_one_page(tid, ino, idx) {
                            return None;
                        }
                        own_readpage = true;
                    }
                }
                self.read_wait(tid, ino, idx, own_readpage)
            }
        }
    }

    /// Reads of pages [start, start+n) of `file` completed: the pages are uptodate.
    pub(crate) fn end_page_read(&mut self, file: u32, start: u64, n: u64) {
        self.inodes[file as usize]
            .mapping
            .transition(start, n, PageState::Reading, Some(PageState::Clean));
        self.inodes[file as usize].cold += n;
        if self.era.inactive.is_none() {
            self.lru_add_clean(file, start, n);
        }
        self.wake_pages(file, start, n, crate::kernel::waitqueue::PG_LOCKED);
        let waiters = std::mem::take(&mut self.inodes[file as usize].read_waiters);
        for t in waiters {
            if matches!(self.tasks[t as usize].phase, Phase::WaitRead | Phase::Meta) {
                self.run_task_at(t, self.q.now());
            }
        }
    }
}
