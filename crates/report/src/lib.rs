//! wblab-report: turns a [`RunResult`] into a results directory and a terminal table.
//!
//! * `summary.json` — [`summary_json`]: figures per task and device plus the resolved scenario;
//! * `trace.txt` — [`format_trace_line`]: the trace in Linux 6.18 ftrace text layout;
//! * `timeseries.csv`, `throttle.csv` — vmstat-like and throttling-state samples;
//! * `histograms.json` — [`histograms`]: the latency distributions behind the percentiles;
//! * [`terminal_summary`] — the table `wblab run` prints.
//!
//! [`trace_parse`] reads ftrace text back (ours or a real kernel's). Reports read a results
//! directory back ([`rundir::RunDir`]) and draw it: [`report`] writes SVG graphs and
//! report.html ([`figures`], [`plot`], [`html`]); [`terminal`] prints the summary table, an R
//! `stem()` plot ([`stem`]) and a bcc log2 histogram ([`log2hist`]); [`vmstat`] prints the
//! per-second samples as vmstat does.

pub mod compare;
mod csv;
pub mod figures;
mod ftrace;
pub mod histograms;
pub mod html;
pub mod log2hist;
mod num;
pub mod plot;
pub mod report;
pub mod rundir;
pub mod stem;
mod summary;
mod table;
pub mod terminal;
pub mod tiotest;
pub mod trace_parse;
pub mod vmstat;

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
pub const HISTOGRAMS_FILE: &str = "histograms.json";
pub use report::REPORT_FILE;

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
    std::fs::write(out.join(SUMMARY_FILE), summary_text(r, wall_seconds))?;
    write_file(&out.join(TRACE_FILE), |w| write_trace(w, r))?;
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
