//! `wblab snapshot` on a committed copy of another machine's /proc and /sys (a 6.8 box with an
//! NVMe disk, a bfq HDD under two containers, a USB key, a loop device; cgroup v2 `/etl`
//! under `io.max`/`memory.max` beside `/web` with `io.bfq.weight` and `io.latency`), on this
//! machine (read only), and on pasted `sysctl -a` text. The scenario must pass the checker and
//! carry the machine's settings into the simulation.

use serde_json::Value;
use std::path::{Path, PathBuf};
use wblab_probe::snapshot::{snapshot, SnapshotOptions};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshot/etl-web")
}

fn resolved(text: &str) -> Value {
    let sc = wblab_scenario::parse(text, "snap.toml").unwrap_or_else(|e| panic!("the snapshot does not check:\n{e}\n{text}"));
    serde_json::to_value(&sc).expect("serialises")
}

fn device<'a>(sc: &'a Value, name: &str) -> &'a Value {
    sc["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("no device {name}"))
}

#[test]
fn another_machine_s_files_become_a_scenario_that_checks() {
    let snap = snapshot(&SnapshotOptions {
        root: Some(fixture()),
        ..Default::default()
    })
    .expect("snapshot");
    let sc = resolved(&snap.text);
    assert_eq!(sc["kernel"], "6.8.0");
    assert_eq!(sc["hz"], 1000);
    assert_eq!(sc["machine"]["cpus"], 8);
    assert_eq!(
        sc["machine"]["memory"],
        16303604u64 / 1024 * (1 << 20),
        "MemTotal rounded down to MiB"
    );
    // vm.dirty_bytes set makes the ratio read 0 in sysfs; both lines pass and the bytes rule.
    assert_eq!(sc["sysctl"]["dirty_bytes"], 1u64 << 30);
    assert_eq!(sc["sysctl"]["dirty_ratio"], 0);
    assert_eq!(sc["sysctl"]["dirty_writeback_centisecs"], 100);

    let names: Vec<&str> = sc["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["loop0", "nvme0n1", "sda", "sdb"],
        "dm-0, zram0 and the empty loop1 are left out"
    );
    let nvme = device(&sc, "nvme0n1");
    assert_eq!(nvme["model"]["kind"], "ssd");
    assert_eq!(nvme["model"]["nr_hw_queues"], 8);
    assert_eq!(
        nvme["queue"]["nr_requests"], 1023,
        "the hardware tags carried into the model let the queue hold them"
    );
    assert_eq!(nvme["fs"]["fs"], "ext4", "the root file system is on the largest partition");
    let sda = device(&sc, "sda");
    assert_eq!((sda["major"].as_u64(), sda["minor"].as_u64()), (Some(8), Some(0)));
    assert_eq!(sda["model"]["kind"], "hdd");
    assert_eq!(sda["queue"]["scheduler"], "bfq");
    assert_eq!(sda["queue"]["tunables"]["slice_idle"], 8_000_000, "bfq's slice_idle_us read back");
    assert_eq!(sda["fs"]["fs"], "xfs");
    assert_eq!(sda["bdi"]["min_ratio_ppm"], 25_000, "a fine ratio keeps its precision");
    let sdb = device(&sc, "sdb");
    assert_eq!(
        sdb["model"]["kind"], "usb",
        "a SCSI disk whose sysfs link runs through a USB port is a USB key"
    );
    assert_eq!(sdb["bdi"]["strict_limit"], true);
    assert_eq!(sdb["bdi"]["max_ratio_ppm"], 100_000);

    let groups = sc["cgroups"]["groups"].as_array().unwrap();
    assert_eq!(sc["cgroups"]["version"], "v2");
    let etl = groups.iter().find(|g| g["path"] == "/etl").expect("/etl");
    assert_eq!(etl["memory_max"], 2u64 << 30);
    assert_eq!(etl["io_max"][0][1]["write_bps"], 60_000_000);
    let web = groups.iter().find(|g| g["path"] == "/web").expect("/web");
    assert_eq!(web["bfq_weight"], 1000);
    assert_eq!(web["memory_low"], 1u64 << 30);
    assert!(
        !groups.iter().any(|g| g["path"] == "/system.slice"),
        "groups at the defaults are left out"
    );

    // What the model does not take is in the file, as comments, and in the summary.
    for item in ["vm.swappiness = 10", "dm-0", "zram0", "errors=remount-ro", "259:9", "vfat"] {
        assert!(
            snap.text.lines().any(|l| l.starts_with('#') && l.contains(item)),
            "`{item}` not listed:\n{}",
            snap.text
        );
    }
    assert!(snap
        .not_modelled
        .iter()
        .any(|l| l.contains("vm.lowmem_reserve_ratio = 256 256 32 0 0")));
    // A value the kernel shows but the model refuses is a comment saying why, not a failure.
    assert_eq!(snap.refused.len(), 1, "{:?}", snap.refused);
    assert!(
        snap.text.contains("# refused by the model (`queue/max_sectors_kb` must be between"),
        "{}",
        snap.text
    );
    // Every value line says where it came from.
    for l in snap
        .text
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" = ") && !l.starts_with("path"))
    {
        assert!(l.contains("  # "), "no source on `{l}`");
    }
}

