//! `wblab reproduce [REPORT...]`: the founding reports' figures against wblab's.
//!
//! `scenarios/reports/figures.toml` lists each figure a report measured, the scenario that recreates
//! the report's setup, and which figure of its run to take. Every scenario (and kernel, and
//! sweep point) runs once per seed, in parallel; each figure's wblab value is the median over
//! the seeds, shown with its range, its ratio to the report and a mark: within 2× of the
//! report, and — where the report compares two settings — the change in the same direction.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wblab_sim::config::Scenario;
use wblab_sim::metrics::RunResult;

/// The figures file, relative to the scenarios directory (in a directory of its own, so that
/// the tools that read every `*.toml` of scenarios/ as a scenario pass it by).
pub const REPORTS_FILE: &str = "reports/figures.toml";

/// Within this factor of the report passes.
const WITHIN: f64 = 2.0;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub report: String,
    pub id: String,
    pub figure: String,
    pub reported: Reported,
    pub unit: String,
    pub scenario: String,
    #[serde(default)]
    pub kernel: Option<String>,
    #[serde(default)]
    pub point: Option<String>,
    pub metric: String,
    #[serde(default = "one")]
    pub scale: f64,
    #[serde(default)]
    pub vs: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
    /// What of the scenario was fitted to this figure (so its match is not a prediction).
    #[serde(default)]
    pub fitted: Option<String>,
    /// Why a fitted figure does not hold over a longer run (`wblab reproduce --long`).
    #[serde(default)]
    pub long_note: Option<String>,
}

fn one() -> f64 {
    1.0
}

/// A reported value or range, or a bound the report claims for every case (`{ below = 200 }`:
/// "less than the configured 200 ms max pause time in all known cases").
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub enum Reported {
    One(f64),
    Range([f64; 2]),
    Below { below: f64 },
}

impl Reported {
    fn middle(self) -> f64 {
        match self {
            Reported::One(v) | Reported::Below { below: v } => v,
            Reported::Range([a, b]) => (a + b) / 2.0,
        }
    }

    fn text(self) -> String {
        match self {
            Reported::One(v) => num(v),
            Reported::Range([a, b]) => format!("{}–{}", num(a), num(b)),
            Reported::Below { below } => format!("< {}", num(below)),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    figure: Vec<Spec>,
}

/// Read and check the figures file: unique ids per report, `vs` naming one of them.
pub fn load(path: &Path) -> Result<Vec<Spec>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let f: File = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    for (i, s) in f.figure.iter().enumerate() {
        if f.figure[..i].iter().any(|t| t.report == s.report && t.id == s.id) {
            return Err(format!(
                "{}: report {} has two figures with id `{}`",
                path.display(),
                s.report,
                s.id
            ));
        }
    }
    for s in &f.figure {
        if let Some(v) = &s.vs {
            if !f.figure.iter().any(|t| t.report == s.report && &t.id == v) {
                return Err(format!(
                    "{}: {}/{}: `vs = \"{v}\"` names no figure of its report",
                    path.display(),
                    s.report,
                    s.id
                ));
            }
        }
    }
    Ok(f.figure)
}

/// The run a figure needs: a file, a kernel of it, a point of its sweep.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct RunKey {
    scenario: String,
    kernel: Option<String>,
    point: Option<String>,
}

impl RunKey {
    /// The runs `specs` need, sorted, each once.
    fn all(specs: &[Spec]) -> Vec<RunKey> {
        let mut keys: Vec<RunKey> = specs.iter().map(RunKey::of).collect();
        keys.sort();
        keys.dedup();
        keys
    }

    fn of(s: &Spec) -> RunKey {
        RunKey {
            scenario: s.scenario.clone(),
            kernel: s.kernel.clone(),
            point: s.point.clone(),
        }
    }

