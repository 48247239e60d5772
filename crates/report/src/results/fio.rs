//! fio's own outputs from a simulated run: `fio.json` in the shape `fio --output-format=json`
//! prints (the same field names and units, so scripts that read fio read it), and the
//! `write_lat_log`/`write_bw_log`/`write_iops_log` files in fio's log format.
//!
//! Simulated runs are deterministic, so the timestamps are 0 and `time` says "simulated".

use serde_json::{json, Map, Value};
use wblab_sim::config::{FioJob, READ, WRITE};
use wblab_sim::metrics::fio::{DirStat, FioResult, FioStats, LatStat, LogRow, SampleStat};
use wblab_sim::metrics::RunResult;

/// The file name of the JSON.
pub const FIO_JSON_FILE: &str = "fio.json";

/// fio's latency bucket limits (`latency_ns`, `latency_us`, `latency_ms`): the key is the
/// exclusive upper bound of its bucket.
const LAT_KEYS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];

fn lat_obj(s: &LatStat, percentiles: Option<&[f64]>) -> Value {
    let mut m = Map::new();
    m.insert("min".into(), json!(s.min));
    m.insert("max".into(), json!(s.max));
    m.insert("mean".into(), json!(round6(s.mean())));
    m.insert("stddev".into(), json!(round6(s.stddev())));
    m.insert("N".into(), json!(s.n));
    if let Some(list) = percentiles {
        if s.n > 0 {
            let mut p = Map::new();
            for &q in list {
                p.insert(format!("{q:.6}"), json!(s.hist.quantile(q / 100.0)));
            }
            m.insert("percentile".into(), Value::Object(p));
        }
    }
    Value::Object(m)
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn samples(s: &SampleStat) -> (f64, f64, f64, f64, u64) {
    (s.min, s.max, s.mean(), s.stddev(), s.n)
}

fn dir_obj(d: &DirStat, runtime_ms: u64, percentiles: &[f64]) -> Value {
    let rt = runtime_ms.max(1) as f64;
    let bw_bytes = if runtime_ms > 0 { (d.bytes as f64 * 1000.0 / rt) as u64 } else { 0 };
    let iops = if runtime_ms > 0 { d.ios as f64 * 1000.0 / rt } else { 0.0 };
    let (bmin, bmax, bmean, bdev, bn) = samples(&d.bw);
    let (imin, imax, imean, idev, inn) = samples(&d.iops);
    json!({
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes / 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": round6(iops),
        "runtime": runtime_ms,
        "total_ios": d.ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": lat_obj(&d.slat, None),
        "clat_ns": lat_obj(&d.clat, Some(percentiles)),
        "lat_ns": lat_obj(&d.lat, None),
        "bw_min": bmin as u64,
        "bw_max": bmax as u64,
        "bw_agg": if d.ios > 0 { 100.0 } else { 0.0 },
        "bw_mean": round6(bmean),
        "bw_dev": round6(bdev),
        "bw_samples": bn,
        "iops_min": imin as u64,
        "iops_max": imax as u64,
        "iops_mean": round6(imean),
        "iops_stddev": round6(idev),
        "iops_samples": inn,
    })
}

/// fio's `latency_ns`, `latency_us`, `latency_ms`: the share of I/Os (percent) whose total
/// latency fell in each bucket.
fn latency_buckets(d: &[DirStat; 2]) -> (Value, Value, Value) {
    let mut ns = [0u64; 10];
    let mut us = [0u64; 10];
    let mut ms = [0u64; 12];
    let mut total = 0u64;
    for s in d {
        for (v, c) in s.lat.hist.buckets() {
            total += c;
            let (arr, unit): (&mut [u64], u64) = if v < 1_000 {
                (&mut ns, v)
            } else if v < 1_000_000 {
                (&mut us, v / 1_000)
            } else {
                (&mut ms, v / 1_000_000)
            };
            let i = LAT_KEYS.iter().position(|&k| unit < k).unwrap_or(if arr.len() == 12 {
                if unit < 2000 {
                    10
                } else {
                    11
                }
            } else {
                9
            });
            arr[i] += c;
        }
    }
    let pct = |c: u64| if total == 0 { 0.0 } else { round6(c as f64 * 100.0 / total as f64) };
    let mut a = Map::new();
    let mut b = Map::new();
    let mut m = Map::new();
    for (i, k) in LAT_KEYS.iter().enumerate() {
        a.insert(k.to_string(), json!(pct(ns[i])));
        b.insert(k.to_string(), json!(pct(us[i])));
        m.insert(k.to_string(), json!(pct(ms[i])));
    }
    m.insert("2000".into(), json!(pct(ms[10])));
    m.insert(">=2000".into(), json!(pct(ms[11])));
    (Value::Object(a), Value::Object(b), Value::Object(m))
}

/// Several clones (or jobs of one reporting group) as one: fio's `group_reporting`.
fn merged(results: &[&FioResult]) -> FioStats {
    let mut s = FioStats::default();
    for r in results {
        for d in [READ, WRITE] {
            let (a, b) = (&mut s.dir[d], &r.stats.dir[d]);
            a.ios += b.ios;
            a.bytes += b.bytes;
            a.slat.merge(&b.slat);
            a.clat.merge(&b.clat);
            a.lat.merge(&b.lat);
            // Bandwidth samples of a group add up per window; kept per clone here.
            for (x, y) in [(&mut a.bw, &b.bw), (&mut a.iops, &b.iops)] {
                x.n += y.n;
                x.sum += y.sum;
                x.sum_sq += y.sum_sq;
                x.min = if x.n == y.n { y.min } else { x.min.min(y.min) };
                x.max = x.max.max(y.max);
            }
        }
        s.sync.merge(&r.stats.sync);
        for i in 0..7 {
            s.depth[i] += r.stats.depth[i];
        }
        s.started = if s.started == 0 {
            r.stats.started
        } else {
            s.started.min(r.stats.started)
        };
        s.ended = s.ended.max(r.stats.ended);
    }
    s
}

fn job_obj(job: &FioJob, stats: &FioStats, cpu: (u64, u64), ctx: u64) -> Value {
    let runtime_ms = stats.ended.saturating_sub(stats.started) / 1_000_000;
    let own = &job.options[job.global_options.min(job.options.len())..];
    let opts: Map<String, Value> = own.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    let rt = |d: usize| if job.does(d) { runtime_ms } else { 0 };
    let depth_total: u64 = stats.depth.iter().sum();
    let pct = |c: u64| {
        if depth_total == 0 {
            0.0
        } else {
            round6(c as f64 * 100.0 / depth_total as f64)
        }
    };
    let depth_keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let level: Map<String, Value> = depth_keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.to_string(), json!(pct(stats.depth[i]))))
        .collect();
    // One I/O per submission and per reap: fio's "1 to 4" bucket.
    let one = |on: bool| {
        let keys = ["0", "4", "8", "16", "32", "64", ">=64"];
        let m: Map<String, Value> = keys
            .iter()
            .map(|k| (k.to_string(), json!(if on && *k == "4" { 100.0 } else { 0.0 })))
            .collect();
        Value::Object(m)
    };
    let (lns, lus, lms) = latency_buckets(&stats.dir);
    let span = runtime_ms.max(1) as f64 * 1e6;
    json!({
        "jobname": job.name,
        "groupid": job.group,
        "error": 0,
        "eta": 0,
        "elapsed": runtime_ms.div_ceil(1000),
        "job options": Value::Object(opts),
        "read": dir_obj(&stats.dir[READ], rt(READ), &job.percentiles),
        "write": dir_obj(&stats.dir[WRITE], rt(WRITE), &job.percentiles),
        "trim": dir_obj(&DirStat::default(), 0, &job.percentiles),
        "sync": {
            "lat_ns": lat_obj(&stats.sync, Some(&job.percentiles)),
            "total_ios": stats.sync.n,
        },
        "job_runtime": runtime_ms,
        "usr_cpu": round6(cpu.0 as f64 * 100.0 / span),
        "sys_cpu": round6(cpu.1 as f64 * 100.0 / span),
        "ctx": ctx,
        "majf": 0,
        "minf": 0,
        "iodepth_level": Value::Object(level),
        "iodepth_submit": one(depth_total > 0),
        "iodepth_complete": one(depth_total > 0),
        "latency_ns": lns,
        "latency_us": lus,
        "latency_ms": lms,
        "latency_depth": job.iodepth,
        "latency_target": 0,
        "latency_percentile": 100.0,
        "latency_window": 0,
    })
}

