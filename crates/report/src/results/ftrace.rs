//! `trace.txt`: trace records in the text layout of `/sys/kernel/tracing/trace` on Linux 6.18
//! (as the 6.18 tracepoints print them), so that scripts written for real traces read ours.
//!
//! A line is `%16s-%-7d [%03d] <5 flags> %5lu.%06lu: <event>: <payload>`, where the payload is
//! the event's 6.18 `print fmt`. Everything is appended to a reused `String`: writing a trace of
//! millions of lines allocates nothing per line.

use crate::num::{push_i64, push_u64, push_u64_padded, push_u64_right};
use std::io::{self, Write};
use wblab_sim::config::{IoPrio, IoPrioClass};
use wblab_sim::metrics::trace::{DevT, Rwbs, TraceEvent, TraceRecord};
use wblab_sim::metrics::RunResult;

/// The kernel's `TASK_COMM_LEN` is 16 including the NUL: a comm is at most 15 bytes.
const COMM_MAX: usize = 15;

/// The irqs-off / need-resched / hardirq-softirq / preempt-depth / migrate-disable column. The
/// model does not track these states, so every line shows them all clear.
const FLAGS: &str = ".....";

/// `cgroup_ino` of the root cgroup, which every simulated task belongs to.
const ROOT_CGROUP_INO: u64 = 1;

/// The header the kernel prints for the `nop` tracer with the default `irq-info` option
/// (`print_trace_header` / `print_func_help_header_irq`), given entry and CPU counts.
pub fn write_header(out: &mut String, entries: usize, cpus: u32) {
    out.push_str("# tracer: nop\n#\n# entries-in-buffer/entries-written: ");
    push_u64(out, entries as u64);
    out.push('/');
    push_u64(out, entries as u64);
    out.push_str("   #P:");
    push_u64(out, cpus as u64);
    out.push_str(
        "\n#\n\
         #                                _-----=> irqs-off/BH-disabled\n\
         #                               / _----=> need-resched\n\
         #                              | / _---=> hardirq/softirq\n\
         #                              || / _--=> preempt-depth\n\
         #                              ||| / _-=> migrate-disable\n\
         #                              |||| /     delay\n\
         #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
         #              | |         |   |||||     |         |\n",
    );
}

/// A comm cut to the kernel's 15 bytes (on a character boundary).
fn comm_str(comm: &str) -> &str {
    if comm.len() <= COMM_MAX {
        return comm;
    }
    let mut end = COMM_MAX;
    while !comm.is_char_boundary(end) {
        end -= 1;
    }
    &comm[..end]
}

/// Comm and pid of a `RunResult::comms` index; `<...>` (the kernel's unknown comm) if out of range.
fn lookup(comms: &[(String, u32)], who: u32) -> (&str, u32) {
    match comms.get(who as usize) {
        Some((c, pid)) => (comm_str(c), *pid),
        None => ("<...>", 0),
    }
}

/// Append `major<sep>minor`.
fn push_devt(out: &mut String, d: DevT, sep: char) {
    push_u64(out, d.major as u64);
    out.push(sep);
    push_u64(out, d.minor as u64);
}

/// Append `bdi major:minor` (the writeback tracepoints' device prefix).
fn push_bdi(out: &mut String, bdi: DevT) {
    out.push_str("bdi ");
    push_devt(out, bdi, ':');
}

/// Append `major,minor rwbs` (the block tracepoints' prefix).
fn push_dev_rwbs(out: &mut String, dev: DevT, rwbs: Rwbs) {
    push_devt(out, dev, ',');
    out.push(' ');
    rwbs.render(out);
}

/// The bio events' `8,0 W sector + nr_sector [comm]` (`sep` " / " for block_split's
/// `sector / new_sector`).
fn push_bio_range(out: &mut String, dev: DevT, rwbs: Rwbs, sector: u64, sep: &str, second: u64, comm: &str) {
    push_dev_rwbs(out, dev, rwbs);
    out.push(' ');
    push_u64(out, sector);
    out.push_str(sep);
    push_u64(out, second);
    out.push_str(" [");
    out.push_str(comm);
    out.push(']');
}

