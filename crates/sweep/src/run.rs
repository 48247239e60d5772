//! Running a sweep's points: each on its own thread, one simulation per core (each stays
//! single-threaded, so a point's figures are what it gives alone, in any order and on any
//! machine). Finished points reach the caller one at a time, on its thread, in sweep order:
//! the few that finish early wait in a bounded window, so a table is written in order as it
//! grows, in memory that does not grow with the sweep.

use crate::table::{InvalidPoint, PointRows};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex};
use std::time::Instant;
use wblab_scenario::{ScenarioError, SweepPlan, SweepPoint};
use wblab_sim::config::Scenario;
use wblab_sim::metrics::RunResult;

/// Why a sweep stopped. (A point that is not a valid scenario does not stop it: see
/// [`InvalidPoint`].)
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// A point broke one of the model's laws: a bug in wblab, not in the file.
    Law(String),
    /// Results could not be written or read.
    Io(String),
}

impl Failure {
    /// The exit code `wblab` gives it: 3 a broken law, 1 I/O.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Law(_) => 3,
            Failure::Io(_) => 1,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Io(m) => f.write_str(m),
            Failure::Law(m) => write!(
                f,
                "{m}\n  hint: a broken law is a bug in wblab's model, not in the scenario; please report it with the scenario file"
            ),
        }
    }
}

/// A hook given each point's scenario before it runs (the command line's `--seed`).
pub type Adjust<'a> = &'a (dyn Fn(&mut Scenario) + Sync);
/// A hook given each finished run (writing its own results directory, for `--runs`).
pub type Keep<'a> = &'a (dyn Fn(&SweepPoint, &RunResult, f64) -> Result<(), String> + Sync);

/// Builds a sweep's point by its index.
pub type Build<'a> = &'a dyn Fn(u64) -> Result<SweepPoint, ScenarioError>;

/// How points run.
#[derive(Clone, Copy, Default)]
pub struct Options<'a> {
    /// Simulations at once; 0 for every core.
    pub workers: usize,
    /// Check the model's laws while running (debug builds always do).
    pub check: bool,
    pub adjust: Option<Adjust<'a>>,
    pub keep: Option<Keep<'a>>,
}

/// Simulations at once for `n` points: `workers`, or every core.
pub fn workers_for(workers: usize, n: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    (if workers == 0 { cores } else { workers }).min(n).max(1)
}

/// Run `work(0..n)` on `workers` threads (0: one per core) and return the results in index
/// order, calling `finished(k)` on this thread as the k-th one ends (for a progress line).
/// For independent simulations that all run to the end, such as a scenario's repeats.
pub fn each_parallel<R: Send>(n: usize, workers: usize, work: impl Fn(usize) -> R + Sync, mut finished: impl FnMut(usize)) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, R)>();
    let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
    std::thread::scope(|s| {
        for _ in 0..workers_for(workers, n) {
            let (tx, next, work) = (tx.clone(), &next, &work);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n || tx.send((i, work(i))).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        for (k, (i, r)) in rx.into_iter().enumerate() {
            out[i] = Some(r);
            finished(k + 1);
        }
    });
    out.into_iter().map(|r| r.expect("every item ran")).collect()
}

/// What a point gave: its rows, or why it is not a valid scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum PointOutcome {
    Ran(PointRows),
    Invalid(InvalidPoint),
}

/// Build, simulate and tabulate point `i` (`build` builds a point, as
/// [`SweepPlan::with_points`] gives). A point that does not build (a combination of values
/// that is not a valid scenario, which `wblab check` of a large sweep does not try) is
/// [`PointOutcome::Invalid`], not a failure: the sweep goes on without it.
pub fn run_built(plan: &SweepPlan, build: Build<'_>, i: u64, opts: &Options<'_>) -> Result<PointOutcome, Failure> {
    let mut p = match build(i) {
        Ok(p) => p,
        Err(e) => {
            // The first line of the first error, without its `error: `: one CSV cell.
            let text = e.to_string();
            let line = text.lines().next().unwrap_or_default();
            return Ok(PointOutcome::Invalid(InvalidPoint {
                point: i,
                values: plan.values(i, i + 1).pop().unwrap_or_default(),
                reason: line.strip_prefix("error: ").unwrap_or(line).to_string(),
            }));
        }
    };
    if let Some(adjust) = opts.adjust {
        adjust(&mut p.scenario);
    }
    let run_opts = wblab_sim::RunOptions {
        check_laws: opts.check || wblab_sim::RunOptions::default().check_laws,
    };
    let t0 = Instant::now();
    let r = wblab_sim::run_with(&p.scenario, &mut wblab_sim::machine::NoProgress, run_opts).map_err(|v| {
        let sc = &p.scenario;
        Failure::Law(format!(
            "{} at the sweep's point {i} (kernel {}, seed {}): {v}",
            sc.name, sc.kernel, sc.seed
        ))
    })?;
    if let Some(keep) = opts.keep {
        keep(&p, &r, t0.elapsed().as_secs_f64()).map_err(Failure::Io)?;
    }
    Ok(PointOutcome::Ran(PointRows::of(i, p.values, &r)))
}

