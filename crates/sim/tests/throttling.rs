//! Behaviour of 6.x dirty throttling on the HDD model, as a user would check it in the trace
//! and the pause/bandwidth graphs: N `dd` writers, today's defaults.

use wblab_sim::config::{DeviceModelConfig, HddParams, Scenario};
use wblab_sim::drivers::characterize::characterize;
use wblab_sim::metrics::RunResult;
use wblab_sim::units::GIB;

use wblab_testkit::sim::SEC;

fn run_dd(n: u32, secs: u64) -> RunResult {
    run_dd_hz(n, secs, 250)
}

fn run_dd_hz(n: u32, secs: u64, hz: u64) -> RunResult {
    let mut sc = Scenario::one_device("dd", DeviceModelConfig::Hdd(HddParams::default()), 4 * GIB, 2, secs * SEC);
    sc.hz = hz;
    sc.add_task("dd", n, 0, wblab_testkit::sim::dd(None));
    wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
}

/// Sequential write bandwidth of the simulated disk, measured on the model itself.
fn device_write_mb_s(r: &RunResult) -> f64 {
    characterize(&r.scenario.devices[0]).seq_write_mb_s
}

/// Mean `dirty_ratelimit` and `avg_write_bw` over the last quarter of the run, pages/s.
fn ratelimit_vs_bw(r: &RunResult, secs: u64) -> (f64, f64) {
    let q: Vec<_> = r.throttle.iter().filter(|s| s.t_ns >= secs * SEC * 3 / 4).collect();
    let rl = q.iter().map(|s| s.dirty_ratelimit as f64).sum::<f64>() / q.len() as f64;
    let bw = q.iter().map(|s| s.avg_write_bw as f64).sum::<f64>() / q.len() as f64;
    (rl, bw)
}

fn check(n: u32, check_ratelimit: bool) {
    let secs = 60;
    let r = run_dd(n, secs);

    // Every pause within MAX_PAUSE (200 ms).
    for t in &r.tasks {
        let p = t.pauses.summary();
        assert!(p.count > 0, "{n} dd: task {} was never paused", t.instance);
        assert!(p.max <= 200 * 1_000_000, "{n} dd: pause of {} ms", p.max as f64 / 1e6);
    }

    // Aggregate steady-state throughput ≥ 90 % of the device's sequential write bandwidth.
    let agg: f64 = r.tasks.iter().map(|t| t.steady_mb_s()).sum();
    let dev = device_write_mb_s(&r);
    assert!(agg >= 0.9 * dev, "{n} dd: aggregate {agg:.1} MB/s < 90 % of device {dev:.1} MB/s");

    // Fairness: every task within ±10 % of the mean.
    let mean = agg / n as f64;
    for t in &r.tasks {
        let x = t.steady_mb_s();
        assert!(
            (x - mean).abs() <= 0.10 * mean,
            "{n} dd: task {} at {x:.2} MB/s, mean {mean:.2}",
            t.instance
        );
    }

    // Dirty pages (incl. writeback) settle between freerun and the limit in the second half.
    let half: Vec<_> = r.throttle.iter().filter(|s| s.t_ns >= secs * SEC / 2).collect();
    assert!(!half.is_empty());
    let inside = half.iter().filter(|s| s.dirty >= s.freerun && s.dirty <= s.limit).count();
    assert!(
        inside * 10 >= half.len() * 9,
        "{n} dd: dirty in [freerun, limit] in only {inside} of {} samples",
        half.len()
    );

    // dirty_ratelimit converges to within 25 % of write_bw / N (last quarter, mean).
    if check_ratelimit {
        let (rl, bw) = ratelimit_vs_bw(&r, secs);
        let target = bw / n as f64;
        assert!(
            (rl - target).abs() <= 0.25 * target,
            "{n} dd: dirty_ratelimit {rl:.0} pages/s vs write_bw/N {target:.0}"
        );
    }
}

/// One dd on a 220 MB/s disk: everything but the ratelimit target at today's HZ = 250.
///
/// There the kernel's `period = HZ * pages_dirtied / task_ratelimit` is about 1.99 jiffies
/// for a 256-page folio and truncates to 1, so a task dirties faster than its
/// task_ratelimit and `balanced_dirty_ratelimit` (which measures the real dirty rate)
/// settles the controller near 0.6 × write_bw. With HZ = 1000 the truncation is 4.8 → 4 and
/// the ratelimit lands within 25 % of write_bw, which is what this test checks.
#[test]
fn one_dd() {
    check(1, false);
    let secs = 60;
    let r = run_dd_hz(1, secs, 1000);
    let (rl, bw) = ratelimit_vs_bw(&r, secs);
    assert!(
        (rl - bw).abs() <= 0.25 * bw,
        "1 dd, HZ=1000: dirty_ratelimit {rl:.0} vs write_bw {bw:.0}"
    );
    // And at HZ = 250 the controller still converges: the last quarter is steady.
    let r = run_dd(1, secs);
    let q: Vec<_> = r.throttle.iter().filter(|s| s.t_ns >= secs * SEC * 3 / 4).collect();
    let (lo, hi) = q
        .iter()
        .fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s.dirty_ratelimit), hi.max(s.dirty_ratelimit)));
    assert!(hi as f64 <= lo as f64 * 1.10, "1 dd: dirty_ratelimit still moving: {lo}..{hi}");
}

#[test]
fn two_dd() {
    check(2, true);
}

#[test]
fn ten_dd() {
    check(10, true);
}

