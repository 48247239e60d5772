//! wblab-report: a run's results directory, read back and drawn.
//!
//! * [`results`] writes the directory: `summary.json` ([`summary_json`]), `trace.txt` in the
//!   6.18 ftrace text layout ([`format_trace_line`]), `timeseries.csv`, `throttle.csv`,
//!   `histograms.json`;
//! * [`load`] reads one back ([`load::rundir::RunDir`]), simulated or measured, and parses
//!   ftrace text ([`load::trace_parse`]);
//! * [`figures`] builds the writeback graphs, [`plot`] draws them as SVG, [`html`] writes
//!   report.html;
//! * [`terminal`] prints the summary table ([`terminal_summary`]), an R `stem()` plot, a bcc
//!   log2 histogram, vmstat lines and tiotest's table;
//! * [`compare`] puts runs side by side with relative errors.

pub mod btt;
pub mod compare;
pub mod figures;
pub mod html;
pub mod load;
mod num;
pub mod par;
pub mod plot;
pub mod results;
pub mod terminal;
pub mod verdict;

pub use html::report::REPORT_FILE;
pub use results::csv::IOSTAT_HEADER;
pub use results::ftrace::{event_name, format_payload, format_trace_line, write_header as write_trace_header, write_trace};
pub use results::has_latency;
pub use results::summary::{summary_json, summary_text};
pub use results::{
    write_figures_dir, write_latency, write_results_dir, write_trace_file, ResultTexts, HISTOGRAMS_FILE, IOSTAT_FILE, LATENCY_FILE,
    PRESSURE_FILE, PRESSURE_TEXT_FILE, REPEATS_DIR, SUMMARY_FILE, THROTTLE_FILE, TIMESERIES_FILE, TRACE_FILE,
};
pub use terminal::table::terminal_summary;
