//! Grading a simulated case against the kernel's repeats: which figures count, how close is
//! close enough, and the error distribution over every case run so far.
//!
//! A figure is graded against the mean of the kernel's repeats. Tolerances follow what a user
//! acts on: throughput within 15 %, medians within 25 %, p99s within 50 %. The model's own
//! run-to-run range (its seeds) is graded against the kernel's: within a factor of two, or both
//! under 2 % of the mean.
//!
//! That range test is itself a draw: the range of three runs is a noisy measure of a spread,
//! and two sets of three runs from *one* distribution have ranges within 2× of each other only
//! about 60 % of the time. So the summary puts beside the model's share the share a model as
//! variable as the kernel would reach on the same figures ([`spread_reference`]), and the
//! median ratio of the two ranges, which says which way the model errs.

use serde::{Deserialize, Serialize};
use wblab_report::compare::{quantile, Comparison};

/// What a figure measures, for its tolerance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Throughput,
    P50,
    P99,
}

impl Class {
    /// The figure's class by its name in `wblab compare`, None for figures not graded (levels,
    /// counts, maxima: reported, but too dependent on one event to grade).
    pub fn of(name: &str) -> Option<Class> {
        let tail = name.rsplit(": ").next().unwrap_or(name);
        match tail {
            "MB written" | "MB read" | "MB/s" | "steady MB/s" | "bw" | "iops" => Some(Class::Throughput),
            "op latency p50" | "clat p50" | "sync p50" | "pause p50" => Some(Class::P50),
            "op latency p99" | "clat p99" | "sync p99" | "pause p99" => Some(Class::P99),
            _ => None,
        }
    }

    /// Largest relative error that still agrees.
    pub fn tolerance(self) -> f64 {
        match self {
            Class::Throughput => 0.15,
            Class::P50 => 0.25,
            Class::P99 => 0.50,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Class::Throughput => "throughput",
            Class::P50 => "p50 latency",
            Class::P99 => "p99 latency",
        }
    }
}

/// Below these the figure is noise, not a measurement: a few MB moved, latencies under a µs.
fn big_enough(class: Class, unit: &str, mean: f64) -> bool {
    match (class, unit) {
        (Class::Throughput, "MB") => mean >= 5.0,
        (Class::Throughput, _) => mean > 0.0,
        (_, "ms") => mean >= 0.001,
        (_, _) => mean >= 1.0,
    }
}

/// One graded figure of one case.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Graded {
    pub figure: String,
    pub unit: String,
    pub class: Class,
    /// The kernel's repeats: mean, lowest, highest.
    pub measured: f64,
    pub measured_lo: f64,
    pub measured_hi: f64,
    /// The model (the median of its runs, one a repeat; or its first seed), and its range.
    pub simulated: f64,
    pub simulated_lo: f64,
    pub simulated_hi: f64,
    /// (simulated − measured) / measured.
    pub error: f64,
    pub agrees: bool,
    /// The model's range over its seeds against the kernel's over its repeats.
    pub spread_agrees: bool,
}

/// Grade a comparison whose first `repeats` runs are the kernel's and whose others are the
/// model's: one run per repeat (each on its repeat's machine; the model's figure is their
/// median, so that one repeat's odd machine does not carry it, and its range theirs), or one
/// run with its seeds as repeats (its first seed's figure and the seeds' range).
pub fn grade(c: &Comparison, repeats: usize) -> Vec<Graded> {
    let mut out = Vec::new();
    for f in &c.figures {
        let Some(class) = Class::of(&f.name) else { continue };
        let kernel: Vec<f64> = f.values.iter().take(repeats).flatten().copied().collect();
        if kernel.len() < repeats {
            continue;
        }
        let model: Vec<f64> = f.values.iter().skip(repeats).flatten().copied().collect();
        let (sim, model_range) = match (model.len(), f.values.len() - repeats) {
            (0, _) => continue,
            (_, 1) => (model[0], f.range.get(repeats).copied().flatten()),
            (n, runs) if n == runs => {
                let mut sorted = model;
                sorted.sort_by(f64::total_cmp);
                (sorted[(n - 1) / 2], Some((sorted[0], sorted[n - 1])))
            }
            _ => continue,
        };
        let mean = kernel.iter().sum::<f64>() / kernel.len() as f64;
        if !big_enough(class, f.unit, mean) {
            continue;
        }
        let lo = kernel.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = kernel.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (slo, shi) = model_range.unwrap_or((sim, sim));
        let error = (sim - mean) / mean;
        let (ks, ss) = ((hi - lo) / mean, (shi - slo) / mean);
        let spread_agrees = spread_within(ks, ss);
        out.push(Graded {
            figure: f.name.clone(),
            unit: f.unit.to_string(),
            class,
            measured: mean,
            measured_lo: lo,
            measured_hi: hi,
            simulated: sim,
            simulated_lo: slo,
            simulated_hi: shi,
            error,
            agrees: error.abs() <= class.tolerance(),
            spread_agrees,
        });
    }
    out
}

