//! What the emulated device did, and how closely it kept the model's times.

use serde::Serialize;
use wblab_sim::drivers::Op;
use wblab_sim::Ns;

/// One answered request, on the device clock (ns since the device started).
#[derive(Clone, Copy, Debug)]
pub struct Record {
    pub op: Op,
    pub offset: u64,
    pub bytes: u64,
    /// When the server's FUSE thread took it.
    pub arrived: Ns,
    /// When it joined the model's queue (as of the kernel's sending it).
    pub queued: Ns,
    /// When the model took it.
    pub dispatched: Ns,
    /// When the model completed it.
    pub completed: Ns,
    /// When the model's thread handed the answer on.
    pub handed: Ns,
    /// When the answer left.
    pub answered: Ns,
    /// How much later than its due time the answer left (data I/O on the image, or the
    /// server thread not getting a CPU in time).
    pub late: Ns,
    /// Whether its data was still moving to or from the backing file at its due time.
    pub held_by_data: bool,
}

impl Record {
    pub const CSV_HEADER: &'static str = "op,offset,bytes,arrived_ns,queued_ns,dispatched_ns,completed_ns,handed_ns,answered_ns,late_ns";

    pub fn csv(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{}",
            op_name(self.op),
            self.offset,
            self.bytes,
            self.arrived,
            self.queued,
            self.dispatched,
            self.completed,
            self.handed,
            self.answered,
            self.late
        )
    }
}

pub fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Flush => "flush",
    }
}

/// Totals of one kind of request.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct OpStats {
    pub requests: u64,
    pub bytes: u64,
    /// The largest request, bytes.
    pub max_bytes: u64,
    /// Sum of the model's times from queueing to completion, ns.
    pub model_ns: u64,
    /// Answers that left more than [`LATE_NS`] after their due time, and by how much in all.
    pub late: u64,
    pub late_ns: u64,
    pub max_late_ns: u64,
    /// Of the late answers, those whose data was still moving at their due time (the
    /// backing file slower than the model), not the server late to wake.
    pub late_by_data: u64,
}

/// An answer this much after its due time counts as late.
pub const LATE_NS: Ns = 100_000;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    pub read: OpStats,
    pub write: OpStats,
    pub flush: OpStats,
}

impl Stats {
    pub fn add(&mut self, r: &Record) {
        let s = match r.op {
            Op::Read => &mut self.read,
            Op::Write => &mut self.write,
            Op::Flush => &mut self.flush,
        };
        s.requests += 1;
        s.bytes += r.bytes;
        s.max_bytes = s.max_bytes.max(r.bytes);
        s.model_ns += r.completed.saturating_sub(r.queued);
        if r.late > LATE_NS {
            s.late += 1;
            s.late_ns += r.late;
            s.late_by_data += u64::from(r.held_by_data);
        }
        s.max_late_ns = s.max_late_ns.max(r.late);
    }

    pub fn requests(&self) -> u64 {
        self.read.requests + self.write.requests + self.flush.requests
    }

    /// Answers of every kind that left late.
    pub fn late(&self) -> u64 {
        self.read.late + self.write.late + self.flush.late
    }
}
