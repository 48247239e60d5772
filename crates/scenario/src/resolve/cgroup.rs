//! `[[cgroup]]`: the cgroup tree, with the files of each group as the kernel names them
//! (`memory.max`, or `memory.limit_in_bytes` on a cgroup v1 hierarchy). The version follows
//! from the files: v1 files make a v1 machine, and the two cannot be mixed.

use crate::error::{Problem, Result};
use crate::section::{Entry, Section};
use crate::units::SIZE_SYNTAX;
use wblab_sim::config::{
    cgroup_file, throttle_by_io_max, BlkThrottleConfig, CgroupConfig, CgroupTree, CgroupVersion, DeviceConfig, KnobValue, CGROUP_FILES,
    CGROUP_FILES_REFUSED, THROTTLE_KNOBS,
};
use wblab_sim::units::PAGE_SIZE;

/// Keys of a `[[cgroup]]`: its `path`, then the files of the table.
pub(super) fn keys() -> Vec<&'static str> {
    std::iter::once("path").chain(CGROUP_FILES.iter().map(|f| f.name)).collect()
}

/// The most groups a scenario may declare.
const MAX_GROUPS: usize = 256;

/// Keys as written: `memory.max = ...` is a nested table in TOML, flattened back with '.'.
pub(super) fn normalize(key: String) -> String {
    key
}

