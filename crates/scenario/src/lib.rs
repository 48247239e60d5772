//! Scenario files: TOML in, a fully resolved [`Scenario`] out.
//!
//! Knob keys are the kernel's own sysctl and sysfs names so users can paste them; values take
//! the units people write (`4GiB`, `8.5ms`, `60MB/s`). Every mistake is a [`ScenarioError`]
//! naming the file, line, key and, where one helps, a hint (did-you-mean, accepted range).

mod error;
pub mod fio;
pub mod fuzz;
pub mod limits;
pub mod names;
pub mod read;
mod resolve;
mod section;
mod suggest;
pub mod units;

pub use error::{ScenarioError, MAX_ERRORS};
pub use resolve::catalogue::{catalogue, Catalogue};
pub use resolve::mount::modelled_options as modelled_mount_options;
pub use resolve::{
    CHECK_EVERY_POINT_UP_TO as SWEEP_CHECKS_EVERY_POINT_UP_TO, SWEEP_KEY_SEPARATOR, SWEEP_MAX_POINTS, SWEEP_VALUE_SEPARATOR,
};

use std::path::Path;
use wblab_sim::config::Scenario;

/// The default experiment, `scenarios/default.toml`, compiled in so it always runs.
const DEFAULT_TOML: &str = include_str!("../../../scenarios/default.toml");
/// The text of the default scenario (`scenarios/default.toml`).
pub const DEFAULT_SCENARIO_TOML: &str = DEFAULT_TOML;

