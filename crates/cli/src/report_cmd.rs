//! `wblab report` and `wblab vmstat`: views of results directories (graphs, report.html,
//! terminal stem plots and log2 histograms, vmstat lines), and the report `run` writes.

use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wblab_report::html::report::write_report;
use wblab_report::load::rundir::RunDir;
use wblab_report::terminal::vmstat::{vmstat as vmstat_text, Unit};
use wblab_report::terminal::{dir_summary, latency_text, pick_latency};

#[derive(Args)]
pub struct ReportArgs {
    /// Results directories (written by `wblab run` or `wblab measure`); several are overlaid,
    /// one colour per run.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where to write the SVGs and report.html [default: the results directory; with several,
    /// <parent of the first>/report-<name>-vs-<name>...].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print to the terminal instead: the summary table, the latency over time, and a task's
    /// latency as an R stem() plot and a bcc-style log2 histogram.
    #[arg(long)]
    pub terminal: bool,
    /// Print only the latency over time: per task group, the longest operation of each second.
    #[arg(long)]
    pub timeline: bool,
    /// Print only this task's latency as a stem plot and log2 histogram (a task name, `name#N`,
    /// or a group label). --terminal alone shows the first latency-sensitive task.
    #[arg(long, value_name = "TASK")]
    pub stem: Option<String>,
    /// With --terminal: show balance_dirty_pages pauses instead of per-operation latency.
    #[arg(long)]
    pub pauses: bool,
}

#[derive(Args)]
pub struct VmstatArgs {
    /// Results directory.
    pub dir: PathBuf,
    /// Memory unit, as vmstat's -S: k (1000), K (1024, the default), m (10^6), M (2^20).
    #[arg(short = 'S', long = "unit", default_value = "K")]
    pub unit: String,
}

#[derive(Args)]
pub struct IostatArgs {
    /// Results directory (simulated or measured).
    pub dir: PathBuf,
    /// Extended figures, as `iostat -x`: request sizes, await, aqu-sz, %util.
    #[arg(short = 'x')]
    pub extended: bool,
    /// Only this device.
    #[arg(long)]
    pub device: Option<String>,
}

fn load(dirs: &[PathBuf]) -> Result<Vec<RunDir>, String> {
    dirs.iter().map(|d| RunDir::load(d)).collect()
}

/// The default output directory of a report.
fn default_out(dirs: &[PathBuf], runs: &[RunDir]) -> PathBuf {
    if dirs.len() == 1 {
        return dirs[0].clone();
    }
    let parent = dirs[0].parent().map(Path::to_path_buf).unwrap_or_default();
    let names: Vec<String> = runs
        .iter()
        .zip(dirs)
        .map(|(r, d)| {
            d.file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_else(|| r.name.clone())
        })
        .collect();
    let mut name = format!("report-{}", names.join("-vs-"));
    if name.len() > 120 {
        name.truncate(120);
    }
    parent.join(name)
}

