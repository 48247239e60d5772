//! From the spanned TOML tree to a [`Scenario`]: the top-level keys here, one module per
//! section below, then the checks that span sections (device numbers, bdi minimums, files that
//! must fit on their device).

mod bdi;
pub(crate) mod catalogue;
mod cgroup;
mod device;
mod machine;
mod model;
pub(crate) mod mount;
mod policy;
mod queue;
mod sweep;
pub use sweep::{KEY_SEPARATOR as SWEEP_KEY_SEPARATOR, MAX_POINTS as SWEEP_MAX_POINTS, VALUE_SEPARATOR as SWEEP_VALUE_SEPARATOR};
mod sysctl;
mod task;
mod throttle;

use crate::error::{Problem, Problems, Result};
use crate::section::{Entry, Nesting, Section};
use crate::{names, suggest};
use std::path::Path;
use toml::de::{DeTable, DeValue};
use wblab_sim::config::{JobConfig, Scenario, TaskConfig, TraceConfig};
use wblab_sim::generations::{self, Generation};

pub(super) const TOP_KEYS: &[&str] = &[
    "name",
    "kernel",
    "duration",
    "until_done",
    "seed",
    "hz",
    "machine",
    "sysctl",
    "device",
    "task",
    "trace",
    "policy",
    "sweep",
    "cgroup",
];
pub(super) const TRACE_KEYS: &[&str] = &["writeback", "block"];
/// CONFIG_HZ choices the kernel's Kconfig offers.
const HZ_CHOICES: &[u64] = &[100, 250, 300, 1000];
/// Parses `text`; `file_name` supplies the default scenario name (its stem). A file that lists
/// several kernels gives the scenario of the first.
pub(crate) fn scenario(text: &str, file_name: &str) -> std::result::Result<Scenario, Problems> {
    scenarios(text, file_name).map(|mut v| v.swap_remove(0))
}

/// The file's top level: its sections, the kernels it lists and its sweep. Errors here stop
/// the parse (everything else depends on them), except unknown top-level keys, which are all
/// reported and left out (see [`top_keys`]).
fn top<'a>(doc: &'a toml::Spanned<DeTable<'a>>) -> std::result::Result<Section<'a>, Problems> {
    let mut forbidden = Problems::new();
    forbidden_characters(doc.get_ref(), "", &mut forbidden);
    if !forbidden.is_empty() {
        return Err(forbidden);
    }
    Section::root(doc).map_err(|p| vec![p])
}

/// A problem for each top-level key the format does not have; the rest of the file is still
/// built, so its own mistakes are reported with these.
fn top_keys(root: &Section<'_>) -> Problems {
    root.entries
        .iter()
        .filter(|e| !TOP_KEYS.contains(&e.key.as_str()))
        .map(misplaced)
        .collect()
}

/// [`top`] for the callers that only read the sweep: a misplaced key is an error at once.
fn top_strict<'a>(doc: &'a toml::Spanned<DeTable<'a>>) -> std::result::Result<Section<'a>, Problems> {
    let root = top(doc)?;
    let misplaced = top_keys(&root);
    if misplaced.is_empty() {
        Ok(root)
    } else {
        Err(misplaced)
    }
}

fn file_kernels(root: &Section<'_>) -> Result<Vec<(String, &'static Generation)>> {
    match root.get("kernel") {
        Some(e) => kernels(e),
        None => Ok(vec![("6.x".to_string(), generations::resolve("6.x").expect("6.x is a generation"))]),
    }
}

/// Points of a sweep that [`scenarios`] checks one by one; beyond, it checks each key's
/// values once ([`sweep::Sweep::covering`]) and every point is checked again as it runs.
pub const CHECK_EVERY_POINT_UP_TO: u64 = 256;

/// Parses `text` into one scenario per kernel of `kernel` (a string or an array of them).
pub(crate) fn scenarios(text: &str, file_name: &str) -> std::result::Result<Vec<Scenario>, Problems> {
    let doc = DeTable::parse(text).map_err(|e| vec![syntax_problem(e)])?;
    let root = top(&doc)?;
    let misplaced = top_keys(&root);
    match (scenarios_of(&root, file_name), misplaced.is_empty()) {
        (Ok(all), true) => Ok(all),
        (Ok(_), false) => Err(misplaced),
        (Err(mut p), _) => {
            p.extend(misplaced);
            Err(p)
        }
    }
}

