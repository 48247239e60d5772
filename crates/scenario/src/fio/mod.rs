//! fio job files as workloads: `wblab run job.fio`, or `[[task]] fio = "job.fio"` in a
//! scenario for the machine, devices and knobs around it.
//!
//! The file is read as fio reads it: `[global]` sections set defaults for the jobs after
//! them, each other section is a job, `key=value` or a bare `key` per line, `;` and `#` start
//! comment lines. Every option fio documents that the model does not run is refused by name,
//! never ignored (see [`options`]). Each job becomes one `[[task]]` group: `numjobs` clones
//! on the task's device, started after `startdelay`, after the jobs before a `stonewall` or
//! named by `wait_for`.

pub mod catalogue;
pub(crate) mod options;
pub mod render;
pub mod value;

use crate::error::ScenarioError;
use crate::{names, suggest};
use options::{JobBuilder, Opt};
use std::collections::HashSet;
use wblab_sim::config::{FioJob, IoPrio, TaskConfig};
use wblab_sim::Ns;

/// One job section with its options (the `[global]` ones before it first).
#[derive(Clone, Debug)]
pub struct JobSection {
    pub name: String,
    pub line: usize,
    pub opts: Vec<Opt>,
    /// How many of `opts` (the first) came from `[global]`.
    pub globals: usize,
}

/// Where the lines being read go.
#[derive(Clone, Copy)]
enum Reading {
    /// Before the first section.
    Nothing,
    Global,
    Job(usize),
    /// A section header that was refused: its options are not read (its error says why).
    Refused,
}

/// Splits job-file text into its job sections. Every line is checked, so one run names every
/// malformed line; the errors name `file` and the line.
pub fn sections(text: &str, file: &str) -> Result<Vec<JobSection>, Vec<ScenarioError>> {
    let mut global: Vec<Opt> = Vec::new();
    let mut jobs: Vec<JobSection> = Vec::new();
    let mut names: HashSet<&str> = HashSet::new();
    let mut errors: Vec<ScenarioError> = Vec::new();
    let mut cur = Reading::Nothing;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if let Some((at, c)) = raw.chars().enumerate().find(|&(_, c)| c != '\t' && names::is_forbidden(c)) {
            errors.push(ScenarioError {
                column: at + 1,
                ..err(
                    file,
                    line,
                    None,
                    format!("the line holds {}", names::describe_char(c)),
                    "a job file is lines of printable text (tabs allowed)",
                )
            });
            continue;
        }
        let l = raw.trim();
        if l.is_empty() || l.starts_with(';') || l.starts_with('#') {
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            cur = Reading::Refused;
            let Some(name) = rest.strip_suffix(']') else {
                errors.push(err(
                    file,
                    line,
                    None,
                    format!("`{l}` opens a section without closing it"),
                    "write [jobname]",
                ));
                continue;
            };
            let name = name.trim();
            if name.is_empty() {
                errors.push(err(file, line, None, "a section needs a name", "e.g. [randread]"));
            } else if name == "global" {
                cur = Reading::Global;
            } else if let Some((m, h)) = names::name_problem(name, "job") {
                errors.push(err(
                    file,
                    line,
                    None,
                    m,
                    format!("{h}: the name labels the job's results and files"),
                ));
            } else if !names.insert(name) {
                errors.push(err(
                    file,
                    line,
                    None,
                    format!("a second job named `{name}`"),
                    "job names must differ: wait_for and the output name jobs by them",
                ));
            } else {
                jobs.push(JobSection {
                    name: name.to_string(),
                    line,
                    opts: global.clone(),
                    globals: global.len(),
                });
                cur = Reading::Job(jobs.len() - 1);
            }
            continue;
        }
        if l.starts_with("include ") {
            errors.push(err(
                file,
                line,
                Some("include"),
                "`include` of other job files is not supported",
                "paste the included options into this file",
            ));
            continue;
        }
        let (key, value) = match l.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (l, None),
        };
        // Not echoed: a file that is not a job file (a scenario may name any path) must not
        // have its lines quoted back.
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            errors.push(err(
                file,
                line,
                None,
                "the line is not a fio option (`option` or `option=value`), a [section] or a comment",
                "is this a fio job file?",
            ));
            continue;
        }
        if value.as_deref().is_some_and(|v| v.contains("${")) {
            errors.push(err(
                file,
                line,
                Some(key),
                "environment variables (${VAR}) are not expanded",
                "write the value itself",
            ));
            continue;
        }
        let opt = Opt {
            key: key.to_string(),
            value,
            line,
        };
        match cur {
            Reading::Nothing => errors.push(err(
                file,
                line,
                None,
                "an option before any section",
                "put it under [global] or a [jobname] section",
            )),
            Reading::Global => global.push(opt),
            Reading::Job(j) => jobs[j].opts.push(opt),
            Reading::Refused => {}
        }
    }
    if jobs.is_empty() && errors.is_empty() {
        errors.push(err(
            file,
            0,
            None,
            "no job in the file",
            "a job is a section other than [global], e.g. [randread] followed by rw=randread",
        ));
    }
    if errors.is_empty() {
        Ok(jobs)
    } else {
        Err(errors)
    }
}

