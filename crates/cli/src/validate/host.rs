//! The host a case was measured on. The loop model's defaults describe this lab's `vda` on
//! one day; the disk's speed changes from day to day (1 MiB writes 0.55–2.9 GB/s in one
//! week), and so does what the VM's memory costs the page cache (a copy into memory the host
//! took back ran at 0.35 GB/s on one day and at 2.3 on another), so a case compared against
//! a run from another day would grade the host, not the model. `measure` times both before
//! it sets anything up (`machine.json`: `memory_touch`, `host_disk`); the case is then
//! simulated on that machine: `[machine] page_first_touch` from the repeats' median first
//! touch, `memory_bandwidth` from their cached reads' copy, its loop devices' reads at the
//! repeats' median read rate and round trip of the disk, and (asked
//! for with `--host-disk`) their writes and flushes too — the probe's writes do not predict a
//! loop's writeback, its reads do predict a loop's direct reads. The trace adds the other
//! devices' dirty level the run's throttle saw (`other_dirty_kib`: `[machine] other_dirty`).

use std::path::{Path, PathBuf};
use wblab_probe::hostdisk::HostDiskStamp;
use wblab_probe::memtouch::MemoryTouchStamp;
use wblab_sim::drivers::loopdev::LoopParams;

/// The host's work per 1 MiB request besides its transfer, µs: the loop model's
/// `backing_request_cost` (7) and `backing_latency` (20) and the guest's own path (about 10).
const PER_REQUEST_US: f64 = 37.0;

/// The host disk's 4 KiB round trip on the day the loop model's `backing_latency` was
/// calibrated, µs (fio, 4 KiB O_DIRECT random reads at queue depth 1 on `vda`, 2026-12-02:
/// p50 69 µs, when a loop over it read 4 KiB in 81). A day's round trip shifts the
/// latency by its difference from this one.
const REFERENCE_READ_4K_US: f64 = 69.0;

/// The size of the probe's cached reads, bytes.
const CACHED_READ_BYTES: f64 = (128u64 << 10) as f64;

/// The stamp in a measured repeat's `machine.json`, if it has one.
pub fn stamp_of(repeat: &Path) -> Option<HostDiskStamp> {
    serde_json::from_value(super::machine_field(repeat, "host_disk")?).ok()
}

/// The memory stamp in a measured repeat's `machine.json`, if it has one.
pub fn memory_stamp_of(repeat: &Path) -> Option<MemoryTouchStamp> {
    serde_json::from_value(super::machine_field(repeat, "memory_touch")?).ok()
}

/// Whether a measured repeat has every stamp its simulation uses: the memory's first touch
/// and the copy of a cached read (`memory_touch.cached_read_us`), the host disk's rates and
/// its 4 KiB round trip (`host_disk.read_4k_us`). A repeat measured before `measure` timed
/// one of them is simulated on the model's default for it, that is on another day's host.
pub fn fully_stamped(repeat: &Path) -> bool {
    let memory = memory_stamp_of(repeat).is_some_and(|m| m.cached_read_us.is_some());
    let disk = stamp_of(repeat).is_some_and(|d| d.read_4k_us.is_some());
    memory && disk
}

/// What the memory cost the repeats, medians over them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FirstTouch {
    /// A write's first touch, µs a page.
    pub write_us: f64,
    /// The memory left unreported, MiB.
    pub reserve_mib: f64,
    /// A read's first touch, µs a page, when every repeat timed it.
    pub read_us: Option<f64>,
    /// A 128 KiB read from the page cache, µs a call, when every repeat timed it.
    pub cached_read_us: Option<f64>,
    /// A 128 KiB read of pages a device read had just filled, µs a call, when every repeat
    /// timed it.
    pub fresh_read_us: Option<f64>,
}

