//! The writeback graphs, after the set Wu Fengguang's writeback-tests scripts drew (file
//! names follow his: `balance_dirty_pages-pause`, `-task-bw`, `global_dirtied_written`, ...),
//! built from loaded results directories. With one run, colours tell tasks or quantities
//! apart; with several, colour means "run" and line style means "quantity".

use crate::histograms::Hist;
use crate::plot::ticks::nice_step;
use crate::plot::{color, Axis, Chart, LegendEntry, Marker, Style, DASHES};
use crate::rundir::{Csv, RunDir, TaskInfo};
use crate::table::GROUP_MIN;

/// Bytes per page in trace and CSV page counts.
const PAGE: f64 = 4096.0;
const MIB: f64 = 1024.0 * 1024.0;
/// Grey used for "what the line style means" legend entries.
const KEY_GREY: &str = "#555555";

/// One graph of the report.
#[derive(Clone, Debug)]
pub struct Figure {
    /// File name of the SVG, also the anchor in report.html (without `.svg`).
    pub file: String,
    pub title: String,
    /// One or two sentences: what is drawn and where the numbers come from.
    pub caption: String,
    pub chart: Chart,
}

/// A run as the figures see it: its data and the label legends use for it.
pub struct Run<'a> {
    pub data: &'a RunDir,
    pub label: String,
}

/// Tasks drawn as one series: a single task, or a `[[task]]` group of `GROUP_MIN` or more.
#[derive(Clone, Debug)]
pub struct Unit {
    pub label: String,
    pub name: String,
    pub job: String,
    pub pids: Vec<u32>,
    pub folded: bool,
}

/// The run's tasks as series units (big groups folded into one, as the terminal table does).
pub fn units(tasks: &[TaskInfo]) -> Vec<Unit> {
    let mut groups: Vec<(&str, Vec<&TaskInfo>)> = Vec::new();
    for t in tasks {
        match groups.iter_mut().find(|(n, _)| *n == t.name) {
            Some((_, v)) => v.push(t),
            None => groups.push((&t.name, vec![t])),
        }
    }
    let mut out = Vec::new();
    for (name, v) in groups {
        if v.len() >= GROUP_MIN {
            out.push(Unit {
                label: format!("{name} ×{}", v.len()),
                name: name.to_string(),
                job: v[0].job.clone(),
                pids: v.iter().map(|t| t.pid).collect(),
                folded: true,
            });
        } else {
            for t in v {
                out.push(Unit {
                    label: t.label(),
                    name: t.name.clone(),
                    job: t.job.clone(),
                    pids: vec![t.pid],
                    folded: false,
                });
            }
        }
    }
    out
}

/// Jobs whose per-operation latency is what a user feels (everything but bulk writers).
pub fn latency_sensitive(job: &str) -> bool {
    job != "dd"
}

/// What one operation of a job is, for legends.
pub fn op_name(job: &str) -> &'static str {
    match job {
        "dd" => "write()",
        "cat" | "randread" => "read()",
        "fsync" => "fsync()",
        "sync" => "sync()",
        "du" | "lstat" => "lstat()",
        "ls" => "ls",
        "launch" => "launch",
        _ => "op",
    }
}

/// The merged histogram of a unit's tasks (`pause` or op latency).
pub fn unit_hist(run: &RunDir, u: &Unit, pause: bool) -> Option<Hist> {
    let h = run.hists.as_ref()?;
    let mut acc = Hist::default();
    for t in h.tasks.iter().filter(|t| u.pids.contains(&t.pid)) {
        acc.merge(if pause { &t.pause } else { &t.op_latency });
    }
    Some(acc)
}

fn time_axis(runs: &[Run]) -> Axis {
    let t = runs.iter().map(|r| r.data.duration()).fold(0.0, f64::max);
    Axis::linear("time (s)").range(0.0, if t > 0.0 { t } else { 1.0 })
}

/// A chart over the runs' time axis, with a subtitle naming where its numbers come from.
fn time_chart(runs: &[Run], id: &str, title: &str, y: Axis, subtitle: impl Into<String>) -> Chart {
    let mut c = Chart::new(id, title, time_axis(runs), y);
    c.subtitle = Some(subtitle.into());
    c
}

/// A page-count chart over time, in MiB or GiB to fit `max_pages`: the chart (y label
/// `"{y_label} ({unit})"`) and the pages → unit scale.
fn pages_chart(runs: &[Run], id: &str, title: &str, y_label: &str, max_pages: f64, subtitle: &str) -> (Chart, f64) {
    let (unit, scale) = size_unit(max_pages);
    let y = Axis::linear(&format!("{y_label} ({unit})"));
    (time_chart(runs, id, title, y, subtitle), scale)
}

fn multi(runs: &[Run]) -> bool {
    runs.len() > 1
}

/// Legend entries for several runs: one colour per run, then one grey line style per quantity.
fn run_legend(runs: &[Run], quantities: &[(&str, Style)]) -> Vec<LegendEntry> {
    let mut l: Vec<LegendEntry> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| LegendEntry {
            label: r.label.clone(),
            style: Style::line(color(i), 3.0, None),
        })
        .collect();
    for (name, st) in quantities {
        let mut st = st.clone();
        st.color = KEY_GREY.to_string();
        l.push(LegendEntry {
            label: name.to_string(),
            style: st,
        });
    }
    l
}

