//! Latency histograms (HdrHistogram, 3 significant digits) with the summary figures we report.

use hdrhistogram::Histogram;

#[derive(Clone, Debug)]
pub struct LatencyHist {
    h: Histogram<u64>,
    sum: u128,
    /// Exact largest value: the histogram only knows its bucket, and a 200 ms pause must not
    /// be reported as 200.016 ms.
    max: u64,
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

/// count, sum and percentiles of a histogram, in the histogram's unit.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HistSummary {
    pub count: u64,
    pub total: u128,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
    pub mean: f64,
}

impl LatencyHist {
    pub fn new() -> Self {
        // 1 ns .. ~1 hour at 3 significant digits.
        let h = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds");
        LatencyHist { h, sum: 0, max: 0 }
    }

    pub fn record(&mut self, v: u64) {
        let v = v.clamp(1, self.h.high());
        self.h.record(v).expect("value clamped into range");
        self.sum += v as u128;
        self.max = self.max.max(v);
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    pub fn summary(&self) -> HistSummary {
        let n = self.h.len();
        if n == 0 {
            return HistSummary::default();
        }
        HistSummary {
            count: n,
            total: self.sum,
            p50: self.h.value_at_quantile(0.50).min(self.max),
            p90: self.h.value_at_quantile(0.90).min(self.max),
            p99: self.h.value_at_quantile(0.99).min(self.max),
            max: self.max,
            mean: self.sum as f64 / n as f64,
        }
    }

    /// Value at quantile q in [0, 1].
    pub fn quantile(&self, q: f64) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            self.h.value_at_quantile(q)
        }
    }

    /// Merge another histogram into this one.
    pub fn add(&mut self, o: &LatencyHist) {
        self.h.add(&o.h).expect("same bounds");
        self.sum += o.sum;
        self.max = self.max.max(o.max);
    }

    /// (value, count) of every recorded bucket, for CDFs and stem plots.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }
}
