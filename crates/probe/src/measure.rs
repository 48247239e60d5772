//! `wblab measure`: run a scenario's workload on this machine and write the same results
//! directory as `wblab run` (summary.json, trace.txt — the kernel's own lines —,
//! timeseries.csv, throttle.csv) plus machine.json.
//!
//! Order of a run (each change journaled before it is made, see `journal.rs`):
//! scratch dir → per device: backing file, mkfs on the file, fresh loop index, bind with direct
//! I/O, mount, queue/bdi knobs → files that jobs read (O_DIRECT) → sysctls → throttle rules →
//! tracefs instance → t0 → jobs at their start times → stop at the scenario's end (SIGINT to
//! dd) → trace drained → results written → tear-down: throttle lifted (queued bios drain at
//! once), unmount, unbind, remove the loop index, delete the backing file and scratch dir,
//! knobs restored.

use crate::facts::{self, MachineFacts};
use crate::journal::{self, Journal};
use crate::knobs::{self, KnobRecord};
use crate::outdir::OutDir;
use crate::plan::{DevicePlan, EmulatePlan, Host, LoopPlan, Plan};
use crate::tracefs::{TraceStats, Tracer};
use crate::vmstat::{self, DiskStat, Sampler};
use crate::workload::{self, TaskOutcome, Workload};
use crate::{cgroup, guard, loopdev, mount, sys, trees};
use serde::Serialize;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};
use wblab_report::load::trace_parse;
use wblab_sim::config::{DeviceConfig, JobConfig, Scenario};
use wblab_sim::metrics::{DeviceResult, JournalResult, LatencyHist, RunResult, TaskResult, ThrottleSample, VmstatSample};
use wblab_sim::Ns;

pub const MACHINE_FILE: &str = "machine.json";

/// The events every measurement records.
pub const WRITEBACK_EVENTS: &[&str] = &[
    "writeback:balance_dirty_pages",
    "writeback:bdi_dirty_ratelimit",
    "writeback:global_dirty_state",
    "writeback:writeback_written",
    "wbt:wbt_step",
];
/// The block events recorded on the devices a measurement creates: each request's issue and
/// completion (its latency on the device). The whole block trace ([`BLOCK_EVENTS`]) fires four
/// times as often, and on 6.18 it disturbed what it measured (a reader beside a copy on a loop
/// device: 1.2–1.8 k IOPS and a 16–18 ms p99 with it, 10–40 k IOPS and 0.07–0.29 ms without,
/// two runs each), so it is recorded only when the scenario asks for it.
pub const BLOCK_REQUEST_EVENTS: &[&str] = &["block:block_rq_issue", "block:block_rq_complete"];
/// The whole block trace of an I/O, as `wblab btt` reads it: queued (after blk-throttle),
/// split, merged, given a request, inserted into the scheduler, issued, completed.
pub const BLOCK_EVENTS: &[&str] = &[
    "block:block_bio_queue",
    "block:block_split",
    "block:block_bio_backmerge",
    "block:block_bio_frontmerge",
    "block:block_getrq",
    "block:block_rq_insert",
    "block:block_rq_issue",
    "block:block_rq_complete",
];
/// jbd2's commit events, recorded for the devices that carry ext4.
pub const JBD2_EVENTS: &[&str] = &["jbd2:jbd2_start_commit", "jbd2:jbd2_end_commit", "jbd2:jbd2_run_stats"];
/// kyber's own events, recorded for the devices that run it (`kyber_throttled` only with the
/// block events: it fires on every dispatch that finds no token).
pub const KYBER_EVENTS: &[&str] = &["kyber:kyber_latency", "kyber:kyber_adjust"];
pub const KYBER_FREQUENT_EVENTS: &[&str] = &["kyber:kyber_throttled"];

const START_MARK: &str = "wblab start";

#[derive(Clone, Debug)]
pub struct MeasureOptions {
    pub out: PathBuf,
    /// Where the scratch directory is created.
    pub scratch_parent: PathBuf,
    /// Also apply the scenario's queue/bdi knobs to the existing disk that holds the scratch
    /// directory (for devices that are not loop devices). Off by default: the harness changes
    /// only what it creates unless told otherwise.
    pub host_knobs: bool,
    /// tracefs buffer per CPU, KiB.
    pub trace_buffer_kb: u64,
    pub quiet: bool,
    /// Run as an unprivileged user would, even as root: files in the scratch directory and
    /// timings only; no sysctl, loop device, mount, throttle rule, cgroup or trace instance.
    pub unprivileged: bool,
    /// Time the first touch of free memory before the run (`machine.json`'s `memory_touch`).
    pub memory_touch: bool,
    /// The command that undoes an interrupted measurement (`wblab measure --restore`), started
    /// as a watchdog that waits for this process to end: a measurement killed by a signal that
    /// cannot be caught (SIGKILL, a crash) is undone all the same. None: no watchdog.
    pub restorer: Option<Vec<std::ffi::OsString>>,
    /// Set up the scenario's devices, sysctls and throttle rules, then serve them until a
    /// signal stops the run, instead of running its tasks (`wblab emulate`).
    pub serve: bool,
}

impl MeasureOptions {
    pub fn new(out: PathBuf) -> MeasureOptions {
        MeasureOptions {
            out,
            scratch_parent: PathBuf::from("/var/tmp"),
            host_knobs: false,
            trace_buffer_kb: 32 * 1024,
            quiet: false,
            unprivileged: false,
            memory_touch: true,
            restorer: None,
            serve: false,
        }
    }
}

/// What `measure` returns.
pub struct MeasureReport {
    pub result: RunResult,
    pub wall_seconds: f64,
    pub warnings: Vec<String>,
    /// The signal (or panic) that cut the run short.
    pub interrupted: Option<i32>,
    /// Tear-down steps that failed (the journal is kept for `--restore` then).
    pub cleanup_problems: Vec<String>,
}

#[derive(Debug)]
pub enum MeasureError {
    /// The scenario asks for something this harness cannot do for real.
    Refused(String),
    /// Setup or I/O failed.
    Failed(String),
    /// Stopped by a signal before the workload began.
    Interrupted(i32),
}

impl std::fmt::Display for MeasureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MeasureError::Refused(m) => write!(f, "cannot measure this scenario: {m}"),
            MeasureError::Failed(m) => write!(f, "{m}"),
            MeasureError::Interrupted(s) => write!(f, "interrupted by {} before the workload started", guard::signal_name(*s)),
        }
    }
}

fn failed(e: impl std::fmt::Display) -> MeasureError {
    MeasureError::Failed(e.to_string())
}

/// How a scenario device exists on this machine.
#[derive(Clone, Debug, Serialize)]
pub struct DevicePlacement {
    pub name: String,
    pub model: String,
    /// The real block device its I/O lands on ("loop64", "vda").
    pub block_device: Option<String>,
    pub devnum: Option<String>,
    /// Where the device's files live.
    pub dir: PathBuf,
    pub loop_index: Option<u32>,
    pub backing_file: Option<PathBuf>,
    pub backing_size: Option<u64>,
    pub direct_io: Option<bool>,
    pub fs: Option<String>,
    pub throttle: Vec<(String, u64)>,
    pub knobs: Vec<KnobRecord>,
    /// The emulated device behind the loop device (`emulate = true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulated: Option<EmulationRecord>,
    #[serde(skip)]
    created: bool,
}

/// The results file listing every request an emulated device answered, with the model's
/// times ([`wblab_emulate::Record`]).
pub fn emulated_requests_file(device: &str) -> String {
    format!("emulated-{device}.csv")
}

/// How an emulated device served the measurement.
#[derive(Clone, Debug, Serialize)]
pub struct EmulationRecord {
    /// Its FUSE file system's mount point.
    pub mount: PathBuf,
    /// The trip through the loop driver and FUSE, timed before the run, that the device
    /// gives back on each request.
    pub transport: wblab_emulate::Transport,
    /// Whether the backing file was read and written with O_DIRECT.
    pub image_direct: bool,
    /// Requests answered during the workload, and how many left late.
    pub stats: Option<wblab_emulate::Stats>,
}

