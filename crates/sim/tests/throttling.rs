//! Behaviour of 6.x dirty throttling on the HDD model, as a user would check it in the trace
//! and the pause/bandwidth graphs: N `dd` writers, today's defaults.

use wblab_sim::config::{DeviceModelConfig, HddParams, JobConfig, Scenario};
use wblab_sim::drivers::characterize::characterize;
use wblab_sim::metrics::RunResult;
use wblab_sim::units::{GIB, MIB};

const SEC: u64 = 1_000_000_000;

fn run_dd(n: u32, secs: u64) -> RunResult {
    let mut sc = Scenario::one_device("dd", DeviceModelConfig::Hdd(HddParams::default()), 4 * GIB, 2, secs * SEC);
    sc.add_task(
        "dd",
        n,
        0,
        JobConfig::Dd {
            bs: MIB,
            size: None,
            fsync: false,
            direct: false,
        },
    );
    wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress)
}

/// Sequential write bandwidth of the simulated disk, measured on the model itself.
fn device_write_mb_s(r: &RunResult) -> f64 {
    characterize(&r.scenario.devices[0]).seq_write_mb_s
}

fn check(n: u32) {
    let secs = 60;
    let r = run_dd(n, secs);
    let hz_tick = SEC / r.scenario.hz;

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
    let q: Vec<_> = r.throttle.iter().filter(|s| s.t_ns >= secs * SEC * 3 / 4).collect();
    let rl = q.iter().map(|s| s.dirty_ratelimit as f64).sum::<f64>() / q.len() as f64;
    let bw = q.iter().map(|s| s.avg_write_bw as f64).sum::<f64>() / q.len() as f64;
    let target = bw / n as f64;
    assert!(
        (rl - target).abs() <= 0.25 * target,
        "{n} dd: dirty_ratelimit {rl:.0} pages/s vs write_bw/N {target:.0}"
    );
    let _ = hz_tick;
}

#[test]
fn one_dd() {
    check(1);
}

#[test]
fn two_dd() {
    check(2);
}

#[test]
fn ten_dd() {
    check(10);
}

#[test]
fn hundred_dd() {
    check(100);
}
