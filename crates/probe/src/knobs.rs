//! Reading, applying and restoring knobs: `/proc/sys/vm/*`, `/sys/block/<dev>/queue/*` and
//! `/sys/class/bdi/<maj:min>/*`. Every write is journaled with the value it replaces first.

use crate::journal::{Entry, Journal, KnobClass};
use crate::sys;
use serde::Serialize;
use std::io;
use std::path::{Path, PathBuf};
use wblab_sim::config::{sysctl_knob, BdiConfig, KnobKind, KnobValue, QueueConfig, SysctlKnob, VmSysctl, BDI_KNOBS, QUEUE_KNOBS, SYSCTLS};

/// One knob as the run found and left it during the measurement.
#[derive(Clone, Debug, Serialize)]
pub struct KnobRecord {
    pub path: String,
    /// Value before the run (None: the file did not exist or could not be read).
    pub original: Option<String>,
    /// Value the scenario asked for.
    pub wanted: String,
    /// Value read back after writing it.
    pub effective: Option<String>,
    /// Why the wanted value did not stick, if it did not.
    pub note: Option<String>,
}

/// A knob's current value, normalised: the selected word of `[bracketed]` lists (scheduler).
pub fn read_knob(p: &Path) -> io::Result<String> {
    let raw = sys::read_trim(p)?;
    Ok(normalize(&raw))
}

fn normalize(raw: &str) -> String {
    if let (Some(a), Some(b)) = (raw.find('['), raw.find(']')) {
        if a < b {
            return raw[a + 1..b].to_string();
        }
    }
    raw.to_string()
}

/// Set `path` to `value` (journaling the original first unless `journal_it` is false, for
/// knobs of devices we create and destroy). No write if it already has that value.
pub fn set(j: &mut Journal, path: &Path, value: &str, class: KnobClass, journal_it: bool) -> KnobRecord {
    let mut rec = KnobRecord {
        path: path.display().to_string(),
        original: None,
        wanted: value.to_string(),
        effective: None,
        note: None,
    };
    let original = match read_knob(path) {
        Ok(v) => v,
        Err(e) => {
            rec.note = Some(format!("cannot read: {e}"));
            return rec;
        }
    };
    rec.original = Some(original.clone());
    if original == value {
        rec.effective = Some(original);
        return rec;
    }
    if journal_it {
        if let Err(e) = j.record(Entry::Knob {
            path: path.to_path_buf(),
            original: original.clone(),
            class,
        }) {
            rec.note = Some(format!("not changed: cannot journal the original: {e}"));
            rec.effective = Some(original);
            return rec;
        }
    }
    if let Err(e) = sys::write_value(path, value) {
        rec.note = Some(format!("the kernel refused {value}: {e}"));
    }
    rec.effective = read_knob(path).ok();
    if rec.note.is_none() && rec.effective.as_deref() != Some(value) {
        rec.note = Some(format!("reads back as {}", rec.effective.as_deref().unwrap_or("?")));
    }
    rec
}

