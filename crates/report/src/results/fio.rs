//! fio's own outputs from a simulated run: `fio.json` in the shape `fio --output-format=json`
//! prints (the same field names and units, so scripts that read fio read it), `json+` (the
//! same with each latency's histogram in fio's buckets), `terse` (fio's version-3 lines), and
//! the `write_lat_log`/`write_bw_log`/`write_iops_log` files in fio's log format.
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

/// Which of fio's outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioFormat {
    Json,
    /// `json+`: JSON with a `bins` histogram beside each set of percentiles.
    JsonPlus,
    /// `terse` (`minimal`): one `;`-separated line per job, version 3.
    Terse,
}

/// `FIO_IO_U_PLAT_BITS`: fio's latency buckets are 64 per power of two.
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// `FIO_IO_U_PLAT_NR`: 29 groups of 64 buckets.
const PLAT_NR: u64 = 29 * PLAT_VAL;

/// The index of fio's latency bucket holding `ns` (stat.c's `plat_val_to_idx`).
fn plat_idx(ns: u64) -> u64 {
    let msb = 63 - ns.max(1).leading_zeros();
    if msb <= PLAT_BITS {
        return ns;
    }
    let error_bits = msb - PLAT_BITS;
    let base = u64::from(error_bits + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (ns >> error_bits);
    (base + offset).min(PLAT_NR - 1)
}

/// The latency fio prints for bucket `idx`: its value below 128 ns, else its middle
/// (stat.c's `plat_idx_to_val`).
fn plat_val(idx: u64) -> u64 {
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    let k = idx % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// json+'s `bins`: the I/Os of each non-empty fio bucket, keyed by the bucket's latency in
/// ns. The model records latencies to the microsecond (3 significant digits), so below about
/// 64 µs, where fio's buckets are finer, the counts land on the microsecond's bucket.
fn bins(s: &LatStat) -> Value {
    let mut counts: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for (v, c) in s.hist.buckets() {
        *counts.entry(plat_idx(v)).or_default() += c;
    }
    Value::Object(counts.into_iter().map(|(i, c)| (plat_val(i).to_string(), json!(c))).collect())
}

/// Which latencies have percentiles (and, in json+, bins): fio's `clat_percentiles` (on by
/// default), `lat_percentiles`, `slat_percentiles`, the job's last word on each.
#[derive(Clone, Copy)]
struct Percentiles {
    slat: bool,
    clat: bool,
    lat: bool,
}

impl Percentiles {
    fn of(job: &FioJob) -> Percentiles {
        let on = |key: &str, default: bool| {
            job.options
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map_or(default, |(_, v)| matches!(v.trim(), "" | "1" | "true" | "on" | "yes"))
        };
        Percentiles {
            slat: on("slat_percentiles", false),
            clat: on("clat_percentiles", true),
            lat: on("lat_percentiles", false),
        }
    }
}

fn lat_obj(s: &LatStat, percentiles: Option<&[f64]>, plus: bool) -> Value {
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
            if plus {
                m.insert("bins".into(), bins(s));
            }
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

fn dir_obj(d: &DirStat, runtime_ms: u64, percentiles: &[f64], which: Percentiles, plus: bool) -> Value {
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
        "slat_ns": lat_obj(&d.slat, which.slat.then_some(percentiles), plus),
        "clat_ns": lat_obj(&d.clat, which.clat.then_some(percentiles), plus),
        "lat_ns": lat_obj(&d.lat, which.lat.then_some(percentiles), plus),
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

fn job_obj(job: &FioJob, stats: &FioStats, cpu: (u64, u64), ctx: u64, plus: bool) -> Value {
    let which = Percentiles::of(job);
    let runtime_ms = stats.ended.saturating_sub(stats.started) / 1_000_000;
    let own = &job.options[job.global_options.min(job.options.len())..];
    // As fio: an option written bare (a flag) has no value to show and is left out.
    let opts: Map<String, Value> = own
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
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
    let mut obj = json!({
        "jobname": job.name,
        "groupid": job.group,
        "error": 0,
        "eta": 0,
        "elapsed": runtime_ms.div_ceil(1000),
        "job options": Value::Object(opts),
        "read": dir_obj(&stats.dir[READ], rt(READ), &job.percentiles, which, plus),
        "write": dir_obj(&stats.dir[WRITE], rt(WRITE), &job.percentiles, which, plus),
        "trim": dir_obj(&DirStat::default(), 0, &job.percentiles, which, plus),
        "sync": {
            "lat_ns": lat_obj(&stats.sync, (which.clat || which.lat).then_some(&job.percentiles[..]), plus),
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
    });
    if let Some((_, desc)) = job.options.iter().rev().find(|(k, _)| k == "description") {
        obj["desc"] = json!(desc);
    }
    obj
}

/// fio's `disk_util`: each device's requests and busy time over the run.
fn disk_util(r: &RunResult) -> Vec<Value> {
    r.devices
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
        .collect()
}

/// fio.json for a run with fio jobs (`None` without).
pub fn fio_json(r: &RunResult) -> Option<Value> {
    fio_json_with(r, false)
}

/// One entry of fio's output: a job clone, or a reporting group with `group_reporting`.
struct Entry<'a> {
    job: &'a FioJob,
    stats: FioStats,
    /// User and system CPU time, ns.
    cpu: (u64, u64),
    ctx: u64,
}

/// The entries of the run's fio output, in file order.
fn entries(r: &RunResult) -> Vec<Entry<'_>> {
    let mut out = Vec::new();
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
        out.push(Entry {
            job: &first.job,
            stats: if n == 1 { first.stats.clone() } else { merged(&part) },
            cpu: part.iter().fold((0, 0), |(u, s), x| (u + x.cpu_user_ns, s + x.cpu_sys_ns)),
            ctx: part.iter().map(|x| x.ctx).sum(),
        });
        i += n;
    }
    out
}

/// fio's JSON, with json+'s bins when `plus`.
fn fio_json_with(r: &RunResult, plus: bool) -> Option<Value> {
    if r.fio.is_empty() {
        return None;
    }
    let jobs: Vec<Value> = entries(r).iter().map(|e| job_obj(e.job, &e.stats, e.cpu, e.ctx, plus)).collect();
    let disks = disk_util(r);
    let mut top = Map::new();
    top.insert("fio version".into(), json!(fio_version()));
    top.insert("timestamp".into(), json!(0));
    top.insert("timestamp_ms".into(), json!(0));
    top.insert("time".into(), json!("simulated"));
    // As fio: the `[global]` options, where the file has any (those of its first job).
    let first = &r.fio[0].job;
    if first.global_options > 0 {
        let g: Map<String, Value> = first.options[..first.global_options]
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        top.insert("global options".into(), Value::Object(g));
    }
    top.insert("jobs".into(), Value::Array(jobs));
    top.insert("disk_util".into(), Value::Array(disks));
    Some(Value::Object(top))
}

/// One job (or reporting group) and direction that did I/O, as fio's summary leads with it.
pub struct FioRow {
    pub job: String,
    pub direction: &'static str,
    pub mib_s: f64,
    pub iops: f64,
    /// Completion latency, ns: mean, p50, p99, p99.9 (`None` where fio.json has none).
    pub clat_ns: [Option<f64>; 4],
    pub ios: u64,
}

/// The rows of a run's fio.json (as [`fio_json`] gives it or as read back from the file):
/// each job and direction with I/O, in the file's order.
pub fn fio_rows(v: &Value) -> Vec<FioRow> {
    let mut rows = Vec::new();
    for job in v["jobs"].as_array().into_iter().flatten() {
        for direction in ["read", "write"] {
            let d = &job[direction];
            let ios = d["total_ios"].as_u64().unwrap_or(0);
            if ios == 0 {
                continue;
            }
            let p = &d["clat_ns"]["percentile"];
            rows.push(FioRow {
                job: job["jobname"].as_str().unwrap_or("?").to_string(),
                direction,
                mib_s: d["bw_bytes"].as_f64().unwrap_or(0.0) / 1_048_576.0,
                iops: d["iops"].as_f64().unwrap_or(0.0),
                clat_ns: [
                    d["clat_ns"]["mean"].as_f64(),
                    p["50.000000"].as_f64(),
                    p["99.000000"].as_f64(),
                    p["99.900000"].as_f64(),
                ],
                ios,
            });
        }
    }
    rows
}

/// fio's output of the run in `format` (`None` without fio jobs).
pub fn fio_output(r: &RunResult, format: FioFormat) -> Option<String> {
    match format {
        FioFormat::Json => fio_json_text(r),
        FioFormat::JsonPlus => fio_json_with(r, true).map(|v| serde_json::to_string_pretty(&v).expect("JSON serialises") + "\n"),
        FioFormat::Terse => fio_terse(r),
    }
}

/// fio's terse output, version 3 (`--output-format=terse`): for each entry, `3;version;name;
/// group;error`, the read and write figures (41 fields each), CPU, I/O depths, latency
/// shares, the disks, and the description when the job has one.
fn fio_terse(r: &RunResult) -> Option<String> {
    use std::fmt::Write;
    if r.fio.is_empty() {
        return None;
    }
    let disks = disk_util(r);
    let mut out = String::new();
    for e in entries(r) {
        let v = job_obj(e.job, &e.stats, e.cpu, e.ctx, false);
        let num = |x: &Value| x.as_f64().unwrap_or(0.0);
        let int = |x: &Value| x.as_u64().unwrap_or(0);
        let _ = write!(out, "3;{};{};{};0", fio_version(), e.job.name, e.job.group);
        let which = Percentiles::of(e.job);
        for (d, key) in [(READ, "read"), (WRITE, "write")] {
            let o = &v[key];
            let (bytes, ios, runtime) = (int(&o["io_bytes"]), int(&o["total_ios"]), int(&o["runtime"]));
            let bw = (1000 * bytes).checked_div(runtime).map_or(0, |b| b / 1024);
            let iops = (1000 * ios).checked_div(runtime).unwrap_or(0);
            let _ = write!(out, ";{};{bw};{iops};{runtime}", bytes >> 10);
            let lat = |out: &mut String, l: &Value| {
                let _ = write!(
                    out,
                    ";{};{};{:.6};{:.6}",
                    int(&l["min"]) / 1000,
                    int(&l["max"]) / 1000,
                    num(&l["mean"]) / 1000.0,
                    num(&l["stddev"]) / 1000.0
                );
            };
            lat(&mut out, &o["slat_ns"]);
            lat(&mut out, &o["clat_ns"]);
            // Total latency's percentiles with lat_percentiles, else completion latency's; no
            // samples give 0 at each.
            let hist = if which.lat {
                Some(&e.stats.dir[d].lat)
            } else {
                which.clat.then_some(&e.stats.dir[d].clat)
            };
            let list: &[f64] = if hist.is_some() { &e.job.percentiles } else { &[] };
            for i in 0..20 {
                match (list.get(i), hist) {
                    (Some(&q), Some(h)) => {
                        let ns = if h.n > 0 { h.hist.quantile(q / 100.0) } else { 0 };
                        let _ = write!(out, ";{q:.6}%={}", ns / 1000);
                    }
                    _ => out.push_str(";0%=0"),
                }
            }
            lat(&mut out, &o["lat_ns"]);
            let _ = write!(
                out,
                ";{};{};{:.6}%;{:.6};{:.6}",
                int(&o["bw_min"]),
                int(&o["bw_max"]),
                num(&o["bw_agg"]),
                num(&o["bw_mean"]),
                num(&o["bw_dev"])
            );
        }
        let _ = write!(
            out,
            ";{:.6}%;{:.6}%;{};{};{}",
            num(&v["usr_cpu"]),
            num(&v["sys_cpu"]),
            int(&v["ctx"]),
            int(&v["majf"]),
            int(&v["minf"])
        );
        for k in ["1", "2", "4", "8", "16", "32", ">=64"] {
            let _ = write!(out, ";{:3.1}%", num(&v["iodepth_level"][k]));
        }
        // As fio: the sub-microsecond share counts in the first microsecond bucket.
        let below_us: f64 = LAT_KEYS.iter().map(|k| num(&v["latency_ns"][k.to_string().as_str()])).sum();
        for (i, k) in LAT_KEYS.iter().enumerate() {
            let share = num(&v["latency_us"][k.to_string().as_str()]) + if i == 0 { below_us } else { 0.0 };
            let _ = write!(out, ";{share:3.2}%");
        }
        for k in LAT_KEYS
            .iter()
            .map(u64::to_string)
            .chain(["2000".to_string(), ">=2000".to_string()])
        {
            let _ = write!(out, ";{:3.2}%", num(&v["latency_ms"][k.as_str()]));
        }
        for d in &disks {
            let _ = write!(
                out,
                ";{};{};{};{};{};{};{};{};{:3.2}%",
                d["name"].as_str().unwrap_or(""),
                int(&d["read_ios"]),
                int(&d["write_ios"]),
                int(&d["read_merges"]),
                int(&d["write_merges"]),
                int(&d["read_ticks"]),
                int(&d["write_ticks"]),
                int(&d["in_queue"]),
                num(&d["util"])
            );
        }
        if let Some((_, desc)) = e.job.options.iter().rev().find(|(k, _)| k == "description") {
            let _ = write!(out, ";{desc}");
        }
        out.push('\n');
    }
    Some(out)
}

/// The version fio's outputs name: wblab's, in the format of fio 3.33.
fn fio_version() -> String {
    format!("wblab-{} (fio-3.33 formats)", env!("CARGO_PKG_VERSION"))
}

/// The text of fio.json.
pub fn fio_json_text(r: &RunResult) -> Option<String> {
    fio_json(r).map(|v| serde_json::to_string_pretty(&v).expect("JSON serialises") + "\n")
}

/// A log's lines as fio 3.33 writes them: time, value, direction, block size, the offset
/// with `log_offset=1`, and last the priority column (1 for a realtime-class I/O without
/// `log_prio`; the model's jobs run at the default class, so 0).
fn rows_text(rows: &[LogRow], offset: bool) -> String {
    let mut s = String::with_capacity(rows.len() * 28);
    for r in rows {
        use std::fmt::Write;
        let _ = if offset {
            writeln!(s, "{}, {}, {}, {}, {}, 0", r.ms, r.value, r.ddir, r.bs, r.offset)
        } else {
            writeln!(s, "{}, {}, {}, {}, 0", r.ms, r.value, r.ddir, r.bs)
        };
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
            out.push((format!("{p}_lat.{n}.log"), rows_text(&rows.lat, logs.offset)));
            out.push((format!("{p}_clat.{n}.log"), rows_text(&rows.clat, logs.offset)));
            out.push((format!("{p}_slat.{n}.log"), rows_text(&rows.slat, logs.offset)));
        }
        if let Some(p) = logs.bw.as_ref().map(base) {
            out.push((format!("{p}_bw.{n}.log"), rows_text(&rows.bw, logs.offset)));
        }
        if let Some(p) = logs.iops.as_ref().map(base) {
            out.push((format!("{p}_iops.{n}.log"), rows_text(&rows.iops, logs.offset)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bin real fio 3.33 printed (a recorded json+ output) is a bucket's printed value
    /// under our reading of fio's buckets, and values map into the bucket around them.
    #[test]
    fn fio_buckets_as_fio_prints_them() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../cli/tests/data/fio-3.33/fio-json+.json");
        let real: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("recorded output")).expect("JSON");
        let mut seen = 0;
        for job in real["jobs"].as_array().expect("jobs") {
            for dir in ["read", "write"] {
                for lat in ["clat_ns", "lat_ns"] {
                    for key in job[dir][lat]["bins"].as_object().into_iter().flat_map(|m| m.keys()) {
                        let v: u64 = key.parse().expect("a latency");
                        assert_eq!(plat_val(plat_idx(v)), v, "{key}");
                        seen += 1;
                    }
                }
            }
        }
        assert!(seen > 50, "{seen} bins");
        for v in [0, 1, 127, 128, 1000, 37_000, 1_000_000, 17_000_000_000, u64::MAX / 2] {
            let (i, mid) = (plat_idx(v), plat_val(plat_idx(v)));
            assert!(i < PLAT_NR, "{v}");
            // Within fio's resolution: 1/64 of the value's power of two.
            assert!(v.abs_diff(mid) <= (v / 64).max(1) || i == PLAT_NR - 1, "{v} -> {mid}");
        }
    }
}