#[test]
fn a_snapshot_is_the_same_file_every_time() {
    let o = SnapshotOptions {
        root: Some(fixture()),
        ..Default::default()
    };
    assert_eq!(snapshot(&o).unwrap().text, snapshot(&o).unwrap().text);
}

/// `--save-files` copies what was read, links included; a snapshot of the copy is the same
/// scenario (but for the line naming where it was read).
#[test]
fn the_files_read_can_be_saved_and_read_again() {
    let dir = std::env::temp_dir().join(format!("wblab-snap-save-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = snapshot(&SnapshotOptions {
        root: Some(fixture()),
        save_files: Some(dir.clone()),
        ..Default::default()
    })
    .expect("snapshot");
    assert!(first.saved.is_some_and(|n| n > 50), "{:?}", first.saved);
    let again = snapshot(&SnapshotOptions {
        root: Some(dir.clone()),
        ..Default::default()
    });
    let refused_second_save = snapshot(&SnapshotOptions {
        root: Some(fixture()),
        save_files: Some(dir.clone()),
        ..Default::default()
    });
    std::fs::remove_dir_all(&dir).unwrap();
    let again = again.expect("snapshot of the copy").text;
    let (a, b): (Vec<&str>, Vec<&str>) = (again.lines().skip(1).collect(), first.text.lines().skip(1).collect());
    if let Some((x, y)) = a.iter().zip(&b).find(|(x, y)| x != y) {
        panic!("the copy's snapshot differs:\n  copy:     {x}\n  original: {y}");
    }
    assert_eq!(a.len(), b.len());
    let e = refused_second_save.expect_err("a non-empty directory is not written into");
    assert!(e.contains("not empty"), "{e}");
}

/// The snapshot's settings act in the simulation: `/etl`'s `io.max` on sda holds its writer
/// to 60 MB/s once the page cache's share is full.
#[test]
fn the_snapshot_runs_in_the_simulator() {
    let snap = snapshot(&SnapshotOptions {
        root: Some(fixture()),
        ..Default::default()
    })
    .expect("snapshot");
    let text = snap
        .text
        .replacen("name = \"snapshot-etl-web-01\"", "name = \"etl\"\nduration = \"30s\"", 1)
        + "\n[[task]]\nname = \"etl\"\njob = \"dd\"\nfile = \"/mnt/sda/out\"\nbs = \"1MiB\"\ncgroup = \"/etl\"\n";
    let sc = wblab_scenario::parse(&text, "snap.toml").unwrap_or_else(|e| panic!("{e}"));
    let r = wblab_testkit::sim::run(&sc);
    let etl = r.tasks.iter().find(|t| t.name == "etl").expect("etl's figures");
    let steady = etl.steady_bytes as f64 / (etl.steady_ns as f64 / 1e9);
    assert!(
        (0.7..1.15).contains(&(steady / 60e6)),
        "etl's steady write rate {:.1} MB/s under io.max wbps=60MB/s",
        steady / 1e6
    );
}

#[test]
fn this_machine_snapshots_without_touching_it() {
    let snap = snapshot(&SnapshotOptions {
        root: Some(PathBuf::from("/")),
        ..Default::default()
    })
    .expect("snapshot of /");
    let sc = resolved(&snap.text);
    assert!(sc["machine"]["cpus"].as_u64().unwrap() >= 1);
    assert!(snap.text.contains("/proc/sys/vm/dirty_ratio"), "{}", snap.text);
}

