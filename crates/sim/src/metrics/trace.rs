//! Trace records: the simulated counterparts of the kernel's tracepoints. Field values are
//! stored in the units the 6.18 `print fmt` strings print (pages, KB/s, ms), so the report
//! crate writes them out verbatim in ftrace text layout.

use crate::Ns;

#[derive(Clone, Debug)]
pub struct TraceRecord {
    pub t_ns: Ns,
    /// Index into `RunResult::comms`: who was running when the event fired.
    pub who: u32,
    pub cpu: u16,
    pub ev: TraceEvent,
}

/// Where a run's trace records go as they are made, one full chunk at a time: a results writer
/// can format them on another thread while the simulation goes on, so a long run's trace is
/// neither held in memory nor written after the run. Chunks arrive in time order.
pub trait TraceSink: Send {
    /// Take a full chunk; return an emptied one to fill next (or `Vec::new()`), so that a
    /// long run recycles a few buffers instead of faulting in fresh memory for every chunk.
    fn chunk(&mut self, records: Vec<TraceRecord>) -> Vec<TraceRecord>;
}

/// Records per chunk: 2 MiB of records, large enough that handing one over costs nothing per
/// record, small enough that a sink's queue of a few stays a few MiB.
pub const TRACE_CHUNK: usize = 16 * 1024;

/// A trace kept in memory, in chunks (no reallocation of one huge vector as it grows).
#[derive(Clone, Debug, Default)]
pub struct TraceLog {
    chunks: Vec<Vec<TraceRecord>>,
    len: usize,
}

impl TraceLog {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = &TraceRecord> + '_ {
        self.chunks.iter().flatten()
    }

    pub fn last(&self) -> Option<&TraceRecord> {
        self.chunks.last().and_then(|c| c.last())
    }

    fn push_chunk(&mut self, c: Vec<TraceRecord>) {
        if !c.is_empty() {
            self.len += c.len();
            self.chunks.push(c);
        }
    }
}

impl FromIterator<TraceRecord> for TraceLog {
    fn from_iter<I: IntoIterator<Item = TraceRecord>>(it: I) -> Self {
        let mut log = TraceLog::default();
        let mut chunk = Vec::new();
        for r in it {
            chunk.push(r);
            if chunk.len() == TRACE_CHUNK {
                log.push_chunk(std::mem::take(&mut chunk));
            }
        }
        log.push_chunk(chunk);
        log
    }
}

impl<'a> IntoIterator for &'a TraceLog {
    type Item = &'a TraceRecord;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<TraceRecord>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter().flatten()
    }
}

/// The run's trace as it is recorded: handed to a [`TraceSink`] chunk by chunk when there is
/// one (every record is kept); otherwise held in memory up to [`TraceBuf::MAX_RECORDS`], later
/// records counted, not kept, so a long traced run cannot exhaust memory. The count is
/// reported with the results.
pub struct TraceBuf {
    chunk: Vec<TraceRecord>,
    log: TraceLog,
    sink: Option<Box<dyn TraceSink>>,
    /// Records handed to the sink.
    pub streamed: u64,
    pub dropped: u64,
    cap: usize,
}

impl Default for TraceBuf {
    fn default() -> Self {
        TraceBuf::with_cap(Self::MAX_RECORDS)
    }
}

impl std::fmt::Debug for TraceBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceBuf")
            .field("kept", &(self.log.len() + self.chunk.len()))
            .field("streamed", &self.streamed)
            .field("dropped", &self.dropped)
            .finish()
    }
}

impl TraceBuf {
    /// 4 Mi records of 128 bytes: 512 MiB. The 60 s 1000-`dd` scenario records 0.6 M.
    pub const MAX_RECORDS: usize = 4 << 20;

    pub fn with_cap(cap: usize) -> TraceBuf {
        TraceBuf {
            chunk: Vec::new(),
            log: TraceLog::default(),
            sink: None,
            streamed: 0,
            dropped: 0,
            cap,
        }
    }

