//! `wblab run FILE` (or `wblab sweep FILE`) for a file with a `[sweep]` table: its points run
//! in parallel into one table, `<out>/sweep.csv` (and `sweep-devices.csv`, both also as
//! Parquet), a row per point and task group; the terminal shows the table (the first rows of
//! a large sweep), the points that meet `--where` ranked by `--minimize`/`--maximize`, and
//! `--plot` draws a figure against a key. Each point's own results directory (trace included)
//! is written only with `--runs`.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wblab_scenario::{SweepPlan, SweepPoint};
use wblab_sim::config::Scenario;
use wblab_sim::metrics::RunResult;
use wblab_sweep::objective::Objectives;
use wblab_sweep::view::{charts, table, write_json, Seen};
use wblab_sweep::Options;

/// The options only a sweep reads (`wblab run` and `wblab sweep` share them).
#[derive(clap::Args, Clone, Default)]
pub struct SweepArgs {
    /// For a sweep: simulations at once [default: one per core].
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// For a sweep: also write each point's own results directory (summary, CSVs, trace.txt)
    /// into <out>/<key=value,...>/; by default only the sweep's tables are written.
    #[arg(long)]
    pub runs: bool,
    /// For a sweep: keep the points already whole in <out>/sweep.csv (this sweep's index and
    /// values, every row once) and run only the others, e.g. after an interrupted sweep.
    #[arg(long)]
    pub resume: bool,
    /// For a sweep: draw this figure (`reader.op_p99_ms`, names as in sweep.csv) against the
    /// key --x into <out>/sweep-<figure>.svg. Repeatable.
    #[arg(long, value_name = "FIGURE")]
    pub plot: Vec<String>,
    /// For a sweep: the key --plot draws along x (full or last component) [default: the first].
    #[arg(long, value_name = "KEY")]
    pub x: Option<String>,
    /// For a sweep: rank the points by this figure, smallest first (`reader.op_p99_ms`;
    /// names as in sweep.csv, `<group>.<figure>` or `<device>.<figure>`). Two objectives
    /// (with --maximize) print the Pareto front.
    #[arg(long, value_name = "FIGURE")]
    pub minimize: Vec<String>,
    /// For a sweep: rank the points by this figure, largest first (`copy.throughput`).
    #[arg(long, value_name = "FIGURE")]
    pub maximize: Vec<String>,
    /// For a sweep: keep the points meeting a constraint, e.g. "reader.op_p99_ms < 50" or
    /// "copy.throughput >= 0.95*best" (best: the largest value any point reached for > and
    /// >=, the smallest for < and <=). Repeatable.
    #[arg(long = "where", value_name = "CONSTRAINT")]
    pub wheres: Vec<String>,
    /// For a sweep: rank the points (and find `best`) separately for each value of this key,
    /// e.g. --per kernel --per model: "on each disk and kernel, which settings...". Repeatable.
    #[arg(long, value_name = "KEY")]
    pub per: Vec<String>,
}

impl SweepArgs {
    pub fn objectives(&self) -> Objectives {
        Objectives {
            minimize: self.minimize.clone(),
            maximize: self.maximize.clone(),
            wheres: self.wheres.clone(),
        }
    }

    /// Whether any option that only a sweep reads was given.
    pub fn any(&self) -> bool {
        self.jobs.is_some() || self.runs || self.resume || !self.plot.is_empty() || self.x.is_some() || !self.objectives().is_empty()
    }
}

/// `wblab run`'s options a sweep reads.
pub struct Flags<'a> {
    pub out: Option<PathBuf>,
    pub quiet: bool,
    pub json: bool,
    pub check: bool,
    pub sweep: &'a SweepArgs,
}

