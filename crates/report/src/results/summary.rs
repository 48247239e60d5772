//! `summary.json`: the run's figures and the fully resolved scenario.
//!
//! Built from structs so the key order is fixed; every float is rounded to
//! [`crate::num::DECIMALS`] decimals so identical runs give byte-identical files, except for the
//! `wall_seconds` line.

use crate::num::{ns_to_ms, round3};
use serde::Serialize;
use wblab_sim::config::Scenario;
use wblab_sim::metrics::hist::HistSummary;
use wblab_sim::metrics::{DeviceResult, LatencyHist, RunResult, TaskResult};

#[derive(Serialize)]
struct Summary<'a> {
    wblab_version: &'static str,
    sim_seconds: f64,
    wall_seconds: f64,
    events: u64,
    /// Trace records past the in-memory cap: the trace stops early (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    trace_dropped: u64,
    scenario: &'a Scenario,
    tasks: Vec<TaskSummary<'a>>,
    devices: Vec<DeviceSummary<'a>>,
    /// The memory cgroups (absent without any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cgroups: Vec<CgroupSummary<'a>>,
    /// Each group's pressure files at the run's end: the system, then each cgroup (absent
    /// where the run kept none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pressure: Vec<PressureSummary<'a>>,
}

/// One group's `io`, `memory` and `cpu` pressure files, `some` and `full` each (averages in
/// percent, totals in µs since the run's start); `stalled_pct` is the total over the run's
/// length, the share of it the group was stalled.
#[derive(Serialize)]
struct PressureSummary<'a> {
    group: &'a str,
    io: PressureLines,
    memory: PressureLines,
    cpu: PressureLines,
}

#[derive(Serialize)]
struct PressureLines {
    some: PressureLine,
    full: PressureLine,
}

#[derive(Serialize)]
struct PressureLine {
    avg10: f64,
    avg60: f64,
    avg300: f64,
    total_us: u64,
    stalled_pct: f64,
}

fn pressure(r: &RunResult) -> Vec<PressureSummary<'_>> {
    r.pressure_at_end()
        .into_iter()
        .map(|s| {
            let line = |k: usize| {
                let p = &s.figures[k];
                PressureLine {
                    avg10: p.avg10,
                    avg60: p.avg60,
                    avg300: p.avg300,
                    total_us: p.total_us,
                    stalled_pct: round3(s.stalled_pct(k, r.sim_ns)),
                }
            };
            let lines = |k: usize| PressureLines {
                some: line(k),
                full: line(k + 1),
            };
            PressureSummary {
                group: super::csv::pressure_group(r, s.group),
                io: lines(0),
                memory: lines(2),
                cpu: lines(4),
            }
        })
        .collect()
}

/// A memory cgroup's peaks and events (its seconds are in cgroups.csv).
#[derive(Serialize)]
struct CgroupSummary<'a> {
    path: &'a str,
    cgroup_ino: u64,
    peak_memory_current_bytes: u64,
    peak_dirty_writeback_bytes: u64,
    /// memory.events `max` and `high`: charges that met each limit.
    max_events: u64,
    high_events: u64,
    reclaimed_bytes: u64,
    /// Global reclaims that took pages of the group below its memory.low.
    low_events: u64,
    reclaim_throttled: u64,
    writeback_waits: u64,
    high_delays: u64,
    high_delay_ms: f64,
}

fn cgroup(g: &wblab_sim::metrics::CgroupResult) -> CgroupSummary<'_> {
    let page = wblab_sim::units::PAGE_SIZE;
    let peak = |f: fn(&wblab_sim::metrics::MemcgSample) -> u64| g.samples.iter().map(f).max().unwrap_or(0) * page;
    CgroupSummary {
        path: &g.path,
        cgroup_ino: g.cgroup_ino,
        peak_memory_current_bytes: peak(|s| s.usage),
        peak_dirty_writeback_bytes: peak(|s| s.dirty + s.writeback),
        max_events: g.events.max_events,
        high_events: g.events.high_events,
        reclaimed_bytes: g.events.reclaimed * page,
        low_events: g.events.low_events,
        reclaim_throttled: g.events.throttled,
        writeback_waits: g.events.writeback_waits,
        high_delays: g.events.high_delays,
        high_delay_ms: round3(g.events.high_delay_ns as f64 / 1e6),
    }
}

