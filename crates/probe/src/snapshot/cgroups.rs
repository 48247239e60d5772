//! The cgroup tree: the groups whose memory and io files the model reads, where they differ
//! from the kernel's defaults, with their ancestors (a `[[cgroup]]` needs its parent declared).
//! cgroup v2 where the memory or io controller is on the unified hierarchy, else v1's memory
//! and blkio hierarchies merged by path — a scenario cannot mix the two.

use super::doc::Doc;
use super::files::Root;
use crate::sys::MountLine;
use std::collections::BTreeMap;
use toml::Value;

/// How deep and how many directories the walk visits: a busy host's tree is large, and the
/// groups set by hand sit near the top.
const MAX_DEPTH: usize = 8;
const MAX_GROUPS_VISITED: usize = 4000;
/// The most groups written; beyond, the file says how many were left out.
const MAX_GROUPS_WRITTEN: usize = 64;
/// v1's `memory.limit_in_bytes` reads this or more when unlimited (PAGE_COUNTER_MAX pages).
const V1_UNLIMITED: u64 = 1 << 62;

/// One `[[cgroup]]`'s files, in the order written, each with its source path.
type Files = Vec<(String, Value, String)>;

/// The hierarchy found, the groups to write (path → files), and the v1 root's throttle rules
/// (`throttle/*` of the devices).
#[derive(Default)]
pub struct Tree {
    pub version: Option<u8>,
    groups: BTreeMap<String, Files>,
    pub root_throttle: Vec<(String, String, u64, String)>,
    pub not_modelled: Vec<String>,
    /// The walk stopped at [`MAX_GROUPS_VISITED`].
    truncated: bool,
}

/// Mount points of the cgroup hierarchies in `/proc/mounts`: the v2 one, v1 memory, v1 blkio.
fn hierarchies(mounts: &[MountLine]) -> (Option<String>, Option<String>, Option<String>) {
    let v2 = mounts.iter().find(|m| m.2 == "cgroup2").map(|m| m.1.clone());
    let v1 = |c: &str| {
        mounts
            .iter()
            .find(|m| m.2 == "cgroup" && m.3.split(',').any(|o| o == c))
            .map(|m| m.1.clone())
    };
    (v2, v1("memory"), v1("blkio"))
}

/// Directories below `top` (relative paths `/a/b`), breadth first, bounded.
fn walk(root: &Root, top: &str, truncated: &mut bool) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut i = 0;
    while i < out.len() {
        let rel = out[i].clone();
        i += 1;
        if rel.matches('/').count() >= MAX_DEPTH {
            continue;
        }
        for name in root.list(&format!("{top}{rel}")) {
            if out.len() >= MAX_GROUPS_VISITED {
                *truncated = true;
                return out;
            }
            let child = format!("{rel}/{name}");
            if root.is_dir(&format!("{top}{child}")) {
                out.push(child);
            }
        }
    }
    out
}

/// Lines of a per-device file (`io.max`, `blkio.throttle.*_device`) whose device is one of
/// the snapshot's; the others are noted.
fn device_lines(text: &str, devnums: &[String], source: &str, notes: &mut Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let dev = line.split_whitespace().next().unwrap_or("");
        if devnums.iter().any(|d| d == dev) {
            out.push(line.to_string());
        } else if dev != "default" {
            notes.push(format!("{source}: `{line}` is for a device the snapshot does not hold"));
        }
    }
    out
}

fn lines_value(lines: Vec<String>) -> Value {
    Value::Array(lines.into_iter().map(Value::String).collect())
}

