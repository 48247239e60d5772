//! The `wblab` command as a user meets it: exit codes, error messages, results directories.

use crate::common::{repo_root, scratch, wblab};
use std::fs;

/// A short version of the default experiment, written as a user would.
/// `wblab run --quiet --no-report SCENARIO --out OUT`, which must succeed.
fn run_quietly(scenario: &std::path::Path, out: &std::path::Path) {
    run_quietly_with(scenario, out, &[]);
}

/// `wblab run --quiet --no-report` with `extra` arguments; its standard output.
fn run_quietly_with(scenario: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> String {
    let mut args = vec![
        "run",
        "--quiet",
        "--no-report",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = wblab(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn short() -> String {
    wblab_testkit::fixtures::writers_and_a_reader("short", 7)
}

#[test]
fn every_bad_scenario_exits_2_with_file_line_and_hint() {
    let dir = repo_root().join("crates/scenario/tests/bad");
    let mut n = 0;
    for e in fs::read_dir(&dir).expect("bad corpus exists") {
        let p = e.expect("dir entry").path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        n += 1;
        let out = wblab(&["run", "--quiet", p.to_str().expect("utf-8 path")]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: exit {:?}, stderr: {err}", p.display(), out.status);
        let fname = p.file_name().unwrap().to_string_lossy();
        assert!(err.contains(&*fname), "{}: error does not name the file: {err}", p.display());
        assert!(
            err.contains(&format!("{fname}:")),
            "{}: error has no line number: {err}",
            p.display()
        );
        assert!(!err.contains("panicked"), "{}: panic: {err}", p.display());
        assert!(out.stdout.is_empty(), "{}: printed results for a bad file", p.display());
    }
    assert!(n >= 20, "the bad-scenario corpus has only {n} files");
}

/// `wblab run | head`: the reader is gone by the time the table is printed, and wblab ends
/// as other tools do, killed by SIGPIPE, rather than panicking on the failed print.
#[test]
fn a_closed_pipe_ends_the_output_without_a_panic() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let out = scratch("pipe").join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wblab"))
        .args(["run", "--quiet", "--no-report", "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wblab");
    // Close the read end before the simulation ends and anything is printed.
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {err}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let out = wblab(&["run", "--quiet", "/nonexistent/scenario.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/scenario.toml"), "{err}");
}

#[test]
fn unknown_device_model_gets_a_hint() {
    let out = wblab(&["device", "hdx"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("hdd"), "{err}");
}

#[test]
fn same_scenario_and_seed_give_byte_identical_results() {
    let dir = scratch("determinism");
    let sc = dir.join("short.toml");
    fs::write(&sc, short()).unwrap();
    let a = dir.join("a");
    let b = dir.join("b");
    for out in [&a, &b] {
        let o = wblab(&[
            "run",
            "--quiet",
            "--trace-block",
            sc.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let mut names: Vec<_> = fs::read_dir(&a).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    for f in ["summary.json", "trace.txt", "timeseries.csv", "throttle.csv"] {
        assert!(names.iter().any(|n| n == f), "{f} missing from results");
    }
    for n in &names {
        let x = fs::read_to_string(a.join(n)).unwrap();
        let y = fs::read_to_string(b.join(n)).unwrap();
        assert!(!x.is_empty(), "{n:?} is empty");
        // wall_seconds is a wall-clock measurement, the one line allowed to differ.
        let strip = |s: &str| s.lines().filter(|l| !l.contains("\"wall_seconds\"")).collect::<Vec<_>>().join("\n");
        assert!(strip(&x) == strip(&y), "{n:?} differs between two identical runs");
    }
    // A different seed is a different experiment: the summary must say so.
    let c = dir.join("c");
    let o = wblab(&["run", "--quiet", sc.to_str().unwrap(), "--seed", "8", "--out", c.to_str().unwrap()]);
    assert!(o.status.success());
    let s: serde_json::Value = serde_json::from_str(&fs::read_to_string(c.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["scenario"]["seed"], 8);
}

#[test]
fn run_prints_a_table_and_json_has_every_task() {
    let dir = scratch("table");
    let sc = dir.join("short.toml");
    fs::write(&sc, short()).unwrap();
    let o = wblab(&["run", "--quiet", sc.to_str().unwrap(), "--out", dir.join("r").to_str().unwrap()]);
    assert!(o.status.success());
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("reader"), "{table}");
    assert!(table.contains("sda"), "{table}");

    let o = wblab(&[
        "run",
        "--quiet",
        "--json",
        sc.to_str().unwrap(),
        "--out",
        dir.join("j").to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json prints JSON");
    let tasks = v["tasks"].as_array().expect("tasks array");
    assert_eq!(tasks.len(), 3);
    let written: u64 = tasks.iter().map(|t| t["bytes_written"].as_u64().unwrap()).sum();
    let read: u64 = tasks.iter().map(|t| t["bytes_read"].as_u64().unwrap()).sum();
    assert!(written > 0 && read > 0, "writers wrote {written}, reader read {read}");
    // Every default is explicit in the resolved scenario.
    assert_eq!(v["scenario"]["sysctl"]["dirty_ratio"], 20);
    assert!(v["scenario"]["devices"][0]["queue"]["nr_requests"].as_u64().is_some());
}

#[test]
fn per_second_utilisation_agrees_with_the_run_total() {
    let dir = scratch("util");
    let sc = dir.join("short.toml");
    fs::write(&sc, short()).unwrap();
    let out = dir.join("r");
    run_quietly(&sc, &out);
    let csv = fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "sda_util_pct").expect("sda_util_pct column");
    let utils: Vec<f64> = lines.map(|l| l.split(',').nth(col).unwrap().parse().unwrap()).collect();
    assert!(utils.iter().all(|u| (0.0..=100.0).contains(u)), "{utils:?}");
    let mean = utils.iter().sum::<f64>() / utils.len() as f64;
    let s: serde_json::Value = serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let total = s["devices"][0]["util"].as_f64().unwrap() * 100.0;
    assert!((mean - total).abs() < 2.0, "per-second mean {mean:.1} % vs run {total:.1} %");
}

/// 100 writers against the real 6.18 measurement in `validation/` (v5): neither the kernel
/// nor the model keeps them within ±10 % of each other; the model's spread must be of the
/// same kind as the kernel's (within 1.5× of the measured spread either way). Most of the
/// spread is the start: the first dd spawned dirty freely before the others run (the
/// scenario's `stagger`). The rest is chaotic, so the model's figure is the median of three
/// seeds.
#[test]
fn hundred_writers_are_as_uneven_as_on_the_real_kernel() {
    let root = repo_root();
    let measured: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(root.join("validation/measured/v5-100dd-fairness/r1/summary.json")).unwrap()).unwrap();
    let spread = |s: &serde_json::Value| {
        let v: Vec<f64> = s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["bytes_written"].as_f64().unwrap())
            .collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
        (mean, sd / mean)
    };
    let text = fs::read_to_string(root.join("validation/v5-100dd-fairness.toml")).unwrap();
    assert!(text.contains("\"vm.dirty_bytes\" = \"400MiB\""), "the scenario's limit moved");
    // Three seeds: the wakeup noise and the spawn stagger make the split differ run to run.
    let mut sims: Vec<(f64, f64)> = ["1", "2", "3"]
        .iter()
        .map(|seed| {
            let dir = scratch(&format!("v5-seed{seed}"));
            fs::create_dir_all(&dir).unwrap();
            let file = dir.join("v5.toml");
            fs::write(&file, &text).unwrap();
            let out = dir.join("out");
            run_quietly_with(&file, &out, &["--seed", seed]);
            spread(&serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap())
        })
        .collect();
    sims.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (real_mean, real_cv) = spread(&measured);
    let (sim_mean, sim_cv) = sims[1];
    assert!(real_cv > 0.10, "the measurement itself: cv {real_cv:.3}");
    assert!(
        sim_cv >= real_cv / 1.5 && sim_cv <= real_cv * 1.5,
        "per-task cv (median of three seeds): wblab {sim_cv:.3}, kernel {real_cv:.3}; all: {sims:?}"
    );
    assert!(
        (sim_mean - real_mean).abs() <= 0.10 * real_mean,
        "mean bytes per task: wblab {sim_mean:.0}, kernel {real_mean:.0}"
    );
}

/// An fsync probe beside a copy on a loop device against the real 6.18 measurements in
/// `validation/` (v6: copy throttled to 32 MiB/s, its committed repeats; v8: unthrottled, then
/// idle, measured again on a quiet machine on 2026-12-02 with its block and jbd2 trace).
///
/// - v6's fsync p50 (3.8 s, the throttled data's) within 20 %.
/// - v8's jbd2 commits, start to end in both traces, within 30 %: a commit's two loop flushes
///   each write the image's metadata the commit's new log blocks dirtied, and the journal
///   thread wakes between its steps.
/// - v8's fsync p50 within 40 %, the model about 30 % fast: the kernel spends longer around the
///   commit (its data write after a 100 ms rest, the task's own wake-ups) than the model.
///
/// v6's commits (90–101 ms in the kernel, under 1 ms in the model) are not held: what makes
/// them slow behind a throttled copy is not found (`docs/validation.md`).
#[test]
fn fsync_on_a_loop_device_costs_what_the_kernel_measured() {
    let root = repo_root();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let fsync_p50 = |s: &serde_json::Value| {
        let commit = s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"].as_str().unwrap().starts_with("commit"))
            .unwrap();
        commit["op_latency_ms"]["p50"].as_f64().unwrap()
    };
    // jbd2_start_commit → jbd2_end_commit of every transaction in a trace, ms.
    let commits = |trace: &str| -> Vec<f64> {
        let time = |l: &str| -> f64 { l.split(": ").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap() };
        let mut start = None;
        let mut out = Vec::new();
        for l in trace.lines() {
            if l.contains("jbd2_start_commit:") {
                start = Some(time(l));
            } else if l.contains("jbd2_end_commit:") {
                if let Some(s) = start.take() {
                    out.push((time(l) - s) * 1e3);
                }
            }
        }
        out
    };
    let summary = |path: std::path::PathBuf| -> serde_json::Value { serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap() };
    for (name, measured, p50_tol) in [
        ("v6-fsync-ext4", "validation/measured/v6-fsync-ext4", 0.20),
        (
            "v8-fsync-ext4-unthrottled",
            "validation/measured/loop-flush/v8-rerun-2026-12-02",
            0.40,
        ),
    ] {
        let runs = ["r1", "r2", "r3"].map(|r| root.join(measured).join(r));
        let real_p50 = median(runs.iter().map(|r| fsync_p50(&summary(r.join("summary.json")))).collect());
        let out = scratch(name).join("out");
        run_quietly(&root.join(format!("validation/{name}.toml")), &out);
        let p50 = fsync_p50(&summary(out.join("summary.json")));
        assert!(
            (p50 / real_p50 - 1.0).abs() <= p50_tol,
            "{name}: fsync p50 {p50} ms, kernel {real_p50} ms"
        );
        if name.starts_with("v8") {
            let ours = median(commits(&fs::read_to_string(out.join("trace.txt")).unwrap()));
            let gz = runs[0].join("trace.txt.gz");
            let text = std::process::Command::new("gzip").arg("-dc").arg(&gz).output().expect("gzip");
            let real = median(commits(&String::from_utf8_lossy(&text.stdout)));
            assert!(
                (ours / real - 1.0).abs() <= 0.30,
                "{name}: commit p50 {ours:.3} ms, kernel {real:.3} ms"
            );
        }
    }
}

/// A database WAL (fio, 4 KiB writes each followed by fdatasync) on ext4 on a loop device
/// against the real 6.18 (validation v19 and v20, three repeats each): overwriting written
/// blocks, each sync is the write and one loop flush, which has nothing of the image's to
/// write (0.20 ms); into a fallocated file each sync commits the extent conversion, whose two
/// flushes each write the image's metadata the new blocks dirtied (0.76 ms). Sync p50 within
/// 25 % of the repeats' median on both, the aim `docs/validation.md` holds the WALs to.
#[test]
fn a_wal_syncs_as_fast_as_the_kernel_on_a_loop_device() {
    let root = repo_root();
    let sync_p50_us = |fio: &std::path::Path| -> f64 {
        let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(fio).unwrap()).unwrap();
        let job = v["jobs"].as_array().unwrap().iter().find(|j| j["jobname"] == "wal").unwrap();
        job["sync"]["lat_ns"]["percentile"]["50.000000"].as_f64().unwrap() / 1e3
    };
    for name in ["v19-wal-overwrite-ext4", "v20-wal-prealloc-ext4"] {
        let mut real: Vec<f64> = ["r1", "r2", "r3"]
            .iter()
            .map(|r| sync_p50_us(&root.join(format!("validation/measured/{name}/{r}/fio.json"))))
            .collect();
        real.sort_by(f64::total_cmp);
        let out = scratch(name).join("out");
        run_quietly(&root.join(format!("validation/{name}.toml")), &out);
        let ours = sync_p50_us(&out.join("fio.json"));
        assert!(
            (ours / real[1] - 1.0).abs() <= 0.25,
            "{name}: sync p50 {ours:.0} µs, kernel {:.0} µs",
            real[1]
        );
    }
}

/// kyber on a real 6.18 loop device (validation v12: a read target no read meets, a write
/// target every write meets): the kernel shrank the write tokens 128 → 32 → 8 → 2 → 1 in all
/// three measured runs, one `kyber_adjust` per timer; the model must print the same sequence.
#[test]
fn kyber_shrinks_the_write_tokens_as_the_kernel_did() {
    let root = repo_root();
    let adjusts = |trace: &str| -> Vec<String> {
        trace
            .lines()
            .filter_map(|l| {
                l.split_once("kyber_adjust: ")
                    .map(|(_, p)| p.split_once(' ').map_or(p, |(_, rest)| rest).to_string())
            })
            .collect()
    };
    let out = scratch("v12").join("out");
    let scenario = root.join("validation/v12-kyber-loop.toml");
    run_quietly(&scenario, &out);
    let ours = adjusts(&fs::read_to_string(out.join("trace.txt")).unwrap());
    for r in ["r1", "r2", "r3"] {
        let gz = root.join(format!("validation/measured/v12-kyber-loop/{r}/trace.txt.gz"));
        let text = std::process::Command::new("gzip").arg("-dc").arg(&gz).output().expect("gzip");
        let real = adjusts(&String::from_utf8_lossy(&text.stdout));
        assert!(!real.is_empty(), "{r}: no kyber_adjust in the measured trace");
        assert_eq!(ours, real, "{r}: kyber_adjust domain and depth, model against kernel");
    }
}

/// A task's `field` in a results directory's summary.json.
fn task_figure(dir: &std::path::Path, task: &str, field: &str) -> f64 {
    let s: serde_json::Value = serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    s["tasks"].as_array().unwrap().iter().find(|t| t["name"] == task).unwrap()[field]
        .as_f64()
        .unwrap()
}

/// A figure of validation scenario `name`: in the model (run now) and in its three committed
/// measurements, sorted.
fn model_and_measured(name: &str, figure: impl Fn(&std::path::Path) -> f64) -> (f64, Vec<f64>) {
    let out = scratch(name).join("out");
    run_quietly(&repo_root().join(format!("validation/{name}.toml")), &out);
    (figure(&out), measured_on(name, None, figure))
}

/// The read side of fio job `job` in a results directory's `fio.json`.
fn fio_read(dir: &std::path::Path, job: &str) -> serde_json::Value {
    let j: serde_json::Value = serde_json::from_str(&fs::read_to_string(dir.join("fio.json")).unwrap()).unwrap();
    j["jobs"].as_array().unwrap().iter().find(|x| x["jobname"] == job).unwrap()["read"].clone()
}

/// The IOPS of fio job `job` in a results directory's `fio.json`.
fn fio_iops(dir: &std::path::Path, job: &str) -> f64 {
    fio_read(dir, job)["iops"].as_f64().unwrap()
}

/// The 99.9th percentile of fio job `job`'s read completion latency, ns.
fn fio_clat_p999(dir: &std::path::Path, job: &str) -> f64 {
    fio_read(dir, job)["clat_ns"]["percentile"]["99.900000"].as_f64().unwrap()
}

/// The kernel's repeats of scenario `name` measured on `day` (`validation/measured/<name>-<day>/`,
/// the committed `<name>/` for the first day), figure by figure, sorted.
fn measured_on(name: &str, day: Option<&str>, figure: impl Fn(&std::path::Path) -> f64) -> Vec<f64> {
    let dir = repo_root().join("validation/measured").join(match day {
        Some(d) => format!("{name}-{d}"),
        None => name.to_string(),
    });
    let mut v: Vec<f64> = ["r1", "r2", "r3"].iter().map(|r| figure(&dir.join(r))).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// A loaded machine on a real 6.18 (validations v29, v30): 4 KiB O_DIRECT random reads on an
/// unthrottled loop at queue depth 1 and 32, alone and beside two CPU-bound processes on the
/// two CPUs. What the load costs depends on the day's host: on 2026-12-03 the kernel lost at
/// most a tenth of its reads (the woken reader preempts a spinner at once), on 2026-12-07
/// two fifths (the host's disk thread, beside busy vCPUs, took rounds late by milliseconds).
/// The model's loaded/quiet ratio (a busy guest's host between the two days) must lie
/// between the two days' ratios (medians of three repeats), 15 % either side (the model once
/// made every read wait for a tick and kept a quarter of the rate), and the depth-1 reader's
/// p99.9 beside the spinners between the two days' too.
#[test]
fn a_loaded_machine_costs_the_loops_reads_what_it_cost_the_kernel() {
    let (quiet, loaded) = ("v29-loop-reads-quiet", "v30-loop-reads-loaded");
    let [quiet_out, loaded_out] = [quiet, loaded].map(|name| {
        let out = scratch(name).join("out");
        run_quietly(&repo_root().join(format!("validation/{name}.toml")), &out);
        out
    });
    for job in ["qd1", "qd32"] {
        let ours = fio_iops(&loaded_out, job) / fio_iops(&quiet_out, job);
        let ratio = |day| measured_on(loaded, day, |d| fio_iops(d, job))[1] / measured_on(quiet, day, |d| fio_iops(d, job))[1];
        let (a, b) = (ratio(None), ratio(Some("2026-12-07")));
        let (lo, hi) = (a.min(b), a.max(b));
        assert!(
            ours > lo * 0.85 && ours < hi * 1.15,
            "{job}: loaded/quiet IOPS {ours:.2} in the model, {a:.2} and {b:.2} measured on two days"
        );
    }
    // The load's tail: the depth-1 reader's p99.9 beside the spinners, 3.2 ms (2026-12-03)
    // and 9.0 ms (2026-12-07) in the kernel; the model's within half of the first and half
    // again of the second.
    let ours = fio_clat_p999(&loaded_out, "qd1");
    let days = [None, Some("2026-12-07")].map(|day| measured_on(loaded, day, |d| fio_clat_p999(d, "qd1"))[1]);
    assert!(
        ours > days[0].min(days[1]) * 0.5 && ours < days[0].max(days[1]) * 1.5,
        "loaded depth-1 p99.9 {ours:.0} ns in the model, {days:?} measured"
    );
}

/// bfq's weights on a real 6.18 loop device (validation v13, v14): two O_DIRECT writers at
/// `ionice` best-effort 0 and 7. Under bfq the kernel gave the level-0 writer more; under
/// mq-deadline, which reads only the class, the two came out even. The model must show the
/// same effect, within 15 % of the measured median ratio.
#[test]
fn bfq_divides_the_device_by_ionice_level_as_the_kernel_did() {
    for (name, lo, hi) in [
        ("v13-bfq-weights-loop", 1.3, f64::INFINITY),
        ("v14-mq-deadline-weights-loop", 0.9, 1.1),
    ] {
        let (ours, real) = model_and_measured(name, |d| {
            task_figure(d, "high", "throughput_mb_s") / task_figure(d, "low", "throughput_mb_s")
        });
        let median = real[1];
        assert!((lo..hi).contains(&median), "{name}: measured ratios {real:?}");
        assert!(
            (ours / median - 1.0).abs() < 0.15,
            "{name}: high/low throughput {ours:.2} in the model, {median:.2} measured ({real:?})"
        );
    }
}

/// bfq's group weights on a real 6.18 loop device (validation v17, v18): two tasks in cgroup v1
/// blkio groups of `blkio.bfq.weight` 300 and 100 — O_DIRECT writers (v17), where the kernel
/// gave the heavy group 1.1–1.6× the light one's rate, and buffered readers (v18), 1.4–2.7×.
/// The model must favour the heavy group within 25 % of the measured median ratio.
#[test]
fn bfq_divides_the_device_by_group_weight_as_the_kernel_did() {
    for (name, field) in [
        ("v17-bfq-group-weights-loop", "throughput_mb_s"),
        ("v18-bfq-group-readers-loop", "bytes_read"),
    ] {
        let (ours, real) = model_and_measured(name, |d| task_figure(d, "heavy", field) / task_figure(d, "light", field));
        let median = real[1];
        assert!(median > 1.2, "{name}: measured ratios {real:?}");
        assert!(
            (ours / median - 1.0).abs() < 0.25,
            "{name}: heavy/light {ours:.2} in the model, {median:.2} measured ({real:?})"
        );
    }
}

/// A cgroup v1 memory limit on a real 6.18 (validation v15): a `dd` in a 256 MiB group beside
/// one outside. The kernel has no per-group dirty limit on v1: the group fills with dirty and
/// writeback pages and its writer runs at the device's pace. The model must fill the group as
/// the kernel did and give its writer the measured rate within 25 %.
#[test]
fn a_v1_memory_cgroup_fills_with_dirty_pages_as_the_kernels_did() {
    let root = repo_root();
    let name = "v15-memcg-v1-loop";
    let peak_dirty = |dir: &std::path::Path| -> f64 {
        let csv = fs::read_to_string(dir.join("cgroups.csv")).unwrap();
        csv.lines()
            .skip(1)
            .map(|l| {
                let v: Vec<f64> = l.split(',').skip(4).take(2).map(|x| x.parse().unwrap()).collect();
                v[0] + v[1]
            })
            .fold(0.0, f64::max)
    };
    let pod_mb_s = |dir: &std::path::Path| task_figure(dir, "pod-dd", "throughput_mb_s");
    let out = scratch(name).join("out");
    run_quietly(&root.join(format!("validation/{name}.toml")), &out);
    let limit = 256.0 * 1048576.0;
    let real: Vec<std::path::PathBuf> = ["r1", "r2", "r3"]
        .iter()
        .map(|r| root.join(format!("validation/measured/{name}/{r}")))
        .collect();
    for dir in real.iter().chain([&out]) {
        assert!(
            peak_dirty(dir) > 0.9 * limit,
            "{}: the group's dirty peak {}",
            dir.display(),
            peak_dirty(dir)
        );
    }
    let mut rates: Vec<f64> = real.iter().map(|d| pod_mb_s(d)).collect();
    rates.sort_by(f64::total_cmp);
    let ours = pod_mb_s(&out);
    assert!(
        (ours / rates[1] - 1.0).abs() < 0.25,
        "the group's dd: {ours:.1} MB/s in the model, {rates:?} measured"
    );
}

#[test]
fn device_prints_the_models_figures() {
    for m in ["hdd", "ssd"] {
        let o = wblab(&["device", m, "--json"]);
        assert!(o.status.success());
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let f = &v["figures"];
        assert!(f["seq_write_mb_s"].as_f64().unwrap() > 0.0, "{m}: {f}");
        assert!(f["rand_read_iops_qd1"].as_f64().unwrap() > 0.0, "{m}: {f}");
    }
}

#[test]
fn shipped_scenarios_all_parse() {
    let dir = repo_root().join("scenarios");
    let mut n = 0;
    for e in fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            n += 1;
            let o = wblab(&["check", p.to_str().unwrap()]);
            assert!(o.status.success(), "{}: {}", p.display(), String::from_utf8_lossy(&o.stderr));
        }
    }
    assert!(n >= 3, "only {n} ready scenarios");
}

/// `--repeat N` runs the seeds after the scenario's own and gives each figure's spread: the
/// system's chance makes them differ, the first is the run written to the results directory,
/// and with chance off every seed gives the same figures.
#[test]
fn repeats_spread_over_seeds_and_vanish_without_noise() {
    let dir = scratch("repeat");
    let read = |out: &std::path::Path| -> Vec<Vec<String>> {
        fs::read_to_string(out.join("repeats.csv"))
            .unwrap()
            .lines()
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect()
    };
    let sc = dir.join("short.toml");
    fs::write(&sc, short()).unwrap();
    let out = dir.join("noisy");
    let text = run_quietly_with(&sc, &out, &["--repeat", "3"]);
    assert!(text.contains("3 runs (seeds 7–9)"), "{text}");
    let rows = read(&out);
    assert_eq!(rows.len(), 4, "a header and three seeds");
    assert_eq!((rows[1][0].as_str(), rows[3][0].as_str()), ("7", "9"));
    // The first seed's row is the results directory's run.
    let col = rows[0].iter().position(|h| h == "dd.mb_written").expect("dd.mb_written column");
    let summary: serde_json::Value = serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let dd_bytes: f64 = summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "dd")
        .map(|t| t["bytes_written"].as_f64().unwrap())
        .sum();
    assert!((rows[1][col].parse::<f64>().unwrap() - dd_bytes / 1e6).abs() < 0.01);
    assert!(
        (1..4).any(|i| rows[i][1..] != rows[1][1..]),
        "the seeds gave identical figures: {rows:?}"
    );

    // Chance off: the seeds are the same experiment.
    let quiet = dir.join("quiet.toml");
    fs::write(&quiet, short().replace("cpus = 2", "cpus = 2\nchance = false")).unwrap();
    let out = dir.join("quiet");
    run_quietly_with(&quiet, &out, &["--repeat", "3"]);
    let rows = read(&out);
    assert!((2..4).all(|i| rows[i][1..] == rows[1][1..]), "{rows:?}");
}

/// `wblab compare` of two runs with repeats marks a change inside the run-to-run range as not
/// significant and a real one as significant; without repeats it claims neither.
#[test]
fn compare_marks_changes_within_the_repeats_range_as_not_significant() {
    let dir = scratch("compare-ns");
    let a = dir.join("a.toml");
    let b = dir.join("b.toml");
    fs::write(&a, short()).unwrap();
    // Two more seconds: the copy writes more, for certain.
    fs::write(&b, short().replace("duration = \"8s\"", "duration = \"10s\"")).unwrap();
    let compare = |x: &std::path::Path, y: &std::path::Path| -> serde_json::Value {
        let o = wblab(&["compare", "--json", x.to_str().unwrap(), y.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let significant = |c: &serde_json::Value, name: &str| -> serde_json::Value {
        c["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("{name}"))["significant"][1]
            .clone()
    };
    let (ra, ra2, rb) = (dir.join("ra"), dir.join("ra2"), dir.join("rb"));
    run_quietly_with(&a, &ra, &["--repeat", "3"]);
    run_quietly_with(&a, &ra2, &["--repeat", "3", "--seed", "20"]);
    run_quietly_with(&b, &rb, &["--repeat", "3"]);
    // The same experiment under other seeds: what it wrote moved, but within the noise.
    let same = compare(&ra, &ra2);
    assert_eq!(significant(&same, "device sda: MB written"), false);
    let longer = compare(&ra, &rb);
    assert_eq!(significant(&longer, "device sda: MB written"), true);
    assert_eq!(significant(&longer, "run: seconds"), true);
    let text = String::from_utf8_lossy(&wblab(&["compare", ra.to_str().unwrap(), ra2.to_str().unwrap()]).stdout).to_string();
    assert!(text.contains("n.s.: not significant") && text.contains("% n.s."), "{text}");
    // The report's Differences table greys the same cells and says why.
    let html_dir = dir.join("report");
    let o = wblab(&[
        "report",
        ra.to_str().unwrap(),
        ra2.to_str().unwrap(),
        "--out",
        html_dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = fs::read_to_string(html_dir.join("report.html")).unwrap();
    let diff = html.split("id=\"differences\"").nth(1).expect("a Differences section");
    assert!(
        diff.contains("class=\"ns-legend\"") && diff.contains("<td class=\"num ns\">"),
        "no n.s. cells"
    );

    // Single runs: no noise to judge by.
    let (sa, sb) = (dir.join("sa"), dir.join("sb"));
    run_quietly(&a, &sa);
    run_quietly(&b, &sb);
    assert!(significant(&compare(&sa, &sb), "device sda: MB written").is_null());
}

/// `wblab reproduce`: every figure of the report's list, its mark following from its ratio
/// and direction; an unknown report is refused with the known ones named.
#[test]
fn reproduce_marks_each_figure_by_its_ratio_and_direction() {
    let root = repo_root();
    let o = wblab(&[
        "reproduce",
        "--json",
        "--seeds",
        "2",
        "--dir",
        root.join("scenarios").to_str().unwrap(),
        "2007-per-bdi",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let listed = fs::read_to_string(root.join("scenarios/reports/figures.toml"))
        .unwrap()
        .matches("report = \"2007-per-bdi\"")
        .count();
    assert_eq!(rows.len(), listed, "a row per listed figure");
    for r in rows {
        let ratio = r["ratio"].as_f64().unwrap();
        let (lo, med, hi) = (
            r["wblab_min"].as_f64().unwrap(),
            r["wblab_median"].as_f64().unwrap(),
            r["wblab_max"].as_f64().unwrap(),
        );
        assert!(lo <= med && med <= hi, "{r}");
        assert!((ratio - med / r["reported"].as_f64().unwrap()).abs() < 1e-9, "{r}");
        let within = (0.5..=2.0).contains(&ratio);
        assert_eq!(r["within_2x"].as_bool().unwrap(), within, "{r}");
        assert_eq!(r["pass"].as_bool().unwrap(), within && r["direction_right"] != false, "{r}");
    }
    // 2.6.24's per-bdi limits make the first ls faster: the direction is checked and right.
    let ls = rows.iter().find(|r| r["id"] == "ls-after").unwrap();
    assert_eq!(ls["direction_right"], true, "{ls}");
    let o = wblab(&["reproduce", "--dir", root.join("scenarios").to_str().unwrap(), "1999-nothing"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no report `1999-nothing`") && err.contains("2007-per-bdi"), "{err}");
}

/// `wblab reproduce --fitted --long 5`: only the fitted figures; a run whose work ends within
/// its shipped duration is not run again (marked `(=)`), one whose work goes on runs five times
/// as long, and a figure that no longer holds prints its `long_note`.
#[test]
fn reproduce_long_runs_the_fitted_figures_longer_unless_their_work_is_done() {
    let dir = scratch("reproduce-long");
    fs::create_dir_all(dir.join("reports")).unwrap();
    let scenario = |name: &str, size: &str| {
        format!(
            "name = \"{name}\"\nkernel = \"6.x\"\nduration = \"2s\"\n[[device]]\nname = \"sda\"\nmodel = \"ssd\"\n[[task]]\nname = \"dd\"\njob = \"dd\"\nbs = \"1MiB\"\n{size}"
        )
    };
    fs::write(dir.join("done.toml"), scenario("done", "size = \"16MiB\"\n")).unwrap();
    fs::write(dir.join("open.toml"), scenario("open", "")).unwrap();
    let figure = |id: &str, file: &str, extra: &str| {
        format!(
            "[[figure]]\nreport = \"r\"\nid = \"{id}\"\nfigure = \"{id}\"\nreported = 2\nunit = \"s\"\nscenario = \"{file}\"\nmetric = \"dd.done_s\"\n{extra}\n"
        )
    };
    let figures = [
        figure("finished", "done.toml", "fitted = \"x\""),
        figure(
            "going-on",
            "open.toml",
            "fitted = \"y\"\nlong_note = \"it runs as long as the run\"",
        ),
        figure("plain", "open.toml", ""),
    ]
    .concat();
    fs::write(dir.join("reports/figures.toml"), figures).unwrap();
    let args = |extra: &[&str]| {
        let mut a = vec!["reproduce", "--quiet", "--seeds", "1", "--dir", dir.to_str().unwrap(), "--fitted"];
        a.extend_from_slice(extra);
        wblab(&a)
    };
    let o = args(&["--long", "5", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["finished", "going-on"], "only the fitted figures");
    let done = |i: usize| rows[i]["wblab_median"].as_f64().unwrap();
    assert_eq!(rows[0]["longer"], false, "{}", rows[0]);
    assert!(done(0) < 2.0, "16 MiB are written within the shipped 2 s: {}", done(0));
    assert_eq!(rows[1]["longer"], true, "{}", rows[1]);
    assert!(done(1) > 9.0, "the open-ended copy ran 5 × 2 s: {}", done(1));
    let o = args(&["--long", "5"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("(=)") && text.contains("why: it runs as long as the run"), "{text}");
    // Shipped length: the open-ended copy runs its 2 s, and nothing says why.
    let o = args(&["--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(rows[1]["wblab_median"].as_f64().unwrap() <= 2.0, "{}", rows[1]);
    assert!(rows[1]["longer"].is_null(), "{}", rows[1]);
}

/// Progress into a log (stderr not a terminal) is whole lines: no carriage returns, the last
/// count there; `--output` is refused for the table, and json+ for a run without fio jobs.
#[test]
fn progress_in_a_log_is_lines_and_output_options_are_checked() {
    let dir = scratch("progress-log");
    let sc = dir.join("s.toml");
    fs::write(&sc, short()).unwrap();
    let o = wblab(&[
        "run",
        sc.to_str().unwrap(),
        "--out",
        dir.join("r").to_str().unwrap(),
        "--no-report",
        "--repeat",
        "3",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains('\r') && err.contains("repeats: 3/3 runs"), "{err:?}");
    let table = wblab(&["run", sc.to_str().unwrap(), "--output", dir.join("x").to_str().unwrap()]);
    assert_eq!(table.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&table.stderr).contains("--output writes what --json or --output-format prints"));
    let plus = wblab(&["run", sc.to_str().unwrap(), "--output-format=json+"]);
    assert_eq!(plus.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&plus.stderr).contains("has no fio jobs"),
        "{}",
        String::from_utf8_lossy(&plus.stderr)
    );
}

/// A task group in one run only is compared too: its figures are shown, with no value (and no
/// error) for the run that lacks it, whichever run that is.
#[test]
fn compare_keeps_task_groups_present_in_one_run_only() {
    let dir = scratch("compare-groups");
    let (a, b) = (dir.join("a.toml"), dir.join("b.toml"));
    fs::write(&a, short()).unwrap();
    fs::write(&b, short().replace("name = \"reader\"", "name = \"scanner\"")).unwrap();
    let (ra, rb) = (dir.join("ra"), dir.join("rb"));
    run_quietly(&a, &ra);
    run_quietly(&b, &rb);
    let o = wblab(&["compare", "--json", ra.to_str().unwrap(), rb.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let figure = |prefix: &str| {
        c["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .unwrap_or_else(|| panic!("no figure of {prefix}: {c}"))
            .clone()
    };
    let reader = figure("reader");
    assert!(reader["values"][0].is_number() && reader["values"][1].is_null(), "{reader}");
    let scanner = figure("scanner");
    assert!(scanner["values"][0].is_null() && scanner["values"][1].is_number(), "{scanner}");
    assert!(scanner["rel_err"][1].is_null(), "no error against a missing value: {scanner}");
}

/// `wblab snapshot`'s mistakes are errors that say what to give instead; its scenario passes
/// `wblab check` from standard input pastes too.
#[test]
fn snapshot_errors_are_clear_and_its_output_checks() {
    let o = wblab(&["snapshot", "--root", "/no/such/machine"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--root /no/such/machine: not a directory"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = wblab(&["snapshot", "--lenient", "/no/such/paste.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read /no/such/paste.txt"));

    let dir = scratch("snapshot-cli");
    let paste = dir.join("paste.txt");
    fs::write(&paste, "vm.dirty_ratio = 5\nvm.swappiness = 100\n").unwrap();
    let out = dir.join("s.toml");
    let o = wblab(&["snapshot", "--lenient", paste.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("1 sysctl(s); 1 item(s) not modelled"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = wblab(&["check", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `wblab run --without GROUP` writes the counterfactual beside the whole run, says so in its
/// header and summary.json, and refuses a group the scenario does not have.
#[test]
fn without_runs_the_counterfactual_beside_the_run() {
    let dir = scratch("without");
    let sc = dir.join("pods.toml");
    fs::write(
        &sc,
        "duration = \"5s\"\n[[device]]\nmodel = \"ssd\"\n[[cgroup]]\npath = \"/batch\"\n[[cgroup]]\npath = \"/batch/inner\"\n\
         [[task]]\nname = \"copy\"\njob = \"dd\"\ncgroup = \"/batch/inner\"\n[[task]]\nname = \"probe\"\njob = \"randread\"\nfile_size = \"1GiB\"\n",
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_wblab"))
        .current_dir(&dir)
        .args(["run", "-q", "--no-report", "pods.toml", "--without", "/batch"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("what-if: without /batch: its tasks (copy) do not run"), "{out}");
    let summary: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("results/pods-without-batch/summary.json")).unwrap()).unwrap();
    let tasks: Vec<&str> = summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tasks, ["probe"], "the group's descendants' tasks go too");
    let o = wblab(&[
        "run",
        "-q",
        "--no-report",
        sc.to_str().unwrap(),
        "--without",
        "/nope",
        "--out",
        dir.join("x").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("the scenario has: /batch, /batch/inner"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `wblab btt` on a run with the whole block trace: the tables, a row per I/O in the CSV; on a
/// run without it: exit 1 and how to record it.
#[test]
fn btt_reads_a_runs_block_trace_and_says_when_there_is_none() {
    let dir = scratch("btt");
    let sc = dir.join("short.toml");
    fs::write(&sc, short()).unwrap();
    let (with, without) = (dir.join("with"), dir.join("without"));
    run_quietly_with(&sc, &with, &["--trace-block"]);
    run_quietly(&sc, &without);

    let csv = dir.join("ios.csv");
    let o = wblab(&["btt", with.to_str().unwrap(), "--csv", csv.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    for section in [
        "All Devices",
        "Device Overview",
        "Per Device",
        "Per Process",
        "Tails",
        "biolatency -D",
    ] {
        assert!(text.contains(section), "no {section}:\n{text}");
    }
    let q2c = text.lines().find(|l| l.starts_with("Q2C")).expect("a Q2C row");
    let n: u64 = q2c.split_whitespace().last().unwrap().parse().unwrap();
    let rows = fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| !l.contains(",,,"))
        .count() as u64;
    assert_eq!(rows, n, "a CSV row per I/O with its whole life");

    let o = wblab(&["btt", "-Q", with.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("biolatency -Q"));

    let o = wblab(&["btt", without.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("--trace-block"));
    let o = wblab(&["btt", dir.join("nowhere").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nowhere"));
    let _ = fs::remove_dir_all(&dir);
}