/// [`scenarios`] once the top level is read: the unknown top-level keys are left out.
fn scenarios_of(root: &Section<'_>, file_name: &str) -> std::result::Result<Vec<Scenario>, Problems> {
    let kept: Vec<Entry<'_>> = root
        .entries
        .iter()
        .filter(|e| TOP_KEYS.contains(&e.key.as_str()))
        .cloned()
        .collect();
    let root = Section {
        at: root.at,
        entries: kept,
    };
    let kernels = file_kernels(&root).map_err(|p| vec![p])?;
    // A sweep file checks its points, and stands for its first one.
    let sw = root.get("sweep").map(sweep::parse).transpose().map_err(|p| vec![p])?;
    if let Some(s) = &sw {
        let checked: Vec<(Option<u64>, Vec<sweep::Pick>)> = if s.len() <= CHECK_EVERY_POINT_UP_TO {
            (1..s.len()).map(|i| (Some(i), s.picks(i))).collect()
        } else {
            s.covering().into_iter().map(|p| (None, p)).collect()
        };
        for (index, picks) in &checked {
            for (kernel, generation) in &kernels {
                build_at(&root, file_name, s, picks, kernel, generation).map_err(|p| at_point(p, s, picks, *index))?;
            }
        }
    }
    kernels
        .into_iter()
        .map(|(kernel, generation)| match &sw {
            Some(s) => {
                let picks = s.picks(0);
                build_at(&root, file_name, s, &picks, &kernel, generation).map_err(|p| at_point(p, s, &picks, Some(0)))
            }
            None => build_one(&root, file_name, kernel, generation, None),
        })
        .collect()
}

/// The scenario at a sweep's point: its values written into the file's tables, a swept kernel
/// replacing the file's.
fn build_at(
    root: &Section<'_>,
    file_name: &str,
    sw: &sweep::Sweep<'_>,
    picks: &[sweep::Pick],
    kernel: &str,
    generation: &'static Generation,
) -> std::result::Result<Scenario, Problems> {
    let drawn = sw.drawn(picks);
    let parsed = sweep::parse_drawn(&drawn);
    let point = sw.point(picks, &parsed);
    let (kernel, generation) = match sweep::run_kernel(&point) {
        Some(e) => kernels(&e).map_err(|p| vec![p])?.swap_remove(0),
        None => (kernel.to_string(), generation),
    };
    let mut sc = build_one(root, file_name, kernel, generation, Some(&point))?;
    if let Some(e) = sweep::run_without(&point) {
        let who = e.str().map_err(|p| vec![p])?;
        if !who.is_empty() {
            sc.without(who).map_err(|m| {
                vec![e
                    .problem(m.trim_start_matches("--without ").to_string())
                    .hint("a cgroup's path (\"/etl\"), a [[task]] name, or \"\" for the whole scenario")]
            })?;
        }
    }
    Ok(sc)
}

/// Problems at a sweep's point say which point: its index (when it is one of the sweep's,
/// not one made to check a value) and values.
fn at_point(problems: Problems, sw: &sweep::Sweep<'_>, picks: &[sweep::Pick], index: Option<u64>) -> Problems {
    let labels = sw.labels(picks, &sw.drawn(picks));
    let values: Vec<String> = sw.keys().iter().zip(&labels).map(|(k, v)| format!("{k}={v}")).collect();
    let point = match index {
        Some(i) => format!("at the sweep's point {i}: {}", values.join(", ")),
        None => format!("at the sweep's point with {}", values.join(", ")),
    };
    problems
        .into_iter()
        .map(|mut p| {
            p.message = format!("{} ({point})", p.message);
            p
        })
        .collect()
}

