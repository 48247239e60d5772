//! fsync, `conv=fsync` and sync as users meet them: every byte written before the call is on
//! the device when the call returns (the durability law checks each call; these tests check
//! what the user sees at the end), on one device and on several, and with writes smaller than
//! a page that land on pages already under writeback.

use wblab_sim::config::{DeviceModelConfig, HddParams, JobConfig, Scenario, SsdParams, TaskConfig};
use wblab_sim::units::{GIB, KIB, MIB};
use wblab_testkit::sim::{dd_with as dd, end_state, run, SEC};

#[test]
fn sub_page_writes_rewrite_pages_under_writeback() {
    // 512-byte writes re-dirty the tail page; a sync every 5 ms puts it under writeback in
    // between, so some pages are dirtied while their I/O is in flight and must be written again.
    let mut sc = Scenario::one_device("bs512", DeviceModelConfig::Hdd(HddParams::default()), 4 * GIB, 2, 20 * SEC);
    sc.add_task("dd", 1, 0, dd(512, 64 * MIB, true));
    sc.add_task("sync", 1, 0, JobConfig::Sync { interval: 5_000_000 });
    let r = run(&sc);
    let pages = 64 * MIB / 4096;
    let dirtied = r.vmstat.last().unwrap().nr_dirtied;
    assert!(
        dirtied > pages,
        "some page was dirtied again after it was written: {dirtied} of {pages}"
    );
    assert!(r.devices[0].bytes_written >= 64 * MIB);
    assert_eq!(end_state(&r), (0, 0));
    assert!(r.tasks[0].ended < r.sim_ns, "dd's fsync returned");
}

#[test]
fn conv_fsync_waits_for_what_the_flusher_already_started() {
    // 1 GiB into 4 GiB of RAM: background writeback is under way when dd calls fsync, so the
    // file has pages both dirty and under writeback at the call.
    let mut sc = Scenario::one_device("fsync", DeviceModelConfig::Hdd(HddParams::default()), 4 * GIB, 2, 60 * SEC);
    sc.add_task("dd", 1, 0, dd(MIB, GIB, true));
    let r = run(&sc);
    let t = &r.tasks[0];
    assert!(t.ended < r.sim_ns, "dd returned");
    assert_eq!(r.devices[0].bytes_written, GIB);
    // Nothing may reach the device faster than its interface: the call took at least the
    // time to move what was not yet written.
    let rate = wblab_sim::drivers::characterize::characterize(&sc.devices[0]).write_burst_mb_s * 1e6;
    assert!(t.ended as f64 >= GIB as f64 / rate * 1e9 * 0.99, "{} ns", t.ended);
}

#[test]
fn sync_reaches_every_device() {
    let mut sc = Scenario::one_device("two", DeviceModelConfig::Ssd(SsdParams::default()), 8 * GIB, 2, 30 * SEC);
    let mut second = sc.devices[0].clone();
    second.name = "sdb".into();
    second.minor = 16;
    second.model = DeviceModelConfig::Hdd(HddParams::default());
    second.queue = wblab_sim::config::default_queue(&second.model);
    sc.devices.push(second);
    sc.add_task("a", 1, 0, dd(MIB, 256 * MIB, false));
    sc.tasks.push(TaskConfig {
        name: "b".into(),
        count: 1,
        device: 1,
        file: "/mnt/sdb/b".into(),
        start: 0,
        stagger: 0,
        stop: None,
        ioprio: Default::default(),
        cgroup: None,
        after: Vec::new(),
        job: dd(64 * KIB, 256 * MIB, false),
    });
    sc.tasks.push(wblab_testkit::sim::sync_once("sync", 2 * SEC));
    let r = run(&sc);
    // Both writers were done well before the sync; below the background limit nothing forced
    // their pages out before it, and the sync wrote both devices.
    let sync = r.tasks.iter().find(|t| t.name == "sync").unwrap();
    assert_eq!(sync.op_latency.summary().count, 1);
    for d in &r.devices {
        assert_eq!(d.bytes_written, 256 * MIB, "{}", d.name);
    }
    assert_eq!(end_state(&r), (0, 0));
}

/// Cache flushes issued in a run's trace (block tracing on).
fn flushes(r: &wblab_sim::metrics::RunResult) -> usize {
    r.trace
        .iter()
        .filter(|rec| matches!(rec.ev, wblab_sim::metrics::TraceEvent::BlockRqIssue { rwbs, .. } if rwbs.flush))
        .count()
}

/// One device of `model` (its queue's `write_cache` set) with `writers` dd streams and
/// `committers` tasks that write 4 KiB and fsync every 100 ms from 1 s on; block tracing on.
fn commit_on(model: DeviceModelConfig, write_cache: bool, writers: u32, committers: u32) -> Scenario {
    let mut sc = Scenario::one_device("commits", model, 4 * GIB, 2, 10 * SEC);
    sc.devices[0].queue.write_cache = write_cache;
    sc.trace.block = true;
    if writers > 0 {
        sc.add_task("dd", writers, 0, dd(MIB, 8 * GIB, false));
    }
    sc.add_task(
        "commit",
        committers,
        SEC,
        JobConfig::Fsync {
            bytes: 4 * KIB,
            interval: 100_000_000,
        },
    );
    sc
}

