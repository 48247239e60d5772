//! End-to-end tests of `wblab measure` on the real kernel of this machine, and of `compare`.
//!
//! They run only when asked (`scripts/test --real-kernel`, or WBLAB_REAL_KERNEL=1), and need
//! root, /dev/loop-control and cgroup v1 blkio and memory hierarchies; they are skipped with a
//! loud note otherwise. Each checks that everything the measurement changed — each entry of
//! its journal: knobs, loop devices, mounts, throttle rules, trace instances, cgroups, the
//! scratch directory — is undone: after a normal run, after SIGINT midway, after SIGKILL (the
//! watchdog), and after SIGKILL of both + `wblab measure --restore`. Only what the run itself
//! made is looked at, so other work on the machine cannot fail them. Each uses a state
//! directory of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wblab_probe::leaks;

/// One measurement at a time: they share the machine's sysctls (and the harness's lock).
static SERIAL: Mutex<()> = Mutex::new(());

fn wblab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wblab"))
}

/// `wblab measure SC --quiet --out OUT --scratch SCRATCH`, to run or spawn, with the state
/// directory `SCRATCH/state`.
fn measure(sc: &Path, out: &Path, scratch: &Path) -> Command {
    let mut c = wblab();
    c.env("WBLAB_STATE_DIR", scratch.join("state"));
    c.arg("measure")
        .arg(sc)
        .arg("--quiet")
        .arg("--out")
        .arg(out)
        .arg("--scratch")
        .arg(scratch);
    c
}

fn can_run() -> bool {
    if std::env::var_os("WBLAB_REAL_KERNEL").is_none_or(|v| v != "1") {
        eprintln!("\n*** SKIPPED: real-kernel tests run only when asked (scripts/test --real-kernel) ***\n");
        return false;
    }
    let root = wblab_probe::sys::geteuid() == 0;
    let ok = root
        && Path::new("/dev/loop-control").exists()
        && wblab_probe::cgroup::blkio_root().is_some()
        && wblab_probe::memcg::memory_root().is_some();
    if !ok {
        eprintln!(
            "\n*** SKIPPED: `wblab measure` real-kernel tests need root, /dev/loop-control and cgroup v1 \
             blkio and memory hierarchies (root: {root}) ***\n"
        );
    }
    ok
}

struct Tmp(PathBuf);