/// The tree from the `[[cgroup]]` sections, in file order (a parent before its children).
pub(super) fn build(root_at: usize, sections: &[Section<'_>], devices: &[DeviceConfig]) -> Result<CgroupTree> {
    let mut tree = CgroupTree::default();
    let mut version_from: Option<(&Entry<'_>, CgroupVersion)> = None;
    if sections.len() > MAX_GROUPS {
        return Err(Problem::new(root_at, format!("{} cgroups; at most {MAX_GROUPS}", sections.len())).key("cgroup"));
    }
    for sec in sections {
        if let Some((e, refused)) = sec
            .entries
            .iter()
            .find_map(|e| CGROUP_FILES_REFUSED.iter().find(|r| r.name == e.key).map(|r| (e, r)))
        {
            return Err(match refused.instead {
                Some((what, hint)) => e.key_problem(format!("`{}` is {what}", e.key)).hint(hint),
                None => e
                    .key_problem(format!("`{}` is a cgroup file wblab does not model yet", e.key))
                    .hint(format!("modelled: {}", keys()[1..].join(", "))),
            });
        }
        sec.reject_unknown(&keys(), "cgroup file")?;
        for e in &sec.entries {
            let Some(v) = cgroup_file(&e.key).map(|f| f.version) else {
                continue;
            };
            match version_from {
                Some((first, was)) if was != v => {
                    return Err(e
                        .key_problem(format!(
                            "`{}` is a cgroup {} file, but `{}` made this a {} hierarchy",
                            e.key,
                            name(v),
                            first.key,
                            name(was)
                        ))
                        .hint("a machine mounts one hierarchy: use memory.max/memory.high (v2) or memory.limit_in_bytes (v1)"))
                }
                None => version_from = Some((e, v)),
                _ => {}
            }
        }
        let g = group(sec, &tree, devices)?;
        tree.groups.push(g);
    }
    tree.version = version_from.map_or(CgroupVersion::V2, |(_, v)| v);
    Ok(tree)
}

fn name(v: CgroupVersion) -> &'static str {
    match v {
        CgroupVersion::V1 => "v1",
        CgroupVersion::V2 => "v2",
    }
}

fn group(sec: &Section<'_>, tree: &CgroupTree, devices: &[DeviceConfig]) -> Result<CgroupConfig> {
    let Some(e) = sec.get("path") else {
        return Err(sec
            .missing("path", "this [[cgroup]] has no path")
            .hint("add path = \"/pod-a\": the group's place below the cgroup root"));
    };
    let path = e.str()?.to_string();
    let hint = "an absolute path of names, e.g. \"/pods/web\"";
    let parts: Vec<&str> = path.strip_prefix('/').unwrap_or("").split('/').collect();
    if !path.starts_with('/') || path.len() == 1 || parts.iter().any(|p| p.is_empty() || *p == "." || *p == "..") {
        return Err(e.problem(format!("`{path}` is not a cgroup path")).hint(hint));
    }
    // Each part becomes a directory in a cgroup hierarchy.
    if let Some((m, h)) = parts.iter().find_map(|p| crate::names::name_problem(p, "cgroup")) {
        return Err(e.problem(format!("`{path}`: {m}")).hint(h));
    }
    if tree.find(&path).is_some() {
        return Err(e
            .problem(format!("cgroup `{path}` is declared twice"))
            .hint("merge the two [[cgroup]] tables"));
    }
    let parent_path = &path[..path.rfind('/').expect("starts with /")];
    let parent = if parent_path.is_empty() {
        None
    } else {
        match tree.find(parent_path) {
            Some(i) => Some(i),
            None => {
                return Err(e.problem(format!("the parent `{parent_path}` is not declared above")).hint(format!(
                    "declare [[cgroup]] path = \"{parent_path}\" before this group (mkdir makes parents first)"
                )))
            }
        }
    };
    let mut g = CgroupConfig {
        path,
        parent,
        memory_max: None,
        memory_high: None,
        memory_low: None,
        io_max: Vec::new(),
        io_latency: Vec::new(),
        bfq_weight: None,
        bfq_weight_device: Vec::new(),
    };
    sec.read("memory.max", &mut g.memory_max, limit)?;
    sec.read("memory.limit_in_bytes", &mut g.memory_max, limit)?;
    sec.read("memory.high", &mut g.memory_high, limit)?;
    sec.read("memory.low", &mut g.memory_low, protection)?;
    if let Some(e) = sec.get("io.max") {
        for line in lines(e)? {
            io_max_line(e, line, devices, &mut g.io_max)?;
        }
    }
    if let Some(e) = sec.get("io.latency") {
        for line in lines(e)? {
            let hint = "e.g. \"sdb target=10000\" (µs, as the kernel takes it) or \"sdb target=10ms\"";
            let (dev, rest) = line
                .trim()
                .split_once(char::is_whitespace)
                .ok_or_else(|| e.problem(format!("`{line}` is not `DEVICE target=...`")).hint(hint))?;
            let d = device_of(e, dev, devices)?;
            let v = rest
                .trim()
                .strip_prefix("target=")
                .ok_or_else(|| e.problem(format!("`{rest}` is not target=...")).hint(hint))?;
            // `target=max` lifts the target, as the kernel takes it.
            let ns = match v.parse::<u64>() {
                _ if v == "max" => 0,
                Ok(us) => us.saturating_mul(1000),
                Err(_) => crate::units::parse_duration(v).map_err(|_| e.problem(format!("`{v}` is not a latency target")).hint(hint))?,
            };
            if ns == 0 && v != "max" {
                return Err(e.problem("target=0").hint("a target of at least 1 µs; target=max for none"));
            }
            g.io_latency.retain(|(x, _)| *x != d);
            if ns > 0 {
                g.io_latency.push((d, ns));
            }
        }
    }
    for key in ["io.bfq.weight", "blkio.bfq.weight"] {
        if let Some(e) = sec.get(key) {
            bfq_weight(e, devices, &mut g)?;
        }
    }
    if let Some(e) = sec.get("blkio.bfq.weight_device") {
        for line in lines(e)? {
            match bfq_weight_line(e, line, devices)? {
                (Some(d), w) => set_device_weight(&mut g, d, w),
                (None, _) => {
                    return Err(e
                        .problem(format!("`{line}` names no device"))
                        .hint("e.g. \"8:16 300\": the device, then its weight (1-1000)"))
                }
            }
        }
    }
    for (key, field) in THROTTLE_KNOBS.iter().map(|k| (k.v1_file, k.io_max)) {
        if let Some(e) = sec.get(key) {
            for line in lines(e)? {
                let (dev, value) = line.trim().split_once(char::is_whitespace).ok_or_else(|| {
                    e.problem(format!("`{line}` is not `DEVICE VALUE`"))
                        .hint("e.g. \"8:16 10485760\" or \"sdb 10485760\": the device, then the limit (0: none)")
                })?;
                let d = device_of(e, dev, devices)?;
                io_max_set(e, &mut g.io_max, d, field, value.trim(), true)?;
            }
        }
    }
    Ok(g)
}

/// `io.bfq.weight` as `bfq_io_set_weight` takes it: `W` or `default W` sets the group's
/// weight, `DEVICE W` a device's own, `DEVICE default` drops it; an array gives one line
/// each. A bare integer is the group's weight.
fn bfq_weight(e: &Entry<'_>, devices: &[DeviceConfig], g: &mut CgroupConfig) -> Result<()> {
    if let toml::de::DeValue::Integer(_) = e.value {
        let w = e.int(i64::MIN, i64::MAX)?;
        g.bfq_weight = Some(weight_in_range(e, &w.to_string())?);
        return Ok(());
    }
    for line in lines(e)? {
        match bfq_weight_line(e, line, devices)? {
            (None, w) => g.bfq_weight = w,
            (Some(d), w) => set_device_weight(g, d, w),
        }
    }
    Ok(())
}

/// One line of a bfq weight file: the device it names (if any) and the weight (`None`:
/// `default`, back to the group's).
fn bfq_weight_line(e: &Entry<'_>, line: &str, devices: &[DeviceConfig]) -> Result<(Option<usize>, Option<u64>)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let hint = "e.g. 200, \"default 200\", or \"sdb 300\" / \"8:16 300\" for one device (weights 1-1000)";
    match words.as_slice() {
        [w] => Ok((None, Some(weight_in_range(e, w)?))),
        ["default", w] => Ok((None, Some(weight_in_range(e, w)?))),
        [dev, "default"] => Ok((Some(device_of(e, dev, devices)?), None)),
        [dev, w] => Ok((Some(device_of(e, dev, devices)?), Some(weight_in_range(e, w)?))),
        _ => Err(e.problem(format!("`{line}` is not a bfq weight")).hint(hint)),
    }
}

fn weight_in_range(e: &Entry<'_>, text: &str) -> Result<u64> {
    match text.parse::<u64>() {
        Ok(w) if (1..=1000).contains(&w) => Ok(w),
        Ok(w) => Err(e
            .problem(format!("weight {w} is out of range"))
            .hint("bfq takes weights from 1 to 1000 (BFQ_MIN_WEIGHT..BFQ_MAX_WEIGHT); the default is 100")),
        Err(_) => Err(e
            .problem(format!("`{text}` is not a weight"))
            .hint("an integer from 1 to 1000, e.g. 200")),
    }
}

fn set_device_weight(g: &mut CgroupConfig, d: usize, w: Option<u64>) {
    g.bfq_weight_device.retain(|(x, _)| *x != d);
    if let Some(w) = w {
        g.bfq_weight_device.push((d, w));
    }
}

/// A file's lines: one string, or an array of strings (one per device).
fn lines<'a>(e: &'a Entry<'_>) -> Result<Vec<&'a str>> {
    match e.value {
        toml::de::DeValue::Array(items) => items
            .iter()
            .map(|v| match v.get_ref() {
                toml::de::DeValue::String(s) => Ok(s.as_ref()),
                _ => Err(e
                    .problem("expected strings, one per device")
                    .hint("e.g. [\"sda wbps=10MiB\", \"sdb riops=100\"]")),
            })
            .collect(),
        _ => Ok(vec![e.str()?]),
    }
}

/// A device as the cgroup files name it: `MAJ:MIN` or, here, its name.
fn device_of(e: &Entry<'_>, text: &str, devices: &[DeviceConfig]) -> Result<usize> {
    let text = text.trim();
    let found = match text.split_once(':') {
        Some((maj, min)) => match (maj.parse::<u32>(), min.parse::<u32>()) {
            (Ok(maj), Ok(min)) => devices.iter().position(|d| d.major == maj && d.minor == min),
            _ => None,
        },
        None => devices.iter().position(|d| d.name == text),
    };
    found.ok_or_else(|| {
        let known: Vec<String> = devices.iter().map(|d| format!("{} ({}:{})", d.name, d.major, d.minor)).collect();
        e.problem(format!("no device `{text}`"))
            .hint(format!("devices: {}", known.join(", ")))
    })
}

/// One line of `io.max`: `DEVICE key=value...` with keys rbps, wbps, riops, wiops and
/// values a number, a size/rate with a unit, or `max`.
fn io_max_line(e: &Entry<'_>, line: &str, devices: &[DeviceConfig], out: &mut Vec<(usize, BlkThrottleConfig)>) -> Result<()> {
    let mut words = line.split_whitespace();
    let hint = "e.g. \"sdb wbps=10MiB riops=max\" or \"8:16 rbps=1048576\": the device, then rbps, wbps, riops, wiops";
    let Some(dev) = words.next() else {
        return Err(e.problem("an empty io.max line").hint(hint));
    };
    let d = device_of(e, dev, devices)?;
    let mut any = false;
    for w in words {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| e.problem(format!("`{w}` is not key=value")).hint(hint))?;
        io_max_set(e, out, d, k, v, false)?;
        any = true;
    }
    if !any {
        return Err(e.problem(format!("`{line}` sets no limit")).hint(hint));
    }
    Ok(())
}

