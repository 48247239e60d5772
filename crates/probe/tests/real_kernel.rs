//! Real-kernel tests of the harness (need root, /dev/loop-control, a v1 blkio hierarchy and
//! tracefs; skipped with a loud note otherwise). Each measures a scenario of a few seconds on a
//! fresh throttled loop device and checks the results and that nothing is left behind.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use wblab_probe::{leaks, measure, MeasureOptions};
use wblab_sim::config::{BlkThrottleConfig, DeviceModelConfig, JobConfig, LoopParams, Scenario};

/// One measurement at a time (they share the machine's sysctls).
static SERIAL: Mutex<()> = Mutex::new(());

/// Only when asked (`scripts/test --real-kernel`, or WBLAB_REAL_KERNEL=1): these tests make
/// loop devices, mount, and change sysctls and cgroups on this machine.
fn can_run() -> bool {
    if std::env::var_os("WBLAB_REAL_KERNEL").is_none_or(|v| v != "1") {
        eprintln!("\n*** SKIPPED: real-kernel tests run only when asked (scripts/test --real-kernel) ***\n");
        return false;
    }
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let ok = root && Path::new("/dev/loop-control").exists() && wblab_probe::cgroup::blkio_root().is_some();
    if !ok {
        eprintln!(
            "\n*** SKIPPED: real-kernel measurement tests need root, /dev/loop-control and a cgroup v1 blkio \
             hierarchy (root: {root}) ***\n"
        );
    }
    ok
}

/// Nothing the run changed is left changed, and no scratch directory is left.
fn assert_undone(out: &Path, parent: &Path) {
    let changes = leaks::changes_of(out).expect("the results record the run's changes");
    assert!(changes.len() > 1, "a measurement as root changes something: {changes:?}");
    let left = leaks::not_undone(&changes);
    assert!(left.is_empty(), "left behind:\n{}", left.join("\n"));
    assert!(
        leaks::scratch_left(parent).is_empty(),
        "scratch left: {:?}",
        leaks::scratch_left(parent)
    );
}

/// A temporary directory, removed when dropped (also when a test fails).
struct Parent(PathBuf);