/// A file's errors as one: the first in file order carries the others (each once: an option
/// of `[global]` is applied to every job, and its mistake reported at its own line once).
fn gathered(mut errors: Vec<ScenarioError>) -> ScenarioError {
    errors.sort_by_key(|e| (e.line, e.column));
    errors.dedup_by(|a, b| a.line == b.line && a.key == b.key && a.message == b.message);
    let mut all = errors.into_iter();
    let mut first = all.next().expect("at least one error");
    first.more = all.collect();
    first
}

fn err(file: &str, line: usize, key: Option<&str>, message: impl Into<String>, hint: impl Into<String>) -> ScenarioError {
    ScenarioError {
        file: file.to_string(),
        line,
        column: if line > 0 { 1 } else { 0 },
        key: key.map(str::to_string),
        message: message.into(),
        hint: Some(hint.into()),
        more: Vec::new(),
    }
}

/// Where a job file's tasks go: the device (its index and name), the scenario's `[[task]]`
/// groups before them, and what a `[[task]] fio = ...` adds (start, stop, ionice, cgroup).
#[derive(Clone, Debug)]
pub struct Placement {
    /// The task's device: the jobs' unless their `filename` or `directory` names another.
    pub device: usize,
    /// The scenario's devices (name, size in bytes), by index.
    pub devices: Vec<(String, u64)>,
    /// The task named its device (`device = "sdb"`): a job naming another is a mistake.
    pub pinned: bool,
    /// A bare job file on the default machine: its one disk stands for whatever device the
    /// jobs name, as a job file copied from another machine expects.
    pub stand_in: bool,
    pub first_group: usize,
    pub start: Ns,
    pub stop: Option<Ns>,
    pub ioprio: IoPrio,
    pub cgroup: Option<usize>,
}

/// The tasks of a job file: one group per job.
pub fn tasks(text: &str, file: &str, at: &Placement) -> Result<Vec<TaskConfig>, ScenarioError> {
    tasks_with(text, file, at, &[])
}

/// As [`tasks`], with (job, option, value) lines added after each named job's own options, as
/// a sweep's `fio/<job>/<option>` sets them (a later line wins, as in fio).
pub fn tasks_with(text: &str, file: &str, at: &Placement, extra: &[(String, String, String)]) -> Result<Vec<TaskConfig>, ScenarioError> {
    let mut jobs = sections(text, file).map_err(gathered)?;
    for (job, key, value) in extra {
        // A sweep's strings are checked where the scenario is read; a caller that builds
        // them itself is held to the same rule.
        if let Some((_, c)) = names::forbidden_in_line(key).or_else(|| names::forbidden_in_line(value)) {
            return Err(err(
                file,
                0,
                Some(&names::shown(key)),
                format!("the value holds {}", names::describe_char(c)),
                "option values are one line of printable text",
            ));
        }
        if let Some(sec) = jobs.iter_mut().find(|s| &s.name == job) {
            // Line 0: not from the file; errors say it came from the sweep.
            sec.opts.push(Opt {
                key: key.clone(),
                value: Some(value.clone()),
                line: 0,
            });
        }
    }
    let mut errors: Vec<ScenarioError> = Vec::new();
    let mut out: Vec<TaskConfig> = Vec::with_capacity(jobs.len());
    let mut group = 0u32;
    let mut clones = 0u64;
    for (index, sec) in jobs.iter().enumerate() {
        // Every option is applied, each mistake kept at its line; the checks across options
        // count only when the options themselves were sound.
        let mut b = JobBuilder::new(&sec.name, index as u32);
        let before = errors.len();
        for o in &sec.opts {
            if let Err((m, h)) = b.apply(o) {
                errors.push(err(file, o.line, Some(&o.key), m, h));
            }
        }
        let options_sound = errors.len() == before;
        let routed = match route(&b, at) {
            Ok(r) => Some(r),
            Err((key, (m, h))) => {
                let line = sec.opts.iter().rev().find(|o| o.key == key).map_or(sec.line, |o| o.line);
                errors.push(err(file, line, Some(key), m, h));
                None
            }
        };
        if let Some((device, true)) = routed {
            b.on_block_device(at.devices[device].1);
        }
        let built = match b.finish() {
            Ok(built) if options_sound && routed.is_some() => built,
            Ok(_) => continue,
            Err(slips) => {
                for s in slips.into_iter().filter(|s| options_sound || s.line.is_some()) {
                    let (m, h) = s.fail;
                    errors.push(match s.line {
                        Some(line) => err(file, line, s.key.as_deref(), m, h),
                        None => err(file, sec.line, s.key.as_deref(), format!("job `{}`: {m}", sec.name), h),
                    });
                }
                continue;
            }
        };
        // The scenario's bound on task instances holds for a job file too (a bare one has no
        // scenario to count them).
        clones += u64::from(built.numjobs);
        if clones > crate::limits::MAX_TASKS {
            let line = sec.opts.iter().rev().find(|o| o.key == "numjobs").map_or(sec.line, |o| o.line);
            errors.push(err(
                file,
                line,
                Some("numjobs"),
                format!(
                    "{clones} job clones so far (jobs × numjobs), more than the {} task instances a run may have",
                    crate::limits::MAX_TASKS
                ),
                "each clone is a task with its own state and histograms; fewer clones with a deeper iodepth ask the same of the device",
            ));
            break;
        }
        // Jobs after a stonewall wait for every job before them; wait_for names one.
        let mut after: Vec<usize> = Vec::new();
        if built.stonewall && index > 0 {
            after.extend((0..index).map(|i| at.first_group + i));
        }
        if let Some(w) = &built.wait_for {
            match jobs[..index].iter().position(|j| &j.name == w) {
                Some(i) => after.push(at.first_group + i),
                None => {
                    let line = sec.opts.iter().rev().find(|o| o.key == "wait_for").map_or(sec.line, |o| o.line);
                    errors.push(err(
                        file,
                        line,
                        Some("wait_for"),
                        format!("no job `{w}` before job `{}`", sec.name),
                        "wait_for names a job defined earlier in the file",
                    ));
                    continue;
                }
            }
        }
        after.sort_unstable();
        after.dedup();
        if (built.stonewall || built.new_group) && index > 0 {
            group += 1;
        }
        let mut job: FioJob = built.job;
        job.group = group;
        job.global_options = sec.globals;
        let device = routed.map_or(at.device, |(d, _)| d);
        let device_name = &at.devices[device].0;
        let file_path = match &built.filename {
            Some(f) => {
                let base = f.rsplit('/').next().unwrap_or(f);
                format!("/mnt/{device_name}/{base}")
            }
            None => format!("/mnt/{device_name}/{}.{{n}}", sec.name),
        };
        out.push(TaskConfig {
            name: sec.name.clone(),
            count: built.numjobs,
            device,
            file: file_path,
            start: at.start + built.startdelay,
            stagger: 0,
            stop: at.stop,
            ioprio: built.ioprio.unwrap_or(at.ioprio),
            cgroup: at.cgroup,
            after,
            job: wblab_sim::config::JobConfig::Fio(std::sync::Arc::new(job)),
        });
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(gathered(errors))
    }
}

