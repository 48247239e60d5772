//! `wblab snapshot`: a scenario of a live machine — its kernel, memory, CPUs, `vm.*` sysctls,
//! block devices with their queues and elevators, file systems and cgroups — read from
//! `/proc` and `/sys` (of this machine, or of another one copied into a directory), each line
//! commented with the file it came from. What the model does not take is listed as comments,
//! never an error, and the file is checked as `wblab check` does before it is written.
//!
//! Nothing is written to the machine: the snapshot only reads.

mod block;
mod cgroups;
mod doc;
mod files;
mod sysctl;

pub use sysctl::{parse_pasted, Pasted};

use doc::Doc;
use files::Root;
use std::path::PathBuf;
use toml::Value;

/// What to read.
#[derive(Clone, Debug, Default)]
pub struct SnapshotOptions {
    /// The machine's files: `/` for this one, a directory holding another's `proc/` and
    /// `sys/`; `None` with `pasted`: only the pasted sysctls, on the default machine.
    pub root: Option<PathBuf>,
    /// Pasted `sysctl -a` text and the name it is shown by (`paste.txt`, `-`): read
    /// leniently; its values override the machine's.
    pub pasted: Option<(String, String)>,
    /// The scenario's `name` (default: `snapshot-HOSTNAME`).
    pub name: Option<String>,
    /// Also copy every file the snapshot read into this new (or empty) directory, so that
    /// `--root` on it gives the same scenario on any machine.
    pub save_files: Option<PathBuf>,
}

/// The scenario written, and what the summary line says.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The scenario's text; it passes `wblab check`.
    pub text: String,
    pub devices: usize,
    pub cgroups: usize,
    pub sysctls: usize,
    /// What the machine has that the model does not take (also in the text, as comments).
    pub not_modelled: Vec<String>,
    /// Lines the scenario checker refused (commented out in the text, with why).
    pub refused: Vec<String>,
    /// Files copied into `save_files`.
    pub saved: Option<usize>,
}

/// `6.18.0-1-cloud-amd64` as the scenario takes a release: its `major.minor.patch`.
fn release(osrelease: &str) -> Option<String> {
    let end = osrelease.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(osrelease.len());
    let v = osrelease[..end].trim_end_matches('.');
    (v.split('.').count() >= 2).then(|| v.to_string())
}

/// A results directory's name from a host name: letters, digits, `.`, `_`, `-`.
fn safe_name(host: &str) -> String {
    let s: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(48)
        .collect();
    if s.is_empty() {
        "snapshot".into()
    } else {
        format!("snapshot-{s}")
    }
}

