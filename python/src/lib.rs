//! `wblab._wblab`: what the Python package calls. Scenarios arrive as text (the package reads
//! files and turns dicts into TOML), simulations run with the interpreter's lock released, and
//! results come back as the files `wblab run` writes (the package reads them into pandas) or,
//! for sweeps, as the rows of the sweep's table. Every error is a `wblab.WblabError` carrying
//! wblab's own message (file, line, key and hint).

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::path::{Path, PathBuf};
use wblab_scenario::SweepPlan;
use wblab_sweep::Options;

pyo3::create_exception!(
    _wblab,
    WblabError,
    PyException,
    "An error from wblab: its message names the file, line, key and a hint."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    WblabError::new_err(e.to_string())
}

/// Whether `file` names a fio job file (by its `.fio` name).
fn is_fio(file: &str) -> bool {
    Path::new(file).extension().is_some_and(|e| e == "fio")
}

/// The scenarios a text gives, one per kernel it lists: a fio job file by its `.fio` name,
/// else TOML.
fn scenarios(text: &str, file: &str) -> PyResult<Vec<wblab_sim::config::Scenario>> {
    if is_fio(file) {
        return wblab_scenario::fio_scenario(text, file).map(|s| vec![s]).map_err(err);
    }
    if SweepPlan::parse(text, file).map_err(err)?.is_some() {
        return Err(err(format!(
            "{file}: has a [sweep]: run it with wblab.sweep(), or drop the [sweep] table to run one point"
        )));
    }
    wblab_scenario::parse_all(text, file).map_err(err)
}

/// The kernels a scenario lists, in its order, and the results directory of each when there
/// are several (as `wblab run` names them).
#[pyfunction]
fn kernels(text: &str, file: &str) -> PyResult<Vec<(String, String)>> {
    Ok(scenarios(text, file)?
        .into_iter()
        .map(|s| {
            let dir = wblab::kernels_cmd::kernel_dir(&s.kernel);
            (s.kernel, dir)
        })
        .collect())
}

/// A sweep's plan, checked.
fn plan(text: &str, file: &str) -> PyResult<SweepPlan> {
    let p = SweepPlan::parse(text, file)
        .map_err(err)?
        .ok_or_else(|| err(format!("{file}: has no [sweep] table")))?;
    p.check().map_err(err)?;
    Ok(p)
}

/// Each value read as a quantity, as the scenario reads it: sizes in bytes, then rates in
/// bytes/s, then durations in ns, then plain numbers — the first reading every value takes,
/// with its unit's name (`bytes`, `bytes_per_s`, `ns`, `value`); `None` when no reading takes
/// them all (a scheduler's name).
#[pyfunction]
fn quantities(values: Vec<String>) -> Option<(String, Vec<f64>)> {
    use wblab_scenario::units::{parse_duration, parse_rate, parse_size};
    let all = |f: &dyn Fn(&str) -> Option<f64>| values.iter().map(|v| f(v.trim())).collect::<Option<Vec<f64>>>();
    let has_unit = |v: &str| v.trim().chars().any(|c| c.is_ascii_alphabetic());
    let with_unit = values.iter().any(|v| has_unit(v));
    if with_unit {
        if let Some(v) = all(&|t| parse_size(t).ok().map(|x| x as f64)) {
            return Some(("bytes".into(), v));
        }
        if let Some(v) = all(&|t| parse_rate(t).ok().map(|x| x as f64)) {
            return Some(("bytes_per_s".into(), v));
        }
        if let Some(v) = all(&|t| parse_duration(t).ok().map(|x| x as f64)) {
            return Some(("ns".into(), v));
        }
        return None;
    }
    all(&|t| t.parse::<f64>().ok().filter(|x| x.is_finite())).map(|v| ("value".into(), v))
}