#[derive(Serialize)]
struct MachineJson<'a> {
    wblab_version: &'static str,
    kind: &'static str,
    scenario: &'a str,
    started_unix: u64,
    duration_s: f64,
    interrupted: Option<String>,
    root: bool,
    facts: &'a MachineFacts,
    scratch: &'a Path,
    devices: &'a [DevicePlacement],
    sysctl: &'a [KnobRecord],
    sysctl_before: &'a [(String, String)],
    trace: TraceJson<'a>,
    /// Share of all CPU time during the run used by processes other than wblab and its children
    /// (host steal included): other load that may disturb the figures.
    other_cpu_fraction: f64,
    /// Share of all CPU time spent by kernel threads and interrupts (the flushers, the loop
    /// workers, jbd2, softirqs): mostly the run's own I/O.
    kernel_cpu_fraction: f64,
    /// The disk the loop devices' backing files lived on, timed before they were made.
    #[serde(skip_serializing_if = "Option::is_none")]
    host_disk: Option<crate::hostdisk::HostDiskStamp>,
    /// What the first touch of long-free memory cost the page cache, timed before the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_touch: Option<crate::memtouch::MemoryTouchStamp>,
    /// Free blocks per order (`/proc/buddyinfo`, zones summed) as the workload started, once
    /// the freed memory had gone back to the host: which free memory a folio of each size
    /// finds backed (`[machine] buddyinfo`).
    #[serde(skip_serializing_if = "Option::is_none")]
    buddyinfo: Option<&'a [u64]>,
    /// KiB dirty or under writeback on devices outside the scenario while the writers were
    /// throttled (the median, over `balance_dirty_pages` events, of the global dirty level
    /// less the scenario's devices' own): the level that shares the limit with ours.
    #[serde(skip_serializing_if = "Option::is_none")]
    other_dirty_kib: Option<u64>,
    /// Pages dirtied on the whole machine during the run beyond what the run's own writers
    /// wrote, MiB: other processes' dirty data shares the global dirty limit with ours.
    other_dirtied_mib: f64,
    /// Bytes of fio's reading jobs' files, written by the harness before the run (O_DIRECT: not
    /// dirtied during it).
    #[serde(skip_serializing_if = "is_zero")]
    fio_layout_bytes: u64,
    tasks: Vec<TaskJson<'a>>,
    warnings: &'a [String],
    cleanup: CleanupJson<'a>,
}

#[derive(Serialize)]
struct TraceJson<'a> {
    tracefs: Option<&'a Path>,
    instance: Option<&'a Path>,
    events: &'a [String],
    missing_events: &'a [String],
    buffer_kb_per_cpu: u64,
    stats: Option<&'a TraceStats>,
    lines: u64,
}

#[derive(Serialize)]
struct TaskJson<'a> {
    name: &'a str,
    instance: u32,
    pid: u32,
    file: &'a Path,
    note: Option<&'a str>,
}

#[derive(Serialize)]
struct CleanupJson<'a> {
    ok: bool,
    problems: &'a [String],
}

fn log(opts: &MeasureOptions, msg: &str) {
    if !opts.quiet {
        eprintln!("measure: {msg}");
    }
}

fn check_aborted() -> Result<(), MeasureError> {
    match guard::aborted() {
        Some(s) => Err(MeasureError::Interrupted(s)),
        None => Ok(()),
    }
}

/// Task instances a measurement runs at most: the 2011 report's 1000 `dd`, and a margin. Each
/// is a process or a thread of the harness, polled every tick; more would be a fork bomb
/// rather than an experiment on a 2-CPU machine.
pub const MAX_INSTANCES: u32 = 1024;

/// Whether the scenario can run here; the reasons it cannot.
pub fn check_scenario(sc: &Scenario) -> Result<(), MeasureError> {
    let mut why = Vec::new();
    for t in &sc.tasks {
        if let Err(e) = workload::check_job(&t.job) {
            why.push(format!("task `{}`: {e}", t.name));
        }
    }
    if let Err(e) = crate::memcg::check(&sc.cgroups) {
        why.push(e);
    }
    for t in &sc.tasks {
        if let Some((files, dirs, _)) = trees::size_of(&t.job) {
            let entries = files.saturating_add(dirs).saturating_mul(u64::from(t.count));
            if entries > trees::MAX_ENTRIES {
                why.push(format!(
                    "task `{}`: its trees hold {entries} files and directories; the harness lays out at most {} before a run",
                    t.name,
                    trees::MAX_ENTRIES
                ));
            }
        }
    }
    let instances: u32 = sc.tasks.iter().map(|t| t.count).sum();
    if instances > MAX_INSTANCES {
        why.push(format!(
            "{instances} task instances: the harness runs at most {MAX_INSTANCES} real processes and threads"
        ));
    }
    if why.is_empty() {
        Ok(())
    } else {
        Err(MeasureError::Refused(why.join("; ")))
    }
}

/// `/mnt/<dev>/rest` (or any absolute path) → a path under the device's directory; never
/// outside it.
pub fn map_file(file: &str, dev: &str, dir: &Path) -> Result<PathBuf, MeasureError> {
    let prefix = format!("/mnt/{dev}/");
    let rest = file.strip_prefix(&prefix).unwrap_or(file).trim_start_matches('/');
    let rel = Path::new(rest);
    if rest.is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(MeasureError::Refused(format!(
            "file `{file}` cannot be placed safely under {}",
            dir.display()
        )));
    }
    Ok(dir.join(rel))
}

fn self_cpu_ns() -> u64 {
    let get = |who| {
        // SAFETY: rusage is POD.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut ru) };
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    };
    get(libc::RUSAGE_SELF) + get(libc::RUSAGE_CHILDREN)
}

/// Everything the run loop produced.
struct Collected {
    outcomes: Vec<TaskOutcome>,
    /// The tiotest tasks' phase table (empty without one).
    tiotest: Vec<wblab_sim::metrics::tiotest::TiotestPhase>,
    vmstat: Vec<VmstatSample>,
    elapsed_ns: Ns,
    disk_before: Vec<DiskStat>,
    disk_after: Vec<DiskStat>,
    trace_tmp: Option<PathBuf>,
    trace_stats: Option<TraceStats>,
    other_cpu_fraction: f64,
    kernel_cpu_fraction: f64,
    interrupted: Option<i32>,
    /// The scenario's memory cgroups, sampled each second.
    cgroups: Vec<wblab_sim::metrics::CgroupResult>,
    /// The system's pressure stall figures each second.
    pressure: Vec<wblab_sim::metrics::PressureSample>,
}