/// The ±10 % fairness criterion does not hold at 100 dd — and does not hold on the real 6.18
/// kernel either. Each writer releases a 1 MiB folio before it is checked and its period
/// (~476 ms) is clamped to MAX_PAUSE, so the hard-limit loop does the regulating and the
/// writers lock into rate groups. Measured on 6.18.44 with 100 dd on a throttled loop
/// (validation/v5-100dd-fairness): per-task min/mean 0.75, max/mean 2.72. The CLI test
/// `hundred_writers_are_as_uneven_as_on_the_real_kernel` holds the model to that measurement.
#[test]
#[ignore = "100-dd ±10 % fairness: false on the real 6.18 kernel too (validation/v5-100dd-fairness)"]
fn hundred_dd() {
    check(100, true);
}

/// The parts of the 100-dd criteria that hold today: pauses ≤ 200 ms and aggregate
/// throughput ≥ 90 % of the device.
#[test]
fn hundred_dd_pauses_and_throughput() {
    let secs = 60;
    let r = run_dd(100, secs);
    for t in &r.tasks {
        assert!(
            t.pauses.summary().max <= 200 * 1_000_000,
            "pause {} ms",
            t.pauses.summary().max as f64 / 1e6
        );
    }
    let agg: f64 = r.tasks.iter().map(|t| t.steady_mb_s()).sum();
    let dev = device_write_mb_s(&r);
    assert!(agg >= 0.9 * dev, "aggregate {agg:.1} MB/s < 90 % of device {dev:.1} MB/s");
}

/// Pages other devices keep dirty (`[machine] other_dirty`) share the global limit: the dd's
/// own dirty pages settle lower by about that much, the global level stays where throttling
/// holds it, and the dd keeps the disk busy.
#[test]
fn other_devices_dirty_pages_leave_less_room_for_ours() {
    let secs = 40;
    let run = |other: u64| {
        let mut sc = Scenario::one_device("dd", DeviceModelConfig::Hdd(HddParams::default()), 4 * GIB, 2, secs * SEC);
        sc.machine.other_dirty = other;
        sc.add_task("dd", 1, 0, wblab_testkit::sim::dd(None));
        wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
    };
    let other = 128 << 20;
    let (alone, shared) = (run(0), run(other));
    let median = |r: &RunResult, f: fn(&wblab_sim::metrics::ThrottleSample) -> u64| {
        let mut v: Vec<u64> = r.throttle.iter().filter(|s| s.t_ns >= secs * SEC / 2).map(f).collect();
        v.sort_unstable();
        v[v.len() / 2] as f64
    };
    let other_pages = (other / 4096) as f64;
    let lower = median(&alone, |s| s.wb_dirty) - median(&shared, |s| s.wb_dirty);
    assert!(
        (0.5 * other_pages..=1.5 * other_pages).contains(&lower),
        "the dd's dirty pages fell by {lower:.0} pages beside {other_pages:.0} dirty elsewhere"
    );
    let (g0, g1) = (median(&alone, |s| s.dirty), median(&shared, |s| s.dirty));
    assert!(
        (g1 - g0).abs() <= 0.25 * other_pages,
        "the global level moved from {g0:.0} to {g1:.0} pages"
    );
    let (a, b) = (alone.tasks[0].steady_mb_s(), shared.tasks[0].steady_mb_s());
    assert!(b >= 0.9 * a, "the dd wrote {b:.1} MB/s beside the other pages, {a:.1} alone");
}

/// Two O_DIRECT `dd` writers (64 KiB) and a logger writing 4 KiB and fsyncing every 100 ms on a
/// USB key (no service-time noise of its own) limited by blk-throttle to 4 MiB/s, without
/// wake-up latency, 10 s at HZ 250 under `seed`, with or without chance.
fn throttled_key(seed: u64, chance: bool) -> RunResult {
    let mut sc = Scenario::one_device("paced", DeviceModelConfig::Usb(Default::default()), 4 * GIB, 2, 10 * SEC);
    sc.seed = seed;
    sc.machine.chance = chance;
    sc.machine.wakeup_latency = 0;
    sc.devices[0].throttle = wblab_sim::config::BlkThrottleConfig {
        write_bps: Some(4 << 20),
        ..Default::default()
    };
    sc.add_task("dd", 2, 0, wblab_testkit::sim::dd_direct(64 << 10, None));
    sc.add_task(
        "log",
        1,
        0,
        wblab_sim::config::JobConfig::Fsync {
            bytes: 4096,
            interval: SEC / 10,
        },
    );
    wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
}

/// What each task did: bytes, and its write() (or fsync()) latency median and p99.
fn paced_figures(r: &RunResult) -> Vec<(u64, u64, u64)> {
    r.tasks
        .iter()
        .map(|t| {
            let s = t.op_latency.summary();
            (t.bytes_written, s.p50, s.p99)
        })
        .collect()
}

#[test]
fn seeds_start_a_paced_run_at_different_points_of_the_tick() {
    // With every other chance taken away, the run's start within the kernel's tick is what the
    // seed still moves: blk-throttle's slices and dispatch timer fall elsewhere against the
    // logger's 100 ms period, so its fsyncs and the copies' writes wait otherwise. Without
    // chance the tick starts with the run.
    let seeds = [1, 2, 3, 4];
    let on: Vec<_> = seeds.iter().map(|&s| paced_figures(&throttled_key(s, true))).collect();
    assert!(on.iter().any(|f| *f != on[0]), "four seeds, one run: {on:?}");
    let off: Vec<_> = seeds.iter().map(|&s| paced_figures(&throttled_key(s, false))).collect();
    assert!(off.iter().all(|f| *f == off[0]), "chance off: {off:?}");
}
