//! `/proc/vmstat`, `/proc/stat` and `/sys/block/<dev>/stat`, sampled each second of the run.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wblab_sim::metrics::{DevIo, PressureSample, VmstatSample};

/// `/proc/vmstat` as name → value.
pub fn read_vmstat() -> HashMap<String, u64> {
    let text = std::fs::read_to_string("/proc/vmstat").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// procs_running, procs_blocked from /proc/stat.
fn procs() -> (u32, u32) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.trim().parse().ok()))
            .unwrap_or(0)
    };
    (get("procs_running "), get("procs_blocked "))
}

/// Counters of `/sys/block/<dev>/stat`.
#[derive(Clone, Copy, Debug, Default)]
pub struct DiskStat {
    pub reads: u64,
    pub read_sectors: u64,
    pub read_ticks_ms: u64,
    pub writes: u64,
    pub write_sectors: u64,
    pub write_ticks_ms: u64,
    pub io_ticks_ms: u64,
    /// Requests merged into queued ones (fields 2 and 6).
    pub read_merges: u64,
    pub write_merges: u64,
    /// Flush requests completed and the ms spent on them (fields 16 and 17, since 5.5).
    pub flushes: u64,
    pub flush_ticks_ms: u64,
}

pub fn disk_stat(dev: &str) -> DiskStat {
    parse_disk_stat(&std::fs::read_to_string(Path::new("/sys/block").join(dev).join("stat")).unwrap_or_default())
}

/// The fields of a `/sys/block/<dev>/stat` line (Documentation/block/stat.rst).
fn parse_disk_stat(text: &str) -> DiskStat {
    let v: Vec<u64> = text.split_whitespace().filter_map(|t| t.parse().ok()).collect();
    let g = |i: usize| v.get(i).copied().unwrap_or(0);
    DiskStat {
        reads: g(0),
        read_sectors: g(2),
        read_ticks_ms: g(3),
        writes: g(4),
        write_sectors: g(6),
        write_ticks_ms: g(7),
        io_ticks_ms: g(9),
        read_merges: g(1),
        write_merges: g(5),
        flushes: g(15),
        flush_ticks_ms: g(16),
    }
}

/// Total CPU jiffies (all states) and idle+iowait jiffies, from the `cpu` line of /proc/stat.
pub fn cpu_jiffies() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(l) = text.lines().find(|l| l.starts_with("cpu ")) else {
        return (0, 0);
    };
    let v: Vec<u64> = l.split_whitespace().skip(1).filter_map(|t| t.parse().ok()).collect();
    let total = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total, idle)
}

/// CPU jiffies the kernel spent on its own account: hard and soft interrupts (the `cpu` line of
/// /proc/stat) and every kernel thread (`PF_KTHREAD` in /proc/<pid>/stat: flushers, kworkers,
/// the loop workers, jbd2, ksoftirqd). During a run that is mostly work done for the run's own
/// I/O, so it is not other load.
pub fn kernel_cpu_jiffies() -> u64 {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let irq: u64 = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .map(|l| l.split_whitespace().skip(6).take(2).filter_map(|t| t.parse::<u64>().ok()).sum())
        .unwrap_or(0);
    let Ok(dir) = std::fs::read_dir("/proc") else { return irq };
    let threads: u64 = dir
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|text| {
            // The command name may hold spaces and parentheses: the fields follow the last ')'.
            let rest = &text[text.rfind(')')? + 1..];
            let f: Vec<u64> = rest.split_whitespace().skip(1).map(|t| t.parse().unwrap_or(0)).collect();
            // From `ppid` on: flags is the 6th, utime and stime the 11th and 12th.
            (f.get(5)? & PF_KTHREAD != 0).then(|| f.get(10).unwrap_or(&0) + f.get(11).unwrap_or(&0))
        })
        .sum();
    irq + threads
}

/// The machine's CPU counters at one moment: /proc/stat's total and idle jiffies and the
/// kernel's own ([`kernel_cpu_jiffies`]). Two of them say how the CPUs were used between.
#[derive(Clone, Copy, Debug)]
pub struct CpuTimes {
    total: u64,
    idle: u64,
    kernel: u64,
}

/// CPU seconds between two [`CpuTimes`], summed over the CPUs.
#[derive(Clone, Copy, Debug)]
pub struct CpuUse {
    /// Every CPU's time (at least one tick).
    pub total_s: f64,
    /// Not idle (nor waiting for I/O).
    pub busy_s: f64,
    /// The kernel's own threads and interrupts.
    pub kernel_s: f64,
}

impl CpuTimes {
    pub fn now() -> CpuTimes {
        let (total, idle) = cpu_jiffies();
        CpuTimes {
            total,
            idle,
            kernel: kernel_cpu_jiffies(),
        }
    }

    /// How the CPUs were used from `earlier` to `self`.
    pub fn since(&self, earlier: &CpuTimes) -> CpuUse {
        // SAFETY: sysconf has no memory effects.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let total = self.total.saturating_sub(earlier.total);
        CpuUse {
            total_s: total.max(1) as f64 / hz,
            busy_s: total.saturating_sub(self.idle.saturating_sub(earlier.idle)) as f64 / hz,
            kernel_s: self.kernel.saturating_sub(earlier.kernel) as f64 / hz,
        }
    }
}

pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Samples>>,
}

/// What the sampler kept: vmstat-like seconds, and the system's pressure at each (none where
/// the kernel has no PSI).
type Samples = (Vec<VmstatSample>, Vec<PressureSample>);

