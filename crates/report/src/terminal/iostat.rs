//! `wblab iostat DIR [-x]`: a run's `iostat.csv` as sysstat's `iostat -d` (and `-x`) print
//! it, one block per second: simulated and measured runs alike, since both write the file
//! from the same per-device counters (`/sys/block/<dev>/stat` differences on a real run).

use crate::load::rundir::Csv;
use crate::results::csv::{IOSTAT_HEADER, IOSTAT_LATER_COLUMNS};
use std::fmt::Write as _;

/// The columns iostat.csv must have: all but those files of older builds lack.
fn columns() -> Vec<&'static str> {
    IOSTAT_HEADER.split(',').filter(|c| !IOSTAT_LATER_COLUMNS.contains(c)).collect()
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

/// `iostat -x`'s columns, in sysstat 12's order (the discard group is 0: the model issues no
/// discards, and `wblab measure` runs none).
const EXTENDED: [&str; 22] = [
    "r/s", "rkB/s", "rrqm/s", "%rrqm", "r_await", "rareq-sz", "w/s", "wkB/s", "wrqm/s", "%wrqm", "w_await", "wareq-sz", "d/s", "dkB/s",
    "drqm/s", "%drqm", "d_await", "dareq-sz", "f/s", "f_await", "aqu-sz", "%util",
];

/// The text: for each second a `t = N s` line, then a header and a line per device
/// (`devices`: only those, if given). A file of an older build, without merges and flushes,
/// shows them as 0.
pub fn iostat_text(csv: &Csv, extended: bool, device: Option<&str>) -> String {
    let c = |name: &str| csv.col(name).expect("checked columns");
    let (t, dev) = (c("t_s"), c("device"));
    let num = |row: &[String], name: &str| csv.col(name).and_then(|i| row[i].parse::<f64>().ok()).unwrap_or(0.0);
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
                write!(out, "{:<width$}", "Device").expect("String");
                for h in EXTENDED {
                    write!(out, " {h:>8}").expect("String");
                }
                out.push('\n');
            } else {
                writeln!(out, "{:<width$} {:>9} {:>12} {:>12}", "Device", "tps", "kB_read/s", "kB_wrtn/s").expect("String");
            }
        }
        let (r, w) = (num(row, "r_per_s"), num(row, "w_per_s"));
        let (rk, wk) = (num(row, "rkb_per_s"), num(row, "wkb_per_s"));
        if extended {
            let sz = |kb: f64, n: f64| if n > 0.0 { kb / n } else { 0.0 };
            // sysstat's %rrqm: merged over merged and issued.
            let pct = |m: f64, n: f64| if m + n > 0.0 { 100.0 * m / (m + n) } else { 0.0 };
            let (rm, wm) = (num(row, "rrqm_per_s"), num(row, "wrqm_per_s"));
            let values = [
                r,
                rk,
                rm,
                pct(rm, r),
                num(row, "r_await_ms"),
                sz(rk, r),
                w,
                wk,
                wm,
                pct(wm, w),
                num(row, "w_await_ms"),
                sz(wk, w),
                0.0,
                0.0,
                0.0,
                0.0,
                0.0,
                0.0,
                num(row, "f_per_s"),
                num(row, "f_await_ms"),
                num(row, "aqu_sz"),
                num(row, "util_pct"),
            ];
            write!(out, "{:<width$}", row[dev]).expect("String");
            for v in values {
                write!(out, " {v:>8.2}").expect("String");
            }
            out.push('\n');
        } else {
            writeln!(out, "{:<width$} {:>9.2} {:>12.2} {:>12.2}", row[dev], r + w, rk, wk).expect("String");
        }
    }
    out
}