/// The median first touches (µs a page) and unreported reserve (MiB) over the repeats;
/// `None` unless every repeat has a stamp.
pub fn median_first_touch(stamps: &[Option<MemoryTouchStamp>]) -> Option<FirstTouch> {
    let m = Medians::of(stamps)?;
    Some(FirstTouch {
        write_us: m.median(|s| s.first_touch_us),
        reserve_mib: m.median(|s| s.reserve_mib),
        read_us: m.median_of_some(|s| s.read_touch_us),
        cached_read_us: m.median_of_some(|s| s.cached_read_us),
        fresh_read_us: m.median_of_some(|s| s.fresh_read_us),
    })
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

    /// The median of a figure not every stamp has: `None` unless every repeat has it.
    fn median_of_some(&self, f: fn(&S) -> Option<f64>) -> Option<f64> {
        let v: Vec<f64> = self.0.iter().map(f).collect::<Option<_>>()?;
        Some(Medians(v).median(|&x| x))
    }
}

/// `case` with `[machine] page_first_touch`, `page_reporting_reserve` and (when timed)
/// `page_first_touch_read` set to what the repeats found.
pub fn with_first_touch(case: &str, t: FirstTouch) -> String {
    let ns = |us: f64| (us * 1000.0).round() as u64;
    let mut keys = format!(
        "page_first_touch = \"{}ns\"\npage_reporting_reserve = \"{}MiB\"\n",
        ns(t.write_us),
        t.reserve_mib.round() as u64
    );
    if let Some(us) = t.read_us {
        keys += &format!("page_first_touch_read = \"{}ns\"\n", ns(us));
    }
    if let Some(us) = t.cached_read_us {
        keys += &format!("memory_bandwidth = \"{}MiB/s\"\n", copy_mib_s(us));
        if let Some(fresh) = t.fresh_read_us {
            keys += &format!("cold_copy_cost = \"{}ns\"\n", cold_copy_ns(us, fresh));
        }
    }
    with_machine_keys(case, &keys)
}

/// `[machine] cold_copy_cost` (ns a 4 KiB page) for a machine whose 128 KiB read took
/// `cached_us` from the cache and `fresh_us` of pages a device read had just filled: what the
/// fresh read cost over the cached one, spread over its pages (0 where it cost no more).
pub fn cold_copy_ns(cached_us: f64, fresh_us: f64) -> u64 {
    let pages = CACHED_READ_BYTES / 4096.0;
    ((fresh_us - cached_us).max(0.0) * 1000.0 / pages).round() as u64
}

/// `[machine] memory_bandwidth` (MiB/s) for a machine whose 128 KiB cached read took `us` a
/// call: the model charges such a read its copy at that bandwidth and the call's
/// `syscall_overhead`, so the bandwidth is what is left of the call for the copy (at least
/// half of it).
pub fn copy_mib_s(us: f64) -> u64 {
    let overhead_us = wblab_sim::config::MachineConfig::default().syscall_overhead as f64 / 1e3;
    let copy_us = (us - overhead_us).max(us / 2.0).max(1e-3);
    (CACHED_READ_BYTES / copy_us * 1e6 / (1u64 << 20) as f64).round() as u64
}

/// `case` with `keys` (lines of TOML) in its `[machine]` table: after its `[machine]` line,
/// or in a `[machine]` table of its own before its first table. A key the table already
/// sets is replaced.
pub fn with_machine_keys(case: &str, keys: &str) -> String {
    let key_of = |l: &str| l.split_once('=').map(|(k, _)| k.trim().to_string());
    let replaced: Vec<String> = keys.lines().filter_map(key_of).collect();
    let mut out = String::with_capacity(case.len() + keys.len() + 16);
    let has_machine = case.lines().any(|l| l.trim() == "[machine]");
    let mut done = false;
    let mut in_machine = false;
    for line in case.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_machine = t == "[machine]";
        } else if in_machine && key_of(t).is_some_and(|k| replaced.contains(&k)) {
            continue;
        }
        if !done && !has_machine && t.starts_with('[') {
            out.push_str("[machine]\n");
            out.push_str(keys);
            done = true;
        }
        out.push_str(line);
        out.push('\n');
        if !done && t == "[machine]" {
            out.push_str(keys);
            done = true;
        }
    }
    if !done {
        out.push_str("[machine]\n");
        out.push_str(keys);
    }
    out
}

