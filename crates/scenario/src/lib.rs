//! Scenario files: TOML in, a fully resolved [`Scenario`] out.
//!
//! Knob keys are the kernel's own sysctl and sysfs names so users can paste them; values take
//! the units people write (`4GiB`, `8.5ms`, `60MB/s`). Every mistake is a [`ScenarioError`]
//! naming the file, line, key and, where one helps, a hint (did-you-mean, accepted range).

mod build;
mod error;
pub mod fio;
pub mod fuzz;
pub mod limits;
mod section;
mod suggest;
pub mod units;

pub use build::catalogue::{catalogue, Catalogue};
pub use build::{SWEEP_KEY_SEPARATOR, SWEEP_VALUE_SEPARATOR};
pub use error::{ScenarioError, MAX_ERRORS};

use std::path::Path;
use wblab_sim::config::Scenario;

/// The default experiment, `scenarios/default.toml`, compiled in so it always runs.
const DEFAULT_TOML: &str = include_str!("../../../scenarios/default.toml");

/// The file's name as given and its text, or an error naming it.
fn read(path: &Path) -> Result<(String, String), ScenarioError> {
    let file = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((file, text)),
        Err(e) => Err(ScenarioError {
            file,
            line: 0,
            column: 0,
            key: None,
            message: format!("cannot read the scenario file: {e}"),
            hint: None,
            more: Vec::new(),
        }),
    }
}

/// Reads and parses a scenario file; errors name `path` as given. A `.fio` job file runs on
/// the default machine ([`fio_scenario`]).
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let (file, text) = read(path)?;
    if is_fio(path) {
        return fio_scenario(&text, &file);
    }
    parse(&text, &file)
}

/// Whether `path` names a fio job file (by its `.fio` extension).
pub fn is_fio(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "fio")
}

/// The longest a job file's run may last when its jobs are sized rather than timed: the run
/// ends when they are done.
pub const FIO_MAX_DURATION: wblab_sim::Ns = 6 * 3600 * 1_000_000_000;

/// A fio job file on the default machine (the default experiment's 7200 rpm disk, memory,
/// CPUs and 6.x knobs, without its tasks): the jobs run on its device, and the run lasts
/// until they are done. For another machine, put `[[task]] fio = "job.fio"` in a scenario.
pub fn fio_scenario(text: &str, file_name: &str) -> Result<Scenario, ScenarioError> {
    let mut sc = default_scenario();
    sc.tasks.clear();
    let at = fio::Placement {
        device: 0,
        device_name: sc.devices[0].name.clone(),
        first_group: 0,
        start: 0,
        stop: None,
        ioprio: Default::default(),
        cgroup: None,
    };
    sc.tasks = fio::tasks(text, file_name, &at)?;
    sc.name = Path::new(file_name)
        .file_stem()
        .map_or_else(|| "fio".to_string(), |s| s.to_string_lossy().into_owned());
    sc.duration = fio::longest_run(&sc.tasks, FIO_MAX_DURATION);
    sc.until_done = true;
    let need: u64 = sc
        .tasks
        .iter()
        .map(|t| match &t.job {
            wblab_sim::config::JobConfig::Fio(j) if j.shared_file => j.file_size,
            wblab_sim::config::JobConfig::Fio(j) => j.file_size * u64::from(j.nrfiles) * u64::from(t.count),
            _ => 0,
        })
        .sum();
    if need > sc.devices[0].size {
        return Err(ScenarioError {
            file: file_name.to_string(),
            line: 0,
            column: 0,
            key: Some("size".into()),
            message: format!(
                "the jobs' files need {} bytes, more than the default disk's {}",
                need, sc.devices[0].size
            ),
            hint: Some(
                "lower size or numjobs, or run the jobs from a scenario with a larger [[device]]: [[task]] fio = \"job.fio\"".into(),
            ),
            more: Vec::new(),
        });
    }
    Ok(sc)
}

/// Parses scenario text; `file_name` is used in errors and, by its stem, as the default name.
/// A file that lists several kernels gives the scenario of the first; see [`parse_all`].
pub fn parse(text: &str, file_name: &str) -> Result<Scenario, ScenarioError> {
    build::scenario(text, file_name).map_err(|p| error::locate_all(p, file_name, text))
}

/// Parses scenario text into one scenario per kernel it lists (`kernel = ["2.6.20", "2.6.24"]`),
/// in the file's order; a single kernel gives one.
pub fn parse_all(text: &str, file_name: &str) -> Result<Vec<Scenario>, ScenarioError> {
    build::scenarios(text, file_name).map_err(|p| error::locate_all(p, file_name, text))
}

/// Reads a scenario file into one scenario per kernel it lists.
pub fn load_all(path: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    if is_fio(path) {
        return load(path).map(|s| vec![s]);
    }
    let (file, text) = read(path)?;
    parse_all(&text, &file)
}

/// A sweep: the swept knob and, per value (as written), its scenario.
pub type SweepRuns = (String, Vec<(String, Scenario)>);

/// A file with a `[sweep]` table: the swept knob and one (value, scenario) per value, in the
/// file's order (for the first kernel it lists). `Ok(None)` for a file without a sweep.
pub fn load_sweep(path: &Path) -> Result<Option<SweepRuns>, ScenarioError> {
    if is_fio(path) {
        return Ok(None);
    }
    let (file, text) = read(path)?;
    build::sweep_scenarios(&text, &file).map_err(|p| error::locate_all(p, &file, &text))
}

/// The default experiment: 4 `dd` writers and a `cat` reader on a 7200 rpm disk, 60 s.
pub fn default_scenario() -> Scenario {
    parse(DEFAULT_TOML, "scenarios/default.toml").expect("the embedded default scenario is valid (tested)")
}
