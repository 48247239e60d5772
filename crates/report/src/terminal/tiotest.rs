//! tiotest's result table, in its own layout (tiotest.c `print_results`), followed by the
//! throughput scaled by CPU (MB per CPU-second, as in wli's 2004 report) and the page-wait
//! schedules of each phase.

use std::fmt::Write;
use wblab_sim::metrics::RunResult;

const RULE: &str = "----------------------------------------------------------------------";

/// The table for a run with tiotest threads, None otherwise.
pub fn table(r: &RunResult) -> Option<String> {
    if r.tiotest.is_empty() {
        return None;
    }
    let threads = r.tasks.iter().filter(|t| t.job == "tiotest").count();
    let mut out = String::new();
    let o = &mut out;
    writeln!(o, "Tiotest results for {threads} concurrent io threads:").ok()?;
    writeln!(o, ",{RULE}.").ok()?;
    writeln!(o, "| Item                  | Time     | Rate         | Usr CPU  | Sys CPU |").ok()?;
    writeln!(o, "+-----------------------+----------+--------------+----------+---------+").ok()?;
    for p in &r.tiotest {
        let mb = p.planned_bytes as f64 / (1u64 << 20) as f64;
        let item = match p.name {
            "Write" => format!("Write {mb:11.0} MBs"),
            "Random Write" => format!("Random Write {mb:4.0} MBs"),
            "Read" => format!("Read {mb:12.0} MBs"),
            _ => format!("Random Read {mb:5.0} MBs"),
        };
        writeln!(
            o,
            "| {item} | {:6.1} s | {:7.3} MB/s | {:5.1} %  | {:5.1} % |",
            p.time_ns as f64 / 1e9,
            p.rate_mb_s(),
            p.usr_pct(),
            p.sys_pct()
        )
        .ok()?;
    }
    writeln!(o, "`{RULE}'").ok()?;
    writeln!(o, "Throughput scaled by cpu consumption:").ok()?;
    for p in &r.tiotest {
        writeln!(o, "{}: {:.4}MB/cpusec", p.name, p.mb_per_cpu_sec()).ok()?;
    }
    writeln!(o, "scheduler callers (page and buffer waits):").ok()?;
    for p in &r.tiotest {
        let cut = if p.complete { "" } else { " (cut short by the end of the run)" };
        writeln!(
            o,
            "{}: wait_on_page_bit {} __lock_page {} __wait_on_buffer {} do_get_write_access {}{cut}",
            p.name, p.wait_on_page_bit, p.lock_page, p.wait_on_buffer, p.do_get_write_access
        )
        .ok()?;
    }
    Some(out)
}