/// The file's name as given and its text, or an error naming it.
fn read(path: &Path) -> Result<(String, String), ScenarioError> {
    let file = path.display().to_string();
    let cap = if is_fio(path) {
        read::MAX_JOB_FILE_BYTES
    } else {
        read::MAX_SCENARIO_BYTES
    };
    match read::text_file(path, cap) {
        Ok(text) => Ok((file, text)),
        Err(e) => Err(ScenarioError {
            file,
            line: 0,
            column: 0,
            key: None,
            message: format!("cannot read the {} file: {e}", if is_fio(path) { "job" } else { "scenario" }),
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

/// The most I/O a job without `runtime` may ask for in a bare job file: 256 TiB, what 12 GB/s
/// does in [`FIO_MAX_DURATION`] — above any modelled device.
pub const MAX_UNTIMED_IO: u128 = 256 << 40;

/// A fio job file on the default machine (the default experiment's 7200 rpm disk, memory,
/// CPUs and 6.x knobs, without its tasks): the jobs run on its device, and the run lasts
/// until they are done. For another machine, put `[[task]] fio = "job.fio"` in a scenario.
pub fn fio_scenario(text: &str, file_name: &str) -> Result<Scenario, ScenarioError> {
    let mut sc = default_scenario();
    sc.tasks.clear();
    // The jobs' files live on ext4 with the release's default mount, as on most machines
    // that run fio; the device table says so.
    let release = wblab_sim::generations::parse_version(&sc.kernel).unwrap_or(wblab_sim::generations::Version(6, 0, 0));
    sc.devices[0].fs = Some(wblab_sim::config::MountConfig::defaults(wblab_sim::config::FsKind::Ext4, release));
    let at = fio::Placement {
        device: 0,
        devices: sc.devices.iter().map(|d| (d.name.clone(), d.size)).collect(),
        pinned: false,
        stand_in: true,
        first_group: 0,
        start: 0,
        stop: None,
        ioprio: Default::default(),
        cgroup: None,
    };
    sc.tasks = fio::tasks(text, file_name, &at)?;
    let stem = Path::new(file_name).file_stem().map(|s| s.to_string_lossy());
    sc.name = names::from_stem(stem.as_deref().unwrap_or(""), "fio");
    sc.duration = fio::longest_run(&sc.tasks, FIO_MAX_DURATION);
    sc.until_done = true;
    // A job that runs until its I/O is done must be able to finish within the bound.
    for t in &sc.tasks {
        let wblab_sim::config::JobConfig::Fio(j) = &t.job else { continue };
        let bytes = u128::from(j.size) * u128::from(j.loops) * u128::from(t.count);
        if j.runtime.is_none() && bytes > MAX_UNTIMED_IO {
            let line = text.lines().position(|l| l.trim() == format!("[{}]", j.name)).map_or(0, |i| i + 1);
            return Err(ScenarioError {
                file: file_name.to_string(),
                line,
                column: usize::from(line > 0),
                key: Some("loops".into()),
                message: format!(
                    "job `{}` asks for {} TiB of I/O (size × loops × numjobs) and has no runtime: no modelled device \
                     does that within the {} h a job file may run",
                    j.name,
                    bytes >> 40,
                    FIO_MAX_DURATION / 3_600_000_000_000
                ),
                hint: Some("lower loops or size, or bound the job with runtime= (and time_based)".into()),
                more: Vec::new(),
            });
        }
    }
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
    resolve::scenario(text, file_name).map_err(|p| error::locate_all(p, file_name, text))
}

/// Parses scenario text into one scenario per kernel it lists (`kernel = ["2.6.20", "2.6.24"]`),
/// in the file's order; a single kernel gives one.
pub fn parse_all(text: &str, file_name: &str) -> Result<Vec<Scenario>, ScenarioError> {
    resolve::scenarios(text, file_name).map_err(|p| error::locate_all(p, file_name, text))
}

/// Reads a scenario file into one scenario per kernel it lists.
pub fn load_all(path: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    if is_fio(path) {
        return load(path).map(|s| vec![s]);
    }
    let (file, text) = read(path)?;
    parse_all(&text, &file)
}

/// A file's `[sweep]`: its keys and points, each point's scenario built when asked for (a
/// sweep of millions of points holds nothing per point). The plan keeps the file's text, so
/// it can be sent to another process or machine ([`SweepPlan::parse`] there gives the same
/// points).
#[derive(Clone, Debug)]
pub struct SweepPlan {
    text: String,
    file: String,
    keys: Vec<String>,
    len: u64,
    random: bool,
}

/// One point of a sweep: its index, each key's value (as the tables show it) and scenario.
#[derive(Clone, Debug)]
pub struct SweepPoint {
    pub index: u64,
    pub values: Vec<String>,
    pub scenario: Scenario,
}

impl SweepPlan {
    /// The sweep of a file's text (`file` names it in errors and anchors its relative paths);
    /// `Ok(None)` when it has no `[sweep]`.
    pub fn parse(text: &str, file: &str) -> Result<Option<SweepPlan>, ScenarioError> {
        let info = resolve::sweep_info(text).map_err(|p| error::locate_all(p, file, text))?;
        Ok(info.map(|(keys, len, random)| SweepPlan {
            text: text.to_string(),
            file: file.to_string(),
            keys,
            len,
            random,
        }))
    }

    /// The swept keys, in the file's order.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The keys joined by [`SWEEP_KEY_SEPARATOR`], as tables title the sweep.
    pub fn key(&self) -> String {
        self.keys.join(SWEEP_KEY_SEPARATOR)
    }

    /// Points in the sweep.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the points are drawn at random (`random = N`) rather than a grid or a list.
    pub fn is_random(&self) -> bool {
        self.random
    }

    /// The file's name and text.
    pub fn file(&self) -> &str {
        &self.file
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Each key's value at the points `from..to` (clipped to the sweep), without building them.
    pub fn values(&self, from: u64, to: u64) -> Vec<Vec<String>> {
        resolve::sweep_values(&self.text, from, to).expect("the plan's text parsed when it was made")
    }

    /// Check the sweep as `wblab check` does: every point of a small sweep, each key's every
    /// value in a large one (each point is checked again when built).
    pub fn check(&self) -> Result<(), ScenarioError> {
        resolve::scenarios(&self.text, &self.file)
            .map(drop)
            .map_err(|p| error::locate_all(p, &self.file, &self.text))
    }

    /// Gives `f` a builder of points ([`SweepPlan::point`]) that parses the file once, for
    /// callers that build many: a point is then built (and checked) at a few thousand per
    /// second and core, where each [`SweepPlan::point`] parses the file again. An error is the
    /// file's own (a bad kernel), which every point would give.
    pub fn with_points<R>(&self, f: impl FnOnce(&dyn Fn(u64) -> Result<SweepPoint, ScenarioError>) -> R) -> Result<R, ScenarioError> {
        resolve::with_sweep_points(&self.text, &self.file, |build| {
            f(&|i| {
                let (values, scenario) = build(i).map_err(|p| error::locate_all(p, &self.file, &self.text))?;
                Ok(SweepPoint {
                    index: i,
                    values,
                    scenario,
                })
            })
        })
        .map_err(|p| error::locate_all(p, &self.file, &self.text))
    }

    /// Point `i`, built and checked as a scenario file is; an error names the point's values.
    pub fn point(&self, i: u64) -> Result<SweepPoint, ScenarioError> {
        let (values, scenario) =
            resolve::sweep_point(&self.text, &self.file, i).map_err(|p| error::locate_all(p, &self.file, &self.text))?;
        Ok(SweepPoint {
            index: i,
            values,
            scenario,
        })
    }
}

/// A file with a `[sweep]` table, checked ([`SweepPlan::check`]), its points not yet built;
/// `Ok(None)` for a file without one.
pub fn load_sweep(path: &Path) -> Result<Option<SweepPlan>, ScenarioError> {
    if is_fio(path) {
        return Ok(None);
    }
    let (file, text) = read(path)?;
    let plan = SweepPlan::parse(&text, &file)?;
    if let Some(p) = &plan {
        p.check()?;
    }
    Ok(plan)
}

/// The default experiment: 4 `dd` writers and a `cat` reader on a 7200 rpm disk, 60 s.
pub fn default_scenario() -> Scenario {
    parse(DEFAULT_TOML, "scenarios/default.toml").expect("the embedded default scenario is valid (tested)")
}
