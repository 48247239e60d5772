//! `[sweep]`: run one scenario at many points. Each key of the table is a scenario key and the
//! values it takes — a list (`"queue/iosched/fifo_batch" = [64, 32, 16, 8]`, Morton's tables
//! of 2002) or a range (`"vm.dirty_bytes" = { min = "16MiB", max = "1GiB", steps = 7, log =
//! true }`) — and `points = [{ ... }, { ... }]` lists whole points (sets of keys that go
//! together; any other name not a key's does too, naming the column: `disk = [{ model =
//! "hdd" }, { model = "ssd" }]`). The points are every combination (a grid, the first key varying slowest), or,
//! with `random = N` (or `{ points = N, seed = S }`), N points each drawn at random.
//!
//! A key is a device's (`queue/*`, `queue/iosched/*`, `bdi/*`, `throttle/*`, a model
//! parameter, `model`, `size`, `fs`, `mount`, `journal_size`: written into every
//! `[[device]]`), a `vm.*` sysctl, `machine/<key>`, `policy/<key>`, a top-level `duration`,
//! `seed` or `hz`, `task/<name>/<key>`, `cgroup/<path>/<file>`, `fio/<job>/<option>`, or the
//! `kernel`. Each point is written into the file's own tables and validated there, so a bad
//! value is reported at its place in the sweep with the key's usual hint.
//!
//! Points are built one at a time from their index (nothing is held per point), so a sweep of
//! millions of points costs nothing until it runs; a random point depends only on the seed
//! and its index, so any worker on any machine builds the same one.

mod apply;
mod range;

pub(super) use apply::{apply, apply_cgroups, apply_section, apply_sysctl, apply_tasks, apply_top, fio_overrides, run_kernel, run_without};

use super::{bdi, device, machine, model, policy, queue, sysctl, throttle, Entry, Nesting, Section};
use crate::error::{Problem, Result};
use crate::suggest;
use range::Range;
use toml::de::DeValue;
use toml::Spanned;

/// Separates the knobs of a several-knob sweep in its name, and their values in a label.
pub const KEY_SEPARATOR: &str = " × ";
pub const VALUE_SEPARATOR: &str = " · ";
/// Most points one sweep may ask for: a bound on mistakes, and on what a sweep holds at its
/// end (its rows, about 1 KB a point, are gathered to be written in sweep order).
pub const MAX_POINTS: u64 = 10_000_000;

/// The values one key takes.
pub(crate) enum Values<'a> {
    /// As written, each with its place in the file.
    List(Vec<(&'a DeValue<'a>, usize)>),
    /// `points`/`variants`: each value a set of keys.
    Sets(Vec<Vec<Entry<'a>>>),
    Range(Range),
}

/// One swept key (or `points`) and its values.
pub(crate) struct Axis<'a> {
    pub key: String,
    pub key_at: usize,
    /// Where the range is written, for its values' errors.
    pub value_at: usize,
    pub values: Values<'a>,
}

impl Axis<'_> {
    /// Values a grid takes along this axis (a range's `steps`; checked at parse).
    fn len(&self) -> usize {
        match &self.values {
            Values::List(v) => v.len(),
            Values::Sets(v) => v.len(),
            Values::Range(r) => r.steps.unwrap_or(1),
        }
    }
}

/// How the points are chosen.
#[derive(Clone, Copy)]
pub(crate) enum Mode {
    Grid,
    Random { points: u64, seed: u64 },
}

/// The parsed `[sweep]` table.
pub(crate) struct Sweep<'a> {
    pub axes: Vec<Axis<'a>>,
    pub mode: Mode,
}

/// Where one axis stands at a point: a value's index, or a place `t` in [0, 1] along a range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Pick {
    Index(usize),
    Along(f64),
}

/// A range's value at a point: TOML text (parsed by the caller, who owns it) and its label.
pub(crate) struct Drawn {
    pub text: String,
    pub label: String,
}

/// One point, resolved: the entries it writes, with each range's value parsed.
pub(crate) struct Point<'a> {
    pub entries: Vec<Entry<'a>>,
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

/// SplitMix64: a well-mixed 64-bit value from the seed, the point and the axis, so each
/// random point stands alone (no sequence to replay to reach point 90,000).
fn mix(seed: u64, point: u64, axis: u64) -> u64 {
    let mut z = seed ^ point.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ axis.wrapping_mul(0xD1B5_4A32_D192_ED03);
    for _ in 0..2 {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
    }
    z
}

/// A uniform value in [0, 1) from 53 random bits.
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

