//! `[[task]]`: who runs, on which device and file, when, and the job's own knobs.

use crate::error::{Gather, Many, Problem, Result};
use crate::section::{Entry, Section};
use crate::suggest;
use crate::units::{format_duration, format_size};
use wblab_sim::config::KnobSpec;
use wblab_sim::config::{CgroupTree, DeviceConfig, IoPrio, IoPrioClass, JobConfig, TaskConfig};
use wblab_sim::jobs::{self, FileUse, JobKind, ScriptKey, ScriptedJob};
use wblab_sim::units::{GIB, KIB, MIB};
use wblab_sim::Ns;

pub(super) const COMMON_KEYS: &[&str] = &[
    "name", "job", "count", "device", "file", "start", "stagger", "stop", "ionice", "cgroup",
];

/// MAX_RW_COUNT: the most one read()/write() moves.
const MAX_RW_COUNT: u64 = 0x7fff_f000;
/// The logical block size O_DIRECT transfers must be aligned to.
const DIRECT_ALIGN: u64 = 512;
/// One `[[task]]` alone may hold every instance the scenario may have.
const MAX_INSTANCES: u32 = crate::limits::MAX_TASKS as u32;
/// Directories a `du` tree with subdirectories may have (its shape is kept in memory).
const MAX_NESTED_DIRS: u64 = 1 << 22;

/// A task's keys are read one by one and every bad one is reported; the checks across keys
/// (a shared file, stagger against stop) run once the keys they read are sound. Without
/// `placed_on` (the devices and cgroups had mistakes of their own) the task's other keys are
/// still checked, and the result is only its problems.
pub(super) fn build(sec: &Section<'_>, placed_on: Option<(&[DeviceConfig], &CgroupTree)>, duration: Ns) -> Many<TaskConfig> {
    let mut g = Gather::default();
    let name = match sec.get("name") {
        Some(e) => g.keep(task_name(e)),
        None => {
            g.push(
                sec.missing("name", "this [[task]] has no name")
                    .hint("add name = \"...\": it labels the task in tables and traces"),
            );
            None
        }
    };
    let job_names = jobs::job_names();
    let job = match sec.get("job") {
        Some(e) => g.keep(e.keyword(&job_names, "job")),
        None => {
            g.push(
                sec.missing("job", format!("task `{}` has no job", name.as_deref().unwrap_or("?")))
                    .hint(format!("add job = \"dd\" (one of {})", suggest::list(&job_names))),
            );
            None
        }
    };
    // The keys a task may have depend on its job; without one, only the common keys are sure.
    if let Some(job) = job {
        g.extend(check_keys(sec, job));
    }

    let count = g.keep(sec.value_or("count", 1, |e| {
        e.u32(1, MAX_INSTANCES)
            .map_err(|p| p.hint("count is the number of identical tasks"))
    }));
    let placed = placed_on.and_then(|(devices, _)| g.keep(placement(sec, name.as_deref().unwrap_or("task"), devices)));
    // Only a file the user wrote can lack {n}: the default has it.
    if let (Some(count), Some((_, file)), Some(job)) = (count, &placed, job) {
        if let Some(e) = sec
            .get("file")
            .filter(|_| count > 1 && jobs::job_kind(job).is_some_and(|k| k.file != FileUse::Tree) && !file.contains("{n}"))
        {
            g.push(
                e.problem(format!("the {count} instances would all use the same file"))
                    .hint("put {n} in the path; it becomes the instance number, e.g. \"/mnt/sda/big{n}\""),
            );
        }
    }
    let start = g.keep(sec.value_or("start", 0, |e| {
        let start = e.duration()?;
        if start < duration {
            Ok(start)
        } else {
            Err(e.problem(format!("starts at or after the end of the run ({})", format_duration(duration))))
        }
    }));
    // Instance n starts at start + n × stagger; the last one must start inside the run.
    let stagger = match (start, count) {
        (Some(start), Some(count)) => g.keep(sec.value_or("stagger", 0, |e| {
            let stagger = e.duration()?;
            let last = start.saturating_add(stagger.saturating_mul(u64::from(count - 1)));
            if last < duration {
                Ok(stagger)
            } else {
                Err(e
                    .problem(format!(
                        "the last of the {count} instances would start at {}, at or after the end of the run ({})",
                        format_duration(last),
                        format_duration(duration)
                    ))
                    .hint("stagger is the time between two instances' starts, e.g. \"2ms\""))
            }
        })),
        _ => None,
    };
    let stop = match (sec.get("stop"), start) {
        (Some(e), Some(start)) => g.keep(e.duration().and_then(|stop| {
            if stop > start {
                Ok(Some(stop))
            } else {
                Err(e
                    .problem(format!(
                        "stop ({}) is not after start ({})",
                        format_duration(stop),
                        format_duration(start)
                    ))
                    .hint("stop is an absolute time since the run began, like start"))
            }
        })),
        (Some(e), None) => {
            g.keep(e.duration());
            None
        }
        (None, _) => Some(None),
    };
    if let (Some(Some(stop)), Some(e), Some(start), Some(stagger), Some(count)) = (stop, sec.get("stagger"), start, stagger, count) {
        let last = start + stagger * u64::from(count - 1);
        if last >= stop {
            g.push(
                e.problem(format!(
                    "the last of the {count} instances would start at {}, not before stop ({})",
                    format_duration(last),
                    format_duration(stop)
                ))
                .hint("make stagger × (count − 1) shorter than stop − start"),
            );
        }
    }
    let ioprio = g.keep(sec.value_or("ionice", IoPrio::default(), ionice));
    let cgroup = placed_on.and_then(|(_, cgroups)| {
        g.keep(sec.get("cgroup").map(|e| cgroup(e, cgroups)).transpose())
            .map(Option::flatten)
    });
    let job = job.and_then(|job| g.keep(job_config(sec, job)));
    match (name, count, placed, start, stagger, stop, ioprio, cgroup, job) {
        (Some(name), Some(count), Some((device, file)), Some(start), Some(stagger), Some(stop), Some(ioprio), Some(cgroup), Some(job))
            if g.is_empty() =>
        {
            Ok(TaskConfig {
                name,
                count,
                device,
                file,
                start,
                stagger,
                stop,
                ioprio,
                cgroup,
                after: Vec::new(),
                job,
            })
        }
        _ => Err(g.sound().err().unwrap_or_default()),
    }
}

