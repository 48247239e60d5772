//! The usb, nfs and raid0 device models under `dd` writers, checked the way a user would check
//! a real box: throughput against the device's datasheet figure (`characterize`), pauses
//! within `MAX_PAUSE` on 6.x, and for NFS, where the UNSTABLE pages are until a COMMIT returns.

use wblab_sim::config::{
    default_queue, default_size, DeviceConfig, DeviceModelConfig, HddParams, JobConfig, NfsParams, Raid0Params, Scenario, SsdParams,
    TaskConfig, UsbParams,
};
use wblab_sim::drivers::characterize::characterize;
use wblab_sim::units::{GIB, MIB, PAGE_SIZE};
use wblab_testkit::sim::{dd, max_pause, near, run, steady_mb_s as steady, MS, SEC};

fn one(model: DeviceModelConfig, memory: u64, secs: u64, writers: u32) -> Scenario {
    let mut sc = Scenario::one_device("devices", model, memory, 8, secs * SEC);
    sc.add_task("dd", writers, 0, dd(None));
    sc
}

/// The 2011 "UKEY": one dd on a USB 2.0 key, 3 GB of memory.
#[test]
fn usb_key_runs_at_its_sequential_rate_with_short_pauses() {
    let sc = one(DeviceModelConfig::Usb(UsbParams::default()), 2945 * MIB, 60, 1);
    let r = run(&sc);
    let dev = characterize(&sc.devices[0]).seq_write_mb_s;
    let got = steady(&r, "dd");
    assert!(near(got, dev, 0.10), "dd {got:.2} MB/s, key {dev:.2} MB/s");
    assert!(max_pause(&r, "dd") <= 200 * MS, "pause {} ms", max_pause(&r, "dd") / MS);
    let d = &r.devices[0];
    assert!(d.util > 0.95, "util {:.2}", d.util);
    // usb-storage's 120 KiB requests, one at a time.
    assert!(d.bytes_written / d.requests_written <= 120 * 1024);
    assert!(d.request_latency.summary().max < 50 * MS, "{:?}", d.request_latency.summary());
}

/// A USB key beside a disk ("1UKEY+1HDD-3G"), a dd on each: the key's slow writeback must not
/// throttle the disk's writer (per-bdi limits), and no pause exceeds MAX_PAUSE.
#[test]
fn usb_key_beside_a_disk_does_not_slow_the_disk() {
    let hdd = DeviceModelConfig::Hdd(HddParams::default());
    let alone = run(&one(hdd.clone(), 2945 * MIB, 60, 1));
    let mut sc = one(hdd, 2945 * MIB, 60, 1);
    let usb = DeviceModelConfig::Usb(UsbParams::default());
    sc.devices.push(DeviceConfig {
        name: "sdb".into(),
        major: 8,
        minor: 16,
        size: default_size(&usb),
        queue: default_queue(&usb),
        model: usb,
        bdi: Default::default(),
        fs: None,
        throttle: Default::default(),
        used_pct: 0,
        writeout_share_pct: 0,
        emulate: false,
    });
    sc.tasks.push(TaskConfig {
        name: "ukey".into(),
        count: 1,
        device: 1,
        file: "/mnt/sdb/ukey{n}".into(),
        start: 0,
        stagger: 0,
        stop: None,
        ioprio: Default::default(),
        cgroup: None,
        after: Vec::new(),
        job: dd(None),
    });
    let r = run(&sc);
    let (disk, disk_alone) = (steady(&r, "dd"), steady(&alone, "dd"));
    assert!(
        disk >= 0.9 * disk_alone,
        "disk writer {disk:.1} MB/s beside the key, {disk_alone:.1} alone"
    );
    // The key writes at its rate all along; its writer, over the run, about as fast (its share
    // of the dirty limit moves as the disk's writeout dominates the proportions).
    let key_dev = characterize(&sc.devices[1]).seq_write_mb_s;
    let key = r.devices[1].bytes_written as f64 / 60e6;
    assert!(near(key, key_dev, 0.05), "key {key:.2} MB/s, its figure {key_dev:.2}");
    let writer = r.tasks.iter().find(|t| t.name == "ukey").unwrap().throughput_mb_s();
    assert!(writer >= 0.8 * key_dev, "key writer {writer:.2} MB/s, key {key_dev:.2}");
    for name in ["dd", "ukey"] {
        assert!(max_pause(&r, name) <= 200 * MS, "{name}: pause {} ms", max_pause(&r, name) / MS);
    }
}

/// Ten 2011 SSDs in md raid0, 100 dd: the array's one bdi runs at ten times a member.
#[test]
fn raid0_of_ten_ssds_runs_at_ten_times_a_member() {
    let member = DeviceModelConfig::Ssd(SsdParams {
        read_bandwidth: 250_000_000,
        write_bandwidth: 170_000_000,
        queue_depth: 31,
        ..SsdParams::default()
    });
    let array = DeviceModelConfig::Raid0(Raid0Params {
        members: 10,
        member: Box::new(member.clone()),
        ..Raid0Params::default()
    });
    let sc = one(array, 16 * GIB, 30, 100);
    assert_eq!(sc.devices[0].queue.max_sectors_kb, 512);
    assert_eq!(sc.devices[0].queue.read_ahead_kb, 2 * 10 * 512);
    let r = run(&sc);
    let one_ssd = characterize(&Scenario::one_device("m", member, GIB, 1, SEC).devices[0]).seq_write_mb_s;
    let dev = characterize(&sc.devices[0]).seq_write_mb_s;
    assert!(near(dev, 10.0 * one_ssd, 0.03), "array {dev:.0} MB/s, member {one_ssd:.0}");
    let agg = steady(&r, "dd");
    assert!(agg >= 0.9 * dev, "100 dd: {agg:.0} MB/s on a {dev:.0} MB/s array");
    let d = &r.devices[0];
    assert!(
        near(d.bytes_written as f64 / 30e6, dev, 0.05),
        "device {} MB",
        d.bytes_written / 1_000_000
    );
    assert!(max_pause(&r, "dd") <= 200 * MS, "pause {} ms", max_pause(&r, "dd") / MS);
}

