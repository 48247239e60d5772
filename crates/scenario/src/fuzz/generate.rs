//! Random scenario files over every key of the [`Catalogue`]: mostly values in their usual
//! ranges (so that about half the files are valid and run), some at the edges of what the
//! parser accepts, a few far outside or of the wrong type.

use super::shapes::{self, Shape};
use crate::Catalogue;
use std::fmt::Write as _;
use wblab_sim::RngStream;

/// Values of the wrong type or absurd size, tried in place of any value.
pub(super) const WILD: &[&str] = &[
    "-1",
    "0",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "1e999",
    "1.5",
    "nan",
    "\"\"",
    "\"x\"",
    "\"-4k\"",
    "\"99999999999999999999999h\"",
    "\"16EiB\"",
    "\"0.3ns\"",
    "\"4 KiB\"",
    "[]",
    "[1, \"a\"]",
    "{}",
    "true",
    "1979-05-27",
    // Hostile strings: what a file handed to `wblab measure` (run as root) might hold.
    "\"x\\nexec_prerun=touch /tmp/wblab-pwned\"",
    "\"..\"",
    "\"/etc/passwd\"",
    "\"/mnt/sda/../../etc/shadow\"",
    "\"\\u0000\"",
    "\"\\u001b[2J\"",
    "\"a\\u202eb\"",
    "\"$(id)\"",
    "\"-rf\"",
    "\"ünïcödé\"",
];

const RELEASES: &[&str] = &[
    "2.4.7",
    "2.4.17",
    "2.4.20-ac",
    "2.5.38",
    "2.5.60",
    "2.6.6",
    "2.6.7",
    "2.6.18",
    "2.6.20",
    "2.6.22",
    "2.6.24",
    "2.6.32",
    "2.6.38",
    "2.6.38-rc7",
    "3.1",
    "3.2",
    "4.9",
    "4.10",
    "4.19",
    "5.10",
    "6.x",
    "6.18.2",
];
/// Releases the parser refuses (too old, too new, not a version).
const BAD_RELEASES: &[&str] = &["7.0", "1.0", "2.6", "2.3.99", "linux"];

/// Keys whose values only some kernels or machines accept: set less often, so that about half
/// the files stay valid.
const RARE: &[&str] = &[
    "highmem",
    "page_wait_buckets",
    "vm.bdflush",
    "queue/scheduler",
    "seek_track_to_track",
    "seek_full_stroke",
];

/// How often a key of a section is set.
fn rate_of(key: &str, p: f64) -> f64 {
    if key.starts_with("queue/iosched/") {
        // Some thirty tunables across the elevators, each an error without its elevator:
        // together about as often as one rare key.
        p / 15.0
    } else if RARE.contains(&key) || key.starts_with("vm.bdflush.") {
        p / 5.0
    } else {
        p
    }
}

/// One generated case: the scenario text, and whether it was mutated after generation.
pub struct Case {
    pub text: String,
    pub mutated: bool,
}

/// Generates cases; case `i` of seed `s` is the same text on every machine and run.
pub struct Generator {
    seed: u64,
    cat: Catalogue,
}

/// What the task keys of one file may refer to.
#[derive(Default)]
struct Ctx {
    devices: Vec<String>,
    cgroups: Vec<String>,
}

impl Generator {
    pub fn new(seed: u64) -> Generator {
        Generator {
            seed,
            cat: crate::catalogue(),
        }
    }

    /// The catalogue it draws keys from.
    pub fn catalogue(&self) -> &Catalogue {
        &self.cat
    }

    pub fn case(&self, i: u64) -> Case {
        let mut r = RngStream::new(self.seed, &format!("fuzz/{i}"));
        let mut text = self.scenario(&mut r);
        let mutated = chance(&mut r, 0.2);
        if mutated {
            for _ in 0..=r.below(2) {
                text = super::mutate::mutate(&mut r, &text);
            }
        }
        Case { text, mutated }
    }

