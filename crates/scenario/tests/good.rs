//! Files that must parse, and the values they must produce.

use std::path::Path;
use wblab_scenario::{default_scenario, load, parse};
use wblab_sim::config::{DeviceModelConfig, JobConfig, SchedulerKind};
use wblab_sim::units::{GIB, KIB, MIB};

const S: u64 = 1_000_000_000;

fn ok(text: &str) -> wblab_sim::config::Scenario {
    parse(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_shipped_scenario_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let sc = load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(sc.name, path.file_stem().unwrap().to_str().unwrap(), "name of {}", path.display());
            let first = std::fs::read_to_string(&path).unwrap();
            assert!(
                first.starts_with("# "),
                "{} starts with a comment saying what it answers",
                path.display()
            );
            n += 1;
        }
    }
    assert!(n >= 6, "found {n} scenarios");
}

#[test]
fn default_scenario_values() {
    let sc = default_scenario();
    assert_eq!(sc.name, "default");
    assert_eq!(sc.kernel, "6.x");
    assert_eq!(sc.duration, 60 * S);
    assert_eq!(sc.seed, 1);
    assert_eq!(sc.hz, 250);
    assert_eq!(sc.machine.memory, 4 * GIB);
    assert_eq!(sc.machine.cpus, 2);
    assert_eq!(sc.devices.len(), 1);
    let d = &sc.devices[0];
    assert_eq!((d.name.as_str(), d.major, d.minor), ("sda", 8, 0));
    assert!(matches!(d.model, DeviceModelConfig::Hdd(_)));
    assert_eq!(d.size, 4_000_000_000_000);
    assert_eq!(d.queue.scheduler, SchedulerKind::MQ_DEADLINE);

    assert_eq!(sc.tasks.len(), 2);
    let dd = &sc.tasks[0];
    assert_eq!((dd.name.as_str(), dd.count, dd.device, dd.start, dd.stop), ("dd", 4, 0, 0, None));
    assert_eq!(dd.file, "/mnt/sda/big{n}");
    assert!(matches!(
        dd.job,
        JobConfig::Dd {
            bs,
            size: None,
            fsync: false,
            direct: false
        } if bs == MIB
    ));
    let cat = &sc.tasks[1];
    assert_eq!((cat.count, cat.start), (1, 10 * S));
    assert!(matches!(cat.job, JobConfig::Cat { bs, file_size } if bs == 128 * KIB && file_size == GIB));
    assert!(sc.trace.writeback && !sc.trace.block);
}

#[test]
fn empty_file_is_all_defaults() {
    let sc = parse("", "dir/idle.toml").unwrap();
    assert_eq!(sc.name, "idle");
    assert_eq!(sc.duration, 60 * S);
    assert_eq!(sc.devices.len(), 1);
    assert_eq!(sc.devices[0].name, "sda");
    assert!(sc.tasks.is_empty());
}

#[test]
fn sysctl_dotted_quoted_and_path_forms() {
    for text in [
        "[sysctl]\nvm.dirty_ratio = 5",
        "[sysctl]\n\"vm.dirty_ratio\" = 5",
        "[sysctl.vm]\ndirty_ratio = 5",
        "[sysctl]\n\"/proc/sys/vm/dirty_ratio\" = 5",
        "[sysctl]\n\"vm/dirty_ratio\" = 5",
    ] {
        assert_eq!(ok(text).sysctl.dirty_ratio, 5, "{text}");
    }
}

#[test]
fn bytes_knobs_zero_their_ratio_twins() {
    let sc = ok("[sysctl]\n\"vm.dirty_bytes\" = \"256MiB\"\nvm.dirty_background_bytes = 134217728");
    assert_eq!(sc.sysctl.dirty_bytes, 256 * MIB);
    assert_eq!(sc.sysctl.dirty_ratio, 0);
    assert_eq!(sc.sysctl.dirty_background_bytes, 128 * MIB);
    assert_eq!(sc.sysctl.dirty_background_ratio, 0);
    // `sysctl -a` output: ratio in use, bytes 0.
    let sc = ok("[sysctl]\nvm.dirty_ratio = 20\nvm.dirty_bytes = 0");
    assert_eq!((sc.sysctl.dirty_ratio, sc.sysctl.dirty_bytes), (20, 0));
}

