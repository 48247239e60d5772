//! Reading a results directory back: summary.json, timeseries.csv, throttle.csv, trace.txt
//! (through [`crate::load::trace_parse`], the parser `measure` uses) and histograms.json. Reports
//! and terminal views are built from this, never from a `RunResult`, so measured and
//! simulated runs are drawn the same way.

use crate::load::file;
use crate::load::trace_parse::{leading_int, leading_u64, parse_line_ref};
use crate::results::csv::LEGACY_COLUMNS;
use crate::results::histograms::{parse_histograms, Histograms};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use wblab_sim::metrics::trace::{DevT, TraceEvent, TraceRecord};

/// A CSV file: header names and rows of cells.
#[derive(Clone, Debug, Default)]
pub struct Csv {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Csv {
    /// A CSV as `wblab run` writes it: a header, then rows of as many fields; a row of another
    /// width is an error naming its line (the file was cut or is not ours).
    pub fn parse(text: &str) -> Result<Csv, String> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let split = |l: &str| -> Vec<String> { l.split(',').map(|s| s.trim().to_string()).collect() };
        let header: Vec<String> = lines.next().map(|(_, h)| split(h)).unwrap_or_default();
        let mut rows = Vec::new();
        for (i, l) in lines {
            let row = split(l);
            if row.len() != header.len() {
                return Err(format!(
                    "line {}: {} fields where the header has {}",
                    i + 1,
                    row.len(),
                    header.len()
                ));
            }
            rows.push(row);
        }
        let mut c = Csv { header, rows };
        c.upgrade_legacy();
        Ok(c)
    }

    /// Files written before every column named its unit keep loading: their columns get the
    /// new names and values in the new units ([`LEGACY_COLUMNS`]), so readers know one naming.
    fn upgrade_legacy(&mut self) {
        let legacy = self
            .header
            .iter()
            .any(|h| h != "pos_ratio" && LEGACY_COLUMNS.iter().any(|(old, _, _)| old == h));
        if !legacy {
            return;
        }
        for c in 0..self.header.len() {
            let h = &self.header[c];
            if let Some(&(_, new, factor)) = LEGACY_COLUMNS.iter().find(|(old, _, _)| old == h) {
                self.header[c] = new.to_string();
                if factor != 1.0 {
                    for r in &mut self.rows {
                        if let Ok(v) = r[c].parse::<f64>() {
                            r[c] = crate::num::round3(v * factor).to_string();
                        }
                    }
                }
            } else if h.ends_with("_util") {
                // A device's %util: percent already.
                self.header[c] = format!("{h}_pct");
            }
        }
    }

    /// The CSV as text again: the header, then the rows.
    pub fn to_text(&self) -> String {
        let mut out = self.header.join(",");
        out.push('\n');
        for r in &self.rows {
            out.push_str(&r.join(","));
            out.push('\n');
        }
        out
    }