/// A file's sweep, parsed once: its keys, its points' count and whether they are drawn at
/// random. `None` for a file without a sweep.
pub(crate) fn sweep_info(text: &str) -> std::result::Result<Option<(Vec<String>, u64, bool)>, Problems> {
    let doc = DeTable::parse(text).map_err(|e| vec![syntax_problem(e)])?;
    let root = top_strict(&doc)?;
    let Some(e) = root.get("sweep") else { return Ok(None) };
    let sw = sweep::parse(e).map_err(|p| vec![p])?;
    Ok(Some((sw.keys(), sw.len(), matches!(sw.mode, sweep::Mode::Random { .. }))))
}

/// Each key's value (as the tables show it) at the points `from..to`.
pub(crate) fn sweep_values(text: &str, from: u64, to: u64) -> std::result::Result<Vec<Vec<String>>, Problems> {
    let doc = DeTable::parse(text).map_err(|e| vec![syntax_problem(e)])?;
    let root = top_strict(&doc)?;
    let e = root.get("sweep").ok_or_else(Problems::new)?;
    let sw = sweep::parse(e).map_err(|p| vec![p])?;
    Ok((from..to.min(sw.len()))
        .map(|i| {
            let picks = sw.picks(i);
            sw.labels(&picks, &sw.drawn(&picks))
        })
        .collect())
}

/// A builder of the file's sweep points (point `i`: its values and scenario, for the first
/// kernel the file lists or the swept one), the file parsed once, given to `f`: building many
/// points costs their building only.
pub(crate) fn with_sweep_points<R>(
    text: &str,
    file_name: &str,
    f: impl FnOnce(&dyn Fn(u64) -> std::result::Result<(Vec<String>, Scenario), Problems>) -> R,
) -> std::result::Result<R, Problems> {
    let doc = DeTable::parse(text).map_err(|e| vec![syntax_problem(e)])?;
    let root = top_strict(&doc)?;
    let e = root.get("sweep").ok_or_else(Problems::new)?;
    let sw = sweep::parse(e).map_err(|p| vec![p])?;
    let (kernel, generation) = file_kernels(&root).map_err(|p| vec![p])?.swap_remove(0);
    let build = |i: u64| {
        let picks = sw.picks(i);
        let labels = sw.labels(&picks, &sw.drawn(&picks));
        let sc = build_at(&root, file_name, &sw, &picks, &kernel, generation).map_err(|p| at_point(p, &sw, &picks, Some(i)))?;
        Ok((labels, sc))
    };
    Ok(f(&build))
}

/// Point `i` of the file's sweep: its values and scenario, for the first kernel the file lists
/// (or the swept one).
pub(crate) fn sweep_point(text: &str, file_name: &str, i: u64) -> std::result::Result<(Vec<String>, Scenario), Problems> {
    with_sweep_points(text, file_name, |build| build(i))?
}

/// The value of a part of the file, or `None` with its problem kept: the parts a later check
/// does not depend on are all checked, so one run shows every independent mistake.
fn keep<T, E: Into<Problems>>(problems: &mut Problems, r: std::result::Result<T, E>) -> Option<T> {
    r.map_err(|p| problems.extend(p.into())).ok()
}

