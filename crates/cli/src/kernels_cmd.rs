//! `wblab kernels` (the generations table) and the multi-kernel side of `wblab run`: a
//! scenario listing several kernels runs once per kernel, each into `<out>/<kernel>/`, and the
//! key figures of every task group are printed side by side.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;
use wblab_sim::config::Scenario;
use wblab_sim::generations::{default_dirty_ratios, parse_version, Version, GENERATIONS};
use wblab_sim::metrics::{LatencyHist, RunResult};

/// `wblab kernels`: the generations, the releases each covers and what it selects.
pub fn kernels(json: bool) -> ExitCode {
    if json {
        let v: Vec<_> = GENERATIONS
            .iter()
            .map(|g| {
                let (bg, dirty) = default_dirty_ratios(g.first);
                serde_json::json!({
                    "name": g.name,
                    "first": g.first.to_string(),
                    "last": last(g.last),
                    "policy": g.policy(),
                    "dirty_background_ratio_at_first": bg,
                    "dirty_ratio_at_first": dirty,
                    "summary": g.summary,
                })
            })
            .collect();
        let elevators: Vec<_> = wblab_sim::block::sched::ELEVATORS
            .iter()
            .map(|e| {
                serde_json::json!({
                    "name": e.kind.name(),
                    "aliases": e.aliases,
                    "kernels": e.kernels,
                    "summary": e.summary,
                    "tunables": e.tunables.iter().map(|t| t.key).collect::<Vec<_>>(),
                })
            })
            .collect();
        let v = serde_json::json!({ "generations": v, "elevators": elevators });
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return ExitCode::SUCCESS;
    }
    println!("kernel generations (`kernel = \"<release>\"` picks the one it falls in; [policy] overrides a piece)\n");
    let widths = [8, 17, 9, 8, 15, 7, 10, 0];
    let print_row = |cells: &[String]| {
        let line: Vec<String> = cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        println!("{}", line.join(" ").trim_end());
    };
    print_row(&GENERATION_COLUMNS.map(str::to_string));
    for row in generation_rows() {
        print_row(&row);
    }
    println!();
    for g in GENERATIONS {
        println!("{:<8} {}", g.name, g.summary);
    }
    println!();
    for (what, text) in INSIDE_GENERATIONS {
        println!("{what}: {text}");
    }
    print_policies();
    print_elevators();
    ExitCode::SUCCESS
}

/// Column heads of [`generation_rows`].
pub const GENERATION_COLUMNS: [&str; 8] = [
    "name",
    "releases",
    "throttle",
    "flusher",
    "reclaim",
    "queue",
    "wb chunk",
    "dirty bg/max %",
];

/// One row per generation: its releases, the policy of each piece and the default dirty ratios.
pub fn generation_rows() -> Vec<[String; 8]> {
    GENERATIONS
        .iter()
        .map(|g| {
            let p = g.policy();
            let ratios = if matches!(p.throttle, wblab_sim::config::ThrottleKind::Bdflush(_)) {
                // 2.4 has no vm.dirty_*: bdflush's nfract / nfract_sync.
                let b = wblab_sim::generations::default_bdflush(g.last, false);
                format!("bdflush {}/{}", b.nfract, b.nfract_sync)
            } else {
                ratio_history(g.first, g.last)
            };
            [
                g.name.to_string(),
                format!("{}–{}", g.first, last(g.last)),
                p.throttle.name().to_string(),
                p.flusher.name().to_string(),
                p.reclaim.name().to_string(),
                p.queue.name().to_string(),
                p.writeback_chunk.name().to_string(),
                ratios,
            ]
        })
        .collect()
}

/// What is chosen by release inside a generation, or fixed by one piece of it.
pub const INSIDE_GENERATIONS: [(&str, &str); 6] = [
    (
        "page wait queues (by release, inside generations)",
        "2.5–2.6.6 wake-all, 2.6.7–4.9 filtered+wake-one, 4.10+ handoff; [policy] page_wake = \"filtered\" for wli's first posting",
    ),
    (
        "timer wheel (by release, inside generations)",
        "up to 4.7 cascading (a sleep of n jiffies ends on tick now + n), 4.8+ rounded (on tick now + n + 1 below 63 jiffies, coarser above): the `think` of balance_dirty_pages",
    ),
    (
        "readahead (by release, inside generations)",
        "2.6.5–2.6.10 windowed (2.6.6's current and ahead windows, skipped while the device or a member of a dm stripe is read-congested, a missed page read alone), else on-demand (2.6.23's; the rules of 2.4–2.6.4 and 2.6.11–2.6.22 are not modelled)",
    ),
    (
        "read waits (by release, inside generations)",
        "up to 4.7 a read finding its page under someone's read sleeps in __lock_page, 4.8+ in wait_on_page_bit (wait_on_page_locked first); a read of a page it started itself waits in wait_on_page_bit",
    ),
    (
        "legacy queue",
        "128 requests per direction, congested at 113, uncongested below 103, 512 KiB requests, 128 KiB readahead, no blk-wbt",
    ),
    (
        "disk elevator (by release, inside generations)",
        "2.5 deadline-2002, 2.6.18–2.6.21 cfq-2.6.20, 2.6.22–2.6.31 cfq-2.6.22, else mq-deadline (anticipatory and the CFQ of 2.6.32+ are not modelled)",
    ),
];

