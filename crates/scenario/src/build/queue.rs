//! `queue/*` and `queue/iosched/*`: `/sys/block/<dev>/queue/` as `block/blk-sysfs.c` and
//! `block/mq-deadline.c` accept it.

use crate::error::Result;
use crate::section::{Entry, Section};
use crate::suggest;
use wblab_sim::config::{default_queue, DeadlineTunables, DeviceModelConfig, QueueConfig, SchedulerKind};

pub(super) const KEYS: &[&str] = &[
    "queue/scheduler",
    "queue/nr_requests",
    "queue/max_sectors_kb",
    "queue/wbt_lat_usec",
    "queue/read_ahead_kb",
    "queue/nomerges",
    "queue/rotational",
    "queue/write_cache",
];

/// Every deadline variant's tunables (each takes a subset, below).
pub(super) const DEADLINE_IOSCHED_KEYS: &[&str] = &[
    "queue/iosched/read_expire",
    "queue/iosched/write_expire",
    "queue/iosched/fifo_batch",
    "queue/iosched/writes_starved",
    "queue/iosched/front_merges",
    "queue/iosched/async_depth",
    "queue/iosched/seek_cost",
];

/// The tunables of CFQ (`block/cfq-iosched.c`, 2.6.18–2.6.31); times in ms as sysfs shows them.
pub(super) const CFQ_KEYS: &[&str] = &[
    "queue/iosched/quantum",
    "queue/iosched/fifo_expire_sync",
    "queue/iosched/fifo_expire_async",
    "queue/iosched/back_seek_max",
    "queue/iosched/back_seek_penalty",
    "queue/iosched/slice_sync",
    "queue/iosched/slice_async",
    "queue/iosched/slice_async_rq",
    "queue/iosched/slice_idle",
];

/// The tunables of deadline-2002 (`drivers/block/deadline-iosched.c`, Sep 2002; Morton's
/// sysctls had the same names). No write expiry, no front_merges switch, no async_depth.
const DEADLINE_2002_KEYS: &[&str] = &[
    "queue/iosched/read_expire",
    "queue/iosched/fifo_batch",
    "queue/iosched/writes_starved",
    "queue/iosched/seek_cost",
];
/// The tunables of the 2.6 deadline (`block/deadline-iosched.c`, 2.5.57-2.6.x).
const DEADLINE_26_KEYS: &[&str] = &[
    "queue/iosched/read_expire",
    "queue/iosched/write_expire",
    "queue/iosched/fifo_batch",
    "queue/iosched/writes_starved",
    "queue/iosched/front_merges",
];
/// The tunables of mq-deadline.
const MQ_DEADLINE_KEYS: &[&str] = &[
    "queue/iosched/read_expire",
    "queue/iosched/write_expire",
    "queue/iosched/fifo_batch",
    "queue/iosched/writes_starved",
    "queue/iosched/front_merges",
    "queue/iosched/async_depth",
];

/// A `queue/iosched/` key of any modelled elevator.
pub(super) fn is_iosched_key(k: &str) -> bool {
    DEADLINE_IOSCHED_KEYS.contains(&k) || CFQ_KEYS.contains(&k)
}

/// BLKDEV_MIN_RQ: the smallest `nr_requests`.
const MIN_NR_REQUESTS: u32 = 4;
/// MAX_SCHED_RQ = 16 * BLKDEV_DEFAULT_RQ: the largest `nr_requests` with an elevator.
const MAX_SCHED_RQ: u32 = 2048;
/// `max_hw_sectors_kb` of the modelled SATA/NVMe host (`max_sectors_kb` cannot exceed it).
const MAX_HW_SECTORS_KB: u32 = 32767;
/// `INT_MAX`, the bound of mq-deadline's `int` tunables.
const INT_MAX: u32 = i32::MAX as u32;

