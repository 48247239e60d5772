//! The verdict: the few sentences an expert would write after looking at a run's graphs,
//! derived by rules from the run's own figures. Each rule states its evidence (the numbers it
//! fired on) and names the figure that shows it; a rule that lacks its evidence says nothing.
//!
//! The rules, in the order they are reported:
//! * **throttled**: a task group slept in balance_dirty_pages (how often, how long, what share
//!   of its time);
//! * **stalled**: a latency-sensitive group's longest operation of some second is at least
//!   [`STALL_FACTOR`] times its typical second's and at least [`STALL_MIN_MS`];
//! * **slowed**: a latency-sensitive group's mean operation over whole seconds is at least
//!   [`SLOW_FACTOR`] times its typical second's (and [`SLOW_MIN_MS`] more), in stretches that
//!   are the exception, not the rule; when the stretches recur at even intervals, and when its
//!   device wrote at least twice its typical rate in them, the sentence says so (the periodic
//!   writeback bursts that percentiles hide);
//! * **governed**: where the dirty pages of a device's writeback sat against the limits of
//!   `balance_dirty_pages` (below the free-run point, in its control area around the setpoint,
//!   at the hard limit), when they left free run at all;
//! * **slow fsync**: a commit probe's median fsync() took [`SLOW_FSYNC_MS`] or more, and what
//!   it waited on: the journal's commits where the device has one, else the device's queue
//!   (for runs that do not record the calls' own waits, e.g. measured ones);
//! * **sync waits**: a group's slowest fsync/fdatasync/sync (or O_SYNC write's sync) took
//!   [`SLOW_FSYNC_MS`] or more: how long it waited for its data, the journal commit and the
//!   cache flush, and the shares of all its calls' time;
//! * **device-bound**: a device had a request inside it [`BUSY_UTIL`] of the run or more;
//! * **blk-throttle**: a device's blk-throttle limit (`throttle/write_bps`, `read_bps`; the
//!   cgroup v1 `blkio.throttle.*_bps_device` files) held its traffic: it moved at
//!   [`AT_LIMIT`] of the limit or more in [`HELD_SHARE`] of the seconds or more;
//! * **cgroup**: a memory cgroup's dirty and writeback pages came to [`CGROUP_NEAR`] of its own
//!   dirty threshold (cgroup v2: its writers were paced by the group's domain), or, with no
//!   such threshold (cgroup v1), to that share of its memory limit;
//! * **queued behind writeback**: a reading group's requests waited in its device's queue
//!   while writes filled it: in [`HELD_SHARE`] of its seconds or more (at least three) the
//!   queue held [`QUEUE_MIN`] requests or more on average, [`WRITE_SHARE`] of them writes
//!   (w/s × w_await, Little's law), and the group's operations took [`QUEUED_FACTOR`] times
//!   the device's own time per request or more (its busy time over the requests it completed,
//!   iostat's svctm);
//! * **reclaim**: a task group's allocations waited for memory (reclaim found no clean page
//!   cache and waited on writeback) for [`RECLAIM_SHARE`] of its time and
//!   [`RECLAIM_MIN_MS`] or more.

use crate::load::rundir::{Csv, RunDir, SyncSplit};
use wblab_sim::metrics::RunResult;

/// A stall is this many times the typical second's longest operation...
pub const STALL_FACTOR: f64 = 10.0;
/// ...and at least this long, ms (a 0.1 ms read turning 1 ms is not worth a sentence).
pub const STALL_MIN_MS: f64 = 50.0;
/// A slow second's mean operation is this many times the typical second's mean...
pub const SLOW_FACTOR: f64 = 3.0;
/// ...and at least this much longer, ms.
pub const SLOW_MIN_MS: f64 = 5.0;
/// Utilisation from which a device set the run's pace.
pub const BUSY_UTIL: f64 = 0.9;
/// A commit probe's median fsync() from which it is worth a sentence, ms.
pub const SLOW_FSYNC_MS: f64 = 50.0;
/// Share of a memory cgroup's dirty threshold (or, on v1, of its limit) its dirty and
/// writeback pages must reach for a sentence.
pub const CGROUP_NEAR: f64 = 0.7;
/// A second's rate counts as held at a blk-throttle limit from this share of the limit...
pub const AT_LIMIT: f64 = 0.9;
/// ...and the limit held the device when this share of the seconds (at least three) were.
pub const HELD_SHARE: f64 = 0.25;
/// A second's device queue counts as held by writeback with this many requests in it on
/// average...
pub const QUEUE_MIN: f64 = 2.0;
/// ...this share of them writes...
pub const WRITE_SHARE: f64 = 0.5;
/// ...and the group's operations taking this many times the device's own time per request.
pub const QUEUED_FACTOR: f64 = 3.0;
/// A group's waits for memory are worth a sentence from this share of its time...
pub const RECLAIM_SHARE: f64 = 0.01;
/// ...and this long in all, ms.
pub const RECLAIM_MIN_MS: f64 = 100.0;
/// Seconds with operations a group needs before its typical second means anything.
const STALL_MIN_SECONDS: usize = 10;
/// A writer's longest write() this many times its longest balance_dirty_pages pause, and at
/// least [`LONG_WRITE_MIN_MS`], is explained: the verdict's "longest pause" alone would hide it.
pub const LONG_WRITE_FACTOR: f64 = 4.0;
pub const LONG_WRITE_MIN_MS: f64 = 500.0;

/// One sentence and the figure (its file name without `.svg`) that shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub rule: &'static str,
    pub text: String,
    pub figure: &'static str,
}

/// A task group's balance_dirty_pages sleeps, its operations and its waits for memory.
struct Group {
    /// Its `[[task]]` name (latency.csv's `task`), and the name with its count.
    name: String,
    label: String,
    tasks: usize,
    pauses: u64,
    p50_ms: f64,
    max_ms: f64,
    total_ms: f64,
    job: String,
    device: String,
    op_p50_ms: f64,
    op_max_ms: f64,
    /// The time of all its operations, ms.
    op_total_ms: f64,
    reclaim_waits: u64,
    reclaim_ms: f64,
    syncs: Option<SyncSplit>,
    /// What its tasks wrote and read, bytes.
    bytes_written: u64,
    bytes_read: u64,
}

