//! A fio job as a task: the loop of fio's `do_io` over the simulated kernel.
//!
//! Each I/O is chosen as fio chooses it — direction by `rwmixread` (drawn per I/O), file in
//! turn (`file_service_type=roundrobin`), offset sequential or by `random_distribution` with
//! the random map, block size from `bs`/`bsrange`/`bssplit` — after the `rate` and
//! `thinktime` waits and the `fsync=N` calls. Synchronous engines (psync and friends) make one
//! pread()/pwrite() at a time through the same paths as every other task: buffered writes pass
//! `balance_dirty_pages`, buffered reads use the page cache and readahead, O_DIRECT goes to the
//! block layer. libaio and io_uring keep `iodepth` O_DIRECT I/Os in flight: each submission
//! builds its requests, submits them (waiting for a tag or wbt like any submitter, which is
//! where `io_submit` blocks in the kernel) and costs a system call of CPU; each completion is
//! reaped, and the queue is refilled once `iodepth_low` or `iodepth_batch_complete_min`
//! allow. Buffered I/O through libaio is done inside `io_submit` (the kernel does not make it
//! asynchronous), so it runs one at a time and its time is submission latency; io_uring hands
//! it to a worker, one at a time per file here (writes to one file are serialised by io-wq's
//! hashing; the model serialises its buffered reads too), and its time is completion latency.

mod do_io;

use super::fio_offsets::OffsetGen;
use crate::config::{FioBs, FioEngine, FioJob, FioRw, JobConfig, READ, WRITE};
use crate::engine::RngStream;
use crate::metrics::fio::{FioStats, LogRow, LogWindow, SAMPLE_NS};
use crate::units::page_range;
use crate::Ns;

/// One I/O of a fio job.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FioIo {
    /// When fio started it (`io_u->start_time`) and when its submission returned.
    pub start: Ns,
    pub submitted: Ns,
    pub ddir: u8,
    pub file: u32,
    pub offset: u64,
    pub bs: u64,
    /// Its requests not yet completed (O_DIRECT).
    pub reqs: u32,
    /// An O_DSYNC direct write sent as FUA writes: durable when they complete.
    pub fua: bool,
}

/// A fio job clone's progress.
pub(crate) struct FioState {
    /// The job's files (inodes), used in turn.
    pub files: Vec<u32>,
    next_file: usize,
    /// Next sequential offset in each file.
    seq: Vec<u64>,
    /// Random offsets of each file, in blocks of the smallest block size.
    gens: Vec<OffsetGen>,
    rng: RngStream,
    /// Bytes issued in this pass over `size`, and passes finished (`loops`).
    issued: u64,
    passes: u32,
    /// When the job began, when statistics begin (after `ramp_time`), when it must end.
    begun: Option<Ns>,
    stats_from: Ns,
    end: Option<Ns>,
    since_think: u32,
    since_sync: u32,
    /// Writes since the last sync_file_range call, and the pages they wrote: (file, first,
    /// end), fio's `first_write` .. `last_write` of the file.
    since_sfr: u32,
    sfr_range: Option<(u32, u64, u64)>,
    /// Writes issued since the job's last fsync (for `end_fsync`).
    unsynced: bool,
    /// Issued since the job began, per direction, for `rate` and `rate_iops`.
    rate_bytes: [u64; 2],
    rate_ios: [u64; 2],
    /// In-flight I/Os by slot (the request's `aio` tag); free slots.
    slots: Vec<FioIo>,
    free: Vec<u16>,
    pub inflight: u32,
    /// The task waits in `WaitDirect` until in-flight I/O falls to this.
    wake_at: u32,
    /// The I/O being submitted (async) or done (sync).
    cur: FioIo,
    cur_slot: u16,
    /// Files still to fsync at the end (`end_fsync`), and whether that was started.
    end_syncs: usize,
    finishing: bool,
    /// Times the task blocked (fio's `ctx`).
    pub ctx: u64,
    /// An O_SYNC/O_DSYNC write whose data is written and whose `generic_write_sync` is still
    /// to come (or under way): it completes, for fio, when that returns.
    write_sync: Option<FioIo>,
    pub stats: FioStats,
    /// Next bandwidth/IOPS sample, and the open window of a `log_avg_msec` log.
    sample_at: Ns,
    window: LogWindow,
}

