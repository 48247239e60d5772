//! A sweep's figures: per point, each task group's and each device's, by name. They make
//! `sweep.csv` (one row per point and task group) and `sweep-devices.csv` (one row per point
//! and device) for pandas and spreadsheets — each swept key a column of its own, every other
//! header ending in its unit — and the names `--minimize`, `--maximize` and `--where` take
//! (`reader.op_p99_ms`, `sda.util_pct`).

use std::fmt::Write as _;
use wblab_sim::metrics::{LatencyHist, RunResult};

/// A task group's figures, in this order.
pub const GROUP_FIGURES: [&str; 13] = [
    "mb_written",
    "mb_read",
    "throughput_mb_s",
    "pause_count",
    "pause_p50_ms",
    "pause_p99_ms",
    "pause_max_ms",
    "op_count",
    "op_p50_ms",
    "op_p99_ms",
    "op_max_ms",
    "dirty_mean_mib",
    "writeback_mean_mib",
];

/// A device's figures, in this order.
pub const DEVICE_FIGURES: [&str; 5] = ["util_pct", "write_mb_s", "read_mb_s", "request_p50_ms", "request_p99_ms"];

pub struct GroupFigures {
    pub group: String,
    pub job: &'static str,
    pub tasks: usize,
    pub values: [f64; GROUP_FIGURES.len()],
}

pub struct DeviceFigures {
    pub device: String,
    pub model: &'static str,
    pub values: [f64; DEVICE_FIGURES.len()],
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Mean of a vmstat counter over the run, MiB.
fn mean_mib(r: &RunResult, get: impl Fn(&wblab_sim::metrics::VmstatSample) -> u64) -> f64 {
    if r.vmstat.is_empty() {
        return 0.0;
    }
    let pages: u64 = r.vmstat.iter().map(get).sum();
    pages as f64 * 4096.0 / r.vmstat.len() as f64 / (1u64 << 20) as f64
}

/// Each task group's figures, in the order the groups appear.
pub fn group_figures(r: &RunResult) -> Vec<GroupFigures> {
    let dirty = mean_mib(r, |s| s.nr_dirty);
    let writeback = mean_mib(r, |s| s.nr_writeback);
    let mut groups: Vec<&str> = Vec::new();
    for t in &r.tasks {
        if !groups.contains(&t.name.as_str()) {
            groups.push(&t.name);
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let tasks: Vec<_> = r.tasks.iter().filter(|t| t.name == g).collect();
            let (mut pauses, mut ops) = (LatencyHist::new(), LatencyHist::new());
            for t in &tasks {
                pauses.add(&t.pauses);
                ops.add(&t.op_latency);
            }
            let (p, o) = (pauses.summary(), ops.summary());
            let written: u64 = tasks.iter().map(|t| t.bytes_written).sum();
            let read: u64 = tasks.iter().map(|t| t.bytes_read).sum();
            GroupFigures {
                group: g.to_string(),
                job: tasks[0].job,
                tasks: tasks.len(),
                values: [
                    written as f64 / 1e6,
                    read as f64 / 1e6,
                    tasks.iter().map(|t| t.throughput_mb_s()).sum(),
                    p.count as f64,
                    ms(p.p50),
                    ms(p.p99),
                    ms(p.max),
                    o.count as f64,
                    ms(o.p50),
                    ms(o.p99),
                    ms(o.max),
                    dirty,
                    writeback,
                ],
            }
        })
        .collect()
}

/// Each device's figures.
pub fn device_figures(r: &RunResult) -> Vec<DeviceFigures> {
    let secs = (r.scenario.duration as f64 / 1e9).max(1e-9);
    r.devices
        .iter()
        .map(|d| {
            let lat = d.request_latency.summary();
            DeviceFigures {
                device: d.name.clone(),
                model: d.model,
                values: [
                    d.util * 100.0,
                    d.bytes_written as f64 / 1e6 / secs,
                    d.bytes_read as f64 / 1e6 / secs,
                    ms(lat.p50),
                    ms(lat.p99),
                ],
            }
        })
        .collect()
}

/// Every figure of a point by its name: `<group>.<figure>` and `<device>.<figure>`.
pub fn named_figures(r: &RunResult) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for g in group_figures(r) {
        out.extend(GROUP_FIGURES.iter().zip(g.values).map(|(f, v)| (format!("{}.{f}", g.group), v)));
    }
    for d in device_figures(r) {
        out.extend(DEVICE_FIGURES.iter().zip(d.values).map(|(f, v)| (format!("{}.{f}", d.device), v)));
    }
    out
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A figure as the CSV prints it: counts whole, the rest to three decimals.
fn push_value(out: &mut String, name: &str, v: f64) {
    if name.ends_with("_count") {
        let _ = write!(out, ",{v:.0}");
    } else if name == "util_pct" {
        let _ = write!(out, ",{v:.1}");
    } else {
        let _ = write!(out, ",{v:.3}");
    }
}

/// The swept keys' header fields, and a point's values for them.
fn key_columns(key: &str, label: &str) -> (String, String) {
    let keys: Vec<String> = key.split(wblab_scenario::SWEEP_KEY_SEPARATOR).map(field).collect();
    let values: Vec<String> = label.split(wblab_scenario::SWEEP_VALUE_SEPARATOR).map(field).collect();
    (keys.join(","), values.join(","))
}

/// One row per point and item (a task group, a device): the swept keys' values, the item's
/// own columns (`columns`, already CSV fields), then its figures named `names`.
fn table_csv(
    key: &str,
    rows: &[(String, &RunResult)],
    columns: &str,
    names: &[&str],
    items: impl Fn(&RunResult) -> Vec<(String, Vec<f64>)>,
) -> String {
    let mut out = String::new();
    for (i, (label, r)) in rows.iter().enumerate() {
        let (keys, values) = key_columns(key, label);
        if i == 0 {
            let _ = write!(out, "{keys},{columns}");
            for f in names {
                out.push(',');
                out.push_str(f);
            }
            out.push('\n');
        }
        for (own, figures) in items(r) {
            let _ = write!(out, "{values},{own}");
            for (f, v) in names.iter().zip(figures) {
                push_value(&mut out, f, v);
            }
            out.push('\n');
        }
    }
    out
}

/// `sweep.csv`.
pub fn tasks_csv(key: &str, rows: &[(String, &RunResult)]) -> String {
    table_csv(key, rows, "group,job,tasks", &GROUP_FIGURES, |r| {
        group_figures(r)
            .into_iter()
            .map(|g| (format!("{},{},{}", field(&g.group), g.job, g.tasks), g.values.to_vec()))
            .collect()
    })
}

/// `sweep-devices.csv`.
pub fn devices_csv(key: &str, rows: &[(String, &RunResult)]) -> String {
    table_csv(key, rows, "device,model", &DEVICE_FIGURES, |r| {
        device_figures(r)
            .into_iter()
            .map(|d| (format!("{},{}", field(&d.device), d.model), d.values.to_vec()))
            .collect()
    })
}