/// Keys of a `[[task]]` that runs a fio job file: the jobs name themselves and size their
/// files; the task says where and when.
pub(super) const FIO_KEYS: &[&str] = &["fio", "job", "device", "start", "stop", "ionice", "cgroup"];

/// `[[task]] fio = "jobs/randread.fio"` (a path from the scenario's directory) or the job
/// text itself (`fio = """[randread] ..."""`): one task group per job of the file.
pub(super) fn build_fio(
    sec: &Section<'_>,
    (devices, cgroups): (&[DeviceConfig], &CgroupTree),
    duration: Ns,
    first_group: usize,
    scenario_file: &str,
    swept: &[(String, String, String, usize)],
) -> Many<Vec<TaskConfig>> {
    let e = sec.get("fio").expect("a fio task");
    if let Some(other) = sec.entries.iter().find(|x| !FIO_KEYS.contains(&x.key.as_str())) {
        return Err(vec![other.key_problem("does not apply to a fio task").hint(format!(
            "the job file names, sizes and counts the jobs (numjobs); a fio task takes {}",
            suggest::list(FIO_KEYS)
        ))]);
    }
    if let Some(j) = sec.get("job") {
        if j.str()? != "fio" {
            return Err(vec![j
                .problem("a task with `fio` runs the job file")
                .hint("drop `job`, or write job = \"fio\"")]);
        }
    }
    let given = e.str()?;
    let (label, text) = if given.contains('\n') || given.trim_start().starts_with('[') {
        (format!("{scenario_file} (fio text)"), given.to_string())
    } else {
        let dir = std::path::Path::new(scenario_file).parent().unwrap_or(std::path::Path::new(""));
        let path = dir.join(given);
        match crate::read::text_file(&path, crate::read::MAX_JOB_FILE_BYTES) {
            Ok(t) => (path.display().to_string(), t),
            Err(err) => {
                return Err(vec![e
                    .problem(format!("cannot read the fio job file {}: {err}", path.display()))
                    .hint("a path relative to the scenario file's directory, or the job text itself")])
            }
        }
    };
    let (device, _) = placement(sec, "fio", devices)?;
    let start = sec.value_or("start", 0, |e| e.duration_in(0, duration.saturating_sub(1)))?;
    let stop = sec.get("stop").map(|e| e.duration_in(start + 1, u64::MAX)).transpose()?;
    let ioprio = sec.value_or("ionice", IoPrio::default(), ionice)?;
    let cgroup = sec.get("cgroup").map(|e| cgroup(e, cgroups)).transpose()?.flatten();
    let at = crate::fio::Placement {
        device,
        devices: devices.iter().map(|d| (d.name.clone(), d.size)).collect(),
        pinned: sec.get("device").is_some(),
        stand_in: false,
        first_group,
        start,
        stop,
        ioprio,
        cgroup,
    };
    let swept: Vec<(String, String, String)> = swept.iter().map(|(j, o, v, _)| (j.clone(), o.clone(), v.clone())).collect();
    // Each of the job file's mistakes becomes one at the `fio` key, naming its own line.
    crate::fio::tasks_with(&text, &label, &at, &swept).map_err(|mut first| {
        let more = std::mem::take(&mut first.more);
        std::iter::once(first)
            .chain(more)
            .map(|err| {
                let mut msg = err.file.clone();
                if err.line > 0 {
                    msg.push_str(&format!(":{}", err.line));
                } else if err.key.is_some() {
                    msg.push_str(" (the [sweep]'s value)");
                }
                if let Some(k) = &err.key {
                    msg.push_str(&format!(": option `{k}`"));
                }
                msg.push_str(&format!(": {}", err.message));
                let p = e.problem(msg);
                match err.hint {
                    Some(h) => p.hint(h),
                    None => p,
                }
            })
            .collect()
    })
}