    fn scenario(&self, r: &mut RngStream) -> String {
        let mut o = String::new();
        // The duration is nearly always set: the default minute would make every case slow.
        for key in &self.cat.top {
            let p = if *key == "duration" { 0.97 } else { 0.4 };
            if chance(r, p) {
                let v = value(r, &shapes::top(key).expect("every top key has a shape"), &Ctx::default());
                kv(&mut o, key, &v);
            }
        }
        self.section(r, &mut o, "machine", &self.cat.machine, 0.2, shapes::machine);
        self.section(r, &mut o, "sysctl", &self.cat.sysctl, 0.1, shapes::sysctl);
        self.section(r, &mut o, "policy", &self.cat.policy, 0.03, shapes::policy);
        self.section(r, &mut o, "trace", &self.cat.trace, 0.2, shapes::trace);
        let mut ctx = self.devices(r, &mut o);
        ctx.cgroups = self.cgroups(r, &mut o, &ctx);
        self.tasks(r, &mut o, &ctx);
        if chance(r, 0.03) {
            self.sweep(r, &mut o);
        }
        o
    }

    fn section(&self, r: &mut RngStream, o: &mut String, name: &str, keys: &[&'static str], p: f64, shape: fn(&str) -> Option<Shape>) {
        let picked: Vec<&str> = keys.iter().copied().filter(|k| chance(r, rate_of(k, p))).collect();
        if picked.is_empty() {
            return;
        }
        writeln!(o, "\n[{name}]").expect("String");
        for key in picked {
            let v = value(r, &shape(key).expect("every key has a shape"), &Ctx::default());
            kv(o, key, &v);
        }
    }

    fn model_names(&self) -> Vec<&'static str> {
        self.cat.models.iter().map(|(k, _)| *k).collect()
    }

    /// Zero to three devices (none: the default disk `sda`).
    fn devices(&self, r: &mut RngStream, o: &mut String) -> Ctx {
        let n = r.below(4) as usize;
        let models = self.model_names();
        let mut names = Vec::new();
        for i in 0..n {
            let (kind, own) = &self.cat.models[r.below(self.cat.models.len() as u64) as usize];
            let name = match *kind {
                "loop" => format!("loop{i}"),
                "raid0" | "raid5" => format!("md{i}"),
                "nfs" => format!("nfs{i}"),
                _ if chance(r, 0.2) => format!("nvme{i}n1"),
                _ => format!("sd{}", (b'a' + i as u8) as char),
            };
            o.push_str("\n[[device]]\n");
            kv(o, "model", &format!("\"{kind}\""));
            if chance(r, 0.9) {
                kv(o, "name", &format!("\"{name}\""));
                names.push(name);
            }
            let ctx = Ctx::default();
            for key in own {
                if !chance(r, rate_of(key, 0.08)) {
                    continue;
                }
                let v = value(r, &model_shape(kind, key, &models), &ctx);
                kv(o, key, &v);
            }
            // An elevator with some of its tunables; tunables of another one only rarely.
            let has_elevator = wblab_sim::config::DeviceModelConfig::default_of(kind).is_some_and(|m| m.has_elevator());
            if has_elevator && chance(r, 0.3) {
                let elevators = wblab_sim::block::sched::ELEVATORS;
                let e = elevators[r.below(elevators.len() as u64) as usize];
                kv(o, "queue/scheduler", &format!("\"{}\"", e.kind.name()));
                for t in e.tunables.iter().filter(|_| chance(r, 0.3)).collect::<Vec<_>>() {
                    kv(o, t.key, &value(r, &shapes::of_knob(t.kind), &ctx));
                }
            }
            for key in self.cat.device.iter().filter(|k| !matches!(**k, "name" | "model")) {
                // Mount options and a journal size only on a device given a file system
                // (else the file is refused for that alone, too often to leave enough valid
                // ones).
                let section = &o[o.rfind("[[device]]").unwrap_or(0)..];
                if matches!(*key, "mount" | "journal_size" | "fast_commit") && !section.contains("\nfs = ") {
                    continue;
                }
                if chance(r, rate_of(key, 0.04)) {
                    let shape = shapes::device(key, &models)
                        .or_else(|| tunable_shape(key))
                        .expect("every device key has a shape");
                    kv(o, key, &value(r, &shape, &ctx));
                }
            }
        }
        if n == 0 {
            names.push("sda".to_string());
        }
        Ctx {
            devices: names,
            cgroups: Vec::new(),
        }
    }

