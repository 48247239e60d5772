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
use wblab_sweep::{Options, PointRows};

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

/// Most rows the terminal table shows; the CSV has them all.
const TERMINAL_ROWS: usize = 40;

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
    match plots(plan, &seen.plotted, args, &x, &per) {
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
        return match print_json(plan, &out) {
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

/// What the command keeps of a sweep's points as it reads them back: the first rows for the
/// terminal, a few numbers per point for the ranking, and the plotted figures' rows for
/// `--plot` (the only part that grows with the sweep's length beyond a few numbers a point).
struct Seen<'a> {
    count: usize,
    first: Vec<PointRows>,
    ranked: Option<Ranked<'a>>,
    /// The task groups and devices `--plot`'s figures name.
    plot_items: Vec<String>,
    plotted: Vec<PointRows>,
}

impl<'a> Seen<'a> {
    fn new(ranking: Option<&'a wblab_sweep::objective::Plan>, per: &'a [usize], plot: &'a [String]) -> Seen<'a> {
        Seen {
            count: 0,
            first: Vec::new(),
            ranked: ranking.map(|r| Ranked::new(r, per)),
            plot_items: plot
                .iter()
                .filter_map(|f| wblab_sweep::plot::figure_name(f).rsplit_once('.').map(|(i, _)| i.to_string()))
                .collect(),
            plotted: Vec::new(),
        }
    }

    fn add(&mut self, p: PointRows) {
        if let Some(r) = &mut self.ranked {
            r.add(&p);
        }
        if !self.plot_items.is_empty() {
            self.plotted.push(if self.count == 0 {
                p.clone()
            } else {
                plotted_rows(&p, &self.plot_items)
            });
        }
        if self.first.len() < TERMINAL_ROWS {
            self.first.push(p);
        }
        self.count += 1;
    }
}

/// `p` with only the rows of the task groups and devices `items` (the first point is kept
/// whole, for the error that lists the figures there are).
fn plotted_rows(p: &PointRows, items: &[String]) -> PointRows {
    PointRows {
        point: p.point,
        values: p.values.clone(),
        groups: p.groups.iter().filter(|g| items.contains(&g.group)).cloned().collect(),
        devices: p.devices.iter().filter(|d| items.contains(&d.device)).cloned().collect(),
    }
}

/// The ranking's view of a sweep: for each group of `per` (in the order they first appear),
/// each point's index and the figures the ranking reads.
pub struct Ranked<'a> {
    ranking: &'a wblab_sweep::objective::Plan,
    per: &'a [usize],
    figures: Vec<&'a str>,
    groups: Vec<RankedGroup>,
}

struct RankedGroup {
    head: Vec<String>,
    points: Vec<u64>,
    /// `figures.len()` values per point.
    values: Vec<f64>,
}

impl<'a> Ranked<'a> {
    pub fn new(ranking: &'a wblab_sweep::objective::Plan, per: &'a [usize]) -> Ranked<'a> {
        Ranked {
            ranking,
            per,
            figures: ranking.figures(),
            groups: Vec::new(),
        }
    }

    pub fn add(&mut self, p: &PointRows) {
        let head: Vec<&String> = self.per.iter().map(|&k| &p.values[k]).collect();
        let g = match self.groups.iter().position(|g| g.head.iter().eq(head.iter().copied())) {
            Some(g) => g,
            None => {
                self.groups.push(RankedGroup {
                    head: head.into_iter().cloned().collect(),
                    points: Vec::new(),
                    values: Vec::new(),
                });
                self.groups.len() - 1
            }
        };
        let g = &mut self.groups[g];
        g.points.push(p.point);
        g.values.extend(self.figures.iter().map(|f| p.figure(f).unwrap_or(f64::NAN)));
    }

    /// The points meeting the constraints, ranked, for each group of `per`; each point
    /// labelled by its other keys' values.
    pub fn text(&self, plan: &SweepPlan) -> String {
        let (ranking, per) = (self.ranking, self.per);
        let mut s = String::new();
        let k = self.figures.len();
        for g in &self.groups {
            let head: Vec<String> = per
                .iter()
                .zip(&g.head)
                .map(|(&key, v)| format!("{}={v}", plan.keys()[key]))
                .collect();
            let head = head.join(", ");
            let label = |i: usize| -> String {
                let point = g.points[i];
                let values = plan.values(point, point + 1).pop().unwrap_or_default();
                let rest: Vec<&str> = (0..plan.keys().len())
                    .filter(|k| !per.contains(k))
                    .map(|k| values[k].as_str())
                    .collect();
                rest.join(wblab_scenario::SWEEP_VALUE_SEPARATOR)
            };
            if !head.is_empty() {
                s.push_str(&format!("\n{head}:"));
            }
            let value = |i: usize, f: usize| g.values[i * k + f];
            s.push_str(&format!("\n{}", ranking.report(g.points.len(), &value, &label)));
        }
        s
    }
}