/// The scenario for one kernel: the generation's policies and default knobs, then the file.
/// Sections are checked independently; checks that span sections run once their parts are
/// sound.
fn build_one(
    root: &Section<'_>,
    file_name: &str,
    kernel: String,
    generation: &Generation,
    sweep: Option<&sweep::Point<'_>>,
) -> std::result::Result<Scenario, Problems> {
    let mut problems = Problems::new();
    let p = &mut problems;
    // A sweep's `duration`, `seed` and `hz` replace the file's.
    let swept_root;
    let root = match sweep {
        Some(pt) => {
            let mut r = root.clone();
            sweep::apply_top(pt, &mut r);
            swept_root = r;
            &swept_root
        }
        None => root,
    };
    let name = keep(p, root.get("name").map_or_else(|| Ok(default_name(file_name)), scenario_name));
    let policy = keep(
        p,
        table_with_sweep(root, "policy", sweep, sweep::Target::Policy)
            .map_err(Problems::from)
            .and_then(|t| match t {
                Some(t) => policy::build(&t, generation.policy_for(&kernel)),
                None => Ok(generation.policy_for(&kernel)),
            }),
    );
    let duration = keep(p, root.value_or("duration", 60_000_000_000, run_duration));
    let seed = keep(p, root.value_or("seed", 1, |e| e.uint(0, u64::MAX)));
    let until_done = keep(p, root.value_or("until_done", false, |e| e.boolean())).unwrap_or(false);
    let hz = keep(p, root.value_or("hz", 250, config_hz));
    let machine = keep(
        p,
        table_with_sweep(root, "machine", sweep, sweep::Target::Machine)
            .map_err(Problems::from)
            .and_then(|t| match t {
                Some(t) => machine::build(&t),
                None => Ok(Default::default()),
            }),
    );
    if let (Some(m), Some(pol)) = (&machine, &policy) {
        keep(p, check_highmem(root, m, pol));
    }
    // The release's default knobs first, then the file's.
    let sysctl_defaults = generations::default_sysctl(&kernel);
    let sysctl = keep(
        p,
        match root.get("sysctl") {
            Some(e) => e.table(Nesting::Flatten('.'), sysctl::normalize),
            None => Ok(Section {
                at: 0,
                entries: Vec::new(),
            }),
        }
        .map_err(Problems::from)
        .and_then(|mut t| {
            if let Some(pt) = sweep {
                sweep::apply_sysctl(pt, &mut t);
            }
            sysctl::build(&t, sysctl_defaults)
        }),
    );
    let mut what_if = Vec::new();
    let devices = keep(p, devices(root, &kernel, policy.as_ref(), sweep)).map(|(d, w)| {
        what_if.extend(w);
        d
    });
    let task_sections = keep(
        p,
        root.get("task")
            .map_or(Ok(Vec::new()), |e| e.tables(Nesting::Keep, same))
            .and_then(|mut t| {
                if let Some(pt) = sweep {
                    sweep::apply_tasks(pt, &mut t)?;
                }
                Ok(t)
            }),
    )
    .unwrap_or_default();
    let cgroups = devices
        .as_ref()
        .and_then(|d| keep(p, cgroups(root, &kernel, policy.as_ref(), d, sweep)))
        .map(|(c, w)| {
            what_if.extend(w);
            c
        });
    // Tasks are checked against the devices and cgroups; against the longest run if the
    // duration is at fault (only `start` depends on it).
    let tasks = match (&devices, &cgroups) {
        (Some(d), Some(cg)) => {
            let fio = sweep.map(sweep::fio_overrides).unwrap_or_default();
            tasks(
                p,
                &task_sections,
                (d, cg),
                duration.unwrap_or(crate::limits::MAX_DURATION),
                file_name,
                &fio,
            )
        }
        _ => {
            // The tasks' own keys are still checked, without a device to put them on.
            for sec in task_sections.iter().filter(|s| s.get("fio").is_none()) {
                keep(p, task::build(sec, None, duration.unwrap_or(crate::limits::MAX_DURATION)));
            }
            None
        }
    };
    let trace = keep(
        p,
        root.get("trace")
            .map_or(Ok(TraceConfig::default()), |e| trace(&e.table(Nesting::Keep, same)?)),
    );
    match (name, policy, duration, seed, hz, machine, sysctl, devices, tasks, trace, cgroups) {
        (
            Some(name),
            Some(policy),
            Some(duration),
            Some(seed),
            Some(hz),
            Some(machine),
            Some(sysctl),
            Some(devices),
            Some(tasks),
            Some(trace),
            Some(cgroups),
        ) if problems.is_empty() => Ok(Scenario {
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
            cgroups,
            until_done,
            what_if,
        }),
        _ => Err(problems),
    }
}

/// The file's `[machine]` or `[policy]` table with the sweep's values for it written in;
/// `None` when neither sets anything.
fn table_with_sweep<'a>(
    root: &Section<'a>,
    name: &str,
    sweep: Option<&sweep::Point<'a>>,
    to: sweep::Target,
) -> Result<Option<Section<'a>>> {
    let mut t = root.get(name).map(|e| e.table(Nesting::Keep, same)).transpose()?;
    if let Some(pt) = sweep.filter(|pt| !sweep::entries_for(pt, to).is_empty()) {
        let sec = t.get_or_insert(Section {
            at: 0,
            entries: Vec::new(),
        });
        sweep::apply_section(pt, to, sec);
    }
    Ok(t)
}

