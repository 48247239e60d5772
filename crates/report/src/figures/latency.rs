//! The latency figures: the devices' request latency distributions and the CDFs of pauses
//! and operation latencies.

use super::*;

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

/// Why a run has no histograms: none written, or one that cannot be read.
fn hists_note(r: &Run) -> String {
    let unreadable = r.data.warnings.iter().any(|w| {
        w.strip_prefix("histograms.json: ")
            .is_some_and(|e| e != crate::load::rundir::MISSING)
    });
    if unreadable {
        format!("{}: histograms.json cannot be read", r.label)
    } else {
        format!("{}: no histograms.json", r.label)
    }
}

/// 9. Request latency histogram per device.
pub(super) fn request_latency_figure(runs: &[Run]) -> Figure {
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
            c.notes.push(hists_note(r));
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
pub(super) fn cdf_figure(runs: &[Run], pause: bool) -> Figure {
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
            c.notes.push(hists_note(r));
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

/// Latency over time: per latency-sensitive task group, the longest operation of each second
/// (latency.csv), on a log scale, so a periodic stall lines up with the dirty and device
/// graphs above it. `None` when no run recorded operations per second.
pub(super) fn latency_timeline_figure(runs: &[Run]) -> Option<Figure> {
    if runs.iter().all(|r| r.data.latency.is_none()) {
        return None;
    }
    let mut c = time_chart(
        runs,
        "latency-timeline",
        "Latency over time",
        Axis::log("longest operation of the second (ms, log scale)"),
        "latency.csv: per task group and second, the longest read(), fsync() or launch that ended in it",
    );
    let mut legend = Vec::new();
    let mut k = 0;
    for (ri, r) in runs.iter().enumerate() {
        let Some(l) = r.data.latency.as_ref() else {
            c.notes.push(format!("{}: no latency.csv", r.label));
            continue;
        };
        let (Some(t), Some(task), Some(ops), Some(max)) = (l.col("t_s"), l.col("task"), l.col("ops"), l.col("max_ms")) else {
            c.notes.push(format!("{}: latency.csv lacks its columns", r.label));
            continue;
        };
        for g in l.distinct(task) {
            let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
            let pts: Vec<(f64, f64)> = l
                .rows
                .iter()
                .filter(|row| row[task] == g && num(&row[ops]) > 0.0)
                .map(|row| (num(&row[t]), num(&row[max]).max(1e-3)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            push_group_points(&mut c, &mut legend, runs, (ri, k), g, pts, 2.5);
            k += 1;
        }
    }
    c.legend = legend;
    Some(Figure {
        file: "latency-timeline".into(),
        title: "Latency over time".into(),
        caption: "The longest operation of each latency-sensitive task group in each second (a point per second with \
                  operations). A stall shows where it happened, which the CDF below cannot say."
            .into(),
        chart: c,
    })
}

/// A task group's points on a timeline: one colour per run when runs are overlaid, else one
/// per group, and a marker per group. `at` is (run index, group number so far).
fn push_group_points(
    c: &mut crate::plot::Chart,
    legend: &mut Vec<LegendEntry>,
    runs: &[Run],
    (ri, k): (usize, usize),
    group: &str,
    pts: Vec<(f64, f64)>,
    radius: f64,
) {
    let col = if multi(runs) { color(ri) } else { color(k) };
    let marker = [Marker::Circle, Marker::Cross, Marker::Square, Marker::Triangle][k % 4];
    let name = if multi(runs) {
        format!("{}: {group}", runs[ri].label)
    } else {
        group.to_string()
    };
    let st = Style::points(col, marker, radius);
    c.push(&name, st.clone(), pts);
    legend.push(LegendEntry { label: name, style: st });
}

/// Every operation over time: per latency-sensitive task group, a point per read(), fsync(),
/// fio I/O or launch at the moment it ended, its latency on a log scale (ops.csv). Unlike the
/// per-second maximum above, the floor and the spread show too: a reader that stalls every
/// 30 s against one that is slow all the time. `None` when no run logged operations.
pub(super) fn op_timeline_figure(runs: &[Run]) -> Option<Figure> {
    if runs.iter().all(|r| r.data.ops.is_none()) {
        return None;
    }
    let mut c = time_chart(
        runs,
        "op-latency-timeline",
        "Op latency timeline",
        Axis::log("operation latency (ms, log scale)"),
        "ops.csv: each operation of a latency-sensitive task, at the moment it ended",
    );
    let mut legend = Vec::new();
    let mut k = 0;
    for (ri, r) in runs.iter().enumerate() {
        let Some(ops) = r.data.ops.as_ref() else {
            c.notes.push(format!("{}: no ops.csv", r.label));
            continue;
        };
        if ops.thinned {
            c.notes.push(format!(
                "{}: {} operations; groups with more than {} show the fastest and slowest of each 1/{} of the run",
                r.label,
                ops.total,
                crate::load::rundir::OpPoints::KEEP_ALL,
                crate::load::rundir::OpPoints::BINS
            ));
        }
        for (g, pts) in &ops.groups {
            let pts = pts.iter().map(|&(t, l)| (t, l.max(1e-3))).collect();
            push_group_points(&mut c, &mut legend, runs, (ri, k), g, pts, 1.5);
            k += 1;
        }
    }
    c.legend = legend;
    Some(Figure {
        file: "op-latency-timeline".into(),
        title: "Op latency timeline".into(),
        caption: "Each operation of each latency-sensitive task group (a read(), fsync(), fio I/O or launch) at the \
                  moment it ended, by its latency: periodic stalls, their height and the floor between them."
            .into(),
        chart: c,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(b: &[(u64, u64)]) -> Hist {
        Hist {
            count: b.iter().map(|x| x.1).sum(),
            sum: b.iter().map(|x| x.0 * x.1).sum(),
            max: b.last().map_or(0, |x| x.0),
            buckets: b.to_vec(),
        }
    }

    #[test]
    fn cdfs_rise_from_0_to_1_in_ms() {
        let h = hist(&[(1_000_000, 1), (2_000_000, 2), (10_000_000, 1)]);
        let p = cdf_points(&h);
        assert_eq!(p.first(), Some(&(1.0, 0.0)));
        assert_eq!(p.last(), Some(&(10.0, 1.0)));
        assert!(p.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1), "{p:?}");
    }

    #[test]
    fn log_bins_keep_every_count() {
        let h = hist(&[(50_000, 3), (1_000_000, 4), (100_000_000, 5)]);
        let bins = log_bins(&h);
        assert!(bins.windows(2).all(|w| w[0].0 < w[1].0), "x ascends: {bins:?}");
        let peak = bins.iter().map(|b| b.1).fold(0.0, f64::max);
        assert!(peak > 0.0);
        assert!(log_bins(&hist(&[])).is_empty());
    }
}
