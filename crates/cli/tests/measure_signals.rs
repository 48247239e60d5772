//! Every way a measurement can end undoes what it did: each signal it catches (an orderly
//! stop, partial results, exit 128 + the signal), a panic (the journal is replayed while it
//! unwinds), and the ones that cannot be caught or survived — SIGKILL, SIGABRT, SIGSYS,
//! SIGTRAP — through the watchdog it started. Measured with `--unprivileged`, so the plain test run
//! leaves the host alone: the journal then holds the scratch directory, which must be gone
//! with the journal and its state directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Tmp(PathBuf);

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmp(tag: &str) -> Tmp {
    let p = std::env::temp_dir().join(format!("wblab-signals-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    Tmp(p)
}

const SCENARIO: &str = "name = \"sig\"\nduration = \"60s\"\n[[device]]\nname = \"d\"\nmodel = \"ssd\"\n\
                        [[task]]\nname = \"w\"\njob = \"dd\"\nsize = \"4MiB\"\n";

/// A measurement of [`SCENARIO`] under `dir` (scratch, state directory, results).
fn start(dir: &Path, fault: Option<&str>) -> Child {
    let sc = dir.join("sig.toml");
    std::fs::write(&sc, SCENARIO).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_wblab"));
    // The first touch of free memory is not timed: up to 2 GiB written and a minute's wait per
    // measurement, for a figure these tests do not read.
    c.args(["measure", "--unprivileged", "--no-memory-touch", "--quiet", "--scratch"])
        .arg(dir)
        .arg("--out")
        .arg(dir.join("out"))
        .arg(&sc)
        .env("WBLAB_STATE_DIR", dir.join("state"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
    if let Some(f) = fault {
        c.env("WBLAB_TEST_FAULT", f);
    }
    // No core files from the signals that dump one.
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut c, || {
            let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        });
    }
    c.current_dir(dir).spawn().unwrap()
}

/// What a measurement under `dir` said, to explain a failure.
fn said(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// The scratch directory once the workload has started (dd's file exists).
fn wait_for_workload(dir: &Path, child: &mut Child) -> Result<PathBuf, String> {
    let t0 = Instant::now();
    loop {
        let scratch = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("wblab-measure-"));
        if let Some(s) = scratch.filter(|s| s.join("mnt/d/w0").exists()) {
            return Ok(s);
        }
        if let Some(status) = child.try_wait().unwrap() {
            return Err(format!(
                "the measurement ended ({status}) before its workload started; it said:\n{}",
                said(dir)
            ));
        }
        // Before its workload a measurement may wait twice for freed memory to go back to the
        // host (before and after timing its first touch), a minute each at most, and write
        // up to 2 GiB to time it: on a machine that has just freed many GiB (a build beside
        // it), that is the time it takes.
        let limit = 2 * wblab_probe::memtouch::SETTLE_MAX + Duration::from_secs(60);
        assert!(t0.elapsed() < limit, "the workload never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(t0.elapsed() < limit, "{what}: the measurement did not end within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Nothing of the run is left: no scratch directory, no journal, no state directory (waiting
/// up to `limit` for a watchdog to finish).
fn assert_undone(dir: &Path, scratch: &Path, limit: Duration, what: &str) {
    let t0 = Instant::now();
    while scratch.exists() || dir.join("state").exists() {
        assert!(
            t0.elapsed() < limit,
            "{what}: left behind: scratch {} {}, state {:?}",
            scratch.display(),
            scratch.exists(),
            std::fs::read_dir(dir.join("state"))
                .map(|r| r.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
                .ok()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn one(sig: libc::c_int) -> Result<(), String> {
    let t = tmp(&format!("sig{sig}"));
    let mut child = start(&t.0, None);
    let scratch = wait_for_workload(&t.0, &mut child).map_err(|e| format!("signal {sig}: {e}"))?;
    // SAFETY: a plain kill of our child.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    let status = wait(&mut child, Duration::from_secs(60), &format!("signal {sig}"));
    let caught = wblab_probe::guard::caught().contains(&sig);
    if caught {
        // An orderly stop: exit 128 + the signal, partial results saying so.
        if status.code() != Some(128 + sig) {
            return Err(format!(
                "signal {sig}: exit {status:?}, want {}; it said:\n{}",
                128 + sig,
                said(&t.0)
            ));
        }
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(t.0.join("out/machine.json")).map_err(|e| format!("signal {sig}: {e}"))?)
                .unwrap();
        if m["interrupted"].as_str() != Some(wblab_probe::guard::signal_name(sig).as_str()) {
            return Err(format!("signal {sig}: machine.json says {}", m["interrupted"]));
        }
        if m.get("memory_touch").is_some() {
            return Err(format!("signal {sig}: --no-memory-touch, yet machine.json has a memory_touch"));
        }
    } else {
        use std::os::unix::process::ExitStatusExt;
        if status.signal() != Some(sig) {
            return Err(format!("signal {sig}: {status:?}"));
        }
    }
    assert_undone(&t.0, &scratch, Duration::from_secs(60), &format!("signal {sig}"));
    Ok(())
}

#[test]
fn every_signal_that_ends_a_measurement_undoes_it() {
    let mut signals = wblab_probe::guard::caught();
    // The real-time signals behave alike: their ends stand for them.
    let (lo, hi) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    signals.retain(|&s| s <= lo || s == hi);
    // And those that end it at once, for the watchdog. (A SIGSEGV or SIGBUS sent with kill
    // does not: Rust's stack-overflow handler takes the first one and the run goes on.)
    signals.extend([libc::SIGKILL, libc::SIGABRT, libc::SIGSYS, libc::SIGTRAP]);
    // Four at a time: the machine has two cores and other work.
    let mut failures = Vec::new();
    for chunk in signals.chunks(4) {
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let hs: Vec<_> = chunk.iter().map(|&sig| s.spawn(move || one(sig))).collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
                .collect()
        });
        failures.extend(results.into_iter().filter_map(Result::err));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_panic_undoes_the_measurement_as_it_unwinds() {
    for stage in ["setup", "workload"] {
        let t = tmp(&format!("panic-{stage}"));
        let mut child = start(&t.0, Some(stage));
        let status = wait(&mut child, Duration::from_secs(60), stage);
        assert!(!status.success(), "{stage}: the injected panic did not end the run");
        let left: Vec<_> = std::fs::read_dir(&t.0)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("wblab-measure-"))
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "{stage}: scratch left: {left:?}");
        assert!(!t.0.join("state").exists(), "{stage}: the state directory is left");
    }
}

/// A journal left by a run nobody undid stops the next measurement until `--restore`.
#[test]
fn a_pending_journal_stops_the_next_measurement_until_restore() {
    let t = tmp("pending");
    let state = t.0.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let scratch = t.0.join("wblab-measure-1-2");
    std::fs::create_dir(&scratch).unwrap();
    std::fs::write(scratch.join(wblab_probe::journal::SCRATCH_MARKER), "").unwrap();
    let entries = [
        wblab_probe::journal::Entry::Run { pid: 1, started_unix: 0 },
        wblab_probe::journal::Entry::Scratch { path: scratch.clone() },
    ];
    let text: String = entries.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    std::fs::write(state.join("measure.journal"), text).unwrap();
    let sc = t.0.join("sig.toml");
    std::fs::write(&sc, SCENARIO).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_wblab"))
            .args(args)
            .env("WBLAB_STATE_DIR", &state)
            .output()
            .unwrap()
    };
    let o = run(&[
        "measure",
        "--unprivileged",
        "--out",
        t.0.join("out").to_str().unwrap(),
        sc.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("wblab measure --restore"), "{err}");
    let o = run(&["measure", "--restore"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!scratch.exists() && !state.exists());
}

/// A state directory someone else could have prepared is refused, not used.
#[test]
fn a_state_directory_others_can_write_is_refused() {
    let t = tmp("state");
    let state = t.0.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let sc = t.0.join("sig.toml");
    std::fs::write(&sc, SCENARIO).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_wblab"))
        .args(["measure", "--unprivileged", "--scratch"])
        .arg(&t.0)
        .arg("--out")
        .arg(t.0.join("out"))
        .arg(&sc)
        .env("WBLAB_STATE_DIR", &state)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("is writable by others"), "{err}");
    let link = t.0.join("link");
    std::os::unix::fs::symlink(&state, &link).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_wblab"))
        .args(["measure", "--restore"])
        .env("WBLAB_STATE_DIR", &link)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `measure-out-symlink.sh`: a results directory holding a link to another file gets a new
/// file of that name; the link's target is untouched.
#[test]
fn results_are_never_written_through_a_link_in_the_results_directory() {
    let t = tmp("out-link");
    let out = t.0.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("summary.json"), "{}").unwrap();
    let victim = t.0.join("victim");
    std::fs::write(&victim, "VICTIM ORIGINAL").unwrap();
    std::os::unix::fs::symlink(&victim, out.join("timeseries.csv")).unwrap();
    let sc = t.0.join("sig.toml");
    std::fs::write(&sc, SCENARIO.replace("60s", "1s")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_wblab"))
        .args(["measure", "--unprivileged", "--quiet", "--scratch"])
        .arg(&t.0)
        .arg("--out")
        .arg(&out)
        .arg(&sc)
        .env("WBLAB_STATE_DIR", t.0.join("state"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "VICTIM ORIGINAL");
    let ts = out.join("timeseries.csv");
    assert!(!std::fs::symlink_metadata(&ts).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(&ts).unwrap().starts_with("t_s,"));
    // A link on the path to the results is refused before anything is done.
    let link = t.0.join("link");
    std::os::unix::fs::symlink(&t.0, &link).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_wblab"))
        .args(["measure", "--unprivileged", "--quiet", "--out"])
        .arg(link.join("out2"))
        .arg(&sc)
        .env("WBLAB_STATE_DIR", t.0.join("state"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is a symbolic link") && !t.0.join("out2").exists(), "{err}");
}
