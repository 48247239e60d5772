//! The block layer's request-path tracepoints as the queue fires them: `block_bio_queue`,
//! `block_split`, `block_bio_backmerge`/`frontmerge`, `block_getrq` and `block_rq_insert`.
//! The queue has no access to the run's trace, so it keeps what fired here and the machine
//! moves it into the trace (with the submitter's name) before simulated time moves on.
//! `block_rq_issue` and `block_rq_complete` are fired by the machine itself.

use super::request::{Request, Submitter};
use crate::config::IoPrio;
use crate::drivers::Op;
use crate::Ns;

/// Which tracepoint fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlkWhat {
    /// `block_bio_queue`: a bio entered `submit_bio_noacct_nocheck` (after blk-throttle).
    Queue,
    /// `block_split`: the bio that began at `from` was split at this request's sector.
    Split { from: u64 },
    /// `block_bio_backmerge`: the bio was appended to a queued request.
    BackMerge,
    /// `block_bio_frontmerge`: the bio was prepended to a queued request.
    FrontMerge,
    /// `block_getrq`: the bio got a request (a tag) after wbt and the tag wait.
    GetRq,
    /// `block_rq_insert`: the request went into the elevator.
    Insert,
}

/// One fired tracepoint, with what it prints, copied when it fired (a merged bio's request is
/// released at once).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlkEvent {
    pub t_ns: Ns,
    pub what: BlkWhat,
    pub submitter: Submitter,
    pub op: Op,
    pub sync: bool,
    pub readahead: bool,
    pub sector: u64,
    pub nr_sectors: u64,
    pub prio: IoPrio,
    /// Released by blk-throttle: its dispatch work (a kworker) submitted it.
    pub throttled: bool,
}

impl BlkEvent {
    /// Event `what` of request `r` at `t_ns`, over `nr_sectors` from its sector.
    pub(crate) fn of(t_ns: Ns, what: BlkWhat, r: &Request, nr_sectors: u64, prio: IoPrio) -> BlkEvent {
        BlkEvent {
            t_ns,
            what,
            submitter: r.submitter,
            op: r.op,
            sync: r.sync,
            readahead: r.readahead,
            sector: r.sector,
            nr_sectors,
            prio,
            throttled: false,
        }
    }
}
