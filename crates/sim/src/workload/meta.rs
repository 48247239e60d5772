//! Metadata jobs: `du` (readdir + `lstat` of every entry of a big tree), `ls -l` of several
//! directories, and an application launch (look up and read a set of files). Their cost is
//! the metadata blocks they find absent from the page cache: each is a 4 KiB synchronous read
//! (`REQ_SYNC | REQ_META`), and each needs a free page first — which, in the generations whose
//! reclaim waited on dirty pages, is where a reader can stall (see `vmscan_pageout.rs`).

use crate::config::JobConfig;
use crate::fs::block_alloc::BlockMap;
use crate::fs::inode::Inode;
use crate::fs::metadata::{MetaJob, MetaTree, Next};
use crate::jobs::launch::TouchOrder;
use crate::kernel::cpu::Who;
use crate::kernel::task::Phase;
use crate::machine::Machine;
use crate::mm::page_cache::PageState;
use crate::units::{bytes_to_pages, PAGE_SIZE};
use crate::Ns;

/// Cached lookups processed per CPU burst (keeps the event count low for cached walks).
const LOOKUP_BATCH: u32 = 64;
/// `MMAP_LOTSAMISS`: a mapped file whose faults miss this much more than they hit stops
/// reading around them.
const MMAP_LOTSAMISS: u32 = 100;

impl Machine {
    /// Lay out the metadata jobs' trees and launch files on their devices, after the readers'
    /// pre-existing files (called once, when the machine is built).
    pub(crate) fn setup_meta_jobs(&mut self) {
        for tid in 0..self.tasks.len() {
            let job = self.tasks[tid].job.clone();
            let dev = self.tasks[tid].dev as usize;
            let (tree, data): (MetaTree, Vec<u64>) = match job {
                JobConfig::Du {
                    files,
                    files_per_dir,
                    subdirs,
                    inode_size,
                    inode_spacing,
                    ..
                } => {
                    let fpd = files_per_dir.max(1) as u64;
                    let tree =
                        MetaTree::nested(files.div_ceil(fpd), fpd, subdirs as u64, inode_size as u64, false).spaced(inode_spacing as u64);
                    (tree, Vec::new())
                }
                JobConfig::Ls { dirs, entries, .. } => (MetaTree::new(dirs as u64, entries as u64, 256, true), Vec::new()),
                JobConfig::Launch {
                    files,
                    files_per_dir,
                    ref file_sizes,
                    ..
                } => {
                    let n = files.max(1) as u64;
                    let per_dir = (files_per_dir.max(1) as u64).min(n);
                    let sizes = (0..n).map(|i| file_sizes[i as usize % file_sizes.len().max(1)]).collect();
                    // An application's files: `files_per_dir` to a directory, each directory in
                    // its own group.
                    (MetaTree::new(n.div_ceil(per_dir), per_dir, 256, true), sizes)
                }
                _ => continue,
            };
            let mut tree = tree;
            let span = tree.span_pages();
            let base = self.allocs[dev].preallocate(span);
            tree.file = self.inodes.len() as u32;
            let mut meta = Inode::new(dev as u16, BlockMap::contiguous(base, span), span);
            meta.buffer_cache = true;
            self.inodes.push(meta);
            let first_data = self.inodes.len() as u32;
            for &size in &data {
                let pages = bytes_to_pages(size);
                let at = self.allocs[dev].preallocate(pages);
                self.inodes.push(Inode::new(dev as u16, BlockMap::contiguous(at, pages), pages));
            }
            // The tree's directory count for a launch equals its files (one entry per file).
            self.tasks[tid].meta = Some(Box::new(MetaJob {
                tree,
                dir: 0,
                pos: 0,
                first_data,
                launch_file: 0,
                launch_files: data.len() as u32,
                reading_data: false,
                mmap_miss: 0,
                op_start: 0,
                lookup_start: None,
                own_file: self.tasks[tid].file,
                own_offset: 0,
                write_left: 0,
                atime_dirs: 0,
            }));
        }
    }

    /// CPU cost of one cached lookup (`lstat`, or a `getdents` of a cached block).
    fn lookup_ns(&self) -> Ns {
        2 * self.cfg.machine.syscall_overhead + 1_000
    }

    /// Start a run of the job (a walk, an `ls`, a launch).
    pub(crate) fn meta_start(&mut self, tid: u32) -> Option<Phase> {
        let now = self.now();
        let writes = match self.tasks[tid as usize].job {
            JobConfig::Launch { writes, .. } => writes,
            _ => 0,
        };
        // strictatime: every getdents writes the directory's atime again, run after run.
        let strict = {
            let tree = self.tasks[tid as usize].meta.as_ref().expect("metadata job").tree.file;
            let dev = self.inodes[tree as usize].dev;
            self.journal(dev).is_some_and(|j| j.p.atime == crate::config::Atime::Strictatime)
        };
        let m = self.tasks[tid as usize].meta.as_mut().expect("metadata job");
        if strict {
            m.atime_dirs = 0;
        }
        m.dir = 0;
        m.pos = 0;
        m.launch_file = 0;
        m.reading_data = false;
        m.op_start = now;
        m.lookup_start = None;
        m.write_left = writes;
        self.tasks[tid as usize].op_start = now;
        Some(Phase::Meta)
    }

