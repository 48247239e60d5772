//! `timeseries.csv` (one row per vmstat sample) and `throttle.csv` (one row per throttling sample).
//! Every column names its unit (docs/reports.md): `_pages` 4 KiB pages, `_kib` KiB per sample
//! interval, `_mb_s` MB/s (10^6 bytes), `_kib_s` KiB/s (as the writeback tracepoints print
//! bandwidths and rate limits), `_pct` percent, `_tasks` a count of tasks; `pos_ratio` is a
//! plain ratio (1 at the setpoint).

use crate::num::{push_u64, round3};
use std::fmt::Write as _;
use std::io::{self, Write};
use wblab_sim::metrics::{RunResult, ThrottleSample};

const NS_PER_SEC: f64 = 1e9;
const KIB_PER_PAGE: u64 = 4;
/// `pos_ratio` as the kernel keeps it: fixed point, `1 << RATELIMIT_CALC_SHIFT` = 1.
const POS_RATIO_ONE: f64 = 1024.0;

/// The header of `timeseries.csv` before the per-device columns (`<dev>_write_mb_s`,
/// `<dev>_read_mb_s`, `<dev>_util_pct`).
pub const TIMESERIES_HEADER: &str = "t_s,nr_dirty_pages,nr_writeback_pages,nr_free_pages,nr_file_pages,nr_dirtied_pages,\
     nr_written_pages,dirty_thresh_pages,dirty_background_thresh_pages,bi_kib,bo_kib,r_tasks,b_tasks";

/// The header of `throttle.csv`.
pub const THROTTLE_HEADER: &str = "t_s,device,dirty_pages,wb_dirty_pages,freerun_pages,setpoint_pages,limit_pages,\
     thresh_pages,bg_thresh_pages,wb_thresh_pages,write_bw_kib_s,avg_write_bw_kib_s,dirty_ratelimit_kib_s,\
     balanced_dirty_ratelimit_kib_s,dirty_rate_kib_s,pos_ratio";

/// Columns of files written before every column named its unit (up to 2026-11-27): the old
/// name, the new one, and the factor from the old values to the new unit. `pos_ratio` kept
/// its name and became a plain ratio; `<dev>_util` (already percent) is handled apart.
pub const LEGACY_COLUMNS: &[(&str, &str, f64)] = &[
    ("nr_dirty", "nr_dirty_pages", 1.0),
    ("nr_writeback", "nr_writeback_pages", 1.0),
    ("nr_free", "nr_free_pages", 1.0),
    ("nr_file", "nr_file_pages", 1.0),
    ("nr_dirtied", "nr_dirtied_pages", 1.0),
    ("nr_written", "nr_written_pages", 1.0),
    ("dirty_thresh", "dirty_thresh_pages", 1.0),
    ("dirty_background_thresh", "dirty_background_thresh_pages", 1.0),
    ("bi_kb", "bi_kib", 1.0),
    ("bo_kb", "bo_kib", 1.0),
    ("r", "r_tasks", 1.0),
    ("b", "b_tasks", 1.0),
    ("dirty", "dirty_pages", 1.0),
    ("wb_dirty", "wb_dirty_pages", 1.0),
    ("freerun", "freerun_pages", 1.0),
    ("setpoint", "setpoint_pages", 1.0),
    ("limit", "limit_pages", 1.0),
    ("thresh", "thresh_pages", 1.0),
    ("bg_thresh", "bg_thresh_pages", 1.0),
    ("wb_thresh", "wb_thresh_pages", 1.0),
    ("write_bw", "write_bw_kib_s", KIB_PER_PAGE as f64),
    ("avg_write_bw", "avg_write_bw_kib_s", KIB_PER_PAGE as f64),
    ("dirty_ratelimit", "dirty_ratelimit_kib_s", KIB_PER_PAGE as f64),
    ("balanced_dirty_ratelimit", "balanced_dirty_ratelimit_kib_s", KIB_PER_PAGE as f64),
    ("dirty_rate", "dirty_rate_kib_s", KIB_PER_PAGE as f64),
    ("pos_ratio", "pos_ratio", 1.0 / POS_RATIO_ONE),
];

