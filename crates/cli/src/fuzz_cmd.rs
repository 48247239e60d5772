//! `wblab fuzz`: generated and damaged scenario files through the parser and the simulator,
//! with the laws checked on every run. A finding is a panic, a broken law, an error that
//! points outside the file or runs on for pages, a run that is not byte-identical when
//! repeated, or a small scenario that takes too long; each is written as a reproducer file
//! whose first line says how to get it again.

use indicatif::{ProgressBar, ProgressStyle};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::IsTerminal;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wblab_scenario::fuzz::Generator;
use wblab_sim::config::Scenario;
use wblab_sim::{NoProgress, RunOptions};

#[derive(clap::Args)]
pub struct FuzzArgs {
    /// Number of cases.
    #[arg(long, default_value_t = 1000)]
    cases: u64,
    /// Generator seed: the same seed and case number give the same file.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// First case number.
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Print case N's scenario file and exit (reproduce a finding).
    #[arg(long, value_name = "N")]
    print: Option<u64>,
    /// Where reproducers of findings are written.
    #[arg(long, default_value = "fuzz-findings")]
    out: PathBuf,
    /// A run slower than this (wall seconds) is a finding: no generated case needs it.
    #[arg(long, default_value_t = 20.0)]
    slow: f64,
    /// Worker threads [default: the CPUs].
    #[arg(long)]
    jobs: Option<usize>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// Runs are skipped (parsed only) above this many task-seconds of simulated work, so that a
/// batch's time is spent on many cases rather than a few large ones.
const TASK_SECONDS_BUDGET: f64 = 24.0;
/// Every n-th run is repeated and compared: determinism costs a second run.
const REPEAT_EVERY: u64 = 8;
/// An error message longer than this is a finding (echoed input must be cut).
const MAX_ERROR_CHARS: usize = 8192;

#[derive(Default)]
struct Tally {
    cases: u64,
    mutated: u64,
    valid: u64,
    refused: u64,
    /// Valid scenarios whose `wblab measure` plan was built and checked.
    planned: u64,
    runs: u64,
    over_budget: u64,
    repeated: u64,
    events: u64,
    sim_ns: u64,
    slowest: (f64, u64),
    findings: Vec<Finding>,
}

struct Finding {
    case: u64,
    kind: &'static str,
    detail: String,
    text: String,
}

pub fn fuzz(a: FuzzArgs) -> ExitCode {
    let generator = Generator::new(a.seed);
    if let Some(n) = a.print {
        print!("{}", generator.case(n).text);
        return ExitCode::SUCCESS;
    }
    install_quiet_panic_hook();
    let bar = progress(a.quiet, a.cases);
    let t0 = Instant::now();
    let tally = Mutex::new(Tally::default());
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let next = std::sync::atomic::AtomicU64::new(a.first);
    let end = a.first.saturating_add(a.cases);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= end {
                    break;
                }
                let mut local = Tally::default();
                one_case(&generator, i, a.slow, &mut local);
                merge(&mut tally.lock().expect("tally"), local);
                if let Some(b) = &bar {
                    b.inc(1);
                }
            });
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let mut t = tally.into_inner().expect("tally");
    t.findings.sort_by_key(|f| f.case);
    report(&a, &t, t0.elapsed())
}

fn progress(quiet: bool, cases: u64) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::new(cases);
    b.set_style(
        ProgressStyle::with_template("fuzz [{bar:40}] {pos}/{len} cases ({elapsed}, {eta} left)")
            .expect("valid template")
            .progress_chars("=> "),
    );
    Some(b)
}

fn merge(t: &mut Tally, l: Tally) {
    t.cases += l.cases;
    t.mutated += l.mutated;
    t.valid += l.valid;
    t.refused += l.refused;
    t.planned += l.planned;
    t.runs += l.runs;
    t.over_budget += l.over_budget;
    t.repeated += l.repeated;
    t.events += l.events;
    t.sim_ns += l.sim_ns;
    if l.slowest.0 > t.slowest.0 {
        t.slowest = l.slowest;
    }
    t.findings.extend(l.findings);
}

fn one_case(g: &Generator, i: u64, slow: f64, t: &mut Tally) {
    let case = g.case(i);
    t.cases += 1;
    t.mutated += u64::from(case.mutated);
    let mut find = |kind, detail: String| {
        t.findings.push(Finding {
            case: i,
            kind,
            detail,
            text: case.text.clone(),
        })
    };
    let parsed = match catch_unwind(|| wblab_scenario::parse_all(&case.text, "fuzz.toml")) {
        Ok(p) => p,
        Err(_) => return find("panic-parse", take_panic()),
    };
    let scenarios = match parsed {
        Ok(s) => s,
        Err(e) => {
            t.refused += 1;
            if let Some(problem) = bad_error(&e, &case.text) {
                find("bad-error", problem);
            }
            return;
        }
    };
    t.valid += 1;
    for sc in &scenarios {
        // What `wblab measure` (root) would do with the file: nothing outside its scratch
        // directory and the kernel files it may write.
        match catch_unwind(AssertUnwindSafe(|| plan_escapes(sc))) {
            Err(_) => return find("panic-plan", take_panic()),
            Ok(Some(escapes)) if !escapes.is_empty() => return find("plan", escapes.join("; ")),
            Ok(Some(_)) => t.planned += 1,
            Ok(None) => {}
        }
    }
    for sc in scenarios.iter().take(2) {
        if task_seconds(sc) > TASK_SECONDS_BUDGET {
            t.over_budget += 1;
            continue;
        }
        let started = Instant::now();
        let Some(first) = run_one(sc, &mut find) else { return };
        let wall = started.elapsed().as_secs_f64();
        t.runs += 1;
        t.events += first.1;
        t.sim_ns += sc.duration;
        if wall > t.slowest.0 {
            t.slowest = (wall, i);
        }
        if wall > slow {
            find("slow", format!("{wall:.1} s wall for {} events", first.1));
        }
        if i.is_multiple_of(REPEAT_EVERY) {
            t.repeated += 1;
            match run_one(sc, &mut find) {
                Some(again) if again.0 != first.0 => find("nondeterministic", "a second run of the same scenario differs".to_string()),
                _ => {}
            }
        }
    }
}