impl<'a> Sweep<'a> {
    /// Points in the sweep.
    pub fn len(&self) -> u64 {
        match self.mode {
            Mode::Grid => self.axes.iter().map(|a| a.len() as u64).product(),
            Mode::Random { points, .. } => points,
        }
    }

    pub fn keys(&self) -> Vec<String> {
        self.axes.iter().map(|a| a.key.clone()).collect()
    }

    /// Where each axis stands at point `i`: for a grid, the first axis varies slowest; at
    /// random, each axis draws on its own.
    pub fn picks(&self, i: u64) -> Vec<Pick> {
        match self.mode {
            Mode::Grid => {
                let mut rest = i;
                let mut out = vec![Pick::Index(0); self.axes.len()];
                for (k, a) in self.axes.iter().enumerate().rev() {
                    let n = a.len() as u64;
                    let j = (rest % n) as usize;
                    rest /= n;
                    out[k] = match a.values {
                        Values::Range(_) => Pick::Along(if n <= 1 { 0.0 } else { j as f64 / (n - 1) as f64 }),
                        _ => Pick::Index(j),
                    };
                }
                out
            }
            Mode::Random { seed, .. } => self
                .axes
                .iter()
                .enumerate()
                .map(|(k, a)| {
                    let u = unit(mix(seed, i, k as u64));
                    match &a.values {
                        Values::Range(r) => match r.steps {
                            Some(n) if n > 1 => Pick::Along(((u * n as f64) as usize).min(n - 1) as f64 / (n - 1) as f64),
                            Some(_) => Pick::Along(0.0),
                            None => Pick::Along(u),
                        },
                        _ => Pick::Index(((u * a.len() as f64) as usize).min(a.len() - 1)),
                    }
                })
                .collect(),
        }
    }

    /// A few points that between them give every key each of its values once (a range: its
    /// ends): enough to check each value where checking every point would take too long.
    pub fn covering(&self) -> Vec<Vec<Pick>> {
        let base: Vec<Pick> = self
            .axes
            .iter()
            .map(|a| match a.values {
                Values::Range(_) => Pick::Along(0.0),
                _ => Pick::Index(0),
            })
            .collect();
        let mut out = vec![base.clone()];
        for (k, a) in self.axes.iter().enumerate() {
            let alternatives: Vec<Pick> = match a.values {
                Values::Range(_) => vec![Pick::Along(1.0)],
                _ => (1..a.len()).map(Pick::Index).collect(),
            };
            for p in alternatives {
                let mut pt = base.clone();
                pt[k] = p;
                out.push(pt);
            }
        }
        out
    }

    /// Each range's value at `picks` (`None` for the other axes).
    pub fn drawn(&self, picks: &[Pick]) -> Vec<Option<Drawn>> {
        self.axes
            .iter()
            .zip(picks)
            .map(|(a, p)| match (&a.values, p) {
                (Values::Range(r), Pick::Along(t)) => {
                    let (text, label) = r.value_at(*t);
                    Some(Drawn { text, label })
                }
                _ => None,
            })
            .collect()
    }

    /// Each key's value at `picks`, as the tables show it.
    pub fn labels(&self, picks: &[Pick], drawn: &[Option<Drawn>]) -> Vec<String> {
        self.axes
            .iter()
            .zip(picks)
            .zip(drawn)
            .map(|((a, p), d)| match (&a.values, p, d) {
                (_, _, Some(d)) => d.label.clone(),
                (Values::List(v), Pick::Index(j), _) => label(v[*j].0),
                (Values::Sets(v), Pick::Index(j), _) => v[*j]
                    .iter()
                    .map(|e| format!("{}={}", e.key, label(e.value)))
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => String::new(),
            })
            .collect()
    }

    /// The entries the point at `picks` writes; `parsed` holds each range's drawn value.
    pub fn point<'p>(&'p self, picks: &[Pick], parsed: &'p [Option<Spanned<DeValue<'p>>>]) -> Point<'p>
    where
        'a: 'p,
    {
        let mut entries = Vec::new();
        for ((a, p), d) in self.axes.iter().zip(picks).zip(parsed) {
            match (&a.values, p, d) {
                (_, _, Some(v)) => entries.push(Entry {
                    key: a.key.clone(),
                    key_at: a.key_at,
                    value: v.get_ref(),
                    value_at: a.value_at,
                }),
                (Values::List(v), Pick::Index(j), _) => entries.push(Entry {
                    key: a.key.clone(),
                    key_at: a.key_at,
                    value: v[*j].0,
                    value_at: v[*j].1,
                }),
                (Values::Sets(v), Pick::Index(j), _) => entries.extend(v[*j].iter().cloned()),
                _ => {}
            }
        }
        Point { entries }
    }
}

