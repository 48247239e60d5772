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
        stop: None,
        job: dd(64 * KIB, 256 * MIB, false),
    });
    sc.tasks.push(TaskConfig {
        name: "sync".into(),
        count: 1,
        device: 0,
        file: "/mnt/sda/none".into(),
        start: 2 * SEC,
        stop: None,
        job: JobConfig::Sync { interval: 60 * SEC },
    });
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