impl Sampler {
    /// Sample at t0 + 1 s, t0 + 2 s, ... until stopped; `devs` are the block devices of the
    /// scenario's devices, in order. Cumulative counters (`nr_dirtied`, `nr_written`) count from t0.
    pub fn start(t0: Instant, devs: Vec<String>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name("wblab-vmstat".into())
            .spawn(move || run(t0, devs, &stop2))
            .expect("spawn the vmstat sampler");
        Sampler {
            stop,
            handle: Some(handle),
        }
    }

    pub fn finish(mut self) -> Samples {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.take().and_then(|h| h.join().ok()).unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn run(t0: Instant, devs: Vec<String>, stop: &AtomicBool) -> Samples {
    let base = read_vmstat();
    let pressure_base = crate::pressure::read_system();
    let mut pressure = Vec::new();
    let g0 = |m: &HashMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    let mut prev_disk: Vec<DiskStat> = devs.iter().map(|d| disk_stat(d)).collect();
    let (mut prev_in, mut prev_out) = (g0(&base, "pgpgin"), g0(&base, "pgpgout"));
    let mut out = Vec::new();
    let mut prev_t = t0;
    let mut k = 1u64;
    loop {
        let due = t0 + Duration::from_secs(k);
        while Instant::now() < due {
            if stop.load(Ordering::SeqCst) {
                return (out, pressure);
            }
            std::thread::sleep(Duration::from_millis(10).min(due.saturating_duration_since(Instant::now())));
        }
        let now = Instant::now();
        if let (Some(b), Some(p)) = (&pressure_base, crate::pressure::read_system()) {
            pressure.push(PressureSample {
                t_ns: now.duration_since(t0).as_nanos() as u64,
                group: 0,
                figures: crate::pressure::since(p, b),
            });
        }
        let m = read_vmstat();
        let g = |k: &str| g0(&m, k);
        let (r, b) = procs();
        let disks: Vec<DiskStat> = devs.iter().map(|d| disk_stat(d)).collect();
        let (pin, pout) = (g("pgpgin"), g("pgpgout"));
        out.push(VmstatSample {
            t_ns: now.duration_since(t0).as_nanos() as u64,
            nr_dirty: g("nr_dirty"),
            nr_writeback: g("nr_writeback"),
            nr_free: g("nr_free_pages"),
            nr_file: g("nr_file_pages"),
            nr_dirtied: g("nr_dirtied").saturating_sub(g0(&base, "nr_dirtied")),
            nr_written: g("nr_written").saturating_sub(g0(&base, "nr_written")),
            dirty_thresh: g("nr_dirty_threshold"),
            dirty_background_thresh: g("nr_dirty_background_threshold"),
            bi_kb: pin.saturating_sub(prev_in),
            bo_kb: pout.saturating_sub(prev_out),
            // Minus the sampler itself.
            procs_running: r.saturating_sub(1),
            procs_blocked: b,
            dev_write_bytes: disks
                .iter()
                .zip(&prev_disk)
                .map(|(a, p)| a.write_sectors.saturating_sub(p.write_sectors) * 512)
                .collect(),
            dev_read_bytes: disks
                .iter()
                .zip(&prev_disk)
                .map(|(a, p)| a.read_sectors.saturating_sub(p.read_sectors) * 512)
                .collect(),
            // io_ticks: ms with at least one request in flight, over the interval.
            dev_util: disks
                .iter()
                .zip(&prev_disk)
                .map(|(a, p)| {
                    let ms = now.duration_since(prev_t).as_secs_f64() * 1e3;
                    (a.io_ticks_ms.saturating_sub(p.io_ticks_ms) as f64 / ms.max(1.0)).min(1.0)
                })
                .collect(),
            dev_io: disks
                .iter()
                .zip(&prev_disk)
                .map(|(a, p)| DevIo {
                    reads: a.reads.saturating_sub(p.reads),
                    writes: a.writes.saturating_sub(p.writes),
                    read_ticks_ns: a.read_ticks_ms.saturating_sub(p.read_ticks_ms) * 1_000_000,
                    write_ticks_ns: a.write_ticks_ms.saturating_sub(p.write_ticks_ms) * 1_000_000,
                    read_merges: a.read_merges.saturating_sub(p.read_merges),
                    write_merges: a.write_merges.saturating_sub(p.write_merges),
                    flushes: a.flushes.saturating_sub(p.flushes),
                    flush_ticks_ns: a.flush_ticks_ms.saturating_sub(p.flush_ticks_ms) * 1_000_000,
                })
                .collect(),
            // The workload's operations are timed by its own processes (measure.rs).
            task_ops: Vec::new(),
        });
        prev_t = now;
        prev_disk = disks;
        prev_in = pin;
        prev_out = pout;
        k += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_stat_fields_as_the_kernel_orders_them() {
        // /sys/block/vda/stat of a lab machine (6.18): reads, merges, sectors, ticks, then
        // the same for writes, in flight, io_ticks, time in queue, and the discard and flush
        // groups.
        let line = "  927592    30834 28289374   581244    91347    59293 78453560   257520        0    64752   849871    23886       67 120628928    10889     2772      217\n";
        let d = parse_disk_stat(line);
        assert_eq!((d.reads, d.read_sectors, d.read_ticks_ms), (927592, 28289374, 581244));
        assert_eq!((d.writes, d.write_sectors, d.write_ticks_ms), (91347, 78453560, 257520));
        assert_eq!(d.io_ticks_ms, 64752);
        assert_eq!(
            (d.read_merges, d.write_merges, d.flushes, d.flush_ticks_ms),
            (30834, 59293, 2772, 217)
        );
    }
}
