//! From the spanned TOML tree to a [`Scenario`]: the top-level keys here, one module per
//! section below, then the checks that span sections (device numbers, bdi minimums, files that
//! must fit on their device).

mod bdi;
mod device;
mod machine;
mod model;
mod queue;
mod sysctl;
mod task;

use crate::error::{Problem, Result};
use crate::section::{Entry, Nesting, Section};
use crate::suggest;
use std::path::Path;
use toml::de::{DeTable, DeValue};
use wblab_sim::config::{JobConfig, Scenario, TaskConfig, TraceConfig};

const TOP_KEYS: &[&str] = &[
    "name", "kernel", "duration", "seed", "hz", "machine", "sysctl", "device", "task", "trace",
];
const TRACE_KEYS: &[&str] = &["writeback", "block"];
/// CONFIG_HZ choices the kernel's Kconfig offers.
const HZ_CHOICES: &[u64] = &[100, 250, 300, 1000];
const KERNEL_HINT: &str = "only 6.x is modelled so far (older generations: see issue tracker)";

/// Parses `text`; `file_name` supplies the default scenario name (its stem).
pub(crate) fn scenario(text: &str, file_name: &str) -> Result<Scenario> {
    let doc = DeTable::parse(text).map_err(syntax_problem)?;
    let root = Section::root(&doc)?;
    if let Some(e) = root.entries.iter().find(|e| !TOP_KEYS.contains(&e.key.as_str())) {
        return Err(misplaced(e));
    }

    let name = match root.get("name") {
        Some(e) => scenario_name(e)?,
        None => default_name(file_name),
    };
    let kernel = root.value_or("kernel", "6.x".to_string(), kernel)?;
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
    let sysctl = match root.get("sysctl") {
        Some(e) => sysctl::build(&e.table(Nesting::Flatten('.'), sysctl::normalize)?)?,
        None => Default::default(),
    };
    let device_sections = match root.get("device") {
        Some(e) => e.tables(Nesting::Flatten('/'), device::normalize)?,
        None => Vec::new(),
    };
    let devices = device::build_all(root.get("device"), &device_sections)?;
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
    } else if k.starts_with("queue") || k.starts_with("bdi") || model::is_param(k) {
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

/// "6.x", or a concrete 6.N / 6.N.M release (all modelled by the same code for now).
fn kernel(e: &Entry<'_>) -> Result<String> {
    let k = e.str()?;
    let numeric = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let ok = match k.strip_prefix("6.") {
        Some("x") => true,
        Some(rest) => {
            let mut parts = rest.split('.');
            let minor = parts.next().is_some_and(numeric);
            let patch = parts.next().is_none_or(numeric);
            minor && patch && parts.next().is_none()
        }
        None => false,
    };
    if ok {
        Ok(k.to_string())
    } else {
        Err(e.problem(format!("kernel `{k}` is not modelled")).hint(KERNEL_HINT))
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
