//! `[[device]]`: identity (name, model, size, device number, file system), then the model's
//! parameters, the queue, the bdi and the blk-throttle limits, each from its own module.

use super::{bdi, model, mount, queue, throttle};
use crate::error::{Gather, Many, Problem, Result};
use crate::section::{Entry, Section};
use crate::suggest;
use std::collections::HashMap;
use wblab_sim::config::{default_queue, default_size, BdiConfig, DeviceConfig, DeviceModelConfig, HddParams, SchedulerKind};
use wblab_sim::drivers::model::{model_info, sd_name, Naming};
use wblab_sim::units::{format_size, MIB};

pub(super) const IDENTITY_KEYS: &[&str] = &[
    "name",
    "model",
    "size",
    "major",
    "minor",
    "fs",
    "mount",
    "journal_size",
    "fast_commit",
    "used",
    "writeout_share",
    "emulate",
];

/// NVMe's block major: a disk named `nvme...` gets it instead of sd's.
const NVME_MAJOR: u32 = 259;

/// Also accepts keys pasted with their sysfs path: `/sys/block/sda/queue/scheduler` becomes
/// `queue/scheduler` and `/sys/class/bdi/8:0/max_ratio` becomes `bdi/max_ratio`.
pub(super) fn normalize(key: String) -> String {
    let after_device = |rest: &str| rest.split_once('/').map(|(_, knob)| knob.to_string());
    if let Some(knob) = key.strip_prefix("/sys/block/").and_then(after_device) {
        return knob;
    }
    if let Some(knob) = key.strip_prefix("/sys/class/bdi/").and_then(after_device) {
        return format!("bdi/{knob}");
    }
    key
}

/// All devices, or one default HDD `sda` when the file declares none. `kernel`: the release
/// simulated, for its default elevator (see [`queue::build`]) and mount options.
pub(super) fn build_all(entry: Option<&Entry<'_>>, sections: &[Section<'_>], kernel: &str) -> Many<Vec<DeviceConfig>> {
    let era_elevator = wblab_sim::generations::default_elevator(kernel);
    if entry.is_none() {
        let model = DeviceModelConfig::Hdd(HddParams::default());
        let mut queue = default_queue(&model);
        if let Some(k) = era_elevator {
            queue.select_elevator(k);
        }
        let (name, major, minor) = Naming::Sd.node(0);
        return Ok(vec![DeviceConfig {
            name,
            major,
            minor,
            size: default_size(&model),
            queue,
            model,
            bdi: BdiConfig::default(),
            fs: None,
            throttle: Default::default(),
            used_pct: 0,
            writeout_share_pct: 0,
            emulate: false,
        }]);
    }
    if sections.is_empty() {
        let at = entry.map_or(0, |e| e.value_at);
        return Err(vec![Problem::new(at, "no devices")
            .key("device")
            .hint("declare at least one [[device]] table")]);
    }
    if let Some(extra) = sections.get(crate::limits::MAX_DEVICES) {
        return Err(vec![Problem::new(
            extra.at,
            format!(
                "{} [[device]] tables, more than the {} a scenario may have",
                sections.len(),
                crate::limits::MAX_DEVICES
            ),
        )
        .key("device")
        .hint("an md array (raid0, raid5) with `members` stands for many disks as one device")]);
    }
    // Devices named and numbered by the kernel's schemes, each counted on its own: sd's
    // disks (and NVMe's, when so named), loopN, mdN, the NFS mounts' anonymous numbers.
    let (mut sd, mut nvme) = (0u32, 0u32);
    let mut indexed: HashMap<&str, u32> = HashMap::new();
    let kinds = model::kinds();
    let mut devices: Vec<DeviceConfig> = Vec::with_capacity(sections.len());
    let mut min_ppm_total = 0;
    let mut share_total = 0;
    // Each device is checked on its own; the checks across devices run on the sound ones.
    let mut g = Gather::default();
    for (i, sec) in sections.iter().enumerate() {
        let Some(kind) = g.keep(sec.value_or("model", "hdd", |e| e.keyword(&kinds, "device model"))) else {
            g.extend(sec.entries.iter().filter(|e| e.key == "name").filter_map(|e| device_name(e).err()));
            continue;
        };
        let naming = model_info(kind).expect("a listed model").naming;
        let name = match (sec.get("name"), naming) {
            (Some(e), _) => g.keep(device_name(e)),
            (None, Naming::Sd) => Some(sd_name(i)),
            (None, Naming::Indexed { prefix, .. } | Naming::Anonymous { prefix, .. }) => {
                Some(format!("{prefix}{}", indexed.get(prefix).copied().unwrap_or(0)))
            }
        };
        let name_or_default = name.clone().unwrap_or_else(|| sd_name(i));
        let default_number = match naming {
            Naming::Indexed { prefix, major } => {
                // <prefix><N> is <major>:<N>; a device named otherwise takes the next index.
                let next = indexed.entry(prefix).or_insert(0);
                let index = name_or_default.strip_prefix(prefix).and_then(|n| n.parse().ok()).unwrap_or(*next);
                *next += 1;
                (major, index)
            }
            Naming::Anonymous { prefix, first_minor } => {
                let next = indexed.entry(prefix).or_insert(0);
                *next += 1;
                (0, first_minor + *next - 1)
            }
            Naming::Sd if name_or_default.starts_with("nvme") => {
                nvme += 1;
                (NVME_MAJOR, nvme - 1)
            }
            Naming::Sd => {
                sd += 1;
                let (_, major, minor) = Naming::Sd.node(sd - 1);
                (major, minor)
            }
        };
        let Some(d) = g.keep_all(build(sec, kind, name_or_default, default_number, era_elevator, kernel)) else {
            continue;
        };
        if name.is_none() {
            continue;
        }
        if devices.iter().any(|o| o.name == d.name) {
            let at = sec.get("name").map_or(sec.at, |e| e.value_at);
            g.push(
                Problem::new(at, format!("device name `{}` is used twice", d.name))
                    .key("name")
                    .hint("each [[device]] needs its own name"),
            );
            continue;
        }
        if let Some(o) = devices.iter().find(|o| (o.major, o.minor) == (d.major, d.minor)) {
            g.push(
                sec.conflict(
                    &["major", "minor", "name"],
                    format!("device number {}:{} is already `{}`'s", d.major, d.minor, o.name),
                )
                .hint("give this device its own major/minor"),
            );
            continue;
        }
        // bdi_set_min_ratio: the minimum shares of all bdis must stay below 100 %.
        min_ppm_total += d.bdi.min_ratio_ppm;
        if min_ppm_total >= wblab_sim::config::BDI_PPM {
            g.push(
                sec.conflict(
                    &["bdi/min_ratio", "bdi/min_ratio_fine"],
                    "the bdi minimum ratios of all devices add up to 100% or more",
                )
                .hint("the kernel refuses a min_ratio that brings the sum to 100% (EINVAL)"),
            );
            continue;
        }
        // Shares of one total: what the devices held before the run cannot exceed all of it.
        share_total += d.writeout_share_pct;
        if share_total > 100 {
            g.push(
                sec.conflict(&["writeout_share"], "the writeout shares of all devices add up to more than 100%")
                    .hint("each device's writeout_share is its part of the same completions; give them at most 100 together"),
            );
            continue;
        }
        devices.push(d);
    }
    g.finish(devices)
}

