//! Latency histograms with the summary figures we report.
//!
//! HdrHistogram at 3 significant digits over microsecond buckets, grown on demand, with 32-bit
//! counts: a task's histogram stays in the tens of KiB, so 1000 tasks with two histograms each
//! do not cost a gigabyte. Values are recorded and returned in nanoseconds; the count, sum and
//! maximum are exact, percentiles are the lower edge of their 0.1 %-wide bucket (so a 28 ms
//! pause reads 28 ms, not 28.015).

use hdrhistogram::Histogram;

/// Bucket unit, ns.
const UNIT_NS: u64 = 1_000;
/// Largest value recorded (longer ones are clamped): one hour.
const HIGHEST_NS: u64 = 3_600_000_000_000;

#[derive(Clone, Debug)]
pub struct LatencyHist {
    h: Histogram<u32>,
    sum: u128,
    /// Exact largest value, ns: a 200 ms pause must not be reported as 200.016 ms.
    max: u64,
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

/// count, sum and percentiles of a histogram, in ns.
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
        let mut h = Histogram::new_with_bounds(1, 2, 3).expect("valid histogram bounds");
        h.auto(true);
        LatencyHist { h, sum: 0, max: 0 }
    }

    pub fn record(&mut self, v: u64) {
        let v = v.min(HIGHEST_NS);
        // Auto-resizing: the histogram grows to cover the value.
        self.h
            .record((v / UNIT_NS).max(1))
            .expect("auto-resizing histogram takes any value up to HIGHEST_NS");
        self.sum += v as u128;
        self.max = self.max.max(v);
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Value at quantile q in [0, 1], ns.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.h.is_empty() {
            0
        } else {
            (self.h.lowest_equivalent(self.h.value_at_quantile(q)) * UNIT_NS).min(self.max)
        }
    }

    pub fn summary(&self) -> HistSummary {
        let n = self.h.len();
        if n == 0 {
            return HistSummary::default();
        }
        HistSummary {
            count: n,
            total: self.sum,
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            max: self.max,
            mean: self.sum as f64 / n as f64,
        }
    }

    /// Merge another histogram into this one.
    pub fn add(&mut self, o: &LatencyHist) {
        self.h.add(&o.h).expect("auto-resizing histograms merge");
        self.sum += o.sum;
        self.max = self.max.max(o.max);
    }

    /// (value ns, count) of every recorded bucket, for CDFs and stem plots.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.h
            .iter_recorded()
            .map(|v| (self.h.lowest_equivalent(v.value_iterated_to()) * UNIT_NS, v.count_at_value() as u64))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jiffy_multiples_and_the_max_are_reported_exactly() {
        let mut h = LatencyHist::new();
        for _ in 0..10 {
            h.record(28_000_000);
        }
        h.record(200_000_000);
        let s = h.summary();
        assert_eq!(s.count, 11);
        assert_eq!(s.p50, 28_000_000);
        assert_eq!(s.max, 200_000_000);
        assert_eq!(s.total, 10 * 28_000_000 + 200_000_000);
        assert!(s.p99 <= s.max);
    }

    #[test]
    fn percentiles_are_within_a_tenth_of_a_percent() {
        let mut h = LatencyHist::new();
        for v in 1..=10_000u64 {
            h.record(v * 37_123);
        }
        let s = h.summary();
        let want = 5_000.0 * 37_123.0;
        assert!((s.p50 as f64 - want).abs() / want < 0.002, "p50 {}", s.p50);
        assert_eq!(s.max, 10_000 * 37_123);
    }

    #[test]
    fn huge_and_tiny_values_do_not_panic() {
        let mut h = LatencyHist::new();
        h.record(0);
        h.record(u64::MAX);
        let s = h.summary();
        assert_eq!(s.count, 2);
        assert_eq!(s.max, HIGHEST_NS);
        let mut g = LatencyHist::new();
        g.record(5_000);
        g.add(&h);
        assert_eq!(g.count(), 3);
    }
}