/// [`run_built`] for one point, parsing the sweep's file for it.
pub fn run_point(plan: &SweepPlan, i: u64, opts: &Options<'_>) -> Result<PointOutcome, Failure> {
    run_built(plan, &|i| plan.point(i), i, opts)
}

/// Points finished but not yet handed over that a sweep may hold, per worker: a worker does
/// not start a point this far ahead of the first one not yet handed over, so a sweep of any
/// size holds at most this many finished points in memory (a few hundred KiB) however
/// unequal their run times.
pub const REORDER_WINDOW_PER_WORKER: usize = 256;

/// Run the points `todo` yields, calling `done` with each in the order `todo` gives them (on
/// this thread), as soon as it and every point before it have finished. Each worker parses
/// the sweep's file once. The first failure stops the points not yet started and is returned
/// once the running ones end; `done` may stop the sweep too, by returning an error.
pub fn run_ordered(
    plan: &SweepPlan,
    todo: impl Iterator<Item = u64> + Send,
    count: usize,
    opts: &Options<'_>,
    mut done: impl FnMut(PointOutcome) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let workers = workers_for(opts.workers, count);
    let window = REORDER_WINDOW_PER_WORKER * workers;
    let claim = Mutex::new(todo.enumerate());
    // How many points have been handed over; workers wait on it to stay within the window.
    let handed = (Mutex::new(0usize), Condvar::new());
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<PointOutcome, Failure>)>();
    std::thread::scope(|s| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (claim, handed, stop) = (&claim, &handed, &stop);
            s.spawn(move || {
                let work = |build: Build<'_>| loop {
                    let next = claim.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some((k, i)) = next else { return };
                    let (lock, cv) = handed;
                    let mut n = lock.lock().unwrap_or_else(|e| e.into_inner());
                    while k >= *n + window && !stop.load(Ordering::Relaxed) {
                        n = cv.wait(n).unwrap_or_else(|e| e.into_inner());
                    }
                    drop(n);
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let r = run_built(plan, build, i, opts);
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    if tx.send((k, r)).is_err() {
                        return;
                    }
                };
                // A file that does not parse once (a bad kernel) fails at every point: each
                // point then reports it as its own.
                if plan.with_points(|build| work(build)).is_err() {
                    work(&|i| plan.point(i));
                }
            });
        }
        drop(tx);
        let mut first_failure = None;
        let mut waiting: BTreeMap<usize, PointOutcome> = BTreeMap::new();
        let mut next = 0usize;
        for (k, r) in rx {
            if first_failure.is_some() {
                continue;
            }
            let r = r.and_then(|o| {
                waiting.insert(k, o);
                while let Some(o) = waiting.remove(&next) {
                    next += 1;
                    done(o)?;
                }
                Ok(())
            });
            // Under the lock, so a worker between its check and its wait cannot miss it.
            let (lock, cv) = &handed;
            let mut n = lock.lock().unwrap_or_else(|e| e.into_inner());
            *n = next;
            if let Err(f) = r {
                stop.store(true, Ordering::Relaxed);
                first_failure = Some(f);
            }
            cv.notify_all();
        }
        first_failure.map_or(Ok(()), Err)
    })
}

/// Run the points `indices` of `plan`, calling `done` with each in that order (see
/// [`run_ordered`]).
pub fn run_points(
    plan: &SweepPlan,
    indices: &[u64],
    opts: &Options<'_>,
    done: impl FnMut(PointOutcome) -> Result<(), Failure>,
) -> Result<(), Failure> {
    run_ordered(plan, indices.iter().copied(), indices.len(), opts, done)
}

/// Run the points `indices` and return their rows, and the points that are not valid
/// scenarios, in sweep order (for a caller that wants the table in memory, not files).
pub fn run_sorted(plan: &SweepPlan, indices: &[u64], opts: &Options<'_>) -> Result<(Vec<PointRows>, Vec<InvalidPoint>), Failure> {
    let (mut rows, mut invalid) = (Vec::with_capacity(indices.len()), Vec::new());
    run_points(plan, indices, opts, |r| {
        match r {
            PointOutcome::Ran(r) => rows.push(r),
            PointOutcome::Invalid(p) => invalid.push(p),
        }
        Ok(())
    })?;
    // In the order of `indices`, which a caller may give unsorted.
    rows.sort_by_key(|r| r.point);
    invalid.sort_by_key(|p| p.point);
    Ok((rows, invalid))
}
