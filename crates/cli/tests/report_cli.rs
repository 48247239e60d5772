//! `wblab report`, `wblab vmstat` and the report `wblab run` writes, as a user meets them —
//! and report.html opened in headless Chromium, with screenshots kept in
//! target/report-artifacts/ for people to look at.

use crate::common::{repo_root, scratch, wblab};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Where test artefacts (screenshots) go: target/report-artifacts/.
fn artifacts() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../report-artifacts");
    fs::create_dir_all(&d).expect("artifacts dir");
    d
}

const SHORT: &str = r#"
name = "short"
duration = "6s"
seed = 7
[machine]
memory = "1GiB"
[[device]]
name = "sda"
[[task]]
name = "dd"
job = "dd"
count = 2
[[task]]
name = "reader"
job = "cat"
file_size = "128MiB"
start = "2s"
"#;

const FIGURES: [&str; 14] = [
    "balance_dirty_pages-pause",
    "balance_dirty_pages-task-bw",
    "global_dirty_state",
    "bdi_dirty_state",
    "global_dirtied_written",
    "balance_dirty_pages-bandwidth",
    "iostat-bw",
    "iostat-util",
    "request-latency",
    "latency-timeline",
    "op-latency-timeline",
    "latency-cdf",
    "pause-cdf",
    "pressure",
];

fn short_run(dir: &Path, extra: &[&str]) -> PathBuf {
    let sc = dir.join("short.toml");
    fs::write(&sc, SHORT).unwrap();
    let out = dir.join("short");
    let mut args = vec!["run", "--quiet", sc.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let stdout = ok(&wblab(&args));
    if !extra.contains(&"--no-report") {
        assert!(
            stdout
                .trim_end()
                .ends_with(&format!("report: {}", out.join("report.html").display())),
            "{stdout}"
        );
    }
    out
}

/// `wblab run` draws its report from what it has in memory (the trace digested while it is
/// written); `wblab report` reads the files back. Both must draw the same report, byte for
/// byte, or the in-memory path has drifted from the files it writes.
#[test]
fn the_report_run_draws_is_the_one_report_reads_back() {
    let dir = scratch("report-memory-vs-files");
    let sc = dir.join("short.toml");
    fs::write(&sc, SHORT).unwrap();
    let cases: [(&str, PathBuf, &[&str]); 3] = [
        ("short-block", sc.clone(), &["--trace-block"]),
        ("nfs", repo_root().join("scenarios/2011-nfs-1dd.toml"), &[]),
        ("ukey", repo_root().join("scenarios/2011-ukey-hdd-1dd.toml"), &["--trace-block"]),
    ];
    for (name, scenario, extra) in cases {
        let out = dir.join(name);
        let mut args = vec!["run", "--quiet", scenario.to_str().unwrap(), "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        ok(&wblab(&args));
        // One results directory, or one per kernel of a multi-kernel scenario.
        let mut runs = vec![out.clone()];
        if !out.join("summary.json").exists() {
            runs = fs::read_dir(&out)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.join("summary.json").exists())
                .collect();
            assert!(runs.len() >= 2, "{name}: no per-kernel results in {}", out.display());
        }
        for run in runs {
            let again = dir.join(format!("{name}-again"));
            ok(&wblab(&["report", run.to_str().unwrap(), "--out", again.to_str().unwrap()]));
            let mut drawn = 0;
            for e in fs::read_dir(&again).unwrap() {
                let f = e.unwrap().file_name();
                let a = fs::read(run.join(&f)).unwrap_or_else(|e| panic!("{name}: {f:?} not written by run: {e}"));
                let b = fs::read(again.join(&f)).unwrap();
                assert!(a == b, "{}: {f:?} differs between run's report and `wblab report`", run.display());
                drawn += 1;
            }
            // Runs without a latency-sensitive task have neither latency timeline.
            assert!(drawn >= FIGURES.len() - 1, "{name}: only {drawn} files drawn");
            assert!(
                !run.join(".trace.txt.part").exists(),
                "{name}: the trace's scratch file was left behind"
            );
            fs::remove_dir_all(&again).unwrap();
        }
    }
}

#[test]
fn run_writes_graphs_and_report_html_unless_told_not_to() {
    let dir = scratch("report-run");
    let out = short_run(&dir, &[]);
    for f in FIGURES {
        let svg = fs::read_to_string(out.join(format!("{f}.svg"))).unwrap_or_else(|e| panic!("{f}.svg: {e}"));
        assert!(svg.contains("class=\"series\""), "{f}.svg has no series");
    }
    assert!(out.join("histograms.json").is_file());
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("short · 6.x"));

    let dir = scratch("report-run-none");
    let out = short_run(&dir, &["--no-report"]);
    assert!(!out.join("report.html").exists());
    assert!(!out.join("iostat-bw.svg").exists());
    assert!(out.join("summary.json").is_file(), "the results are still written");
    // `--json` prints only JSON, report or not.
    let sc = dir.join("short.toml");
    let o = wblab(&[
        "run",
        "--quiet",
        "--json",
        sc.to_str().unwrap(),
        "--out",
        dir.join("j").to_str().unwrap(),
    ]);
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("--json prints JSON only");
    assert!(dir.join("j/report.html").is_file());
}