    /// The scenario this key names, from the files in `dir`.
    fn scenario(&self, dir: &Path) -> Result<Scenario, String> {
        let path = dir.join(&self.scenario);
        if let Some(plan) = wblab_scenario::load_sweep(&path).map_err(|e| e.to_string())? {
            let want = self
                .point
                .as_deref()
                .ok_or_else(|| format!("{}: has a [sweep]: name a `point`", path.display()))?;
            for i in 0..plan.len() {
                let values = plan.values(i, i + 1).remove(0);
                if values.join(wblab_scenario::SWEEP_VALUE_SEPARATOR) == want {
                    return plan.point(i).map(|p| p.scenario).map_err(|e| e.to_string());
                }
            }
            return Err(format!("{}: no sweep point `{want}`", path.display()));
        }
        let all = wblab_scenario::load_all(&path).map_err(|e| e.to_string())?;
        match &self.kernel {
            None if all.len() == 1 => Ok(all.into_iter().next().expect("one")),
            None => Err(format!("{}: lists {} kernels: name one", path.display(), all.len())),
            Some(k) => all
                .into_iter()
                .find(|s| &s.kernel == k)
                .ok_or_else(|| format!("{}: no kernel `{k}`", path.display())),
        }
    }
}

/// A figure of a run, by the names `reports/figures.toml` uses.
pub fn metric(r: &RunResult, m: &str) -> Result<f64, String> {
    match m {
        "bo_cv" | "bo_zero_pct" => {
            // While the workload runs: the idle seconds after it would count as zeros.
            let end = r.tasks.iter().map(|t| t.ended).max().unwrap_or(r.sim_ns);
            let bo: Vec<f64> = r.vmstat.iter().filter(|s| s.t_ns <= end).map(|s| s.bo_kb as f64).collect();
            if bo.is_empty() {
                return Err("no vmstat samples".into());
            }
            let n = bo.len() as f64;
            let mean = bo.iter().sum::<f64>() / n;
            if m == "bo_zero_pct" {
                return Ok(bo.iter().filter(|&&b| b == 0.0).count() as f64 / n * 100.0);
            }
            let sd = (bo.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / n).sqrt();
            return Ok(if mean > 0.0 { sd / mean } else { 0.0 });
        }
        // The report's "top 10 scheduler callers", over the whole run.
        "tiotest.wait_on_page_bit" => return Ok(r.tiotest.iter().map(|p| p.wait_on_page_bit as f64).sum()),
        "tiotest.lock_page" => return Ok(r.tiotest.iter().map(|p| p.lock_page as f64).sum()),
        "tiotest.wait_on_buffer" => return Ok(r.tiotest.iter().map(|p| p.wait_on_buffer as f64).sum()),
        _ => {}
    }
    if let Some(rest) = m.strip_prefix("tiotest.") {
        let (phase, what) = rest.rsplit_once('.').ok_or_else(|| format!("`{m}`: tiotest.<phase>.<figure>"))?;
        let p = r
            .tiotest
            .iter()
            .find(|p| p.name == phase)
            .ok_or_else(|| format!("`{m}`: no tiotest phase `{phase}`"))?;
        // As tiotest prints them: MB of 2^20 bytes; CPU as a share of the phase's time.
        return match what {
            "mb_s" => Ok(p.rate_mb_s()),
            "usr_pct" => Ok(p.usr_pct()),
            "sys_pct" => Ok(p.sys_pct()),
            "mb_per_cpusec" => Ok(p.mb_per_cpu_sec()),
            _ => Err(format!("`{m}`: tiotest figures are mb_s, usr_pct, sys_pct and mb_per_cpusec")),
        };
    }
    let (group, what) = m.rsplit_once('.').ok_or_else(|| format!("`{m}` is not <group>.<figure>"))?;
    let group_tasks = || r.tasks.iter().filter(|t| t.name == group);
    if group_tasks().next().is_none() {
        return Err(format!("`{m}`: no task group `{group}`"));
    }
    match what {
        "first_op_ms" => group_tasks()
            .filter_map(|t| t.ops.iter().min_by_key(|o| o.0).map(|o| o.1 as f64 / 1e6))
            .reduce(f64::max)
            .ok_or_else(|| format!("`{m}`: `{group}` finished no operation")),
        "done_s" => Ok(group_tasks()
            .map(|t| t.ended.saturating_sub(t.started) as f64 / 1e9)
            .fold(0.0, f64::max)),
        // `op_p50_above_<N>ms`: the median of the operations slower than N ms, where a
        // report's plot shows where its slow ones cluster.
        _ if what.starts_with("op_p50_above_") => {
            let n = threshold_ms(m, what, "op_p50_above_")?;
            let mut slow: Vec<u64> = group_tasks()
                .flat_map(|t| t.ops.iter().map(|o| o.1))
                .filter(|&l| l > n * 1_000_000)
                .collect();
            slow.sort_unstable();
            slow.get(slow.len().saturating_sub(1) / 2)
                .map(|&l| l as f64 / 1e6)
                .ok_or_else(|| format!("`{m}`: no `{group}` operation over {n} ms"))
        }
        // `op_share_above_<N>ms`: the share (%) of the group's operations slower than N ms,
        // where a report's stem plot counts its slow ones.
        _ if what.starts_with("op_share_above_") => {
            let n = threshold_ms(m, what, "op_share_above_")?;
            let (slow, all) = group_tasks()
                .flat_map(|t| t.ops.iter().map(|o| o.1))
                .fold((0u64, 0u64), |(s, a), l| (s + u64::from(l > n * 1_000_000), a + 1));
            if all == 0 {
                return Err(format!("`{m}`: `{group}` finished no operation"));
            }
            Ok(slow as f64 * 100.0 / all as f64)
        }
        _ => wblab_sweep::repeats::named_figures(r)
            .into_iter()
            .find(|(n, _)| n == m)
            .map(|(_, v)| v)
            .ok_or_else(|| format!("unknown figure `{m}`")),
    }
}

