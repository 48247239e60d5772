//! `[sweep]`: run one scenario once per value of a device knob, a `vm.*` sysctl, a task's key
//! (`task/<name>/<key>`, written into the `[[task]]` of that name), a cgroup's file
//! (`cgroup/<path>/<file>`, e.g. `cgroup/pods/web/memory.max`), a fio job's option
//! (`fio/<job>/<option>`, e.g. `fio/probe/iodepth`) or the `kernel`, e.g.
//! `"queue/iosched/fifo_batch" = [64, 32, 16, 8]` — Morton's tables of 2002 — or once per
//! combination of several (`fs`, `mount` and `queue/write_cache` together: every combination,
//! the first knob varying slowest). Each device value is written into every `[[device]]` table
//! and each sysctl into `[sysctl]` (replacing the file's own setting, and for `vm.dirty_bytes`
//! and its siblings the ratio they replace, as writing the sysctl does) and validated there,
//! so a bad value is reported at its place in the array with the knob's usual hint.

use super::{device, queue, sysctl, Entry, Nesting, Section};
use crate::error::{Problem, Result};
use crate::suggest;
use toml::de::DeValue;

/// Separates the knobs of a several-knob sweep in its name, and their values in a label.
pub const KEY_SEPARATOR: &str = " × ";
pub const VALUE_SEPARATOR: &str = " · ";
/// Most runs one sweep may ask for.
const MAX_RUNS: usize = 64;

/// One swept knob and its values (located in the file), or `variants`: whole sets of device
/// keys, one per run (`{ fs = "xfs" }`, `{ fs = "ext4", mount = "data=writeback" }`), for
/// settings that only make sense together.
pub(crate) struct Axis<'a> {
    pub key: String,
    pub key_at: usize,
    pub values: Vec<(&'a DeValue<'a>, usize)>,
    /// For `variants`: each value's entries.
    pub variants: Vec<Vec<Entry<'a>>>,
}

/// The key of a sweep's list of variants.
const VARIANTS: &str = "variants";

/// The parsed `[sweep]` table.
pub(crate) struct Sweep<'a> {
    pub axes: Vec<Axis<'a>>,
}

fn label(v: &DeValue<'_>) -> String {
    match v {
        DeValue::String(s) => s.to_string(),
        DeValue::Integer(i) => i.to_string(),
        DeValue::Float(f) => f.to_string(),
        DeValue::Boolean(b) => b.to_string(),
        other => crate::section::describe(other),
    }
}

impl Sweep<'_> {
    /// Runs: the product of the axes' lengths.
    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    /// The value index of each axis in run `i` (the first axis varies slowest).
    fn indices(&self, mut i: usize) -> Vec<usize> {
        let mut ix = vec![0; self.axes.len()];
        for (k, a) in self.axes.iter().enumerate().rev() {
            ix[k] = i % a.values.len();
            i /= a.values.len();
        }
        ix
    }

    /// The sweep's name: its knob, or its knobs joined by [`KEY_SEPARATOR`].
    pub fn key(&self) -> String {
        self.axes.iter().map(|a| a.key.as_str()).collect::<Vec<_>>().join(KEY_SEPARATOR)
    }

    /// Each run's values as the table prints them (joined by [`VALUE_SEPARATOR`]).
    pub fn labels(&self) -> Vec<String> {
        (0..self.len())
            .map(|i| {
                let ix = self.indices(i);
                self.axes
                    .iter()
                    .zip(ix)
                    .map(|(a, j)| match a.variants.get(j) {
                        Some(v) => v
                            .iter()
                            .map(|e| format!("{}={}", e.key, label(e.value)))
                            .collect::<Vec<_>>()
                            .join(" "),
                        None => label(a.values[j].0),
                    })
                    .collect::<Vec<_>>()
                    .join(VALUE_SEPARATOR)
            })
            .collect()
    }
}

/// The knobs a sweep may vary: the queue's (`queue/*`, `queue/iosched/*`), the file system
/// (`fs`, `mount`, `journal_size`) and the `vm.*` sysctls.
fn sweepable() -> Vec<&'static str> {
    queue::KEYS
        .iter()
        .copied()
        .chain(queue::tunable_keys())
        .chain(["fs", "mount", "journal_size"])
        .chain(sysctl::KEYS.iter().copied().filter(|k| !k.starts_with("vm.bdflush")))
        .collect()
}