/// `fifo_batch=16`; `fs=ext4,mount=data=ordered,write_cache=write_back` for several keys;
/// `point-17` for a point drawn at random.
fn dir_name(plan: &SweepPlan, p: &SweepPoint) -> String {
    if plan.is_random() {
        return format!("point-{}", p.index);
    }
    plan.keys()
        .iter()
        .zip(&p.values)
        .map(|(k, v)| format!("{}={v}", k.rsplit('/').next().unwrap_or(k)))
        .collect::<Vec<_>>()
        .join(",")
        .chars()
        .map(|c| if c == '/' || c.is_whitespace() { '_' } else { c })
        .collect()
}

/// A bar of points on a terminal; elsewhere (unless quiet) a line at each tenth.
struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
    last_tenth: u64,
}

impl Progress {
    fn new(quiet: bool, name: &str, total: u64) -> Progress {
        if quiet {
            return Progress {
                bar: None,
                lines: false,
                last_tenth: 0,
            };
        }
        if !std::io::stderr().is_terminal() {
            return Progress {
                bar: None,
                lines: total >= 20,
                last_tenth: 0,
            };
        }
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} points, {per_sec}, eta {eta} ({elapsed})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b.set_prefix(name.to_string());
        Progress {
            bar: Some(b),
            lines: false,
            last_tenth: 0,
        }
    }

    fn tick(&mut self, done: u64, total: u64) {
        if let Some(b) = &self.bar {
            b.set_position(done);
        } else if self.lines && total > 0 {
            let tenth = done * 10 / total;
            if tenth > self.last_tenth {
                self.last_tenth = tenth;
                eprintln!("sweep: {done}/{total} points");
            }
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Runs the sweep if the file has one (`None` otherwise: the caller runs it as usual).
/// `adjust` applies the command line's overrides to each scenario; `write` stores one run's
/// results directory (for `--runs`).
pub fn try_run(
    path: &Path,
    flags: Flags<'_>,
    adjust: impl Fn(&mut Scenario) + Sync,
    write: impl Fn(&Path, &RunResult, f64) -> bool + Sync,
) -> Option<ExitCode> {
    let plan = match wblab_scenario::load_sweep(path) {
        Ok(Some(s)) => s,
        Ok(None) => return None,
        Err(e) => {
            eprintln!("{e}");
            return Some(ExitCode::from(2));
        }
    };
    Some(run(&plan, flags, &adjust, &write))
}

fn run(
    plan: &SweepPlan,
    flags: Flags<'_>,
    adjust: &(dyn Fn(&mut Scenario) + Sync),
    write: &(dyn Fn(&Path, &RunResult, f64) -> bool + Sync),
) -> ExitCode {
    let Flags {
        out,
        quiet,
        json,
        check,
        sweep: args,
    } = flags;
    let first = match plan.point(0) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let objectives = args.objectives();
    let ranking = match objectives.plan(&first.scenario) {
        Ok(p) => (!objectives.is_empty()).then_some(p),
        Err(e) => {
            eprintln!("error: {}: {e}", plan.file());
            return ExitCode::from(2);
        }
    };
    let x = args.x.clone().unwrap_or_else(|| plan.keys()[0].clone());
    let per = match std::iter::once(&x)
        .chain(&args.per)
        .map(|k| wblab_sweep::plot::key_index(plan.keys(), k))
        .collect::<Result<Vec<usize>, String>>()
    {
        Ok(v) => v[1..].to_vec(),
        Err(e) => {
            eprintln!(
                "error: {}",
                e.replacen("--x", if args.per.is_empty() { "--x" } else { "--x/--per" }, 1)
            );
            return ExitCode::from(2);
        }
    };
    if !per.is_empty() && ranking.is_none() {
        eprintln!("error: --per groups the ranking of --minimize, --maximize or --where; give one of them");
        return ExitCode::from(2);
    }
    let name = first.scenario.name.clone();
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(&name));
    let keep_run = |p: &SweepPoint, r: &RunResult, wall: f64| -> Result<(), String> {
        let dir = out.join(dir_name(plan, p));
        if write(&dir, r, wall) {
            Ok(())
        } else {
            Err(format!("cannot write {}", dir.display()))
        }
    };
    let opts = Options {
        workers: args.jobs.unwrap_or(0),
        check,
        adjust: Some(adjust),
        keep: args.runs.then_some(&keep_run as wblab_sweep::run::Keep<'_>),
    };
    if !quiet && !json {
        let how = if plan.is_random() { "drawn at random" } else { "" };
        eprintln!(
            "sweeping {} over {} ({} points{}{}, {} at once)",
            name,
            plan.keys().join(", "),
            plan.len(),
            if how.is_empty() { "" } else { " " },
            how,
            wblab_sweep::run::workers_for(opts.workers, plan.len() as usize)
        );
    }
    let t0 = std::time::Instant::now();
    let mut progress = Progress::new(quiet || json, &name, plan.len());
    // Points in the table so far: whether a stop leaves anything for --resume to keep.
    let mut done = 0;
    let outcome = wblab_sweep::run_sweep(plan, &out, args.resume, &opts, |d, t| {
        done = d;
        progress.tick(d, t)
    });
    progress.finish();
    let outcome = match outcome {
        Ok(o) => o,
        Err(f) => {
            eprintln!("error: {f}");
            if done > 0 {
                eprintln!(
                    "  the {done} points that finished are in {}; --resume runs the rest",
                    out.join(wblab_sweep::TASKS_CSV).display()
                );
            }
            return ExitCode::from(f.exit_code());
        }
    };
    if outcome.dropped > 0 && !quiet {
        eprintln!(
            "note: {}: the rows of {} points were incomplete, duplicated, out of order or not this sweep's: they ran again",
            out.join(wblab_sweep::TASKS_CSV).display(),
            outcome.dropped
        );
    }
    // Said even when quiet: the table lacks these points.
    if let Some(first) = &outcome.first_invalid {
        eprintln!(
            "warning: {} of the {} points are not valid scenarios (their combination of values) and did not run; {} lists each with its reason. The first, point {}: {}",
            outcome.invalid,
            plan.len(),
            out.join(wblab_sweep::INVALID_CSV).display(),
            first.point,
            first.reason
        );
    }
    let wall = t0.elapsed().as_secs_f64();
    let ran = outcome.points - outcome.resumed;
    // What the terminal, the ranking and the plots show, read back from the tables.
    let mut seen = Seen::new(ranking.as_ref(), &per, &args.plot);
    if let Err(e) = wblab_sweep::table::for_each_point(&out, plan.keys(), |p| {
        seen.add(p);
        Ok(())
    }) {
        eprintln!("error: {}: {e}", out.display());
        return ExitCode::from(1);
    }
    match charts(plan, &seen.plotted, &args.plot, &x, &per) {
        Ok(files) => {
            for (name, svg) in files {
                let file = out.join(name);
                if let Err(e) = std::fs::write(&file, svg) {
                    eprintln!("error: {}: {e}", file.display());
                    return ExitCode::from(1);
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    if json {
        let stdout = std::io::stdout();
        return match write_json(plan, &out, &mut std::io::BufWriter::new(stdout.lock())) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {}: {e}", out.display());
                ExitCode::from(1)
            }
        };
    }
    print!("{}", table(plan, &first.scenario, &seen.first, seen.count));
    let rate = if wall > 0.0 { ran as f64 / wall } else { 0.0 };
    let resumed = if outcome.resumed > 0 {
        format!(", {} kept from the earlier run", outcome.resumed)
    } else {
        String::new()
    };
    println!("{} points in {wall:.1} s ({rate:.1} points/s){resumed}", ran);
    let mut files = ["sweep.csv", "sweep-devices.csv", "sweep.parquet", "sweep-devices.parquet"].join(", ");
    if outcome.invalid > 0 {
        files.push_str(", ");
        files.push_str(wblab_sweep::INVALID_CSV);
    }
    if args.runs {
        files.push_str(", a directory per point");
    }
    println!("results: {}: {files}", out.display());
    if let Some(ranked) = &seen.ranked {
        print!("{}", ranked.text(plan));
    }
    ExitCode::SUCCESS
}
