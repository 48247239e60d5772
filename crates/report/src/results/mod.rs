//! Writing a results directory from a run: `summary.json`, `trace.txt` (6.18 ftrace text),
//! `timeseries.csv`, `iostat.csv`, `latency.csv`, `cgroups.csv`, `throttle.csv`,
//! `histograms.json`, and for fio jobs `fio.json` and their logs.

pub(crate) mod csv;
pub mod fio;
pub(crate) mod ftrace;
pub mod histograms;
pub(crate) mod summary;
pub mod trace_stream;

pub use csv::has_latency;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use wblab_sim::metrics::RunResult;

/// Names of the files [`write_results_dir`] writes.
pub const SUMMARY_FILE: &str = "summary.json";
pub const TRACE_FILE: &str = "trace.txt";
pub const TIMESERIES_FILE: &str = "timeseries.csv";
pub const THROTTLE_FILE: &str = "throttle.csv";
pub const HISTOGRAMS_FILE: &str = "histograms.json";
pub const IOSTAT_FILE: &str = "iostat.csv";
pub const LATENCY_FILE: &str = "latency.csv";
pub const CGROUPS_FILE: &str = "cgroups.csv";
pub const OPS_FILE: &str = "ops.csv";
pub const PRESSURE_FILE: &str = "pressure.csv";
pub const PRESSURE_TEXT_FILE: &str = "pressure.txt";

fn write_file(path: &Path, f: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    f(&mut w)?;
    w.flush()
}

/// Create `out` (and its parents) and write summary.json, trace.txt, timeseries.csv,
/// throttle.csv and histograms.json into it.
///
/// Identical `RunResult`s give byte-identical files, except for the `wall_seconds` line of
/// summary.json.
pub fn write_results_dir(out: &Path, r: &RunResult, wall_seconds: f64) -> io::Result<()> {
    ResultTexts::new(r, wall_seconds).write(out)?;
    write_trace_file(out, r)
}

/// Write `out/trace.txt` from the records `r` kept in memory.
pub fn write_trace_file(out: &Path, r: &RunResult) -> io::Result<()> {
    write_file(&out.join(TRACE_FILE), |w| ftrace::write_trace(w, r))
}

/// The small files of a results directory, as text: written to disk, and read back by the
/// report without touching the disk ([`ResultTexts::parts`]).
/// Directory of a `--repeat` run's other seeds inside its results directory.
pub const REPEATS_DIR: &str = "repeats";

/// The files `wblab compare` takes its figures from (summary.json, timeseries.csv,
/// throttle.csv, histograms.json, fio.json): what a repeat with another seed keeps, in
/// `<results>/repeats/seed-<n>/`, so that a comparison can tell a change from run-to-run noise.
pub fn write_figures_dir(out: &Path, r: &RunResult, wall_seconds: f64) -> io::Result<()> {
    let mut buf = Vec::new();
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join(SUMMARY_FILE), summary::summary_text(r, wall_seconds))?;
    csv::write_timeseries(&mut buf, r)?;
    std::fs::write(out.join(TIMESERIES_FILE), &buf)?;
    buf.clear();
    csv::write_throttle(&mut buf, r)?;
    std::fs::write(out.join(THROTTLE_FILE), &buf)?;
    buf.clear();
    histograms::write_histograms(&mut buf, r)?;
    std::fs::write(out.join(HISTOGRAMS_FILE), &buf)?;
    if let Some(t) = fio::fio_json_text(r) {
        std::fs::write(out.join(fio::FIO_JSON_FILE), t)?;
    }
    Ok(())
}

pub struct ResultTexts {
    pub summary: String,
    pub timeseries: String,
    pub throttle: String,
    pub histograms: String,
    /// `iostat.csv`, where the run recorded the devices' requests.
    pub iostat: Option<String>,
    /// `latency.csv`, where the run recorded operations per second.
    pub latency: Option<String>,
    /// `cgroups.csv`, where the scenario has memory cgroups.
    pub cgroups: Option<String>,
    /// `ops.csv`, where latency-sensitive tasks logged their operations.
    pub ops: Option<String>,
    /// `pressure.csv` and `pressure.txt`, where the run kept pressure figures.
    pub pressure: Option<(String, String)>,
    /// `fio.json` and the fio jobs' log files (name, text), where the run had fio jobs.
    pub fio: Option<String>,
    pub fio_logs: Vec<(String, String)>,
}