#[derive(Serialize)]
struct TaskSummary<'a> {
    name: &'a str,
    instance: u32,
    job: &'a str,
    pid: u32,
    device: &'a str,
    bytes_written: u64,
    bytes_read: u64,
    throughput_mb_s: f64,
    steady_mb_s: f64,
    pauses: PauseSummary,
    op_latency_ms: LatencySummary,
    cpu_sys_ms: f64,
    cpu_user_ms: f64,
    runqueue_wait_ms: f64,
    /// Allocations that waited for memory (reclaim), and the time they waited.
    reclaim_waits: u64,
    reclaim_wait_ms: f64,
    schedules: SchedSummary,
    /// Its sync calls' waits (only for a task that made some).
    #[serde(skip_serializing_if = "Option::is_none")]
    syncs: Option<SyncSummary>,
}

/// Where a task's sync calls waited, ms: summed over the calls, and the slowest call's.
#[derive(Serialize)]
struct SyncSummary {
    calls: u64,
    data_ms: f64,
    commit_ms: f64,
    flush_ms: f64,
    worst: SyncWorst,
}

#[derive(Serialize)]
struct SyncWorst {
    data_ms: f64,
    commit_ms: f64,
    flush_ms: f64,
}

/// Calls of schedule() per page-wait site, and page-wait wakeups (all, spurious).
#[derive(Serialize)]
struct SchedSummary {
    wait_on_page_bit: u64,
    __lock_page: u64,
    __wait_on_buffer: u64,
    do_get_write_access: u64,
    wakeups: u64,
    spurious_wakeups: u64,
}

/// balance_dirty_pages sleeps, ms.
#[derive(Serialize)]
struct PauseSummary {
    count: u64,
    total_ms: f64,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    /// The longest a call had held the task when it went to sleep, as the trace event's
    /// `paused` shows (in 2.6.x's loops, less than the call when it ended in its own writeback).
    paused_max_ms: f64,
}

/// A latency histogram's figures, ms.
#[derive(Serialize)]
struct LatencySummary {
    count: u64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    mean: f64,
}

#[derive(Serialize)]
struct DeviceSummary<'a> {
    name: &'a str,
    model: &'a str,
    bytes_written: u64,
    bytes_read: u64,
    util: f64,
    requests_written: u64,
    requests_read: u64,
    /// Cache flushes sent (diskstats' flush requests) and writes with REQ_FUA (simulated only:
    /// diskstats does not count them).
    flushes: u64,
    fua_writes: u64,
    request_latency_ms: LatencySummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    journal: Option<JournalSummary>,
    /// blk-iolatency's effect on each cgroup with a target or with bios it held here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    iolatency: Vec<IolatSummary<'a>>,
}

/// What blk-iolatency did to and for one cgroup on one device.
#[derive(Serialize)]
struct IolatSummary<'a> {
    cgroup: &'a str,
    /// Its io.latency target (0: none).
    target_ms: f64,
    /// Windows in which it missed the target (each cut its siblings' queue depth).
    missed: u64,
    /// Its bios that waited for the depth it was allowed, and their wait in all.
    waits: u64,
    wait_ms: f64,
    /// The smallest queue depth it was allowed (absent: never limited).
    #[serde(skip_serializing_if = "Option::is_none")]
    min_depth: Option<u64>,
}

/// A device's journal: commits and what they cost.
#[derive(Serialize)]
struct JournalSummary {
    fs: &'static str,
    commits: u64,
    blocks_logged: u64,
    commit_mean_ms: f64,
    commit_max_ms: f64,
    locked_mean_ms: f64,
    flushing_mean_ms: f64,
    logging_mean_ms: f64,
    handle_waits: u64,
    handle_wait_ms: f64,
    checkpoint_blocks: u64,
    /// ext4 fast commits written.
    fast_commits: u64,
}

fn pauses(h: &LatencyHist, paused_max: u64) -> PauseSummary {
    let s = h.summary();
    PauseSummary {
        count: s.count,
        total_ms: round3(s.total as f64 / 1e6),
        p50_ms: ns_to_ms(s.p50),
        p90_ms: ns_to_ms(s.p90),
        p99_ms: ns_to_ms(s.p99),
        max_ms: ns_to_ms(s.max),
        paused_max_ms: ns_to_ms(paused_max),
    }
}

fn latency(s: HistSummary) -> LatencySummary {
    LatencySummary {
        count: s.count,
        p50: ns_to_ms(s.p50),
        p90: ns_to_ms(s.p90),
        p99: ns_to_ms(s.p99),
        max: ns_to_ms(s.max),
        mean: round3(s.mean / 1e6),
    }
}

