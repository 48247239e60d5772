//! A whole sweep into a directory: the points not already there run, their rows reach
//! `sweep.csv` and `sweep-devices.csv` in sweep order as they finish (so a stopped sweep
//! keeps nearly every finished point), and at the end the Parquet twins are written from
//! them; points that are not valid scenarios are listed in `sweep-invalid.csv`. Nothing is
//! held per point but a flag, so ten million points need no more memory than ten thousand.
//! With `resume`, the points whose rows are already in the tables, whole and this sweep's,
//! are kept and skipped; every other row is dropped and its point runs again.

use crate::figures::{expected_rows, RowKeys};
use crate::merge;
use crate::parquet_out;
use crate::run::{run_ordered, workers_for, Failure, Options, PointOutcome};
use crate::table::{
    invalid_csv, read_rows, to_csv, BadRow, CsvWriter, InvalidPoint, Item, PointRows, Table, DEVICES_CSV, INVALID_CSV, TASKS_CSV,
};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::path::Path;
use wblab_scenario::{ScenarioError, SweepPlan, SweepPoint};

/// What a sweep gave: its rows are in the tables ([`crate::table::for_each_point`] reads them
/// back).
pub struct Outcome {
    /// Points in the tables.
    pub points: u64,
    /// Points that are not valid scenarios (listed in `sweep-invalid.csv`): not run.
    pub invalid: u64,
    /// The first of them.
    pub first_invalid: Option<InvalidPoint>,
    /// Points whose rows were kept from an earlier run of the sweep.
    pub resumed: u64,
    /// Points whose rows an earlier run left but that were not kept (incomplete, duplicated,
    /// out of order or not this sweep's) and ran again.
    pub dropped: u64,
}

/// An I/O error as a [`Failure`] naming `path`.
pub(crate) fn io(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::Io(format!("{}: {e}", path.display()))
}

/// Refuse a table path that is there but not a regular file: a directory cannot be replaced,
/// and reading a FIFO would wait forever.
fn regular_or_absent(path: &Path) -> Result<bool, Failure> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(_) => Err(Failure::Io(format!(
            "{}: not a regular file (a directory, a FIFO or a device), so not a table a sweep wrote\n  hint: move it away, or give another --out",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(path)(e)),
    }
}

