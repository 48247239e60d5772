//! `wblab compare`: results directories side by side — measured (`wblab measure`, which adds
//! `machine.json`) or simulated (`wblab run`). Every figure both the first run and another one
//! have is shown with its relative error against the first; latency distributions also get
//! DiskSim's *demerit figure*: the root-mean-square horizontal distance between the two CDFs
//! (here over 1000 evenly spaced quantiles), in ms and relative to the first run's mean.
//!
//! Reads only files of the results directory: summary.json, histograms.json (pause and
//! operation latency distributions; without it, pauses come from trace.txt by the pids in
//! summary.json and operation latency from summary.json's percentiles), timeseries.csv and
//! throttle.csv.

use crate::load::rundir::Csv;
use crate::load::trace_parse;
use crate::results::histograms::{parse_histograms, Hist};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// One results directory, loaded.
#[derive(Clone, Debug)]
pub struct RunData {
    pub dir: PathBuf,
    pub label: String,
    /// "measured" (has machine.json) or "simulated".
    pub kind: &'static str,
    pub summary: Value,
    /// Per task group: balance_dirty_pages pauses (> 0). None without histograms.json or trace.
    pub pauses: Option<BTreeMap<String, Dist>>,
    /// Per task group: operation latency, from histograms.json.
    pub ops: Option<BTreeMap<String, Dist>>,
    /// timeseries.csv rows by column name.
    pub timeseries: Vec<HashMap<String, String>>,
    /// throttle.csv rows by column name.
    pub throttle: Vec<HashMap<String, String>>,
    /// fio.json: real fio's output (measured) or the simulated one, where the run had fio jobs.
    pub fio: Option<Value>,
    /// The same scenario under other seeds (`wblab run --repeat`: `repeats/seed-<n>/`), in
    /// seed order; empty for a single run.
    pub repeats: Vec<RunData>,
}

/// A latency distribution, ms: raw sorted samples (from a trace) or a histogram (ns buckets).
#[derive(Clone, Debug)]
pub enum Dist {
    Samples(Vec<f64>),
    Hist(Hist),
}

/// Probabilities at which CDFs are compared.
const NQ: usize = 1000;

impl Dist {
    pub fn len(&self) -> usize {
        match self {
            Dist::Samples(v) => v.len(),
            Dist::Hist(h) => h.count as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value at probability q, ms.
    pub fn quantile(&self, q: f64) -> f64 {
        match self {
            Dist::Samples(v) => quantile(v, q),
            Dist::Hist(h) => {
                if q >= 1.0 {
                    h.max as f64 / 1e6
                } else {
                    h.quantile(q) as f64 / 1e6
                }
            }
        }
    }

    pub fn mean(&self) -> f64 {
        match self {
            Dist::Samples(v) => v.iter().sum::<f64>() / v.len().max(1) as f64,
            Dist::Hist(h) => h.sum as f64 / h.count.max(1) as f64 / 1e6,
        }
    }

    /// The quantile function at NQ evenly spaced probabilities.
    pub fn qvec(&self) -> Vec<f64> {
        (0..NQ).map(|i| self.quantile((i as f64 + 0.5) / NQ as f64)).collect()
    }
}

/// RMS of the difference of two quantile vectors.
fn rms(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len()).max(1);
    (a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() / n as f64).sqrt()
}

/// An optional file's text: `None` when it is not there; an error naming it when it is there
/// but cannot be read (not a regular file, too large, not UTF-8).
fn read_optional(p: &Path) -> io::Result<Option<String>> {
    match crate::load::file::read_text(p) {
        Ok(t) => Ok(Some(t)),
        Err(e) if crate::load::file::is_missing(&e) => Ok(None),
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", p.display()))),
    }
}

fn bad_data(p: &Path, e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", p.display()))
}

/// A CSV's rows by column name, through [`Csv::parse`] (so files of older builds read with
/// today's column names and units); a missing file has none, one that does not read is an
/// error naming it.
fn read_csv(p: &Path) -> io::Result<Vec<HashMap<String, String>>> {
    let Some(text) = read_optional(p)? else {
        return Ok(Vec::new());
    };
    let c = Csv::parse(&text).map_err(|e| bad_data(p, e))?;
    Ok(c.rows.into_iter().map(|r| c.header.iter().cloned().zip(r).collect()).collect())
}

/// The group a task belongs to: its `[[task]]` name.
fn task_groups(summary: &Value) -> HashMap<u64, String> {
    summary["tasks"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| Some((t["pid"].as_u64()?, t["name"].as_str()?.to_string())))
                .filter(|(pid, _)| *pid != 0)
                .collect()
        })
        .unwrap_or_default()
}