/// The N of a figure named `<prefix><N>ms` (metric `m`).
fn threshold_ms(m: &str, what: &str, prefix: &str) -> Result<u64, String> {
    what.strip_prefix(prefix)
        .and_then(|x| x.strip_suffix("ms"))
        .and_then(|x| x.parse().ok())
        .ok_or_else(|| format!("`{m}`: {prefix}<N>ms"))
}

/// One figure's outcome.
#[derive(Debug, Clone)]
pub struct Row {
    pub spec: Spec,
    /// Median, min and max over the seeds.
    pub wblab: (f64, f64, f64),
    pub ratio: f64,
    /// Where the report compares: whether wblab's change goes the same way.
    pub direction: Option<bool>,
    /// In a [`Plan::longer`] plan: whether the figure's runs went on longer than shipped
    /// (false: their work ended within the shipped run, which a longer one repeats).
    pub longer: Option<bool>,
}

impl Row {
    /// Within 2× of the report; for a bound, at or under it in every seed (the ratio is then
    /// the worst seed's: a pause clamped to the 200 ms it is bounded by keeps the bound).
    pub fn within(&self) -> bool {
        match self.spec.reported {
            Reported::Below { .. } => self.ratio.is_finite() && self.ratio <= 1.0,
            _ => self.ratio.is_finite() && self.ratio >= 1.0 / WITHIN && self.ratio <= WITHIN,
        }
    }

    pub fn pass(&self) -> bool {
        self.within() && self.direction != Some(false)
    }
}

/// What `wblab reproduce` runs: seeds per figure, only the fitted figures, runs how many times
/// as long as shipped.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub seeds: u32,
    pub fitted: bool,
    pub long: u64,
}

/// Did every task of `r` end before its scenario's duration (its work is done; a longer run
/// would be the same run up to there)?
fn work_done(r: &RunResult) -> bool {
    r.tasks.iter().all(|t| t.ended < r.scenario.duration)
}

