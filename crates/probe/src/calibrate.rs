//! `wblab calibrate`: measure a real device with O_DIRECT I/O — sequential 1 MiB write and
//! read bandwidth, 4 KiB random read IOPS and latency at queue depths 1…32 (that many threads
//! each with one pread in flight, like fio's psync with numjobs), 4 KiB random write latency —
//! and fit a device model section that `wblab run` can use.
//!
//! The target is never a disk holding data: either a directory, in which a scratch directory
//! with a test file is created, or `loop`: a fresh loop device over a backing file in a new
//! scratch directory (optionally throttled through the root blkio cgroup). Everything is
//! journaled and removed as in `measure`.

use crate::journal::{self, Journal};
use crate::sys::{self, AlignedBuf};
use crate::{cgroup, facts, guard, loopdev, mount};
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wblab_sim::config::BlkThrottleConfig;
use wblab_sim::metrics::LatencyHist;

#[derive(Clone, Debug)]
pub enum Target {
    /// Create a scratch directory inside this directory and test a file there.
    Dir(PathBuf),
    /// A fresh loop device over a backing file in a scratch directory under this directory.
    Loop(PathBuf),
}

#[derive(Clone, Debug)]
pub struct CalibrateOptions {
    pub target: Target,
    /// Test file (or loop device) size, bytes.
    pub size: u64,
    /// Time per measured point.
    pub seconds: f64,
    /// Throttle rules for a loop target.
    pub throttle: BlkThrottleConfig,
    pub queue_depths: Vec<u32>,
    pub quiet: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub job: String,
    pub queue_depth: u32,
    pub block_size: u64,
    pub seconds: f64,
    pub ops: u64,
    pub mb_s: f64,
    pub iops: f64,
    pub lat_mean_us: f64,
    pub lat_p50_us: f64,
    pub lat_p99_us: f64,
    pub lat_max_us: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    pub target: String,
    pub block_device: Option<String>,
    pub kernel: String,
    pub points: Vec<Point>,
    /// The fitted model: "ssd" or "hdd".
    pub model: String,
    /// The `[[device]]` section, TOML.
    pub section: String,
}

fn open_direct(p: &Path, write: bool) -> std::io::Result<File> {
    OpenOptions::new().read(true).write(write).custom_flags(sys::O_DIRECT).open(p)
}

fn point(job: &str, qd: u32, bs: u64, secs: f64, h: &LatencyHist) -> Point {
    let s = h.summary();
    let us = |ns: u64| (ns as f64 / 100.0).round() / 10.0;
    Point {
        job: job.to_string(),
        queue_depth: qd,
        block_size: bs,
        seconds: (secs * 1000.0).round() / 1000.0,
        ops: s.count,
        mb_s: ((s.count * bs) as f64 / secs / 1e6 * 10.0).round() / 10.0,
        iops: (s.count as f64 / secs).round(),
        lat_mean_us: (s.mean / 100.0).round() / 10.0,
        lat_p50_us: us(s.p50),
        lat_p99_us: us(s.p99),
        lat_max_us: us(s.max),
    }
}

/// Sequential 1 MiB O_DIRECT writes from offset 0 for `secs` (at least `min_bytes`, at most
/// `size`). Returns the point and the bytes written (the region later reads may use).
fn seq_write(f: &File, size: u64, secs: f64, min_bytes: u64) -> std::io::Result<(Point, u64)> {
    let bs = 1u64 << 20;
    let mut buf = AlignedBuf::new(bs as usize);
    for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
        *b = (i * 7 % 253) as u8;
    }
    let mut h = LatencyHist::new();
    let t0 = Instant::now();
    let mut off = 0;
    while off + bs <= size && guard::aborted().is_none() {
        let el = t0.elapsed().as_secs_f64();
        if el >= secs && off >= min_bytes {
            break;
        }
        if el >= 10.0 * secs && off > 0 {
            break;
        }
        let t = Instant::now();
        f.write_at(buf.as_slice(), off)?;
        h.record(t.elapsed().as_nanos() as u64);
        off += bs;
    }
    f.sync_all()?;
    Ok((point("seq write", 1, bs, t0.elapsed().as_secs_f64(), &h), off))
}

