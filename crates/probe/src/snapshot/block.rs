//! Block devices from `/sys/block`: which model each is, its size and numbers, its queue and
//! elevator tunables, its bdi limits, and the file system mounted on it (`/proc/mounts`).

use super::doc::Doc;
use super::files::Root;
use crate::sys::MountLine;
use toml::Value;
use wblab_scenario::Catalogue;

/// Queue attributes a scenario takes, in the order written (the scheduler first: switching
/// elevators resets the others).
const QUEUE_KEYS: &[&str] = &[
    "scheduler",
    "nr_requests",
    "max_sectors_kb",
    "read_ahead_kb",
    "wbt_lat_usec",
    "nomerges",
    "rotational",
    "write_cache",
];

/// Name prefixes of devices the snapshot leaves out, and why.
const SKIPPED: &[(&str, &str)] = &[
    ("ram", "a RAM disk"),
    ("zram", "a compressed RAM disk (zram)"),
    ("sr", "an optical drive"),
    ("fd", "a floppy drive"),
    ("nbd", "a network block device"),
    ("dm-", "a device-mapper target (LVM, dm-crypt): not modelled"),
    (
        "md",
        "an md array: write it by hand as `model = \"raid0\"`/`\"raid5\"` with its members",
    ),
    ("mtdblock", "an MTD flash block device"),
];

/// A block device the scenario will hold.
#[derive(Clone, Debug)]
pub struct Disk {
    pub name: String,
    /// Whether the root file system is on it.
    pub holds_root: bool,
    /// `MAJ:MIN`.
    pub devnum: String,
    pub model: &'static str,
    why_model: String,
    size: u64,
    /// Partitions (`vda1`) with their sizes in bytes.
    partitions: Vec<(String, u64)>,
    mount: Option<Mount>,
}

/// The file system the snapshot gives a device.
#[derive(Clone, Debug)]
struct Mount {
    source: String,
    point: String,
    fs: String,
    kept: Vec<String>,
    dropped: Vec<String>,
    used: Option<u64>,
}

/// What `/sys/block` holds, with the devices left out and why.
pub struct Devices {
    pub disks: Vec<Disk>,
    pub left_out: Vec<String>,
}

fn model_of(root: &Root, name: &str) -> (&'static str, String) {
    let base = format!("/sys/block/{name}");
    if name.starts_with("loop") {
        let backing = root.read(&format!("{base}/loop/backing_file")).unwrap_or_default();
        return (
            "loop",
            format!("a loop device over {}", if backing.is_empty() { "a file" } else { &backing }),
        );
    }
    let via_usb = root.link(&base).is_some_and(|l| l.contains("/usb"));
    let removable = root.read_u64(&format!("{base}/removable")) == Some(1);
    if via_usb || (removable && name.starts_with("sd")) {
        return (
            "usb",
            format!(
                "{} SCSI disk: a USB flash key",
                if via_usb { "a USB-attached" } else { "a removable" }
            ),
        );
    }
    let virtio = name.starts_with("vd") || name.starts_with("xvd");
    match root.read_u64(&format!("{base}/queue/rotational")) {
        Some(1) if virtio => (
            "hdd",
            "queue/rotational = 1; a virtual disk says so whatever backs it: use model = \"ssd\" for flash".into(),
        ),
        Some(1) => ("hdd", "queue/rotational = 1".into()),
        _ => ("ssd", "queue/rotational = 0".into()),
    }
}

/// Reads every block device under `/sys/block` that a model stands for.
pub fn read(root: &Root, mounts: &[MountLine]) -> Devices {
    let mut d = Devices {
        disks: Vec::new(),
        left_out: Vec::new(),
    };
    for name in root.list("/sys/block") {
        let base = format!("/sys/block/{name}");
        let size = root.read_u64(&format!("{base}/size")).unwrap_or(0) * 512;
        if let Some((_, why)) = SKIPPED.iter().find(|(p, _)| name.starts_with(p)) {
            d.left_out.push(format!("{name}: {why}"));
            continue;
        }
        if size == 0 {
            if !name.starts_with("loop") {
                d.left_out.push(format!("{name}: empty (no medium)"));
            }
            continue;
        }
        let Some(devnum) = root.read(&format!("{base}/dev")) else {
            d.left_out.push(format!("{name}: no {base}/dev"));
            continue;
        };
        let (model, why_model) = model_of(root, &name);
        let partitions = root
            .list(&base)
            .into_iter()
            .filter(|p| p.starts_with(name.as_str()) && root.read(&format!("{base}/{p}/partition")).is_some())
            .map(|p| {
                let bytes = root.read_u64(&format!("{base}/{p}/size")).unwrap_or(0) * 512;
                (p, bytes)
            })
            .collect();
        let mut disk = Disk {
            name,
            holds_root: false,
            devnum,
            model,
            why_model,
            size,
            partitions,
            mount: None,
        };
        disk.mount = mount_of(root, &disk, mounts, &mut d.left_out);
        disk.holds_root = disk.mount.as_ref().is_some_and(|m| m.point == "/");
        d.disks.push(disk);
    }
    d
}

