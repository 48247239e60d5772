//! The generators of reference blocks: each turns one of the registries (generations, policy
//! pieces, elevators, device models, the command line) into Markdown. Only what wblab ships is
//! shown, whatever the build (test-only elevators and models never reach the docs).

use super::runs::Runs;
use crate::device_cmd::default_device;
use crate::kernels_cmd::{generation_rows, policy_names, GENERATION_COLUMNS, INSIDE_GENERATIONS};
use std::sync::Arc;
use wblab_sim::block::sched::{ElevatorInfo, SHIPPED_ELEVATORS};
use wblab_sim::config::Scenario;
use wblab_sim::config::{KnobKind, QueueConfig};
use wblab_sim::drivers::characterize::characterize;
use wblab_sim::drivers::SHIPPED_MODELS;
use wblab_sim::metrics::RunResult;
use wblab_sim::units::format_size;

/// The names a marker may use, with their arguments, for error hints.
pub const GENERATORS: &[&str] = &[
    "commands",
    "fio-options",
    "validate-summary DIR",
    "sweep FILE OPTIONS...",
    "generations",
    "release-features",
    "policies",
    "elevators",
    "elevator-tunables ELEVATOR",
    "device-models",
    "device-keys MODEL",
    "sysctl-keys",
    "machine-keys",
    "job-kinds",
    "throttle-keys",
    "bdi-keys",
    "queue-keys",
    "cgroup-files",
    "device-queues",
    "device-figures",
    "include PATH [NAME]",
    "run SCENARIO",
    "stem SCENARIO TASK",
    "timeline SCENARIO",
    "btt SCENARIO",
    "outcome SCENARIO",
    "reproduce REPORT",
    "reproduce-long FACTOR",
    "fio-syncs SCENARIO...",
    "emulated-devices SCENARIO...",
    "layout",
];

/// The Markdown of generator `name` with `args`, or why it cannot be made.
/// Where a block is and what `wblab docs` is doing: the generators that write files beside the
/// text (a sweep's plots) write them only with `--write`, and otherwise check them.
pub struct Ctx<'a> {
    pub write: bool,
    /// The directory of the Markdown file.
    pub dir: std::path::PathBuf,
    /// The simulations this `wblab docs` shares between blocks.
    pub runs: &'a Runs,
}

pub fn generate(name: &str, args: &[String], cli: &clap::Command, ctx: &Ctx) -> Result<String, String> {
    let runs = ctx.runs;
    let no_args = |body: String| {
        if args.is_empty() {
            Ok(body)
        } else {
            Err(format!("`{name}` takes no arguments"))
        }
    };
    let one_arg = || match args {
        [a] => Ok(a.as_str()),
        _ => Err(format!("`{name}` takes one argument")),
    };
    match name {
        "commands" => no_args(commands(cli)),
        "generations" => no_args(generations()),
        "release-features" => no_args(release_features()),
        "policies" => no_args(policies()),
        "elevators" => no_args(elevators()),
        "elevator-tunables" => elevator_tunables(one_arg()?),
        "device-models" => no_args(device_models()),
        "device-keys" => device_keys(one_arg()?),
        "sysctl-keys" => no_args(sysctl_keys()),
        "machine-keys" => no_args(machine_keys()),
        "job-kinds" => no_args(job_kinds()),
        "throttle-keys" => no_args(throttle_keys()),
        "bdi-keys" => no_args(bdi_keys()),
        "queue-keys" => no_args(queue_keys()),
        "cgroup-files" => no_args(cgroup_files()),
        "device-queues" => no_args(device_queues()),
        "device-figures" => no_args(device_figures()),
        "run" => run(one_arg()?, runs),
        "outcome" => outcome(one_arg()?, runs),
        "sweep" => super::sweep_block::sweep(args, ctx),
        "reproduce" => reproduce(one_arg()?, runs),
        "reproduce-long" => reproduce_long(one_arg()?, runs),
        "validate-summary" => crate::validate::summary_of(std::path::Path::new(one_arg()?)),
        "fio-syncs" => super::sync_table::fio_syncs(args, runs),
        "emulated-devices" => super::emulated_table::emulated_devices(args, runs),
        "fio-options" => no_args(fio_options()),
        "layout" => no_args(super::layout::layout(std::path::Path::new("."))?),
        "stem" => match args {
            [scenario, task] => stem(scenario, task, runs),
            _ => Err("`stem` takes a scenario file and a task name".to_string()),
        },
        "timeline" => match args {
            [scenario] => timeline(scenario, runs),
            _ => Err("`timeline` takes a scenario file".to_string()),
        },
        "btt" => btt(one_arg()?, runs),
        "include" => match args {
            [path] => include(path, None),
            [path, name] => include(path, Some(name)),
            _ => Err("`include` takes a path and an optional snippet name".to_string()),
        },
        _ => Err(format!("unknown generator `{name}`; known: {}", GENERATORS.join(", "))),
    }
}

