//! The fio jobs' figures under the summary table, each job (or reporting group) and direction
//! on its own line, as fio's own summary leads with them: a mixed job's reads and writes are
//! not one latency.

use std::fmt::Write;
use wblab_sim::metrics::RunResult;

/// The table for a run with fio jobs, None otherwise.
pub fn table(r: &RunResult) -> Option<String> {
    let rows = crate::results::fio::fio_rows(&crate::results::fio::fio_json(r)?);
    let width = rows.iter().map(|row| row.job.len()).max().unwrap_or(3).max(3);
    let mut out = String::new();
    writeln!(out, "fio jobs (clat: submission to completion, ms)").ok()?;
    writeln!(
        out,
        "{:<width$}  {:<5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "job", "dir", "MiB/s", "IOPS", "clat avg", "clat p50", "clat p99", "p99.9"
    )
    .ok()?;
    for row in &rows {
        let [mean, p50, p99, p999] = row
            .clat_ns
            .map(|ns| ns.map_or("-".to_string(), |ns| crate::terminal::table::ms(ns as u64, 1)));
        writeln!(
            out,
            "{:<width$}  {:<5} {:>9.1} {:>9.0} {:>9} {:>9} {:>9} {:>9}",
            row.job, row.direction, row.mib_s, row.iops, mean, p50, p99, p999
        )
        .ok()?;
    }
    Some(out)
}
