//! The device figures: write bandwidth estimates, and iostat-like per-second throughput and
//! utilisation.

use super::*;

/// 6. Bandwidth and rate limits of one device.
pub(super) fn bandwidth_figure(runs: &[Run], dev_idx: usize, dev_name: &str, several_devices: bool) -> Figure {
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
    let kibps = 1024.0 / 1e6; // KiB/s → MB/s
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
            .filter(|e| *e.bdi == *devt)
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
        let col = [
            "write_bw_kib_s",
            "avg_write_bw_kib_s",
            "dirty_ratelimit_kib_s",
            "balanced_dirty_ratelimit_kib_s",
        ][qi];
        dev_rows(r.data).map(|t| t.xy("t_s", col, kibps)).unwrap_or_default()
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
pub(super) fn iostat_bw_figure(runs: &[Run]) -> Figure {
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
pub(super) fn iostat_util_figure(runs: &[Run]) -> Figure {
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
                .map(|t| t.xy("t_s", &format!("{}_util_pct", d.name), 1.0))
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