/// Accepted elevator names: `deadline` is the kernel's alias of mq-deadline; `deadline-2002` is
/// the 2.5-era deadline scheduler; `cfq` is the kernel generation's CFQ (2.6.18–2.6.31).
const SCHEDULERS: &[&str] = &[
    "none",
    "mq-deadline",
    "deadline",
    "deadline-2002",
    "deadline-2.6",
    "cfq",
    "cfq-2.6.20",
    "cfq-2.6.22",
];
const UNMODELLED_SCHEDULERS: &[&str] = &["kyber", "bfq"];

/// The queue as probed for `model`, then the file's `queue/*` writes: the scheduler first,
/// because switching elevators resets `nr_requests`, then everything else. `era_elevator` is
/// the kernel generation's default elevator for devices that get one (the 2.5 era's
/// deadline-2002), `None` for today's choice.
pub(super) fn build(sec: &Section<'_>, model: &DeviceModelConfig, era_elevator: Option<SchedulerKind>) -> Result<QueueConfig> {
    let mut q = default_queue(model);
    if let Some(k) = era_elevator {
        if q.scheduler != SchedulerKind::None {
            q.scheduler = k;
            q.iosched = DeadlineTunables::for_scheduler(k);
        }
    }
    // A loop's backing file can always fsync and an NFS server caches UNSTABLE writes: their
    // queues have a write cache; md inherits its members'.
    let (depth, has_cache) = (model.queue_depth(), model.has_write_cache());
    // md is bio-based and NFS has no block queue: neither has an elevator to switch to.
    let no_elevator = matches!(model, DeviceModelConfig::Raid0(_) | DeviceModelConfig::Nfs(_));
    if let Some(e) = sec.get("queue/scheduler") {
        q.scheduler = scheduler(e, era_elevator)?;
        q.iosched = DeadlineTunables::for_scheduler(q.scheduler);
        if no_elevator && q.scheduler != SchedulerKind::None {
            return Err(e
                .problem(format!("a `{}` device has no elevator", model.kind()))
                .hint("md arrays are bio-based and NFS mounts have no block queue: the scheduler is always `none`"));
        }
        // blk_mq_init_sched / elevator_switch to none: 2 * min(depth, BLKDEV_DEFAULT_RQ) or the
        // tag set's depth.
        q.nr_requests = match q.scheduler {
            SchedulerKind::None => depth,
            _ => 2 * depth.min(128),
        };
    }
    if q.scheduler == SchedulerKind::None {
        if let Some(e) = sec.last_of(DEADLINE_IOSCHED_KEYS).or_else(|| sec.last_of(CFQ_KEYS)) {
            let (what, pick) = if CFQ_KEYS.contains(&e.key.as_str()) {
                ("a CFQ", "\"cfq-2.6.20\" or \"cfq-2.6.22\"")
            } else {
                ("an mq-deadline", "\"mq-deadline\" (the default for model = \"hdd\" and \"usb\")")
            };
            let hint = if no_elevator {
                format!("a `{}` device has no elevator, so no elevator tunables", model.kind())
            } else {
                format!("set \"queue/scheduler\" = {pick}")
            };
            return Err(e.key_problem(format!("is {what} tunable, but the scheduler is `none`")).hint(hint));
        }
    }
    // Each elevator keeps its own set of tunables: a key of another one is an error.
    let (own, other_name) = match q.scheduler {
        SchedulerKind::Deadline2002 => (DEADLINE_2002_KEYS, "deadline-2002"),
        SchedulerKind::Deadline26 => (DEADLINE_26_KEYS, "deadline-2.6"),
        SchedulerKind::Cfq2620 | SchedulerKind::Cfq2622 => (CFQ_KEYS, "cfq"),
        _ => (MQ_DEADLINE_KEYS, "mq-deadline"),
    };
    if q.scheduler != SchedulerKind::None {
        if let Some(e) = sec
            .entries
            .iter()
            .find(|e| is_iosched_key(&e.key) && !own.contains(&e.key.as_str()))
        {
            let hint = match q.scheduler {
                _ if CFQ_KEYS.contains(&e.key.as_str()) => format!(
                    "a CFQ tunable: set \"queue/scheduler\" = \"cfq-2.6.20\" or \"cfq-2.6.22\" (CFQ is the default of kernels 2.6.18 to 2.6.31); {} has {}",
                    q.scheduler.name(),
                    suggest::list(own)
                ),
                SchedulerKind::Cfq2620 | SchedulerKind::Cfq2622 => format!("CFQ has {}", suggest::list(CFQ_KEYS)),
                SchedulerKind::Deadline2002 => format!(
                    "deadline-2002 has {} (writes never expire; front merges are always tried); `queue/scheduler` = \"mq-deadline\" has the others",
                    suggest::list(DEADLINE_2002_KEYS)
                ),
                SchedulerKind::Deadline26 => format!(
                    "deadline-2.6 has {} (`seek_cost` is deadline-2002's, `async_depth` mq-deadline's)",
                    suggest::list(DEADLINE_26_KEYS)
                ),
                _ => "`seek_cost` belongs to the 2002 deadline: set \"queue/scheduler\" = \"deadline-2002\" (the default of kernel 2.5.x)".to_string(),
            };
            return Err(e.key_problem(format!("is not a {other_name} tunable")).hint(hint));
        }
    }

    let max_nr = match q.scheduler {
        SchedulerKind::None => depth,
        _ => MAX_SCHED_RQ,
    };
    sec.read("queue/nr_requests", &mut q.nr_requests, |e| {
        e.u32(MIN_NR_REQUESTS, max_nr.max(MIN_NR_REQUESTS)).map_err(|p| {
            p.hint(format!(
                "at least {MIN_NR_REQUESTS} (BLKDEV_MIN_RQ); at most {MAX_SCHED_RQ} with mq-deadline (MAX_SCHED_RQ), the device's queue_depth ({depth}) with none"
            ))
        })
    })?;
    // The driver's max_hw_sectors_kb: usb-storage's 120, the NFS wsize, the raid0 chunk.
    let max_hw = model.max_hw_sectors_kb().unwrap_or(MAX_HW_SECTORS_KB).clamp(4, MAX_HW_SECTORS_KB);
    sec.read("queue/max_sectors_kb", &mut q.max_sectors_kb, |e| {
        e.u32(4, max_hw).map_err(|p| {
            p.hint(format!(
                "at least one page (4), at most max_hw_sectors_kb ({max_hw} for model `{}`)",
                model.kind()
            ))
        })
    })?;
    sec.read("queue/rotational", &mut q.rotational, |e| e.boolean())?;
    if let Some(e) = sec.get("queue/wbt_lat_usec") {
        // -1 restores wbt_default_latency_nsec(), which depends on the rotational flag.
        q.wbt_lat_usec = match e.int(-1, i64::MAX / 1000)? {
            -1 if q.rotational => 75_000,
            -1 => 2_000,
            v => v.unsigned_abs(),
        };
    }
    sec.read("queue/read_ahead_kb", &mut q.read_ahead_kb, |e| e.u32(0, INT_MAX))?;
    sec.read("queue/nomerges", &mut q.nomerges, |e| {
        e.u32(0, 2)
            .map_err(|p| p.hint("0 = all merges, 1 = simple one-hit merges only, 2 = no merges"))
    })?;
    if let Some(e) = sec.get("queue/write_cache") {
        let back = e.keyword(&["write back", "write through", "none"], "write cache mode")? == "write back";
        if back && !has_cache {
            return Err(e
                .problem("\"write back\" needs a volatile cache, but the device model has write_cache = false")
                .hint("set write_cache = true in this [[device]] (the model's cache) or use \"write through\""));
        }
        q.write_cache = back;
    }

    let d = &mut q.iosched;
    sec.read("queue/iosched/read_expire", &mut d.read_expire_ms, |e| {
        e.uint(0, u64::from(INT_MAX))
    })?;
    sec.read("queue/iosched/write_expire", &mut d.write_expire_ms, |e| {
        e.uint(0, u64::from(INT_MAX))
    })?;
    sec.read("queue/iosched/fifo_batch", &mut d.fifo_batch, |e| e.u32(1, INT_MAX))?;
    sec.read("queue/iosched/writes_starved", &mut d.writes_starved, |e| e.u32(0, INT_MAX))?;
    sec.read("queue/iosched/front_merges", &mut d.front_merges, |e| e.boolean())?;
    sec.read("queue/iosched/seek_cost", &mut d.seek_cost, |e| {
        e.u32(1, INT_MAX)
            .map_err(|p| p.hint("the batch cost of a seek; a contiguous request costs 1 (default 16)"))
    })?;
    let c = &mut q.cfq;
    let ms = |e: &Entry<'_>| e.uint(0, u64::from(INT_MAX)).map(|v| v * 1_000_000);
    sec.read("queue/iosched/quantum", &mut c.quantum, |e| e.u32(1, INT_MAX))?;
    sec.read("queue/iosched/fifo_expire_sync", &mut c.fifo_expire_sync, ms)?;
    sec.read("queue/iosched/fifo_expire_async", &mut c.fifo_expire_async, ms)?;
    sec.read("queue/iosched/back_seek_max", &mut c.back_seek_max_kb, |e| {
        e.uint(0, u64::from(INT_MAX))
            .map_err(|p| p.hint("KiB behind the head the next request may lie (default 16384)"))
    })?;
    sec.read("queue/iosched/back_seek_penalty", &mut c.back_seek_penalty, |e| {
        e.uint(1, u64::from(INT_MAX))
    })?;
    sec.read("queue/iosched/slice_sync", &mut c.slice_sync, ms)?;
    sec.read("queue/iosched/slice_async", &mut c.slice_async, ms)?;
    sec.read("queue/iosched/slice_async_rq", &mut c.slice_async_rq, |e| e.u32(1, INT_MAX))?;
    sec.read("queue/iosched/slice_idle", &mut c.slice_idle, |e| {
        ms(e).map_err(|p| p.hint("ms an emptied sync queue waits for its process's next request; 0 disables idling"))
    })?;
    let nr = q.nr_requests;
    sec.read("queue/iosched/async_depth", &mut q.iosched.async_depth, |e| {
        e.u32(0, nr)
            .map_err(|p| p.hint(format!("0 means nr_requests ({nr}); larger values are capped by it")))
    })?;
    Ok(q)
}

