//! `tiotest` (the threaded I/O tester behind tiobench): N threads, one file each, four phases
//! run one after the other with every thread joined in between — sequential write, random
//! write, sequential read, random read. Each phase reports its wall time, rate and the CPU
//! the threads used in user and system mode, as tiotest prints them:
//!
//! ```text
//! | Item                  | Time     | Rate         | Usr CPU  | Sys CPU |
//! | Write 16384 MBs       | 926.5 s  | 17.683 MB/s  | 1.9 %    | 161.3 % |
//! ```
//!
//! Each thread ends a write phase with `fsync(fd)` and `close(fd)` inside the phase's timing
//! (tiotest's `do_write_test` and `do_random_write_test`), so the write rates include getting
//! the data to disk, and every thread's `filemap_fdatawait` sleeps on its pages under
//! writeback.
//!
//! With hundreds of threads most of them sleep on page wait queues (reads in
//! `wait_on_page_bit`, random writes on pages under I/O in `__lock_page`, the fsyncs in
//! `wait_on_page_bit` too), which is what the page-wake policy of the era
//! ([`crate::config::PageWake`]) acts on.

use crate::config::JobConfig;
use crate::kernel::task::Phase;
use crate::kernel::waitqueue::{WaitSite, PG_LOCKED};
use crate::machine::Machine;
use crate::metrics::tiotest::TiotestPhase;
use crate::mm::page_cache::PageState;
use crate::units::PAGE_SIZE;
use crate::workload::state::{TioTask, PHASES};

impl Machine {
    fn tio_totals(&self) -> [u64; 6] {
        let mut t = [0u64; 6];
        for task in self.tasks.iter().filter(|t| matches!(t.job, JobConfig::Tiotest { .. })) {
            t[0] += task.cpu_user;
            t[1] += task.cpu_sys;
            t[2] += task.wq.schedules[WaitSite::WaitOnPageBit as usize];
            t[3] += task.wq.schedules[WaitSite::LockPage as usize];
            t[4] += task.wq.schedules[WaitSite::WaitOnBuffer as usize];
            t[5] += task.wq.schedules[WaitSite::DoGetWriteAccess as usize];
        }
        t
    }

    fn tio_phase_result(&self, complete: bool) -> TiotestPhase {
        let s = &self.tiotest;
        let now = self.totals_now();
        let p = s.phase as usize;
        TiotestPhase {
            name: PHASES[p],
            planned_bytes: s.planned[p],
            bytes: s.bytes[p],
            time_ns: self.now().saturating_sub(s.phase_start),
            usr_ns: now[0] - s.mark[0],
            sys_ns: now[1] - s.mark[1],
            wait_on_page_bit: now[2] - s.mark[2],
            lock_page: now[3] - s.mark[3],
            wait_on_buffer: now[4] - s.mark[4],
            do_get_write_access: now[5] - s.mark[5],
            complete,
        }
    }

    fn totals_now(&self) -> [u64; 6] {
        self.tio_totals()
    }

    /// The first tiotest thread to run sets the test up.
    fn tio_init(&mut self) {
        let mut threads = 0u32;
        let mut planned = [0u64; 4];
        for t in &self.tasks {
            if let JobConfig::Tiotest {
                file_size, bs, random_ops, ..
            } = t.job
            {
                threads += 1;
                // Saturating: the totals only size the phase table.
                let random = random_ops.saturating_mul(bs);
                planned[0] = planned[0].saturating_add(file_size);
                planned[1] = planned[1].saturating_add(random);
                planned[2] = planned[2].saturating_add(file_size);
                planned[3] = planned[3].saturating_add(random);
            }
        }
        let s = &mut self.tiotest;
        s.threads = threads;
        s.planned = planned;
        s.phase_start = self.q.now();
    }

    /// This thread finished its part of the phase: wait for the others, or end the phase
    /// and release everyone. Returns the thread's next phase (None: it sleeps).
    fn tio_phase_done(&mut self, tid: u32) -> Option<Phase> {
        self.tiotest.finished += 1;
        if self.tiotest.finished < self.tiotest.threads {
            self.tiotest.waiting.push(tid);
            return None;
        }
        let r = self.tio_phase_result(true);
        self.tiotest.results.push(r);
        self.tiotest.phase += 1;
        self.tiotest.finished = 0;
        self.tiotest.phase_start = self.now();
        self.tiotest.mark = self.tio_totals();
        let phase = self.tiotest.phase;
        let waiting = std::mem::take(&mut self.tiotest.waiting);
        for &w in &waiting {
            let task = &mut self.tasks[w as usize];
            task.tio = TioTask {
                phase,
                ..Default::default()
            };
            task.phase = Phase::NextOp;
            // Each phase opens the file anew: a fresh readahead state.
            self.ra_open(w);
            self.run_task_at(w, self.q.now());
        }
        self.tiotest.waiting = waiting;
        self.tiotest.waiting.clear();
        self.tasks[tid as usize].tio = TioTask {
            phase,
            ..Default::default()
        };
        self.ra_open(tid);
        Some(Phase::NextOp)
    }