/// How a figure's simulation is made: the scenario in, the run (shared) or why it failed out.
pub type Simulate<'a> = dyn Fn(&Scenario) -> Result<std::sync::Arc<wblab_sim::metrics::RunResult>, String> + Sync + 'a;

/// The simulations `reproduce` makes: every (figure's run, seed) once, in a fixed order.
pub struct Plan {
    specs: Vec<Spec>,
    keys: Vec<RunKey>,
    /// (index into `keys`, the scenario with its seed) of each simulation.
    runs: Vec<(usize, Scenario)>,
    /// Runs last this many times their scenario's `duration` (1: as shipped).
    factor: u64,
}

impl Plan {
    /// The figures of `reports` (all when empty) from the scenarios in `dir`, `seeds` seeds each.
    pub fn new(dir: &Path, reports: &[String], seeds: u32) -> Result<Plan, String> {
        let all = load(&dir.join(REPORTS_FILE))?;
        for r in reports {
            if !all.iter().any(|s| &s.report == r) {
                let mut known: Vec<&str> = all.iter().map(|s| s.report.as_str()).collect();
                known.dedup();
                return Err(format!("no report `{r}`; known: {}", known.join(", ")));
            }
        }
        let specs: Vec<Spec> = all
            .into_iter()
            .filter(|s| reports.is_empty() || reports.contains(&s.report))
            .collect();
        let keys = RunKey::all(&specs);
        let scenarios: Vec<Scenario> = keys.iter().map(|k| k.scenario(dir)).collect::<Result<_, _>>()?;
        let runs = (0..keys.len())
            .flat_map(|k| (0..u64::from(seeds)).map(move |s| (k, s)))
            .map(|(k, seed)| {
                let mut sc = scenarios[k].clone();
                sc.seed = sc.seed.wrapping_add(seed);
                (k, sc)
            })
            .collect();
        Ok(Plan {
            specs,
            keys,
            runs,
            factor: 1,
        })
    }

    /// Only the figures a scenario parameter was fitted to.
    pub fn fitted_only(mut self) -> Plan {
        self.specs.retain(|s| s.fitted.is_some());
        let keys = RunKey::all(&self.specs);
        let old = std::mem::take(&mut self.keys);
        self.runs = std::mem::take(&mut self.runs)
            .into_iter()
            .filter_map(|(k, sc)| keys.binary_search(&old[k]).ok().map(|k| (k, sc)))
            .collect();
        self.keys = keys;
        self
    }

    /// The long-run check: each figure's runs go on `factor` times their scenario's duration,
    /// unless their work ends within the shipped duration (a longer run repeats such a run up
    /// to there, and its figures are taken from its tasks).
    pub fn longer(mut self, factor: u64) -> Plan {
        self.factor = factor.max(1);
        self
    }

    /// The scenarios it simulates, in order.
    pub fn scenarios(&self) -> impl Iterator<Item = &Scenario> {
        self.runs.iter().map(|(_, sc)| sc)
    }
}

/// Run the figures of `reports` (all when empty) from the scenarios in `dir`, `seeds` seeds
/// each, `jobs` simulations at once.
pub fn reproduce(dir: &Path, reports: &[String], opts: &Options, jobs: usize, quiet: bool) -> Result<Vec<Row>, String> {
    let mut plan = Plan::new(dir, reports, opts.seeds)?;
    if opts.fitted {
        plan = plan.fitted_only();
    }
    let plan = plan.longer(opts.long);
    let simulate = |sc: &Scenario| {
        wblab_sim::run(sc, &mut wblab_sim::machine::NoProgress)
            .map(std::sync::Arc::new)
            .map_err(|v| v.to_string())
    };
    reproduce_with(&plan, jobs, quiet, &simulate)
}