/// The points grouped by the values of the keys `per` (indices into the plan's keys), in the
/// order the groups first appear: each group's heading (`kernel=6.x, disk=model=hdd`; empty
/// without `per`) and points.
pub fn groups<'p>(plan: &SweepPlan, points: &'p [PointRows], per: &[usize]) -> Vec<(String, Vec<&'p PointRows>)> {
    let mut groups: Vec<(String, Vec<&PointRows>)> = Vec::new();
    for p in points {
        let head: Vec<String> = per.iter().map(|&k| format!("{}={}", plan.keys()[k], p.values[k])).collect();
        let head = head.join(", ");
        match groups.iter_mut().find(|(h, _)| *h == head) {
            Some((_, v)) => v.push(p),
            None => groups.push((head, vec![p])),
        }
    }
    groups
}

/// The points meeting the constraints, ranked, for each group of `per`.
pub fn ranking_text(plan: &SweepPlan, points: &[PointRows], ranking: &wblab_sweep::objective::Plan, per: &[usize]) -> String {
    let mut r = Ranked::new(ranking, per);
    for p in points {
        r.add(p);
    }
    r.text(plan)
}

/// `--plot`'s charts as (file name, SVG): one per figure, or with `--per` one per figure and
/// group (`sweep-reader.op_p99_ms-kernel=6.x,disk=model=hdd.svg`), the group's own points.
pub fn plots(plan: &SweepPlan, points: &[PointRows], args: &SweepArgs, x: &str, per: &[usize]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for figure in &args.plot {
        let name = wblab_sweep::plot::figure_name(figure);
        for (head, group) in groups(plan, points, per) {
            let rows: Vec<PointRows> = group.into_iter().cloned().collect();
            let svg = wblab_sweep::plot::chart(plan.keys(), &rows, figure, x, plan.is_random(), per, &head)?;
            let file = if head.is_empty() {
                format!("sweep-{name}.svg")
            } else {
                // `kernel=6.x, disk=model=hdd` → `kernel-6.x_disk-model-hdd`.
                let tag: String = head
                    .replace(", ", "_")
                    .chars()
                    .map(|c| match c {
                        '=' => '-',
                        c if c.is_alphanumeric() || ".-_".contains(c) => c,
                        _ => '_',
                    })
                    .collect();
                format!("sweep-{name}-{tag}.svg")
            };
            out.push((file, svg));
        }
    }
    Ok(out)
}

/// The terminal table of a sweep whose first point is `sc`.
pub fn table(plan: &SweepPlan, sc: &Scenario, first: &[PointRows], total: usize) -> String {
    let title = if plan.keys().iter().any(|k| k == "kernel") {
        format!("sweep of {}", plan.key())
    } else {
        format!("sweep of {} (kernel {})", plan.key(), sc.kernel)
    };
    wblab_sweep::summary::table(&title, plan.keys(), first, total, !sc.cgroups.groups.is_empty())
}

/// [`table`] of a sweep's points held in memory.
pub fn table_of(plan: &SweepPlan, sc: &Scenario, points: &[PointRows]) -> String {
    table(plan, sc, &points[..points.len().min(TERMINAL_ROWS)], points.len())
}

/// `--json`: each point's values and figures, as a JSON array printed a point at a time
/// (what `serde_json`'s pretty printer gives for the whole array, without holding it).
fn print_json(plan: &SweepPlan, dir: &Path) -> Result<(), String> {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let mut n = 0u64;
    wblab_sweep::table::for_each_point(dir, plan.keys(), |p| {
        let text = serde_json::to_string_pretty(&point_json(plan, &p)).expect("json");
        let mut item = String::from(if n == 0 { "[\n" } else { ",\n" });
        for (k, line) in text.lines().enumerate() {
            if k > 0 {
                item.push('\n');
            }
            item.push_str("  ");
            item.push_str(line);
        }
        n += 1;
        w.write_all(item.as_bytes()).map_err(|e| e.to_string())
    })?;
    let end = if n == 0 { "[]\n" } else { "\n]\n" };
    w.write_all(end.as_bytes()).and_then(|()| w.flush()).map_err(|e| e.to_string())
}

/// One point's values and figures, as `--json` gives it.
fn point_json(plan: &SweepPlan, p: &PointRows) -> serde_json::Value {
    let values: serde_json::Map<String, serde_json::Value> = plan
        .keys()
        .iter()
        .cloned()
        .zip(p.values.iter().map(|v| serde_json::Value::from(v.clone())))
        .collect();
    let figures: serde_json::Map<String, serde_json::Value> = p
        .named_figures()
        .into_iter()
        .map(|(n, v)| (n, serde_json::Value::from(v)))
        .collect();
    serde_json::json!({ "point": p.point, "values": values, "figures": figures })
}