    /// `next_op` of a tiotest thread.
    pub(crate) fn tio_next_op(&mut self, tid: u32) -> Option<Phase> {
        let t = tid as usize;
        if self.tiotest.threads == 0 {
            self.tio_init();
        }
        let JobConfig::Tiotest {
            file_size,
            bs,
            random_ops,
            user_cost,
            ..
        } = self.tasks[t].job
        else {
            return None;
        };
        let bs = bs.max(1);
        let tio = self.tasks[t].tio;
        if tio.phase as usize >= PHASES.len() {
            self.mark_done(tid);
            return None;
        }
        let sequential = tio.phase == 0 || tio.phase == 2;
        let finished = if sequential {
            tio.done >= file_size
        } else {
            tio.done >= random_ops
        };
        if finished {
            // tiotest ends each write phase with `fsync(fd); close(fd);` before it stops the
            // phase's clock: the phase lasts until every thread's data is on disk.
            if tio.phase < 2 && !tio.synced {
                self.tasks[t].tio.synced = true;
                return self.vfs_fsync(tid);
            }
            let next = self.tio_phase_done(tid);
            if next.is_none() {
                self.tasks[t].phase = Phase::Think;
            }
            return next;
        }
        let file = self.tasks[t].file;
        let (off, n) = if sequential {
            (tio.done, bs.min(file_size - tio.done))
        } else {
            let off = match tio.pending_off {
                Some(o) => o,
                None => {
                    let blocks = (file_size / bs).max(1);
                    self.tasks[t].rng.below(blocks) * bs
                }
            };
            (off, bs)
        };
        if tio.phase == 1 {
            // write_begin: lock the page; a page being read is locked and the writer sleeps
            // in __lock_page. A page under writeback is not: 2.6 unlocks it once its bio is
            // submitted and does not wait for the write (stable pages are 3.9's).
            let (p0, p1) = (off / PAGE_SIZE, (off + n).div_ceil(PAGE_SIZE));
            for p in p0..p1 {
                if self.page_bits(file, p) & PG_LOCKED != 0 {
                    self.tasks[t].tio.pending_off = Some(off);
                    self.page_wait(tid, file, p, PG_LOCKED, WaitSite::LockPage, true);
                    return None;
                }
            }
        }
        let phase = tio.phase as usize;
        self.tiotest.bytes[phase] += n;
        let task = &mut self.tasks[t];
        task.tio.pending_off = None;
        task.tio.done += if sequential { n } else { 1 };
        task.offset = off;
        task.op_left = n;
        task.wq.user_pending += user_cost;
        if phase < 2 {
            let end = (off + n).div_ceil(PAGE_SIZE);
            let inode = &mut self.inodes[file as usize];
            inode.size_pages = inode.size_pages.max(end);
            Some(Phase::FileModified)
        } else {
            Some(Phase::FileAccessed)
        }
    }

    /// Account a written chunk of a tiotest thread as any write is accounted; pages being read
    /// (a random write meeting a readahead) give their allocation back.
    pub(crate) fn tio_account_write(&mut self, tid: u32, file: u32, start: u64, n: u64) {
        let mut idx = start;
        let end = start + n;
        while idx < end {
            let (st, run) = self.inodes[file as usize].mapping.run_at(idx, end - idx);
            let run = run.max(1).min(end - idx);
            match st {
                Some(PageState::Reading) => {
                    self.vm.nr_alloc_pending -= run;
                    self.vm.nr_free += run;
                }
                _ => self.account_dirtied(tid, file, idx, run),
            }
            idx += run;
        }
    }

    /// Whether a tiotest thread reads sequentially now (its read phase).
    pub(crate) fn tio_sequential_read(&self, tid: u32) -> bool {
        matches!(self.tasks[tid as usize].job, JobConfig::Tiotest { .. }) && self.tasks[tid as usize].tio.phase == 2
    }

    /// The per-phase results at the end of the run (a phase still running is cut short).
    pub(crate) fn tio_results(&self) -> Vec<TiotestPhase> {
        let mut r = self.tiotest.results.clone();
        if self.tiotest.threads > 0 && (self.tiotest.phase as usize) < PHASES.len() {
            r.push(self.tio_phase_result(false));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_follow_tiotest_and_wli() {
        // wli's ext3 "before" Random Read row: 2000 MB in 448.1 s, 1.2 % usr, 42.2 % sys.
        let p = TiotestPhase {
            name: "Random Read",
            planned_bytes: 2000 << 20,
            bytes: 2000 << 20,
            time_ns: 448_100_000_000,
            usr_ns: (0.012 * 448.1e9) as u64,
            sys_ns: (0.422 * 448.1e9) as u64,
            ..Default::default()
        };
        assert!((p.rate_mb_s() - 4.463).abs() < 0.001);
        assert!((p.usr_pct() - 1.2).abs() < 0.01);
        assert!((p.sys_pct() - 42.2).abs() < 0.01);
        // The report prints 10.2834 MB/cpusec.
        assert!((p.mb_per_cpu_sec() - 10.28).abs() < 0.01, "{}", p.mb_per_cpu_sec());
    }
}