/// [`reproduce`] of a [`Plan`], each simulation made by `simulate` (`wblab docs` shares the
/// runs several of its blocks need).
pub fn reproduce_with(plan: &Plan, jobs: usize, quiet: bool, simulate: &Simulate<'_>) -> Result<Vec<Row>, String> {
    let Plan {
        specs,
        keys,
        runs: jobs_list,
        factor,
    } = plan;
    let factor = *factor;
    // Each run gives the figures its specs need, or why it could not.
    let counter = crate::progress::Counter::new("reproduce", jobs_list.len(), quiet);
    let runs = wblab_sweep::run::each_parallel(
        jobs_list.len(),
        jobs,
        |i| {
            let (k, sc) = &jobs_list[i];
            let k = *k;
            let failed = |v: String| vec![format!("{}: {v}", keys[k].scenario)];
            let mut r = simulate(sc).map_err(failed)?;
            let longer = factor > 1 && !work_done(&r);
            if longer {
                let mut long = sc.clone();
                long.duration = long.duration.saturating_mul(factor);
                r = simulate(&long).map_err(failed)?;
            }
            let mut figures = Vec::new();
            let mut errors = Vec::new();
            for spec in specs.iter().filter(|s| RunKey::of(s) == keys[k]) {
                match metric(&r, &spec.metric) {
                    Ok(v) => figures.push((spec.metric.clone(), v)),
                    Err(e) => errors.push(format!("{}/{}: {e}", spec.report, spec.id)),
                }
            }
            if errors.is_empty() {
                Ok((figures, longer))
            } else {
                Err(errors)
            }
        },
        |n| counter.at(n),
    );
    counter.done();
    let mut values: BTreeMap<(usize, String), Vec<f64>> = BTreeMap::new();
    let mut went_on = vec![false; keys.len()];
    let mut errors = Vec::new();
    for ((k, _), r) in jobs_list.iter().zip(runs) {
        let k = *k;
        match r {
            Ok((figures, longer)) => {
                went_on[k] |= longer;
                for (m, v) in figures {
                    values.entry((k, m)).or_default().push(v);
                }
            }
            Err(e) => errors.extend(e),
        }
    }
    if let Some(e) = errors.into_iter().min() {
        return Err(e);
    }
    let mut rows: Vec<Row> = specs
        .iter()
        .map(|spec| {
            let k = keys.binary_search(&RunKey::of(spec)).expect("every spec's key was run");
            let mut v: Vec<f64> = values[&(k, spec.metric.clone())].iter().map(|x| x * spec.scale).collect();
            v.sort_by(f64::total_cmp);
            let wblab = (v[(v.len() - 1) / 2], v[0], v[v.len() - 1]);
            let ours = match spec.reported {
                Reported::Below { .. } => wblab.2,
                _ => wblab.0,
            };
            Row {
                spec: spec.clone(),
                wblab,
                ratio: ours / spec.reported.middle(),
                direction: None,
                longer: (factor > 1).then_some(went_on[k]),
            }
        })
        .collect();
    for i in 0..rows.len() {
        let Some(vs) = rows[i].spec.vs.clone() else { continue };
        // Checked in `load`; absent only from a plan of the fitted figures.
        let Some(base) = rows.iter().find(|r| r.spec.report == rows[i].spec.report && r.spec.id == vs) else {
            continue;
        };
        let reported = rows[i].spec.reported.middle() - base.spec.reported.middle();
        let ours = rows[i].wblab.0 - base.wblab.0;
        rows[i].direction = Some(reported.signum() == ours.signum());
    }
    Ok(rows)
}

fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn wblab_text(r: &Row) -> String {
    let (m, lo, hi) = r.wblab;
    if num(lo) == num(hi) {
        num(m)
    } else {
        format!("{} ({}–{})", num(m), num(lo), num(hi))
    }
}

fn mark(r: &Row) -> &'static str {
    match (r.within(), r.direction, r.spec.fitted.is_some()) {
        (_, Some(false), _) => "✗ direction",
        (true, _, false) => "✓",
        (true, _, true) => "✓ fitted",
        (false, _, _) if matches!(r.spec.reported, Reported::Below { .. }) => "✗ above",
        (false, _, _) => "✗ > 2×",
    }
}

