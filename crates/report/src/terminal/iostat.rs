//! `wblab iostat DIR [-x]`: a run's `iostat.csv` as sysstat's `iostat -d` (and `-x`) print
//! it, one block per second: simulated and measured runs alike, since both write the file
//! from the same per-device counters (`/sys/block/<dev>/stat` differences on a real run).

use crate::load::rundir::Csv;
use crate::results::csv::IOSTAT_HEADER;
use std::fmt::Write as _;

/// The columns iostat.csv must have, in its header's order.
fn columns() -> Vec<&'static str> {
    IOSTAT_HEADER.split(',').collect()
}

/// Check `csv` is an iostat.csv as wblab writes it; the missing columns otherwise.
pub fn check(csv: &Csv) -> Result<(), String> {
    let missing: Vec<&str> = columns().into_iter().filter(|c| csv.col(c).is_none()).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("no column {}", missing.join(", ")))
    }
}

/// The text: for each second a `t = N s` line, then a header and a line per device
/// (`devices`: only those, if given).
pub fn iostat_text(csv: &Csv, extended: bool, device: Option<&str>) -> String {
    let c = |name: &str| csv.col(name).expect("checked columns");
    let (t, dev) = (c("t_s"), c("device"));
    let num = |row: &[String], name: &str| row[c(name)].parse::<f64>().unwrap_or(0.0);
    let mut out = String::new();
    let mut last_t: Option<&str> = None;
    let width = csv.rows.iter().map(|r| r[dev].len()).max().unwrap_or(6).max(6);
    for row in csv.rows.iter().filter(|r| device.is_none_or(|d| r[dev] == d)) {
        if last_t != Some(row[t].as_str()) {
            last_t = Some(row[t].as_str());
            if !out.is_empty() {
                out.push('\n');
            }
            writeln!(out, "t = {} s", row[t]).expect("String");
            if extended {
                writeln!(
                    out,
                    "{:<width$} {:>8} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>7} {:>6}",
                    "Device", "r/s", "w/s", "rkB/s", "wkB/s", "rareq-sz", "wareq-sz", "r_await", "w_await", "aqu-sz", "%util"
                )
                .expect("String");
            } else {
                writeln!(out, "{:<width$} {:>9} {:>12} {:>12}", "Device", "tps", "kB_read/s", "kB_wrtn/s").expect("String");
            }
        }
        let (r, w) = (num(row, "r_per_s"), num(row, "w_per_s"));
        let (rk, wk) = (num(row, "rkb_per_s"), num(row, "wkb_per_s"));
        if extended {
            let sz = |kb: f64, n: f64| if n > 0.0 { kb / n } else { 0.0 };
            writeln!(
                out,
                "{:<width$} {:>8.2} {:>8.2} {:>10.2} {:>10.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>7.2} {:>6.2}",
                row[dev],
                r,
                w,
                rk,
                wk,
                sz(rk, r),
                sz(wk, w),
                num(row, "r_await_ms"),
                num(row, "w_await_ms"),
                num(row, "aqu_sz"),
                num(row, "util_pct"),
            )
            .expect("String");
        } else {
            writeln!(out, "{:<width$} {:>9.2} {:>12.2} {:>12.2}", row[dev], r + w, rk, wk).expect("String");
        }
    }
    out
}
