//! The host a case was measured on. The loop model's defaults describe this lab's `vda` on
//! one day; the disk's speed changes from day to day (1 MiB writes 0.55–2.9 GB/s in one
//! week), and so does what the VM's memory costs the page cache (a copy into memory the host
//! took back ran at 0.35 GB/s on one day and at 2.3 on another), so a case compared against
//! a run from another day would grade the host, not the model. `measure` times both before
//! it sets anything up (`machine.json`: `memory_touch`, `host_disk`); the case is then
//! simulated on that machine: `[machine] page_first_touch` from the repeats' median first
//! touch, and (asked for with `--host-disk`) its loop devices get the repeats' median disk
//! speeds and flush cost.

use std::path::{Path, PathBuf};
use wblab_probe::hostdisk::HostDiskStamp;
use wblab_probe::memtouch::MemoryTouchStamp;
use wblab_sim::drivers::loopdev::LoopParams;

/// The host's work per 1 MiB request besides its transfer, µs: the loop model's
/// `backing_request_cost` (7) and `backing_latency` (20) and the guest's own path (about 10).
const PER_REQUEST_US: f64 = 37.0;

/// The stamp in a measured repeat's `machine.json`, if it has one.
pub fn stamp_of(repeat: &Path) -> Option<HostDiskStamp> {
    serde_json::from_value(super::machine_field(repeat, "host_disk")?).ok()
}

/// The memory stamp in a measured repeat's `machine.json`, if it has one.
pub fn memory_stamp_of(repeat: &Path) -> Option<MemoryTouchStamp> {
    serde_json::from_value(super::machine_field(repeat, "memory_touch")?).ok()
}

/// The median first-touch cost (µs a page) and unreported reserve (MiB) over the repeats;
/// `None` unless every repeat has a stamp.
pub fn median_first_touch(stamps: &[Option<MemoryTouchStamp>]) -> Option<(f64, f64)> {
    let m = Medians::of(stamps)?;
    Some((m.median(|s| s.first_touch_us), m.median(|s| s.reserve_mib)))
}

/// Every repeat's stamp, for the median of each figure.
struct Medians<S>(Vec<S>);

impl<S: Copy> Medians<S> {
    /// `None` unless every repeat has a stamp.
    fn of(stamps: &[Option<S>]) -> Option<Self> {
        let all: Vec<S> = stamps.iter().copied().collect::<Option<_>>()?;
        (!all.is_empty()).then_some(Medians(all))
    }