/// `cgroup`: the path of a declared `[[cgroup]]`, or `"/"` for the root.
fn cgroup(e: &Entry<'_>, cgroups: &CgroupTree) -> Result<Option<usize>> {
    let path = e.str()?.trim();
    if path == "/" {
        return Ok(None);
    }
    match cgroups.find(path) {
        Some(i) => Ok(Some(i)),
        None if cgroups.is_empty() => Err(e
            .problem(format!("no cgroup `{path}` is declared"))
            .hint(format!("declare it: [[cgroup]] path = \"{path}\"; or write \"/\" for the root"))),
        None => {
            let known: Vec<&str> = cgroups.groups.iter().map(|g| g.path.as_str()).collect();
            Err(e
                .problem(format!("no cgroup `{path}` is declared"))
                .hint(suggest::did_you_mean(path, &known).unwrap_or_else(|| format!("declared: {}", suggest::list(&known)))))
        }
    }
}

/// `ionice`: `"idle"`, `"be/7"`, `"rt/0"`, `"best-effort"`, … as `ionice -c CLASS -n LEVEL`
/// names them; a class without a level takes level 4, `"none"` is best effort 4.
fn ionice(e: &Entry<'_>) -> Result<IoPrio> {
    let text = e.str()?.trim().to_ascii_lowercase();
    let (class, level) = match text.split_once('/') {
        Some((c, l)) => (c.trim().to_string(), Some(l.trim().to_string())),
        None => (text.clone(), None),
    };
    let hint = "e.g. \"idle\", \"be/7\" or \"rt/0\" (ionice -c idle / -c best-effort -n 7 / -c realtime -n 0)";
    let class = match class.as_str() {
        "rt" | "realtime" | "1" => IoPrioClass::Rt,
        "be" | "best-effort" | "2" | "none" | "0" => IoPrioClass::Be,
        "idle" | "3" => IoPrioClass::Idle,
        other => return Err(e.problem(format!("unknown I/O scheduling class `{other}`")).hint(hint)),
    };
    let level = match level {
        None => 4,
        Some(_) if class == IoPrioClass::Idle => return Err(e.problem("the idle class has no level").hint("write ionice = \"idle\"")),
        Some(l) => match l.parse::<u8>() {
            Ok(n) if n <= 7 => n,
            _ => return Err(e.problem(format!("level `{l}` is not 0 to 7")).hint(hint)),
        },
    };
    Ok(IoPrio { class, level })
}

