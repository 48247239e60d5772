//! A results directory is input like any other: a summary.json of the wrong shape is refused
//! naming the field, a FIFO or a directory in place of a file is refused without being opened
//! (opening a FIFO waits for a writer forever), and a file too large to read whole is refused
//! by its size.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use wblab_report::load::rundir::{check_summary, RunDir};

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile-results").join(name);
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn mkfifo(p: &Path) {
    let ok = std::process::Command::new("mkfifo").arg(p).status().expect("mkfifo runs").success();
    assert!(ok, "mkfifo {}", p.display());
}

/// `RunDir::load(dir)` on another thread, failing the test (not hanging it) after 30 s.
fn load_within(dir: &Path) -> Result<RunDir, String> {
    let (tx, rx) = mpsc::channel();
    let d = dir.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(RunDir::load(&d));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("loading {} blocked", dir.display()))
}

const SUMMARY: &str = r#"{"sim_seconds": 10.0, "wall_seconds": 0.5, "events": 100,
 "scenario": {"name": "rep", "kernel": "6.x", "seed": 1, "devices": [{"name": "sda", "major": 8, "minor": 0}]},
 "tasks": [{"name": "w", "instance": 0, "job": "dd", "pid": 1000, "device": "sda", "bytes_written": 1000000,
   "bytes_read": 0, "throughput_mb_s": 0.1, "pauses": {"count": 2, "p50_ms": 4.0, "max_ms": 8.0, "total_ms": 12.0},
   "op_latency_ms": {"count": 3, "p50": 0.1, "max": 1.5, "mean": 0.5}}],
 "devices": [{"name": "sda", "model": "hdd", "bytes_written": 1000000, "bytes_read": 0, "util": 0.5,
   "requests_written": 10, "requests_read": 0, "request_latency_ms": {"count": 10, "p50": 3.0}}]}"#;

#[test]
fn a_summary_of_the_wrong_shape_is_refused_naming_the_field() {
    let good: serde_json::Value = serde_json::from_str(SUMMARY).unwrap();
    check_summary(&good).unwrap();
    // An older build's or a measured run's summary may lack fields; what is there must fit.
    check_summary(&serde_json::json!({"sim_seconds": 1.0})).unwrap();
    let cases = [
        ("[1,2,3]", "is an array, not a JSON object"),
        ("{}", "has no `sim_seconds`"),
        (r#"{"sim_seconds": "ten"}"#, "`sim_seconds` is \"ten\", not a number"),
        (r#"{"sim_seconds": 1, "tasks": 5}"#, "`tasks` is 5, not an array"),
        (r#"{"sim_seconds": 1, "tasks": [7]}"#, "`tasks[0]` is 7, not an object"),
        (r#"{"sim_seconds": 1e308}"#, "`sim_seconds` is 1e308, beyond any figure"),
        (r#"{"sim_seconds": 1, "devices": [{"util": 1e308}]}"#, "`devices[0].util` is 1e308"),
        (r#"{"sim_seconds": 1, "tasks": [{"pid": -1}]}"#, "`tasks[0].pid` is -1"),
        (
            r#"{"sim_seconds": 1, "tasks": [{"pauses": {"p99_ms": "slow"}}]}"#,
            "`tasks[0].pauses.p99_ms` is \"slow\"",
        ),
        (
            r#"{"sim_seconds": 1, "scenario": {"name": 3}}"#,
            "`scenario.name` is 3, not a string",
        ),
        (
            r#"{"sim_seconds": 1, "cgroups": [{"high_delay_ms": -1e300}]}"#,
            "`cgroups[0].high_delay_ms`",
        ),
    ];
    for (text, want) in cases {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let e = check_summary(&v).expect_err(text);
        assert!(e.contains(want), "{text}: {e}");
    }
    // Through the loader: the file is named.
    let dir = scratch("wrong-shape");
    fs::write(dir.join("summary.json"), "[1,2,3]").unwrap();
    let e = load_within(&dir).err().unwrap();
    assert!(e.contains(&format!("{}/summary.json: is an array", dir.display())), "{e}");
}

#[test]
fn files_that_are_not_regular_are_refused_without_opening_them() {
    // summary.json a FIFO: an error naming it.
    let dir = scratch("fifo-summary");
    mkfifo(&dir.join("summary.json"));
    let e = load_within(&dir).err().unwrap();
    assert!(e.contains("summary.json: is a FIFO"), "{e}");
    // summary.json a directory.
    let dir = scratch("dir-summary");
    fs::create_dir(dir.join("summary.json")).unwrap();
    assert!(load_within(&dir).err().unwrap().contains("summary.json: is a directory"));
    // trace.txt and latency.csv FIFOs: warnings naming them; the rest loads.
    let dir = scratch("fifo-trace");
    fs::write(dir.join("summary.json"), SUMMARY).unwrap();
    mkfifo(&dir.join("trace.txt"));
    mkfifo(&dir.join("latency.csv"));
    let r = load_within(&dir).unwrap();
    assert_eq!(r.tasks.len(), 1);
    for f in ["trace.txt", "latency.csv"] {
        assert!(
            r.warnings
                .iter()
                .any(|w| w == &format!("{f}: is a FIFO, not a file wblab writes (refused without reading it)")),
            "{:?}",
            r.warnings
        );
    }
}

#[test]
fn a_garbage_histograms_json_is_unreadable_not_missing() {
    let dir = scratch("garbage-histograms");
    fs::write(dir.join("summary.json"), SUMMARY).unwrap();
    let r = load_within(&dir).unwrap();
    assert!(r.why_not("histograms.json").ends_with("no histograms.json (written by wblab run)"));
    fs::write(dir.join("histograms.json"), "garbage").unwrap();
    let r = load_within(&dir).unwrap();
    let why = r.why_not("histograms.json");
    assert!(
        why.contains("histograms.json cannot be read: ") && !why.contains("no histograms.json"),
        "{why}"
    );
}

#[test]
fn a_file_too_large_to_read_whole_is_refused_by_its_size() {
    let dir = scratch("huge");
    // Sparse: the size is what counts, nothing is written.
    let f = fs::File::create(dir.join("summary.json")).unwrap();
    f.set_len(wblab_report::load::file::MAX_WHOLE_BYTES + 1).unwrap();
    let e = load_within(&dir).err().unwrap();
    assert!(e.contains("summary.json: 1.0 GiB, more than the 1 GiB wblab reads whole"), "{e}");
    fs::write(dir.join("summary.json"), b"{\"sim_seconds\": 1, \"x\": \"\xff\"}").unwrap();
    let e = load_within(&dir).err().unwrap();
    assert!(e.contains("summary.json: not UTF-8 text"), "{e}");
}