/// One measured job: `qd` threads, each with one O_DIRECT pread/pwrite of `bs` in flight, for
/// `secs`; sequential (wrapping) or random offsets in `[0, region)`.
struct Job<'a> {
    name: &'a str,
    write: bool,
    random: bool,
    bs: u64,
    qd: u32,
}

fn io_point(path: &Path, job: Job<'_>, region: u64, secs: f64) -> std::io::Result<Point> {
    let Job {
        name: job,
        write,
        random,
        bs,
        qd,
    } = job;
    let stop = Arc::new(AtomicBool::new(false));
    let blocks = (region / bs).max(1);
    let mut handles = Vec::new();
    let t0 = Instant::now();
    for k in 0..qd {
        let f = open_direct(path, write)?;
        let stop = stop.clone();
        handles.push(std::thread::spawn(move || -> std::io::Result<LatencyHist> {
            let mut buf = AlignedBuf::new(bs as usize);
            let mut h = LatencyHist::new();
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ ((k as u64 + 1) << 17);
            let mut seq = (k as u64 * blocks / qd as u64) % blocks;
            while !stop.load(Ordering::Relaxed) {
                let blk = if random {
                    x ^= x >> 12;
                    x ^= x << 25;
                    x ^= x >> 27;
                    x.wrapping_mul(0x2545_f491_4f6c_dd1d) % blocks
                } else {
                    seq = (seq + 1) % blocks;
                    seq
                };
                let t = Instant::now();
                if write {
                    f.write_at(buf.as_slice(), blk * bs)?;
                } else {
                    f.read_at(buf.as_mut_slice(), blk * bs)?;
                }
                h.record(t.elapsed().as_nanos() as u64);
            }
            Ok(h)
        }));
    }
    while t0.elapsed().as_secs_f64() < secs && guard::aborted().is_none() {
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::Relaxed);
    let mut all = LatencyHist::new();
    for h in handles {
        let r = h.join().map_err(|_| std::io::Error::other("I/O thread panicked"))??;
        all.add(&r);
    }
    Ok(point(job, qd, bs, t0.elapsed().as_secs_f64(), &all))
}

fn log(o: &CalibrateOptions, m: &str) {
    if !o.quiet {
        eprintln!("calibrate: {m}");
    }
}

/// Run the calibration. Every change is undone before this returns.
pub fn calibrate(o: &CalibrateOptions) -> Result<Calibration, String> {
    guard::install();
    guard::reset();
    if sys::geteuid() != 0 && matches!(o.target, Target::Loop(_)) {
        return Err("a loop target needs root".into());
    }
    if sys::geteuid() != 0 && std::env::var_os("WBLAB_STATE_DIR").is_none() {
        std::env::set_var("WBLAB_STATE_DIR", std::env::temp_dir().join(format!("wblab-{}", sys::geteuid())));
    }
    let mut j = Journal::begin().map_err(|e| e.to_string())?;
    let r = run(o, &mut j);
    let problems = j.teardown();
    if !problems.is_empty() {
        return Err(format!(
            "calibration cleanup failed: {}; run `wblab measure --restore`",
            problems.join("; ")
        ));
    }
    r
}