/// The KiB the system's other devices held dirty while a repeat's writers were throttled
/// (`machine.json`: `other_dirty_kib`, from its `balance_dirty_pages` events), if it recorded
/// them.
pub fn other_dirty_of(repeat: &Path) -> Option<u64> {
    super::machine_field(repeat, "other_dirty_kib")?.as_u64()
}

/// The free lists a repeat's workload started with (`machine.json`: `buddyinfo`), if it
/// recorded them.
pub fn buddyinfo_of(repeat: &Path) -> Option<Vec<u64>> {
    serde_json::from_value(super::machine_field(repeat, "buddyinfo")?).ok()
}

/// The median of each order's free blocks over the repeats; `None` unless every repeat
/// recorded its lists.
pub fn median_buddyinfo(lists: &[Option<Vec<u64>>]) -> Option<Vec<u64>> {
    let all: Vec<&Vec<u64>> = lists.iter().map(|l| l.as_ref()).collect::<Option<_>>()?;
    let orders = all.iter().map(|l| l.len()).max()?;
    Some(
        (0..orders)
            .map(|o| {
                let m = Medians(all.iter().map(|l| l.get(o).copied().unwrap_or(0)).collect());
                m.median(|&n| n as f64) as u64
            })
            .collect(),
    )
}

/// The median of the repeats' other dirty KiB; `None` unless every repeat has the figure.
pub fn median_other_dirty(levels: &[Option<u64>]) -> Option<u64> {
    Some(Medians::of(levels)?.median(|&kib| kib as f64) as u64)
}

/// The median of each figure over the repeats; `None` unless every repeat has a stamp.
pub fn median(stamps: &[Option<HostDiskStamp>]) -> Option<HostDiskStamp> {
    let m = Medians::of(stamps)?;
    Some(HostDiskStamp {
        write_mib_s: m.median(|s| s.write_mib_s),
        read_mib_s: m.median(|s| s.read_mib_s),
        flush_us: m.median(|s| s.flush_us),
        read_4k_us: m.median_of_some(|s| s.read_4k_us),
        read_large_mib_s: m.median_of_some(|s| s.read_large_mib_s),
    })
}

/// The loop model's read keys for a disk that measured `s`: the day's cost of each descriptor.
/// The probe's 1 MiB reads come from an ordinary buffer, a descriptor per 4 KiB page, and fill
/// the model's ring, so its host serves them one at a time, each paying its request cost and
/// round trip, its transfer and 256 descriptors. What changes from day to day is the
/// descriptors' part: a `cat`'s reads into 2 MiB folios (a few descriptors each) ran at
/// 2.1 GB/s on 2026-12-04, the default transfer rate, while the probe's reads that day took
/// 1 µs a descriptor against the default's 3. So the measured request time sets the
/// descriptor cost and leaves the transfer rate; a request faster than the transfer alone
/// (no descriptor cost left) sets the transfer rate instead. And the day's round trip of a
/// 4 KiB read, where the probe timed it, shifts `backing_latency` by its difference from the
/// calibration day's (a loop's 4 KiB read at queue depth 1 follows the host's: 81 µs over a
/// 69 µs `vda` on 2026-12-02, 53–59 over a 48 µs one on 2026-12-05), and a day faster than
/// the latency can follow the loop's `idle_wake` ([`round_trip_keys`]).
///
/// Where the probe also timed its reads into huge pages (`read_large_mib_s`: one descriptor a
/// request, eight of them in the host at once, as a large folio's readahead through a loop),
/// their rate is the day's transfer rate, and the descriptors get what is left of the
/// ordinary reads' time: the two parts no longer have to be told apart by assumption.
pub fn read_keys(s: &HostDiskStamp) -> Vec<(&'static str, String)> {
    let d = LoopParams::default();
    let pages = ((1u64 << 20) / 4096) as f64;
    let per_request = 1e6 / s.read_mib_s.max(1.0) - PER_REQUEST_US;
    let measured_transfer = s.read_large_mib_s.filter(|&r| r > 0.0);
    let transfer = match measured_transfer {
        Some(large) => 1e6 / large,
        None => (1u64 << 20) as f64 / d.backing_read_bandwidth as f64 * 1e6,
    };
    let mut keys = if per_request > transfer {
        let seg_ns = ((per_request - transfer) / pages * 1e3).round() as u64;
        let mut keys = vec![("backing_read_segment_cost", format!("\"{seg_ns}ns\""))];
        if let Some(large) = measured_transfer {
            keys.push(("backing_read_bandwidth", format!("\"{}MiB/s\"", large.round() as u64)));
        }
        keys
    } else {
        let mib_s = (1e6 / per_request.max(1e6 / s.read_mib_s.max(1.0) / 2.0)).round() as u64;
        vec![
            ("backing_read_segment_cost", "\"0ns\"".to_string()),
            ("backing_read_bandwidth", format!("\"{mib_s}MiB/s\"")),
        ]
    };
    if let Some(us) = s.read_4k_us {
        let (latency, wake) = round_trip_keys(&d, us);
        keys.push(("backing_latency", format!("\"{latency}ns\"")));
        if wake != d.idle_wake {
            keys.push(("idle_wake", format!("\"{wake}ns\"")));
        }
    }
    keys
}