fn build(
    sec: &Section<'_>,
    kind: &str,
    name: String,
    default_number: (u32, u32),
    era_elevator: Option<SchedulerKind>,
    kernel: &str,
) -> Many<DeviceConfig> {
    let mut g = Gather::default();
    let member = model::member_kind(kind, sec)?;
    g.extend(check_keys(sec, kind, member));
    let model = model::build(kind, sec)?;
    let size = g.keep(sec.value_or("size", default_size(&model), |e| {
        let size = e.size_in(MIB, u64::MAX)?;
        if size % 512 != 0 {
            return Err(e.problem(format!("{size} bytes is not a whole number of 512-byte sectors")));
        }
        let least = model.min_size();
        if size < least {
            return Err(e
                .problem(format!(
                    "{} is too small for this `{kind}` device: it needs at least {}",
                    format_size(size),
                    format_size(least)
                ))
                .hint("size is the whole device's; an array needs one chunk per member at least"));
        }
        Ok(size)
    }));
    // MAJORBITS = 12, MINORBITS = 20; only an NFS mount's anonymous device has major 0.
    let anonymous = matches!(model.info().naming, Naming::Anonymous { .. });
    let min_major = if anonymous { 0 } else { 1 };
    let major = g.keep(sec.value_or("major", default_number.0, |e| e.u32(min_major, (1 << 12) - 1)));
    let minor = g.keep(sec.value_or("minor", default_number.1, |e| e.u32(0, (1 << 20) - 1)));
    let fs = size.and_then(|size| g.keep(mount::build(sec, kernel, size)));
    let queue = g.keep_all(queue::build(sec, &model, era_elevator));
    let bdi = g.keep_all(bdi::build(sec));
    let throttle = g.keep_all(throttle::build(sec));
    // An aged file system: new files go where free space is, past what it already holds.
    let used_pct = g.keep(sec.value_or("used", 0, |e| {
        e.u32(0, 95)
            .map_err(|p| p.hint("percent of the device already holding data, e.g. used = 70"))
    }));
    // The device's share of the dirty threshold from writeback before the run (model state).
    let writeout_share_pct = g.keep(sec.value_or("writeout_share", 0, |e| {
        e.u32(0, 100).map_err(|p| {
            p.hint("percent of the machine's recent writeback completions the device holds at the start, e.g. writeout_share = 100 for a disk written just before, alone")
        })
    }));
    let emulate = g.keep(sec.value_or("emulate", false, |e| {
        let on = e.boolean()?;
        match kind {
            _ if !on || wblab_sim::config::can_be_emulated(&model) => Ok(on),
            "loop" => Err(e
                .problem("a `loop` device is already a real device on the measuring machine: there is nothing to emulate")
                .hint("give the model the loop device stands for (hdd, ssd, usb, ...) with emulate = true, or drop emulate")),
            _ => Err(e
                .problem("an NFS mount is a file system, not a block device: it cannot be emulated as one")
                .hint("emulate = true works for every model but `loop` and `nfs`")),
        }
    }));
    match (size, major, minor, fs, queue, bdi, throttle, used_pct, writeout_share_pct, emulate) {
        (
            Some(size),
            Some(major),
            Some(minor),
            Some(fs),
            Some(queue),
            Some(bdi),
            Some(throttle),
            Some(used_pct),
            Some(writeout_share_pct),
            Some(emulate),
        ) if g.is_empty() => Ok(DeviceConfig {
            name,
            major,
            minor,
            size,
            queue,
            bdi,
            model,
            fs,
            throttle,
            used_pct,
            writeout_share_pct,
            emulate,
        }),
        _ => Err(g.sound().expect_err("a part is missing, so a problem was kept")),
    }
}

