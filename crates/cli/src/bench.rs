//! `wblab bench`: what a user waits for, timed.
//!
//! * the ceiling: a bare `std` binary heap holding 1000 pending events, pushed and popped, on
//!   this machine in this run — every simulation figure is also given as a share of it, so
//!   numbers from a noisy or slower machine still compare;
//! * the simulation alone (trace records handed off as in `wblab run`, not written), on fixed
//!   scenarios, and the cost per event from 1 to 10,000 tasks;
//! * with `--cli`, whole `wblab run`s in child processes (results and report written, wall
//!   time and peak memory from `wait4`), optionally beside another wblab binary (`--baseline`)
//!   for before → after tables.

use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;
use wblab_sim::config::{DeviceModelConfig, HddParams, JobConfig, Scenario, SsdParams};
use wblab_sim::units::{GIB, KIB, MIB};

use wblab_sim::units::NSEC_PER_SEC as SEC;

fn dd() -> JobConfig {
    JobConfig::Dd {
        bs: MIB,
        size: None,
        fsync: false,
        direct: false,
    }
}

/// `n` dd writers on one SSD, 64 GiB, 8 CPUs, 60 s: the scaling series.
fn ssd_dd(n: u32) -> Scenario {
    let mut s = Scenario::one_device(
        &format!("ssd-{n}dd"),
        DeviceModelConfig::Ssd(SsdParams::default()),
        64 * GIB,
        8,
        60 * SEC,
    );
    s.add_task("dd", n, 0, dd());
    s
}

/// The simulation benchmarks: (name, scenario).
pub fn scenarios() -> Vec<(String, Scenario)> {
    let mut v = Vec::new();
    v.push(("default (4 dd + cat, HDD, 60 s)".to_string(), wblab_scenario::default_scenario()));
    let mut s = Scenario::one_device("hdd-100dd", DeviceModelConfig::Hdd(HddParams::default()), 4 * GIB, 2, 60 * SEC);
    s.add_task("dd", 100, 0, dd());
    v.push(("100 dd, HDD, 4 GiB, 60 s".to_string(), s));
    let mut s = Scenario::one_device(
        "hdd-10dd-reader",
        DeviceModelConfig::Hdd(HddParams::default()),
        4 * GIB,
        2,
        60 * SEC,
    );
    s.add_task("dd", 10, 0, dd());
    s.add_task(
        "cat",
        1,
        10 * SEC,
        JobConfig::Cat {
            bs: 128 * KIB,
            file_size: 4 * GIB,
        },
    );
    v.push(("10 dd + cat, HDD, 4 GiB, 60 s".to_string(), s));
    for n in [1, 10, 100, 1000, 10_000] {
        v.push((format!("{n} dd, SSD, 64 GiB, 60 s"), ssd_dd(n)));
    }
    v
}

/// Takes the trace's chunks and hands the same buffer back: the simulation is timed as in
/// `wblab run`, where a writer thread takes them, without the writing.
struct Discard;

impl wblab_sim::metrics::TraceSink for Discard {
    fn chunk(&mut self, records: Vec<wblab_sim::metrics::TraceRecord>) -> Vec<wblab_sim::metrics::TraceRecord> {
        records
    }
}

/// Events per second of a bare binary heap with `pending` events: pop the earliest, schedule
/// one a pseudo-random delay later, as a simulation does — the most an event loop could do.
pub fn heap_ceiling(pending: usize, ops: u64) -> f64 {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut h = BinaryHeap::with_capacity(pending + 1);
    let mut seq = 0u64;
    for _ in 0..pending {
        seq += 1;
        h.push(std::cmp::Reverse((next() % 1_000_000_000, seq)));
    }
    let t0 = Instant::now();
    let mut sink = 0u64;
    for _ in 0..ops {
        let std::cmp::Reverse((t, s)) = h.pop().expect("pending events");
        sink = sink.wrapping_add(s);
        seq += 1;
        h.push(std::cmp::Reverse((t + next() % 200_000_000, seq)));
    }
    std::hint::black_box(sink);
    ops as f64 / t0.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Options of `wblab bench`.
pub struct BenchArgs<'a> {
    pub filter: Option<&'a str>,
    pub cli: bool,
    pub baseline: Option<&'a Path>,
    pub repeat: usize,
}