/// The loop's `backing_latency` and `idle_wake` on a day whose 4 KiB round trip of the host
/// disk took `us`: the difference from the calibration day's goes to the host's latency, and
/// what a faster day leaves beyond it (the latency at 0) to the wake from idle CPUs. The
/// probe's round trip pays both — its one read at a time wakes a halted vCPU as the loop's
/// worker and submitter do — and a day whose round trip is 40 µs shorter than the reference
/// reads a loop 40 µs sooner too, not 20 (g017, g050, g078: 4 KiB loop reads in 38–40 µs on
/// a 26–30 µs day).
pub fn round_trip_keys(d: &LoopParams, us: f64) -> (u64, u64) {
    let shift = (us - REFERENCE_READ_4K_US) * 1e3;
    let latency = d.backing_latency as f64 + shift;
    let wake = d.idle_wake as f64 + latency.min(0.0);
    (latency.max(0.0).round() as u64, wake.max(0.0).round() as u64)
}

/// The loop model's write keys for a disk that measured `s` (`--host-disk`): the model's own
/// time for the probe's 1 MiB write (its segments and its transfer) scaled to the measured
/// one, both parts alike. And the flush.
pub fn write_keys(s: &HostDiskStamp) -> Vec<(&'static str, String)> {
    let d = LoopParams::default();
    let pages = (1u64 << 20) / 4096;
    let (rate, seg_ns) = (d.backing_write_bandwidth, d.backing_write_segment_cost);
    let model_us = (pages * seg_ns) as f64 / 1e3 + (1u64 << 20) as f64 / rate as f64 * 1e6;
    let per_request = 1e6 / s.write_mib_s.max(1.0);
    let factor = (per_request - PER_REQUEST_US).max(per_request / 2.0) / model_us;
    let mut keys = vec![(
        "backing_write_bandwidth",
        format!("\"{}MiB/s\"", (rate as f64 / factor / (1u64 << 20) as f64).round() as u64),
    )];
    if seg_ns > 0 {
        keys.push((
            "backing_write_segment_cost",
            format!("\"{}ns\"", (seg_ns as f64 * factor).round() as u64),
        ));
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

/// Where the case is simulated from: `case.toml`, or `name` beside it — the case on the
/// machine `repeats` measured (their medians) — when every repeat has a stamp: the memory's
/// first touch and the disk's reads always, its writes and flush when `disk` is asked for;
/// and with the device keys the kernel refused at the values it kept ([`super::refused`]).
pub fn scenario_for(case_toml: &Path, repeats: &[PathBuf], name: &str, disk: bool) -> Result<PathBuf, String> {
    let sim = case_toml.with_file_name(name);
    let touch = median_first_touch(&repeats.iter().map(|r| memory_stamp_of(r)).collect::<Vec<_>>());
    let host = median(&repeats.iter().map(|r| stamp_of(r)).collect::<Vec<_>>());
    let other = median_other_dirty(&repeats.iter().map(|r| other_dirty_of(r)).collect::<Vec<_>>());
    let buddy = touch.and_then(|_| median_buddyinfo(&repeats.iter().map(|r| buddyinfo_of(r)).collect::<Vec<_>>()));
    let text = std::fs::read_to_string(case_toml).map_err(|e| format!("cannot read {}: {e}", case_toml.display()))?;
    let refusals = repeats.first().map(|r| super::refused::refused_in(r)).unwrap_or_default();
    let (mut text, refused) = super::refused::as_run(&text, &refusals);
    if touch.is_none() && host.is_none() && other.is_none() && refused.is_empty() {
        let _ = std::fs::remove_file(&sim);
        return Ok(case_toml.to_path_buf());
    }
    let name = case_toml.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let mut header = match repeats {
        [one] => format!(
            "# {name} on the machine its measurement {} found:",
            one.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned())
        ),
        _ => format!("# {name} on the machine its {} measurements found (medians):", repeats.len()),
    };
    for r in &refused {
        header += &format!(" {} {} refused {}, ran {};", r.device, r.key, r.wanted, r.effective);
        eprintln!(
            "  {} {}: the kernel refused {} and ran {}; simulated as it ran",
            r.device, r.key, r.wanted, r.effective
        );
    }
    if let Some(t) = touch {
        header += &format!(" first touch of free memory {} µs a page past {} MiB", t.write_us, t.reserve_mib);
        if let Some(r) = t.read_us {
            header += &format!(" ({r} µs for a read's)");
        }
        if let Some(c) = t.cached_read_us {
            header += &format!(", 128 KiB cached reads {c} µs");
        }
        if let Some(f) = t.fresh_read_us {
            header += &format!(" ({f} µs just read from disk)");
        }
        header += ";";
        text = with_first_touch(&text, t);
    }
    if let Some(b) = &buddy {
        let line = b.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" ");
        header += &format!(" free lists {line};");
        text = with_machine_keys(&text, &format!("buddyinfo = \"{line}\"\n"));
    }
    if let Some(kib) = other {
        header += &format!(" {kib} KiB dirty on other devices;");
        text = with_machine_keys(&text, &format!("other_dirty = \"{kib}KiB\"\n"));
    }
    if let Some(s) = host {
        let mut keys = read_keys(&s);
        if disk {
            header += &format!(
                " host disk writes {} MiB/s, reads {} MiB/s, flush {} µs;",
                s.write_mib_s, s.read_mib_s, s.flush_us
            );
            keys.extend(write_keys(&s));
        } else {
            header += &format!(" host disk reads {} MiB/s;", s.read_mib_s);
        }
        if let Some(us) = s.read_4k_us {
            header.pop();
            header += &format!(", 4 KiB in {us} µs;");
        }
        text = with_loop_keys(&text, &keys);
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
            read_4k_us: None,
            read_large_mib_s: None,
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

    /// A key's number, without its unit.
    fn num(keys: &[(&str, String)], k: &str, unit: &str) -> Option<f64> {
        let v = &keys.iter().find(|(n, _)| *n == k)?.1;
        Some(v.trim_matches('"').trim_end_matches(unit).parse().unwrap())
    }

    /// The model's time for the probe's request, a 1 MiB read or write of 256 scattered pages
    /// one at a time, as MiB/s.
    fn probe_rate(keys: &[(&str, String)], dir: &str) -> f64 {
        let d = LoopParams::default();
        let default_rate = if dir == "read" {
            d.backing_read_bandwidth
        } else {
            d.backing_write_bandwidth
        };
        let transfer = num(keys, &format!("backing_{dir}_bandwidth"), "MiB/s").unwrap_or(default_rate as f64 / (1u64 << 20) as f64);
        let segment_us = num(keys, &format!("backing_{dir}_segment_cost"), "ns").unwrap_or(0.0) / 1e3;
        1e6 / (1e6 / transfer + 256.0 * segment_us + PER_REQUEST_US)
    }

    #[test]
    fn the_keys_give_back_the_measured_rate_one_request_at_a_time() {
        for (w, r) in [(550.0, 850.0), (2400.0, 1400.0), (1000.0, 2600.0)] {
            let s = stamp(w, r, 216.0);
            let (reads, writes) = (read_keys(&s), write_keys(&s));
            for (dir, keys, measured) in [("write", &writes, w), ("read", &reads, r)] {
                let back = probe_rate(keys, dir);
                assert!((back / measured - 1.0).abs() < 0.01, "{dir}: {back} MiB/s against {measured}");
            }
            assert!(writes.contains(&("backing_flush_latency", "\"216us\"".to_string())));
            assert!(!reads.iter().any(|(k, _)| k.contains("write") || k.contains("flush")));
        }
        // A day's reads move the descriptors' cost, not a large folio's transfer.
        let seg = |r: f64| num(&read_keys(&stamp(1000.0, r, 50.0)), "backing_read_segment_cost", "ns").unwrap();
        assert!(seg(1400.0) < seg(850.0));
        assert_eq!(
            num(&read_keys(&stamp(1000.0, 1400.0, 50.0)), "backing_read_bandwidth", "MiB/s"),
            None
        );
    }

    /// With the huge-page reads timed, the transfer rate is theirs and the descriptors take the
    /// rest: the model's own time for the ordinary probe gives the measured rate back.
    #[test]
    fn huge_page_reads_set_the_transfer_and_leave_the_descriptors_the_rest() {
        let mut s = stamp(1000.0, 960.0, 50.0);
        s.read_large_mib_s = Some(1800.0);
        let keys = read_keys(&s);
        assert_eq!(num(&keys, "backing_read_bandwidth", "MiB/s"), Some(1800.0));
        let back = probe_rate(&keys, "read");
        assert!((back / 960.0 - 1.0).abs() < 0.01, "{back} MiB/s against 960");
        let seg = num(&keys, "backing_read_segment_cost", "ns").unwrap();
        let without = num(&read_keys(&stamp(1000.0, 960.0, 50.0)), "backing_read_segment_cost", "ns").unwrap();
        assert!(
            seg < without,
            "a slower transfer than the default's leaves less to the descriptors: {seg} ns against {without}"
        );
        // A faster day's transfer than the default gives the descriptors more.
        s.read_large_mib_s = Some(3000.0);
        assert!(num(&read_keys(&s), "backing_read_segment_cost", "ns").unwrap() > without);
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
        let touch = |read_us| FirstTouch {
            write_us: 10.89,
            reserve_mib: 256.0,
            read_us,
            cached_read_us: None,
            fresh_read_us: None,
        };
        for case in [with, without] {
            let out = with_first_touch(case, touch(None));
            let sc = wblab_scenario::parse(&out, "sim.toml").map_err(|e| e.to_string()).unwrap();
            assert_eq!(sc.machine.page_first_touch, 10_890, "{out}");
            assert_eq!(sc.machine.page_first_touch_read, None, "{out}");
            assert_eq!(sc.machine.page_reporting_reserve, Some(256 << 20));
            assert_eq!(sc.machine.cpus, 2);
            let out = with_first_touch(case, touch(Some(6.5)));
            let sc = wblab_scenario::parse(&out, "sim.toml").map_err(|e| e.to_string()).unwrap();
            assert_eq!(sc.machine.page_first_touch_read, Some(6_500), "{out}");
        }
        let m = |us: f64, read: Option<f64>| {
            Some(MemoryTouchStamp {
                first_touch_us: us,
                warm_us: 0.8,
                reporting: true,
                reserve_mib: 32.0 * us,
                read_touch_us: read,
                cached_read_us: read.map(|r| r + 1.0),
                fresh_read_us: read.map(|r| r + 5.0),
            })
        };
        let med = median_first_touch(&[m(3.0, Some(2.0)), m(11.0, Some(7.0)), m(9.0, Some(6.0))]).unwrap();
        assert_eq!((med.write_us, med.reserve_mib, med.read_us), (9.0, 288.0, Some(6.0)));
        assert_eq!((med.cached_read_us, med.fresh_read_us), (Some(7.0), Some(11.0)));
        // A read's touch only where every repeat timed it (older stamps did not).
        let med = median_first_touch(&[m(3.0, Some(2.0)), m(11.0, None), m(9.0, Some(6.0))]).unwrap();
        assert_eq!((med.read_us, med.cached_read_us), (None, None));
        assert_eq!(median_first_touch(&[m(3.0, None), None]), None);
    }

    /// Each order's free blocks reach the case as `buddyinfo`, the repeats' median order by
    /// order, and only when every repeat recorded its lists.
    #[test]
    fn the_free_lists_go_into_the_machine_table() {
        let m = median_buddyinfo(&[Some(vec![5, 1, 9]), Some(vec![3, 2, 7]), Some(vec![4, 8, 8, 1])]).unwrap();
        assert_eq!(m, vec![4, 2, 8, 0]);
        assert_eq!(median_buddyinfo(&[Some(vec![1]), None]), None);
        let out = with_machine_keys("name = \"g\"\n", "buddyinfo = \"4 2 8 0\"\n");
        let sc = wblab_scenario::parse(&out, "sim.toml").map_err(|e| e.to_string()).unwrap();
        assert_eq!(sc.machine.buddyinfo, Some(vec![4, 2, 8, 0]));
    }

    /// `--remeasure-unstamped` measures again a repeat that lacks any of the day's timings its
    /// simulation takes: the memory's first touch, the cached read's copy, the disk's round trip.
    #[test]
    fn a_repeat_is_stamped_only_with_every_timing_of_the_day() {
        let dir = std::env::temp_dir().join(format!("wblab-stamped-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let touch = r#""memory_touch": {"first_touch_us": 8.3, "warm_us": 0.9, "reporting": true"#;
        let disk = r#""host_disk": {"write_mib_s": 1900.0, "read_mib_s": 1700.0, "flush_us": 40.0"#;
        let repeat = |name: &str, json: String| {
            let r = dir.join(name);
            std::fs::create_dir_all(&r).unwrap();
            std::fs::write(r.join("machine.json"), json).unwrap();
            r
        };
        let none = repeat("none", "{}".into());
        let old = repeat("old", format!("{{{touch}}}, {disk}}}}}"));
        let no_trip = repeat("no-trip", format!("{{{touch}, \"cached_read_us\": 8.5}}, {disk}}}}}"));
        let no_copy = repeat("no-copy", format!("{{{touch}}}, {disk}, \"read_4k_us\": 51.0}}}}"));
        let all = repeat(
            "all",
            format!("{{{touch}, \"cached_read_us\": 8.5}}, {disk}, \"read_4k_us\": 51.0}}}}"),
        );
        for r in [&none, &old, &no_trip, &no_copy] {
            assert!(memory_stamp_of(r).is_some() || r == &none, "{}: the JSON parses", r.display());
            assert!(!fully_stamped(r), "{} lacks a timing", r.display());
        }
        assert!(fully_stamped(&all));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The system's own dirty level each repeat found reaches the case as `other_dirty`, the
    /// repeats' median, and only when every repeat recorded it.
    #[test]
    fn the_other_devices_dirty_level_goes_into_the_machine_table() {
        let dir = std::env::temp_dir().join(format!("wblab-other-dirty-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let case = dir.join("case.toml");
        let repeat = |k: usize, kib: Option<u64>| {
            let r = dir.join(format!("r{k}"));
            std::fs::create_dir_all(&r).unwrap();
            let json = kib.map_or("{}".to_string(), |v| format!("{{\"other_dirty_kib\": {v}}}"));
            std::fs::write(r.join("machine.json"), json).unwrap();
            r
        };
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&case, "name = \"g\"\n[[device]]\nname = \"a\"\nmodel = \"ssd\"\n").unwrap();
        let all = [repeat(1, Some(48)), repeat(2, Some(36)), repeat(3, Some(400))];
        let sim = scenario_for(&case, &all, "sim.toml", false).unwrap();
        let text = std::fs::read_to_string(&sim).unwrap();
        let sc = wblab_scenario::parse(&text, "sim.toml").map_err(|e| e.to_string()).unwrap();
        assert_eq!(sc.machine.other_dirty, 48 << 10, "{text}");
        let gap = [repeat(4, Some(48)), repeat(5, None)];
        assert_eq!(scenario_for(&case, &gap, "sim2.toml", false).unwrap(), case);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The day's memory and disk, as the probe timed them, reach the model's reads: a `cat` of
    /// a file on disk pays a call what the probe's reads of pages just read from disk did (or,
    /// where only its cached reads were timed, what those did), and a 4 KiB direct reader on a
    /// loop gains what the host's round trip gained, whatever the case set before.
    #[test]
    fn the_days_copy_and_round_trip_reach_the_readers() {
        let case = "name = \"day\"\nduration = \"2s\"\n[machine]\nmemory = \"4GiB\"\ncpus = 2\n\
                    memory_bandwidth = \"10GiB/s\"\n[[device]]\nname = \"loop64\"\nmodel = \"loop\"\n\
                    size = \"2GiB\"\nfs = \"ext4\"\n[[task]]\nname = \"cat\"\njob = \"cat\"\n\
                    file = \"/mnt/loop64/c\"\nfile_size = \"64MiB\"\n[[task]]\nname = \"rr\"\n\
                    job = \"randread\"\nfile = \"/mnt/loop64/r\"\nfile_size = \"64MiB\"\nbs = \"4KiB\"\n\
                    think = \"0ms\"\n";
        let p50s = |copy_us: f64, fresh_us: Option<f64>, round_trip_us: f64| {
            let touch = FirstTouch {
                write_us: 0.0,
                reserve_mib: 0.0,
                read_us: None,
                cached_read_us: Some(copy_us),
                fresh_read_us: fresh_us,
            };
            let mut disk = stamp(2000.0, 850.0, 50.0);
            disk.read_4k_us = Some(round_trip_us);
            let text = with_loop_keys(&with_first_touch(case, touch), &read_keys(&disk));
            assert_eq!(text.matches("memory_bandwidth").count(), 1, "{text}");
            let sc = wblab_scenario::parse(&text, "day.toml").map_err(|e| e.to_string()).unwrap();
            let r = wblab_testkit::sim::run(&sc);
            let p50 = |name: &str| r.tasks.iter().find(|t| t.name == name).unwrap().op_latency.summary().p50 as f64 / 1e3;
            (p50("cat"), p50("rr"))
        };
        let (slow_cat, slow_rr) = p50s(13.0, None, REFERENCE_READ_4K_US);
        let (fast_cat, fast_rr) = p50s(7.0, None, REFERENCE_READ_4K_US - 15.0);
        let (fresh_cat, _) = p50s(7.0, Some(12.5), REFERENCE_READ_4K_US);
        for (cat, want) in [(slow_cat, 13.0), (fast_cat, 7.0), (fresh_cat, 12.5)] {
            assert!(
                (cat / want - 1.0).abs() < 0.1,
                "a read of the file: {cat} µs in the model, {want} on the day"
            );
        }
        let gained = slow_rr - fast_rr;
        assert!(
            (gained - 15.0).abs() < 4.0,
            "the reader's p50 {slow_rr} → {fast_rr} µs, the host's 15 µs faster"
        );
        // A day 40 µs faster than the calibration's: more than the host's latency holds, the
        // rest from the wake of the idle loop's threads.
        let (_, fastest_rr) = p50s(13.0, None, REFERENCE_READ_4K_US - 40.0);
        let gained = slow_rr - fastest_rr;
        assert!(
            (gained - 40.0).abs() < 6.0,
            "the reader's p50 {slow_rr} → {fastest_rr} µs, the host's 40 µs faster"
        );
    }
}
