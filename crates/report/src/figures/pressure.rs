//! Pressure over time (pressure.csv): the share of each second the system and each cgroup
//! were stalled on I/O (`some`, solid; `full`, dotted) and on memory (dashed), from the
//! growth of the files' totals — exact per second, where `avg10` lags by its decay.

use super::*;

/// `None` when no run kept pressure figures.
pub(super) fn pressure_figure(runs: &[Run]) -> Option<Figure> {
    if runs.iter().all(|r| r.data.pressure.is_none()) {
        return None;
    }
    let mut c = time_chart(
        runs,
        "pressure",
        "Pressure stalls",
        Axis::linear("stalled (% of the second)").range(0.0, 105.0),
        "pressure.csv: the growth of io and memory some/full totals each second, per group",
    );
    let styles = [
        ("io", "some_total_us", "io some", None, 2.0),
        ("io", "full_total_us", "io full", Some("1 3"), 1.4),
        ("memory", "some_total_us", "memory some", Some("6 3"), 1.6),
    ];
    let mut legend = Vec::new();
    let mut k = 0;
    for (ri, r) in runs.iter().enumerate() {
        let Some(p) = r.data.pressure.as_ref() else {
            c.notes.push(format!("{}: no pressure.csv", r.label));
            continue;
        };
        let (Some(t), Some(group), Some(res)) = (p.col("t_s"), p.col("group"), p.col("resource")) else {
            c.notes.push(format!("{}: pressure.csv lacks its columns", r.label));
            continue;
        };
        let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
        for g in p.distinct(group) {
            let col = if multi(runs) { color(ri) } else { color(k) };
            k += 1;
            for (resource, column, label, dash, width) in styles {
                let Some(v) = p.col(column) else { continue };
                let rows: Vec<&Vec<String>> = p.rows.iter().filter(|row| row[group] == g && row[res] == resource).collect();
                let mut pts = Vec::with_capacity(rows.len());
                let (mut t0, mut v0) = (0.0, 0.0);
                for row in rows {
                    let (t1, v1) = (num(&row[t]), num(&row[v]));
                    if t1 > t0 {
                        pts.push((t1, ((v1 - v0) / 1e4 / (t1 - t0)).clamp(0.0, 100.0)));
                    }
                    (t0, v0) = (t1, v1);
                }
                if pts.iter().all(|p| p.1 == 0.0) {
                    continue;
                }
                let name = if multi(runs) {
                    format!("{}: {g} {label}", r.label)
                } else {
                    format!("{g} {label}")
                };
                let st = Style::line(col, width, dash);
                c.push(&name, st.clone(), pts);
                if !multi(runs) {
                    legend.push(LegendEntry { label: name, style: st });
                }
            }
        }
    }
    if !multi(runs) {
        c.legend = legend;
    }
    Some(Figure {
        file: "pressure".into(),
        title: "Pressure stalls".into(),
        caption: "The share of each second the machine and each cgroup were stalled, as their pressure files count it: \
                  io some (a task waited on I/O), io full (every task of the group waited: nothing of it ran), memory \
                  some (a task waited in reclaim). A busy CPU elsewhere dilutes the machine's figure, not a group's."
            .into(),
        chart: c,
    })
}
