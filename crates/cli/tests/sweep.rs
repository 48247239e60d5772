//! `wblab run` of a file with a `[sweep]`: a table of every point, and with `--runs` one
//! results directory per point.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// An empty scratch directory for one test.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn wblab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wblab")).args(args).output().expect("wblab runs")
}

/// `wblab run FILE --out OUT --runs --no-report -q ARGS...`, which must succeed: its stdout.
fn run_sweep_with(file: &Path, out: &Path, args: &[&str]) -> String {
    let mut a = vec![
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--runs",
        "--no-report",
        "-q",
    ];
    a.extend_from_slice(args);
    let o = wblab(&a);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{text}\n{}", String::from_utf8_lossy(&o.stderr));
    text
}

/// [`run_sweep_with`] no more arguments.
fn run_sweep(file: &Path, out: &Path) -> String {
    run_sweep_with(file, out, &[])
}

/// `wblab check FILE`.
fn check(file: &Path) -> Output {
    wblab(&["check", file.to_str().unwrap()])
}

#[test]
fn sweep_runs_each_value_and_prints_a_table() {
    let dir = fresh_dir("sweep");
    let file = dir.join("s.toml");
    fs::write(
        &file,
        r#"kernel = "2.5.38"
duration = "4s"
[[device]]
name = "hda"
queue_depth = 1
[sweep]
"queue/iosched/fifo_batch" = [64, 16]
[[task]]
name = "dd"
job = "dd"
[[task]]
name = "cat-c"
job = "launch"
files = 10
file_sizes = ["4KiB", "12KiB"]
start = "1s"
"#,
    )
    .unwrap();
    let out = dir.join("out");
    let text = run_sweep(&file, &out);
    assert!(text.contains("sweep of queue/iosched/fifo_batch (kernel 2.5.38)"), "{text}");
    assert!(text.contains("cat-c time s"), "{text}");
    for v in ["64", "16"] {
        assert!(text.lines().any(|l| l.trim_start().starts_with(v)), "{v}: {text}");
        let summary = fs::read_to_string(out.join(format!("fifo_batch={v}/summary.json"))).unwrap();
        assert!(summary.contains(&format!("\"fifo_batch\": {v}")), "{v}");
        assert!(summary.contains("deadline-2002"));
    }
    // `wblab check` accepts the file (every value is checked).
    let c = check(&file);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
}

/// The ready write-cache question: a sweep over `queue/write_cache` whose table gives the
/// commit probe's fsync latency (not its run time), higher where fsync ends with a flush.
#[test]
fn write_cache_sweep_prints_fsync_latency() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sweep-write-cache");
    let _ = fs::remove_dir_all(&dir);
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fsync-write-cache.toml");
    let text = run_sweep(&file, &dir);
    assert!(text.contains("commit fsync() p50/p99 ms"), "{text}");
    let p50 = |label: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row: {text}"));
        let cell = line.split_whitespace().last().unwrap();
        cell.split('/').next().unwrap().parse().unwrap_or_else(|_| panic!("{cell}"))
    };
    let (flushed, trusted) = (p50("write back"), p50("write through"));
    assert!(flushed > 1.2 * trusted, "fsync p50 {flushed} ms with flushes, {trusted} ms without");
    let _ = fs::remove_dir_all(&dir);
}