/// NFS: 64 MiB written, then nothing. The WRITEs reply within a second (the link), but the
/// server's 10 MB/s disk needs ~7 s before the COMMIT returns: until then every page stays
/// under writeback (NR_WRITEBACK), counted against the dirty limit, and none is written.
#[test]
fn nfs_unstable_pages_stay_in_writeback_until_the_commit() {
    let nfs = NfsParams {
        server_write_bandwidth: 10_000_000,
        server_cache: GIB,
        ..NfsParams::default()
    };
    let mut sc = one(DeviceModelConfig::Nfs(nfs), 3 * GIB, 12, 0);
    sc.tasks.clear();
    sc.add_task("dd", 1, 0, dd(Some(64 * MIB)));
    // Start writeback at once.
    sc.sysctl.dirty_background_bytes = 4 * MIB;
    sc.sysctl.dirty_background_ratio = 0;
    let r = run(&sc);
    let pages = 64 * MIB / PAGE_SIZE;
    let at = |s: u64| &r.vmstat[s as usize - 1];
    let replied_by = |s: u64| r.vmstat[..s as usize].iter().map(|v| v.dev_write_bytes[0]).sum::<u64>();
    // After 2 s: all replied, nothing stable, all of it in NR_WRITEBACK.
    assert_eq!(replied_by(2), 64 * MIB);
    assert_eq!(at(2).nr_dirty, 0);
    assert_eq!(at(2).nr_writeback, pages, "{:?}", at(2));
    assert_eq!(at(2).nr_written, 0);
    // Two COMMITs: one after the first 48 MiB of replies (commit_bytes), stable once the
    // server's disk has written them (~5 s), one for the rest (~6.7 s). Pages leave writeback
    // only in those two steps.
    let commit = 48 * MIB / PAGE_SIZE;
    assert_eq!((at(4).nr_written, at(4).nr_writeback), (0, pages), "{:?}", at(4));
    assert_eq!((at(6).nr_written, at(6).nr_writeback), (commit, pages - commit), "{:?}", at(6));
    assert_eq!((at(8).nr_written, at(8).nr_writeback), (pages, 0), "{:?}", at(8));
    assert!(r.vmstat.iter().all(|v| [0, commit, pages].contains(&v.nr_written)));
}

/// NFS write throughput is the slower of the link and the server's disk.
#[test]
fn nfs_throughput_is_the_slower_of_link_and_server_disk() {
    for (server, link, want) in [(100_000_000, 117_000_000, 100.0), (1_000_000_000, 117_000_000, 117.0)] {
        let nfs = NfsParams {
            server_write_bandwidth: server,
            link_bandwidth: link,
            server_cache: 64 * MIB,
            ..NfsParams::default()
        };
        let sc = one(DeviceModelConfig::Nfs(nfs), 2945 * MIB, 40, 1);
        let dev = characterize(&sc.devices[0]).seq_write_mb_s;
        assert!(near(dev, want, 0.01), "device {dev:.1} MB/s, want {want}");
        let r = run(&sc);
        let got = steady(&r, "dd");
        assert!(near(got, want, 0.07), "dd {got:.1} MB/s, want {want}");
        assert!(max_pause(&r, "dd") <= 200 * MS, "pause {} ms", max_pause(&r, "dd") / MS);
        // The unstable data is a good part of what is under writeback: more than the RPCs in
        // flight (16 × 1 MiB) most of the time.
        let late: Vec<_> = r.vmstat.iter().filter(|v| v.t_ns > 10 * SEC).collect();
        let over = late.iter().filter(|v| v.nr_writeback * PAGE_SIZE > 16 * MIB).count();
        assert!(
            over * 2 > late.len(),
            "writeback above the in-flight RPCs in {over} of {} s",
            late.len()
        );
    }
}

/// fsync on NFS returns after its COMMIT, which it sends at once: a round trip or two, not the
/// 48 MiB of a writeback pass.
#[test]
fn nfs_fsync_commits_at_once() {
    let mut sc = Scenario::one_device("fsync", DeviceModelConfig::Nfs(NfsParams::default()), 2945 * MIB, 2, 10 * SEC);
    sc.add_task(
        "commit",
        1,
        0,
        JobConfig::Fsync {
            bytes: 4096,
            interval: 100 * MS,
        },
    );
    let r = run(&sc);
    let op = r.tasks[0].op_latency.summary();
    assert!(op.count >= 90, "{op:?}");
    assert!(op.max < 2 * MS, "fsync latency {op:?}");
    assert!(r.vmstat.last().unwrap().nr_writeback == 0);
}