fn run(o: &CalibrateOptions, j: &mut Journal) -> Result<Calibration, String> {
    let e = |x: std::io::Error| x.to_string();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let name = format!("wblab-calibrate-{}-{stamp}", sys::getpid());
    let parent = match &o.target {
        Target::Dir(d) | Target::Loop(d) => d,
    };
    let scratch = journal::make_scratch(j, parent, &name).map_err(e)?;
    let (path, block_device, desc) = match &o.target {
        Target::Dir(d) => {
            let p = scratch.join("calibrate.dat");
            File::create(&p).map_err(e)?.set_len(o.size).map_err(e)?;
            let bd = facts::block_device_of(&scratch);
            (p, bd, format!("a file in {}", d.display()))
        }
        Target::Loop(_) => {
            let backing = scratch.join("calibrate.img");
            mount::make_backing(&backing, o.size).map_err(e)?;
            let ld = loopdev::add_fresh(j).map_err(e)?;
            let dio = loopdev::attach(j, &ld, &backing).map_err(e)?;
            let rules = cgroup::apply(j, &ld.devnum(), &cgroup::rules(&o.throttle)).map_err(e)?;
            let mut d = format!(
                "/dev/{} over {} (direct I/O {})",
                ld.name(),
                backing.display(),
                if dio { "on" } else { "off" }
            );
            for (f, v) in rules {
                d.push_str(&format!(", {} = {v}", f.rsplit('/').next().unwrap_or(&f)));
            }
            (ld.dev_path(), Some(ld.name()), d)
        }
    };
    log(o, &format!("target {desc}"));
    let secs = o.seconds;
    let mut points = Vec::new();
    let f = open_direct(&path, true).map_err(|x| format!("{}: O_DIRECT open: {x}", path.display()))?;
    let (p, region) = seq_write(&f, o.size, secs, (16u64 << 20).min(o.size)).map_err(e)?;
    drop(f);
    log(o, &format!("seq write 1 MiB: {:.1} MB/s over {} MiB", p.mb_s, region >> 20));
    points.push(p);
    if region == 0 {
        return Err("could not write anything to the target".into());
    }
    let p = io_point(
        &path,
        Job {
            name: "seq read",
            write: false,
            random: false,
            bs: 1 << 20,
            qd: 1,
        },
        region,
        secs,
    )
    .map_err(e)?;
    log(o, &format!("seq read 1 MiB: {:.1} MB/s", p.mb_s));
    points.push(p);
    for &qd in &o.queue_depths {
        if guard::aborted().is_some() {
            return Err("interrupted".into());
        }
        let p = io_point(
            &path,
            Job {
                name: "rand read",
                write: false,
                random: true,
                bs: 4096,
                qd,
            },
            region,
            secs,
        )
        .map_err(e)?;
        log(
            o,
            &format!(
                "rand read 4k QD{qd}: {:.0} IOPS, p50 {:.1} µs, p99 {:.1} µs",
                p.iops, p.lat_p50_us, p.lat_p99_us
            ),
        );
        points.push(p);
    }
    let p = io_point(
        &path,
        Job {
            name: "rand write",
            write: true,
            random: true,
            bs: 4096,
            qd: 1,
        },
        region,
        secs,
    )
    .map_err(e)?;
    log(o, &format!("rand write 4k QD1: {:.0} IOPS, p50 {:.1} µs", p.iops, p.lat_p50_us));
    points.push(p);
    if guard::aborted().is_some() {
        return Err("interrupted".into());
    }
    let kernel = facts::collect().kernel_release;
    let (model, section) = fit(&points, block_device.as_deref(), &desc, &kernel);
    Ok(Calibration {
        target: desc,
        block_device,
        kernel,
        points,
        model,
        section,
    })
}

/// Fit an `ssd` (or, for a seeking device, `hdd`) model section to the points.
/// The `ssd` model's `read_spread` for a device whose queue-depth-1 reads have `p`'s
/// latencies, and their p99 / p50: with one read in three taking `1 + spread` times the median
/// page time, the model's QD1 p99 is that many times its median, so the fit matches the
/// measured p99 (clamped to the knob's range; beyond the p99 the model's reads have no tail).
/// None without a median to go by.
fn read_spread_fit(p: &Point) -> Option<(u32, f64)> {
    use wblab_sim::drivers::ssd::MAX_READ_SPREAD;
    if p.lat_p50_us <= 0.0 || p.lat_p99_us <= 0.0 {
        return None;
    }
    let ratio = p.lat_p99_us / p.lat_p50_us;
    let spread = (100.0 * (ratio - 1.0)).round().clamp(0.0, f64::from(MAX_READ_SPREAD)) as u32;
    Some((spread, ratio))
}

