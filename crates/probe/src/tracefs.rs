//! Tracing through a private tracefs instance (`instances/wblab-<pid>`): its own buffer, event
//! enables and `tracing_on`, so the top-level trace settings are never touched and removing the
//! instance removes everything we set. tracefs is mounted in the scratch directory if it is
//! mounted nowhere. `trace_pipe` is drained while the run goes on, so the buffer cannot
//! overflow however long the run, into a [`Spool`] that keeps it in memory until the trace ends.

use crate::journal::{Entry, Journal};
use crate::spool::Spool;
use crate::sys;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The tracefs mount point, if tracefs is mounted.
pub fn find() -> Option<PathBuf> {
    sys::mounts()
        .into_iter()
        .find(|(_, _, ty, _)| ty == "tracefs")
        .map(|(_, m, _, _)| PathBuf::from(m))
}

/// The tracefs root: the existing mount, or a new one at `scratch/tracefs` (journaled).
pub fn find_or_mount(j: &mut Journal, scratch: &Path) -> io::Result<PathBuf> {
    if let Some(p) = find() {
        return Ok(p);
    }
    let target = scratch.join("tracefs");
    std::fs::create_dir(&target)?;
    crate::mount::mount(j, Path::new("tracefs"), &target, "tracefs", "")?;
    Ok(target)
}

pub struct Tracer {
    pub instance: PathBuf,
    pub enabled: Vec<String>,
    pub missing: Vec<String>,
    pub buffer_kb: u64,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<io::Result<u64>>>,
}

/// Counters of one finished trace.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TraceStats {
    pub bytes: u64,
    pub overruns: u64,
    pub dropped_events: u64,
}

impl Tracer {
    /// Create the instance, enable `events` ("writeback:balance_dirty_pages"), and drain its
    /// `trace_pipe` into `out` (written when the trace stops).
    /// `filters` pairs an event with a tracefs filter expression (`dev == 7340096`) that is
    /// set before the event is enabled.
    pub fn start(
        j: &mut Journal,
        root: &Path,
        events: &[&str],
        filters: &[(&str, String)],
        buffer_kb: u64,
        out: &Path,
    ) -> io::Result<Tracer> {
        let instance = root.join("instances").join(format!("wblab-{}", sys::getpid()));
        if instance.exists() {
            return Err(io::Error::other(format!("{} exists and is not ours", instance.display())));
        }
        j.record(Entry::TraceInstance { path: instance.clone() })?;
        std::fs::create_dir(&instance).map_err(|e| io::Error::new(e.kind(), format!("mkdir {}: {e}", instance.display())))?;
        sys::write_value(&instance.join("tracing_on"), "0")?;
        sys::write_value(&instance.join("buffer_size_kb"), &buffer_kb.to_string())?;
        let mut enabled = Vec::new();
        let mut missing = Vec::new();
        for ev in events {
            let (subsys, name) = ev.split_once(':').unwrap_or(("", ev));
            let dir = instance.join("events").join(subsys).join(name);
            for (_, f) in filters.iter().filter(|(e, _)| e == ev) {
                let _ = sys::write_value(&dir.join("filter"), f);
            }
            let p = dir.join("enable");
            if p.exists() && sys::write_value(&p, "1").is_ok() {
                enabled.push(ev.to_string());
            } else {
                missing.push(ev.to_string());
            }
        }
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(instance.join("trace_pipe"))?;
        let mut sink = Spool::new(out)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let reader = std::thread::Builder::new().name("wblab-trace".into()).spawn(move || {
            let n = pump(pipe, &mut sink, &stop2)?;
            sink.finish()?;
            Ok(n)
        })?;
        sys::write_value(&instance.join("tracing_on"), "1")?;
        Ok(Tracer {
            instance,
            enabled,
            missing,
            buffer_kb,
            stop,
            reader: Some(reader),
        })
    }

    /// Write a line into the trace (`tracing_mark_write: text`).
    pub fn mark(&self, text: &str) -> io::Result<()> {
        sys::write_value(&self.instance.join("trace_marker"), text)
    }

    /// Stop tracing, drain the pipe, disable the events. The instance itself is removed by the
    /// journal's tear-down.
    pub fn stop(mut self) -> io::Result<TraceStats> {
        let _ = sys::write_value(&self.instance.join("tracing_on"), "0");
        self.stop.store(true, Ordering::SeqCst);
        let bytes = match self.reader.take().map(|h| h.join()) {
            Some(Ok(r)) => r?,
            Some(Err(_)) => return Err(io::Error::other("trace reader panicked")),
            None => 0,
        };
        let mut st = TraceStats {
            bytes,
            ..Default::default()
        };
        if let Ok(rd) = std::fs::read_dir(self.instance.join("per_cpu")) {
            for e in rd.flatten() {
                let text = std::fs::read_to_string(e.path().join("stats")).unwrap_or_default();
                for l in text.lines() {
                    let num = |k: &str| l.strip_prefix(k).and_then(|v| v.trim().parse::<u64>().ok());
                    if let Some(v) = num("overrun:") {
                        st.overruns += v;
                    }
                    if let Some(v) = num("dropped events:") {
                        st.dropped_events += v;
                    }
                }
            }
        }
        for ev in &self.enabled {
            let (subsys, name) = ev.split_once(':').unwrap_or(("", ev));
            let _ = sys::write_value(&self.instance.join("events").join(subsys).join(name).join("enable"), "0");
        }
        Ok(st)
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
    }
}

fn pump(mut pipe: File, sink: &mut Spool, stop: &AtomicBool) -> io::Result<u64> {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    let mut stopping = false;
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => {
                if stopping {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(n) => {
                sink.write_all(&buf[..n])?;
                total += n as u64;
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {
                if stopping {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
        // One more drain pass after the stop request.
        if stop.load(Ordering::SeqCst) {
            stopping = true;
        }
    }
    Ok(total)
}

/// Turn an instance off and remove it. Missing = already removed.
pub fn remove_instance(p: &Path) -> io::Result<()> {
    if !p.exists() {
        return Ok(());
    }
    let _ = sys::write_value(&p.join("tracing_on"), "0");
    let mut last = None;
    for _ in 0..50 {
        match std::fs::remove_dir(p) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                last = Some(e);
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("busy")))
}

/// Instances named `wblab-*` under a tracefs root (for leak checks).
pub fn our_instances(root: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(root.join("instances")) else {
        return Vec::new();
    };
    rd.flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("wblab-"))
        .collect()
}