/// Run a scenario for real. The journal (and so every change) is torn down before this
/// returns, on every path.
pub fn measure(sc: &Scenario, opts: &MeasureOptions) -> Result<MeasureReport, MeasureError> {
    guard::install();
    guard::reset();
    check_scenario(sc)?;
    let host = Host::detect(opts);
    let plan = Plan::build(sc, opts, &host)?;
    let escapes = plan.escapes();
    if !escapes.is_empty() {
        return Err(MeasureError::Failed(format!(
            "refusing to act on a plan that leaves its scratch directory (a bug in wblab, please report it): {}",
            escapes.join("; ")
        )));
    }
    let out = OutDir::prepare(&opts.out).map_err(MeasureError::Refused)?;
    let root = plan.root;
    let wall0 = Instant::now();
    let sysctl_before = knobs::sysctl_snapshot();
    let facts = facts::collect();
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let j = Journal::begin().map_err(|e| MeasureError::Refused(e.to_string()))?;
    let _watchdog = match &opts.restorer {
        Some(cmd) => Some(crate::watchdog::start(cmd).map_err(|e| MeasureError::Failed(format!("cannot start the watchdog: {e}")))?),
        None => None,
    };
    let mut session = Session {
        sc,
        opts,
        out: &out,
        plan: &plan,
        root,
        j,
        warnings: plan.warnings.clone(),
        places: Vec::new(),
        sysctl: Vec::new(),
        tracer: TracerInfo::default(),
        scratch: PathBuf::new(),
        memcg_dirs: Vec::new(),
        blkio_dirs: Vec::new(),
        host_disk: None,
        memory_touch: None,
        buddyinfo: None,
        emulated: Vec::new(),
    };
    let inner = session.run();
    // What the emulated devices answered during the workload; from now on they answer at
    // once, so that the tear-down's writeback is not paced by the model.
    for (i, dev) in &session.emulated {
        if let Some(e) = session.places.get_mut(*i).and_then(|p| p.emulated.as_mut()) {
            e.stats = Some(dev.stats());
        }
        dev.set_passthrough(true);
    }
    // Results are built from data in memory and the trace in the scratch dir: write them
    // before the tear-down removes the scratch dir.
    let written = match &inner {
        Ok(c) => write_results(sc, &out, c, &session.places, &facts, wall0.elapsed().as_secs_f64()).map(Some),
        Err(_) => Ok(None),
    };
    let Session {
        mut j,
        mut warnings,
        places,
        sysctl,
        tracer: tracer_info,
        scratch,
        host_disk,
        memory_touch,
        buddyinfo,
        emulated,
        ..
    } = session;
    let mut cleanup_problems = j.teardown();
    // The tear-down unmounted their file systems; stop serving.
    for (_, dev) in emulated {
        let mount = dev.mountpoint().to_path_buf();
        drop(dev);
        if sys::is_mount_point(&mount) {
            cleanup_problems.push(format!("the emulated device on {} is still mounted", mount.display()));
        }
    }
    // What was changed and undone, kept with the results (also of a run that failed).
    let changes: String = j
        .entries()
        .iter()
        .filter_map(|e| serde_json::to_string(e).ok())
        .map(|l| l + "\n")
        .collect();
    out.write(crate::leaks::CHANGES_FILE, changes.as_bytes()).map_err(failed)?;
    let wall = wall0.elapsed().as_secs_f64();
    let c = inner?;
    let (result, lines, other_dirty_pages) = written.map_err(failed)?.expect("written when the run succeeded");
    let interrupted = c.interrupted;
    let ours: u64 = c
        .outcomes
        .iter()
        .filter(|o| !matches!(o.spec.job, wblab_sim::config::JobConfig::Dd { direct: true, .. }))
        .map(|o| o.bytes_written)
        .sum::<u64>();
    let dirtied = c.vmstat.last().map_or(0, |v| v.nr_dirtied) * facts.page_size;
    let other_dirtied_mib = dirtied.saturating_sub(ours) as f64 / (1u64 << 20) as f64;
    if ours > 0 && other_dirtied_mib * (1u64 << 20) as f64 > 0.05 * ours as f64 {
        warnings.push(format!(
            "other processes dirtied {other_dirtied_mib:.0} MiB during the run: they share the dirty limits with the workload"
        ));
    }
    if c.other_cpu_fraction > 0.25 {
        warnings.push(format!(
            "other load used {:.0}% of the CPUs during the run: figures may be disturbed",
            c.other_cpu_fraction * 100.0
        ));
    }
    let machine = MachineJson {
        wblab_version: env!("CARGO_PKG_VERSION"),
        kind: "measured",
        scenario: &sc.name,
        started_unix,
        duration_s: c.elapsed_ns as f64 / 1e9,
        interrupted: interrupted.map(guard::signal_name),
        root,
        facts: &facts,
        scratch: &scratch,
        devices: &places,
        sysctl: &sysctl,
        sysctl_before: &sysctl_before,
        trace: TraceJson {
            tracefs: tracer_info.tracefs.as_deref(),
            instance: tracer_info.instance.as_deref(),
            events: &tracer_info.events,
            missing_events: &tracer_info.missing,
            buffer_kb_per_cpu: opts.trace_buffer_kb,
            stats: c.trace_stats.as_ref(),
            lines,
        },
        other_cpu_fraction: (c.other_cpu_fraction * 1000.0).round() / 1000.0,
        kernel_cpu_fraction: (c.kernel_cpu_fraction * 1000.0).round() / 1000.0,
        host_disk,
        memory_touch,
        buddyinfo: buddyinfo.as_deref(),
        other_dirty_kib: other_dirty_pages.map(|p| p * facts.page_size / 1024),
        other_dirtied_mib: (other_dirtied_mib * 10.0).round() / 10.0,
        fio_layout_bytes: crate::fio::layout_bytes(sc),
        tasks: c
            .outcomes
            .iter()
            .map(|o| TaskJson {
                name: &o.spec.name,
                instance: o.spec.instance,
                pid: o.pid,
                file: &o.spec.file,
                note: o.note.as_deref(),
            })
            .collect(),
        warnings: &warnings,
        cleanup: CleanupJson {
            ok: cleanup_problems.is_empty(),
            problems: &cleanup_problems,
        },
    };
    let text = serde_json::to_string_pretty(&machine).map_err(failed)? + "\n";
    out.write(MACHINE_FILE, text.as_bytes()).map_err(failed)?;
    for o in &c.outcomes {
        if let Some(n) = &o.note {
            warnings.push(format!("task {}#{}: {n}", o.spec.name, o.spec.instance));
        }
    }
    Ok(MeasureReport {
        result,
        wall_seconds: wall,
        warnings,
        interrupted,
        cleanup_problems,
    })
}

/// What the tracer was set up with, for machine.json.
#[derive(Default)]
struct TracerInfo {
    tracefs: Option<PathBuf>,
    instance: Option<PathBuf>,
    events: Vec<String>,
    missing: Vec<String>,
}

/// How often `wblab emulate` says what its devices served.
const SERVE_PROGRESS: Duration = Duration::from_secs(10);

/// One measurement: the journal of every change made, and what `measure` reports whatever
/// happened (warnings, placements, knobs, tracer, scratch directory).
struct Session<'a> {
    sc: &'a Scenario,
    opts: &'a MeasureOptions,
    out: &'a OutDir,
    plan: &'a Plan,
    root: bool,
    j: Journal,
    warnings: Vec<String>,
    places: Vec<DevicePlacement>,
    sysctl: Vec<KnobRecord>,
    tracer: TracerInfo,
    scratch: PathBuf,
    /// The directory of each of the scenario's memory cgroups (v1), and of its blkio group
    /// where the scenario made them (empty otherwise).
    memcg_dirs: Vec<PathBuf>,
    blkio_dirs: Vec<PathBuf>,
    /// The backing files' disk as timed before the loop devices were made.
    host_disk: Option<crate::hostdisk::HostDiskStamp>,
    /// The page cache's first touch of long-free memory, timed first of all.
    memory_touch: Option<crate::memtouch::MemoryTouchStamp>,
    /// The free lists as the workload started.
    buddyinfo: Option<Vec<u64>>,
    /// Emulated devices being served, with their placement's index: kept until the
    /// tear-down has unmounted and detached what stands on them.
    emulated: Vec<(usize, wblab_emulate::EmulatedDevice)>,
}

