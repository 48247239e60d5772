//! Terminal views of a results directory: the summary table (as `wblab run` prints it), and a
//! task's latency distribution as an R `stem()` plot and a bcc log2 histogram.

pub mod fio;
pub mod iostat;
pub mod log2hist;
pub mod stem;
pub(crate) mod table;
pub mod timeline;
pub mod tiotest;
pub mod vmstat;

use crate::figures::{latency_sensitive, op_name, unit_hist, units, Unit};
use crate::load::rundir::RunDir;
use crate::results::histograms::Hist;
use crate::terminal::log2hist::log2_hist;
use crate::terminal::stem::{stem, DEFAULT_ATOM, DEFAULT_WIDTH};
use crate::terminal::table::{
    cgroup_rows_table, device_row, device_table_header, group_row, group_table, mib_pages, run_line, task_row, task_table, CgroupRow,
    Quants,
};
use std::fmt::Write as _;

/// Largest number of values a stem plot is drawn from; bigger distributions are represented
/// by this many evenly spaced quantiles.
pub const STEM_MAX_VALUES: usize = 100_000;

fn ns(ms_v: f64) -> u64 {
    (ms_v * 1e6).round().max(0.0) as u64
}

/// A results directory's latency summary (ms) as table quantiles (ns).
fn quants(l: &crate::load::rundir::Lat) -> Quants {
    Quants {
        count: l.count,
        p50: ns(l.p50),
        p99: ns(l.p99),
        max: ns(l.max),
    }
}

/// The summary table of a results directory, laid out as `wblab run` prints it.
pub fn dir_summary(run: &RunDir) -> String {
    let mut out = String::new();
    run_line(&mut out, &run.name, &run.kernel, run.sim_seconds, run.wall_seconds, run.events);
    if !run.tasks.is_empty() {
        out.push('\n');
        out.push_str("tasks (pause: balance_dirty_pages sleeps; op: each write/read/fsync call or launch; ms)\n");
        let us = units(&run.tasks);
        let small: Vec<&Unit> = us.iter().filter(|u| !u.folded).collect();
        let big: Vec<&Unit> = us.iter().filter(|u| u.folded).collect();
        if !small.is_empty() {
            let mut t = task_table();
            for u in small {
                let Some(task) = run.tasks.iter().find(|t| t.pid == u.pids[0]) else {
                    continue;
                };
                t.row(task_row(
                    &task.label(),
                    task.job.clone(),
                    (task.bytes_written, task.bytes_read),
                    task.throughput_mb_s,
                    quants(&task.pauses),
                    quants(&task.op),
                ));
            }
            t.render(&mut out);
        }
        if !big.is_empty() {
            out.push('\n');
            let mut t = group_table();
            for u in big {
                let ts: Vec<_> = run.tasks.iter().filter(|t| u.has(t.pid)).collect();
                let rates: Vec<f64> = ts.iter().map(|t| t.throughput_mb_s).collect();
                let count: u64 = ts.iter().map(|t| t.pauses.count).sum();
                let (p50, p99, max) = match unit_hist(run, u, true) {
                    Some(h) if !h.is_empty() => (h.quantile(0.5), h.quantile(0.99), h.max),
                    _ => {
                        let m = |f: &dyn Fn(&crate::load::rundir::Lat) -> f64| ns(ts.iter().map(|t| f(&t.pauses)).fold(0.0, f64::max));
                        (m(&|l| l.p50), m(&|l| l.p99), m(&|l| l.max))
                    }
                };
                t.row(group_row(
                    &u.label,
                    u.job.clone(),
                    (ts.iter().map(|t| t.bytes_written).sum(), ts.iter().map(|t| t.bytes_read).sum()),
                    &rates,
                    Quants { count, p50, p99, max },
                ));
            }
            t.render(&mut out);
        }
    }
    if !run.devices.is_empty() {
        out.push('\n');
        let mut t = device_table_header();
        for d in &run.devices {
            t.row(device_row(
                &d.name,
                &d.model,
                (d.bytes_written, d.bytes_read),
                run.sim_seconds,
                d.util,
                d.requests,
                quants(&d.latency),
            ));
        }
        t.render(&mut out);
    }
    let cgroups = dir_cgroups(run);
    if !cgroups.is_empty() {
        out.push('\n');
        cgroup_rows_table(&cgroups, &mut out);
    }
    let pressure = crate::results::csv::pressure_rows_of_summary(&run.summary);
    if !pressure.is_empty() {
        out.push('\n');
        table::pressure_rows_table(&pressure, &mut out);
    }
    if let Some(ts) = &run.timeseries {
        if let Some(last) = ts.rows.len().checked_sub(1) {
            let v = |c: &str| ts.f64s(c).map(|v| v[last]).filter(|x| x.is_finite()).unwrap_or(0.0);
            out.push('\n');
            writeln!(
                out,
                "at {:.0} s: dirty {} MiB  writeback {} MiB  dirty thresh {} MiB  background thresh {} MiB",
                v("t_s"),
                mib_pages(v("nr_dirty_pages") as u64),
                mib_pages(v("nr_writeback_pages") as u64),
                mib_pages(v("dirty_thresh_pages") as u64),
                mib_pages(v("dirty_background_thresh_pages") as u64),
            )
            .expect("String");
        }
    }
    let v = crate::verdict::verdict(&crate::verdict::Input::from_dir(run));
    if !v.is_empty() {
        out.push('\n');
        out.push_str(&crate::verdict::verdict_text(&v));
    }
    out
}

