//! From the spanned TOML tree to a [`Scenario`]: the top-level keys here, one module per
//! section below, then the checks that span sections (device numbers, bdi minimums, files that
//! must fit on their device).

mod bdi;
pub(crate) mod catalogue;
mod device;
mod machine;
mod model;
mod policy;
mod queue;
mod sweep;
mod sysctl;
mod task;
mod throttle;

use crate::error::{Problem, Result};
use crate::section::{Entry, Nesting, Section};
use crate::suggest;
use std::path::Path;
use toml::de::{DeTable, DeValue};
use wblab_sim::config::{JobConfig, Scenario, TaskConfig, TraceConfig};
use wblab_sim::generations::{self, Generation};

pub(super) const TOP_KEYS: &[&str] = &[
    "name", "kernel", "duration", "seed", "hz", "machine", "sysctl", "device", "task", "trace", "policy", "sweep",
];
pub(super) const TRACE_KEYS: &[&str] = &["writeback", "block"];
/// CONFIG_HZ choices the kernel's Kconfig offers.
const HZ_CHOICES: &[u64] = &[100, 250, 300, 1000];
/// Parses `text`; `file_name` supplies the default scenario name (its stem). A file that lists
/// several kernels gives the scenario of the first.
pub(crate) fn scenario(text: &str, file_name: &str) -> Result<Scenario> {
    scenarios(text, file_name).map(|mut v| v.swap_remove(0))
}

/// Parses `text` into one scenario per kernel of `kernel` (a string or an array of them).
pub(crate) fn scenarios(text: &str, file_name: &str) -> Result<Vec<Scenario>> {
    let doc = DeTable::parse(text).map_err(syntax_problem)?;
    let root = Section::root(&doc)?;
    if let Some(e) = root.entries.iter().find(|e| !TOP_KEYS.contains(&e.key.as_str())) {
        return Err(misplaced(e));
    }
    let kernels = match root.get("kernel") {
        Some(e) => kernels(e)?,
        None => vec![("6.x".to_string(), generations::resolve("6.x").expect("6.x is a generation"))],
    };
    // A sweep file checks every value, and stands for its first one.
    let sw = root.get("sweep").map(sweep::parse).transpose()?;
    if let Some(s) = &sw {
        for i in 1..s.values.len() {
            for (kernel, generation) in &kernels {
                build_one(&root, file_name, kernel.clone(), generation, Some((s, i)))?;
            }
        }
    }
    kernels
        .into_iter()
        .map(|(kernel, generation)| build_one(&root, file_name, kernel, generation, sw.as_ref().map(|s| (s, 0))))
        .collect()
}

/// A file with a `[sweep]`: the knob, and one (value as written, scenario) per value, for the
/// first kernel the file lists. `None` for a file without a sweep.
pub(crate) fn sweep_scenarios(text: &str, file_name: &str) -> Result<Option<crate::SweepRuns>> {
    let doc = DeTable::parse(text).map_err(syntax_problem)?;
    let root = Section::root(&doc)?;
    let Some(e) = root.get("sweep") else { return Ok(None) };
    let sw = sweep::parse(e)?;
    let (kernel, generation) = match root.get("kernel") {
        Some(k) => kernels(k)?.swap_remove(0),
        None => ("6.x".to_string(), generations::resolve("6.x").expect("6.x is a generation")),
    };
    let mut runs = Vec::with_capacity(sw.values.len());
    for (i, label) in sw.labels().into_iter().enumerate() {
        runs.push((label, build_one(&root, file_name, kernel.clone(), generation, Some((&sw, i)))?));
    }
    Ok(Some((sw.key.clone(), runs)))
}