impl Tree {
    /// Groups with settings of their own.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    fn set(&mut self, path: &str, key: &str, value: Value, source: String) {
        self.groups
            .entry(path.to_string())
            .or_default()
            .push((key.to_string(), value, source));
    }

    fn v2_group(&mut self, root: &Root, top: &str, rel: &str, devnums: &[String]) {
        let file = |f: &str| format!("{top}{rel}/{f}");
        for key in ["memory.max", "memory.high"] {
            match root.read(&file(key)) {
                Some(v) if v != "max" => match v.parse::<i64>() {
                    Ok(b) => self.set(rel, key, Value::Integer(b), file(key)),
                    Err(_) => self.not_modelled.push(format!("{}: unreadable value `{v}`", file(key))),
                },
                _ => {}
            }
        }
        if let Some(v) = root.read(&file("memory.low")).filter(|v| v != "0") {
            let value = v.parse::<i64>().map_or(Value::String(v.clone()), Value::Integer);
            self.set(rel, "memory.low", value, file("memory.low"));
        }
        for key in ["io.max", "io.latency"] {
            if let Some(text) = root.read(&file(key)) {
                let lines = device_lines(&text, devnums, &file(key), &mut self.not_modelled);
                if !lines.is_empty() {
                    self.set(rel, key, lines_value(lines), file(key));
                }
            }
        }
        if let Some(text) = root.read(&file("io.bfq.weight")) {
            let mut lines: Vec<String> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && *l != "default 100")
                .map(String::from)
                .collect();
            lines.retain(|l| l.starts_with("default") || devnums.iter().any(|d| l.split_whitespace().next() == Some(d.as_str())));
            if !lines.is_empty() {
                self.set(rel, "io.bfq.weight", lines_value(lines), file("io.bfq.weight"));
            }
        }
        for (key, default) in [("io.weight", "default 100"), ("memory.min", "0"), ("memory.swap.max", "max")] {
            if let Some(v) = root.read(&file(key)).filter(|v| v != default && !v.is_empty()) {
                self.not_modelled.push(format!("{} = {}", file(key), v.replace('\n', "; ")));
            }
        }
    }

    fn v1_memory(&mut self, root: &Root, top: &str, rel: &str) {
        let f = format!("{top}{rel}/memory.limit_in_bytes");
        if let Some(b) = root.read_u64(&f).filter(|&b| b < V1_UNLIMITED) {
            self.set(rel, "memory.limit_in_bytes", Value::Integer(b as i64), f);
        }
    }

    fn v1_blkio(&mut self, root: &Root, top: &str, rel: &str, devnums: &[String]) {
        for dir in ["read", "write"] {
            for unit in ["bps", "iops"] {
                let key = format!("blkio.throttle.{dir}_{unit}_device");
                let f = format!("{top}{rel}/{key}");
                let Some(text) = root.read(&f) else { continue };
                let lines = device_lines(&text, devnums, &f, &mut self.not_modelled);
                if rel.is_empty() {
                    // The root's rules are the device's own `throttle/*` keys.
                    for l in lines {
                        let mut it = l.split_whitespace();
                        if let (Some(dev), Some(Ok(v))) = (it.next(), it.next().map(str::parse::<u64>)) {
                            self.root_throttle
                                .push((dev.to_string(), format!("throttle/{dir}_{unit}"), v, f.clone()));
                        }
                    }
                } else if !lines.is_empty() {
                    self.set(rel, &key, lines_value(lines), f);
                }
            }
        }
        let w = format!("{top}{rel}/blkio.bfq.weight");
        if let Some(v) = root.read(&w).filter(|v| v != "100" && !rel.is_empty()) {
            let value = v.parse::<i64>().map_or(Value::String(v.clone()), Value::Integer);
            self.set(rel, "blkio.bfq.weight", value, w);
        }
        let wd = format!("{top}{rel}/blkio.bfq.weight_device");
        if let Some(text) = root.read(&wd).filter(|_| !rel.is_empty()) {
            let lines = device_lines(&text, devnums, &wd, &mut self.not_modelled);
            if !lines.is_empty() {
                self.set(rel, "blkio.bfq.weight_device", lines_value(lines), wd);
            }
        }
    }
}

/// Reads the tree; `devnums` are the snapshot's devices (`MAJ:MIN`).
pub fn read(root: &Root, mounts: &[MountLine], devnums: &[String]) -> Tree {
    let mut t = Tree::default();
    let (v2, mem1, blk1) = hierarchies(mounts);
    let v2_controllers = v2
        .as_ref()
        .and_then(|m| root.read(&format!("{m}/cgroup.controllers")))
        .unwrap_or_default();
    let on_v2 = v2_controllers.split_whitespace().any(|c| c == "memory" || c == "io");
    let mut truncated = false;
    if let (true, Some(top)) = (on_v2, &v2) {
        t.version = Some(2);
        for rel in walk(root, top, &mut truncated).into_iter().filter(|r| !r.is_empty()) {
            t.v2_group(root, top, &rel, devnums);
        }
    } else if mem1.is_some() || blk1.is_some() {
        t.version = Some(1);
        if let Some(top) = &mem1 {
            for rel in walk(root, top, &mut truncated).into_iter().filter(|r| !r.is_empty()) {
                t.v1_memory(root, top, &rel);
            }
        }
        if let Some(top) = &blk1 {
            for rel in walk(root, top, &mut truncated) {
                t.v1_blkio(root, top, &rel, devnums);
            }
        }
    }
    t.truncated = truncated;
    t
}

/// `[[cgroup]]` tables: each group with settings, after its ancestors.
pub fn write(doc: &mut Doc, tree: &Tree) {
    let mut paths: Vec<String> = Vec::new();
    for path in tree.groups.keys() {
        let mut at = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            at = format!("{at}/{part}");
            if !paths.contains(&at) {
                paths.push(at.clone());
            }
        }
    }
    // Parents before children: a path sorts before every path it prefixes.
    paths.sort();
    let left = paths.len().saturating_sub(MAX_GROUPS_WRITTEN);
    if tree.version.is_some() && !paths.is_empty() {
        doc.blank();
        doc.comment(&format!(
            "cgroup v{}: the groups whose memory and io files differ from the kernel's defaults, with their parents.",
            tree.version.unwrap_or(2)
        ));
        doc.comment("Tasks join one with `cgroup = \"PATH\"`.");
    }
    for path in paths.iter().take(MAX_GROUPS_WRITTEN) {
        doc.blank();
        doc.table("cgroup", true);
        doc.key("path", Value::String(path.clone()), "");
        for (k, v, src) in tree.groups.get(path).map(Vec::as_slice).unwrap_or_default() {
            doc.key(k, v.clone(), src);
        }
    }
    if left > 0 {
        doc.comment(&format!(
            "... and {left} more groups with settings, left out (the first {MAX_GROUPS_WRITTEN} are written)"
        ));
    }
    if tree.truncated {
        doc.comment(&format!(
            "the cgroup tree has more than {MAX_GROUPS_VISITED} groups; the first ones were read"
        ));
    }
}
