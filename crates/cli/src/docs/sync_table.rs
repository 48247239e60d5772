//! `fio-syncs SCENARIO...`: a database WAL's sync calls, measured against simulated. Each
//! scenario's job `wal` (fio: writes each followed by fsync/fdatasync/sync_file_range, or
//! O_DSYNC writes; a scenario of one job: that job) is
//! read from the kernel's repeats (`validation/measured/<name>/r*/`: fio's JSON and the run's
//! summary) and from a run of the model, with the same code, so the table in
//! `docs/validation.md` is what the committed measurements and today's model give.

use super::measured::{error, json, median_spread, num, pct, repeats, simulated};
use super::runs::Runs;
use serde_json::Value;
use std::path::Path;

/// The aims the WAL table holds the model to: sync latency p50 and p99, rates.
const AIM_P50: f64 = 0.25;
const AIM_P99: f64 = 0.50;
const AIM_RATE: f64 = 0.20;

/// The figures of one run's `wal` job (and `copy`, when there is one).
#[derive(Clone, Copy, Debug, Default)]
struct WalFigures {
    /// The calls are fsync/fdatasync (else O_DSYNC writes: the job has no sync calls).
    syncs: bool,
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// Journal commits per call; `None` where the file system has no jbd2 (the kernel's
    /// side counts jbd2's tracepoints).
    commits_per_call: Option<f64>,
    copy_gb_s: Option<f64>,
}

fn job<'a>(fio: &'a Value, name: &str) -> Option<&'a Value> {
    fio["jobs"].as_array()?.iter().find(|j| j["jobname"] == name)
}

/// The figures of the run in `dir` (its `fio.json` and `summary.json`).
fn figures(dir: &Path) -> Result<WalFigures, String> {
    let fio = json(dir, "fio.json")?;
    let summary = json(dir, "summary.json")?;
    // The job `wal`, else the first (a scenario of one job).
    let wal = job(&fio, "wal")
        .or_else(|| fio["jobs"].as_array().and_then(|j| j.first()))
        .ok_or_else(|| format!("{}: no fio job", dir.display()))?;
    // fio counts sync calls in the latency's N (its `total_ios` stays 0).
    let syncs = wal["sync"]["lat_ns"]["N"].as_f64().unwrap_or(0.0);
    let lat = if syncs > 0.0 {
        &wal["sync"]["lat_ns"]
    } else {
        &wal["write"]["clat_ns"]
    };
    let calls = if syncs > 0.0 {
        syncs
    } else {
        wal["write"]["total_ios"].as_f64().unwrap_or(0.0)
    };
    let pct = |p: &str| lat["percentile"][p].as_f64().unwrap_or(0.0) / 1e6;
    let runtime_s = wal["job_runtime"].as_f64().unwrap_or(0.0) / 1e3;
    let commits = summary["devices"][0]["journal"]["commits"].as_f64();
    Ok(WalFigures {
        syncs: syncs > 0.0,
        per_second: if runtime_s > 0.0 { calls / runtime_s } else { 0.0 },
        p50_ms: pct("50.000000"),
        p99_ms: pct("99.000000"),
        commits_per_call: commits.map(|c| if calls > 0.0 { c / calls } else { 0.0 }),
        copy_gb_s: job(&fio, "copy").and_then(|c| c["write"]["bw_bytes"].as_f64()).map(|b| b / 1e9),
    })
}

/// The rows of one scenario: its measured repeats (median, spread) against one run of the model.
fn rows(scenario: &str, runs: &Runs) -> Result<Vec<Vec<String>>, String> {
    let (name, repeats) = repeats(scenario)?;
    let name = name.as_str();
    let kernel: Vec<WalFigures> = repeats.iter().map(|r| figures(r)).collect::<Result<_, _>>()?;
    let model = simulated(scenario, runs, figures)?;
    let short = name.split('-').next().unwrap_or(name);
    let what = if kernel[0].syncs { "sync" } else { "write" };
    let mut out = Vec::new();
    let mut row = |figure: String, m: Vec<f64>, sim: f64, aim: Option<f64>| {
        let (med, spread) = median_spread(m);
        out.push(vec![
            if out.is_empty() { format!("`{name}`") } else { short.to_string() },
            figure,
            num(med),
            pct(spread),
            num(sim),
            error(sim, med, aim),
        ]);
    };
    row(
        format!("{what} p50, ms"),
        kernel.iter().map(|k| k.p50_ms).collect(),
        model.p50_ms,
        Some(AIM_P50),
    );
    row(
        format!("{what} p99, ms"),
        kernel.iter().map(|k| k.p99_ms).collect(),
        model.p99_ms,
        Some(AIM_P99),
    );
    row(
        format!("{what}s per second"),
        kernel.iter().map(|k| k.per_second).collect(),
        model.per_second,
        Some(AIM_RATE),
    );
    let kernel_commits: Option<Vec<f64>> = kernel.iter().map(|k| k.commits_per_call).collect();
    if let (Some(k), Some(sim)) = (kernel_commits, model.commits_per_call) {
        row("journal commits per call".to_string(), k, sim, None);
    }
    if let (Some(sim), true) = (model.copy_gb_s, kernel.iter().all(|k| k.copy_gb_s.is_some())) {
        row(
            "the copy beside it, GB/s".to_string(),
            kernel.iter().filter_map(|k| k.copy_gb_s).collect(),
            sim,
            Some(AIM_RATE),
        );
    }
    Ok(out)
}

/// The table of every scenario in `args`.
pub fn fio_syncs(args: &[String], runs: &Runs) -> Result<String, String> {
    if args.is_empty() {
        return Err("`fio-syncs` takes one or more scenario files".to_string());
    }
    let mut all = Vec::new();
    for a in args {
        all.extend(rows(a, runs)?);
    }
    Ok(super::tables::table(
        &["scenario", "figure", "measured", "spread", "simulated", "error"],
        all,
    ))
}
