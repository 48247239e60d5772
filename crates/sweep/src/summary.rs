//! The sweep table printed in the terminal: each point's values down, each task group's key
//! figure across — what its user would time — in the layout of Morton's 2002 tables
//! ("fifo_batch (units)  time cat kernel/*.c (secs)").

use crate::table::{GroupRow, PointRows};

/// The key's last path component (`fifo_batch`); each key's, for a several-key sweep.
fn short_keys(keys: &[String]) -> String {
    keys.iter()
        .map(|k| k.rsplit('/').next().unwrap_or(k))
        .collect::<Vec<_>>()
        .join(wblab_scenario::SWEEP_KEY_SEPARATOR)
}

fn get(g: &GroupRow, name: &str) -> f64 {
    g.get(name).unwrap_or(f64::NAN)
}

/// One task group's figure: its heading and cell, as its job kind says (`JobKind::sweep`).
fn figure(g: &GroupRow) -> (String, String) {
    use wblab_sim::jobs::SweepFigure;
    let ops = get(g, "op_count");
    let (p50, p99) = (get(g, "op_p50_ms"), get(g, "op_p99_ms"));
    let mb = get(g, "throughput_mb_s");
    let kind = wblab_sim::jobs::job_kind(&g.job);
    match kind.map_or(SweepFigure::Throughput, |k| k.sweep) {
        // One command per run: its latency is the `time` of the command.
        SweepFigure::CommandTime => (
            "time s".into(),
            if ops == 0.0 {
                "unfinished".into()
            } else {
                format!("{:.2}", get(g, "op_mean_ms") / 1e3)
            },
        ),
        // Probes: what their user feels is each call's latency, not the run's length.
        SweepFigure::CallLatency => {
            let op = kind.map_or("op", |k| k.op);
            let cell = if ops == 0.0 { "-".into() } else { format!("{p50:.1}/{p99:.1}") };
            (format!("{op} p50/p99 ms"), cell)
        }
        // A fio job: what fio's summary leads with, bandwidth and each I/O's latency.
        SweepFigure::Fio => {
            let cell = if ops == 0.0 {
                format!("{mb:.1}, -")
            } else {
                format!("{mb:.1}, {p50:.2}/{p99:.2}")
            };
            ("MB/s, I/O p50/p99 ms".into(), cell)
        }
        SweepFigure::Throughput => ("MB/s".into(), format!("{mb:.1}")),
    }
}

/// The table of a sweep's first points (`shown`), titled `title`, then a line saying how many
/// more of its `total` the CSV holds.
pub fn table(title: &str, keys: &[String], shown: &[PointRows], total: usize, cgroups: bool) -> String {
    if shown.is_empty() {
        return format!("{title}\n(no points)\n");
    }
    // Every shown point's groups, in order of first appearance: a point run `without` a group
    // has fewer, and its cells for the missing ones are `-`.
    let mut groups: Vec<&str> = Vec::new();
    for g in shown.iter().flat_map(|p| &p.groups) {
        if !groups.contains(&g.group.as_str()) {
            groups.push(&g.group);
        }
    }
    let mut heads = vec![short_keys(keys)];
    let mut cells: Vec<Vec<String>> = shown
        .iter()
        .map(|p| vec![p.values.join(wblab_scenario::SWEEP_VALUE_SEPARATOR)])
        .collect();
    for (k, name) in groups.iter().enumerate() {
        let mut head = name.to_string();
        for (i, p) in shown.iter().enumerate() {
            // By name; by position only where the point has as many groups (a swept name).
            let by_position = (p.groups.len() == groups.len()).then(|| p.groups.get(k)).flatten();
            let (unit, v) = match p.groups.iter().find(|g| g.group == *name).or(by_position) {
                Some(g) => figure(g),
                None => (String::new(), "-".into()),
            };
            if !unit.is_empty() {
                head = format!("{name} {unit}");
            }
            cells[i].push(v);
        }
        heads.push(head);
    }
    // With memory cgroups: how far the node's dirty pages went, and each group's cgroup's.
    if cgroups {
        let peak = |p: &PointRows, g: Option<&str>, figure: &str| -> String {
            let row = match g {
                Some(g) => p.groups.iter().find(|r| r.group == g),
                None => p.groups.first(),
            };
            row.map_or("-".into(), |r| format!("{:.0}", get(r, figure)))
        };
        heads.push("node dirty peak MiB".into());
        for (i, p) in shown.iter().enumerate() {
            cells[i].push(peak(p, None, "dirty_peak_mib"));
        }
        for g in &groups {
            heads.push(format!("{g}'s cgroup dirty peak MiB"));
            for (i, p) in shown.iter().enumerate() {
                cells[i].push(peak(p, Some(g), "cgroup_dirty_peak_mib"));
            }
        }
    }
    let widths: Vec<usize> = (0..heads.len())
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .chain([heads[c].chars().count()])
                .max()
                .unwrap_or(4)
        })
        .collect();
    let line = |vals: &[String]| -> String {
        let mut l = String::new();
        for (c, v) in vals.iter().enumerate() {
            let pad = widths[c].saturating_sub(v.chars().count());
            if c > 0 {
                l.push_str("  ");
            }
            l.push_str(&" ".repeat(pad));
            l.push_str(v);
        }
        l.trim_end().to_string() + "\n"
    };
    let mut s = format!("{title}\n");
    s.push_str(&line(&heads));
    for r in &cells {
        s.push_str(&line(r));
    }
    if total > shown.len() {
        s.push_str(&format!("... and {} more points (all in sweep.csv)\n", total - shown.len()));
    }
    s
}
