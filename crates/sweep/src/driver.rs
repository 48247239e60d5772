//! A whole sweep into a directory: the points not already there run, their rows reach
//! `sweep.csv` and `sweep-devices.csv` as each finishes (so a stopped sweep keeps every
//! finished point), and at the end both tables are rewritten in sweep order, beside their
//! Parquet twins. With `resume`, the rows already in the tables for points of this sweep (same
//! index, same values) are kept and those points skipped.

use crate::parquet_out;
use crate::run::{run_points, Failure, Options};
use crate::table::{parse_csv, to_csv, CsvWriter, PointRows, DEVICES_CSV, TASKS_CSV};
use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::path::Path;
use wblab_scenario::SweepPlan;

/// What a sweep gave.
pub struct Outcome {
    /// Every point's rows, in sweep order.
    pub points: Vec<PointRows>,
    /// Points whose rows were kept from an earlier run of the sweep.
    pub resumed: u64,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::Io(format!("{}: {e}", path.display()))
}

/// The rows an earlier run of this sweep left in `dir`, for points the plan still has.
fn earlier(plan: &SweepPlan, dir: &Path) -> Result<Vec<PointRows>, Failure> {
    let (g, d) = (dir.join(TASKS_CSV), dir.join(DEVICES_CSV));
    if !g.exists() || !d.exists() {
        return Ok(Vec::new());
    }
    let gt = std::fs::read_to_string(&g).map_err(io(&g))?;
    let dt = std::fs::read_to_string(&d).map_err(io(&d))?;
    // A row cut short by a stop mid-write is dropped: its point runs again.
    let whole = |t: &str| -> String {
        match t.rfind('\n') {
            Some(i) => t[..=i].to_string(),
            None => String::new(),
        }
    };
    let rows = parse_csv(plan.keys(), &whole(&gt), &whole(&dt), true).map_err(|e| {
        Failure::Io(format!(
            "{}: cannot resume: {e}\n  hint: give another --out, or run without --resume to start over",
            dir.display()
        ))
    })?;
    let values = plan.values(0, plan.len());
    // A point is done when its group rows are there (they are written after its devices').
    Ok(rows
        .into_iter()
        .filter(|p| !p.groups.is_empty() && !p.devices.is_empty())
        .filter(|p| values.get(p.point as usize).is_some_and(|v| *v == p.values))
        .collect())
}

/// Write `text` to `path` through a scratch file, so the table is never seen half-written.
fn replace(path: &Path, text: &str) -> Result<(), Failure> {
    let tmp = path.with_extension("csv.tmp");
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// Run the sweep into `dir`; `progress(done, total)` after each point.
pub fn run_sweep(
    plan: &SweepPlan,
    dir: &Path,
    resume: bool,
    opts: &Options<'_>,
    mut progress: impl FnMut(u64, u64),
) -> Result<Outcome, Failure> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut points = if resume { earlier(plan, dir)? } else { Vec::new() };
    let resumed = points.len() as u64;
    // The tables start as what is kept, in order; new rows are appended as points finish.
    let (g, d) = (dir.join(TASKS_CSV), dir.join(DEVICES_CSV));
    let (gt, dt) = to_csv(plan.keys(), &points);
    replace(&g, &gt)?;
    replace(&d, &dt)?;
    let mut done = vec![false; plan.len() as usize];
    for p in &points {
        done[p.point as usize] = true;
    }
    let todo: Vec<u64> = (0..plan.len()).filter(|&i| !done[i as usize]).collect();
    let append =
        |p: &Path| -> Result<BufWriter<File>, Failure> { Ok(BufWriter::new(OpenOptions::new().append(true).open(p).map_err(io(p))?)) };
    let mut w = CsvWriter::new(append(&g)?, append(&d)?, plan.keys(), false).map_err(|e| Failure::Io(e.to_string()))?;
    let total = plan.len();
    let mut count = resumed;
    progress(count, total);
    let ran = run_points(plan, &todo, opts, |rows| {
        w.write(&rows).map_err(|e| Failure::Io(format!("{}: {e}", g.display())))?;
        points.push(rows);
        count += 1;
        progress(count, total);
        Ok(())
    });
    drop(w);
    ran?;
    points.sort_by_key(|p| p.point);
    write_tables(dir, plan.keys(), &points)?;
    Ok(Outcome { points, resumed })
}

/// Write a sweep's finished tables into `dir`: both CSVs and their Parquet twins, the points
/// in the order given (sweep order, for every writer to give the same bytes).
pub fn write_tables(dir: &Path, keys: &[String], points: &[PointRows]) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let (gt, dt) = to_csv(keys, points);
    replace(&dir.join(TASKS_CSV), &gt)?;
    replace(&dir.join(DEVICES_CSV), &dt)?;
    parquet_out::write_tables(dir, keys, points).map_err(Failure::Io)
}