    /// The events recorded and still held here (not handed to a sink), in order.
    pub fn events(&self) -> impl Iterator<Item = &TraceEvent> + '_ {
        self.log.iter().chain(self.chunk.iter()).map(|r| &r.ev)
    }

    /// Send every record to `sink` from now on, without a cap.
    pub fn set_sink(&mut self, sink: Box<dyn TraceSink>) {
        self.sink = Some(sink);
    }

    #[inline]
    pub fn push(&mut self, r: TraceRecord) {
        if self.sink.is_none() && self.log.len() + self.chunk.len() >= self.cap {
            self.dropped += 1;
            return;
        }
        if self.chunk.capacity() == 0 {
            self.chunk.reserve_exact(TRACE_CHUNK);
        }
        self.chunk.push(r);
        if self.chunk.len() == TRACE_CHUNK {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        let c = std::mem::take(&mut self.chunk);
        match &mut self.sink {
            Some(s) => {
                self.streamed += c.len() as u64;
                let mut next = s.chunk(c);
                next.clear();
                self.chunk = next;
            }
            None => self.log.push_chunk(c),
        }
    }

    /// Hand over the last partial chunk and return what was kept in memory (nothing when a sink
    /// took the records). The sink is dropped, which tells it the trace is complete.
    pub fn finish(&mut self) -> TraceLog {
        self.hand_over();
        self.sink = None;
        std::mem::take(&mut self.log)
    }
}

#[cfg(test)]
mod buf_tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn rec(t: Ns) -> TraceRecord {
        TraceRecord {
            t_ns: t,
            who: 0,
            cpu: 0,
            ev: TraceEvent::WbtStep {
                dev: DevT { major: 8, minor: 0 },
                msg: "step down",
                step: 1,
                window_us: 100_000,
                background: 1,
                normal: 2,
                max: 4,
            },
        }
    }

    #[test]
    fn records_past_the_cap_are_counted_not_kept() {
        let mut b = TraceBuf::with_cap(3);
        for t in 0..5 {
            b.push(rec(t));
        }
        let log = b.finish();
        assert_eq!((log.len(), b.dropped), (3, 2));
        assert_eq!(log.last().map(|r| r.t_ns), Some(2), "the first records are kept");
    }

    struct Collect(Arc<Mutex<Vec<Ns>>>);
    impl TraceSink for Collect {
        fn chunk(&mut self, records: Vec<TraceRecord>) -> Vec<TraceRecord> {
            self.0.lock().unwrap().extend(records.iter().map(|r| r.t_ns));
            records
        }
    }

    #[test]
    fn a_sink_gets_every_record_in_order_past_the_cap() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let mut b = TraceBuf::with_cap(3);
        b.set_sink(Box::new(Collect(got.clone())));
        let n = 2 * TRACE_CHUNK as u64 + 7;
        for t in 0..n {
            b.push(rec(t));
        }
        assert!(b.finish().is_empty());
        assert_eq!((b.streamed, b.dropped), (n, 0));
        assert_eq!(*got.lock().unwrap(), (0..n).collect::<Vec<_>>());
    }
}

/// Device number as the block tracepoints print it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevT {
    pub major: u32,
    pub minor: u32,
}

