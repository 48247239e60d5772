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

/// The run's trace, held in memory up to [`TraceBuf::MAX_RECORDS`]; later records are counted,
/// not kept, so a long traced run cannot exhaust memory. The count is reported with the
/// results.
#[derive(Debug)]
pub struct TraceBuf {
    pub records: Vec<TraceRecord>,
    pub dropped: u64,
    cap: usize,
}

impl Default for TraceBuf {
    fn default() -> Self {
        TraceBuf::with_cap(Self::MAX_RECORDS)
    }
}

impl TraceBuf {
    /// 4 Mi records of 128 bytes: 512 MiB. The 60 s 1000-`dd` scenario records 0.6 M.
    pub const MAX_RECORDS: usize = 4 << 20;

    pub fn with_cap(cap: usize) -> TraceBuf {
        TraceBuf {
            records: Vec::new(),
            dropped: 0,
            cap,
        }
    }

    pub fn push(&mut self, r: TraceRecord) {
        if self.records.len() < self.cap {
            self.records.push(r);
        } else {
            self.dropped += 1;
        }
    }
}

#[cfg(test)]
mod buf_tests {
    use super::*;

    #[test]
    fn records_past_the_cap_are_counted_not_kept() {
        let mut b = TraceBuf::with_cap(3);
        for t in 0..5 {
            b.push(TraceRecord {
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
            });
        }
        assert_eq!((b.records.len(), b.dropped), (3, 2));
        assert_eq!(b.records.last().map(|r| r.t_ns), Some(2), "the first records are kept");
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
        comm: u32,
    },
    /// `block:block_rq_complete`
    BlockRqComplete {
        dev: DevT,
        rwbs: Rwbs,
        sector: u64,
        nr_sector: u32,
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
    pub write: bool,
    pub sync: bool,
    pub readahead: bool,
}

impl Rwbs {
    /// Render as the kernel does (`W`, `WS`, `R`, `RA`, ...).
    pub fn render(&self, out: &mut String) {
        out.push(if self.write { 'W' } else { 'R' });
        if self.readahead {
            out.push('A');
        }
        if self.sync {
            out.push('S');
        }
    }
}