    /// One time in eight, a cgroup or two (the second one time in two below the first), with
    /// memory limits of one hierarchy version or, rarely, both. Rarely with a kernel older
    /// than cgroup writeback (refused), so that most such files stay valid.
    fn cgroups(&self, r: &mut RngStream, o: &mut String, ctx: &Ctx) -> Vec<String> {
        // An older kernel or a [policy] that replaces 6.x's pieces refuses cgroups.
        let old_kernel = o.contains("\n[policy]")
            || o.lines()
                .any(|l| l.starts_with("kernel = ") && !["\"6.", "\"5.", "\"4."].iter().any(|k| l.contains(k)));
        if !chance(r, 0.1) || (old_kernel && !chance(r, 0.1)) {
            return Vec::new();
        }
        let v1 = chance(r, 0.3);
        let mut paths = Vec::new();
        for i in 0..=r.below(2) {
            let path = if i == 1 && chance(r, 0.5) {
                "/g0/inner".to_string()
            } else {
                format!("/g{i}")
            };
            o.push_str("\n[[cgroup]]\n");
            kv(o, "path", &format!("\"{path}\""));
            for key in self.cat.cgroup.iter().filter(|k| **k != "path") {
                let v1_key = wblab_sim::config::cgroup_file(key).is_some_and(|f| f.version == wblab_sim::config::CgroupVersion::V1);
                let own_version = v1_key == v1;
                if chance(r, if own_version { 0.4 } else { 0.003 }) {
                    let v = value(r, &shapes::cgroup(key).expect("every cgroup key has a shape"), ctx);
                    kv(o, key, &v);
                }
            }
            paths.push(path);
        }
        paths
    }

    fn tasks(&self, r: &mut RngStream, o: &mut String, ctx: &Ctx) {
        let jobs: Vec<&'static str> = self.cat.jobs.iter().map(|(j, _)| *j).collect();
        for i in 0..=r.below(4) {
            let (job, own) = &self.cat.jobs[r.below(self.cat.jobs.len() as u64) as usize];
            o.push_str("\n[[task]]\n");
            if *job == "fio" {
                // The job file names and counts its jobs: only placement keys beside it.
                kv(o, "fio", &fio_text(r, &format!("t{i}j")));
                for key in ["device", "start", "ionice", "cgroup"] {
                    if chance(r, if key == "cgroup" && !ctx.cgroups.is_empty() { 0.5 } else { 0.15 }) {
                        let v = value(r, &shapes::task(key, &jobs).expect("a task key has a shape"), ctx);
                        kv(o, key, &v);
                    }
                }
                continue;
            }
            kv(o, "name", &format!("\"t{i}\""));
            kv(o, "job", &format!("\"{job}\""));
            for key in self.cat.task.iter().filter(|k| !matches!(**k, "name" | "job")) {
                let p = match *key {
                    "count" => 0.4,
                    // Refused whenever the last instance would start after `stop`: rarely.
                    "stagger" => 0.05,
                    // Tasks go into the file's cgroups often, name one rarely otherwise.
                    "cgroup" if ctx.cgroups.is_empty() => 0.03,
                    "cgroup" => 0.6,
                    _ => 0.2,
                };
                if chance(r, p) {
                    let v = value(r, &shapes::task(key, &jobs).expect("every task key has a shape"), ctx);
                    kv(o, key, &v);
                }
            }
            for key in own {
                // A netwrite without its rate is refused: set it nearly always.
                let p = if *key == "rate" { 0.95 } else { 0.3 };
                if !chance(r, p) {
                    continue;
                }
                // A scripted kind's keys are drawn as their declarations write them.
                let declared = wblab_sim::jobs::job_kind(job)
                    .and_then(|k| k.keys.declared())
                    .and_then(|keys| keys.iter().find(|k| k.key == *key))
                    .map(|k| shapes::of_knob(k.kind));
                let shape = declared.or_else(|| shapes::task(key, &jobs)).expect("every job key has a shape");
                kv(o, key, &value(r, &shape, ctx));
            }
        }
    }