/// Set limit `key` (rbps, wbps, riops, wiops) of device `d`. `zero_is_none`: v1 files take 0
/// for no limit; io.max refuses 0 as the kernel does (`max` lifts a limit).
fn io_max_set(
    e: &Entry<'_>,
    out: &mut Vec<(usize, BlkThrottleConfig)>,
    d: usize,
    key: &str,
    value: &str,
    zero_is_none: bool,
) -> Result<()> {
    let slot = match out.iter().position(|(dev, _)| *dev == d) {
        Some(i) => i,
        None => {
            out.push((d, BlkThrottleConfig::default()));
            out.len() - 1
        }
    };
    let Some(knob) = throttle_by_io_max(key) else {
        return Err(e
            .problem(format!("unknown io.max key `{key}`"))
            .hint("keys: rbps, wbps (bytes/s), riops, wiops (I/Os per second)"));
    };
    let iops = knob.is_iops();
    let parsed = if value == "max" {
        None
    } else {
        let n = if iops {
            value.parse::<u64>().ok()
        } else {
            value
                .parse::<u64>()
                .ok()
                .or_else(|| crate::units::parse_rate(value).ok())
                .or_else(|| crate::units::parse_size(value).ok())
        };
        match n {
            Some(0) if zero_is_none => None,
            Some(0) => return Err(e.problem(format!("{key}=0")).hint("the kernel refuses 0; write max for no limit")),
            Some(n) if iops && n >= u64::from(u32::MAX) => None,
            Some(n) => Some(n),
            None => {
                let unit = if iops {
                    "an integer"
                } else {
                    "bytes per second, e.g. 10485760 or \"10MiB\""
                };
                return Err(e.problem(format!("`{value}` is not a {key} value")).hint(format!("{unit}, or max")));
            }
        }
    };
    (knob.knob.set)(&mut out[slot].1, KnobValue::Uint(parsed.unwrap_or(0)));
    Ok(())
}