/// Parse each drawn value (made by [`Range::value_at`], so always valid TOML).
pub(crate) fn parse_drawn(drawn: &[Option<Drawn>]) -> Vec<Option<Spanned<DeValue<'_>>>> {
    drawn
        .iter()
        .map(|d| d.as_ref().map(|d| DeValue::parse(&d.text).expect("a drawn value is valid TOML")))
        .collect()
}

/// The top-level keys a sweep may vary.
const TOP: &[&str] = &["duration", "seed", "hz"];
/// The counterfactual key: `without = ["", "/etl"]` runs each point whole and without /etl's
/// tasks (`""`: nothing left out), as `wblab run --without` does.
pub(crate) const WITHOUT: &str = "without";

/// The device keys a sweep may vary: all but the device's identity (`name`, `major`,
/// `minor`), which the sweep's tables key on.
fn device_keys() -> Vec<&'static str> {
    ["model", "size", "fs", "mount", "journal_size", "fast_commit"]
        .into_iter()
        .chain(wblab_sim::config::queue_keys())
        .chain(queue::tunable_keys())
        .chain(bdi::keys())
        .chain(throttle::keys())
        .collect()
}

/// The named keys a sweep may vary (the rest have a pattern: model parameters,
/// `task/<name>/<key>`, ...): for did-you-mean.
fn sweepable() -> Vec<String> {
    device_keys()
        .into_iter()
        .map(str::to_string)
        .chain(
            sysctl::keys()
                .into_iter()
                .filter(|k| !k.starts_with("vm.bdflush"))
                .map(|k| k.to_string()),
        )
        .chain(machine::keys().into_iter().map(|k| format!("machine/{k}")))
        .chain(policy::KEYS.iter().map(|k| format!("policy/{k}")))
        .chain(TOP.iter().map(|k| k.to_string()))
        .chain(["kernel".to_string()])
        .collect()
}

const PATTERNS: &str = "task/<name>/<key>, cgroup/<path>/<file>, fio/<job>/<option>, a model's parameter, without";

/// A sweep key as written: device keys flatten with `/`, so an unquoted `vm.dirty_bytes`
/// arrives as `vm/dirty_bytes`.
fn normalize(key: String) -> String {
    let key = device::normalize(key);
    match key.strip_prefix("vm/") {
        Some(rest) => format!("vm.{}", rest.replace('/', ".")),
        None => key,
    }
}

/// Where a swept key is written.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// Every `[[device]]`.
    Device,
    Sysctl,
    /// One `[[task]]`.
    Task,
    /// A `[[cgroup]]`'s file.
    Cgroup,
    /// An option of a fio job (`fio/<job>/<option>`).
    Fio,
    /// `kernel`: the release the run simulates.
    Kernel,
    /// `[machine]`, `[policy]`.
    Machine,
    Policy,
    /// `duration`, `seed`, `hz`.
    Top,
    /// `without`: the point runs without a cgroup's (or a `[[task]]` group's) tasks.
    Without,
}

pub(crate) fn target(key: &str) -> Target {
    if key == "kernel" {
        Target::Kernel
    } else if key == WITHOUT {
        Target::Without
    } else if TOP.contains(&key) {
        Target::Top
    } else if key.starts_with("vm.") {
        Target::Sysctl
    } else if key.starts_with("task/") {
        Target::Task
    } else if key.starts_with("cgroup/") {
        Target::Cgroup
    } else if key.starts_with("fio/") {
        Target::Fio
    } else if key.starts_with("machine/") {
        Target::Machine
    } else if key.starts_with("policy/") {
        Target::Policy
    } else {
        Target::Device
    }
}

/// `task/<name>/<key>`: a key of the task named `<name>`.
pub(crate) fn task_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix("task/")?;
    let (name, k) = rest.split_once('/')?;
    (!name.is_empty() && !k.is_empty() && !k.contains('/')).then_some((name, k))
}

/// `fio/<job>/<option>`: an option of the fio job (section) named `<job>`.
pub(crate) fn fio_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix("fio/")?;
    let (job, opt) = rest.split_once('/')?;
    (!job.is_empty() && crate::fio::catalogue::is_modelled(opt)).then_some((job, opt))
}