impl Drop for Parent {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch_parent(tag: &str) -> Parent {
    let p = std::env::temp_dir().join(format!("wblab-probe-tests-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&p).unwrap();
    Parent(p)
}

fn loop_scenario(name: &str, secs: u64) -> Scenario {
    let mut sc = Scenario::one_device(
        name,
        DeviceModelConfig::Loop(LoopParams::default()),
        4 << 30,
        2,
        secs * 1_000_000_000,
    );
    sc.devices[0].name = "key".into();
    sc.devices[0].size = 512 << 20;
    sc.devices[0].fs = Some(wblab_sim::config::MountConfig::defaults(
        wblab_sim::config::FsKind::Ext4,
        wblab_sim::generations::Version(6, 18, 0),
    ));
    sc.devices[0].throttle = BlkThrottleConfig {
        write_bps: Some(32 << 20),
        ..Default::default()
    };
    sc.sysctl.dirty_bytes = 64 << 20;
    sc.sysctl.dirty_ratio = 0;
    sc.sysctl.dirty_background_bytes = 32 << 20;
    sc.sysctl.dirty_background_ratio = 0;
    sc.add_task(
        "dd",
        1,
        0,
        JobConfig::Dd {
            bs: 1 << 20,
            size: None,
            fsync: false,
            direct: false,
        },
    );
    sc.tasks[0].file = "/mnt/key/zero{n}".into();
    sc
}

#[test]
fn throttled_loop_measurement_is_complete_and_leaves_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() {
        return;
    }
    let mut sc = loop_scenario("probe-test", 4);
    sc.add_task(
        "reader",
        1,
        1_000_000_000,
        JobConfig::Randread {
            bs: 4096,
            file_size: 16 << 20,
            direct: true,
            think: 1_000_000,
        },
    );
    sc.tasks[1].file = "/mnt/key/data".into();
    let guard = scratch_parent("full");
    let parent = guard.0.clone();
    let out = parent.join("out");
    let mut opts = MeasureOptions::new(out.clone());
    opts.scratch_parent = parent.clone();
    opts.quiet = true;
    let rep = measure(&sc, &opts).expect("measure");
    assert_undone(&out, &parent);
    assert!(rep.cleanup_problems.is_empty(), "{:?}", rep.cleanup_problems);
    assert_eq!(rep.interrupted, None);
    for f in [
        "summary.json",
        "trace.txt",
        "timeseries.csv",
        "throttle.csv",
        "histograms.json",
        "machine.json",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let dd = &rep.result.tasks[0];
    // 4 s at ≥ 32 MiB/s (dirtying runs ahead of the throttle until the 64 MiB limit).
    assert!(dd.bytes_written >= 100 << 20, "dd wrote only {}", dd.bytes_written);
    assert!(dd.pauses.count() > 0, "no balance_dirty_pages pauses in the trace");
    let rd = &rep.result.tasks[1];
    assert!(rd.op_latency.count() > 10, "reader did {} reads", rd.op_latency.count());
    assert!(!rep.result.vmstat.is_empty());
    assert!(!rep.result.throttle.is_empty(), "no bdi_dirty_ratelimit events for our bdi");
    let trace = std::fs::read_to_string(out.join("trace.txt")).unwrap();
    assert!(trace.contains("balance_dirty_pages: bdi 7:"), "no kernel bdp lines");
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    assert_eq!(m["kind"], "measured");
    assert_eq!(m["cleanup"]["ok"], true);
    assert_eq!(m["devices"][0]["direct_io"], true);
}

#[test]
fn setup_errors_undo_everything() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() {
        return;
    }
    // A file system nobody has a mkfs for: fails after the scratch dir and backing file exist.
    let mut sc = loop_scenario("probe-test-fail", 2);
    sc.devices[0].fs = Some(wblab_sim::config::MountConfig::defaults(
        wblab_sim::config::FsKind::Btrfs,
        wblab_sim::generations::Version(6, 18, 0),
    ));
    let has_btrfs = wblab_probe::sys::which("mkfs.btrfs").is_some();
    let guard = scratch_parent("fail");
    let parent = guard.0.clone();
    let mut opts = MeasureOptions::new(parent.join("out"));
    opts.scratch_parent = parent.clone();
    opts.quiet = true;
    let r = measure(&sc, &opts);
    if !has_btrfs {
        assert!(r.is_err(), "mkfs.btrfs is missing, so the run must fail");
    }
    assert_undone(&parent.join("out"), &parent);
}

/// `journal_size` reaches mke2fs: the file system it makes has a journal of that size.
#[test]
fn mkfs_makes_the_journal_size_the_scenario_asks_for() {
    let (Some(_), Some(dumpe2fs)) = (wblab_probe::sys::which("mkfs.ext4"), wblab_probe::sys::which("dumpe2fs")) else {
        eprintln!("\n*** SKIPPED: mkfs.ext4 and dumpe2fs are needed (scripts/setup-measure) ***\n");
        return;
    };
    let dir = scratch_parent("journal-size");
    let img = dir.0.join("fs.img");
    wblab_probe::mount::make_backing(&img, 256 << 20).unwrap();
    let journal = |size: Option<u64>| {
        wblab_probe::mount::mkfs("ext4", &img, size, false, false).unwrap();
        let out = std::process::Command::new(&dumpe2fs).arg("-h").arg(&img).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        // "Total journal size:       5120k" (older e2fsprogs: "Journal size:  5M").
        let field = text
            .lines()
            .find_map(|l| l.strip_prefix("Total journal size:").or_else(|| l.strip_prefix("Journal size:")))
            .unwrap_or_else(|| panic!("no journal size in:\n{text}"))
            .trim()
            .to_string();
        let (n, unit) = field.split_at(field.len() - 1);
        let shift = match unit {
            "k" => 10,
            "M" => 20,
            "G" => 30,
            _ => panic!("journal size {field}"),
        };
        n.parse::<u64>().unwrap() << shift
    };
    assert_eq!(journal(Some(5 << 20)), 5 << 20);
    assert_ne!(journal(None), 5 << 20, "mke2fs's default for 256 MiB is larger");
}
