//! A sweep's figures as tables for pandas and spreadsheets: `sweep.csv`, one row per point and
//! task group, and `sweep-devices.csv`, one row per point and device. Each swept key is a
//! column of its own; every other header ends in its unit.

use std::fmt::Write as _;
use wblab_sim::metrics::{LatencyHist, RunResult};

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// The swept keys' columns, and each point's values for them.
fn key_columns(key: &str, label: &str) -> (Vec<String>, Vec<String>) {
    let keys = key.split(wblab_scenario::SWEEP_KEY_SEPARATOR).map(field).collect();
    let values = label.split(wblab_scenario::SWEEP_VALUE_SEPARATOR).map(field).collect();
    (keys, values)
}

/// Mean of a vmstat counter over the run, MiB.
fn mean_mib(r: &RunResult, get: impl Fn(&wblab_sim::metrics::VmstatSample) -> u64) -> f64 {
    if r.vmstat.is_empty() {
        return 0.0;
    }
    let pages: u64 = r.vmstat.iter().map(get).sum();
    pages as f64 * 4096.0 / r.vmstat.len() as f64 / (1u64 << 20) as f64
}

/// `sweep.csv`.
pub fn tasks_csv(key: &str, rows: &[(String, &RunResult)]) -> String {
    let mut out = String::new();
    for (i, (label, r)) in rows.iter().enumerate() {
        let (keys, values) = key_columns(key, label);
        if i == 0 {
            out.push_str(&keys.join(","));
            out.push_str(
                ",group,job,tasks,mb_written,mb_read,throughput_mb_s,pause_count,pause_p50_ms,pause_p99_ms,pause_max_ms,\
                 op_count,op_p50_ms,op_p99_ms,op_max_ms,dirty_mean_mib,writeback_mean_mib\n",
            );
        }
        let dirty = mean_mib(r, |s| s.nr_dirty);
        let writeback = mean_mib(r, |s| s.nr_writeback);
        let mut groups: Vec<&str> = Vec::new();
        for t in &r.tasks {
            if !groups.contains(&t.name.as_str()) {
                groups.push(&t.name);
            }
        }
        for g in groups {
            let tasks: Vec<_> = r.tasks.iter().filter(|t| t.name == g).collect();
            let (mut pauses, mut ops) = (LatencyHist::new(), LatencyHist::new());
            for t in &tasks {
                pauses.add(&t.pauses);
                ops.add(&t.op_latency);
            }
            let (p, o) = (pauses.summary(), ops.summary());
            let written: u64 = tasks.iter().map(|t| t.bytes_written).sum();
            let read: u64 = tasks.iter().map(|t| t.bytes_read).sum();
            let mb_s: f64 = tasks.iter().map(|t| t.throughput_mb_s()).sum();
            let _ = writeln!(
                out,
                "{},{},{},{},{:.3},{:.3},{:.3},{},{},{},{},{},{},{},{},{:.3},{:.3}",
                values.join(","),
                field(g),
                tasks[0].job,
                tasks.len(),
                written as f64 / 1e6,
                read as f64 / 1e6,
                mb_s,
                p.count,
                ms(p.p50),
                ms(p.p99),
                ms(p.max),
                o.count,
                ms(o.p50),
                ms(o.p99),
                ms(o.max),
                dirty,
                writeback,
            );
        }
    }
    out
}

/// `sweep-devices.csv`.
pub fn devices_csv(key: &str, rows: &[(String, &RunResult)]) -> String {
    let mut out = String::new();
    for (i, (label, r)) in rows.iter().enumerate() {
        let (keys, values) = key_columns(key, label);
        if i == 0 {
            out.push_str(&keys.join(","));
            out.push_str(",device,model,util_pct,write_mb_s,read_mb_s,request_p50_ms,request_p99_ms\n");
        }
        let secs = (r.scenario.duration as f64 / 1e9).max(1e-9);
        for d in &r.devices {
            let lat = d.request_latency.summary();
            let _ = writeln!(
                out,
                "{},{},{},{:.1},{:.3},{:.3},{},{}",
                values.join(","),
                field(&d.name),
                d.model,
                d.util * 100.0,
                d.bytes_written as f64 / 1e6 / secs,
                d.bytes_read as f64 / 1e6 / secs,
                ms(lat.p50),
                ms(lat.p99),
            );
        }
    }
    out
}