fn push_f64(out: &mut String, x: f64) {
    // `{}` of an f64 is the shortest representation that reads back exactly: stable output.
    write!(out, "{}", round3(x)).expect("writing to a String cannot fail");
}

/// Write `timeseries.csv`.
pub fn write_timeseries<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    let mut line = String::with_capacity(512);
    line.push_str(TIMESERIES_HEADER);
    for d in &r.devices {
        write!(line, ",{0}_write_mb_s,{0}_read_mb_s", d.name).expect("String");
    }
    // %util only where the run recorded it.
    let with_util = r.vmstat.iter().any(|s| !s.dev_util.is_empty());
    if with_util {
        for d in &r.devices {
            write!(line, ",{}_util_pct", d.name).expect("String");
        }
    }
    line.push('\n');
    w.write_all(line.as_bytes())?;
    let mut prev_t = 0;
    for s in &r.vmstat {
        line.clear();
        // A sample counts the bytes moved since the previous one (one second in the model).
        let dt = s.t_ns.saturating_sub(prev_t);
        let secs = if dt == 0 { 1.0 } else { dt as f64 / NS_PER_SEC };
        prev_t = s.t_ns;
        push_f64(&mut line, s.t_ns as f64 / NS_PER_SEC);
        for v in [
            s.nr_dirty,
            s.nr_writeback,
            s.nr_free,
            s.nr_file,
            s.nr_dirtied,
            s.nr_written,
            s.dirty_thresh,
            s.dirty_background_thresh,
            s.bi_kb,
            s.bo_kb,
            s.procs_running as u64,
            s.procs_blocked as u64,
        ] {
            line.push(',');
            push_u64(&mut line, v);
        }
        for i in 0..r.devices.len() {
            let wr = s.dev_write_bytes.get(i).copied().unwrap_or(0);
            let rd = s.dev_read_bytes.get(i).copied().unwrap_or(0);
            line.push(',');
            push_f64(&mut line, wr as f64 / 1e6 / secs);
            line.push(',');
            push_f64(&mut line, rd as f64 / 1e6 / secs);
        }
        if with_util {
            for i in 0..r.devices.len() {
                line.push(',');
                push_f64(&mut line, s.dev_util.get(i).copied().unwrap_or(0.0) * 100.0);
            }
        }
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// Write `throttle.csv`.
pub fn write_throttle<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    let mut line = String::with_capacity(256);
    line.push_str(THROTTLE_HEADER);
    line.push('\n');
    w.write_all(line.as_bytes())?;
    for s in &r.throttle {
        line.clear();
        push_f64(&mut line, s.t_ns as f64 / NS_PER_SEC);
        line.push(',');
        match r.devices.get(s.device as usize) {
            Some(d) => line.push_str(&d.name),
            None => push_u64(&mut line, s.device as u64),
        }
        let pages = [
            s.dirty,
            s.wb_dirty,
            s.freerun,
            s.setpoint,
            s.limit,
            s.thresh,
            s.bg_thresh,
            s.wb_thresh,
        ];
        let rates = [
            s.write_bw,
            s.avg_write_bw,
            s.dirty_ratelimit,
            s.balanced_dirty_ratelimit,
            s.dirty_rate,
        ];
        // Quantities the run's kernel generation did not have stay empty.
        for v in pages {
            line.push(',');
            if v != ThrottleSample::NA {
                push_u64(&mut line, v);
            }
        }
        for v in rates {
            line.push(',');
            if v != ThrottleSample::NA {
                push_u64(&mut line, v * KIB_PER_PAGE);
            }
        }
        line.push(',');
        if s.pos_ratio != ThrottleSample::NA {
            push_f64(&mut line, s.pos_ratio as f64 / POS_RATIO_ONE);
        }
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// Whether the run recorded the devices' completed requests per interval (runs of older
/// builds did not).
pub fn has_iostat(r: &RunResult) -> bool {
    r.vmstat.iter().any(|s| !s.dev_io.is_empty())
}

/// The header of `iostat.csv`: `iostat -x`'s figures, each column with its unit.
pub const IOSTAT_HEADER: &str =
    "t_s,device,r_per_s,w_per_s,rkb_per_s,wkb_per_s,r_await_ms,w_await_ms,aqu_sz,util_pct,rrqm_per_s,wrqm_per_s,f_per_s,f_await_ms";

/// The columns of iostat.csv that files written before merges and flushes were counted lack.
pub const IOSTAT_LATER_COLUMNS: &[&str] = &["rrqm_per_s", "wrqm_per_s", "f_per_s", "f_await_ms"];

/// Write `iostat.csv`: per interval (a second) and device, what `iostat -x` prints from
/// `/sys/block/<dev>/stat` differences: requests and KiB per second, the mean time of the
/// completed requests from their start to their completion (await), the mean number in the
/// device's queue (aqu-sz: their summed time over the interval), %util, the merges per second
/// and the cache flushes per second with their mean time.
pub fn write_iostat<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    let mut line = String::with_capacity(256);
    line.push_str(IOSTAT_HEADER);
    line.push('\n');
    w.write_all(line.as_bytes())?;
    let mut prev_t = 0;
    for s in &r.vmstat {
        let dt = s.t_ns.saturating_sub(prev_t);
        let secs = if dt == 0 { 1.0 } else { dt as f64 / NS_PER_SEC };
        prev_t = s.t_ns;
        for (i, d) in r.devices.iter().enumerate() {
            let io = s.dev_io.get(i).copied().unwrap_or_default();
            let per_s = |v: u64| v as f64 / secs;
            let await_ms = |ticks: u64, n: u64| if n == 0 { 0.0 } else { ticks as f64 / n as f64 / 1e6 };
            line.clear();
            push_f64(&mut line, s.t_ns as f64 / NS_PER_SEC);
            line.push(',');
            line.push_str(&d.name);
            for v in [
                per_s(io.reads),
                per_s(io.writes),
                per_s(s.dev_read_bytes.get(i).copied().unwrap_or(0)) / 1024.0,
                per_s(s.dev_write_bytes.get(i).copied().unwrap_or(0)) / 1024.0,
                await_ms(io.read_ticks_ns, io.reads),
                await_ms(io.write_ticks_ns, io.writes),
                (io.read_ticks_ns + io.write_ticks_ns) as f64 / 1e9 / secs,
                s.dev_util.get(i).copied().unwrap_or(0.0) * 100.0,
                per_s(io.read_merges),
                per_s(io.write_merges),
                per_s(io.flushes),
                await_ms(io.flush_ticks_ns, io.flushes),
            ] {
                line.push(',');
                push_f64(&mut line, v);
            }
            line.push('\n');
            w.write_all(line.as_bytes())?;
        }
    }
    Ok(())
}

/// The header of `latency.csv`.
pub const LATENCY_HEADER: &str = "t_s,task,ops,mean_ms,max_ms";

/// The task groups (names) with per-second operations, in the run's task order.
fn latency_groups(r: &RunResult) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for s in &r.vmstat {
        for &(i, _) in &s.task_ops {
            let name = r.tasks.get(i as usize).map_or("?", |t| t.name.as_str());
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let order = |n: &&str| r.tasks.iter().position(|t| t.name == *n).unwrap_or(usize::MAX);
    names.sort_by_key(order);
    names
}

/// Whether the run recorded operations per second (simulated runs with a reader, an fsync
/// probe, a launch...).
/// The header of `ops.csv`.
pub const OPS_HEADER: &str = "t_s,task,instance,lat_ms";

/// Whether a run logged operations one by one (its latency-sensitive tasks did some).
pub fn has_ops(r: &RunResult) -> bool {
    r.tasks.iter().any(|t| !t.ops.is_empty())
}

/// Write `ops.csv`: every operation of the latency-sensitive tasks (read(), fsync(), a fio
/// job's I/Os, a launch), task by task in time order: when it ended and how long it took.
pub fn write_ops<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    let mut line = String::with_capacity(64);
    line.push_str(OPS_HEADER);
    line.push('\n');
    w.write_all(line.as_bytes())?;
    for t in &r.tasks {
        for &(end, lat) in &t.ops {
            line.clear();
            // Microseconds: operations of a fast device end within the same millisecond.
            write!(line, "{:.6}", end as f64 / NS_PER_SEC).expect("String");
            line.push(',');
            line.push_str(&t.name);
            line.push(',');
            push_u64(&mut line, t.instance as u64);
            line.push(',');
            push_f64(&mut line, lat as f64 / 1e6);
            line.push('\n');
            w.write_all(line.as_bytes())?;
        }
    }
    Ok(())
}

pub fn has_latency(r: &RunResult) -> bool {
    r.vmstat.iter().any(|s| !s.task_ops.is_empty())
}

/// Write `latency.csv`: per second and task group (all instances of a name), the operations
/// that completed in it, their mean and their longest, so a stall shows at the second it
/// ended rather than only in the percentiles. Groups that never completed an operation in a
/// second have a row of zeros there.
pub fn write_latency<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    let groups = latency_groups(r);
    let mut line = String::with_capacity(128);
    line.push_str(LATENCY_HEADER);
    line.push('\n');
    w.write_all(line.as_bytes())?;
    for s in &r.vmstat {
        for g in &groups {
            let (mut ops, mut sum, mut max) = (0u64, 0u64, 0u64);
            for &(i, o) in &s.task_ops {
                if r.tasks.get(i as usize).is_some_and(|t| t.name == *g) {
                    ops += o.ops;
                    sum += o.sum_ns;
                    max = max.max(o.max_ns);
                }
            }
            line.clear();
            push_f64(&mut line, s.t_ns as f64 / NS_PER_SEC);
            line.push(',');
            line.push_str(g);
            line.push(',');
            push_u64(&mut line, ops);
            line.push(',');
            push_f64(&mut line, if ops == 0 { 0.0 } else { sum as f64 / ops as f64 / 1e6 });
            line.push(',');
            push_f64(&mut line, max as f64 / 1e6);
            line.push('\n');
            w.write_all(line.as_bytes())?;
        }
    }
    Ok(())
}

