//! The scenario's jobs as real processes and threads.
//!
//! * `dd` runs the real `dd if=/dev/zero of=FILE bs=BS [iflag=count_bytes count=SIZE]
//!   [oflag=direct] [conv=fsync]`, stopped with SIGINT like `timeout -s INT`; its bytes come from
//!   its final statistics line, or the file size if that line is lost. Its trace comm is `dd`.
//! * `cat`, `randread`, `fsync`, `replace`, `sync`, `spin`, `netwrite`, the metadata jobs
//!   (`du`, `ls`, `launch`: [`crate::trees`]) and the scripted kinds (`jobs::Script`) run as
//!   threads of this process (named after the task, which is their trace comm) so that
//!   every read(), pread(), write+fsync() or sync() is timed: per-operation latency. A scripted
//!   kind's calls are made as its script returns them, counted as the model counts them.
//!
//! Files that a job reads are created before the run with O_DIRECT writes: nothing of them is
//! in the page cache, and the fresh bdi's bandwidth estimate never sees them.

use crate::sys::{self, AlignedBuf};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wblab_sim::config::JobConfig;
use wblab_sim::jobs::{Call, Progress, RealRunner, ScriptedJob};
use wblab_sim::metrics::{LatencyHist, OpSecond};
use wblab_sim::Ns;

/// One instance of a scenario task, with its real file.
#[derive(Clone, Debug)]
pub struct TaskSpec {
    pub name: String,
    pub instance: u32,
    pub job: JobConfig,
    pub file: PathBuf,
    pub device: String,
    pub start: Ns,
    pub stop: Ns,
    pub seed: u64,
    /// `ionice` of the task: set on dd's process or the job's thread before it does I/O.
    pub ioprio: wblab_sim::config::IoPrio,
    /// The `tasks` files of the v1 cgroups the task joins (memory, and blkio when its group
    /// has blkio files); empty for none.
    pub cgroup_tasks: Vec<PathBuf>,
}

/// What a task did.
#[derive(Debug)]
pub struct TaskOutcome {
    pub spec: TaskSpec,
    /// pid (dd) or tid (threads): the pid column of its trace lines.
    pub pid: u32,
    pub started: Ns,
    pub ended: Ns,
    pub bytes_written: u64,
    pub bytes_read: u64,
    pub mid_bytes: Option<(Ns, u64)>,
    pub op_latency: LatencyHist,
    /// Its operations that ended in each second since t0 (threads' jobs; empty for dd).
    pub op_seconds: Vec<OpSecond>,
    /// Each operation as (end since t0, latency) (threads' jobs; empty for dd).
    pub ops: Vec<(Ns, Ns)>,
    pub cpu_user_ns: u64,
    pub cpu_sys_ns: u64,
    pub note: Option<String>,
}

impl TaskOutcome {
    /// A task that did no I/O between `started` and `ended`, and why (`note`).
    fn nothing(spec: TaskSpec, pid: u32, started: Ns, ended: Ns, note: String) -> Self {
        TaskOutcome {
            spec,
            pid,
            started,
            ended,
            bytes_written: 0,
            bytes_read: 0,
            mid_bytes: None,
            op_latency: LatencyHist::new(),
            op_seconds: Vec::new(),
            ops: Vec::new(),
            cpu_user_ns: 0,
            cpu_sys_ns: 0,
            note: Some(note),
        }
    }
}

/// Whether this harness can run `job` for real (the registry of job kinds says how).
pub fn check_job(job: &JobConfig) -> Result<(), String> {
    match job.info().real {
        RealRunner::Dd if sys::which("dd").is_none() => Err("dd is not installed".into()),
        RealRunner::Fio if sys::which("fio").is_none() => Err("fio is not installed (scripts/setup-measure installs it)".into()),
        RealRunner::None => {
            let real: Vec<&str> = wblab_sim::jobs::JOBS
                .iter()
                .filter(|k| k.real != RealRunner::None)
                .map(|k| k.name)
                .collect();
            Err(format!(
                "job `{}` is not run for real by wblab measure ({} are)",
                job.kind(),
                real.join(", ")
            ))
        }
        _ => Ok(()),
    }
}

