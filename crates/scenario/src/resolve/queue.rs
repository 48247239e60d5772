//! `queue/*` and `queue/iosched/*`: `/sys/block/<dev>/queue/` as `block/blk-sysfs.c` and
//! `block/mq-deadline.c` accept it.

use crate::error::{Gather, Many, Result};
use crate::section::{Entry, Section};
use crate::suggest;
use wblab_sim::block::sched::{elevator, elevator_named, ELEVATORS};
use wblab_sim::config::{default_queue, DeviceModelConfig, QueueConfig, SchedulerKind};

/// Every elevator's `queue/iosched/` keys, as the elevators declare them.
pub(super) fn tunable_keys() -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = Vec::new();
    for e in ELEVATORS {
        for t in e.tunables {
            if !keys.contains(&t.key) {
                keys.push(t.key);
            }
        }
    }
    keys
}

/// A tunable's name without its `queue/iosched/` directory, as sysfs lists the files.
fn short_key(key: &str) -> &str {
    key.strip_prefix("queue/iosched/").unwrap_or(key)
}

/// The elevators that have tunable `key`.
fn owners(key: &str) -> Vec<&'static str> {
    ELEVATORS
        .iter()
        .filter(|e| e.tunables.iter().any(|t| t.key == key))
        .map(|e| e.kind.name())
        .collect()
}

/// BLKDEV_MIN_RQ: the smallest `nr_requests`.
const MIN_NR_REQUESTS: u32 = 4;
/// MAX_SCHED_RQ = 16 * BLKDEV_DEFAULT_RQ: the largest `nr_requests` with an elevator.
const MAX_SCHED_RQ: u32 = 2048;
/// `max_hw_sectors_kb` of the modelled SATA/NVMe host (`max_sectors_kb` cannot exceed it).
const MAX_HW_SECTORS_KB: u32 = 32767;
/// `INT_MAX`, the bound of mq-deadline's `int` tunables.
const INT_MAX: u32 = i32::MAX as u32;

/// Real elevator names no modelled elevator stands for (2.6.0–2.6.32's anticipatory
/// scheduler, `as` on the boot line): refused by name rather than as unknown.
const UNMODELLED_SCHEDULERS: &[&str] = &["anticipatory", "as"];

