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
    assert_eq!(d.queue.scheduler, SchedulerKind::MqDeadline);

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
    assert_eq!(hdd.queue.scheduler, SchedulerKind::MqDeadline);
    assert!(hdd.queue.rotational);
    assert_eq!(hdd.queue.nr_requests, 64);
    assert_eq!(ssd.queue.scheduler, SchedulerKind::None);
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
    assert_eq!(q.scheduler, SchedulerKind::MqDeadline);
    assert_eq!(q.nr_requests, 128, "switching elevator resets nr_requests to 2 * min(depth, 128)");
    assert_eq!(q.iosched.fifo_batch, 4);
    assert!(!q.iosched.front_merges);
    assert_eq!(q.wbt_lat_usec, 0);
    assert!(!q.write_cache);
    assert!(q.rotational);

    let sc = ok("[[device]]\n\"queue/scheduler\" = \"none\"\n\"queue/nr_requests\" = 8\n\"queue/wbt_lat_usec\" = -1");
    let q = &sc.devices[0].queue;
    assert_eq!((q.scheduler, q.nr_requests, q.wbt_lat_usec), (SchedulerKind::None, 8, 75_000));
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
    assert_eq!(sc.devices[0].queue.scheduler, SchedulerKind::MqDeadline);
    let sc = ok("[[device]]\nmodel = \"ssd\"\n\"queue/scheduler\" = \"deadline\"");
    assert_eq!(sc.devices[0].queue.scheduler, SchedulerKind::MqDeadline);
    let sc = ok("[[device]]\n\"/sys/block/sda/queue/scheduler\" = \"none\"");
    assert_eq!(sc.devices[0].queue.scheduler, SchedulerKind::None);
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

/// The defaults the README's scenario reference documents; update both together.
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
        (SchedulerKind::MqDeadline, 64, 4096, 75_000)
    );
    assert_eq!((q.read_ahead_kb, q.nomerges, q.rotational, q.write_cache), (8192, 0, true, true));
    let q = &ssd.queue;
    assert_eq!(
        (q.scheduler, q.nr_requests, q.max_sectors_kb, q.wbt_lat_usec),
        (SchedulerKind::None, 64, 4096, 2_000)
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