/// The cgroup table's rows from a results directory: summary.json's `cgroups` (peaks and
/// events) and the scenario it echoes (limits, which tasks run where), cgroups.csv (each
/// group's dirty threshold at the end).
fn dir_cgroups(run: &RunDir) -> Vec<CgroupRow> {
    let s = &run.summary;
    let Some(gs) = s["scenario"]["cgroups"]["groups"].as_array() else {
        return Vec::new();
    };
    let u = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    gs.iter()
        .enumerate()
        .map(|(k, g)| {
            let path = g["path"].as_str().unwrap_or("").to_string();
            let ev = &s["cgroups"][k];
            let names: Vec<&str> = s["scenario"]["tasks"]
                .as_array()
                .map(|ts| {
                    ts.iter()
                        .filter(|t| t["cgroup"].as_u64() == Some(k as u64))
                        .filter_map(|t| t["name"].as_str())
                        .collect()
                })
                .unwrap_or_default();
            let io = run
                .tasks
                .iter()
                .filter(|t| names.contains(&t.name.as_str()))
                .fold((0, 0), |(w, d), t| (w + t.bytes_written, d + t.bytes_read));
            let thresh = run.cgroups.as_ref().map_or(0, |c| {
                let (Some(col_g), Some(col_t)) = (c.col("cgroup"), c.col("dirty_thresh_bytes")) else {
                    return 0;
                };
                c.rows
                    .iter()
                    .rev()
                    .find(|r| r[col_g] == path)
                    .map_or(0, |r| r[col_t].parse().unwrap_or(0))
            });
            CgroupRow {
                path,
                io,
                max: g["memory_max"].as_u64(),
                high: g["memory_high"].as_u64(),
                peak: u(&ev["peak_memory_current_bytes"]),
                peak_dirty: u(&ev["peak_dirty_writeback_bytes"]),
                thresh,
                reclaimed: u(&ev["reclaimed_bytes"]),
                max_events: u(&ev["max_events"]),
                throttled: u(&ev["reclaim_throttled"]),
                wb_waits: u(&ev["writeback_waits"]),
                high_delay_s: ev["high_delay_ms"].as_f64().unwrap_or(0.0) / 1e3,
            }
        })
        .collect()
}

/// A latency distribution chosen for the terminal.
#[derive(Clone, Debug)]
pub struct Pick {
    /// "reader#0 read() latency", "dd ×100 pauses".
    pub what: String,
    pub hist: Hist,
}

/// Choose a task's distribution: `task` may be a task name (all its instances), `name#i`, or
/// a folded group's label; without it, the first latency-sensitive task, else the first
/// throttled writer, else `None` (a run may record no latency at all: not an error). `pauses`
/// picks balance_dirty_pages pauses instead of op latency (the default for bulk writers).
pub fn pick_latency(run: &RunDir, task: Option<&str>, pauses: Option<bool>) -> Result<Option<Pick>, String> {
    if run.hists.is_none() {
        return Err(run.why_not(crate::HISTOGRAMS_FILE));
    }
    let us = units(&run.tasks);
    let unit: Unit = match task {
        Some(name) => {
            if let Some(u) = us.iter().find(|u| u.label == name) {
                u.clone()
            } else {
                let pids: Vec<u32> = run.tasks.iter().filter(|t| t.name == name).map(|t| t.pid).collect();
                if pids.is_empty() {
                    let known: Vec<String> = us.iter().map(|u| u.label.clone()).collect();
                    return Err(format!("no task `{name}` in {}; tasks: {}", run.dir.display(), known.join(", ")));
                }
                let job = run.tasks.iter().find(|t| t.name == name).map(|t| t.job.clone()).unwrap_or_default();
                Unit {
                    label: if pids.len() > 1 {
                        format!("{name} ×{}", pids.len())
                    } else {
                        format!("{name}#0")
                    },
                    name: name.to_string(),
                    job,
                    pids,
                    folded: true,
                }
            }
        }
        None => {
            let lat = us
                .iter()
                .find(|u| latency_sensitive(&u.job) && unit_hist(run, u, false).is_some_and(|h| !h.is_empty()));
            let wr = us.iter().find(|u| unit_hist(run, u, true).is_some_and(|h| !h.is_empty()));
            match lat.or(wr) {
                Some(u) => u.clone(),
                None => return Ok(None),
            }
        }
    };
    let pauses = pauses.unwrap_or(!latency_sensitive(&unit.job));
    let hist = unit_hist(run, &unit, pauses).unwrap_or_default();
    let what = if pauses {
        format!("{} balance_dirty_pages pauses", unit.label)
    } else {
        format!("{} {} latency", unit.label, op_name(&unit.job))
    };
    Ok(Some(Pick { what, hist }))
}

/// A task's latency as a stem plot (values in ms) and a log2 histogram (µs).
pub fn latency_text(p: &Pick) -> String {
    let mut out = String::new();
    let h = &p.hist;
    if h.is_empty() {
        writeln!(out, "{}: no samples", p.what).expect("String");
        return out;
    }
    writeln!(
        out,
        "{}: {} samples, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        p.what,
        h.count,
        h.quantile(0.5) as f64 / 1e6,
        h.quantile(0.99) as f64 / 1e6,
        h.max as f64 / 1e6
    )
    .expect("String");
    let values = h.values(STEM_MAX_VALUES);
    let ms_values: Vec<f64> = values.iter().map(|&v| v as f64 / 1e6).collect();
    out.push_str("\nstem() of the latencies in ms");
    if (values.len() as u64) < h.count {
        write!(out, " ({} evenly spaced quantiles)", values.len()).expect("String");
    }
    out.push_str(":\n");
    out.push_str(&stem(&ms_values, 1.0, DEFAULT_WIDTH, DEFAULT_ATOM));
    out.push_str(&log2_hist(h));
    out
}
