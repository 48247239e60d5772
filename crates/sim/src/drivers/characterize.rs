//! Datasheet figures of a device model, measured on the model itself.
//!
//! [`characterize`] builds a fresh device for each measurement and drives it directly with a
//! tiny closed loop (keep `qd` requests inside, advance to the next device event), the way the
//! block layer does but without a scheduler, merging or a page cache:
//!
//! - sequential writes and reads: 1 MiB requests (or `max_sectors_kb`, if smaller: 120 KiB on
//!   a USB key, the chunk on raid0) from LBA 0 at queue depth `min(qd, 4)` per stripe member
//!   (what writeback and readahead keep in flight; raid0 counts `members` stripes). The rate is
//!   the *steady* one: the first [`SEQ_WARMUP`] bytes (plus the write cache, for writes) are
//!   not counted (raid0: `members` times the warm-up and measured lengths, so each member
//!   sees what a single device would), so `seq_write_mb_s` is what a long sequential write stream near the start of
//!   the device gets once the cache is full, not the burst into an empty cache (that is
//!   `write_burst_mb_s`). On a device whose writes complete unstable (NFS), a write counts when
//!   a COMMIT has made it stable: `seq_write_mb_s` is the rate pages leave writeback, while
//!   `write_burst_mb_s` counts WRITE replies (the burst into the server's page cache);
//! - random 4 KiB reads (and writes), uniform over the whole device, 4 KiB aligned, from a
//!   fixed RNG stream, [`RANDOM_REQUESTS`] requests at queue depth 1 and 32.
//!
//! MB = 10^6 bytes. Runs in a few milliseconds of host time.

use super::{build, DevRequest, Device, Op};
use crate::config::DeviceConfig;
use crate::engine::RngStream;
use crate::Ns;
use serde::Serialize;

/// Bytes of a sequential stream not counted in its steady rate.
pub const SEQ_WARMUP: u64 = 512 << 20;
/// Bytes of a sequential stream that are counted.
pub const SEQ_MEASURED: u64 = 1536 << 20;
/// Random requests per random measurement.
pub const RANDOM_REQUESTS: usize = 2000;
const SEQ_BS: u64 = 1 << 20;
const RAND_BS: u64 = 4096;
const BURST: u64 = 64 << 20;

#[derive(Clone, Debug, Serialize)]
pub struct DeviceFigures {
    /// Steady sequential write rate of 1 MiB requests (or `max_sectors_kb`) from LBA 0 (write
    /// cache full; NFS: as writes become stable), MB/s.
    pub seq_write_mb_s: f64,
    /// Sequential read rate of 1 MiB requests from LBA 0, MB/s.
    pub seq_read_mb_s: f64,
    /// Sequential read rate of 1 MiB requests over the last 256 MiB of the device, MB/s.
    pub seq_read_inner_mb_s: f64,
    /// Rate of the first 64 MiB of sequential writes into an idle device (cache burst), MB/s.
    pub write_burst_mb_s: f64,
    /// Random 4 KiB reads over the whole device, one at a time.
    pub rand_read_iops_qd1: f64,
    /// Random 4 KiB reads over the whole device, 32 (or the queue depth, if smaller) at a time.
    pub rand_read_iops_qd32: f64,
    /// Random 4 KiB writes over the whole device, one at a time (absorbed by the write cache
    /// when there is one and the 8 MB of writes fit).
    pub rand_write_iops_qd1: f64,
    /// Mean completion latency of the qd1 random reads, ms.
    pub rand_read_latency_ms_qd1: f64,
    /// Mean completion latency of the qd32 random reads, ms.
    pub rand_read_latency_ms_qd32: f64,
}

/// One completion: issue and completion time, bytes.
#[derive(Clone, Copy)]
struct Done {
    issued: Ns,
    at: Ns,
    bytes: u64,
}