/// A quantity drawn with a fixed style in single-run charts.
struct Quantity {
    name: &'static str,
    color: &'static str,
    width: f64,
    dash: Option<&'static str>,
}

/// Add one series per (run, quantity): single run → the quantity's own style; several runs →
/// the run's colour and the quantity's dash pattern.
fn add_quantities(c: &mut Chart, runs: &[Run], qs: &[Quantity], data: impl Fn(&Run, usize) -> Vec<(f64, f64)>) {
    // Several runs: the quantity's own dash pattern (unique within a figure) in the run's colour.
    let styles: Vec<Style> = qs.iter().map(|q| Style::line(KEY_GREY, q.width, q.dash)).collect();
    for (ri, r) in runs.iter().enumerate() {
        for (qi, q) in qs.iter().enumerate() {
            let pts = data(r, qi);
            if pts.is_empty() {
                continue;
            }
            if multi(runs) {
                let mut st = styles[qi].clone();
                st.color = color(ri).to_string();
                c.push(&format!("{}: {}", r.label, q.name), st, pts);
            } else {
                c.push(q.name, Style::line(q.color, q.width, q.dash), pts);
            }
        }
    }
    if multi(runs) {
        let present: Vec<(&str, Style)> = qs
            .iter()
            .enumerate()
            .filter(|(_, q)| c.series.iter().any(|s| s.name.ends_with(&format!(": {}", q.name))))
            .map(|(i, q)| (q.name, styles[i].clone()))
            .collect();
        c.legend = run_legend(runs, &present);
    }
}

fn pages_to_mib(p: f64) -> f64 {
    p * PAGE / MIB
}