/// A sweep of a `vm.*` sysctl (written unquoted, as a nested table) beside a device knob:
/// each run gets the value in `[sysctl]`, the ratio it replaces goes as writing the sysctl
/// zeroes it, and a larger dirty limit lets a copy on a disk buffer more.
#[test]
fn sweep_of_a_sysctl_writes_it_into_each_run() {
    let dir = fresh_dir("sweep-sysctl");
    let file = dir.join("s.toml");
    fs::write(
        &file,
        r#"duration = "10s"
[sysctl]
"vm.dirty_ratio" = 20
[[device]]
name = "sda"
model = "hdd"
[sweep]
vm.dirty_bytes = ["64MiB", "1GiB"]
"queue/scheduler" = ["mq-deadline", "kyber"]
[[task]]
name = "copy"
job = "dd"
"#,
    )
    .unwrap();
    let out = dir.join("out");
    let text = run_sweep(&file, &out);
    assert!(text.contains("sweep of vm.dirty_bytes × queue/scheduler"), "{text}");
    let mut written = Vec::new();
    for (v, bytes) in [("64MiB", 64u64 << 20), ("1GiB", 1 << 30)] {
        for s in ["mq-deadline", "kyber"] {
            let p = out.join(format!("vm.dirty_bytes={v},scheduler={s}/summary.json"));
            let j: serde_json::Value = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
            let sysctl = &j["scenario"]["sysctl"];
            assert_eq!(sysctl["dirty_bytes"].as_u64(), Some(bytes), "{v}/{s}");
            assert_eq!(sysctl["dirty_ratio"].as_u64(), Some(0), "{v}/{s}: the ratio is replaced");
            assert_eq!(j["scenario"]["devices"][0]["queue"]["scheduler"], s);
            written.push(j["tasks"][0]["bytes_written"].as_u64().unwrap());
        }
    }
    assert!(written[2] > written[0], "a 1 GiB limit buffers more of the copy: {written:?}");
    // sweep.csv: one row per point and task group, a column per swept key, units in headers.
    let csv = fs::read_to_string(out.join("sweep.csv")).unwrap();
    let lines: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(&lines[0][..5], ["point", "vm.dirty_bytes", "queue/scheduler", "group", "job"]);
    assert!(lines[0].contains(&"pause_p99_ms") && lines[0].contains(&"op_p99_ms"), "{csv}");
    assert_eq!(lines.len(), 1 + 4, "{csv}");
    let bytes_col = lines[0].iter().position(|h| *h == "mb_written").unwrap();
    for (row, w) in lines[1..].iter().zip(&written) {
        assert_eq!(row.len(), lines[0].len(), "{csv}");
        assert_eq!(row[3], "copy");
        assert_eq!(
            row[bytes_col],
            format!("{:.3}", *w as f64 / 1e6),
            "the CSV carries the run's figure"
        );
    }
    let dev = fs::read_to_string(out.join("sweep-devices.csv")).unwrap();
    assert_eq!(dev.lines().count(), 1 + 4, "{dev}");
    assert!(dev
        .lines()
        .next()
        .unwrap()
        .ends_with("device,model,util_pct,write_mb_s,read_mb_s,request_p50_ms,request_p99_ms"));
    // A bad value is reported at its place in the array.
    fs::write(
        &file,
        "[[device]]\nname = \"sda\"\n[sweep]\n\"vm.dirty_bytes\" = [\"64MiB\", \"2KiB\"]\n[[task]]\nname = \"copy\"\njob = \"dd\"\n",
    )
    .unwrap();
    let c = check(&file);
    let err = String::from_utf8_lossy(&c.stderr);
    assert!(
        !c.status.success() && err.contains(":4:30:") && err.contains("vm.dirty_bytes"),
        "{err}"
    );
}