/// fio.json for a run with fio jobs (`None` without).
pub fn fio_json(r: &RunResult) -> Option<Value> {
    if r.fio.is_empty() {
        return None;
    }
    let mut jobs = Vec::new();
    let mut i = 0;
    while i < r.fio.len() {
        let first = &r.fio[i];
        let grouped = first.job.options.iter().any(|(k, v)| k == "group_reporting" && v != "0");
        // With group_reporting the jobs of a reporting group are one entry; else each clone.
        let mut n = 1;
        if grouped {
            while i + n < r.fio.len() && r.fio[i + n].job.group == first.job.group {
                n += 1;
            }
        }
        let part: Vec<&FioResult> = r.fio[i..i + n].iter().collect();
        let stats = if n == 1 { first.stats.clone() } else { merged(&part) };
        let cpu = part.iter().fold((0, 0), |(u, s), x| (u + x.cpu_user_ns, s + x.cpu_sys_ns));
        let ctx = part.iter().map(|x| x.ctx).sum();
        jobs.push(job_obj(&first.job, &stats, cpu, ctx));
        i += n;
    }
    let disks: Vec<Value> = r
        .devices
        .iter()
        .enumerate()
        .map(|(d, dev)| {
            let (mut rt, mut wt) = (0u64, 0u64);
            for s in &r.vmstat {
                if let Some(io) = s.dev_io.get(d) {
                    rt += io.read_ticks_ns;
                    wt += io.write_ticks_ns;
                }
            }
            json!({
                "name": dev.name,
                "read_ios": dev.requests_read,
                "write_ios": dev.requests_written,
                "read_merges": 0,
                "write_merges": 0,
                "read_ticks": rt / 1_000_000,
                "write_ticks": wt / 1_000_000,
                "in_queue": (rt + wt) / 1_000_000,
                "util": round6(dev.util * 100.0),
            })
        })
        .collect();
    let mut top = Map::new();
    top.insert(
        "fio version".into(),
        json!(format!("wblab-{} (fio-3.33 JSON)", env!("CARGO_PKG_VERSION"))),
    );
    top.insert("timestamp".into(), json!(0));
    top.insert("timestamp_ms".into(), json!(0));
    top.insert("time".into(), json!("simulated"));
    // As fio: the `[global]` options, where the file has any (those of its first job).
    let first = &r.fio[0].job;
    if first.global_options > 0 {
        let g: Map<String, Value> = first.options[..first.global_options]
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        top.insert("global options".into(), Value::Object(g));
    }
    top.insert("jobs".into(), Value::Array(jobs));
    top.insert("disk_util".into(), Value::Array(disks));
    Some(Value::Object(top))
}