/// Drive `dev` with `n` requests from `next(i)`, keeping `qd` inside; completions in order.
fn drive(dev: &mut dyn Device, qd: u32, n: usize, next: impl FnMut(usize) -> (Op, u64, u64)) -> Vec<Done> {
    drive_stable(dev, qd, n, next).0
}

/// As [`drive`], and for a device whose writes complete unstable, the write completions again
/// at the time a COMMIT made each stable (empty for other devices). Runs until those are in.
fn drive_stable(dev: &mut dyn Device, qd: u32, n: usize, mut next: impl FnMut(usize) -> (Op, u64, u64)) -> (Vec<Done>, Vec<Done>) {
    let qd = qd.clamp(1, dev.queue_depth().max(1));
    let unstable = dev.unstable_writes();
    let mut issued: Vec<(Ns, u64, Op)> = Vec::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    let mut writes = Vec::new();
    let mut stable = Vec::new();
    let mut ids = Vec::new();
    let mut now: Ns = 0;
    while out.len() < n || stable.len() < writes.len() {
        while issued.len() < n && dev.in_flight() < qd {
            let i = issued.len();
            let (op, sector, bytes) = next(i);
            dev.dispatch(
                now,
                DevRequest {
                    id: i as u32,
                    op,
                    sector,
                    bytes,
                    segments: bytes.div_ceil(4096) as u32,
                    sync: false,
                    fua: false,
                    prio: Default::default(),
                },
            );
            issued.push((now, bytes, op));
        }
        let Some(t) = dev.next_event() else { break };
        now = now.max(t);
        ids.clear();
        dev.advance(now, &mut ids);
        for &id in &ids {
            let (at, bytes, op) = issued[id as usize];
            let d = Done {
                issued: at,
                at: now,
                bytes,
            };
            if unstable && op == Op::Write {
                writes.push(d);
            }
            out.push(d);
        }
        // Write completions COMMITs made stable, in completion order.
        let upto = (dev.stable_writes() as usize).min(writes.len());
        for w in writes.get(stable.len()..upto).unwrap_or_default() {
            stable.push(Done { at: now, ..*w });
        }
    }
    (out, stable)
}

/// MB/s of the completions after the first `skip` bytes.
fn steady_mb_s(done: &[Done], skip: u64) -> f64 {
    let mut acc = 0;
    let mut from = None;
    let mut bytes = 0u64;
    for (i, d) in done.iter().enumerate() {
        if from.is_none() {
            acc += d.bytes;
            // Start at the end of a batch of completions at one instant (a COMMIT makes a
            // whole pass stable at once), so none of the counted bytes took no time.
            if acc >= skip && done.get(i + 1).is_none_or(|n| n.at > d.at) {
                from = Some(d.at);
            }
        } else {
            bytes += d.bytes;
        }
    }
    let (Some(t0), Some(last)) = (from, done.last()) else { return 0.0 };
    if last.at <= t0 {
        return 0.0;
    }
    bytes as f64 / ((last.at - t0) as f64 * 1e-9) / 1e6
}

/// Sequential requests of `min(1 MiB, max_sectors_kb)` from byte `first`: the completions,
/// and for unstable writes the same writes as they became stable.
fn sequential(cfg: &DeviceConfig, op: Op, first: u64, total: u64) -> (Vec<Done>, Vec<Done>) {
    let mut dev = build(cfg, RngStream::new(1, "characterize"));
    let qd = dev.queue_depth().min(4 * cfg.model.stripes() as u32);
    let bs = SEQ_BS.min(u64::from(cfg.queue.max_sectors_kb.max(4)) * 1024);
    let n = total.div_ceil(bs) as usize;
    drive_stable(dev.as_mut(), qd, n, |i| (op, (first + i as u64 * bs) / 512, bs))
}