/// A sweep key as written: device keys flatten with `/`, so an unquoted `vm.dirty_bytes`
/// arrives as `vm/dirty_bytes`.
fn normalize(key: String) -> String {
    let key = device::normalize(key);
    match key.strip_prefix("vm/") {
        Some(rest) => format!("vm.{}", rest.replace('/', ".")),
        None => key,
    }
}

/// Where a swept key is written: every `[[device]]`, `[sysctl]`, or one `[[task]]`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Device,
    Sysctl,
    Task,
    /// A `[[cgroup]]`'s file.
    Cgroup,
    /// An option of a fio job (`fio/<job>/<option>`).
    Fio,
    /// `kernel`: the release the run simulates.
    Kernel,
}

fn target(key: &str) -> Target {
    if key == "kernel" {
        Target::Kernel
    } else if key.starts_with("vm.") {
        Target::Sysctl
    } else if key.starts_with("task/") {
        Target::Task
    } else if key.starts_with("cgroup/") {
        Target::Cgroup
    } else if key.starts_with("fio/") {
        Target::Fio
    } else {
        Target::Device
    }
}

/// `task/<name>/<key>`: a key of the task named `<name>`.
fn task_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix("task/")?;
    let (name, k) = rest.split_once('/')?;
    (!name.is_empty() && !k.is_empty() && !k.contains('/')).then_some((name, k))
}

/// `fio/<job>/<option>`: an option of the fio job (section) named `<job>`.
fn fio_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix("fio/")?;
    let (job, opt) = rest.split_once('/')?;
    (!job.is_empty() && crate::fio::options::MODELLED.contains(&opt)).then_some((job, opt))
}

/// Run `i`'s fio options as (job, option, value as fio reads it, where the key is): added
/// after the job's own options, so they win as a later line does.
pub(super) fn fio_overrides(sweep: &Sweep<'_>, i: usize) -> Vec<(String, String, String, usize)> {
    run_entries(sweep, i, Target::Fio)
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

/// `cgroup/<path>/<file>`: the file (`memory.max`, `io.latency`, ...) of the `[[cgroup]]` at
/// `/<path>`.
fn cgroup_key(key: &str) -> Option<(String, &str)> {
    let rest = key.strip_prefix("cgroup/")?;
    let (path, file) = rest.rsplit_once('/')?;
    (!path.is_empty() && file.contains('.')).then(|| (format!("/{path}"), file))
}

/// A key a sweep may vary: a listed device knob or sysctl, `task/<name>/<key>`,
/// `cgroup/<path>/<file>` or `kernel`.
fn sweepable_key(key: &str, keys: &[&str]) -> bool {
    keys.contains(&key) || task_key(key).is_some() || cgroup_key(key).is_some() || fio_key(key).is_some() || key == "kernel"
}

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

/// The entries of each variant of `variants = [{...}, ...]`, every key sweepable.
fn variants<'a>(k: &Entry<'a>, items: &'a [toml::Spanned<DeValue<'a>>], keys: &[&str]) -> Result<Vec<Vec<Entry<'a>>>> {
    let example = "e.g. variants = [{ fs = \"ext4\" }, { fs = \"xfs\" }]";
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let DeValue::Table(t) = item.get_ref() else {
            return Err(Problem::new(
                item.span().start,
                format!(
                    "expected a table of device keys, found {}",
                    crate::section::describe(item.get_ref())
                ),
            )
            .key(&k.key)
            .hint(example));
        };
        let sec = Section::from_table(item.span().start, t, Nesting::Flatten('/'), normalize)?;
        if sec.entries.is_empty() {
            return Err(Problem::new(item.span().start, "an empty variant").key(&k.key).hint(example));
        }
        if let Some(bad) = sec.entries.iter().find(|e| !sweepable_key(&e.key, keys)) {
            let hint = suggest::did_you_mean(&bad.key, keys).unwrap_or_else(|| {
                format!(
                    "sweepable knobs: {}, task/<name>/<key>, cgroup/<path>/<file>, fio/<job>/<option> and kernel",
                    suggest::list(keys)
                )
            });
            return Err(bad.key_problem("is not a knob a sweep can vary").hint(hint));
        }
        out.push(sec.entries);
    }
    Ok(out)
}

