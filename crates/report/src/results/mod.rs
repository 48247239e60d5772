//! Writing a results directory from a run: `summary.json`, `trace.txt` (6.18 ftrace text),
//! `timeseries.csv`, `throttle.csv` and `histograms.json`.

pub(crate) mod csv;
pub(crate) mod ftrace;
pub mod histograms;
pub(crate) mod summary;

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
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join(SUMMARY_FILE), summary::summary_text(r, wall_seconds))?;
    write_file(&out.join(TRACE_FILE), |w| ftrace::write_trace(w, r))?;
    write_file(&out.join(TIMESERIES_FILE), |w| csv::write_timeseries(w, r))?;
    write_file(&out.join(THROTTLE_FILE), |w| csv::write_throttle(w, r))?;
    write_file(&out.join(HISTOGRAMS_FILE), |w| histograms::write_histograms(w, r))?;
    Ok(())
}

/// Write `timeseries.csv` content to any writer.
pub fn write_timeseries<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    csv::write_timeseries(w, r)
}

/// Write `throttle.csv` content to any writer.
pub fn write_throttle<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    csv::write_throttle(w, r)
}