/// `cgroup/<path>/<file>`: the file (`memory.max`, `io.latency`, ...) of the `[[cgroup]]` at
/// `/<path>`.
pub(crate) fn cgroup_key(key: &str) -> Option<(String, &str)> {
    let rest = key.strip_prefix("cgroup/")?;
    let (path, file) = rest.rsplit_once('/')?;
    (!path.is_empty() && file.contains('.')).then(|| (format!("/{path}"), file))
}

/// A key a sweep may vary.
fn sweepable_key(key: &str, keys: &[String]) -> bool {
    key == WITHOUT
        || keys.iter().any(|k| k == key)
        || model::is_param(key)
        || task_key(key).is_some()
        || cgroup_key(key).is_some()
        || fio_key(key).is_some()
}

fn not_sweepable(e: &Entry<'_>, keys: &[String]) -> Problem {
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let hint =
        suggest::did_you_mean(&e.key, &refs).unwrap_or_else(|| format!("sweepable keys: {}, {PATTERNS} and kernel", suggest::list(&refs)));
    e.key_problem("is not a key a sweep can vary").hint(hint)
}

/// The keys that list whole points (`variants` is the older name).
const SETS: [&str; 2] = ["points", "variants"];
/// `random = N` or `random = { points = N, seed = S }`.
const RANDOM: &str = "random";

/// The entries of each set of `points = [{...}, ...]`, every key sweepable.
fn sets<'a>(k: &Entry<'a>, items: &'a [Spanned<DeValue<'a>>], keys: &[String]) -> Result<Vec<Vec<Entry<'a>>>> {
    let example = "e.g. points = [{ fs = \"ext4\", mount = \"data=writeback\" }, { fs = \"xfs\" }]";
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let DeValue::Table(t) = item.get_ref() else {
            return Err(Problem::new(
                item.span().start,
                format!("expected a table of keys, found {}", crate::section::describe(item.get_ref())),
            )
            .key(&k.key)
            .hint(example));
        };
        let sec = Section::from_table(item.span().start, t, Nesting::Flatten('/'), normalize)?;
        if sec.entries.is_empty() {
            return Err(Problem::new(item.span().start, "an empty point").key(&k.key).hint(example));
        }
        if let Some(bad) = sec.entries.iter().find(|e| !sweepable_key(&e.key, keys)) {
            return Err(not_sweepable(bad, keys));
        }
        out.push(sec.entries);
    }
    Ok(out)
}

fn random_mode(e: &Entry<'_>) -> Result<Mode> {
    let example = "e.g. random = 100, or random = { points = 100, seed = 7 }";
    let points = |e: &Entry<'_>| e.uint(1, MAX_POINTS).map_err(|p| p.hint(example));
    match e.value {
        DeValue::Table(_) => {
            let sec = e.table(Nesting::Keep, |k| k)?;
            sec.reject_unknown(&["points", "seed"], "key of `random`")
                .map_err(|p| p.hint(example))?;
            let n = sec
                .get("points")
                .ok_or_else(|| sec.missing("points", "`random` needs the number of points").hint(example))?;
            Ok(Mode::Random {
                points: points(n)?,
                seed: sec.value_or("seed", 1, |e| e.uint(0, u64::MAX))?,
            })
        }
        _ => Ok(Mode::Random {
            points: points(e)?,
            seed: 1,
        }),
    }
}