/// The wblab version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// A results CSV as text in today's column names and units: a file written by an older
/// build (before every column named its unit) comes back upgraded, as `wblab report` reads it.
#[pyfunction]
fn results_csv(path: PathBuf) -> PyResult<String> {
    let text = wblab_report::load::file::read_text(&path).map_err(|e| err(format!("{}: {e}", path.display())))?;
    let c = wblab_report::load::rundir::Csv::parse(&text).map_err(|e| err(format!("{}: {e}", path.display())))?;
    Ok(c.to_text())
}

/// TOML text of a JSON object (a scenario given as a dict).
#[pyfunction]
fn toml_of_json(json: &str) -> PyResult<String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(err)?;
    let t: toml::Value = serde_json::from_value(v).map_err(|e| err(format!("the scenario dict cannot be written as TOML: {e}")))?;
    toml::to_string(&t).map_err(|e| err(format!("the scenario dict cannot be written as TOML: {e}")))
}

/// The resolved scenario as JSON (every knob explicit), or the error.
#[pyfunction]
fn check(text: &str, file: &str) -> PyResult<String> {
    // A job file is not TOML: it is checked as `wblab.run` reads it.
    let plan = if is_fio(file) {
        None
    } else {
        SweepPlan::parse(text, file).map_err(err)?
    };
    let sc = match plan {
        Some(p) => {
            p.check().map_err(err)?;
            p.point(0).map_err(err)?.scenario
        }
        None => scenarios(text, file)?.swap_remove(0),
    };
    serde_json::to_string(&sc).map_err(err)
}

/// Simulate and write the results directory `out`; returns the wall seconds simulated.
#[pyfunction]
#[pyo3(signature = (text, file, out, seed=None, check=false, report=false, kernel=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    text: &str,
    file: &str,
    out: PathBuf,
    seed: Option<u64>,
    check: bool,
    report: bool,
    kernel: Option<String>,
) -> PyResult<f64> {
    let all = scenarios(text, file)?;
    let mut sc = match kernel {
        None => all.into_iter().next().expect("a scenario"),
        Some(k) => all
            .into_iter()
            .find(|s| s.kernel == k)
            .ok_or_else(|| err(format!("{file}: lists no kernel `{k}`")))?,
    };
    if let Some(s) = seed {
        sc.seed = s;
    }
    py.detach(move || {
        let t0 = std::time::Instant::now();
        let opts = wblab_sim::RunOptions {
            check_laws: check || wblab_sim::RunOptions::default().check_laws,
        };
        let r = wblab_sim::run_with(&sc, &mut wblab_sim::machine::NoProgress, opts)
            .map_err(|v| err(format!("{} (kernel {}, seed {}): {v}", sc.name, sc.kernel, sc.seed)))?;
        let wall = t0.elapsed().as_secs_f64();
        wblab::write_run(&out, &r, wall, report).map_err(err)?;
        Ok(wall)
    })
}

/// A sweep: its keys, number of points and whether they are drawn at random.
#[pyfunction]
fn sweep_info(text: &str, file: &str) -> PyResult<(Vec<String>, u64, bool)> {
    let p = plan(text, file)?;
    Ok((p.keys().to_vec(), p.len(), p.is_random()))
}

/// Each key's value at the points `start..end`.
#[pyfunction]
fn sweep_values(text: &str, file: &str, start: u64, end: u64) -> PyResult<Vec<Vec<String>>> {
    Ok(plan(text, file)?.values(start, end))
}

