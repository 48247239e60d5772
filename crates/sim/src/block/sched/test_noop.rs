//! A trivial elevator registered in test builds only: the worked example of
//! `docs/extending.md` ("adding an elevator"), kept compiling and exercised by the tests so the
//! guide cannot rot. It dispatches in arrival order and never merges.

use super::{no_check, Elevator, ElevatorInfo, ElvRq, Merge};
use crate::config::{Knob, KnobKind, SchedulerKind};
use crate::drivers::Op;
use crate::Ns;
use std::collections::VecDeque;

/// `noop-test` in the list of elevators.
pub static INFO: ElevatorInfo = ElevatorInfo {
    kind: SchedulerKind("noop-test"),
    aliases: &[],
    summary: "test-only: arrival order, no merges",
    kernels: "none (registered in test builds)",
    tunables: &[Knob {
        key: "queue/iosched/noop_test_depth",
        kind: KnobKind::Count { min: 0, max: 1024 },
        doc: "test-only: a tunable kept by name, to show how",
        get: |q| crate::config::KnobValue::Uint(q.tunables.get("noop_test_depth").unwrap_or(0)),
        set: |q, v| q.tunables.set("noop_test_depth", v.uint()),
    }],
    defaults: |q| {
        q.tunables.clear();
        q.tunables.set("noop_test_depth", 0);
    },
    check: no_check,
    build: |_| Box::new(Noop::default()),
};

#[derive(Default)]
struct Noop {
    fifo: VecDeque<ElvRq>,
}

impl Elevator for Noop {
    fn name(&self) -> &'static str {
        "noop-test"
    }

    fn try_merge(&mut self, _op: Op, _sector: u64, _nr: u64, _max: u64) -> Option<(u32, Merge)> {
        None
    }

    fn insert(&mut self, _now: Ns, rq: ElvRq) {
        self.fifo.push_back(rq);
    }

    fn dispatch(&mut self, _now: Ns) -> Option<ElvRq> {
        self.fifo.pop_front()
    }

    fn queued(&self) -> usize {
        self.fifo.len()
    }
}