impl Session<'_> {
    /// Set up, run the workload, collect. Every change goes into the journal, which the
    /// caller tears down on every path.
    fn run(&mut self) -> Result<Collected, MeasureError> {
        let plan = self.plan;
        self.make_scratch()?;
        self.compare_machines();
        if self.opts.memory_touch {
            log(self.opts, "timing the first touch of free memory");
            match crate::memtouch::stamp(&self.scratch) {
                Ok(s) => self.memory_touch = Some(s),
                Err(e) => self.warnings.push(format!("cannot time the first touch of free memory: {e}")),
            }
        }
        if plan.devices.iter().any(|d| d.loop_device.is_some()) {
            log(self.opts, "timing the backing files' disk");
            match crate::hostdisk::stamp(&self.scratch) {
                Ok(s) => self.host_disk = Some(s),
                Err(e) => self.warnings.push(format!("cannot time the backing files' disk: {e}")),
            }
        }
        for (d, dp) in self.sc.devices.iter().zip(&plan.devices) {
            check_aborted()?;
            let p = self.place(d, dp)?;
            for k in &p.knobs {
                if let Some(n) = &k.note {
                    self.warnings.push(format!("{}: {n}", k.path));
                }
            }
            self.places.push(p);
        }
        crate::guard::fault_point("setup");
        if self.opts.serve {
            self.apply_sysctl_and_throttle()?;
            return self.serve_until_stopped();
        }
        // Tasks, the fio job file and the files that jobs read.
        let specs = plan.tasks.clone();
        for s in &specs {
            if let Some(parent) = s.file.parent() {
                std::fs::create_dir_all(parent).map_err(failed)?;
            }
        }
        if let Some((file, text)) = &plan.fio {
            std::fs::write(file, text).map_err(failed)?;
        }
        self.check_room_for_files(&specs)?;
        for (file, size) in &plan.prefill {
            check_aborted()?;
            log(self.opts, &format!("creating {} ({})", file.display(), human(*size)));
            workload::prefill(file, *size).map_err(|e| failed(format!("{}: {e}", file.display())))?;
        }
        self.lay_out_trees(&specs)?;
        self.apply_sysctl_and_throttle()?;
        let specs = self.make_cgroups(specs)?;
        check_aborted()?;
        // Memory freed during the setup (and by the probes) goes back to the host first, so
        // that every run starts from the same memory.
        if self.memory_touch.is_some_and(|m| m.reporting) {
            log(self.opts, "waiting for freed memory to go back to the host");
            crate::memtouch::settle();
        }
        check_aborted()?;
        let tracer = self.start_tracing();
        // After the trace's buffers took their pages, as the workload finds the lists.
        self.buddyinfo = crate::memtouch::buddyinfo();
        crate::guard::fault_point("workload");
        // Emulated devices answered the setup (file system, files, syncs) at once; from here
        // their models time every request, starting idle.
        for (_, dev) in &self.emulated {
            dev.reset_stats();
            dev.set_passthrough(false);
        }
        self.run_workload(specs, tracer)
    }

    /// Refuse to write, before the run, more than nine tenths of what the scratch file system
    /// has free: the files that readers read and the trees (every device's data ends up there,
    /// in its image or its directory).
    fn check_room_for_files(&self, specs: &[workload::TaskSpec]) -> Result<(), MeasureError> {
        let files: u64 = self.plan.prefill.iter().map(|(_, n)| *n).sum();
        let trees: u64 = specs
            .iter()
            .filter_map(|s| trees::size_of(&s.job))
            .map(|(_, dirs, bytes)| bytes.saturating_add(dirs.saturating_mul(4096)))
            .sum();
        let need = files.saturating_add(trees);
        match crate::room::disk_free(&self.scratch) {
            Some(free) if need > free / 10 * 9 => Err(failed(format!(
                "the files and trees laid out before the run take {}, and {} has {} free: make them smaller, or give --scratch a larger file system",
                human(need),
                self.scratch.display(),
                human(free)
            ))),
            _ => Ok(()),
        }
    }

    /// The metadata jobs' trees (`du`, `ls`, `launch`), laid out on their devices; then each
    /// file system holding one is mounted again, so that none of it is cached when the
    /// workload starts, as in the model.
    fn lay_out_trees(&mut self, specs: &[workload::TaskSpec]) -> Result<(), MeasureError> {
        let trees: Vec<(&workload::TaskSpec, (u64, u64, u64))> = specs.iter().filter_map(|s| Some((s, trees::size_of(&s.job)?))).collect();
        for &(s, (files, dirs, bytes)) in &trees {
            check_aborted()?;
            let data = if bytes > 0 { format!(", {}", human(bytes)) } else { String::new() };
            let root = trees::root_of(s);
            log(
                self.opts,
                &format!("laying out {}: {files} files in {dirs} directories{data}", root.display()),
            );
            let opts = self.opts;
            trees::lay_out(s, &mut |n| log(opts, &format!("  {n} of {files} files")))
                .map_err(|e| failed(format!("{}: {e}", root.display())))?;
        }
        for (i, p) in self.places.iter().enumerate() {
            if !trees.iter().any(|(s, _)| s.device == p.name) {
                continue;
            }
            let (Some(dev), Some(l)) = (&p.block_device, self.plan.devices[i].loop_device.as_ref()) else {
                self.warnings.push(format!(
                    "device `{}`: its trees' directories and inodes stay cached (the file system is not one measure mounted, so it cannot be mounted again)",
                    p.name
                ));
                continue;
            };
            if !p.created {
                continue;
            }
            log(
                self.opts,
                &format!(
                    "{}: mounting {} again (the trees' metadata out of the caches)",
                    p.name,
                    p.dir.display()
                ),
            );
            mount::unmount(&p.dir).map_err(|e| failed(format!("unmount {}: {e}", p.dir.display())))?;
            mount::mount(&mut self.j, &Path::new("/dev").join(dev), &p.dir, &l.fs, &l.mount_options).map_err(failed)?;
        }
        Ok(())
    }

    /// `wblab emulate`: the devices set up, each emulated one answered by its model, until a
    /// signal stops the run (which then tears everything down as a measurement's end does).
    fn serve_until_stopped(&mut self) -> Result<Collected, MeasureError> {
        for (_, dev) in &self.emulated {
            dev.reset_stats();
            dev.set_passthrough(false);
        }
        for p in &self.places {
            let Some(block) = &p.block_device else { continue };
            let what = p
                .emulated
                .as_ref()
                .map_or(String::new(), |_| format!(", served by the `{}` model", p.model));
            println!(
                "{}: /dev/{block} ({}){what}; {} mounted on {}",
                p.name,
                p.devnum.as_deref().unwrap_or("?"),
                p.fs.as_deref().unwrap_or("?"),
                p.dir.display()
            );
        }
        println!("serving until SIGINT (Ctrl-C) or SIGTERM; every change is undone then");
        let mut shown = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            check_aborted()?;
            if self.opts.quiet || shown.elapsed() < SERVE_PROGRESS {
                continue;
            }
            shown = Instant::now();
            for (i, dev) in &self.emulated {
                let st = dev.stats();
                let on_time = 100.0 - 100.0 * st.late() as f64 / st.requests().max(1) as f64;
                eprintln!(
                    "{}: {} requests, {:.1} MB read, {:.1} MB written, {on_time:.1} % answered on time",
                    self.places[*i].name,
                    st.requests(),
                    st.read.bytes as f64 / 1e6,
                    st.write.bytes as f64 / 1e6
                );
            }
        }
    }

    /// The scenario's memory cgroups (root only), and each task placed in its group.
    fn make_cgroups(&mut self, mut specs: Vec<workload::TaskSpec>) -> Result<Vec<workload::TaskSpec>, MeasureError> {
        if self.sc.cgroups.is_empty() {
            return Ok(specs);
        }
        if !self.root {
            self.warnings
                .push("cgroups need root: every task ran in the harness's own cgroup".to_string());
            return Ok(specs);
        }
        let devnums: Vec<Option<String>> = self.places.iter().map(|p| p.devnum.clone()).collect();
        let dirs = crate::memcg::create(&mut self.j, &self.sc.cgroups, &devnums).map_err(failed)?;
        for s in &mut specs {
            let cg = self.sc.tasks.iter().find(|t| t.name == s.name).and_then(|t| t.cgroup);
            s.cgroup_tasks = cg.map(|c| dirs.tasks_files(c)).unwrap_or_default();
        }
        self.memcg_dirs = dirs.memory;
        self.blkio_dirs = dirs.blkio;
        Ok(specs)
    }

    fn make_scratch(&mut self) -> Result<(), MeasureError> {
        let (parent, name) = (self.opts.scratch_parent.as_path(), self.plan.scratch.file_name().expect("a name"));
        self.scratch = journal::make_scratch(&mut self.j, parent, &name.to_string_lossy()).map_err(failed)?;
        log(self.opts, &format!("scratch {}", self.scratch.display()));
        Ok(())
    }

    /// Warn where this machine is not the scenario's.
    fn compare_machines(&mut self) {
        let (sc, facts) = (self.sc, facts::collect());
        let mem = facts.mem_total_bytes as f64;
        if mem > 0.0 && ((sc.machine.memory as f64 - mem) / mem).abs() > 0.1 {
            self.warnings.push(format!(
                "the scenario's machine has {} of memory, this one {}: ratio-based dirty limits differ",
                human(sc.machine.memory),
                human(facts.mem_total_bytes)
            ));
        }
        if sc.machine.cpus as usize != facts.cpus_online {
            self.warnings.push(format!(
                "the scenario's machine has {} CPUs, this one {}",
                sc.machine.cpus, facts.cpus_online
            ));
        }
    }

    /// Device `d` as planned: a fresh loop device with its file system (a `loop` model, as
    /// root), or a directory on the scratch file system.
    fn place(&mut self, d: &DeviceConfig, dp: &DevicePlan) -> Result<DevicePlacement, MeasureError> {
        std::fs::create_dir_all(&dp.dir).map_err(failed)?;
        let mut p = DevicePlacement {
            name: d.name.clone(),
            model: d.model.kind().to_string(),
            block_device: None,
            devnum: None,
            dir: dp.dir.clone(),
            loop_index: None,
            backing_file: None,
            backing_size: None,
            direct_io: None,
            fs: None,
            throttle: Vec::new(),
            knobs: Vec::new(),
            emulated: None,
            created: false,
        };
        match &dp.loop_device {
            Some(l) => self.make_loop(d, l, &mut p)?,
            None => {
                p.block_device = facts::block_device_of(&self.scratch);
                p.devnum = p.block_device.as_deref().and_then(facts::devnum);
                if let Some(h) = &dp.host_knobs {
                    p.knobs = knobs::apply_queue(&mut self.j, &h.disk, &h.queue, true);
                    p.knobs.extend(knobs::apply_bdi(&mut self.j, &h.devnum, &h.bdi, true));
                }
            }
        }
        Ok(p)
    }

    fn make_loop(&mut self, d: &DeviceConfig, l: &LoopPlan, p: &mut DevicePlacement) -> Result<(), MeasureError> {
        log(self.opts, &format!("{}: {} backing file, mkfs.{}", d.name, human(l.size), l.fs));
        mount::make_backing(&l.backing, l.size).map_err(|e| failed(format!("backing file {}: {e}", l.backing.display())))?;
        mount::mkfs(
            &l.fs,
            &l.backing,
            d.fs.as_ref().and_then(|m| m.journal_size),
            d.fs.as_ref().is_some_and(|m| m.fast_commit),
            l.emulate.is_some() && l.fs == "ext4",
        )
        .map_err(failed)?;
        if let Some(e) = &l.emulate {
            let dev = self.start_emulated(d, l, e)?;
            p.emulated = Some(EmulationRecord {
                mount: e.mount.clone(),
                transport: Default::default(),
                image_direct: dev.image_direct(),
                stats: None,
            });
            self.emulated.push((self.places.len(), dev));
        }
        let (opts, j) = (self.opts, &mut self.j);
        let ld = loopdev::add_fresh(j).map_err(failed)?;
        let dio = loopdev::attach(j, &ld, &l.bound_to()).map_err(failed)?;
        if !dio {
            self.warnings.push(format!("{}: the loop device does not do direct I/O", ld.name()));
        }
        if let (Some(rec), Some((_, dev))) = (p.emulated.as_mut(), self.emulated.last()) {
            log(opts, &format!("{}: timing the trip through the loop driver and FUSE", d.name));
            rec.transport = wblab_emulate::calibrate(dev, &ld.dev_path()).map_err(|e| failed(format!("device `{}`: {e}", d.name)))?;
            // The setup's writes (prefilled files) are not the experiment: answered at once
            // until the workload starts.
            dev.set_passthrough(true);
            if !dio {
                return Err(failed(format!(
                    "device `{}`: the loop device over the emulated device does not do direct I/O, so the model would not see the kernel's requests",
                    d.name
                )));
            }
        }
        let j = &mut self.j;
        mount::mount(j, &ld.dev_path(), &p.dir, &l.fs, &l.mount_options).map_err(failed)?;
        log(
            opts,
            &format!("{}: /dev/{} ({}) on {}", d.name, ld.name(), ld.devnum(), p.dir.display()),
        );
        p.knobs = knobs::apply_queue(j, &ld.name(), &l.queue, false);
        p.knobs.extend(knobs::apply_bdi(j, &ld.devnum(), &l.bdi, false));
        p.block_device = Some(ld.name());
        p.devnum = Some(ld.devnum());
        p.loop_index = Some(ld.index);
        p.backing_file = Some(l.backing.clone());
        p.backing_size = Some(l.size);
        p.direct_io = Some(dio);
        p.fs = Some(l.fs.clone());
        p.created = true;
        Ok(())
    }

    /// Serve device `d`'s model on its backing file (made and mkfs'd already) through FUSE
    /// at `e.mount`, journalled before mounting.
    fn start_emulated(&mut self, d: &DeviceConfig, l: &LoopPlan, e: &EmulatePlan) -> Result<wblab_emulate::EmulatedDevice, MeasureError> {
        std::fs::create_dir_all(&e.mount).map_err(failed)?;
        self.j.record(journal::Entry::Mount { path: e.mount.clone() }).map_err(failed)?;
        log(
            self.opts,
            &format!("{}: serving the `{}` model at {}", d.name, d.model.kind(), e.mount.display()),
        );
        wblab_emulate::EmulatedDevice::start(&wblab_emulate::Options {
            model: d.model.clone(),
            size: l.size,
            name: d.name.clone(),
            seed: self.sc.seed,
            chance: self.sc.machine.chance,
            image: l.backing.clone(),
            mountpoint: e.mount.clone(),
            log: Some(self.out.create(&emulated_requests_file(&d.name)).map_err(failed)?),
        })
        .map_err(|err| failed(format!("device `{}`: cannot start its emulation: {err}", d.name)))
    }

    /// The scenario's sysctls, then the throttle rules of the devices created (root only).
    fn apply_sysctl_and_throttle(&mut self) -> Result<(), MeasureError> {
        if !self.root {
            return Ok(());
        }
        self.sysctl = knobs::apply_sysctl(&mut self.j, &self.plan.sysctl);
        for k in &self.sysctl {
            if let Some(n) = &k.note {
                self.warnings.push(format!("{}: {n}", k.path));
            }
        }
        for (p, dp) in self.places.iter_mut().zip(&self.plan.devices) {
            if let (Some(l), Some(dn)) = (&dp.loop_device, p.devnum.clone()) {
                p.throttle = cgroup::apply(&mut self.j, &dn, &l.throttle).map_err(failed)?;
            }
        }
        Ok(())
    }

    /// A private trace instance with the writeback events, and the block events of the
    /// devices created (of every device when the scenario asks for block tracing, as
    /// `wblab run --trace-block` would). None without root or tracefs.
    fn start_tracing(&mut self) -> Option<Tracer> {
        let plan = self.plan.trace.as_ref()?;
        let events = plan.events.clone();
        // Filters: only the devices created here (the host's are not ours to record).
        let filter = |which: &dyn Fn(&DeviceConfig) -> bool| -> String {
            self.places
                .iter()
                .zip(&self.sc.devices)
                .filter(|(p, d)| p.created && which(d))
                .filter_map(|(p, _)| p.devnum.as_deref().and_then(kernel_dev_t))
                .map(|d| format!("dev == {d}"))
                .collect::<Vec<_>>()
                .join(" || ")
        };
        let (ours, ext4, kyber) = (
            filter(&|_| true),
            filter(&|d| d.fs.as_ref().is_some_and(|m| m.fs == wblab_sim::config::FsKind::Ext4)),
            filter(&|d| d.queue.scheduler == wblab_sim::config::SchedulerKind::KYBER),
        );
        let mut filters: Vec<(&str, String)> = Vec::new();
        for &ev in &events {
            let f = if BLOCK_EVENTS.contains(&ev) && !self.sc.trace.block {
                &ours
            } else if JBD2_EVENTS.contains(&ev) {
                &ext4
            } else if KYBER_EVENTS.contains(&ev) || KYBER_FREQUENT_EVENTS.contains(&ev) {
                &kyber
            } else {
                continue;
            };
            filters.push((ev, f.clone()));
        }
        let trace_tmp = self.scratch.join("trace.raw");
        let (j, buffer_kb) = (&mut self.j, self.opts.trace_buffer_kb);
        match crate::tracefs::find_or_mount(j, &self.scratch)
            .and_then(|rootdir| Tracer::start(j, &rootdir, &events, &filters, buffer_kb, &trace_tmp).map(|t| (rootdir, t)))
        {
            Ok((rootdir, t)) => {
                self.tracer = TracerInfo {
                    tracefs: Some(rootdir),
                    instance: Some(t.instance.clone()),
                    events: t.enabled.clone(),
                    missing: t.missing.clone(),
                };
                if !t.missing.is_empty() {
                    self.warnings.push(format!("tracepoints not available: {}", t.missing.join(", ")));
                }
                Some(t)
            }
            Err(e) => {
                self.warnings.push(format!("no tracing: {e}"));
                None
            }
        }
    }

    /// Run the jobs for the scenario's duration (or until a signal, or the scratch file
    /// system fills), stop them, and collect what was measured.
    fn run_workload(&mut self, specs: Vec<workload::TaskSpec>, tracer: Option<Tracer>) -> Result<Collected, MeasureError> {
        let sc = self.sc;
        // Settle: nothing of the setup is left dirty.
        // SAFETY: sync(2) takes no arguments.
        unsafe { libc::sync() };
        check_aborted()?;
        let devs: Vec<String> = self.places.iter().map(|p| p.block_device.clone().unwrap_or_default()).collect();
        let disk_before: Vec<DiskStat> = devs.iter().map(|d| vmstat::disk_stat(d)).collect();
        let cpu0 = vmstat::CpuTimes::now();
        let self0 = self_cpu_ns();
        log(self.opts, &format!("running `{}` for {:.1} s", sc.name, sc.duration as f64 / 1e9));
        let t0 = Instant::now();
        if let Some(t) = &tracer {
            let _ = t.mark(START_MARK);
        }
        let sampler = Sampler::start(t0, devs.clone());
        let mut wl = Workload::new(specs, t0, &self.scratch);
        let mut cg_samples = vec![Vec::new(); self.memcg_dirs.len()];
        let interrupted = self.drive(&mut wl, t0, &mut cg_samples)?;
        let elapsed_ns = (t0.elapsed().as_nanos() as Ns).min(if interrupted.is_some() { Ns::MAX } else { sc.duration.max(1) });
        let elapsed_ns = elapsed_ns.max(1);
        // Stop the jobs. A job blocked behind a throttle rule gets the rule lifted after 2 s.
        if !wl.stop_all(Duration::from_secs(2)) {
            log(self.opts, "jobs still blocked: lifting throttle rules");
            for p in self.j.undo_where(|e| matches!(e, journal::Entry::Throttle { .. })) {
                self.warnings.push(p);
            }
            if !wl.stop_all(Duration::from_secs(20)) {
                self.warnings.push("jobs did not stop within 22 s: killed".to_string());
                wl.kill_all();
            }
        }
        let (vm, pressure) = sampler.finish();
        let disk_after: Vec<DiskStat> = devs.iter().map(|d| vmstat::disk_stat(d)).collect();
        let cpu = vmstat::CpuTimes::now().since(&cpu0);
        let self1 = self_cpu_ns();
        let trace_stats = tracer.and_then(|t| t.stop().map_err(|e| self.warnings.push(format!("trace: {e}"))).ok());
        let ours_s = (self1 - self0) as f64 / 1e9;
        Ok(Collected {
            tiotest: wl.tiotest_phases(),
            outcomes: wl.outcomes(),
            vmstat: vm,
            elapsed_ns,
            disk_before,
            disk_after,
            trace_tmp: trace_stats.as_ref().map(|_| self.scratch.join("trace.raw")),
            trace_stats,
            other_cpu_fraction: ((cpu.busy_s - ours_s - cpu.kernel_s) / cpu.total_s).clamp(0.0, 1.0),
            kernel_cpu_fraction: (cpu.kernel_s / cpu.total_s).clamp(0.0, 1.0),
            interrupted,
            pressure,
            cgroups: sc
                .cgroups
                .groups
                .iter()
                .zip(cg_samples)
                .enumerate()
                .map(|(i, (g, samples))| wblab_sim::metrics::CgroupResult {
                    path: g.path.clone(),
                    cgroup_ino: wblab_sim::metrics::FIRST_CGROUP_INO + i as u64,
                    memory_max: g.memory_max,
                    memory_high: g.memory_high,
                    events: Default::default(),
                    samples,
                })
                .collect(),
        })
    }

    /// Tick the jobs until the run's end: Some(signal) if one interrupted it.
    fn drive(
        &mut self,
        wl: &mut Workload,
        t0: Instant,
        cg_samples: &mut [Vec<wblab_sim::metrics::MemcgSample>],
    ) -> Result<Option<i32>, MeasureError> {
        let step = Duration::from_millis(5);
        let mut next_space_check = 0;
        let mut next_cg_sample = 1_000_000_000;
        loop {
            if let Some(s) = guard::aborted() {
                return Ok(Some(s));
            }
            let now = t0.elapsed().as_nanos() as Ns;
            if now >= self.sc.duration {
                return Ok(None);
            }
            // Files outside loop devices fill the scratch file system: stop before it is full.
            if now >= next_space_check {
                next_space_check = now + 250_000_000;
                if let Some((free, total)) = fs_space(&self.scratch) {
                    if free < (total / 10).max(2 << 30) {
                        self.warnings.push(format!(
                            "stopped at {:.1} s: only {} left on the scratch file system",
                            now as f64 / 1e9,
                            human(free)
                        ));
                        return Ok(None);
                    }
                }
            }
            if now >= next_cg_sample {
                // Each second, as the simulator samples its groups.
                let t = next_cg_sample;
                next_cg_sample += 1_000_000_000;
                for (k, (dir, out)) in self.memcg_dirs.iter().zip(cg_samples.iter_mut()).enumerate() {
                    if let Some(s) = crate::memcg::sample(dir, self.blkio_dirs.get(k).map(PathBuf::as_path), t) {
                        out.push(s);
                    }
                }
            }
            let running = wl.tick().map_err(failed)?;
            if !running && self.sc.until_done {
                return Ok(None);
            }
            std::thread::sleep(step);
        }
    }
}