/// Each job kind with the keys it takes besides the common ones.
pub(super) fn job_keys() -> Vec<(&'static str, Vec<&'static str>)> {
    jobs::JOBS.iter().map(|k| (k.name, k.keys.names())).collect()
}

/// Every key is common or belongs to `job`; a key of another job is named as such.
fn check_keys(sec: &Section<'_>, job: &str) -> Vec<Problem> {
    let own = jobs::job_kind(job).map(|k| k.keys.names()).unwrap_or_default();
    let valid: Vec<&str> = [COMMON_KEYS, &own].concat();
    let unknown = |e: &Entry<'_>| {
        if jobs::JOBS.iter().any(|k| k.keys.names().contains(&e.key.as_str())) {
            return e
                .key_problem(format!("does not apply to job `{job}`"))
                .hint(format!("keys of a `{job}` task: {}", suggest::list(&valid)));
        }
        let hint = suggest::did_you_mean(&e.key, &valid).unwrap_or_else(|| format!("keys of a `{job}` task: {}", suggest::list(&valid)));
        e.key_problem("unknown key in [[task]]").hint(hint)
    };
    sec.entries
        .iter()
        .filter(|e| !COMMON_KEYS.contains(&e.key.as_str()) && !own.contains(&e.key.as_str()))
        .map(unknown)
        .collect()
}

fn task_name(e: &Entry<'_>) -> Result<String> {
    let name = e.str()?;
    match crate::names::name_problem(name, "task") {
        Some((m, h)) => Err(e.problem(m).hint(format!("{h}, e.g. name = \"writer\""))),
        None => Ok(name.to_string()),
    }
}

/// The device in `/mnt/<device>/...`, if the path has that shape.
fn mount_of(file: &str) -> Option<&str> {
    file.strip_prefix("/mnt/")?.split_once('/').map(|(dev, _)| dev)
}

/// The task's device (given, else read from a `/mnt/<dev>/` path, else the first) and file.
fn placement(sec: &Section<'_>, name: &str, devices: &[DeviceConfig]) -> Result<(usize, String)> {
    let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
    let index_of = |n: &str| names.iter().position(|d| *d == n);
    let given = match sec.get("device") {
        Some(e) => {
            let dev = e.str()?;
            let i = index_of(dev).ok_or_else(|| e.problem(format!("no device named `{dev}`")).hint(suggest::hint(dev, &names)))?;
            Some(i)
        }
        None => None,
    };
    let file = match sec.get("file") {
        Some(e) => {
            let file = e.str()?;
            if !file.starts_with('/') || file.ends_with('/') || file.contains('\0') {
                return Err(e
                    .problem(format!("`{file}` is not an absolute file path"))
                    .hint("e.g. file = \"/mnt/sda/big{n}\""));
            }
            // The path names a place on the device (under `wblab measure`, in its directory,
            // and an argument of dd): each part is a plain name (`{n}`, the instance, aside),
            // so it never climbs and never reads as anything else.
            if let Some((m, h)) = file
                .split('/')
                .skip(1)
                .find_map(|part| crate::names::name_problem(&part.replace("{n}", "0"), "file"))
            {
                return Err(e
                    .problem(format!("`{file}`: {m}"))
                    .hint(format!("{h}; e.g. file = \"/mnt/sda/big{{n}}\"")));
            }
            if let Some(mount) = mount_of(file).filter(|m| index_of(m).is_none()) {
                return Err(e
                    .problem(format!("the file is under `/mnt/{mount}/`, but there is no device named `{mount}`"))
                    .hint(suggest::did_you_mean(mount, &names).unwrap_or_else(|| {
                        format!(
                            "a file under /mnt/<device>/ is on that device; the devices here: {}",
                            suggest::list(&names)
                        )
                    })));
            }
            if let (Some(i), Some(mount)) = (given, mount_of(file)) {
                if mount != names[i] && index_of(mount).is_some() {
                    return Err(e
                        .problem(format!("the file is under /mnt/{mount}, but the task's device is `{}`", names[i]))
                        .hint("make the path and `device` agree, or drop `device`: it is read from /mnt/<device>/"));
                }
            }
            Some(file.to_string())
        }
        None => None,
    };
    let device = given.or_else(|| file.as_deref().and_then(mount_of).and_then(index_of)).unwrap_or(0);
    let file = file.unwrap_or_else(|| format!("/mnt/{}/{name}{{n}}", names[device]));
    Ok((device, file))
}

