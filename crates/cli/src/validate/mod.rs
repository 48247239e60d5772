//! `wblab validate`: the differential validator. It draws scenarios from the space this machine
//! can measure ([`generate`]), measures each with `wblab measure` (several repeats), simulates
//! it under as many seeds, grades the model against the kernel's run-to-run range ([`score`])
//! and writes the error distribution (`summary.md`) and the disagreements (`findings.md`).
//!
//! Each step is a child `wblab` process: `measure` keeps its own safety (plan, journal,
//! watchdog, restore) and a failed or killed case costs only itself. Every step's output is
//! kept, so a run resumes where it stopped: a repeat with its `summary.json` is not measured
//! again. The simulation is always run again (a few seconds a case), so a resumed run grades
//! every case against today's model. Each repeat waits for a quiet machine and is measured
//! again when other processes disturbed it ([`quiet`]); a case whose repeats timed the loop
//! devices' host disk is simulated on that disk's reads, and with `--host-disk` on its writes
//! and flushes too ([`host`]).

pub mod generate;
pub mod host;
pub mod quiet;
pub mod refused;
pub mod score;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

#[derive(clap::Args)]
pub struct ValidateArgs {
    /// Number of generated cases.
    #[arg(long, default_value_t = 100)]
    cases: u32,
    /// Generator seed: the same seed and case number give the same scenario.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// First case number.
    #[arg(long, default_value_t = 0)]
    first: u32,
    /// Kernel repeats per case (`wblab measure` runs), and model seeds.
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// Where cases, measurements, simulations and the summary go.
    #[arg(long, default_value = "validation/generated")]
    out: PathBuf,
    /// Do not measure: simulate and grade the cases already measured (no root needed).
    #[arg(long)]
    no_measure: bool,
    /// Measure again the repeats already measured that other processes disturbed (their
    /// `other_cpu_fraction` above 25 %).
    #[arg(long, conflicts_with = "no_measure")]
    remeasure_disturbed: bool,
    /// Measure again the repeats measured before `wblab measure` timed what their simulation
    /// takes from the day (in `machine.json`: `memory_touch` with its cached read's copy,
    /// `host_disk` with its 4 KiB round trip): such a repeat is simulated on another day's
    /// host — whether its page cache grew into memory the host had taken back can cost a
    /// reader ten times its CPU time, and the disk's round trip moves a loop's small reads by
    /// a third from day to day.
    #[arg(long, conflicts_with = "no_measure")]
    remeasure_unstamped: bool,
    /// Simulate each case's loop writes and flushes on the host disk its repeats timed
    /// (`host_disk` in their `machine.json`) instead of the loop model's default disk, as its
    /// reads always are. Not the default: the probe's writes do not predict the loop's (a loop
    /// wrote back 1.6 GB/s where the probe timed 0.62 GB/s of 1 MiB writes on the same day).
    #[arg(long)]
    host_disk: bool,
    /// Print case N's scenario file and exit.
    #[arg(long, value_name = "N")]
    print: Option<u32>,
    /// Only the summary of the cases graded so far.
    #[arg(long)]
    summary: bool,
}