pub fn run(a: BenchArgs) -> ExitCode {
    let repeat = a.repeat.max(1);
    // Whole runs first, while this process is small: a child's peak memory (wait4's
    // ru_maxrss) starts from the memory of the process that spawned it.
    if a.cli {
        let code = cli_runs(&a, repeat);
        if code != ExitCode::SUCCESS {
            return code;
        }
        println!();
    }
    let ceiling = median((0..repeat).map(|_| heap_ceiling(1000, 5_000_000)).collect());
    println!(
        "ceiling: a bare binary heap with 1000 pending events does {:.2} M events/s here\n",
        ceiling / 1e6
    );
    println!(
        "{:<34} {:>7} {:>11} {:>8} {:>9} {:>9} {:>10}",
        "simulation (median of runs)", "tasks", "events", "wall s", "M ev/s", "ns/event", "× ceiling"
    );
    for (name, sc) in scenarios() {
        if a.filter.is_some_and(|f| !name.contains(f) && !sc.name.contains(f)) {
            continue;
        }
        let tasks: u32 = sc.tasks.iter().map(|t| t.count).sum();
        let mut walls = Vec::new();
        let mut events = 0;
        for _ in 0..repeat {
            let t0 = Instant::now();
            let r = match crate::simulate::simulate_streaming(&sc, &mut wblab_sim::machine::NoProgress, false, |_| Box::new(Discard)) {
                Ok(r) => r,
                Err(code) => return code,
            };
            walls.push(t0.elapsed().as_secs_f64());
            events = r.events;
        }
        let wall = median(walls);
        let rate = events as f64 / wall;
        println!(
            "{:<34} {:>7} {:>11} {:>8.3} {:>9.2} {:>9.0} {:>10.2}",
            name,
            tasks,
            events,
            wall,
            rate / 1e6,
            1e9 / rate,
            rate / ceiling
        );
    }
    ExitCode::SUCCESS
}

/// One whole-CLI case: a name and the `wblab` arguments (`{dir}` is the scratch directory).
struct Case {
    name: &'static str,
    scenario: Option<String>,
    args: &'static [&'static str],
    /// For a sweep: its points, to print points per second.
    points: Option<u64>,
}

/// Points of the sweep case: the yardstick for sweeps on one machine.
const SWEEP_POINTS: u64 = 1000;

/// The default scenario (cut to `duration` when given, its reader starting at `start`) at
/// `points` points drawn at random (the dirty limit and the expiry age): what an SRE's first
/// sweep looks like.
fn sweep_toml(points: u64, duration: Option<(&str, &str)>) -> String {
    let default = wblab_scenario::DEFAULT_SCENARIO_TOML;
    let scenario: String = match duration {
        Some((d, start)) => default
            .lines()
            .map(|l| match l.split_whitespace().next() {
                Some("duration") => format!("duration = \"{d}\"\n"),
                Some("start") => format!("start = \"{start}\"\n"),
                _ => format!("{l}\n"),
            })
            .collect(),
        None => default.to_string(),
    };
    format!(
        "{scenario}\n[sweep]\nrandom = {{ points = {points}, seed = 1 }}\n\"vm.dirty_bytes\" = {{ min = \"16MiB\", max = \"2GiB\", log = true }}\n\
         \"vm.dirty_expire_centisecs\" = {{ min = 100, max = 6000 }}\n"
    )
}

fn ssd_toml(name: &str, count: u32, duration: &str) -> String {
    format!(
        "name = \"{name}\"\nduration = \"{duration}\"\n[machine]\nmemory = \"64GiB\"\ncpus = 8\n\
         [[device]]\nname = \"sda\"\nmodel = \"ssd\"\n[[task]]\nname = \"dd\"\njob = \"dd\"\ncount = {count}\nbs = \"1MiB\"\n"
    )
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "1000 dd × 60 s, with report",
            scenario: Some(ssd_toml("ssd-1000dd", 1000, "60s")),
            args: &[],
            points: None,
        },
        Case {
            name: "1000 dd × 60 s, --no-report",
            scenario: Some(ssd_toml("ssd-1000dd", 1000, "60s")),
            args: &["--no-report"],
            points: None,
        },
        Case {
            name: "10,000 dd × 60 s, with report",
            scenario: Some(ssd_toml("ssd-10000dd", 10_000, "60s")),
            args: &[],
            points: None,
        },
        Case {
            name: "1000 dd × 600 s, with report",
            scenario: Some(ssd_toml("ssd-1000dd-600s", 1000, "600s")),
            args: &[],
            points: None,
        },
        Case {
            name: "sweep: 1000 points of the default",
            scenario: Some(sweep_toml(SWEEP_POINTS, None)),
            args: &[],
            points: Some(SWEEP_POINTS),
        },
        // The same table for 100 times the points: memory must not grow with them.
        Case {
            name: "sweep: 10⁴ points of the default × 1 s",
            scenario: Some(sweep_toml(10_000, Some(("1s", "500ms")))),
            args: &[],
            points: Some(10_000),
        },
        Case {
            name: "sweep: 10⁶ points of the default × 1 s",
            scenario: Some(sweep_toml(1_000_000, Some(("1s", "500ms")))),
            args: &[],
            points: Some(1_000_000),
        },
        Case {
            name: "every shipped scenario, with reports",
            scenario: None,
            args: &[],
            points: None,
        },
    ]
}