impl ResultTexts {
    pub fn new(r: &RunResult, wall_seconds: f64) -> ResultTexts {
        let text = |f: &dyn Fn(&mut Vec<u8>) -> io::Result<()>| {
            let mut v = Vec::new();
            f(&mut v).expect("writing to memory cannot fail");
            String::from_utf8(v).expect("results are UTF-8")
        };
        ResultTexts {
            summary: summary::summary_text(r, wall_seconds),
            timeseries: text(&|w| csv::write_timeseries(w, r)),
            throttle: text(&|w| csv::write_throttle(w, r)),
            histograms: text(&|w| histograms::write_histograms(w, r)),
            iostat: csv::has_iostat(r).then(|| text(&|w| csv::write_iostat(w, r))),
            latency: csv::has_latency(r).then(|| text(&|w| csv::write_latency(w, r))),
            cgroups: (!r.cgroups.is_empty()).then(|| text(&|w| csv::write_cgroups(w, r))),
            ops: csv::has_ops(r).then(|| text(&|w| csv::write_ops(w, r))),
            pressure: (!r.pressure.is_empty()).then(|| (text(&|w| csv::write_pressure(w, r)), text(&|w| csv::write_pressure_files(w, r)))),
            fio: fio::fio_json_text(r),
            fio_logs: fio::fio_logs(r),
        }
    }

    /// Every file of the results directory but trace.txt, as (name, text), in the order
    /// they are written: what `wblab run` and `wblab measure` both write.
    pub fn files(&self) -> Vec<(&str, &str)> {
        let mut f = vec![
            (SUMMARY_FILE, self.summary.as_str()),
            (TIMESERIES_FILE, &self.timeseries),
            (THROTTLE_FILE, &self.throttle),
        ];
        let optional = [
            (IOSTAT_FILE, &self.iostat),
            (LATENCY_FILE, &self.latency),
            (CGROUPS_FILE, &self.cgroups),
            (OPS_FILE, &self.ops),
        ];
        f.extend(optional.into_iter().filter_map(|(n, t)| Some((n, t.as_deref()?))));
        if let Some((csv, txt)) = &self.pressure {
            f.extend([(PRESSURE_FILE, csv.as_str()), (PRESSURE_TEXT_FILE, txt.as_str())]);
        }
        if let Some(t) = &self.fio {
            f.push((fio::FIO_JSON_FILE, t));
        }
        f.extend(self.fio_logs.iter().map(|(n, t)| (n.as_str(), t.as_str())));
        f.push((HISTOGRAMS_FILE, &self.histograms));
        f
    }

    /// Create `out` (and its parents) and write every file but trace.txt.
    pub fn write(&self, out: &Path) -> io::Result<()> {
        std::fs::create_dir_all(out)?;
        for (name, text) in self.files() {
            std::fs::write(out.join(name), text)?;
        }
        Ok(())
    }

    /// The results directory `out` as a report reads it, with the trace already digested.
    pub fn run_dir(self, out: &Path, trace: crate::load::rundir::TraceData) -> Result<crate::load::rundir::RunDir, String> {
        let summary: serde_json::Value = serde_json::from_str(&self.summary).map_err(|e| format!("{SUMMARY_FILE}: {e}"))?;
        Ok(crate::load::rundir::RunDir::from_parts(
            out,
            summary,
            crate::load::rundir::Parts {
                timeseries: Ok(self.timeseries),
                throttle: Ok(self.throttle),
                histograms: Ok(self.histograms),
                latency: self.latency.map(Ok),
                cgroups: self.cgroups.map(Ok),
                pressure: self.pressure.map(|(csv, _)| Ok(csv)),
                iostat: self.iostat.map(Ok),
                ops: self.ops.map(Ok),
                trace: Ok(trace),
            },
        ))
    }
}

/// Write `latency.csv` content to any writer.
pub fn write_latency<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    csv::write_latency(w, r)
}