/// A case's grades as `score.json` keeps them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseScore {
    pub case: String,
    pub figures: Vec<Graded>,
    /// The kernel's repeats (and the model's runs) behind each range: the number of
    /// `measured/r*` directories beside `score.json`, not kept in it.
    #[serde(skip, default = "default_repeats")]
    pub repeats: usize,
}

fn default_repeats() -> usize {
    3
}

/// Trials per figure of [`spread_reference`]: its share moves by well under a point between
/// seeds of the reference's own draws at this many.
const SPREAD_TRIALS: u32 = 2000;

/// The chance that the spread test passes for a model exactly as variable as the kernel: its
/// `repeats` runs and the kernel's drawn from one normal law with the kernel's mean and the
/// standard deviation its range estimates (range / d₂, the range of `repeats` normal draws
/// being d₂ σ on average), graded by the same rule as [`grade`]. A figure whose repeats agree
/// exactly always passes (both ranges 0). Deterministic: a fixed stream drives the draws.
fn spread_reference(g: &Graded, repeats: usize, rng: &mut wblab_sim::RngStream) -> f64 {
    // Expected range of n standard normal draws (Tippett's d₂), n = 2..=6.
    const D2: [f64; 5] = [1.128, 1.693, 2.059, 2.326, 2.534];
    let n = repeats.clamp(2, 6);
    let mean = g.measured;
    let sigma = (g.measured_hi - g.measured_lo) / D2[n - 2];
    if sigma <= 0.0 || mean <= 0.0 {
        return 1.0;
    }
    let mut normal = || {
        // Box–Muller: one standard normal from two uniforms.
        let u = 1.0 - rng.next_f64();
        let v = rng.next_f64();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    };
    let mut pass = 0;
    for _ in 0..SPREAD_TRIALS {
        let mut range = || {
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for _ in 0..n {
                let x = normal();
                lo = lo.min(x);
                hi = hi.max(x);
            }
            sigma * (hi - lo) / mean
        };
        let (ks, ss) = (range(), range());
        pass += u32::from(spread_within(ks, ss));
    }
    f64::from(pass) / f64::from(SPREAD_TRIALS)
}

/// The spread test on two relative ranges: within 2× of each other, or both under 2 %.
fn spread_within(kernel: f64, model: f64) -> bool {
    (kernel < 0.02 && model < 0.02) || (model <= 2.0 * kernel && kernel <= 2.0 * model)
}