/// dd's arguments for a `dd` job writing `file`: every one is `key=value` made from numbers
/// and the harness's own path, so none can be read as another option.
pub fn dd_args(job: &JobConfig, file: &Path) -> Vec<String> {
    let JobConfig::Dd { bs, size, fsync, direct } = job else {
        return Vec::new();
    };
    let mut a = vec!["if=/dev/zero".to_string(), format!("of={}", file.display()), format!("bs={bs}")];
    if let Some(sz) = size {
        a.push("iflag=count_bytes".into());
        a.push(format!("count={sz}"));
    }
    if *direct {
        a.push("oflag=direct".into());
    }
    if *fsync {
        a.push("conv=fsync".into());
    }
    a
}

/// Size of the file a job needs to exist before it starts.
pub fn prefill_size(job: &JobConfig) -> Option<u64> {
    job.read_file_size()
}

/// Write `size` bytes to a new file with O_DIRECT (falling back to buffered + fsync + drop).
pub fn prefill(path: &Path, size: u64) -> io::Result<()> {
    let chunk = 1 << 20;
    let mut buf = AlignedBuf::new(chunk);
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (i % 251) as u8 + 1;
    }
    let direct = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(sys::O_DIRECT)
        .open(path);
    let (mut f, is_direct) = match direct {
        Ok(f) => (f, true),
        Err(_) => (OpenOptions::new().write(true).create(true).truncate(true).open(path)?, false),
    };
    let mut left = size;
    while left > 0 {
        crate::guard::check()?;
        let n = left.min(chunk as u64) as usize;
        if is_direct && !n.is_multiple_of(4096) {
            // The unaligned tail: reopen buffered.
            drop(f);
            f = OpenOptions::new().append(true).open(path)?;
            f.write_all(&buf.as_slice()[..n])?;
            break;
        }
        f.write_all(&buf.as_slice()[..n])?;
        left -= n as u64;
    }
    f.sync_all()?;
    sys::fadvise_dontneed(&f);
    Ok(())
}

enum Runner {
    Pending,
    /// A child process: dd, or real fio running the scenario's job file (`spec.file`).
    Proc {
        pid: u32,
        stderr: PathBuf,
        interrupted: bool,
        fio: bool,
    },
    Thread {
        handle: JoinHandle<ThreadOut>,
        stop: Arc<AtomicBool>,
        tid: Arc<AtomicU32>,
        done: Arc<AtomicU64>,
    },
    Finished(Box<TaskOutcome>),
}

struct Slot {
    spec: TaskSpec,
    runner: Runner,
    started: Ns,
    size_samples: Vec<(Ns, u64)>,
}

pub struct Workload {
    t0: Instant,
    slots: Vec<Slot>,
    scratch: PathBuf,
    last_size_sample: Ns,
    /// Each tiotest task's shared barriers and phase table, by task name.
    tiotest: Vec<(String, Arc<crate::tiotest::Tiotest>)>,
}

struct ThreadOut {
    tid: u32,
    ended: Ns,
    bytes_written: u64,
    bytes_read: u64,
    mid_bytes: Option<(Ns, u64)>,
    lat: LatencyHist,
    /// The operations that ended in each second since t0 (latency over time).
    secs: Vec<OpSecond>,
    /// Each operation as (end since t0, latency), for the op latency timeline.
    ops: Vec<(Ns, Ns)>,
    cpu_user_ns: u64,
    cpu_sys_ns: u64,
    error: Option<String>,
}

impl ThreadOut {
    /// One operation took `lat` and ended now.
    fn record_op(&mut self, t0: Instant, lat: Ns) {
        self.lat.record(lat);
        let end = t0.elapsed();
        if self.ops.len() < wblab_sim::metrics::MAX_OP_LOG {
            self.ops.push((end.as_nanos() as Ns, lat));
        }
        let s = end.as_secs() as usize;
        if self.secs.len() <= s {
            self.secs.resize(s + 1, OpSecond::default());
        }
        self.secs[s].record(lat);
    }
}

impl Workload {
    pub fn new(specs: Vec<TaskSpec>, t0: Instant, scratch: &Path) -> Workload {
        Workload {
            t0,
            slots: specs
                .into_iter()
                .map(|spec| Slot {
                    spec,
                    runner: Runner::Pending,
                    started: 0,
                    size_samples: Vec::new(),
                })
                .collect(),
            scratch: scratch.to_path_buf(),
            last_size_sample: 0,
            tiotest: Vec::new(),
        }
    }

    fn now(&self) -> Ns {
        self.t0.elapsed().as_nanos() as Ns
    }

