//! The `queue/*` keys ([`QUEUE_KNOBS`]): `/sys/block/<dev>/queue/` as `block/blk-sysfs.c`
//! accepts it, each file declared once — how it is written, the reference's wording, what
//! `wblab measure` writes to it, the fuzzer's range — for the scenario parser's list of keys,
//! the fuzzer, the reference table and the probe. The parser checks each value against the
//! device it belongs to (`nr_requests` against its tags, `max_sectors_kb` against its driver's
//! limit) in `resolve/queue.rs`; the elevators' `queue/iosched/*` tunables are in their own
//! registry entries.

use super::{KnobKind, QueueConfig, SchedulerKind};

/// One file of a request queue.
pub struct QueueKnob {
    /// `queue/nr_requests`.
    pub key: &'static str,
    /// How it is written; the range is the widest any device accepts, cut by the device.
    pub kind: KnobKind,
    /// The reference's columns: unit, how the kernel sets it, what is accepted.
    pub unit: &'static str,
    pub default_text: &'static str,
    pub accepted: &'static str,
    /// What `wblab measure` writes for `q`, as sysfs takes it; `None` leaves it alone.
    pub written: fn(&QueueConfig) -> Option<String>,
    /// What the fuzzer draws from (beyond the accepted range on purpose, for the errors).
    pub typical: (u64, u64),
}

impl QueueKnob {
    /// The file under `/sys/block/<dev>/queue/`.
    pub fn file(&self) -> &'static str {
        self.key.trim_start_matches("queue/")
    }
}

const fn count(max: u64) -> KnobKind {
    KnobKind::Count { min: 0, max }
}

/// In the order `wblab measure` writes them: the scheduler first (switching it resets
/// `nr_requests` and brings its own `iosched/` files), `wbt_lat_usec` last.
pub static QUEUE_KNOBS: &[QueueKnob] = &[
    QueueKnob {
        key: "queue/scheduler",
        kind: KnobKind::Word {
            words: &[],
            what: "scheduler",
        },
        unit: "string",
        default_text: "`mq-deadline` on rotational single-queue disks, `none` on SSDs, loop, md and NFS; 2.5 kernels `deadline-2002`, 2.6.18–2.6.31 their CFQ",
        accepted: "a modelled elevator or alias (below), or the sysfs display form `\"[mq-deadline] none\"`; `anticipatory` and the CFQ of 2.6.32+ are named as not modelled; `cfq` means the kernel's own CFQ (2.6.18–2.6.31 only). md and NFS take only `none`",
        written: |q| Some(q.scheduler.name().to_string()),
        typical: (0, 0),
    },
    QueueKnob {
        key: "queue/nr_requests",
        kind: count(2048),
        unit: "integer",
        default_text: "2 × min(tags, 128) with an elevator, the tags without (md: members × their tags)",
        accepted: "at least 4 (BLKDEV_MIN_RQ); at most 2048 with an elevator, the tags without",
        written: |q| Some(q.nr_requests.to_string()),
        typical: (1, 4096),
    },
    QueueKnob {
        key: "queue/max_sectors_kb",
        kind: count(32767),
        unit: "KiB",
        default_text: "the driver's limit (usb-storage 120, NFS `wsize`, md the chunk, loop 1280)",
        accepted: "4 to the device's `max_hw_sectors_kb` (32767 for disks)",
        written: |q| Some(q.max_sectors_kb.to_string()),
        typical: (4, 32767),
    },
    QueueKnob {
        key: "queue/read_ahead_kb",
        kind: count(i32::MAX as u64),
        unit: "KiB",
        default_text: "2 × the optimal I/O size, or 2 × `max_sectors_kb` on rotational devices without one, else 128",
        accepted: "0 to 2147483647",
        written: |q| Some(q.read_ahead_kb.to_string()),
        typical: (0, 16384),
    },
    QueueKnob {
        key: "queue/nomerges",
        kind: count(2),
        unit: "integer",
        default_text: "0",
        accepted: "0 all merges, 1 one-hit merges only, 2 none",
        written: |q| Some(q.nomerges.to_string()),
        typical: (0, 2),
    },
    QueueKnob {
        key: "queue/rotational",
        kind: KnobKind::Bool,
        unit: "boolean",
        default_text: "the model's (loop: its backing disk's; md: its members')",
        accepted: "0/1",
        written: |q| Some(u8::from(q.rotational).to_string()),
        typical: (0, 1),
    },
    QueueKnob {
        key: "queue/write_cache",
        kind: KnobKind::Word {
            words: &["write back", "write through"],
            what: "write cache mode",
        },
        unit: "string",
        default_text: "`\"write back\"` when the model has a volatile cache (NFS: the server's page cache), else `\"write through\"`",
        accepted: "`\"write back\"` (needs the model's `write_cache = true`; always allowed for loop), `\"write through\"`, `\"none\"`",
        written: |q| Some(if q.write_cache { "write back" } else { "write through" }.to_string()),
        typical: (0, 1),
    },
    QueueKnob {
        key: "queue/wbt_lat_usec",
        kind: count(i64::MAX as u64 / 1000),
        unit: "µs",
        default_text: "75000 on rotational devices, 2000 on others, 0 (off) for md and NFS; the loop's is set before it becomes rotational",
        accepted: "0 disables blk-wbt; -1 restores the default for the current `rotational`",
        // bfq turns blk-wbt off when it starts (bfq_init_queue → wbt_disable_default), as the
        // model does; writing wbt_lat_usec after it would turn it back on by hand.
        written: |q| (q.scheduler != SchedulerKind::BFQ).then(|| q.wbt_lat_usec.to_string()),
        typical: (0, 100_000),
    },
];

/// The `queue/*` keys, in the table's order.
pub fn queue_keys() -> Vec<&'static str> {
    QUEUE_KNOBS.iter().map(|k| k.key).collect()
}
