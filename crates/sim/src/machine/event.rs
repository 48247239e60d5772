//! The events of a run, each a kernel timer, a wake-up or a device's completion; the
//! machine dispatches them (`machine/run.rs`).

/// Everything that can happen.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    /// A task starts or continues (end of a sleep, a wakeup).
    TaskRun(u32),
    /// A task's timed wait ends, unless it was woken earlier (`gen` differs).
    TaskTimeout(u32, u32),
    /// The burst running on a CPU finished (its number on the CPU: a burst cut short leaves
    /// a stale one behind).
    CpuDone(u16, u32),
    /// A device has something due.
    Device(u16),
    /// blk-wbt window timer of a device.
    WbtTimer(u16),
    /// The elevator's own timer (CFQ's idle slice) on a device.
    ElvTimer(u16),
    /// blk-throttle `pending_timer` of a device.
    ThrotlTimer(u16),
    /// blk-mq's delayed run of a device's hardware queue (`blk_mq_delay_run_hw_queues`).
    DelayedRun(u16),
    /// The flusher of a wb is woken.
    Flusher(u16),
    /// The inode a wb's flusher sleeps on (`I_SYNC`) was let go.
    FlusherInodeFree(u16),
    /// The delayed bandwidth update of a wb (`bw_dwork`).
    BwDwork(u16),
    /// The flex-proportions aging timer (`writeout_period`).
    FpropPeriod,
    /// Per-second vmstat sample.
    Sample,
    /// Per-200 ms throttling-state sample.
    ThrottleSample,
    /// Half-way through a task's life: snapshot bytes for steady-state throughput.
    TaskMid(u32),
    /// The commit timer of a device's journal.
    JournalTimer(u16),
    /// blk-iolatency's 1 s timer of a device.
    IolatTimer(u16),
    /// A device's journal thread runs after a wake-up.
    JournalWake(u16),
    /// The journal thread built the commit's log write (`fs::jbd2::JBD2_LOG_PREP_NS`).
    JournalLogPrepared(u16),
    /// blk-flush's kworker issues device `dev`'s pending flush.
    FlushKick(u16),
    /// The journal's pre-flush completed a step ago: its commit record goes
    /// (`block::queue::BLK_FLUSH_STEP_NS`).
    JournalFlushSeq(u16),
    /// Device `dev`'s end_io work converts extents and ends its pages' writeback.
    EndIoWork(u16),
    /// Free page reporting's pass (`page_reporting_process`): long-free frames go back to
    /// the host.
    PageReport,
}