/// Every key must belong to the device, its queue, its bdi or its model (for raid0: the
/// array's keys and its members' model's).
fn check_keys(sec: &Section<'_>, kind: &str, member: Option<&str>) -> Vec<Problem> {
    let own = model::keys(kind);
    let members = model::member_keys(member);
    let (queue, iosched) = (wblab_sim::config::queue_keys(), queue::tunable_keys());
    let (bdi, throttle) = (bdi::keys(), throttle::keys());
    let groups: [&[&str]; 7] = [IDENTITY_KEYS, &queue, &iosched, &bdi, &throttle, &own, &members];
    let known = |k: &str| groups.iter().any(|g| g.contains(&k));
    let all: Vec<&str> = groups.concat();
    let unknown = |e: &Entry<'_>| {
        if model::is_param(&e.key) {
            return match member {
                Some(m) => e
                    .key_problem(format!("does not apply to model `{kind}` with member_model `{m}`"))
                    .hint(format!(
                        "{kind} parameters: {}; and the members' ({m}): {}",
                        suggest::list(&own),
                        suggest::list(&members)
                    )),
                None => e
                    .key_problem(format!("does not apply to model `{kind}`"))
                    .hint(format!("{kind} parameters: {}", suggest::list(&own))),
            };
        }
        // A bare `scheduler` or `max_ratio` is a known knob missing its directory.
        let hint = suggest::did_you_mean(&e.key, &all).unwrap_or_else(|| {
            "device keys: name, model, size, major, minor, fs, queue/*, queue/iosched/*, bdi/*, throttle/*, and the model's parameters"
                .to_string()
        });
        e.key_problem("unknown key in [[device]]").hint(hint)
    };
    sec.entries.iter().filter(|e| !known(&e.key)).map(unknown).collect()
}

/// A plain identifier ([`crate::names`]): the name becomes `/mnt/<name>/` and, under
/// `wblab measure`, a mount point in the scratch directory.
fn device_name(e: &Entry<'_>) -> Result<String> {
    let name = e.str()?;
    match crate::names::name_problem(name, "device") {
        Some((m, h)) => Err(e.problem(m).hint(format!("{h}, like \"sda\" or \"nvme0n1\""))),
        None => Ok(name.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_paths() {
        assert_eq!(normalize("/sys/block/sda/queue/scheduler".into()), "queue/scheduler");
        assert_eq!(normalize("/sys/class/bdi/8:0/max_ratio".into()), "bdi/max_ratio");
        assert_eq!(normalize("queue/nr_requests".into()), "queue/nr_requests");
    }
}
