//! What a measurement will do, decided before it does anything: every directory and file it
//! makes, every program it starts and its arguments, every loop device, mount, sysctl, sysfs
//! and cgroup file it writes. `wblab measure --plan` prints it without acting; a measurement
//! checks it ([`Plan::escapes`]) and then carries it out, so what the plan says is what is
//! done. Values the kernel gives only once the work starts (a loop device's index, hence its
//! device number) are shown as `<N>`.

use crate::knobs::{self, SysctlWrite};
use crate::measure::{map_file, MeasureError, MeasureOptions};
use crate::workload::{self, TaskSpec};
use crate::{cgroup, mount, sys};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use wblab_sim::config::{BlkThrottleConfig, CgroupTree, DeviceModelConfig, JobConfig, Scenario};

/// Prefix of a measurement's scratch directory (`wblab-measure-<pid>-<ms>`).
pub const SCRATCH_PREFIX: &str = "wblab-measure-";
/// The programs a measurement may start.
pub const PROGRAMS: &[&str] = &["dd", "fio", "mkfs.ext2", "mkfs.ext3", "mkfs.ext4", "mkfs.xfs", "mkfs.btrfs"];

/// What the plan needs to know of this machine (read, never changed).
#[derive(Clone, Debug)]
pub struct Host {
    pub root: bool,
    pub pid: u32,
    /// Milliseconds since the epoch, for the scratch directory's name.
    pub stamp_ms: u128,
    /// Where tracefs is mounted (None: the measurement mounts it in its scratch directory).
    pub tracefs: Option<PathBuf>,
    pub blkio_root: Option<PathBuf>,
    pub memory_root: Option<PathBuf>,
    /// This process's group in the v1 memory and blkio hierarchies ("/" for the root).
    pub memory_group: String,
    pub blkio_group: String,
    /// The disk holding the scratch parent and its `MAJ:MIN` (for `--host-knobs`).
    pub scratch_disk: Option<(String, String)>,
}

impl Host {
    /// A root host with every hierarchy and tracefs mounted, for tests and the fuzzer: plans
    /// are checked without reading or touching this machine.
    pub fn example() -> Host {
        Host {
            root: true,
            pid: 4242,
            stamp_ms: 1_700_000_000_000,
            tracefs: Some(PathBuf::from("/sys/kernel/tracing")),
            blkio_root: Some(PathBuf::from("/sys/fs/cgroup/blkio")),
            memory_root: Some(PathBuf::from("/sys/fs/cgroup/memory")),
            memory_group: "/".into(),
            blkio_group: "/user.slice".into(),
            scratch_disk: Some(("vda".into(), "254:0".into())),
        }
    }

    /// This machine, now.
    pub fn detect(opts: &MeasureOptions) -> Host {
        let disk = crate::facts::block_device_of(&opts.scratch_parent);
        Host {
            root: sys::geteuid() == 0 && !opts.unprivileged,
            pid: sys::getpid(),
            stamp_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis()),
            tracefs: crate::tracefs::find(),
            blkio_root: cgroup::blkio_root(),
            memory_root: crate::memcg::memory_root(),
            memory_group: crate::memcg::own_group("memory"),
            blkio_group: crate::memcg::own_group("blkio"),
            scratch_disk: disk.clone().and_then(|d| crate::facts::devnum(&d).map(|n| (d, n))),
        }
    }
}