pub fn validate(a: ValidateArgs) -> ExitCode {
    if let Some(k) = a.print {
        print!("{}", generate::case(a.seed, k).toml);
        return ExitCode::SUCCESS;
    }
    if !a.summary && !a.no_measure && wblab_probe::sys::geteuid() != 0 {
        eprintln!("error: `wblab validate` measures each case on this machine's kernel, which needs root");
        eprintln!("  hint: run it as root, or add --no-measure to grade the cases already measured");
        return ExitCode::from(2);
    }
    if a.repeat < 2 {
        eprintln!(
            "error: --repeat {}: the kernel's run-to-run range needs at least 2 repeats",
            a.repeat
        );
        return ExitCode::from(2);
    }
    if let Err(e) = fs::create_dir_all(&a.out) {
        eprintln!("error: cannot create {}: {e}", a.out.display());
        return ExitCode::from(2);
    }
    let me = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: cannot find this program to run its steps: {e}");
            return ExitCode::from(2);
        }
    };
    let t0 = Instant::now();
    let last = a.first.saturating_add(a.cases);
    if !a.summary {
        for k in a.first..last {
            let case = generate::case(a.seed, k);
            let dir = a.out.join(&case.name);
            let done = k - a.first;
            let eta = if done > 0 {
                let per = t0.elapsed().as_secs_f64() / f64::from(done);
                format!(", about {:.0} min left", per * f64::from(last - k) / 60.0)
            } else {
                String::new()
            };
            eprintln!("[{}/{}] {}{eta}", done + 1, a.cases, case.name);
            if let Err(e) = run_case(&me, &a, &case, &dir) {
                eprintln!("  {}: {e}", case.name);
                let _ = fs::write(dir.join("error.txt"), format!("{e}\n"));
            }
        }
    }
    let scores = load_scores(&a.out);
    let summary = score::summary(&scores);
    let header = format!(
        "# wblab validate: the model against this machine's kernel\n\nGenerated by `wblab validate --seed {}` ({} repeats per case); \
         regenerate the grades after a model change with `wblab validate --no-measure`.\n\n",
        a.seed, a.repeat
    );
    let write = |name: &str, text: &str| {
        if let Err(e) = fs::write(a.out.join(name), text) {
            eprintln!("error: cannot write {}: {e}", a.out.join(name).display());
        }
    };
    write("summary.md", &format!("{header}{summary}"));
    write("findings.md", &score::findings(&scores));
    print!("{summary}");
    eprintln!("results: {}: summary.md, findings.md, <case>/score.json", a.out.display());
    ExitCode::SUCCESS
}

/// Measure (unless already measured or `--no-measure`), simulate and grade one case.
fn run_case(me: &Path, a: &ValidateArgs, case: &generate::Case, dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let toml = dir.join("case.toml");
    fs::write(&toml, &case.toml).map_err(|e| format!("cannot write {}: {e}", toml.display()))?;
    let _ = fs::remove_file(dir.join("error.txt"));
    let mut repeats = Vec::new();
    for r in 1..=a.repeat {
        let out = dir.join("measured").join(format!("r{r}"));
        let measured = out.join(wblab_report::SUMMARY_FILE).exists();
        let disturbed = |out: &Path| quiet::disturbance(out).is_some_and(|f| f > quiet::DISTURBED);
        let unstamped = |out: &Path| !host::fully_stamped(out);
        if !measured || (a.remeasure_disturbed && disturbed(&out)) || (a.remeasure_unstamped && unstamped(&out)) {
            if a.no_measure {
                return Err("not measured (run without --no-measure to measure it)".into());
            }
            for attempt in 1..=quiet::ATTEMPTS {
                quiet::wait(std::time::Duration::from_secs(300));
                eprintln!("  measure, repeat {r} of {}", a.repeat);
                let _ = fs::remove_dir_all(&out);
                step(me, &["measure", &path(&toml), "--out", &path(&out), "--quiet"])?;
                // The kernel's trace and its every operation are large, and compare needs
                // only their histograms.
                let _ = fs::remove_file(out.join(wblab_report::TRACE_FILE));
                let _ = fs::remove_file(out.join(wblab_report::results::OPS_FILE));
                if !disturbed(&out) {
                    break;
                }
                let share = quiet::disturbance(&out).unwrap_or(0.0) * 100.0;
                eprintln!(
                    "  other processes used {share:.0}% of the CPUs: {}",
                    if attempt < quiet::ATTEMPTS {
                        "measuring again"
                    } else {
                        "kept (disturbed)"
                    }
                );
            }
        }
        repeats.push(out);
    }
    // Each repeat's twin: the case simulated on the machine that repeat measured (its memory
    // when it timed it, its disk's reads, its writes too when asked) under a seed of its own,
    // so that the model's range over its runs meets the host's changes as the kernel's did.
    let sims = simulate(me, a, &toml, &repeats, dir)?;
    repeats.extend(sims);
    let runs = repeats
        .iter()
        .map(|d| wblab_report::compare::load(d).map_err(|e| format!("cannot read {}: {e}", d.display())))
        .collect::<Result<Vec<_>, _>>()?;
    let c = wblab_report::compare::compare(&runs);
    let graded = score::grade(&c, a.repeat as usize);
    let bad = graded.iter().filter(|g| !g.agrees).count();
    eprintln!("  {} figures graded, {bad} outside tolerance", graded.len());
    let s = score::CaseScore {
        case: case.name.clone(),
        figures: graded,
        repeats: a.repeat as usize,
    };
    let json = serde_json::to_string_pretty(&s).expect("score serialises");
    fs::write(dir.join("score.json"), json).map_err(|e| format!("cannot write score.json: {e}"))
}

