//! fio job files as workloads: `wblab run job.fio`, or `[[task]] fio = "job.fio"` in a
//! scenario for the machine, devices and knobs around it.
//!
//! The file is read as fio reads it: `[global]` sections set defaults for the jobs after
//! them, each other section is a job, `key=value` or a bare `key` per line, `;` and `#` start
//! comment lines. Every option fio documents that the model does not run is refused by name,
//! never ignored (see [`options`]). Each job becomes one `[[task]]` group: `numjobs` clones
//! on the task's device, started after `startdelay`, after the jobs before a `stonewall` or
//! named by `wait_for`.

pub(crate) mod options;
pub mod render;
pub mod value;

use crate::error::ScenarioError;
use crate::names;
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

/// Splits job-file text into its job sections; errors name `file` and the line.
pub fn sections(text: &str, file: &str) -> Result<Vec<JobSection>, ScenarioError> {
    let mut global: Vec<Opt> = Vec::new();
    let mut jobs: Vec<JobSection> = Vec::new();
    let mut names: HashSet<&str> = HashSet::new();
    // None before the first section; Some(None) in a [global]; Some(Some(i)) in job i.
    let mut cur: Option<Option<usize>> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if let Some((at, c)) = raw.chars().enumerate().find(|&(_, c)| c != '\t' && names::is_forbidden(c)) {
            return Err(ScenarioError {
                column: at + 1,
                ..err(
                    file,
                    line,
                    None,
                    format!("the line holds {}", names::describe_char(c)),
                    "a job file is lines of printable text (tabs allowed)",
                )
            });
        }
        let l = raw.trim();
        if l.is_empty() || l.starts_with(';') || l.starts_with('#') {
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            let Some(name) = rest.strip_suffix(']') else {
                return Err(err(
                    file,
                    line,
                    None,
                    format!("`{l}` opens a section without closing it"),
                    "write [jobname]",
                ));
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(err(file, line, None, "a section needs a name", "e.g. [randread]"));
            }
            if name == "global" {
                cur = Some(None);
            } else {
                if let Some((m, h)) = names::name_problem(name, "job") {
                    return Err(err(
                        file,
                        line,
                        None,
                        m,
                        format!("{h}: the name labels the job's results and files"),
                    ));
                }
                if !names.insert(name) {
                    return Err(err(
                        file,
                        line,
                        None,
                        format!("a second job named `{name}`"),
                        "job names must differ: wait_for and the output name jobs by them",
                    ));
                }
                jobs.push(JobSection {
                    name: name.to_string(),
                    line,
                    opts: global.clone(),
                    globals: global.len(),
                });
                cur = Some(Some(jobs.len() - 1));
            }
            continue;
        }
        if l.starts_with("include ") {
            return Err(err(
                file,
                line,
                Some("include"),
                "`include` of other job files is not supported",
                "paste the included options into this file",
            ));
        }
        let (key, value) = match l.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (l, None),
        };
        // Not echoed: a file that is not a job file (a scenario may name any path) must not
        // have its lines quoted back.
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err(
                file,
                line,
                None,
                "the line is not a fio option (`option` or `option=value`), a [section] or a comment",
                "is this a fio job file?",
            ));
        }
        if value.as_deref().is_some_and(|v| v.contains("${")) {
            return Err(err(
                file,
                line,
                Some(key),
                "environment variables (${VAR}) are not expanded",
                "write the value itself",
            ));
        }
        let opt = Opt {
            key: key.to_string(),
            value,
            line,
        };
        match cur {
            None => {
                return Err(err(
                    file,
                    line,
                    None,
                    "an option before any section",
                    "put it under [global] or a [jobname] section",
                ))
            }
            Some(None) => global.push(opt),
            Some(Some(j)) => jobs[j].opts.push(opt),
        }
    }
    if jobs.is_empty() {
        return Err(err(
            file,
            0,
            None,
            "no job in the file",
            "a job is a section other than [global], e.g. [randread] followed by rw=randread",
        ));
    }
    Ok(jobs)
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
    pub device: usize,
    pub device_name: String,
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
    let mut jobs = sections(text, file)?;
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
    let mut out: Vec<TaskConfig> = Vec::with_capacity(jobs.len());
    let mut group = 0u32;
    let mut clones = 0u64;
    for (index, sec) in jobs.iter().enumerate() {
        let mut b = JobBuilder::new(&sec.name, index as u32);
        for o in &sec.opts {
            b.apply(o).map_err(|(m, h)| err(file, o.line, Some(&o.key), m, h))?;
        }
        let built = b
            .finish()
            .map_err(|(m, h)| err(file, sec.line, None, format!("job `{}`: {m}", sec.name), h))?;
        // The scenario's bound on task instances holds for a job file too (a bare one has no
        // scenario to count them).
        clones += u64::from(built.numjobs);
        if clones > crate::limits::MAX_TASKS {
            let line = sec.opts.iter().rev().find(|o| o.key == "numjobs").map_or(sec.line, |o| o.line);
            return Err(err(
                file,
                line,
                Some("numjobs"),
                format!(
                    "{clones} job clones so far (jobs × numjobs), more than the {} task instances a run may have",
                    crate::limits::MAX_TASKS
                ),
                "each clone is a task with its own state and histograms; fewer clones with a deeper iodepth ask the same of the device",
            ));
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
                    return Err(err(
                        file,
                        line,
                        Some("wait_for"),
                        format!("no job `{w}` before job `{}`", sec.name),
                        "wait_for names a job defined earlier in the file",
                    ));
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
        let file_path = match &built.filename {
            Some(f) => {
                let base = f.rsplit('/').next().unwrap_or(f);
                format!("/mnt/{}/{}", at.device_name, base)
            }
            None => format!("/mnt/{}/{}.{{n}}", at.device_name, sec.name),
        };
        out.push(TaskConfig {
            name: sec.name.clone(),
            count: built.numjobs,
            device: at.device,
            file: file_path,
            start: at.start + built.startdelay,
            stagger: 0,
            stop: at.stop,
            ioprio: at.ioprio,
            cgroup: at.cgroup,
            after,
            job: wblab_sim::config::JobConfig::Fio(Box::new(job)),
        });
    }
    Ok(out)
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