/// A scheduler name as written to `queue/scheduler`, or as read back from it
/// (`"[mq-deadline] none"`: the bracketed one is active).
fn scheduler(e: &Entry<'_>, era: Option<SchedulerKind>) -> Result<SchedulerKind> {
    let raw = e.str()?.trim();
    let name = match (raw.find('['), raw.find(']')) {
        (Some(open), Some(close)) if open < close => &raw[open + 1..close],
        _ => raw,
    };
    if UNMODELLED_SCHEDULERS.contains(&name) {
        return Err(e
            .problem(format!("scheduler `{name}` is not modelled"))
            .hint("modelled: `none`, `mq-deadline`, `deadline-2002`, `deadline-2.6`, `cfq-2.6.20`, `cfq-2.6.22`"));
    }
    match name {
        "cfq" => match era {
            Some(k @ (SchedulerKind::Cfq2620 | SchedulerKind::Cfq2622)) => Ok(k),
            _ => Err(e
                .problem("this kernel's CFQ is not modelled")
                .hint("CFQ is modelled as it was in 2.6.18-2.6.21 (`cfq-2.6.20`) and 2.6.22-2.6.31 (`cfq-2.6.22`); it was removed in 5.0")),
        },
        "none" => Ok(SchedulerKind::None),
        "mq-deadline" | "deadline" => Ok(SchedulerKind::MqDeadline),
        "deadline-2002" => Ok(SchedulerKind::Deadline2002),
        "deadline-2.6" => Ok(SchedulerKind::Deadline26),
        "cfq-2.6.20" => Ok(SchedulerKind::Cfq2620),
        "cfq-2.6.22" => Ok(SchedulerKind::Cfq2622),
        _ => Err(e
            .problem(format!("unknown scheduler `{name}`"))
            .hint(suggest::hint(name, SCHEDULERS))),
    }
}