/// Online CPUs from a `0-3,8-11` list.
fn cpu_count(list: &str) -> Option<u64> {
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.trim().parse::<u64>().ok()?.checked_sub(a.trim().parse::<u64>().ok()?)? + 1,
            None => {
                part.trim().parse::<u64>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

/// A `/proc/meminfo` field in bytes.
fn meminfo(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.split(':').next() == Some(field))?;
    let kb: u64 = line.split(':').nth(1)?.trim().trim_end_matches("kB").trim().parse().ok()?;
    kb.checked_mul(1024)
}

fn top(doc: &mut Doc, root: Option<&Root>, pasted: &[sysctl::Sysctl], name: &str) {
    let from_paste = |k: &str| pasted.iter().find(|s| s.key == k).map(|s| (s.value.clone(), s.source.clone()));
    let os =
        from_paste("kernel.osrelease").or_else(|| Some((root?.read("/proc/sys/kernel/osrelease")?, "/proc/sys/kernel/osrelease".into())));
    doc.key("name", Value::String(name.into()), "names the results directory");
    let mut rel = None;
    if let Some((os, src)) = &os {
        match release(os) {
            Some(r) => {
                doc.key("kernel", Value::String(r.clone()), &format!("{src}: {os}"));
                rel = Some(os.clone());
            }
            None => doc.comment(&format!("{src}: `{os}` is not a release the model can place; the kernel is 6.x")),
        }
    }
    let hz = rel.as_ref().and_then(|r| {
        let config = format!("/boot/config-{r}");
        let text = root?.read(&config)?;
        let hz = text.lines().find_map(|l| l.strip_prefix("CONFIG_HZ="))?.parse::<i64>().ok()?;
        Some((hz, config))
    });
    if let Some((hz, src)) = hz {
        doc.key("hz", Value::Integer(hz), &format!("{src}: CONFIG_HZ"));
    }
}

fn machine(doc: &mut Doc, root: &Root) {
    doc.blank();
    doc.table("machine", false);
    let mi = root.read("/proc/meminfo").unwrap_or_default();
    if let Some(total) = meminfo(&mi, "MemTotal") {
        let mib = total >> 20;
        doc.key(
            "memory",
            Value::String(format!("{mib}MiB")),
            &format!("/proc/meminfo: MemTotal {} kB", total / 1024),
        );
        // What neither the page cache nor the free lists hold: the kernel's and the processes'.
        let file = meminfo(&mi, "Active(file)").unwrap_or(0) + meminfo(&mi, "Inactive(file)").unwrap_or(0);
        if let Some(free) = meminfo(&mi, "MemFree") {
            let held = total.saturating_sub(free + file) >> 20;
            let cap = mib / 2;
            let note = if held > cap {
                format!("/proc/meminfo: MemTotal - MemFree - file pages = {held} MiB, at most half of memory here")
            } else {
                "/proc/meminfo: MemTotal - MemFree - Active(file) - Inactive(file), at the snapshot".to_string()
            };
            doc.key("unreclaimable", Value::String(format!("{}MiB", held.min(cap))), &note);
        }
    }
    let online = root.read("/sys/devices/system/cpu/online");
    if let Some(n) = online.as_deref().and_then(cpu_count) {
        doc.key("cpus", Value::Integer(n as i64), "/sys/devices/system/cpu/online");
    }
    if root.is_live() {
        // SAFETY: sysconf has no memory effects.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page > 4096 {
            doc.key("page_size", Value::Integer(page as i64), "sysconf(_SC_PAGESIZE)");
        }
    }
}

fn sysctls(doc: &mut Doc, cat: &wblab_scenario::Catalogue, all: &[sysctl::Sysctl], not_modelled: &mut Vec<String>) -> usize {
    let vm: Vec<&sysctl::Sysctl> = all.iter().filter(|s| s.key.starts_with("vm.")).collect();
    if vm.is_empty() {
        return 0;
    }
    doc.blank();
    doc.table("sysctl", false);
    let mut written = 0;
    // The last value of a key wins (a paste after the machine's files), written once.
    for (i, s) in vm.iter().enumerate() {
        if vm[i + 1..].iter().any(|later| later.key == s.key) {
            continue;
        }
        if cat.sysctl.contains(&s.key.as_str()) {
            doc.key(&s.key, sysctl::value(&s.value), &s.source);
            written += 1;
        } else {
            not_modelled.push(format!("{} = {}", s.key, s.value));
        }
    }
    written
}