/// A cgroup as the who-hurts-whom rules see it.
struct CgroupFacts {
    path: String,
    /// Its io.max rules: (device, "write" or "read", bytes/s).
    io_limits: Vec<(String, &'static str, u64)>,
    /// Its bfq weight on each device whose scheduler is bfq, where it is not the default.
    bfq_weights: Vec<(String, u64)>,
    /// The `[[task]]` groups that run in it.
    task_groups: Vec<String>,
    memory_max: Option<u64>,
    /// memory.events `max`, and what its own reclaim freed, bytes.
    max_events: u64,
    reclaimed_bytes: u64,
}

/// The cgroups of a resolved scenario (as summary.json holds it), with each group's
/// memory.events `max` and reclaimed bytes (`events`, in order).
fn cgroup_facts(sc: &serde_json::Value, events: &[(u64, u64)]) -> Vec<CgroupFacts> {
    let devs = sc["devices"].as_array().cloned().unwrap_or_default();
    let dev = |k: usize| devs.get(k).and_then(|d| d["name"].as_str()).unwrap_or("?").to_string();
    let bfq = |k: usize| devs.get(k).and_then(|d| d["queue"]["scheduler"].as_str()) == Some("bfq");
    let tasks = sc["tasks"].as_array().cloned().unwrap_or_default();
    let Some(groups) = sc["cgroups"]["groups"].as_array() else {
        return Vec::new();
    };
    groups
        .iter()
        .enumerate()
        .map(|(k, g)| {
            let mut io_limits = Vec::new();
            for rule in g["io_max"].as_array().into_iter().flatten() {
                let d = rule[0].as_u64().unwrap_or(0) as usize;
                for (dir, key) in [("write", "write_bps"), ("read", "read_bps")] {
                    if let Some(bps) = rule[1][key].as_u64().filter(|&b| b > 0) {
                        io_limits.push((dev(d), dir, bps));
                    }
                }
            }
            let default = g["bfq_weight"].as_u64().unwrap_or(100);
            let bfq_weights = (0..devs.len())
                .filter(|&d| bfq(d))
                .filter_map(|d| {
                    let own = g["bfq_weight_device"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|r| r[0].as_u64() == Some(d as u64));
                    let w = own.and_then(|r| r[1].as_u64()).unwrap_or(default);
                    (w != 100).then(|| (dev(d), w))
                })
                .collect();
            let mut task_groups: Vec<String> = Vec::new();
            for t in tasks.iter().filter(|t| t["cgroup"].as_u64() == Some(k as u64)) {
                let name = t["name"].as_str().unwrap_or("?").to_string();
                if !task_groups.contains(&name) {
                    task_groups.push(name);
                }
            }
            let (max_events, reclaimed_bytes) = events.get(k).copied().unwrap_or((0, 0));
            CgroupFacts {
                path: g["path"].as_str().unwrap_or("?").to_string(),
                io_limits,
                bfq_weights,
                task_groups,
                memory_max: g["memory_max"].as_u64(),
                max_events,
                reclaimed_bytes,
            }
        })
        .collect()
}

/// A device as the rules see it; `journal` = (commit mean, logging mean, ordered-data mean), ms.
struct Device {
    name: String,
    util: f64,
    request_p50_ms: f64,
    journal: Option<(f64, f64, f64)>,
    /// blk-throttle bytes/s limits: (direction, limit).
    limits: Vec<(&'static str, u64)>,
}

/// A device's blk-throttle bytes/s limits, from its resolved `throttle` table.
fn limits(read_bps: Option<u64>, write_bps: Option<u64>) -> Vec<(&'static str, u64)> {
    [("write", write_bps), ("read", read_bps)]
        .into_iter()
        .filter_map(|(d, v)| v.filter(|&v| v > 0).map(|v| (d, v)))
        .collect()
}

/// What the rules read, from a run in memory or a results directory.
pub struct Input {
    sim_seconds: f64,
    groups: Vec<Group>,
    devices: Vec<Device>,
    latency: Option<Csv>,
    throttle: Option<Csv>,
    /// timeseries.csv: each device's write rate per second.
    timeseries: Option<Csv>,
    /// iostat.csv: each device's requests, awaits and queue per second.
    iostat: Option<Csv>,
    /// cgroups.csv, and each group's path, memory limit (bytes) and v1 writeback waits.
    cgroups: Option<Csv>,
    cgroup_limits: Vec<(String, Option<u64>, Option<u64>)>,
    /// Each pressure group (`system`, then the cgroups) and the share of the run it was
    /// stalled.
    pressure: Vec<crate::results::csv::PressureRow>,
    /// The cgroups: their limits, weights, tasks and memory events.
    cgroup_facts: Vec<CgroupFacts>,
    /// blk-iolatency, per device and cgroup with a target or bios it held.
    iolatency: Vec<IolatFacts>,
}

/// What blk-iolatency did on one device to and for one cgroup (summary.json's
/// `devices[].iolatency`).
#[derive(Clone, Debug, PartialEq)]
struct IolatFacts {
    device: String,
    cgroup: String,
    target_ms: f64,
    missed: u64,
    waits: u64,
    wait_ms: f64,
    min_depth: Option<u64>,
}

impl IolatFacts {
    fn of_summary(summary: &serde_json::Value) -> Vec<IolatFacts> {
        let mut out = Vec::new();
        for d in summary["devices"].as_array().into_iter().flatten() {
            for g in d["iolatency"].as_array().into_iter().flatten() {
                out.push(IolatFacts {
                    device: d["name"].as_str().unwrap_or("").to_string(),
                    cgroup: g["cgroup"].as_str().unwrap_or("").to_string(),
                    target_ms: g["target_ms"].as_f64().unwrap_or(0.0),
                    missed: g["missed"].as_u64().unwrap_or(0),
                    waits: g["waits"].as_u64().unwrap_or(0),
                    wait_ms: g["wait_ms"].as_f64().unwrap_or(0.0),
                    min_depth: g["min_depth"].as_u64(),
                });
            }
        }
        out
    }

