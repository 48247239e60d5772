//! A resumed sweep trusts nothing in the tables it finds: a point's rows are kept only when
//! they are exactly what its run gives (this sweep's values, each task group's and device's
//! row once, in order), and the final tables equal those of a sweep run in one go, byte for
//! byte, whatever was done to the tables in between.

use std::fs;
use std::path::{Path, PathBuf};
use wblab_scenario::SweepPlan;
use wblab_sweep::figures::expected_rows;
use wblab_sweep::{run_sweep, Options, PointRows};

/// Two devices, a task group of several tasks, a fio job file of four jobs of four tasks.
fn plan() -> SweepPlan {
    let fio = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fio/four-phases.fio");
    let text = format!(
        r#"duration = "1s"
[[device]]
name = "sda"
model = "hdd"
[[device]]
name = "sdb"
model = "ssd"
[[task]]
name = "w"
job = "dd"
count = 2
[[task]]
name = "r"
job = "randread"
file = "/mnt/sdb/db"
file_size = "64MiB"
[[task]]
fio = "{}"
device = "sdb"
[sweep]
"task/w/count" = [1, 3]
"vm.dirty_bytes" = ["32MiB", "256MiB"]
"#,
        fio.display()
    );
    SweepPlan::parse(&text, "resume.toml").unwrap().expect("a sweep")
}

fn scratch(name: &str) -> PathBuf {
    wblab_testkit::cli::scratch(env!("CARGO_TARGET_TMPDIR"), &format!("sweep-resume/{name}"))
}

fn opts() -> Options<'static> {
    Options {
        workers: 2,
        ..Default::default()
    }
}

const TABLES: [&str; 4] = ["sweep.csv", "sweep-devices.csv", "sweep.parquet", "sweep-devices.parquet"];

/// The rows a point's scenario promises are the rows its run writes.
#[test]
fn expected_rows_are_what_a_run_gives() {
    let p = plan();
    for i in 0..p.len() {
        let point = p.point(i).unwrap();
        let want = expected_rows(&point.scenario);
        let r = wblab_testkit::sim::run(&point.scenario);
        let rows = PointRows::of(i, point.values, &r);
        let got: Vec<(String, &str, u64)> = rows.groups.iter().map(|g| (g.group.clone(), g.job.as_str(), g.tasks)).collect();
        let groups: Vec<(String, &str, u64)> = want.groups.iter().map(|(g, j, t)| (g.clone(), *j, *t)).collect();
        assert_eq!(got, groups, "point {i}");
        let got: Vec<(&str, &str)> = rows.devices.iter().map(|d| (d.device.as_str(), d.model.as_str())).collect();
        let devices: Vec<(&str, &str)> = want.devices.iter().map(|(d, m)| (d.as_str(), *m)).collect();
        assert_eq!(got, devices, "point {i}");
    }
}