/// A device's loop device, file system and knobs.
#[derive(Clone, Debug)]
pub struct LoopPlan {
    pub backing: PathBuf,
    pub size: u64,
    pub fs: String,
    /// The mkfs program and its arguments (the backing file last).
    pub mkfs: (&'static str, Vec<String>),
    pub mount_options: String,
    /// Files under `/sys/block/loop<N>/queue` and their values, the scheduler first.
    pub queue: Vec<(String, String)>,
    /// Files under `/sys/class/bdi/<MAJ:MIN>` and their values.
    pub bdi: Vec<(String, String)>,
    /// blk-throttle rule files of the root blkio group and their limits.
    pub throttle: Vec<(&'static str, u64)>,
    /// Where those files are (None: no blkio hierarchy; the measurement will say so).
    pub blkio_root: Option<PathBuf>,
    /// The device's model served as an emulated device (`emulate = true`): the loop device
    /// is bound to the FUSE file that serves the backing file through the model, not to the
    /// backing file itself.
    pub emulate: Option<EmulatePlan>,
}

/// An emulated device ([`wblab_emulate`]): where its FUSE file system is mounted.
#[derive(Clone, Debug)]
pub struct EmulatePlan {
    pub mount: PathBuf,
}

impl LoopPlan {
    /// The file the loop device is bound to.
    pub fn bound_to(&self) -> PathBuf {
        match &self.emulate {
            Some(e) => e.mount.join(wblab_emulate::DISK),
            None => self.backing.clone(),
        }
    }
}

/// `wblab measure --emulate`: every device that can be emulated is; how many are.
pub fn emulate_every_device(sc: &mut Scenario) -> usize {
    let mut n = 0;
    for d in sc.devices.iter_mut().filter(|d| wblab_sim::config::can_be_emulated(&d.model)) {
        d.emulate = true;
        n += 1;
    }
    n
}

/// The largest request an emulated device gets whole: the loop driver passes a request's
/// pages to FUSE as at most 128 segments, one page each when they are not contiguous.
pub const EMULATED_MAX_SECTORS_KB: u32 = 512;

/// Knobs of the disk holding the scratch directory (`--host-knobs` only).
#[derive(Clone, Debug)]
pub struct HostKnobs {
    pub disk: String,
    pub devnum: String,
    pub queue: Vec<(String, String)>,
    pub bdi: Vec<(String, String)>,
}

#[derive(Clone, Debug)]
pub struct DevicePlan {
    pub name: String,
    pub model: String,
    /// Where the device's files go (its mount point for a loop device).
    pub dir: PathBuf,
    pub loop_device: Option<LoopPlan>,
    pub host_knobs: Option<HostKnobs>,
}

/// The measurement's cgroups: directories made in order, then files written.
#[derive(Clone, Debug, Default)]
pub struct CgroupPlan {
    pub dirs: Vec<PathBuf>,
    /// (file, value); `<N>` stands for a loop device's minor number.
    pub files: Vec<(PathBuf, String)>,
}

#[derive(Clone, Debug)]
pub struct TracePlan {
    /// tracefs mounted here when it is mounted nowhere.
    pub mount: Option<PathBuf>,
    pub instance: PathBuf,
    pub events: Vec<&'static str>,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub scenario: String,
    pub root: bool,
    pub state_dir: PathBuf,
    pub scratch: PathBuf,
    pub out: PathBuf,
    /// The first touch of free memory is timed before the run (not with `--no-memory-touch`).
    pub memory_touch: bool,
    pub devices: Vec<DevicePlan>,
    pub sysctl: Vec<SysctlWrite>,
    /// Every task instance with its real file (fio's jobs as one `fio` task).
    pub tasks: Vec<TaskSpec>,
    /// Files written before the run (the files readers read) and their sizes.
    pub prefill: Vec<(PathBuf, u64)>,
    /// The job file real fio runs: its path and text.
    pub fio: Option<(PathBuf, String)>,
    pub cgroups: CgroupPlan,
    pub trace: Option<TracePlan>,
    /// What cannot apply here, said before the run.
    pub warnings: Vec<String>,
}

impl Plan {
    /// The plan of `sc` on `host`.
    pub fn build(sc: &Scenario, opts: &MeasureOptions, host: &Host) -> Result<Plan, MeasureError> {
        let scratch = opts.scratch_parent.join(format!("{SCRATCH_PREFIX}{}-{}", host.pid, host.stamp_ms));
        let mut warnings = Vec::new();
        let mut devices = Vec::with_capacity(sc.devices.len());
        for d in &sc.devices {
            let dir = scratch.join("mnt").join(&d.name);
            let want_loop = matches!(d.model, DeviceModelConfig::Loop(_)) || d.emulate;
            let mut p = DevicePlan {
                name: d.name.clone(),
                model: d.model.kind().to_string(),
                dir,
                loop_device: None,
                host_knobs: None,
            };
            if d.writeout_share_pct > 0 {
                warnings.push(format!(
                    "device `{}`: writeout_share = {} sets only the model's starting share of writeback completions; \
                     the real kernel's comes from what this machine wrote before the run",
                    d.name, d.writeout_share_pct
                ));
            }
            if want_loop && host.root {
                let fs = d.fs.as_ref().map_or("ext4", |m| m.fs.name()).to_string();
                let backing = scratch.join(format!("{}.img", d.name));
                // An emulated ext4 leaves its inode tables uninitialised (see mkfs_command).
                let lazy = d.emulate && fs == "ext4";
                let mkfs = mount::mkfs_command(
                    &fs,
                    &backing,
                    d.fs.as_ref().and_then(|m| m.journal_size),
                    d.fs.as_ref().is_some_and(|m| m.fast_commit),
                    lazy,
                )
                .map_err(|e| MeasureError::Refused(format!("device `{}`: {e}", d.name)))?;
                let mut mount_options = d.fs.as_ref().map_or(String::new(), |m| m.options.clone());
                if lazy {
                    mount_options = [mount_options.as_str(), "noinit_itable"]
                        .into_iter()
                        .filter(|o| !o.is_empty())
                        .collect::<Vec<_>>()
                        .join(",");
                }
                let mut queue = knobs::queue_knobs(&d.queue);
                let emulate = d.emulate.then(|| {
                    emulated_queue(d, &mut queue, &mut warnings);
                    EmulatePlan {
                        mount: scratch.join("emulated").join(&d.name),
                    }
                });
                p.loop_device = Some(LoopPlan {
                    backing,
                    size: d.size,
                    mount_options,
                    fs,
                    mkfs,
                    queue,
                    bdi: knobs::bdi_knobs(&d.bdi),
                    throttle: cgroup::rules(&d.throttle),
                    blkio_root: host.blkio_root.clone(),
                    emulate,
                });
            } else {
                host_placement_warnings(d, want_loop, &p.dir, &mut warnings);
                if host.root && opts.host_knobs {
                    if let Some((disk, devnum)) = &host.scratch_disk {
                        p.host_knobs = Some(HostKnobs {
                            disk: disk.clone(),
                            devnum: devnum.clone(),
                            queue: knobs::queue_knobs(&d.queue),
                            bdi: knobs::bdi_knobs(&d.bdi),
                        });
                    }
                }
            }
            devices.push(p);
        }
        if !host.root {
            warnings.push(
                "not root: no sysctls, no loop devices, no throttling, no tracing; files go to the scratch directory \
                 and only throughput and latencies are measured"
                    .to_string(),
            );
        }
        let mut tasks = task_specs(sc, &devices)?;
        let mut fio = None;
        if crate::fio::has_jobs(sc) {
            let dirs: Vec<PathBuf> = devices.iter().map(|p| p.dir.clone()).collect();
            let text = crate::fio::render(sc, &dirs).map_err(MeasureError::Refused)?;
            let file = scratch.join("fio").join("jobs.fio");
            let first = sc.tasks.iter().find(|t| matches!(t.job, JobConfig::Fio(_))).expect("a fio task");
            tasks.push(TaskSpec {
                name: "fio".into(),
                instance: 0,
                job: first.job.clone(),
                file: file.clone(),
                device: devices[first.device].name.clone(),
                start: 0,
                stop: sc.duration,
                seed: sc.seed,
                ioprio: Default::default(),
                cgroup_tasks: Vec::new(),
            });
            fio = Some((file, text));
        }
        let mut prefill: Vec<(PathBuf, u64)> = tasks
            .iter()
            .filter_map(|s| workload::prefill_size(&s.job).map(|n| (s.file.clone(), n)))
            .collect();
        let dirs: Vec<PathBuf> = devices.iter().map(|p| p.dir.clone()).collect();
        prefill.extend(crate::fio::read_files(sc, &dirs));
        let cgroups = if host.root {
            cgroup_plan(&sc.cgroups, host, &devices)
        } else {
            if !sc.cgroups.is_empty() {
                warnings.push("cgroups need root: every task ran in the harness's own cgroup".to_string());
            }
            CgroupPlan::default()
        };
        let trace = host.root.then(|| TracePlan {
            mount: host.tracefs.is_none().then(|| scratch.join("tracefs")),
            instance: host
                .tracefs
                .clone()
                .unwrap_or_else(|| scratch.join("tracefs"))
                .join("instances")
                .join(format!("wblab-{}", host.pid)),
            events: crate::measure::trace_events(sc, &devices),
        });
        Ok(Plan {
            scenario: sc.name.clone(),
            root: host.root,
            state_dir: crate::journal::state_dir(),
            scratch,
            out: opts.out.clone(),
            memory_touch: opts.memory_touch,
            sysctl: if host.root { knobs::sysctl_writes(&sc.sysctl) } else { Vec::new() },
            devices,
            tasks,
            prefill,
            fio,
            cgroups,
            trace,
            warnings,
        })
    }

    /// Everything the plan would touch outside the scratch directory and the kernel files a
    /// measurement is allowed to write, or start beyond [`PROGRAMS`]: empty for a sound plan.
    /// A measurement refuses to act on a plan that is not.
    pub fn escapes(&self) -> Vec<String> {
        let mut bad = Vec::new();
        let scratch_name = self
            .scratch
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !scratch_name.starts_with(SCRATCH_PREFIX) || self.scratch.parent().is_none() {
            bad.push(format!("scratch directory {}", self.scratch.display()));
        }
        let mut paths: Vec<(&str, &Path)> = Vec::new();
        for d in &self.devices {
            paths.push(("device directory", &d.dir));
            if let Some(l) = &d.loop_device {
                paths.push(("backing file", &l.backing));
                if let Some(e) = &l.emulate {
                    paths.push(("emulated device's mount point", &e.mount));
                }
                if l.mkfs.1.last().map(PathBuf::from).as_deref() != Some(l.backing.as_path())
                    || l.mkfs.1.iter().rev().nth(1).map(String::as_str) != Some("--")
                {
                    bad.push(format!("mkfs of device `{}` does not end with `-- <its backing file>`", d.name));
                }
            }
        }
        paths.extend(self.tasks.iter().map(|t| ("task file", t.file.as_path())));
        let tree_roots: Vec<PathBuf> = self
            .tasks
            .iter()
            .filter(|t| crate::trees::size_of(&t.job).is_some())
            .map(crate::trees::root_of)
            .collect();
        paths.extend(tree_roots.iter().map(|r| ("tree", r.as_path())));
        paths.extend(self.prefill.iter().map(|(f, _)| ("file", f.as_path())));
        if let Some(m) = self.trace.as_ref().and_then(|t| t.mount.as_ref()) {
            paths.push(("tracefs mount point", m));
        }
        for (what, p) in paths {
            if !confined(p, &self.scratch) {
                bad.push(format!("{what} {} is outside the scratch directory", p.display()));
            }
        }
        for (argv0, args) in self.processes() {
            if !PROGRAMS.contains(&argv0.as_str()) {
                bad.push(format!("program `{argv0}`"));
            }
            for a in &args {
                if a.chars().any(|c| c.is_control()) {
                    bad.push(format!("{argv0} argument {a:?} holds a control character"));
                }
            }
            if argv0 == "dd" {
                for a in &args {
                    let ok = match a.split_once('=') {
                        Some(("of", p)) => confined(Path::new(p), &self.scratch),
                        Some(("bs" | "count", n)) => n.parse::<u64>().is_ok(),
                        Some(("if", "/dev/zero") | ("iflag", "count_bytes") | ("oflag", "direct") | ("conv", "fsync")) => true,
                        _ => false,
                    };
                    if !ok {
                        bad.push(format!("dd argument `{a}`"));
                    }
                }
            }
        }
        if let Some((file, text)) = &self.fio {
            if !confined(file, &self.scratch) {
                bad.push(format!("fio job file {}", file.display()));
            }
            bad.extend(job_file_escapes(text, &self.scratch));
        }
        for d in &self.cgroups.dirs {
            let ok = d
                .components()
                .any(|c| matches!(c, Component::Normal(n) if n.to_string_lossy() == format!("wblab-{}", self.pid_of_scratch())))
                && d.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
            if !ok {
                bad.push(format!("cgroup directory {}", d.display()));
            }
        }
        for (f, v) in &self.cgroups.files {
            if !self.cgroups.dirs.iter().any(|d| f.parent() == Some(d.as_path())) || v.chars().any(|c| c.is_control()) {
                bad.push(format!("cgroup file {} = {v:?}", f.display()));
            }
        }
        bad
    }

    /// The pid in the scratch directory's name (the measuring process).
    fn pid_of_scratch(&self) -> String {
        let name = self
            .scratch
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        name.strip_prefix(SCRATCH_PREFIX)
            .and_then(|r| r.split('-').next())
            .unwrap_or("")
            .to_string()
    }

    /// Every program the measurement starts, with its arguments.
    pub fn processes(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = self
            .devices
            .iter()
            .filter_map(|d| d.loop_device.as_ref())
            .map(|l| (l.mkfs.0.to_string(), l.mkfs.1.clone()))
            .collect();
        for t in &self.tasks {
            match &t.job {
                JobConfig::Dd { .. } => out.push(("dd".into(), workload::dd_args(&t.job, &t.file))),
                JobConfig::Fio(_) => out.push(("fio".into(), crate::fio::args(&t.file))),
                _ => {}
            }
        }
        out
    }

    /// The plan as `wblab measure --plan` prints it.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let s = &self.scratch;
        let _ = writeln!(o, "wblab measure plan for `{}` (nothing below has been done)", self.scenario);
        let _ = writeln!(o, "as root:  {}", if self.root { "yes" } else { "no (files and timings only)" });
        let _ = writeln!(
            o,
            "state:    {} (the undo journal, written before each change; a lock: one measurement at a time)",
            self.state_dir.display()
        );
        let _ = writeln!(o, "scratch:  {} (made fresh, removed at the end)", s.display());
        let _ = writeln!(
            o,
            "results:  {} (made, or a previous results directory replaced)",
            self.out.display()
        );
        if self.memory_touch {
            let _ = writeln!(
                o,
                "time     the first touch of free memory: {} (up to 2 GiB written through the page cache in timed steps of 32 MiB, never synced; removed); where the kernel reports free pages to a host, it waits until the memory freed before has been reported, before the probe and again before the workload",
                s.join("memory-touch.probe").display()
            );
        }
        if self.devices.iter().any(|d| d.loop_device.is_some()) {
            let _ = writeln!(
                o,
                "time     the backing files' disk: {} (at most 256 MiB of O_DIRECT writes and reads, 21 fsyncs; removed)",
                s.join("host-disk.probe").display()
            );
        }
        for d in &self.devices {
            let _ = writeln!(o, "\ndevice `{}` ({}):", d.name, d.model);
            let _ = writeln!(o, "  mkdir    {}", d.dir.display());
            if let Some(l) = &d.loop_device {
                let _ = writeln!(o, "  create   {} ({} bytes, allocated)", l.backing.display(), l.size);
                let _ = writeln!(o, "  run      {} {}", l.mkfs.0, l.mkfs.1.join(" "));
                if let Some(e) = &l.emulate {
                    let _ = writeln!(
                        o,
                        "  mount    FUSE on {} (wblab-emulate: its file `{}` is {} served through the `{}` model; unmounted at the end)",
                        e.mount.display(),
                        wblab_emulate::DISK,
                        l.backing.display(),
                        d.model
                    );
                }
                let _ = writeln!(
                    o,
                    "  create   /dev/loop<N> (LOOP_CTL_ADD of the first free index >= 64), bound to {} with direct I/O",
                    l.bound_to().display()
                );
                let _ = writeln!(
                    o,
                    "  mount    /dev/loop<N> on {} ({}, options \"{}\")",
                    d.dir.display(),
                    l.fs,
                    l.mount_options
                );
                for (k, v) in &l.queue {
                    let _ = writeln!(o, "  write    /sys/block/loop<N>/queue/{k} = {v}");
                }
                for (k, v) in &l.bdi {
                    let _ = writeln!(o, "  write    /sys/class/bdi/7:<N>/{k} = {v}");
                }
                for (file, v) in &l.throttle {
                    let root = l
                        .blkio_root
                        .as_ref()
                        .map_or("<no blkio hierarchy>".to_string(), |r| r.display().to_string());
                    let _ = writeln!(o, "  append   {root}/{file} = \"7:<N> {v}\" (removed at the end)");
                }
            }
            if let Some(h) = &d.host_knobs {
                for (k, v) in &h.queue {
                    let _ = writeln!(o, "  write    /sys/block/{}/queue/{k} = {v} (--host-knobs; restored)", h.disk);
                }
                for (k, v) in &h.bdi {
                    let _ = writeln!(o, "  write    /sys/class/bdi/{}/{k} = {v} (--host-knobs; restored)", h.devnum);
                }
            }
        }
        if !self.sysctl.is_empty() {
            let _ = writeln!(o, "\nsysctls (each original journaled first, restored at the end):");
            for w in &self.sysctl {
                for (p, v) in w.describe() {
                    let _ = writeln!(o, "  write    {} = {v}", p.display());
                }
            }
        }
        if !self.prefill.is_empty() {
            let _ = writeln!(o, "\nfiles written before the run (O_DIRECT):");
            for (f, n) in &self.prefill {
                let _ = writeln!(o, "  create   {} ({n} bytes)", f.display());
            }
        }
        let trees: Vec<(&TaskSpec, (u64, u64, u64))> = self
            .tasks
            .iter()
            .filter_map(|t| Some((t, crate::trees::size_of(&t.job)?)))
            .collect();
        if !trees.is_empty() {
            let _ = writeln!(
                o,
                "\ntrees laid out before the run (then their file systems mounted again, caches empty):"
            );
            for (t, (files, dirs, bytes)) in trees {
                let data = if bytes > 0 {
                    format!(", {bytes} bytes of O_DIRECT data")
                } else {
                    String::new()
                };
                let _ = writeln!(
                    o,
                    "  create   {} ({files} files in {dirs} directories{data})",
                    crate::trees::root_of(t).display()
                );
            }
        }
        let _ = writeln!(o, "\ntasks:");
        for t in &self.tasks {
            let when = format!("from {:.3} s to {:.3} s", t.start as f64 / 1e9, t.stop as f64 / 1e9);
            match &t.job {
                JobConfig::Dd { .. } => {
                    let _ = writeln!(
                        o,
                        "  start    dd {} ({}#{}, {when})",
                        workload::dd_args(&t.job, &t.file).join(" "),
                        t.name,
                        t.instance
                    );
                }
                JobConfig::Fio(_) => {
                    let _ = writeln!(o, "  start    fio {} ({when})", crate::fio::args(&t.file).join(" "));
                }
                j => {
                    let _ = writeln!(
                        o,
                        "  thread   {}#{}: {} on {} ({when})",
                        t.name,
                        t.instance,
                        j.kind(),
                        t.file.display()
                    );
                }
            }
        }
        if let Some((file, text)) = &self.fio {
            let _ = writeln!(o, "\nfio job file {}:", file.display());
            for l in text.lines() {
                let _ = writeln!(o, "  {l}");
            }
        }
        if !self.cgroups.dirs.is_empty() {
            let _ = writeln!(o, "\ncgroups (removed at the end):");
            for d in &self.cgroups.dirs {
                let _ = writeln!(o, "  mkdir    {}", d.display());
            }
            for (f, v) in &self.cgroups.files {
                let _ = writeln!(o, "  write    {} = {v}", f.display());
            }
        }
        if let Some(t) = &self.trace {
            let _ = writeln!(o, "\ntracing (removed at the end):");
            if let Some(m) = &t.mount {
                let _ = writeln!(o, "  mount    tracefs on {}", m.display());
            }
            let _ = writeln!(o, "  mkdir    {} (events: {})", t.instance.display(), t.events.join(", "));
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(o, "\nwarnings:");
            for w in &self.warnings {
                let _ = writeln!(o, "  {w}");
            }
        }
        o
    }
}

/// Whether `p` lies strictly inside `dir` by its components alone (no `.`, `..` or a second
/// root), as every path the plan makes must.
pub fn confined(p: &Path, dir: &Path) -> bool {
    p.strip_prefix(dir)
        .is_ok_and(|rest| rest.components().next().is_some() && rest.components().all(|c| matches!(c, Component::Normal(_))))
}

/// What in a rendered fio job file is not a comment, a `[plain-name]` section, an option of
/// the renderer's list or one the harness places, with a value of the right shape.
pub fn job_file_escapes(text: &str, scratch: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let at = i + 1;
        if l.chars().any(|c| c.is_control()) {
            bad.push(format!("job file line {at} holds a control character"));
            continue;
        }
        if i == 0 && l.starts_with(';') {
            continue;
        }
        if let Some(name) = l.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            if wblab_scenario::names::name_problem(name, "job").is_some() {
                bad.push(format!("job file line {at}: section [{name}]"));
            }
            continue;
        }
        let (k, v) = l.split_once('=').unwrap_or((l, ""));
        let ok = match k {
            "directory" => confined(Path::new(v), scratch),
            "filename" => wblab_scenario::names::name_problem(v, "file").is_none(),
            "startdelay" => v.strip_suffix("us").is_some_and(|n| n.parse::<u64>().is_ok()),
            "write_lat_log" | "write_bw_log" | "write_iops_log" | "wait_for" => wblab_scenario::names::name_problem(v, "name").is_none(),
            // Numbers, words of closed sets, lists of them (`4096/50:65536/50` for bssplit).
            k => {
                wblab_scenario::fio::render::RENDERED.contains(&k)
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._:,+-".contains(c) || (c == '/' && k == "bssplit"))
            }
        };
        if !ok {
            bad.push(format!("job file line {at}: `{l}`"));
        }
    }
    bad
}