/// `wblab report`.
pub fn report(a: ReportArgs) -> ExitCode {
    let runs = match load(&a.dirs) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if a.timeline {
        let mut status = ExitCode::SUCCESS;
        for r in &runs {
            if runs.len() > 1 {
                println!("== {}", r.dir.display());
            }
            match latency_timeline(&r.dir) {
                Some(t) => print!("{t}"),
                None => {
                    eprintln!(
                        "error: {}: no {} (written by wblab run for readers, fsync probes, launches)",
                        r.dir.display(),
                        wblab_report::LATENCY_FILE
                    );
                    status = ExitCode::from(2);
                }
            }
        }
        return status;
    }
    if a.terminal || a.stem.is_some() {
        // Files that are there but could not be read (a missing one is no news here).
        for r in &runs {
            for w in r
                .warnings
                .iter()
                .filter(|w| !w.ends_with(&format!(": {}", wblab_report::load::rundir::MISSING)))
            {
                eprintln!("warning: {}/{w}", r.dir.display());
            }
        }
        let mut status = ExitCode::SUCCESS;
        for (i, r) in runs.iter().enumerate() {
            if i > 0 {
                println!();
            }
            if runs.len() > 1 {
                println!("== {}", r.dir.display());
            }
            if a.stem.is_none() {
                print!("{}", dir_summary(r));
                println!();
                if let Some(t) = latency_timeline(&r.dir) {
                    print!("{t}");
                    println!();
                }
            }
            match pick_latency(r, a.stem.as_deref(), a.pauses.then_some(true)) {
                Ok(Some(p)) => print!("{}", latency_text(&p)),
                Ok(None) => println!("no task recorded a latency distribution (no reads, fsyncs or throttled writes)"),
                Err(e) => {
                    eprintln!("error: {e}");
                    status = ExitCode::from(2);
                }
            }
        }
        return status;
    }
    let out = a.out.clone().unwrap_or_else(|| default_out(&a.dirs, &runs));
    match write_report(&runs, &out) {
        Ok(files) => {
            for r in &runs {
                for w in &r.warnings {
                    eprintln!("warning: {}/{w}", r.dir.display());
                }
            }
            println!("{} graphs: {}", files.svgs.len(), out.display());
            println!("report: {}", files.html.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write the report to {}: {e}", out.display());
            ExitCode::from(1)
        }
    }
}

/// The report `wblab run` writes, from the results it has in memory. Failures are warnings:
/// the results themselves are already written.
pub fn draw_run_report(run: Result<RunDir, String>, dir: &Path) -> Option<PathBuf> {
    let run = match run {
        Ok(r) => r,
        Err(e) => {
            eprintln!("warning: no report: {e}");
            return None;
        }
    };
    match write_report(std::slice::from_ref(&run), dir) {
        Ok(f) => Some(f.html),
        Err(e) => {
            eprintln!("warning: no report: cannot write to {}: {e}", dir.display());
            None
        }
    }
}

/// `wblab vmstat`.
pub fn vmstat(a: VmstatArgs) -> ExitCode {
    let Some(unit) = Unit::parse(&a.unit) else {
        eprintln!("error: unknown unit `{}`\n  hint: one of k, K, m, M (as vmstat -S)", a.unit);
        return ExitCode::from(2);
    };
    let run = match RunDir::load(&a.dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match &run.timeseries {
        Some(ts) if ts.col("t_s").is_none() => {
            eprintln!(
                "error: {}/timeseries.csv: no `t_s` column: not a timeseries.csv as wblab run or measure writes it",
                a.dir.display()
            );
            ExitCode::from(2)
        }
        Some(ts) => {
            print!("{}", vmstat_text(ts, unit));
            ExitCode::SUCCESS
        }
        None => {
            // The loader says why: missing, or not a CSV as `wblab run` writes it.
            let why = run.warnings.iter().find(|w| w.starts_with("timeseries.csv:"));
            match why {
                Some(w) => eprintln!("error: {}/{w}", a.dir.display()),
                None => eprintln!("error: {}: no timeseries.csv", a.dir.display()),
            }
            ExitCode::from(2)
        }
    }
}

/// `wblab iostat DIR [-x]`.
pub fn iostat(a: IostatArgs) -> ExitCode {
    let path = a.dir.join(wblab_report::IOSTAT_FILE);
    let text = match wblab_report::load::file::read_text(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            let missing = wblab_report::load::file::is_missing(&e);
            if missing && (a.dir.join("sweep.csv").exists() || a.dir.join("kernels.csv").exists()) {
                eprintln!("  hint: {} holds several runs: give one of its run directories", a.dir.display());
            } else if missing && a.dir.join(wblab_report::SUMMARY_FILE).exists() {
                eprintln!("  hint: the run was written by an older wblab; run it again to get iostat.csv");
            }
            return ExitCode::from(2);
        }
    };
    let csv = match wblab_report::load::rundir::Csv::parse(&text) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    if let Err(e) = wblab_report::terminal::iostat::check(&csv) {
        eprintln!(
            "error: {}: {e}: not an iostat.csv as wblab run or measure writes it",
            path.display()
        );
        return ExitCode::from(2);
    }
    if let Some(d) = &a.device {
        let devices: std::collections::BTreeSet<&str> = csv.rows.iter().map(|r| r[csv.col("device").expect("checked")].as_str()).collect();
        if !devices.contains(d.as_str()) {
            let known: Vec<&str> = devices.into_iter().collect();
            eprintln!(
                "error: no device `{d}` in {}\n  hint: devices: {}",
                path.display(),
                known.join(", ")
            );
            return ExitCode::from(2);
        }
    }
    print!(
        "{}",
        wblab_report::terminal::iostat::iostat_text(&csv, a.extended, a.device.as_deref())
    );
    ExitCode::SUCCESS
}

/// The run's latency.csv as sparklines, if it has one that reads.
fn latency_timeline(dir: &Path) -> Option<String> {
    let text = wblab_report::load::file::read_text(&dir.join(wblab_report::LATENCY_FILE)).ok()?;
    let csv = wblab_report::load::rundir::Csv::parse(&text).ok()?;
    wblab_report::terminal::timeline::check(&csv).ok()?;
    Some(wblab_report::terminal::timeline::timeline_text(&csv))
}