impl Tmp {
    fn new(tag: &str) -> Tmp {
        let p = std::env::temp_dir().join(format!("wblab-cli-measure-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A throttled loop device, dirty limits that differ from the kernel defaults (so knobs are
/// really changed), a dd writer and a random reader.
fn scenario(dir: &Path, secs: u32) -> PathBuf {
    let p = dir.join("short.toml");
    std::fs::write(
        &p,
        format!(
            r#"name = "short"
duration = "{secs}s"

[sysctl]
"vm.dirty_bytes" = "64MiB"
"vm.dirty_background_bytes" = "32MiB"
"vm.dirty_expire_centisecs" = 1500

[[device]]
name = "key"
model = "loop"
size = "512MiB"
fs = "ext4"
"throttle/write_bps" = "32MiB/s"

[[task]]
name = "dd"
job = "dd"
file = "/mnt/key/zero"
bs = "1MiB"

[[cgroup]]
path = "/reader"
memory.limit_in_bytes = "64MiB"
blkio.bfq.weight = 300
blkio.throttle.read_iops_device = "key 5000"

[[task]]
name = "reader"
job = "randread"
file = "/mnt/key/data"
file_size = "16MiB"
think = "1ms"
start = "1s"
cgroup = "/reader"
"#
        ),
    )
    .unwrap();
    p
}

/// Every change recorded in `changes` undone, no scratch directory and no journal left.
fn assert_undone(changes: &[wblab_probe::journal::Entry], scratch_parent: &Path) {
    assert!(changes.len() > 3, "a measurement as root changes things: {changes:?}");
    let left = leaks::not_undone(changes);
    assert!(left.is_empty(), "the machine was not left as found:\n{}", left.join("\n"));
    let scratch = leaks::scratch_left(scratch_parent);
    assert!(scratch.is_empty(), "scratch left behind: {scratch:?}");
    assert!(!scratch_parent.join("state").join("measure.journal").exists(), "a journal is left");
}

/// [`assert_undone`] of the changes a results directory records.
fn assert_clean(out: &Path, scratch_parent: &Path) {
    assert_undone(&leaks::changes_of(out).expect("changes.jsonl"), scratch_parent);
}

/// The journal of a measurement under way (state directory `parent/state`).
fn journal_of(parent: &Path) -> Vec<wblab_probe::journal::Entry> {
    wblab_probe::journal::read_entries(&parent.join("state").join("measure.journal")).unwrap_or_default()
}

/// The watchdog of measurement `pid` (its command line holds `--after <pid>:`).
fn watchdog_of(pid: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let p: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        let after = args.iter().position(|a| *a == b"--after")?;
        args.get(after + 1)?.starts_with(format!("{pid}:").as_bytes()).then_some(p)
    })
}

fn sysctl(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/vm/{name}")).unwrap().trim().to_string()
}

#[test]
fn measure_writes_a_complete_results_dir_and_restores_every_knob() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() {
        return;
    }
    let t = Tmp::new("full");
    let sc = scenario(&t.0, 4);
    let out = t.0.join("out");
    let o = measure(&sc, &out, &t.0).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "exit {:?}\n{stderr}", o.status);
    assert_clean(&out, &t.0);
    for f in [
        "summary.json",
        "trace.txt",
        "timeseries.csv",
        "throttle.csv",
        "histograms.json",
        "machine.json",
        "iostat.csv",
        "latency.csv",
        "cgroups.csv",
    ] {
        let p = out.join(f);
        assert!(p.is_file() && std::fs::metadata(&p).unwrap().len() > 0, "{f} missing or empty");
    }
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The same schema as `wblab run`.
    for k in [
        "wblab_version",
        "sim_seconds",
        "wall_seconds",
        "events",
        "scenario",
        "tasks",
        "devices",
    ] {
        assert!(s.get(k).is_some(), "summary.json lacks {k}");
    }
    let dd = &s["tasks"][0];
    assert_eq!(dd["job"], "dd");
    assert!(
        dd["bytes_written"].as_u64().unwrap() > 100 << 20,
        "dd wrote {}",
        dd["bytes_written"]
    );
    assert!(dd["pauses"]["count"].as_u64().unwrap() > 0);
    assert!(s["tasks"][1]["op_latency_ms"]["count"].as_u64().unwrap() > 10);
    // The reader's operations per second add up to its distribution, as in a simulated run;
    // the device's per-second writes to what the kernel counted.
    let lat = std::fs::read_to_string(out.join("latency.csv")).unwrap();
    let per_second: u64 = lat
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(1) == Some("reader"))
        .map(|l| l.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    let counted = s["tasks"][1]["op_latency_ms"]["count"].as_u64().unwrap();
    assert!(
        per_second <= counted && per_second * 10 >= counted * 9,
        "{per_second} of {counted} reads in whole seconds"
    );
    // The reader's memory cgroup was made, sampled each second within its limit, and removed
    // (assert_clean checks each cgroup directory the run made is gone).
    let cg = std::fs::read_to_string(out.join("cgroups.csv")).unwrap();
    let usage: Vec<u64> = cg
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(1) == Some("/reader"))
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .collect();
    assert!(usage.len() >= 3 && usage.iter().all(|&u| u <= 64 << 20), "{cg}");
    assert!(
        usage.iter().any(|&u| u > 0),
        "the reader's cache was not charged to its group: {cg}"
    );
    let io = std::fs::read_to_string(out.join("iostat.csv")).unwrap();
    let writes: f64 = io
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap().parse::<f64>().unwrap())
        .sum();
    assert!(writes > 0.0, "{io}");
    // Request latency of the loop device from block_rq_issue/complete.
    assert!(
        s["devices"][0]["request_latency_ms"]["count"].as_u64().unwrap() > 0,
        "{}",
        s["devices"][0]
    );
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    assert_eq!(m["kind"], "measured");
    assert_eq!(m["cleanup"]["ok"], true);
    assert!(m["facts"]["kernel_release"].as_str().unwrap().len() > 2);
    // The knobs it applied are recorded with their originals.
    let sysctl_rec = m["sysctl"].as_array().unwrap();
    assert!(sysctl_rec.iter().any(|k| k["wanted"] == "dirty_bytes=67108864"), "{sysctl_rec:?}");
    // The kernel's own trace lines, readable by the trace parser.
    let trace = std::fs::read_to_string(out.join("trace.txt")).unwrap();
    let bdp: Vec<_> = wblab_report::load::trace_parse::parse_lines(&trace)
        .filter(|e| e.event == "balance_dirty_pages")
        .collect();
    assert!(!bdp.is_empty());
    assert!(bdp
        .iter()
        .all(|e| e.get_u64("wb_setpoint").is_some() && e.get_u64("bdi_setpoint").is_some()));
    // Each request's issue and completion on the device it created (the whole block trace only
    // when the scenario asks for it): btt has their D2C.
    let b = wblab_report::btt::analyze(&trace, wblab_report::btt::BttOptions::default());
    let d2c = b.all.get(wblab_report::btt::Phase::D2C);
    assert!(d2c.n > 10 && !b.has_queue_events(), "{d2c:?}");
    // compare: a run against itself has zero error everywhere.
    let o = wblab().args(["compare", "--json"]).arg(&out).arg(&out).output().unwrap();
    assert!(o.status.success());
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let figs = c["figures"].as_array().unwrap();
    assert!(figs.len() > 10);
    for f in figs {
        if let Some(e) = f["rel_err"][1].as_f64() {
            assert_eq!(e, 0.0, "{f}");
        }
    }
}