/// The points of a sweep share the cores: a 3-key grid and a random sweep give the same
/// table (CSV and Parquet, byte for byte) and the same runs run one at a time or in
/// parallel, whichever point finishes first.
#[test]
fn sweeps_give_the_same_rows_serially_and_in_parallel() {
    let dir = fresh_dir("sweep-determinism");
    let grid = dir.join("grid.toml");
    let base = "duration = \"3s\"\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n\
         [[task]]\nname = \"copy\"\njob = \"dd\"\ncount = 2\nfile = \"/mnt/sda/f{n}\"\n[[task]]\nname = \"reader\"\njob = \"randread\"\nfile = \"/mnt/sda/db\"\n";
    fs::write(
        &grid,
        format!(
            "{base}[sweep]\n\"queue/scheduler\" = [\"none\", \"mq-deadline\", \"kyber\"]\n\"vm.dirty_bytes\" = [\"32MiB\", \"256MiB\"]\n\
             \"queue/wbt_lat_usec\" = [0, 2000]\n"
        ),
    )
    .unwrap();
    let random = dir.join("random.toml");
    fs::write(
        &random,
        format!(
            "{base}[sweep]\nrandom = {{ points = 9, seed = 11 }}\n\"vm.dirty_bytes\" = {{ min = \"16MiB\", max = \"1GiB\", log = true }}\n\
             \"queue/scheduler\" = [\"mq-deadline\", \"bfq\"]\n\"queue/nr_requests\" = {{ min = 4, max = 256 }}\n"
        ),
    )
    .unwrap();
    for (file, points) in [(&grid, 12), (&random, 9)] {
        let run = |jobs: &str| {
            let out = dir.join(format!("{}-j{jobs}", file.file_stem().unwrap().to_str().unwrap()));
            // The table, without the lines on timing and the output directory.
            let text = run_sweep_with(file, &out, &["-j", jobs]);
            let table: Vec<String> = text
                .lines()
                .filter(|l| !l.starts_with("results:") && !l.contains("points/s"))
                .map(String::from)
                .collect();
            (out, table)
        };
        let ((a, ta), (b, tb)) = (run("1"), run("3"));
        assert_eq!(ta, tb, "the table");
        let csv = fs::read_to_string(a.join("sweep.csv")).unwrap();
        let first: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
        assert_eq!(first.len(), points * 2, "a row per point and group: {csv}");
        assert!(
            first
                .windows(2)
                .all(|w| w[0].parse::<u64>().unwrap() <= w[1].parse::<u64>().unwrap()),
            "sweep order"
        );
        for f in ["sweep.csv", "sweep-devices.csv", "sweep.parquet", "sweep-devices.parquet"] {
            assert_eq!(fs::read(a.join(f)).unwrap(), fs::read(b.join(f)).unwrap(), "{f}");
        }
        // Every point's own run is the same too.
        let mut dirs: Vec<_> = fs::read_dir(&a)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name())
            .collect();
        dirs.sort();
        assert_eq!(dirs.len(), points, "{dirs:?}");
        for d in &dirs {
            for f in ["trace.txt", "timeseries.csv", "histograms.json"] {
                assert_eq!(
                    fs::read(a.join(d).join(f)).unwrap(),
                    fs::read(b.join(d).join(f)).unwrap(),
                    "{d:?}/{f}"
                );
            }
        }
    }
}