/// Simulate the case once for each measured repeat, in parallel: `sim/r<k>` from `sim-r<k>.toml`
/// (the case on repeat k's machine, [`host::scenario_for`]) under the case's seed + k − 1.
fn simulate(me: &Path, a: &ValidateArgs, toml: &Path, repeats: &[PathBuf], dir: &Path) -> Result<Vec<PathBuf>, String> {
    let text = fs::read_to_string(toml).map_err(|e| format!("cannot read {}: {e}", toml.display()))?;
    let seed = wblab_scenario::parse(&text, &path(toml)).map_err(|e| e.to_string())?.seed;
    let sim = dir.join("sim");
    let _ = fs::remove_dir_all(&sim);
    // Files of the layout before each repeat had its twin.
    let _ = fs::remove_file(dir.join("sim.toml"));
    let mut plans = Vec::new();
    for (k, repeat) in (1..).zip(repeats) {
        let scenario = host::scenario_for(toml, std::slice::from_ref(repeat), &format!("sim-r{k}.toml"), a.host_disk)?;
        plans.push((scenario, sim.join(format!("r{k}")), seed.wrapping_add(k - 1)));
    }
    let on_machine = plans.iter().filter(|(s, _, _)| s != toml).count();
    eprintln!(
        "  simulate, {} seeds ({on_machine} on their repeat's measured machine)",
        plans.len()
    );
    std::thread::scope(|scope| {
        let runs: Vec<_> = plans
            .iter()
            .map(|(scenario, out, seed)| {
                scope.spawn(move || {
                    step(
                        me,
                        &["run", &path(scenario), "--out", &path(out), "--quiet", "--seed", &seed.to_string()],
                    )
                })
            })
            .collect();
        runs.into_iter().try_for_each(|r| r.join().expect("a simulation thread"))
    })?;
    Ok(plans.into_iter().map(|(_, out, _)| out).collect())
}

/// Field `key` of a measured repeat's `machine.json` (`None` when the file or the field is
/// missing).
fn machine_field(repeat: &Path, key: &str) -> Option<serde_json::Value> {
    wblab_report::load::machine_json(repeat)?.get_mut(key).map(serde_json::Value::take)
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// Run `wblab <args>`; its stderr's last lines on failure.
fn step(me: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new(me)
        .args(args)
        .stdout(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", me.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    // A step stopped by a signal (its own exit code 128 + n, or killed): the user or the
    // system is stopping the validation, not the case failing. Stop here; it resumes.
    let signalled = std::os::unix::process::ExitStatusExt::signal(&out.status);
    if let Some(code) = signalled.map(|s| 128 + s).or(out.status.code().filter(|&c| c > 128)) {
        eprintln!(
            "`wblab {}` was interrupted ({}): stopping; the same command resumes where this stopped",
            args[0],
            err.lines().last().unwrap_or("by a signal")
        );
        std::process::exit(code);
    }
    let tail: Vec<&str> = err.lines().rev().take(6).collect();
    Err(format!(
        "`wblab {}` failed ({}):\n{}",
        args[0],
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    ))
}

/// The error distribution of the cases graded under `dir` (`wblab docs`' `validate-summary`).
pub fn summary_of(dir: &Path) -> Result<String, String> {
    let scores = load_scores(dir);
    if scores.is_empty() {
        return Err(format!("no graded case (`<case>/score.json`) under {}", dir.display()));
    }
    Ok(score::summary(&scores))
}

/// Every case's grades under `out`, in case order.
fn load_scores(out: &Path) -> Vec<score::CaseScore> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(out)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("score.json").exists())
        .collect();
    dirs.sort();
    dirs.iter()
        .filter_map(|d| {
            let mut s: score::CaseScore = serde_json::from_str(&fs::read_to_string(d.join("score.json")).ok()?).ok()?;
            s.repeats = measured_repeats(d).unwrap_or(s.repeats);
            Some(s)
        })
        .collect()
}

/// How many kernel repeats a case directory holds (`measured/r<k>`), None when it holds none.
fn measured_repeats(case: &Path) -> Option<usize> {
    let n = fs::read_dir(case.join("measured"))
        .ok()?
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with('r') && n[1..].parse::<u32>().is_ok())
        })
        .count();
    (n > 0).then_some(n)
}