/// 1. Pauses per throttle event.
fn pause_figure(runs: &[Run]) -> Figure {
    let mut positive: Vec<f64> = Vec::new();
    for r in runs {
        positive.extend(r.data.trace.bdp.iter().filter(|e| e.pause_ms > 0).map(|e| e.pause_ms as f64));
        positive.extend(r.data.trace.bdp.iter().filter(|e| e.paused_ms > 0).map(|e| e.paused_ms as f64));
    }
    let (lo, hi) = positive.iter().fold((f64::INFINITY, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
    let log = hi > 0.0 && hi / lo >= 30.0;
    let y = if log {
        Axis::log("pause per event (ms, log scale)")
    } else {
        Axis::linear("pause per event (ms)")
    };
    let mut c = Chart::new("balance_dirty_pages-pause", "balance_dirty_pages pauses", time_axis(runs), y);
    let mut any_paused = false;
    let mut skipped = 0usize;
    let mut legend = Vec::new();
    for (ri, r) in runs.iter().enumerate() {
        for (ui, u) in units(&r.data.tasks).iter().enumerate() {
            let ev: Vec<_> = r.data.trace.bdp.iter().filter(|e| u.pids.contains(&e.pid)).collect();
            if ev.is_empty() {
                continue;
            }
            skipped += ev.iter().filter(|e| e.pause_ms <= 0).count();
            let col = if multi(runs) { color(ri) } else { color(ui) };
            let name = if multi(runs) {
                format!("{}: {}", r.label, u.label)
            } else {
                u.label.clone()
            };
            let radius = if ev.len() > 20_000 { 1.5 } else { 2.2 };
            let mut dot = Style::points(col, Marker::Circle, radius);
            if multi(runs) {
                dot.opacity = 0.5;
            }
            c.push(
                &name,
                dot,
                ev.iter().filter(|e| e.pause_ms > 0).map(|e| (e.t, e.pause_ms as f64)).collect(),
            );
            let paused: Vec<(f64, f64)> = ev.iter().filter(|e| e.paused_ms > 0).map(|e| (e.t, e.paused_ms as f64)).collect();
            if !paused.is_empty() {
                any_paused = true;
                c.push(&format!("{name} paused"), Style::points(col, Marker::Cross, 2.5), paused);
            }
            if !multi(runs) {
                legend.push(LegendEntry {
                    label: u.label.clone(),
                    style: Style::points(col, Marker::Circle, 3.0),
                });
            }
        }
    }
    if multi(runs) {
        legend = runs
            .iter()
            .enumerate()
            .map(|(i, r)| LegendEntry {
                label: r.label.clone(),
                style: Style::points(color(i), Marker::Circle, 3.0),
            })
            .collect();
    }
    if any_paused {
        legend.push(LegendEntry {
            label: "paused".into(),
            style: Style::points(KEY_GREY, Marker::Cross, 3.0),
        });
    }
    c.legend = legend;
    c.subtitle = Some(if any_paused {
        "one mark per throttle event that slept: ● pause (the sleep it takes), ✕ paused (time already slept in this call)".into()
    } else {
        "one mark per throttle event that slept: the pause it took, from trace.txt".into()
    });
    if skipped > 0 {
        c.notes.push(format!(
            "{skipped} events did not sleep (pause ≤ 0: dirtied pages were under the task's ratelimit or min pause); not drawn."
        ));
    }
    if runs.iter().all(|r| r.data.trace.bdp.is_empty()) {
        c.notes
            .push("trace.txt has no writeback:balance_dirty_pages events (no task was throttled, or writeback tracing was off).".into());
    }
    Figure {
        file: "balance_dirty_pages-pause".into(),
        title: "Pause per throttle event".into(),
        caption: "Each mark is one writeback:balance_dirty_pages event of a task: how long it slept (pause, ms) at that moment. \
                  Pauses above 200 ms (MAX_PAUSE) should not happen; stripes show the pause grid of the jiffy clock."
            .into(),
        chart: c,
    }
}

/// Width of the bins that turn per-event counts into rates, s.
fn bin_width(runs: &[Run]) -> f64 {
    let t = runs.iter().map(|r| r.data.duration()).fold(0.0, f64::max);
    nice_step(t / 120.0).max(0.2)
}

/// Per-bin sums of (t, value) → rate per second, as step points spanning [0, end].
fn binned(events: impl Iterator<Item = (f64, f64)>, bin: f64, end: f64) -> Vec<f64> {
    let n = (end / bin).ceil().max(1.0) as usize;
    let mut b = vec![0.0; n];
    for (t, v) in events {
        let i = ((t / bin).floor().max(0.0) as usize).min(n - 1);
        b[i] += v;
    }
    b.iter().map(|v| v / bin).collect()
}

fn step_points(bins: &[f64], bin: f64) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = bins.iter().enumerate().map(|(i, &v)| (i as f64 * bin, v)).collect();
    if let Some(&last) = bins.last() {
        pts.push((bins.len() as f64 * bin, last));
    }
    pts
}

/// 2. Per-task write bandwidth from the trace's dirtied counts.
fn task_bw_figure(runs: &[Run]) -> Figure {
    let bin = bin_width(runs);
    let mut c = time_chart(
        runs,
        "balance_dirty_pages-task-bw",
        "Per-task write bandwidth",
        Axis::linear("write bandwidth (MB/s)"),
        format!("sum of `dirtied` of each task's balance_dirty_pages events per {bin} s"),
    );
    let mut legend = Vec::new();
    for (ri, r) in runs.iter().enumerate() {
        let end = r.data.duration();
        for (ui, u) in units(&r.data.tasks).iter().enumerate() {
            let per_task: Vec<Vec<f64>> = u
                .pids
                .iter()
                .map(|&pid| {
                    binned(
                        r.data
                            .trace
                            .bdp
                            .iter()
                            .filter(|e| e.pid == pid)
                            .map(|e| (e.t, e.dirtied as f64 * PAGE / 1e6)),
                        bin,
                        end,
                    )
                })
                .collect();
            if per_task.iter().all(|b| b.iter().all(|&v| v == 0.0)) {
                continue;
            }
            let col = if multi(runs) { color(ri) } else { color(ui) };
            let name = if multi(runs) {
                format!("{}: {}", r.label, u.label)
            } else {
                u.label.clone()
            };
            if u.folded {
                let n = per_task[0].len();
                let agg = |f: &dyn Fn(&[f64]) -> f64| -> Vec<f64> {
                    (0..n).map(|i| f(&per_task.iter().map(|b| b[i]).collect::<Vec<_>>())).collect()
                };
                let mean = agg(&|v| v.iter().sum::<f64>() / v.len() as f64);
                let min = agg(&|v| v.iter().copied().fold(f64::INFINITY, f64::min));
                let max = agg(&|v| v.iter().copied().fold(0.0, f64::max));
                c.push(&format!("{name} mean"), Style::step(col, 2.0, None), step_points(&mean, bin));
                c.push(&format!("{name} min"), Style::step(col, 0.8, Some("2 3")), step_points(&min, bin));
                c.push(&format!("{name} max"), Style::step(col, 0.8, Some("2 3")), step_points(&max, bin));
                if !multi(runs) {
                    legend.push(LegendEntry {
                        label: format!("{} per task: mean (min, max dotted)", u.label),
                        style: Style::line(col, 2.0, None),
                    });
                }
            } else {
                c.push(&name, Style::step(col, 1.5, None), step_points(&per_task[0], bin));
                if !multi(runs) {
                    legend.push(LegendEntry {
                        label: u.label.clone(),
                        style: Style::line(col, 2.0, None),
                    });
                }
            }
        }
    }
    c.legend = if multi(runs) { run_legend(runs, &[]) } else { legend };
    c.notes
        .push("Only pages dirtied through balance_dirty_pages events count: dirtying below the freerun ceiling is not traced.".into());
    Figure {
        file: "balance_dirty_pages-task-bw".into(),
        title: "Per-task write bandwidth".into(),
        caption: "How fast each writer dirtied pages: the dirtied field of its balance_dirty_pages events, summed per bin. \
                  Fair throttling gives equal lines; a sawtooth shows the control loop hunting."
            .into(),
        chart: c,
    }
}

/// Choose MiB or GiB for a page-count chart.
fn size_unit(max_pages: f64) -> (&'static str, f64) {
    if pages_to_mib(max_pages) >= 8192.0 {
        ("GiB", PAGE / (MIB * 1024.0))
    } else {
        ("MiB", PAGE / MIB)
    }
}

fn col_max(c: Option<&Csv>, cols: &[&str]) -> f64 {
    let Some(c) = c else { return 0.0 };
    cols.iter()
        .filter_map(|n| c.f64s(n))
        .flatten()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// 3. Global pages dirtied and written, cumulative.
fn dirtied_written_figure(runs: &[Run]) -> Figure {
    let max = runs
        .iter()
        .map(|r| col_max(r.data.timeseries.as_ref(), &["nr_dirtied", "nr_written"]))
        .fold(0.0, f64::max);
    let (mut c, scale) = pages_chart(
        runs,
        "global_dirtied_written",
        "Pages dirtied and written (cumulative)",
        "cumulative",
        max,
        "nr_dirtied and nr_written from timeseries.csv (/proc/vmstat)",
    );
    let qs = [
        Quantity {
            name: "dirtied",
            color: "#0072B2",
            width: 2.0,
            dash: None,
        },
        Quantity {
            name: "written",
            color: "#D55E00",
            width: 2.0,
            dash: Some("6 4"),
        },
    ];
    add_quantities(&mut c, runs, &qs, |r, qi| {
        let col = ["nr_dirtied", "nr_written"][qi];
        r.data.timeseries.as_ref().map(|t| t.xy("t_s", col, scale)).unwrap_or_default()
    });
    Figure {
        file: "global_dirtied_written".into(),
        title: "Global dirtied vs written".into(),
        caption: "The gap between the two lines is the dirty + writeback backlog; parallel lines mean the disk keeps up \
                  with the writers."
            .into(),
        chart: c,
    }
}

/// Throttle rows of the first device (freerun/setpoint/limit are global).
fn first_device_throttle(r: &RunDir) -> Option<Csv> {
    let t = r.throttle.as_ref()?;
    let dev = r.devices.first().map(|d| d.name.clone()).or_else(|| {
        let c = t.col("device")?;
        t.rows.first().and_then(|row| row.get(c).cloned())
    })?;
    Some(t.filter("device", &dev))
}

/// 4. Global dirty state: dirty pages with freerun, setpoint, limit and the thresholds.
fn dirty_state_figure(runs: &[Run]) -> Figure {
    let max = runs
        .iter()
        .map(|r| {
            let g = r
                .data
                .trace
                .gds
                .iter()
                .map(|e| (e.dirty.max(e.limit).max(e.thresh)) as f64)
                .fold(0.0, f64::max);
            g.max(col_max(r.data.timeseries.as_ref(), &["nr_dirty", "dirty_thresh"]))
                .max(col_max(r.data.throttle.as_ref(), &["limit"]))
        })
        .fold(0.0, f64::max);
    let (mut c, scale) = pages_chart(
        runs,
        "global_dirty_state",
        "Global dirty state",
        "pages",
        max,
        "dirty, writeback: global_dirty_state events; freerun, setpoint, limit: throttle.csv",
    );
    let qs = [
        Quantity {
            name: "dirty",
            color: "#0072B2",
            width: 2.2,
            dash: None,
        },
        Quantity {
            name: "writeback",
            color: "#E69F00",
            width: 1.2,
            dash: Some("4 2"),
        },
        Quantity {
            name: "freerun",
            color: "#56B4E9",
            width: 1.5,
            dash: Some("8 3 2 3"),
        },
        Quantity {
            name: "setpoint",
            color: "#009E73",
            width: 1.5,
            dash: Some("6 4"),
        },
        Quantity {
            name: "limit",
            color: "#D55E00",
            width: 1.5,
            dash: Some("14 4"),
        },
        Quantity {
            name: "dirty thresh",
            color: "#CC79A7",
            width: 1.2,
            dash: Some("1 3"),
        },
        Quantity {
            name: "background thresh",
            color: "#777777",
            width: 1.2,
            dash: Some("8 3 2 3 2 3"),
        },
    ];
    add_quantities(&mut c, runs, &qs, |r, qi| {
        let d = r.data;
        let from_trace = !d.trace.gds.is_empty();
        let ts = |col: &str| d.timeseries.as_ref().map(|t| t.xy("t_s", col, scale)).unwrap_or_default();
        let gds = |f: &dyn Fn(&crate::rundir::GdsEvent) -> u64| -> Vec<(f64, f64)> {
            d.trace.gds.iter().map(|e| (e.t, f(e) as f64 * scale)).collect()
        };
        let thr = |col: &str| first_device_throttle(d).map(|t| t.xy("t_s", col, scale)).unwrap_or_default();
        match qi {
            0 if from_trace => gds(&|e| e.dirty),
            0 => ts("nr_dirty"),
            1 if from_trace => gds(&|e| e.writeback),
            1 => ts("nr_writeback"),
            2 => thr("freerun"),
            3 => thr("setpoint"),
            4 => thr("limit"),
            5 => ts("dirty_thresh"),
            _ => ts("dirty_background_thresh"),
        }
    });
    Figure {
        file: "global_dirty_state".into(),
        title: "Dirty pages and the throttling thresholds".into(),
        caption: "Writers run free below freerun = (thresh + bg_thresh)/2, are throttled towards setpoint above it, and \
                  stopped hard at limit. Dirty pages should settle near setpoint."
            .into(),
        chart: c,
    }
}

/// 5. Each device's share: wb_dirty and wb_thresh per device.
fn bdi_dirty_figure(runs: &[Run]) -> Figure {
    let max = runs
        .iter()
        .map(|r| col_max(r.data.throttle.as_ref(), &["wb_dirty", "wb_thresh"]))
        .fold(0.0, f64::max);
    let (mut c, scale) = pages_chart(
        runs,
        "bdi_dirty_state",
        "Per-device dirty pages and share of the threshold",
        "pages",
        max,
        "wb_dirty (solid) and wb_thresh (dashed) of each device, from throttle.csv",
    );
    let mut legend = Vec::new();
    for (ri, r) in runs.iter().enumerate() {
        let Some(t) = r.data.throttle.as_ref() else { continue };
        for (di, d) in r.data.devices.iter().enumerate() {
            let rows = t.filter("device", &d.name);
            let col = if multi(runs) { color(ri) } else { color(di) };
            let dash2 = if multi(runs) {
                DASHES[(2 * di + 1) % DASHES.len()]
            } else {
                Some("6 4")
            };
            let dash1 = if multi(runs) { DASHES[(2 * di) % DASHES.len()] } else { None };
            let prefix = if multi(runs) {
                format!("{}: {}", r.label, d.name)
            } else {
                d.name.clone()
            };
            c.push(
                &format!("{prefix} wb_dirty"),
                Style::line(col, 2.0, dash1),
                rows.xy("t_s", "wb_dirty", scale),
            );
            c.push(
                &format!("{prefix} wb_thresh"),
                Style::line(col, 1.2, dash2),
                rows.xy("t_s", "wb_thresh", scale),
            );
            if !multi(runs) {
                legend.push(LegendEntry {
                    label: format!("{} wb_dirty", d.name),
                    style: Style::line(col, 2.0, None),
                });
                legend.push(LegendEntry {
                    label: format!("{} wb_thresh", d.name),
                    style: Style::line(col, 1.2, Some("6 4")),
                });
            }
        }
    }
    c.legend = if multi(runs) {
        let devs = runs.iter().map(|r| r.data.devices.len()).max().unwrap_or(0);
        let names: Vec<(String, Style)> = (0..devs)
            .flat_map(|di| {
                let dn = runs
                    .iter()
                    .find_map(|r| r.data.devices.get(di))
                    .map(|d| d.name.clone())
                    .unwrap_or_default();
                [
                    (
                        format!("{dn} wb_dirty"),
                        Style::line(KEY_GREY, 2.0, DASHES[(2 * di) % DASHES.len()]),
                    ),
                    (
                        format!("{dn} wb_thresh"),
                        Style::line(KEY_GREY, 1.2, DASHES[(2 * di + 1) % DASHES.len()]),
                    ),
                ]
            })
            .collect();
        let refs: Vec<(&str, Style)> = names.iter().map(|(n, s)| (n.as_str(), s.clone())).collect();
        run_legend(runs, &refs)
    } else {
        legend
    };
    Figure {
        file: "bdi_dirty_state".into(),
        title: "Per-device dirty pages".into(),
        caption: "The global threshold is shared between devices in proportion to how fast each completes writeback \
                  (wb_thresh); wb_dirty is the device's own dirty + writeback pages."
            .into(),
        chart: c,
    }
}

/// 6. Bandwidth and rate limits of one device.
fn bandwidth_figure(runs: &[Run], dev_idx: usize, dev_name: &str, several_devices: bool) -> Figure {
    let file = if several_devices {
        format!("balance_dirty_pages-bandwidth-{dev_name}")
    } else {
        "balance_dirty_pages-bandwidth".to_string()
    };
    let mut c = time_chart(
        runs,
        &file,
        &format!("Write bandwidth and dirty rate limits ({dev_name})"),
        Axis::linear("MB/s"),
        "write_bw, dirty_ratelimit, balanced_dirty_ratelimit: throttle.csv; task_ratelimit: balance_dirty_pages events",
    );
    let pps = PAGE / 1e6; // pages/s → MB/s
    let qs = [
        Quantity {
            name: "write_bw",
            color: "#0072B2",
            width: 1.5,
            dash: None,
        },
        Quantity {
            name: "avg_write_bw",
            color: "#56B4E9",
            width: 1.5,
            dash: Some("6 4"),
        },
        Quantity {
            name: "dirty_ratelimit",
            color: "#D55E00",
            width: 2.0,
            dash: Some("14 4"),
        },
        Quantity {
            name: "balanced_dirty_ratelimit",
            color: "#009E73",
            width: 1.2,
            dash: Some("2 3"),
        },
    ];
    let dev_rows = |r: &RunDir| -> Option<Csv> {
        let t = r.throttle.as_ref()?;
        let name = r
            .devices
            .get(dev_idx)
            .map(|d| d.name.clone())
            .unwrap_or_else(|| dev_name.to_string());
        Some(t.filter("device", &name))
    };
    // task_ratelimit first so the lines are drawn over the points.
    let mut have_tr = false;
    for (ri, r) in runs.iter().enumerate() {
        let devt = r.data.devices.get(dev_idx).map(|d| d.devt.clone()).unwrap_or_default();
        let pts: Vec<(f64, f64)> = r
            .data
            .trace
            .bdp
            .iter()
            .filter(|e| e.bdi == devt)
            .map(|e| (e.t, e.task_ratelimit as f64 * 1024.0 / 1e6))
            .collect();
        if pts.is_empty() {
            continue;
        }
        have_tr = true;
        let col = if multi(runs) { color(ri) } else { "#CC79A7" };
        let name = if multi(runs) {
            format!("{}: task_ratelimit", r.label)
        } else {
            "task_ratelimit".into()
        };
        let mut st = Style::points(col, Marker::Circle, 1.5);
        st.opacity = 0.35;
        c.push(&name, st, pts);
    }
    add_quantities(&mut c, runs, &qs, |r, qi| {
        let col = ["write_bw", "avg_write_bw", "dirty_ratelimit", "balanced_dirty_ratelimit"][qi];
        dev_rows(r.data).map(|t| t.xy("t_s", col, pps)).unwrap_or_default()
    });
    if have_tr {
        let dot = Style::points(if multi(runs) { KEY_GREY } else { "#CC79A7" }, Marker::Circle, 3.0);
        if !multi(runs) {
            c.legend = c
                .series
                .iter()
                .filter(|s| s.name != "task_ratelimit")
                .map(|s| LegendEntry {
                    label: s.name.clone(),
                    style: s.style.clone(),
                })
                .collect();
        }
        c.legend.push(LegendEntry {
            label: "task_ratelimit (one point per event)".into(),
            style: dot,
        });
    }
    // Early estimates can be far off the steady values: clip the y axis at 1.5 × the 99th
    // percentile of what is drawn and say so.
    let mut ys: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.pts.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .collect();
    if !ys.is_empty() {
        ys.sort_by(f64::total_cmp);
        let p99 = ys[((ys.len() - 1) as f64 * 0.99) as usize];
        let max = ys[ys.len() - 1];
        if max > 2.0 * p99 && p99 > 0.0 {
            c.y.max = Some(nice_step(p99 * 1.5 / 6.0) * 6.0);
            c.y.min = Some(0.0);
            c.notes.push(format!(
                "y axis clipped at {} MB/s; the largest value drawn is {max:.0} MB/s.",
                c.y.max.unwrap_or(0.0)
            ));
        }
    }
    Figure {
        file,
        title: format!("Bandwidth and rate limits — {dev_name}"),
        caption: "balance_dirty_pages lets each task dirty at task_ratelimit = dirty_ratelimit × pos_ratio; dirty_ratelimit \
                  follows balanced_dirty_ratelimit, the rate that would make writers match the device's write_bw."
            .into(),
        chart: c,
    }
}

/// 7. Device throughput.
fn iostat_bw_figure(runs: &[Run]) -> Figure {
    let mut c = time_chart(
        runs,
        "iostat-bw",
        "Device throughput",
        Axis::linear("MB/s"),
        "bytes completed per second, from timeseries.csv; writes solid, reads dashed",
    );
    let mut legend = Vec::new();
    let mut k = 0;
    for (ri, r) in runs.iter().enumerate() {
        let Some(ts) = r.data.timeseries.as_ref() else { continue };
        for d in &r.data.devices {
            for (rw, dash) in [("write", None), ("read", Some("6 4"))] {
                let pts = ts.xy("t_s", &format!("{}_{rw}_mb_s", d.name), 1.0);
                if pts.is_empty() {
                    continue;
                }
                let col = if multi(runs) { color(ri) } else { color(k) };
                let name = if multi(runs) {
                    format!("{}: {} {rw}", r.label, d.name)
                } else {
                    format!("{} {rw}", d.name)
                };
                c.push(&name, Style::line(col, 1.8, dash), pts);
                if !multi(runs) {
                    legend.push(LegendEntry {
                        label: name.clone(),
                        style: Style::line(col, 1.8, dash),
                    });
                }
                k += 1;
            }
        }
    }
    c.legend = if multi(runs) {
        run_legend(
            runs,
            &[
                ("write", Style::line(KEY_GREY, 1.8, None)),
                ("read", Style::line(KEY_GREY, 1.8, Some("6 4"))),
            ],
        )
    } else {
        legend
    };
    Figure {
        file: "iostat-bw".into(),
        title: "Device throughput".into(),
        caption: "MB/s (10^6 bytes) completed by each device per interval, reads and writes.".into(),
        chart: c,
    }
}

/// 8. Device utilisation.
fn iostat_util_figure(runs: &[Run]) -> Figure {
    let mut c = time_chart(
        runs,
        "iostat-util",
        "Device utilisation",
        Axis::linear("util (%)").range(0.0, 105.0),
        "share of each second with at least one request in the device (iostat %util)",
    );
    let mut legend = Vec::new();
    let mut k = 0;
    for (ri, r) in runs.iter().enumerate() {
        for d in &r.data.devices {
            let col = if multi(runs) { color(ri) } else { color(k) };
            k += 1;
            let name = if multi(runs) {
                format!("{}: {}", r.label, d.name)
            } else {
                d.name.clone()
            };
            let from_col = r
                .data
                .timeseries
                .as_ref()
                .map(|t| t.xy("t_s", &format!("{}_util", d.name), 1.0))
                .filter(|p| !p.is_empty());
            let from_trace = r.data.trace.busy.iter().find(|(dev, _)| *dev == d.devt).map(|(_, bins)| {
                let mut pts: Vec<(f64, f64)> = bins.iter().enumerate().map(|(i, &b)| (i as f64, b * 100.0)).collect();
                pts.push((bins.len() as f64, bins.last().copied().unwrap_or(0.0) * 100.0));
                pts
            });
            let (pts, step, how) = match (from_col, from_trace) {
                (Some(p), _) => (p, false, "timeseries.csv"),
                (None, Some(p)) => (p, true, "block_rq_issue/complete"),
                (None, None) => {
                    let end = r.data.duration();
                    c.notes.push(format!(
                        "{}{}: no per-second utilisation recorded (run with --trace-block for block events); dashed: the run's mean, {:.1} %.",
                        if multi(runs) { format!("{}: ", r.label) } else { String::new() },
                        d.name,
                        d.util * 100.0
                    ));
                    let st = Style::line(col, 1.5, Some("6 4"));
                    c.push(
                        &format!("{name} (mean)"),
                        st.clone(),
                        vec![(0.0, d.util * 100.0), (end, d.util * 100.0)],
                    );
                    if !multi(runs) {
                        legend.push(LegendEntry {
                            label: format!("{name} (run mean)"),
                            style: st,
                        });
                    }
                    continue;
                }
            };
            let st = if step {
                Style::step(col, 1.8, None)
            } else {
                Style::line(col, 1.8, None)
            };
            c.push(&name, st.clone(), pts);
            if !multi(runs) {
                legend.push(LegendEntry {
                    label: format!("{name} (from {how})"),
                    style: st,
                });
            }
        }
    }
    c.legend = if multi(runs) { run_legend(runs, &[]) } else { legend };
    Figure {
        file: "iostat-util".into(),
        title: "Device utilisation".into(),
        caption: "Time with at least one request inside the device, per second. 100 % on a disk does not mean it is saturated: \
                  NCQ serves several requests at once."
            .into(),
        chart: c,
    }
}

/// Log-spaced bins, 10 per decade, of a histogram: (lower edge ms, share %).
fn log_bins(h: &Hist) -> Vec<(f64, f64)> {
    let total: u64 = h.buckets.iter().map(|b| b.1).sum();
    if total == 0 {
        return Vec::new();
    }
    let idx = |ns: u64| ((ns.max(1) as f64 / 1e6).log10() * 10.0 + 1e-9).floor() as i64;
    let lo = idx(h.buckets[0].0);
    let hi = idx(h.buckets[h.buckets.len() - 1].0);
    let mut counts = vec![0u64; (hi - lo + 1) as usize];
    for &(v, c) in &h.buckets {
        counts[(idx(v) - lo) as usize] += c;
    }
    let edge = |i: i64| 10f64.powf(i as f64 / 10.0);
    let mut pts = vec![(edge(lo - 1), 0.0)];
    for (k, &c) in counts.iter().enumerate() {
        pts.push((edge(lo + k as i64), c as f64 * 100.0 / total as f64));
    }
    pts.push((edge(hi + 1), 0.0));
    pts.push((edge(hi + 2), 0.0));
    pts
}

/// 9. Request latency histogram per device.
fn request_latency_figure(runs: &[Run]) -> Figure {
    let mut c = Chart::new(
        "request-latency",
        "Request latency",
        Axis::log("request latency, dispatch to completion (ms, log scale)"),
        Axis::linear("share of requests (%)"),
    );
    c.subtitle = Some("histograms.json, 10 bins per decade".into());
    let mut legend = Vec::new();
    let mut k = 0;
    for (ri, r) in runs.iter().enumerate() {
        let Some(h) = r.data.hists.as_ref() else {
            c.notes.push(format!("{}: no histograms.json", r.label));
            continue;
        };
        for d in &h.devices {
            let pts = log_bins(&d.request_latency);
            if pts.is_empty() {
                continue;
            }
            let col = if multi(runs) { color(ri) } else { color(k) };
            k += 1;
            let name = if multi(runs) {
                format!("{}: {}", r.label, d.name)
            } else {
                d.name.clone()
            };
            let mut st = Style::step(col, 1.5, if multi(runs) { DASHES[k % DASHES.len()] } else { None });
            st.fill = true;
            let lat = r.data.devices.iter().find(|x| x.name == d.name).map(|x| &x.latency);
            let label = match lat {
                Some(l) => format!(
                    "{name} ({} requests, p50 {:.1} ms, p99 {:.1} ms)",
                    d.request_latency.count, l.p50, l.p99
                ),
                None => name.clone(),
            };
            legend.push(LegendEntry { label, style: st.clone() });
            c.push(&name, st, pts);
        }
    }
    c.legend = legend;
    Figure {
        file: "request-latency".into(),
        title: "Request latency histogram".into(),
        caption: "Time from dispatch to the device until completion, for every request (reads and writes).".into(),
        chart: c,
    }
}

fn cdf_points(h: &Hist) -> Vec<(f64, f64)> {
    let cdf = h.cdf();
    let mut pts = Vec::with_capacity(cdf.len() + 2);
    if let Some(&(v0, _)) = cdf.first() {
        pts.push((v0 as f64 / 1e6, 0.0));
    }
    pts.extend(cdf.iter().map(|&(v, f)| (v as f64 / 1e6, f)));
    if h.max > 0 {
        pts.push((h.max as f64 / 1e6, 1.0));
    }
    pts
}

/// 10/11. CDFs of op latency (latency-sensitive tasks) or pauses (writers).
fn cdf_figure(runs: &[Run], pause: bool) -> Figure {
    let (file, title, xlabel) = if pause {
        (
            "pause-cdf",
            "Pause distribution of throttled writers",
            "balance_dirty_pages pause (ms, log scale)",
        )
    } else {
        (
            "latency-cdf",
            "Latency of latency-sensitive tasks",
            "latency per operation (ms, log scale)",
        )
    };
    // Nines enough for the largest sample count (99.9 % up to a thousand samples), 2 to 5.
    let most = runs
        .iter()
        .filter_map(|r| r.data.hists.as_ref())
        .flat_map(|h| h.tasks.iter().map(|t| if pause { t.pause.count } else { t.op_latency.count }))
        .max()
        .unwrap_or(0);
    let nines = ((most.max(1) as f64).log10().ceil() as u32).clamp(2, 5);
    let ylabel = if pause {
        "share of pauses ≤ x"
    } else {
        "share of operations ≤ x"
    };
    let mut c = Chart::new(file, title, Axis::log(xlabel), Axis::nines(ylabel, nines));
    c.subtitle = Some("cumulative distribution (CDF) from histograms.json; the y axis stretches the tail: 90 %, 99 %, 99.9 %".into());
    let mut legend = Vec::new();
    let mut k = 0;
    for (ri, r) in runs.iter().enumerate() {
        if r.data.hists.is_none() {
            c.notes.push(format!("{}: no histograms.json", r.label));
            continue;
        }
        let us: Vec<Unit> = units(&r.data.tasks)
            .into_iter()
            .filter(|u| if pause { true } else { latency_sensitive(&u.job) })
            .collect();
        let mut ui = 0;
        for u in us {
            let Some(h) = unit_hist(r.data, &u, pause) else { continue };
            if h.is_empty() {
                continue;
            }
            let col = if multi(runs) { color(ri) } else { color(k) };
            let dash = if multi(runs) { DASHES[ui % DASHES.len()] } else { None };
            ui += 1;
            k += 1;
            let what = if pause { "pause" } else { op_name(&u.job) };
            let name = if multi(runs) {
                format!("{}: {} {what}", r.label, u.label)
            } else {
                format!("{} {what}", u.label)
            };
            let p99 = h.quantile(0.99) as f64 / 1e6;
            let st = Style::step(col, 1.8, dash);
            legend.push(LegendEntry {
                label: format!("{name} (n={}, p99 {})", h.count, fmt_ms(p99)),
                style: st.clone(),
            });
            c.push(&name, st, cdf_points(&h));
        }
    }
    if c.series.is_empty() {
        c.notes.push(if pause {
            "No task was throttled by balance_dirty_pages.".into()
        } else {
            "No latency-sensitive task (cat, randread, fsync, sync, du, ls, launch) in this run.".into()
        });
    }
    c.legend = legend;
    let caption = if pause {
        "The share of balance_dirty_pages sleeps shorter than x. Ideal throttling gives short, steady pauses (a steep curve)."
    } else {
        "The share of operations (read(), fsync(), ...) that finished within x: the right end is the tail users notice."
    };
    Figure {
        file: file.into(),
        title: title.into(),
        caption: caption.into(),
        chart: c,
    }
}

/// "0.031 ms", "43 ms", "1.2 s".
pub fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

/// Every figure of the report, in reading order.
pub fn figures(runs: &[Run]) -> Vec<Figure> {
    let mut f = vec![
        pause_figure(runs),
        task_bw_figure(runs),
        dirty_state_figure(runs),
        bdi_dirty_figure(runs),
        dirtied_written_figure(runs),
    ];
    // One bandwidth figure per device position (device names of the first run that has it).
    let ndev = runs.iter().map(|r| r.data.devices.len()).max().unwrap_or(0);
    for di in 0..ndev.max(1) {
        let name = runs
            .iter()
            .find_map(|r| r.data.devices.get(di))
            .map(|d| d.name.clone())
            .unwrap_or_else(|| "device".into());
        f.push(bandwidth_figure(runs, di, &name, ndev > 1));
    }
    f.push(iostat_bw_figure(runs));
    f.push(iostat_util_figure(runs));
    f.push(request_latency_figure(runs));
    f.push(cdf_figure(runs, false));
    f.push(cdf_figure(runs, true));
    f
}