fn run_duration(e: &Entry<'_>) -> Result<u64> {
    e.duration_in(1_000_000, crate::limits::MAX_DURATION).map_err(|p| match e.value {
        DeValue::Integer(_) => p.hint("bare integers are nanoseconds; write a unit, e.g. duration = \"60s\""),
        _ if p.hint.is_none() => p.hint("at most 24 h: per-second samples and the trace are kept in memory"),
        _ => p,
    })
}

fn config_hz(e: &Entry<'_>) -> Result<u64> {
    let hz = e.uint(0, u64::MAX)?;
    if HZ_CHOICES.contains(&hz) {
        Ok(hz)
    } else {
        Err(e
            .problem(format!("CONFIG_HZ={hz} is not a kernel choice"))
            .hint("allowed: 100, 250, 300, 1000"))
    }
}

fn check_highmem(root: &Section<'_>, machine: &wblab_sim::config::MachineConfig, policy: &wblab_sim::config::PolicyConfig) -> Result<()> {
    if machine.highmem == 0 || policy.reclaim != wblab_sim::config::ReclaimKind::Modern {
        return Ok(());
    }
    let at = root
        .get("machine")
        .and_then(|e| e.table(Nesting::Keep, same).ok())
        .and_then(|t| t.get("highmem").map(|h| h.key_at))
        .unwrap_or(root.at);
    Err(Problem::new(
        at,
        "`highmem` (a 32-bit kernel's zones) is modelled with the old reclaim only".to_string(),
    )
    .key("highmem")
    .hint("use a 2.6.x or 3.x kernel, or drop highmem"))
}

/// The devices, with the sweep's value written in and the era's queue defaults.
fn devices(
    root: &Section<'_>,
    kernel: &str,
    policy: Option<&wblab_sim::config::PolicyConfig>,
    sweep: Option<&sweep::Point<'_>>,
) -> std::result::Result<(Vec<wblab_sim::config::DeviceConfig>, Vec<String>), Problems> {
    let mut device_sections = match root.get("device") {
        Some(e) => e.tables(Nesting::Flatten('/'), device::normalize)?,
        None => Vec::new(),
    };
    if let Some(pt) = sweep {
        sweep::apply(pt, &mut device_sections)?;
    }
    let mut devices = device::build_all(root.get("device"), &device_sections, kernel)?;
    generations::apply_nfs_commit(&mut devices, kernel);
    if policy.is_some_and(|p| p.queue.is_legacy()) {
        legacy_queue_defaults(&mut devices, &device_sections);
    }
    let legacy = policy.is_some_and(|p| p.queue.is_legacy());
    let what_if = release_features(&mut devices, &device_sections, kernel, legacy);
    Ok((devices, what_if))
}