/// The file system the model gives `disk`: of those mounted on it or its partitions with a
/// modelled type, the one on the largest partition (the first listed of equals).
fn mount_of(root: &Root, disk: &Disk, mounts: &[MountLine], notes: &mut Vec<String>) -> Option<Mount> {
    let size_of = |src: &str| -> Option<u64> {
        let dev = src.strip_prefix("/dev/")?;
        if dev == disk.name {
            return Some(disk.size);
        }
        disk.partitions.iter().find(|(p, _)| p == dev).map(|(_, b)| *b)
    };
    let mut best: Option<(&MountLine, u64)> = None;
    let mut seen = Vec::new();
    for m in mounts {
        let Some(bytes) = size_of(&m.0) else { continue };
        if seen.contains(&&m.0) {
            continue; // a bind mount or a second mount of the same file system
        }
        seen.push(&m.0);
        if wblab_scenario::modelled_mount_options(&m.2).is_empty() {
            notes.push(format!("{} on {} ({}): a {} file system is not modelled", m.0, m.1, disk.name, m.2));
            continue;
        }
        match best {
            Some((b, bb)) if bb >= bytes => {
                notes.push(format!(
                    "{} on {} ({}): the model has one file system per device; it keeps {} on {}",
                    m.0, m.1, disk.name, b.2, b.1
                ));
            }
            Some((b, _)) => {
                notes.push(format!(
                    "{} on {} ({}): the model has one file system per device; it keeps {} on {}",
                    b.0, b.1, disk.name, m.2, m.1
                ));
                best = Some((m, bytes));
            }
            None => best = Some((m, bytes)),
        }
    }
    let (m, _) = best?;
    let own = wblab_scenario::modelled_mount_options(&m.2);
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    for opt in m.3.split(',').filter(|o| !o.is_empty()) {
        let name = opt.split_once('=').map_or(opt, |(k, _)| k);
        if own.contains(&name) {
            kept.push(opt.to_string());
        } else {
            dropped.push(opt.to_string());
        }
    }
    Some(Mount {
        source: m.0.clone(),
        point: m.1.clone(),
        fs: m.2.clone(),
        kept,
        dropped,
        used: if root.is_live() { used_percent(&m.1) } else { None },
    })
}

/// How full the file system mounted at `point` is, in percent (`df`'s Use%), for `used`.
fn used_percent(point: &str) -> Option<u64> {
    let c = crate::sys::cstring(std::path::Path::new(point)).ok()?;
    // SAFETY: statvfs is plain data and the kernel fills it; `c` is a valid path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 || st.f_blocks == 0 {
        return None;
    }
    let used = st.f_blocks.saturating_sub(st.f_bfree) as u64;
    let avail = st.f_bavail as u64;
    (used + avail > 0).then(|| (used * 100).div_ceil(used + avail))
}

/// The value of a sysfs attribute as a scenario writes it: an integer when it is one.
fn attr(v: &str) -> Value {
    v.parse::<i64>().map_or_else(|_| Value::String(v.to_string()), Value::Integer)
}

/// The selected elevator in `[mq-deadline] kyber bfq none` (or the single name shown).
fn selected(s: &str) -> Option<&str> {
    match s.split_once('[') {
        Some((_, rest)) => rest.split_once(']').map(|(n, _)| n),
        None => s.split_whitespace().next(),
    }
}