/// Load a results directory, with the other seeds' runs of a `--repeat`.
pub fn load(dir: &Path) -> io::Result<RunData> {
    let mut r = load_one(dir)?;
    let rep = dir.join(crate::REPEATS_DIR);
    if let Ok(entries) = std::fs::read_dir(&rep) {
        let mut seeds: Vec<(u64, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                name.strip_prefix("seed-").and_then(|n| n.parse().ok()).map(|n| (n, e.path()))
            })
            .collect();
        seeds.sort();
        for (_, d) in seeds {
            r.repeats.push(load_one(&d)?);
        }
    }
    Ok(r)
}

/// Load one results directory, without looking for repeats.
fn load_one(dir: &Path) -> io::Result<RunData> {
    let summary = crate::load::rundir::load_summary(dir).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let groups = task_groups(&summary);
    // Without histograms.json (an older build), the pauses come from the trace; a
    // histograms.json that does not read is an error, not a reason to guess.
    let hp = dir.join(crate::HISTOGRAMS_FILE);
    let hists = read_optional(&hp)?
        .map(|t| parse_histograms(&t).map_err(|e| bad_data(&hp, e.trim_start_matches("histograms.json: "))))
        .transpose()?;
    let (pauses, ops) = match hists {
        Some(h) => {
            let mut p: BTreeMap<String, Dist> = BTreeMap::new();
            let mut o: BTreeMap<String, Dist> = BTreeMap::new();
            for t in &h.tasks {
                for (m, hist) in [(&mut p, &t.pause), (&mut o, &t.op_latency)] {
                    if hist.is_empty() {
                        continue;
                    }
                    match m.entry(t.name.clone()).or_insert_with(|| Dist::Hist(Hist::default())) {
                        Dist::Hist(acc) => acc.merge(hist),
                        Dist::Samples(_) => {}
                    }
                }
            }
            (Some(p), Some(o))
        }
        None => {
            let p = read_optional(&dir.join(crate::TRACE_FILE))?.map(|t| {
                let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
                for e in trace_parse::parse_lines(&t) {
                    if e.event != "balance_dirty_pages" {
                        continue;
                    }
                    let Some(g) = groups.get(&(e.pid as u64)) else { continue };
                    if let Some(p) = e.get_i64("pause").filter(|&p| p > 0) {
                        m.entry(g.clone()).or_default().push(p as f64);
                    }
                }
                m.into_iter()
                    .map(|(k, mut v)| {
                        v.sort_by(f64::total_cmp);
                        (k, Dist::Samples(v))
                    })
                    .collect()
            });
            (p, None)
        }
    };
    let label = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| dir.display().to_string());
    Ok(RunData {
        dir: dir.to_path_buf(),
        label,
        kind: if dir.join("machine.json").exists() {
            "measured"
        } else {
            "simulated"
        },
        summary,
        pauses,
        ops,
        timeseries: read_csv(&dir.join(crate::TIMESERIES_FILE))?,
        throttle: read_csv(&dir.join(crate::THROTTLE_FILE))?,
        // Real fio may print lines before its JSON.
        fio: read_optional(&dir.join(crate::results::fio::FIO_JSON_FILE))?
            .and_then(|t| t.find('{').and_then(|i| serde_json::from_str(&t[i..]).ok())),
        repeats: Vec::new(),
    })
}