/// The header of `cgroups.csv`; sizes in bytes, as memory.current and memory.stat give them,
/// and io.stat's `rbytes`/`wbytes` so far (the group's completed I/O on every device).
pub const CGROUPS_HEADER: &str = "t_s,cgroup,memory_current_bytes,file_bytes,file_dirty_bytes,file_writeback_bytes,dirty_thresh_bytes,\
                                  dirty_background_thresh_bytes,io_rbytes,io_wbytes";

/// Write `cgroups.csv`: per second and memory cgroup, its usage, its page cache, dirty and
/// writeback pages, and its dirty domain's thresholds (0 where it has none: cgroup v1, or a
/// group without a wb of its own).
pub fn write_cgroups<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    let mut line = String::with_capacity(160);
    line.push_str(CGROUPS_HEADER);
    line.push('\n');
    w.write_all(line.as_bytes())?;
    let n = r.cgroups.iter().map(|g| g.samples.len()).max().unwrap_or(0);
    for i in 0..n {
        for g in &r.cgroups {
            let Some(s) = g.samples.get(i) else { continue };
            line.clear();
            push_f64(&mut line, s.t_ns as f64 / NS_PER_SEC);
            line.push(',');
            line.push_str(&g.path);
            for pages in [s.usage, s.file, s.dirty, s.writeback, s.dirty_thresh, s.dirty_background_thresh] {
                line.push(',');
                push_u64(&mut line, pages * wblab_sim::units::PAGE_SIZE);
            }
            for bytes in [s.io_rbytes, s.io_wbytes] {
                line.push(',');
                if let Some(b) = bytes {
                    push_u64(&mut line, b);
                }
            }
            line.push('\n');
            w.write_all(line.as_bytes())?;
        }
    }
    Ok(())
}

