//! `emulated-devices SCENARIO...`: the real kernel on an emulated disk against the model of
//! the kernel on the same disk model. Each scenario's measured repeats (`wblab measure` with
//! `emulate = true`) and one run of the model are read with the same code: per task group its
//! throughput, `balance_dirty_pages` pauses and read latencies, per device its bytes and
//! request latency (issue to completion: the emulated device takes no more requests than the
//! model's queue depth, so both count the same wait).

use super::measured::{error, json, median_spread, num, pct, repeats, simulated};
use super::runs::Runs;
use serde_json::Value;
use std::path::Path;

/// The aims of issue #41's generated cases: throughput within 15 %, p50 within 25 %, p99
/// within 50 %.
const AIM_RATE: f64 = 0.15;
const AIM_P50: f64 = 0.25;
const AIM_P99: f64 = 0.50;

/// One figure of a run: a label, its value, the aim its error is held to.
type Figure = (String, f64, Option<f64>);

/// The figures of the results directory `dir`, in a fixed order.
fn figures(dir: &Path) -> Result<Vec<Figure>, String> {
    let s = json(dir, "summary.json")?;
    let secs = s["sim_seconds"].as_f64().unwrap_or(0.0).max(1e-9);
    let mut out: Vec<Figure> = Vec::new();
    let tasks = s["tasks"].as_array().cloned().unwrap_or_default();
    let mut names: Vec<&str> = Vec::new();
    for t in &tasks {
        let n = t["name"].as_str().unwrap_or("?");
        if !names.contains(&n) {
            names.push(n);
        }
    }
    for n in names {
        let group: Vec<&Value> = tasks.iter().filter(|t| t["name"] == n).collect();
        let sum = |k: &str| group.iter().map(|t| t[k].as_f64().unwrap_or(0.0)).sum::<f64>();
        let median = |f: &dyn Fn(&Value) -> f64| median_spread(group.iter().map(|t| f(t)).collect()).0;
        let count = if group.len() > 1 {
            format!(" ×{}", group.len())
        } else {
            String::new()
        };
        out.push((
            format!("`{n}`{count} MB/s"),
            (sum("bytes_written") + sum("bytes_read")) / secs / 1e6,
            Some(AIM_RATE),
        ));
        // A group's p50 and p99 of one distribution (the median over its instances).
        let mut percentiles = |what: &str, field: &str, p50: &str, p99: &str| {
            for (p, key, aim) in [("p50", p50, AIM_P50), ("p99", p99, AIM_P99)] {
                out.push((
                    format!("`{n}` {what} {p}, ms"),
                    median(&|t| t[field][key].as_f64().unwrap_or(0.0)),
                    Some(aim),
                ));
            }
        };
        if group.iter().any(|t| t["pauses"]["count"].as_f64().unwrap_or(0.0) > 0.0) {
            percentiles("pause", "pauses", "p50_ms", "p99_ms");
        }
        if sum("bytes_read") > 0.0 && group.iter().any(|t| t["op_latency_ms"]["count"].as_f64().unwrap_or(0.0) > 0.0) {
            percentiles("read", "op_latency_ms", "p50", "p99");
        }
    }
    for d in s["devices"].as_array().cloned().unwrap_or_default() {
        let n = d["name"].as_str().unwrap_or("?");
        let bytes = d["bytes_written"].as_f64().unwrap_or(0.0) + d["bytes_read"].as_f64().unwrap_or(0.0);
        out.push((format!("{n}: MB/s moved"), bytes / secs / 1e6, Some(AIM_RATE)));
        out.push((
            format!("{n}: request p50, ms"),
            d["request_latency_ms"]["p50"].as_f64().unwrap_or(0.0),
            Some(AIM_P50),
        ));
    }
    Ok(out)
}

/// The rows of one scenario: its measured repeats (median, spread) against one run of the model.
fn rows(scenario: &str, runs: &Runs) -> Result<Vec<Vec<String>>, String> {
    let (name, repeats) = repeats(scenario)?;
    let kernel: Vec<Vec<Figure>> = repeats.iter().map(|r| figures(r)).collect::<Result<_, _>>()?;
    let model = simulated(scenario, runs, figures)?;
    let mut out = Vec::new();
    for (label, sim, aim) in model {
        let measured: Vec<f64> = kernel
            .iter()
            .filter_map(|k| k.iter().find(|(l, ..)| *l == label).map(|(_, v, _)| *v))
            .collect();
        if measured.len() != kernel.len() {
            continue;
        }
        let (med, spread) = median_spread(measured);
        out.push(vec![
            if out.is_empty() { format!("`{name}`") } else { String::new() },
            label,
            num(med),
            pct(spread),
            num(sim),
            error(sim, med, aim),
        ]);
    }
    Ok(out)
}

/// The table of every scenario in `args`.
pub fn emulated_devices(args: &[String], runs: &Runs) -> Result<String, String> {
    if args.is_empty() {
        return Err("`emulated-devices` takes one or more scenario files".to_string());
    }
    let mut all = Vec::new();
    for a in args {
        all.extend(rows(a, runs)?);
    }
    Ok(super::tables::table(
        &["scenario", "figure", "measured (median)", "spread", "simulated", "error"],
        all,
    ))
}