/// Every name `[policy]` takes, per key.
pub fn policy_names() -> Vec<(&'static str, Vec<&'static str>)> {
    use wblab_sim::config::{
        FlusherKind, PageHash, PageWake, PolicyPiece, QueueEra, ReadWait, Readahead, ReclaimKind, ThrottleKind, TimerWheel, WritebackChunk,
    };
    vec![
        ("throttle", ThrottleKind::names()),
        ("flusher", FlusherKind::names()),
        ("reclaim", ReclaimKind::names()),
        ("queue", QueueEra::names()),
        ("writeback_chunk", WritebackChunk::names()),
        ("page_wake", PageWake::names()),
        ("page_hash", PageHash::names()),
        ("timer_wheel", TimerWheel::names()),
        ("readahead", Readahead::names()),
        ("read_wait", ReadWait::names()),
    ]
}

/// Every name `[policy]` takes, per piece.
fn print_policies() {
    println!("\n[policy] names (a family such as `per-bdi` means the kernel's own member):");
    for (key, names) in policy_names() {
        println!("  {key:<16} {}", names.join(", "));
    }
}

/// The modelled elevators, with the kernels that shipped them and their tunables.
fn print_elevators() {
    println!(
        "
elevators (`queue/scheduler`; tunables under `queue/iosched/`):"
    );
    for e in wblab_sim::block::sched::ELEVATORS {
        let aliases = if e.aliases.is_empty() {
            String::new()
        } else {
            format!(" (also {})", e.aliases.join(", "))
        };
        println!("  {}{aliases}: {}; {}", e.kind.name(), e.summary, e.kernels);
        if !e.tunables.is_empty() {
            let t: Vec<&str> = e.tunables.iter().map(|t| t.key.trim_start_matches("queue/iosched/")).collect();
            println!("      tunables: {}", t.join(", "));
        }
    }
}

fn last(v: Version) -> String {
    match v {
        Version(2, 4, c) if c < u32::MAX => format!("2.4.{c}"),
        Version(2, 4, _) => "2.4.x".to_string(),
        Version(2, 5, c) if c < u32::MAX => format!("2.5.{c}"),
        Version(2, 5, _) => "2.5.x".to_string(),
        Version(a, b, _) if b >= u32::MAX - 1 => format!("{a}.x"),
        Version(2, 6, c) => format!("2.6.{c}"),
        Version(a, b, _) => format!("{a}.{b}"),
    }
}

/// The default (background, dirty) ratios over a release range, e.g. "10/40, 5/10".
fn ratio_history(first: Version, last: Version) -> String {
    let mut seen: Vec<(u32, u32)> = Vec::new();
    for v in [first, Version(2, 6, 22), Version(2, 6, 30), last] {
        if v < first || v > last {
            continue;
        }
        let r = default_dirty_ratios(v);
        if !seen.contains(&r) {
            seen.push(r);
        }
    }
    seen.iter().map(|(b, d)| format!("{b}/{d}")).collect::<Vec<_>>().join(", ")
}

/// The directory name a kernel's results go to: the release as written.
pub fn kernel_dir(kernel: &str) -> String {
    let k: String = kernel
        .chars()
        .map(|c| if c == '/' || c.is_whitespace() { '_' } else { c })
        .collect();
    if k.is_empty() || parse_version(kernel).is_err() {
        "kernel".to_string()
    } else {
        k
    }
}

/// Run each scenario (one per kernel) into `out/<kernel>/`, then print them side by side.
/// A run's result and its wall seconds, or the exit code of a broken law.
type Simulated = Result<(RunResult, f64), ExitCode>;

pub fn run_kernels(
    scenarios: Vec<Scenario>,
    out: &Path,
    quiet: bool,
    json: bool,
    check: bool,
    write: impl Fn(&Path, &RunResult, f64) -> bool,
) -> ExitCode {
    // Each simulation is single-threaded and deterministic: the kernels run side by side on
    // the machine's cores, and their results are written in the order the file lists them.
    if !quiet && !json {
        for sc in &scenarios {
            eprintln!("running {} under kernel {} ({})", sc.name, sc.kernel, sc.policy.generation);
        }
    }
    let done: Vec<Simulated> = wblab_report::par::map_in_order(&scenarios, usize::MAX, |sc| {
        let t0 = Instant::now();
        let r = crate::simulate::simulate(sc, &mut wblab_sim::machine::NoProgress, check);
        r.map(|r| (r, t0.elapsed().as_secs_f64()))
    });
    let mut results = Vec::new();
    for (i, r) in done.into_iter().enumerate() {
        let (r, wall) = match r {
            Ok(x) => x,
            Err(code) => return code,
        };
        let dir = out.join(kernel_dir(&scenarios[i].kernel));
        if !write(&dir, &r, wall) {
            return ExitCode::from(1);
        }
        results.push((dir, r, wall));
    }
    if json {
        let v: Vec<_> = results.iter().map(|(_, r, wall)| wblab_report::summary_json(r, *wall)).collect();
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return ExitCode::SUCCESS;
    }
    for (dir, r, wall) in &results {
        print!("{}", wblab_report::terminal_summary(r, *wall));
        println!("results: {}\n", dir.display());
    }
    let runs: Vec<&RunResult> = results.iter().map(|(_, r, _)| r).collect();
    print!("{}", side_by_side(&runs));
    ExitCode::SUCCESS
}