    pub fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The values of column `c`, each once, in the order they first appear (the devices of
    /// throttle.csv, the task groups of latency.csv).
    pub fn distinct(&self, c: usize) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !v.contains(&r[c].as_str()) {
                v.push(&r[c]);
            }
        }
        v
    }

    /// The column as numbers (unparsable cells are NaN); `None` if there is no such column.
    pub fn f64s(&self, name: &str) -> Option<Vec<f64>> {
        let c = self.col(name)?;
        Some(
            self.rows
                .iter()
                .map(|r| r.get(c).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN))
                .collect(),
        )
    }

    /// Rows whose column `key` equals `value`.
    pub fn filter(&self, key: &str, value: &str) -> Csv {
        let Some(c) = self.col(key) else {
            return Csv {
                header: self.header.clone(),
                rows: Vec::new(),
            };
        };
        Csv {
            header: self.header.clone(),
            rows: self
                .rows
                .iter()
                .filter(|r| r.get(c).map(String::as_str) == Some(value))
                .cloned()
                .collect(),
        }
    }

    /// (x, y) pairs of two numeric columns, scaled.
    pub fn xy(&self, x: &str, y: &str, scale: f64) -> Vec<(f64, f64)> {
        match (self.f64s(x), self.f64s(y)) {
            // Empty cells (a quantity the run's kernel did not have) are left out.
            (Some(xs), Some(ys)) => xs
                .into_iter()
                .zip(ys)
                .filter(|(_, b)| b.is_finite())
                .map(|(a, b)| (a, b * scale))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// balance_dirty_pages latency figures from summary.json, ms.
#[derive(Clone, Debug, Default)]
pub struct Lat {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    /// Mean (op latency) or total (pauses), ms.
    pub mean_or_total: f64,
}

#[derive(Clone, Debug, Default)]
pub struct TaskInfo {
    pub name: String,
    pub instance: u32,
    pub job: String,
    pub pid: u32,
    pub device: String,
    pub bytes_written: u64,
    pub bytes_read: u64,
    pub throughput_mb_s: f64,
    pub pauses: Lat,
    pub op: Lat,
    /// Allocations that waited for memory, and their time, ms (0 where not recorded).
    pub reclaim_waits: u64,
    pub reclaim_wait_ms: f64,
    /// Where its sync calls waited (simulated runs; `None` where not recorded).
    pub syncs: Option<SyncSplit>,
}

/// A task's sync calls (fsync, fdatasync, sync, O_SYNC writes' syncs): how many, and the
/// time they waited for their data, the journal commit and the cache flush, ms — summed,
/// and of the slowest call.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SyncSplit {
    pub calls: u64,
    pub total_ms: [f64; 3],
    pub worst_ms: [f64; 3],
}

impl SyncSplit {
    /// From a run in memory.
    pub fn of(s: &wblab_sim::metrics::SyncParts) -> Option<SyncSplit> {
        (s.calls > 0).then(|| SyncSplit {
            calls: s.calls,
            total_ms: s.total.map(|v| v as f64 / 1e6),
            worst_ms: s.worst.map(|v| v as f64 / 1e6),
        })
    }

    /// From summary.json's `syncs` object.
    fn from_json(v: &Value) -> Option<SyncSplit> {
        let calls = v.get("calls")?.as_u64()?;
        let three =
            |o: &Value| -> [f64; 3] { ["data_ms", "commit_ms", "flush_ms"].map(|k| o.get(k).and_then(Value::as_f64).unwrap_or(0.0)) };
        Some(SyncSplit {
            calls,
            total_ms: three(v),
            worst_ms: three(v.get("worst").unwrap_or(&Value::Null)),
        })
    }

    /// The group's: sums, and the slowest of its tasks' slowest calls.
    pub fn merge(a: Option<SyncSplit>, b: Option<SyncSplit>) -> Option<SyncSplit> {
        match (a, b) {
            (Some(x), Some(y)) => Some(SyncSplit {
                calls: x.calls + y.calls,
                total_ms: [0, 1, 2].map(|k| x.total_ms[k] + y.total_ms[k]),
                worst_ms: if y.worst_ms.iter().sum::<f64>() > x.worst_ms.iter().sum::<f64>() {
                    y.worst_ms
                } else {
                    x.worst_ms
                },
            }),
            (x, None) => x,
            (None, y) => y,
        }
    }
}

impl TaskInfo {
    /// "dd#0", as in the terminal table.
    pub fn label(&self) -> String {
        format!("{}#{}", self.name, self.instance)
    }
}

#[derive(Clone, Debug, Default)]
pub struct DeviceInfo {
    pub name: String,
    pub model: String,
    /// "8:0", as writeback tracepoints print the bdi.
    pub devt: String,
    pub bytes_written: u64,
    pub bytes_read: u64,
    pub util: f64,
    pub requests: u64,
    pub latency: Lat,
}

/// One `writeback:balance_dirty_pages` event.
#[derive(Clone, Debug, Default)]
pub struct BdpEvent {
    /// Seconds from the start of the run.
    pub t: f64,
    pub pid: u32,
    /// Shared among the events of one bdi.
    pub bdi: std::sync::Arc<str>,
    pub pause_ms: i64,
    pub paused_ms: i64,
    pub dirtied: u64,
    /// KB/s, as printed.
    pub task_ratelimit: u64,
}

/// One `writeback:global_dirty_state` event, pages.
#[derive(Clone, Debug, Default)]
pub struct GdsEvent {
    pub t: f64,
    pub dirty: u64,
    pub writeback: u64,
    pub bg_thresh: u64,
    pub thresh: u64,
    pub limit: u64,
}

/// What the reports need from trace.txt.
#[derive(Clone, Debug, Default)]
pub struct TraceData {
    pub present: bool,
    pub events: u64,
    pub bdp: Vec<BdpEvent>,
    pub gds: Vec<GdsEvent>,
    /// Whether block_rq_issue/complete events were recorded (with the rest of the block trace).
    pub has_block: bool,
    /// Per device ("8:0"): busy fraction (0..1) of each second, from the block events.
    pub busy: Vec<(String, Vec<f64>)>,
    /// Seconds subtracted from trace timestamps (non-zero for traces of real machines, whose
    /// clock started at boot).
    pub t0: f64,
}

/// A loaded results directory.
#[derive(Clone, Debug)]
pub struct RunDir {
    pub dir: PathBuf,
    pub summary: Value,
    pub name: String,
    pub kernel: String,
    pub seed: u64,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    pub events: u64,
    pub tasks: Vec<TaskInfo>,
    pub devices: Vec<DeviceInfo>,
    pub timeseries: Option<Csv>,
    pub throttle: Option<Csv>,
    /// latency.csv: the latency-sensitive tasks' operations per second (runs without any
    /// have none, and that is not a warning).
    pub latency: Option<Csv>,
    /// cgroups.csv: each memory cgroup's pages per second (runs without cgroups have none).
    pub cgroups: Option<Csv>,
    /// pressure.csv: each group's pressure stall figures per second (runs of builds before it
    /// have none).
    pub pressure: Option<Csv>,
    /// iostat.csv: each device's requests, awaits and queue per second (runs of builds before
    /// it have none).
    pub iostat: Option<Csv>,
    /// ops.csv: each operation of the latency-sensitive tasks (end, latency), thinned for
    /// drawing ([`OpPoints`]).
    pub ops: Option<OpPoints>,
    pub trace: TraceData,
    pub hists: Option<Histograms>,
    /// Files that were missing or unreadable (the report says so instead of failing).
    pub warnings: Vec<String>,
}

fn lat(v: Option<&Value>, pause: bool) -> Lat {
    let Some(v) = v else {
        return Lat::default();
    };
    let f = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    if pause {
        Lat {
            count: v.get("count").and_then(Value::as_u64).unwrap_or(0),
            p50: f("p50_ms"),
            p90: f("p90_ms"),
            p99: f("p99_ms"),
            max: f("max_ms"),
            mean_or_total: f("total_ms"),
        }
    } else {
        Lat {
            count: v.get("count").and_then(Value::as_u64).unwrap_or(0),
            p50: f("p50"),
            p90: f("p90"),
            p99: f("p99"),
            max: f("max"),
            mean_or_total: f("mean"),
        }
    }
}

fn u64_of(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

fn str_of(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_string()
}

/// An optional file of a results directory, parsed: a missing or unreadable one is a warning
/// naming the file (the report draws what it can without it).
fn read_part<T>(
    file: &str,
    text: Result<String, String>,
    warnings: &mut Vec<String>,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Option<T> {
    match text.and_then(|t| parse(&t)) {
        Ok(v) => Some(v),
        Err(e) => {
            warnings.push(format!("{file}: {e}"));
            None
        }
    }
}

/// The files of a results directory besides summary.json: text, or why it could not be read;
/// the trace already digested.
pub struct Parts {
    pub timeseries: Result<String, String>,
    pub throttle: Result<String, String>,
    pub histograms: Result<String, String>,
    /// `None`: the run has no latency.csv (`Some(Err)`: it has one that cannot be read).
    pub latency: Option<Result<String, String>>,
    pub cgroups: Option<Result<String, String>>,
    /// `None`: the run has no pressure.csv.
    pub pressure: Option<Result<String, String>>,
    /// `None`: the run has no iostat.csv.
    pub iostat: Option<Result<String, String>>,
    /// `None`: the run has no ops.csv.
    pub ops: Option<Result<String, String>>,
    pub trace: Result<TraceData, String>,
}

/// What [`RunDir`]'s warnings say of a file that is not there, as opposed to one that is there
/// but cannot be read.
pub const MISSING: &str = "missing";

/// The largest magnitude a non-integer number of summary.json may have: 10^15 ms is 31,000
/// years, 10^15 MB an exabyte. Beyond, figures print as hundreds of digits or `inf`.
const MAX_FIGURE: f64 = 1e15;

/// A JSON value in an error: short, its kind for arrays and objects.
fn show(v: &Value) -> String {
    match v {
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
        Value::String(s) if s.chars().count() > 40 => format!("\"{}...\"", s.chars().take(40).collect::<String>()),
        other => other.to_string(),
    }
}

/// Every non-integer number under `v` is within [`MAX_FIGURE`]; `path` names where `v` is.
fn check_floats(v: &Value, path: &mut Vec<String>) -> Result<(), String> {
    match v {
        Value::Number(n) if !(n.is_u64() || n.is_i64()) => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if !f.is_finite() || f.abs() > MAX_FIGURE {
                return Err(format!(
                    "`{}` is {f:e}, beyond any figure a run gives (at most {MAX_FIGURE:e})",
                    path.concat()
                ));
            }
            Ok(())
        }
        Value::Array(a) => a.iter().enumerate().try_for_each(|(i, x)| {
            path.push(format!("[{i}]"));
            let r = check_floats(x, path);
            path.pop();
            r
        }),
        Value::Object(o) => o.iter().try_for_each(|(k, x)| {
            path.push(if path.is_empty() { k.clone() } else { format!(".{k}") });
            let r = check_floats(x, path);
            path.pop();
            r
        }),
        _ => Ok(()),
    }
}

/// One object's fields the report reads, each (when present) of its kind.
struct Fields<'a> {
    v: &'a Value,
    at: String,
}

impl<'a> Fields<'a> {
    fn of(v: &'a Value, at: String) -> Result<Fields<'a>, String> {
        if v.is_object() {
            Ok(Fields { v, at })
        } else {
            Err(format!("`{at}` is {}, not an object", show(v)))
        }
    }

    fn name(&self, k: &str) -> String {
        if self.at.is_empty() {
            k.to_string()
        } else {
            format!("{}.{k}", self.at)
        }
    }

    fn check(&self, k: &str, ok: impl Fn(&Value) -> bool, want: &str) -> Result<(), String> {
        match self.v.get(k) {
            Some(x) if !ok(x) => Err(format!("`{}` is {}, not {want}", self.name(k), show(x))),
            _ => Ok(()),
        }
    }

    fn numbers(&self, keys: &[&str]) -> Result<(), String> {
        keys.iter()
            .try_for_each(|k| self.check(k, |x| x.as_f64().is_some_and(|f| f >= 0.0), "a number ≥ 0"))
    }

    fn counts(&self, keys: &[&str], max: u64) -> Result<(), String> {
        let want = if max == u64::MAX {
            "a count (an integer ≥ 0)".to_string()
        } else {
            format!("an integer from 0 to {max}")
        };
        keys.iter()
            .try_for_each(|k| self.check(k, |x| x.as_u64().is_some_and(|n| n <= max), &want))
    }

    fn texts(&self, keys: &[&str]) -> Result<(), String> {
        keys.iter().try_for_each(|k| self.check(k, Value::is_string, "a string"))
    }

    /// The array `k` (empty when absent), each item an object.
    fn objects(&self, k: &str) -> Result<Vec<Fields<'a>>, String> {
        match self.v.get(k) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, x)| Fields::of(x, format!("{}[{i}]", self.name(k))))
                .collect(),
            Some(x) => Err(format!("`{}` is {}, not an array", self.name(k), show(x))),
        }
    }

    /// The object `k`, if present.
    fn object(&self, k: &str) -> Result<Option<Fields<'a>>, String> {
        self.v.get(k).map(|x| Fields::of(x, self.name(k))).transpose()
    }

    /// A latency summary (`pauses`, `op_latency_ms`, `request_latency_ms`).
    fn latency(&self, k: &str) -> Result<(), String> {
        if let Some(l) = self.object(k)? {
            l.counts(&["count"], u64::MAX)?;
            l.numbers(&[
                "p50_ms",
                "p90_ms",
                "p99_ms",
                "max_ms",
                "total_ms",
                "paused_max_ms",
                "p50",
                "p90",
                "p99",
                "max",
                "mean",
            ])?;
        }
        Ok(())
    }
}

