//! Terminal views of a results directory: the summary table (as `wblab run` prints it), and a
//! task's latency distribution as an R `stem()` plot and a bcc log2 histogram.

use crate::figures::{latency_sensitive, op_name, unit_hist, units, Unit};
use crate::histograms::Hist;
use crate::log2hist::log2_hist;
use crate::rundir::RunDir;
use crate::stem::{stem, DEFAULT_ATOM, DEFAULT_WIDTH};
use crate::table::{cut, mb, mb_s, mib_pages, ms, thousands, Align, Table, LABEL_MAX};
use std::fmt::Write as _;

/// Largest number of values a stem plot is drawn from; bigger distributions are represented
/// by this many evenly spaced quantiles.
pub const STEM_MAX_VALUES: usize = 100_000;

fn ns(ms_v: f64) -> u64 {
    (ms_v * 1e6).round().max(0.0) as u64
}

/// The summary table of a results directory, laid out as `wblab run` prints it.
pub fn dir_summary(run: &RunDir) -> String {
    let mut out = String::new();
    let rate = if run.wall_seconds > 0.0 {
        let eps = run.events as f64 / run.wall_seconds;
        if eps >= 1e6 {
            format!("{:.2} M events/s", eps / 1e6)
        } else {
            format!("{} events/s", thousands(eps.round() as u64))
        }
    } else {
        "- events/s".to_string()
    };
    writeln!(
        out,
        "{}  kernel {}  simulated {:.1} s  wall {:.2} s  {} events  {}",
        run.name,
        run.kernel,
        run.sim_seconds,
        run.wall_seconds,
        thousands(run.events),
        rate
    )
    .expect("String");
    if !run.tasks.is_empty() {
        out.push('\n');
        out.push_str("tasks (pauses: balance_dirty_pages sleeps; op: write/read/fsync latency; times in ms)\n");
        let us = units(&run.tasks);
        use Align::*;
        let small: Vec<&Unit> = us.iter().filter(|u| !u.folded).collect();
        let big: Vec<&Unit> = us.iter().filter(|u| u.folded).collect();
        if !small.is_empty() {
            let mut t = Table::new(
                &[
                    "task", "job", "MB wr", "MB rd", "MB/s", "pauses", "p50", "p99", "max", "op p50", "op p99", "op max",
                ],
                &[Left, Left, Right, Right, Right, Right, Right, Right, Right, Right, Right, Right],
            );
            for u in small {
                let Some(task) = run.tasks.iter().find(|t| t.pid == u.pids[0]) else {
                    continue;
                };
                let (p, o) = (&task.pauses, &task.op);
                t.row(vec![
                    cut(&task.label(), LABEL_MAX),
                    task.job.clone(),
                    mb(task.bytes_written),
                    mb(task.bytes_read),
                    mb_s(task.throughput_mb_s),
                    p.count.to_string(),
                    ms(ns(p.p50), p.count),
                    ms(ns(p.p99), p.count),
                    ms(ns(p.max), p.count),
                    ms(ns(o.p50), o.count),
                    ms(ns(o.p99), o.count),
                    ms(ns(o.max), o.count),
                ]);
            }
            t.render(&mut out);
        }
        if !big.is_empty() {
            out.push('\n');
            let mut t = Table::new(
                &[
                    "group",
                    "job",
                    "MB wr",
                    "MB rd",
                    "MB/s",
                    "per task min/mean/max",
                    "pauses",
                    "p50",
                    "p99",
                    "max",
                ],
                &[Left, Left, Right, Right, Right, Right, Right, Right, Right, Right],
            );
            for u in big {
                let ts: Vec<_> = run.tasks.iter().filter(|t| u.pids.contains(&t.pid)).collect();
                let rates: Vec<f64> = ts.iter().map(|t| t.throughput_mb_s).collect();
                let agg: f64 = rates.iter().sum();
                let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
                let max = rates.iter().copied().fold(0.0, f64::max);
                let count: u64 = ts.iter().map(|t| t.pauses.count).sum();
                let (p50, p99, pmax) = match unit_hist(run, u, true) {
                    Some(h) if !h.is_empty() => (h.quantile(0.5), h.quantile(0.99), h.max),
                    _ => {
                        let m = |f: &dyn Fn(&crate::rundir::Lat) -> f64| ns(ts.iter().map(|t| f(&t.pauses)).fold(0.0, f64::max));
                        (m(&|l| l.p50), m(&|l| l.p99), m(&|l| l.max))
                    }
                };
                t.row(vec![
                    cut(&u.label, LABEL_MAX),
                    u.job.clone(),
                    mb(ts.iter().map(|t| t.bytes_written).sum()),
                    mb(ts.iter().map(|t| t.bytes_read).sum()),
                    mb_s(agg),
                    format!("{}/{}/{}", mb_s(min), mb_s(agg / ts.len().max(1) as f64), mb_s(max)),
                    count.to_string(),
                    ms(p50, count),
                    ms(p99, count),
                    ms(pmax, count),
                ]);
            }
            t.render(&mut out);
        }
    }
    if !run.devices.is_empty() {
        out.push('\n');
        use Align::*;
        let mut t = Table::new(
            &[
                "device",
                "model",
                "MB wr",
                "MB rd",
                "MB/s",
                "util %",
                "requests",
                "lat p50 ms",
                "lat p99 ms",
            ],
            &[Left, Left, Right, Right, Right, Right, Right, Right, Right],
        );
        let secs = run.sim_seconds;
        for d in &run.devices {
            let l = &d.latency;
            let rate = if secs > 0.0 {
                (d.bytes_written + d.bytes_read) as f64 / 1e6 / secs
            } else {
                0.0
            };
            t.row(vec![
                d.name.clone(),
                d.model.clone(),
                mb(d.bytes_written),
                mb(d.bytes_read),
                mb_s(rate),
                format!("{:.1}", d.util * 100.0),
                thousands(d.requests),
                ms(ns(l.p50), l.count),
                ms(ns(l.p99), l.count),
            ]);
        }
        t.render(&mut out);
    }
    if let Some(ts) = &run.timeseries {
        if let Some(last) = ts.rows.len().checked_sub(1) {
            let v = |c: &str| ts.f64s(c).map(|v| v[last]).filter(|x| x.is_finite()).unwrap_or(0.0);
            out.push('\n');
            writeln!(
                out,
                "at {:.0} s: dirty {} MiB  writeback {} MiB  dirty thresh {} MiB  background thresh {} MiB",
                v("t_s"),
                mib_pages(v("nr_dirty") as u64),
                mib_pages(v("nr_writeback") as u64),
                mib_pages(v("dirty_thresh") as u64),
                mib_pages(v("dirty_background_thresh") as u64),
            )
            .expect("String");
        }
    }
    out
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
/// throttled writer. `pauses` picks balance_dirty_pages pauses instead of op latency (the
/// default for bulk writers).
pub fn pick_latency(run: &RunDir, task: Option<&str>, pauses: Option<bool>) -> Result<Pick, String> {
    if run.hists.is_none() {
        return Err(format!("{}: no histograms.json (written by wblab run)", run.dir.display()));
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
                None => return Err(format!("{}: no task has a latency distribution", run.dir.display())),
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
    Ok(Pick { what, hist })
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