fn job_config(sec: &Section<'_>, job: &str) -> Result<JobConfig> {
    let bs = |default: u64| sec.value_or("bs", default, |e| e.size_in(1, MAX_RW_COUNT).map_err(|p| p.hint(RW_HINT)));
    let file_size = || sec.value_or("file_size", GIB, |e| e.size_in(1, u64::MAX));
    let interval = |default: Ns| sec.value_or("interval", default, |e| e.duration_in(1_000_000, u64::MAX));
    if let Some((kind, keys)) = jobs::job_kind(job).and_then(|k| Some((k, k.keys.declared()?))) {
        return scripted(sec, kind, keys);
    }
    Ok(match job {
        "dd" => dd(sec, bs(MIB)?)?,
        "netwrite" => JobConfig::Netwrite {
            bs: bs(4 * KIB)?,
            size: match sec.get("size") {
                Some(e) => Some(e.size_in(1, u64::MAX)?),
                None => None,
            },
            rate: match sec.get("rate") {
                Some(e) => e.rate()?,
                None => {
                    return Err(sec
                        .missing("rate", "a netwrite task needs the rate data arrives at")
                        .hint("e.g. rate = \"10MB/s\" (a 100 Mbit/s link)"))
                }
            },
        },
        "cat" => JobConfig::Cat {
            bs: bs(128 * KIB)?,
            file_size: file_size()?,
        },
        "randread" => {
            let bs = bs(4 * KIB)?;
            let file_size = file_size()?;
            if bs > file_size {
                return Err(sec.conflict(
                    &["bs", "file_size"],
                    format!("bs ({}) is larger than the file ({})", format_size(bs), format_size(file_size)),
                ));
            }
            let direct = sec.value_or("direct", true, |e| e.boolean())?;
            check_direct(sec, direct, bs)?;
            let think = sec.value_or("think", 0, |e| e.duration())?;
            JobConfig::Randread {
                bs,
                file_size,
                direct,
                think,
            }
        }
        "fsync" => JobConfig::Fsync {
            bytes: sec.value_or("bytes", 4 * KIB, |e| e.size_in(0, MAX_RW_COUNT).map_err(|p| p.hint(RW_HINT)))?,
            interval: interval(100_000_000)?,
        },
        "replace" => JobConfig::Replace {
            bytes: sec.value_or("bytes", 64 * KIB, |e| e.size_in(0, MAX_RW_COUNT).map_err(|p| p.hint(RW_HINT)))?,
            interval: interval(1_000_000_000)?,
        },
        "du" => {
            let files = sec.value_or("files", 1_000_000, |e| e.uint(1, 1 << 40))?;
            let files_per_dir = sec.value_or("files_per_dir", 20, |e| e.u32(1, 1_000_000))?;
            let subdirs = sec.value_or("subdirs", 4, |e| e.u32(0, 1_000_000))?;
            // A nested tree keeps its shape in memory: two 4-byte entries per directory.
            let dirs = files.div_ceil(u64::from(files_per_dir));
            if subdirs > 0 && dirs > MAX_NESTED_DIRS {
                return Err(sec
                    .conflict(
                        &["files", "files_per_dir", "subdirs"],
                        format!("a nested tree of {dirs} directories (files / files_per_dir); at most {MAX_NESTED_DIRS}"),
                    )
                    .hint("raise files_per_dir, or set subdirs = 0 for a flat sequence of directories"));
            }
            JobConfig::Du {
                files,
                files_per_dir,
                subdirs,
                inode_size: sec.value_or("inode_size", 256, |e| {
                    let v = e.u32(128, 4096)?;
                    e.power_of_two(v, "an inode size", "ext3 used 128, ext4 uses 256")
                })?,
                inode_spacing: sec.value_or("inode_spacing", 1, |e| e.u32(1, 64))?,
                repeat: sec.value_or("repeat", false, |e| e.boolean())?,
            }
        }
        "launch" => JobConfig::Launch {
            files: sec.value_or("files", 50, |e| e.u32(1, 1_000_000))?,
            files_per_dir: sec.value_or("files_per_dir", 20, |e| e.u32(1, 1_000_000))?,
            file_sizes: match sec.get("file_sizes") {
                Some(e) => sizes(e)?,
                None => vec![256 * KIB],
            },
            bs: bs(128 * KIB)?,
            mmap: sec.value_or("mmap", false, |e| e.boolean())?,
            writes: sec.value_or("writes", 0, |e| e.size_in(0, 1 << 40))?,
            interval: optional_interval(sec)?,
        },
        "ls" => JobConfig::Ls {
            dirs: sec.value_or("dirs", 8, |e| e.u32(1, 1_000_000))?,
            entries: sec.value_or("entries", 100, |e| e.u32(1, 10_000_000))?,
            interval: optional_interval(sec)?,
        },
        "tiotest" => {
            // tiotest's defaults: -f 10 MB per thread, -b 4096, -r 1000 random ops.
            let bs = bs(4 * KIB)?;
            let file_size = sec.value_or("file_size", 10 * MIB, |e| e.size_in(1, u64::MAX))?;
            if bs > file_size {
                return Err(sec.conflict(
                    &["bs", "file_size"],
                    format!("bs ({}) is larger than the file ({})", format_size(bs), format_size(file_size)),
                ));
            }
            JobConfig::Tiotest {
                bs,
                file_size,
                random_ops: sec.value_or("random_ops", 1000, |e| e.uint(0, 1 << 40))?,
                user_cost: sec.value_or("user_cost", 2_000, |e| e.duration_in(0, 1_000_000_000))?,
            }
        }
        "fio" => {
            return Err(sec
                .missing("fio", "a fio task needs its job file")
                .hint("fio = \"jobs/randread.fio\" (a path from the scenario's directory) or the job text itself"))
        }
        "spin" => JobConfig::Spin,
        _ => JobConfig::Sync {
            interval: interval(5_000_000_000)?,
        },
    })
}