/// Check that summary.json has the shape the report reads: an object with `sim_seconds`, each
/// field the report reads (when present: older builds and measured runs lack some) of its kind
/// — numbers not strings, `tasks` and `devices` arrays of objects — and no number so large that
/// its figures overflow. The error names the field.
pub fn check_summary(v: &Value) -> Result<(), String> {
    let top = Fields::of(v, String::new()).map_err(|_| format!("is {}, not a JSON object", show(v)))?;
    if v.get("sim_seconds").is_none() {
        return Err("has no `sim_seconds`".into());
    }
    check_floats(v, &mut Vec::new())?;
    top.numbers(&["sim_seconds", "wall_seconds"])?;
    top.counts(&["events"], u64::MAX)?;
    if let Some(sc) = top.object("scenario")? {
        sc.texts(&["name", "kernel"])?;
        sc.counts(&["seed"], u64::MAX)?;
        for d in sc.objects("devices")? {
            d.texts(&["name"])?;
            d.counts(&["major", "minor"], u64::from(u32::MAX))?;
        }
    }
    for t in top.objects("tasks")? {
        t.texts(&["name", "job", "device"])?;
        t.counts(&["instance", "pid"], u64::from(u32::MAX))?;
        t.counts(&["bytes_written", "bytes_read", "reclaim_waits"], u64::MAX)?;
        t.numbers(&["throughput_mb_s", "reclaim_wait_ms"])?;
        t.latency("pauses")?;
        t.latency("op_latency_ms")?;
    }
    for d in top.objects("devices")? {
        d.texts(&["name", "model"])?;
        d.counts(&["bytes_written", "bytes_read", "requests_written", "requests_read"], u64::MAX)?;
        d.numbers(&["util"])?;
        d.latency("request_latency_ms")?;
    }
    Ok(())
}