/// Each way of damaging the tables: the resumed sweep keeps only the sound points, runs the
/// rest and ends with the one-go tables.
#[test]
fn a_resumed_sweep_keeps_only_whole_points_and_ends_as_one_run() {
    let p = plan();
    let whole = scratch("whole");
    let o = run_sweep(&p, &whole, false, &opts(), |_, _| {}).unwrap();
    assert_eq!((o.resumed, o.dropped), (0, 0));
    let read = |d: &Path, f: &str| fs::read_to_string(d.join(f)).unwrap();
    let (groups, devices) = (read(&whole, "sweep.csv"), read(&whole, "sweep-devices.csv"));
    let lines = |t: &str| t.lines().map(str::to_string).collect::<Vec<_>>();
    let join = |v: &[String]| v.iter().map(|l| format!("{l}\n")).collect::<String>();
    let (g, d) = (lines(&groups), lines(&devices));
    // Point 1's rows: w, r and the four fio jobs; sda and sdb.
    let of = |v: &[String], k: u64| v.iter().filter(|l| l.starts_with(&format!("{k},"))).count();
    assert!(of(&g, 1) == 6 && of(&d, 1) == 2, "{groups}");
    let body = |v: &[String]| v[1..].to_vec();
    let cases: Vec<(&str, String, String, u64)> = vec![
        // Every row twice: two resumes into one --out, a copy and paste.
        (
            "duplicated",
            join(&[g.clone(), body(&g)].concat()),
            join(&[d.clone(), body(&d)].concat()),
            4,
        ),
        // A point missing one of its group rows: it runs again, the others are kept.
        (
            "group-row-missing",
            join(
                &g.iter()
                    .filter(|l| !(l.starts_with("2,") && l.contains(",r,randread,")))
                    .cloned()
                    .collect::<Vec<_>>(),
            ),
            devices.clone(),
            1,
        ),
        // A point missing a device row.
        (
            "device-row-missing",
            groups.clone(),
            join(
                &d.iter()
                    .filter(|l| !(l.starts_with("3,") && l.contains(",sdb,")))
                    .cloned()
                    .collect::<Vec<_>>(),
            ),
            1,
        ),
        // Rows reversed: each point's rows out of order, so every point runs again.
        (
            "reordered",
            join(&[vec![g[0].clone()], g[1..].iter().rev().cloned().collect()].concat()),
            join(&[vec![d[0].clone()], d[1..].iter().rev().cloned().collect()].concat()),
            4,
        ),
        // A point's row with another value, a row of a point beyond the sweep, a garbage row.
        (
            "foreign",
            join(
                &[
                    g.clone(),
                    vec![
                        g[1].replacen("32MiB", "64MiB", 1),
                        g[1].replacen("0,", "99,", 1),
                        "garbage,,".to_string(),
                    ],
                ]
                .concat(),
            ),
            devices.clone(),
            2,
        ),
    ];
    for (name, gt, dt, dropped) in cases {
        let dir = scratch(name);
        fs::write(dir.join("sweep.csv"), gt).unwrap();
        fs::write(dir.join("sweep-devices.csv"), dt).unwrap();
        let o = run_sweep(&p, &dir, true, &opts(), |_, _| {}).unwrap();
        assert_eq!(o.dropped, dropped, "{name}: points dropped");
        for f in TABLES {
            assert!(fs::read(whole.join(f)).unwrap() == fs::read(dir.join(f)).unwrap(), "{name}: {f}");
        }
    }
    // The header only, or nothing at all: everything runs.
    let dir = scratch("header-only");
    fs::write(dir.join("sweep.csv"), format!("{}\n", g[0])).unwrap();
    fs::write(dir.join("sweep-devices.csv"), "").unwrap();
    let o = run_sweep(&p, &dir, true, &opts(), |_, _| {}).unwrap();
    assert_eq!((o.resumed, o.dropped), (0, 0));
    assert_eq!(read(&dir, "sweep.csv"), groups);
}

/// A table that cannot be a sweep's is refused with its name and a hint, before anything
/// runs: not UTF-8, a directory; a FIFO is refused without being opened (reading it would
/// wait forever).
#[test]
fn a_table_that_is_not_text_or_not_a_file_is_refused() {
    let p = plan();
    let dir = scratch("not-text");
    fs::write(dir.join("sweep.csv"), b"point,task/w/count\n\xff\xfe\n").unwrap();
    fs::write(dir.join("sweep-devices.csv"), "").unwrap();
    let e = run_sweep(&p, &dir, true, &opts(), |_, _| panic!("nothing runs"))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("sweep.csv") && e.contains("not UTF-8") && e.contains("hint:"), "{e}");
    for resume in [true, false] {
        let dir = scratch(&format!("directory-{resume}"));
        fs::create_dir_all(dir.join("sweep.csv")).unwrap();
        fs::write(dir.join("sweep-devices.csv"), "").unwrap();
        let e = run_sweep(&p, &dir, resume, &opts(), |_, _| panic!("nothing runs"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("sweep.csv") && e.contains("not a regular file") && e.contains("hint:"),
            "{e}"
        );
    }
    let dir = scratch("fifo");
    let fifo = dir.join("sweep-devices.csv");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    fs::write(dir.join("sweep.csv"), "").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run_sweep(&plan(), &dir, true, &opts(), |_, _| {}).err().map(|e| e.to_string()));
    });
    let e = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("a FIFO is refused, not read")
        .unwrap();
    assert!(e.contains("sweep-devices.csv") && e.contains("not a regular file"), "{e}");
}