/// The header of `pressure.csv`: per second, group and resource, the pressure file's `some`
/// and `full` lines (averages in percent, totals in µs since the run's start).
pub const PRESSURE_HEADER: &str =
    "t_s,group,resource,some_avg10,some_avg60,some_avg300,some_total_us,full_avg10,full_avg60,full_avg300,full_total_us";

/// The name of pressure group `g`: `system` (`/proc/pressure`), else the cgroup's path.
pub fn pressure_group(r: &RunResult, g: u16) -> &str {
    match g {
        0 => "system",
        g => r.scenario.cgroups.groups.get(g as usize - 1).map_or("?", |c| c.path.as_str()),
    }
}

/// The resources of a pressure sample, in its order.
pub const PRESSURE_RESOURCES: [&str; 3] = ["io", "memory", "cpu"];

/// Write `pressure.csv`: per second, the system's and each cgroup's io, memory and cpu
/// pressure as `/proc/pressure/*` and `<cgroup>/*.pressure` show it.
pub fn write_pressure<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    let mut line = String::with_capacity(160);
    line.push_str(PRESSURE_HEADER);
    line.push('\n');
    w.write_all(line.as_bytes())?;
    for s in &r.pressure {
        for (i, res) in PRESSURE_RESOURCES.iter().enumerate() {
            line.clear();
            push_f64(&mut line, s.t_ns as f64 / NS_PER_SEC);
            line.push(',');
            line.push_str(pressure_group(r, s.group));
            line.push(',');
            line.push_str(res);
            for p in &s.figures[2 * i..2 * i + 2] {
                for a in [p.avg10, p.avg60, p.avg300] {
                    line.push(',');
                    push_f64(&mut line, a);
                }
                line.push(',');
                push_u64(&mut line, p.total_us);
            }
            line.push('\n');
            w.write_all(line.as_bytes())?;
        }
    }
    Ok(())
}