impl FioState {
    pub(crate) fn new(job: &FioJob, files: Vec<u32>, seed: u64, instance: u32) -> Self {
        let mut rng = RngStream::new(job.seed ^ seed, &format!("fio/{}/{}", job.name, instance));
        let block = job.bs[READ].min().min(job.bs[WRITE].min()).max(1);
        let blocks = job.file_size / block;
        let gens = files
            .iter()
            .map(|_| OffsetGen::new(blocks, job.dist, job.randommap, &mut rng))
            .collect();
        FioState {
            seq: vec![0; files.len()],
            files,
            next_file: 0,
            gens,
            rng,
            issued: 0,
            passes: 0,
            begun: None,
            stats_from: 0,
            end: None,
            since_think: 0,
            since_sync: 0,
            since_sfr: 0,
            sfr_range: None,
            unsynced: false,
            rate_bytes: [0; 2],
            rate_ios: [0; 2],
            slots: Vec::new(),
            free: Vec::new(),
            inflight: 0,
            wake_at: 0,
            cur: FioIo::default(),
            cur_slot: 0,
            end_syncs: 0,
            finishing: false,
            ctx: 0,
            write_sync: None,
            stats: FioStats::default(),
            sample_at: 0,
            window: LogWindow::default(),
        }
    }

    fn alloc_slot(&mut self, io: FioIo) -> u16 {
        match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = io;
                s
            }
            None => {
                self.slots.push(io);
                (self.slots.len() - 1) as u16
            }
        }
    }
}

/// What the job does next.
enum Next {
    Issue(FioIo),
    /// Sleep until in-flight I/O falls to the given count.
    Wait(u32),
    Sleep(Ns),
    Fsync(u32),
    /// sync_file_range(2) over pages [first, end) of a file.
    SyncRange(u32, u64, u64),
    Finish,
}

/// A block size for direction `ddir`, from a fixed size, a range or a split.
fn pick_bs(bs: &FioBs, rng: &mut RngStream) -> u64 {
    match bs {
        FioBs::Fixed(b) => *b,
        FioBs::Range(lo, hi) => {
            let steps = (hi - lo) / lo.max(&1) + 1;
            lo + rng.below(steps) * lo
        }
        FioBs::Split(v) => {
            let mut r = rng.below(100) as u32;
            for &(b, w) in v {
                if r < w {
                    return b;
                }
                r -= w;
            }
            v.last().map_or(4096, |&(b, _)| b)
        }
    }
}

fn job(j: &JobConfig) -> &FioJob {
    match j {
        JobConfig::Fio(f) => f,
        _ => unreachable!("fio state on a task that runs no fio job"),
    }
}

/// Bandwidth and IOPS samples for every 500 ms window that ended by `now`.
fn advance_samples(f: &mut FioState, j: &FioJob, now: Ns) {
    while f.sample_at > 0 && now >= f.sample_at {
        for d in [READ, WRITE] {
            if !j.does(d) {
                continue;
            }
            let s = &mut f.stats.dir[d];
            let secs = SAMPLE_NS as f64 / 1e9;
            s.bw.record(s.window_bytes as f64 / 1024.0 / secs);
            s.iops.record(s.window_ios as f64 / secs);
            s.window_bytes = 0;
            s.window_ios = 0;
        }
        f.sample_at += SAMPLE_NS;
    }
}

/// The job ends: its last windows are logged.
fn close_samples(f: &mut FioState, logs: &crate::config::FioLogs, now: Ns) {
    if logs.avg_msec > 0 && logs.any() && now >= f.stats_from {
        let ms = (now - f.stats_from) / 1_000_000;
        flush_windows(f, logs, ms + logs.avg_msec);
    }
}

/// Write out the `log_avg_msec` windows that ended before `ms`.
fn flush_windows(f: &mut FioState, logs: &crate::config::FioLogs, ms: u64) {
    let len = logs.avg_msec;
    while ms >= f.window.start_ms + len {
        let w = std::mem::take(&mut f.window);
        let at = w.start_ms + len;
        for d in [READ, WRITE] {
            if w.ios[d] == 0 {
                continue;
            }
            let value = |k: usize| {
                if logs.max_value {
                    w.max[d][k]
                } else {
                    (w.sum[d][k] / w.ios[d] as u128) as u64
                }
            };
            let row = |value| LogRow {
                ms: at,
                value,
                ddir: d as u8,
                bs: 0,
                offset: 0,
            };
            let rows = &mut f.stats.logs;
            if logs.lat.is_some() {
                rows.lat.push(row(value(0)));
                rows.clat.push(row(value(1)));
                if w.sum[d][2] > 0 {
                    rows.slat.push(row(value(2)));
                }
            }
            if logs.bw.is_some() {
                rows.bw.push(row(w.bytes[d] * 1000 / 1024 / len));
            }
            if logs.iops.is_some() {
                rows.iops.push(row(w.ios[d] * 1000 / len));
            }
        }
        f.window.start_ms = at;
    }
}