/// The key figures of each task group, one column per run.
pub fn side_by_side(runs: &[&RunResult]) -> String {
    let mut rows: Vec<(String, String, Vec<String>)> = Vec::new();
    let Some(first) = runs.first() else {
        return String::new();
    };
    let mut groups: Vec<(String, &'static str)> = Vec::new();
    for t in &first.tasks {
        if !groups.iter().any(|(n, _)| *n == t.name) {
            groups.push((t.name.clone(), t.job));
        }
    }
    for (g, job) in &groups {
        let figs = group_figures(runs, g);
        let op = match *job {
            "du" => "lstat",
            "ls" => "ls -l",
            "launch" => "launch",
            "dd" => "write()",
            "cat" | "randread" => "read()",
            "fsync" => "fsync()",
            _ => "op",
        };
        let wants_bw = wblab_sim::jobs::job_kind(job).is_some_and(|k| k.throughput);
        let wants_pause = figs.iter().any(|f| f.pauses.count() > 0);
        if wants_bw {
            rows.push((
                g.clone(),
                "MB/s (sum)".into(),
                figs.iter().map(|f| format!("{:.1}", f.mb_s)).collect(),
            ));
        }
        if wants_pause {
            rows.push((
                g.clone(),
                "pause p99 ms".into(),
                figs.iter().map(|f| ms(f.pauses.summary().p99)).collect(),
            ));
            rows.push((
                g.clone(),
                "pause max ms".into(),
                figs.iter().map(|f| ms(f.pauses.summary().max)).collect(),
            ));
        }
        if figs.iter().any(|f| f.ops.count() > 0) {
            rows.push((
                g.clone(),
                format!("{op} count"),
                figs.iter().map(|f| f.ops.count().to_string()).collect(),
            ));
            // A run where none completed (a launch still going at the end) shows "-", not 0.
            let done = |f: &GroupFigures, v: String| if f.ops.count() > 0 { v } else { "-".to_string() };
            rows.push((
                g.clone(),
                format!("{op} mean ms"),
                figs.iter().map(|f| done(f, msf(f.ops.summary().mean))).collect(),
            ));
            rows.push((
                g.clone(),
                format!("{op} p99 ms"),
                figs.iter().map(|f| done(f, ms(f.ops.summary().p99))).collect(),
            ));
            rows.push((
                g.clone(),
                format!("{op} max ms"),
                figs.iter().map(|f| done(f, ms(f.ops.summary().max))).collect(),
            ));
        }
    }
    let heads: Vec<String> = runs.iter().map(|r| r.scenario.kernel.clone()).collect();
    let w0 = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(5).max(5);
    let w1 = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(6).max(6);
    let wc: Vec<usize> = (0..heads.len())
        .map(|i| rows.iter().map(|r| r.2[i].len()).chain([heads[i].len()]).max().unwrap_or(6).max(8))
        .collect();
    let mut s = String::from("side by side (per task group)\n");
    let mut line = format!("{:<w0$}  {:<w1$}", "group", "figure");
    for (i, h) in heads.iter().enumerate() {
        line.push_str(&format!("  {:>w$}", h, w = wc[i]));
    }
    s.push_str(line.trim_end());
    s.push('\n');
    for (g, f, vals) in &rows {
        let mut line = format!("{g:<w0$}  {f:<w1$}");
        for (i, v) in vals.iter().enumerate() {
            line.push_str(&format!("  {:>w$}", v, w = wc[i]));
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

struct GroupFigures {
    mb_s: f64,
    pauses: LatencyHist,
    ops: LatencyHist,
}

fn group_figures(runs: &[&RunResult], group: &str) -> Vec<GroupFigures> {
    runs.iter()
        .map(|r| {
            let mut f = GroupFigures {
                mb_s: 0.0,
                pauses: LatencyHist::new(),
                ops: LatencyHist::new(),
            };
            for t in r.tasks.iter().filter(|t| t.name == group) {
                f.mb_s += t.throughput_mb_s();
                f.pauses.add(&t.pauses);
                f.ops.add(&t.op_latency);
            }
            f
        })
        .collect()
}

fn ms(ns: u64) -> String {
    msf(ns as f64)
}

fn msf(ns: f64) -> String {
    let x = ns / 1e6;
    if x == 0.0 {
        "0".into()
    } else if x < 10.0 {
        format!("{x:.2}")
    } else if x < 1000.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}
