//! `/sys/block/<dev>/queue/iosched/` of bfq, as `bfq_attrs` names them.

use super::consts::{MSEC, USEC};
use crate::block::sched::mq_deadline::INT_MAX;
use crate::config::{Knob, KnobKind, KnobValue, QueueConfig};
use crate::Ns;

/// A time shown in ms, stored in ns.
const MS: KnobKind = KnobKind::Millis {
    max: INT_MAX,
    scale: 1_000_000,
};

/// Defaults (`bfq_init_queue`).
const FIFO_EXPIRE_SYNC: Ns = 125 * MSEC;
const FIFO_EXPIRE_ASYNC: Ns = 250 * MSEC;
const BACK_SEEK_MAX_KB: u64 = 16 * 1024;
const BACK_SEEK_PENALTY: u64 = 2;
const SLICE_IDLE: Ns = 8 * MSEC;
const TIMEOUT_SYNC: Ns = 125 * MSEC;

fn get(q: &QueueConfig, name: &str, default: u64) -> u64 {
    q.tunables.get(name).unwrap_or(default)
}

pub(super) static TUNABLES: [Knob<QueueConfig>; 10] = [
    Knob {
        key: "queue/iosched/fifo_expire_sync",
        kind: MS,
        doc: "ms before a sync request's FIFO deadline makes it next in its queue",
        get: |q| KnobValue::Uint(get(q, "fifo_expire_sync", FIFO_EXPIRE_SYNC)),
        set: |q, v| q.tunables.set("fifo_expire_sync", v.uint().max(MSEC)),
    },
    Knob {
        key: "queue/iosched/fifo_expire_async",
        kind: MS,
        doc: "ms before an async request's FIFO deadline makes it next in its queue",
        get: |q| KnobValue::Uint(get(q, "fifo_expire_async", FIFO_EXPIRE_ASYNC)),
        set: |q, v| q.tunables.set("fifo_expire_async", v.uint().max(MSEC)),
    },
    Knob {
        key: "queue/iosched/back_seek_max",
        kind: KnobKind::Count { min: 0, max: INT_MAX },
        doc: "KiB behind the head a queue's next request may lie",
        get: |q| KnobValue::Uint(get(q, "back_seek_max", BACK_SEEK_MAX_KB)),
        set: |q, v| q.tunables.set("back_seek_max", v.uint()),
    },
    Knob {
        key: "queue/iosched/back_seek_penalty",
        kind: KnobKind::Count { min: 1, max: INT_MAX },
        doc: "cost of a backward seek against a forward one",
        get: |q| KnobValue::Uint(get(q, "back_seek_penalty", BACK_SEEK_PENALTY)),
        set: |q, v| q.tunables.set("back_seek_penalty", v.uint()),
    },
    Knob {
        key: "queue/iosched/slice_idle",
        kind: MS,
        doc: "ms an emptied sync queue keeps the device for its process's next request; 0 disables idling",
        get: |q| KnobValue::Uint(get(q, "slice_idle", SLICE_IDLE)),
        set: |q, v| q.tunables.set("slice_idle", v.uint()),
    },
    Knob {
        key: "queue/iosched/slice_idle_us",
        kind: KnobKind::Count {
            min: 0,
            max: u32::MAX as u64,
        },
        doc: "slice_idle in µs (the same setting)",
        get: |q| KnobValue::Uint(get(q, "slice_idle", SLICE_IDLE) / USEC),
        set: |q, v| q.tunables.set("slice_idle", v.uint() * USEC),
    },
    Knob {
        key: "queue/iosched/max_budget",
        kind: KnobKind::Count { min: 0, max: INT_MAX },
        doc: "largest budget in sectors; 0 = autotuned to what the device transfers in timeout_sync",
        get: |q| KnobValue::Uint(get(q, "max_budget", 0)),
        set: |q, v| q.tunables.set("max_budget", v.uint()),
    },
    Knob {
        key: "queue/iosched/timeout_sync",
        kind: MS,
        doc: "ms a queue may take to use its budget (sync and async alike)",
        get: |q| KnobValue::Uint(get(q, "timeout_sync", TIMEOUT_SYNC)),
        set: |q, v| q.tunables.set("timeout_sync", v.uint().max(MSEC)),
    },
    Knob {
        key: "queue/iosched/strict_guarantees",
        kind: KnobKind::Bool,
        doc: "one request in the device at a time and always idle: exact service order at a throughput cost",
        get: |q| KnobValue::Bool(get(q, "strict_guarantees", 0) != 0),
        set: |q, v| {
            // bfq_strict_guarantees_store: turning it on raises slice_idle to at least 8 ms.
            if v.bool() && get(q, "strict_guarantees", 0) == 0 && get(q, "slice_idle", SLICE_IDLE) < 8 * MSEC {
                q.tunables.set("slice_idle", 8 * MSEC);
            }
            q.tunables.set("strict_guarantees", u64::from(v.bool()))
        },
    },
    Knob {
        key: "queue/iosched/low_latency",
        kind: KnobKind::Bool,
        doc: "weight-raise interactive and soft real-time processes",
        get: |q| KnobValue::Bool(get(q, "low_latency", 1) != 0),
        set: |q, v| q.tunables.set("low_latency", u64::from(v.bool())),
    },
];

/// The values one bfq instance runs with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BfqTunables {
    /// Indexed by sync: [async, sync].
    pub fifo_expire: [Ns; 2],
    pub back_max_sectors: u64,
    pub back_penalty: u64,
    pub slice_idle: Ns,
    /// 0: autotuned.
    pub user_max_budget: u64,
    pub timeout: Ns,
    pub strict_guarantees: bool,
    pub low_latency: bool,
}

impl BfqTunables {
    pub(crate) fn of(q: &QueueConfig) -> Self {
        let v = |i: usize| (TUNABLES[i].get)(q);
        BfqTunables {
            fifo_expire: [v(1).uint(), v(0).uint()],
            back_max_sectors: v(2).uint() * 2,
            back_penalty: v(3).uint(),
            slice_idle: v(4).uint(),
            user_max_budget: v(6).uint(),
            timeout: v(7).uint(),
            strict_guarantees: v(8).bool(),
            low_latency: v(9).bool(),
        }
    }
}

impl Default for BfqTunables {
    fn default() -> Self {
        BfqTunables {
            fifo_expire: [FIFO_EXPIRE_ASYNC, FIFO_EXPIRE_SYNC],
            back_max_sectors: BACK_SEEK_MAX_KB * 2,
            back_penalty: BACK_SEEK_PENALTY,
            slice_idle: SLICE_IDLE,
            user_max_budget: 0,
            timeout: TIMEOUT_SYNC,
            strict_guarantees: false,
            low_latency: true,
        }
    }
}
