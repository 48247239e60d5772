//! `wblab run --repeat N`: one scenario under N seeds, each figure's median and range.
//!
//! The seed drives the model's noise (wakeup latency, random workloads), so the runs differ as
//! a real machine's repeats do; a figure's range across seeds is what a single run of it is
//! worth, and what a difference between two configurations must exceed to mean something.
//! The figures are the sweep table's (`<group>.<figure>`, `<device>.<figure>`).

use crate::figures::{device_figures, format_figure, group_figures, DEVICE_FIGURES, GROUP_FIGURES};
use wblab_sim::metrics::RunResult;

/// Every figure of a run by its full name, in the sweep table's order.
pub fn named_figures(r: &RunResult) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for g in group_figures(r) {
        for (name, v) in GROUP_FIGURES.iter().zip(g.values) {
            out.push((format!("{}.{name}", g.group), v));
        }
    }
    for d in device_figures(r) {
        for (name, v) in DEVICE_FIGURES.iter().zip(d.values) {
            out.push((format!("{}.{name}", d.device), v));
        }
    }
    out
}

/// The figures of the same scenario run under several seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Repeats {
    pub seeds: Vec<u64>,
    /// Figure names, as in the sweep table.
    pub names: Vec<String>,
    /// `values[i][j]`: figure `j` of the run with `seeds[i]`.
    pub values: Vec<Vec<f64>>,
}

/// One figure over the repeats.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// (max − min) / median; 0 when the median is 0.
    pub fn relative(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.max - self.min) / self.median.abs()
        }
    }
}

impl Repeats {
    /// No runs yet.
    pub fn empty() -> Repeats {
        Repeats {
            seeds: Vec::new(),
            names: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Add the run with `seed` (runs of one scenario name the same figures).
    pub fn push(&mut self, seed: u64, r: &RunResult) {
        self.push_figures(seed, named_figures(r));
    }

    /// Add a run's [`named_figures`].
    pub fn push_figures(&mut self, seed: u64, f: Vec<(String, f64)>) {
        if self.names.is_empty() {
            self.names = f.iter().map(|(n, _)| n.clone()).collect();
        }
        self.seeds.push(seed);
        self.values.push(f.into_iter().map(|(_, v)| v).collect());
    }

    /// Median (the lower of the two middle values for an even count, so it is one of the
    /// runs' values), minimum and maximum of figure `j`.
    pub fn spread(&self, j: usize) -> Spread {
        let mut v: Vec<f64> = self.values.iter().map(|row| row[j]).collect();
        v.sort_by(f64::total_cmp);
        Spread {
            median: v[(v.len() - 1) / 2],
            min: v[0],
            max: v[v.len() - 1],
        }
    }

    /// `repeats.csv`: one row per seed, one column per figure (units in the names).
    pub fn csv(&self) -> String {
        let mut s = String::from("seed");
        for n in &self.names {
            s.push(',');
            s.push_str(n);
        }
        s.push('\n');
        for (seed, row) in self.seeds.iter().zip(&self.values) {
            s.push_str(&seed.to_string());
            for (n, v) in self.names.iter().zip(row) {
                s.push(',');
                s.push_str(&format_figure(last(n), *v));
            }
            s.push('\n');
        }
        s
    }

    /// The terminal table: each figure that is not zero in every run, its median, range and
    /// relative spread.
    pub fn table(&self) -> String {
        let rows: Vec<(String, Spread)> = (0..self.names.len())
            .map(|j| (self.names[j].clone(), self.spread(j)))
            .filter(|(_, s)| s.min != 0.0 || s.max != 0.0)
            .collect();
        let w = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(6).max(6);
        let seeds = match (self.seeds.first(), self.seeds.last()) {
            (Some(a), Some(b)) if self.seeds.len() > 1 => format!("seeds {a}–{b}"),
            (Some(a), _) => format!("seed {a}"),
            _ => String::new(),
        };
        let mut s = format!(
            "\n{} runs ({seeds}): median and range of each figure\n{:<w$}  {:>10}  {:>10}  {:>10}  {:>7}\n",
            self.seeds.len(),
            "figure",
            "median",
            "min",
            "max",
            "spread"
        );
        for (n, sp) in rows {
            let f = |v: f64| format_figure(last(&n), v);
            s.push_str(&format!(
                "{n:<w$}  {:>10}  {:>10}  {:>10}  {:>6.1}%\n",
                f(sp.median),
                f(sp.min),
                f(sp.max),
                sp.relative() * 100.0
            ));
        }
        s
    }
}

/// The figure part of `<group>.<figure>`.
fn last(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeats(values: Vec<Vec<f64>>) -> Repeats {
        Repeats {
            seeds: (1..=values.len() as u64).collect(),
            names: vec!["dd.pause_p50_ms".into(), "dd.pause_count".into(), "sda.read_mb_s".into()],
            values,
        }
    }

    #[test]
    fn the_median_is_one_of_the_runs_and_the_range_spans_them() {
        let r = repeats(vec![
            vec![30.0, 10.0, 0.0],
            vec![20.0, 12.0, 0.0],
            vec![40.0, 11.0, 0.0],
            vec![24.0, 9.0, 0.0],
        ]);
        let s = r.spread(0);
        assert_eq!((s.median, s.min, s.max), (24.0, 20.0, 40.0));
        assert!((s.relative() - 20.0 / 24.0).abs() < 1e-12);
        let t = r.table();
        assert!(t.contains("4 runs (seeds 1–4)"), "{t}");
        assert!(t.contains("dd.pause_p50_ms"), "{t}");
        // A figure that is zero in every run says nothing.
        assert!(!t.contains("sda.read_mb_s"), "{t}");
    }

    #[test]
    fn the_csv_has_a_row_per_seed_and_a_column_per_figure() {
        let r = repeats(vec![vec![30.0, 10.0, 0.0], vec![20.0, 12.0, 0.5]]);
        let csv = r.csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "seed,dd.pause_p50_ms,dd.pause_count,sda.read_mb_s");
        assert_eq!(lines[1], "1,30.000,10,0.000");
        assert_eq!(lines[2], "2,20.000,12,0.500");
    }
}