/// `[[device]]` tables, one per disk, with notes on what the model does not take.
/// `extra` are keys found elsewhere for a device (`MAJ:MIN`, key, value, source): the v1 root
/// cgroup's throttle rules.
pub fn write(
    doc: &mut Doc,
    root: &Root,
    cat: &Catalogue,
    disks: &[Disk],
    extra: &[(String, String, u64, String)],
    not_modelled: &mut Vec<String>,
) {
    for disk in disks {
        let base = format!("/sys/block/{}", disk.name);
        let model_keys: &[&str] = cat.models.iter().find(|(m, _)| *m == disk.model).map_or(&[], |(_, k)| k);
        doc.blank();
        doc.table("device", true);
        doc.key("name", Value::String(disk.name.clone()), &base);
        doc.key("model", Value::String(disk.model.into()), &disk.why_model);
        doc.key("size", Value::Integer(disk.size as i64), &format!("{base}/size × 512"));
        if let Some((ma, mi)) = disk
            .devnum
            .split_once(':')
            .and_then(|(a, b)| Some((a.parse::<i64>().ok()?, b.parse::<i64>().ok()?)))
        {
            doc.key("major", Value::Integer(ma), &format!("{base}/dev"));
            doc.key("minor", Value::Integer(mi), &format!("{base}/dev"));
        }
        // The hardware queues and their tags: what the queue holds without an elevator.
        let tags: Vec<(String, u64)> = root
            .list(&format!("{base}/mq"))
            .into_iter()
            .filter(|q| q.parse::<u32>().is_ok())
            .filter_map(|q| Some((q.clone(), root.read_u64(&format!("{base}/mq/{q}/nr_tags"))?)))
            .collect();
        if let (Some((q, n)), true) = (tags.first(), model_keys.contains(&"queue_depth")) {
            doc.key("queue_depth", Value::Integer(*n as i64), &format!("{base}/mq/{q}/nr_tags"));
        }
        if tags.len() > 1 && model_keys.contains(&"nr_hw_queues") {
            doc.key("nr_hw_queues", Value::Integer(tags.len() as i64), &format!("{base}/mq/*"));
        }
        for q in QUEUE_KEYS {
            let key = format!("queue/{q}");
            let Some(raw) = root.read(&format!("{base}/queue/{q}")) else {
                continue;
            };
            let value = match *q {
                "scheduler" => match selected(&raw) {
                    Some(s) => Value::String(s.to_string()),
                    None => continue,
                },
                "write_cache" => Value::String(raw.clone()),
                // A queue with one or two tags holds fewer than a write may set
                // (BLKDEV_MIN_RQ, to which the kernel raises smaller values): probe time
                // alone gives it, as the model's probe does for such a device.
                "nr_requests" if raw.parse::<u64>().is_ok_and(|n| n < 4) => {
                    not_modelled.push(format!(
                        "{base}/queue/nr_requests = {raw}: below the 4 a write may set; left to the model's probe"
                    ));
                    continue;
                }
                _ => attr(&raw),
            };
            if cat.device.contains(&key.as_str()) {
                doc.key(&key, value, &format!("{base}/queue/{q}"));
            }
        }
        for t in root.list(&format!("{base}/queue/iosched")) {
            let key = format!("queue/iosched/{t}");
            let Some(raw) = root.read(&format!("{base}/{key}")) else { continue };
            if cat.device.contains(&key.as_str()) {
                doc.key(&key, attr(&raw), &format!("{base}/{key}"));
            } else {
                not_modelled.push(format!("{base}/{key} = {raw}"));
            }
        }
        bdi(doc, root, disk);
        for (_, key, v, src) in extra.iter().filter(|e| e.0 == disk.devnum) {
            doc.key(key, Value::Integer(*v as i64), src);
        }
        if let Some(m) = &disk.mount {
            doc.key(
                "fs",
                Value::String(m.fs.clone()),
                &format!("{} on {} (/proc/mounts)", m.source, m.point),
            );
            if !m.kept.is_empty() {
                doc.key("mount", Value::String(m.kept.join(",")), "its options the model reads");
            }
            if !m.dropped.is_empty() {
                not_modelled.push(format!("{} mount options of {}: {}", m.fs, m.point, m.dropped.join(",")));
            }
            if let Some(u) = m.used {
                doc.key(
                    "used",
                    Value::Integer(u.min(95) as i64),
                    &format!("statvfs({}): {u}% used", m.point),
                );
            }
        }
    }
}

/// The bdi's limits where they differ from the kernel's defaults, in the spelling that keeps
/// their precision (`max_ratio_fine` only when the ratio is not whole percent).
fn bdi(doc: &mut Doc, root: &Root, disk: &Disk) {
    let base = format!("/sys/class/bdi/{}", disk.devnum);
    for (limit, default) in [("min", 0u64), ("max", 100)] {
        let fine = root.read_u64(&format!("{base}/{limit}_ratio_fine"));
        let ratio = root.read_u64(&format!("{base}/{limit}_ratio"));
        match (fine, ratio) {
            (Some(f), _) if f % 10_000 != 0 => doc.key(
                &format!("bdi/{limit}_ratio_fine"),
                Value::Integer(f as i64),
                &format!("{base}/{limit}_ratio_fine"),
            ),
            (_, Some(r)) if r != default => doc.key(
                &format!("bdi/{limit}_ratio"),
                Value::Integer(r as i64),
                &format!("{base}/{limit}_ratio"),
            ),
            _ => {}
        }
    }
    if root.read_u64(&format!("{base}/strict_limit")) == Some(1) {
        doc.key("bdi/strict_limit", Value::Integer(1), &format!("{base}/strict_limit"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selected_elevator_is_the_bracketed_one() {
        assert_eq!(selected("[mq-deadline] kyber bfq none"), Some("mq-deadline"));
        assert_eq!(selected("mq-deadline kyber [bfq] none"), Some("bfq"));
        assert_eq!(selected("none"), Some("none"));
        assert_eq!(selected("[broken"), None);
    }
}