/// The text of fio.json.
pub fn fio_json_text(r: &RunResult) -> Option<String> {
    fio_json(r).map(|v| serde_json::to_string_pretty(&v).expect("JSON serialises") + "\n")
}

fn rows_text(rows: &[LogRow]) -> String {
    let mut s = String::with_capacity(rows.len() * 24);
    for r in rows {
        use std::fmt::Write;
        let _ = writeln!(s, "{}, {}, {}, {}, {}", r.ms, r.value, r.ddir, r.bs, r.offset);
    }
    s
}

/// The log files of the run's fio jobs: (file name, text), named as fio names them
/// (`<prefix>_lat.<n>.log`, `n` counting every job clone of the file from 1).
pub fn fio_logs(r: &RunResult) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (n, f) in r.fio.iter().enumerate() {
        let n = n + 1;
        let logs = &f.job.logs;
        let rows = &f.stats.logs;
        // A prefix with a directory in it writes into the results directory all the same.
        let base = |p: &String| p.rsplit('/').next().unwrap_or(p).to_string();
        if let Some(p) = logs.lat.as_ref().map(base) {
            out.push((format!("{p}_lat.{n}.log"), rows_text(&rows.lat)));
            out.push((format!("{p}_clat.{n}.log"), rows_text(&rows.clat)));
            out.push((format!("{p}_slat.{n}.log"), rows_text(&rows.slat)));
        }
        if let Some(p) = logs.bw.as_ref().map(base) {
            out.push((format!("{p}_bw.{n}.log"), rows_text(&rows.bw)));
        }
        if let Some(p) = logs.iops.as_ref().map(base) {
            out.push((format!("{p}_iops.{n}.log"), rows_text(&rows.iops)));
        }
    }
    out
}