#[test]
fn queue_defaults_follow_the_model_and_overrides_win() {
    let sc = ok("[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n[[device]]\nname = \"nvme0n1\"\nmodel = \"ssd\"");
    let (hdd, ssd) = (&sc.devices[0], &sc.devices[1]);
    assert_eq!(hdd.queue.scheduler, SchedulerKind::MQ_DEADLINE);
    assert!(hdd.queue.rotational);
    assert_eq!(hdd.queue.nr_requests, 64);
    assert_eq!(ssd.queue.scheduler, SchedulerKind::NONE);
    assert!(!ssd.queue.rotational);
    assert_eq!(ssd.queue.nr_requests, 64);
    assert_eq!(ssd.size, 1_000_000_000_000);
    assert_eq!((ssd.major, ssd.minor), (259, 0));

    let sc = ok(r#"
[[device]]
model = "ssd"
"queue/scheduler" = "mq-deadline"
"queue/iosched/fifo_batch" = 4
"queue/iosched/front_merges" = false
"queue/wbt_lat_usec" = 0
"queue/write_cache" = "write through"
"queue/rotational" = 1
"#);
    let q = &sc.devices[0].queue;
    assert_eq!(q.scheduler, SchedulerKind::MQ_DEADLINE);
    assert_eq!(q.nr_requests, 128, "switching elevator resets nr_requests to 2 * min(depth, 128)");
    assert_eq!(q.iosched.fifo_batch, 4);
    assert!(!q.iosched.front_merges);
    assert_eq!(q.wbt_lat_usec, 0);
    assert!(!q.write_cache);
    assert!(q.rotational);

    let sc = ok("[[device]]\n\"queue/scheduler\" = \"none\"\n\"queue/nr_requests\" = 8\n\"queue/wbt_lat_usec\" = -1");
    let q = &sc.devices[0].queue;
    assert_eq!((q.scheduler, q.nr_requests, q.wbt_lat_usec), (SchedulerKind::NONE, 8, 75_000));
}

#[test]
fn model_params_feed_the_queue_defaults() {
    let sc = ok("[[device]]\nqueue_depth = 1\nwrite_cache = false\nrpm = 5400\nseek_average = \"12ms\"\ntransfer_outer = \"150MB/s\"");
    let d = &sc.devices[0];
    let DeviceModelConfig::Hdd(p) = &d.model else { panic!("hdd") };
    assert_eq!(
        (p.rpm, p.seek_average, p.transfer_outer, p.queue_depth),
        (5400, 12_000_000, 150_000_000, 1)
    );
    assert_eq!(d.queue.nr_requests, 2);
    assert!(!d.queue.write_cache);
}

#[test]
fn scheduler_in_sysfs_display_form_and_alias() {
    let sc = ok("[[device]]\nmodel = \"ssd\"\n\"queue/scheduler\" = \"[mq-deadline] none\"");
    assert_eq!(sc.devices[0].queue.scheduler, SchedulerKind::MQ_DEADLINE);
    let sc = ok("[[device]]\nmodel = \"ssd\"\n\"queue/scheduler\" = \"deadline\"");
    assert_eq!(sc.devices[0].queue.scheduler, SchedulerKind::MQ_DEADLINE);
    let sc = ok("[[device]]\n\"/sys/block/sda/queue/scheduler\" = \"none\"");
    assert_eq!(sc.devices[0].queue.scheduler, SchedulerKind::NONE);
}

#[test]
fn bdi_knobs() {
    let sc = ok("[[device]]\n\"bdi/min_ratio\" = 5\n\"bdi/max_ratio\" = 50\n\"bdi/strict_limit\" = 1");
    let b = &sc.devices[0].bdi;
    assert_eq!((b.min_ratio_ppm, b.max_ratio_ppm, b.strict_limit), (50_000, 500_000, true));
    assert_eq!((b.min_bytes, b.max_bytes), (None, None));
    let b = &ok("[[device]]\n\"bdi/min_bytes\" = \"0\"").devices[0].bdi;
    assert_eq!((b.min_bytes, b.min_ratio_ppm), (Some(0), 0));
    let sc = ok("[[device]]\nbdi.min_ratio_fine = 1500\nbdi.max_bytes = \"1GiB\"\n[[device]]\nname=\"sdb\"");
    let b = &sc.devices[0].bdi;
    assert_eq!((b.min_ratio_ppm, b.max_bytes), (1500, Some(GIB)));
    assert_eq!((sc.devices[1].major, sc.devices[1].minor), (8, 16));
}

#[test]
fn tasks_find_their_device_and_file() {
    let sc = ok(r#"
[[device]]
name = "sda"
[[device]]
name = "sdb"
[[task]]
name = "w"
job = "dd"
file = "/mnt/sdb/x{n}"
count = 2
[[task]]
name = "r"
job = "cat"
device = "sdb"
[[task]]
name = "s"
job = "sync"
"#);
    assert_eq!((sc.tasks[0].device, sc.tasks[0].count), (1, 2));
    assert_eq!((sc.tasks[1].device, sc.tasks[1].file.as_str()), (1, "/mnt/sdb/r{n}"));
    assert_eq!((sc.tasks[2].device, sc.tasks[2].file.as_str()), (0, "/mnt/sda/s{n}"));
    assert!(matches!(sc.tasks[2].job, JobConfig::Sync { interval } if interval == 5 * S));
}

#[test]
fn job_defaults_and_dd_words() {
    let sc = ok(r#"
duration = "100s"
[[task]]
name = "dd"
job = "dd"
blocks = 100
bs = "4k"
conv = "fsync"
oflag = "direct"
start = "1.5s"
stop = "20s"
[[task]]
name = "probe"
job = "randread"
[[task]]
name = "commit"
job = "fsync"
"#);
    let t = &sc.tasks[0];
    assert_eq!((t.start, t.stop), (1_500_000_000, Some(20 * S)));
    assert!(matches!(
        t.job,
        JobConfig::Dd {
            bs: 4096,
            size: Some(409_600),
            fsync: true,
            direct: true
        }
    ));
    assert!(matches!(sc.tasks[1].job, JobConfig::Randread { bs: 4096, file_size, direct: true, think: 0 } if file_size == GIB));
    assert!(matches!(
        sc.tasks[2].job,
        JobConfig::Fsync {
            bytes: 4096,
            interval: 100_000_000
        }
    ));
}

#[test]
fn kernel_versions() {
    for k in ["6.x", "6.18", "6.18.3", "6.1"] {
        assert_eq!(ok(&format!("kernel = \"{k}\"")).kernel, k);
    }
}

/// The defaults docs/scenario-reference.md documents; update both together.
#[test]
fn documented_defaults() {
    let sc = ok("[[device]]\nmodel = \"hdd\"\n[[device]]\nmodel = \"ssd\"\n[[task]]\nname = \"d\"\njob = \"dd\"");
    assert_eq!((sc.kernel.as_str(), sc.duration, sc.seed, sc.hz), ("6.x", 60 * S, 1, 250));
    let m = &sc.machine;
    assert_eq!(
        (m.memory, m.cpus, m.memory_bandwidth, m.unreclaimable, m.syscall_overhead),
        (4 * GIB, 2, 4 * GIB, 200 * MIB, 1_000)
    );
    let v = &sc.sysctl;
    assert_eq!(
        (v.dirty_ratio, v.dirty_background_ratio, v.dirty_bytes, v.dirty_background_bytes),
        (20, 10, 0, 0)
    );
    assert_eq!(
        (
            v.dirty_expire_centisecs,
            v.dirty_writeback_centisecs,
            v.min_free_kbytes,
            v.watermark_scale_factor
        ),
        (3000, 500, 0, 10)
    );

    let (hdd, ssd) = (&sc.devices[0], &sc.devices[1]);
    assert_eq!(
        (hdd.name.as_str(), hdd.major, hdd.minor, hdd.size),
        ("sda", 8, 0, 4_000_000_000_000)
    );
    assert_eq!(
        (ssd.name.as_str(), ssd.major, ssd.minor, ssd.size),
        ("sdb", 8, 16, 1_000_000_000_000)
    );
    let DeviceModelConfig::Hdd(h) = &hdd.model else { panic!("hdd") };
    assert_eq!(
        (h.rpm, h.seek_track_to_track, h.seek_average, h.seek_full_stroke),
        (7200, 1_000_000, 8_500_000, 16_000_000)
    );
    assert_eq!(
        (h.transfer_outer, h.transfer_inner, h.interface_rate),
        (210 * MIB, 100 * MIB, 550 * MIB)
    );
    assert_eq!(
        (h.queue_depth, h.write_cache, h.cache_size, h.command_overhead),
        (32, true, 256 * MIB, 50_000)
    );
    let DeviceModelConfig::Ssd(p) = &ssd.model else { panic!("ssd") };
    assert_eq!((p.parallelism, p.read_latency, p.write_latency), (8, 80_000, 25_000));
    assert_eq!(
        (p.read_bandwidth, p.write_bandwidth, p.queue_depth, p.write_cache),
        (3000 * MIB, 1800 * MIB, 64, true)
    );

    let q = &hdd.queue;
    assert_eq!(
        (q.scheduler, q.nr_requests, q.max_sectors_kb, q.wbt_lat_usec),
        (SchedulerKind::MQ_DEADLINE, 64, 4096, 75_000)
    );
    assert_eq!((q.read_ahead_kb, q.nomerges, q.rotational, q.write_cache), (8192, 0, true, true));
    let q = &ssd.queue;
    assert_eq!(
        (q.scheduler, q.nr_requests, q.max_sectors_kb, q.wbt_lat_usec),
        (SchedulerKind::NONE, 64, 4096, 2_000)
    );
    assert_eq!((q.read_ahead_kb, q.nomerges, q.rotational, q.write_cache), (128, 0, false, true));
    let i = &hdd.queue.iosched;
    assert_eq!(
        (
            i.read_expire_ms,
            i.write_expire_ms,
            i.fifo_batch,
            i.writes_starved,
            i.front_merges,
            i.async_depth
        ),
        (500, 5000, 16, 2, true, 0)
    );
    let b = &hdd.bdi;
    assert_eq!(
        (b.min_ratio_ppm, b.max_ratio_ppm, b.min_bytes, b.max_bytes, b.strict_limit),
        (0, 1_000_000, None, None, false)
    );

    let t = &sc.tasks[0];
    assert_eq!(
        (t.count, t.device, t.file.as_str(), t.start, t.stop),
        (1, 0, "/mnt/sda/d{n}", 0, None)
    );
    assert!(sc.trace.writeback && !sc.trace.block);
}

#[test]
fn loop_devices_take_the_kernel_queue_defaults() {
    let sc = ok(r#"
[[device]]
model = "loop"
[[device]]
model = "loop"
backing_write_bandwidth = "500MiB/s"
backing_latency = "100us"
queue_depth = 64
[[device]]
model = "hdd"
"#);
    let (l0, l1, hdd) = (&sc.devices[0], &sc.devices[1], &sc.devices[2]);
    assert_eq!((l0.name.as_str(), l0.major, l0.minor, l0.size), ("loop0", 7, 0, 2 * GIB));
    assert_eq!((l1.name.as_str(), l1.major, l1.minor), ("loop1", 7, 1));
    assert_eq!((hdd.major, hdd.minor), (8, 0), "sd numbering is not disturbed by loops");
    let DeviceModelConfig::Loop(p) = &l0.model else { panic!("loop") };
    assert_eq!(
        *p,
        wblab_sim::drivers::loopdev::LoopParams::default(),
        "no knobs: the model's defaults"
    );
    assert_eq!(p.queue_depth, 128, "loop.c's hw_queue_depth");
    // loop_add/loop_configure on 6.18: no elevator, 128 tags, 1280 KiB requests, wbt 2 ms,
    // rotational from the backing disk (vda: 1), read-ahead 2 x max_sectors, a write cache.
    let q = &l0.queue;
    assert_eq!(
        (q.scheduler, q.nr_requests, q.max_sectors_kb, q.wbt_lat_usec),
        (SchedulerKind::NONE, 128, 1280, 2_000)
    );
    assert_eq!((q.read_ahead_kb, q.rotational, q.write_cache), (2560, true, true));
    let DeviceModelConfig::Loop(p) = &l1.model else { panic!("loop") };
    assert_eq!(
        (p.backing_write_bandwidth, p.backing_latency, p.queue_depth),
        (500 * MIB, 100_000, 64)
    );
    assert_eq!(l1.queue.nr_requests, 64, "nr_requests follows hw_queue_depth");
    assert!(!l0.throttle.is_limited());

    // A loop named like the ones LOOP_CTL_ADD makes keeps its index as the minor.
    let sc = ok("[[device]]\nname = \"loop64\"\nmodel = \"loop\"\n\"queue/wbt_lat_usec\" = -1");
    let d = &sc.devices[0];
    assert_eq!((d.major, d.minor), (7, 64));
    assert_eq!(d.queue.wbt_lat_usec, 75_000, "-1 restores the default for the rotational flag");
}

#[test]
fn throttle_limits_and_file_systems() {
    let sc = ok(r#"
[[device]]
name = "loop0"
model = "loop"
size = "2GiB"
fs = "ext4"
"throttle/write_bps" = "8MiB/s"
"throttle/read_bps" = 1048576
"throttle/read_iops" = 500
"throttle/write_iops" = 0
[[device]]
model = "ssd"
fs = "XFS"
throttle.write_iops = 100
[[device]]
fs = "btrfs"
"throttle/write_bps" = "0"
"#);
    let t = &sc.devices[0].throttle;
    assert_eq!(
        (t.read_bps, t.write_bps, t.read_iops, t.write_iops),
        (Some(MIB), Some(8 * MIB), Some(500), None),
        "0 means no limit, as the cgroup files take it"
    );
    assert_eq!(sc.devices[0].fs.as_ref().map(|m| m.fs.name()), Some("ext4"));
    // Throttle keys apply to any model (blk-throttle works on any disk), nested or quoted.
    assert_eq!(sc.devices[1].throttle.write_iops, Some(100));
    assert_eq!(sc.devices[1].fs.as_ref().map(|m| m.fs.name()), Some("xfs"));
    assert!(!sc.devices[2].throttle.is_limited());
    assert_eq!(sc.devices[2].fs.as_ref().map(|m| m.fs.name()), Some("btrfs"));
    assert_eq!(ok("").devices[0].fs, None);
}

#[test]
fn the_throttled_loop_scenario_is_the_lab_setup() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/throttled-loop.toml");
    let sc = load(&path).unwrap_or_else(|e| panic!("{e}"));
    let d = &sc.devices[0];
    assert!(matches!(d.model, DeviceModelConfig::Loop(_)));
    assert_eq!((d.major, d.minor, d.size), (7, 64, 2 * GIB));
    assert_eq!(d.throttle.write_bps, Some(32 * MIB));
    assert_eq!(d.fs.as_ref().map(|m| m.fs.name()), Some("ext4"));
    assert_eq!((sc.sysctl.dirty_bytes, sc.sysctl.dirty_background_bytes), (256 * MIB, 128 * MIB));
    assert_eq!(sc.duration, 30 * S);
}

#[test]
fn usb_nfs_and_raid0_devices() {
    let sc = ok(r#"
[[device]]
model = "hdd"
[[device]]
model = "usb"
write_bandwidth = "6MB/s"
erase_block = "8MiB"
[[device]]
model = "nfs"
rtt = "1ms"
wsize = "512KiB"
[[device]]
model = "raid0"
members = 10
member_model = "ssd"
write_bandwidth = "170MB/s"
queue_depth = 31
chunk = "256KiB"
[[device]]
model = "raid0"
member_model = "hdd"
rpm = 5400
"#);
    let [hdd, usb, nfs, md0, md1] = &sc.devices[..] else {
        panic!("5 devices")
    };
    // Names and numbers as the kernel gives them: sd for the key, an anonymous 0:N for NFS,
    // 9:N for md.
    assert_eq!((hdd.name.as_str(), hdd.major, hdd.minor), ("sda", 8, 0));
    assert_eq!((usb.name.as_str(), usb.major, usb.minor), ("sdb", 8, 16));
    assert_eq!((nfs.name.as_str(), nfs.major, nfs.minor), ("nfs0", 0, 40));
    assert_eq!((md0.name.as_str(), md0.major, md0.minor), ("md0", 9, 0));
    assert_eq!((md1.name.as_str(), md1.major, md1.minor), ("md1", 9, 1));

    let DeviceModelConfig::Usb(p) = &usb.model else { panic!("usb") };
    assert_eq!((p.write_bandwidth, p.erase_block, p.queue_depth), (6_000_000, 8 * MIB, 1));
    let q = &usb.queue;
    assert_eq!(q.scheduler, SchedulerKind::MQ_DEADLINE);
    assert_eq!((q.nr_requests, q.max_sectors_kb, q.read_ahead_kb), (2, 120, 240));
    assert!(q.rotational && !q.write_cache);
    assert_eq!(q.wbt_lat_usec, 75_000);
    assert_eq!(usb.size, 8_000_000_000);

    let DeviceModelConfig::Nfs(p) = &nfs.model else { panic!("nfs") };
    assert_eq!((p.rtt, p.wsize, p.link_bandwidth), (1_000_000, 512 * KIB, 117_000_000));
    let q = &nfs.queue;
    assert_eq!(q.scheduler, SchedulerKind::NONE);
    assert_eq!(
        (q.nr_requests, q.max_sectors_kb, q.read_ahead_kb, q.wbt_lat_usec),
        (16, 512, 128, 0)
    );

    let DeviceModelConfig::Raid0(p) = &md0.model else { panic!("raid0") };
    assert_eq!((p.members, p.chunk), (10, 256 * KIB));
    let DeviceModelConfig::Ssd(m) = p.member.as_ref() else {
        panic!("ssd members")
    };
    assert_eq!((m.write_bandwidth, m.queue_depth), (170_000_000, 31));
    let q = &md0.queue;
    assert_eq!(q.scheduler, SchedulerKind::NONE);
    assert_eq!((q.nr_requests, q.max_sectors_kb, q.wbt_lat_usec), (310, 256, 0));
    assert_eq!(q.read_ahead_kb, 2 * 10 * 256, "two stripes (io_opt = chunk × members)");
    assert!(!q.rotational);
    assert_eq!(md0.size, 10 * 1_000_000_000_000);

    // Defaults: two members, 512 KiB chunks; HDD members make the array rotational.
    let DeviceModelConfig::Raid0(p) = &md1.model else { panic!("raid0") };
    assert_eq!((p.members, p.chunk), (2, 512 * KIB));
    let DeviceModelConfig::Hdd(m) = p.member.as_ref() else {
        panic!("hdd members")
    };
    assert_eq!(m.rpm, 5400);
    assert!(md1.queue.rotational);
    assert_eq!((md1.queue.max_sectors_kb, md1.queue.read_ahead_kb), (512, 2048));
}

#[test]
fn the_2011_device_scenarios() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let load_one = |f: &str| load(&dir.join(f)).unwrap_or_else(|e| panic!("{e}"));
    let sc = load_one("2011-ukey-hdd-1dd.toml");
    assert_eq!(sc.machine.memory, 2945 * MIB);
    let kinds: Vec<&str> = sc.devices.iter().map(|d| d.model.kind()).collect();
    assert_eq!(kinds, ["hdd", "usb"]);
    assert_eq!(sc.devices[1].queue.max_sectors_kb, 120, "also under 2.6.38");
    assert_eq!((sc.tasks[0].device, sc.tasks[1].device), (1, 0));
    for f in ["2011-nfs-1dd.toml", "2011-nfs-8dd.toml"] {
        let sc = load_one(f);
        assert_eq!(sc.devices[0].model.kind(), "nfs");
        assert_eq!((sc.devices[0].queue.max_sectors_kb, sc.devices[0].queue.nr_requests), (1024, 16));
    }
    let sc = load_one("2011-raid0-1000dd.toml");
    let d = &sc.devices[0];
    let DeviceModelConfig::Raid0(p) = &d.model else { panic!("raid0") };
    assert_eq!((p.members, p.chunk, d.size), (10, 512 * KIB, 640_000_000_000));
    assert_eq!((sc.machine.memory, sc.tasks[0].count), (64 * GIB, 1000));
}

#[test]
fn cfq_is_the_era_elevator_and_takes_its_sysfs_tunables() {
    // 2.6.18-2.6.21 get cfq-2.6.20, 2.6.22-2.6.31 cfq-2.6.22; `cfq` names the era's one.
    let disk = "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n";
    for (k, want) in [("2.6.20", SchedulerKind::CFQ_2620), ("2.6.24", SchedulerKind::CFQ_2622)] {
        let sc = ok(&format!("kernel = \"{k}\"\n{disk}"));
        assert_eq!(sc.devices[0].queue.scheduler, want, "{k}");
        let sc = ok(&format!("kernel = \"{k}\"\n{disk}\"queue/scheduler\" = \"cfq\"\n"));
        assert_eq!(sc.devices[0].queue.scheduler, want, "{k}, cfq");
    }
    assert_eq!(
        ok(&format!("kernel = \"2.6.38\"\n{disk}")).devices[0].queue.scheduler,
        SchedulerKind::MQ_DEADLINE
    );
    let sc = ok(&format!(
        "kernel = \"2.6.24\"\n{disk}\"queue/iosched/slice_idle\" = 0\n\"queue/iosched/quantum\" = 8\n\"queue/iosched/slice_async\" = 100\n"
    ));
    let c = sc.devices[0].queue.cfq;
    assert_eq!((c.slice_idle, c.quantum, c.slice_async), (0, 8, 100 * 1_000_000));
    assert_eq!(c.slice_sync, 100 * 1_000_000, "untouched knobs keep CFQ's defaults");
    let sc = ok(&format!("{disk}destage = \"drain\"\n"));
    match &sc.devices[0].model {
        DeviceModelConfig::Hdd(p) => assert_eq!(p.destage, wblab_sim::config::DestagePolicy::Drain),
        m => panic!("{m:?}"),
    }
}

#[test]
fn the_nfs_commit_rule_follows_the_kernel_unless_set() {
    use wblab_sim::config::NfsCommit;
    let rule = |text: &str| match &ok(text).devices[0].model {
        DeviceModelConfig::Nfs(p) => p.commit,
        m => panic!("{m:?}"),
    };
    let mount = "[[device]]\nname = \"nfs0\"\nmodel = \"nfs\"\n";
    assert_eq!(rule(&format!("kernel = \"2.6.38\"\n{mount}")), Some(NfsCommit::Half));
    assert_eq!(rule(&format!("kernel = \"3.2\"\n{mount}")), Some(NfsCommit::Half));
    assert_eq!(rule(&format!("kernel = \"2.6.32\"\n{mount}")), Some(NfsCommit::Pass));
    assert_eq!(rule(mount), Some(NfsCommit::Pass), "6.x");
    assert_eq!(
        rule(&format!("kernel = \"2.6.38\"\n{mount}commit = \"pass\"\n")),
        Some(NfsCommit::Pass)
    );
}

#[test]
fn mount_options_over_the_releases_defaults() {
    use wblab_sim::config::{Atime, DataMode, FsKind};
    let dev = |kernel: &str, fs: &str, mount: &str| {
        let mount = if mount.is_empty() {
            String::new()
        } else {
            format!("mount = \"{mount}\"\n")
        };
        let sc = ok(&format!(
            "kernel = \"{kernel}\"\n[[device]]\nname = \"sda\"\nfs = \"{fs}\"\n{mount}"
        ));
        sc.devices[0].fs.clone().expect("a file system")
    };
    let today = dev("6.x", "ext4", "");
    assert_eq!(
        (today.fs, today.data, today.atime),
        (FsKind::Ext4, DataMode::Ordered, Atime::Relatime)
    );
    assert!(today.barrier && today.dioread_nolock && !today.journal_async_commit);
    assert_eq!(today.commit_interval, 5 * S);
    // ext3 on 2.6.24: no barriers, atime on every read; dioread_nolock is ext4's (5.6+).
    let old = dev("2.6.24", "ext3", "");
    assert!(!old.barrier && !old.dioread_nolock);
    assert_eq!(old.atime, Atime::Strictatime);
    assert!(!dev("5.4", "ext4", "").dioread_nolock);
    // data=journal turns dioread_nolock off, as ext4 does; auto_da_alloc is on unless asked.
    let journal = dev("6.x", "ext4", "data=journal");
    assert_eq!(journal.data, DataMode::Journal);
    assert!(!journal.dioread_nolock && journal.auto_da_alloc);
    assert!(!dev("6.x", "ext4", "noauto_da_alloc").auto_da_alloc);
    assert!(!dev("6.x", "ext3", "").auto_da_alloc, "ext3 has no delayed allocation");
    // ext3 allocates at write() by the bitmap search until 2.6.10's reservation windows, and
    // after them with `noreservation`; ext4 never does.
    assert!(dev("2.6.6", "ext3", "").bitmap_alloc && dev("2.6.9", "ext3", "").bitmap_alloc);
    assert!(!dev("2.6.10", "ext3", "").bitmap_alloc && !dev("2.6.24", "ext3", "reservation").bitmap_alloc);
    assert!(dev("2.6.24", "ext3", "noreservation").bitmap_alloc);
    assert!(!dev("2.6.30", "ext4", "").bitmap_alloc);
    let set = dev(
        "6.x",
        "ext4",
        "data=writeback, commit=1,noatime,nobarrier,journal_async_commit,nodioread_nolock",
    );
    assert_eq!((set.data, set.atime, set.commit_interval), (DataMode::Writeback, Atime::Noatime, S));
    assert!(!set.barrier && set.journal_async_commit && !set.dioread_nolock);
    assert_eq!(
        set.options,
        "data=writeback, commit=1,noatime,nobarrier,journal_async_commit,nodioread_nolock"
    );
    assert_eq!(dev("6.x", "ext4", "commit=0").commit_interval, 5 * S, "0 means the default");
    let xfs = dev("6.x", "xfs", "logbsize=256k,logbufs=8");
    assert_eq!(
        (xfs.logbsize, xfs.commit_interval, xfs.data),
        (256 * KIB, 30 * S, DataMode::Writeback)
    );
    assert!(!dev("6.x", "btrfs", "noatime").journalled());
}

/// Every point of a sweep: its values as the table labels them, and its scenario.
fn points(plan: &wblab_scenario::SweepPlan) -> Vec<(String, wblab_sim::config::Scenario)> {
    (0..plan.len())
        .map(|i| {
            let p = plan.point(i).unwrap();
            (p.values.join(wblab_scenario::SWEEP_VALUE_SEPARATOR), p.scenario)
        })
        .collect()
}

#[test]
fn a_sweep_of_variants_by_a_knob_runs_every_combination() {
    let text = r#"
[[device]]
name = "sda"
model = "hdd"

[sweep]
variants = [{ fs = "ext4", mount = "data=writeback" }, { fs = "xfs" }]
"queue/write_cache" = ["write back", "write through"]
"#;
    let dir = std::env::temp_dir().join(format!("wblab-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("variants.toml");
    std::fs::write(&path, text).unwrap();
    let plan = wblab_scenario::load_sweep(&path).unwrap().expect("a sweep");
    std::fs::remove_dir_all(&dir).unwrap();
    let (key, runs) = (plan.key(), points(&plan));
    assert_eq!(key, format!("variants{}queue/write_cache", wblab_scenario::SWEEP_KEY_SEPARATOR));
    let got: Vec<(String, String, bool)> = runs
        .iter()
        .map(|(label, sc)| {
            let d = &sc.devices[0];
            (label.clone(), d.fs.as_ref().unwrap().fs.name().to_string(), d.queue.write_cache)
        })
        .collect();
    let sep = wblab_scenario::SWEEP_VALUE_SEPARATOR;
    assert_eq!(
        got,
        vec![
            (format!("fs=ext4 mount=data=writeback{sep}write back"), "ext4".into(), true),
            (format!("fs=ext4 mount=data=writeback{sep}write through"), "ext4".into(), false),
            (format!("fs=xfs{sep}write back"), "xfs".into(), true),
            (format!("fs=xfs{sep}write through"), "xfs".into(), false),
        ]
    );
    // The first variant's mount options do not leak into the second's run.
    assert_eq!(runs[2].1.devices[0].fs.as_ref().unwrap().options, "");
}

#[test]
fn cgroup_tree_and_task_placement() {
    use wblab_sim::config::CgroupVersion;
    let sc = ok(r#"
[[device]]
name = "sda"
[[cgroup]]
path = "/pods"
memory.max = "2GiB"
[[cgroup]]
path = "/pods/web"
"memory.high" = "1000MiB"
memory.max = "max"
[[task]]
name = "w"
job = "dd"
cgroup = "/pods/web"
[[task]]
name = "root"
job = "dd"
cgroup = "/"
"#);
    let t = &sc.cgroups;
    assert_eq!(t.version, CgroupVersion::V2);
    assert_eq!(t.groups.len(), 2);
    assert_eq!((t.groups[0].parent, t.groups[0].memory_max), (None, Some(2 * GIB)));
    assert_eq!(
        (t.groups[1].parent, t.groups[1].memory_max, t.groups[1].memory_high),
        (Some(0), None, Some(1000 * MIB))
    );
    assert_eq!(sc.tasks[0].cgroup, Some(1));
    assert_eq!(sc.tasks[1].cgroup, None);
    assert!(t.is_within(1, 0) && !t.is_within(0, 1));

    let v1 = ok("[[device]]\nname = \"sda\"\n[[cgroup]]\npath = \"/a\"\nmemory.limit_in_bytes = 300000000\n");
    assert_eq!(v1.cgroups.version, CgroupVersion::V1);
    // Rounded down to whole pages, as page_counter_memparse does.
    assert_eq!(v1.cgroups.groups[0].memory_max, Some(300_000_000 / 4096 * 4096));
    // A scenario without cgroups echoes none.
    let plain = ok("[[device]]\nname = \"sda\"\n");
    assert!(serde_json::to_string(&plain).unwrap().find("cgroup").is_none());
}

#[test]
fn bfq_weights_take_the_kernels_forms() {
    // io.bfq.weight: "W", "default W" or a bare integer set the group's weight; "DEVICE W" a
    // device's own, "DEVICE default" drops it again (bfq_io_set_weight).
    let sc = ok(r#"
[[device]]
name = "sda"
[[device]]
name = "sdb"
[[cgroup]]
path = "/a"
io.bfq.weight = ["default 300", "sdb 50", "sda 700", "sda default"]
[[cgroup]]
path = "/b"
io.bfq.weight = 20
[[cgroup]]
path = "/c"
"#);
    let g = &sc.cgroups.groups;
    assert_eq!((g[0].bfq_weight_on(0), g[0].bfq_weight_on(1)), (300, 50));
    assert_eq!((g[1].bfq_weight_on(0), g[1].bfq_weight_on(1)), (20, 20));
    assert_eq!(g[2].bfq_weight_on(0), 100, "BFQ_DEFAULT_GRP_WEIGHT");
    // The v1 files: blkio.bfq.weight and blkio.bfq.weight_device by MAJ:MIN.
    let v1 = ok(r#"
[[device]]
name = "sda"
[[cgroup]]
path = "/a"
blkio.bfq.weight = 400
blkio.bfq.weight_device = "8:0 10"
"#);
    assert_eq!(v1.cgroups.version, wblab_sim::config::CgroupVersion::V1);
    assert_eq!(v1.cgroups.groups[0].bfq_weight, Some(400));
    assert_eq!(v1.cgroups.groups[0].bfq_weight_on(0), 10);
}

#[test]
fn io_max_lines_name_devices_by_name_or_number() {
    let sc = ok(r#"
[[device]]
name = "sda"
[[device]]
name = "sdb"
[[cgroup]]
path = "/copy"
io.max = ["sdb wbps=10MiB riops=max", "8:0 rbps=1048576 wiops=200"]
"#);
    let io = &sc.cgroups.groups[0].io_max;
    assert_eq!(io.len(), 2);
    let (sdb, sda) = (&io[0], &io[1]);
    assert_eq!((sdb.0, sdb.1.write_bps, sdb.1.read_iops), (1, Some(10 * MIB), None));
    assert_eq!((sda.0, sda.1.read_bps, sda.1.write_iops), (0, Some(MIB), Some(200)));
    let v1 = ok("[[device]]\nname = \"sda\"\n[[cgroup]]\npath = \"/a\"\nblkio.throttle.write_bps_device = \"8:0 1048576\"\n");
    assert_eq!(v1.cgroups.version, wblab_sim::config::CgroupVersion::V1);
    assert_eq!(v1.cgroups.groups[0].io_max[0].1.write_bps, Some(MIB));
}

#[test]
fn io_latency_targets_and_cgroup_sweeps() {
    let sc = ok(r#"
[[device]]
name = "sda"
[[cgroup]]
path = "/db"
io.latency = "8:0 target=10000"
"#);
    assert_eq!(sc.cgroups.groups[0].io_latency, vec![(0, 10 * 1_000_000)]);
    let text = r#"
[[device]]
name = "sda"
[[cgroup]]
path = "/pods/db"
[[cgroup]]
path = "/pods/db/x"
"#;
    // Parents must come first: this one is refused, the next (with /pods) sweeps a file.
    assert!(parse(text, "t.toml").is_err());
    let text = r#"
[[device]]
name = "sda"
[[cgroup]]
path = "/pods"
[[cgroup]]
path = "/pods/db"
io.latency = "sda target=50ms"
[sweep]
"cgroup/pods/db/io.latency" = ["sda target=20ms", "sda target=max"]
[[task]]
name = "w"
job = "dd"
cgroup = "/pods/db"
"#;
    let dir = std::env::temp_dir().join(format!("wblab-good-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t.toml");
    std::fs::write(&file, text).unwrap();
    let runs = points(&wblab_scenario::load_sweep(&file).unwrap().unwrap());
    assert_eq!(runs[0].1.cgroups.groups[1].io_latency, vec![(0, 20 * 1_000_000)]);
    assert!(runs[1].1.cgroups.groups[1].io_latency.is_empty());
    std::fs::write(&file, text.replace("cgroup/pods/db/io.latency", "cgroup/pods/dbb/io.latency")).unwrap();
    let e = wblab_scenario::load_sweep(&file).unwrap_err();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(e.to_string().contains("no [[cgroup]] has the path `/pods/dbb`"), "{e}");
}