    /// Advance the job: process cached lookups in a batch, start a read for an absent block,
    /// or move to the data of a launch file.
    pub(crate) fn meta_step(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let now = self.now();
        let launch = matches!(self.tasks[t].job, JobConfig::Launch { .. });
        let du = matches!(self.tasks[t].job, JobConfig::Du { .. });
        let cost = self.lookup_ns();
        let mut burst: Ns = 0;
        let mut done_lookups = 0;
        loop {
            if now >= self.tasks[t].stop {
                return self.meta_finish(tid, false);
            }
            let (next, file) = {
                let m = self.tasks[t].meta.as_ref().expect("metadata job");
                (m.next(), m.tree.file)
            };
            match next {
                Next::EndOfRun => {
                    if burst > 0 {
                        return self.meta_cpu(tid, burst);
                    }
                    if self.tasks[t].meta.as_ref().is_some_and(|m| m.write_left > 0) {
                        return self.launch_write(tid);
                    }
                    return self.meta_finish(tid, true);
                }
                Next::Data => {
                    if burst > 0 {
                        return self.meta_cpu(tid, burst);
                    }
                    return self.launch_read(tid);
                }
                Next::Page(_) if !launch && self.dir_atime_due(tid) => {
                    // getdents of a new directory updates its atime (a lookup does not).
                    if burst > 0 {
                        return self.meta_cpu(tid, burst);
                    }
                    if !self.dir_accessed(tid) {
                        return None;
                    }
                }
                Next::Page(page) => match self.inodes[file as usize].mapping.state(page) {
                    Some(PageState::Clean | PageState::Dirty | PageState::Writeback | PageState::WritebackDirty | PageState::Queued) => {
                        burst += cost;
                        let m = self.tasks[t].meta.as_mut().expect("metadata job");
                        let waited = m.lookup_start.take().map_or(0, |s| now - s);
                        if m.advance(launch) && du {
                            self.tasks[t].record_op(now + burst, waited + cost);
                        }
                        done_lookups += 1;
                        if done_lookups >= LOOKUP_BATCH {
                            return self.meta_cpu(tid, burst);
                        }
                    }
                    Some(PageState::Reading) => {
                        if burst > 0 {
                            return self.meta_cpu(tid, burst);
                        }
                        let m = self.tasks[t].meta.as_mut().expect("metadata job");
                        m.lookup_start.get_or_insert(now);
                        self.inodes[file as usize].read_waiters.push(tid);
                        self.tasks[t].phase = Phase::Meta;
                        return None;
                    }
                    None => {
                        if burst > 0 {
                            return self.meta_cpu(tid, burst);
                        }
                        let m = self.tasks[t].meta.as_mut().expect("metadata job");
                        m.lookup_start.get_or_insert(now);
                        return self.meta_read(tid, file, page);
                    }
                },
            }
        }
    }

    fn meta_cpu(&mut self, tid: u32, burst: Ns) -> Option<Phase> {
        self.tasks[tid as usize].phase = Phase::Meta;
        self.cpu_run(Who::Task(tid), burst);
        None
    }

    /// A synchronous 4 KiB read of metadata block `page` of mapping `file`.
    fn meta_read(&mut self, tid: u32, file: u32, page: u64) -> Option<Phase> {
        let t = tid as usize;
        self.tasks[t].phase = Phase::Meta;
        // A buffer-cache page: GFP_NOFS (lowmem only, and its reclaim cannot write).
        if !self.alloc_pages_nofs(tid, 1) {
            return None;
        }
        self.start_page_read(tid, file, page);
        self.inodes[file as usize].read_waiters.push(tid);
        self.task_submit_pending(tid);
        None
    }

    /// Launch: read the current file's data (buffered, with readahead), then the next file.
    fn launch_read(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let (first, k) = {
            let m = self.tasks[t].meta.as_ref().expect("metadata job");
            (m.first_data, m.launch_file)
        };
        let ino = first + k;
        let size = self.inodes[ino as usize].size_pages.saturating_mul(PAGE_SIZE);
        let (bs, mmap) = match self.tasks[t].job {
            JobConfig::Launch { bs, mmap, .. } => (bs, mmap),
            _ => (128 << 10, false),
        };
        if self.tasks[t].file != ino {
            // open(): a new file, a new readahead state.
            let task = &mut self.tasks[t];
            task.file = ino;
            task.offset = 0;
            self.ra_open(tid);
            self.tasks[t].meta.as_mut().expect("metadata job").mmap_miss = 0;
        }
        if mmap {
            return self.launch_fault(tid);
        }
        let off = self.tasks[t].offset;
        if off >= size {
            return self.launch_next_file(tid);
        }
        self.tasks[t].op_left = bs.min(size - off);
        // The first read of a file updates its atime (relatime: once; a journal handle).
        Some(if off == 0 { Phase::FileAccessed } else { Phase::WaitRead })
    }

