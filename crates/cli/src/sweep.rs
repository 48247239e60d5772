//! `wblab run FILE` for a file with a `[sweep]` table: the scenario runs once per value of the
//! swept knob, each into `<out>/<knob>=<value>/`, and one row per value is printed with each
//! task group's key figure — the layout of Morton's 2002 tables ("fifo_batch (units)  time cat
//! kernel/*.c (secs)"). The runs share the machine's cores, one simulation per core (each stays
//! single-threaded, so every run's results are what it gives alone); the table is in sweep
//! order whatever order they finish in.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use wblab_sim::config::Scenario;
use wblab_sim::metrics::{LatencyHist, RunResult};

/// One run of the sweep: its label, directory, results and wall time, or the exit code that
/// stopped it.
type RunOutcome = Result<(String, PathBuf, RunResult, f64), ExitCode>;

/// Runs the sweep if the file has one (`None` otherwise: the caller runs it as usual).
/// `adjust` applies the command line's overrides to each scenario; `write` stores one run.
/// `wblab run`'s options a sweep reads.
pub struct Flags<'a> {
    pub out: Option<PathBuf>,
    pub quiet: bool,
    pub json: bool,
    pub check: bool,
    pub objectives: &'a crate::sweep_objective::Objectives,
}

pub fn try_run(
    path: &Path,
    flags: Flags<'_>,
    adjust: impl Fn(&mut Scenario) + Sync,
    write: impl Fn(&Path, &RunResult, f64) -> bool + Sync,
) -> Option<ExitCode> {
    let Flags {
        out,
        quiet,
        json,
        check,
        objectives,
    } = flags;
    let (key, runs) = match wblab_scenario::load_sweep(path) {
        Ok(Some(s)) => s,
        Ok(None) => return None,
        Err(e) => {
            eprintln!("{e}");
            return Some(ExitCode::from(2));
        }
    };
    let plan = match runs.first().map(|(_, sc)| objectives.plan(sc)).transpose() {
        Ok(p) => p.filter(|_| !objectives.is_empty()),
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return Some(ExitCode::from(2));
        }
    };
    let leaf = short_key(&key);
    let name = runs.first().map(|(_, s)| s.name.clone()).unwrap_or_default();
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(&name));
    let n = runs.len();
    let runs: Vec<Mutex<Option<(String, Scenario)>>> = runs.into_iter().map(|r| Mutex::new(Some(r))).collect();
    let done: Vec<Mutex<Option<RunOutcome>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |c| c.get()).min(n).max(1);
    // Each worker takes the next run in sweep order until none is left.
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            return;
        }
        let (label, mut sc) = runs[i].lock().expect("run").take().expect("each run is taken once");
        adjust(&mut sc);
        let dir = out.join(dir_name(&key, &label));
        if !quiet && !json {
            eprintln!("running {} with {key} = {label} (kernel {})", sc.name, sc.kernel);
        }
        let t0 = Instant::now();
        let r = crate::simulate::simulate(&sc, &mut wblab_sim::machine::NoProgress, check).and_then(|r| {
            let wall = t0.elapsed().as_secs_f64();
            if write(&dir, &r, wall) {
                Ok((label, dir, r, wall))
            } else {
                Err(ExitCode::from(1))
            }
        });
        *done[i].lock().expect("result") = Some(r);
    };
    std::thread::scope(|s| {
        for _ in 1..workers {
            s.spawn(work);
        }
        work();
    });
    let mut results = Vec::with_capacity(n);
    for d in done {
        match d.into_inner().expect("result").expect("every run ran") {
            Ok(r) => results.push(r),
            Err(code) => return Some(code),
        }
    }
    if json {
        let v: Vec<_> = results
            .iter()
            .map(|(label, _, r, wall)| serde_json::json!({ "sweep": { "key": key, "value": label }, "summary": wblab_report::summary_json(r, *wall) }))
            .collect();
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return Some(ExitCode::SUCCESS);
    }
    let rows: Vec<(String, &RunResult)> = results.iter().map(|(l, _, r, _)| (l.clone(), r)).collect();
    for (file, text) in [
        ("sweep.csv", crate::sweep_csv::tasks_csv(&key, &rows)),
        ("sweep-devices.csv", crate::sweep_csv::devices_csv(&key, &rows)),
    ] {
        if let Err(e) = std::fs::write(out.join(file), text) {
            eprintln!("error: cannot write {}: {e}", out.join(file).display());
            return Some(ExitCode::from(1));
        }
    }
    print!("{}", table(&key, &rows));
    println!("results: {}/<{leaf}=value>/, sweep.csv, sweep-devices.csv", out.display());
    if let Some(plan) = plan {
        let points: Vec<(String, Vec<(String, f64)>)> = rows.iter().map(|(l, r)| (l.clone(), crate::sweep_csv::named_figures(r))).collect();
        print!("\n{}", plan.report(&points));
    }
    Some(ExitCode::SUCCESS)
}

/// The knob's last path component (`fifo_batch`); each knob's, for a several-knob sweep.
fn short_key(key: &str) -> String {
    key.split(wblab_scenario::SWEEP_KEY_SEPARATOR)
        .map(|k| k.rsplit('/').next().unwrap_or(k))
        .collect::<Vec<_>>()
        .join(wblab_scenario::SWEEP_KEY_SEPARATOR)
}