/// The trace events a measurement records: the writeback events; the whole block trace when
/// the scenario asks for it, else each request's issue and completion on the devices created
/// here (filtered to ours); jbd2's for the created devices with ext4, kyber's for those that
/// run it.
pub fn trace_events(sc: &Scenario, devices: &[DevicePlan]) -> Vec<&'static str> {
    let created = |want: &dyn Fn(&DeviceConfig) -> bool| sc.devices.iter().zip(devices).any(|(d, p)| p.loop_device.is_some() && want(d));
    let mut events: Vec<&'static str> = WRITEBACK_EVENTS.to_vec();
    if sc.trace.block {
        events.extend(BLOCK_EVENTS);
    } else if created(&|_| true) {
        events.extend(BLOCK_REQUEST_EVENTS);
    }
    if created(&|d| d.fs.as_ref().is_some_and(|m| m.fs == wblab_sim::config::FsKind::Ext4)) {
        events.extend(JBD2_EVENTS);
    }
    if created(&|d| d.queue.scheduler == wblab_sim::config::SchedulerKind::KYBER) {
        events.extend(KYBER_EVENTS);
        if sc.trace.block {
            events.extend(KYBER_FREQUENT_EVENTS);
        }
    }
    events
}

/// The kernel's internal dev_t of "MAJ:MIN" (`MKDEV`: major << 20 | minor), as block event
/// filters compare it.
fn kernel_dev_t(devnum: &str) -> Option<u64> {
    let (a, b) = devnum.split_once(':')?;
    Some((a.parse::<u64>().ok()? << 20) | b.parse::<u64>().ok()?)
}