#[test]
fn pasted_sysctl_text_is_read_leniently() {
    let paste = "kernel.osrelease = 5.15.0-91-generic\nvm.dirty_ratio = 40\nvm.dirty_background_ratio\t=\t5\nsysctl: permission denied on key 'vm.stat_refresh'\nvm.lowmem_reserve_ratio = 256\t256\t32\t0\t0\nvm.swappiness = 1\nvm.dirty_expire_centisecs = 99999999999\nnet.core.somaxconn = 4096\n";
    let snap = snapshot(&SnapshotOptions {
        pasted: Some(("paste.txt".into(), paste.into())),
        ..Default::default()
    })
    .expect("snapshot");
    let sc = resolved(&snap.text);
    assert_eq!(sc["kernel"], "5.15.0");
    assert_eq!(sc["sysctl"]["dirty_ratio"], 40);
    assert_eq!(sc["sysctl"]["dirty_background_ratio"], 5);
    assert_eq!(
        sc["sysctl"]["dirty_expire_centisecs"], 3000,
        "an out-of-range value is refused, the default stays"
    );
    assert!(
        snap.refused.iter().any(|r| r.contains("dirty_expire_centisecs")),
        "{:?}",
        snap.refused
    );
    assert!(snap.text.contains("#   vm.swappiness = 1"), "{}", snap.text);
    assert!(
        snap.text.contains("paste.txt: 1 lines were not `key = value` (lines 4)"),
        "{}",
        snap.text
    );
    assert!(!snap.text.contains("somaxconn ="), "other namespaces are not vm sysctls");
    assert_eq!(
        sc["devices"].as_array().map(Vec::len),
        Some(1),
        "alone, the paste runs on the default machine"
    );
}

#[test]
fn a_directory_without_proc_or_sys_is_a_clear_error() {
    let e = snapshot(&SnapshotOptions {
        root: Some(std::env::temp_dir().join("wblab-no-such-machine")),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.contains("neither proc/ nor sys/"), "{e}");
}

/// A cgroup v1 machine (memory and blkio hierarchies, as this lab's hosts have): the root's
/// `blkio.throttle.*` rules are the device's `throttle/*`, a group's limits its own files.
#[test]
fn a_cgroup_v1_machine_keeps_its_limits() {
    let dir = std::env::temp_dir().join(format!("wblab-snap-v1-{}", std::process::id()));
    let w = |p: &str, t: &str| {
        let p = dir.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, t).unwrap();
    };
    w("proc/sys/kernel/osrelease", "4.19.0-27-amd64\n");
    w("proc/meminfo", "MemTotal:        8000000 kB\nMemFree:         4000000 kB\n");
    w("proc/mounts", "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\ncgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n");
    w("sys/fs/cgroup/unified/cgroup.controllers", "\n");
    w("sys/block/sda/dev", "8:0\n");
    w("sys/block/sda/size", "1000000000\n");
    w("sys/block/sda/queue/rotational", "1\n");
    w("sys/block/sda/queue/scheduler", "[mq-deadline] none\n");
    w("sys/fs/cgroup/blkio/blkio.throttle.write_bps_device", "8:0 8388608\n");
    w("sys/fs/cgroup/blkio/backup/blkio.throttle.read_iops_device", "8:0 200\n");
    w("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    w("sys/fs/cgroup/memory/backup/memory.limit_in_bytes", "536870912\n");
    let snap = snapshot(&SnapshotOptions {
        root: Some(dir.clone()),
        ..Default::default()
    });
    std::fs::remove_dir_all(&dir).unwrap();
    let snap = snap.expect("snapshot");
    let sc = resolved(&snap.text);
    assert_eq!(sc["kernel"], "4.19.0");
    assert_eq!(device(&sc, "sda")["throttle"]["write_bps"], 8_388_608);
    assert_eq!(sc["cgroups"]["version"], "v1");
    let g = &sc["cgroups"]["groups"][0];
    assert_eq!(
        (g["path"].as_str(), g["memory_max"].as_u64()),
        (Some("/backup"), Some(512 << 20)),
        "{g}"
    );
}
