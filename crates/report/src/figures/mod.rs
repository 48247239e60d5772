//! The writeback graphs, after the set Wu Fengguang's writeback-tests scripts drew (file
//! names follow his: `balance_dirty_pages-pause`, `-task-bw`, `global_dirtied_written`, ...),
//! built from loaded results directories. With one run, colours tell tasks or quantities
//! apart; with several, colour means "run" and line style means "quantity".

use crate::load::rundir::{Csv, RunDir, TaskInfo};
use crate::plot::ticks::nice_step;
use crate::plot::{color, Axis, Chart, LegendEntry, Marker, Style, DASHES};
use crate::results::histograms::Hist;
use crate::terminal::table::GROUP_MIN;

mod devices;
mod dirty;
mod latency;
mod pause;
mod pressure;

use devices::{bandwidth_figure, iostat_bw_figure, iostat_util_figure};
use dirty::{bdi_dirty_figure, cgroups_figure, dirtied_written_figure, dirty_state_figure, size_unit};
use latency::{cdf_figure, latency_timeline_figure, op_timeline_figure, request_latency_figure};
use pause::{pause_figure, task_bw_figure};
use pressure::pressure_figure;

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
    /// Sorted, so that membership is a binary search (a group can hold 10,000 tasks).
    pub pids: Vec<u32>,
    pub folded: bool,
}

impl Unit {
    /// Whether `pid` is one of this unit's tasks.
    pub fn has(&self, pid: u32) -> bool {
        self.pids.binary_search(&pid).is_ok()
    }
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
                pids: {
                    let mut p: Vec<u32> = v.iter().map(|t| t.pid).collect();
                    p.sort_unstable();
                    p
                },
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

/// Jobs whose per-operation latency is what a user feels (everything but bulk writers and
/// CPU load, which has no operations), as the registry of job kinds says.
pub fn latency_sensitive(job: &str) -> bool {
    wblab_sim::jobs::job_kind(job).is_none_or(|k| k.plots_ops)
}

/// What one operation of a job is, for legends.
pub fn op_name(job: &str) -> &'static str {
    wblab_sim::jobs::job_kind(job).map_or("op", |k| k.op)
}

/// The merged histogram of a unit's tasks (`pause` or op latency).
pub fn unit_hist(run: &RunDir, u: &Unit, pause: bool) -> Option<Hist> {
    let h = run.hists.as_ref()?;
    let parts = h
        .tasks
        .iter()
        .filter(|t| u.has(t.pid))
        .map(|t| if pause { &t.pause } else { &t.op_latency });
    Some(Hist::merged(parts))
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
    // A run that dirtied no page (O_DIRECT jobs, readers) has flat writeback graphs: they go
    // last, after the ones that show what happened.
    let quiet = runs.iter().all(|r| never_dirtied(r.data));
    let writeback = |runs: &[Run]| {
        vec![
            pause_figure(runs),
            dirty_state_figure(runs),
            bdi_dirty_figure(runs),
            dirtied_written_figure(runs),
        ]
    };
    let mut f = vec![task_bw_figure(runs)];
    if !quiet {
        f.extend(writeback(runs));
        f.swap(0, 1);
    }
    f.extend(cgroups_figure(runs));
    f.extend(pressure_figure(runs));
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
    f.extend(latency_timeline_figure(runs));
    f.extend(op_timeline_figure(runs));
    f.push(cdf_figure(runs, false));
    f.push(cdf_figure(runs, true));
    if quiet {
        f.extend(writeback(runs));
    }
    f
}

/// Whether a run never had a dirty page (per its timeseries.csv; a run without one counts
/// as dirtied, so its graphs keep their place).
fn never_dirtied(d: &RunDir) -> bool {
    let Some(ts) = &d.timeseries else { return false };
    let Some(i) = ts.col("nr_dirty_pages") else { return false };
    !ts.rows.is_empty() && ts.rows.iter().all(|r| r[i].parse::<f64>().is_ok_and(|v| v == 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::rundir::Lat;

    fn task(name: &str, instance: u32, job: &str) -> TaskInfo {
        TaskInfo {
            name: name.into(),
            instance,
            job: job.into(),
            pid: 1000 + instance,
            device: "sda".into(),
            bytes_written: 0,
            bytes_read: 0,
            throughput_mb_s: 0.0,
            pauses: Lat::default(),
            op: Lat::default(),
            reclaim_waits: 0,
            reclaim_wait_ms: 0.0,
            syncs: None,
        }
    }

    #[test]
    fn big_groups_fold_into_one_unit_small_ones_stay_per_task() {
        let mut tasks: Vec<TaskInfo> = (0..GROUP_MIN as u32).map(|i| task("dd", i, "dd")).collect();
        tasks.push(task("reader", 0, "cat"));
        tasks.push(task("reader", 1, "cat"));
        let u = units(&tasks);
        assert_eq!(u.len(), 3);
        assert!(u[0].folded && u[0].pids.len() == GROUP_MIN);
        assert_eq!(u[0].label, format!("dd ×{GROUP_MIN}"));
        assert!(!u[1].folded && u[1].pids == [1000]);
        assert!(latency_sensitive("cat") && !latency_sensitive("dd"));
    }

    #[test]
    fn milliseconds_read_at_a_glance() {
        assert_eq!(fmt_ms(0.0123), "0.012 ms");
        assert_eq!(fmt_ms(2.345), "2.3 ms");
        assert_eq!(fmt_ms(200.0), "200 ms");
        assert_eq!(fmt_ms(12_500.0), "12.50 s");
    }

    #[test]
    fn sizes_switch_to_gib_above_8_gib() {
        assert_eq!(dirty::size_unit(1024.0).0, "MiB");
        let (unit, scale) = dirty::size_unit(8.0 * 1024.0 * 1024.0 * 1024.0 / PAGE * 1024.0);
        assert_eq!(unit, "GiB");
        assert_eq!(scale * 262_144.0, 1.0, "262144 pages are 1 GiB");
    }
}