/// What the release had: a default it lacks is left out (blk-wbt off, no elevator where the
/// blk-mq ones were not yet merged); a queue key the file sets for a feature it lacks is run as
/// asked and returned as a what-if for the run's header. The elevators are checked on blk-mq
/// queues only: a legacy-era queue runs the era's elevators (`mq-deadline` standing in for the
/// legacy `deadline` where the file asks for it).
fn release_features(devices: &mut [wblab_sim::config::DeviceConfig], sections: &[Section<'_>], kernel: &str, legacy: bool) -> Vec<String> {
    use wblab_sim::generations::features::{self, lacks, Feature};
    let mut what_if = Vec::new();
    let note = |dev: &str, key: &str, f: &Feature| f.what_if(&format!("{dev} {key}"), kernel);
    for (i, d) in devices.iter_mut().enumerate() {
        let given = |k: &str| sections.get(i).is_some_and(|s| s.get(k).is_some());
        if let Some(f) = features::elevator_feature(d.queue.scheduler).filter(|f| !legacy && lacks(kernel, f)) {
            if given("queue/scheduler") {
                what_if.push(note(&d.name, "queue/scheduler", &f));
            } else {
                d.queue.select_elevator(wblab_sim::config::SchedulerKind::NONE);
            }
        }
        if lacks(kernel, &features::WBT) && d.queue.wbt_lat_usec != 0 {
            if given("queue/wbt_lat_usec") {
                what_if.push(note(&d.name, "queue/wbt_lat_usec", &features::WBT));
            } else {
                d.queue.wbt_lat_usec = 0;
            }
        }
    }
    what_if
}

/// The `[[cgroup]]` tree. Memory cgroups are modelled on the 6.x kernel only: their reclaim,
/// cgroup writeback and memcg dirty domain are built on that generation's pieces.
fn cgroups(
    root: &Section<'_>,
    kernel: &str,
    policy: Option<&wblab_sim::config::PolicyConfig>,
    devices: &[wblab_sim::config::DeviceConfig],
    sweep: Option<&sweep::Point<'_>>,
) -> Result<(wblab_sim::config::CgroupTree, Vec<String>)> {
    let Some(e) = root.get("cgroup") else {
        return Ok(Default::default());
    };
    let mut sections = e.tables(Nesting::Flatten('.'), cgroup::normalize)?;
    if let Some(pt) = sweep {
        sweep::apply_cgroups(pt, &mut sections)?;
    }
    let tree = cgroup::build(e.key_at, &sections, devices)?;
    use wblab_sim::config::{FlusherKind, ReclaimKind, ThrottleKind};
    if let Some(pol) = policy {
        let modern = pol.throttle == ThrottleKind::Modern && pol.reclaim == ReclaimKind::Modern && pol.flusher == FlusherKind::Modern;
        if !tree.is_empty() && !modern {
            let message = if pol.generation == "6.x" {
                "cgroups need the 6.x throttle, flusher and reclaim policies, which [policy] replaces".to_string()
            } else {
                format!("cgroups are modelled on the 6.x kernel only, not on {}", pol.generation)
            };
            return Err(e
                .key_problem(message)
                .hint("use kernel = \"6.x\" (or a 4.2+ release) with its own policies, or drop the [[cgroup]] tables"));
        }
    }
    let what_if = cgroup_features(&sections, &tree, kernel);
    Ok((tree, what_if))
}

/// The cgroup files the file sets that release `kernel` lacked, as what-ifs: `io.max` (4.5),
/// `io.latency` (4.19), `io.bfq.weight` (4.12), and a v2 group's memory limits, which need
/// cgroup writeback (4.2).
fn cgroup_features(sections: &[Section<'_>], tree: &wblab_sim::config::CgroupTree, kernel: &str) -> Vec<String> {
    use wblab_sim::generations::features::{lacks, BFQ, CGROUP_WRITEBACK, IO_LATENCY, IO_MAX};
    let v2 = tree.version == wblab_sim::config::CgroupVersion::V2;
    let needs = [
        ("io.max", IO_MAX),
        ("io.latency", IO_LATENCY),
        ("io.bfq.weight", BFQ),
        ("memory.max", CGROUP_WRITEBACK),
        ("memory.high", CGROUP_WRITEBACK),
        ("memory.low", CGROUP_WRITEBACK),
    ];
    let mut what_if: Vec<String> = Vec::new();
    for (key, f) in &needs {
        let used = sections.iter().any(|s| s.get(key).is_some());
        let memory_v1 = !v2 && key.starts_with("memory.");
        if used && !memory_v1 && lacks(kernel, f) && !what_if.iter().any(|w| w.contains(f.what)) {
            what_if.push(f.what_if(&format!("cgroup {key}"), kernel));
        }
    }
    what_if
}

/// Every task, each checked on its own; then the checks across tasks.
fn tasks(
    p: &mut Problems,
    sections: &[Section<'_>],
    (devices, cgroups): (&[wblab_sim::config::DeviceConfig], &wblab_sim::config::CgroupTree),
    duration: u64,
    file_name: &str,
    fio: &[(String, String, String, usize)],
) -> Option<Vec<TaskConfig>> {
    let before = p.len();
    let mut tasks = Vec::with_capacity(sections.len());
    // The section each task comes from (a fio job file gives several).
    let mut owners: Vec<usize> = Vec::with_capacity(sections.len());
    for (i, sec) in sections.iter().enumerate() {
        if sec.get("fio").is_some() {
            if let Some(ts) = keep(p, task::build_fio(sec, (devices, cgroups), duration, tasks.len(), file_name, fio)) {
                for t in ts {
                    if tasks.iter().any(|q: &TaskConfig| q.name == t.name) {
                        p.push(
                            Problem::new(
                                sec.get("fio").map_or(sec.at, |e| e.value_at),
                                format!("fio job `{}` has the name of another task", t.name),
                            )
                            .key("fio")
                            .hint("task names label the results; rename the job section or the other task"),
                        );
                    }
                    owners.push(i);
                    tasks.push(t);
                }
            }
            continue;
        }
        let Some(t) = keep(p, task::build(sec, Some((devices, cgroups)), duration)) else {
            continue;
        };
        if let Some(prev) = tasks.iter().position(|q: &TaskConfig| q.name == t.name) {
            let at = sec.get("name").map_or(sec.at, |e| e.value_at);
            p.push(
                Problem::new(at, format!("task name `{}` is already used by task #{}", t.name, prev + 1))
                    .key("name")
                    .hint(format!(
                        "task names label the results; rename this one, e.g. `{}-{}`",
                        t.name,
                        i + 1
                    )),
            );
        }
        owners.push(i);
        tasks.push(t);
    }
    // A swept fio option must name a job of the file (once the files themselves are sound).
    let sound = p.len() == before;
    for (job, _, _, at) in fio.iter().filter(|_| sound) {
        if !tasks.iter().any(|t| matches!(t.job, JobConfig::Fio(_)) && &t.name == job) {
            let jobs: Vec<&str> = tasks
                .iter()
                .filter(|t| matches!(t.job, JobConfig::Fio(_)))
                .map(|t| t.name.as_str())
                .collect();
            p.push(Problem::new(*at, format!("no fio job is named `{job}`")).hint(format!(
                "fio/<job>/<option> names a job by its section; the jobs are {}",
                suggest::list(&jobs)
            )));
        }
    }
    if p.len() > before {
        return None;
    }
    let secs: Vec<&Section<'_>> = owners.iter().map(|&i| &sections[i]).collect();
    keep(p, check_task_count(&secs, &tasks))?;
    keep(p, check_files_fit(&secs, &tasks, devices))?;
    Some(tasks)
}

/// Every key and string of the file holding a character no scenario string may hold
/// ([`names::is_forbidden`]): such a string could start a new line in a job file, a command
/// or a terminal. Only a task's inline fio job text spans lines. `path` is the dotted key of
/// `table` (`task.fio`: arrays of tables add nothing).
fn forbidden_characters(table: &DeTable<'_>, path: &str, p: &mut Problems) {
    for (key, value) in table.iter() {
        let name = if path.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{path}.{}", key.get_ref())
        };
        if let Some((_, c)) = names::forbidden_in_line(key.get_ref()) {
            p.push(
                Problem::new(key.span().start, format!("the key holds {}", names::describe_char(c)))
                    .key(names::shown(key.get_ref()))
                    .hint("keys are one line of printable text"),
            );
        }
        forbidden_in_value(value, &name, key.get_ref(), p);
    }
}

fn forbidden_in_value(value: &toml::Spanned<DeValue<'_>>, path: &str, key: &str, p: &mut Problems) {
    match value.get_ref() {
        DeValue::String(s) => {
            let inline_fio = path == "task.fio";
            let found = if inline_fio {
                names::forbidden_in_text(s)
            } else {
                names::forbidden_in_line(s)
            };
            if let Some((at, c)) = found {
                let hint = if inline_fio {
                    "an inline fio job file is lines of printable text (tabs allowed)"
                } else {
                    "strings in a scenario are one line of printable text; only a task's inline fio job text spans lines"
                };
                p.push(
                    Problem::new(
                        value.span().start,
                        format!("the value holds {} at character {}", names::describe_char(c), at + 1),
                    )
                    .key(names::shown(key))
                    .hint(hint),
                );
            }
        }
        DeValue::Array(items) => {
            for item in items.iter() {
                forbidden_in_value(item, path, key, p);
            }
        }
        DeValue::Table(t) => forbidden_characters(t, path, p),
        _ => {}
    }
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
    } else if k.starts_with("queue")
        || k.starts_with("bdi")
        || k.starts_with("throttle")
        || k == "fs"
        || k == "journal_size"
        || k == "fast_commit"
        || model::is_param(k)
    {
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
    match names::name_problem(name, "scenario") {
        Some((m, h)) => Err(e.problem(m).hint(format!("{h}: the name becomes the results directory"))),
        None => Ok(name.to_string()),
    }
}

fn default_name(file_name: &str) -> String {
    let stem = Path::new(file_name).file_stem().map(|s| s.to_string_lossy());
    names::from_stem(stem.as_deref().unwrap_or(""), "scenario")
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
/// The sum of the tasks' counts stays within [`crate::limits::MAX_TASKS`]; the task that
/// crosses it is named.
fn check_task_count(sections: &[&Section<'_>], tasks: &[TaskConfig]) -> Result<()> {
    let max = crate::limits::MAX_TASKS;
    let mut total = 0u64;
    for (sec, t) in sections.iter().zip(tasks) {
        total += u64::from(t.count);
        if total > max {
            let at = sec.get("count").map_or(sec.at, |e| e.value_at);
            return Err(Problem::new(
                at,
                format!("{total} task instances so far, more than the {max} a scenario may have"),
            )
            .key("count")
            .hint("each instance keeps its own latency histograms and state in memory; fewer tasks with a larger bs or rate ask the same of the device"));
        }
    }
    Ok(())
}

fn check_files_fit(sections: &[&Section<'_>], tasks: &[TaskConfig], devices: &[wblab_sim::config::DeviceConfig]) -> Result<()> {
    let mut used = vec![0u64; devices.len()];
    for (sec, t) in sections.iter().zip(tasks) {
        let file_size = match &t.job {
            JobConfig::Cat { file_size, .. } | JobConfig::Randread { file_size, .. } | JobConfig::Tiotest { file_size, .. } => {
                Some(*file_size)
            }
            // An application's files, their sizes taken in turn.
            JobConfig::Launch { files, file_sizes, .. } => {
                (0..*files as usize).try_fold(0u64, |sum, i| sum.checked_add(file_sizes[i % file_sizes.len()]))
            }
            // fio lays out or preallocates every file; a named file once for all clones.
            JobConfig::Fio(j) if j.shared_file => {
                if tasks.iter().take_while(|q| !std::ptr::eq(*q, t)).any(|q| q.file == t.file) {
                    continue;
                }
                Some(j.file_size)
            }
            JobConfig::Fio(j) => j.file_size.checked_mul(u64::from(j.nrfiles)),
            _ => continue,
        };
        let dev = &devices[t.device];
        let instances = if matches!(&t.job, JobConfig::Fio(j) if j.shared_file) {
            1
        } else {
            u64::from(t.count)
        };
        let need = file_size
            .and_then(|f| f.checked_mul(instances))
            .and_then(|b| b.checked_add(used[t.device]));
        match need {
            Some(total) if total <= dev.size => used[t.device] = total,
            _ => {
                let msg = format!(
                    "the files the tasks on `{}` read or lay out need more than its size ({})",
                    dev.name,
                    crate::units::format_size(dev.size)
                );
                let p = match sec.get("file_size").or_else(|| sec.get("file_sizes")) {
                    Some(e) => e.problem(msg),
                    None => Problem::new(sec.at, msg),
                };
                return Err(p.hint(match need {
                    Some(n) => format!(
                        "lower file_size or count, or give the device a larger size (at least {} more)",
                        crate::units::format_size(n - dev.size)
                    ),
                    None => "lower file_size or count: together they are more bytes than 64 bits hold".to_string(),
                }));
            }
        }
    }
    Ok(())
}