pub(super) fn parse<'a>(e: &Entry<'a>) -> Result<Sweep<'a>> {
    let sec = e.table(Nesting::FlattenExcept('/', range::KEYS), normalize)?;
    let keys = sweepable();
    // `random = { points, seed }` flattens to `random/points` and `random/seed`.
    let mut mode = Mode::Grid;
    let mut axes = Vec::new();
    let mut random_at = None;
    for k in &sec.entries {
        if k.key == RANDOM {
            mode = random_mode(k)?;
            random_at = Some(k.key_at);
            continue;
        }
        if let Some(field) = k.key.strip_prefix("random/") {
            let (points, seed) = match mode {
                Mode::Random { points, seed } => (points, seed),
                Mode::Grid => (0, 1),
            };
            mode = match field {
                "points" => Mode::Random {
                    points: k.uint(1, MAX_POINTS)?,
                    seed,
                },
                "seed" => Mode::Random {
                    points,
                    seed: k.uint(0, u64::MAX)?,
                },
                _ => {
                    return Err(k
                        .key_problem("unknown key of `random`")
                        .hint("e.g. random = { points = 100, seed = 7 }"))
                }
            };
            random_at = Some(k.key_at);
            continue;
        }
        // `points`, or any other name not a key's, given an array of tables: a named list
        // of points (`disk = [{ model = "hdd" }, { model = "ssd" }]`), its name the column's.
        let tables =
            matches!(k.value, DeValue::Array(items) if !items.is_empty() && items.iter().all(|i| matches!(i.get_ref(), DeValue::Table(_))));
        let is_sets = SETS.contains(&k.key.as_str())
            || (tables && !sweepable_key(&k.key, &keys) && !k.key.contains(['/', '.']) && !k.key.starts_with("random"));
        if !is_sets && !sweepable_key(&k.key, &keys) {
            // A range with a misspelt key is flattened like a nest of keys: `x/step`.
            if let Some((prefix, _)) = k.key.rsplit_once('/').filter(|(key, _)| sweepable_key(key, &keys)) {
                let unknown = sec
                    .entries
                    .iter()
                    .filter_map(|e| e.key.strip_prefix(prefix).and_then(|r| r.strip_prefix('/')).map(|last| (e, last)))
                    .find(|(_, last)| !range::KEYS.contains(last))
                    .unwrap_or((k, ""));
                return Err(unknown
                    .0
                    .key_problem(format!("unknown key `{}` of a sweep range", unknown.1))
                    .hint("a range's keys are min, max, steps and log, e.g. { min = 8, max = 64, steps = 4 }"));
            }
            return Err(not_sweepable(k, &keys));
        }
        let example = format!(
            "e.g. \"{}\" = [64, 32, 16, 8], or a range {{ min = 8, max = 64, steps = 4 }}",
            k.key
        );
        let values = match k.value {
            DeValue::Array(items) if items.is_empty() => return Err(k.problem("no value to sweep").hint(example)),
            DeValue::Array(items) if is_sets => Values::Sets(sets(k, items, &keys)?),
            DeValue::Array(items) => Values::List(items.iter().map(|i| (i.get_ref(), i.span().start)).collect()),
            _ if is_sets => {
                return Err(k
                    .problem("expected an array of points")
                    .hint("e.g. points = [{ fs = \"ext4\" }, { fs = \"xfs\" }]"))
            }
            _ => match Range::parse(k) {
                Some(r) => Values::Range(r?),
                None => {
                    return Err(k
                        .problem(format!(
                            "expected an array of values or a range, found {}",
                            crate::section::describe(k.value)
                        ))
                        .hint(example))
                }
            },
        };
        axes.push(Axis {
            key: k.key.clone(),
            key_at: k.key_at,
            value_at: k.value_at,
            values,
        });
    }
    if axes.is_empty() {
        return Err(e
            .problem("the sweep names no key")
            .hint("e.g. [sweep] \"queue/iosched/fifo_batch\" = [64, 32, 16, 8]"));
    }
    if let Mode::Random { points: 0, .. } = mode {
        return Err(Problem::new(random_at.unwrap_or(e.key_at), "`random` needs the number of points")
            .key(RANDOM)
            .hint("e.g. random = { points = 100, seed = 7 }"));
    }
    if let Mode::Grid = mode {
        if let Some(a) = axes.iter().find(|a| matches!(&a.values, Values::Range(r) if r.steps.is_none())) {
            return Err(Problem::new(a.value_at, "a range in a grid needs `steps`: how many values to take")
                .key(&a.key)
                .hint("add steps = N, or draw points anywhere in the range with random = N"));
        }
        let hint = "every combination of the keys' values runs: sweep fewer values, or draw points with random = N";
        match axes.iter().try_fold(1u64, |n, a| n.checked_mul(a.len() as u64)) {
            Some(n) if n <= MAX_POINTS => {}
            Some(n) => {
                return Err(e
                    .problem(format!("the sweep asks for {n} points, more than {MAX_POINTS}"))
                    .hint(hint))
            }
            None => {
                let counts: Vec<String> = axes.iter().map(|a| a.len().to_string()).collect();
                return Err(e
                    .problem(format!(
                        "the sweep asks for more points than a 64-bit count holds ({} values multiplied overflow), where the most is {MAX_POINTS}",
                        counts.join(" × ")
                    ))
                    .hint(hint));
            }
        }
    }
    Ok(Sweep { axes, mode })
}

/// The entries of `point` written to `to`.
pub(crate) fn entries_for<'a>(point: &Point<'a>, to: Target) -> Vec<Entry<'a>> {
    point.entries.iter().filter(|e| target(&e.key) == to).cloned().collect()
}
