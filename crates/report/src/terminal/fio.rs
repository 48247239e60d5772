//! The fio jobs' figures under the summary table, each job (or reporting group) and direction
//! on its own line, as fio's own summary leads with them: a mixed job's reads and writes are
//! not one latency.

use std::fmt::Write;
use wblab_sim::metrics::RunResult;

/// The table for a run with fio jobs, None otherwise.
pub fn table(r: &RunResult) -> Option<String> {
    let v = crate::results::fio::fio_json(r)?;
    let jobs = v["jobs"].as_array()?;
    let width = jobs
        .iter()
        .filter_map(|j| j["jobname"].as_str())
        .map(str::len)
        .max()
        .unwrap_or(3)
        .max(3);
    let mut out = String::new();
    writeln!(out, "fio jobs (clat: submission to completion, ms)").ok()?;
    writeln!(
        out,
        "{:<width$}  {:<5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "job", "dir", "MiB/s", "IOPS", "clat avg", "clat p50", "clat p99", "p99.9"
    )
    .ok()?;
    for job in jobs {
        for dir in ["read", "write"] {
            let d = &job[dir];
            if d["total_ios"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            let ms = |x: &serde_json::Value| x.as_f64().map_or("-".to_string(), |ns| crate::terminal::table::ms(ns as u64, 1));
            let p = &d["clat_ns"]["percentile"];
            writeln!(
                out,
                "{:<width$}  {:<5} {:>9.1} {:>9.0} {:>9} {:>9} {:>9} {:>9}",
                job["jobname"].as_str().unwrap_or("?"),
                dir,
                d["bw_bytes"].as_f64().unwrap_or(0.0) / 1_048_576.0,
                d["iops"].as_f64().unwrap_or(0.0),
                ms(&d["clat_ns"]["mean"]),
                ms(&p["50.000000"]),
                ms(&p["99.000000"]),
                ms(&p["99.900000"]),
            )
            .ok()?;
        }
    }
    Some(out)
}
