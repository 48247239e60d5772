//! The end of a run: the comms table, the trace sink, and the results gathered from every
//! part; and the `run` entry points that boot, run and finish a machine.

use super::{Machine, Progress, RunOptions};
use crate::config::Scenario;
use crate::laws::LawViolation;
use crate::metrics::trace::TraceSink;
use crate::metrics::{DeviceResult, RunResult, TaskResult};

impl Machine {
    /// `comm` and pid of everything that can appear in the trace, indexed by
    /// `TraceRecord::who`: known before the run starts, so a [`TraceSink`] can name them.
    pub fn comms(&self) -> Vec<(String, u32)> {
        let mut comms = vec![("<idle>".to_string(), 0)];
        for t in &self.tasks {
            comms.push((t.name.clone(), t.pid));
        }
        for (i, _) in self.flushers.iter().enumerate() {
            comms.push((crate::generations::runtime::flusher_comm_name(&self.cfg, i), 10 + i as u32));
        }
        for (i, d) in self.cfg.devices.iter().enumerate().filter(|(i, _)| self.journals[*i].is_some()) {
            // The journal thread of ext4 on the whole device (`jbd2/<dev>-8`: 8 is the journal
            // inode), kjournald for ext3, xfs's CIL push worker.
            let name = match d.fs.as_ref().map(|m| m.fs) {
                Some(crate::config::FsKind::Ext3) => "kjournald".to_string(),
                Some(crate::config::FsKind::Xfs) => format!("kworker/u{}:{}", 2 * self.cfg.machine.cpus.max(1), 16 + i),
                _ => format!("jbd2/{}-8", d.name),
            };
            comms.push((name, 300 + i as u32));
        }
        // blk-throttle's dispatch work runs on a per-CPU kworker (seen as `kworker/1:2` on
        // 6.18).
        comms.push(("kworker/0:2".to_string(), 250));
        comms
    }

    /// Hand the trace to `sink` as it is recorded instead of keeping it (see [`TraceSink`]).
    pub fn set_trace_sink(&mut self, sink: Box<dyn TraceSink>) {
        self.tout.trace.set_sink(sink);
    }