    /// Start what is due, stop what is over, reap what exited. Returns whether any task is
    /// still pending or running.
    pub fn tick(&mut self) -> io::Result<bool> {
        let now = self.now();
        for i in 0..self.slots.len() {
            if matches!(self.slots[i].runner, Runner::Pending) && now >= self.slots[i].spec.start {
                self.launch(i, now)?;
            }
            self.poll(i, now, false);
        }
        if now >= self.last_size_sample + 100_000_000 {
            self.last_size_sample = now;
            for s in &mut self.slots {
                if let Runner::Proc { fio: false, .. } = s.runner {
                    if let Ok(m) = std::fs::metadata(&s.spec.file) {
                        s.size_samples.push((now, m.len()));
                    }
                }
            }
        }
        // Background load (`spin`) does not keep an `until_done` run going, unless it is all
        // the run has (as the simulator's task groups count them).
        let all_background = self.slots.iter().all(|s| s.spec.job.is_background());
        Ok(self
            .slots
            .iter()
            .any(|s| !matches!(s.runner, Runner::Finished(_)) && (all_background || !s.spec.job.is_background())))
    }

    fn launch(&mut self, i: usize, now: Ns) -> io::Result<()> {
        let tio = self.tiotest_of(i);
        let slot = &mut self.slots[i];
        slot.started = now;
        slot.runner = match &slot.spec.job {
            JobConfig::Dd { .. } => {
                let stderr = self.scratch.join(format!("dd-{i}.stderr"));
                let mut cmd = Command::new("dd");
                cmd.args(dd_args(&slot.spec.job, &slot.spec.file));
                cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(File::create(&stderr)?);
                // SAFETY: prctl is async-signal-safe; dd must not outlive us if we are SIGKILLed.
                let ioprio = slot.spec.ioprio.raw();
                // Prepared before the fork: the child may not allocate.
                let join: Vec<std::ffi::CString> = slot
                    .spec
                    .cgroup_tasks
                    .iter()
                    .map(|p| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("no NUL in a cgroup path"))
                    .collect();
                unsafe {
                    cmd.pre_exec(move || {
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
                        for file in &join {
                            sys::join_cgroup_raw(file)?;
                        }
                        sys::ioprio_set_self(ioprio)
                    });
                }
                spawn_reaped(&mut cmd, stderr, false)?
            }
            JobConfig::Fio(_) => {
                let out = crate::fio::out_dir(&slot.spec.file);
                std::fs::create_dir_all(&out)?;
                let stderr = self.scratch.join("fio.stderr");
                let mut cmd = Command::new("fio");
                cmd.args(crate::fio::args(&slot.spec.file))
                    .current_dir(&out)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(File::create(&stderr)?);
                // SAFETY: prctl is async-signal-safe; fio must not outlive us.
                unsafe {
                    cmd.pre_exec(|| {
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
                        Ok(())
                    });
                }
                spawn_reaped(&mut cmd, stderr, true)?
            }
            _ => {
                let stop = Arc::new(AtomicBool::new(false));
                let tid = Arc::new(AtomicU32::new(0));
                let done = Arc::new(AtomicU64::new(0));
                let (spec, t0) = (slot.spec.clone(), self.t0);
                let (stop2, tid2, done2) = (stop.clone(), tid.clone(), done.clone());
                let handle = std::thread::Builder::new()
                    .name(spec.name.chars().take(15).collect())
                    .spawn(move || {
                        tid2.store(sys::gettid(), Ordering::SeqCst);
                        let out = run_thread_job(&spec, t0, &stop2, tio.as_deref());
                        done2.store(1, Ordering::SeqCst);
                        out
                    })?;
                Runner::Thread { handle, stop, tid, done }
            }
        };
        Ok(())
    }

    /// The shared test of slot `i`'s tiotest task (made by its first thread); None for other
    /// jobs.
    fn tiotest_of(&mut self, i: usize) -> Option<Arc<crate::tiotest::Tiotest>> {
        if !matches!(self.slots[i].spec.job, JobConfig::Tiotest { .. }) {
            return None;
        }
        let name = self.slots[i].spec.name.clone();
        if let Some((_, t)) = self.tiotest.iter().find(|(n, _)| *n == name) {
            return Some(t.clone());
        }
        let threads = self.slots.iter().filter(|s| s.spec.name == name).count();
        let t = Arc::new(crate::tiotest::Tiotest::new(threads));
        self.tiotest.push((name, t.clone()));
        Some(t)
    }

