//! Scenario files: TOML in, a fully resolved [`Scenario`] out.
//!
//! Knob keys are the kernel's own sysctl and sysfs names so users can paste them; values take
//! the units people write (`4GiB`, `8.5ms`, `60MB/s`). Every mistake is a [`ScenarioError`]
//! naming the file, line, key and, where one helps, a hint (did-you-mean, accepted range).

mod build;
mod error;
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

/// Reads and parses a scenario file; errors name `path` as given.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let (file, text) = read(path)?;
    parse(&text, &file)
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
    let (file, text) = read(path)?;
    parse_all(&text, &file)
}

/// A sweep: the swept knob and, per value (as written), its scenario.
pub type SweepRuns = (String, Vec<(String, Scenario)>);

/// A file with a `[sweep]` table: the swept knob and one (value, scenario) per value, in the
/// file's order (for the first kernel it lists). `Ok(None)` for a file without a sweep.
pub fn load_sweep(path: &Path) -> Result<Option<SweepRuns>, ScenarioError> {
    let (file, text) = read(path)?;
    build::sweep_scenarios(&text, &file).map_err(|p| error::locate_all(p, &file, &text))
}

/// The default experiment: 4 `dd` writers and a `cat` reader on a 7200 rpm disk, 60 s.
pub fn default_scenario() -> Scenario {
    parse(DEFAULT_TOML, "scenarios/default.toml").expect("the embedded default scenario is valid (tested)")
}