fn task(t: &TaskResult) -> TaskSummary<'_> {
    TaskSummary {
        name: &t.name,
        instance: t.instance,
        job: t.job,
        pid: t.pid,
        device: &t.device,
        bytes_written: t.bytes_written,
        bytes_read: t.bytes_read,
        throughput_mb_s: round3(t.throughput_mb_s()),
        steady_mb_s: round3(t.steady_mb_s()),
        pauses: pauses(&t.pauses, t.paused_max),
        op_latency_ms: latency(t.op_latency.summary()),
        cpu_sys_ms: ns_to_ms(t.cpu_sys_ns),
        cpu_user_ms: ns_to_ms(t.cpu_user_ns),
        runqueue_wait_ms: ns_to_ms(t.runqueue_wait_ns),
        reclaim_waits: t.reclaim_waits,
        reclaim_wait_ms: ns_to_ms(t.reclaim_wait_ns),
        syncs: (t.syncs.calls > 0).then(|| SyncSummary {
            calls: t.syncs.calls,
            data_ms: ns_to_ms(t.syncs.total[0]),
            commit_ms: ns_to_ms(t.syncs.total[1]),
            flush_ms: ns_to_ms(t.syncs.total[2]),
            worst: SyncWorst {
                data_ms: ns_to_ms(t.syncs.worst[0]),
                commit_ms: ns_to_ms(t.syncs.worst[1]),
                flush_ms: ns_to_ms(t.syncs.worst[2]),
            },
        }),
        schedules: SchedSummary {
            wait_on_page_bit: t.sched.wait_on_page_bit,
            __lock_page: t.sched.lock_page,
            __wait_on_buffer: t.sched.wait_on_buffer,
            do_get_write_access: t.sched.do_get_write_access,
            wakeups: t.sched.wakeups,
            spurious_wakeups: t.sched.spurious_wakeups,
        },
    }
}

fn device<'a>(d: &'a DeviceResult, cgroups: &'a [wblab_sim::metrics::CgroupResult]) -> DeviceSummary<'a> {
    DeviceSummary {
        name: &d.name,
        model: d.model,
        bytes_written: d.bytes_written,
        bytes_read: d.bytes_read,
        util: round3(d.util),
        requests_written: d.requests_written,
        requests_read: d.requests_read,
        flushes: d.flushes,
        fua_writes: d.fua_writes,
        request_latency_ms: latency(d.request_latency.summary()),
        journal: d.journal.as_ref().map(|j| JournalSummary {
            fs: j.fs,
            commits: j.commits,
            blocks_logged: j.blocks_logged,
            commit_mean_ms: ns_to_ms(j.commit_mean_ns),
            commit_max_ms: ns_to_ms(j.commit_max_ns),
            locked_mean_ms: ns_to_ms(j.locked_mean_ns),
            flushing_mean_ms: ns_to_ms(j.flushing_mean_ns),
            logging_mean_ms: ns_to_ms(j.logging_mean_ns),
            handle_waits: j.handle_waits,
            handle_wait_ms: ns_to_ms(j.handle_wait_ns),
            checkpoint_blocks: j.checkpoint_blocks,
            fast_commits: j.fast_commits,
        }),
        iolatency: d
            .iolatency
            .iter()
            .zip(cgroups)
            .filter(|(s, _)| s.target_ns > 0 || s.waits > 0)
            .map(|(s, g)| IolatSummary {
                cgroup: &g.path,
                target_ms: ns_to_ms(s.target_ns),
                missed: s.missed,
                waits: s.waits,
                wait_ms: ns_to_ms(s.wait_ns),
                min_depth: (s.min_depth != u64::MAX).then_some(s.min_depth),
            })
            .collect(),
    }
}

fn build(r: &RunResult, wall_seconds: f64) -> Summary<'_> {
    Summary {
        wblab_version: env!("CARGO_PKG_VERSION"),
        sim_seconds: round3(r.sim_ns as f64 / 1e9),
        wall_seconds: round3(wall_seconds),
        events: r.events,
        trace_dropped: r.trace_dropped,
        scenario: &r.scenario,
        tasks: r.tasks.iter().map(task).collect(),
        devices: r.devices.iter().map(|d| device(d, &r.cgroups)).collect(),
        cgroups: r.cgroups.iter().map(cgroup).collect(),
        pressure: pressure(r),
    }
}

/// The content of `summary.json` as a JSON value (keys in the documented order).
pub fn summary_json(r: &RunResult, wall_seconds: f64) -> serde_json::Value {
    serde_json::to_value(build(r, wall_seconds)).expect("summary serialises")
}

/// The text of `summary.json`: pretty JSON with a trailing newline.
pub fn summary_text(r: &RunResult, wall_seconds: f64) -> String {
    let mut s = serde_json::to_string_pretty(&build(r, wall_seconds)).expect("summary serialises");
    s.push('\n');
    s
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