    /// The tiotest tasks' phase tables (empty without one), phases still running cut now.
    pub fn tiotest_phases(&self) -> Vec<wblab_sim::metrics::tiotest::TiotestPhase> {
        let now = self.now();
        self.tiotest.iter().flat_map(|(_, t)| t.phases(now)).collect()
    }

    /// Reap a finished task; `force_stop` asks a running one to stop now.
    fn poll(&mut self, i: usize, now: Ns, force_stop: bool) {
        let slot = &mut self.slots[i];
        let over = force_stop || now >= slot.spec.stop;
        match &mut slot.runner {
            Runner::Proc {
                pid,
                stderr,
                interrupted,
                fio,
            } => match sys::wait4_nohang(*pid) {
                Ok(Some(ex)) if *fio => {
                    let code = if libc::WIFEXITED(ex.status) {
                        libc::WEXITSTATUS(ex.status)
                    } else {
                        -1
                    };
                    let json = crate::fio::out_dir(&slot.spec.file).join(crate::fio::JSON_FILE);
                    let (rw, mut note) = match crate::fio::json_bytes(&json) {
                        Ok(rw) => (rw, None),
                        Err(e) => ((0, 0), Some(e)),
                    };
                    if code != 0 && !*interrupted {
                        let text = std::fs::read_to_string(&*stderr).unwrap_or_default();
                        note = Some(format!("fio exited with status {code}: {}", text.trim()));
                    }
                    let ended = now.max(slot.started);
                    let cpu = (ex.utime_ns, ex.stime_ns);
                    slot.runner = Runner::Finished(Box::new(TaskOutcome::exited(
                        (&slot.spec, slot.started),
                        *pid,
                        ended,
                        rw,
                        None,
                        cpu,
                        note,
                    )));
                }
                Ok(Some(ex)) => {
                    let text = std::fs::read_to_string(&*stderr).unwrap_or_default();
                    let file_size = std::fs::metadata(&slot.spec.file).map(|m| m.len()).ok();
                    let (bytes, note) = match (dd_bytes(&text), file_size) {
                        (Some(b), _) => (b, None),
                        (None, Some(s)) => (s, Some("dd printed no statistics; bytes = file size".to_string())),
                        (None, None) => (0, Some("dd printed no statistics and left no file".to_string())),
                    };
                    let code = if libc::WIFEXITED(ex.status) {
                        libc::WEXITSTATUS(ex.status)
                    } else {
                        0
                    };
                    let note =
                        note.or_else(|| (!*interrupted && code != 0).then(|| format!("dd exited with status {code}: {}", text.trim())));
                    let ended = now.min(slot.spec.stop).max(slot.started);
                    let mid_t = slot.started + (ended - slot.started) / 2;
                    let mid_bytes = interpolate(&slot.size_samples, mid_t).map(|b| (mid_t, b.min(bytes)));
                    let cpu = (ex.utime_ns, ex.stime_ns);
                    slot.runner = Runner::Finished(Box::new(TaskOutcome::exited(
                        (&slot.spec, slot.started),
                        *pid,
                        ended,
                        (0, bytes),
                        mid_bytes,
                        cpu,
                        note,
                    )));
                }
                Ok(None) => {
                    // dd prints its statistics, fio stops its jobs and writes its output, on
                    // SIGINT.
                    if over && !*interrupted {
                        let _ = sys::kill(*pid, libc::SIGINT);
                        *interrupted = true;
                    }
                }
                Err(e) => {
                    slot.runner = Runner::Finished(Box::new(TaskOutcome::nothing(
                        slot.spec.clone(),
                        *pid,
                        slot.started,
                        now,
                        format!("wait4: {e}"),
                    )));
                }
            },
            Runner::Thread { stop, done, .. } => {
                if over {
                    stop.store(true, Ordering::SeqCst);
                }
                if done.load(Ordering::SeqCst) == 1 {
                    let Runner::Thread { handle, tid, .. } = std::mem::replace(&mut slot.runner, Runner::Pending) else {
                        unreachable!()
                    };
                    let out = handle.join().unwrap_or_else(|_| ThreadOut {
                        tid: tid.load(Ordering::SeqCst),
                        ended: now,
                        bytes_written: 0,
                        bytes_read: 0,
                        mid_bytes: None,
                        lat: LatencyHist::new(),
                        secs: Vec::new(),
                        ops: Vec::new(),
                        cpu_user_ns: 0,
                        cpu_sys_ns: 0,
                        error: Some("the job thread panicked".into()),
                    });
                    slot.runner = Runner::Finished(Box::new(TaskOutcome {
                        spec: slot.spec.clone(),
                        pid: out.tid,
                        started: slot.started,
                        ended: out.ended.min(slot.spec.stop).max(slot.started),
                        bytes_written: out.bytes_written,
                        bytes_read: out.bytes_read,
                        mid_bytes: out.mid_bytes,
                        op_latency: out.lat,
                        op_seconds: out.secs,
                        ops: out.ops,
                        cpu_user_ns: out.cpu_user_ns,
                        cpu_sys_ns: out.cpu_sys_ns,
                        note: out.error,
                    }));
                }
            }
            Runner::Pending => {
                if force_stop {
                    // Never started: an empty outcome at the abort time.
                    slot.runner = Runner::Finished(Box::new(TaskOutcome::nothing(
                        slot.spec.clone(),
                        0,
                        now,
                        now,
                        "never started (run ended first)".into(),
                    )));
                }
            }
            Runner::Finished(_) => {}
        }
    }