fn random(cfg: &DeviceConfig, op: Op, qd: u32) -> (f64, f64) {
    let mut dev = build(cfg, RngStream::new(1, "characterize"));
    let mut rng = RngStream::new(1, "characterize/random");
    let blocks = (cfg.size / RAND_BS).max(1);
    let done = drive(dev.as_mut(), qd, RANDOM_REQUESTS, |_| {
        (op, rng.below(blocks) * (RAND_BS / 512), RAND_BS)
    });
    let Some(last) = done.last() else { return (0.0, 0.0) };
    let iops = done.len() as f64 / (last.at.max(1) as f64 * 1e-9);
    let lat = done.iter().map(|d| (d.at - d.issued) as f64).sum::<f64>() / done.len() as f64 / 1e6;
    (iops, lat)
}

/// Measure the figures of the device `cfg` describes.
pub fn characterize(cfg: &DeviceConfig) -> DeviceFigures {
    // A raid0 stream is measured over as many bytes per member as a single device's.
    let n = cfg.model.stripes();
    let (warmup, measured) = (n * SEQ_WARMUP, n * SEQ_MEASURED);
    // Bytes of writes the device absorbs before a sequential stream runs at its steady rate
    // (NFS: measured on what becomes stable, which the server's cache does not speed up).
    let cache = cfg.model.write_cache_bytes();
    let (w, stable) = sequential(cfg, Op::Write, 0, cache + warmup + measured);
    let seq_write_mb_s = if stable.is_empty() {
        steady_mb_s(&w, cache + warmup)
    } else {
        steady_mb_s(&stable, cache + warmup)
    };
    let write_burst_mb_s = {
        let upto = w.iter().scan(0u64, |acc, d| {
            *acc += d.bytes;
            Some((*acc, d.at))
        });
        let (bytes, at) = upto.take_while(|&(b, _)| b <= BURST).last().unwrap_or((0, 0));
        if at > 0 {
            bytes as f64 / (at as f64 * 1e-9) / 1e6
        } else {
            0.0
        }
    };
    let (r, _) = sequential(cfg, Op::Read, 0, warmup + measured);
    let seq_read_mb_s = steady_mb_s(&r, warmup);
    let inner_len = n * (256u64 << 20);
    let inner_first = (cfg.size.saturating_sub(inner_len)) / SEQ_BS * SEQ_BS;
    let (ri, _) = sequential(cfg, Op::Read, inner_first, inner_len);
    let seq_read_inner_mb_s = steady_mb_s(&ri, inner_len / 4);
    let (rand_read_iops_qd1, rand_read_latency_ms_qd1) = random(cfg, Op::Read, 1);
    let (rand_read_iops_qd32, rand_read_latency_ms_qd32) = random(cfg, Op::Read, 32);
    let (rand_write_iops_qd1, _) = random(cfg, Op::Write, 1);
    DeviceFigures {
        seq_write_mb_s,
        seq_read_mb_s,
        seq_read_inner_mb_s,
        write_burst_mb_s,
        rand_read_iops_qd1,
        rand_read_iops_qd32,
        rand_write_iops_qd1,
        rand_read_latency_ms_qd1,
        rand_read_latency_ms_qd32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DeviceModelConfig, HddParams, NfsParams, Raid0Params, Scenario, SsdParams, UsbParams};

    fn device(model: DeviceModelConfig) -> DeviceConfig {
        Scenario::one_device("c", model, 1 << 30, 1, 1).devices.remove(0)
    }

    fn mb(bytes_per_s: u64) -> f64 {
        bytes_per_s as f64 / 1e6
    }

    fn near(x: f64, want: f64, tol: f64) -> bool {
        (x / want - 1.0).abs() <= tol
    }

    #[test]
    fn hdd_figures_match_the_datasheet() {
        let p = HddParams::default();
        let f = characterize(&device(DeviceModelConfig::Hdd(p.clone())));
        assert!(near(f.seq_write_mb_s, mb(p.transfer_outer), 0.02), "{f:?}");
        assert!(near(f.seq_read_mb_s, mb(p.transfer_outer), 0.02), "{f:?}");
        assert!(near(f.seq_read_inner_mb_s, mb(p.transfer_inner), 0.03), "{f:?}");
        assert!(near(f.write_burst_mb_s, mb(p.interface_rate), 0.1), "{f:?}");
        assert!((75.0..=85.0).contains(&f.rand_read_iops_qd1), "{f:?}");
        let gain = f.rand_read_iops_qd32 / f.rand_read_iops_qd1;
        assert!((1.5..=2.5).contains(&gain), "NCQ gain {gain:.2}: {f:?}");
        let rev_ms = 60e3 / p.rpm as f64;
        let lat = f.rand_read_latency_ms_qd1;
        assert!(
            lat >= p.seek_average as f64 / 1e6 && lat <= (p.seek_average + p.command_overhead) as f64 / 1e6 + rev_ms,
            "{f:?}"
        );
        assert!(near(1e3 / lat, f.rand_read_iops_qd1, 0.01));
        // 8 MB of random writes fit the cache: they complete at interface speed.
        assert!(f.rand_write_iops_qd1 > 50.0 * f.rand_read_iops_qd1, "{f:?}");

        // Without the cache, writes go at media speed, random writes like random reads.
        let wt = characterize(&device(DeviceModelConfig::Hdd(HddParams {
            write_cache: false,
            ..p.clone()
        })));
        assert!(near(wt.seq_write_mb_s, mb(p.transfer_outer), 0.02), "{wt:?}");
        assert!(near(wt.rand_write_iops_qd1, wt.rand_read_iops_qd1, 0.1), "{wt:?}");
    }

    #[test]
    fn ssd_figures_match_the_parameters() {
        let p = SsdParams::default();
        let f = characterize(&device(DeviceModelConfig::Ssd(p.clone())));
        assert!(near(f.seq_write_mb_s, mb(p.write_bandwidth), 0.02), "{f:?}");
        assert!(near(f.seq_read_mb_s, mb(p.read_bandwidth), 0.02), "{f:?}");
        assert!(near(f.seq_read_inner_mb_s, mb(p.read_bandwidth), 0.02), "{f:?}");
        let lat_ms = p.read_latency as f64 / 1e6;
        assert!(
            f.rand_read_latency_ms_qd1 >= lat_ms && f.rand_read_latency_ms_qd1 <= 1.05 * lat_ms,
            "{f:?}"
        );
        let ideal = p.parallelism as f64 / (p.read_latency as f64 * 1e-9);
        assert!(f.rand_read_iops_qd32 >= 0.75 * ideal && f.rand_read_iops_qd32 <= ideal, "{f:?}");
        assert!(f.rand_write_iops_qd1 > f.rand_read_iops_qd1, "{f:?}");
    }

    #[test]
    fn usb_figures_match_the_parameters() {
        let p = UsbParams::default();
        let d = device(DeviceModelConfig::Usb(p.clone()));
        assert_eq!(d.queue.max_sectors_kb, 120);
        let f = characterize(&d);
        // 120 KiB requests (usb-storage's limit), one command overhead each.
        let bs = 120 * 1024;
        let per = |bw: u64| bs as f64 / ((p.command_overhead + crate::drivers::xfer(bs, bw)) as f64 * 1e-9) / 1e6;
        assert!(near(f.seq_write_mb_s, per(p.write_bandwidth), 0.005), "{f:?}");
        assert!(near(f.seq_read_mb_s, per(p.read_bandwidth), 0.005), "{f:?}");
        assert!(
            (8.0..=10.0).contains(&f.seq_write_mb_s) && (20.0..=30.0).contains(&f.seq_read_mb_s),
            "{f:?}"
        );
        assert!(near(f.write_burst_mb_s, f.seq_write_mb_s, 0.02), "no cache to burst into: {f:?}");
        // One command at a time: queue depth 32 gains nothing.
        let lat = (p.command_overhead + crate::drivers::xfer(4096, p.read_bandwidth)) as f64 / 1e6;
        assert!(near(f.rand_read_latency_ms_qd1, lat, 1e-6), "{f:?}");
        assert!(near(f.rand_read_iops_qd32, f.rand_read_iops_qd1, 1e-9), "{f:?}");
        // Random 4 KiB writes copy about a whole erase block each: ~2 IOPS.
        let ideal = mb(p.write_bandwidth) * 1e6 / p.erase_block as f64;
        assert!(near(f.rand_write_iops_qd1, ideal, 0.15), "{f:?}");
    }

    #[test]
    fn nfs_figures_match_the_parameters() {
        let p = NfsParams::default();
        let f = characterize(&device(DeviceModelConfig::Nfs(p.clone())));
        // What becomes stable runs at the server disk's rate; the burst at the link's.
        assert!(near(f.seq_write_mb_s, mb(p.server_write_bandwidth), 0.01), "{f:?}");
        assert!(near(f.write_burst_mb_s, mb(p.link_bandwidth), 0.01), "{f:?}");
        assert!(
            near(f.seq_read_mb_s, mb(p.server_read_bandwidth.min(p.link_bandwidth)), 0.01),
            "{f:?}"
        );
        let x = |bw| crate::drivers::xfer(4096, bw);
        let lat = (p.rtt + x(p.server_read_bandwidth) + x(p.link_bandwidth)) as f64 / 1e6;
        assert!(near(f.rand_read_latency_ms_qd1, lat, 1e-6), "{f:?}");
        // A fast link, a slow server: the server's disk; a slow link: the link.
        let slow_link = NfsParams {
            link_bandwidth: 50_000_000,
            ..p.clone()
        };
        let f = characterize(&device(DeviceModelConfig::Nfs(slow_link)));
        assert!(near(f.seq_write_mb_s, 50.0, 0.02), "{f:?}");
        assert!(near(f.seq_read_mb_s, 50.0, 0.01), "{f:?}");
    }

    #[test]
    fn raid0_figures_are_members_times_a_member() {
        for member in [
            DeviceModelConfig::Ssd(SsdParams::default()),
            DeviceModelConfig::Hdd(HddParams::default()),
        ] {
            let one = characterize(&device(member.clone()));
            for n in [2u32, 4] {
                let array = DeviceModelConfig::Raid0(Raid0Params {
                    members: n,
                    member: Box::new(member.clone()),
                    ..Raid0Params::default()
                });
                let f = characterize(&device(array));
                let n = n as f64;
                assert!(near(f.seq_write_mb_s, n * one.seq_write_mb_s, 0.05), "{n} × {one:?}: {f:?}");
                assert!(near(f.seq_read_mb_s, n * one.seq_read_mb_s, 0.05), "{n} × {one:?}: {f:?}");
                // A random read alone costs what it costs on its member.
                assert!(
                    near(f.rand_read_latency_ms_qd1, one.rand_read_latency_ms_qd1, 0.1),
                    "{one:?}: {f:?}"
                );
                assert!(f.rand_read_iops_qd32 > 1.2 * one.rand_read_iops_qd32, "{one:?}: {f:?}");
            }
        }
    }

    #[test]
    fn fast_and_deterministic() {
        for m in [
            DeviceModelConfig::Hdd(HddParams::default()),
            DeviceModelConfig::Ssd(SsdParams::default()),
            DeviceModelConfig::Usb(UsbParams::default()),
            DeviceModelConfig::Nfs(NfsParams::default()),
            DeviceModelConfig::Raid0(Raid0Params::default()),
        ] {
            let d = device(m);
            let t = std::time::Instant::now();
            let a = characterize(&d);
            let took = t.elapsed();
            assert!(took.as_millis() < 100, "characterize took {took:?}");
            let b = characterize(&d);
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
    }
}