/// A table an earlier run left, as text; `None` when it is not there.
fn read_table(path: &Path) -> Result<Option<String>, Failure> {
    if !regular_or_absent(path)? {
        return Ok(None);
    }
    let bytes = std::fs::read(path).map_err(io(path))?;
    String::from_utf8(bytes).map(Some).map_err(|e| {
        Failure::Io(format!(
            "{}: cannot resume: not UTF-8 text (from byte {}), so not a table a sweep wrote\n  hint: move it away or give another --out, or run without --resume to start over",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Whether `p` holds exactly the rows its point gives (`build` builds a point): this sweep's
/// values at its index, each of its task groups' rows and devices' rows once, in the order a
/// run writes them.
fn complete(build: &dyn Fn(u64) -> Result<SweepPoint, ScenarioError>, p: &PointRows) -> bool {
    let Ok(built) = build(p.point) else { return false };
    let RowKeys { groups, devices } = expected_rows(&built.scenario);
    built.values == p.values
        && p.groups.len() == groups.len()
        && p.groups
            .iter()
            .zip(&groups)
            .all(|(r, (group, job, tasks))| r.group == *group && r.job == *job && r.tasks == *tasks)
        && p.devices.len() == devices.len()
        && p.devices
            .iter()
            .zip(&devices)
            .all(|(r, (device, model))| r.device == *device && r.model == *model)
}

/// [`complete`] for each point, on `workers` threads (0: every core), each parsing the file
/// once: building a point checks it without simulating, at thousands per second and core.
fn all_complete(plan: &SweepPlan, points: &[PointRows], workers: usize) -> Vec<bool> {
    let chunk = points.len().div_ceil(workers_for(workers, points.len())).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = points
            .chunks(chunk)
            .map(|c| {
                s.spawn(move || {
                    plan.with_points(|build| c.iter().map(|p| complete(build, p)).collect::<Vec<bool>>())
                        .unwrap_or_else(|_| vec![false; c.len()])
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// The points an earlier run of this sweep left whole in `dir`, and how many points' rows
/// were there but not kept. Nothing in the tables is trusted: a point is kept only when
/// [`complete`]; anything else (a row cut short, duplicated, reordered or missing, values of
/// another sweep, an index out of range) drops that point's rows, and it runs again.
fn earlier(plan: &SweepPlan, dir: &Path, workers: usize) -> Result<(Vec<PointRows>, u64), Failure> {
    let (g, d) = (dir.join(TASKS_CSV), dir.join(DEVICES_CSV));
    let (Some(gt), Some(dt)) = (read_table(&g)?, read_table(&d)?) else {
        return Ok((Vec::new(), 0));
    };
    // A row cut short by a stop mid-write is dropped: its point runs again.
    let whole = |t: &str| -> String {
        match t.rfind('\n') {
            Some(i) => t[..=i].to_string(),
            None => String::new(),
        }
    };
    let cannot = |e: String| {
        Failure::Io(format!(
            "{}: cannot resume: {e}\n  hint: give another --out, or run without --resume to start over",
            dir.display()
        ))
    };
    // Each point's rows as found, and whether they read soundly.
    let mut found: BTreeMap<u64, (PointRows, bool)> = BTreeMap::new();
    for (text, table) in [(whole(&gt), Table::Groups), (whole(&dt), Table::Devices)] {
        for row in read_rows(plan.keys(), &text, table, true).map_err(cannot)? {
            let (point, row) = match row {
                Ok(r) => (r.point, Some(r)),
                // A row with no readable index leaves its point a row short: caught below.
                Err(BadRow { point: None, .. }) => continue,
                Err(BadRow { point: Some(p), .. }) => (p, None),
            };
            let (p, sound) = found.entry(point).or_insert_with(|| {
                let values = row.as_ref().map_or_else(Vec::new, |r| r.values.clone());
                (
                    PointRows {
                        point,
                        values,
                        groups: Vec::new(),
                        devices: Vec::new(),
                    },
                    true,
                )
            });
            match row {
                Some(r) if r.values == p.values => match r.item {
                    Item::Group(x) => p.groups.push(x),
                    Item::Device(x) => p.devices.push(x),
                },
                _ => *sound = false,
            }
        }
    }
    let seen = found.len() as u64;
    let candidates: Vec<PointRows> = found
        .into_values()
        .filter(|(p, sound)| *sound && p.point < plan.len())
        .map(|(p, _)| p)
        .collect();
    let keep = all_complete(plan, &candidates, workers);
    let kept: Vec<PointRows> = candidates.into_iter().zip(keep).filter(|(_, k)| *k).map(|(p, _)| p).collect();
    let dropped = seen - kept.len() as u64;
    Ok((kept, dropped))
}

/// Write `text` to `path` through a scratch file, so the table is never seen half-written.
fn replace(path: &Path, text: &str) -> Result<(), Failure> {
    regular_or_absent(path)?;
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
    let (kept, dropped) = if resume {
        earlier(plan, dir, opts.workers)?
    } else {
        (Vec::new(), 0)
    };
    let resumed = kept.len() as u64;
    remove_invalid(dir)?;
    // The tables start as what is kept, in order; new rows follow, in order, as points
    // finish; the two runs are merged at the end.
    let (g, d) = (dir.join(TASKS_CSV), dir.join(DEVICES_CSV));
    let (gt, dt) = to_csv(plan.keys(), &kept);
    replace(&g, &gt)?;
    replace(&d, &dt)?;
    let split = (gt.len() as u64, dt.len() as u64);
    let mut done = vec![false; plan.len() as usize];
    for p in &kept {
        done[p.point as usize] = true;
    }
    drop(kept);
    let todo = (0..plan.len()).filter(|&i| !done[i as usize]);
    let append =
        |p: &Path| -> Result<BufWriter<File>, Failure> { Ok(BufWriter::new(OpenOptions::new().append(true).open(p).map_err(io(p))?)) };
    let mut w = CsvWriter::new(append(&g)?, append(&d)?, plan.keys(), false).map_err(|e| Failure::Io(e.to_string()))?;
    let total = plan.len();
    let mut count = resumed;
    progress(count, total);
    // Invalid points are found again, at no cost, by a resumed sweep: listed in a scratch file
    // as they come, put in place only when the sweep ends well.
    let invalid_tmp = dir.join(INVALID_CSV).with_extension("csv.tmp");
    let mut invalid = InvalidList::new(&invalid_tmp, plan.keys());
    let mut ran = 0;
    let run = run_ordered(plan, todo, (total - resumed) as usize, opts, |outcome| {
        match outcome {
            PointOutcome::Ran(rows) => {
                w.write(&rows).map_err(|e| Failure::Io(format!("{}: {e}", g.display())))?;
                ran += 1;
            }
            PointOutcome::Invalid(p) => invalid.push(p)?,
        }
        count += 1;
        progress(count, total);
        Ok(())
    });
    drop(w);
    let invalid = invalid.finish(run.is_ok())?;
    run?;
    if resumed > 0 && ran > 0 {
        merge::merge_runs(&g, split.0)?;
        merge::merge_runs(&d, split.1)?;
    }
    if invalid.count > 0 {
        std::fs::rename(&invalid_tmp, dir.join(INVALID_CSV)).map_err(io(&invalid_tmp))?;
    }
    for f in [parquet_out::TASKS_PARQUET, parquet_out::DEVICES_PARQUET] {
        regular_or_absent(&dir.join(f))?;
    }
    parquet_out::write_from_csv(dir, plan.keys()).map_err(Failure::Io)?;
    Ok(Outcome {
        points: resumed + ran,
        invalid: invalid.count,
        first_invalid: invalid.first,
        resumed,
        dropped,
    })
}

/// `sweep-invalid.csv` as it grows, in a scratch file: created at the first invalid point.
struct InvalidList<'a> {
    path: &'a Path,
    keys: &'a [String],
    file: Option<BufWriter<File>>,
    count: u64,
    first: Option<InvalidPoint>,
}

impl<'a> InvalidList<'a> {
    fn new(path: &'a Path, keys: &'a [String]) -> InvalidList<'a> {
        InvalidList {
            path,
            keys,
            file: None,
            count: 0,
            first: None,
        }
    }

    fn push(&mut self, p: InvalidPoint) -> Result<(), Failure> {
        use std::io::Write;
        if self.file.is_none() {
            regular_or_absent(self.path)?;
            let f = File::create(self.path).map_err(io(self.path))?;
            self.file = Some(BufWriter::new(f));
        }
        let text = invalid_csv(self.keys, std::slice::from_ref(&p), self.count == 0);
        let f = self.file.as_mut().expect("opened above");
        f.write_all(text.as_bytes()).map_err(io(self.path))?;
        self.count += 1;
        self.first.get_or_insert(p);
        Ok(())
    }

    /// Flush the list when the sweep ended well (`keep`); remove it otherwise.
    fn finish(mut self, keep: bool) -> Result<Self, Failure> {
        use std::io::Write;
        if let Some(mut f) = self.file.take() {
            f.flush().map_err(io(self.path))?;
            if !keep {
                let _ = std::fs::remove_file(self.path);
            }
        }
        Ok(self)
    }
}

/// Remove an earlier run's `sweep-invalid.csv`.
fn remove_invalid(dir: &Path) -> Result<(), Failure> {
    let f = dir.join(INVALID_CSV);
    if regular_or_absent(&f)? {
        std::fs::remove_file(&f).map_err(io(&f))?;
    }
    Ok(())
}

/// Write a sweep's finished tables into `dir`: both CSVs and their Parquet twins, the points
/// in the order given (sweep order, for every writer to give the same bytes), and
/// `sweep-invalid.csv` when some points are not valid scenarios.
pub fn write_tables(dir: &Path, keys: &[String], points: &[PointRows], invalid: &[InvalidPoint]) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    for f in [parquet_out::TASKS_PARQUET, parquet_out::DEVICES_PARQUET] {
        regular_or_absent(&dir.join(f))?;
    }
    let (gt, dt) = to_csv(keys, points);
    replace(&dir.join(TASKS_CSV), &gt)?;
    replace(&dir.join(DEVICES_CSV), &dt)?;
    parquet_out::write_from_csv(dir, keys).map_err(Failure::Io)?;
    if invalid.is_empty() {
        remove_invalid(dir)
    } else {
        replace(&dir.join(INVALID_CSV), &invalid_csv(keys, invalid, true))
    }
}