    fn median(&self, f: fn(&S) -> f64) -> f64 {
        let mut v: Vec<f64> = self.0.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
}

/// `case` with `[machine] page_first_touch` set to `us` and `page_reporting_reserve` to
/// `reserve_mib`: after its `[machine]` line, or in a `[machine]` table of its own before its
/// first table.
pub fn with_first_touch(case: &str, (us, reserve_mib): (f64, f64)) -> String {
    let key = format!(
        "page_first_touch = \"{}ns\"\npage_reporting_reserve = \"{}MiB\"\n",
        (us * 1000.0).round() as u64,
        reserve_mib.round() as u64
    );
    let mut out = String::with_capacity(case.len() + key.len() + 16);
    let has_machine = case.lines().any(|l| l.trim() == "[machine]");
    let mut done = false;
    for line in case.lines() {
        let t = line.trim();
        if !done && !has_machine && t.starts_with('[') {
            out.push_str("[machine]\n");
            out.push_str(&key);
            done = true;
        }
        out.push_str(line);
        out.push('\n');
        if !done && t == "[machine]" {
            out.push_str(&key);
            done = true;
        }
    }
    if !done {
        out.push_str("[machine]\n");
        out.push_str(&key);
    }
    out
}

/// The median of each figure over the repeats; `None` unless every repeat has a stamp.
pub fn median(stamps: &[Option<HostDiskStamp>]) -> Option<HostDiskStamp> {
    let m = Medians::of(stamps)?;
    Some(HostDiskStamp {
        write_mib_s: m.median(|s| s.write_mib_s),
        read_mib_s: m.median(|s| s.read_mib_s),
        flush_us: m.median(|s| s.flush_us),
    })
}

/// The loop model's keys for a disk that measured `s`: the day's speed for each direction. The
/// probe's 1 MiB requests come from an ordinary buffer, a descriptor per 4 KiB page, and fill the
/// model's ring, so its host serves them one at a time, each paying its request cost and round
/// trip; the model's own time for such a request (its segments and its transfer) is scaled to
/// the measured one, both parts alike, so a loop's large-folio requests get faster or slower by
/// the same factor. And the flush.
pub fn loop_keys(s: &HostDiskStamp) -> Vec<(&'static str, String)> {
    let d = LoopParams::default();
    let pages = (1u64 << 20) / 4096;
    // (transfer key, segment key, default rate, default segment cost, measured MiB/s)
    let dirs = [
        (
            "backing_write_bandwidth",
            "backing_write_segment_cost",
            d.backing_write_bandwidth,
            d.backing_write_segment_cost,
            s.write_mib_s,
        ),
        (
            "backing_read_bandwidth",
            "backing_read_segment_cost",
            d.backing_read_bandwidth,
            d.backing_read_segment_cost,
            s.read_mib_s,
        ),
    ];
    let mut keys = Vec::new();
    for (rate_key, seg_key, rate, seg_ns, mib_s) in dirs {
        let model_us = (pages * seg_ns) as f64 / 1e3 + (1u64 << 20) as f64 / rate as f64 * 1e6;
        let per_request = 1e6 / mib_s.max(1.0);
        let factor = (per_request - PER_REQUEST_US).max(per_request / 2.0) / model_us;
        keys.push((
            rate_key,
            format!("\"{}MiB/s\"", (rate as f64 / factor / (1u64 << 20) as f64).round() as u64),
        ));
        if seg_ns > 0 {
            keys.push((seg_key, format!("\"{}ns\"", (seg_ns as f64 * factor).round() as u64)));
        }
    }
    keys.push(("backing_flush_latency", format!("\"{}us\"", s.flush_us.round() as u64)));
    keys
}

/// `case` (a generated scenario file) with `keys` added to each of its loop devices, after
/// their `model = "loop"` line.
pub fn with_loop_keys(case: &str, keys: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(case.len() + 256);
    for line in case.lines() {
        out.push_str(line);
        out.push('\n');
        if line.trim() == "model = \"loop\"" {
            for (k, v) in keys {
                out.push_str(&format!("{k} = {v}\n"));
            }
        }
    }
    out
}

/// Where the case is simulated from: `case.toml`, or `sim.toml` beside it — the case on the
/// machine its repeats measured — when every repeat has a stamp: the memory's first touch
/// always, the disk when `disk` is asked for.
pub fn scenario_for(case_toml: &Path, repeats: &[PathBuf], disk: bool) -> Result<PathBuf, String> {
    let sim = case_toml.with_file_name("sim.toml");
    let touch = median_first_touch(&repeats.iter().map(|r| memory_stamp_of(r)).collect::<Vec<_>>());
    let host = if disk {
        median(&repeats.iter().map(|r| stamp_of(r)).collect::<Vec<_>>())
    } else {
        None
    };
    if touch.is_none() && host.is_none() {
        let _ = std::fs::remove_file(&sim);
        return Ok(case_toml.to_path_buf());
    }
    let mut text = std::fs::read_to_string(case_toml).map_err(|e| format!("cannot read {}: {e}", case_toml.display()))?;
    let name = case_toml.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let mut header = format!("# {name} on the machine its {} measurements found:", repeats.len());
    if let Some((us, reserve)) = touch {
        header += &format!(" first touch of free memory {us} µs a page past {reserve} MiB (medians);");
        text = with_first_touch(&text, (us, reserve));
    }
    if let Some(s) = host {
        header += &format!(
            " host disk writes {} MiB/s, reads {} MiB/s, flush {} µs (medians);",
            s.write_mib_s, s.read_mib_s, s.flush_us
        );
        text = with_loop_keys(&text, &loop_keys(&s));
    }
    header.pop();
    header.push('\n');
    std::fs::write(&sim, header + &text).map_err(|e| format!("cannot write {}: {e}", sim.display()))?;
    Ok(sim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(w: f64, r: f64, f: f64) -> HostDiskStamp {
        HostDiskStamp {
            write_mib_s: w,
            read_mib_s: r,
            flush_us: f,
        }
    }

    #[test]
    fn the_median_needs_every_repeat() {
        assert_eq!(median(&[Some(stamp(1.0, 1.0, 1.0)), None]), None);
        let m = median(&[
            Some(stamp(500.0, 900.0, 40.0)),
            Some(stamp(700.0, 800.0, 200.0)),
            Some(stamp(600.0, 1000.0, 60.0)),
        ]);
        assert_eq!(m, Some(stamp(600.0, 900.0, 60.0)));
    }

    #[test]
    fn the_keys_give_back_the_measured_rate_one_request_at_a_time() {
        for (w, r) in [(550.0, 850.0), (2400.0, 1400.0)] {
            let keys = loop_keys(&stamp(w, r, 216.0));
            let num = |k: &str, unit: &str| -> Option<f64> {
                let v = &keys.iter().find(|(n, _)| *n == k)?.1;
                Some(v.trim_matches('"').trim_end_matches(unit).parse().unwrap())
            };
            for (dir, measured) in [("write", w), ("read", r)] {
                let transfer = num(&format!("backing_{dir}_bandwidth"), "MiB/s").unwrap();
                let segment_us = num(&format!("backing_{dir}_segment_cost"), "ns").unwrap_or(0.0) / 1e3;
                assert!(transfer > measured, "{dir}: the transfer outruns the request rate");
                // A 1 MiB request of 256 scattered pages, as the probe sends.
                let per_request_us = 1e6 / transfer + 256.0 * segment_us + PER_REQUEST_US;
                let back = 1e6 / per_request_us;
                assert!((back / measured - 1.0).abs() < 0.01, "{dir}: {back} MiB/s against {measured}");
            }
            assert!(keys.contains(&("backing_flush_latency", "\"216us\"".to_string())));
        }
        // A faster day makes both parts of a read cheaper: a large-folio read gains as much.
        let seg = |r: f64| -> u64 {
            let keys = loop_keys(&stamp(1000.0, r, 50.0));
            let v = &keys.iter().find(|(n, _)| *n == "backing_read_segment_cost").unwrap().1;
            v.trim_matches('"').trim_end_matches("ns").parse().unwrap()
        };
        assert!(seg(1400.0) < seg(850.0));
    }

    #[test]
    fn keys_go_into_every_loop_device_and_nowhere_else() {
        let case = "name = \"g\"\n[[device]]\nname = \"a\"\nmodel = \"loop\"\nsize = \"8GiB\"\n[[device]]\nname = \"b\"\nmodel = \"ssd\"\n";
        let out = with_loop_keys(case, &[("backing_flush_latency", "\"40us\"".into())]);
        assert_eq!(out.matches("backing_flush_latency").count(), 1);
        let at = out.find("backing_flush_latency").unwrap();
        assert!(at > out.find("model = \"loop\"").unwrap() && at < out.find("size").unwrap());
        let sc = wblab_scenario::parse(&out, "sim.toml");
        assert!(sc.is_ok(), "{:?}", sc.err().map(|e| e.to_string()));
    }

    #[test]
    fn the_first_touch_goes_into_the_machine_table() {
        let with = "name = \"g\"\n[machine]\ncpus = 2\n[[device]]\nname = \"a\"\nmodel = \"ssd\"\n";
        let without = "name = \"g\"\n[[device]]\nname = \"a\"\nmodel = \"ssd\"\n";
        for case in [with, without] {
            let out = with_first_touch(case, (10.89, 256.0));
            let sc = wblab_scenario::parse(&out, "sim.toml").map_err(|e| e.to_string()).unwrap();
            assert_eq!(sc.machine.page_first_touch, 10_890, "{out}");
            assert_eq!(sc.machine.page_reporting_reserve, Some(256 << 20));
            assert_eq!(sc.machine.cpus, 2);
        }
        let m = |us: f64| {
            Some(MemoryTouchStamp {
                first_touch_us: us,
                warm_us: 0.8,
                reporting: true,
                reserve_mib: 32.0 * us,
            })
        };
        assert_eq!(median_first_touch(&[m(3.0), m(11.0), m(9.0)]), Some((9.0, 288.0)));
        assert_eq!(median_first_touch(&[m(3.0), None]), None);
    }
}