/// The smallest memory limit accepted: below it a writer's allocation (up to a 2 MiB folio)
/// and its group's readahead would not fit beside the writeback in flight, and the kernel
/// would call the OOM killer, which wblab does not model.
const MIN_LIMIT: u64 = 16 << 20;

/// A memory limit: bytes with a unit, or `"max"` (no limit), as `page_counter_memparse`
/// takes it; rounded down to whole pages. At least [`MIN_LIMIT`].
fn limit(e: &Entry<'_>) -> Result<Option<u64>> {
    if let Ok("max") = e.str().map(str::trim) {
        return Ok(None);
    }
    let bytes = e.size().map_err(|p| p.hint(format!("{SIZE_SYNTAX}, or \"max\" for no limit")))?;
    if bytes < MIN_LIMIT {
        return Err(e
            .problem(format!("{} is below 16 MiB", crate::units::format_size(bytes)))
            .hint("a group that small would OOM-kill its writer, which wblab does not model; e.g. \"512MiB\", or \"max\""));
    }
    Ok(Some(bytes / PAGE_SIZE * PAGE_SIZE))
}

/// `memory.low`: bytes protected from global reclaim, or `"max"` (all of the group's); 0 is
/// none.
fn protection(e: &Entry<'_>) -> Result<Option<u64>> {
    if let Ok("max") = e.str().map(str::trim) {
        return Ok(Some(u64::MAX));
    }
    let bytes = e
        .size()
        .map_err(|p| p.hint(format!("{SIZE_SYNTAX}, or \"max\" to protect all of the group's memory")))?;
    Ok((bytes > 0).then_some(bytes / PAGE_SIZE * PAGE_SIZE))
}
