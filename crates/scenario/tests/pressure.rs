//! Pressure stall information as the kernel defines it (`kernel/sched/psi.c`), built state by
//! state: a task waiting for its reads is I/O pressure, `some` and `full` while nothing else
//! runs; a CPU-bound neighbour on its CPU turns `full` off, one on the other CPU dilutes the
//! system's figure (CPUs weigh by their non-idle time) but not its cgroup's; a
//! `balance_dirty_pages` pause is I/O wait; a `memory.high` penalty is a memory stall, in the
//! group and in the system.

use wblab_sim::metrics::Pressure;
use wblab_sim::metrics::RunResult;

const SECS: u64 = 20;

fn run(toml: &str) -> RunResult {
    let sc = wblab_scenario::parse(toml, "pressure.toml").unwrap_or_else(|e| panic!("{e}"));
    wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
}

/// The group's `some` and `full` of resource `res` (0 io, 1 memory, 2 cpu) at the end.
fn pressure(r: &RunResult, group: u16, res: usize) -> (Pressure, Pressure) {
    let s = r.pressure.iter().rev().find(|s| s.group == group).expect("pressure kept");
    (s.figures[2 * res], s.figures[2 * res + 1])
}

/// A random O_DIRECT reader of a 7200 rpm disk, optionally in cgroup `/db`, beside `extra`.
fn reader(cpus: u32, in_group: bool, extra: &str) -> String {
    let group = if in_group { "[[cgroup]]\npath = \"/db\"\n" } else { "" };
    let cg = if in_group { "cgroup = \"/db\"\n" } else { "" };
    format!(
        "duration = \"{SECS}s\"\n[machine]\ncpus = {cpus}\n[[device]]\nmodel = \"hdd\"\n{group}\
         [[task]]\nname = \"db\"\njob = \"randread\"\nfile_size = \"8GiB\"\n{cg}{extra}"
    )
}

const SPINNER: &str = "[[task]]\nname = \"hog\"\njob = \"spin\"\n";

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Alone, the reader is in I/O wait whenever it is not running: the system's io `some` is
/// its time minus its CPU time, and `full` the same (nothing else ran).
#[test]
fn a_lone_reader_is_io_pressure_whenever_it_does_not_run() {
    let r = run(&reader(2, false, ""));
    let t = &r.tasks[0];
    let (some, full) = pressure(&r, 0, 0);
    let waiting = us(SECS * 1_000_000_000 - t.cpu_sys_ns - t.cpu_user_ns - t.runqueue_wait_ns);
    assert!(
        (some.total_us as f64 / waiting - 1.0).abs() < 0.02,
        "io some {} µs, the reader waited {waiting} µs",
        some.total_us
    );
    assert!(full.total_us as f64 >= 0.98 * some.total_us as f64, "{some:?} {full:?}");
    // A stall since the start, folded in every 2 s: 1 − (1677/2048)^(updates) of 100 %.
    let avg10 = 100.0 * (1.0 - (1677.0f64 / 2048.0).powi((SECS / 2) as i32));
    assert!(
        (some.avg10 - avg10).abs() < 1.5,
        "avg10 {} after {SECS} s of stall, the kernel's decay gives {avg10:.2}",
        some.avg10
    );
    assert_eq!(pressure(&r, 0, 1).0.total_us, 0, "no memory pressure");
    // One sample per second, the last at the run's end, none twice.
    let times: Vec<u64> = r.pressure.iter().map(|s| s.t_ns).collect();
    assert!(
        times.windows(2).all(|w| w[0] < w[1]),
        "one group, one sample per instant: {times:?}"
    );
    assert_eq!(times.len() as u64, SECS);
}

/// A reader that thinks between its reads is stalled only while a read is in flight: the
/// think time is a plain sleep, and the journal commit an fsync waits for is not I/O wait.
#[test]
fn think_time_and_journal_commit_waits_are_not_io_pressure() {
    let r = run(&reader(2, false, "think = \"20ms\"\n"));
    let reads = r.tasks[0].op_latency.summary();
    let some = pressure(&r, 0, 0).0;
    assert!(
        (some.total_us as f64 / (reads.total as f64 / 1e3) - 1.0).abs() < 0.03,
        "io some {} µs, reads took {} µs",
        some.total_us,
        reads.total / 1000
    );
    let r = run(&format!(
        "duration = \"{SECS}s\"\n[[device]]\nmodel = \"hdd\"\nfs = \"ext4\"\n[[task]]\nname = \"db\"\njob = \"fsync\"\nbytes = \"16KiB\"\ninterval = \"100ms\"\n"
    ));
    let s = r.tasks[0].syncs;
    let some = pressure(&r, 0, 0).0;
    let (data, commit, flush) = (s.total[0] as f64 / 1e3, s.total[1] as f64 / 1e3, s.total[2] as f64 / 1e3);
    assert!(commit > 10.0 * (data + flush), "the fsyncs waited on commits: {s:?}");
    assert!(
        (some.total_us as f64) < 1.5 * (data + flush) + 1000.0,
        "io some {} µs; data {data} µs, flush {flush} µs, commit {commit} µs",
        some.total_us
    );
}