/// The scenario for one kernel: the generation's policies and default knobs, then the file.
/// `sweep`: the sweep and which of its values to write into the device tables.
fn build_one(
    root: &Section<'_>,
    file_name: &str,
    kernel: String,
    generation: &Generation,
    sweep: Option<(&sweep::Sweep<'_>, usize)>,
) -> Result<Scenario> {
    let name = match root.get("name") {
        Some(e) => scenario_name(e)?,
        None => default_name(file_name),
    };
    let policy = match root.get("policy") {
        Some(e) => policy::build(&e.table(Nesting::Keep, same)?, generation.policy_for(&kernel))?,
        None => generation.policy_for(&kernel),
    };
    let duration = root.value_or("duration", 60_000_000_000, |e| {
        e.duration_in(1_000_000, u64::MAX).map_err(|p| match e.value {
            DeValue::Integer(_) => p.hint("bare integers are nanoseconds; write a unit, e.g. duration = \"60s\""),
            _ => p,
        })
    })?;
    let seed = root.value_or("seed", 1, |e| e.uint(0, u64::MAX))?;
    let hz = root.value_or("hz", 250, |e| {
        let hz = e.uint(0, u64::MAX)?;
        if HZ_CHOICES.contains(&hz) {
            Ok(hz)
        } else {
            Err(e
                .problem(format!("CONFIG_HZ={hz} is not a kernel choice"))
                .hint("allowed: 100, 250, 300, 1000"))
        }
    })?;

    let machine = match root.get("machine") {
        Some(e) => machine::build(&e.table(Nesting::Keep, same)?)?,
        None => Default::default(),
    };
    if machine.highmem > 0 && policy.reclaim == wblab_sim::config::ReclaimKind::Modern {
        let at = root
            .get("machine")
            .and_then(|e| e.table(Nesting::Keep, same).ok())
            .and_then(|t| t.get("highmem").map(|h| h.key_at))
            .unwrap_or(root.at);
        return Err(Problem::new(
            at,
            "`highmem` (a 32-bit kernel's zones) is modelled with the old reclaim only".to_string(),
        )
        .key("highmem")
        .hint("use a 2.6.x or 3.x kernel, or drop highmem"));
    }
    // The release's default knobs first, then the file's.
    let sysctl_defaults = generations::default_sysctl(&kernel);
    let sysctl = match root.get("sysctl") {
        Some(e) => sysctl::build(&e.table(Nesting::Flatten('.'), sysctl::normalize)?, sysctl_defaults)?,
        None => sysctl_defaults,
    };
    let mut device_sections = match root.get("device") {
        Some(e) => e.tables(Nesting::Flatten('/'), device::normalize)?,
        None => Vec::new(),
    };
    if let Some((sw, i)) = sweep {
        sweep::apply(sw, i, &mut device_sections)?;
    }
    let mut devices = device::build_all(root.get("device"), &device_sections, generations::default_elevator(&kernel))?;
    generations::apply_nfs_commit(&mut devices, &kernel);
    if policy.queue.is_legacy() {
        legacy_queue_defaults(&mut devices, &device_sections);
    }
    let task_sections = match root.get("task") {
        Some(e) => e.tables(Nesting::Keep, same)?,
        None => Vec::new(),
    };
    let mut tasks = Vec::with_capacity(task_sections.len());
    for (i, sec) in task_sections.iter().enumerate() {
        let t = task::build(sec, &devices, duration)?;
        if let Some(prev) = tasks.iter().position(|p: &TaskConfig| p.name == t.name) {
            let at = sec.get("name").map_or(sec.at, |e| e.value_at);
            return Err(
                Problem::new(at, format!("task name `{}` is already used by task #{}", t.name, prev + 1))
                    .key("name")
                    .hint(format!(
                        "task names label the results; rename this one, e.g. `{}-{}`",
                        t.name,
                        i + 1
                    )),
            );
        }
        tasks.push(t);
    }
    check_files_fit(&task_sections, &tasks, &devices)?;
    let trace = match root.get("trace") {
        Some(e) => trace(&e.table(Nesting::Keep, same)?)?,
        None => TraceConfig::default(),
    };

    Ok(Scenario {
        name,
        kernel,
        policy,
        duration,
        seed,
        hz,
        machine,
        sysctl,
        devices,
        tasks,
        trace,
    })
}

/// Keys of sections that keep them as written.
fn same(key: String) -> String {
    key
}

fn syntax_problem(e: toml::de::Error) -> Problem {
    let at = e.span().map_or(0, |s| s.start);
    let p = Problem::new(at, format!("invalid TOML: {}", e.message()));
    if e.message().contains("duplicate key") {
        p.hint("each key may appear only once per table")
    } else if e.message().contains("quoted") {
        p.hint("strings need quotes: duration = \"60s\"; keys with `/` too: \"queue/scheduler\" = \"none\"")
    } else {
        p
    }
}

/// An unknown top-level key, with a hint at the section it probably belongs to.
fn misplaced(e: &Entry<'_>) -> Problem {
    let k = e.key.as_str();
    let hint = if k == "vm" || k.starts_with("vm.") {
        Some("sysctl knobs go under a [sysctl] header".to_string())
    } else if k.starts_with("queue") || k.starts_with("bdi") || k.starts_with("throttle") || k == "fs" || model::is_param(k) {
        Some("device knobs go in a [[device]] table".to_string())
    } else if ["memory", "cpus", "memory_bandwidth", "unreclaimable", "syscall_overhead"].contains(&k) {
        Some(format!("`{k}` goes under a [machine] header"))
    } else if ["job", "jobs", "workload", "workloads"].contains(&k) {
        Some("workloads are [[task]] tables with a `job` key, e.g. job = \"dd\"".to_string())
    } else {
        suggest::did_you_mean(k, TOP_KEYS)
    };
    e.key_problem("unknown top-level key")
        .hint(hint.unwrap_or_else(|| format!("top-level keys: {}", suggest::list(TOP_KEYS))))
}

/// The name becomes the results directory, so it must be a plain file name.
fn scenario_name(e: &Entry<'_>) -> Result<String> {
    let name = e.str()?;
    let plain = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    if plain {
        Ok(name.to_string())
    } else {
        Err(e
            .problem(format!("`{name}` cannot be used as a name"))
            .hint("the name becomes the results directory: use letters, digits, `-`, `_`, `.`"))
    }
}

fn default_name(file_name: &str) -> String {
    Path::new(file_name)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("scenario")
        .to_string()
}

/// `kernel = "2.6.20"` or `kernel = ["2.6.20", "2.6.24"]`: each release with its generation.
fn kernels(e: &Entry<'_>) -> Result<Vec<(String, &'static Generation)>> {
    let one = |k: &str| -> Result<(String, &'static Generation)> {
        generations::resolve(k)
            .map(|g| (k.trim().to_string(), g))
            .map_err(|err| e.problem(err.message()).hint(err.hint()))
    };
    match e.value {
        DeValue::Array(items) => {
            let mut out: Vec<(String, &'static Generation)> = Vec::new();
            for item in items.iter() {
                let DeValue::String(k) = item.get_ref() else {
                    return Err(e
                        .problem(format!(
                            "expected kernel releases as strings, found {}",
                            crate::section::describe(item.get_ref())
                        ))
                        .hint("e.g. kernel = [\"2.6.20\", \"2.6.24\"]"));
                };
                let k = one(k)?;
                if out.iter().any(|(o, _)| *o == k.0) {
                    return Err(e
                        .problem(format!("kernel `{}` is listed twice", k.0))
                        .hint("each kernel runs once; results go to results/<name>/<kernel>/"));
                }
                out.push(k);
            }
            if out.is_empty() {
                return Err(e.problem("no kernel in the list").hint("e.g. kernel = [\"2.6.20\", \"2.6.24\"]"));
            }
            Ok(out)
        }
        _ => Ok(vec![one(e.str()?)?]),
    }
}

/// Queue knobs of a legacy-era kernel (128 requests per direction, 512 KiB requests, 128 KiB
/// readahead, no blk-wbt), except those the file sets.
fn legacy_queue_defaults(devices: &mut [wblab_sim::config::DeviceConfig], sections: &[Section<'_>]) {
    for (i, d) in devices.iter_mut().enumerate() {
        let set = |k: &str| sections.get(i).is_some_and(|s| s.get(k).is_some());
        let q = &mut d.queue;
        let before = q.clone();
        generations::legacy_queue(q, &d.model);
        if set("queue/nr_requests") {
            q.nr_requests = before.nr_requests;
        }
        if set("queue/max_sectors_kb") {
            q.max_sectors_kb = before.max_sectors_kb;
        }
        if set("queue/read_ahead_kb") {
            q.read_ahead_kb = before.read_ahead_kb;
        }
        if set("queue/wbt_lat_usec") {
            q.wbt_lat_usec = before.wbt_lat_usec;
        }
    }
}

fn trace(sec: &Section<'_>) -> Result<TraceConfig> {
    sec.reject_unknown(TRACE_KEYS, "key in [trace]")?;
    let mut t = TraceConfig::default();
    sec.read("writeback", &mut t.writeback, |e| e.boolean())?;
    sec.read("block", &mut t.block, |e| e.boolean())?;
    Ok(t)
}

/// Files that `cat` and `randread` find already written must fit on their device.
fn check_files_fit(sections: &[Section<'_>], tasks: &[TaskConfig], devices: &[wblab_sim::config::DeviceConfig]) -> Result<()> {
    let mut used = vec![0u64; devices.len()];
    for (sec, t) in sections.iter().zip(tasks) {
        let file_size = match t.job {
            JobConfig::Cat { file_size, .. } | JobConfig::Randread { file_size, .. } => file_size,
            _ => continue,
        };
        let dev = &devices[t.device];
        let need = file_size
            .checked_mul(u64::from(t.count))
            .and_then(|b| b.checked_add(used[t.device]));
        match need {
            Some(total) if total <= dev.size => used[t.device] = total,
            _ => {
                let msg = format!(
                    "the pre-existing files of the tasks on `{}` need more than its size ({})",
                    dev.name,
                    crate::units::format_size(dev.size)
                );
                let p = match sec.get("file_size") {
                    Some(e) => e.problem(msg),
                    None => Problem::new(sec.at, msg),
                };
                let short = need.map_or(u64::MAX, |n| n - dev.size);
                return Err(p.hint(format!(
                    "lower file_size or count, or give the device a larger size (at least {} more)",
                    crate::units::format_size(short)
                )));
            }
        }
    }
    Ok(())
}
