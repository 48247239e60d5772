//! A sweep's table is written in sweep order as its points finish, whatever each one costs,
//! and read back a point at a time: what lets a sweep of millions of points run in the memory
//! of one of thousands.

use std::fs;
use std::path::PathBuf;
use std::sync::Mutex;
use wblab_scenario::SweepPlan;
use wblab_sweep::table::{for_each_point, parse_csv};
use wblab_sweep::{run_points, run_sweep, Options, PointOutcome};

/// Whether point `i` of [`plan`] is not a valid scenario.
fn invalid(i: u64) -> bool {
    i % 6 == 5
}

/// Points of very unequal cost: every fourth runs ten times as long as the others, and every
/// sixth is too short for its reader's start (not a valid scenario).
fn plan(points: u64) -> SweepPlan {
    let ms = |i: u64| match i {
        i if i % 4 == 0 => 2000,
        i if invalid(i) => 100,
        _ => 200,
    };
    let durations: Vec<String> = (0..points).map(|i| format!("\"{}ms\"", ms(i))).collect();
    let text = format!(
        r#"[[device]]
name = "sda"
model = "ssd"
[[task]]
name = "w"
job = "dd"
[[task]]
name = "r"
job = "randread"
start = "150ms"
[sweep]
duration = [{}]
"#,
        durations.join(", ")
    );
    SweepPlan::parse(&text, "streaming.toml").unwrap().expect("a sweep")
}

fn scratch(name: &str) -> PathBuf {
    wblab_testkit::cli::scratch(env!("CARGO_TARGET_TMPDIR"), &format!("sweep-streaming/{name}"))
}

fn opts() -> Options<'static> {
    Options {
        workers: 2,
        ..Default::default()
    }
}

/// Points reach the caller in the order asked for, not the order they finish in.
#[test]
fn points_are_handed_over_in_the_order_asked() {
    let p = plan(24);
    let order: Vec<u64> = (0..p.len()).rev().collect();
    let mut got = Vec::new();
    run_points(&p, &order, &opts(), |o| {
        got.push(match o {
            PointOutcome::Ran(r) => r.point,
            PointOutcome::Invalid(i) => i.point,
        });
        Ok(())
    })
    .unwrap();
    assert_eq!(got, order);
}

/// While the sweep runs, its table on disk is always the points so far in sweep order; at the
/// end it is read back, a point at a time, as the whole table read at once gives it.
#[test]
fn the_table_grows_in_sweep_order_and_reads_back_a_point_at_a_time() {
    let p = plan(24);
    let dir = scratch("order");
    let seen = Mutex::new(Vec::new());
    let o = run_sweep(&p, &dir, false, &opts(), |done, _| {
        let t = fs::read_to_string(dir.join("sweep.csv")).unwrap();
        let points: Vec<u64> = t.lines().skip(1).map(|l| l.split(',').next().unwrap().parse().unwrap()).collect();
        seen.lock().unwrap().push((done, points));
    })
    .unwrap();
    assert_eq!(o.invalid, 4, "the 100 ms points start their reader after the run");
    for (done, points) in seen.into_inner().unwrap() {
        let mut distinct = points.clone();
        distinct.dedup();
        // Every point so far but the invalid ones, in order.
        let want: Vec<u64> = (0..done).filter(|&i| !invalid(i)).collect();
        assert_eq!(distinct, want, "after {done} points");
    }
    let read = |f: &str| fs::read_to_string(dir.join(f)).unwrap();
    let whole = parse_csv(p.keys(), &read("sweep.csv"), &read("sweep-devices.csv"), true).unwrap();
    let mut streamed = Vec::new();
    let n = for_each_point(&dir, p.keys(), |pt| {
        streamed.push(pt);
        Ok(())
    })
    .unwrap();
    assert_eq!(n as usize, whole.len());
    assert_eq!(streamed, whole);
    assert_eq!(o.points, n);
}

/// A table whose points are not in sweep order is refused by the streaming reader, naming the
/// table and line, not read wrong.
#[test]
fn an_unsorted_table_is_refused_by_the_streaming_reader() {
    let p = plan(8);
    let dir = scratch("unsorted");
    run_sweep(&p, &dir, false, &opts(), |_, _| {}).unwrap();
    let t = fs::read_to_string(dir.join("sweep.csv")).unwrap();
    let mut lines: Vec<&str> = t.lines().collect();
    let last = lines.len() - 1;
    lines.swap(1, last);
    fs::write(dir.join("sweep.csv"), lines.join("\n") + "\n").unwrap();
    let e = for_each_point(&dir, p.keys(), |_| Ok(())).unwrap_err();
    assert!(e.contains("sweep.csv: line") && e.contains("not in sweep order"), "{e}");
}