pub(super) fn parse<'a>(e: &Entry<'a>) -> Result<Sweep<'a>> {
    let sec = e.table(Nesting::Flatten('/'), normalize)?;
    let keys = sweepable();
    if sec.entries.is_empty() {
        return Err(e
            .problem("the sweep names no knob")
            .hint("e.g. [sweep] \"queue/iosched/fifo_batch\" = [64, 32, 16, 8]"));
    }
    let mut axes = Vec::new();
    for k in &sec.entries {
        if k.key != VARIANTS && !sweepable_key(&k.key, &keys) {
            let hint = suggest::did_you_mean(&k.key, &keys).unwrap_or_else(|| {
                format!(
                    "sweepable knobs: {}, task/<name>/<key>, cgroup/<path>/<file>, fio/<job>/<option> and kernel",
                    suggest::list(&keys)
                )
            });
            return Err(k.key_problem("is not a knob a sweep can vary").hint(hint));
        }
        let DeValue::Array(items) = k.value else {
            return Err(k
                .problem(format!("expected an array of values, found {}", crate::section::describe(k.value)))
                .hint(format!("e.g. \"{}\" = [64, 32, 16, 8]", k.key)));
        };
        if items.is_empty() {
            return Err(k.problem("no value to sweep").hint(format!("e.g. \"{}\" = [64, 32, 16, 8]", k.key)));
        }
        let variants = if k.key == VARIANTS {
            variants(k, items, &keys)?
        } else {
            Vec::new()
        };
        axes.push(Axis {
            key: k.key.clone(),
            key_at: k.key_at,
            values: items.iter().map(|i| (i.get_ref(), i.span().start)).collect(),
            variants,
        });
    }
    let sw = Sweep { axes };
    if sw.len() > MAX_RUNS {
        return Err(e
            .problem(format!("the sweep asks for {} runs, more than {MAX_RUNS}", sw.len()))
            .hint("every combination of the knobs' values runs: sweep fewer values, or split the file"));
    }
    Ok(sw)
}

/// The entries run `i` of the sweep sets for `to`.
fn run_entries<'a>(sweep: &Sweep<'a>, i: usize, to: Target) -> Vec<Entry<'a>> {
    let mut out = Vec::new();
    for (a, j) in sweep.axes.iter().zip(sweep.indices(i)) {
        match a.variants.get(j) {
            Some(v) => out.extend(v.iter().filter(|e| target(&e.key) == to).cloned()),
            None if target(&a.key) == to => out.push(Entry {
                key: a.key.clone(),
                key_at: a.key_at,
                value: a.values[j].0,
                value_at: a.values[j].1,
            }),
            None => {}
        }
    }
    out
}

/// The `[[cgroup]]` tables with run `i`'s `cgroup/<path>/<file>` values written into the
/// group of that path.
pub(super) fn apply_cgroups<'a>(sweep: &Sweep<'a>, i: usize, sections: &mut [Section<'a>]) -> Result<()> {
    for e in run_entries(sweep, i, Target::Cgroup) {
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

/// The device tables with run `i` of the sweep written into each.
pub(super) fn apply<'a>(sweep: &Sweep<'a>, i: usize, sections: &mut [Section<'a>]) -> Result<()> {
    let set = run_entries(sweep, i, Target::Device);
    if set.is_empty() {
        return Ok(());
    }
    if sections.is_empty() {
        let e = &set[0];
        return Err(Problem::new(e.key_at, "a sweep needs a [[device]] table to write its knob into")
            .key(&e.key)
            .hint("declare the disk with a [[device]] table"));
    }
    for s in sections.iter_mut() {
        write_into(s, &set);
    }
    Ok(())
}

/// The kernel release run `i` sets, if the sweep varies it: the entry, to resolve and to
/// report a bad release at.
pub(super) fn run_kernel<'a>(sweep: &Sweep<'a>, i: usize) -> Option<Entry<'a>> {
    run_entries(sweep, i, Target::Kernel).pop()
}

/// The `[sysctl]` table with run `i`'s sysctls written in.
pub(super) fn apply_sysctl<'a>(sweep: &Sweep<'a>, i: usize, section: &mut Section<'a>) {
    write_into(section, &run_entries(sweep, i, Target::Sysctl));
}

/// The `[[task]]` tables with run `i`'s `task/<name>/<key>` values written into the task of
/// that name.
pub(super) fn apply_tasks<'a>(sweep: &Sweep<'a>, i: usize, sections: &mut [Section<'a>]) -> Result<()> {
    for e in run_entries(sweep, i, Target::Task) {
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