pub fn fit(points: &[Point], block_device: Option<&str>, desc: &str, kernel: &str) -> (String, String) {
    let find = |job: &str, qd: u32| points.iter().find(|p| p.job == job && p.queue_depth == qd);
    let seq_w = find("seq write", 1).map_or(0.0, |p| p.mb_s * 1e6);
    let seq_r = find("seq read", 1).map_or(0.0, |p| p.mb_s * 1e6);
    let rr1 = find("rand read", 1);
    let rw1 = find("rand write", 1);
    let max_iops = points.iter().filter(|p| p.job == "rand read").map(|p| p.iops).fold(0.0, f64::max);
    let read_lat_us = rr1.map_or(100.0, |p| p.lat_mean_us).max(1.0);
    let write_lat_us = rw1.map_or(read_lat_us, |p| p.lat_mean_us).max(1.0);
    let qd1_iops = rr1.map_or(1.0, |p| p.iops).max(1.0);
    // Little's law: max IOPS × the latency of one read = reads served at once.
    let parallelism = (max_iops * read_lat_us / 1e6).round().clamp(1.0, 256.0) as u32;
    let nr_requests: u32 = block_device
        .and_then(|d| sys::read_trim(&Path::new("/sys/block").join(d).join("queue/nr_requests")).ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let write_cache = block_device
        .and_then(|d| sys::read_trim(&Path::new("/sys/block").join(d).join("queue/write_cache")).ok())
        .is_none_or(|v| v == "write back");
    let kbs = |b: f64| format!("\"{}KB/s\"", (b / 1000.0).round().max(1.0) as u64);
    let us = |v: f64| format!("\"{}us\"", v.round().max(1.0) as u64);
    let mut s = String::new();
    s.push_str(&format!("# model = \"measured\": fitted by `wblab calibrate` to {desc}\n"));
    s.push_str(&format!(
        "# (block device {}, kernel {kernel}) with O_DIRECT I/O:\n",
        block_device.unwrap_or("?")
    ));
    for p in points {
        s.push_str(&format!(
            "#   {:<10} {:>4} KiB QD{:<2}  {:>9.1} MB/s {:>9.0} IOPS  lat mean {:>9.1} p50 {:>9.1} p99 {:>9.1} µs\n",
            p.job,
            p.block_size / 1024,
            p.queue_depth,
            p.mb_s,
            p.iops,
            p.lat_mean_us,
            p.lat_p50_us,
            p.lat_p99_us
        ));
    }
    // A seeking device: milliseconds per random read and no gain from queue depth.
    let seeking = read_lat_us > 2_000.0 && max_iops < 2.0 * qd1_iops;
    let model = if seeking { "hdd" } else { "ssd" };
    s.push_str("[[device]]\nname = \"measured\"\n");
    if seeking {
        // Half a revolution at 7200 rpm is 4.17 ms; the rest of a random read is the seek.
        let rot_us = 4_167.0;
        let seek = (read_lat_us - rot_us).max(500.0);
        s.push_str("model = \"hdd\"\nrpm = 7200\n");
        s.push_str(&format!("seek_average = {}\n", us(seek)));
        s.push_str(&format!("seek_full_stroke = {}\n", us(2.0 * seek)));
        s.push_str(&format!("seek_track_to_track = {}\n", us((seek / 8.0).max(100.0))));
        s.push_str(&format!("transfer_outer = {}\n", kbs(seq_r.max(seq_w))));
        s.push_str(&format!("transfer_inner = {}\n", kbs(seq_r.max(seq_w) * 0.5)));
        s.push_str(&format!("queue_depth = {}\n", nr_requests.clamp(1, 32)));
        s.push_str(&format!("write_cache = {write_cache}\n"));
    } else {
        s.push_str("model = \"ssd\"\n");
        s.push_str(&format!("parallelism = {parallelism}\n"));
        s.push_str(&format!("read_latency = {}\n", us(read_lat_us)));
        if let Some((spread, ratio)) = rr1.and_then(read_spread_fit) {
            if f64::from(spread) < 100.0 * (ratio - 1.0) - 0.5 {
                s.push_str(&format!(
                    "# QD1 reads: p99 {ratio:.2}× the median, more than the page-type spread can give (at most {:.2}×)\n",
                    1.0 + f64::from(wblab_sim::drivers::ssd::MAX_READ_SPREAD) / 100.0
                ));
            }
            s.push_str(&format!("read_spread = {spread}\n"));
        }
        s.push_str(&format!("write_latency = {}\n", us(write_lat_us)));
        s.push_str(&format!("read_bandwidth = {}\n", kbs(seq_r)));
        s.push_str(&format!("write_bandwidth = {}\n", kbs(seq_w)));
        s.push_str(&format!("queue_depth = {}\n", nr_requests.clamp(1, 10240)));
        s.push_str(&format!("write_cache = {write_cache}\n"));
    }
    (model.to_string(), s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(job: &str, qd: u32, mb_s: f64, iops: f64, lat: f64) -> Point {
        Point {
            job: job.into(),
            queue_depth: qd,
            block_size: if job.starts_with("seq") { 1 << 20 } else { 4096 },
            seconds: 1.0,
            ops: 1,
            mb_s,
            iops,
            lat_mean_us: lat,
            lat_p50_us: lat,
            lat_p99_us: lat,
            lat_max_us: lat,
        }
    }

    #[test]
    fn fit_ssd_by_littles_law() {
        let pts = vec![
            p("seq write", 1, 500.0, 0.0, 2000.0),
            p("seq read", 1, 800.0, 0.0, 1300.0),
            p("rand read", 1, 40.0, 10_000.0, 100.0),
            p("rand read", 32, 320.0, 80_000.0, 400.0),
            p("rand write", 1, 80.0, 20_000.0, 50.0),
        ];
        let (m, s) = fit(&pts, None, "test", "6.18");
        assert_eq!(m, "ssd");
        assert!(s.contains("parallelism = 8"), "{s}");
        assert!(s.contains("read_latency = \"100us\""), "{s}");
        assert!(s.contains("read_bandwidth = \"800000KB/s\""), "{s}");
        // Every QD1 read took the same time: no spread.
        assert!(s.contains("read_spread = 0\n"), "{s}");
    }

    #[test]
    fn fit_the_read_spread_to_the_qd1_tail() {
        let mut rr1 = p("rand read", 1, 40.0, 10_000.0, 100.0);
        rr1.lat_p99_us = 125.0;
        let (_, s) = fit(&[rr1.clone()], None, "test", "6.18");
        assert!(s.contains("read_spread = 25\n") && !s.contains("more than"), "{s}");
        // A tail the three page types cannot reach: the most they give, and a comment says so.
        rr1.lat_p99_us = 230.0;
        let (_, s) = fit(&[rr1], None, "test", "6.18");
        assert!(s.contains("read_spread = 90\n") && s.contains("p99 2.30× the median"), "{s}");
        // What calibrate prints is a scenario the model takes.
        let dev = s
            .lines()
            .skip_while(|l| !l.starts_with("[[device]]"))
            .collect::<Vec<_>>()
            .join("\n");
        wblab_scenario::parse(&format!("{dev}\nsize = \"1GiB\"\n"), "calibrated.toml").expect("the fitted section parses");
    }

    #[test]
    fn fit_hdd_when_reads_seek() {
        let pts = vec![
            p("seq write", 1, 150.0, 0.0, 7000.0),
            p("seq read", 1, 160.0, 0.0, 6500.0),
            p("rand read", 1, 0.5, 120.0, 8300.0),
            p("rand read", 32, 0.8, 200.0, 160_000.0),
        ];
        let (m, s) = fit(&pts, None, "test", "6.18");
        assert_eq!(m, "hdd");
        assert!(s.contains("model = \"hdd\""));
    }
}