/// `n` of `of`, in percent.
fn share(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

/// The Markdown error distribution over `cases`: per class, how many figures agree, the median
/// and 90th percentile of |error|, and the spread test beside what a model as variable as the
/// kernel would score on it; then the figure kinds that fail most.
pub fn summary(cases: &[CaseScore]) -> String {
    let mut s = String::new();
    let all: Vec<(&Graded, usize)> = cases.iter().flat_map(|c| c.figures.iter().map(move |g| (g, c.repeats))).collect();
    s += &format!("{} cases, {} graded figures.\n\n", cases.len(), all.len());
    s += "| class | tolerance | figures | agree | median \\|error\\| | p90 \\|error\\| | spread within 2× \
          | … as variable as the kernel | model range / kernel range, median |\n";
    s += "|---|---|---|---|---|---|---|---|---|\n";
    let mut rng = wblab_sim::RngStream::new(1, "validate/spread-reference");
    for class in [Class::Throughput, Class::P50, Class::P99] {
        let fs: Vec<&(&Graded, usize)> = all.iter().filter(|(g, _)| g.class == class).collect();
        let mut errs: Vec<f64> = fs.iter().map(|(g, _)| g.error.abs()).collect();
        errs.sort_by(f64::total_cmp);
        let agree = fs.iter().filter(|(g, _)| g.agrees).count();
        let spread = fs.iter().filter(|(g, _)| g.spread_agrees).count();
        let reference: f64 = fs.iter().map(|(g, n)| spread_reference(g, *n, &mut rng)).sum();
        // Where the kernel's repeats differ at all: how wide the model's range is against theirs.
        let mut ratios: Vec<f64> = fs
            .iter()
            .filter(|(g, _)| g.measured_hi > g.measured_lo)
            .map(|(g, _)| (g.simulated_hi - g.simulated_lo) / (g.measured_hi - g.measured_lo))
            .collect();
        ratios.sort_by(f64::total_cmp);
        s += &format!(
            "| {} | {:.0} % | {} | {:.0} % | {:.0} % | {:.0} % | {:.0} % | {:.0} % | {:.2} |\n",
            class.label(),
            100.0 * class.tolerance(),
            fs.len(),
            share(agree, fs.len()),
            100.0 * quantile(&errs, 0.5),
            100.0 * quantile(&errs, 0.9),
            share(spread, fs.len()),
            if fs.is_empty() { 0.0 } else { 100.0 * reference / fs.len() as f64 },
            quantile(&ratios, 0.5),
        );
    }
    // The figure kinds that disagree most often, with the direction of the error.
    let mut kinds: std::collections::BTreeMap<String, (usize, usize, usize)> = Default::default();
    for (g, _) in &all {
        let kind = g.figure.rsplit(": ").next().unwrap_or(&g.figure).to_string();
        let e = kinds.entry(kind).or_default();
        e.0 += 1;
        if !g.agrees {
            if g.error > 0.0 {
                e.1 += 1;
            } else {
                e.2 += 1;
            }
        }
    }
    let mut worst: Vec<(String, (usize, usize, usize))> = kinds.into_iter().filter(|(_, v)| v.1 + v.2 > 0).collect();
    worst.sort_by_key(|(k, v)| (std::cmp::Reverse(v.1 + v.2), k.clone()));
    if !worst.is_empty() {
        s += "\n| figure | graded | model too high | model too low |\n|---|---|---|---|\n";
        for (k, (n, hi, lo)) in worst {
            s += &format!("| {k} | {n} | {hi} | {lo} |\n");
        }
    }
    s
}

/// The disagreements of `cases`, one section per case, for `findings.md`.
pub fn findings(cases: &[CaseScore]) -> String {
    let mut s = String::from("# Findings: figures outside tolerance\n\n");
    s += "Each case is `<case>/case.toml`; `<case>/measured/r*` are the kernel's repeats and\n";
    s += "`<case>/sim` the model's run (its seeds in `repeats/`). Errors are against the mean of the\n";
    s += "kernel's repeats.\n";
    for c in cases {
        let bad: Vec<&Graded> = c.figures.iter().filter(|g| !g.agrees).collect();
        if bad.is_empty() {
            continue;
        }
        s += &format!(
            "\n## {}\n\n| figure | kernel (range) | model (range) | error |\n|---|---|---|---|\n",
            c.case
        );
        for g in bad {
            s += &format!(
                "| {} | {} ({}–{}) {} | {} ({}–{}) | {:+.0} % |\n",
                g.figure,
                num(g.measured),
                num(g.measured_lo),
                num(g.measured_hi),
                g.unit,
                num(g.simulated),
                num(g.simulated_lo),
                num(g.simulated_hi),
                100.0 * g.error
            );
        }
    }
    s
}

fn num(v: f64) -> String {
    wblab_report::compare::num(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wblab_report::compare::Figure;

    fn figure(name: &str, unit: &'static str, kernel: [f64; 3], sim: f64, sim_range: (f64, f64)) -> Figure {
        let mut values: Vec<Option<f64>> = kernel.iter().map(|&v| Some(v)).collect();
        values.push(Some(sim));
        Figure {
            name: name.into(),
            unit,
            values,
            rel_err: vec![None; 4],
            range: vec![None, None, None, Some(sim_range)],
            significant: vec![None; 4],
        }
    }

    fn comparison(figures: Vec<Figure>) -> Comparison {
        Comparison {
            runs: Vec::new(),
            figures,
            demerits: Vec::new(),
        }
    }

    #[test]
    fn grades_by_class_tolerance_and_spread() {
        let c = comparison(vec![
            figure("dd0: MB written", "MB", [100.0, 110.0, 90.0], 112.0, (108.0, 118.0)),
            figure("randread1: op latency p50", "ms", [1.0, 1.0, 1.0], 1.3, (1.3, 1.3)),
            figure("randread1: op latency p99", "ms", [10.0, 8.0, 12.0], 14.0, (13.9, 14.1)),
            figure("vmstat 2nd half: nr_dirty", "MiB", [10.0, 10.0, 10.0], 50.0, (50.0, 50.0)),
            figure("dd0: MB read", "MB", [0.1, 0.1, 0.1], 3.0, (3.0, 3.0)),
        ]);
        let g = grade(&c, 3);
        assert_eq!(g.len(), 3, "levels and tiny figures are not graded: {g:?}");
        assert!(g[0].agrees && g[0].spread_agrees);
        assert!(!g[1].agrees, "a 30 % miss on a median");
        assert!(g[1].spread_agrees, "no spread on either side");
        assert!(g[2].agrees, "40 % is inside a p99's tolerance");
        assert!(!g[2].spread_agrees, "the model's 2 % range against the kernel's 40 %");
        let s = summary(&[CaseScore {
            case: "g000".into(),
            figures: g.clone(),
            repeats: 3,
        }]);
        assert!(s.contains("| p50 latency | 25 % | 1 | 0 % |"), "{s}");
        assert!(s.contains("| op latency p50 | 1 | 1 | 0 |"), "{s}");
        let f = findings(&[CaseScore {
            case: "g000".into(),
            figures: g,
            repeats: 3,
        }]);
        assert!(f.contains("## g000") && f.contains("+30 %"), "{f}");
    }

    #[test]
    fn a_model_run_for_each_repeat_grades_its_median_and_its_range() {
        let f = Figure {
            name: "dd0: MB/s".into(),
            unit: "MB/s",
            values: [100.0, 120.0, 80.0, 95.0, 300.0, 90.0].map(Some).to_vec(),
            rel_err: vec![None; 6],
            range: vec![None; 6],
            significant: vec![None; 6],
        };
        let g = grade(&comparison(vec![f.clone()]), 3);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].simulated, 95.0, "the median run, not the odd one");
        assert!(g[0].agrees);
        assert_eq!((g[0].simulated_lo, g[0].simulated_hi), (90.0, 300.0));
        assert!(!g[0].spread_agrees, "the model's runs spread 5x the kernel's repeats");
        // A model run without the figure leaves it ungraded.
        let mut missing = f;
        missing.values[5] = None;
        assert!(grade(&comparison(vec![missing]), 3).is_empty());
    }

    #[test]
    fn a_model_as_variable_as_the_kernel_passes_the_spread_test_about_three_times_in_five() {
        let graded = |lo: f64, hi: f64| Graded {
            figure: "dd0: MB/s".into(),
            unit: "MB/s".into(),
            class: Class::Throughput,
            measured: (lo + hi) / 2.0,
            measured_lo: lo,
            measured_hi: hi,
            simulated: (lo + hi) / 2.0,
            simulated_lo: lo,
            simulated_hi: hi,
            error: 0.0,
            agrees: true,
            spread_agrees: true,
        };
        let mut rng = wblab_sim::RngStream::new(7, "test");
        // A wide spread: the 2 % floor never helps, so the share is the ranges' own chance.
        let wide = spread_reference(&graded(80.0, 120.0), 3, &mut rng);
        assert!((0.55..0.65).contains(&wide), "three against three: {wide}");
        // More repeats estimate a range better, so two of them agree more often.
        let six = spread_reference(&graded(80.0, 120.0), 6, &mut rng);
        assert!(six > wide + 0.05, "six repeats {six} against three {wide}");
        // Repeats that agree exactly, or within far less than 2 %, always pass.
        assert_eq!(spread_reference(&graded(100.0, 100.0), 3, &mut rng), 1.0);
        let tight = spread_reference(&graded(99.9, 100.1), 3, &mut rng);
        assert!(tight > 0.99, "{tight}");
        // The summary prints it beside the model's own share, and the median range ratio.
        let mut narrow = graded(80.0, 120.0);
        (narrow.simulated_lo, narrow.simulated_hi) = (99.0, 101.0);
        narrow.spread_agrees = false;
        let s = summary(&[CaseScore {
            case: "g000".into(),
            figures: vec![narrow],
            repeats: 3,
        }]);
        let row = s.lines().find(|l| l.starts_with("| throughput")).expect("a throughput row");
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells[7], "0 %", "{row}");
        let reference: f64 = cells[8].trim_end_matches(" %").parse().expect("a share");
        assert!((55.0..65.0).contains(&reference), "{row}");
        assert_eq!(cells[9], "0.05", "a 2 MB/s range against 40: {row}");
    }
}