/// Append ` () sector + nr_sector ioprio [` (the block tracepoints' request range; the caller
/// closes the bracket).
fn push_rq_range(out: &mut String, sector: u64, nr_sector: u64, ioprio: Option<IoPrio>) {
    out.push_str(" () ");
    push_u64(out, sector);
    out.push_str(" + ");
    push_u64(out, nr_sector);
    out.push(' ');
    push_ioprio(out, ioprio);
    out.push_str(" [");
}

/// ioprio as the block tracepoints print it (class,hint,level); a flush has none.
fn push_ioprio(out: &mut String, ioprio: Option<IoPrio>) {
    let Some(p) = ioprio else {
        out.push_str("none,0,0");
        return;
    };
    out.push_str(match p.class {
        IoPrioClass::Rt => "rt",
        IoPrioClass::Be => "be",
        IoPrioClass::Idle => "idle",
    });
    out.push_str(",0,");
    push_u64(out, p.level as u64);
}

/// Append ` key=value` for an unsigned value.
fn kv(out: &mut String, key: &str, v: u64) {
    out.push(' ');
    out.push_str(key);
    out.push('=');
    push_u64(out, v);
}

/// Append ` key=value` for each unsigned pair.
fn kvs(out: &mut String, pairs: &[(&str, u64)]) {
    for &(key, v) in pairs {
        kv(out, key, v);
    }
}

/// Append ` key=value` for a signed value.
fn kvi(out: &mut String, key: &str, v: i64) {
    out.push(' ');
    out.push_str(key);
    out.push('=');
    push_i64(out, v);
}

/// `dev %d,%d` of the jbd2 events.
fn push_jbd2_dev(out: &mut String, dev: DevT) {
    out.push_str("dev ");
    push_devt(out, dev, ',');
}

/// `dev %d,%d transaction %d sync %d`: the jbd2 commit events' common part.
fn push_jbd2_transaction(out: &mut String, dev: DevT, tid: u32, sync: bool) {
    push_jbd2_dev(out, dev);
    out.push_str(" transaction ");
    push_u64(out, tid as u64);
    out.push_str(" sync ");
    push_u64(out, sync as u64);
}

/// The tracepoint name of an event, as printed before the payload.
pub fn event_name(ev: &TraceEvent) -> &'static str {
    match ev {
        TraceEvent::BalanceDirtyPages { .. } => "balance_dirty_pages",
        TraceEvent::BdiDirtyRatelimit { .. } => "bdi_dirty_ratelimit",
        TraceEvent::GlobalDirtyState { .. } => "global_dirty_state",
        TraceEvent::WritebackWritten { .. } => "writeback_written",
        TraceEvent::BlockRqIssue { .. } => "block_rq_issue",
        TraceEvent::BlockBio { what, .. } => what.name(),
        TraceEvent::BlockSplit { .. } => "block_split",
        TraceEvent::BlockRqInsert { .. } => "block_rq_insert",
        TraceEvent::BlockRqComplete { .. } => "block_rq_complete",
        TraceEvent::WbtStep { .. } => "wbt_step",
        TraceEvent::Jbd2Commit { what, .. } => match *what {
            "start_commit" => "jbd2_start_commit",
            "commit_locking" => "jbd2_commit_locking",
            "commit_flushing" => "jbd2_commit_flushing",
            _ => "jbd2_commit_logging",
        },
        TraceEvent::Jbd2EndCommit { .. } => "jbd2_end_commit",
        TraceEvent::Jbd2RunStats { .. } => "jbd2_run_stats",
        TraceEvent::KyberLatency { .. } => "kyber_latency",
        TraceEvent::KyberAdjust { .. } => "kyber_adjust",
        TraceEvent::KyberThrottled { .. } => "kyber_throttled",
    }
}