/// [`commit_on`] an HDD (a drive that caches writes).
fn commit_scenario(write_cache: bool, writers: u32, committers: u32) -> Scenario {
    commit_on(DeviceModelConfig::Hdd(HddParams::default()), write_cache, writers, committers)
}

/// fsync latency of the run's commit task(s).
fn commit_latency(r: &wblab_sim::metrics::RunResult) -> wblab_sim::metrics::hist::HistSummary {
    let mut h = wblab_sim::metrics::LatencyHist::new();
    for t in r.tasks.iter().filter(|t| t.name == "commit") {
        h.add(&t.op_latency);
    }
    h.summary()
}

#[test]
fn fsync_on_a_write_back_cache_ends_with_a_flush_that_waits_for_the_media() {
    // Alone on the disk: with "write back" each fsync's 4 KiB must leave the drive's cache
    // for the platter (a seek and part of a rotation), where "write through" (the block layer
    // drops the flush) returns once the data is in the cache.
    let flushed = run(&commit_scenario(true, 0, 1));
    let cached = run(&commit_scenario(false, 0, 1));
    let (f, c) = (flushed.tasks[0].op_latency.summary(), cached.tasks[0].op_latency.summary());
    assert!(f.count >= 80 && c.count >= 80, "{f:?} {c:?}");
    assert_eq!(flushes(&flushed) as u64, f.count, "one flush per fsync");
    assert_eq!(flushes(&cached), 0, "write through: no flush reaches the device");
    assert!(f.p50 > 5 * c.p50, "flushed p50 {} ns vs cached {} ns", f.p50, c.p50);
}

#[test]
fn fsync_under_a_bulk_writer_waits_for_the_cache_to_drain() {
    // Behind a stream of writes the drive's cache is full: a flush must destage it, so each
    // fsync takes at least the time to write a good part of the cache to the media, and the
    // writers lose little throughput to the flushes.
    let sc = commit_scenario(true, 2, 1);
    let r = run(&sc);
    let base = run(&commit_scenario(false, 2, 1));
    let commit = commit_latency(&r);
    let quiet = run(&commit_scenario(true, 0, 1)).tasks[0].op_latency.summary();
    assert!(
        commit.p50 > 10 * quiet.p50,
        "fsync p50 under writers {} ns, alone {} ns",
        commit.p50,
        quiet.p50
    );
    let written = |r: &wblab_sim::metrics::RunResult| r.devices[0].bytes_written as f64;
    assert!(written(&r) > 0.7 * written(&base), "{} vs {}", written(&r), written(&base));
}

#[test]
fn concurrent_fsyncs_share_flushes() {
    // Eight committers on one disk: a caller that asks while a flush is in flight waits for
    // the next one, which serves every caller queued by then (blk-flush), so there are fewer
    // flushes than fsyncs — and every fsync still waited for one.
    let r = run(&commit_scenario(true, 1, 8));
    let calls = commit_latency(&r).count;
    let n = flushes(&r) as u64;
    assert!(calls >= 50, "{calls} fsyncs");
    assert!(n > 0 && n < calls * 3 / 4, "{n} flushes for {calls} fsyncs");
}

#[test]
fn an_ssd_flush_waits_for_its_write_buffer() {
    let ssd = || DeviceModelConfig::Ssd(SsdParams::default());
    let r = run(&commit_on(ssd(), true, 1, 1));
    let t = run(&commit_on(ssd(), false, 1, 1));
    assert!(flushes(&r) > 0 && flushes(&t) == 0);
    let (flushed, trusted) = (commit_latency(&r), commit_latency(&t));
    assert!(flushed.p50 > trusted.p50, "flushed {flushed:?} vs write through {trusted:?}");
}

#[test]
fn fsync_on_an_md_array_waits_for_its_members_caches() {
    // A raid0 of two HDDs: the array's flush goes to its members (md_flush_request, every
    // member), so an fsync beside writers striping over both waits for their caches.
    let raid = |write_cache: bool| {
        let md = DeviceModelConfig::Raid0(wblab_sim::drivers::raid0::Raid0Params {
            members: 2,
            member: Box::new(DeviceModelConfig::Hdd(HddParams::default())),
            ..Default::default()
        });
        commit_latency(&run(&commit_on(md, write_cache, 2, 1)))
    };
    let (flushed, trusted) = (raid(true), raid(false));
    assert!(flushed.count > 0 && trusted.count > 0);
    assert!(flushed.p50 > 2 * trusted.p50, "flushed {flushed:?} vs write through {trusted:?}");
}