/// fio's choice of what to do next, from the job's options and progress.
fn decide(j: &FioJob, f: &mut FioState, now: Ns, stop: Ns) -> Next {
    let iodepth = if j.engine == FioEngine::Sync { 1 } else { j.iodepth.max(1) };
    // A finished pass starts the next (`loops`, or over and over with `time_based`).
    if f.issued >= j.size && (j.time_based || f.passes + 1 < j.loops) {
        f.passes += 1;
        f.issued = 0;
        f.seq.iter_mut().for_each(|o| *o = 0);
    }
    let over = f.end.is_some_and(|e| now >= e) || now >= stop || f.issued >= j.size;
    if over || f.finishing {
        if f.inflight > 0 {
            return Next::Wait(0);
        }
        if !f.finishing {
            f.finishing = true;
            f.end_syncs = if j.end_fsync && f.unsynced { f.files.len() } else { 0 };
        }
        if f.end_syncs > 0 && now < stop {
            f.end_syncs -= 1;
            return Next::Fsync(f.files[f.files.len() - 1 - f.end_syncs]);
        }
        return Next::Finish;
    }
    if f.inflight >= iodepth {
        let batch = j.batch_complete_min.clamp(1, iodepth);
        return Next::Wait(j.iodepth_low.min(iodepth - batch));
    }
    if j.fsync_every > 0 && f.since_sync >= j.fsync_every {
        if f.inflight > 0 {
            return Next::Wait(0);
        }
        f.since_sync = 0;
        f.unsynced = false;
        let last = f.cur.file;
        return Next::Fsync(last);
    }
    if let Some(s) = j.sync_file_range {
        if f.since_sfr >= s.every {
            if f.inflight > 0 {
                return Next::Wait(0);
            }
            f.since_sfr = 0;
            if let Some((file, first, end)) = f.sfr_range.take() {
                return Next::SyncRange(file, first, end);
            }
        }
    }
    if j.thinktime > 0 && f.since_think >= j.thinktime_blocks.max(1) {
        if f.inflight > 0 {
            return Next::Wait(0);
        }
        f.since_think = 0;
        return Next::Sleep(j.thinktime);
    }
    let ddir = match j.rw {
        FioRw::Read | FioRw::RandRead => READ,
        FioRw::Write | FioRw::RandWrite => WRITE,
        FioRw::ReadWrite | FioRw::RandRw => {
            if f.rng.below(100) < j.rwmixread as u64 {
                READ
            } else {
                WRITE
            }
        }
    };
    let begun = f.begun.unwrap_or(now);
    // When `done` bytes or I/Os at `rate` per second may have been issued (saturating: a tiny
    // rate puts it past the end, not back before the start).
    let due = |done: u64, rate: u64| begun.saturating_add(Ns::try_from(done as u128 * 1_000_000_000 / rate as u128).unwrap_or(Ns::MAX));
    let mut earliest = 0;
    if j.rate[ddir] > 0 {
        earliest = due(f.rate_bytes[ddir], j.rate[ddir]);
    }
    if j.rate_iops[ddir] > 0 {
        earliest = earliest.max(due(f.rate_ios[ddir], j.rate_iops[ddir]));
    }
    if earliest > now {
        return Next::Sleep(earliest - now);
    }
    let fi = f.next_file;
    f.next_file = (fi + 1) % f.files.len();
    let mut bs = pick_bs(&j.bs[ddir], &mut f.rng);
    let offset = if j.rw.random() {
        let block = j.bs[READ].min().min(j.bs[WRITE].min()).max(1);
        let b = f.gens[fi].next(&mut f.rng);
        (b * block).min(j.file_size.saturating_sub(bs))
    } else {
        if f.seq[fi] + bs > j.file_size {
            f.seq[fi] = 0;
        }
        let o = f.seq[fi];
        f.seq[fi] = o + bs;
        o
    };
    bs = bs.min(j.size - f.issued).min(j.file_size - offset).max(1);
    f.issued += bs;
    f.rate_bytes[ddir] += bs;
    f.rate_ios[ddir] += 1;
    f.since_think += 1;
    if ddir == WRITE {
        f.since_sync += 1;
        f.unsynced = true;
        f.since_sfr += 1;
        let file = f.files[fi];
        let (first, end) = page_range(offset, bs);
        f.sfr_range = Some(match f.sfr_range {
            Some((same, a, b)) if same == file => (file, a.min(first), b.max(end)),
            _ => (file, first, end),
        });
    }
    Next::Issue(FioIo {
        start: now,
        submitted: now,
        ddir: ddir as u8,
        file: f.files[fi],
        offset,
        bs,
        reqs: 0,
        fua: false,
    })
}
