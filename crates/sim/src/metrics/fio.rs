//! What a fio job measures, as fio keeps it: per direction the I/Os and bytes, the
//! submission, completion and total latencies (min, max, mean, deviation, percentiles), the
//! bandwidth and IOPS sampled every 500 ms, the queue depth seen at each submission, and the
//! per-I/O logs. The report crate turns this into fio's JSON and log files.

use super::LatencyHist;
use crate::Ns;

/// fio's `bw_avg_time` and `iops_avg_time` default: a bandwidth sample every 500 ms.
pub const SAMPLE_NS: Ns = 500_000_000;

/// One latency series: exact count, sum, squares, extremes; percentiles from the histogram.
#[derive(Clone, Debug, Default)]
pub struct LatStat {
    pub n: u64,
    pub min: Ns,
    pub max: Ns,
    pub sum: u128,
    /// Sum of squares, for the standard deviation (f64: squares of hour-long values overflow).
    pub sum_sq: f64,
    pub hist: LatencyHist,
}

impl LatStat {
    pub fn record(&mut self, v: Ns) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.n += 1;
        self.sum += v as u128;
        self.sum_sq += (v as f64) * (v as f64);
        self.hist.record(v);
    }

    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }

    /// Sample standard deviation, as fio prints it (n − 1 in the denominator).
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as f64;
        let mean = self.sum as f64 / n;
        ((self.sum_sq - n * mean * mean).max(0.0) / (n - 1.0)).sqrt()
    }

    pub fn merge(&mut self, o: &LatStat) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 || o.min < self.min {
            self.min = o.min;
        }
        self.max = self.max.max(o.max);
        self.n += o.n;
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
        self.hist.add(&o.hist);
    }
}

/// Mean, deviation and extremes of periodic samples (bandwidth in KiB/s, IOPS).
#[derive(Clone, Debug, Default)]
pub struct SampleStat {
    pub n: u64,
    pub min: f64,
    pub max: f64,
    pub sum: f64,
    pub sum_sq: f64,
}

impl SampleStat {
    pub fn record(&mut self, v: f64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        if self.n == 0 || v > self.max {
            self.max = v;
        }
        self.n += 1;
        self.sum += v;
        self.sum_sq += v * v;
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as f64;
        let m = self.sum / n;
        ((self.sum_sq - n * m * m).max(0.0) / (n - 1.0)).sqrt()
    }
}

/// One direction of a job.
#[derive(Clone, Debug, Default)]
pub struct DirStat {
    pub ios: u64,
    pub bytes: u64,
    pub slat: LatStat,
    pub clat: LatStat,
    pub lat: LatStat,
    pub bw: SampleStat,
    pub iops: SampleStat,
    /// Bytes and I/Os since the last bandwidth sample.
    pub window_bytes: u64,
    pub window_ios: u64,
}

/// One row of a fio log: completion time since the job started (ms), value, direction,
/// block size, offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRow {
    pub ms: u64,
    pub value: u64,
    pub ddir: u8,
    pub bs: u64,
    pub offset: u64,
}

/// The rows of each log a job writes.
#[derive(Clone, Debug, Default)]
pub struct FioLogRows {
    pub lat: Vec<LogRow>,
    pub clat: Vec<LogRow>,
    pub slat: Vec<LogRow>,
    pub bw: Vec<LogRow>,
    pub iops: Vec<LogRow>,
}

/// A windowed log (`log_avg_msec`): sums and maxima of each direction in the current window.
#[derive(Clone, Debug, Default)]
pub struct LogWindow {
    pub start_ms: u64,
    /// Per direction: ios, bytes, and (sum, max) of lat, clat, slat.
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub sum: [[u128; 3]; 2],
    pub max: [[u64; 3]; 2],
}

/// Everything one fio job clone measured.
#[derive(Clone, Debug, Default)]
pub struct FioStats {
    pub dir: [DirStat; 2],
    /// fsync()/fdatasync() calls (`sync` in fio's JSON).
    pub sync: LatStat,
    /// In-flight I/Os at each submission, counted in fio's buckets 1, 2, 4, 8, 16, 32, ≥64.
    pub depth: [u64; 7],
    /// When statistics began (after `ramp_time`) and the job ended.
    pub started: Ns,
    pub ended: Ns,
    pub logs: FioLogRows,
}

impl FioStats {
    /// Settle every latency histogram (see [`LatencyHist::settle`]).
    pub fn settle(&mut self) {
        for d in &mut self.dir {
            for l in [&mut d.slat, &mut d.clat, &mut d.lat] {
                l.hist.settle();
            }
        }
        self.sync.hist.settle();
    }

    /// fio's `iodepth_level` bucket of a depth.
    pub fn depth_bucket(depth: u32) -> usize {
        match depth {
            0 | 1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        }
    }
}

/// A fio job clone's results, for fio's JSON and logs.
#[derive(Clone, Debug)]
pub struct FioResult {
    /// The task's index in `RunResult::tasks`.
    pub task: usize,
    pub job: crate::config::FioJob,
    /// The clone's number (0 for the first of `numjobs`).
    pub clone: u32,
    pub stats: FioStats,
    pub cpu_user_ns: Ns,
    pub cpu_sys_ns: Ns,
    /// Times the task slept (fio's `ctx`, voluntary context switches).
    pub ctx: u64,
}