/// A Markdown table; `|` inside a cell is escaped.
pub(super) fn table(head: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

fn code(s: &str) -> String {
    format!("`{s}`")
}

/// Every fio 3.33 option with what wblab does with it (the parser's own catalogue): general
/// options first, then those of the I/O engines and profiles.
fn fio_options() -> String {
    use wblab_scenario::fio::catalogue::{Class, OPTIONS};
    let class = |c: Class| match c {
        Class::Modelled => "modelled",
        Class::Accepted => "accepted",
        Class::Refused => "refused",
    };
    let counts = |c: Class| OPTIONS.iter().filter(|o| o.class == c).count();
    let mut out = format!(
        "{} names (aliases included): {} modelled, {} accepted, {} refused.\n\n",
        OPTIONS.len(),
        counts(Class::Modelled),
        counts(Class::Accepted),
        counts(Class::Refused)
    );
    let (general, scoped): (Vec<_>, Vec<_>) = OPTIONS.iter().partition(|o| o.scope.is_empty());
    let row = |o: &&wblab_scenario::fio::catalogue::FioOption| {
        let mut why = String::new();
        if !o.alias_of.is_empty() {
            why.push_str(&format!("alias of `{}`", o.alias_of));
        }
        if !o.reason.is_empty() {
            if !why.is_empty() {
                why.push_str("; ");
            }
            why.push_str(o.reason);
        }
        if !o.default.is_empty() {
            why.push_str(&format!(" (`{}={}`, fio's default, is taken)", o.name, o.default));
        }
        let mut cells = vec![code(o.name)];
        if !o.scope.is_empty() {
            cells.push(o.scope.to_string());
        }
        cells.push(class(o.class).to_string());
        cells.push(why.trim().to_string());
        cells
    };
    out.push_str(&table(&["option", "wblab", "why"], general.iter().map(row)));
    out.push_str("\nOptions of fio's I/O engines and profiles:\n\n");
    out.push_str(&table(&["option", "engines", "wblab", "why"], scoped.iter().map(row)));
    out
}

fn commands(cli: &clap::Command) -> String {
    let rows = cli.get_subcommands().filter(|c| !c.is_hide_set()).map(|c| {
        let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
        vec![code(&format!("wblab {}", c.get_name())), about.replace('\n', " ")]
    });
    table(&["command", "what it does"], rows)
}

fn generations() -> String {
    let rows = generation_rows().into_iter().map(|r| {
        let mut r = r.to_vec();
        r[0] = code(&r[0]);
        r
    });
    let mut out = table(&GENERATION_COLUMNS, rows);
    out.push('\n');
    for g in wblab_sim::generations::GENERATIONS {
        out.push_str(&format!("- `{}`: {}\n", g.name, g.summary));
    }
    out.push('\n');
    for (what, text) in INSIDE_GENERATIONS {
        out.push_str(&format!("- {what}: {text}\n"));
    }
    out
}

fn release_features() -> String {
    let rows = wblab_sim::generations::features::FEATURES
        .iter()
        .map(|f| vec![f.what.to_string(), f.since.to_string()]);
    table(&["feature", "merged in"], rows)
}

fn policies() -> String {
    let rows = policy_names().into_iter().map(|(key, names)| {
        let names: Vec<String> = names.iter().map(|n| code(n)).collect();
        vec![code(key), names.join(", ")]
    });
    table(&["key", "accepted names"], rows)
}

fn elevators() -> String {
    let rows = SHIPPED_ELEVATORS.iter().map(|e| {
        let aliases: Vec<String> = e.aliases.iter().map(|a| code(a)).collect();
        vec![
            code(e.kind.name()),
            aliases.join(", "),
            e.kernels.to_string(),
            e.summary.to_string(),
        ]
    });
    table(&["`queue/scheduler`", "also", "kernels", "what it is"], rows)
}

fn elevator_tunables(name: &str) -> Result<String, String> {
    let e: &ElevatorInfo = SHIPPED_ELEVATORS.iter().find(|e| e.kind.name() == name).ok_or_else(|| {
        let names: Vec<&str> = SHIPPED_ELEVATORS.iter().map(|e| e.kind.name()).collect();
        format!("unknown elevator `{name}`; known: {}", names.join(", "))
    })?;
    // The tunables' defaults do not depend on the device: start from any queue.
    let mut q: QueueConfig = default_device("hdd").expect("the hdd model is shipped").queue;
    q.select_elevator(e.kind);
    let rows = e
        .tunables
        .iter()
        .map(|t| vec![code(t.key), t.kind.describe(), code(&t.kind.show((t.get)(&q))), t.doc.to_string()]);
    Ok(table(&["key", "written as", "default", "what it does"], rows))
}

fn device_models() -> String {
    let rows = SHIPPED_MODELS.iter().map(|m| {
        let d = (m.default)();
        let names: Vec<String> = (0..2)
            .map(|i| m.naming.node(i))
            .map(|(n, a, b)| format!("`{n}` ({a}:{b})"))
            .collect();
        vec![
            code(m.kind),
            m.summary.to_string(),
            format_size(d.default_size()),
            format!("{}, ...", names.join(", ")),
            if m.member { "yes" } else { "no" }.to_string(),
        ]
    });
    table(
        &["`model`", "what it is", "default `size`", "names by position", "RAID member"],
        rows,
    )
}

fn device_keys(kind: &str) -> Result<String, String> {
    let m = SHIPPED_MODELS.iter().find(|m| m.kind == kind).ok_or_else(|| {
        let kinds: Vec<&str> = SHIPPED_MODELS.iter().map(|m| m.kind).collect();
        format!("unknown device model `{kind}`; known: {}", kinds.join(", "))
    })?;
    let d = (m.default)();
    let mut rows: Vec<Vec<String>> = (m.knobs)()
        .into_iter()
        .map(|k| {
            let v = d.get_knob(k.key).expect("a listed knob has a value");
            vec![code(k.key), k.kind.describe(), code(&k.kind.show(v)), k.doc.to_string()]
        })
        .collect();
    if let Some(member) = d.member() {
        rows.push(vec![
            code("member_model"),
            "a model name".to_string(),
            code(&format!("\"{}\"", member.kind())),
            "the members' model; its parameters go in the same table".to_string(),
        ]);
    }
    Ok(table(&["key", "written as", "default", "what it is"], rows))
}

/// The `[sysctl]` reference, from the table every tool reads (6.x's defaults).
fn sysctl_keys() -> String {
    let d = wblab_sim::config::VmSysctl::default();
    let rows = wblab_sim::config::SHIPPED_SYSCTLS.iter().map(|k| {
        let v = k.value(&d);
        let default = match k.knob.kind {
            KnobKind::Size { .. } if v == 0 => format!("{} (unset)", code("0")),
            _ => code(&v.to_string()),
        };
        vec![code(k.knob.key), k.unit.to_string(), default, k.knob.doc.to_string()]
    });
    table(&["key", "unit", "default", "accepted"], rows)
}

/// The `[machine]` reference, from the table every tool reads, and `buddyinfo`.
fn machine_keys() -> String {
    let d = wblab_sim::config::MachineConfig::default();
    let mut rows: Vec<Vec<String>> = wblab_sim::config::SHIPPED_MACHINE_KNOBS
        .iter()
        .map(|k| {
            let default = match k.default_text {
                Some(t) => t.to_string(),
                None => code(&k.knob.kind.show(k.value(&d))),
            };
            vec![code(k.knob.key), k.knob.kind.describe(), default, k.knob.doc.to_string()]
        })
        .collect();
    rows.push(vec![
        code(wblab_sim::config::BUDDYINFO_KEY),
        "string".to_string(),
        "none".to_string(),
        wblab_sim::config::BUDDYINFO_DOC.to_string(),
    ]);
    table(&["key", "written as", "default", "what it is"], rows)
}

/// The job kinds wblab ships, from their registry: what each is, what one of its operations
/// is, and how `wblab measure` runs it.
fn job_kinds() -> String {
    use wblab_sim::jobs::{RealRunner, SHIPPED_JOBS};
    let rows = SHIPPED_JOBS.iter().map(|k| {
        let real = match k.real {
            RealRunner::Dd => "the `dd` program",
            RealRunner::Fio => "the `fio` program",
            RealRunner::Thread => "a thread making its calls",
            RealRunner::None => "not run for real",
        };
        let op = if k.logs_ops {
            format!("{} (each in `ops.csv`)", k.op)
        } else {
            k.op.to_string()
        };
        vec![code(k.name), k.summary.to_string(), op, real.to_string()]
    });
    table(&["job", "what it is", "one operation", "`wblab measure` runs it as"], rows)
}

/// blk-throttle's limits, from their table.
fn throttle_keys() -> String {
    let rows = wblab_sim::config::THROTTLE_KNOBS.iter().map(|k| {
        let unit = if k.is_iops() { "integer" } else { "rate" };
        vec![
            code(k.knob.key),
            unit.to_string(),
            "`0` (no limit)".to_string(),
            k.knob.doc.to_string(),
        ]
    });
    table(&["key", "unit", "default", "accepted"], rows)
}

/// A `[[cgroup]]`'s keys: its path, then the files of their table.
fn cgroup_files() -> String {
    let path = vec![
        code("path"),
        "string".to_string(),
        "*required*".to_string(),
        "an absolute path of names, e.g. `\"/pods/web\"`; its parent must be declared above (or be the root)".to_string(),
    ];
    let rows = std::iter::once(path).chain(
        wblab_sim::config::CGROUP_FILES
            .iter()
            .map(|f| vec![code(f.name), f.value.to_string(), f.default.to_string(), f.doc.to_string()]),
    );
    table(&["key", "unit", "default", "accepted"], rows)
}

/// A bdi's files, from their table.
fn bdi_keys() -> String {
    let rows = wblab_sim::config::BDI_KNOBS.iter().map(|k| {
        vec![
            code(k.knob.key),
            k.unit.to_string(),
            k.default_text.to_string(),
            k.knob.doc.to_string(),
        ]
    });
    table(&["key", "unit", "default", "accepted"], rows)
}

/// A request queue's files, from their table.
fn queue_keys() -> String {
    let rows = wblab_sim::config::QUEUE_KNOBS
        .iter()
        .map(|k| vec![code(k.key), k.unit.to_string(), k.default_text.to_string(), k.accepted.to_string()]);
    table(&["key", "unit", "how the kernel sets it", "accepted"], rows)
}

fn device_queues() -> String {
    let rows = SHIPPED_MODELS.iter().filter_map(|m| default_device(m.kind)).map(|d| {
        let q = &d.queue;
        vec![
            code(d.model.kind()),
            code(q.scheduler.name()),
            q.nr_requests.to_string(),
            q.max_sectors_kb.to_string(),
            q.read_ahead_kb.to_string(),
            q.wbt_lat_usec.to_string(),
            u8::from(q.rotational).to_string(),
            if q.write_cache { "write back" } else { "write through" }.to_string(),
            d.model.queue_depth().to_string(),
        ]
    });
    table(
        &[
            "model",
            "scheduler",
            "nr_requests",
            "max_sectors_kb",
            "read_ahead_kb",
            "wbt_lat_usec",
            "rotational",
            "write_cache",
            "tags",
        ],
        rows,
    )
}

fn device_figures() -> String {
    let rows = SHIPPED_MODELS.iter().filter_map(|m| default_device(m.kind)).map(|d| {
        let f = characterize(&d);
        vec![
            code(d.model.kind()),
            format!("{:.0}", f.seq_write_mb_s),
            format!("{:.0}", f.write_burst_mb_s),
            format!("{:.0} / {:.0}", f.seq_read_mb_s, f.seq_read_inner_mb_s),
            format!("{:.0} ({:.2} ms)", f.rand_read_iops_qd1, f.rand_read_latency_ms_qd1),
            format!("{:.0}", f.rand_read_iops_qd32),
            format!("{:.0}", f.rand_write_iops_qd1),
        ]
    });
    table(
        &[
            "model",
            "seq write MB/s",
            "write burst MB/s",
            "seq read MB/s (outer / inner)",
            "4 KiB rand read QD1 IOPS",
            "QD32 IOPS",
            "4 KiB rand write QD1 IOPS",
        ],
        rows,
    )
}

/// A source file (or the part between its `docs:begin NAME` and `docs:end NAME` lines) as a
/// code block, so a guide quotes code that compiles today. Paths are relative to the
/// repository root, where `wblab docs` runs.
fn include(path: &str, name: Option<&str>) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
    let body: Vec<&str> = match name {
        None => text.lines().collect(),
        Some(n) => {
            let (begin, end) = (format!("docs:begin {n}"), format!("docs:end {n}"));
            let from = text
                .lines()
                .position(|l| l.contains(&begin))
                .ok_or_else(|| format!("no `{begin}` line in `{path}`"))?;
            let len = text
                .lines()
                .skip(from + 1)
                .position(|l| l.contains(&end))
                .ok_or_else(|| format!("no `{end}` line in `{path}`"))?;
            text.lines().skip(from + 1).take(len).collect()
        }
    };
    let lang = match path.rsplit('.').next() {
        Some("rs") => "rust",
        Some("toml") => "toml",
        _ => "",
    };
    Ok(format!("```{lang}\n{}\n```\n", body.join("\n")))
}