/// The table's last column: what was fitted to a figure, and why one is off (a fitted figure
/// that misses says both).
fn remark(r: &Row) -> String {
    let note = r.spec.note.as_deref().filter(|_| !r.pass());
    match (&r.spec.fitted, note) {
        (Some(f), Some(n)) => format!("fitted: {f}; {n}"),
        (Some(f), None) => format!("fitted: {f}"),
        (None, n) => n.unwrap_or_default().to_string(),
    }
}

/// The Markdown table of one report's rows (what scenarios/README.md shows).
pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| figure | report | wblab (range over seeds) | unit | ratio | within 2×, direction | missing |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.2} | {} | {} |\n",
            r.spec.figure.replace('|', "\\|"),
            r.spec.reported.text(),
            wblab_text(r),
            r.spec.unit,
            r.ratio,
            mark(r),
            remark(r)
        ));
    }
    out
}

/// A figure's unit as it follows a value (" ms"; nothing for a count).
fn unit_suffix(spec: &Spec) -> String {
    if spec.unit.is_empty() {
        String::new()
    } else {
        format!(" {}", spec.unit)
    }
}

/// The long-run check as a Markdown table: each fitted figure in the shipped runs and in runs
/// `factor` times as long (`shipped` and `long` list the same figures in the same order).
pub fn markdown_long(shipped: &[Row], long: &[Row], factor: u64) -> String {
    let mut out = format!(
        "| report | figure | report | shipped run | {factor}× run | ratio | within 2× | why not |\n|---|---|---|---|---|---|---|---|\n"
    );
    for (s, l) in shipped.iter().zip(long) {
        let unit = unit_suffix(&s.spec);
        let long_value = if l.longer == Some(false) {
            "the same (its work ends within the shipped run)".to_string()
        } else {
            format!("{}{unit}", wblab_text(l))
        };
        let why = if l.pass() {
            String::new()
        } else {
            l.spec.long_note.clone().unwrap_or_default()
        };
        out.push_str(&format!(
            "| {} | {} | {}{unit} | {}{unit} | {long_value} | {:.2} | {} | {} |\n",
            s.spec.report,
            s.spec.figure.replace('|', "\\|"),
            s.spec.reported.text(),
            wblab_text(s),
            l.ratio,
            if l.pass() { "✓" } else { "✗" },
            why.replace('|', "\\|")
        ));
    }
    out
}

/// The terminal tables, one per report, and a count of the passes.
pub fn text(rows: &[Row], opts: &Options) -> String {
    let seeds = opts.seeds;
    let mut out = String::new();
    let mut reports: Vec<&str> = rows.iter().map(|r| r.spec.report.as_str()).collect();
    reports.dedup();
    for rep in reports {
        let rs: Vec<&Row> = rows.iter().filter(|r| r.spec.report == rep).collect();
        let w = rs.iter().map(|r| r.spec.figure.chars().count()).max().unwrap_or(6).max(6);
        out.push_str(&format!(
            "\n{rep}\n{:<w$}  {:>12}  {:>26}  {:>6}  mark\n",
            "figure", "report", "wblab (range)", "ratio"
        ));
        for r in rs {
            let unit = unit_suffix(&r.spec);
            let same = if r.longer == Some(false) { "  (=)" } else { "" };
            out.push_str(&format!(
                "{:<w$}  {:>12}  {:>26}  {:>6.2}  {}{same}\n",
                r.spec.figure,
                format!("{}{unit}", r.spec.reported.text()),
                format!("{}{unit}", wblab_text(r)),
                r.ratio,
                mark(r)
            ));
            if let (Some(n), false) = (&r.spec.long_note, r.longer.is_none() || r.pass()) {
                out.push_str(&format!("{:<w$}  why: {n}\n", ""));
            }
        }
    }
    let pass = rows.iter().filter(|r| r.pass()).count();
    let fitted = rows.iter().filter(|r| r.pass() && r.spec.fitted.is_some()).count();
    let of_them = if fitted > 0 {
        format!(", {fitted} of them fitted")
    } else {
        String::new()
    };
    out.push_str(&format!(
        "\n{pass} of {} figures within 2× of the report with the direction right ({seeds} seeds each{of_them})\n",
        rows.len()
    ));
    if opts.long > 1 {
        out.push_str(&format!(
            "runs {}× as long as shipped; (=): the work of the figure's runs ended within the shipped duration, so a longer run is the same run\n",
            opts.long
        ));
    }
    out
}