/// The queue as probed for `model`, then the file's `queue/*` writes: the scheduler first,
/// because switching elevators resets `nr_requests`, then everything else. `era_elevator` is
/// the kernel generation's default elevator for devices that get one (the 2.5 era's
/// deadline-2002), `None` for today's choice.
pub(super) fn build(sec: &Section<'_>, model: &DeviceModelConfig, era_elevator: Option<SchedulerKind>) -> Many<QueueConfig> {
    let mut g = Gather::default();
    let mut q = default_queue(model);
    if let Some(k) = era_elevator {
        if q.scheduler != SchedulerKind::NONE {
            q.select_elevator(k);
        }
    }
    // A loop's backing file can always fsync and an NFS server caches UNSTABLE writes: their
    // queues have a write cache; md inherits its members'.
    let (depth, has_cache) = (model.queue_depth(), model.has_write_cache());
    // md is bio-based and NFS has no block queue: neither has an elevator to switch to.
    let no_elevator = !model.has_elevator();
    if let Some(e) = sec.get("queue/scheduler") {
        let kind = scheduler(e, era_elevator)?;
        if no_elevator && kind != SchedulerKind::NONE {
            return Err(vec![e.problem(format!("a `{}` device has no elevator", model.kind())).hint(
                "md arrays are bio-based and NFS mounts have no block queue: the scheduler is always `none`",
            )]);
        }
        q.select_elevator(kind);
        // blk_mq_init_sched / elevator_switch to none: 2 * min(depth, BLKDEV_DEFAULT_RQ) or the
        // tag set's depth.
        q.nr_requests = match kind {
            SchedulerKind::NONE => depth,
            _ => 2 * depth.min(128),
        };
    }
    let info = elevator(q.scheduler).expect("the queue runs a listed elevator");
    // Each elevator keeps its own set of tunables: a key of another one is an error.
    let all_tunables = tunable_keys();
    let own = |k: &str| info.tunables.iter().any(|t| t.key == k);
    for e in sec
        .entries
        .iter()
        .filter(|e| all_tunables.contains(&e.key.as_str()) && !own(&e.key))
    {
        let owners = owners(&e.key);
        let quoted: Vec<String> = owners.iter().map(|o| format!("\"{o}\"")).collect();
        if q.scheduler == SchedulerKind::NONE {
            let hint = if no_elevator {
                format!("a `{}` device has no elevator, so no elevator tunables", model.kind())
            } else {
                format!("set \"queue/scheduler\" = {}", quoted[0])
            };
            g.push(
                e.key_problem(format!("is a tunable of {}, but the scheduler is `none`", suggest::list(&owners)))
                    .hint(hint),
            );
            continue;
        }
        let keys: Vec<&str> = info.tunables.iter().map(|t| short_key(t.key)).collect();
        g.push(e.key_problem(format!("is not a {} tunable", info.kind.name())).hint(format!(
            "{} has {} ({}); `{}` belongs to {}: set \"queue/scheduler\" = {}",
            info.kind.name(),
            suggest::list(&keys),
            info.summary,
            short_key(&e.key),
            suggest::list(&owners),
            quoted.join(" or ")
        )));
    }

    let max_nr = match q.scheduler {
        SchedulerKind::NONE => depth,
        _ => MAX_SCHED_RQ,
    };
    g.read(sec, "queue/nr_requests", &mut q.nr_requests, |e| {
        e.u32(MIN_NR_REQUESTS, max_nr.max(MIN_NR_REQUESTS)).map_err(|p| {
            p.hint(format!(
                "at least {MIN_NR_REQUESTS} (BLKDEV_MIN_RQ); at most {MAX_SCHED_RQ} with mq-deadline (MAX_SCHED_RQ), the device's queue_depth ({depth}) with none"
            ))
        })
    });
    // The driver's max_hw_sectors_kb: usb-storage's 120, the NFS wsize, the raid0 chunk.
    let max_hw = model.max_hw_sectors_kb().unwrap_or(MAX_HW_SECTORS_KB).clamp(4, MAX_HW_SECTORS_KB);
    g.read(sec, "queue/max_sectors_kb", &mut q.max_sectors_kb, |e| {
        e.u32(4, max_hw).map_err(|p| {
            p.hint(format!(
                "at least one page (4), at most max_hw_sectors_kb ({max_hw} for model `{}`)",
                model.kind()
            ))
        })
    });
    g.read(sec, "queue/rotational", &mut q.rotational, |e| e.boolean());
    if let Some(e) = sec.get("queue/wbt_lat_usec") {
        // -1 restores wbt_default_latency_nsec(), which depends on the rotational flag.
        if let Some(v) = g.keep(e.int(-1, i64::MAX / 1000)) {
            q.wbt_lat_usec = match v {
                -1 if q.rotational => 75_000,
                -1 => 2_000,
                v => v.unsigned_abs(),
            };
        }
    }
    g.read(sec, "queue/read_ahead_kb", &mut q.read_ahead_kb, |e| e.u32(0, INT_MAX));
    g.read(sec, "queue/nomerges", &mut q.nomerges, |e| {
        e.u32(0, 2)
            .map_err(|p| p.hint("0 = all merges, 1 = simple one-hit merges only, 2 = no merges"))
    });
    if let Some(e) = sec.get("queue/write_cache") {
        match g.keep(e.keyword(&["write back", "write through", "none"], "write cache mode")) {
            Some("write back") if !has_cache => g.push(
                e.problem("\"write back\" needs a volatile cache, but the device model has write_cache = false")
                    .hint("set write_cache = true in this [[device]] (the model's cache) or use \"write through\""),
            ),
            Some(mode) => q.write_cache = mode == "write back",
            None => {}
        }
    }

    for t in info.tunables {
        if let Some(e) = sec.get(t.key) {
            if let Some(v) = g.keep(super::model::knob_value(e, &t.spec())) {
                (t.set)(&mut q, v);
            }
        }
    }
    g.sound()?;
    if let Err(c) = (info.check)(&q) {
        return Err(vec![sec.conflict(c.keys, c.message).hint(c.hint)]);
    }
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
        let names: Vec<&str> = ELEVATORS.iter().map(|e| e.kind.name()).collect();
        return Err(e
            .problem(format!("scheduler `{name}` is not modelled"))
            .hint(format!("modelled: {}", suggest::list(&names))));
    }
    if name == "cfq" {
        // The kernel's own CFQ: one of the two modelled forms, or none for this kernel.
        return match era {
            Some(k) if k.name().starts_with("cfq") => Ok(k),
            _ => Err(e
                .problem("this kernel's CFQ is not modelled")
                .hint("CFQ is modelled as it was in 2.6.18-2.6.21 (`cfq-2.6.20`) and 2.6.22-2.6.31 (`cfq-2.6.22`); it was removed in 5.0")),
        };
    }
    match elevator_named(name) {
        Some(info) => Ok(info.kind),
        None => {
            let mut names: Vec<&str> = ELEVATORS
                .iter()
                .flat_map(|e| std::iter::once(e.kind.name()).chain(e.aliases.iter().copied()))
                .collect();
            names.push("cfq");
            Err(e.problem(format!("unknown scheduler `{name}`")).hint(suggest::hint(name, &names)))
        }
    }
}
