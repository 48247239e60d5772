//! Latency over time in the terminal: per task group, a sparkline of the longest operation of
//! each second (latency.csv), so that a reader stalling every 30 s shows as a spike every 30
//! cells where its percentiles would hide it.

use crate::load::rundir::Csv;
use crate::results::csv::LATENCY_HEADER;
use std::fmt::Write as _;

/// Cells per line: one second each.
const WIDTH: usize = 60;
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Check `csv` is a latency.csv as wblab writes it.
pub fn check(csv: &Csv) -> Result<(), String> {
    let missing: Vec<&str> = LATENCY_HEADER.split(',').filter(|c| csv.col(c).is_none()).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("no column {}", missing.join(", ")))
    }
}

/// The bar for `v` on a scale whose top is `max`; a second without operations is blank.
fn bar(ops: f64, v: f64, max: f64) -> char {
    if ops <= 0.0 {
        return ' ';
    }
    let k = if max > 0.0 {
        (v / max * (BARS.len() - 1) as f64).round() as usize
    } else {
        0
    };
    BARS[k.min(BARS.len() - 1)]
}

/// The sparklines of every task group, `WIDTH` seconds per line, each scaled to its group's
/// longest operation.
pub fn timeline_text(csv: &Csv) -> String {
    let col = |n: &str| csv.col(n).expect("checked columns");
    let (t, task, ops, max) = (col("t_s"), col("task"), col("ops"), col("max_ms"));
    let groups = csv.distinct(task);
    let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
    let mut out = String::new();
    out.push_str("latency over time: the longest operation of each second (one cell per second; blank: none)\n");
    for g in groups {
        let rows: Vec<&Vec<String>> = csv.rows.iter().filter(|r| r[task] == g).collect();
        let top = rows.iter().map(|r| num(&r[max])).fold(0.0, f64::max);
        let worst = rows.iter().find(|r| num(&r[max]) == top).map_or(0.0, |r| num(&r[t]));
        writeln!(out, "{g}: ▁ to █ = 0 to {top:.3} ms (longest at {worst:.0} s)").expect("String");
        for chunk in rows.chunks(WIDTH) {
            let line: String = chunk.iter().map(|r| bar(num(&r[ops]), num(&r[max]), top)).collect();
            let from = chunk.first().map_or(0.0, |r| num(&r[t]));
            writeln!(out, "  {from:>5} s |{line}|").expect("String");
        }
    }
    out
}