    /// A `[sweep]` of a queue knob or tunable, or one time in four of a dirty sysctl, over two
    /// or three values or a range, as a grid or drawn at random.
    fn sweep(&self, r: &mut RngStream, o: &mut String) {
        const SYSCTLS: [&str; 4] = [
            "vm.dirty_bytes",
            "vm.dirty_ratio",
            "vm.dirty_background_bytes",
            "vm.dirty_expire_centisecs",
        ];
        let (key, shape) = if r.below(4) == 0 {
            let key = SYSCTLS[r.below(SYSCTLS.len() as u64) as usize];
            (key, shapes::sysctl(key).expect("a sysctl has a shape"))
        } else {
            let knobs: Vec<&str> = self.cat.device.iter().copied().filter(|k| k.starts_with("queue/")).collect();
            let key = knobs[r.below(knobs.len() as u64) as usize];
            let shape = shapes::device(key, &self.model_names())
                .or_else(|| tunable_shape(key))
                .expect("a queue key has a shape");
            (key, shape)
        };
        let values: Vec<String> = (0..2 + r.below(2)).map(|_| value(r, &shape, &Ctx::default())).collect();
        // A list, or one time in three a range (its bounds two such values, in any order:
        // a range the wrong way round is a case too), drawn at random one time in three.
        let values = if r.below(3) == 0 {
            format!("{{ min = {}, max = {}, steps = {} }}", values[0], values[1], 1 + r.below(3))
        } else {
            format!("[{}]", values.join(", "))
        };
        writeln!(o, "\n[sweep]\n\"{key}\" = {values}").expect("String");
        if r.below(3) == 0 {
            writeln!(o, "random = {{ points = {}, seed = {} }}", 1 + r.below(4), r.below(1000)).expect("String");
        }
    }
}

/// A model parameter's shape, from the model's knob declaration.
fn model_shape(kind: &str, key: &str, models: &[&'static str]) -> Shape {
    if key == "member_model" {
        return shapes::device(key, models).expect("member_model has a shape");
    }
    let info = wblab_sim::drivers::model::model_info(kind).expect("a listed model");
    let spec = (info.knobs)().into_iter().find(|k| k.key == key).expect("a listed key");
    shapes::of_knob(spec.kind)
}

/// An elevator tunable's shape, from the first elevator that declares it.
pub(super) fn tunable_shape(key: &str) -> Option<Shape> {
    wblab_sim::block::sched::ELEVATORS
        .iter()
        .flat_map(|e| e.tunables.iter())
        .find(|t| t.key == key)
        .map(|t| shapes::of_knob(t.kind))
}

fn kv(o: &mut String, key: &str, value: &str) {
    if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        writeln!(o, "{key} = {value}").expect("String");
    } else {
        writeln!(o, "\"{key}\" = {value}").expect("String");
    }
}

pub(super) fn chance(r: &mut RngStream, p: f64) -> bool {
    r.next_f64() < p
}

fn pick<'a>(r: &mut RngStream, from: &[&'a str]) -> &'a str {
    from[r.below(from.len() as u64) as usize]
}