/// Reads the machine (and the paste) and writes the scenario.
pub fn snapshot(o: &SnapshotOptions) -> Result<Snapshot, String> {
    let root = o.root.as_deref().map(Root::new);
    if let Some(r) = &root {
        if !r.is_dir("/proc") && !r.is_dir("/sys") {
            return Err(format!(
                "{} holds neither proc/ nor sys/: give a copy of a machine's /proc and /sys files",
                r.path("/").display()
            ));
        }
    }
    let pasted = o
        .pasted
        .as_ref()
        .map(|(file, text)| sysctl::parse_pasted(text, file))
        .unwrap_or_default();
    let cat = wblab_scenario::catalogue();
    let mounts = root
        .as_ref()
        .map(|r| crate::sys::parse_mounts(&r.read("/proc/mounts").unwrap_or_default()))
        .unwrap_or_default();
    let host = pasted
        .sysctls
        .iter()
        .find(|s| s.key == "kernel.hostname")
        .map(|s| s.value.clone())
        .or_else(|| root.as_ref()?.read("/proc/sys/kernel/hostname"))
        .unwrap_or_default();
    let name = o.name.clone().unwrap_or_else(|| safe_name(&host));
    let mut not_modelled = Vec::new();

    let mut doc = Doc::default();
    let what = match (&root, &o.pasted) {
        (Some(r), _) if r.is_live() => format!("this machine ({host})"),
        (Some(r), _) => format!("the machine whose files are in {}", r.path("/").display()),
        (None, Some((f, _))) => format!("the sysctls pasted in {f}, on the default machine"),
        (None, None) => return Err("nothing to read: give a machine root or pasted sysctls".into()),
    };
    doc.comment(&format!("A scenario of {what}, written by `wblab snapshot`."));
    doc.comment("Each value says where it came from; what the model does not take is listed at the end.");
    doc.comment("Device models keep their default timings: `wblab calibrate DIR` (a directory on the device) fits them.");
    doc.blank();
    top(&mut doc, root.as_ref(), &pasted.sysctls, &name);
    if let Some(r) = &root {
        machine(&mut doc, r);
    }
    let mut all = root.as_ref().map(sysctl::read_proc).unwrap_or_default();
    all.extend(pasted.sysctls.iter().cloned());
    let n_sysctls = sysctls(&mut doc, &cat, &all, &mut not_modelled);

    let devices = root.as_ref().map(|r| block::read(r, &mounts));
    let (disks, left_out) = devices.map(|d| (d.disks, d.left_out)).unwrap_or_default();
    let devnums: Vec<String> = disks.iter().map(|d| d.devnum.clone()).collect();
    let tree = root.as_ref().map(|r| cgroups::read(r, &mounts, &devnums)).unwrap_or_default();
    if let Some(r) = &root {
        block::write(&mut doc, r, &cat, &disks, &tree.root_throttle, &mut not_modelled);
    }
    cgroups::write(&mut doc, &tree);
    not_modelled.extend(tree.not_modelled.iter().cloned());

    doc.blank();
    doc.comment("The workload: a snapshot holds the machine, not what ran on it. For example:");
    let busiest = disks
        .iter()
        .find(|d| d.holds_root)
        .or_else(|| disks.iter().find(|d| d.model != "loop"))
        .or(disks.first());
    let file = busiest.map_or("/mnt/sda/big".to_string(), |d| format!("/mnt/{}/big", d.name));
    for l in [
        "[[task]]",
        "name = \"copy\"",
        "job = \"dd\"",
        &format!("file = \"{file}\""),
        "bs = \"1MiB\"",
    ] {
        doc.comment(&format!("  {l}"));
    }
    if !left_out.is_empty() || !not_modelled.is_empty() || !pasted.skipped.is_empty() {
        doc.blank();
        doc.comment("Not modelled (kept here for the record; the model runs without them):");
        for l in left_out.iter().chain(&not_modelled) {
            doc.comment(&format!("  {l}"));
        }
        if let (false, Some((f, _))) = (pasted.skipped.is_empty(), &o.pasted) {
            let shown: Vec<String> = pasted.skipped.iter().take(10).map(|n| n.to_string()).collect();
            let more = if pasted.skipped.len() > 10 { ", ..." } else { "" };
            doc.comment(&format!(
                "  {f}: {} lines were not `key = value` (lines {}{more})",
                pasted.skipped.len(),
                shown.join(", ")
            ));
        }
    }
    let refused = doc
        .settle(&format!("{name}.toml"))
        .map_err(|e| format!("the snapshot does not check, which is a wblab bug:\n{e}"))?;
    let saved = match (&o.save_files, &root) {
        (Some(dir), Some(r)) => Some(
            r.save(dir)
                .map_err(|e| format!("cannot save the files read into {}: {e}", dir.display()))?,
        ),
        (Some(_), None) => return Err("--save-files copies a machine's files: it needs a machine (this one, or --root)".into()),
        _ => None,
    };
    Ok(Snapshot {
        text: doc.render(),
        devices: disks.len(),
        cgroups: tree.group_count(),
        sysctls: n_sysctls,
        not_modelled: left_out.into_iter().chain(not_modelled).collect(),
        refused,
        saved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_and_cpu_lists_read_as_the_kernel_prints_them() {
        assert_eq!(release("6.18.0-1-cloud-amd64").as_deref(), Some("6.18.0"));
        assert_eq!(release("4.9.337").as_deref(), Some("4.9.337"));
        assert_eq!(release("2.6.38-rc7").as_deref(), Some("2.6.38"));
        assert_eq!(release("weird"), None);
        assert_eq!(cpu_count("0-3,8-11"), Some(8));
        assert_eq!(cpu_count("0"), Some(1));
        assert_eq!(cpu_count("3-1"), None);
        assert_eq!(safe_name("web-01.prod"), "snapshot-web-01.prod");
        assert_eq!(safe_name("../../x"), "snapshot-....x");
    }
}