/// Put a knob back; verify it reads back. A file that no longer exists (its device is gone)
/// needs no restoring.
pub fn restore_knob(path: &Path, original: &str) -> Result<(), String> {
    let cur = match read_knob(path) {
        Ok(v) => v,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
    };
    if cur == original {
        return Ok(());
    }
    sys::write_value(path, original).map_err(|e| format!("{}: cannot write {original}: {e}", path.display()))?;
    match read_knob(path) {
        Ok(v) if v == original => Ok(()),
        Ok(v) => Err(format!("{}: wrote {original}, reads back {v}", path.display())),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

const VM: &str = "/proc/sys/vm";

fn vm(name: &str) -> PathBuf {
    Path::new(VM).join(name)
}

fn read_u64(p: &Path) -> io::Result<u64> {
    sys::read_trim(p)?
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", p.display())))
}

/// Restore a ratio/bytes pair. The kernel refuses 0 for `*_bytes` (minimum 2 pages / 1 byte)
/// and writing one of the pair zeroes the other, so write whichever original was in force.
pub fn restore_pair(ratio_path: &Path, bytes_path: &Path, ratio: u64, bytes: u64) -> Result<(), String> {
    let cur = (
        read_u64(ratio_path).map_err(|e| e.to_string())?,
        read_u64(bytes_path).map_err(|e| e.to_string())?,
    );
    if cur == (ratio, bytes) {
        return Ok(());
    }
    let (p, v) = if bytes > 0 { (bytes_path, bytes) } else { (ratio_path, ratio) };
    sys::write_value(p, &v.to_string()).map_err(|e| format!("{}: cannot write {v}: {e}", p.display()))?;
    let now = (
        read_u64(ratio_path).map_err(|e| e.to_string())?,
        read_u64(bytes_path).map_err(|e| e.to_string())?,
    );
    if now == (ratio, bytes) {
        Ok(())
    } else {
        Err(format!(
            "{} / {}: want {ratio}/{bytes}, read {}/{}",
            ratio_path.display(),
            bytes_path.display(),
            now.0,
            now.1
        ))
    }
}

fn set_pair(j: &mut Journal, ratio_name: &str, bytes_name: &str, ratio: u64, bytes: u64, out: &mut Vec<KnobRecord>) {
    let (rp, bp) = (vm(ratio_name), vm(bytes_name));
    let wanted = if bytes > 0 {
        format!("{bytes_name}={bytes}")
    } else {
        format!("{ratio_name}={ratio}")
    };
    let mut rec = KnobRecord {
        path: format!("{} + {}", rp.display(), bp.display()),
        original: None,
        wanted,
        effective: None,
        note: None,
    };
    let cur = match (read_u64(&rp), read_u64(&bp)) {
        (Ok(r), Ok(b)) => (r, b),
        (Err(e), _) | (_, Err(e)) => {
            rec.note = Some(format!("cannot read: {e}"));
            out.push(rec);
            return;
        }
    };
    rec.original = Some(format!("{ratio_name}={} {bytes_name}={}", cur.0, cur.1));
    let want = (if bytes > 0 { 0 } else { ratio }, bytes);
    if cur != want {
        if let Err(e) = j.record(Entry::DirtyPair {
            ratio_path: rp.clone(),
            bytes_path: bp.clone(),
            ratio: cur.0,
            bytes: cur.1,
        }) {
            rec.note = Some(format!("not changed: cannot journal: {e}"));
            out.push(rec);
            return;
        }
        let (p, v) = if bytes > 0 { (&bp, bytes) } else { (&rp, ratio) };
        if let Err(e) = sys::write_value(p, &v.to_string()) {
            rec.note = Some(format!("the kernel refused {v}: {e}"));
        }
    }
    if let (Ok(r), Ok(b)) = (read_u64(&rp), read_u64(&bp)) {
        rec.effective = Some(format!("{ratio_name}={r} {bytes_name}={b}"));
        if rec.note.is_none() && (r, b) != want {
            rec.note = Some("did not take".to_string());
        }
    }
    out.push(rec);
}

/// One sysctl write of a measurement: a `vm.dirty_*` ratio/bytes pair (written as one, see
/// [`restore_pair`]) or a single knob, each by its file name under `/proc/sys/vm`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysctlWrite {
    Pair {
        ratio: &'static str,
        bytes: &'static str,
        ratio_value: u64,
        bytes_value: u64,
    },
    One {
        name: &'static str,
        value: u64,
    },
}

impl SysctlWrite {
    /// The files it writes, and what: for plans and messages.
    pub fn describe(&self) -> Vec<(PathBuf, String)> {
        match *self {
            SysctlWrite::Pair {
                ratio, bytes, bytes_value, ..
            } if bytes_value > 0 => vec![(vm(bytes), bytes_value.to_string()), (vm(ratio), "0 (the kernel zeroes it)".into())],
            SysctlWrite::Pair {
                ratio, bytes, ratio_value, ..
            } => vec![(vm(ratio), ratio_value.to_string()), (vm(bytes), "0 (the kernel zeroes it)".into())],
            SysctlWrite::One { name, value } => vec![(vm(name), value.to_string())],
        }
    }
}

/// The scenario's `vm.*` sysctls as writes, every one of the table's ([`SYSCTLS`]: the
/// scenario states the machine), a ratio and its bytes as one pair; a value meaning "as the
/// kernel computes it" (`min_free_kbytes` = 0) is left.
pub fn sysctl_writes(s: &VmSysctl) -> Vec<SysctlWrite> {
    let file = |k: &'static SysctlKnob| k.knob.key.strip_prefix("vm.").unwrap_or(k.knob.key);
    let mut out = Vec::new();
    for k in SYSCTLS {
        if SYSCTLS.iter().any(|r| r.bytes_of_pair == Some(k.knob.key)) {
            continue; // written with its ratio
        }
        match k.bytes_of_pair.and_then(sysctl_knob) {
            Some(b) => out.push(SysctlWrite::Pair {
                ratio: file(k),
                bytes: file(b),
                ratio_value: k.value(s),
                bytes_value: b.value(s),
            }),
            None if k.kernels_own == Some(k.value(s)) => {}
            None => out.push(SysctlWrite::One {
                name: file(k),
                value: k.value(s),
            }),
        }
    }
    out
}

/// Make the writes, each journaled first.
pub fn apply_sysctl(j: &mut Journal, writes: &[SysctlWrite]) -> Vec<KnobRecord> {
    let mut out = Vec::new();
    for w in writes {
        match *w {
            SysctlWrite::Pair {
                ratio,
                bytes,
                ratio_value,
                bytes_value,
            } => set_pair(j, ratio, bytes, ratio_value, bytes_value, &mut out),
            SysctlWrite::One { name, value } => out.push(set(j, &vm(name), &value.to_string(), KnobClass::Sysctl, true)),
        }
    }
    out
}

/// Snapshot of every knob `apply_sysctl` may touch (for tests and machine.json).
pub fn sysctl_snapshot() -> Vec<(String, String)> {
    SYSCTLS
        .iter()
        .map(|k| {
            (
                k.knob.key.to_string(),
                sys::read_trim(Path::new(&k.proc_path())).unwrap_or_default(),
            )
        })
        .collect()
}

/// The scenario's queue knobs as (file under `/sys/block/<dev>/queue`, value), in the order
/// of the table of queue files (the scheduler first: switching it resets `nr_requests` and
/// brings its own iosched files), then the elevator's tunables.
pub fn queue_knobs(q: &QueueConfig) -> Vec<(String, String)> {
    let mut knobs: Vec<(String, String)> = QUEUE_KNOBS
        .iter()
        .filter_map(|k| (k.written)(q).map(|v| (k.file().to_string(), v)))
        .collect();
    knobs.extend(iosched_knobs(q));
    knobs
}

/// Every tunable of the scenario's elevator, from its entry in the elevator registry, as
/// (file under `queue/`, value as sysfs takes it): the real kernel then runs the tunables the
/// simulation runs, whether the scenario set them or left the model's defaults (the kernel's).
pub fn iosched_knobs(q: &QueueConfig) -> Vec<(String, String)> {
    let Some(info) = wblab_sim::block::sched::elevator(q.scheduler) else {
        return Vec::new();
    };
    info.tunables
        .iter()
        .filter_map(|k| {
            let file = k.key.strip_prefix("queue/").unwrap_or(k.key);
            let v = (k.get)(q);
            let text = match (k.kind, v) {
                // mq-deadline's 0 stands for "the kernel's own" (nr_requests); written, the
                // kernel would clamp it to 1.
                (_, KnobValue::Uint(0)) if file == "iosched/async_depth" => return None,
                (KnobKind::Millis { scale, .. }, KnobValue::Uint(x)) => (x / scale.max(1)).to_string(),
                (_, KnobValue::Bool(b)) => u8::from(b).to_string(),
                (_, KnobValue::Uint(x)) => x.to_string(),
                (_, KnobValue::Word(w)) => w.to_string(),
            };
            Some((file.to_string(), text))
        })
        .collect()
}

/// Write `knobs` ([`queue_knobs`]) to `/sys/block/<dev>/queue`.
pub fn apply_queue(j: &mut Journal, dev: &str, knobs: &[(String, String)], journal_it: bool) -> Vec<KnobRecord> {
    let base = Path::new("/sys/block").join(dev).join("queue");
    knobs
        .iter()
        .map(|(k, v)| {
            let class = if k == "scheduler" { KnobClass::Scheduler } else { KnobClass::Queue };
            set(j, &base.join(k), v, class, journal_it)
        })
        .collect()
}

/// Every readable knob under `/sys/block/<dev>/queue` (and iosched), for before/after checks.
pub fn queue_snapshot(dev: &str) -> Vec<(String, String)> {
    let base = Path::new("/sys/block").join(dev).join("queue");
    let mut out = Vec::new();
    for sub in [base.clone(), base.join("iosched")] {
        let Ok(rd) = std::fs::read_dir(&sub) else { continue };
        let mut names: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
        names.sort();
        for p in names {
            if let Ok(v) = sys::read_trim(&p) {
                out.push((p.display().to_string(), v));
            }
        }
    }
    out
}

/// The scenario's bdi knobs as (file under `/sys/class/bdi/<maj:min>`, value), as the table of
/// bdi files says each is written (the ratios as ppm); min before max: the kernel refuses
/// min > max.
pub fn bdi_knobs(b: &BdiConfig) -> Vec<(String, String)> {
    BDI_KNOBS
        .iter()
        .filter_map(|k| (k.written)(b).map(|v| (k.file().to_string(), v.to_string())))
        .collect()
}

/// Write `knobs` ([`bdi_knobs`]) to `/sys/class/bdi/<maj:min>`.
pub fn apply_bdi(j: &mut Journal, devnum: &str, knobs: &[(String, String)], journal_it: bool) -> Vec<KnobRecord> {
    let base = Path::new("/sys/class/bdi").join(devnum);
    knobs
        .iter()
        .map(|(k, v)| set(j, &base.join(k), v, KnobClass::Queue, journal_it))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wblab_sim::config::SchedulerKind;

    #[test]
    fn bracketed_lists_read_as_the_selected_word() {
        assert_eq!(normalize("none [mq-deadline] kyber bfq"), "mq-deadline");
        assert_eq!(normalize("[none] mq-deadline"), "none");
        assert_eq!(normalize("write back"), "write back");
        assert_eq!(normalize("75000"), "75000");
    }

    /// `measure` writes every tunable of every shipped elevator, in sysfs's unit: a scheduler
    /// scenario runs on the real kernel with the tunables the model ran, not the kernel's
    /// defaults.
    /// Each sysctl of the table, the test-only one included, set by a scenario to a value
    /// of its own, is among the writes `measure` journals and makes, to that value, in its
    /// `/proc/sys` file: a table entry is all a new sysctl needs to reach the real kernel.
    #[test]
    fn every_sysctl_the_scenario_sets_is_written() {
        assert!(SYSCTLS.iter().any(|k| k.knob.key == "vm.test_sysctl"), "test builds register it");
        for k in SYSCTLS {
            let mut s = VmSysctl::default();
            let (lo, hi) = k.typical;
            let v = (lo + (hi - lo) / 3).max(2 * 4096) + 7;
            let v = if matches!(k.knob.kind, KnobKind::Count { .. }) {
                v.min(hi)
            } else {
                v
            };
            assert_ne!(v, k.value(&s), "{}: pick a value other than its default", k.knob.key);
            (k.knob.set)(&mut s, KnobValue::Uint(v));
            let written: Vec<(PathBuf, String)> = sysctl_writes(&s).iter().flat_map(SysctlWrite::describe).collect();
            assert!(
                written.contains(&(PathBuf::from(k.proc_path()), v.to_string())),
                "{} = {v}: not written; the writes: {written:?}",
                k.knob.key
            );
        }
        // The kernel's own minimum is left alone.
        let paths: Vec<PathBuf> = sysctl_writes(&VmSysctl::default())
            .iter()
            .flat_map(SysctlWrite::describe)
            .map(|(p, _)| p)
            .collect();
        assert!(!paths.contains(&PathBuf::from("/proc/sys/vm/min_free_kbytes")), "{paths:?}");
    }

    #[test]
    fn every_elevator_tunable_is_written_in_the_unit_sysfs_takes() {
        use wblab_sim::block::sched::SHIPPED_ELEVATORS;
        for info in SHIPPED_ELEVATORS {
            let mut q = wblab_sim::config::default_queue(&wblab_sim::config::DeviceModelConfig::Hdd(Default::default()));
            q.select_elevator(info.kind);
            let knobs = queue_knobs(&q);
            assert_eq!(knobs[0], ("scheduler".to_string(), info.kind.name().to_string()));
            for k in info.tunables {
                let file = k.key.strip_prefix("queue/").expect("a queue knob");
                let written = knobs.iter().find(|(f, _)| f == file);
                if file == "iosched/async_depth" {
                    continue; // 0 by default: left to the kernel
                }
                let (_, v) = written.unwrap_or_else(|| panic!("{}: {file} is not written", info.kind.name()));
                assert!(v.parse::<u64>().is_ok(), "{}: {file} = {v:?}", info.kind.name());
            }
        }
        let mut q = wblab_sim::config::default_queue(&wblab_sim::config::DeviceModelConfig::Hdd(Default::default()));
        q.select_elevator(SchedulerKind::MQ_DEADLINE);
        let get = |q: &QueueConfig, f: &str| iosched_knobs(q).into_iter().find(|(k, _)| k == f).map(|(_, v)| v);
        assert_eq!(get(&q, "iosched/read_expire").as_deref(), Some("500"), "ms");
        q.select_elevator(SchedulerKind::BFQ);
        assert_eq!(get(&q, "iosched/slice_idle").as_deref(), Some("8"), "ms");
        assert_eq!(get(&q, "iosched/slice_idle_us").as_deref(), Some("8000"), "µs");
        assert_eq!(get(&q, "iosched/low_latency").as_deref(), Some("1"));
        q.select_elevator(SchedulerKind::KYBER);
        assert_eq!(get(&q, "iosched/read_lat_nsec").as_deref(), Some("2000000"));
    }

    /// bfq turns blk-wbt off as it starts, and the model runs bfq without it: writing the
    /// scenario's wbt_lat_usec after it would measure bfq with blk-wbt on by hand.
    #[test]
    fn under_bfq_blk_wbt_is_left_off() {
        let mut q = wblab_sim::config::default_queue(&wblab_sim::config::DeviceModelConfig::Hdd(Default::default()));
        assert!(queue_knobs(&q).iter().any(|(k, _)| k == "wbt_lat_usec"));
        q.select_elevator(SchedulerKind::BFQ);
        assert!(!queue_knobs(&q).iter().any(|(k, _)| k == "wbt_lat_usec"), "{:?}", queue_knobs(&q));
    }
}
