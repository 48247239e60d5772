//! The balance_dirty_pages figures: the pauses over time, and each task's dirty rate
//! binned from the trace (`balance_dirty_pages-pause`, `-task-bw`).

use super::*;
use crate::load::rundir::BdpEvent;

/// 1. Pauses per throttle event.
pub(super) fn pause_figure(runs: &[Run]) -> Figure {
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
            let ev: Vec<_> = r.data.trace.bdp.iter().filter(|e| u.has(e.pid)).collect();
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

/// Each pid's MB dirtied per second, binned, in one pass over the events (a pass per task
/// would be quadratic in tasks: 1000 writers, 300k events).
fn binned_per_pid(events: &[BdpEvent], pids: &[u32], bin: f64, end: f64) -> Vec<Vec<f64>> {
    let n = (end / bin).ceil().max(1.0) as usize;
    let index: std::collections::HashMap<u32, usize> = pids.iter().enumerate().map(|(i, &p)| (p, i)).collect();
    let mut bins = vec![vec![0.0; n]; pids.len()];
    for e in events {
        if let Some(&k) = index.get(&e.pid) {
            let i = ((e.t / bin).floor().max(0.0) as usize).min(n - 1);
            bins[k][i] += e.dirtied as f64 * PAGE / 1e6;
        }
    }
    for b in &mut bins {
        for v in b.iter_mut() {
            *v /= bin;
        }
    }
    bins
}

fn step_points(bins: &[f64], bin: f64) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = bins.iter().enumerate().map(|(i, &v)| (i as f64 * bin, v)).collect();
    if let Some(&last) = bins.last() {
        pts.push((bins.len() as f64 * bin, last));
    }
    pts
}

/// 2. Per-task write bandwidth from the trace's dirtied counts.
pub(super) fn task_bw_figure(runs: &[Run]) -> Figure {
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
            let per_task = binned_per_pid(&r.data.trace.bdp, &u.pids, bin, end);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_summed_per_task_and_bin_as_rates_and_drawn_as_steps() {
        let ev = |t: f64, pid: u32, pages: u64| BdpEvent {
            t,
            pid,
            bdi: "".into(),
            pause_ms: 0,
            paused_ms: 0,
            dirtied: pages,
            task_ratelimit: 0,
        };
        // Task 7: 3 pages at 0.1 s and 5 at 0.3 s; task 9: 2 at 0.1 s; task 8 is not asked for.
        let events = [ev(0.1, 7, 3), ev(0.1, 9, 2), ev(0.3, 7, 5), ev(0.2, 8, 100), ev(9.0, 7, 1)];
        let per = binned_per_pid(&events, &[7, 9], 0.2, 0.5);
        let mb = |pages: f64| pages * PAGE / 1e6 / 0.2;
        let b = &per[0];
        assert_eq!(b.len(), 3);
        assert!((b[0] - mb(3.0)).abs() < 1e-9 && (b[1] - mb(5.0)).abs() < 1e-9);
        // An event past the end counts in the last bin rather than being lost.
        assert!((b[2] - mb(1.0)).abs() < 1e-9);
        assert!((per[1][0] - mb(2.0)).abs() < 1e-9 && per[1][1] == 0.0);
        let s = step_points(b, 0.2);
        assert_eq!(s.len(), 4);
        assert!((s[3].0 - 0.6).abs() < 1e-9 && s[3].1 == b[2]);
    }
}
