//! `wblab btt`'s text, laid out as blktrace's `btt` prints its tables (seconds with nine
//! decimals, `MIN AVG MAX N` columns, the device overview in percent of Q2C), and its per-I/O
//! CSV.

use super::{Btt, Phase, Span, Spans};
use crate::terminal::log2hist::print_log2_slots;
use std::fmt::Write as _;

const RULE: &str = "--------------- ------------- ------------- ------------- -----------";

fn banner(out: &mut String, title: &str) {
    let _ = writeln!(out, "==================== {title} ====================\n");
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn span_row(out: &mut String, label: &str, s: &Span) {
    let label: String = label.chars().take(15).collect();
    let _ = writeln!(
        out,
        "{label:<15} {:13.9} {:13.9} {:13.9} {:11}",
        secs(s.min),
        s.avg() / 1e9,
        secs(s.max),
        s.n
    );
}

fn table_head(out: &mut String, first: &str) {
    let _ = writeln!(out, "{first:>15} {:>13} {:>13} {:>13} {:>11}", "MIN", "AVG", "MAX", "N");
    let _ = writeln!(out, "{RULE}\n");
}

fn dev_label(d: (u32, u32)) -> String {
    format!("({:3},{:3})", d.0, d.1)
}

/// The overview's phases: each one's share of the total Q2C time.
const OVERVIEW: [Phase; 5] = [Phase::Q2G, Phase::G2I, Phase::Q2M, Phase::I2D, Phase::D2C];

fn overview_row(out: &mut String, label: &str, s: &Spans) {
    let _ = write!(out, "{label:>10} |");
    for p in OVERVIEW {
        let _ = write!(out, " {:8.4}%", s.life_share(p));
    }
    out.push('\n');
}

/// A section with one table per phase and a row per member (device or process).
fn per_member<'a>(out: &mut String, title: &str, members: impl Iterator<Item = (String, &'a Spans)> + Clone) {
    banner(out, title);
    for p in Phase::ALL {
        if !members.clone().any(|(_, s)| s.get(p).n > 0) {
            continue;
        }
        table_head(out, p.name());
        for (label, s) in members.clone() {
            if s.get(p).n > 0 {
                span_row(out, &label, s.get(p));
            }
        }
        out.push('\n');
    }
}

/// The whole report: all devices, the device overview, per device, per process, and the
/// latency histograms per device (D2C as `biolatency -D` shows it, or Q2C as `biolatency -Q`
/// when `queued`).
pub fn render(b: &Btt, queued: bool) -> String {
    let mut out = String::new();
    if b.events == 0 {
        out.push_str(
            "no block events in this trace: record them with `[trace] block = true` in the scenario \
             (or `wblab run --trace-block`); `wblab measure` records them on the devices it creates\n",
        );
        return out;
    }
    banner(&mut out, "All Devices");
    table_head(&mut out, "ALL");
    for p in Phase::ALL {
        let s = b.all.get(p);
        if s.n > 0 {
            span_row(&mut out, p.name(), s);
        }
    }
    out.push('\n');

    banner(&mut out, "Device Overview");
    let _ = write!(out, "{:>10} |", "DEV");
    for p in OVERVIEW {
        let _ = write!(out, " {:>9}", p.name());
    }
    out.push('\n');
    let rule = format!("---------- |{}\n", " ---------".repeat(OVERVIEW.len()));
    out.push_str(&rule);
    for (d, s) in &b.devices {
        overview_row(&mut out, &dev_label(*d), s);
    }
    out.push_str(&rule);
    overview_row(&mut out, "Overall", &b.all);
    out.push('\n');

    per_member(&mut out, "Per Device", b.devices.iter().map(|(d, s)| (dev_label(*d), s)));
    if !b.processes.is_empty() {
        per_member(&mut out, "Per Process", b.processes.iter().map(|(n, s)| (n.clone(), s)));
    }

    tails(&mut out, b);

    let (what, title) = if queued {
        ("Q2C", "Latency histograms (Q2C, as biolatency -Q)")
    } else {
        ("D2C", "Latency histograms (D2C, as biolatency -D)")
    };
    banner(&mut out, title);
    for (d, s) in &b.devices {
        let slots = s.log2_slots(if queued { Phase::Q2C } else { Phase::D2C });
        if slots.iter().all(|&c| c == 0) {
            continue;
        }
        let _ = writeln!(out, "disk = {} ({what})", dev_label(*d));
        out.push_str(&print_log2_slots(&slots, "usecs"));
        out.push('\n');
    }
    if b.unmatched > 0 {
        let _ = writeln!(
            out,
            "note: {} completions had no issue in the trace (requests in flight when it began)",
            b.unmatched
        );
    }
    if !b.has_queue_events() {
        out.push_str(
            "note: the trace has no block_bio_queue events, so only D2C is known; record the whole \
             block trace for Q2G, I2D and Q2C\n",
        );
    }
    out
}

/// Where btt's tables stop at the mean: the percentiles of Q2C and D2C per device and per
/// process, ms — a reader's tail inside the block layer, to hold against its calls' own.
fn tails(out: &mut String, b: &Btt) {
    banner(out, "Tails (percentiles, ms)");
    let _ = writeln!(
        out,
        "{:<15} {:>8} {:>8} {:>8} {:>8}   {:>8} {:>8} {:>8} {:>8} {:>9}",
        "", "Q2C p50", "p90", "p99", "max", "D2C p50", "p90", "p99", "max", "N"
    );
    let row = |out: &mut String, label: &str, s: &Spans| {
        let (Some(d), q) = (s.tail(Phase::D2C), s.tail(Phase::Q2C)) else {
            return;
        };
        let label: String = label.chars().take(15).collect();
        let _ = write!(out, "{label:<15}");
        match q {
            Some(q) => {
                for v in q {
                    let _ = write!(out, " {:8.3}", v / 1e6);
                }
            }
            None => {
                let _ = write!(out, "{}", format!(" {:>8}", "-").repeat(4));
            }
        }
        out.push_str("  ");
        for v in d {
            let _ = write!(out, " {:8.3}", v / 1e6);
        }
        let _ = writeln!(out, " {:9}", s.get(Phase::D2C).n);
    };
    for (d, s) in &b.devices {
        row(out, &dev_label(*d), s);
    }
    for (n, s) in &b.processes {
        row(out, n, s);
    }
    out.push('\n');
}

fn opt(v: Option<u64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// One row per completed I/O (times in ns since the trace's clock origin, empty when that
/// event was not in the trace), for pandas: `pd.read_csv("btt.csv")`.
pub fn write_csv(b: &Btt) -> String {
    let mut out = String::from("dev,rwbs,sector,nr_sector,process,q_ns,g_ns,i_ns,d_ns,c_ns,merges\n");
    for io in &b.ios {
        let process = if io.process.contains([',', '"']) {
            format!("\"{}\"", io.process.replace('"', "\"\""))
        } else {
            io.process.clone()
        };
        let _ = writeln!(
            out,
            "\"{}\",{},{},{},{},{},{},{},{},{},{}",
            io.dev,
            io.rwbs,
            io.sector,
            io.nr_sector,
            process,
            opt(io.q_ns),
            opt(io.g_ns),
            opt(io.i_ns),
            io.d_ns,
            io.c_ns,
            io.merges
        );
    }
    out
}