/// `fifo_batch=16`; `fs=ext4,mount=data=ordered,write_cache=write_back` for several knobs.
fn dir_name(key: &str, label: &str) -> String {
    let keys = key.split(wblab_scenario::SWEEP_KEY_SEPARATOR);
    let values = label.split(wblab_scenario::SWEEP_VALUE_SEPARATOR);
    keys.zip(values)
        .map(|(k, v)| format!("{}={v}", k.rsplit('/').next().unwrap_or(k)))
        .collect::<Vec<_>>()
        .join(",")
        .chars()
        .map(|c| if c == '/' || c.is_whitespace() { '_' } else { c })
        .collect()
}

/// One task group's figure in a sweep row: what the job's user would time.
fn figure(job: &str, tasks: &[&wblab_sim::metrics::TaskResult]) -> (String, String) {
    match job {
        // One command per run: its latency is the `time` of the command.
        "launch" | "ls" => {
            let mut h = LatencyHist::new();
            for t in tasks {
                h.add(&t.op_latency);
            }
            if h.count() == 0 {
                ("time s".into(), "unfinished".into())
            } else {
                ("time s".into(), format!("{:.2}", h.summary().mean / 1e9))
            }
        }
        "dd" | "cat" => {
            let mb: f64 = tasks.iter().map(|t| t.throughput_mb_s()).sum();
            ("MB/s".into(), format!("{mb:.1}"))
        }
        // Probes: what their user feels is each call's latency, not the run's length.
        "fsync" | "sync" | "randread" => {
            let mut h = LatencyHist::new();
            for t in tasks {
                h.add(&t.op_latency);
            }
            let op = if job == "randread" { "read()" } else { job };
            let head = format!("{op} p50/p99 ms");
            if h.count() == 0 {
                return (head, "-".into());
            }
            let s = h.summary();
            (head, format!("{:.1}/{:.1}", s.p50 as f64 / 1e6, s.p99 as f64 / 1e6))
        }
        // A fio job: what fio's summary leads with, bandwidth and each I/O's latency.
        "fio" => {
            let mb: f64 = tasks.iter().map(|t| t.throughput_mb_s()).sum();
            let mut h = LatencyHist::new();
            for t in tasks {
                h.add(&t.op_latency);
            }
            let head = "MB/s, I/O p50/p99 ms".to_string();
            if h.count() == 0 {
                return (head, format!("{mb:.1}, -"));
            }
            let s = h.summary();
            (head, format!("{mb:.1}, {:.2}/{:.2}", s.p50 as f64 / 1e6, s.p99 as f64 / 1e6))
        }
        _ => {
            let s = tasks.iter().map(|t| t.ended.saturating_sub(t.started)).max().unwrap_or(0);
            ("run s".into(), format!("{:.2}", s as f64 / 1e9))
        }
    }
}

/// The sweep table: the knob's values down, each task group's figure across.
pub fn table(key: &str, rows: &[(String, &RunResult)]) -> String {
    let Some((_, first)) = rows.first() else {
        return String::new();
    };
    let mut groups: Vec<(String, &'static str)> = Vec::new();
    for t in &first.tasks {
        if !groups.iter().any(|(n, _)| *n == t.name) {
            groups.push((t.name.clone(), t.job));
        }
    }
    let mut heads = vec![short_key(key)];
    let mut cells: Vec<Vec<String>> = rows.iter().map(|(l, _)| vec![l.clone()]).collect();
    for (g, job) in &groups {
        let mut head = String::new();
        for (i, (_, r)) in rows.iter().enumerate() {
            let tasks: Vec<_> = r.tasks.iter().filter(|t| t.name == *g).collect();
            let (unit, v) = figure(job, &tasks);
            head = format!("{g} {unit}");
            cells[i].push(v);
        }
        heads.push(head);
    }
    // With memory cgroups: how far the node's and each group's dirty pages went.
    if !first.cgroups.is_empty() {
        let mib = |pages: u64| format!("{}", (pages * wblab_sim::units::PAGE_SIZE) >> 20);
        heads.push("node dirty peak MiB".to_string());
        for (i, (_, r)) in rows.iter().enumerate() {
            cells[i].push(mib(r.vmstat.iter().map(|v| v.nr_dirty + v.nr_writeback).max().unwrap_or(0)));
        }
        for (k, g) in first.cgroups.iter().enumerate() {
            heads.push(format!("{} dirty peak MiB", g.path));
            for (i, (_, r)) in rows.iter().enumerate() {
                let peak = r
                    .cgroups
                    .get(k)
                    .map_or(0, |g| g.samples.iter().map(|s| s.dirty + s.writeback).max().unwrap_or(0));
                cells[i].push(mib(peak));
            }
        }
    }
    let widths: Vec<usize> = (0..heads.len())
        .map(|c| cells.iter().map(|r| r[c].len()).chain([heads[c].len()]).max().unwrap_or(4))
        .collect();
    let swept_kernel = key.split(wblab_scenario::SWEEP_KEY_SEPARATOR).any(|k| k == "kernel");
    let mut s = if swept_kernel {
        format!("sweep of {key}\n")
    } else {
        format!("sweep of {key} (kernel {})\n", first.scenario.kernel)
    };
    let line = |vals: &[String]| -> String {
        let mut l = String::new();
        for (c, v) in vals.iter().enumerate() {
            if c == 0 {
                l.push_str(&format!("{:>w$}", v, w = widths[0]));
            } else {
                l.push_str(&format!("  {:>w$}", v, w = widths[c]));
            }
        }
        l.trim_end().to_string() + "\n"
    };
    s.push_str(&line(&heads));
    for r in &cells {
        s.push_str(&line(r));
    }
    s
}
