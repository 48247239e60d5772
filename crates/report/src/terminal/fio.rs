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
        let [mean, p50, p99, p999] = row.clat_ns.map(|ns| ns.map_or("-".to_string(), clat_ms));
        writeln!(
            out,
            "{:<width$}  {:<5} {:>9.1} {:>9.0} {:>9} {:>9} {:>9} {:>9}",
            row.job, row.direction, row.mib_s, row.iops, mean, p50, p99, p999
        )
        .ok()?;
    }
    Some(out)
}

/// A completion latency in ms with a precision down to the µs: an NVMe read's 0.012 ms
/// would otherwise print as 0.01, a buffered write's 4 µs as 0.00.
fn clat_ms(ns: f64) -> String {
    if ns < 1e6 {
        format!("{:.3}", ns / 1e6)
    } else {
        crate::terminal::table::ms(ns as u64, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::clat_ms;

    #[test]
    fn microsecond_latencies_keep_their_digits() {
        assert_eq!(clat_ms(4_200.0), "0.004");
        assert_eq!(clat_ms(12_345.0), "0.012");
        assert_eq!(clat_ms(2_500_000.0), "2.50");
    }
}
