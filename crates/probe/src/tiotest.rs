//! tiotest for real: one thread per task instance, each with its own file, running tiotest's
//! four phases (write, random write, read, random read) with every thread joined between
//! two phases, as `tiotest -t N` does; the phase table the model prints, from the threads'
//! own clocks and CPU times.
//!
//! As tiotest's `do_write_test` and `do_random_write_test` do, a write phase ends with each
//! thread's `fsync`, inside the phase's time; random offsets are whole blocks of the file. The
//! schedule counts of the model's table (`wait_on_page_bit` and the others) need the
//! scheduler's trace and are left at 0.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};
use wblab_sim::metrics::tiotest::TiotestPhase;
use wblab_sim::Ns;

/// tiotest's phases, in its order and with its names.
pub const PHASES: [&str; 4] = ["Write", "Random Write", "Read", "Random Read"];

/// What one tiotest thread is given: its file's size, its block and its random operations.
#[derive(Clone, Copy, Debug)]
pub struct TioJob {
    pub file_size: u64,
    pub bs: u64,
    pub random_ops: u64,
}

impl TioJob {
    fn planned(&self, phase: usize) -> u64 {
        match phase {
            0 | 2 => self.file_size,
            _ => self.random_ops.saturating_mul(self.bs),
        }
    }
}

#[derive(Default)]
struct Gate {
    /// Threads that reached each barrier (phase k's start is barrier k; the end is 4).
    arrived: [usize; 5],
    /// When the last thread reached each barrier: phase k ran from `opened[k]` to `opened[k+1]`.
    opened: [Option<Ns>; 5],
    bytes: [u64; 4],
    planned: [u64; 4],
    usr: [u64; 4],
    sys: [u64; 4],
}

/// The state the threads of one tiotest task share: its barriers and the phase totals.
pub struct Tiotest {
    threads: usize,
    gate: Mutex<Gate>,
    cv: Condvar,
}

impl Tiotest {
    pub fn new(threads: usize) -> Self {
        Tiotest {
            threads: threads.max(1),
            gate: Mutex::new(Gate::default()),
            cv: Condvar::new(),
        }
    }

