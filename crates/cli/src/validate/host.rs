//! The host disk a case was measured on. The loop model's defaults describe this lab's `vda`
//! on one day; the disk's speed changes from day to day (1 MiB writes 0.55–2.9 GB/s in one
//! week), so a case compared against a run from another day would grade the host, not the
//! model. `measure` times the disk before it makes its loop devices (`machine.json`,
//! `host_disk`); the case is then simulated on that disk: its loop devices get the repeats'
//! median speeds and flush cost.

use std::path::{Path, PathBuf};
use wblab_probe::hostdisk::HostDiskStamp;

/// The host's work per 1 MiB request besides its transfer, µs: the loop model's
/// `backing_request_cost` (7) and `backing_latency` (20) and the guest's own path (about 10).
const PER_REQUEST_US: f64 = 37.0;

/// The stamp in a measured repeat's `machine.json`, if it has one.
pub fn stamp_of(repeat: &Path) -> Option<HostDiskStamp> {
    serde_json::from_value(super::machine_field(repeat, "host_disk")?).ok()
}

/// The median of each figure over the repeats; `None` unless every repeat has a stamp.
pub fn median(stamps: &[Option<HostDiskStamp>]) -> Option<HostDiskStamp> {
    let all: Vec<HostDiskStamp> = stamps.iter().copied().collect::<Option<_>>()?;
    if all.is_empty() {
        return None;
    }
    let mid = |f: fn(&HostDiskStamp) -> f64| {
        let mut v: Vec<f64> = all.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Some(HostDiskStamp {
        write_mib_s: mid(|s| s.write_mib_s),
        read_mib_s: mid(|s| s.read_mib_s),
        flush_us: mid(|s| s.flush_us),
    })
}

/// The loop model's keys for a disk that measured `s`: the transfer rates that give the
/// measured rates of 1 MiB requests (which fill the model's ring, so its host serves them one
/// at a time, each paying its request cost and round trip), and the flush.
pub fn loop_keys(s: &HostDiskStamp) -> Vec<(&'static str, String)> {
    let transfer = |mib_s: f64| {
        let per_request = 1e6 / mib_s.max(1.0);
        let bytes_per_s = (1u64 << 20) as f64 / ((per_request - PER_REQUEST_US).max(per_request / 2.0) / 1e6);
        format!("\"{}MiB/s\"", (bytes_per_s / (1u64 << 20) as f64).round() as u64)
    };
    vec![
        ("backing_write_bandwidth", transfer(s.write_mib_s)),
        ("backing_read_bandwidth", transfer(s.read_mib_s)),
        ("backing_flush_latency", format!("\"{}us\"", s.flush_us.round() as u64)),
    ]
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
/// disk its repeats measured — when every repeat has a stamp.
pub fn scenario_for(case_toml: &Path, repeats: &[PathBuf]) -> Result<PathBuf, String> {
    let sim = case_toml.with_file_name("sim.toml");
    let Some(s) = median(&repeats.iter().map(|r| stamp_of(r)).collect::<Vec<_>>()) else {
        let _ = std::fs::remove_file(&sim);
        return Ok(case_toml.to_path_buf());
    };
    let text = std::fs::read_to_string(case_toml).map_err(|e| format!("cannot read {}: {e}", case_toml.display()))?;
    let header = format!(
        "# {} on the host disk its measurements found (median of {} repeats: writes {} MiB/s, reads {} MiB/s, flush {} µs)\n",
        case_toml.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned()),
        repeats.len(),
        s.write_mib_s,
        s.read_mib_s,
        s.flush_us
    );
    std::fs::write(&sim, header + &with_loop_keys(&text, &loop_keys(&s))).map_err(|e| format!("cannot write {}: {e}", sim.display()))?;
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
        let keys = loop_keys(&stamp(550.0, 850.0, 216.0));
        let mib_s = |k: &str| -> f64 {
            let v = &keys.iter().find(|(n, _)| *n == k).unwrap().1;
            v.trim_matches('"').trim_end_matches("MiB/s").parse().unwrap()
        };
        for (key, measured) in [("backing_write_bandwidth", 550.0), ("backing_read_bandwidth", 850.0)] {
            let transfer = mib_s(key);
            assert!(transfer > measured, "{key}: the transfer outruns the request rate");
            let per_request_us = 1e6 / transfer + PER_REQUEST_US;
            let back = 1e6 / per_request_us;
            assert!((back / measured - 1.0).abs() < 0.01, "{key}: {back} MiB/s against {measured}");
        }
        assert!(keys.contains(&("backing_flush_latency", "\"216us\"".to_string())));
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
}