/// A value of `shape`: usually in its range, sometimes at or past an edge, rarely wild.
fn value(r: &mut RngStream, shape: &Shape, ctx: &Ctx) -> String {
    let roll = r.next_f64();
    if roll < 0.01 {
        return pick(r, WILD).to_string();
    }
    let edge = roll < 0.05;
    match shape {
        Shape::Int(lo, hi) => number(r, *lo, *hi, edge).to_string(),
        Shape::Size(lo, hi) => size(number(r, *lo, *hi, edge)),
        Shape::Duration(lo, hi) => duration(number(r, *lo, *hi, edge)),
        Shape::Rate(lo, hi) => format!("\"{}/s\"", unquoted(&size(number(r, *lo, *hi, edge)))),
        Shape::Bool => pick(r, &["true", "false", "1", "0"]).to_string(),
        Shape::Word(w) if edge => {
            let word = pick(r, w);
            format!("\"{}\"", typo(r, word))
        }
        Shape::Word(w) => format!("\"{}\"", pick(r, w)),
        Shape::Raw(v) => pick(r, v).to_string(),
        Shape::Name if edge => format!("\"{}\"", pick(r, &["", "x y", "a/b", "ünï", "-"])),
        Shape::Name => format!("\"{}\"", pick(r, &["a", "sdb", "writer", "dev-1", "big_copy"])),
        Shape::Kernels if chance(r, 0.25) => {
            let k: Vec<String> = (0..2 + r.below(2)).map(|_| format!("\"{}\"", pick(r, RELEASES))).collect();
            format!("[{}]", k.join(", "))
        }
        Shape::Kernels if edge => format!("\"{}\"", pick(r, BAD_RELEASES)),
        Shape::Kernels => format!("\"{}\"", pick(r, RELEASES)),
        Shape::Bdflush => {
            let n = 1 + r.below(9);
            let v: Vec<String> = (0..n).map(|_| number(r, 0, 600, edge).to_string()).collect();
            format!("[{}]", v.join(", "))
        }
        Shape::Sizes => {
            let v: Vec<String> = (0..1 + r.below(4)).map(|_| size(number(r, 4096, 16 << 20, edge))).collect();
            format!("[{}]", v.join(", "))
        }
        Shape::DeviceLimits(_) if edge => "\"nosuchdev 1\"".to_string(),
        Shape::DeviceLimits(settings) => format!("\"{} {}\"", pick_owned(r, &ctx.devices), pick(r, settings)),
        Shape::CgroupPath if edge => format!("\"{}\"", pick(r, &["/nosuch", "rel", "/", "//x"])),
        Shape::CgroupPath if ctx.cgroups.is_empty() => "\"/\"".to_string(),
        Shape::CgroupPath => format!("\"{}\"", pick_owned(r, &ctx.cgroups)),
        Shape::DeviceName if edge => "\"sdz\"".to_string(),
        Shape::DeviceName => format!("\"{}\"", pick_owned(r, &ctx.devices)),
        Shape::FioText => fio_text(r, "j"),
        Shape::FilePath => {
            let dev = if edge {
                "nosuchdev".to_string()
            } else {
                pick_owned(r, &ctx.devices)
            };
            let path = if edge {
                "relative{n}"
            } else {
                pick(r, &["/mnt/DEV/f{n}", "/mnt/DEV/dir/x{n}", "/mnt/DEV/one{n}"])
            };
            format!("\"{}\"", path.replace("DEV", &dev))
        }
    }
}

/// fio options and values the generator draws from: mostly what the model runs, with values
/// out of range, devices a scenario may lack, options it accepts, refuses or takes only at
/// fio's default, and a misspelling among them.
const FIO_OPTIONS: &[(&str, &[&str])] = &[
    ("bs", &["4k", "512", "64k", "1m", "4k,64k", "0", "3000"]),
    ("ioengine", &["psync", "libaio", "io_uring", "sync", "mmap"]),
    ("iodepth", &["1", "4", "32", "0"]),
    ("direct", &["0", "1"]),
    ("runtime", &["50ms", "200ms", "1", "0"]),
    ("time_based", &[""]),
    ("rate", &["1m", "100k", ",2m"]),
    ("rate_iops", &["100", "10,5"]),
    ("thinktime", &["100", "5ms"]),
    ("fsync", &["1", "4", "0"]),
    ("fdatasync", &["2"]),
    (
        "sync_file_range",
        &[
            "write:4",
            "wait_before,write:1",
            "wait_before,write,wait_after:2",
            "wait_after",
            "flush:2",
            "write:0",
        ],
    ),
    ("sync", &["dsync", "1", "0", "maybe"]),
    ("fallocate", &["none", "posix", "keep"]),
    ("overwrite", &["1", "0"]),
    ("rwmixread", &["0", "30", "70", "100", "101"]),
    ("bsrange", &["4k-16k", "16k-4k"]),
    ("bssplit", &["4k/50:64k/50", "4k/80:8k/30", "4k/:8k/"]),
    ("random_distribution", &["zipf:1.2", "pareto:0.9", "normal:5", "random"]),
    ("loops", &["1", "2"]),
    ("ramp_time", &["10ms", "1"]),
    ("stonewall", &[""]),
    ("new_group", &[""]),
    ("numjobs", &["1", "2", "3"]),
    ("nrfiles", &["1", "2"]),
    ("filename", &["shared", "/dev/sda", "/dev/sdb", "/mnt/sdb/data", "/dev/nvme9n9"]),
    ("directory", &["/mnt/sda", "/mnt/sdb", "/mnt/nope"]),
    ("zonemode", &["none", "zbd"]),
    ("significant_figures", &["4"]),
    ("iodepth_batch_complete_max", &["1", "8"]),
    ("end_fsync", &["1"]),
    ("iodepth_low", &["1", "8"]),
    ("iodepth_batch_complete_min", &["1", "4"]),
    ("norandommap", &[""]),
    ("startdelay", &["10ms"]),
    ("invalidate", &["0"]),
    ("kb_base", &["1000"]),
    ("write_lat_log", &["lat"]),
    ("write_bw_log", &["bw"]),
    ("log_avg_msec", &["100"]),
    ("verify", &["md5"]),
    ("iodepht", &["2"]),
];

