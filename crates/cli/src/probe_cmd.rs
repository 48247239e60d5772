//! `wblab measure`, `wblab calibrate` and `wblab compare`: ask the real kernel, and put its
//! answers next to the simulator's.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wblab_probe::calibrate::{self, CalibrateOptions, Target};
use wblab_probe::{guard, journal, MeasureError, MeasureOptions};
use wblab_sim::config::BlkThrottleConfig;

fn signal_exit(sig: i32) -> ExitCode {
    if sig > 0 {
        ExitCode::from(128 + sig as u8)
    } else {
        ExitCode::from(1)
    }
}

#[derive(clap::Args)]
pub struct EmulateArgs {
    /// Scenario file (TOML): its devices with `emulate = true` are served by their models
    /// (with --all, every device that can be), the others made as `wblab measure` makes them.
    pub scenario: PathBuf,
    /// Serve every device whose model can be emulated (all but `loop` and `nfs`).
    #[arg(long)]
    pub all: bool,
    /// Where every request the devices answered is listed (emulated-<device>.csv) and the
    /// record of changes kept [default: results/<scenario name>-emulated].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where to create the scratch directory [default: /var/tmp].
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// No progress messages.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `wblab emulate`: the scenario's devices, emulated ones served by their models, with its
/// sysctls and throttle rules, until SIGINT or SIGTERM; then everything undone.
pub fn emulate(a: EmulateArgs) -> ExitCode {
    let mut sc = match wblab_scenario::load(&a.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if a.all {
        wblab_probe::plan::emulate_every_device(&mut sc);
    }
    if !sc.devices.iter().any(|d| d.emulate) {
        eprintln!(
            "error: {}: no device has `emulate = true`\n  hint: add it to a [[device]], or pass --all to serve every device that can be",
            a.scenario.display()
        );
        return ExitCode::from(2);
    }
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("error: an emulated device needs root (a FUSE mount and a loop device)");
        return ExitCode::from(2);
    }
    let (out, mut opts) = options_for(a.out, a.scratch, &sc.name, "emulated");
    opts.quiet = a.quiet;
    opts.serve = true;
    opts.restorer = wblab_probe::watchdog::restorer();
    match wblab_probe::measure(&sc, &opts) {
        Err(MeasureError::Interrupted(sig)) => {
            eprintln!(
                "stopped by {}: every change undone; the requests served are in {}",
                guard::signal_name(sig),
                out.display()
            );
            ExitCode::SUCCESS
        }
        Err(MeasureError::Refused(m)) => {
            eprintln!("error: cannot emulate {}: {m}", a.scenario.display());
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            if journal::pending() {
                eprintln!("error: some changes could not be undone; run `wblab measure --restore`");
            }
            ExitCode::from(1)
        }
        Ok(_) => ExitCode::SUCCESS,
    }
}

#[derive(clap::Args)]
pub struct MeasureArgs {
    /// Scenario file (TOML).
    #[arg(required_unless_present = "restore")]
    pub scenario: Option<PathBuf>,
    /// Results directory [default: results/<scenario name>-measured].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where to create the scratch directory [default: /var/tmp].
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// Also apply queue/bdi knobs to the existing disk holding the scratch directory.
    #[arg(long)]
    pub host_knobs: bool,
    /// Serve every device whose model can be emulated (all but `loop` and `nfs`) by its
    /// model, as `emulate = true` in the scenario would (docs/emulation.md).
    #[arg(long)]
    pub emulate: bool,
    /// Undo what an interrupted (killed) measurement left behind, then exit.
    #[arg(long)]
    pub restore: bool,
    /// With --restore: first wait for the measurement PID:START to end (the watchdog a
    /// measurement starts runs this).
    #[arg(long, value_name = "PID:START", requires = "restore", hide = true)]
    pub after: Option<String>,
    /// Print every command, file, device, sysctl, sysfs and cgroup path the measurement would
    /// touch and every process it would start, and exit without doing any of it.
    #[arg(long)]
    pub plan: bool,
    /// Run as an unprivileged user would, even as root: files in the scratch directory and
    /// timings only; no sysctl, loop device, mount, throttle rule, cgroup or trace instance.
    #[arg(long)]
    pub unprivileged: bool,
    /// Do not time the first touch of free memory before the run (up to 2 GiB written, and
    /// waits of up to a minute for freed memory to go back to the host): quicker, but
    /// machine.json has no `memory_touch`, so a simulation of the run cannot be given the
    /// day's memory (`[machine] page_first_touch`).
    #[arg(long)]
    pub no_memory_touch: bool,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress messages.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn measure(a: MeasureArgs) -> ExitCode {
    if a.restore {
        return restore(a.after.as_deref(), a.quiet);
    }
    let Some(path) = a.scenario else {
        eprintln!("error: wblab measure needs a scenario file (or --restore)");
        return ExitCode::from(2);
    };
    let mut sc = match wblab_scenario::load(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if a.emulate {
        let served = wblab_probe::plan::emulate_every_device(&mut sc);
        if served == 0 {
            eprintln!(
                "error: --emulate: no device of {} has a model that can be emulated (`loop` is real, `nfs` is not a block device)",
                path.display()
            );
            return ExitCode::from(2);
        }
    }
    let (out, mut opts) = options_for(a.out, a.scratch, &sc.name, "measured");
    opts.host_knobs = a.host_knobs;
    opts.quiet = a.quiet || a.json;
    opts.unprivileged = a.unprivileged;
    opts.memory_touch = !a.no_memory_touch;
    if a.plan {
        return print_plan(&sc, &opts, &path);
    }
    opts.restorer = wblab_probe::watchdog::restorer();
    match wblab_probe::measure(&sc, &opts) {
        Ok(rep) => {
            for w in &rep.warnings {
                eprintln!("warning: {w}");
            }
            if a.json {
                let v = wblab_report::summary_json(&rep.result, rep.wall_seconds);
                println!("{}", serde_json::to_string_pretty(&v).expect("json"));
            } else {
                print!("{}", wblab_report::terminal_summary(&rep.result, rep.wall_seconds));
                println!("results: {} (measured on this machine; see machine.json)", out.display());
            }
            if !rep.cleanup_problems.is_empty() {
                for p in &rep.cleanup_problems {
                    eprintln!("error: cleanup: {p}");
                }
                eprintln!("error: some changes could not be undone; run `wblab measure --restore`");
                return ExitCode::from(1);
            }
            if let Some(sig) = rep.interrupted {
                eprintln!(
                    "interrupted by {} after {:.1} s: partial results written, every change undone",
                    guard::signal_name(sig),
                    rep.result.sim_ns as f64 / 1e9
                );
                return signal_exit(sig);
            }
            ExitCode::SUCCESS
        }
        Err(MeasureError::Refused(m)) => {
            eprintln!("error: cannot measure {}: {m}", path.display());
            ExitCode::from(2)
        }
        Err(MeasureError::Interrupted(sig)) => {
            eprintln!("interrupted by {} during setup: every change undone", guard::signal_name(sig));
            signal_exit(sig)
        }
        Err(e) => {
            eprintln!("error: {e}");
            if journal::pending() {
                eprintln!("error: some changes could not be undone; run `wblab measure --restore`");
            }
            ExitCode::from(1)
        }
    }
}

/// `--plan`: what the measurement would do, checked as a measurement checks it.
fn print_plan(sc: &wblab_sim::config::Scenario, opts: &MeasureOptions, path: &Path) -> ExitCode {
    if let Err(e) = wblab_probe::measure::check_scenario(sc) {
        eprintln!("error: cannot measure {}: {e}", path.display());
        return ExitCode::from(2);
    }
    let host = wblab_probe::plan::Host::detect(opts);
    match wblab_probe::plan::Plan::build(sc, opts, &host) {
        Ok(plan) => {
            print!("{}", plan.render());
            let escapes = plan.escapes();
            if escapes.is_empty() {
                ExitCode::SUCCESS
            } else {
                for e in escapes {
                    eprintln!("error: the plan leaves its scratch directory: {e}");
                }
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("error: cannot measure {}: {e}", path.display());
            ExitCode::from(2)
        }
    }
}

/// `--restore` (after the process `after` names has ended, for the watchdog, which says
/// nothing when there is nothing to do).
fn restore(after: Option<&str>, quiet: bool) -> ExitCode {
    if let Some(who) = after {
        if let Err(e) = wblab_probe::watchdog::wait_for_end(who) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    match journal::restore() {
        Ok(done) if done.is_empty() => {
            if !quiet {
                println!("nothing to restore");
            }
            ExitCode::SUCCESS
        }
        Ok(done) => {
            let who = if after.is_some() {
                "wblab measure (watchdog): the measurement ended without undoing its changes; "
            } else {
                ""
            };
            for d in done {
                eprintln!("{who}restored: {d}");
            }
            ExitCode::SUCCESS
        }
        Err(problems) => {
            for p in problems {
                eprintln!("error: {p}");
            }
            ExitCode::from(1)
        }
    }
}

#[derive(clap::Args)]
pub struct CalibrateArgs {
    /// `loop` (a fresh loop device over a scratch file) or a directory to test a scratch file in.
    pub target: String,
    /// Test file / loop device size.
    #[arg(long, default_value = "1GiB")]
    pub size: String,
    /// Seconds per measured point.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// blk-throttle read limit for a loop target (e.g. 8MiB/s).
    #[arg(long)]
    pub read_bps: Option<String>,
    /// blk-throttle write limit for a loop target.
    #[arg(long)]
    pub write_bps: Option<String>,
    /// blk-throttle read IOPS limit for a loop target.
    #[arg(long)]
    pub read_iops: Option<u64>,
    /// blk-throttle write IOPS limit for a loop target.
    #[arg(long)]
    pub write_iops: Option<u64>,
    /// Where a loop target's scratch directory goes [default: /var/tmp].
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// Also write the device section to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print every measured point as JSON.
    #[arg(long)]
    pub json: bool,
    /// No progress messages.
    #[arg(long, short)]
    pub quiet: bool,
}

fn rate(v: &Option<String>, what: &str) -> Result<Option<u64>, String> {
    v.as_deref()
        .map(|s| wblab_scenario::units::parse_rate(s).map_err(|e| format!("--{what} {s}: {e:?}")))
        .transpose()
}

pub fn calibrate(a: CalibrateArgs) -> ExitCode {
    let size = match wblab_scenario::units::parse_size(&a.size) {
        Ok(s) if s >= 64 << 20 => s,
        Ok(_) => {
            eprintln!("error: --size must be at least 64MiB");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: --size {}: {e:?}", a.size);
            return ExitCode::from(2);
        }
    };
    let throttle = match (rate(&a.read_bps, "read-bps"), rate(&a.write_bps, "write-bps")) {
        (Ok(r), Ok(w)) => BlkThrottleConfig {
            read_bps: r,
            write_bps: w,
            read_iops: a.read_iops,
            write_iops: a.write_iops,
        },
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let target = if a.target == "loop" {
        Target::Loop(a.scratch.unwrap_or_else(|| PathBuf::from("/var/tmp")))
    } else {
        let p = Path::new(&a.target);
        if p.starts_with("/dev") || !p.is_dir() {
            eprintln!(
                "error: TARGET is `loop` (a fresh loop device over a scratch file) or an existing directory \
                 to create a scratch test file in; never a device that may hold data"
            );
            return ExitCode::from(2);
        }
        if throttle.is_limited() {
            eprintln!("error: throttling applies only to a `loop` target");
            return ExitCode::from(2);
        }
        Target::Dir(p.to_path_buf())
    };
    let o = CalibrateOptions {
        target,
        size,
        seconds: a.seconds.max(0.05),
        throttle,
        queue_depths: vec![1, 2, 4, 8, 16, 32],
        quiet: a.quiet || a.json,
    };
    match calibrate::calibrate(&o) {
        Ok(c) => {
            if let Some(out) = &a.out {
                if let Err(e) = std::fs::write(out, &c.section) {
                    eprintln!("error: {}: {e}", out.display());
                    return ExitCode::from(1);
                }
            }
            if a.json {
                println!("{}", serde_json::to_string_pretty(&c).expect("json"));
            } else {
                print!("{}", c.section);
                if let Some(out) = &a.out {
                    eprintln!("device section written to {}", out.display());
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            match guard::aborted() {
                Some(sig) => signal_exit(sig),
                None => ExitCode::from(1),
            }
        }
    }
}

pub fn compare(dirs: &[PathBuf], json: bool) -> ExitCode {
    if dirs.len() < 2 {
        eprintln!("error: compare needs at least two results directories");
        return ExitCode::from(2);
    }
    let mut runs = Vec::new();
    for d in dirs {
        match wblab_report::compare::load(d) {
            Ok(r) => runs.push(r),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let c = wblab_report::compare::compare(&runs);
    if json {
        println!("{}", serde_json::to_string_pretty(&c).expect("json"));
    } else {
        print!("{}", wblab_report::compare::render(&c));
    }
    ExitCode::SUCCESS
}

/// The results directory (`--out`, else `results/<scenario>-<suffix>`) and the options every
/// run of the harness starts from, with `--scratch` if given.
fn options_for(out: Option<PathBuf>, scratch: Option<PathBuf>, name: &str, suffix: &str) -> (PathBuf, MeasureOptions) {
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(format!("{name}-{suffix}")));
    let mut opts = MeasureOptions::new(out.clone());
    if let Some(s) = scratch {
        opts.scratch_parent = s;
    }
    (out, opts)
}
