//! The scenario's fio jobs run by real fio: one `fio` process for all of them (so fio itself
//! keeps `stonewall`, `wait_for` and `numjobs`), on a job file printed from the parsed jobs
//! (`wblab_scenario::fio::render`: numbers and closed-set words, never the text as written),
//! with each job's files placed in its device's scratch directory and its start as the
//! scenario computed it. fio's JSON and logs land in a scratch directory the harness copies
//! into the results.

use std::path::{Path, PathBuf};
use wblab_scenario::fio::render;
use wblab_sim::config::{JobConfig, Scenario, TaskConfig};

/// Options the harness writes itself: where the files are and when the job starts.
pub const PLACED: &[&str] = &["directory", "filename", "startdelay"];

/// The job file for real fio: every fio task group of `sc` as a section, its files in
/// `dirs[device]`. Errors name what cannot be run.
pub fn render(sc: &Scenario, dirs: &[PathBuf]) -> Result<String, String> {
    let mut out = String::from("; rendered by wblab measure from the scenario's fio jobs\n");
    // The jobs of one job file are consecutive tasks, its first with index 0.
    let mut file_start = 0;
    let fio: Vec<(usize, &TaskConfig)> = sc
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| matches!(t.job, JobConfig::Fio(_)))
        .collect();
    for (k, &(_, t)) in fio.iter().enumerate() {
        let JobConfig::Fio(j) = &t.job else { unreachable!() };
        // The job's I/O priority is rendered (prioclass, prio) and set by fio itself.
        if t.cgroup.is_some() {
            return Err(format!("fio job `{}`: a cgroup of fio tasks is not measured yet", j.name));
        }
        if j.index == 0 {
            file_start = k;
        }
        let earlier: Vec<&TaskConfig> = fio[file_start..k].iter().map(|&(_, t)| t).collect();
        let first_group = fio[file_start].0;
        out.push_str(&format!("[{}]\n", j.name));
        for line in render::section(t, j, &earlier, first_group) {
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str(&format!("directory={}\n", dirs[t.device].display()));
        if j.shared_file {
            let base = t.file.rsplit('/').next().unwrap_or(&t.file);
            out.push_str(&format!("filename={base}\n"));
        }
        if t.start > 0 {
            out.push_str(&format!("startdelay={}us\n", t.start.div_ceil(1_000)));
        }
    }
    Ok(out)
}

/// fio's arguments for a job file: JSON output into its out directory.
pub fn args(job_file: &Path) -> Vec<String> {
    vec![
        "--output-format=json".to_string(),
        format!("--output={}", out_dir(job_file).join(JSON_FILE).display()),
        // `--`: the job file is never read as an option.
        "--".to_string(),
        job_file.display().to_string(),
    ]
}

/// Where a job file's outputs go: fio runs there, and writes its JSON as [`JSON_FILE`].
pub fn out_dir(job_file: &Path) -> PathBuf {
    job_file.with_file_name("out")
}

pub const JSON_FILE: &str = "fio.json";

/// The files of the jobs that read, each once, with their sizes, as fio names them in
/// `dirs[device]` (`$jobname.$jobnum.$filenum`, or the shared file's name). The harness writes
/// them before the run: the model's fio finds its read files laid out, and a real fio finding
/// a file of the right size reads it as it is, so neither run spends its first seconds laying
/// out (fio would otherwise write them through the run's throttle rules and dirty limits, on
/// the clock, beside the other jobs).
pub fn read_files(sc: &Scenario, dirs: &[PathBuf]) -> Vec<(PathBuf, u64)> {
    let mut files: Vec<(PathBuf, u64)> = Vec::new();
    for t in &sc.tasks {
        let JobConfig::Fio(j) = &t.job else { continue };
        if !j.rw.reads() {
            continue;
        }
        let dir = &dirs[t.device];
        if j.shared_file {
            let base = t.file.rsplit('/').next().unwrap_or(&t.file);
            let path = dir.join(base);
            if !files.iter().any(|(f, _)| *f == path) {
                files.push((path, j.file_size));
            }
        } else {
            for jobnum in 0..t.count {
                for filenum in 0..j.nrfiles {
                    files.push((dir.join(format!("{}.{jobnum}.{filenum}", j.name)), j.file_size));
                }
            }
        }
    }
    files
}

/// Bytes of [`read_files`]: written by the harness before the run, not by a job.
pub fn layout_bytes(sc: &Scenario) -> u64 {
    let dirs = vec![PathBuf::new(); sc.devices.len()];
    read_files(sc, &dirs).iter().map(|(_, n)| n).sum()
}

/// Whether the scenario has fio jobs.
pub fn has_jobs(sc: &Scenario) -> bool {
    sc.tasks.iter().any(|t| matches!(t.job, JobConfig::Fio(_)))
}

/// Bytes read and written by every job of fio's JSON output.
pub fn json_bytes(path: &Path) -> Result<(u64, u64), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // fio may print notes before the JSON.
    let start = text.find('{').ok_or("no JSON in fio's output")?;
    let v: serde_json::Value = serde_json::from_str(&text[start..]).map_err(|e| format!("fio's JSON: {e}"))?;
    let mut rw = (0, 0);
    for j in v.get("jobs").and_then(|j| j.as_array()).into_iter().flatten() {
        let b = |d: &str| j.get(d).and_then(|x| x.get("io_bytes")).and_then(|x| x.as_u64()).unwrap_or(0);
        rw.0 += b("read");
        rw.1 += b("write");
    }
    Ok(rw)
}
