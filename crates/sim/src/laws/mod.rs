//! The laws: what must hold in every simulation, whatever the scenario, checked while it runs.
//!
//! A simulator of writeback is only worth something if its page cache keeps its promises, so
//! the everyday paths are held by laws rather than by special cases:
//!
//! - **conservation** ([`conservation`]): per file, per device and machine-wide, pages dirtied
//!   = pages written + dirty + under writeback; a device's written bytes are its written pages
//!   plus O_DIRECT bytes; counters agree and stay in range; dirty pages stay within the dirty
//!   limit plus the overshoot the throttling allows.
//! - **liveness** ([`liveness`]): every page under writeback belongs to a request that is
//!   somewhere that moves it on (a submitter that will submit it, blk-throttle, wbt, a tag
//!   wait, the elevator, the device); a device with requests inside has a completion coming;
//!   no task sleeps with nothing that can wake it; a page waiter's page is still busy.
//! - **expiry** ([`expiry`]): with periodic writeback on, no inode stays dirty past
//!   `dirty_expire` + two writeback intervals (+ 1 s) while its device and flushers are idle.
//! - **durability** ([`durability`]): fsync, fdatasync, `conv=fsync` and sync return only after
//!   every page dirty or under writeback at the call has completed writeback.
//! - **progress** (here): simulated time advances; an event loop spinning at one instant stops
//!   the run with the looping events named.
//!
//! The laws run in every test and debug build, and in release with `wblab run --check`. A
//! broken law stops the run with a [`LawViolation`] naming the law, the time, who (task, inode,
//! device) and the counters. Periodic checks cost O(tasks + inodes + requests) every
//! [`CHECK_INTERVAL`] of simulated time, stretched by one interval per [`CHECK_STATE_UNIT`]
//! request slots so that checking a large state (an ext3 commit's ordered data can build
//! hundreds of thousands of requests at once) does not dominate the run; per-event checks
//! are O(1).

mod check;
pub(crate) mod conservation;
pub(crate) mod durability;
pub(crate) mod expiry;
pub(crate) mod liveness;

use crate::machine::event::Event;
use crate::Ns;
use std::fmt;

/// Simulated time between two full checks.
pub(crate) const CHECK_INTERVAL: Ns = 100_000_000;

/// Request slots (all devices) that stretch the time between full checks by one more
/// [`CHECK_INTERVAL`].
pub(crate) const CHECK_STATE_UNIT: usize = 16_384;

/// Which law.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Law {
    Conservation,
    Liveness,
    Expiry,
    Durability,
    Progress,
}

impl Law {
    pub fn name(self) -> &'static str {
        match self {
            Law::Conservation => "conservation",
            Law::Liveness => "liveness",
            Law::Expiry => "expiry",
            Law::Durability => "durability",
            Law::Progress => "progress",
        }
    }
}

/// A broken law: what, when, who, and the numbers that show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LawViolation {
    pub law: Law,
    /// Simulated time, ns.
    pub t_ns: Ns,
    /// Who broke it: "task dd#3", "inode 7 (task dd#3's file) on sda", "device sda".
    pub subject: String,
    /// What is wrong, with the counters.
    pub detail: String,
}

impl fmt::Display for LawViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "law `{}` broken at {}.{:09} s: {}: {}",
            self.law.name(),
            self.t_ns / 1_000_000_000,
            self.t_ns % 1_000_000_000,
            self.subject,
            self.detail
        )
    }
}

impl std::error::Error for LawViolation {}

/// Events at one instant before the progress law calls it a loop: far above what any real
/// burst produces (every task and device waking at once), far below what a spin reaches.
fn spin_limit(entities: usize) -> u64 {
    2_000_000 + 200 * entities as u64
}

/// Number of [`Event`] kinds (for the progress law's census).
const EVENT_KINDS: usize = 23;

fn event_kind(ev: &Event) -> (usize, &'static str) {
    match ev {
        Event::TaskRun(_) => (0, "TaskRun"),
        Event::TaskTimeout(..) => (1, "TaskTimeout"),
        Event::CpuDone(..) => (2, "CpuDone"),
        Event::Device(_) => (3, "Device"),
        Event::WbtTimer(_) => (4, "WbtTimer"),
        Event::ElvTimer(_) => (5, "ElvTimer"),
        Event::ThrotlTimer(_) => (6, "ThrotlTimer"),
        Event::Flusher(_) => (7, "Flusher"),
        Event::BwDwork(_) => (8, "BwDwork"),
        Event::FpropPeriod => (9, "FpropPeriod"),
        Event::Sample => (10, "Sample"),
        Event::ThrottleSample => (11, "ThrottleSample"),
        Event::TaskMid(_) => (12, "TaskMid"),
        Event::JournalTimer(_) => (13, "JournalTimer"),
        Event::IolatTimer(_) => (14, "IolatTimer"),
        Event::JournalWake(_) => (15, "JournalWake"),
        Event::PageReport => (16, "PageReport"),
        Event::JournalLogPrepared(_) => (17, "JournalLogPrepared"),
        Event::FlushKick(_) => (18, "FlushKick"),
        Event::JournalFlushSeq(_) => (19, "JournalFlushSeq"),
        Event::EndIoWork(_) => (20, "EndIoWork"),
        Event::FlusherInodeFree(_) => (21, "FlusherInodeFree"),
        Event::DelayedRun(_) => (22, "DelayedRun"),
    }
}

/// The laws' state in a running machine.
pub(crate) struct Laws {
    /// Check the laws in this run.
    pub on: bool,
    /// The first law broken; the run stops there.
    pub broken: Option<LawViolation>,
    next_check: Ns,
    /// The instant of the current streak of events and how many ran at it, by kind.
    streak_at: Ns,
    streak: u64,
    census: [u64; EVENT_KINDS],
    census_names: [&'static str; EVENT_KINDS],
    pub(crate) durability: durability::Obligations,
    pub(crate) expiry: expiry::ExpiryMarks,
}

impl Laws {
    pub(crate) fn new(on: bool, ntasks: usize) -> Self {
        Laws {
            on,
            broken: None,
            next_check: CHECK_INTERVAL,
            streak_at: 0,
            streak: 0,
            census: [0; EVENT_KINDS],
            census_names: [""; EVENT_KINDS],
            durability: durability::Obligations::new(ntasks),
            expiry: expiry::ExpiryMarks::default(),
        }
    }

    /// Record the first violation (later ones are consequences).
    pub(crate) fn break_law(&mut self, v: LawViolation) {
        if self.broken.is_none() {
            self.broken = Some(v);
        }
    }
}

#[cfg(test)]
mod tests;
