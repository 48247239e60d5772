//! The dirty-page figures: dirtied vs written, the global dirty state against its limits,
//! and the first device's bdi dirty level against its setpoint.

use super::*;

/// Choose MiB or GiB for a page-count chart.
pub(super) fn size_unit(max_pages: f64) -> (&'static str, f64) {
    if pages_to_mib(max_pages) >= 8192.0 {
        ("GiB", PAGE / (MIB * 1024.0))
    } else {
        ("MiB", PAGE / MIB)
    }
}

pub(super) fn col_max(c: Option<&Csv>, cols: &[&str]) -> f64 {
    let Some(c) = c else { return 0.0 };
    cols.iter()
        .filter_map(|n| c.f64s(n))
        .flatten()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// 3. Global pages dirtied and written, cumulative.
pub(super) fn dirtied_written_figure(runs: &[Run]) -> Figure {
    let max = runs
        .iter()
        .map(|r| col_max(r.data.timeseries.as_ref(), &["nr_dirtied_pages", "nr_written_pages"]))
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
        let col = ["nr_dirtied_pages", "nr_written_pages"][qi];
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
pub(super) fn first_device_throttle(r: &RunDir) -> Option<Csv> {
    let t = r.throttle.as_ref()?;
    let dev = r.devices.first().map(|d| d.name.clone()).or_else(|| {
        let c = t.col("device")?;
        t.rows.first().and_then(|row| row.get(c).cloned())
    })?;
    Some(t.filter("device", &dev))
}

/// 4. Global dirty state: dirty pages with freerun, setpoint, limit and the thresholds.
pub(super) fn dirty_state_figure(runs: &[Run]) -> Figure {
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
            g.max(col_max(r.data.timeseries.as_ref(), &["nr_dirty_pages", "dirty_thresh_pages"]))
                .max(col_max(r.data.throttle.as_ref(), &["limit_pages"]))
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
        let gds = |f: &dyn Fn(&crate::load::rundir::GdsEvent) -> u64| -> Vec<(f64, f64)> {
            d.trace.gds.iter().map(|e| (e.t, f(e) as f64 * scale)).collect()
        };
        let thr = |col: &str| first_device_throttle(d).map(|t| t.xy("t_s", col, scale)).unwrap_or_default();
        match qi {
            0 if from_trace => gds(&|e| e.dirty),
            0 => ts("nr_dirty_pages"),
            1 if from_trace => gds(&|e| e.writeback),
            1 => ts("nr_writeback_pages"),
            2 => thr("freerun_pages"),
            3 => thr("setpoint_pages"),
            4 => thr("limit_pages"),
            5 => ts("dirty_thresh_pages"),
            _ => ts("dirty_background_thresh_pages"),
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
pub(super) fn bdi_dirty_figure(runs: &[Run]) -> Figure {
    let max = runs
        .iter()
        .map(|r| col_max(r.data.throttle.as_ref(), &["wb_dirty_pages", "wb_thresh_pages"]))
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
                rows.xy("t_s", "wb_dirty_pages", scale),
            );
            c.push(
                &format!("{prefix} wb_thresh"),
                Style::line(col, 1.2, dash2),
                rows.xy("t_s", "wb_thresh_pages", scale),
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

/// Memory cgroups over time (cgroups.csv): each group's usage (`memory.current`), its dirty and
/// writeback pages, and its own dirty threshold where it has a dirty domain (cgroup v2).
/// `None` when no run has cgroups.
pub(super) fn cgroups_figure(runs: &[Run]) -> Option<Figure> {
    if runs.iter().all(|r| r.data.cgroups.is_none()) {
        return None;
    }
    let cols = [
        "memory_current_bytes",
        "file_dirty_bytes",
        "file_writeback_bytes",
        "dirty_thresh_bytes",
    ];
    let max = runs
        .iter()
        .map(|r| col_max(r.data.cgroups.as_ref(), &cols) / PAGE)
        .fold(0.0, f64::max);
    let (mut c, scale) = pages_chart(
        runs,
        "cgroups",
        "Memory cgroups",
        "memory",
        max,
        "cgroups.csv: memory.current, file_dirty + file_writeback and the group's dirty threshold, per second",
    );
    let styles = [
        ("memory.current", None, 2.2),
        ("dirty + writeback", Some("4 2"), 1.6),
        ("dirty thresh", Some("1 3"), 1.2),
    ];
    let mut legend = Vec::new();
    let mut k = 0;
    for (ri, r) in runs.iter().enumerate() {
        let Some(cg) = r.data.cgroups.as_ref() else {
            c.notes.push(format!("{}: no cgroups.csv", r.label));
            continue;
        };
        let (Some(t), Some(group)) = (cg.col("t_s"), cg.col("cgroup")) else {
            c.notes.push(format!("{}: cgroups.csv lacks its columns", r.label));
            continue;
        };
        let idx: Vec<Option<usize>> = cols.iter().map(|n| cg.col(n)).collect();
        for g in cg.distinct(group) {
            let col = if multi(runs) { color(ri) } else { color(k) };
            k += 1;
            let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
            let rows: Vec<&Vec<String>> = cg.rows.iter().filter(|row| row[group] == g).collect();
            let series = |f: &dyn Fn(&Vec<String>) -> f64| -> Vec<(f64, f64)> {
                rows.iter().map(|row| (num(&row[t]), f(row) / PAGE * scale)).collect()
            };
            let at = |i: usize, row: &Vec<String>| idx[i].map_or(0.0, |j| num(&row[j]));
            let data = [
                series(&|row| at(0, row)),
                series(&|row| at(1, row) + at(2, row)),
                series(&|row| at(3, row)),
            ];
            for ((label, dash, width), pts) in styles.iter().zip(data) {
                if *label == "dirty thresh" && pts.iter().all(|p| p.1 == 0.0) {
                    continue;
                }
                let name = if multi(runs) {
                    format!("{}: {g} {label}", r.label)
                } else {
                    format!("{g} {label}")
                };
                let st = Style::line(col, *width, *dash);
                c.push(&name, st.clone(), pts);
                if !multi(runs) {
                    legend.push(LegendEntry { label: name, style: st });
                }
            }
        }
    }
    c.legend = if multi(runs) {
        run_legend(
            runs,
            &styles
                .iter()
                .map(|(n, d, w)| (*n, Style::line(KEY_GREY, *w, *d)))
                .collect::<Vec<_>>(),
        )
    } else {
        legend
    };
    Some(Figure {
        file: "cgroups".into(),
        title: "Memory cgroups".into(),
        caption: "Each memory cgroup's usage and its dirty and writeback pages, second by second, with its own dirty \
                  threshold on cgroup v2 (the group's domain in balance_dirty_pages). On cgroup v1 a group has no \
                  dirty threshold of its own and its dirty pages may fill it."
            .into(),
        chart: c,
    })
}