/// An emulated device's queue. The loop driver takes up to 128 requests at once, a disk its
/// queue depth (a SATA disk 31), the elevator keeping the rest to sort and to favour reads; so
/// the driver's tags are cut to the model's depth first: with no elevator `nr_requests` is the
/// driver's tag depth, and it stays so when an elevator is then chosen, whose own
/// `nr_requests` the scenario's value sets. Requests are capped at what the emulation passes
/// whole. What differs from the scenario is said.
fn emulated_queue(d: &wblab_sim::config::DeviceConfig, queue: &mut Vec<(String, String)>, warnings: &mut Vec<String>) {
    let depth = d.model.queue_depth();
    let tags = depth.min(LOOP_DRIVER_TAGS);
    if depth > LOOP_DRIVER_TAGS {
        warnings.push(format!(
            "device `{}`: the model takes {depth} requests at once, the loop driver at most {LOOP_DRIVER_TAGS}: \
             the emulated device holds {LOOP_DRIVER_TAGS}",
            d.name
        ));
    }
    if d.queue.scheduler == wblab_sim::config::SchedulerKind::NONE {
        // Without an elevator the scenario's nr_requests would size the driver's tags again.
        for (_, v) in queue.iter_mut().filter(|(k, _)| k == "nr_requests") {
            if v.parse::<u32>().is_ok_and(|n| n > tags) {
                *v = tags.to_string();
            }
        }
    }
    queue.splice(
        0..0,
        [
            ("scheduler".to_string(), "none".to_string()),
            ("nr_requests".to_string(), tags.to_string()),
        ],
    );
    if d.queue.max_sectors_kb > EMULATED_MAX_SECTORS_KB {
        for (_, v) in queue.iter_mut().filter(|(k, _)| k == "max_sectors_kb") {
            *v = EMULATED_MAX_SECTORS_KB.to_string();
        }
        warnings.push(format!(
            "device `{}`: requests of at most {EMULATED_MAX_SECTORS_KB} KiB on the emulated device (max_sectors_kb {} in the scenario): \
             the loop driver hands FUSE at most 128 pages; set queue/max_sectors_kb = {EMULATED_MAX_SECTORS_KB} for the simulation to match",
            d.name, d.queue.max_sectors_kb
        ));
    }
}