    /// Ask every task to stop now and wait up to `patience` for them.
    pub fn stop_all(&mut self, patience: Duration) -> bool {
        let deadline = Instant::now() + patience;
        loop {
            let now = self.now();
            for i in 0..self.slots.len() {
                self.poll(i, now, true);
            }
            if self.slots.iter().all(|s| matches!(s.runner, Runner::Finished(_))) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL whatever is still running (threads cannot be killed; they are abandoned after
    /// their stop flag is set).
    pub fn kill_all(&mut self) {
        for s in &mut self.slots {
            if let Runner::Proc { pid, .. } = s.runner {
                let _ = sys::kill(pid, libc::SIGKILL);
            }
        }
        self.stop_all(Duration::from_secs(5));
    }

    pub fn outcomes(mut self) -> Vec<TaskOutcome> {
        std::mem::take(&mut self.slots)
            .into_iter()
            .filter_map(|s| match s.runner {
                Runner::Finished(o) => Some(*o),
                _ => None,
            })
            .collect()
    }

    /// pids/tids known so far (threads report theirs once started).
    pub fn pids(&self) -> Vec<u32> {
        self.slots
            .iter()
            .filter_map(|s| match &s.runner {
                Runner::Proc { pid, .. } => Some(*pid),
                Runner::Thread { tid, .. } => Some(tid.load(Ordering::SeqCst)),
                Runner::Finished(o) => Some(o.pid),
                Runner::Pending => None,
            })
            .collect()
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        let running = self
            .slots
            .iter()
            .any(|s| !matches!(s.runner, Runner::Finished(_) | Runner::Pending));
        if running && !self.stop_all(Duration::from_secs(3)) {
            self.kill_all();
        }
    }
}

impl TaskOutcome {
    /// A child process (dd, fio) that exited: its (read, written) bytes, its CPU (user,
    /// system) from wait4, no per-operation figures.
    fn exited(
        (spec, started): (&TaskSpec, Ns),
        pid: u32,
        ended: Ns,
        (bytes_read, bytes_written): (u64, u64),
        mid_bytes: Option<(Ns, u64)>,
        (cpu_user_ns, cpu_sys_ns): (u64, u64),
        note: Option<String>,
    ) -> Self {
        TaskOutcome {
            spec: spec.clone(),
            pid,
            started,
            ended,
            bytes_written,
            bytes_read,
            mid_bytes,
            op_latency: LatencyHist::new(),
            op_seconds: Vec::new(),
            ops: Vec::new(),
            cpu_user_ns,
            cpu_sys_ns,
            note,
        }
    }
}

/// Start `cmd` as a child we reap ourselves with wait4 (for its rusage): the handle is not
/// waited on.
fn spawn_reaped(cmd: &mut Command, stderr: PathBuf, fio: bool) -> io::Result<Runner> {
    let child = cmd.spawn()?;
    let pid = child.id();
    std::mem::forget(child);
    Ok(Runner::Proc {
        pid,
        stderr,
        interrupted: false,
        fio,
    })
}

/// Bytes from dd's statistics: "449839104 bytes (450 MB, 429 MiB) copied, 24.0 s, 18.7 MB/s".
pub fn dd_bytes(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .rev()
        .find(|l| l.contains(" bytes") && l.contains("copied"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|t| t.parse().ok())
}

fn interpolate(samples: &[(Ns, u64)], t: Ns) -> Option<u64> {
    let after = samples.iter().position(|&(ts, _)| ts >= t)?;
    if after == 0 {
        return Some(samples[0].1);
    }
    let (t1, b1) = samples[after - 1];
    let (t2, b2) = samples[after];
    if t2 == t1 {
        return Some(b2);
    }
    Some(b1 + ((b2 - b1.min(b2)) as f64 * (t - t1) as f64 / (t2 - t1) as f64) as u64)
}

fn thread_cpu() -> (u64, u64) {
    // SAFETY: rusage is POD; RUSAGE_THREAD is Linux-specific and valid here.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Small deterministic PRNG (xorshift64*) for random offsets.
pub(crate) struct Rng(u64);

impl Rng {
    /// The stream of a task whose seed is `seed` (never zero, which xorshift cannot leave).
    pub(crate) fn for_task(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Sleep until `deadline` (ns since t0) or until stopped; false if stopped.
pub(crate) fn sleep_until(t0: Instant, deadline: Ns, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let now = t0.elapsed().as_nanos() as Ns;
        if now >= deadline {
            return true;
        }
        std::thread::sleep(Duration::from_nanos((deadline - now).min(10_000_000)));
    }
}

/// Run `op` every `interval` from now until stopped (one that overruns starts the next at
/// once), recording the latency of each.
fn every(
    interval: Ns,
    t0: Instant,
    stop: &AtomicBool,
    out: &mut ThreadOut,
    mut op: impl FnMut(&mut ThreadOut) -> io::Result<()>,
) -> io::Result<()> {
    let now = || t0.elapsed().as_nanos() as Ns;
    let mut next = now();
    while !stop.load(Ordering::SeqCst) {
        let t = Instant::now();
        op(out)?;
        out.record_op(t0, t.elapsed().as_nanos() as u64);
        next += interval;
        if !sleep_until(t0, next.max(now()), stop) {
            break;
        }
    }
    Ok(())
}

fn run_thread_job(spec: &TaskSpec, t0: Instant, stop: &AtomicBool, tio: Option<&crate::tiotest::Tiotest>) -> ThreadOut {
    sys::set_thread_comm(&spec.name);
    let now = || t0.elapsed().as_nanos() as Ns;
    let started = now();
    let mid_t = spec.start.max(started) + (spec.stop.saturating_sub(spec.start.max(started))) / 2;
    let mut out = ThreadOut {
        tid: sys::gettid(),
        ended: 0,
        bytes_written: 0,
        bytes_read: 0,
        mid_bytes: None,
        lat: LatencyHist::new(),
        secs: Vec::new(),
        ops: Vec::new(),
        cpu_user_ns: 0,
        cpu_sys_ns: 0,
        error: None,
    };
    let r = job_loop(spec, t0, stop, mid_t, &mut out, tio);
    if let Err(e) = r {
        out.error = Some(format!("{}: {e}", spec.file.display()));
    }
    out.ended = now();
    let (u, s) = thread_cpu();
    out.cpu_user_ns = u;
    out.cpu_sys_ns = s;
    out
}

fn job_loop(
    spec: &TaskSpec,
    t0: Instant,
    stop: &AtomicBool,
    mid_t: Ns,
    out: &mut ThreadOut,
    tio: Option<&crate::tiotest::Tiotest>,
) -> io::Result<()> {
    sys::ioprio_set_self(spec.ioprio.raw()).map_err(|e| io::Error::other(format!("ionice: {e}")))?;
    for file in &spec.cgroup_tasks {
        // A v1 hierarchy takes threads one by one: this job's thread joins, not the harness.
        std::fs::write(file, sys::gettid().to_string()).map_err(|e| io::Error::other(format!("{}: {e}", file.display())))?;
    }
    let now = || t0.elapsed().as_nanos() as Ns;
    let mark_mid = |out: &mut ThreadOut| {
        if out.mid_bytes.is_none() && now() >= mid_t {
            out.mid_bytes = Some((now(), out.bytes_written + out.bytes_read));
        }
    };
    match &spec.job {
        JobConfig::Cat { bs, .. } => {
            let mut f = File::open(&spec.file)?;
            let mut buf = vec![0u8; *bs as usize];
            while !stop.load(Ordering::SeqCst) {
                let t = Instant::now();
                let n = f.read(&mut buf)?;
                out.record_op(t0, t.elapsed().as_nanos() as u64);
                if n == 0 {
                    break;
                }
                out.bytes_read += n as u64;
                mark_mid(out);
            }
        }
        JobConfig::Randread {
            bs,
            file_size,
            direct,
            think,
        } => {
            let mut o = OpenOptions::new();
            o.read(true);
            if *direct {
                o.custom_flags(sys::O_DIRECT);
            }
            let f = o.open(&spec.file)?;
            let mut buf = AlignedBuf::new(*bs as usize);
            let blocks = (file_size / bs).max(1);
            let mut rng = Rng::for_task(spec.seed);
            while !stop.load(Ordering::SeqCst) {
                let off = (rng.next() % blocks) * bs;
                let t = Instant::now();
                let n = f.read_at(buf.as_mut_slice(), off)?;
                out.record_op(t0, t.elapsed().as_nanos() as u64);
                out.bytes_read += n as u64;
                mark_mid(out);
                if *think > 0 && !sleep_until(t0, now() + think, stop) {
                    break;
                }
            }
        }
        JobConfig::Fsync { bytes, interval } => {
            let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&spec.file)?;
            let buf = vec![0x5au8; *bytes as usize];
            every(*interval, t0, stop, out, |out| {
                f.write_all(&buf)?;
                f.sync_all()?;
                out.bytes_written += *bytes;
                mark_mid(out);
                Ok(())
            })?;
        }
        JobConfig::Replace { bytes, interval } => {
            // Write the new content to a temporary file beside it and rename it over the
            // file, without fsync: what editors and package managers do.
            let mut tmp = spec.file.clone().into_os_string();
            tmp.push(".wblab-new");
            let tmp = std::path::PathBuf::from(tmp);
            let buf = vec![0x5au8; *bytes as usize];
            every(*interval, t0, stop, out, |out| {
                OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&tmp)?
                    .write_all(&buf)?;
                std::fs::rename(&tmp, &spec.file)?;
                out.bytes_written += *bytes;
                mark_mid(out);
                Ok(())
            })?;
        }
        JobConfig::Spin => {
            // User-mode work until stopped, as `yes > /dev/null` does without the writes.
            let mut x = spec.seed | 1;
            while !stop.load(Ordering::Relaxed) && now() < spec.stop {
                for _ in 0..10_000 {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                }
                std::hint::black_box(x);
            }
        }
        JobConfig::Sync { interval } => {
            every(*interval, t0, stop, out, |_| {
                // SAFETY: sync(2) takes no arguments.
                unsafe { libc::sync() };
                Ok(())
            })?;
        }
        JobConfig::Netwrite { bs, size, rate } => {
            // What the link delivers, stored as it arrives: a write of `bs` no sooner than
            // `bs / rate` after the previous one began; while a write is blocked nothing
            // arrives, and afterwards one `bs` at once at most (TCP's window).
            let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&spec.file)?;
            let buf = vec![0x5au8; *bs as usize];
            let period = (*bs as u128 * 1_000_000_000 / u128::from((*rate).max(1))) as Ns;
            let mut next = now();
            while !stop.load(Ordering::SeqCst) && size.is_none_or(|s| out.bytes_written < s) {
                if !sleep_until(t0, next, stop) {
                    break;
                }
                let began = now();
                let n = size.map_or(*bs, |s| (*bs).min(s - out.bytes_written));
                f.write_all(&buf[..n as usize])?;
                out.bytes_written += n;
                mark_mid(out);
                next = began + period;
            }
        }
        JobConfig::Du { .. } | JobConfig::Ls { .. } | JobConfig::Launch { .. } => {
            let (read, written) = crate::trees::run(spec, t0, stop, &mut |lat| out.record_op(t0, lat))?;
            out.bytes_read += read;
            out.bytes_written += written;
        }
        JobConfig::Tiotest {
            file_size, bs, random_ops, ..
        } => {
            let tio = tio.ok_or_else(|| io::Error::other("a tiotest thread without its test"))?;
            let job = crate::tiotest::TioJob {
                file_size: *file_size,
                bs: *bs,
                random_ops: *random_ops,
            };
            let (w, r) = tio.run_thread(job, &spec.file, spec.seed, t0, stop, thread_cpu)?;
            out.bytes_written += w;
            out.bytes_read += r;
        }
        JobConfig::Scripted(job) => run_script(job, spec, t0, stop, out, mark_mid)?,
        #[allow(unreachable_patterns)]
        other => return Err(io::Error::other(format!("job `{}` does not run as a thread", other.kind()))),
    }
    Ok(())
}

/// A scripted job's calls on its file, each timed as one operation (sleeps are not), its
/// progress counted as the model counts it.
fn run_script(
    job: &ScriptedJob,
    spec: &TaskSpec,
    t0: Instant,
    stop: &AtomicBool,
    out: &mut ThreadOut,
    mark_mid: impl Fn(&mut ThreadOut),
) -> io::Result<()> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&spec.file)?;
    let mut buf: Vec<u8> = Vec::new();
    let mut rng = Rng::for_task(spec.seed);
    let mut done = Progress::default();
    while !stop.load(Ordering::SeqCst) {
        let call = job.next(&done, &mut |n| rng.next() % n.max(1));
        done.calls += 1;
        let t = Instant::now();
        match call {
            Call::Write { offset, bytes } => {
                buf.resize(buf.len().max(bytes as usize), 0x5a);
                f.write_all_at(&buf[..bytes as usize], offset)?;
                done.written += bytes;
                out.bytes_written += bytes;
            }
            Call::Read { offset, bytes } => {
                buf.resize(buf.len().max(bytes as usize), 0);
                let n = f.read_at(&mut buf[..bytes as usize], offset)? as u64;
                done.read += n;
                out.bytes_read += n;
            }
            Call::Fsync => f.sync_all()?,
            Call::Sleep(ns) => {
                if !sleep_until(t0, t0.elapsed().as_nanos() as Ns + ns, stop) {
                    break;
                }
                continue;
            }
            Call::Exit => break,
        }
        out.record_op(t0, t.elapsed().as_nanos() as u64);
        mark_mid(out);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dd_statistics() {
        let s = "429+0 records in\n429+0 records out\n449839104 bytes (450 MB, 429 MiB) copied, 24.0047 s, 18.7 MB/s\n";
        assert_eq!(dd_bytes(s), Some(449_839_104));
        assert_eq!(dd_bytes("1 byte copied"), None);
        assert_eq!(dd_bytes(""), None);
    }

    /// The test-only scripted kind, run for real on a file of the temporary directory: its
    /// calls reach the file as the script says (each round appends `bytes`, then one block is
    /// read back), each timed as one operation.
    #[test]
    fn a_scripted_job_runs_for_real_as_its_calls_say() {
        use wblab_sim::units::KIB;
        let kind = wblab_sim::jobs::job_kind("checkpoint-test").expect("the test job kind is registered");
        let dir = std::env::temp_dir().join(format!("wblab-script-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = TaskSpec {
            name: "ckpt".into(),
            instance: 0,
            job: JobConfig::Scripted(ScriptedJob {
                kind,
                params: [64 * KIB, 256 * KIB, 20_000_000].into(),
            }),
            file: dir.join("ckpt0"),
            device: "tmp".into(),
            start: 0,
            stop: 10_000_000_000,
            seed: 7,
            ioprio: Default::default(),
            cgroup_tasks: Vec::new(),
        };
        let stop = AtomicBool::new(false);
        let out = std::thread::scope(|s| {
            let run = s.spawn(|| run_thread_job(&spec, Instant::now(), &stop, None));
            std::thread::sleep(Duration::from_millis(300));
            stop.store(true, Ordering::SeqCst);
            run.join().unwrap()
        });
        let len = std::fs::metadata(&spec.file).unwrap().len();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(out.error, None);
        assert_eq!(len, out.bytes_written, "the file holds what was written");
        let rounds = out.bytes_read / (64 * KIB);
        assert!(
            rounds >= 2 && out.bytes_read % (64 * KIB) == 0,
            "{} bytes read back",
            out.bytes_read
        );
        assert!(
            out.bytes_written >= rounds * 256 * KIB,
            "{} bytes in {rounds} rounds",
            out.bytes_written
        );
        // Four writes, the fsync and the read-back of each round are operations; sleeps are not.
        let ops = out.ops.len() as u64;
        assert!(ops >= rounds * 6 && ops < (rounds + 1) * 6, "{ops} operations in {rounds} rounds");
    }

    #[test]
    fn interpolation() {
        let s = [(0, 0), (100, 1000), (200, 3000)];
        assert_eq!(interpolate(&s, 150), Some(2000));
        assert_eq!(interpolate(&s, 0), Some(0));
        assert_eq!(interpolate(&s, 300), None);
    }
}