    /// Collect the results.
    pub fn finish(mut self) -> RunResult {
        if let Some(end) = self.run_end {
            // The run ended with its tasks: its length is theirs.
            self.cfg.duration = end.max(1);
        }
        let tiotest = self.tio_results();
        let fio = self.fio_results();
        let dur = self.cfg.duration;
        let comms = self.comms();
        let tasks = self
            .tasks
            .iter_mut()
            .map(|t| {
                let ended = t.ended.unwrap_or(t.stop.min(dur)).max(t.start);
                let total = t.bytes_written + t.bytes_read;
                // The second half of the task's life; a task that ended before the run's
                // midpoint reached it has only its whole life (as `measure` without a sample).
                let (steady_bytes, steady_ns) = match t.mid_bytes {
                    Some(b) if t.mid_ns < ended => (total - b, ended - t.mid_ns),
                    _ => (total, ended.saturating_sub(t.start)),
                };
                TaskResult {
                    name: t.name.clone(),
                    instance: t.instance,
                    job: t.job.kind(),
                    pid: t.pid,
                    device: self.cfg.devices[t.dev as usize].name.clone(),
                    bytes_written: t.bytes_written,
                    bytes_read: t.bytes_read,
                    started: t.start,
                    ended,
                    steady_bytes,
                    steady_ns,
                    pauses: t.pauses.take_settled(),
                    paused_max: t.paused_max,
                    op_latency: t.op_latency.take_settled(),
                    ops: std::mem::take(&mut t.op_log),
                    cpu_sys_ns: t.cpu_sys,
                    cpu_user_ns: t.cpu_user,
                    runqueue_wait_ns: t.runq_wait,
                    reclaim_waits: t.reclaim_waits + u64::from(t.reclaim_since.is_some()),
                    reclaim_wait_ns: t.reclaim_wait + t.reclaim_since.map_or(0, |s| ended.saturating_sub(s)),
                    sched: t.wq.stats(),
                    syncs: t.sync_parts,
                }
            })
            .collect();
        let devices = self
            .queues
            .iter_mut()
            .enumerate()
            .map(|(i, q)| DeviceResult {
                name: q.name.clone(),
                model: self.cfg.devices[i].model.kind(),
                bytes_written: q.bytes_written,
                bytes_read: q.bytes_read,
                util: if dur > 0 { q.device.busy_ns(dur) as f64 / dur as f64 } else { 0.0 },
                request_latency: q.latency.take_settled(),
                requests_written: q.requests_written,
                requests_read: q.requests_read,
                flushes: q.flush.issued,
                fua_writes: q.fua_writes,
                journal: self.journals[i].as_ref().map(|j| crate::metrics::JournalResult {
                    fs: j.p.fs.name(),
                    commits: j.stats.commits,
                    blocks_logged: j.stats.blocks_logged,
                    commit_mean_ns: j.stats.commit_ns_total / j.stats.commits.max(1),
                    commit_max_ns: j.stats.commit_ns_max,
                    locked_mean_ns: j.stats.locked_ns / j.stats.commits.max(1),
                    flushing_mean_ns: j.stats.flushing_ns / j.stats.commits.max(1),
                    logging_mean_ns: j.stats.logging_ns / j.stats.commits.max(1),
                    handle_waits: j.stats.handle_waits,
                    handle_wait_ns: j.stats.handle_wait_ns,
                    checkpoint_blocks: j.stats.checkpoint_blocks,
                    fast_commits: j.stats.fast_commits,
                }),
                iolatency: q.iolat.as_ref().map(|l| l.stats.clone()).unwrap_or_default(),
            })
            .collect();
        let cgroups = self
            .memcgs
            .iter_mut()
            .zip(&self.cfg.cgroups.groups)
            .map(|(m, g)| crate::metrics::CgroupResult {
                path: g.path.clone(),
                cgroup_ino: m.cgroup_ino,
                memory_max: g.memory_max,
                memory_high: g.memory_high,
                events: m.stats,
                samples: std::mem::take(&mut m.samples),
            })
            .collect();
        // The run's end, unless the last second's sample fell on it.
        if self.pressure.last().is_none_or(|p| p.t_ns < dur) {
            self.psi_sample(dur);
        }
        RunResult {
            sim_ns: dur,
            cgroups,
            pressure: std::mem::take(&mut self.pressure),
            events: self.q.events(),
            tasks,
            devices,
            trace: self.tout.trace.finish(),
            trace_streamed: self.tout.trace.streamed,
            trace_dropped: self.tout.trace.dropped,
            comms,
            vmstat: self.vmstat,
            throttle: self.throttle,
            tiotest,
            fio,
            scenario: self.cfg,
        }
    }
}

/// Simulate `scenario` and return its results; the laws are checked in debug and test builds.
pub fn run(scenario: &Scenario, progress: &mut dyn Progress) -> Result<RunResult, LawViolation> {
    run_with(scenario, progress, RunOptions::default())
}

/// Simulate `scenario` with `opts`; a broken law ends the run with its violation.
pub fn run_with(scenario: &Scenario, progress: &mut dyn Progress, opts: RunOptions) -> Result<RunResult, LawViolation> {
    let mut m = Machine::with_options(scenario, opts);
    m.run(progress)?;
    Ok(m.finish())
}

/// Simulate `scenario` with `opts`, handing the trace to the sink `make_sink` returns as it is
/// recorded (it is given the comms table the records index). The result's `trace` is empty.
pub fn run_streaming(
    scenario: &Scenario,
    progress: &mut dyn Progress,
    opts: RunOptions,
    make_sink: impl FnOnce(Vec<(String, u32)>) -> Box<dyn TraceSink>,
) -> Result<RunResult, LawViolation> {
    let mut m = Machine::with_options(scenario, opts);
    m.set_trace_sink(make_sink(m.comms()));
    m.run(progress)?;
    Ok(m.finish())
}
