//! `wblab`: run writeback experiments on a simulated Linux machine. The command line lives in
//! this library so that the Python package runs the very same commands ([`main_with`]).

mod bench;
mod btt_cmd;
mod device_cmd;
mod docs;
mod fuzz_cmd;
pub mod kernels_cmd;
mod probe_cmd;
mod progress;
mod repeat_cmd;
mod report_cmd;
mod reproduce;
mod simulate;
mod snapshot_cmd;
mod sweep;
mod validate;

use clap::{CommandFactory, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "wblab",
    version,
    about = "The writeback lab: simulate the Linux writeback and block I/O path"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a scenario (the embedded default if none is given) and write a results directory.
    Run {
        /// Scenario file (TOML). Without it, the built-in default scenario runs.
        scenario: Option<PathBuf>,
        /// Results directory [default: results/<scenario name>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Run the scenario N times, under seeds seed … seed+N−1 (in parallel), and print each
        /// figure's median and range; repeats.csv holds every run's figures. The results
        /// directory and report are the first seed's.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        repeat: u32,
        /// Print summary.json to stdout instead of the table.
        #[arg(long)]
        json: bool,
        /// `json`: print what `fio --output-format=json` prints (fio.json) for a run of fio
        /// jobs, summary.json otherwise; `json+` and `terse` (or `minimal`): fio's, for fio jobs;
        /// `normal`: the table.
        #[arg(long, value_enum, default_value_t = OutputFormat::Normal)]
        output_format: OutputFormat,
        /// Write what --json or --output-format prints to this file instead of stdout (as
        /// fio's --output).
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Record the whole block trace in trace.txt (block_bio_queue, split, merges, getrq,
        /// rq_insert, rq_issue, rq_complete), for `wblab btt` (large).
        #[arg(long)]
        trace_block: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
        /// Do not write the graphs and report.html.
        #[arg(long)]
        no_report: bool,
        /// Check the model's laws (conservation, liveness, expiry, durability, progress) while
        /// running, as debug builds and the tests always do; a broken law stops the run with exit
        /// code 3.
        #[arg(long)]
        check: bool,
        /// Run without the tasks of this cgroup (a path, `/etl`, with its descendants') or
        /// `[[task]]` group: the counterfactual, into results/<name>-without-<group>; `wblab
        /// compare` the two to see what the others gained. Repeatable.
        #[arg(long, value_name = "GROUP")]
        without: Vec<String>,
        #[command(flatten)]
        sweep: sweep::SweepArgs,
    },
    /// Run the founding reports' scenarios (scenarios/reports/figures.toml) under several seeds and
    /// print each report figure against wblab's: ratio, and a mark for within 2× with the
    /// direction right.
    Reproduce {
        /// Reports to run (`2002-deadline`, `2002-writeout`, `2004-tiotest`, `2007-per-bdi`,
        /// `2011-io-less`); all by default.
        reports: Vec<String>,
        /// Seeds per scenario; each figure is their median, shown with the range.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
        seeds: u32,
        /// Only the figures a scenario parameter was fitted to.
        #[arg(long)]
        fitted: bool,
        /// The long-run check: run each scenario FACTOR times its shipped duration (runs whose
        /// work ends within the shipped duration are not run again: a longer one is the same).
        #[arg(long, value_name = "FACTOR", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
        long: u64,
        /// Simulations at once [default: one per core].
        #[arg(long, short)]
        jobs: Option<usize>,
        /// The scenarios directory (its reports/figures.toml lists the figures) [default: scenarios].
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
        /// No progress line.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Run a file's [sweep]: its points in parallel into one table (sweep.csv, sweep.parquet),
    /// ranked, plotted and resumable. The same as `wblab run` on such a file.
    Sweep {
        /// Scenario file (TOML) with a [sweep] table.
        scenario: PathBuf,
        /// Results directory [default: results/<scenario name>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override the scenario's seed (every point's).
        #[arg(long)]
        seed: Option<u64>,
        /// Print each point's values and figures as JSON instead of the table.
        #[arg(long)]
        json: bool,
        /// No progress output.
        #[arg(long, short)]
        quiet: bool,
        /// Check the model's laws while running (a broken law stops the sweep, exit code 3).
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        sweep: sweep::SweepArgs,
    },
    /// List the device models, or print one's parameters, queue and measured figures.
    Device {
        /// Device model (`wblab device` lists them).
        model: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a scenario or fio job file without running it: every mistake at once, or a line
    /// saying what it runs (--json: its resolved form, every knob explicit).
    Check {
        /// Scenario file (TOML), or a fio job file (.fio).
        scenario: PathBuf,
        /// Print the resolved scenario as JSON, every knob explicit.
        #[arg(long)]
        json: bool,
    },
    /// Print the resolved default scenario (every knob explicit) as JSON.
    Defaults,
    /// List the kernel generations: the releases each covers and the policies it selects.
    Kernels {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Time the simulation (events/s, cost per event, as a share of a bare heap measured in the
    /// same run) and, with --cli, whole `wblab run`s.
    Bench {
        /// Only run benchmarks whose name contains this.
        filter: Option<String>,
        /// Also time whole `wblab run`s (results and report written) in child processes, from
        /// the repository's top directory.
        #[arg(long)]
        cli: bool,
        /// With --cli: time this other wblab binary too, for a before → after table.
        #[arg(long, value_name = "WBLAB")]
        baseline: Option<PathBuf>,
        /// Runs of each benchmark; medians are printed.
        #[arg(long, default_value_t = 3)]
        repeat: usize,
    },
    /// Draw results directories: SVG graphs and report.html (several are overlaid), or
    /// terminal views (--terminal: summary, stem plot, log2 histogram).
    Report(report_cmd::ReportArgs),
    /// Print a results directory's per-second samples as vmstat does.
    Vmstat(report_cmd::VmstatArgs),
    /// Print a results directory's per-second device figures as iostat does (-x: extended).
    Iostat(report_cmd::IostatArgs),
    /// Run a scenario's workload on THIS machine (real processes, fresh loop devices, knobs
    /// applied and restored) and write the same results directory, plus machine.json.
    Measure(probe_cmd::MeasureArgs),
    /// Serve a scenario's devices to THIS machine's kernel as block devices whose every
    /// request is timed by their wblab model (a slow USB key, an old disk), with its sysctls,
    /// until Ctrl-C; then undo everything.
    Emulate(probe_cmd::EmulateArgs),
    /// Each block I/O's life from a run's block trace (simulated or measured): Q2G, G2I, I2D,
    /// D2C and Q2C for all devices, per device and per process, as blktrace's btt prints
    /// them, with biolatency-style histograms per device.
    Btt(btt_cmd::BttArgs),
    /// Measure a real device with O_DIRECT I/O and print a fitted [[device]] section.
    Calibrate(probe_cmd::CalibrateArgs),
    /// Write a scenario of this machine (kernel, memory, CPUs, vm.* sysctls, block devices
    /// and their queues, file systems, cgroups), each value commented with its source; or of
    /// another machine's copied /proc and /sys (--root), or of pasted `sysctl -a` (--lenient).
    Snapshot(snapshot_cmd::SnapshotArgs),
    /// Generated and damaged scenarios through the parser and the simulator, laws checked;
    /// findings are written as reproducer files.
    Fuzz(fuzz_cmd::FuzzArgs),
    /// The differential validator: random scenarios this machine can run, each measured on its
    /// kernel (several repeats) and simulated (as many seeds), graded, summarised (root).
    Validate(validate::ValidateArgs),
    /// Check (or --write) the reference tables in the Markdown docs against the code.
    Docs(docs::DocsArgs),
    /// Show results directories side by side, with relative errors against the first, naming
    /// any key a measured run's kernel refused (that run is another experiment than its file).
    Compare {
        /// Results directories (measured or simulated); the first is the reference.
        #[arg(required = true, num_args = 2..)]
        dirs: Vec<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OutputFormat {
    Normal,
    Json,
    #[value(name = "json+")]
    JsonPlus,
    #[value(alias = "minimal")]
    Terse,
}

impl OutputFormat {
    /// fio's format of the same name; `None` for the table.
    fn fio(self) -> Option<wblab_report::results::fio::FioFormat> {
        use wblab_report::results::fio::FioFormat;
        match self {
            OutputFormat::Normal => None,
            OutputFormat::Json => Some(FioFormat::Json),
            OutputFormat::JsonPlus => Some(FioFormat::JsonPlus),
            OutputFormat::Terse => Some(FioFormat::Terse),
        }
    }
}

/// What `wblab run` prints at the end, and where.
#[derive(Clone, Debug, Default)]
struct Printed {
    /// summary.json instead of the table.
    json: bool,
    /// fio's output of the jobs (summary.json for a run without fio jobs and plain `json`).
    fio: Option<wblab_report::results::fio::FioFormat>,
    /// `--output`: a file instead of stdout.
    file: Option<PathBuf>,
}

impl Printed {
    /// `text` to the file or stdout; false (an error said) when the file cannot be written.
    fn emit(&self, text: &str) -> bool {
        match &self.file {
            Some(f) => match std::fs::write(f, text) {
                Ok(()) => true,
                Err(e) => {
                    eprintln!("error: cannot write {}: {e}", f.display());
                    false
                }
            },
            None => {
                print!("{text}");
                true
            }
        }
    }
}

/// Write a run's results directory as `wblab run` does (summary, CSVs, histograms, trace.txt)
/// and, with `report`, its graphs and report.html; the report's path when drawn.
pub fn write_run(dir: &Path, r: &wblab_sim::metrics::RunResult, wall: f64, report: bool) -> Result<Option<PathBuf>, String> {
    let texts = wblab_report::ResultTexts::new(r, wall);
    texts
        .write(dir)
        .and_then(|()| wblab_report::write_trace_file(dir, r))
        .map_err(|e| format!("cannot write results to {}: {e}", dir.display()))?;
    Ok(if report {
        report_cmd::draw_run_report(texts.run_dir(dir, wblab_report::load::rundir::digest_records(r)), dir)
    } else {
        None
    })
}

/// How to start this program again (`[wblab]`, or `[python, -m, wblab]`): `wblab measure`
/// starts it as the watchdog that undoes a measurement killed without warning.
pub fn set_self_command(cmd: Vec<std::ffi::OsString>) {
    wblab_probe::watchdog::set_self_command(cmd);
}

/// Run the `wblab` command line with `args` (the first is the program's name). Bad
/// arguments print clap's message and give its exit code; nothing here exits the process.
pub fn main_with<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    match cli.cmd {
        Cmd::Run {
            scenario,
            out,
            seed,
            repeat,
            json,
            output_format,
            output,
            trace_block,
            quiet,
            no_report,
            check,
            without,
            sweep,
        } => {
            let json = json || output_format != OutputFormat::Normal;
            if output.is_some() && !json {
                eprintln!("error: --output writes what --json or --output-format prints; the table goes to stdout");
                eprintln!("  hint: add --output-format=json (or json+, terse), or redirect: wblab run ... > FILE");
                return ExitCode::from(2);
            }
            let printed = Printed {
                json,
                fio: output_format.fio(),
                file: output,
            };
            if repeat > 1 && json {
                eprintln!("error: --repeat prints a table of the runs' figures; it does not go with --json");
                eprintln!("  hint: read repeats.csv in the results directory instead");
                return ExitCode::from(2);
            }
            cmd_run(
                scenario,
                out,
                seed,
                repeat,
                printed,
                trace_block,
                quiet,
                no_report,
                check,
                &without,
                &sweep,
            )
        }
        Cmd::Sweep {
            scenario,
            out,
            seed,
            json,
            quiet,
            check,
            sweep,
        } => {
            if scenario.exists() && wblab_scenario::load_sweep(&scenario).is_ok_and(|p| p.is_none()) {
                eprintln!("error: {}: has no [sweep] table", scenario.display());
                eprintln!("  hint: add one, e.g. [sweep] \"vm.dirty_bytes\" = [\"64MiB\", \"256MiB\", \"1GiB\"]; `wblab run` runs a file without one");
                return ExitCode::from(2);
            }
            cmd_run(
                Some(scenario),
                out,
                seed,
                1,
                Printed {
                    json,
                    ..Printed::default()
                },
                false,
                quiet,
                true,
                check,
                &[],
                &sweep,
            )
        }
        Cmd::Reproduce {
            reports,
            seeds,
            fitted,
            long,
            jobs,
            dir,
            json,
            quiet,
        } => {
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |p| p.get()));
            let opts = reproduce::Options { seeds, fitted, long };
            reproduce::run(&reproduce::scenarios_dir(dir), &reports, &opts, jobs, quiet || json, json)
        }
        Cmd::Device { model, json } => device_cmd::device(model.as_deref(), json),
        Cmd::Check { scenario, json } => cmd_check(&scenario, json),
        Cmd::Defaults => {
            let sc = wblab_scenario::default_scenario();
            println!("{}", serde_json::to_string_pretty(&sc).expect("scenario serialises"));
            ExitCode::SUCCESS
        }
        Cmd::Bench {
            filter,
            cli,
            baseline,
            repeat,
        } => bench::run(bench::BenchArgs {
            filter: filter.as_deref(),
            cli,
            baseline: baseline.as_deref(),
            repeat,
        }),
        Cmd::Kernels { json } => kernels_cmd::kernels(json),
        Cmd::Report(a) => report_cmd::report(a),
        Cmd::Vmstat(a) => report_cmd::vmstat(a),
        Cmd::Iostat(a) => report_cmd::iostat(a),
        Cmd::Measure(a) => probe_cmd::measure(a),
        Cmd::Emulate(a) => probe_cmd::emulate(a),
        Cmd::Calibrate(a) => probe_cmd::calibrate(a),
        Cmd::Snapshot(a) => snapshot_cmd::run(a),
        Cmd::Btt(a) => btt_cmd::run(a),
        Cmd::Compare { dirs, json } => probe_cmd::compare(&dirs, json),
        Cmd::Fuzz(a) => fuzz_cmd::fuzz(a),
        Cmd::Validate(a) => validate::validate(a),
        Cmd::Docs(a) => docs::docs(a, &Cli::command()),
    }
}

#[allow(clippy::too_many_arguments)]
fn cmd_run(
    path: Option<PathBuf>,
    out: Option<PathBuf>,
    seed: Option<u64>,
    repeat: u32,
    printed: Printed,
    trace_block: bool,
    quiet: bool,
    no_report: bool,
    check: bool,
    without: &[String],
    sweep_args: &sweep::SweepArgs,
) -> ExitCode {
    let json = printed.json;
    // fio's own formats and --output are for one run: a sweep or several kernels print
    // tables of their own.
    let one_run_only = |what: &str| {
        eprintln!("error: --output and --output-format=json+/terse are for one run; {what}");
        eprintln!("  hint: each run's fio.json is in its results directory (a sweep's with --runs)");
        ExitCode::from(2)
    };
    let special = printed.file.is_some() || matches!(printed.fio, Some(f) if f != wblab_report::results::fio::FioFormat::Json);
    if let Some(p) = &path {
        if special && wblab_scenario::load_sweep(p).is_ok_and(|plan| plan.is_some()) {
            return one_run_only(&format!("{} has a [sweep]", p.display()));
        }
        let adjust = |sc: &mut wblab_sim::config::Scenario| {
            if let Some(s) = seed {
                sc.seed = s;
            }
            sc.trace.block |= trace_block;
        };
        let write = |dir: &Path, r: &wblab_sim::metrics::RunResult, wall: f64| match wblab_report::write_results_dir(dir, r, wall) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("error: cannot write results to {}: {e}", dir.display());
                false
            }
        };
        if !without.is_empty() && wblab_scenario::load_sweep(p).is_ok_and(|plan| plan.is_some()) {
            eprintln!("error: --without is for one scenario; {} has a [sweep]", p.display());
            eprintln!("  hint: copy the file without its [sweep] and run it with and without --without, then `wblab compare` the two");
            return ExitCode::from(2);
        }
        if repeat > 1 && wblab_scenario::load_sweep(p).is_ok_and(|plan| plan.is_some()) {
            eprintln!("error: --repeat is for one scenario; {} has a [sweep]", p.display());
            eprintln!("  hint: sweep the seed instead: [sweep] seed = {{ min = 1, max = 10, steps = 10 }}");
            return ExitCode::from(2);
        }
        let flags = sweep::Flags {
            out: out.clone(),
            quiet,
            json,
            check,
            sweep: sweep_args,
        };
        if let Some(code) = sweep::try_run(p, flags, adjust, write) {
            return code;
        }
    }
    if sweep_args.any() {
        eprintln!(
            "error: --jobs, --runs, --resume, --plot, --x, --minimize, --maximize, --where and --per are for a sweep; this file has no [sweep]"
        );
        eprintln!("  hint: add a [sweep] table, e.g. [sweep] \"vm.dirty_bytes\" = [\"64MiB\", \"256MiB\", \"1GiB\"]");
        return ExitCode::from(2);
    }
    let mut all = match &path {
        Some(p) => match wblab_scenario::load_all(p) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        },
        None => vec![wblab_scenario::default_scenario()],
    };
    for sc in &mut all {
        if let Some(s) = seed {
            sc.seed = s;
        }
        if trace_block {
            sc.trace.block = true;
        }
        for who in without {
            if let Err(e) = sc.without(who) {
                eprintln!("error: {e}");
                eprintln!("  hint: name a cgroup by its path (`--without /etl`) or a [[task]] group by its name");
                return ExitCode::from(2);
            }
        }
    }
    // The counterfactual goes beside the whole run, not over it.
    let suffix: String = without
        .iter()
        .map(|w| format!("-without-{}", w.trim_matches('/').replace('/', "_")))
        .collect();
    if all.len() > 1 && special {
        return one_run_only(&format!("the scenario lists {} kernels", all.len()));
    }
    if all.len() > 1 {
        // Several kernels: one results directory per kernel, then a side-by-side table.
        let out = out.unwrap_or_else(|| PathBuf::from("results").join(format!("{}{suffix}", all[0].name)));
        let kernels: Vec<_> = if repeat > 1 { all.clone() } else { Vec::new() };
        let code = kernels_cmd::run_kernels(all, &out, quiet, json, check, |dir, r, wall| {
            match write_run(dir, r, wall, !no_report) {
                Ok(_) => true,
                Err(e) => {
                    eprintln!("error: {e}");
                    false
                }
            }
        });
        // Each kernel's repeats, into its own results directory.
        for sc in kernels.iter().filter(|_| code == ExitCode::SUCCESS) {
            println!("\nkernel {}:", sc.kernel);
            let code = repeat_cmd::repeat(sc, &out.join(kernels_cmd::kernel_dir(&sc.kernel)), repeat, quiet, check);
            if code != ExitCode::SUCCESS {
                return code;
            }
        }
        return code;
    }
    let sc = all.swap_remove(0);
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(format!("{}{suffix}", sc.name)));
    // json+ and terse are fio's outputs only: a run without fio jobs has none to give.
    let fio_only = matches!(printed.fio, Some(f) if f != wblab_report::results::fio::FioFormat::Json);
    if fio_only && !sc.tasks.iter().any(|t| matches!(t.job, wblab_sim::config::JobConfig::Fio(_))) {
        eprintln!("error: `{}` has no fio jobs, so no fio output in that format", sc.name);
        eprintln!("  hint: --json (or --output-format=json) prints summary.json for any run");
        return ExitCode::from(2);
    }
    let code = run_one(&sc, &out, quiet, &printed, no_report, check);
    if repeat > 1 && code == ExitCode::SUCCESS {
        return repeat_cmd::repeat(&sc, &out, repeat, quiet, check);
    }
    code
}