    /// Launch: the current file is done; on to the next, or to the end of the run.
    fn launch_next_file(&mut self, tid: u32) -> Option<Phase> {
        let m = self.tasks[tid as usize].meta.as_mut().expect("metadata job");
        let n = m.launch_files;
        m.reading_data = false;
        m.launch_file += 1;
        m.pos += 1;
        if m.pos > m.tree.dir_blocks + m.tree.entries || m.launch_file >= n {
            m.dir += 1;
            m.pos = 0;
        }
        if m.launch_file >= n {
            m.dir = m.tree.dirs;
        }
        Some(Phase::Meta)
    }

    /// Mapped launch: the program's page faults on the current file (`filemap_fault`), every
    /// page once in the order of [`TouchOrder`]. A page in the cache is mapped for the cost
    /// of a kernel entry; a missing one is a major fault, which reads `ra_pages` around it
    /// (from half a window before it) and sleeps until its own page is read, nothing in
    /// flight meanwhile. Once the file's misses outnumber its hits by `MMAP_LOTSAMISS`, a miss
    /// reads its page alone. (Newer kernels also mark the window for an asynchronous
    /// read-ahead on the next hit, and map cached neighbours in one fault: not modelled.)
    fn launch_fault(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let ino = self.tasks[t].file;
        let pages = self.inodes[ino as usize].size_pages;
        let ra = self.ra_pages(self.tasks[t].dev as usize);
        let order = TouchOrder::new(pages);
        let cost = self.cfg.machine.syscall_overhead;
        let mut burst: Ns = 0;
        loop {
            let k = self.tasks[t].offset;
            if k >= pages {
                if burst > 0 {
                    return self.meta_cpu(tid, burst);
                }
                return self.launch_next_file(tid);
            }
            let page = order.page(k);
            match self.inodes[ino as usize].mapping.state(page) {
                Some(PageState::Reading) => {
                    if burst > 0 {
                        return self.meta_cpu(tid, burst);
                    }
                    // Someone's read-around has it: lock_page waits for the read.
                    self.inodes[ino as usize].read_waiters.push(tid);
                    self.tasks[t].phase = Phase::Meta;
                    return None;
                }
                Some(_) => {
                    burst += cost;
                    // Counted as read, as `wblab measure` counts each page it touches.
                    self.tasks[t].bytes_read += PAGE_SIZE;
                    self.tasks[t].offset += 1;
                    let m = self.tasks[t].meta.as_mut().expect("metadata job");
                    m.mmap_miss = m.mmap_miss.saturating_sub(1);
                    if burst >= LOOKUP_BATCH as Ns * cost {
                        return self.meta_cpu(tid, burst);
                    }
                }
                None => {
                    if burst > 0 {
                        return self.meta_cpu(tid, burst);
                    }
                    // A page allocation that waits in reclaim comes back here.
                    self.tasks[t].phase = Phase::Meta;
                    let m = self.tasks[t].meta.as_mut().expect("metadata job");
                    m.mmap_miss += 1;
                    if m.mmap_miss <= MMAP_LOTSAMISS {
                        self.issue_reads(tid, page.saturating_sub(ra / 2), ra);
                    }
                    if self.inodes[ino as usize].mapping.state(page).is_none() && !self.read_one_page(tid, ino, page) {
                        return None;
                    }
                    self.inodes[ino as usize].read_waiters.push(tid);
                    self.task_submit_pending(tid);
                    return None;
                }
            }
        }
    }

    /// Launch: the next 4 KiB write of the application's own file (through the buffered write
    /// path and its throttling, like any dirtier).
    fn launch_write(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        let m = self.tasks[t].meta.as_mut().expect("metadata job");
        let n = m.write_left.min(PAGE_SIZE);
        m.write_left -= n;
        let (own, at) = (m.own_file, m.own_offset);
        m.own_offset += PAGE_SIZE;
        let task = &mut self.tasks[t];
        task.file = own;
        task.offset = at;
        task.op_left = n;
        Some(Phase::FileModified)
    }

    /// The run ended (or the task's stop time came): record the command's latency for ls
    /// and launch, then repeat, think, or finish.
    fn meta_finish(&mut self, tid: u32, completed: bool) -> Option<Phase> {
        let t = tid as usize;
        let now = self.now();
        let start = self.tasks[t].meta.as_ref().map_or(now, |m| m.op_start);
        let job = self.tasks[t].job.clone();
        if completed && !matches!(job, JobConfig::Du { .. }) {
            self.tasks[t].record_op(now, now - start);
        }
        if now >= self.tasks[t].stop {
            return self.meta_done(tid);
        }
        match job {
            JobConfig::Du { repeat: true, .. } => self.meta_start(tid),
            JobConfig::Ls { interval: Some(i), .. } | JobConfig::Launch { interval: Some(i), .. } => {
                self.tasks[t].phase = Phase::Think;
                self.sleep_task(tid, start.saturating_add(i).saturating_sub(now).max(1));
                None
            }
            _ => self.meta_done(tid),
        }
    }

    fn meta_done(&mut self, tid: u32) -> Option<Phase> {
        self.mark_done(tid);
        None
    }
}