/// The device a job runs on, read from its `filename` (`/dev/sdb`, `/mnt/sdb/data`) or
/// `directory` (`/mnt/sdb`), and whether its file is the whole block device; the task's device
/// when neither names one. A mistake names the option at fault.
fn route(b: &JobBuilder, at: &Placement) -> Result<(usize, bool), (&'static str, options::Fail)> {
    let (filename, directory) = b.target();
    let named = |path: &str, key: &'static str| -> Option<(&'static str, String, bool)> {
        let one = |rest: &str| rest.split('/').next().filter(|d| !d.is_empty()).map(str::to_string);
        if let Some(rest) = path.strip_prefix("/dev/") {
            return one(rest).map(|d| (key, d, key == "filename"));
        }
        path.strip_prefix("/mnt/").and_then(one).map(|d| (key, d, false))
    };
    let from_filename = filename.and_then(|f| named(f, "filename"));
    // A relative filename lives in the directory.
    let from_directory = match filename {
        Some(f) if f.starts_with('/') => None,
        _ => directory.and_then(|d| named(d, "directory")),
    };
    let Some((key, name, block)) = from_filename.or(from_directory) else {
        return Ok((at.device, false));
    };
    let names: Vec<&str> = at.devices.iter().map(|(n, _)| n.as_str()).collect();
    let device = match names.iter().position(|n| *n == name) {
        Some(i) => i,
        None if at.stand_in => at.device,
        None => {
            return Err((
                key,
                (
                    format!("`{name}` is not a device of the scenario"),
                    suggest::did_you_mean(&name, &names).unwrap_or_else(|| {
                        format!(
                            "a job runs on the device its {key} names (/dev/<device> or /mnt/<device>/); the devices: {}",
                            suggest::list(&names)
                        )
                    }),
                ),
            ))
        }
    };
    if at.pinned && device != at.device {
        return Err((
            key,
            (
                format!("the job's {key} is on `{name}`, but the task's device is `{}`", names[at.device]),
                "make them agree, or drop the task's `device`: each job then runs where its files are".into(),
            ),
        ));
    }
    Ok((device, block))
}

/// How long a run of these tasks may last: the sum of their jobs' lengths where every job
/// has a `runtime` (an upper bound, as if they ran one after another), else `cap`.
pub fn longest_run(tasks: &[TaskConfig], cap: Ns) -> Ns {
    let mut total: Ns = 0;
    for t in tasks {
        let wblab_sim::config::JobConfig::Fio(j) = &t.job else { continue };
        match j.runtime {
            Some(r) => total = total.saturating_add(t.start + j.ramp + r),
            None => return cap,
        }
    }
    // Room for the end: in-flight I/O, end_fsync.
    total.saturating_add(60_000_000_000).min(cap)
}