/// Wait until the harness has applied its sysctls (the run is under way), at most `limit`.
fn wait_for_sysctl(name: &str, want: &str, limit: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if sysctl(name) == want {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn sigint_midway_tears_everything_down() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() {
        return;
    }
    let t = Tmp::new("sigint");
    let sc = scenario(&t.0, 30);
    let out = t.0.join("out");
    let mut child = measure(&sc, &out, &t.0)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_for_sysctl("dirty_bytes", "67108864", Duration::from_secs(20)),
        "the run never applied its sysctls"
    );
    // A couple of seconds into the workload: writer throttled, reader running, trace on.
    std::thread::sleep(Duration::from_millis(2500));
    let changes = journal_of(&t.0);
    assert!(!leaks::not_undone(&changes).is_empty(), "the run changed nothing?");
    let k = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(k.success());
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "wblab did not stop within 60 s of SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_clean(&out, &t.0);
    assert_undone(&changes, &t.0);
    // Partial results, marked as interrupted.
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    assert_eq!(m["interrupted"], "SIGINT");
    assert!(m["duration_s"].as_f64().unwrap() < 20.0);
    assert!(out.join("summary.json").is_file());
}

/// SIGKILL: the watchdog undoes the run; with the watchdog killed too, the journal stays,
/// a new run refuses to start, and `--restore` undoes it.
#[test]
fn a_killed_run_is_undone_by_its_watchdog_or_by_restore() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() {
        return;
    }
    for kill_the_watchdog in [false, true] {
        let t = Tmp::new(if kill_the_watchdog { "sigkill-both" } else { "sigkill" });
        let sc = scenario(&t.0, 30);
        let mut child = measure(&sc, &t.0.join("out"), &t.0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert!(wait_for_sysctl("dirty_bytes", "67108864", Duration::from_secs(20)));
        std::thread::sleep(Duration::from_millis(1500));
        let changes = journal_of(&t.0);
        let watchdog = watchdog_of(child.id()).expect("a watchdog for the measurement");
        if kill_the_watchdog {
            wblab_probe::sys::kill(watchdog, libc::SIGKILL).unwrap();
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let state = |c: &mut Command| {
            c.env("WBLAB_STATE_DIR", t.0.join("state"));
        };
        if kill_the_watchdog {
            // Killed with its watchdog: the loop device, mount, throttle rule and sysctls
            // are still there, and a new run refuses to start on top of them.
            assert_eq!(sysctl("dirty_bytes"), "67108864");
            let mut c = wblab();
            state(&mut c);
            let o = c.args(["measure"]).arg(&sc).arg("--quiet").output().unwrap();
            assert!(!o.status.success());
            assert!(String::from_utf8_lossy(&o.stderr).contains("--restore"));
            let mut c = wblab();
            state(&mut c);
            let o = c.args(["measure", "--restore"]).output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert!(String::from_utf8_lossy(&o.stderr).contains("restored"));
        } else {
            let t0 = Instant::now();
            while t.0.join("state").join("measure.journal").exists() {
                assert!(t0.elapsed() < Duration::from_secs(60), "the watchdog did not undo the killed run");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        assert_undone(&changes, &t.0);
        let mut c = wblab();
        state(&mut c);
        let o = c.args(["measure", "--restore"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "nothing to restore");
    }
}

/// The jobs that walk trees (`du`, `ls`, a launch) and `netwrite` run on the real kernel as
/// in the model: du `lstat`s every entry of its tree once, each an operation; ls and the
/// launch are one operation a run, every second; the upload stores its whole size; the
/// machine is left as found.
#[test]
fn the_tree_walkers_and_an_upload_run_for_real() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() {
        return;
    }
    let t = Tmp::new("trees");
    let sc = t.0.join("trees.toml");
    std::fs::write(
        &sc,
        r#"name = "trees"
duration = "4s"

[[device]]
name = "disk"
model = "loop"
size = "512MiB"
fs = "ext4"

[[task]]
name = "du"
job = "du"
files = 2000
files_per_dir = 20
subdirs = 4

[[task]]
name = "ls"
job = "ls"
dirs = 3
entries = 50
interval = "1s"

[[task]]
name = "app"
job = "launch"
files = 10
files_per_dir = 4
file_sizes = ["64KiB", "12KiB"]
writes = "8KiB"
interval = "1s"

[[task]]
name = "upload"
job = "netwrite"
bs = "64KiB"
rate = "8MB/s"
size = "4MiB"
"#,
    )
    .unwrap();
    let out = t.0.join("out");
    let o = measure(&sc, &out, &t.0).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "exit {:?}\n{stderr}", o.status);
    assert_clean(&out, &t.0);
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let task = |name: &str| {
        s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .unwrap_or_else(|| panic!("no task {name} in {s}"))
            .clone()
    };
    let ops = |name: &str| task(name)["op_latency_ms"]["count"].as_u64().unwrap_or(0);
    // 2000 files in 100 directories: every file and every directory is lstat()ed once.
    assert_eq!(ops("du"), 2000 + 100, "du's lstat() calls");
    assert!((3..=5).contains(&ops("ls")), "{} runs of ls -l in 4 s, one a second", ops("ls"));
    assert!((3..=5).contains(&ops("app")), "{} launches in 4 s, one a second", ops("app"));
    // Five files of 64 KiB and five of 12 KiB, read whole at each launch.
    assert_eq!(task("app")["bytes_read"].as_u64().unwrap() % (5 * 76 * 1024), 0);
    assert_eq!(task("upload")["bytes_written"].as_u64().unwrap(), 4 << 20);
}

#[test]
fn refuses_what_it_cannot_run_and_targets_that_hold_data() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    let t = Tmp::new("refuse");
    let sc = scenario(&t.0, 2);
    let out = t.0.join("busy");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("precious.txt"), "data").unwrap();
    let o = wblab().args(["measure"]).arg(&sc).arg("--out").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("already holds"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(out.join("precious.txt")).unwrap(), "data");
    // calibrate never takes a device path.
    let o = wblab().args(["calibrate", "/dev/vda"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn without_root_it_runs_what_it_can() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    // Run as `nobody` through setpriv, if this machine lets us.
    if wblab_probe::sys::geteuid() != 0 || wblab_probe::sys::which("setpriv").is_none() {
        eprintln!("\n*** SKIPPED: the unprivileged run needs root and setpriv to become nobody ***\n");
        return;
    }
    let t = Tmp::new("nobody");
    std::fs::set_permissions(&t.0, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let nobody = |args: &[&str]| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_wblab")]);
        c.args(args);
        c.env("TMPDIR", t.0.to_str().unwrap());
        c
    };
    if !nobody(&["--version"]).output().is_ok_and(|o| o.status.success()) {
        eprintln!("\n*** SKIPPED: nobody cannot execute the wblab binary here ***\n");
        return;
    }
    let sc = t.0.join("plain.toml");
    std::fs::write(
        &sc,
        "name = \"plain\"\nduration = \"2s\"\n[sysctl]\n\"vm.dirty_bytes\" = \"64MiB\"\n         [[task]]\nname = \"reader\"\njob = \"randread\"\nfile_size = \"8MiB\"\ndirect = false\n         [[task]]\nname = \"dd\"\njob = \"dd\"\nsize = \"32MiB\"\n",
    )
    .unwrap();
    let out = t.0.join("out");
    let o = nobody(&[
        "measure",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--scratch",
        t.0.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("not root"), "{stderr}");
    assert!(leaks::scratch_left(&t.0).is_empty());
    // Its state directory is its own, and empty once it is done.
    assert!(!t.0.join("wblab-65534").exists(), "the state directory is left");
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(s["tasks"][0]["op_latency_ms"]["count"].as_u64().unwrap() > 0);
    assert_eq!(s["tasks"][1]["bytes_written"].as_u64().unwrap(), 32 << 20);
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    assert_eq!(m["root"], false);
    // One results writer: every file `wblab run` writes for the same scenario, `measure`
    // writes too — ops.csv among them, the reader's every read.
    let sim = t.0.join("sim");
    let o = wblab()
        .args([
            "run",
            sc.to_str().unwrap(),
            "--out",
            sim.to_str().unwrap(),
            "--no-report",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for e in std::fs::read_dir(&sim).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(out.join(&name).is_file(), "wblab run writes {name}, measure does not");
    }
    let reads = std::fs::read_to_string(out.join("ops.csv"))
        .unwrap()
        .lines()
        .filter(|l| l.split(',').any(|f| f == "reader"))
        .count() as u64;
    let counted = s["tasks"][0]["op_latency_ms"]["count"].as_u64().unwrap();
    assert_eq!(
        reads,
        counted.min(wblab_sim::metrics::MAX_OP_LOG as u64),
        "ops.csv: one line a read, up to the log's cap"
    );
}

#[test]
fn calibrate_a_throttled_loop_and_use_the_section() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() {
        return;
    }
    let t = Tmp::new("calibrate");
    let section = t.0.join("device.toml");
    let o = wblab()
        .args([
            "calibrate",
            "loop",
            "--size",
            "64MiB",
            "--seconds",
            "0.3",
            "--write-bps",
            "16MiB/s",
            "--json",
            "--scratch",
        ])
        .arg(&t.0)
        .arg("--out")
        .arg(&section)
        .env("WBLAB_STATE_DIR", t.0.join("state"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(leaks::scratch_left(&t.0).is_empty());
    assert!(wblab_probe::loopdev::bound_under(&t.0).is_empty(), "a loop device is still bound");
    assert!(!t.0.join("state").exists(), "the state directory is left");
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let points = c["points"].as_array().unwrap();
    assert_eq!(points.len(), 2 + 6 + 1, "seq write, seq read, 6 queue depths, rand write");
    // The throttle is what the sequential writer sees: 16 MiB/s = 16.8 MB/s.
    let w = points[0]["mb_s"].as_f64().unwrap();
    assert!((w - 16.78).abs() / 16.78 < 0.25, "seq write {w} MB/s under a 16 MiB/s rule");
    // The section is a valid [[device]] of a scenario.
    let text = std::fs::read_to_string(&section).unwrap() + "\n[[task]]\nname = \"dd\"\njob = \"dd\"\n";
    let sc = wblab_scenario::parse(&text, "calibrated.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(sc.devices[0].name, "measured");
    assert!(text.contains("# model = \"measured\""));
}

#[test]
fn compare_reads_two_simulated_runs() {
    let t = Tmp::new("compare");
    let sc = scenario(&t.0, 3);
    for (name, seed) in [("a", "1"), ("b", "2")] {
        let o = wblab()
            .args(["run", sc.to_str().unwrap(), "--quiet", "--seed", seed, "--out"])
            .arg(t.0.join(name))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = wblab().arg("compare").arg(t.0.join("a")).arg(t.0.join("b")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("A = a (simulated"), "{text}");
    assert!(text.contains("dd: MB written"), "{text}");
    assert!(text.contains("err B"), "{text}");
    let o = wblab().arg("compare").arg(t.0.join("a")).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    // A measured run whose kernel refused a key of the scenario (an elevator it was built
    // without) is flagged: it measured another experiment than the file says.
    std::fs::write(
        t.0.join("a/machine.json"),
        r#"{"devices": [{"name": "disk", "knobs": [{"path": "/sys/block/loop64/queue/scheduler", "wanted": "bfq", "effective": "none"}]}]}"#,
    )
    .unwrap();
    let o = wblab().arg("compare").arg(t.0.join("a")).arg(t.0.join("b")).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("A = a (measured"), "{text}");
    assert!(text.contains("disk queue/scheduler: bfq refused, ran none"), "{text}");
    assert!(!text.contains("B's scenario"), "{text}");
}

/// A scenario's fio jobs run by real fio: one fio process on the fresh loop device, its JSON
/// and logs copied into the results, the run ended when fio is done (`until_done`), and the
/// machine left as found. Skipped where fio is not installed (scripts/setup-measure installs it).
#[test]
fn fio_jobs_run_with_real_fio_and_leave_nothing_behind() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() {
        return;
    }
    if wblab_probe::sys::which("fio").is_none() {
        eprintln!("\n*** SKIPPED: fio is not installed (scripts/setup-measure installs it) ***\n");
        return;
    }
    let t = Tmp::new("fio");
    let sc = t.0.join("fio.toml");
    std::fs::write(
        &sc,
        "duration = \"60s\"\nuntil_done = true\n\
         [[device]]\nname = \"loop64\"\nmodel = \"loop\"\nsize = \"1GiB\"\nfs = \"ext4\"\n\"throttle/read_iops\" = 1000\n\
         [[task]]\nfio = \"\"\"\n[global]\nruntime=2\ntime_based\nsize=32m\n\
         [probe]\nrw=randread\nbs=4k\ndirect=1\nioengine=libaio\niodepth=4\nwrite_lat_log=probe\n\
         [writer]\nstonewall\nrw=write\nbs=1m\nend_fsync=1\n\"\"\"\n",
    )
    .unwrap();
    let out = t.0.join("out");
    let o = measure(&sc, &out, &t.0).output().unwrap();
    assert!(o.status.success(), "exit {:?}\n{}", o.status, String::from_utf8_lossy(&o.stderr));
    assert_clean(&out, &t.0);
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("fio.json")).unwrap()).unwrap();
    let jobs = json["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs.iter().map(|j| j["jobname"].as_str().unwrap()).collect();
    assert_eq!(names, ["probe", "writer"]);
    // The throttle rule paces the probe's reads, as in the model: blk-throttle lets a few
    // slices' budget through ahead (measured 1157 IOPS over 1 s), less over 2 s.
    let iops = jobs[0]["read"]["iops"].as_f64().unwrap();
    assert!((800.0..=1250.0).contains(&iops), "probe at {iops} IOPS under a 1000 IOPS rule");
    assert!(jobs[1]["write"]["io_bytes"].as_u64().unwrap() > 0);
    let log = std::fs::read_to_string(out.join("probe_lat.1.log")).unwrap();
    assert!(log.lines().count() > 500, "a row per read");
    // The run ended with fio, not at the 60 s cap.
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(summary["sim_seconds"].as_f64().unwrap() < 30.0, "{}", summary["sim_seconds"]);
}

/// A USB key served by its model (`emulate = true`): a writer and a reader on ext4.
fn emulated_scenario(dir: &Path, secs: u32) -> PathBuf {
    let p = dir.join("emulated.toml");
    std::fs::write(
        &p,
        format!(
            r#"name = "emulated"
duration = "{secs}s"

[sysctl]
"vm.dirty_bytes" = "48MiB"
"vm.dirty_background_bytes" = "16MiB"

[[device]]
name = "key"
model = "usb"
size = "1GiB"
fs = "ext4"
emulate = true

[[task]]
name = "dd"
job = "dd"
file = "/mnt/key/zero"
bs = "1MiB"

[[task]]
name = "reader"
job = "randread"
file = "/mnt/key/data"
file_size = "16MiB"
think = "10ms"
start = "1s"
"#
        ),
    )
    .unwrap();
    p
}

/// An emulated device: served through the run (its requests counted and listed with the
/// model's times), and gone afterwards — FUSE mount, loop device, backing file — after a
/// normal run, SIGINT midway, and SIGKILL of the run and its watchdog + `--restore`.
#[test]
fn an_emulated_device_is_served_and_undone_on_every_exit() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() || !Path::new("/dev/fuse").exists() {
        return;
    }
    let t = Tmp::new("emulated");
    let sc = emulated_scenario(&t.0, 4);
    let out = t.0.join("out");
    let o = measure(&sc, &out, &t.0).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_clean(&out, &t.0);
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    let e = &m["devices"][0]["emulated"];
    let stats = &e["stats"];
    for op in ["read", "write"] {
        assert!(stats[op]["requests"].as_u64().unwrap() > 0, "no {op} reached the model: {e}");
    }
    // The USB key's queue takes one request at a time: the model served every one.
    let listed = std::fs::read_to_string(out.join("emulated-key.csv")).unwrap().lines().count() as u64 - 1;
    let counted: u64 = ["read", "write", "flush"]
        .iter()
        .map(|op| stats[*op]["requests"].as_u64().unwrap())
        .sum();
    assert!(
        listed >= counted,
        "emulated-key.csv lists {listed} requests, machine.json counts {counted}"
    );
    assert!(
        e["transport"]["lead_in"].as_u64().unwrap() > 0,
        "the trip through FUSE was timed: {e}"
    );

    // SIGINT a second into the workload.
    let t2 = Tmp::new("emulated-sigint");
    let sc = emulated_scenario(&t2.0, 30);
    let out = t2.0.join("out");
    let mut child = measure(&sc, &out, &t2.0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for_sysctl("dirty_bytes", "50331648", Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(1500));
    let changes = journal_of(&t2.0);
    assert!(changes
        .iter()
        .any(|c| matches!(c, wblab_probe::journal::Entry::Mount { path } if path.ends_with("emulated/key"))));
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_undone(&changes, &t2.0);

    // SIGKILL of the run and of its watchdog: the server dies with the run, and `--restore`
    // unmounts the file system standing on the dead device, detaches it and unmounts FUSE.
    let t3 = Tmp::new("emulated-sigkill");
    let sc = emulated_scenario(&t3.0, 30);
    let mut child = measure(&sc, &t3.0.join("out"), &t3.0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for_sysctl("dirty_bytes", "50331648", Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(1500));
    let changes = journal_of(&t3.0);
    let watchdog = watchdog_of(child.id()).expect("a watchdog for the measurement");
    wblab_probe::sys::kill(watchdog, libc::SIGKILL).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let mut c = wblab();
    c.env("WBLAB_STATE_DIR", t3.0.join("state"));
    let o = c.args(["measure", "--restore"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_undone(&changes, &t3.0);
}

/// `wblab emulate`: the scenario's USB key served until SIGINT, usable meanwhile by any
/// program (here a write through its mount point that the model times), then undone.
#[test]
fn wblab_emulate_serves_until_interrupted_then_undoes_everything() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() || !Path::new("/dev/fuse").exists() {
        return;
    }
    let t = Tmp::new("emulate-cmd");
    let sc = emulated_scenario(&t.0, 30);
    let out = t.0.join("out");
    let mut child = wblab()
        .env("WBLAB_STATE_DIR", t.0.join("state"))
        .arg("emulate")
        .arg(&sc)
        .arg("--quiet")
        .arg("--out")
        .arg(&out)
        .arg("--scratch")
        .arg(&t.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its first line names the device and where its file system is mounted.
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let first = lines.next().expect("a line").unwrap();
    assert!(
        first.starts_with("key: /dev/loop") && first.contains("served by the `usb` model"),
        "{first}"
    );
    let mount = PathBuf::from(first.rsplit_once(" mounted on ").expect("a mount point").1);
    assert_eq!(
        lines.next().unwrap().unwrap(),
        "serving until SIGINT (Ctrl-C) or SIGTERM; every change is undone then"
    );
    let changes = journal_of(&t.0);
    // 4 MiB written and synced through the key: the model times it (a few MB/s at most).
    let t0 = Instant::now();
    let o = Command::new("dd")
        .args(["if=/dev/zero", "bs=1M", "count=4", "conv=fsync"])
        .arg(format!("of={}", mount.join("file").display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let took = t0.elapsed();
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("stopped by SIGINT: every change undone"), "{stderr}");
    assert_undone(&changes, &t.0);
    let listed = std::fs::read_to_string(out.join("emulated-key.csv")).unwrap();
    let written: u64 = listed
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("write,"))
        .map(|l| l.split(',').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(written >= 4 << 20, "the model served {written} bytes of writes");
    // The default USB key writes at most ~10 MB/s: 4 MiB synced cannot take under 0.3 s.
    assert!(took > Duration::from_millis(300), "4 MiB through an emulated USB key in {took:?}");
}

/// A loop device of the tunables test: its name, its elevator, and the `queue/` files the
/// scenario sets with their values.
type ElevatorDevice = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

/// Every tunable of every elevator the model has reaches the real kernel: `measure` writes the
/// device's whole queue (the scheduler first) and each of its elevator's `iosched/` files —
/// the ones the scenario sets and the model's defaults for the rest, so that the kernel runs
/// what the simulation runs — and machine.json records each with what the kernel reads back.
/// An elevator this kernel lacks is recorded as refused, and its tunables are not written.
#[test]
fn every_elevator_tunable_reaches_the_kernel() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _machine = leaks::serial_lock();
    if !can_run() {
        return;
    }
    let t = Tmp::new("tunables");
    // Values off each elevator's defaults, where the model has them.
    let set: [ElevatorDevice; 3] = [
        (
            "dl",
            "mq-deadline",
            &[
                ("iosched/fifo_batch", "8"),
                ("iosched/writes_starved", "3"),
                ("iosched/front_merges", "0"),
            ],
        ),
        ("bq", "bfq", &[("iosched/low_latency", "0"), ("iosched/slice_idle", "0")]),
        ("ky", "kyber", &[("iosched/read_lat_nsec", "1000000")]),
    ];
    let mut sc = String::from("name = \"tunables\"\nduration = \"1s\"\n");
    for (name, elevator, knobs) in &set {
        sc += &format!(
            "\n[[device]]\nname = \"{name}\"\nmodel = \"loop\"\nsize = \"128MiB\"\nfs = \"ext4\"\n\"queue/scheduler\" = \"{elevator}\"\n"
        );
        for (k, v) in knobs.iter() {
            sc += &format!("\"queue/{k}\" = {v}\n");
        }
    }
    sc += "\n[[task]]\nname = \"dd\"\njob = \"dd\"\nfile = \"/mnt/dl/zero\"\nbs = \"1MiB\"\n";
    let path = t.0.join("tunables.toml");
    std::fs::write(&path, &sc).unwrap();
    let out = t.0.join("out");
    let o = measure(&path, &out, &t.0).output().unwrap();
    assert!(o.status.success(), "exit {:?}\n{}", o.status, String::from_utf8_lossy(&o.stderr));
    assert_clean(&out, &t.0);
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("machine.json")).unwrap()).unwrap();
    let mut checked = 0;
    for (name, elevator, knobs) in &set {
        let dev = m["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == *name)
            .expect("the device's record");
        let records = dev["knobs"].as_array().unwrap();
        let record = |file: &str| {
            records
                .iter()
                .find(|r| r["path"].as_str().is_some_and(|p| p.ends_with(&format!("/queue/{file}"))))
        };
        let scheduler = record("scheduler").expect("the scheduler is written first");
        if scheduler["effective"] != *elevator {
            eprintln!("note: this kernel refused {elevator}: {scheduler}");
            continue;
        }
        let info = wblab_sim::block::sched::elevator_named(elevator).expect("an elevator of the model");
        for k in info.tunables {
            let file = k.key.strip_prefix("queue/").unwrap_or(k.key);
            if file == "iosched/async_depth" {
                continue; // mq-deadline's 0, "the kernel's own", is left alone
            }
            let r = record(file).unwrap_or_else(|| panic!("{elevator}: {file} was not written: {records:?}"));
            let (wanted, effective) = (r["wanted"].as_str().unwrap(), r["effective"].as_str().unwrap());
            // Times in ms read back in whole jiffies (250 ms is 62.5 jiffies at HZ = 250).
            let near = match (wanted.parse::<i64>(), effective.parse::<i64>()) {
                (Ok(w), Ok(e)) => (w - e).abs() <= 10.max(w / 100),
                _ => false,
            };
            assert!(wanted == effective || near, "{elevator}: {file}: {r}");
            checked += 1;
        }
        for (k, v) in knobs.iter() {
            assert_eq!(record(k).unwrap()["wanted"], *v, "{elevator}: the scenario's {k}");
        }
    }
    assert!(checked >= 5, "only {checked} tunables checked: the kernel refused every elevator?");
}