/// A `fio = """..."""` value: one to three jobs named `<prefix>0`.., each with an `rw` and a
/// `size` nearly always and a few other options; a `[global]` section sometimes.
fn fio_text(r: &mut RngStream, prefix: &str) -> String {
    let mut t = String::from("\"\"\"\n");
    let opts = |r: &mut RngStream, t: &mut String, p: f64| {
        for (k, vals) in FIO_OPTIONS {
            if chance(r, p) {
                match pick(r, vals) {
                    "" => writeln!(t, "{k}").expect("String"),
                    v => writeln!(t, "{k}={v}").expect("String"),
                }
            }
        }
    };
    if chance(r, 0.3) {
        t.push_str("[global]\n");
        opts(r, &mut t, 0.08);
    }
    for j in 0..=r.below(3) {
        writeln!(t, "[{prefix}{j}]").expect("String");
        if chance(r, 0.95) {
            let rw = pick(r, &["read", "write", "randread", "randwrite", "rw", "randrw", "trim"]);
            writeln!(t, "rw={rw}").expect("String");
        }
        if chance(r, 0.9) {
            let size = pick(r, &["1m", "4m", "16m", "64m", "0", "1g"]);
            writeln!(t, "size={size}").expect("String");
        }
        if j > 0 && chance(r, 0.1) {
            writeln!(t, "wait_for={prefix}0").expect("String");
        }
        opts(r, &mut t, 0.12);
    }
    t.push_str("\"\"\"");
    t
}

fn pick_owned(r: &mut RngStream, from: &[String]) -> String {
    if from.is_empty() {
        return "sda".to_string();
    }
    from[r.below(from.len() as u64) as usize].clone()
}

/// A number in `[lo, hi]`, log-uniform so small values are as likely as large ones; at an
/// edge: the bound itself, or one past it.
fn number(r: &mut RngStream, lo: u64, hi: u64, edge: bool) -> u64 {
    if edge {
        return match r.below(4) {
            0 => lo,
            1 => hi,
            2 => lo.saturating_sub(1),
            _ => hi.saturating_add(1),
        };
    }
    let (l, h) = ((lo.max(1) as f64).ln(), (hi.max(1) as f64).ln());
    let v = (l + r.next_f64() * (h - l)).exp() as u64;
    if lo == 0 && chance(r, 0.1) {
        0
    } else {
        v.clamp(lo, hi)
    }
}

/// Bytes as a scenario writes them: a unit when it divides evenly, else plain bytes.
fn size(b: u64) -> String {
    for (unit, n) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if b >= n && b.is_multiple_of(n) {
            return format!("\"{}{unit}\"", b / n);
        }
    }
    b.to_string()
}

fn duration(ns: u64) -> String {
    for (unit, n) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
        if ns >= n && ns.is_multiple_of(n) {
            return format!("\"{}{unit}\"", ns / n);
        }
    }
    ns.to_string()
}

fn unquoted(s: &str) -> String {
    s.trim_matches('"').to_string()
}

/// `w` with one character changed, dropped or doubled.
fn typo(r: &mut RngStream, w: &str) -> String {
    let mut c: Vec<char> = w.chars().collect();
    if c.is_empty() {
        return "x".to_string();
    }
    let i = r.below(c.len() as u64) as usize;
    match r.below(3) {
        0 => c[i] = 'x',
        1 => {
            c.remove(i);
        }
        _ => c.insert(i, c[i]),
    }
    c.into_iter().collect()
}
