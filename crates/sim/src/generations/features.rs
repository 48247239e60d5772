//! What each release had: the block-layer and cgroup features a scenario can ask for, with the
//! release that brought them. A generation covers many releases (the 6.x one runs 4.0 to 6.x),
//! so the generation alone would hand `kernel = "4.9"` an elevator and a throttle it never
//! had; the scenario builder refuses a key its release lacks, and leaves a feature a release
//! lacks out of its defaults.
//!
//! The releases are the mainline merges (each feature's commit in `git log --follow` of its
//! file: `block/mq-deadline.c`, `block/kyber-iosched.c`, `block/bfq-iosched.c`,
//! `block/blk-wbt.c`, `block/blk-iolatency.c`, `block/blk-iocost.c`, the v2 `io.max` of
//! `block/blk-throttle.c`, `CONFIG_CGROUP_WRITEBACK`).

use super::{parse_version, Version};
use crate::config::SchedulerKind;

/// A feature and the first release that had it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feature {
    /// What it is, as the scenario names it.
    pub what: &'static str,
    pub since: Version,
}

pub const MQ_DEADLINE: Feature = Feature {
    what: "mq-deadline elevator",
    since: Version(4, 11, 0),
};
pub const KYBER: Feature = Feature {
    what: "kyber elevator",
    since: Version(4, 12, 0),
};
pub const BFQ: Feature = Feature {
    what: "bfq elevator",
    since: Version(4, 12, 0),
};
pub const WBT: Feature = Feature {
    what: "blk-wbt (`queue/wbt_lat_usec`)",
    since: Version(4, 10, 0),
};
pub const CGROUP_WRITEBACK: Feature = Feature {
    what: "cgroup writeback (a v2 group's own wb)",
    since: Version(4, 2, 0),
};
pub const IO_MAX: Feature = Feature {
    what: "cgroup v2 `io.max`",
    since: Version(4, 5, 0),
};
pub const IO_LATENCY: Feature = Feature {
    what: "cgroup v2 `io.latency` (blk-iolatency)",
    since: Version(4, 19, 0),
};
pub const IO_COST: Feature = Feature {
    what: "cgroup v2 `io.weight` and `io.cost.*` (blk-iocost)",
    since: Version(5, 4, 0),
};

/// Every feature, oldest first: what `wblab kernels` and the docs list.
pub const FEATURES: &[Feature] = &[CGROUP_WRITEBACK, IO_MAX, WBT, MQ_DEADLINE, KYBER, BFQ, IO_LATENCY, IO_COST];

impl Feature {
    /// The what-if note for `subject` (`sda queue/scheduler`, `cgroup io.latency`) set on
    /// release `kernel`, which lacked this feature.
    pub fn what_if(&self, subject: &str, kernel: &str) -> String {
        format!("{subject}: kernel {kernel} had no {} (merged in {})", self.what, self.since)
    }
}

/// The feature an elevator is, for those a release may lack (the blk-mq elevators; the older
/// ones are named by their era, `cfq-2.6.22`, and chosen as such).
pub fn elevator_feature(kind: SchedulerKind) -> Option<Feature> {
    match kind {
        SchedulerKind::MQ_DEADLINE => Some(MQ_DEADLINE),
        SchedulerKind::KYBER => Some(KYBER),
        SchedulerKind::BFQ => Some(BFQ),
        _ => None,
    }
}

/// Whether release `kernel` lacks `f`. A generation's name ("6.x") has everything its newest
/// release has; a string that is not a version lacks nothing (it is refused elsewhere).
pub fn lacks(kernel: &str, f: &Feature) -> bool {
    match parse_version(kernel) {
        Ok(Version(a, b, _)) if b == u32::MAX => Version(a, u32::MAX, u32::MAX) < f.since,
        Ok(v) => v < f.since,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_lack_what_came_after_them() {
        assert!(lacks("4.9", &MQ_DEADLINE) && lacks("4.9", &WBT) && !lacks("4.9", &CGROUP_WRITEBACK));
        assert!(lacks("3.10", &WBT) && lacks("2.6.32", &MQ_DEADLINE));
        assert!(!lacks("4.10", &WBT) && lacks("4.10.17", &MQ_DEADLINE) && !lacks("4.11", &MQ_DEADLINE));
        assert!(!lacks("6.x", &IO_COST) && !lacks("6.18", &BFQ) && lacks("5.3", &IO_COST));
        assert!(
            lacks("3.x", &WBT) && !lacks("4.x", &BFQ),
            "a series has what its newest release has"
        );
        assert!(FEATURES.windows(2).all(|w| w[0].since <= w[1].since), "oldest first");
    }
}