/// A results file's text, or why not: [`MISSING`] when it is not there.
fn read_file(path: &Path) -> Result<String, String> {
    file::read_text(path).map_err(|e| if file::is_missing(&e) { MISSING.to_string() } else { e.to_string() })
}

/// `dir`'s summary.json, read and checked ([`check_summary`]); the error names the file.
pub fn load_summary(dir: &Path) -> Result<Value, String> {
    let sp = dir.join(crate::SUMMARY_FILE);
    let bad = |e: String| format!("{}: {e}", sp.display());
    let text = file::read_text(&sp).map_err(|e| bad(e.to_string()))?;
    let summary: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    check_summary(&summary).map_err(|e| bad(format!("{e}: not a summary.json as wblab run or measure writes it")))?;
    Ok(summary)
}

impl RunDir {
    /// Load `dir`. Only summary.json is required, and must have its shape
    /// ([`check_summary`]); the other files are optional, and one that cannot be read is a
    /// warning. No file is opened unless it is a regular one (a FIFO would block the reader).
    pub fn load(dir: &Path) -> Result<RunDir, String> {
        let summary = load_summary(dir)?;
        let read = |file: &str| read_file(&dir.join(file));
        // A file that is not there is no file; one that is there but unreadable is a warning.
        let optional = |file: &str| match read(file) {
            Err(e) if e == MISSING => None,
            r => Some(r),
        };
        let sim_seconds = summary.get("sim_seconds").and_then(Value::as_f64).unwrap_or(0.0);
        let trace = match file::open_regular(&dir.join(crate::TRACE_FILE)) {
            Ok((f, _)) => read_trace(BufReader::new(f), sim_seconds).map_err(|e| e.to_string()),
            Err(e) if file::is_missing(&e) => Err(MISSING.to_string()),
            Err(e) => Err(e.to_string()),
        };
        Ok(RunDir::from_parts(
            dir,
            summary,
            Parts {
                timeseries: read(crate::TIMESERIES_FILE),
                throttle: read(crate::THROTTLE_FILE),
                histograms: read(crate::HISTOGRAMS_FILE),
                latency: optional(crate::LATENCY_FILE),
                cgroups: optional(crate::results::CGROUPS_FILE),
                pressure: optional(crate::results::PRESSURE_FILE),
                iostat: optional(crate::results::IOSTAT_FILE),
                ops: optional(crate::results::OPS_FILE),
                trace,
            },
        ))
    }

    /// Why `file` (one of the optional files) is not loaded: missing, or there but unreadable.
    pub fn why_not(&self, file: &str) -> String {
        let prefix = format!("{file}: ");
        match self.warnings.iter().find_map(|w| w.strip_prefix(&prefix)) {
            Some(e) if e != MISSING => format!("{}/{file} cannot be read: {e}", self.dir.display()),
            _ => format!("{}: no {file} (written by wblab run)", self.dir.display()),
        }
    }