/// Write `pressure.txt`: each group's pressure files at the run's end, in the kernel's own
/// lines under the file's path (`/proc/pressure/io`, `/sys/fs/cgroup/etl/io.pressure`).
pub fn write_pressure_files<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    for s in r.pressure_at_end() {
        for (i, res) in PRESSURE_RESOURCES.iter().enumerate() {
            match s.group {
                0 => writeln!(w, "# /proc/pressure/{res}")?,
                g => writeln!(w, "# /sys/fs/cgroup{}/{res}.pressure", pressure_group(r, g))?,
            }
            for (kind, p) in ["some", "full"].iter().zip(&s.figures[2 * i..2 * i + 2]) {
                writeln!(
                    w,
                    "{kind} avg10={:.2} avg60={:.2} avg300={:.2} total={}",
                    p.avg10, p.avg60, p.avg300, p.total_us
                )?;
            }
        }
    }
    Ok(())
}

/// One group's pressure over the run: its name (`system` or the cgroup's path) and the share
/// of the run it was stalled, percent, rounded as summary.json's `stalled_pct`: io, memory,
/// cpu; `some` then `full`.
pub type PressureRow = (String, [f64; 6]);

/// Each group's [`PressureRow`] of a run in memory.
pub fn pressure_rows(r: &RunResult) -> Vec<PressureRow> {
    r.pressure_at_end()
        .into_iter()
        .map(|s| {
            let pct = std::array::from_fn(|k| round3(s.stalled_pct(k, r.sim_ns)));
            (pressure_group(r, s.group).to_string(), pct)
        })
        .collect()
}

/// Each group's [`PressureRow`] as a results directory's summary.json holds them.
pub fn pressure_rows_of_summary(summary: &serde_json::Value) -> Vec<PressureRow> {
    let rows = summary["pressure"].as_array().into_iter().flatten();
    rows.map(|g| {
        let mut pct = [0.0; 6];
        for (i, res) in PRESSURE_RESOURCES.iter().enumerate() {
            for (j, kind) in ["some", "full"].into_iter().enumerate() {
                pct[2 * i + j] = g[res][kind]["stalled_pct"].as_f64().unwrap_or(0.0);
            }
        }
        (g["group"].as_str().unwrap_or("?").to_string(), pct)
    })
    .collect()
}
