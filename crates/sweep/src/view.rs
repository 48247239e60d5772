//! What a sweep shows of its points, read back from its tables: the terminal's first rows,
//! the ranking by objectives for each group of `--per`, the charts and the JSON. The `wblab`
//! command and the docs' generated sweep blocks print these; the Python package reads the
//! same tables.

use crate::PointRows;
use std::path::Path;
use wblab_scenario::SweepPlan;
use wblab_sim::config::Scenario;

/// Most rows the terminal table shows; the CSV has them all.
pub const TERMINAL_ROWS: usize = 40;

/// What the command keeps of a sweep's points as it reads them back: the first rows for the
/// terminal, a few numbers per point for the ranking, and the plotted figures' rows for
/// `--plot` (the only part that grows with the sweep's length beyond a few numbers a point).
pub struct Seen<'a> {
    /// Points read.
    pub count: usize,
    /// The first [`TERMINAL_ROWS`], whole.
    pub first: Vec<PointRows>,
    /// The ranking's figures of every point, when there is a ranking.
    pub ranked: Option<Ranked<'a>>,
    /// The task groups and devices `--plot`'s figures name.
    plot_items: Vec<String>,
    /// Every point's rows of those.
    pub plotted: Vec<PointRows>,
}

impl<'a> Seen<'a> {
    pub fn new(ranking: Option<&'a crate::objective::Plan>, per: &'a [usize], plot: &'a [String]) -> Seen<'a> {
        Seen {
            count: 0,
            first: Vec::new(),
            ranked: ranking.map(|r| Ranked::new(r, per)),
            plot_items: plot
                .iter()
                .filter_map(|f| crate::plot::figure_name(f).rsplit_once('.').map(|(i, _)| i.to_string()))
                .collect(),
            plotted: Vec::new(),
        }
    }

    pub fn add(&mut self, p: PointRows) {
        if let Some(r) = &mut self.ranked {
            r.add(&p);
        }
        if !self.plot_items.is_empty() {
            self.plotted.push(if self.count == 0 {
                p.clone()
            } else {
                plotted_rows(&p, &self.plot_items)
            });
        }
        if self.first.len() < TERMINAL_ROWS {
            self.first.push(p);
        }
        self.count += 1;
    }
}

/// `p` with only the rows of the task groups and devices `items` (the first point is kept
/// whole, for the error that lists the figures there are).
fn plotted_rows(p: &PointRows, items: &[String]) -> PointRows {
    PointRows {
        point: p.point,
        values: p.values.clone(),
        groups: p.groups.iter().filter(|g| items.contains(&g.group)).cloned().collect(),
        devices: p.devices.iter().filter(|d| items.contains(&d.device)).cloned().collect(),
    }
}

/// The ranking's view of a sweep: for each group of `per` (in the order they first appear),
/// each point's index and the figures the ranking reads.
pub struct Ranked<'a> {
    ranking: &'a crate::objective::Plan,
    per: &'a [usize],
    figures: Vec<&'a str>,
    groups: Vec<RankedGroup>,
}

struct RankedGroup {
    head: Vec<String>,
    points: Vec<u64>,
    /// `figures.len()` values per point.
    values: Vec<f64>,
}

impl<'a> Ranked<'a> {
    pub fn new(ranking: &'a crate::objective::Plan, per: &'a [usize]) -> Ranked<'a> {
        Ranked {
            ranking,
            per,
            figures: ranking.figures(),
            groups: Vec::new(),
        }
    }

    pub fn add(&mut self, p: &PointRows) {
        let head: Vec<&String> = self.per.iter().map(|&k| &p.values[k]).collect();
        let g = match self.groups.iter().position(|g| g.head.iter().eq(head.iter().copied())) {
            Some(g) => g,
            None => {
                self.groups.push(RankedGroup {
                    head: head.into_iter().cloned().collect(),
                    points: Vec::new(),
                    values: Vec::new(),
                });
                self.groups.len() - 1
            }
        };
        let g = &mut self.groups[g];
        g.points.push(p.point);
        g.values.extend(self.figures.iter().map(|f| p.figure(f).unwrap_or(f64::NAN)));
    }

    /// The points meeting the constraints, ranked, for each group of `per`; each point
    /// labelled by its other keys' values.
    pub fn text(&self, plan: &SweepPlan) -> String {
        let (ranking, per) = (self.ranking, self.per);
        let mut s = String::new();
        let k = self.figures.len();
        for g in &self.groups {
            let head: Vec<String> = per
                .iter()
                .zip(&g.head)
                .map(|(&key, v)| format!("{}={v}", plan.keys()[key]))
                .collect();
            let head = head.join(", ");
            let label = |i: usize| -> String {
                let point = g.points[i];
                let values = plan.values(point, point + 1).pop().unwrap_or_default();
                let rest: Vec<&str> = (0..plan.keys().len())
                    .filter(|k| !per.contains(k))
                    .map(|k| values[k].as_str())
                    .collect();
                rest.join(wblab_scenario::SWEEP_VALUE_SEPARATOR)
            };
            if !head.is_empty() {
                s.push_str(&format!("\n{head}:"));
            }
            let value = |i: usize, f: usize| g.values[i * k + f];
            s.push_str(&format!("\n{}", ranking.report(g.points.len(), &value, &label)));
        }
        s
    }
}