pub(super) fn simulate(path: &str, runs: &Runs) -> Result<Arc<RunResult>, String> {
    runs.simulate(&load(path)?)
}

fn load(path: &str) -> Result<Scenario, String> {
    wblab_scenario::load(std::path::Path::new(path)).map_err(|e| e.to_string())
}

/// Several runs at once, on the machine's CPUs, in the given order.
fn run_all(scenarios: &[Scenario], runs: &Runs) -> Result<Vec<Arc<RunResult>>, String> {
    std::thread::scope(|s| {
        let handles: Vec<_> = scenarios.iter().map(|sc| s.spawn(move || runs.simulate(sc))).collect();
        handles.into_iter().map(|h| h.join().expect("a docs run does not panic")).collect()
    })
}

/// The scenarios block `name` with `args` will simulate, as far as they can be known without
/// simulating (for the runs that blocks share; a block that cannot be planned lists none and
/// reports its error when generated).
pub fn simulations(name: &str, args: &[String]) -> Vec<Scenario> {
    let path = |a: &String| std::path::Path::new(a).to_path_buf();
    match (name, args) {
        ("run" | "timeline", [p]) | ("stem", [p, _]) => load(p).into_iter().collect(),
        ("fio-syncs" | "emulated-devices", ps) => ps.iter().filter_map(|p| load(p).ok()).collect(),
        ("outcome", [p]) => match wblab_scenario::load_sweep(&path(p)) {
            Ok(None) => wblab_scenario::load_all(&path(p)).unwrap_or_default(),
            _ => Vec::new(),
        },
        ("reproduce-long", [_]) => crate::reproduce::Plan::new(std::path::Path::new("scenarios"), &[], REPRODUCE_SEEDS)
            .map(|p| p.fitted_only().scenarios().cloned().collect())
            .unwrap_or_default(),
        ("reproduce", [report]) => {
            crate::reproduce::Plan::new(std::path::Path::new("scenarios"), std::slice::from_ref(report), REPRODUCE_SEEDS)
                .map(|p| p.scenarios().cloned().collect())
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Seeds of each figure in a `reproduce` block, as `wblab reproduce` runs by default.
const REPRODUCE_SEEDS: u32 = 3;

/// The table `wblab run SCENARIO` ends with: the sweep table, the side-by-side table of the
/// kernels it lists, or the run's summary.
fn outcome(path: &str, runs: &Runs) -> Result<String, String> {
    let p = std::path::Path::new(path);
    if let Some(plan) = wblab_scenario::load_sweep(p).map_err(|e| e.to_string())? {
        let first = plan.point(0).map_err(|e| e.to_string())?;
        let indices: Vec<u64> = (0..plan.len()).collect();
        let (points, invalid) = wblab_sweep::run_sorted(&plan, &indices, &Default::default()).map_err(|e| e.to_string())?;
        // A shipped sweep has no invalid point.
        if let Some(p) = invalid.first() {
            return Err(format!("{}: point {} is not a valid scenario: {}", plan.file(), p.point, p.reason));
        }
        return Ok(format!(
            "```\n{}```\n",
            wblab_sweep::view::table_of(&plan, &first.scenario, &points)
        ));
    }
    let all = wblab_scenario::load_all(p).map_err(|e| e.to_string())?;
    if all.len() == 1 {
        return run(path, runs);
    }
    let results = run_all(&all, runs)?;
    let refs: Vec<&RunResult> = results.iter().map(|r| r.as_ref()).collect();
    Ok(format!("```\n{}```\n", crate::kernels_cmd::side_by_side(&refs)))
}

/// `wblab reproduce REPORT`'s figures as a Markdown table: three seeds, from scenarios/.
fn reproduce(report: &str, runs: &Runs) -> Result<String, String> {
    let jobs = std::thread::available_parallelism().map_or(1, |p| p.get());
    let plan = crate::reproduce::Plan::new(std::path::Path::new("scenarios"), &[report.to_string()], REPRODUCE_SEEDS)?;
    let rows = crate::reproduce::reproduce_with(&plan, jobs, true, &|sc| runs.simulate(sc))?;
    Ok(crate::reproduce::markdown(&rows))
}

/// `wblab reproduce --fitted --long FACTOR` beside the shipped runs, as a Markdown table:
/// every fitted figure of every report, three seeds.
fn reproduce_long(factor: &str, runs: &Runs) -> Result<String, String> {
    let factor: u64 = factor
        .parse()
        .map_err(|_| format!("`reproduce-long`: `{factor}` is not a factor"))?;
    let jobs = std::thread::available_parallelism().map_or(1, |p| p.get());
    let dir = std::path::Path::new("scenarios");
    let plan = || crate::reproduce::Plan::new(dir, &[], REPRODUCE_SEEDS).map(crate::reproduce::Plan::fitted_only);
    let simulate = |sc: &Scenario| runs.simulate(sc);
    let shipped = crate::reproduce::reproduce_with(&plan()?, jobs, true, &simulate)?;
    let long = crate::reproduce::reproduce_with(&plan()?.longer(factor), jobs, true, &simulate)?;
    Ok(crate::reproduce::markdown_long(&shipped, &long, factor))
}

/// What `wblab report DIR --stem TASK` prints for a run of the scenario.
fn stem(path: &str, task: &str, runs: &Runs) -> Result<String, String> {
    let r = simulate(path, runs)?;
    let dir = super::runs::scratch_dir(&r.scenario.name);
    wblab_report::write_results_dir(&dir, &r, 0.0).map_err(|e| format!("{}: {e}", dir.display()))?;
    let run = wblab_report::load::rundir::RunDir::load(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let pick = wblab_report::terminal::pick_latency(&run?, Some(task), None)?.ok_or_else(|| format!("no task `{task}`"))?;
    Ok(format!(
        "```\n$ wblab report results/{} --stem {task}\n{}```\n",
        r.scenario.name,
        wblab_report::terminal::latency_text(&pick)
    ))
}

/// What `wblab report DIR --timeline` prints for a run of the scenario.
fn timeline(path: &str, runs: &Runs) -> Result<String, String> {
    let r = simulate(path, runs)?;
    let mut text = Vec::new();
    wblab_report::write_latency(&mut text, &r).map_err(|e| e.to_string())?;
    let csv = wblab_report::load::rundir::Csv::parse(&String::from_utf8_lossy(&text))?;
    Ok(format!(
        "```\n$ wblab report results/{} --timeline\n{}```\n",
        r.scenario.name,
        wblab_report::terminal::timeline::timeline_text(&csv)
    ))
}

/// What `wblab btt DIR` prints for a run of the scenario with the whole block trace.
fn btt(path: &str, runs: &Runs) -> Result<String, String> {
    let mut sc = load(path)?;
    sc.trace.block = true;
    let r = runs.simulate(&sc)?;
    let mut text = Vec::new();
    wblab_report::write_trace(&mut text, &r).map_err(|e| e.to_string())?;
    let b = wblab_report::btt::analyze(&String::from_utf8_lossy(&text), wblab_report::btt::BttOptions::default());
    Ok(format!(
        "```\n$ wblab btt results/{}\n{}```\n",
        r.scenario.name,
        wblab_report::btt::render(&b, false)
    ))
}

/// What `wblab run SCENARIO` prints, without the wall-clock figures (which vary from run to
/// run): the worked examples quote the binary, not a copy.
fn run(path: &str, runs: &Runs) -> Result<String, String> {
    let r = simulate(path, runs)?;
    Ok(summary_without_wall(&r))
}

fn summary_without_wall(r: &wblab_sim::metrics::RunResult) -> String {
    let table = wblab_report::terminal_summary(r, 0.0);
    let mut lines = table.lines();
    let head: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split("  ")
        .filter(|part| !part.starts_with("wall ") && !part.ends_with("events/s"))
        .collect();
    let rest: Vec<&str> = lines.collect();
    format!("```\n{}\n{}\n```\n", head.join("  "), rest.join("\n"))
}