/// The loop driver's tags (its `hw_queue_depth`, fixed when it loads): the most requests an
/// emulated device can be given at once.
pub const LOOP_DRIVER_TAGS: u32 = 128;

/// What cannot apply to a device placed on the scratch file system, said before the run.
fn host_placement_warnings(d: &wblab_sim::config::DeviceConfig, want_loop: bool, dir: &Path, warnings: &mut Vec<String>) {
    if want_loop {
        let what = if d.emulate { "an emulated device" } else { "a loop device" };
        warnings.push(format!("device `{}`: {what} needs root; its files go to {}", d.name, dir.display()));
    }
    if d.fs.is_some() {
        warnings.push(format!(
            "device `{}`: fs ignored, the files are on the file system of the scratch directory",
            d.name
        ));
    }
    if d.throttle != BlkThrottleConfig::default() {
        warnings.push(format!(
            "device `{}`: throttling needs a device of its own (model = \"loop\", or emulate = true) and root; not applied",
            d.name
        ));
    }
}

/// Every task instance (not fio's jobs: one `fio` runs them) with its file under its
/// device's directory; never outside it.
fn task_specs(sc: &Scenario, devices: &[DevicePlan]) -> Result<Vec<TaskSpec>, MeasureError> {
    let mut out = Vec::new();
    for t in sc.tasks.iter().filter(|t| !matches!(t.job, JobConfig::Fio(_))) {
        let place = &devices[t.device];
        for n in 0..t.count {
            let file = t.file.replace("{n}", &n.to_string());
            let path = map_file(&file, &place.name, &place.dir)?;
            out.push(TaskSpec {
                name: t.name.clone(),
                instance: n,
                job: t.job.clone(),
                file: path,
                device: place.name.clone(),
                start: t.start_of(n),
                stop: t.stop.unwrap_or(sc.duration).min(sc.duration),
                seed: sc.seed ^ ((out.len() as u64 + 1) << 32),
                ioprio: t.ioprio,
                cgroup_tasks: Vec::new(),
            });
        }
    }
    Ok(out)
}