/// Run the points `indices` (on `workers` threads; 0 = every core) and return their rows as
/// the two tables' CSV text without headers, and the points that are not valid scenarios as
/// `sweep-invalid.csv`'s, for [`write_tables`] to gather.
#[pyfunction]
#[pyo3(signature = (text, file, indices, workers=1, check=false))]
fn run_points(
    py: Python<'_>,
    text: &str,
    file: &str,
    indices: Vec<u64>,
    workers: usize,
    check: bool,
) -> PyResult<(String, String, String)> {
    // Points are checked one by one as they run; a worker need not check the whole sweep.
    let p = SweepPlan::parse(text, file)
        .map_err(err)?
        .ok_or_else(|| err(format!("{file}: has no [sweep] table")))?;
    py.detach(move || {
        let opts = Options {
            workers,
            check,
            ..Default::default()
        };
        let (rows, invalid) = wblab_sweep::run_sorted(&p, &indices, &opts).map_err(err)?;
        let (g, d) = wblab_sweep::table::to_csv(p.keys(), &rows);
        let body = |t: String| t.split_once('\n').map_or(String::new(), |(_, rest)| rest.to_string());
        Ok((body(g), body(d), wblab_sweep::table::invalid_csv(p.keys(), &invalid, false)))
    })
}

/// Gather rows from [`run_points`] (any order, any split) into `out`'s tables, as a local
/// sweep writes them: CSV and Parquet, in sweep order, and `sweep-invalid.csv` if any point
/// is not a valid scenario.
#[pyfunction]
#[pyo3(signature = (text, file, out, groups, devices, invalid=""))]
fn write_tables(text: &str, file: &str, out: PathBuf, groups: &str, devices: &str, invalid: &str) -> PyResult<u64> {
    let p = plan(text, file)?;
    let mut rows = wblab_sweep::table::parse_csv(p.keys(), groups, devices, false).map_err(err)?;
    rows.sort_by_key(|r| r.point);
    let mut invalid = wblab_sweep::table::parse_invalid_csv(p.keys(), invalid).map_err(err)?;
    invalid.sort_by_key(|r| r.point);
    wblab_sweep::write_tables(&out, p.keys(), &rows, &invalid).map_err(err)?;
    Ok(rows.len() as u64)
}

/// A whole sweep on this machine's cores into `out` (resuming from its tables with
/// `resume`); returns the points kept from an earlier run.
#[pyfunction]
#[pyo3(signature = (text, file, out, workers=0, resume=false, check=false, quiet=true))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one by one.
fn sweep_local(
    py: Python<'_>,
    text: &str,
    file: &str,
    out: PathBuf,
    workers: usize,
    resume: bool,
    check: bool,
    quiet: bool,
) -> PyResult<u64> {
    let p = plan(text, file)?;
    py.detach(move || {
        let opts = Options {
            workers,
            check,
            ..Default::default()
        };
        let mut last = 0;
        let o = wblab_sweep::run_sweep(&p, &out, resume, &opts, |done, total| {
            let tenth = done * 10 / total.max(1);
            if !quiet && tenth > last {
                last = tenth;
                eprintln!("sweep: {done}/{total} points");
            }
        })
        .map_err(err)?;
        Ok(o.resumed)
    })
}

/// The `wblab` command line with `args` (without the program name); its exit status.
#[pyfunction]
fn main(py: Python<'_>, args: Vec<String>) -> i32 {
    // `wblab measure` starts the program again as its watchdog: here `python -m wblab`.
    if let Ok(exe) = py
        .import("sys")
        .and_then(|s| s.getattr("executable"))
        .and_then(|e| e.extract::<String>())
    {
        wblab::set_self_command(vec![exe.into(), "-m".into(), "wblab".into()]);
    }
    py.detach(move || {
        let code = wblab::main_with(std::iter::once("wblab".to_string()).chain(args));
        i32::from(code != std::process::ExitCode::SUCCESS)
    })
}

#[pymodule]
fn _wblab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("WblabError", m.py().get_type::<WblabError>())?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(results_csv, m)?)?;
    m.add_function(wrap_pyfunction!(toml_of_json, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(kernels, m)?)?;
    m.add_function(wrap_pyfunction!(quantities, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_info, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_values, m)?)?;
    m.add_function(wrap_pyfunction!(run_points, m)?)?;
    m.add_function(wrap_pyfunction!(write_tables, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    Ok(())
}
