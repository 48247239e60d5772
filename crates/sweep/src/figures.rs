//! A sweep's figures: per point, each task group's and each device's, by name. They make
//! `sweep.csv` (one row per point and task group) and `sweep-devices.csv` (one row per point
//! and device) — every header ending in its unit — and the names `--minimize`, `--maximize`
//! and `--where` take (`reader.op_p99_ms`, `sda.util_pct`).

use wblab_sim::config::Scenario;
use wblab_sim::metrics::{LatencyHist, RunResult};

/// A task group's figures, in this order.
pub const GROUP_FIGURES: [&str; 21] = [
    "mb_written",
    "mb_read",
    "throughput_mb_s",
    "pause_count",
    "pause_p50_ms",
    "pause_p99_ms",
    "pause_max_ms",
    "paused_max_ms",
    "op_count",
    "op_mean_ms",
    "op_p50_ms",
    "op_p99_ms",
    "op_max_ms",
    "dirty_mean_mib",
    "writeback_mean_mib",
    "dirty_peak_mib",
    "cgroup_dirty_peak_mib",
    "io_some_pct",
    "io_full_pct",
    "memory_some_pct",
    "memory_full_pct",
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
    let mib = |pages: u64| (pages * wblab_sim::units::PAGE_SIZE) as f64 / (1u64 << 20) as f64;
    let node_peak = mib(r.vmstat.iter().map(|v| v.nr_dirty + v.nr_writeback).max().unwrap_or(0));
    // The cgroup a group's tasks run in (`None`: the root).
    let cgroup_of = |group: &str| r.scenario.tasks.iter().find(|t| t.name == group).and_then(|t| t.cgroup);
    // The peak of that memory cgroup (the node's, at the root).
    let cgroup_peak = |group: &str| -> f64 {
        let path = cgroup_of(group)
            .and_then(|k| r.scenario.cgroups.groups.get(k))
            .map(|g| g.path.as_str());
        match path.and_then(|p| r.cgroups.iter().find(|c| c.path == p)) {
            Some(c) => mib(c.samples.iter().map(|s| s.dirty + s.writeback).max().unwrap_or(0)),
            None => node_peak,
        }
    };
    // The pressure of the cgroup a group's tasks run in (the system's, at the root): the
    // share of the run it was stalled, `some` and `full`, io then memory.
    let pressure = |group: &str| -> [f64; 4] {
        let g = cgroup_of(group).map_or(0, |k| k as u16 + 1);
        match r.pressure_at_end().into_iter().find(|s| s.group == g) {
            Some(s) => [0, 1, 2, 3].map(|k| s.stalled_pct(k, r.sim_ns)),
            None => [0.0; 4],
        }
    };
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
            let stalled = pressure(g);
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
                    ms(tasks.iter().map(|t| t.paused_max).max().unwrap_or(0)),
                    o.count as f64,
                    o.mean / 1e6,
                    ms(o.p50),
                    ms(o.p99),
                    ms(o.max),
                    dirty,
                    writeback,
                    node_peak,
                    cgroup_peak(g),
                    stalled[0],
                    stalled[1],
                    stalled[2],
                    stalled[3],
                ],
            }
        })
        .collect()
}

/// Which rows a run gives: each task group's (name, job, tasks) and each device's (name,
/// model), in the order the tables list them.
#[derive(Clone, Debug, PartialEq)]
pub struct RowKeys {
    pub groups: Vec<(String, &'static str, u64)>,
    pub devices: Vec<(String, &'static str)>,
}

/// The rows a run of `sc` gives, without running it (in the order of [`group_figures`] and
/// [`device_figures`]). A resumed sweep keeps a point's rows only when they are exactly these.
pub fn expected_rows(sc: &Scenario) -> RowKeys {
    let mut groups: Vec<(String, &'static str, u64)> = Vec::new();
    for t in sc.tasks.iter().filter(|t| t.count > 0) {
        match groups.iter_mut().find(|g| g.0 == t.name) {
            Some(g) => g.2 += u64::from(t.count),
            None => groups.push((t.name.clone(), t.job.kind(), u64::from(t.count))),
        }
    }
    let devices = sc.devices.iter().map(|d| (d.name.clone(), d.model.kind())).collect();
    RowKeys { groups, devices }
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

/// A figure's full name: `<group>.throughput` is `<group>.throughput_mb_s`; the rest as
/// given. What `--minimize`, `--where` and `--plot` accept.
pub fn figure_name(name: &str) -> String {
    match name.trim().strip_suffix(".throughput") {
        Some(g) => format!("{g}.throughput_mb_s"),
        None => name.trim().to_string(),
    }
}

/// A figure as the tables print it: counts whole, utilisation to a tenth, the rest to three
/// decimals. Rows keep the printed value, so a resumed or gathered sweep equals a fresh one.
pub fn format_figure(name: &str, v: f64) -> String {
    if name.ends_with("_count") {
        format!("{v:.0}")
    } else if name == "util_pct" {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// `v` as the table prints it, read back.
pub fn rounded(name: &str, v: f64) -> f64 {
    format_figure(name, v).parse().unwrap_or(v)
}