    fn of_result(r: &RunResult) -> Vec<IolatFacts> {
        let mut out = Vec::new();
        for d in &r.devices {
            for (s, g) in d.iolatency.iter().zip(&r.cgroups).filter(|(s, _)| s.target_ns > 0 || s.waits > 0) {
                out.push(IolatFacts {
                    device: d.name.clone(),
                    cgroup: g.path.clone(),
                    target_ms: s.target_ns as f64 / 1e6,
                    missed: s.missed,
                    waits: s.waits,
                    wait_ms: s.wait_ns as f64 / 1e6,
                    min_depth: (s.min_depth != u64::MAX).then_some(s.min_depth),
                });
            }
        }
        out
    }
}

fn label(name: &str, n: usize) -> String {
    if n > 1 {
        format!("{name} ×{n}")
    } else {
        name.to_string()
    }
}

impl Input {
    /// From a results directory (measured or simulated).
    pub fn from_dir(d: &RunDir) -> Input {
        let mut groups: Vec<Group> = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for t in &d.tasks {
            if !names.contains(&t.name.as_str()) {
                names.push(&t.name);
            }
        }
        for n in names {
            let ts: Vec<_> = d.tasks.iter().filter(|t| t.name == n).collect();
            let pauses: u64 = ts.iter().map(|t| t.pauses.count).sum();
            let mut p50s: Vec<f64> = ts.iter().filter(|t| t.pauses.count > 0).map(|t| t.pauses.p50).collect();
            p50s.sort_by(f64::total_cmp);
            groups.push(Group {
                name: n.to_string(),
                reclaim_waits: ts.iter().map(|t| t.reclaim_waits).sum(),
                reclaim_ms: ts.iter().map(|t| t.reclaim_wait_ms).sum(),
                syncs: ts.iter().fold(None, |a, t| SyncSplit::merge(a, t.syncs)),
                bytes_written: ts.iter().map(|t| t.bytes_written).sum(),
                bytes_read: ts.iter().map(|t| t.bytes_read).sum(),
                label: label(n, ts.len()),
                tasks: ts.len(),
                pauses,
                p50_ms: p50s.get(p50s.len() / 2).copied().unwrap_or(0.0),
                max_ms: ts.iter().map(|t| t.pauses.max).fold(0.0, f64::max),
                total_ms: ts.iter().map(|t| t.pauses.mean_or_total).sum(),
                job: ts[0].job.clone(),
                device: ts[0].device.clone(),
                op_p50_ms: ts[0].op.p50,
                op_max_ms: ts.iter().map(|t| t.op.max).fold(0.0, f64::max),
                op_total_ms: ts.iter().map(|t| t.op.count as f64 * t.op.mean_or_total).sum(),
            });
        }
        Input {
            sim_seconds: d.sim_seconds,
            groups,
            devices: d
                .devices
                .iter()
                .enumerate()
                .map(|(k, x)| {
                    let j = &d.summary["devices"][k]["journal"];
                    let f = |key: &str| j.get(key).and_then(serde_json::Value::as_f64);
                    let t = &d.summary["scenario"]["devices"][k]["throttle"];
                    Device {
                        limits: limits(t["read_bps"].as_u64(), t["write_bps"].as_u64()),
                        name: x.name.clone(),
                        util: x.util,
                        request_p50_ms: x.latency.p50,
                        journal: match (f("commits"), f("commit_mean_ms")) {
                            (Some(c), Some(m)) if c > 0.0 => {
                                Some((m, f("logging_mean_ms").unwrap_or(0.0), f("flushing_mean_ms").unwrap_or(0.0)))
                            }
                            _ => None,
                        },
                    }
                })
                .collect(),
            latency: d.latency.clone(),
            throttle: d.throttle.clone(),
            timeseries: d.timeseries.clone(),
            iostat: d.iostat.clone(),
            cgroups: d.cgroups.clone(),
            cgroup_limits: d.summary["scenario"]["cgroups"]["groups"]
                .as_array()
                .map(|gs| {
                    gs.iter()
                        .enumerate()
                        .map(|(k, g)| {
                            (
                                g["path"].as_str().unwrap_or("").to_string(),
                                g["memory_max"].as_u64(),
                                d.summary["cgroups"][k]["writeback_waits"].as_u64(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
            cgroup_facts: cgroup_facts(
                &d.summary["scenario"],
                &d.summary["cgroups"]
                    .as_array()
                    .map(|gs| {
                        gs.iter()
                            .map(|g| (g["max_events"].as_u64().unwrap_or(0), g["reclaimed_bytes"].as_u64().unwrap_or(0)))
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default(),
            ),
            pressure: crate::results::csv::pressure_rows_of_summary(&d.summary),
            iolatency: IolatFacts::of_summary(&d.summary),
        }
    }

    /// From a run in memory (what `wblab run` prints).
    pub fn from_result(r: &RunResult) -> Input {
        let mut names: Vec<&str> = Vec::new();
        for t in &r.tasks {
            if !names.contains(&t.name.as_str()) {
                names.push(&t.name);
            }
        }
        let groups = names
            .into_iter()
            .map(|n| {
                let mut h = wblab_sim::metrics::LatencyHist::new();
                let ts: Vec<_> = r.tasks.iter().filter(|t| t.name == n).collect();
                for t in &ts {
                    h.add(&t.pauses);
                }
                let s = h.summary();
                let op = ts[0].op_latency.summary();
                Group {
                    name: n.to_string(),
                    reclaim_waits: ts.iter().map(|t| t.reclaim_waits).sum(),
                    reclaim_ms: ts.iter().map(|t| t.reclaim_wait_ns).sum::<u64>() as f64 / 1e6,
                    syncs: ts.iter().fold(None, |a, t| SyncSplit::merge(a, SyncSplit::of(&t.syncs))),
                    bytes_written: ts.iter().map(|t| t.bytes_written).sum(),
                    bytes_read: ts.iter().map(|t| t.bytes_read).sum(),
                    label: label(n, ts.len()),
                    tasks: ts.len(),
                    pauses: s.count,
                    p50_ms: s.p50 as f64 / 1e6,
                    max_ms: s.max as f64 / 1e6,
                    total_ms: s.total as f64 / 1e6,
                    job: ts[0].job.to_string(),
                    device: ts[0].device.clone(),
                    op_p50_ms: op.p50 as f64 / 1e6,
                    op_max_ms: ts.iter().map(|t| t.op_latency.summary().max as f64 / 1e6).fold(0.0, f64::max),
                    op_total_ms: ts.iter().map(|t| t.op_latency.summary().total as f64 / 1e6).sum(),
                }
            })
            .collect();
        let latency = crate::results::csv::has_latency(r).then(|| {
            let mut v = Vec::new();
            crate::results::csv::write_latency(&mut v, r).expect("writing to memory cannot fail");
            Csv::parse(&String::from_utf8_lossy(&v)).expect("latency.csv as written")
        });
        let throttle = (!r.throttle.is_empty()).then(|| {
            let mut v = Vec::new();
            crate::results::csv::write_throttle(&mut v, r).expect("writing to memory cannot fail");
            Csv::parse(&String::from_utf8_lossy(&v)).expect("throttle.csv as written")
        });
        let timeseries = {
            let mut v = Vec::new();
            crate::results::csv::write_timeseries(&mut v, r).expect("writing to memory cannot fail");
            Csv::parse(&String::from_utf8_lossy(&v)).ok()
        };
        let iostat = crate::results::csv::has_iostat(r).then(|| {
            let mut v = Vec::new();
            crate::results::csv::write_iostat(&mut v, r).expect("writing to memory cannot fail");
            Csv::parse(&String::from_utf8_lossy(&v)).expect("iostat.csv as written")
        });
        let cgroups = (!r.cgroups.is_empty()).then(|| {
            let mut v = Vec::new();
            crate::results::csv::write_cgroups(&mut v, r).expect("writing to memory cannot fail");
            Csv::parse(&String::from_utf8_lossy(&v)).expect("cgroups.csv as written")
        });
        let pressure = crate::results::csv::pressure_rows(r);
        let events: Vec<(u64, u64)> = r
            .cgroups
            .iter()
            .map(|g| (g.events.max_events, g.events.reclaimed * wblab_sim::units::PAGE_SIZE))
            .collect();
        let cgroup_facts = cgroup_facts(&serde_json::to_value(&r.scenario).unwrap_or_default(), &events);
        Input {
            iolatency: IolatFacts::of_result(r),
            pressure,
            cgroup_facts,
            cgroups,
            cgroup_limits: r
                .cgroups
                .iter()
                .map(|g| (g.path.clone(), g.memory_max, Some(g.events.writeback_waits)))
                .collect(),
            sim_seconds: r.sim_ns as f64 / 1e9,
            groups,
            devices: r
                .devices
                .iter()
                .zip(&r.scenario.devices)
                .map(|(d, c)| Device {
                    limits: limits(c.throttle.read_bps, c.throttle.write_bps),
                    name: d.name.clone(),
                    util: d.util,
                    request_p50_ms: d.request_latency.summary().p50 as f64 / 1e6,
                    journal: d.journal.as_ref().filter(|j| j.commits > 0).map(|j| {
                        (
                            j.commit_mean_ns as f64 / 1e6,
                            j.logging_mean_ns as f64 / 1e6,
                            j.flushing_mean_ns as f64 / 1e6,
                        )
                    }),
                })
                .collect(),
            latency,
            throttle,
            timeseries,
            iostat,
        }
    }
}

/// The findings of every rule, in order.
pub fn verdict(i: &Input) -> Vec<Finding> {
    let mut out = Vec::new();
    throttled(i, &mut out);
    long_writes(i, &mut out);
    stalled(i, &mut out);
    slowed(i, &mut out);
    governed(i, &mut out);
    slow_fsync(i, &mut out);
    sync_waits(i, &mut out);
    device_bound(i, &mut out);
    blk_throttle(i, &mut out);
    cgroup_limits(i, &mut out);
    queued_behind_writeback(i, &mut out);
    reclaim(i, &mut out);
    pressure(i, &mut out);
    who_hurts_whom(i, &mut out);
    out
}

/// A cgroup's I/O on every device over the run (io.stat's `wbytes` or `rbytes` at its last
/// sample, over that time), where cgroups.csv has it.
fn io_stat_rate(i: &Input, path: &str, dir: &str) -> Option<f64> {
    let c = i.cgroups.as_ref()?;
    let (t, g, v) = (
        c.col("t_s")?,
        c.col("cgroup")?,
        c.col(if dir == "write" { "io_wbytes" } else { "io_rbytes" })?,
    );
    let last = c.rows.iter().rev().find(|r| r[g] == path && !r[v].is_empty())?;
    let (secs, bytes) = (last[t].parse::<f64>().ok()?, last[v].parse::<f64>().ok()?);
    (secs > 0.0).then(|| bytes / secs)
}

/// A group's I/O rate at this share of its io.max limit or more was held by it.
pub const IO_LIMIT_HELD: f64 = 0.75;

/// What each cgroup waited on and because of whom: the io.max limit that held its I/O, the
/// memory.max its charges met, and under bfq the journal thread, which writes every group's
/// commits from the root cgroup, so that a group's fsyncs are not served at its own weight.
fn who_hurts_whom(i: &Input, out: &mut Vec<Finding>) {
    let secs = i.sim_seconds.max(1e-9);
    for c in &i.cgroup_facts {
        let mine: Vec<&Group> = i.groups.iter().filter(|g| c.task_groups.contains(&g.name)).collect();
        for (dev, dir, bps) in &c.io_limits {
            let bytes: u64 = mine
                .iter()
                .filter(|g| &g.device == dev)
                .map(|g| if *dir == "write" { g.bytes_written } else { g.bytes_read })
                .sum();
            let rate = bytes as f64 / secs;
            if bytes > 0 && rate >= IO_LIMIT_HELD * *bps as f64 {
                let how = if *dir == "write" {
                    "the page cache took the first burst, then balance_dirty_pages paced its writers to what its writeback drained"
                } else {
                    "each read waited its turn in blk-throttle"
                };
                let reached = io_stat_rate(i, &c.path, dir)
                    .map(|r| format!(", and its {dir}s reached the devices at {:.1} MB/s (io.stat)", r / 1e6))
                    .unwrap_or_default();
                out.push(Finding {
                    rule: "who hurts whom",
                    text: format!(
                        "io.max held {}'s {dir}s to {dev} at {:.1} MB/s ({}bps={bps}): its tasks {} {:.1} MB/s over the run{reached} ({how}).",
                        c.path,
                        *bps as f64 / 1e6,
                        &dir[..1],
                        if *dir == "write" { "wrote" } else { "read" },
                        rate / 1e6
                    ),
                    figure: "balance_dirty_pages-task-bw",
                });
            }
        }
        if c.max_events > 0 {
            let limit = c
                .memory_max
                .map_or(String::new(), |m| format!(" of {:.0} MiB", m as f64 / 1048576.0));
            out.push(Finding {
                rule: "who hurts whom",
                text: format!(
                    "{}'s charges met its memory.max{limit} {} times (memory.events max): each time its own reclaim made room, {:.0} MiB in all, and where only dirty and writeback pages were left its task waited for writeback.",
                    c.path,
                    c.max_events,
                    c.reclaimed_bytes as f64 / 1048576.0
                ),
                figure: "cgroups",
            });
        }
        for (dev, w) in &c.bfq_weights {
            let syncs: u64 = mine
                .iter()
                .filter(|g| &g.device == dev)
                .filter_map(|g| g.syncs)
                .map(|s| s.calls)
                .sum();
            let journal = i.devices.iter().any(|d| &d.name == dev && d.journal.is_some());
            if syncs == 0 || !journal {
                continue;
            }
            out.push(Finding {
                rule: "who hurts whom",
                text: format!(
                    "{}'s {syncs} sync calls on {dev} waited for journal commits, which the jbd2 thread writes from the root cgroup: bfq serves them at the root group's weight (100), not at {}'s {w}{}.",
                    c.path,
                    c.path,
                    if *w > 100 { ", and the device time its higher weight takes from the root group is time its own commits wait" } else { "" }
                ),
                figure: "latency-cdf",
            });
        }
    }
    iolatency(i, out);
}

/// io.latency: a group that missed its target made blk-iolatency cut its siblings' queue depth;
/// the groups whose bios then waited, and how long.
fn iolatency(i: &Input, out: &mut Vec<Finding>) {
    for p in i.iolatency.iter().filter(|p| p.target_ms > 0.0 && p.missed > 0) {
        let held: Vec<String> = i
            .iolatency
            .iter()
            .filter(|g| g.device == p.device && g.cgroup != p.cgroup && g.waits > 0)
            .map(|g| {
                let depth = g.min_depth.map_or(String::new(), |d| format!(", its depth cut to {d}"));
                format!(
                    "{}'s bios waited {} times, {:.1} s in all{depth}",
                    g.cgroup,
                    g.waits,
                    g.wait_ms / 1e3
                )
            })
            .collect();
        let then = if held.is_empty() {
            "none of the other groups' bios had to wait for it".to_string()
        } else {
            held.join("; ")
        };
        out.push(Finding {
            rule: "who hurts whom",
            text: format!(
                "{} missed its io.latency target of {:.0} ms on {} in {} windows, and each time blk-iolatency cut the queue depth \
                 of the groups beside it: {then}.",
                p.cgroup, p.target_ms, p.device, p.missed
            ),
            figure: "latency-cdf",
        });
    }
}

/// A group stalled on I/O for this share of the run (percent, `some`) is worth a line.
pub const PRESSURE_IO_MIN_PCT: f64 = 25.0;
/// Likewise on memory.
pub const PRESSURE_MEMORY_MIN_PCT: f64 = 5.0;

/// The pressure files' verdict: each group (the system, each cgroup) stalled long on I/O or
/// memory, with `full` — the time none of its tasks could run — beside `some`.
fn pressure(i: &Input, out: &mut Vec<Finding>) {
    for (g, p) in &i.pressure {
        let mut parts = Vec::new();
        if p[0] >= PRESSURE_IO_MIN_PCT {
            parts.push(format!(
                "on I/O {:.0} % of the run ({:.0} % with none of its tasks able to run)",
                p[0], p[1]
            ));
        }
        if p[2] >= PRESSURE_MEMORY_MIN_PCT {
            parts.push(format!("on memory {:.0} % ({:.0} % with none able to run)", p[2], p[3]));
        }
        if parts.is_empty() {
            continue;
        }
        let (who, files) = match g.as_str() {
            "system" => ("The machine".to_string(), "/proc/pressure/io and memory".to_string()),
            path => (path.to_string(), format!("{path}'s io.pressure and memory.pressure")),
        };
        out.push(Finding {
            rule: "pressure",
            text: format!("{who} was stalled {} ({files}: some, full).", parts.join(", and ")),
            figure: "pressure",
        });
    }
}

/// Jobs whose operations read (the queue rule's subjects; fsync's waits are `slow fsync`'s).
fn reads(job: &str) -> bool {
    !matches!(job, "dd" | "fsync" | "sync" | "replace" | "netwrite" | "tiotest" | "spin")
}

fn queued_behind_writeback(i: &Input, out: &mut Vec<Finding>) {
    let Some(io) = &i.iostat else { return };
    let cols = [
        "t_s",
        "device",
        "r_per_s",
        "w_per_s",
        "r_await_ms",
        "w_await_ms",
        "aqu_sz",
        "util_pct",
    ]
    .map(|n| io.col(n));
    let [Some(t), Some(dev), Some(rs), Some(ws), Some(ra), Some(wa), Some(aqu), Some(util)] = cols else {
        return;
    };
    let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
    for (name, secs) in group_seconds(i, "mean_ms") {
        let Some(g) = i.groups.iter().find(|g| g.name == name && reads(&g.job)) else {
            continue;
        };
        // The device's seconds by their end (as latency.csv stamps them).
        let rows: Vec<&Vec<String>> = io.rows.iter().filter(|r| r[dev] == g.device).collect();
        let mut held = Vec::new();
        for &(at, mean_ms) in &secs {
            let Some(r) = rows.iter().find(|r| (num(&r[t]) - at).abs() < 1e-6) else {
                continue;
            };
            let (reads, writes) = (num(&r[rs]), num(&r[ws]));
            let q = num(&r[aqu]);
            let writes_queued = writes * num(&r[wa]) / 1e3;
            // The device's time per request: its busy time over the requests it completed.
            let svctm = if reads + writes > 0.0 {
                num(&r[util]) * 10.0 / (reads + writes)
            } else {
                0.0
            };
            if q >= QUEUE_MIN && writes_queued >= WRITE_SHARE * q && reads > 0.0 && mean_ms >= QUEUED_FACTOR * svctm {
                held.push((q, writes_queued / q, num(&r[ra]), svctm, mean_ms));
            }
        }
        if held.len() < 3 || (held.len() as f64) < HELD_SHARE * secs.len() as f64 {
            continue;
        }
        let n = held.len() as f64;
        let mean = |f: fn(&(f64, f64, f64, f64, f64)) -> f64| held.iter().map(f).sum::<f64>() / n;
        out.push(Finding {
            rule: "queued behind writeback",
            text: format!(
                "{} waited in {}'s queue behind writeback in {:.0} % of its seconds: the queue held {:.1} requests on average, \
                 {:.0} % of them writes, and a read took {:.1} ms in it (r_await) where {} spent {:.1} ms on a request; {}'s operations \
                 took {:.1} ms on average then.",
                g.label,
                g.device,
                n * 100.0 / secs.len() as f64,
                mean(|h| h.0),
                mean(|h| h.1) * 100.0,
                mean(|h| h.2),
                g.device,
                mean(|h| h.3),
                g.label,
                mean(|h| h.4),
            ),
            figure: "iostat-util",
        });
    }
}

fn reclaim(i: &Input, out: &mut Vec<Finding>) {
    for g in &i.groups {
        let lifetime_ms = i.sim_seconds * 1e3 * g.tasks as f64;
        if g.reclaim_waits == 0 || g.reclaim_ms < RECLAIM_MIN_MS || g.reclaim_ms < RECLAIM_SHARE * lifetime_ms {
            continue;
        }
        out.push(Finding {
            rule: "reclaim",
            text: format!(
                "{} waited for memory {} time{}, {:.1} s in all ({:.0} % of its time): reclaim found no clean page cache to free \
                 and its allocations waited for writeback to clean some.",
                g.label,
                g.reclaim_waits,
                if g.reclaim_waits == 1 { "" } else { "s" },
                g.reclaim_ms / 1e3,
                g.reclaim_ms * 100.0 / lifetime_ms.max(1e-9),
            ),
            figure: "global_dirty_state",
        });
    }
}

fn blk_throttle(i: &Input, out: &mut Vec<Finding>) {
    let Some(ts) = &i.timeseries else { return };
    for d in &i.devices {
        for &(dir, limit) in &d.limits {
            let Some(col) = ts.col(&format!("{}_{dir}_mb_s", d.name)) else {
                continue;
            };
            let rates: Vec<f64> = ts.rows.iter().filter_map(|r| r[col].parse::<f64>().ok()).collect();
            let limit_mb = limit as f64 / 1e6;
            let held = rates.iter().filter(|&&mb| mb >= AT_LIMIT * limit_mb).count();
            if rates.is_empty() || held < 3 || (held as f64) < HELD_SHARE * rates.len() as f64 {
                continue;
            }
            out.push(Finding {
                rule: "blk-throttle",
                text: format!(
                    "blk-throttle held {}'s {dir}s at its limit (throttle/{dir}_bps {}/s) in {:.0} % of the seconds: \
                     the limit, not the device, set the pace of its {dir}s.",
                    d.name,
                    wblab_sim::units::format_size(limit),
                    held as f64 * 100.0 / rates.len() as f64
                ),
                figure: "iostat-bw",
            });
        }
    }
}

fn cgroup_limits(i: &Input, out: &mut Vec<Finding>) {
    let Some(c) = &i.cgroups else { return };
    let cols = ["cgroup", "file_dirty_bytes", "file_writeback_bytes", "dirty_thresh_bytes"].map(|n| c.col(n));
    let [Some(group), Some(dirty), Some(wb), Some(thresh)] = cols else {
        return;
    };
    let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
    let mib = |b: f64| b / 1048576.0;
    for g in c.distinct(group) {
        let rows: Vec<&Vec<String>> = c.rows.iter().filter(|r| r[group] == g).collect();
        let peak = rows.iter().map(|r| num(&r[dirty]) + num(&r[wb])).fold(0.0, f64::max);
        let t = rows.last().map_or(0.0, |r| num(&r[thresh]));
        let (limit, waits) = i
            .cgroup_limits
            .iter()
            .find(|(p, _, _)| p == g)
            .map_or((None, None), |(_, l, w)| (*l, *w));
        if t > 0.0 && peak >= CGROUP_NEAR * t {
            out.push(Finding {
                rule: "cgroup",
                text: format!(
                    "{g}'s writers were paced by the group's own dirty limit: its dirty and writeback pages peaked at {:.0} MiB against its threshold of {:.0} MiB (vm.dirty_ratio of what the group may use), not the machine's.",
                    mib(peak),
                    mib(t)
                ),
                figure: "cgroups",
            });
        } else if let Some(l) = limit.filter(|&l| t == 0.0 && peak >= CGROUP_NEAR * l as f64) {
            let waited = match waits {
                Some(n) if n > 0 => format!("; its reclaim waited on a page's writeback {n} times"),
                _ => String::new(),
            };
            out.push(Finding {
                rule: "cgroup",
                text: format!(
                    "{g} filled with dirty and writeback pages: {:.0} MiB of its {:.0} MiB limit (cgroup v1 gives a group no dirty limit of its own){waited}.",
                    mib(peak),
                    mib(l as f64)
                ),
                figure: "cgroups",
            });
        }
    }
}

fn throttled(i: &Input, out: &mut Vec<Finding>) {
    for g in i.groups.iter().filter(|g| g.pauses > 0) {
        let share = if i.sim_seconds > 0.0 {
            g.total_ms / (i.sim_seconds * 1e3 * g.tasks as f64) * 100.0
        } else {
            0.0
        };
        out.push(Finding {
            rule: "throttled",
            text: format!(
                "{} was throttled by balance_dirty_pages: {} pauses, median {:.0} ms, longest {:.0} ms; the pauses add up to {:.0} % of its time.",
                g.label, g.pauses, g.p50_ms, g.max_ms, share
            ),
            figure: "balance_dirty_pages-pause",
        });
    }
}

/// A writer whose longest write() dwarfs its longest pause: where its write() calls' time went
/// — balance_dirty_pages pauses (one call is paused again every `nr_dirtied_pause` pages, so a
/// long call holds several), waits for memory, or the rest (request allocation, page and
/// journal locks, the copy itself).
fn long_writes(i: &Input, out: &mut Vec<Finding>) {
    // The jobs whose operation is a buffered write() call.
    let writes = |job: &str| wblab_sim::jobs::job_kind(job).is_some_and(|k| k.buffered_writes);
    for g in i.groups.iter().filter(|g| writes(&g.job) && g.op_total_ms > 0.0) {
        if g.op_max_ms < LONG_WRITE_MIN_MS || g.op_max_ms < LONG_WRITE_FACTOR * g.max_ms.max(1.0) {
            continue;
        }
        let share = |ms: f64| (ms * 100.0 / g.op_total_ms).clamp(0.0, 100.0);
        let (paused, reclaim) = (share(g.total_ms), share(g.reclaim_ms));
        let rest = (100.0 - paused - reclaim).max(0.0);
        let why = if paused >= 50.0 {
            "the pauses add up: balance_dirty_pages runs again every nr_dirtied_pause pages a call dirties (the fewer, the \
             slower the writer is let go), so a long call was paused many times"
        } else if reclaim >= 50.0 {
            "most of it waiting for memory: reclaim found only dirty and writeback pages, and the call waited for writeback to clean some"
        } else {
            "most of it outside balance_dirty_pages and reclaim: waiting for a request (wbt, tags), on locked pages or on the journal"
        };
        out.push(Finding {
            rule: "long-writes",
            text: format!(
                "{}'s longest write() took {:.1} s, {:.0}× its longest balance_dirty_pages pause ({:.0} ms): {why}. Of its write() \
                 calls' {:.1} s, {paused:.0} % were pauses, {reclaim:.0} % waits for memory, {rest:.0} % the rest.",
                g.label,
                g.op_max_ms / 1e3,
                g.op_max_ms / g.max_ms.max(1.0),
                g.max_ms,
                g.op_total_ms / 1e3,
            ),
            figure: "balance_dirty_pages-pause",
        });
    }
}

/// Per latency-sensitive group (latency.csv), its seconds with operations as (second's end,
/// `column`), where it has at least [`STALL_MIN_SECONDS`] of them.
fn group_seconds(i: &Input, column: &str) -> Vec<(String, Vec<(f64, f64)>)> {
    let Some(l) = &i.latency else { return Vec::new() };
    let (Some(t), Some(task), Some(ops), Some(v)) = (l.col("t_s"), l.col("task"), l.col("ops"), l.col(column)) else {
        return Vec::new();
    };
    let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
    l.distinct(task)
        .into_iter()
        .map(|g| {
            let secs: Vec<(f64, f64)> = l
                .rows
                .iter()
                .filter(|r| r[task] == g && num(&r[ops]) > 0.0)
                .map(|r| (num(&r[t]), num(&r[v])))
                .collect();
            (g.to_string(), secs)
        })
        .filter(|(_, secs)| secs.len() >= STALL_MIN_SECONDS)
        .collect()
}

fn stalled(i: &Input, out: &mut Vec<Finding>) {
    for (g, secs) in group_seconds(i, "max_ms") {
        let mut m: Vec<f64> = secs.iter().map(|s| s.1).collect();
        m.sort_by(f64::total_cmp);
        let typical = m[m.len() / 2];
        let threshold = (typical * STALL_FACTOR).max(STALL_MIN_MS);
        let stalls: Vec<&(f64, f64)> = secs.iter().filter(|s| s.1 >= threshold).collect();
        let Some(worst) = stalls.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
            continue;
        };
        let when: Vec<String> = stalls.iter().take(6).map(|s| format!("{:.0}", s.0)).collect();
        let more = if stalls.len() > 6 { ", ..." } else { "" };
        out.push(Finding {
            rule: "stalled",
            text: format!(
                "{g} stalled: its longest operation took {:.0} ms (ending at {:.0} s), {:.0} times a typical second's longest ({:.1} ms); {} such second{} (at {}{more} s).",
                worst.1,
                worst.0,
                worst.1 / typical.max(1e-6),
                typical,
                stalls.len(),
                if stalls.len() == 1 { "" } else { "s" },
                when.join(", ")
            ),
            figure: "latency-timeline",
        });
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn slowed(i: &Input, out: &mut Vec<Finding>) {
    let num = |s: &str| s.parse::<f64>().unwrap_or(0.0);
    for (g, secs) in group_seconds(i, "mean_ms") {
        let g = g.as_str();
        let typical = median(secs.iter().map(|s| s.1).collect());
        let threshold = (typical * SLOW_FACTOR).max(typical + SLOW_MIN_MS);
        let slow: Vec<(f64, f64)> = secs.iter().copied().filter(|s| s.1 >= threshold).collect();
        // Slow most of the time is the group's normal, not a stretch of trouble.
        if slow.is_empty() || slow.len() * 4 > secs.len() {
            continue;
        }
        // Stretches: runs of consecutive slow seconds, by their first second.
        let mut starts: Vec<f64> = Vec::new();
        let mut prev = f64::NEG_INFINITY;
        for s in &slow {
            if s.0 - prev > 1.5 {
                starts.push(s.0);
            }
            prev = s.0;
        }
        let worst = slow.iter().map(|s| s.1).fold(0.0, f64::max);
        let at: Vec<String> = starts.iter().take(6).map(|s| format!("{:.0}", s - 1.0)).collect();
        let more = if starts.len() > 6 { ", ..." } else { "" };
        let mut text = format!(
            "{g} slowed for whole seconds: its mean operation took up to {worst:.0} ms ({:.0} times a typical second's {typical:.1} ms) in {} second{}, {} stretch{} starting at {}{more} s",
            worst / typical.max(1e-6),
            slow.len(),
            if slow.len() == 1 { "" } else { "s" },
            starts.len(),
            if starts.len() == 1 { "" } else { "es" },
            at.join(", ")
        );
        // Three stretches or more at even intervals recur.
        let gaps: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        let (lo, hi) = gaps.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
        if gaps.len() >= 2 && hi <= lo * 1.3 {
            text.push_str(&format!(", about every {:.0} s", gaps.iter().sum::<f64>() / gaps.len() as f64));
        }
        // What the group's device did meanwhile: writeback bursts show as write rate.
        let dev = i
            .groups
            .iter()
            .find(|x| x.label.split(" ×").next() == Some(g))
            .map(|x| x.device.as_str());
        if let (Some(dev), Some(ts)) = (dev, &i.timeseries) {
            if let (Some(tc), Some(wc)) = (ts.col("t_s"), ts.col(&format!("{dev}_write_mb_s"))) {
                let rate = |sec: f64| ts.rows.iter().find(|r| (num(&r[tc]) - sec).abs() < 1e-6).map(|r| num(&r[wc]));
                let usual = median(ts.rows.iter().map(|r| num(&r[wc])).collect());
                let during: Vec<f64> = slow.iter().filter_map(|s| rate(s.0)).collect();
                if !during.is_empty() {
                    let during = during.iter().sum::<f64>() / during.len() as f64;
                    if during >= 1.0 && during >= 2.0 * usual {
                        text.push_str(&format!(", while {dev} wrote {during:.0} MB/s (typically {usual:.0})"));
                    }
                }
            }
        }
        text.push('.');
        out.push(Finding {
            rule: "slowed",
            text,
            figure: "op-latency-timeline",
        });
    }
}

/// Throttle samples a device needs before its shares mean anything (2 s at 200 ms).
const GOVERNED_MIN_SAMPLES: usize = 10;

fn governed(i: &Input, out: &mut Vec<Finding>) {
    let Some(th) = &i.throttle else { return };
    let (Some(dev), Some(dirty), Some(freerun), Some(setpoint), Some(limit)) = (
        th.col("device"),
        th.col("dirty_pages"),
        th.col("freerun_pages"),
        th.col("setpoint_pages"),
        th.col("limit_pages"),
    ) else {
        return;
    };
    let num = |s: &str| s.parse::<f64>().ok();
    for d in th.distinct(dev) {
        // Samples with all four quantities (kernels before 3.2 have no freerun or setpoint).
        let s: Vec<(f64, f64, f64, f64)> = th
            .rows
            .iter()
            .filter(|r| r[dev] == d)
            .filter_map(|r| Some((num(&r[dirty])?, num(&r[freerun])?, num(&r[setpoint])?, num(&r[limit])?)))
            .collect();
        if s.len() < GOVERNED_MIN_SAMPLES {
            continue;
        }
        let n = s.len() as f64;
        let free = s.iter().filter(|x| x.0 < x.1).count() as f64 / n;
        let hard = s.iter().filter(|x| x.0 >= x.3).count() as f64 / n;
        if free == 1.0 {
            // Writers that slept while the global level never left free run were held by the
            // device's own share: strictlimit, or a small max_ratio/max_bytes.
            let (Some(wbd), Some(wbt)) = (th.col("wb_dirty_pages"), th.col("wb_thresh_pages")) else {
                continue;
            };
            let throttled: Vec<&Group> = i.groups.iter().filter(|g| g.pauses > 0).collect();
            let over = th
                .rows
                .iter()
                .filter(|r| r[dev] == d)
                .filter(|r| num(&r[wbt]).is_some_and(|t| num(&r[wbd]).is_some_and(|x| t > 0.0 && x >= t / 2.0)))
                .count();
            if throttled.is_empty() || over == 0 {
                continue;
            }
            let mut thresh: Vec<f64> = th.rows.iter().filter(|r| r[dev] == d).filter_map(|r| num(&r[wbt])).collect();
            thresh.sort_by(f64::total_cmp);
            let wb_mib = thresh[thresh.len() / 2] * 4096.0 / (1024.0 * 1024.0);
            out.push(Finding {
                rule: "governed",
                text: format!(
                    "On {d}, the dirty pages never left free run, yet {} slept: the device's own share governed (its dirty pages against a wb_thresh of {wb_mib:.1} MiB, as with strictlimit or a small max_ratio).",
                    throttled.iter().map(|g| g.label.as_str()).collect::<Vec<_>>().join(", ")
                ),
                figure: "bdi_dirty_state",
            });
            continue;
        }
        let paced = 1.0 - free - hard;
        let mut setpoints: Vec<f64> = s.iter().map(|x| x.2).collect();
        setpoints.sort_by(f64::total_cmp);
        let setpoint_mib = setpoints[setpoints.len() / 2] * 4096.0 / (1024.0 * 1024.0);
        let what = if hard >= 0.5 {
            "the writers were held at the hard limit"
        } else if paced >= free {
            "balance_dirty_pages paced the writers around its setpoint"
        } else {
            "the writers mostly ran free"
        };
        out.push(Finding {
            rule: "governed",
            text: format!(
                "On {d}, the dirty pages were below the free-run point {:.0} % of the time, in balance_dirty_pages' control area {:.0} % (setpoint {setpoint_mib:.0} MiB) and at the hard limit {:.0} %: {what}.",
                free * 100.0,
                paced * 100.0,
                hard * 100.0
            ),
            figure: "global_dirty_state",
        });
    }
}

fn slow_fsync(i: &Input, out: &mut Vec<Finding>) {
    // Where the sync calls' own waits are recorded, `sync_waits` says it from them.
    for g in i
        .groups
        .iter()
        .filter(|g| g.job == "fsync" && g.op_p50_ms >= SLOW_FSYNC_MS && g.syncs.is_none())
    {
        let Some(d) = i.devices.iter().find(|d| d.name == g.device) else {
            continue;
        };
        // The journal is the answer only where its commits make up most of the wait; else the
        // time goes to the probe's own data, written behind the others' writeback.
        let why = match d.journal {
            Some((commit, logging, ordered)) if commit >= g.op_p50_ms / 2.0 => format!(
                "it waits for the journal's commits, which took {commit:.0} ms on average ({ordered:.0} ms writing ordered data, {logging:.0} ms logging)"
            ),
            Some((commit, _, _)) => format!(
                "the journal's commits took only {commit:.0} ms on average, so it waits for its own data, written behind the others' writeback ({}'s requests took {:.0} ms at the median)",
                d.name, d.request_p50_ms
            ),
            None => format!(
                "it waits for its own data, written behind the others' writeback ({}'s requests took {:.0} ms at the median)",
                d.name, d.request_p50_ms
            ),
        };
        out.push(Finding {
            rule: "slow-fsync",
            text: format!(
                "{}'s fsync() took {:.0} ms at the median, {:.0} ms at worst: {why}.",
                g.label, g.op_p50_ms, g.op_max_ms
            ),
            figure: "latency-cdf",
        });
    }
}

/// A group's slowest sync call took [`SLOW_FSYNC_MS`] or more: what it waited for (its data's
/// writeback, the journal commit, the cache flush), and where all its calls' time went.
fn sync_waits(i: &Input, out: &mut Vec<Finding>) {
    for g in &i.groups {
        let Some(s) = g.syncs else { continue };
        let worst: f64 = s.worst_ms.iter().sum();
        if worst < SLOW_FSYNC_MS {
            continue;
        }
        let all: f64 = s.total_ms.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        let pct = |k: usize| s.total_ms[k] / all * 100.0;
        out.push(Finding {
            rule: "sync-waits",
            text: format!(
                "{}'s slowest sync call took {worst:.0} ms: {:.0} ms for its data to be written (queued behind the writes \
                 ahead of it), {:.0} ms waiting for the journal commit, {:.0} ms for the cache flush; over its \
                 {} calls, {:.0} % of the time went to data, {:.0} % to commits, {:.0} % to flushes.",
                g.label,
                s.worst_ms[0],
                s.worst_ms[1],
                s.worst_ms[2],
                s.calls,
                pct(0),
                pct(1),
                pct(2)
            ),
            figure: "latency-cdf",
        });
    }
}

fn device_bound(i: &Input, out: &mut Vec<Finding>) {
    for d in i.devices.iter().filter(|d| d.util >= BUSY_UTIL) {
        out.push(Finding {
            rule: "device-bound",
            text: format!(
                "{} had a request in service {:.0} % of the run: the device set the pace.",
                d.name,
                d.util * 100.0
            ),
            figure: "iostat-util",
        });
    }
}

/// Terminal width the findings are wrapped to.
const WIDTH: usize = 96;

/// The findings as terminal lines, wrapped (none: nothing).
pub fn verdict_text(f: &[Finding]) -> String {
    let mut out = String::new();
    if f.is_empty() {
        return out;
    }
    out.push_str("verdict:\n");
    for x in f {
        let mut line = String::from("-");
        for w in x.text.split(' ') {
            if line.chars().count() + 1 + w.chars().count() > WIDTH {
                out.push_str(&line);
                out.push('\n');
                line = String::from(" ");
            }
            line.push(' ');
            line.push_str(w);
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}