#[test]
fn report_of_several_directories_overlays_them() {
    let dir = scratch("report-overlay");
    let a = short_run(&dir, &["--no-report"]);
    let b = dir.join("short-seed8");
    let sc = dir.join("short.toml");
    ok(&wblab(&[
        "run",
        "--quiet",
        "--no-report",
        "--seed",
        "8",
        sc.to_str().unwrap(),
        "--out",
        b.to_str().unwrap(),
    ]));
    let out = dir.join("cmp");
    let stdout = ok(&wblab(&[
        "report",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(
        stdout.contains(&format!("report: {}", out.join("report.html").display())),
        "{stdout}"
    );
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    // Same scenario and kernel: the legend tells the runs apart by seed.
    assert!(
        html.contains("short · 6.x · seed 7") && html.contains("short · 6.x · seed 8"),
        "run labels"
    );
    // The differences: every figure `wblab compare` prints, each run against the first,
    // with the absolute change matching the two values.
    let json: serde_json::Value =
        serde_json::from_slice(&wblab(&["compare", "--json", a.to_str().unwrap(), b.to_str().unwrap()]).stdout).unwrap();
    let figures = json["figures"].as_array().unwrap();
    let section = html
        .split("id=\"differences\"")
        .nth(1)
        .expect("a Differences section")
        .split("</section>")
        .next()
        .unwrap();
    assert_eq!(section.matches("<tr><td>").count(), figures.len(), "a row per figure");
    let pauses = figures
        .iter()
        .find(|f| f["name"] == "dd (×2): pauses")
        .expect("the writers' pauses");
    let (va, vb) = (pauses["values"][0].as_f64().unwrap(), pauses["values"][1].as_f64().unwrap());
    let row = section
        .split("<tr><td>dd (×2): pauses</td>")
        .nth(1)
        .unwrap()
        .split("</tr>")
        .next()
        .unwrap();
    let cells: Vec<&str> = row
        .split("<td class=\"num\">")
        .skip(1)
        .map(|c| c.split('<').next().unwrap())
        .collect();
    let change: f64 = cells[2].trim_start_matches('+').parse().unwrap();
    assert_eq!(change, vb - va, "{row}");
    assert!(html.contains("<a href=\"#differences\">Differences</a>"));
    // Default output directory: next to the first run.
    let stdout = ok(&wblab(&["report", a.to_str().unwrap(), b.to_str().unwrap()]));
    assert!(stdout.contains("report-short-vs-short-seed8"), "{stdout}");
    // A directory without results is an error that names it.
    let o = wblab(&["report", "/nonexistent/results"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/results/summary.json"));
}

#[test]
fn terminal_report_prints_table_stem_plot_and_log2_histogram() {
    let dir = scratch("report-terminal");
    let out = short_run(&dir, &["--no-report"]);
    let t = ok(&wblab(&["report", out.to_str().unwrap(), "--terminal"]));
    assert!(t.starts_with("short  kernel 6.x  simulated 6.0 s"), "{t}");
    assert!(t.contains("reader#0 read() latency:"), "{t}");
    assert!(t.contains("  The decimal point is "), "{t}");
    assert!(t.contains("     usecs               : count     distribution"), "{t}");
    let t = ok(&wblab(&["report", out.to_str().unwrap(), "--stem", "dd"]));
    assert!(
        t.starts_with("dd ×2 balance_dirty_pages pauses: "),
        "--stem prints only the distribution: {t}"
    );
    assert!(t.contains("  The decimal point is ") && t.contains(" -> "), "{t}");
    let o = wblab(&["report", out.to_str().unwrap(), "--stem", "nosuchtask"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no task `nosuchtask`"));

    let v = ok(&wblab(&["vmstat", out.to_str().unwrap()]));
    let lines: Vec<&str> = v.lines().collect();
    assert!(
        lines[0].starts_with("procs") && lines[0].contains("memory") && lines[0].contains("io"),
        "{v}"
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["r", "b", "free", "buff", "cache", "bi", "bo", "dirty", "wback", "t_s"]
    );
    assert_eq!(lines.len(), 2 + 6, "one line per simulated second");
    let m = ok(&wblab(&["vmstat", out.to_str().unwrap(), "-S", "M"]));
    let free_k: u64 = lines[2].split_whitespace().nth(2).unwrap().parse().unwrap();
    let free_m: u64 = m.lines().nth(2).unwrap().split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_eq!(free_m, free_k / 1024);
    assert_eq!(wblab(&["vmstat", out.to_str().unwrap(), "-S", "x"]).status.code(), Some(2));
}

/// The device's requests and bytes of each second, as `wblab iostat` prints them, add up to
/// what the run's summary counts; `-x` adds await, aqu-sz and %util.
#[test]
fn iostat_prints_each_second_and_adds_up_to_the_summary() {
    let dir = scratch("report-iostat");
    let out = short_run(&dir, &["--no-report"]);
    let d = out.to_str().unwrap();
    let t = ok(&wblab(&["iostat", d]));
    let blocks: Vec<&str> = t.split("\n\n").collect();
    assert_eq!(blocks.len(), 6, "one block per simulated second: {t}");
    assert!(blocks[0].starts_with("t = 1 s\nDevice"), "{t}");
    assert_eq!(
        blocks[0].lines().nth(1).unwrap().split_whitespace().collect::<Vec<_>>(),
        ["Device", "tps", "kB_read/s", "kB_wrtn/s"]
    );

    let x = ok(&wblab(&["iostat", "-x", d]));
    let header: Vec<&str> = x.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        &header[..8],
        ["Device", "r/s", "rkB/s", "rrqm/s", "%rrqm", "r_await", "rareq-sz", "w/s"],
        "sysstat's order"
    );
    // Columns after Device: r/s 0, r_await 4, w/s 6, wkB/s 7, aqu-sz 20, %util 21.
    let rows: Vec<Vec<f64>> = x
        .lines()
        .filter(|l| l.starts_with("sda "))
        .map(|l| l.split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 6);
    let summary: serde_json::Value = serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let dev = &summary["devices"][0];
    let sum = |i: usize| rows.iter().map(|r| r[i]).sum::<f64>();
    assert_eq!(sum(0) as u64, dev["requests_read"].as_u64().unwrap(), "reads per second add up");
    assert_eq!(sum(6) as u64, dev["requests_written"].as_u64().unwrap(), "writes per second add up");
    let mb_written = dev["bytes_written"].as_f64().unwrap() / 1e6;
    assert!((sum(7) * 1024.0 / 1e6 / mb_written - 1.0).abs() < 0.01, "kB written add up");
    // The reader's requests wait behind the writers' in the queue: await is more than
    // the device's own service time, and the queue holds more than one on average.
    let busy: Vec<&Vec<f64>> = rows.iter().filter(|r| r[0] > 0.0).collect();
    assert!(!busy.is_empty(), "the reader read");
    assert!(busy.iter().all(|r| r[4] > 0.0 && r[20] > 0.0 && r[21] > 0.0), "{x}");

    let o = wblab(&["iostat", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "a directory without iostat.csv");
    let o = wblab(&["iostat", d, "--device", "sdz"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("devices: sda"));
}

/// latency.csv: the reader's operations of each second add up to its distribution, the
/// longest of them is its longest, and `report --terminal` draws them one cell per second.
#[test]
fn latency_over_time_adds_up_and_is_drawn_per_second() {
    let dir = scratch("report-latency");
    let out = short_run(&dir, &["--no-report"]);
    let csv = fs::read_to_string(out.join("latency.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("t_s,task,ops,mean_ms,max_ms"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(
        rows.iter().all(|r| r[1] == "reader"),
        "only the reader: the writers' calls are their pauses"
    );
    assert_eq!(rows.len(), 6, "a row per second");
    assert!(rows[0][2] == "0", "the reader starts at 2 s: {rows:?}");
    let summary: serde_json::Value = serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let reader = summary["tasks"].as_array().unwrap().iter().find(|t| t["name"] == "reader").unwrap();
    let ops: u64 = rows.iter().map(|r| r[2].parse::<u64>().unwrap()).sum();
    assert_eq!(ops, reader["op_latency_ms"]["count"].as_u64().unwrap());
    let longest = rows.iter().map(|r| r[4].parse::<f64>().unwrap()).fold(0.0, f64::max);
    let max = reader["op_latency_ms"]["max"].as_f64().unwrap();
    assert!((longest - max).abs() <= 0.001 + max * 0.001, "{longest} vs {max}");

    let t = ok(&wblab(&["report", out.to_str().unwrap(), "--terminal"]));
    assert!(t.contains("latency over time"), "{t}");
    let spark = t.lines().find(|l| l.trim_start().starts_with("1 s |")).expect("a sparkline");
    let cells: Vec<char> = spark.split('|').nth(1).unwrap().chars().collect();
    assert_eq!(cells.len(), 6, "{spark}");
    assert_eq!(cells[0], ' ', "no reads in the first second: {spark}");
    let busy: Vec<bool> = rows.iter().map(|r| r[2] != "0").collect();
    assert!(busy.iter().any(|b| *b), "the reader read");
    assert_eq!(
        cells.iter().map(|c| *c != ' ').collect::<Vec<_>>(),
        busy,
        "a bar where it read: {spark}"
    );
}

/// scenarios/expire-bursts.toml: pages written only once 30 s old, in bursts, and a reader
/// that stalls after each. The timeline must show what the percentiles hide.
#[test]
fn expire_bursts_show_in_the_readers_timeline() {
    let out = scratch("expire-bursts").join("out");
    let sc = repo_root().join("scenarios/expire-bursts.toml");
    ok(&wblab(&[
        "run",
        "--quiet",
        "--no-report",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let rows = |f: &str| -> Vec<Vec<String>> {
        fs::read_to_string(out.join(f))
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(String::from).collect())
            .collect()
    };
    let writes: Vec<(f64, f64)> = rows("iostat.csv")
        .iter()
        .map(|r| (r[0].parse().unwrap(), r[5].parse().unwrap()))
        .collect();
    let reads: Vec<(f64, f64)> = rows("latency.csv")
        .iter()
        .filter(|r| r[1] == "reader")
        .map(|r| (r[0].parse().unwrap(), r[4].parse().unwrap()))
        .collect();
    // Nothing is written before the first pages are 30 s old.
    let first = writes.iter().find(|w| w.1 > 0.0).expect("the upload is written").0;
    assert!((30.0..=36.0).contains(&first), "first write at {first} s");
    // The reader's typical second, and the stalls far beyond it.
    let mut maxes: Vec<f64> = reads.iter().map(|r| r.1).collect();
    maxes.sort_by(f64::total_cmp);
    let median = maxes[maxes.len() / 2];
    let stalls: Vec<f64> = reads.iter().filter(|r| r.1 > 10.0 * median).map(|r| r.0).collect();
    assert!(stalls.len() >= 2, "stalls {stalls:?} over a median second of {median} ms");
    assert!(stalls.last().unwrap() - stalls[0] >= 30.0, "they recur: {stalls:?}");
    // Each follows a write burst within two seconds.
    for s in &stalls {
        assert!(
            writes.iter().any(|w| w.1 > 0.0 && w.0 <= *s && *s - w.0 <= 2.0),
            "stall at {s} s with no burst before it: {writes:?}"
        );
    }
    // And the percentiles do not show it: p99 stays below the worst stall by far.
    let summary: serde_json::Value = serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let reader = summary["tasks"].as_array().unwrap().iter().find(|t| t["name"] == "reader").unwrap();
    let p99 = reader["op_latency_ms"]["p99"].as_f64().unwrap();
    assert!(p99 * 5.0 < *maxes.last().unwrap(), "p99 {p99} ms, worst second {:?}", maxes.last());
}

/// The first Chromium found on PATH.
fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
        for d in std::env::split_paths(&path) {
            let p = d.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Run a command with a deadline; kill it (by its own pid) if it hangs.
fn run_with_timeout(mut cmd: Command, limit: Duration) -> Output {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("chromium starts");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let t0 = Instant::now();
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("chromium output"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("chromium did not finish within {:?} (started {:?} ago)", limit, t0.elapsed());
        }
    }
}

fn chromium(bin: &Path, profile: &Path, args: &[&str], url: &str) -> Output {
    let mut c = Command::new(bin);
    c.args(["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .env("HOME", profile);
    run_with_timeout(c, Duration::from_secs(120))
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(p: &Path) -> (u32, u32) {
    let b = fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{} is not a PNG", p.display());
    assert_eq!(&b[12..16], b"IHDR");
    (
        u32::from_be_bytes(b[16..20].try_into().unwrap()),
        u32::from_be_bytes(b[20..24].try_into().unwrap()),
    )
}

fn check_in_chromium(bin: &Path, html: &Path, shot: &Path, expect_runs: &[&str]) {
    let url = format!("file://{}", fs::canonicalize(html).unwrap().display());
    let profile = scratch(&format!("chromium-profile-{}", shot.file_stem().unwrap().to_string_lossy()));
    // 1. The DOM as Chromium built it, with the console log on stderr.
    let o = chromium(bin, &profile, &["--dump-dom", "--enable-logging=stderr", "--v=0"], &url);
    assert!(
        o.status.success(),
        "chromium --dump-dom failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dom = String::from_utf8_lossy(&o.stdout);
    let log = String::from_utf8_lossy(&o.stderr);
    for l in log.lines() {
        assert!(!l.contains("Uncaught"), "page error: {l}");
        assert!(!l.contains(":CONSOLE("), "console message from a page with no scripts: {l}");
        assert!(
            !(l.contains("Failed to load") || l.contains("net::ERR_")),
            "the page tried to load something: {l}"
        );
    }
    assert!(dom.contains("<h1>wblab report: "), "DOM lacks the header");
    for f in FIGURES {
        assert!(dom.contains(&format!("data-chart=\"{f}\"")), "DOM lacks figure {f}");
    }
    assert_eq!(dom.matches("<svg ").count(), FIGURES.len());
    for r in expect_runs {
        assert!(dom.contains(r), "DOM does not name run {r}");
    }
    // 2. A screenshot for people.
    let _ = fs::remove_file(shot);
    let o = chromium(
        bin,
        &profile,
        &[&format!("--screenshot={}", shot.display()), "--window-size=1280,4000"],
        &url,
    );
    assert!(
        o.status.success(),
        "chromium --screenshot failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(png_size(shot), (1280, 4000));
    let bytes = fs::metadata(shot).unwrap().len();
    assert!(bytes > 100_000, "{} is only {bytes} bytes: a blank page?", shot.display());
    eprintln!("screenshot: {}", fs::canonicalize(shot).unwrap().display());
}

#[test]
fn report_html_opens_in_headless_chromium() {
    let Some(bin) = find_chromium() else {
        eprintln!(
            "\n**********************************************************************\n\
             SKIPPED report_html_opens_in_headless_chromium: no chromium on PATH.\n\
             Install it (Debian: apt-get install chromium) to check report.html in a\n\
             browser; .ci/run installs it.\n\
             **********************************************************************\n"
        );
        return;
    };
    let dir = scratch("report-chromium");
    // The default experiment, as the README shows it.
    let def = dir.join("default");
    ok(&wblab(&["run", "--quiet", "--out", def.to_str().unwrap()]));
    check_in_chromium(
        &bin,
        &def.join("report.html"),
        &artifacts().join("report-default.png"),
        &["default · 6.x"],
    );
    // Two runs overlaid: today's defaults against the desktop advice.
    let desk = dir.join("desktop");
    let sc = repo_root().join("scenarios/desktop-small-dirty.toml");
    ok(&wblab(&[
        "run",
        "--quiet",
        "--no-report",
        sc.to_str().unwrap(),
        "--out",
        desk.to_str().unwrap(),
    ]));
    let cmp = dir.join("cmp");
    ok(&wblab(&[
        "report",
        def.to_str().unwrap(),
        desk.to_str().unwrap(),
        "--out",
        cmp.to_str().unwrap(),
    ]));
    check_in_chromium(
        &bin,
        &cmp.join("report.html"),
        &artifacts().join("report-default-vs-desktop.png"),
        &["default · 6.x", "desktop-small-dirty · 6.x"],
    );
}

/// A valid run with no latency to show (the repro of `report --terminal` exiting 2): the
/// terminal report prints what it has, says why there is no distribution, and succeeds.
#[test]
fn terminal_report_without_latency_tasks_prints_what_it_has() {
    let dir = scratch("report-no-latency");
    let sc = repo_root().join("crates/scenario/tests/repro/report-terminal-no-latency.toml");
    let out = dir.join("run");
    ok(&wblab(&[
        "run",
        "-q",
        "--no-report",
        sc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let o = wblab(&["report", out.to_str().unwrap(), "--terminal"]);
    let text = ok(&o);
    assert!(text.contains("device  model"), "the device table is printed:\n{text}");
    assert!(text.contains("no task recorded a latency distribution"), "{text}");
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A copy of the results directory `good` at `to`, to damage.
fn copy_results(good: &Path, to: &Path) -> PathBuf {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(good).unwrap() {
        let p = e.unwrap().path();
        fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    to.to_path_buf()
}

/// Every command that reads a results directory names the directory and the file at fault.
#[test]
fn damaged_results_name_the_directory_and_the_file() {
    let dir = scratch("report-damaged");
    let good = short_run(&dir, &["--no-report"]);
    let copy = |name: &str| copy_results(&good, &dir.join(name));
    let err = |o: &Output| {
        assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stdout));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let s = |p: &Path| p.to_str().unwrap().to_string();

    let cut = copy("cut-summary");
    fs::write(cut.join("summary.json"), "{\"sim_seconds\": ").unwrap();
    let cut_s = s(&cut);
    for cmd in [vec!["report", "--terminal"], vec!["vmstat"], vec!["report"]] {
        let mut args = cmd.clone();
        args.push(&cut_s);
        let e = err(&wblab(&args));
        assert!(
            e.contains(&format!("{}/summary.json: ", s(&cut))) && e.contains("line 1"),
            "{cmd:?}: {e}"
        );
    }
    let e = err(&wblab(&["compare", &s(&good), &s(&cut)]));
    assert!(e.contains(&format!("{}/summary.json", s(&cut))), "{e}");

    let ts = copy("bad-timeseries");
    fs::write(ts.join("timeseries.csv"), "t_s,nr_dirty\n1,2\n3\n").unwrap();
    let e = err(&wblab(&["vmstat", &s(&ts)]));
    assert!(e.contains(&format!("{}/timeseries.csv: line 3", s(&ts))), "{e}");

    let gone = copy("no-histograms");
    fs::remove_file(gone.join("histograms.json")).unwrap();
    let o = wblab(&["report", &s(&gone)]);
    assert!(o.status.success(), "the report draws what it can");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(&format!("warning: {}/histograms.json", s(&gone))), "{e}");
}

/// `wblab ARGS`, killed (by its own pid) and the test failed if it has not ended in 60 s: a
/// command that opens a FIFO waits for a writer forever.
fn wblab_within(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_wblab"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wblab starts");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.expect("wblab output"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("wblab {args:?} did not finish within 60 s");
        }
    }
}

/// Results directories are input too (repro t3 report-summary-wrong-shape.sh): a FIFO in place
/// of a file is refused without being opened — summary.json (and iostat's iostat.csv) with exit
/// 2, an optional file with a warning naming it — a summary.json of the wrong shape is refused
/// naming the field, and a garbage histograms.json is "cannot be read", not "no histograms.json".
#[test]
fn hostile_results_are_refused_without_waiting() {
    let dir = scratch("report-hostile");
    let good = short_run(&dir, &["--no-report"]);
    let copy = |name: &str| copy_results(&good, &dir.join(name));
    let fifo = |d: &Path, f: &str| {
        fs::remove_file(d.join(f)).unwrap();
        assert!(Command::new("mkfifo").arg(d.join(f)).status().unwrap().success());
    };
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();

    let d = copy("fifo-trace");
    fifo(&d, "trace.txt");
    let out = s(&dir.join("fifo-trace-report"));
    for args in [vec!["report", "--terminal"], vec!["vmstat"], vec!["report", "--out", &out]] {
        let ds = s(&d);
        let mut a = args.clone();
        a.push(&ds);
        let o = wblab_within(&a);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        if args[0] == "report" {
            let want = format!("warning: {}/trace.txt: is a FIFO, not a file wblab writes", s(&d));
            assert!(stderr(&o).contains(&want), "{args:?}: {}", stderr(&o));
        }
    }

    let d = copy("fifo-summary");
    fifo(&d, "summary.json");
    fifo(&d, "iostat.csv");
    for args in [
        vec!["report", "--terminal"],
        vec!["vmstat"],
        vec!["report"],
        vec!["compare", &s(&good)],
        vec!["iostat"],
    ] {
        let ds = s(&d);
        let mut a = args.clone();
        a.push(&ds);
        let o = wblab_within(&a);
        let file = if args[0] == "iostat" { "iostat.csv" } else { "summary.json" };
        assert!(
            o.status.code() == Some(2) && stderr(&o).contains(&format!("{}/{file}: is a FIFO", s(&d))),
            "{args:?}: {}",
            stderr(&o)
        );
    }

    let summary: serde_json::Value = serde_json::from_str(&fs::read_to_string(good.join("summary.json")).unwrap()).unwrap();
    let mut ten = summary.clone();
    ten["sim_seconds"] = "ten".into();
    let mut five = summary.clone();
    five["tasks"] = 5.into();
    let mut huge = summary.clone();
    huge["devices"][0]["util"] = 1e308.into();
    for (name, text, want) in [
        ("array", "[1,2,3]".to_string(), "is an array, not a JSON object"),
        ("string", ten.to_string(), "`sim_seconds` is \"ten\", not a number"),
        ("tasks-5", five.to_string(), "`tasks` is 5, not an array"),
        ("util-1e308", huge.to_string(), "`devices[0].util` is 1e308"),
    ] {
        let d = copy(name);
        fs::write(d.join("summary.json"), text).unwrap();
        for args in [vec!["report", "--terminal"], vec!["vmstat"], vec!["compare", &s(&good)]] {
            let ds = s(&d);
            let mut a = args.clone();
            a.push(&ds);
            let o = wblab_within(&a);
            let e = stderr(&o);
            assert!(
                o.status.code() == Some(2) && e.contains(&format!("{}/summary.json: ", s(&d))) && e.contains(want),
                "{name} {args:?}: {e}"
            );
            assert!(!String::from_utf8_lossy(&o.stdout).contains("inf"), "{name} {args:?}");
        }
    }

    let d = copy("garbage-histograms");
    fs::write(d.join("histograms.json"), "garbage").unwrap();
    let o = wblab_within(&["report", "--terminal", &s(&d)]);
    let e = stderr(&o);
    assert!(
        o.status.code() == Some(2)
            && e.contains(&format!("{}/histograms.json cannot be read: ", s(&d)))
            && !e.contains("no histograms.json"),
        "{e}"
    );
    let o = wblab_within(&["compare", &s(&good), &s(&d)]);
    assert!(
        o.status.code() == Some(2) && stderr(&o).contains(&format!("{}/histograms.json: ", s(&d))),
        "{}",
        stderr(&o)
    );
}

/// `iostat -x` prints sysstat 12's columns in its order, merges and cache flushes included:
/// the flushes per second add up to the flushes the run sent (one may still be in flight at
/// the end). A file of an older build, without those columns, still prints (as 0).
#[test]
fn iostat_x_has_sysstats_columns_merges_and_flushes() {
    let dir = scratch("iostat-x");
    let out = dir.join("r");
    let o = wblab(&[
        "run",
        "-q",
        "--no-report",
        repo_root().join("scenarios/fsync-under-writers.toml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let x = String::from_utf8_lossy(&wblab(&["iostat", "-x", out.to_str().unwrap()]).stdout).to_string();
    let header: Vec<&str> = x.lines().nth(1).unwrap().split_whitespace().collect();
    let sysstat = "Device r/s rkB/s rrqm/s %rrqm r_await rareq-sz w/s wkB/s wrqm/s %wrqm w_await wareq-sz d/s dkB/s drqm/s %drqm d_await dareq-sz f/s f_await aqu-sz %util";
    assert_eq!(header, sysstat.split(' ').collect::<Vec<_>>());
    let csv = fs::read_to_string(out.join("iostat.csv")).unwrap();
    let cols: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let f = cols.iter().position(|c| *c == "f_per_s").expect("f_per_s");
    let per_second: f64 = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(f).unwrap().parse::<f64>().unwrap())
        .sum();
    let summary: serde_json::Value = serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let sent = summary["devices"][0]["flushes"].as_f64().unwrap();
    assert!(
        sent > 10.0 && (sent - per_second).abs() <= 1.0,
        "flushes sent {sent}, per second {per_second}"
    );
    // Without the later columns (an older build's file), the table still prints.
    let old: String = csv
        .lines()
        .map(|l| l.split(',').take(10).collect::<Vec<_>>().join(",") + "\n")
        .collect();
    fs::write(out.join("iostat.csv"), old).unwrap();
    let o = wblab(&["iostat", "-x", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
