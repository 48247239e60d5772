//! `fio-syncs SCENARIO...`: a database WAL's sync calls, measured against simulated. Each
//! scenario's job `wal` (fio: writes each followed by fsync/fdatasync/sync_file_range, or
//! O_DSYNC writes; a scenario of one job: that job) is
//! read from the kernel's repeats (`validation/measured/<name>/r*/`: fio's JSON and the run's
//! summary) and from a run of the model, with the same code, so the table in
//! `docs/validation.md` is what the committed measurements and today's model give.

use serde_json::Value;
use std::path::{Path, PathBuf};

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
    let read = |f: &str| -> Result<Value, String> {
        let p = dir.join(f);
        let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
    };
    let fio = read("fio.json")?;
    let summary = read("summary.json")?;
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

/// The median of `v` and its spread, (max − min) / median.
fn median_spread(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let m = v[v.len() / 2];
    let spread = if m > 0.0 { (v[v.len() - 1] - v[0]) / m } else { 0.0 };
    (m, spread)
}

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

/// The error of `sim` against `measured`, bold when inside `aim`.
fn error(sim: f64, measured: f64, aim: Option<f64>) -> String {
    if measured <= 0.0 {
        return "–".to_string();
    }
    let e = sim / measured - 1.0;
    let s = format!("{:+.1} %", e * 100.0).replace('-', "−");
    match aim {
        Some(a) if e.abs() <= a => format!("**{s}**"),
        _ => s,
    }
}

/// Three significant figures below 100, two below 0.01 (timer-only commit rates).
fn num(x: f64) -> String {
    if x > 0.0 && x < 0.01 {
        let decimals = (1.0 - x.log10().floor()) as usize;
        format!("{x:.decimals$}")
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The rows of one scenario: its measured repeats (median, spread) against one run of the model.
fn rows(scenario: &str) -> Result<Vec<Vec<String>>, String> {
    let path = Path::new(scenario);
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| format!("{scenario}: no file name"))?;
    let measured_dir = path.parent().unwrap_or(Path::new(".")).join("measured").join(name);
    let mut repeats: Vec<PathBuf> = std::fs::read_dir(&measured_dir)
        .map_err(|e| format!("{}: {e}", measured_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('r')))
        .collect();
    repeats.sort();
    if repeats.is_empty() {
        return Err(format!("{}: no measured repeat (r1, r2, ...)", measured_dir.display()));
    }
    let kernel: Vec<WalFigures> = repeats.iter().map(|r| figures(r)).collect::<Result<_, _>>()?;
    let r = super::tables::simulate(scenario)?;
    let dir = std::env::temp_dir().join(format!("wblab-docs-syncs-{}-{name}", std::process::id()));
    wblab_report::write_results_dir(&dir, &r, 0.0).map_err(|e| format!("{}: {e}", dir.display()))?;
    let model = figures(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let model = model?;
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
pub fn fio_syncs(args: &[String]) -> Result<String, String> {
    if args.is_empty() {
        return Err("`fio-syncs` takes one or more scenario files".to_string());
    }
    let mut all = Vec::new();
    for a in args {
        all.extend(rows(a)?);
    }
    Ok(super::tables::table(
        &["scenario", "figure", "measured", "spread", "simulated", "error"],
        all,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_rates_keep_two_significant_figures() {
        assert_eq!(num(0.000071), "0.000071");
        assert_eq!(num(0.0031), "0.0031");
        assert_eq!(num(0.092), "0.092");
        assert_eq!(num(4215.4), "4215");
        assert_eq!(num(0.0), "0.000");
    }

    #[test]
    fn an_error_inside_its_aim_is_bold_and_no_measurement_has_none() {
        assert_eq!(error(1.1, 1.0, Some(0.2)), "**+10.0 %**");
        assert_eq!(error(0.5, 1.0, Some(0.2)), "−50.0 %");
        assert_eq!(error(0.5, 0.0, Some(0.2)), "–");
        assert_eq!(median_spread(vec![3.0, 1.0, 2.0]), (2.0, 1.0));
    }
}