/// Free and total bytes of the file system holding `p`.
fn fs_space(p: &Path) -> Option<(u64, u64)> {
    let c = sys::cstring(p).ok()?;
    // SAFETY: statvfs is POD; the path is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64 * st.f_frsize as u64, st.f_blocks as u64 * st.f_frsize as u64))
}

fn human(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KiB", b as f64 / 1024.0)
    }
}

/// Per-task pauses and per-device throttle samples out of the kernel's trace, and the lines
/// copied verbatim into trace.txt.
struct TraceDigest {
    pauses: HashMap<u32, LatencyHist>,
    /// Per task: the largest `paused` or `pause` of its balance_dirty_pages events, ns.
    paused_max: HashMap<u32, u64>,
    throttle: Vec<ThrottleSample>,
    request_latency: Vec<LatencyHist>,
    /// Per device: its jbd2 commits from `jbd2_run_stats` (None: none seen).
    journals: Vec<Option<JournalResult>>,
    /// At each `balance_dirty_pages`, the global dirty level less the scenario's devices'
    /// (each device's latest `wb_dirty`): other devices' pages.
    other_dirty: Vec<u64>,
    lines: u64,
}

/// The middle value (upper of the two middles); `None` for none.
fn median(v: &[u64]) -> Option<u64> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