    /// Wait at barrier `k` until every thread is there; false if stopped first.
    fn arrive(&self, k: usize, t0: Instant, stop: &AtomicBool) -> bool {
        let mut g = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        g.arrived[k] += 1;
        if g.arrived[k] == self.threads {
            g.opened[k] = Some(t0.elapsed().as_nanos() as Ns);
            self.cv.notify_all();
            return true;
        }
        while g.opened[k].is_none() {
            if stop.load(Ordering::SeqCst) {
                return false;
            }
            g = self
                .cv
                .wait_timeout(g, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    fn add(&self, phase: usize, planned: u64, bytes: u64, (usr, sys): (u64, u64)) {
        let mut g = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        g.planned[phase] += planned;
        g.bytes[phase] += bytes;
        g.usr[phase] += usr;
        g.sys[phase] += sys;
    }

    /// The phases that began, as the model's table has them; one still running at `now` (ns
    /// since t0) is cut there and not complete.
    pub fn phases(&self, now: Ns) -> Vec<TiotestPhase> {
        let g = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        (0..4)
            .filter_map(|p| {
                let start = g.opened[p]?;
                let end = g.opened[p + 1];
                Some(TiotestPhase {
                    name: PHASES[p],
                    planned_bytes: g.planned[p],
                    bytes: g.bytes[p],
                    time_ns: end.unwrap_or(now).saturating_sub(start),
                    usr_ns: g.usr[p],
                    sys_ns: g.sys[p],
                    complete: end.is_some(),
                    ..Default::default()
                })
            })
            .collect()
    }

    /// One thread's whole test on `file`: each phase after every thread has finished the
    /// previous one. Returns the bytes it wrote and read.
    pub fn run_thread(
        &self,
        job: TioJob,
        file: &Path,
        seed: u64,
        t0: Instant,
        stop: &AtomicBool,
        cpu: impl Fn() -> (u64, u64),
    ) -> io::Result<(u64, u64)> {
        let mut rng = crate::workload::Rng::for_task(seed);
        let mut next = move || rng.next();
        let bs = job.bs.max(1);
        let blocks = (job.file_size / bs).max(2);
        let buf_len = usize::try_from(bs).map_err(io::Error::other)?;
        let mut buf = vec![0x5au8; buf_len];
        let (mut written, mut read) = (0u64, 0u64);
        for phase in 0..4 {
            if !self.arrive(phase, t0, stop) {
                return Ok((written, read));
            }
            let before = cpu();
            let mut moved = 0u64;
            let stopped = || stop.load(Ordering::SeqCst);
            match phase {
                0 => {
                    let mut f = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(file)?;
                    while moved < job.file_size && !stopped() {
                        let n = bs.min(job.file_size - moved);
                        f.write_all(&buf[..n as usize])?;
                        moved += n;
                    }
                    // Stopped midway: the run is over, its data is not waited for.
                    if !stopped() {
                        f.sync_all()?;
                    }
                    written += moved;
                }
                1 => {
                    let f = OpenOptions::new().write(true).open(file)?;
                    for _ in 0..job.random_ops {
                        if stopped() {
                            break;
                        }
                        // tiotest's offsets: a random block of all but the last.
                        f.write_all_at(&buf, (next() % (blocks - 1)) * bs)?;
                        moved += bs;
                    }
                    // Stopped midway: the run is over, its data is not waited for.
                    if !stopped() {
                        f.sync_all()?;
                    }
                    written += moved;
                }
                2 => {
                    let mut f = File::open(file)?;
                    while !stopped() {
                        let n = f.read(&mut buf)?;
                        if n == 0 {
                            break;
                        }
                        moved += n as u64;
                    }
                    read += moved;
                }
                _ => {
                    let f = File::open(file)?;
                    for _ in 0..job.random_ops {
                        if stopped() {
                            break;
                        }
                        moved += f.read_at(&mut buf, (next() % (blocks - 1)) * bs)? as u64;
                    }
                    read += moved;
                }
            }
            let after = cpu();
            self.add(
                phase,
                job.planned(phase),
                moved,
                (after.0.saturating_sub(before.0), after.1.saturating_sub(before.1)),
            );
        }
        self.arrive(4, t0, stop);
        Ok((written, read))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Four threads run the four phases together: each phase moves what tiotest plans for it,
    /// every phase is complete, and none begins before the previous one ended.
    #[test]
    fn the_threads_run_each_phase_together_and_the_table_adds_them_up() {
        let dir = std::env::temp_dir().join(format!("wblab-tiotest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let job = TioJob {
            file_size: 256 << 10,
            bs: 4096,
            random_ops: 20,
        };
        let tio = Arc::new(Tiotest::new(4));
        let stop = Arc::new(AtomicBool::new(false));
        let t0 = Instant::now();
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (tio, stop, file) = (tio.clone(), stop.clone(), dir.join(format!("tio{i}")));
                std::thread::spawn(move || tio.run_thread(job, &file, i, t0, &stop, || (0, 0)).unwrap())
            })
            .collect();
        let moved: Vec<(u64, u64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let phases = tio.phases(t0.elapsed().as_nanos() as Ns);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(phases.len(), 4);
        for (p, ph) in phases.iter().enumerate() {
            assert_eq!(ph.name, PHASES[p]);
            assert!(ph.complete, "{} complete", ph.name);
            assert_eq!(ph.bytes, ph.planned_bytes, "{} moved what it planned", ph.name);
        }
        assert_eq!(phases[0].bytes, 4 * (256 << 10));
        assert_eq!(phases[1].bytes, 4 * 20 * 4096);
        for (w, r) in moved {
            assert_eq!((w, r), ((256 << 10) + 20 * 4096, (256 << 10) + 20 * 4096));
        }
    }

    /// A thread stopped before a barrier lets the others go when they are stopped too, and
    /// the phase it left is not complete.
    #[test]
    fn a_stop_releases_the_threads_waiting_at_a_barrier() {
        let tio = Tiotest::new(2);
        let stop = AtomicBool::new(false);
        let t0 = Instant::now();
        assert!(std::thread::scope(|s| {
            let waiter = s.spawn(|| tio.arrive(0, t0, &stop));
            std::thread::sleep(Duration::from_millis(100));
            stop.store(true, Ordering::SeqCst);
            !waiter.join().unwrap()
        }));
        assert!(tio.phases(1).is_empty(), "no phase began");
    }
}