    /// A results directory from its parts, as read from the files or as `wblab run` has them
    /// in memory after writing them: parsed by the same code either way.
    pub fn from_parts(dir: &Path, summary: Value, parts: Parts) -> RunDir {
        let sc = summary.get("scenario").cloned().unwrap_or(Value::Null);
        let name = match str_of(&sc, "name") {
            n if n.is_empty() => dir.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default(),
            n => n,
        };
        let tasks = summary
            .get("tasks")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|t| TaskInfo {
                        name: str_of(t, "name"),
                        instance: u64_of(t, "instance") as u32,
                        job: str_of(t, "job"),
                        pid: u64_of(t, "pid") as u32,
                        device: str_of(t, "device"),
                        bytes_written: u64_of(t, "bytes_written"),
                        bytes_read: u64_of(t, "bytes_read"),
                        throughput_mb_s: t.get("throughput_mb_s").and_then(Value::as_f64).unwrap_or(0.0),
                        pauses: lat(t.get("pauses"), true),
                        op: lat(t.get("op_latency_ms"), false),
                        reclaim_waits: u64_of(t, "reclaim_waits"),
                        reclaim_wait_ms: t.get("reclaim_wait_ms").and_then(Value::as_f64).unwrap_or(0.0),
                        syncs: t.get("syncs").and_then(SyncSplit::from_json),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let sc_devs = sc.get("devices").and_then(Value::as_array).cloned().unwrap_or_default();
        let devices = summary
            .get("devices")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|d| {
                        let name = str_of(d, "name");
                        let devt = sc_devs
                            .iter()
                            .find(|s| str_of(s, "name") == name)
                            .map(|s| format!("{}:{}", u64_of(s, "major"), u64_of(s, "minor")))
                            .unwrap_or_default();
                        DeviceInfo {
                            devt,
                            model: str_of(d, "model"),
                            bytes_written: u64_of(d, "bytes_written"),
                            bytes_read: u64_of(d, "bytes_read"),
                            util: d.get("util").and_then(Value::as_f64).unwrap_or(0.0),
                            requests: u64_of(d, "requests_written") + u64_of(d, "requests_read"),
                            latency: lat(d.get("request_latency_ms"), false),
                            name,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut warnings = Vec::new();
        let timeseries = read_part(crate::TIMESERIES_FILE, parts.timeseries, &mut warnings, Csv::parse);
        let throttle = read_part(crate::THROTTLE_FILE, parts.throttle, &mut warnings, Csv::parse);
        let latency = parts
            .latency
            .and_then(|t| read_part(crate::LATENCY_FILE, t, &mut warnings, Csv::parse));
        let ops = parts
            .ops
            .and_then(|t| read_part(crate::results::OPS_FILE, t, &mut warnings, OpPoints::parse));
        let cgroups = parts
            .cgroups
            .and_then(|t| read_part(crate::results::CGROUPS_FILE, t, &mut warnings, Csv::parse));
        let pressure = parts
            .pressure
            .and_then(|t| read_part(crate::results::PRESSURE_FILE, t, &mut warnings, Csv::parse));
        let iostat = parts
            .iostat
            .and_then(|t| read_part(crate::results::IOSTAT_FILE, t, &mut warnings, Csv::parse));
        let hists = read_part(crate::HISTOGRAMS_FILE, parts.histograms, &mut warnings, |t| {
            parse_histograms(t).map_err(|e| e.trim_start_matches("histograms.json: ").to_string())
        });
        let sim_seconds = summary.get("sim_seconds").and_then(Value::as_f64).unwrap_or(0.0);
        let trace = parts.trace.unwrap_or_else(|e| {
            warnings.push(format!("{}: {e}", crate::TRACE_FILE));
            TraceData::default()
        });
        RunDir {
            dir: dir.to_path_buf(),
            name,
            kernel: str_of(&sc, "kernel"),
            seed: u64_of(&sc, "seed"),
            sim_seconds,
            wall_seconds: summary.get("wall_seconds").and_then(Value::as_f64).unwrap_or(0.0),
            events: u64_of(&summary, "events"),
            summary,
            tasks,
            devices,
            latency,
            cgroups,
            pressure,
            iostat,
            ops,
            timeseries,
            throttle,
            trace,
            hists,
            warnings,
        }
    }

    /// Task label of a pid, if the pid is one of the run's tasks.
    pub fn task_of_pid(&self, pid: u32) -> Option<&TaskInfo> {
        self.tasks.iter().find(|t| t.pid == pid)
    }

    /// Duration to draw on time axes, s.
    pub fn duration(&self) -> f64 {
        if self.sim_seconds > 0.0 {
            return self.sim_seconds;
        }
        let ts = self
            .timeseries
            .as_ref()
            .and_then(|c| c.f64s("t_s"))
            .and_then(|v| v.into_iter().filter(|x| x.is_finite()).reduce(f64::max));
        ts.unwrap_or(1.0)
    }
}

/// The `trace_marker` text `wblab measure` writes when the workload starts: its timestamp is
/// time 0 of a measured run's trace.
pub const START_MARK: &str = "wblab start";

/// Requests in flight on one device while reading a trace.
struct DevBusy {
    /// "8:0".
    dev: String,
    inflight: u32,
    /// When `inflight` last went from 0 to 1, raw seconds.
    since: f64,
    /// Busy intervals, raw seconds.
    intervals: Vec<(f64, f64)>,
}

/// Add the interval [a, b) (seconds) to 1-second bins.
fn add_busy(bins: &mut Vec<f64>, mut a: f64, b: f64) {
    a = a.max(0.0);
    while a < b {
        let bin = a.floor() as usize;
        let end = ((bin + 1) as f64).min(b);
        if bins.len() <= bin {
            bins.resize(bin + 1, 0.0);
        }
        bins[bin] += end - a;
        a = end;
    }
}

/// What the reports take from a trace, gathered one event at a time: from ftrace text (a
/// results directory, a real machine's trace) or straight from a run's records while they are
/// written, so `wblab run` draws its report without reading back the file it just wrote. Both
/// paths hand over the values as trace.txt prints them, so they give the same [`TraceData`].
#[derive(Default)]
pub struct TraceDigest {
    td: TraceData,
    first: Option<f64>,
    mark: Option<f64>,
    last: f64,
    busy: Vec<DevBusy>,
    /// Interned bdi names ("8:0"), shared by their events.
    bdis: Vec<std::sync::Arc<str>>,
    /// Device numbers of the simulator's records already named: (devt, bdi index, busy index).
    devts: Vec<(DevT, Option<usize>, Option<usize>)>,
}

impl TraceDigest {
    pub fn new() -> TraceDigest {
        TraceDigest {
            td: TraceData {
                present: true,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// One more event in the trace, drawn or not.
    pub fn event(&mut self) {
        self.td.events += 1;
    }

    fn saw(&mut self, t: f64) {
        self.first.get_or_insert(t);
        self.last = self.last.max(t);
    }

    /// The `wblab start` marker of a measured run (the first one counts).
    pub fn mark(&mut self, t: f64) {
        self.saw(t);
        self.mark.get_or_insert(t);
    }

    pub fn has_mark(&self) -> bool {
        self.mark.is_some()
    }

    fn bdi_index(&mut self, name: &str) -> usize {
        match self.bdis.iter().position(|b| &**b == name) {
            Some(i) => i,
            None => {
                self.bdis.push(name.into());
                self.bdis.len() - 1
            }
        }
    }

    fn busy_index(&mut self, dev: &str) -> usize {
        match self.busy.iter().position(|b| b.dev == dev) {
            Some(i) => i,
            None => {
                self.busy.push(DevBusy {
                    dev: dev.to_string(),
                    inflight: 0,
                    since: 0.0,
                    intervals: Vec::new(),
                });
                self.busy.len() - 1
            }
        }
    }

    /// A `balance_dirty_pages` event, fields as printed.
    #[allow(clippy::too_many_arguments)]
    pub fn bdp(&mut self, t: f64, pid: u32, bdi: &str, pause_ms: i64, paused_ms: i64, dirtied: u64, task_ratelimit: u64) {
        let i = self.bdi_index(bdi);
        self.bdp_at(t, pid, i, pause_ms, paused_ms, dirtied, task_ratelimit);
    }

    #[allow(clippy::too_many_arguments)]
    fn bdp_at(&mut self, t: f64, pid: u32, bdi: usize, pause_ms: i64, paused_ms: i64, dirtied: u64, task_ratelimit: u64) {
        self.saw(t);
        self.td.bdp.push(BdpEvent {
            t,
            pid,
            bdi: self.bdis[bdi].clone(),
            pause_ms,
            paused_ms,
            dirtied,
            task_ratelimit,
        });
    }

    /// A `global_dirty_state` event.
    pub fn gds(&mut self, e: GdsEvent) {
        self.saw(e.t);
        self.td.gds.push(e);
    }

    /// A `block_rq_issue` (`issue`) or `block_rq_complete` on device `dev` ("8:0").
    pub fn block(&mut self, t: f64, dev: &str, issue: bool) {
        let i = self.busy_index(dev);
        self.block_at(t, i, issue);
    }

    fn block_at(&mut self, t: f64, dev: usize, issue: bool) {
        self.saw(t);
        self.td.has_block = true;
        let b = &mut self.busy[dev];
        if issue {
            if b.inflight == 0 {
                b.since = t;
            }
            b.inflight += 1;
        } else if b.inflight > 0 {
            b.inflight -= 1;
            if b.inflight == 0 {
                b.intervals.push((b.since, t));
            }
        }
    }

    /// The (bdi, busy) indexes of a simulated device, named once.
    fn devt(&mut self, d: DevT, bdi: bool) -> usize {
        let pos = match self.devts.iter().position(|x| x.0 == d) {
            Some(p) => p,
            None => {
                self.devts.push((d, None, None));
                self.devts.len() - 1
            }
        };
        let cached = if bdi { self.devts[pos].1 } else { self.devts[pos].2 };
        if let Some(i) = cached {
            return i;
        }
        let name = format!("{}:{}", d.major, d.minor);
        let i = if bdi { self.bdi_index(&name) } else { self.busy_index(&name) };
        if bdi {
            self.devts[pos].1 = Some(i);
        } else {
            self.devts[pos].2 = Some(i);
        }
        i
    }

    /// One of the simulator's records, as its trace.txt line would be read (the timestamp
    /// rounded to the microsecond the line prints). `comms` is `RunResult::comms`.
    pub fn record(&mut self, rec: &TraceRecord, comms: &[(String, u32)]) {
        self.event();
        let t = ((rec.t_ns + 500) / 1000 * 1000) as f64 / 1e9;
        match rec.ev {
            TraceEvent::BalanceDirtyPages {
                bdi,
                dirtied,
                paused,
                pause,
                task_ratelimit,
                ..
            } => {
                let pid = comms.get(rec.who as usize).map_or(0, |c| c.1);
                let i = self.devt(bdi, true);
                let paused = i64::try_from(paused).unwrap_or(0);
                self.bdp_at(t, pid, i, pause, paused, dirtied as u64, task_ratelimit);
            }
            TraceEvent::GlobalDirtyState {
                nr_dirty,
                nr_writeback,
                background_thresh,
                dirty_thresh,
                dirty_limit,
                ..
            } => self.gds(GdsEvent {
                t,
                dirty: nr_dirty,
                writeback: nr_writeback,
                bg_thresh: background_thresh,
                thresh: dirty_thresh,
                limit: dirty_limit,
            }),
            TraceEvent::BlockRqIssue { dev, .. } | TraceEvent::BlockRqComplete { dev, .. } => {
                let i = self.devt(dev, false);
                self.block_at(t, i, matches!(rec.ev, TraceEvent::BlockRqIssue { .. }));
            }
            _ => {}
        }
    }

    /// The digest. Time 0 is the `wblab start` trace marker when there is one (measured runs);
    /// else, for timestamps that cannot be simulated time (past `sim_seconds` + 1 s: a real
    /// machine's clock since boot), the second of the first event; else 0 (simulated runs).
    pub fn finish(self, sim_seconds: f64) -> TraceData {
        let mut td = self.td;
        let base = match (self.mark, self.first) {
            (Some(m), _) => m,
            (None, Some(f)) if f > sim_seconds.max(0.0) + 1.0 => f.floor(),
            _ => 0.0,
        };
        td.t0 = base;
        td.bdp.retain(|e| e.t >= base);
        td.gds.retain(|e| e.t >= base);
        for e in &mut td.bdp {
            e.t -= base;
        }
        for e in &mut td.gds {
            e.t -= base;
        }
        let end = if sim_seconds > 0.0 {
            sim_seconds
        } else {
            (self.last - base).max(0.0)
        };
        let nbins = end.ceil().max(0.0) as usize;
        for b in self.busy {
            let mut bins = Vec::new();
            for (x, y) in b.intervals {
                add_busy(&mut bins, x - base, (y - base).min(end));
            }
            if b.inflight > 0 {
                add_busy(&mut bins, b.since - base, end);
            }
            bins.resize(nbins.max(bins.len()), 0.0);
            // The last bin may be partial (a run of 7.5 s).
            let width = end - nbins.saturating_sub(1) as f64;
            if let Some(l) = bins.last_mut() {
                if width > 0.0 && width < 1.0 {
                    *l /= width;
                }
            }
            td.busy.push((b.dev, bins.iter().map(|x| x.clamp(0.0, 1.0)).collect()));
        }
        td
    }
}

/// The digest of a run whose trace was kept in memory.
pub fn digest_records(r: &wblab_sim::metrics::RunResult) -> TraceData {
    let mut d = TraceDigest::new();
    for rec in &r.trace {
        d.record(rec, &r.comms);
    }
    d.finish(r.sim_ns as f64 / 1e9)
}

/// Read the events the reports use from ftrace text (see [`TraceDigest::finish`] for time 0).
pub fn read_trace<R: BufRead>(r: R, sim_seconds: f64) -> std::io::Result<TraceData> {
    let mut d = TraceDigest::new();
    // One line buffer for the whole file, borrowed columns, fields found only for the
    // events the report draws: no allocation per line.
    let mut r = r;
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            break;
        }
        let Some(e) = parse_line_ref(&line) else {
            let l = line.trim();
            if !l.starts_with('#') && !l.is_empty() {
                d.event();
            }
            continue;
        };
        d.event();
        let t = e.ts_ns as f64 / 1e9;
        let u = |v: Option<&str>| v.and_then(leading_u64).unwrap_or(0);
        let i = |v: Option<&str>| v.and_then(leading_int).unwrap_or(0);
        match e.event {
            "tracing_mark_write" if !d.has_mark() && e.payload.contains(START_MARK) => d.mark(t),
            "balance_dirty_pages" => {
                let [name, pause, paused, dirtied, task_ratelimit] = e.kvs(["bdi", "pause", "paused", "dirtied", "task_ratelimit"]);
                d.bdp(t, e.pid, name.unwrap_or(""), i(pause), i(paused), u(dirtied), u(task_ratelimit));
            }
            "global_dirty_state" => {
                let [dirty, writeback, bg_thresh, thresh, limit] = e.kvs(["dirty", "writeback", "bg_thresh", "thresh", "limit"]);
                d.gds(GdsEvent {
                    t,
                    dirty: u(dirty),
                    writeback: u(writeback),
                    bg_thresh: u(bg_thresh),
                    thresh: u(thresh),
                    limit: u(limit),
                });
            }
            "block_rq_issue" | "block_rq_complete" => {
                let e = e.into_owned();
                let dev = e.get("dev").unwrap_or("").replace(',', ":");
                d.block(t, &dev, e.event == "block_rq_issue");
            }
            _ => {}
        }
    }
    Ok(d.finish(sim_seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_columns_by_name() {
        let c = Csv::parse("t_s,device,dirty_pages\n0.2,sda,5\n0.2,sdb,7\n0.4,sda,x\n").unwrap();
        assert_eq!(c.f64s("dirty_pages").unwrap()[1], 7.0);
        assert!(c.f64s("dirty_pages").unwrap()[2].is_nan());
        assert_eq!(c.filter("device", "sda").rows.len(), 2);
        assert_eq!(c.filter("device", "sda").xy("t_s", "dirty_pages", 2.0)[0], (0.2, 10.0));
        assert!(c.f64s("nope").is_none());
        assert_eq!(Csv::parse("a,b\n1,2\n3\n").unwrap_err(), "line 3: 1 fields where the header has 2");
    }

    #[test]
    fn files_of_older_builds_read_with_todays_names_and_units() {
        // throttle.csv before units: pages, pages/s, pos_ratio in 1/1024; an empty cell stays.
        let old = Csv::parse("t_s,device,dirty,write_bw,dirty_ratelimit,pos_ratio\n0.2,sda,5,2560,,512\n").unwrap();
        assert_eq!(
            old.header,
            [
                "t_s",
                "device",
                "dirty_pages",
                "write_bw_kib_s",
                "dirty_ratelimit_kib_s",
                "pos_ratio"
            ]
        );
        assert_eq!(old.rows[0], ["0.2", "sda", "5", "10240", "", "0.5"]);
        // timeseries.csv: a device's %util gains its unit; r and b are counts of tasks.
        let ts = Csv::parse("t_s,nr_dirty,r,b,sda_util\n1,7,1,2,55.5\n").unwrap();
        assert_eq!(ts.header, ["t_s", "nr_dirty_pages", "r_tasks", "b_tasks", "sda_util_pct"]);
        assert_eq!(ts.rows[0], ["1", "7", "1", "2", "55.5"]);
        // Today's files are left as they are, pos_ratio included.
        let new = Csv::parse("t_s,device,dirty_pages,pos_ratio\n0.2,sda,5,0.5\n").unwrap();
        assert_eq!(new.rows[0], ["0.2", "sda", "5", "0.5"]);
    }

    #[test]
    fn block_events_give_busy_fractions_per_second() {
        let t = "\
  kworker/u4:0-10      [000] .....     0.250000: block_rq_issue: 8,0 W 4096 () 0 + 8 be,0,4 [kworker/u4:0]
  kworker/u4:0-10      [000] .....     0.300000: block_rq_issue: 8,0 W 4096 () 8 + 8 be,0,4 [kworker/u4:0]
  <idle>-0             [000] .....     0.500000: block_rq_complete: 8,0 W () 0 + 8 be,0,4 [0]
  <idle>-0             [000] .....     1.250000: block_rq_complete: 8,0 W () 8 + 8 be,0,4 [0]
            dd-1000    [000] .....     1.500000: balance_dirty_pages: bdi 8:0: limit=10 setpoint=8 dirty=9 wb_setpoint=4 wb_dirty=5 dirty_ratelimit=100 task_ratelimit=90 dirtied=32 dirtied_pause=32 paused=0 pause=4 period=4 think=0 cgroup_ino=1
";
        let td = read_trace(t.as_bytes(), 2.0).unwrap();
        assert!(td.has_block);
        assert_eq!(td.busy.len(), 1);
        let (dev, bins) = &td.busy[0];
        assert_eq!(dev, "8:0");
        assert_eq!(bins.len(), 2);
        assert!((bins[0] - 0.75).abs() < 1e-9, "{bins:?}");
        assert!((bins[1] - 0.25).abs() < 1e-9, "{bins:?}");
        assert_eq!(td.bdp.len(), 1);
        assert_eq!((td.bdp[0].pid, td.bdp[0].pause_ms, td.bdp[0].dirtied), (1000, 4, 32));
        assert_eq!(td.events, 5);
    }

    #[test]
    fn real_kernel_timestamps_are_rebased() {
        let gds =
            "dd-5 [002] ..... 3387.500000: global_dirty_state: dirty=3 writeback=4 bg_thresh=1 thresh=2 limit=2 dirtied=0 written=0\n";
        let td = read_trace(gds.as_bytes(), 60.0).unwrap();
        assert_eq!(td.t0, 3387.0);
        assert!((td.gds[0].t - 0.5).abs() < 1e-9);
        // wblab measure's start marker is time 0; events before it are dropped.
        let t = format!(
            "{gds}wblab-7 [000] ..... 3387.600000: tracing_mark_write: wblab start\n{}",
            gds.replace("3387.500000", "3388.100000")
        );
        let td = read_trace(t.as_bytes(), 60.0).unwrap();
        assert!((td.t0 - 3387.6).abs() < 1e-9);
        assert_eq!(td.gds.len(), 1);
        assert!((td.gds[0].t - 0.5).abs() < 1e-6);
    }
}

/// ops.csv, per task group, as points (end s, latency ms) to draw: every operation of a group
/// that has at most [`OpPoints::KEEP_ALL`], else the fastest and the slowest of each of
/// [`OpPoints::BINS`] slices of the run, which keeps every stall and the floor.
#[derive(Clone, Debug, Default)]
pub struct OpPoints {
    pub groups: Vec<(String, Vec<(f64, f64)>)>,
    /// Operations in the file, and whether some group was thinned.
    pub total: u64,
    pub thinned: bool,
}

impl OpPoints {
    pub const KEEP_ALL: usize = 20_000;
    pub const BINS: usize = 2_000;

    pub fn parse(text: &str) -> Result<OpPoints, String> {
        let mut lines = text.lines();
        let header = lines.next().ok_or("empty file")?;
        let cols: Vec<&str> = header.split(',').collect();
        let col = |n: &str| cols.iter().position(|c| *c == n).ok_or_else(|| format!("no column {n}"));
        let (ct, cg, cl) = (col("t_s")?, col("task")?, col("lat_ms")?);
        let mut groups: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        let mut total = 0;
        for (i, l) in lines.enumerate() {
            let f: Vec<&str> = l.split(',').collect();
            let (Some(t), Some(g), Some(lat)) = (f.get(ct), f.get(cg), f.get(cl)) else {
                return Err(format!("line {}: too few fields", i + 2));
            };
            let num = |s: &str| s.parse::<f64>().map_err(|_| format!("line {}: `{s}` is not a number", i + 2));
            let p = (num(t)?, num(lat)?);
            total += 1;
            match groups.iter_mut().find(|(n, _)| n == g) {
                Some((_, v)) => v.push(p),
                None => groups.push((g.to_string(), vec![p])),
            }
        }
        let mut thinned = false;
        for (_, v) in &mut groups {
            if v.len() > Self::KEEP_ALL {
                thinned = true;
                *v = thin(v);
            }
        }
        Ok(OpPoints { groups, total, thinned })
    }
}

/// The fastest and slowest point of each of [`OpPoints::BINS`] time slices.
fn thin(v: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let end = v.iter().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
    let mut lo: Vec<Option<(f64, f64)>> = vec![None; OpPoints::BINS];
    let mut hi: Vec<Option<(f64, f64)>> = vec![None; OpPoints::BINS];
    for &p in v {
        let b = ((p.0 / end) * (OpPoints::BINS - 1) as f64) as usize;
        if lo[b].is_none_or(|q| p.1 < q.1) {
            lo[b] = Some(p);
        }
        if hi[b].is_none_or(|q| p.1 > q.1) {
            hi[b] = Some(p);
        }
    }
    let mut out: Vec<(f64, f64)> = lo.into_iter().chain(hi).flatten().collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.dedup();
    out
}