/// The command.
pub fn run(dir: &Path, reports: &[String], opts: &Options, jobs: usize, quiet: bool, json: bool) -> ExitCode {
    match reproduce(dir, reports, opts, jobs, quiet) {
        Ok(rows) => {
            if json {
                let v: Vec<serde_json::Value> = rows
                    .iter()
                    .map(|r| {
                        serde_json::json!({
                            "report": r.spec.report, "id": r.spec.id, "figure": r.spec.figure,
                            "reported": r.spec.reported.middle(), "unit": r.spec.unit,
                            "wblab_median": r.wblab.0, "wblab_min": r.wblab.1, "wblab_max": r.wblab.2,
                            "ratio": r.ratio, "within_2x": r.within(), "direction_right": r.direction,
                            "pass": r.pass(), "fitted": r.spec.fitted, "longer": r.longer,
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v).expect("json"));
            } else {
                print!("{}", text(&rows, opts));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            eprintln!(
                "  hint: the figures are in {}; `wblab reproduce` with no report runs them all",
                dir.join(REPORTS_FILE).display()
            );
            ExitCode::from(2)
        }
    }
}

/// The scenarios directory: `dir` if given, else `scenarios/` under the current directory.
pub fn scenarios_dir(dir: Option<PathBuf>) -> PathBuf {
    dir.unwrap_or_else(|| PathBuf::from("scenarios"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `load` of a figures file holding `text`, written to a scratch directory removed after.
    fn load_text(text: &str) -> Result<Vec<Spec>, String> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("wblab-reproduce-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("figures.toml");
        std::fs::write(&p, text).unwrap();
        let specs = load(&p);
        let _ = std::fs::remove_dir_all(&dir);
        specs
    }

    const OPTS: Options = Options {
        seeds: 3,
        fitted: false,
        long: 1,
    };

    const FIG: &str = "[[figure]]\nreport = \"r\"\nid = \"a\"\nfigure = \"f\"\nreported = [1, 3]\nunit = \"s\"\nscenario = \"x.toml\"\nmetric = \"dd.done_s\"\n";

    /// `op_share_above_<N>ms` over a `du`'s lstat calls beside a copy: all of them are slower
    /// than 0 ms, none slower than the run, and the share falls as N grows; a bad name is
    /// refused.
    #[test]
    fn the_share_of_slow_operations_falls_with_its_threshold() {
        use wblab_sim::config::JobConfig;
        use wblab_testkit::sim::{dd, hdd, run, task, SEC};
        let mut sc = Scenario::one_device("share", hdd(), 4 << 30, 2, 5 * SEC);
        sc.tasks.push(task("dd", "/mnt/sda/f", 0, dd(None)));
        let du = JobConfig::Du {
            files: 20_000,
            files_per_dir: 20,
            subdirs: 4,
            inode_size: 128,
            inode_spacing: 1,
            repeat: false,
        };
        sc.tasks.push(task("du", "/mnt/sda/tree", 0, du));
        let r = run(&sc);
        let share = |n: u64| metric(&r, &format!("du.op_share_above_{n}ms")).unwrap();
        assert_eq!(share(0), 100.0);
        assert_eq!(share(6_000), 0.0);
        let shares: Vec<f64> = [0, 1, 10, 100, 1000].into_iter().map(share).collect();
        assert!(shares.windows(2).all(|w| w[1] <= w[0]), "{shares:?}");
        assert!(shares.iter().any(|&s| s > 0.0 && s < 100.0), "cached and read lstats: {shares:?}");
        assert!(metric(&r, "du.op_share_above_10").unwrap_err().contains("op_share_above_<N>ms"));
    }

    #[test]
    fn a_range_is_judged_by_its_middle_and_a_bad_vs_is_refused() {
        let specs = load_text(FIG).unwrap();
        assert_eq!(specs[0].reported.middle(), 2.0);
        assert_eq!(specs[0].reported.text(), "1–3");
        let e = load_text(&format!("{FIG}vs = \"b\"\n")).unwrap_err();
        assert!(e.contains("names no figure"), "{e}");
        let e = load_text(&format!("{FIG}{FIG}")).unwrap_err();
        assert!(e.contains("two figures with id `a`"), "{e}");
        let e = load_text(&format!("{FIG}colour = 1\n")).unwrap_err();
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn a_bound_passes_only_when_every_seed_stays_under_it() {
        let spec = load_text(&FIG.replace("reported = [1, 3]", "reported = { below = 200 }"))
            .unwrap()
            .remove(0);
        assert_eq!(spec.reported.text(), "< 200");
        let row = |max: f64| Row {
            spec: spec.clone(),
            wblab: (max / 4.0, max / 8.0, max),
            ratio: max / 200.0,
            direction: None,
            longer: None,
        };
        assert!(row(200.0).pass() && row(1.0).pass(), "at or far under a bound is no miss");
        assert!(!row(201.0).pass() && !row(450.0).pass());
        assert_eq!(mark(&row(450.0)), "✗ above");
    }

    #[test]
    fn the_mark_needs_both_the_factor_and_the_direction() {
        let spec = load_text(FIG).unwrap().remove(0);
        let row = |ratio: f64, direction| Row {
            spec: spec.clone(),
            wblab: (ratio * 2.0, ratio * 2.0, ratio * 2.0),
            ratio,
            direction,
            longer: None,
        };
        assert!(row(1.9, None).pass() && row(0.51, Some(true)).pass());
        assert!(!row(2.1, None).pass() && !row(0.49, None).pass());
        assert!(!row(1.0, Some(false)).pass());
        assert_eq!(mark(&row(1.0, Some(false))), "✗ direction");
    }

    #[test]
    fn a_fitted_figure_says_so_in_its_mark_its_table_row_and_the_count() {
        let mut spec = load_text(&format!("{FIG}fitted = \"the disk's rate\"\n")).unwrap().remove(0);
        let row = |spec: &Spec, ratio: f64| Row {
            spec: spec.clone(),
            wblab: (ratio * 2.0, ratio * 2.0, ratio * 2.0),
            ratio,
            direction: None,
            longer: None,
        };
        let fitted = row(&spec, 1.1);
        assert_eq!(mark(&fitted), "✓ fitted");
        assert!(markdown(std::slice::from_ref(&fitted)).contains("fitted: the disk's rate"));
        assert!(text(std::slice::from_ref(&fitted), &OPTS)
            .contains("1 of 1 figures within 2× of the report with the direction right (3 seeds each, 1 of them fitted)"));
        // A fit that misses is still a miss, and its row says why beside what was fitted.
        assert_eq!(mark(&row(&spec, 3.0)), "✗ > 2×");
        spec.note = Some("the server changed".into());
        let missed = markdown(&[row(&spec, 3.0)]);
        assert!(missed.contains("fitted: the disk's rate; the server changed"), "{missed}");
        assert!(!markdown(&[row(&spec, 1.1)]).contains("the server changed"));
        spec.note = None;
        spec.fitted = None;
        assert_eq!(mark(&row(&spec, 1.1)), "✓");
        assert!(!text(&[row(&spec, 1.1)], &OPTS).contains("fitted"));
    }
}