/// `--maximize`/`--where` rank a sweep's points by their own figures; an unknown figure is
/// refused before anything runs, and a file without a sweep has nothing to rank.
#[test]
fn objectives_rank_the_points_that_meet_the_constraints() {
    let dir = fresh_dir("sweep-objectives");
    let file = dir.join("s.toml");
    fs::write(
        &file,
        "duration = \"8s\"\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n[sweep]\n\"vm.dirty_bytes\" = [\"32MiB\", \"256MiB\", \"1GiB\"]\n\
         [[task]]\nname = \"copy\"\njob = \"dd\"\n[[task]]\nname = \"reader\"\njob = \"randread\"\nfile = \"/mnt/sda/db\"\nstart = \"1s\"\n",
    )
    .unwrap();
    let ranked_run = |args: &[&str]| {
        let mut a = vec!["run", file.to_str().unwrap(), "--runs", "--no-report", "-q", "--out"];
        let out = dir.join("out");
        a.push(out.to_str().unwrap());
        a.extend_from_slice(args);
        let o = wblab(&a);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (code, text, err) = ranked_run(&["--maximize", "copy.throughput", "--where", "copy.throughput >= 0.5*best"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(text.contains("maximize copy.throughput_mb_s, best first"), "{text}");
    // The first ranked point is the one whose summary has the largest throughput.
    let best = ["32MiB", "256MiB", "1GiB"]
        .into_iter()
        .max_by(|a, b| {
            let mb = |v: &str| -> f64 {
                let s = fs::read_to_string(dir.join(format!("out/vm.dirty_bytes={v}/summary.json"))).unwrap();
                let j: serde_json::Value = serde_json::from_str(&s).unwrap();
                j["tasks"].as_array().unwrap().iter().find(|t| t["name"] == "copy").unwrap()["throughput_mb_s"]
                    .as_f64()
                    .unwrap()
            };
            mb(a).total_cmp(&mb(b))
        })
        .unwrap();
    let ranked = text.lines().skip_while(|l| !l.starts_with("maximize")).nth(2).unwrap_or_default();
    assert!(
        ranked.trim_start().starts_with(best),
        "best point {best}, ranked first: {ranked}\n{text}"
    );
    let (code, _, err) = ranked_run(&["--minimize", "reader.op_p99"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("unknown figure `reader.op_p99`") && err.contains("did you mean"),
        "{err}"
    );
    let plain = dir.join("plain.toml");
    fs::write(&plain, "duration = \"1s\"\n[[task]]\nname = \"copy\"\njob = \"dd\"\n").unwrap();
    let o = wblab(&["run", plain.to_str().unwrap(), "--no-report", "-q", "--maximize", "copy.throughput"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("has no [sweep]"));
}

/// A task's key swept by the task's name: each run has that many writers, and a name no task
/// has is refused at its place.
#[test]
fn a_task_key_is_swept_in_the_task_of_that_name() {
    let dir = fresh_dir("sweep-task");
    let file = dir.join("s.toml");
    let text = "duration = \"4s\"\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n[sweep]\ntask.copy.count = [1, 4]\n\
                [[task]]\nname = \"copy\"\njob = \"dd\"\nfile = \"/mnt/sda/f{n}\"\n";
    fs::write(&file, text).unwrap();
    let out = dir.join("out");
    run_sweep(&file, &out);
    for n in [1usize, 4] {
        let s = fs::read_to_string(out.join(format!("count={n}/summary.json"))).unwrap();
        let j: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(j["tasks"].as_array().unwrap().len(), n, "count={n}");
    }
    fs::write(&file, text.replace("task.copy.count", "task.cp.count")).unwrap();
    let c = check(&file);
    let err = String::from_utf8_lossy(&c.stderr);
    assert!(
        !c.status.success() && err.contains(":6:") && err.contains("no [[task]] is named `cp`") && err.contains("`copy`"),
        "{err}"
    );
}

/// `kernel` as a sweep axis: each run simulates its release's generation, and a release that
/// is not modelled is refused at its place in the array.
#[test]
fn the_kernel_is_a_sweep_axis() {
    let dir = fresh_dir("sweep-kernel");
    let file = dir.join("s.toml");
    let text = "duration = \"4s\"\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n[sweep]\nkernel = [\"2.6.38\", \"6.x\"]\n\
                [[task]]\nname = \"dd\"\njob = \"dd\"\n";
    fs::write(&file, text).unwrap();
    let out = dir.join("out");
    assert!(run_sweep(&file, &out).starts_with("sweep of kernel\n"));
    for (k, generation) in [("2.6.38", "2.6.38"), ("6.x", "6.x")] {
        let s = fs::read_to_string(out.join(format!("kernel={k}/summary.json"))).unwrap();
        let j: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(j["scenario"]["kernel"], k);
        assert_eq!(j["scenario"]["policy"]["generation"], generation);
    }
    fs::write(&file, text.replace("\"6.x\"]", "\"9.9\"]")).unwrap();
    let c = check(&file);
    let err = String::from_utf8_lossy(&c.stderr);
    assert!(
        !c.status.success() && err.contains(":6:21:") && err.contains("`9.9` is not modelled"),
        "{err}"
    );
}

/// A copy on an HDD for 3 s, swept by `sweep` (the `[sweep]` table's lines), in a fresh
/// directory `name`: the directory and the file.
fn copy_sweep(name: &str, sweep: &str) -> (PathBuf, PathBuf) {
    let dir = fresh_dir(name);
    let file = dir.join("s.toml");
    let base = "duration = \"3s\"\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n[[task]]\nname = \"copy\"\njob = \"dd\"\n";
    fs::write(&file, format!("{base}[sweep]\n{sweep}")).unwrap();
    (dir, file)
}

/// `wblab sweep FILE -q --out OUT ARGS...`: its exit code, stdout and stderr.
fn sweep_cmd(file: &Path, out: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut a = vec!["sweep", file.to_str().unwrap(), "-q", "--out", out.to_str().unwrap()];
    a.extend_from_slice(args);
    let o = wblab(&a);
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

/// A stopped sweep resumes: the points already in sweep.csv (same index, same values) are
/// kept, a row cut short is dropped and its point runs again, and the table ends as a sweep
/// run in one go would leave it. Rows of another sweep are refused, not mixed in.
#[test]
fn a_sweep_resumes_from_the_points_in_its_table() {
    let (dir, file) = copy_sweep(
        "sweep-resume",
        "random = { points = 12, seed = 5 }\n\"vm.dirty_bytes\" = { min = \"16MiB\", max = \"1GiB\", log = true }\n",
    );
    let run = |out: &Path, extra: &[&str]| {
        let (code, text, err) = sweep_cmd(&file, out, extra);
        assert_eq!(code, Some(0), "{err}");
        text
    };
    let (whole, part) = (dir.join("whole"), dir.join("part"));
    run(&whole, &[]);
    let full = fs::read_to_string(whole.join("sweep.csv")).unwrap();
    // As if stopped: the header, 5 points' rows, and half of the sixth's.
    let lines: Vec<&str> = full.lines().collect();
    let cut = format!("{}\n{}", lines[..6].join("\n"), &lines[6][..lines[6].len() / 2]);
    fs::create_dir_all(&part).unwrap();
    fs::write(part.join("sweep.csv"), cut).unwrap();
    fs::copy(whole.join("sweep-devices.csv"), part.join("sweep-devices.csv")).unwrap();
    let text = run(&part, &["--resume"]);
    assert!(
        text.contains("7 points in") && text.contains("5 kept from the earlier run"),
        "{text}"
    );
    for f in ["sweep.csv", "sweep-devices.csv", "sweep.parquet"] {
        assert_eq!(fs::read(whole.join(f)).unwrap(), fs::read(part.join(f)).unwrap(), "{f}");
    }
    // Another sweep's table is not resumed into.
    fs::write(part.join("sweep.csv"), full.replace("vm.dirty_bytes", "vm.dirty_ratio")).unwrap();
    let (code, _, err) = sweep_cmd(&file, &part, &["--resume"]);
    assert!(code != Some(0) && err.contains("cannot resume") && err.contains("hint:"), "{err}");
}

/// `--resume` checks what it keeps (the finding of sweep-resume-trusts-csv.sh): duplicated
/// rows, a point missing a row and rows out of order are dropped and their points run again,
/// with a note, so the tables end byte for byte as a sweep run in one go. A table that is not
/// text or not a file is refused with its name and a hint, and no "--resume runs the rest".
#[test]
fn resume_drops_rows_it_cannot_trust_and_refuses_what_is_no_table() {
    let (dir, file) = copy_sweep(
        "sweep-resume-damaged",
        "\"vm.dirty_bytes\" = { min = \"16MiB\", max = \"512MiB\", steps = 3, log = true }\n\"queue/wbt_lat_usec\" = [0, 75000]\n",
    );
    fs::write(
        &file,
        fs::read_to_string(&file).unwrap().replace(
            "[sweep]",
            "[[task]]\nname = \"r\"\njob = \"randread\"\nfile_size = \"64MiB\"\n[sweep]",
        ),
    )
    .unwrap();
    let whole = dir.join("whole");
    let (code, _, err) = sweep_cmd(&file, &whole, &[]);
    assert_eq!(code, Some(0), "{err}");
    let full = fs::read_to_string(whole.join("sweep.csv")).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    assert_eq!(lines.len(), 1 + 6 * 2, "{full}");
    let damaged = [
        ("dup", format!("{full}{}\n", lines[1..].join("\n"))),
        ("half", full.replace(&format!("{}\n", lines[8]), "")),
        (
            "reorder",
            format!(
                "{}\n{}\n",
                lines[0],
                lines[1..].iter().rev().copied().collect::<Vec<_>>().join("\n")
            ),
        ),
    ];
    for (name, text) in damaged {
        let out = dir.join(name);
        fs::create_dir_all(&out).unwrap();
        fs::write(out.join("sweep.csv"), text).unwrap();
        fs::copy(whole.join("sweep-devices.csv"), out.join("sweep-devices.csv")).unwrap();
        let o = wblab(&["sweep", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--resume"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name}: {err}");
        assert!(
            err.contains("were incomplete, duplicated, out of order or not this sweep's"),
            "{name}: {err}"
        );
        for f in ["sweep.csv", "sweep-devices.csv", "sweep.parquet", "sweep-devices.parquet"] {
            assert!(fs::read(whole.join(f)).unwrap() == fs::read(out.join(f)).unwrap(), "{name}: {f}");
        }
    }
    let bad = dir.join("bad");
    fs::create_dir_all(&bad).unwrap();
    fs::write(bad.join("sweep.csv"), b"point,\xff\n").unwrap();
    fs::copy(whole.join("sweep-devices.csv"), bad.join("sweep-devices.csv")).unwrap();
    let (code, _, err) = sweep_cmd(&file, &bad, &["--resume"]);
    assert!(
        code == Some(1) && err.contains("sweep.csv: cannot resume: not UTF-8") && err.contains("hint:"),
        "{err}"
    );
    assert!(!err.contains("runs the rest"), "{err}");
    fs::remove_file(bad.join("sweep.csv")).unwrap();
    fs::create_dir_all(bad.join("sweep.csv")).unwrap();
    for args in [&["--resume"][..], &[]] {
        let (code, _, err) = sweep_cmd(&file, &bad, args);
        assert!(
            code == Some(1) && err.contains("sweep.csv: not a regular file") && err.contains("hint:"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("runs the rest"), "{err}");
    }
}

/// A sweep of more than 256 points is checked on each key's every value, not on every
/// combination (repro t3 sweep-late-invalid-point.toml): a point whose combination is not a
/// valid scenario is listed in sweep-invalid.csv with its reason and the sweep goes on, so it
/// finishes (exit 0, with a warning even when quiet), and so does --resume.
#[test]
fn an_invalid_combination_is_listed_and_the_sweep_goes_on() {
    let dir = fresh_dir("sweep-late-invalid");
    let file = dir.join("late.toml");
    fs::write(
        &file,
        "name = \"late\"\nduration = \"1s\"\n[[device]]\nname = \"sda\"\nmodel = \"ssd\"\n[[task]]\nname = \"w\"\njob = \"dd\"\nsize = \"1MiB\"\n\
         [sweep]\nduration = [\"3s\", \"1s\"]\n\"task/w/start\" = [\"0s\", \"1500ms\"]\n\"vm.dirty_ratio\" = { min = 1, max = 60, steps = 150 }\n",
    )
    .unwrap();
    let c = check(&file);
    assert!(c.status.success() && String::from_utf8_lossy(&c.stdout).contains("listed in sweep-invalid.csv"));
    let out = dir.join("out");
    let (code, text, err) = sweep_cmd(&file, &out, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("error:"), "{err}");
    assert!(
        err.contains("warning: 150 of the 600 points are not valid scenarios")
            && err.contains("sweep-invalid.csv")
            && err.contains("point 450: ")
            && err.contains("late.toml:12:25: key `start`")
            && err.contains("starts at or after the end of the run"),
        "{err}"
    );
    assert!(text.contains("450 points in") && text.contains("sweep-invalid.csv"), "{text}");
    let invalid = fs::read_to_string(out.join("sweep-invalid.csv")).unwrap();
    let lines: Vec<&str> = invalid.lines().collect();
    assert_eq!(lines[0], "point,duration,task/w/start,vm.dirty_ratio,reason");
    assert_eq!(lines.len(), 151);
    assert!(
        lines[1].starts_with("450,1s,1500ms,1,") && lines[150].starts_with("599,1s,1500ms,60,"),
        "{invalid}"
    );
    let table = fs::read_to_string(out.join("sweep.csv")).unwrap();
    let points: std::collections::BTreeSet<&str> = table.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(points.len(), 450);
    // Stopped before the invalid points: --resume runs them (again found invalid) and ends
    // with the same files.
    let part = dir.join("part");
    fs::create_dir_all(&part).unwrap();
    let keep: String = fs::read_to_string(out.join("sweep.csv"))
        .unwrap()
        .lines()
        .take(101)
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(part.join("sweep.csv"), keep).unwrap();
    fs::copy(out.join("sweep-devices.csv"), part.join("sweep-devices.csv")).unwrap();
    let (code, text, err) = sweep_cmd(&file, &part, &["--resume"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(text.contains("100 kept from the earlier run"), "{text}");
    for f in ["sweep.csv", "sweep-devices.csv", "sweep.parquet", "sweep-invalid.csv"] {
        assert!(fs::read(out.join(f)).unwrap() == fs::read(part.join(f)).unwrap(), "{f}");
    }
    // A sweep with no invalid point leaves no sweep-invalid.csv behind.
    let fixed = fs::read_to_string(&file).unwrap().replace("\"1500ms\"]", "\"500ms\"]");
    fs::write(&file, fixed).unwrap();
    let (code, _, err) = sweep_cmd(&file, &out, &[]);
    assert!(code == Some(0) && !err.contains("warning"), "{err}");
    assert!(!out.join("sweep-invalid.csv").exists());
}

/// `--plot` draws a figure against a key, a line per value of the other key; a figure or a
/// key the sweep does not have is refused before anything runs; `wblab sweep` wants a sweep.
#[test]
fn plot_draws_a_figure_against_a_key() {
    let (dir, file) = copy_sweep(
        "sweep-plot",
        "\"vm.dirty_bytes\" = { min = \"16MiB\", max = \"256MiB\", steps = 3, log = true }\n\"queue/scheduler\" = [\"mq-deadline\", \"bfq\"]\n",
    );
    let out = dir.join("out");
    let (code, _, err) = sweep_cmd(&file, &out, &["--plot", "copy.throughput", "--x", "dirty_bytes"]);
    assert_eq!(code, Some(0), "{err}");
    let svg = fs::read_to_string(out.join("sweep-copy.throughput_mb_s.svg")).unwrap();
    assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{}", &svg[..80]);
    assert!(svg.contains("vm.dirty_bytes (MiB)"), "sizes are drawn in MiB");
    for line in ["scheduler=mq-deadline", "scheduler=bfq"] {
        assert!(svg.contains(line), "a line per scheduler: {line}");
    }
    for (args, want) in [
        (vec!["--plot", "copy.nothing"], "no such figure"),
        (vec!["--plot", "copy.throughput", "--x", "fifo_batch"], "not a key of this sweep"),
    ] {
        let (code, _, err) = sweep_cmd(&file, &out, &args);
        assert!(code == Some(2) && err.contains(want), "{err}");
    }
    let plain = dir.join("plain.toml");
    fs::write(&plain, "duration = \"1s\"\n[[task]]\nname = \"copy\"\njob = \"dd\"\n").unwrap();
    let o = wblab(&["sweep", plain.to_str().unwrap()]);
    assert!(o.status.code() == Some(2) && String::from_utf8_lossy(&o.stderr).contains("has no [sweep]"));
}