/// `interval` of a job that runs once unless given one.
fn optional_interval(sec: &Section<'_>) -> Result<Option<Ns>> {
    match sec.get("interval") {
        Some(e) => Ok(Some(e.duration_in(1_000_000, u64::MAX)?)),
        None => Ok(None),
    }
}

/// A size or an array of sizes (`file_sizes = ["4MiB", "64KiB"]`).
fn sizes(e: &Entry<'_>) -> Result<Vec<u64>> {
    match e.value {
        toml::de::DeValue::Array(items) => {
            let mut v = Vec::with_capacity(items.len());
            for item in items.iter() {
                let one = Entry {
                    key: e.key.clone(),
                    key_at: e.key_at,
                    value: item.get_ref(),
                    value_at: item.span().start,
                };
                v.push(one.size_in(1, u64::MAX)?);
            }
            if v.is_empty() {
                return Err(e.problem("no sizes in the list").hint("e.g. file_sizes = [\"4MiB\", \"64KiB\"]"));
            }
            Ok(v)
        }
        _ => Ok(vec![e.size_in(1, u64::MAX)?]),
    }
}

const RW_HINT: &str = "Linux moves at most 0x7ffff000 bytes (MAX_RW_COUNT) per read()/write()";

/// `dd`: size in bytes or in blocks of `bs`, and `conv=fsync` / `oflag=direct` either as
/// booleans or in dd's own words.
fn dd(sec: &Section<'_>, bs: u64) -> Result<JobConfig> {
    if sec.get("size").is_some() && sec.get("blocks").is_some() {
        return Err(sec
            .conflict(&["size", "blocks"], "set either size or blocks, not both")
            .hint("size = blocks * bs"));
    }
    let size = match (sec.get("size"), sec.get("blocks")) {
        (Some(e), _) => Some(e.size_in(1, u64::MAX)?),
        (_, Some(e)) => {
            let blocks = e.uint(1, u64::MAX)?;
            Some(
                blocks
                    .checked_mul(bs)
                    .ok_or_else(|| e.problem("blocks * bs does not fit in 64 bits"))?,
            )
        }
        _ => None,
    };
    let fsync = flag(sec, "fsync", "conv", &["fsync", "fdatasync"])?;
    let direct = flag(sec, "direct", "oflag", &["direct"])?;
    check_direct(sec, direct, bs)?;
    Ok(JobConfig::Dd { bs, size, fsync, direct })
}