/// The cgroup directories and files of `tree` ([`crate::memcg::create`] makes them).
fn cgroup_plan(tree: &CgroupTree, host: &Host, devices: &[DevicePlan]) -> CgroupPlan {
    let mut p = CgroupPlan::default();
    if tree.is_empty() {
        return p;
    }
    if let Some(root) = &host.memory_root {
        let dirs = crate::memcg::tree_dirs(root, &host.memory_group, host.pid, tree);
        for (g, d) in tree.groups.iter().zip(dirs.iter().skip(1)) {
            if let Some(max) = g.memory_max {
                p.files.push((d.join("memory.limit_in_bytes"), max.to_string()));
            }
        }
        p.dirs.extend(dirs);
    }
    if tree.groups.iter().any(crate::memcg::has_blkio_files) {
        if let Some(root) = &host.blkio_root {
            let dirs = crate::memcg::tree_dirs(root, &host.blkio_group, host.pid, tree);
            for (g, d) in tree.groups.iter().zip(dirs.iter().skip(1)) {
                let devnum = |d: usize| Some(devices.get(d).map_or("?".to_string(), |p| format!("<MAJ:MIN of {}>", p.name)));
                for (file, value) in crate::memcg::blkio_files(g, &devnum).unwrap_or_default() {
                    p.files.push((d.join(file), value));
                }
            }
            p.dirs.extend(dirs);
        }
    }
    p
}