fn digest_trace(raw: &Path, out: std::fs::File, places: &[DevicePlacement], cpus: usize, page_kb: u64) -> io::Result<TraceDigest> {
    let f = std::fs::File::open(raw)?;
    let mut lines: Vec<String> = Vec::new();
    for l in BufReader::new(f).lines() {
        lines.push(l?);
    }
    let mut d = TraceDigest {
        pauses: HashMap::new(),
        paused_max: HashMap::new(),
        throttle: Vec::new(),
        request_latency: vec![LatencyHist::new(); places.len()],
        journals: vec![None; places.len()],
        other_dirty: Vec::new(),
        lines: 0,
    };
    let bdi_index: HashMap<String, usize> = places
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.devnum.clone().map(|n| (n, i)))
        .collect();
    let blk_index: HashMap<String, usize> = bdi_index.iter().map(|(k, &v)| (k.replace(':', ","), v)).collect();
    let mut t0: Option<u64> = None;
    // Latest balance_dirty_pages figures per bdi, latest global state.
    let mut last_bdp: HashMap<usize, (u64, u64, u64, u64)> = HashMap::new();
    let mut global = (0u64, 0u64);
    let mut issued: HashMap<(usize, u64), u64> = HashMap::new();
    let mut pending: HashMap<usize, ThrottleSample> = HashMap::new();
    let page = |kb: u64| kb / page_kb.max(1);
    for l in &lines {
        let Some(e) = trace_parse::parse_line(l) else { continue };
        d.lines += 1;
        if t0.is_none() && e.event == "tracing_mark_write" && l.contains(START_MARK) {
            t0 = Some(e.ts_ns);
        }
        if e.event == "global_dirty_state" {
            global = (e.get_u64("thresh").unwrap_or(0), e.get_u64("bg_thresh").unwrap_or(0));
            continue;
        }
        let Some(base) = t0 else { continue };
        let t = e.ts_ns.saturating_sub(base);
        let dev_of = |e: &trace_parse::ParsedEvent| e.get("bdi").and_then(|b| bdi_index.get(b).copied());
        match e.event.as_str() {
            "balance_dirty_pages" => {
                let pause = e.get_i64("pause").unwrap_or(0).max(0) as u64;
                if pause > 0 {
                    d.pauses.entry(e.pid).or_default().record(pause * 1_000_000);
                }
                let shown = pause.max(e.get_u64("paused").unwrap_or(0)) * 1_000_000;
                let m = d.paused_max.entry(e.pid).or_default();
                *m = (*m).max(shown);
                if let Some(i) = dev_of(&e) {
                    let g = |k: &str| e.get_u64(k).unwrap_or(0);
                    let v = (g("dirty"), g("wb_dirty"), g("setpoint"), g("limit"));
                    last_bdp.insert(i, v);
                    let ours: u64 = last_bdp.values().map(|b| b.1).sum();
                    d.other_dirty.push(v.0.saturating_sub(ours));
                    // bdi_dirty_ratelimit fires inside balance_dirty_pages just before this
                    // event: complete its sample with this event's dirty levels.
                    if let Some(mut s) = pending.remove(&i) {
                        (s.dirty, s.wb_dirty, s.setpoint, s.limit) = v;
                        d.throttle.push(s);
                    }
                }
            }
            "bdi_dirty_ratelimit" => {
                if let Some(i) = dev_of(&e) {
                    let g = |k: &str| e.get_u64(k).unwrap_or(0);
                    let (dirty, wb_dirty, setpoint, limit) = last_bdp.get(&i).copied().unwrap_or_default();
                    let drl = g("dirty_ratelimit");
                    if let Some(s) = pending.remove(&i) {
                        d.throttle.push(s);
                    }
                    pending.insert(
                        i,
                        ThrottleSample {
                            t_ns: t,
                            device: i as u16,
                            dirty,
                            wb_dirty,
                            thresh: global.0,
                            bg_thresh: global.1,
                            limit,
                            setpoint,
                            freerun: (global.0 + global.1) / 2,
                            wb_thresh: 0,
                            write_bw: page(g("write_bw")),
                            avg_write_bw: page(g("avg_write_bw")),
                            dirty_ratelimit: page(drl),
                            balanced_dirty_ratelimit: page(g("balanced_dirty_ratelimit")),
                            dirty_rate: page(g("dirty_rate")),
                            pos_ratio: g("task_ratelimit") * 1024 / drl.max(1),
                        },
                    );
                }
            }
            "jbd2_run_stats" => {
                let Some(i) = e.get("dev").and_then(|x| blk_index.get(x).copied()) else {
                    continue;
                };
                let g = |k: &str| e.get_u64(k).unwrap_or(0);
                // The commit proper: T_LOCKED to the commit record (ms, jiffy-quantised).
                let ns = (g("locked") + g("flushing") + g("logging")) * 1_000_000;
                let j = d.journals[i].get_or_insert_with(|| JournalResult {
                    fs: "ext4",
                    ..Default::default()
                });
                j.commits += 1;
                j.blocks_logged += g("blocks_logged");
                j.locked_mean_ns += g("locked") * 1_000_000;
                j.flushing_mean_ns += g("flushing") * 1_000_000;
                j.logging_mean_ns += g("logging") * 1_000_000;
                j.commit_mean_ns += ns;
                j.commit_max_ns = j.commit_max_ns.max(ns);
            }
            "block_rq_issue" | "block_rq_complete" => {
                let Some(i) = e.get("dev").and_then(|x| blk_index.get(x).copied()) else {
                    continue;
                };
                let Some(sector) = e.get_u64("sector") else { continue };
                if e.event == "block_rq_issue" {
                    issued.insert((i, sector), e.ts_ns);
                } else if let Some(ts) = issued.remove(&(i, sector)) {
                    d.request_latency[i].record(e.ts_ns.saturating_sub(ts));
                }
            }
            _ => {}
        }
    }
    for j in d.journals.iter_mut().flatten() {
        let n = j.commits.max(1);
        j.commit_mean_ns /= n;
        j.locked_mean_ns /= n;
        j.flushing_mean_ns /= n;
        j.logging_mean_ns /= n;
    }
    d.throttle.extend(pending.into_values());
    d.throttle.sort_by_key(|s| (s.t_ns, s.device));
    let mut w = io::BufWriter::new(out);
    let mut header = String::new();
    wblab_report::write_trace_header(&mut header, lines.len(), cpus as u32);
    w.write_all(header.as_bytes())?;
    for l in &lines {
        w.write_all(l.as_bytes())?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    Ok(d)
}