/// A dd option given as `key = true` or as `dd_key = "word,word"` (one of them, not both).
fn flag(sec: &Section<'_>, key: &str, dd_key: &str, words: &[&str]) -> Result<bool> {
    match (sec.get(key), sec.get(dd_key)) {
        (Some(_), Some(_)) => Err(sec.conflict(&[key, dd_key], format!("set either {key} or {dd_key}, not both"))),
        (Some(e), None) => e.boolean(),
        (None, Some(e)) => {
            let mut on = false;
            for word in e.str()?.split(',').map(str::trim) {
                if words.contains(&word) {
                    on = true;
                } else {
                    return Err(e
                        .problem(format!("{dd_key}={word} is not modelled"))
                        .hint(format!("modelled: {}", suggest::list(words))));
                }
            }
            Ok(on)
        }
        (None, None) => Ok(false),
    }
}

/// O_DIRECT transfers must be multiples of the logical block size, or the kernel says EINVAL.
fn check_direct(sec: &Section<'_>, direct: bool, bs: u64) -> Result<()> {
    if direct && !bs.is_multiple_of(DIRECT_ALIGN) {
        return Err(sec
            .conflict(
                &["bs", "direct", "oflag"],
                format!("O_DIRECT needs bs to be a multiple of {DIRECT_ALIGN}, got {bs}"),
            )
            .hint("the kernel fails misaligned O_DIRECT I/O with EINVAL"));
    }
    Ok(())
}

/// A scripted kind's keys, each read as its declaration says; a key without a default must
/// be set.
fn scripted(sec: &Section<'_>, kind: &'static JobKind, keys: &[ScriptKey]) -> Result<JobConfig> {
    let mut params = Vec::with_capacity(keys.len());
    for k in keys.iter() {
        let spec = KnobSpec {
            key: k.key,
            kind: k.kind,
            doc: k.doc,
        };
        let v = match (sec.get(k.key), k.default) {
            (Some(e), _) => super::model::knob_value(e, &spec)?.uint(),
            (None, Some(d)) => d,
            (None, None) => {
                return Err(sec
                    .missing(k.key, format!("a `{}` task needs {}", kind.name, k.key))
                    .hint(format!("{}: {}", k.key, k.doc)))
            }
        };
        params.push(v);
    }
    Ok(JobConfig::Scripted(ScriptedJob {
        kind,
        params: params.into(),
    }))
}
