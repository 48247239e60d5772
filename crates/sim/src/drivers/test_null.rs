//! A trivial device model registered in test builds only: the worked example of
//! `docs/extending.md` ("adding a device model"), kept compiling and exercised by the tests so
//! the guide cannot rot. Every request completes after a fixed latency.

use super::model::{DeviceModel, Naming, LATENCY, QUEUE_DEPTH};
use super::{BusyClock, DevRequest, Device};
use crate::config::{blk_mq_queue, Knob, QueueConfig};
use crate::engine::RngStream;
use crate::knob;
use crate::Ns;
use serde::Serialize;
use std::collections::VecDeque;

/// `model = "test-null"`: a device that takes `latency` for every request.
#[derive(Clone, Debug, Serialize)]
pub struct TestNullParams {
    pub latency: Ns,
    pub queue_depth: u32,
}

impl Default for TestNullParams {
    fn default() -> Self {
        TestNullParams {
            latency: 100_000,
            queue_depth: 4,
        }
    }
}

impl DeviceModel for TestNullParams {
    const KIND: &'static str = "testnull";
    const SUMMARY: &'static str = "test-only: every request takes the same time";
    const NAMING: Naming = Naming::Sd;

    fn knobs() -> &'static [Knob<Self>] {
        &KNOBS
    }

    fn default_size(&self) -> u64 {
        1 << 30
    }

    fn default_queue(&self) -> QueueConfig {
        blk_mq_queue(false, false, self.queue_depth)
    }

    fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    fn has_write_cache(&self) -> bool {
        false
    }

    fn build(&self, _size: u64, _rng: RngStream) -> Box<dyn Device> {
        Box::new(TestNull {
            p: self.clone(),
            inside: VecDeque::new(),
            busy: BusyClock::default(),
        })
    }
}

static KNOBS: [Knob<TestNullParams>; 2] = [
    knob!(TestNullParams, "latency", LATENCY, "time of every request", latency: u64),
    knob!(TestNullParams, "queue_depth", QUEUE_DEPTH, "requests at once", queue_depth: u32),
];

struct TestNull {
    p: TestNullParams,
    /// Requests inside, with their completion times (in dispatch order, so in time order).
    inside: VecDeque<(Ns, u32)>,
    busy: BusyClock,
}

impl Device for TestNull {
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }

    fn in_flight(&self) -> u32 {
        self.inside.len() as u32
    }

    fn dispatch(&mut self, now: Ns, rq: DevRequest) {
        self.busy.enter(now, self.inside.is_empty());
        self.inside.push_back((now + self.p.latency, rq.id));
    }

    fn next_event(&self) -> Option<Ns> {
        self.inside.front().map(|&(t, _)| t)
    }

    fn advance(&mut self, now: Ns, done: &mut Vec<u32>) {
        while let Some(&(t, id)) = self.inside.front() {
            if t > now {
                break;
            }
            self.inside.pop_front();
            done.push(id);
            self.busy.leave(t, self.inside.is_empty());
        }
    }

    fn busy_ns(&self, now: Ns) -> Ns {
        self.busy.busy_ns(now, self.inside.is_empty())
    }
}
