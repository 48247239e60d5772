//! Writing a sweep's point into the file's tables, replacing what the file sets there, so the
//! point is checked exactly as if it had been written by hand.

use super::{cgroup_key, entries_for, fio_key, label, task_key, Point, Target};
use crate::error::{Problem, Result};
use crate::resolve::{Entry, Section};
use toml::de::DeValue;

/// Writing one of a pair of `vm.dirty_*` sysctls zeroes the other (`dirty_bytes_handler`,
/// `dirty_ratio_handler`): the file's setting of the other one goes.
fn displaced(key: &str) -> Option<&'static str> {
    Some(match key {
        "vm.dirty_bytes" => "vm.dirty_ratio",
        "vm.dirty_ratio" => "vm.dirty_bytes",
        "vm.dirty_background_bytes" => "vm.dirty_background_ratio",
        "vm.dirty_background_ratio" => "vm.dirty_background_bytes",
        _ => return None,
    })
}

/// The point's fio options as (job, option, value as fio reads it, where the key is): added
/// after the job's own options, so they win as a later line does.
pub(crate) fn fio_overrides(point: &Point<'_>) -> Vec<(String, String, String, usize)> {
    entries_for(point, Target::Fio)
        .into_iter()
        .map(|e| {
            let (job, opt) = fio_key(&e.key).expect("a fio key");
            let value = match e.value {
                DeValue::String(s) => s.to_string(),
                DeValue::Boolean(b) => u8::from(*b).to_string(),
                other => label(other),
            };
            (job.to_string(), opt.to_string(), value, e.key_at)
        })
        .collect()
}

/// The `[[cgroup]]` tables with the point's `cgroup/<path>/<file>` values written into the
/// group of that path.
pub(crate) fn apply_cgroups<'a>(point: &Point<'a>, sections: &mut [Section<'a>]) -> Result<()> {
    for e in entries_for(point, Target::Cgroup) {
        let (path, file) = cgroup_key(&e.key).expect("a cgroup key");
        let (file, key, key_at) = (file.to_string(), e.key.clone(), e.key_at);
        if let Err(paths) = write_into_one(sections, "path", &path, &file, e) {
            return Err(Problem::new(key_at, format!("no [[cgroup]] has the path `{path}`"))
                .key(&key)
                .hint(format!(
                    "cgroup/<path>/<file> names a group by its path without the first /; the groups are {}",
                    paths.join(", ")
                )));
        }
    }
    Ok(())
}

/// Write `e` as `key` into the one section whose `id_key` (a task's `name`, a group's `path`)
/// is `id`; when none is, the ids there are, quoted, for the error.
fn write_into_one<'a>(
    sections: &mut [Section<'a>],
    id_key: &str,
    id: &str,
    key: &str,
    e: Entry<'a>,
) -> std::result::Result<(), Vec<String>> {
    let id_of = |s: &Section<'_>| s.get(id_key).and_then(|n| n.str().ok()).map(str::to_string);
    match sections.iter_mut().find(|s| id_of(s).as_deref() == Some(id)) {
        Some(s) => {
            let entry = Entry { key: key.to_string(), ..e };
            write_into(s, std::slice::from_ref(&entry));
            Ok(())
        }
        None => Err(sections.iter().filter_map(|s| id_of(s).map(|n| format!("`{n}`"))).collect()),
    }
}

/// Write `set` into `section`, replacing the keys it sets (and those they displace).
fn write_into<'a>(section: &mut Section<'a>, set: &[Entry<'a>]) {
    section
        .entries
        .retain(|e| !set.iter().any(|n| n.key == e.key || displaced(&n.key) == Some(e.key.as_str())));
    section.entries.extend(set.iter().cloned());
}

/// The device tables with the point written into each.
pub(crate) fn apply<'a>(point: &Point<'a>, sections: &mut [Section<'a>]) -> Result<()> {
    let set = entries_for(point, Target::Device);
    if set.is_empty() {
        return Ok(());
    }
    if sections.is_empty() {
        let e = &set[0];
        return Err(Problem::new(e.key_at, "a sweep needs a [[device]] table to write its key into")
            .key(&e.key)
            .hint("declare the disk with a [[device]] table"));
    }
    for s in sections.iter_mut() {
        write_into(s, &set);
    }
    Ok(())
}

/// The group the point runs without (`without = [...]`), if the sweep varies it.
pub(crate) fn run_without<'a>(point: &Point<'a>) -> Option<Entry<'a>> {
    entries_for(point, Target::Without).pop()
}

/// The kernel release the point sets, if the sweep varies it: the entry, to resolve and to
/// report a bad release at.
pub(crate) fn run_kernel<'a>(point: &Point<'a>) -> Option<Entry<'a>> {
    entries_for(point, Target::Kernel).pop()
}

/// The `[sysctl]` table with the point's sysctls written in.
pub(crate) fn apply_sysctl<'a>(point: &Point<'a>, section: &mut Section<'a>) {
    write_into(section, &entries_for(point, Target::Sysctl));
}

/// The top level with the point's `duration`, `seed`, `hz` written in.
pub(crate) fn apply_top<'a>(point: &Point<'a>, root: &mut Section<'a>) {
    write_into(root, &entries_for(point, Target::Top));
}

/// `[machine]` or `[policy]` (`to`) with the point's `machine/<key>` (`policy/<key>`) values
/// written in under their own names.
pub(crate) fn apply_section<'a>(point: &Point<'a>, to: Target, section: &mut Section<'a>) {
    let set: Vec<Entry<'a>> = entries_for(point, to)
        .into_iter()
        .map(|e| Entry {
            key: e.key.split_once('/').map_or(e.key.clone(), |(_, k)| k.to_string()),
            ..e
        })
        .collect();
    write_into(section, &set);
}

/// The `[[task]]` tables with the point's `task/<name>/<key>` values written into the task
/// of that name.
pub(crate) fn apply_tasks<'a>(point: &Point<'a>, sections: &mut [Section<'a>]) -> Result<()> {
    for e in entries_for(point, Target::Task) {
        let (name, key) = task_key(&e.key).expect("a task key");
        let (name, key) = (name.to_string(), key.to_string());
        let (swept, key_at) = (e.key.clone(), e.key_at);
        if let Err(names) = write_into_one(sections, "name", &name, &key, e) {
            return Err(Problem::new(key_at, format!("no [[task]] is named `{name}`"))
                .key(&swept)
                .hint(format!(
                    "task/<name>/<key> names a task by its name; the tasks are {}",
                    names.join(", ")
                )));
        }
    }
    Ok(())
}
