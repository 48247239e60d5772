//! `wblab`: run writeback experiments on a simulated Linux machine.

mod bench;
mod progress;

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use wblab_sim::config::{default_queue, DeviceConfig, DeviceModelConfig, HddParams, SsdParams};

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
        /// Print summary.json to stdout instead of the table.
        #[arg(long)]
        json: bool,
        /// Record block:block_rq_issue/complete in trace.txt (large).
        #[arg(long)]
        trace_block: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Print a device model's sequential bandwidth and random IOPS (`hdd` or `ssd`).
    Device {
        /// Device model: hdd or ssd.
        model: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a scenario file without running it; print its resolved form (every knob explicit).
    Check {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Print the resolved scenario as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the resolved default scenario (every knob explicit) as JSON.
    Defaults,
    /// Run the benchmark scenarios and print events/s and simulated seconds per wall second.
    Bench {
        /// Only run benchmarks whose name contains this.
        filter: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run {
            scenario,
            out,
            seed,
            json,
            trace_block,
            quiet,
        } => cmd_run(scenario, out, seed, json, trace_block, quiet),
        Cmd::Device { model, json } => cmd_device(&model, json),
        Cmd::Check { scenario, json } => cmd_check(&scenario, json),
        Cmd::Defaults => {
            let sc = wblab_scenario::default_scenario();
            println!("{}", serde_json::to_string_pretty(&sc).expect("scenario serialises"));
            ExitCode::SUCCESS
        }
        Cmd::Bench { filter } => bench::run(filter.as_deref()),
    }
}

fn cmd_run(path: Option<PathBuf>, out: Option<PathBuf>, seed: Option<u64>, json: bool, trace_block: bool, quiet: bool) -> ExitCode {
    let mut sc = match &path {
        Some(p) => match wblab_scenario::load(p) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        },
        None => wblab_scenario::default_scenario(),
    };
    if let Some(s) = seed {
        sc.seed = s;
    }
    if trace_block {
        sc.trace.block = true;
    }
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(&sc.name));
    let t0 = Instant::now();
    let mut bar = progress::Bar::new(quiet || json, &sc.name);
    let r = wblab_sim::run(&sc, &mut bar);
    bar.finish();
    let wall = t0.elapsed().as_secs_f64();
    if let Err(e) = wblab_report::write_results_dir(&out, &r, wall) {
        eprintln!("error: cannot write results to {}: {e}", out.display());
        return ExitCode::from(1);
    }
    if json {
        let v = wblab_report::summary_json(&r, wall);
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
    } else {
        print!("{}", wblab_report::terminal_summary(&r, wall));
        println!("results: {}", out.display());
    }
    ExitCode::SUCCESS
}

fn cmd_check(path: &Path, json: bool) -> ExitCode {
    let sc = match wblab_scenario::load(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&sc).expect("scenario serialises"));
        return ExitCode::SUCCESS;
    }
    let tasks: u32 = sc.tasks.iter().map(|t| t.count).sum();
    println!(
        "{}: ok — kernel {}, {} s, {} MiB RAM, {} CPUs, {} device(s), {} task(s)",
        path.display(),
        sc.kernel,
        sc.duration as f64 / 1e9,
        sc.machine.memory >> 20,
        sc.machine.cpus,
        sc.devices.len(),
        tasks
    );
    ExitCode::SUCCESS
}

fn cmd_device(model: &str, json: bool) -> ExitCode {
    let m = match model {
        "hdd" => DeviceModelConfig::Hdd(HddParams::default()),
        "ssd" => DeviceModelConfig::Ssd(SsdParams::default()),
        other => {
            eprintln!("error: unknown device model `{other}`\n  hint: known models: hdd, ssd");
            return ExitCode::from(2);
        }
    };
    let size = if model == "hdd" { 4_000_000_000_000 } else { 1_000_000_000_000 };
    let cfg = DeviceConfig {
        name: model.to_string(),
        major: 8,
        minor: 0,
        size,
        queue: default_queue(&m),
        model: m,
        bdi: Default::default(),
        fs: None,
        throttle: Default::default(),
    };
    let f = wblab_sim::drivers::characterize::characterize(&cfg);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "model": model, "params": cfg.model, "figures": f })).expect("json")
        );
        return ExitCode::SUCCESS;
    }
    println!("device model `{model}` (defaults)");
    println!("{}", serde_json::to_string_pretty(&cfg.model).expect("json"));
    println!("{f:#?}");
    ExitCode::SUCCESS
}