#[derive(Clone, Debug)]
pub enum TraceEvent {
    /// `writeback:balance_dirty_pages`
    BalanceDirtyPages {
        bdi: DevT,
        limit: u64,
        setpoint: u64,
        dirty: u64,
        wb_setpoint: u64,
        wb_dirty: u64,
        dirty_ratelimit: u64,
        task_ratelimit: u64,
        dirtied: u32,
        dirtied_pause: u32,
        /// The wb's memory cgroup (1: the root).
        cgroup_ino: u32,
        paused: u64,
        pause: i64,
        period: u64,
        think: i64,
    },
    /// `writeback:bdi_dirty_ratelimit`
    BdiDirtyRatelimit {
        bdi: DevT,
        write_bw: u64,
        avg_write_bw: u64,
        dirty_rate: u64,
        dirty_ratelimit: u64,
        task_ratelimit: u64,
        balanced_dirty_ratelimit: u64,
        cgroup_ino: u32,
    },
    /// `writeback:global_dirty_state`
    GlobalDirtyState {
        nr_dirty: u64,
        nr_writeback: u64,
        background_thresh: u64,
        dirty_thresh: u64,
        dirty_limit: u64,
        nr_dirtied: u64,
        nr_written: u64,
    },
    /// `writeback:writeback_written`
    WritebackWritten {
        bdi: DevT,
        nr_pages: i64,
        sync_mode: u8,
        for_kupdate: bool,
        range_cyclic: bool,
        for_background: bool,
        reason: WbReason,
    },
    /// `block:block_rq_issue`
    BlockRqIssue {
        dev: DevT,
        rwbs: Rwbs,
        bytes: u32,
        sector: u64,
        nr_sector: u32,
        /// The request's I/O priority; `None` for a flush (`none,0,0`).
        ioprio: Option<crate::config::IoPrio>,
        comm: u32,
    },
    /// `block:block_bio_queue`, `block_getrq`, `block_bio_backmerge`, `block_bio_frontmerge`:
    /// the bio tracepoints, which print the bio's range and who submitted it.
    BlockBio {
        what: BioEvent,
        dev: DevT,
        rwbs: Rwbs,
        sector: u64,
        nr_sector: u32,
        comm: u32,
    },
    /// `block:block_split`: the bio that began at `sector` continues at `new_sector`.
    BlockSplit {
        dev: DevT,
        rwbs: Rwbs,
        sector: u64,
        new_sector: u64,
        comm: u32,
    },
    /// `block:block_rq_insert`: a request went into the I/O scheduler.
    BlockRqInsert {
        dev: DevT,
        rwbs: Rwbs,
        bytes: u32,
        sector: u64,
        nr_sector: u32,
        ioprio: Option<crate::config::IoPrio>,
        comm: u32,
    },
    /// `block:block_rq_complete`
    BlockRqComplete {
        dev: DevT,
        rwbs: Rwbs,
        sector: u64,
        nr_sector: u32,
        ioprio: Option<crate::config::IoPrio>,
        error: i32,
    },
    /// `wbt:wbt_step`
    WbtStep {
        dev: DevT,
        msg: &'static str,
        step: i32,
        window_us: u64,
        background: u32,
        normal: u32,
        max: u32,
    },
    /// `jbd2:jbd2_start_commit`, `jbd2_commit_locking`, `jbd2_commit_flushing`,
    /// `jbd2_commit_logging` (`what` is the event's name without `jbd2_`).
    Jbd2Commit {
        dev: DevT,
        tid: u32,
        sync: bool,
        what: &'static str,
    },
    /// `jbd2:jbd2_end_commit` (`head`: `j_tail_sequence`).
    Jbd2EndCommit { dev: DevT, tid: u32, sync: bool, head: u32 },
    /// `kyber:kyber_latency`: a domain's latency percentile, in quarters of its target.
    KyberLatency {
        dev: DevT,
        domain: &'static str,
        /// `total` or `I/O`.
        kind: &'static str,
        percentile: u8,
        numerator: u8,
        denominator: u8,
        samples: u32,
    },
    /// `kyber:kyber_adjust`: a domain's token pool resized.
    KyberAdjust { dev: DevT, domain: &'static str, depth: u32 },
    /// `kyber:kyber_throttled`: a domain's requests wait for a token.
    KyberThrottled { dev: DevT, domain: &'static str },
    /// `jbd2:jbd2_run_stats`: the phases of a commit in ms (quantised to jiffies).
    Jbd2RunStats {
        dev: DevT,
        tid: u32,
        wait: u32,
        request_delay: u32,
        running: u32,
        locked: u32,
        flushing: u32,
        logging: u32,
        handle_count: u32,
        blocks: u32,
        blocks_logged: u32,
    },
}

/// Which bio tracepoint a [`TraceEvent::BlockBio`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BioEvent {
    Queue,
    GetRq,
    BackMerge,
    FrontMerge,
}

impl BioEvent {
    /// The tracepoint's name.
    pub fn name(&self) -> &'static str {
        match self {
            BioEvent::Queue => "block_bio_queue",
            BioEvent::GetRq => "block_getrq",
            BioEvent::BackMerge => "block_bio_backmerge",
            BioEvent::FrontMerge => "block_bio_frontmerge",
        }
    }
}

/// `enum wb_reason`, printed symbolically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WbReason {
    Background,
    Vmscan,
    Sync,
    Periodic,
}

impl WbReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            WbReason::Background => "background",
            WbReason::Vmscan => "vmscan",
            WbReason::Sync => "sync",
            WbReason::Periodic => "periodic",
        }
    }
}

/// The `rwbs` flags of a request: operation letter and the S/A flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rwbs {
    /// A cache flush (`REQ_OP_FLUSH | REQ_PREFLUSH`): printed `FF`.
    pub flush: bool,
    pub write: bool,
    pub sync: bool,
    pub readahead: bool,
}

impl Rwbs {
    /// The flags of a read or write request (not a flush).
    pub fn data(write: bool, sync: bool, readahead: bool) -> Rwbs {
        Rwbs {
            flush: false,
            write,
            sync,
            readahead,
        }
    }

    /// Render as the kernel does (`W`, `WS`, `R`, `RA`, ...).
    pub fn render(&self, out: &mut String) {
        if self.flush {
            out.push_str("FF");
        } else {
            out.push(if self.write { 'W' } else { 'R' });
        }
        if self.readahead {
            out.push('A');
        }
        if self.sync {
            out.push('S');
        }
    }
}