/// fio's own figures, per job and direction: bandwidth, IOPS and completion latency p50/p99
/// (fio's names and units), and the fsync/fdatasync latency.
fn fio_figures(fio: &Value, out: &mut Vec<(String, &'static str, f64)>) {
    for j in fio["jobs"].as_array().into_iter().flatten() {
        let name = j["jobname"].as_str().unwrap_or("?");
        for d in ["read", "write"] {
            let x = &j[d];
            if x["total_ios"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            let pct = |p: &str| x["clat_ns"]["percentile"][p].as_f64().map(|v| v / 1e3);
            if let Some(v) = f(&x["bw"]) {
                out.push((format!("fio {name} {d}: bw"), "KiB/s", v));
            }
            if let Some(v) = f(&x["iops"]) {
                out.push((format!("fio {name} {d}: iops"), "IOPS", v));
            }
            for (p, label) in [("50.000000", "clat p50"), ("99.000000", "clat p99")] {
                if let Some(v) = pct(p) {
                    out.push((format!("fio {name} {d}: {label}"), "µs", v));
                }
            }
        }
        let s = &j["sync"]["lat_ns"];
        if s["N"].as_u64().unwrap_or(0) > 0 {
            for (p, label) in [("50.000000", "sync p50"), ("99.000000", "sync p99")] {
                if let Some(v) = s["percentile"][p].as_f64() {
                    out.push((format!("fio {name}: {label}"), "µs", v / 1e3));
                }
            }
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    pub name: String,
    pub unit: &'static str,
    pub values: Vec<Option<f64>>,
    /// (value − first) / first, for every run (None for the first and where undefined).
    pub rel_err: Vec<Option<f64>>,
    /// Per run with repeats (`--repeat`): the figure's lowest and highest value over its seeds.
    pub range: Vec<Option<(f64, f64)>>,
    /// Per run after the first: whether its difference from the first exceeds the run-to-run
    /// noise — false when the two runs' ranges overlap (or one run's value falls inside the
    /// other's range); None when neither run has repeats.
    pub significant: Vec<Option<bool>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Demerit {
    pub name: String,
    /// Where the distribution came from: "histograms" (histograms.json), "trace" (every
    /// balance_dirty_pages event), "percentiles" (summary.json's p50..max only).
    pub source: &'static str,
    /// RMS horizontal distance to the first run's CDF, ms (None for the first run).
    pub demerit_ms: Vec<Option<f64>>,
    /// demerit / the first run's mean.
    pub relative: Vec<Option<f64>>,
    pub samples: Vec<usize>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub label: String,
    pub kind: &'static str,
    pub dir: String,
    /// A measured run's device keys the kernel refused, as "loop64 queue/scheduler: bfq
    /// refused, ran none": that run is another experiment than its scenario file says.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// A measured run's emulated devices and how closely they kept their model's times.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub emulated: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub runs: Vec<RunInfo>,
    pub figures: Vec<Figure>,
    pub demerits: Vec<Demerit>,
}

/// Empirical quantile of sorted data (linear interpolation between order statistics).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let i = pos.floor() as usize;
    let f = pos - i as f64;
    if i + 1 < sorted.len() {
        sorted[i] * (1.0 - f) + sorted[i + 1] * f
    } else {
        sorted[i]
    }
}

/// DiskSim's demerit figure: RMS of the horizontal distance between two CDFs, measured at
/// 1000 evenly spaced probabilities.
pub fn demerit(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    Some(rms(&Dist::Samples(a).qvec(), &Dist::Samples(b).qvec()))
}

/// A quantile function known only at a few probabilities, sampled at 1000 points in
/// [first probability, 1]: a stand-in distribution for summaries without raw samples.
fn from_percentiles(points: &[(f64, f64)]) -> Vec<f64> {
    let (lo, hi) = (points[0].0, 1.0);
    (0..NQ)
        .map(|i| {
            let q = lo + (hi - lo) * (i as f64 + 0.5) / NQ as f64;
            let k = points.iter().position(|&(p, _)| p >= q).unwrap_or(points.len() - 1).max(1);
            let ((q0, v0), (q1, v1)) = (points[k - 1], points[k]);
            if q1 <= q0 {
                v1
            } else {
                v0 + (v1 - v0) * ((q - q0) / (q1 - q0)).clamp(0.0, 1.0)
            }
        })
        .collect()
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// The figures of one run, in display order: name → (unit, value).
fn figures_of(r: &RunData) -> Vec<(String, &'static str, f64)> {
    let mut out: Vec<(String, &'static str, f64)> = Vec::new();
    if let Some(fio) = &r.fio {
        fio_figures(fio, &mut out);
    }
    let s = &r.summary;
    if let Some(v) = f(&s["sim_seconds"]) {
        out.push(("run: seconds".into(), "s", v));
    }
    // Task groups, in order of first appearance.
    let tasks = s["tasks"].as_array().cloned().unwrap_or_default();
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<&Value>> = HashMap::new();
    for t in &tasks {
        let name = t["name"].as_str().unwrap_or("?").to_string();
        if !groups.contains_key(&name) {
            order.push(name.clone());
        }
        groups.entry(name).or_default().push(t);
    }
    for g in &order {
        let ts = &groups[g];
        let sum = |k: &str| ts.iter().filter_map(|t| f(&t[k])).sum::<f64>();
        let mean_of = |get: &dyn Fn(&Value) -> Option<f64>| {
            let v: Vec<f64> = ts.iter().filter_map(|t| get(t)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let label = if ts.len() > 1 { format!("{g} (×{})", ts.len()) } else { g.clone() };
        let wr = sum("bytes_written");
        let rd = sum("bytes_read");
        if wr > 0.0 {
            out.push((format!("{label}: MB written"), "MB", wr / 1e6));
        }
        if rd > 0.0 {
            out.push((format!("{label}: MB read"), "MB", rd / 1e6));
        }
        out.push((format!("{label}: MB/s"), "MB/s", sum("throughput_mb_s")));
        out.push((format!("{label}: steady MB/s"), "MB/s", sum("steady_mb_s")));
        let pause_count: f64 = ts.iter().filter_map(|t| f(&t["pauses"]["count"])).sum();
        out.push((format!("{label}: pauses"), "count", pause_count));
        // Pause percentiles: from every traced pause of the group, else the instances' mean.
        let dist = r.pauses.as_ref().and_then(|m| m.get(g)).filter(|d| !d.is_empty());
        for (q, k) in [(0.5, "p50_ms"), (0.9, "p90_ms"), (0.99, "p99_ms"), (1.0, "max_ms")] {
            let v = match dist {
                Some(d) => Some(d.quantile(q)),
                None => mean_of(&|t: &Value| f(&t["pauses"][k]).filter(|_| f(&t["pauses"]["count"]).unwrap_or(0.0) > 0.0)),
            };
            if let Some(v) = v {
                out.push((format!("{label}: pause {}", k.trim_end_matches("_ms")), "ms", v));
            }
        }
        for k in ["p50", "p90", "p99", "max", "mean"] {
            let v = mean_of(&|t: &Value| f(&t["op_latency_ms"][k]).filter(|_| f(&t["op_latency_ms"]["count"]).unwrap_or(0.0) > 0.0));
            if let Some(v) = v {
                out.push((format!("{label}: op latency {k}"), "ms", v));
            }
        }
    }
    for d in s["devices"].as_array().cloned().unwrap_or_default() {
        let n = d["name"].as_str().unwrap_or("?");
        if let Some(v) = f(&d["bytes_written"]) {
            out.push((format!("device {n}: MB written"), "MB", v / 1e6));
        }
        if let Some(v) = f(&d["bytes_read"]).filter(|&v| v > 0.0) {
            out.push((format!("device {n}: MB read"), "MB", v / 1e6));
        }
        if let Some(v) = f(&d["util"]) {
            out.push((format!("device {n}: util"), "frac", v));
        }
        let j = &d["journal"];
        if let Some(v) = f(&j["commits"]) {
            out.push((format!("device {n}: journal commits"), "n", v));
        }
        if let Some(v) = f(&j["commit_mean_ms"]) {
            out.push((format!("device {n}: journal commit mean"), "ms", v));
        }
        if let Some(v) = f(&j["commit_max_ms"]) {
            out.push((format!("device {n}: journal commit max"), "ms", v));
        }
    }
    // Pressure: the share of the run each group was stalled (summary.json's `pressure`).
    for g in s["pressure"].as_array().cloned().unwrap_or_default() {
        let name = g["group"].as_str().unwrap_or("?");
        for (res, kind) in [("io", "some"), ("io", "full"), ("memory", "some"), ("memory", "full")] {
            if let Some(v) = f(&g[res][kind]["stalled_pct"]) {
                out.push((format!("pressure {name}: {res} {kind}"), "%", v));
            }
        }
    }
    // vmstat over the second half of the run.
    let dur = f(&s["sim_seconds"]).unwrap_or(0.0);
    let half: Vec<&HashMap<String, String>> = r
        .timeseries
        .iter()
        .filter(|row| row.get("t_s").and_then(|t| t.parse::<f64>().ok()).is_some_and(|t| t >= dur / 2.0))
        .collect();
    let mean_col = |rows: &[&HashMap<String, String>], c: &str| {
        let v: Vec<f64> = rows.iter().filter_map(|r| r.get(c)?.parse().ok()).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let mib = 4096.0 / (1u64 << 20) as f64;
    for (c, name) in [
        ("nr_dirty_pages", "nr_dirty"),
        ("nr_writeback_pages", "nr_writeback"),
        ("dirty_thresh_pages", "dirty_thresh"),
    ] {
        if let Some(v) = mean_col(&half, c) {
            out.push((format!("vmstat 2nd half: {name}"), "MiB", v * mib));
        }
    }
    // Throttling state per device: the mean of the second half and the last sample.
    let mut devs: Vec<String> = Vec::new();
    for row in &r.throttle {
        if let Some(d) = row.get("device") {
            if !devs.contains(d) {
                devs.push(d.clone());
            }
        }
    }
    for d in devs {
        let rows: Vec<&HashMap<String, String>> = r.throttle.iter().filter(|row| row.get("device") == Some(&d)).collect();
        let rows_half: Vec<&HashMap<String, String>> = rows
            .iter()
            .copied()
            .filter(|row| row.get("t_s").and_then(|t| t.parse::<f64>().ok()).is_some_and(|t| t >= dur / 2.0))
            .collect();
        let mib_s = 1.0 / 1024.0; // KiB/s → MiB/s
        for (c, name) in [("write_bw_kib_s", "write_bw"), ("dirty_ratelimit_kib_s", "dirty_ratelimit")] {
            if let Some(v) = mean_col(&rows_half, c) {
                out.push((format!("throttle {d} 2nd half: {name}"), "MiB/s", v * mib_s));
            }
            if let Some(v) = rows.last().and_then(|row| row.get(c)?.parse::<f64>().ok()) {
                out.push((format!("throttle {d} at end: {name}"), "MiB/s", v * mib_s));
            }
        }
        if let Some(v) = mean_col(&rows_half, "dirty_pages") {
            out.push((format!("throttle {d} 2nd half: dirty (bdp)"), "MiB", v * mib));
        }
    }
    out
}

/// The op-latency percentiles of a task group (instance means), as (probability, ms).
fn op_points(r: &RunData, group: &str) -> Option<Vec<(f64, f64)>> {
    let ts: Vec<&Value> = r.summary["tasks"]
        .as_array()?
        .iter()
        .filter(|t| t["name"].as_str() == Some(group) && f(&t["op_latency_ms"]["count"]).unwrap_or(0.0) > 0.0)
        .collect();
    if ts.is_empty() {
        return None;
    }
    let m = |k: &str| ts.iter().filter_map(|t| f(&t["op_latency_ms"][k])).sum::<f64>() / ts.len() as f64;
    Some(vec![(0.5, m("p50")), (0.9, m("p90")), (0.99, m("p99")), (1.0, m("max"))])
}

/// A run's figures: (name, unit, value).
type Figures = Vec<(String, &'static str, f64)>;

pub fn compare(runs: &[RunData]) -> Comparison {
    let per_run: Vec<Figures> = runs.iter().map(figures_of).collect();
    let per_repeat: Vec<Vec<Figures>> = runs.iter().map(|r| r.repeats.iter().map(figures_of).collect()).collect();
    let mut figures = Vec::new();
    // Every figure any run has, the first run's in its order, then each later run's new ones:
    // a task group or device in one run only is shown, with `-` where a run lacks it.
    let mut names: Vec<(&String, &'static str)> = Vec::new();
    for fs in &per_run {
        for (name, unit, _) in fs {
            if !names.iter().any(|(n, _)| *n == name) {
                names.push((name, unit));
            }
        }
    }
    for (name, unit) in names {
        let values: Vec<Option<f64>> = per_run
            .iter()
            .map(|fs| fs.iter().find(|(n, _, _)| n == name).map(|x| x.2))
            .collect();
        let v0 = values[0];
        let rel_err = values
            .iter()
            .enumerate()
            .map(|(i, v)| match (i, v, v0) {
                (0, _, _) | (_, None, _) | (_, _, None) => None,
                (_, Some(x), Some(0.0)) => (*x == 0.0).then_some(0.0),
                (_, Some(x), Some(v0)) => Some((x - v0) / v0),
            })
            .collect();
        let range: Vec<Option<(f64, f64)>> = values
            .iter()
            .zip(&per_repeat)
            .map(|(v, reps)| {
                let v = (*v)?;
                if reps.is_empty() {
                    return None;
                }
                let all = reps.iter().filter_map(|fs| fs.iter().find(|(n, _, _)| n == name).map(|x| x.2));
                Some(all.fold((v, v), |(lo, hi), x| (lo.min(x), hi.max(x))))
            })
            .collect();
        let significant = (0..values.len())
            .map(|i| {
                if i == 0 {
                    return None;
                }
                let (a, b) = (values[0]?, values[i]?);
                let ra = range[0].unwrap_or((a, a));
                let rb = range[i].unwrap_or((b, b));
                if range[0].is_none() && range[i].is_none() {
                    return None;
                }
                Some(ra.1 < rb.0 || rb.1 < ra.0)
            })
            .collect();
        figures.push(Figure {
            name: name.clone(),
            unit,
            values,
            rel_err,
            range,
            significant,
        });
    }
    let mut demerits = Vec::new();
    if let Some(r0) = runs.first() {
        for (what, get) in [
            (
                "pauses",
                (|r: &RunData| r.pauses.as_ref()) as fn(&RunData) -> Option<&BTreeMap<String, Dist>>,
            ),
            ("op latency", |r: &RunData| r.ops.as_ref()),
        ] {
            let Some(m0) = get(r0) else { continue };
            for (g, a) in m0.iter().filter(|(_, d)| !d.is_empty()) {
                let qa = a.qvec();
                let mean = a.mean();
                let mut dm = Vec::new();
                let mut samples = Vec::new();
                for (i, r) in runs.iter().enumerate() {
                    let b = get(r).and_then(|m| m.get(g)).filter(|d| !d.is_empty());
                    samples.push(b.map_or(0, Dist::len));
                    dm.push(if i == 0 { None } else { b.map(|b| rms(&qa, &b.qvec())) });
                }
                if dm.iter().skip(1).any(Option::is_some) {
                    let relative = dm.iter().map(|d| d.map(|d| d / mean.max(1e-9))).collect();
                    let source = match a {
                        Dist::Hist(_) => "histograms",
                        Dist::Samples(_) => "trace",
                    };
                    demerits.push(Demerit {
                        name: format!("{g}: {what}"),
                        source,
                        demerit_ms: dm,
                        relative,
                        samples,
                    });
                }
            }
        }
        // Op latency without histograms.json: only percentiles, so the upper half.
        if r0.ops.is_none() {
            let groups: Vec<String> = r0.summary["tasks"]
                .as_array()
                .map(|ts| {
                    let mut g: Vec<String> = Vec::new();
                    for t in ts {
                        if let Some(n) = t["name"].as_str() {
                            if !g.iter().any(|x| x == n) {
                                g.push(n.to_string());
                            }
                        }
                    }
                    g
                })
                .unwrap_or_default();
            for g in groups {
                let Some(a) = op_points(r0, &g) else { continue };
                let qa = from_percentiles(&a);
                let mean = qa.iter().sum::<f64>() / qa.len() as f64;
                let mut dm = Vec::new();
                let mut samples = Vec::new();
                for (i, r) in runs.iter().enumerate() {
                    let b = op_points(r, &g);
                    samples.push(b.as_ref().map_or(0, |_| 4));
                    dm.push(if i == 0 { None } else { b.map(|b| rms(&qa, &from_percentiles(&b))) });
                }
                if dm.iter().skip(1).any(Option::is_some) {
                    let relative = dm.iter().map(|d| d.map(|d| d / mean.max(1e-9))).collect();
                    demerits.push(Demerit {
                        name: format!("{g}: op latency (p50..max)"),
                        source: "percentiles",
                        demerit_ms: dm,
                        relative,
                        samples,
                    });
                }
            }
        }
    }
    Comparison {
        runs: runs
            .iter()
            .map(|r| RunInfo {
                label: r.label.clone(),
                kind: r.kind,
                dir: r.dir.display().to_string(),
                refused: crate::load::refused::refused_in(&r.dir)
                    .into_iter()
                    .map(|x| format!("{} {}: {} refused, ran {}", x.device, x.key, x.wanted, x.effective))
                    .collect(),
                emulated: crate::load::emulated::emulated_in(&r.dir).iter().map(|e| e.describe()).collect(),
            })
            .collect(),
        figures,
        demerits,
    }
}

pub fn num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

pub fn pct(e: f64) -> String {
    format!("{:+.1}%", e * 100.0)
}

/// The terminal table.
/// The legend of the `n.s.` mark, where some run has repeats.
pub const NOT_SIGNIFICANT: &str = "n.s.: not significant, the change lies within the run-to-run range of the repeats (wblab run --repeat)";

pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let letters: Vec<String> = (0..c.runs.len())
        .map(|i| {
            if i < 26 {
                ((b'A' + i as u8) as char).to_string()
            } else {
                format!("R{i}")
            }
        })
        .collect();
    for (l, r) in letters.iter().zip(&c.runs) {
        let _ = writeln!(out, "{l} = {} ({}, {})", r.label, r.kind, r.dir);
        for x in &r.emulated {
            let _ = writeln!(out, "  {x}");
        }
        for x in &r.refused {
            let _ = writeln!(
                out,
                "  the kernel did not take a key of {l}'s scenario: {x}; a simulation of the file as written is another experiment"
            );
        }
    }
    if c.figures.iter().any(|f| f.range.iter().any(Option::is_some)) {
        out.push_str(NOT_SIGNIFICANT);
        out.push('\n');
    }
    out.push('\n');
    let mut header = vec!["figure".to_string(), "unit".to_string()];
    for (i, l) in letters.iter().enumerate() {
        header.push(l.clone());
        if i > 0 {
            header.push(format!("err {l}"));
        }
    }
    let mut rows = vec![header];
    for fig in &c.figures {
        let mut row = vec![fig.name.clone(), fig.unit.to_string()];
        for (i, v) in fig.values.iter().enumerate() {
            row.push(v.map_or("-".into(), num));
            if i > 0 {
                let e = fig.rel_err[i].map_or("-".into(), pct);
                row.push(if fig.significant[i] == Some(false) {
                    format!("{e} n.s.")
                } else {
                    e
                });
            }
        }
        rows.push(row);
    }
    table(&mut out, &rows);
    if !c.demerits.is_empty() {
        out.push_str("\ndemerit: RMS horizontal distance between the CDFs, ms (and relative to A's mean)\n");
        let mut rows = vec![{
            let mut h = vec!["distribution".to_string(), "source".to_string()];
            h.extend(letters.iter().skip(1).cloned());
            h
        }];
        for d in &c.demerits {
            let mut row = vec![format!("{} [n={}]", d.name, d.samples[0]), d.source.to_string()];
            for i in 1..c.runs.len() {
                row.push(match (d.demerit_ms[i], d.relative[i]) {
                    (Some(v), Some(r)) => format!("{} ({:.0}%)", num(v), r * 100.0),
                    _ => "-".into(),
                });
            }
            rows.push(row);
        }
        table(&mut out, &rows);
    }
    out
}

fn table(out: &mut String, rows: &[Vec<String>]) {
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..ncol)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let pad = width[c] - cell.chars().count();
            if c == 0 {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad));
            } else {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demerit_of_a_shift_is_the_shift() {
        let a: Vec<f64> = (0..100).map(f64::from).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 5.0).collect();
        assert!((demerit(&a, &b).unwrap() - 5.0).abs() < 1e-9);
        assert_eq!(demerit(&a, &a), Some(0.0));
        assert_eq!(demerit(&a, &[]), None);
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [0.0, 10.0];
        assert_eq!(quantile(&v, 0.5), 5.0);
        assert_eq!(quantile(&v, 1.0), 10.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn percentile_distribution_is_monotone() {
        let q = from_percentiles(&[(0.5, 1.0), (0.9, 2.0), (0.99, 10.0), (1.0, 20.0)]);
        assert!(q.windows(2).all(|w| w[0] <= w[1]));
        assert!(q[0] >= 1.0 && *q.last().unwrap() <= 20.0);
    }
}