/// What a measurement's plan of `sc` would touch outside its bounds, on an example root host
/// (`None`: the harness refuses the scenario).
fn plan_escapes(sc: &Scenario) -> Option<Vec<String>> {
    let mut opts = wblab_probe::MeasureOptions::new(PathBuf::from("results/fuzz"));
    opts.scratch_parent = PathBuf::from("/var/tmp");
    opts.host_knobs = sc.seed.is_multiple_of(2);
    let plan = wblab_probe::plan::Plan::build(sc, &opts, &wblab_probe::plan::Host::example()).ok()?;
    Some(plan.escapes())
}

/// Simulated work: task instances × simulated seconds.
fn task_seconds(sc: &Scenario) -> f64 {
    let tasks: u64 = sc.tasks.iter().map(|t| u64::from(t.count)).sum();
    tasks.max(1) as f64 * sc.duration as f64 / 1e9
}

/// One run with the laws checked: its digest and event count, or `None` after a finding.
fn run_one(sc: &Scenario, find: &mut impl FnMut(&'static str, String)) -> Option<(u64, u64)> {
    let opts = RunOptions { check_laws: true };
    match catch_unwind(AssertUnwindSafe(|| wblab_sim::run_with(sc, &mut NoProgress, opts))) {
        Err(_) => {
            find("panic-run", take_panic());
            None
        }
        Ok(Err(law)) => {
            find("law", law.to_string());
            None
        }
        Ok(Ok(r)) => {
            let mut h = DefaultHasher::new();
            format!("{:?}{:?}{:?}{:?}", r.tasks, r.devices, r.vmstat, r.throttle).hash(&mut h);
            r.trace.len().hash(&mut h);
            Some((h.finish(), r.events))
        }
    }
}

/// What is wrong with an error message, if anything: each of the file's errors must point
/// inside the file and stay short whatever the input, and there must not be more of them
/// than the display shows.
fn bad_error(e: &wblab_scenario::ScenarioError, text: &str) -> Option<String> {
    let lines = text.split('\n').count();
    for one in std::iter::once(e).chain(&e.more) {
        let size = one.message.chars().count() + one.hint.as_deref().map_or(0, |h| h.chars().count());
        if one.line > lines || (one.line > 0 && one.column == 0) {
            return Some(format!(
                "points at line {} column {} of a {lines}-line file: {one}",
                one.line, one.column
            ));
        } else if size > MAX_ERROR_CHARS {
            return Some(format!("a {size}-character error message"));
        } else if one.message.is_empty() {
            return Some("an empty error message".to_string());
        }
    }
    if e.more
        .iter()
        .zip(e.more.iter().skip(1))
        .any(|(a, b)| (a.line, a.column) > (b.line, b.column))
    {
        return Some(format!("errors out of file order: {e}"));
    }
    None
}

thread_local! {
    static LAST_PANIC: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Panics are findings, reported once at the end: keep their message and location, print
/// nothing while the batch runs.
fn install_quiet_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        LAST_PANIC.with(|p| *p.borrow_mut() = info.to_string().replace('\n', " "));
    }));
}

fn take_panic() -> String {
    LAST_PANIC.with(|p| std::mem::take(&mut *p.borrow_mut()))
}

fn report(a: &FuzzArgs, t: &Tally, wall: Duration) -> ExitCode {
    let secs = wall.as_secs_f64();
    println!(
        "{} cases (seed {}, cases {}..{}) in {secs:.1} s: {} valid, {} refused with an error ({} damaged files)",
        t.cases,
        a.seed,
        a.first,
        a.first + t.cases,
        t.valid,
        t.refused,
        t.mutated
    );
    println!(
        "{} measurement plans built and checked (nothing outside the scratch directory)",
        t.planned
    );
    println!(
        "{} runs with the laws checked ({} repeated for determinism, {} over the {TASK_SECONDS_BUDGET} task-second budget not run): {:.0} s simulated, {} events; slowest case {} ({:.2} s)",
        t.runs,
        t.repeated,
        t.over_budget,
        t.sim_ns as f64 / 1e9,
        t.events,
        t.slowest.1,
        t.slowest.0
    );
    if t.findings.is_empty() {
        println!("no findings");
        return ExitCode::SUCCESS;
    }
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        eprintln!("error: cannot create {}: {e}", a.out.display());
    }
    for f in &t.findings {
        let file = a.out.join(format!("{}-seed{}-case{}.toml", f.kind, a.seed, f.case));
        let head = format!(
            "# {}: {} (wblab fuzz --seed {} --print {})\n",
            f.kind,
            f.detail.chars().take(400).collect::<String>(),
            a.seed,
            f.case
        );
        let written = std::fs::write(&file, format!("{head}{}", f.text)).is_ok();
        println!(
            "finding: case {}: {}: {}{}",
            f.case,
            f.kind,
            f.detail.chars().take(300).collect::<String>(),
            if written {
                format!(" → {}", file.display())
            } else {
                String::new()
            }
        );
    }
    println!("{} findings", t.findings.len());
    ExitCode::from(1)
}