/// One scenario, one kernel: simulate while trace.txt is written on the other core, print the
/// summary as soon as the simulation ends, then finish the files and draw the report from
/// what is in memory (nothing is read back).
fn run_one(sc: &wblab_sim::config::Scenario, out: &Path, quiet: bool, printed: &Printed, no_report: bool, check: bool) -> ExitCode {
    let json = printed.json;
    use wblab_report::results::trace_stream::TraceStream;
    let t0 = Instant::now();
    let mut bar = progress::Bar::new(quiet || json, &sc.name);
    let mut stream = None;
    let r = simulate::simulate_streaming(sc, &mut bar, check, |comms| {
        let (s, sink) = TraceStream::start(out, comms, sc.machine.cpus, sc.duration as f64 / 1e9);
        stream = Some(s);
        sink
    });
    let r = match r {
        Ok(r) => r,
        Err(code) => {
            bar.finish();
            // A broken law: the trace up to it is worth keeping, finished (no scratch file).
            if let Some(s) = stream {
                if let Err(e) = s.finish() {
                    eprintln!("warning: trace.txt: {e}");
                }
            }
            return code;
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    if sc.until_done && r.sim_ns >= sc.duration {
        bar.suspend(|| {
            eprintln!(
                "warning: the run reached its bound of {:.0} s before every task was done: the figures are of the jobs \
                 cut short",
                sc.duration as f64 / 1e9
            );
            eprintln!("  hint: bound the jobs with runtime=, or run them from a scenario with a longer duration");
        });
    }
    let stream = stream.expect("the simulation asked for a trace sink");
    if !json {
        bar.suspend(|| print!("{}", wblab_report::terminal_summary(&r, wall)));
    }
    let texts = wblab_report::ResultTexts::new(&r, wall);
    let texts_fio = texts.fio.clone();
    let written = texts.write(out);
    // The report's own reading of the small files overlaps the end of the trace's writing.
    let run = (!no_report).then(|| texts.run_dir(out, Default::default()));
    while !stream.is_finished() {
        bar.phase("writing trace.txt", &format!("{:.0} MB", stream.bytes() as f64 / 1e6));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let trace = stream.finish();
    if std::env::var_os("WBLAB_PHASES").is_some() {
        eprintln!("phase sim {wall:.3} trace-done {:.3}", t0.elapsed().as_secs_f64());
    }
    let trace = match (written, trace) {
        (Ok(()), Ok(t)) => t,
        (Err(e), _) | (_, Err(e)) => {
            bar.finish();
            eprintln!("error: cannot write results to {}: {e}", out.display());
            return ExitCode::from(1);
        }
    };
    let report = run.and_then(|run| {
        bar.phase("drawing", "report.html and graphs");
        report_cmd::draw_run_report(
            run.map(|mut r| {
                r.trace = trace.digest;
                r
            }),
            out,
        )
    });
    bar.finish();
    if std::env::var_os("WBLAB_PHASES").is_some() {
        eprintln!("phase report-done {:.3}", t0.elapsed().as_secs_f64());
    }
    let fio_text = printed.fio.and_then(|f| match f {
        wblab_report::results::fio::FioFormat::Json => texts_fio,
        other => wblab_report::results::fio::fio_output(&r, other),
    });
    if let Some(text) = fio_text {
        if !printed.emit(&text) {
            return ExitCode::from(1);
        }
    } else if json {
        let v = wblab_report::summary_json(&r, wall);
        if !printed.emit(&(serde_json::to_string_pretty(&v).expect("json") + "\n")) {
            return ExitCode::from(1);
        }
    } else {
        println!("results: {}", out.display());
        if let Some(p) = report {
            println!("report: {}", p.display());
        }
    }
    ExitCode::SUCCESS
}

fn cmd_check(path: &Path, json: bool) -> ExitCode {
    // Every kernel the file lists is checked; the first is the one shown.
    let all = match wblab_scenario::load_all(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let kernels: Vec<String> = all
        .iter()
        .map(|s| {
            if s.kernel == s.policy.generation {
                s.kernel.clone()
            } else {
                format!("{} ({} generation)", s.kernel, s.policy.generation)
            }
        })
        .collect();
    // What each kernel lacks that the file asks for: run as asked, as a what-if.
    let mut what_if: Vec<String> = Vec::new();
    for s in &all {
        for w in &s.what_if {
            if !what_if.contains(w) {
                what_if.push(w.clone());
            }
        }
    }
    let sc = all.into_iter().next().expect("at least one kernel");
    if json {
        println!("{}", serde_json::to_string_pretty(&sc).expect("scenario serialises"));
        return ExitCode::SUCCESS;
    }
    let tasks: u32 = sc.tasks.iter().map(|t| t.count).sum();
    println!(
        "{}: ok — kernel {}, {} s, {} MiB RAM, {} CPUs, {} device(s), {} task(s)",
        path.display(),
        kernels.join(", "),
        sc.duration as f64 / 1e9,
        sc.machine.memory >> 20,
        sc.machine.cpus,
        sc.devices.len(),
        tasks
    );
    for w in &what_if {
        println!("what-if: {w}");
    }
    // A sweep: how many points, and which of them were checked.
    if let Ok(Some(plan)) =
        wblab_scenario::SweepPlan::parse(&std::fs::read_to_string(path).unwrap_or_default(), &path.display().to_string())
    {
        let how = if plan.is_random() { " drawn at random" } else { "" };
        let checked = if plan.len() <= wblab_scenario::SWEEP_CHECKS_EVERY_POINT_UP_TO {
            "every point checked".to_string()
        } else {
            "each key's every value checked; a point whose combination of values is not valid is found as the sweep reaches it, listed in sweep-invalid.csv and not run".to_string()
        };
        println!(
            "sweep of {}: {} points{how} ({checked}); the above is its first point",
            plan.keys().join(", "),
            plan.len()
        );
    }
    ExitCode::SUCCESS
}