/// Wall seconds and peak resident KiB of one child process.
fn timed(bin: &Path, args: &[String]) -> Result<(f64, u64), String> {
    let t0 = Instant::now();
    let child = Command::new(bin)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for; `status` and `ru` are valid for writes.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall = t0.elapsed().as_secs_f64();
    if r != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("{} {} failed (status {status})", bin.display(), args.join(" ")));
    }
    Ok((wall, ru.ru_maxrss as u64))
}

/// Run `case` once with `bin` in `dir`: total wall and the largest peak memory.
fn run_case(bin: &Path, case: &Case, dir: &Path) -> Result<(f64, u64), String> {
    let mut files: Vec<PathBuf> = Vec::new();
    match &case.scenario {
        Some(text) => {
            let f = dir.join("scenario.toml");
            std::fs::write(&f, text).map_err(|e| e.to_string())?;
            files.push(f);
        }
        None => {
            let root = wblab_scenario_dir()?;
            let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
                .map_err(|e| format!("{}: {e}", root.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            v.sort();
            files = v;
        }
    }
    let (mut wall, mut rss) = (0.0, 0);
    for (i, f) in files.iter().enumerate() {
        let out = dir.join(format!("out{i}"));
        let mut args = vec![
            "run".to_string(),
            "--quiet".into(),
            f.display().to_string(),
            "--out".into(),
            out.display().to_string(),
        ];
        args.extend(case.args.iter().map(|s| s.to_string()));
        let (w, r) = timed(bin, &args)?;
        wall += w;
        rss = rss.max(r);
        let _ = std::fs::remove_dir_all(&out);
    }
    Ok((wall, rss))
}

/// The repository's scenarios/ (bench is run from a checkout).
fn wblab_scenario_dir() -> Result<PathBuf, String> {
    let p = PathBuf::from("scenarios");
    if p.is_dir() {
        Ok(p)
    } else {
        Err("scenarios/ not found: run `wblab bench --cli` from the repository's top directory".into())
    }
}

fn cli_runs(a: &BenchArgs, repeat: usize) -> ExitCode {
    let me = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: cannot find the running wblab: {e}");
            return ExitCode::from(1);
        }
    };
    let dir = std::env::temp_dir().join(format!("wblab-bench-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: {}: {e}", dir.display());
        return ExitCode::from(1);
    }
    println!("whole `wblab run` (median wall of {repeat}, peak memory)");
    let mut bins: Vec<(&str, &Path)> = Vec::new();
    if let Some(b) = a.baseline {
        bins.push(("before", b));
    }
    bins.push(("now", &me));
    let mut status = ExitCode::SUCCESS;
    for case in cases() {
        if a.filter.is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        let mut cells = Vec::new();
        let mut walls = Vec::new();
        for (label, bin) in &bins {
            let mut w = Vec::new();
            let mut peak = 0;
            for _ in 0..repeat {
                match run_case(bin, &case, &dir) {
                    Ok((wall, rss)) => {
                        w.push(wall);
                        peak = peak.max(rss);
                    }
                    Err(e) => {
                        eprintln!("error: {}: {e}", case.name);
                        status = ExitCode::from(1);
                    }
                }
            }
            if w.is_empty() {
                cells.push(format!("{label}: failed"));
                continue;
            }
            let m = median(w);
            walls.push(m);
            let rate = case.points.map_or(String::new(), |n| format!(" ({:.0} points/s)", n as f64 / m));
            cells.push(format!("{label} {m:>7.2} s {:>6} MiB{rate}", peak / 1024));
        }
        let ratio = match walls.as_slice() {
            [b, n] if *n > 0.0 => format!("  {:.1}× faster", b / n),
            _ => String::new(),
        };
        println!("{:<38} {}{ratio}", case.name, cells.join("   "));
    }
    let _ = std::fs::remove_dir_all(&dir);
    status
}