/// Append the payload of an event (the text after `event_name: `), following the 6.18 print fmt.
pub fn format_payload(ev: &TraceEvent, comms: &[(String, u32)], out: &mut String) {
    match *ev {
        TraceEvent::BalanceDirtyPages {
            bdi,
            limit,
            setpoint,
            dirty,
            wb_setpoint,
            wb_dirty,
            dirty_ratelimit,
            task_ratelimit,
            dirtied,
            dirtied_pause,
            cgroup_ino,
            paused,
            pause,
            period,
            think,
        } => {
            push_bdi(out, bdi);
            out.push(':');
            kvs(
                out,
                &[
                    ("limit", limit),
                    ("setpoint", setpoint),
                    ("dirty", dirty),
                    ("wb_setpoint", wb_setpoint),
                    ("wb_dirty", wb_dirty),
                    ("dirty_ratelimit", dirty_ratelimit),
                    ("task_ratelimit", task_ratelimit),
                    ("dirtied", dirtied as u64),
                    ("dirtied_pause", dirtied_pause as u64),
                    ("paused", paused),
                ],
            );
            kvi(out, "pause", pause);
            kv(out, "period", period);
            kvi(out, "think", think);
            kv(out, "cgroup_ino", cgroup_ino as u64);
        }
        TraceEvent::BdiDirtyRatelimit {
            bdi,
            write_bw,
            avg_write_bw,
            dirty_rate,
            dirty_ratelimit,
            task_ratelimit,
            balanced_dirty_ratelimit,
            cgroup_ino,
        } => {
            push_bdi(out, bdi);
            out.push(':');
            kvs(
                out,
                &[
                    ("write_bw", write_bw),
                    ("awrite_bw", avg_write_bw),
                    ("dirty_rate", dirty_rate),
                    ("dirty_ratelimit", dirty_ratelimit),
                    ("task_ratelimit", task_ratelimit),
                    ("balanced_dirty_ratelimit", balanced_dirty_ratelimit),
                    ("cgroup_ino", cgroup_ino as u64),
                ],
            );
        }
        TraceEvent::GlobalDirtyState {
            nr_dirty,
            nr_writeback,
            background_thresh,
            dirty_thresh,
            dirty_limit,
            nr_dirtied,
            nr_written,
        } => {
            out.push_str("dirty=");
            push_u64(out, nr_dirty);
            kvs(
                out,
                &[
                    ("writeback", nr_writeback),
                    ("bg_thresh", background_thresh),
                    ("thresh", dirty_thresh),
                    ("limit", dirty_limit),
                    ("dirtied", nr_dirtied),
                    ("written", nr_written),
                ],
            );
        }
        TraceEvent::WritebackWritten {
            bdi,
            nr_pages,
            sync_mode,
            for_kupdate,
            range_cyclic,
            for_background,
            reason,
        } => {
            push_bdi(out, bdi);
            // Every simulated work is flusher-internal (no superblock): sb_dev prints as 0:0.
            out.push_str(": sb_dev 0:0");
            kvi(out, "nr_pages", nr_pages);
            kvs(
                out,
                &[
                    ("sync_mode", sync_mode as u64),
                    ("kupdate", for_kupdate as u64),
                    ("range_cyclic", range_cyclic as u64),
                    ("background", for_background as u64),
                ],
            );
            out.push_str(" reason=");
            out.push_str(reason.as_str());
            kv(out, "cgroup_ino", ROOT_CGROUP_INO);
        }
        TraceEvent::BlockBio {
            dev,
            rwbs,
            sector,
            nr_sector,
            comm,
            ..
        } => {
            push_bio_range(out, dev, rwbs, sector, " + ", nr_sector as u64, lookup(comms, comm).0);
        }
        TraceEvent::BlockSplit {
            dev,
            rwbs,
            sector,
            new_sector,
            comm,
        } => {
            push_bio_range(out, dev, rwbs, sector, " / ", new_sector, lookup(comms, comm).0);
        }
        TraceEvent::BlockRqIssue {
            dev,
            rwbs,
            bytes,
            sector,
            nr_sector,
            ioprio,
            comm,
        }
        | TraceEvent::BlockRqInsert {
            dev,
            rwbs,
            bytes,
            sector,
            nr_sector,
            ioprio,
            comm,
        } => {
            push_dev_rwbs(out, dev, rwbs);
            out.push(' ');
            push_u64(out, bytes as u64);
            push_rq_range(out, sector, nr_sector as u64, ioprio);
            out.push_str(lookup(comms, comm).0);
            out.push(']');
        }
        TraceEvent::BlockRqComplete {
            dev,
            rwbs,
            sector,
            nr_sector,
            ioprio,
            error,
        } => {
            push_dev_rwbs(out, dev, rwbs);
            push_rq_range(out, sector, nr_sector as u64, ioprio);
            push_i64(out, error as i64);
            out.push(']');
        }
        TraceEvent::WbtStep {
            dev,
            msg,
            step,
            window_us,
            background,
            normal,
            max,
        } => {
            push_devt(out, dev, ':');
            out.push_str(": ");
            out.push_str(msg);
            out.push_str(": step=");
            push_i64(out, step as i64);
            out.push_str(", window=");
            push_u64(out, window_us);
            out.push_str("us, background=");
            push_u64(out, background as u64);
            out.push_str(", normal=");
            push_u64(out, normal as u64);
            out.push_str(", max=");
            push_u64(out, max as u64);
        }
        TraceEvent::KyberLatency {
            dev,
            domain,
            kind,
            percentile,
            numerator,
            denominator,
            samples,
        } => {
            // "%d,%d %s %s p%u %u/%u samples=%u"
            push_devt(out, dev, ',');
            out.push(' ');
            out.push_str(domain);
            out.push(' ');
            out.push_str(kind);
            out.push_str(" p");
            push_u64(out, percentile as u64);
            out.push(' ');
            push_u64(out, numerator as u64);
            out.push('/');
            push_u64(out, denominator as u64);
            out.push_str(" samples=");
            push_u64(out, samples as u64);
        }
        TraceEvent::KyberAdjust { dev, domain, depth } => {
            push_devt(out, dev, ',');
            out.push(' ');
            out.push_str(domain);
            out.push(' ');
            push_u64(out, depth as u64);
        }
        TraceEvent::KyberThrottled { dev, domain } => {
            push_devt(out, dev, ',');
            out.push(' ');
            out.push_str(domain);
        }
        TraceEvent::Jbd2Commit { dev, tid, sync, .. } => push_jbd2_transaction(out, dev, tid, sync),
        TraceEvent::Jbd2EndCommit { dev, tid, sync, head } => {
            push_jbd2_transaction(out, dev, tid, sync);
            out.push_str(" head ");
            push_u64(out, head as u64);
        }
        TraceEvent::Jbd2RunStats {
            dev,
            tid,
            wait,
            request_delay,
            running,
            locked,
            flushing,
            logging,
            handle_count,
            blocks,
            blocks_logged,
        } => {
            push_jbd2_dev(out, dev);
            for (key, v) in [
                ("tid", tid),
                ("wait", wait),
                ("request_delay", request_delay),
                ("running", running),
                ("locked", locked),
                ("flushing", flushing),
                ("logging", logging),
                ("handle_count", handle_count),
                ("blocks", blocks),
                ("blocks_logged", blocks_logged),
            ] {
                out.push(' ');
                out.push_str(key);
                out.push(' ');
                push_u64(out, v as u64);
            }
        }
    }
}

