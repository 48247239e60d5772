//! wblab-report: turns a [`RunResult`] into a results directory and a terminal table.
//!
//! * `summary.json` — [`summary_json`]: figures per task and device plus the resolved scenario;
//! * `trace.txt` — [`format_trace_line`]: the trace in Linux 6.18 ftrace text layout;
//! * `timeseries.csv`, `throttle.csv` — vmstat-like and throttling-state samples;
//! * [`terminal_summary`] — the table `wblab run` prints.
//!
//! [`trace_parse`] reads ftrace text back (ours or a real kernel's).

mod csv;
mod ftrace;
mod num;
mod summary;
mod table;
pub mod trace_parse;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use wblab_sim::metrics::RunResult;

pub use ftrace::{event_name, format_payload, format_trace_line, write_header as write_trace_header, write_trace};
pub use summary::{summary_json, summary_text};
pub use table::terminal_summary;

/// Names of the files [`write_results_dir`] writes.
pub const SUMMARY_FILE: &str = "summary.json";
pub const TRACE_FILE: &str = "trace.txt";
pub const TIMESERIES_FILE: &str = "timeseries.csv";
pub const THROTTLE_FILE: &str = "throttle.csv";

fn write_file(path: &Path, f: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
    f(&mut w)?;
    w.flush()
}

/// Create `out` (and its parents) and write summary.json, trace.txt, timeseries.csv and
/// throttle.csv into it.
///
/// Identical `RunResult`s give byte-identical files, except for the `wall_seconds` line of
/// summary.json.
pub fn write_results_dir(out: &Path, r: &RunResult, wall_seconds: f64) -> io::Result<()> {
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join(SUMMARY_FILE), summary_text(r, wall_seconds))?;
    write_file(&out.join(TRACE_FILE), |w| write_trace(w, r))?;
    write_file(&out.join(TIMESERIES_FILE), |w| csv::write_timeseries(w, r))?;
    write_file(&out.join(THROTTLE_FILE), |w| csv::write_throttle(w, r))?;
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