/// On one CPU a spinner is always runnable beside the reader: `some` stays, `full` goes.
#[test]
fn a_runnable_neighbour_on_the_cpu_turns_full_off() {
    let alone = pressure(&run(&reader(1, false, "")), 0, 0).0;
    let r = run(&reader(1, false, SPINNER));
    let (some, full) = pressure(&r, 0, 0);
    assert!(some.total_us as f64 > 0.9 * alone.total_us as f64, "some {some:?} alone {alone:?}");
    assert!(
        (full.total_us as f64) < 0.05 * some.total_us as f64,
        "full {full:?} with a spinner on the CPU"
    );
    let (cpu_some, _) = pressure(&r, 0, 2);
    assert!(cpu_some.total_us > 0, "the reader waited for the spinner's CPU at times");
}

/// On two CPUs the spinner's busy CPU weighs as much as the reader's: the system's io
/// pressure is about half; the reader's cgroup, which the spinner is not in, keeps it whole.
#[test]
fn a_busy_other_cpu_dilutes_the_system_but_not_the_group() {
    let alone = pressure(&run(&reader(2, true, "")), 1, 0).0;
    let r = run(&reader(2, true, SPINNER));
    let system = pressure(&r, 0, 0).0;
    let group = pressure(&r, 1, 0).0;
    let share = system.total_us as f64 / group.total_us as f64;
    assert!((0.4..0.7).contains(&share), "system {system:?} / group {group:?} = {share:.2}");
    assert!(
        group.total_us as f64 > 0.9 * alone.total_us as f64,
        "group {group:?} alone {alone:?}"
    );
}

/// A buffered writer spends its `balance_dirty_pages` pauses in I/O wait (`io_schedule_timeout`).
#[test]
fn dirty_throttling_pauses_are_io_pressure() {
    let r = run(&format!(
        "duration = \"{SECS}s\"\n[machine]\nmemory = \"2GiB\"\n[[device]]\nmodel = \"usb\"\n[[task]]\nname = \"copy\"\njob = \"dd\"\n"
    ));
    let t = &r.tasks[0];
    let paused = t.pauses.summary();
    let paused_us = paused.total as f64 / 1e3;
    let some = pressure(&r, 0, 0).0;
    assert!(paused_us > 1e6, "the writer was throttled ({paused:?})");
    assert!(
        some.total_us as f64 >= 0.97 * paused_us,
        "io some {} µs < pauses {paused_us} µs",
        some.total_us
    );
}

/// On cgroup v1 a small group fills with dirty pages and its reclaim waits on their
/// writeback (`folio_wait_writeback` inside the memstall section): memory pressure of the
/// group, and about as much of the system, which holds the same task (and the flusher, whose
/// little CPU time weighs the other CPU in); the writeback waits are I/O pressure as well
/// (`reclaim_throttle`'s sleeps, a plain `schedule_timeout`, are not).
#[test]
fn reclaim_waiting_on_writeback_is_a_memory_stall() {
    let r = run(&format!(
        "duration = \"{SECS}s\"\n[[device]]\nmodel = \"hdd\"\n[[cgroup]]\npath = \"/pod\"\nmemory.limit_in_bytes = \"256MiB\"\n\
         [[task]]\nname = \"copy\"\njob = \"dd\"\ncgroup = \"/pod\"\n"
    ));
    assert!(r.cgroups[0].events.writeback_waits > 0, "the group's reclaim waited on writeback");
    let (group, group_full) = pressure(&r, 1, 1);
    let system = pressure(&r, 0, 1).0;
    assert!(group.total_us > 0, "{group:?}");
    assert!(
        (system.total_us as f64 / group.total_us as f64 - 1.0).abs() < 0.02,
        "system {system:?} group {group:?}"
    );
    assert!(
        group_full.total_us as f64 > 0.95 * group.total_us as f64,
        "nothing else ran: {group_full:?}"
    );
    assert!(pressure(&r, 1, 0).0.total_us > 0, "the writeback waits are I/O waits too");
}