fn write_results(
    sc: &Scenario,
    out: &OutDir,
    c: &Collected,
    places: &[DevicePlacement],
    facts: &MachineFacts,
    wall: f64,
) -> io::Result<(RunResult, u64, Option<u64>)> {
    // Real fio's JSON and logs, from its scratch directory (ours: nothing else writes there).
    for o in c.outcomes.iter().filter(|o| matches!(o.spec.job, JobConfig::Fio(_))) {
        for e in std::fs::read_dir(crate::fio::out_dir(&o.spec.file))?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_file()) && wblab_scenario::names::name_problem(&name, "file").is_none() {
                io::copy(&mut std::fs::File::open(e.path())?, &mut out.create(&name)?)?;
            }
        }
    }
    let page_kb = (facts.page_size / 1024).max(1);
    let digest = match &c.trace_tmp {
        Some(raw) => Some(digest_trace(
            raw,
            out.create(wblab_report::TRACE_FILE)?,
            places,
            facts.cpus_online,
            page_kb,
        )?),
        None => {
            let mut h = String::new();
            wblab_report::write_trace_header(&mut h, 0, facts.cpus_online as u32);
            out.write(wblab_report::TRACE_FILE, h.as_bytes())?;
            None
        }
    };
    let tasks: Vec<TaskResult> = c
        .outcomes
        .iter()
        .map(|o| {
            let total = o.bytes_written + o.bytes_read;
            let (steady_bytes, steady_ns) = match o.mid_bytes {
                Some((t, b)) if t < o.ended => (total.saturating_sub(b), o.ended - t),
                _ => (total, o.ended.saturating_sub(o.started)),
            };
            TaskResult {
                name: o.spec.name.clone(),
                instance: o.spec.instance,
                job: o.spec.job.kind(),
                pid: o.pid,
                device: o.spec.device.clone(),
                bytes_written: o.bytes_written,
                bytes_read: o.bytes_read,
                started: o.started,
                ended: o.ended,
                steady_bytes,
                steady_ns,
                pauses: digest.as_ref().and_then(|d| d.pauses.get(&o.pid).cloned()).unwrap_or_default(),
                paused_max: digest.as_ref().and_then(|d| d.paused_max.get(&o.pid).copied()).unwrap_or(0),
                op_latency: o.op_latency.clone(),
                ops: o.ops.clone(),
                cpu_sys_ns: o.cpu_sys_ns,
                cpu_user_ns: o.cpu_user_ns,
                runqueue_wait_ns: 0,
                reclaim_waits: 0,
                reclaim_wait_ns: 0,
                sched: Default::default(),
                syncs: Default::default(),
            }
        })
        .collect();
    let devices: Vec<DeviceResult> = sc
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let (a, b) = (c.disk_before[i], c.disk_after[i]);
            let busy_ms = b.io_ticks_ms.saturating_sub(a.io_ticks_ms);
            DeviceResult {
                name: d.name.clone(),
                model: d.model.kind(),
                bytes_written: b.write_sectors.saturating_sub(a.write_sectors) * 512,
                bytes_read: b.read_sectors.saturating_sub(a.read_sectors) * 512,
                util: (busy_ms as f64 * 1e6 / c.elapsed_ns as f64).min(1.0),
                request_latency: digest.as_ref().map(|dg| dg.request_latency[i].clone()).unwrap_or_default(),
                requests_written: b.writes.saturating_sub(a.writes),
                requests_read: b.reads.saturating_sub(a.reads),
                flushes: b.flushes.saturating_sub(a.flushes),
                // diskstats does not count FUA writes (the block trace's rwbs does).
                fua_writes: 0,
                journal: digest.as_ref().and_then(|dg| dg.journals[i].clone()),
                // v1 blkio has no io.latency.
                iolatency: Vec::new(),
            }
        })
        .collect();
    let lines = digest.as_ref().map_or(0, |d| d.lines);
    let other_dirty_pages = digest.as_ref().and_then(|d| median(&d.other_dirty));
    let r = RunResult {
        scenario: sc.clone(),
        sim_ns: c.elapsed_ns,
        events: lines,
        tasks,
        devices,
        trace: Default::default(),
        trace_streamed: 0,
        trace_dropped: 0,
        comms: Vec::new(),
        vmstat: with_task_ops(&c.vmstat, &c.outcomes),
        throttle: digest.map(|d| d.throttle).unwrap_or_default(),
        tiotest: c.tiotest.clone(),
        cgroups: c.cgroups.clone(),
        fio: Vec::new(),
        pressure: c.pressure.clone(),
    };
    // The files `wblab run` writes, by the same writer (the real fio's own outputs above).
    for (name, text) in wblab_report::ResultTexts::new(&r, wall).files() {
        out.write(name, text.as_bytes())?;
    }
    Ok((r, lines, other_dirty_pages))
}

/// The samples with each latency-sensitive task's operations of the second before them (the
/// sampler and the jobs count seconds from the same t0; bulk writers left out, as the model
/// does).
fn with_task_ops(
    samples: &[wblab_sim::metrics::VmstatSample],
    outcomes: &[crate::workload::TaskOutcome],
) -> Vec<wblab_sim::metrics::VmstatSample> {
    let mut v = samples.to_vec();
    for (k, s) in v.iter_mut().enumerate() {
        s.task_ops = outcomes
            .iter()
            .enumerate()
            // The jobs whose operations the model logs one by one (not bulk writers' write()s).
            .filter(|(_, o)| o.spec.job.latency_sensitive())
            .filter_map(|(i, o)| o.op_seconds.get(k).filter(|x| x.ops > 0).map(|x| (i as u32, *x)))
            .collect();
    }
    v
}

/// serde's skip test for figures that are absent when 0.
fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines captured from Linux 6.18 on a throttled loop device (7:64).
    const REAL: &str = "\
    kworker/u8:2-35      [001] .....  2611.838231: global_dirty_state: dirty=0 writeback=11076 bg_thresh=32768 thresh=65536 limit=65536 dirtied=3669400 written=2801081
             try-30585   [001] ...1.  2611.866911: tracing_mark_write: wblab start
              dd-780     [001] .N.1.  2612.514263: bdi_dirty_ratelimit: bdi 7:64: write_bw=87500 awrite_bw=102400 dirty_rate=304300 dirty_ratelimit=102400 task_ratelimit=51004 balanced_dirty_ratelimit=17160 cgroup_ino=1
              dd-780     [001] .N...  2612.514264: balance_dirty_pages: bdi 7:64: limit=65536 setpoint=57344 dirty=49162 wb_setpoint=1790 wb_dirty=49152 dirty_ratelimit=102400 task_ratelimit=51000 dirtied=256 dirtied_pause=128 paused=0 pause=16 period=20 think=4 cgroup_ino=1
              dd-780     [001] .....  2612.537147: balance_dirty_pages: bdi 7:64: limit=65536 setpoint=57344 dirty=49418 wb_setpoint=1762 wb_dirty=49408 dirty_ratelimit=102400 task_ratelimit=48700 dirtied=256 dirtied_pause=200 paused=0 pause=-12 period=20 think=8 cgroup_ino=1
              dd-781     [000] .....  2612.600000: balance_dirty_pages: bdi 254:0: limit=65536 setpoint=57344 dirty=50951 wb_setpoint=57343 wb_dirty=50951 dirty_ratelimit=99380 task_ratelimit=147224 dirtied=256 dirtied_pause=128 paused=0 pause=40 period=4 think=48 cgroup_ino=1
";

    #[test]
    fn the_kernels_trace_gives_pauses_and_throttle_samples() {
        let dir = std::env::temp_dir().join(format!("wblab-digest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("raw"), REAL).unwrap();
        let p = DevicePlacement {
            name: "key".into(),
            model: "loop".into(),
            block_device: Some("loop64".into()),
            devnum: Some("7:64".into()),
            dir: dir.clone(),
            loop_index: Some(64),
            backing_file: None,
            backing_size: None,
            direct_io: None,
            fs: None,
            throttle: Vec::new(),
            knobs: Vec::new(),
            emulated: None,
            created: true,
        };
        let d = digest_trace(&dir.join("raw"), std::fs::File::create(dir.join("trace.txt")).unwrap(), &[p], 2, 4).unwrap();
        assert_eq!(d.lines, 6);
        // Only pauses > 0, in ns, per pid; other bdis' events count for their own tasks.
        assert_eq!(d.pauses[&780].count(), 1);
        assert_eq!(d.pauses[&780].summary().max, 16_000_000);
        // The negative pause of 780's second event shows as neither.
        assert_eq!(d.paused_max[&780], 16_000_000);
        assert_eq!(d.pauses[&781].count(), 1);
        // The global level less the scenario's device: ten pages elsewhere, at each of its
        // events (the other bdi's event is not one of ours).
        assert_eq!(d.other_dirty, vec![10, 10]);
        // One sample, completed with the dirty levels of the bdp event that followed it.
        assert_eq!(d.throttle.len(), 1);
        let s = &d.throttle[0];
        assert_eq!((s.dirty, s.wb_dirty, s.setpoint, s.limit), (49162, 49152, 57344, 65536));
        assert_eq!((s.thresh, s.bg_thresh, s.freerun), (65536, 32768, 49152));
        // KB/s -> pages/s.
        assert_eq!((s.write_bw, s.avg_write_bw, s.dirty_ratelimit), (21875, 25600, 25600));
        assert_eq!(s.t_ns, 2_612_514_263_000 - 2_611_866_911_000);
        let text = std::fs::read_to_string(dir.join("trace.txt")).unwrap();
        assert!(text.starts_with("# tracer: nop"));
        assert!(text.contains("dd-780     [001] .N...  2612.514264: balance_dirty_pages: bdi 7:64:"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_map_under_the_device_dir_and_never_escape() {
        let d = Path::new("/s/mnt/key");
        assert_eq!(map_file("/mnt/key/big0", "key", d).unwrap(), PathBuf::from("/s/mnt/key/big0"));
        assert_eq!(map_file("/data/x", "key", d).unwrap(), PathBuf::from("/s/mnt/key/data/x"));
        assert!(map_file("/mnt/key/../../etc/passwd", "key", d).is_err());
        assert!(map_file("/mnt/key/", "key", d).is_err());
    }
}