/// The points grouped by the values of the keys `per` (indices into the plan's keys), in the
/// order the groups first appear: each group's heading (`kernel=6.x, disk=model=hdd`; empty
/// without `per`) and points.
pub fn groups<'p>(plan: &SweepPlan, points: &'p [PointRows], per: &[usize]) -> Vec<(String, Vec<&'p PointRows>)> {
    let mut groups: Vec<(String, Vec<&PointRows>)> = Vec::new();
    for p in points {
        let head: Vec<String> = per.iter().map(|&k| format!("{}={}", plan.keys()[k], p.values[k])).collect();
        let head = head.join(", ");
        match groups.iter_mut().find(|(h, _)| *h == head) {
            Some((_, v)) => v.push(p),
            None => groups.push((head, vec![p])),
        }
    }
    groups
}

/// The points meeting the constraints, ranked, for each group of `per`.
pub fn ranking_text(plan: &SweepPlan, points: &[PointRows], ranking: &crate::objective::Plan, per: &[usize]) -> String {
    let mut r = Ranked::new(ranking, per);
    for p in points {
        r.add(p);
    }
    r.text(plan)
}

/// The charts of `figures` as (file name, SVG): one per figure, or with `per` one per figure
/// and group (`sweep-reader.op_p99_ms-kernel=6.x,disk=model=hdd.svg`), the group's own points.
pub fn charts(plan: &SweepPlan, points: &[PointRows], figures: &[String], x: &str, per: &[usize]) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for figure in figures {
        let name = crate::plot::figure_name(figure);
        for (head, group) in groups(plan, points, per) {
            let rows: Vec<PointRows> = group.into_iter().cloned().collect();
            let svg = crate::plot::chart(plan.keys(), &rows, figure, x, plan.is_random(), per, &head)?;
            let file = if head.is_empty() {
                format!("sweep-{name}.svg")
            } else {
                // `kernel=6.x, disk=model=hdd` → `kernel-6.x_disk-model-hdd`.
                let tag: String = head
                    .replace(", ", "_")
                    .chars()
                    .map(|c| match c {
                        '=' => '-',
                        c if c.is_alphanumeric() || ".-_".contains(c) => c,
                        _ => '_',
                    })
                    .collect();
                format!("sweep-{name}-{tag}.svg")
            };
            out.push((file, svg));
        }
    }
    Ok(out)
}

/// The terminal table of a sweep whose first point is `sc`.
pub fn table(plan: &SweepPlan, sc: &Scenario, first: &[PointRows], total: usize) -> String {
    let title = if plan.keys().iter().any(|k| k == "kernel") {
        format!("sweep of {}", plan.key())
    } else {
        format!("sweep of {} (kernel {})", plan.key(), sc.kernel)
    };
    crate::summary::table(&title, plan.keys(), first, total, !sc.cgroups.groups.is_empty())
}

/// [`table`] of a sweep's points held in memory.
pub fn table_of(plan: &SweepPlan, sc: &Scenario, points: &[PointRows]) -> String {
    table(plan, sc, &points[..points.len().min(TERMINAL_ROWS)], points.len())
}

/// `--json`: each point's values and figures of the sweep in `dir`, as a JSON array written
/// to `w` a point at a time (what `serde_json`'s pretty printer gives for the whole array,
/// without holding it).
pub fn write_json(plan: &SweepPlan, dir: &Path, w: &mut impl std::io::Write) -> Result<(), String> {
    let mut n = 0u64;
    crate::table::for_each_point(dir, plan.keys(), |p| {
        let text = serde_json::to_string_pretty(&point_json(plan, &p)).expect("json");
        let mut item = String::from(if n == 0 { "[\n" } else { ",\n" });
        for (k, line) in text.lines().enumerate() {
            if k > 0 {
                item.push('\n');
            }
            item.push_str("  ");
            item.push_str(line);
        }
        n += 1;
        w.write_all(item.as_bytes()).map_err(|e| e.to_string())
    })?;
    let end = if n == 0 { "[]\n" } else { "\n]\n" };
    w.write_all(end.as_bytes()).and_then(|()| w.flush()).map_err(|e| e.to_string())
}

/// One point's values and figures, as `--json` gives it.
pub fn point_json(plan: &SweepPlan, p: &PointRows) -> serde_json::Value {
    let values: serde_json::Map<String, serde_json::Value> = plan
        .keys()
        .iter()
        .cloned()
        .zip(p.values.iter().map(|v| serde_json::Value::from(v.clone())))
        .collect();
    let figures: serde_json::Map<String, serde_json::Value> = p
        .named_figures()
        .into_iter()
        .map(|(n, v)| (n, serde_json::Value::from(v)))
        .collect();
    serde_json::json!({ "point": p.point, "values": values, "figures": figures })
}