/// Append one trace line for `rec` to `out`, without a trailing newline.
///
/// `comms` is `RunResult::comms`: `rec.who` (and a block request's submitter) index into it.
pub fn format_trace_line(rec: &TraceRecord, comms: &[(String, u32)], out: &mut String) {
    let (comm, pid) = lookup(comms, rec.who);
    // %16s-%-7d
    for _ in comm.len()..16 {
        out.push(' ');
    }
    out.push_str(comm);
    out.push('-');
    let pid_start = out.len();
    push_u64(out, pid as u64);
    for _ in out.len() - pid_start..7 {
        out.push(' ');
    }
    // " [%03d] "
    out.push_str(" [");
    push_u64_padded(out, rec.cpu as u64, 3);
    out.push_str("] ");
    out.push_str(FLAGS);
    // " %5lu.%06lu: " with the timestamp rounded to µs as ns2usecs() does.
    let usecs = (rec.t_ns + 500) / 1000;
    out.push(' ');
    push_u64_right(out, usecs / 1_000_000, 5);
    out.push('.');
    push_u64_padded(out, usecs % 1_000_000, 6);
    out.push_str(": ");
    out.push_str(event_name(&rec.ev));
    out.push_str(": ");
    format_payload(&rec.ev, comms, out);
}

/// Write the header and every record of `r` to `w`.
pub fn write_trace<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    let mut line = String::with_capacity(1024);
    write_header(&mut line, r.trace.len(), r.scenario.machine.cpus);
    w.write_all(line.as_bytes())?;
    for rec in &r.trace {
        line.clear();
        format_trace_line(rec, &r.comms, &mut line);
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}
