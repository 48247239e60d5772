//! Latency histograms with the summary figures we report.
//!
//! HdrHistogram at 3 significant digits over microsecond buckets, grown on demand, with 32-bit
//! counts. Most tasks record a few hundred values while a histogram's counts take tens of KiB,
//! so values are first kept as a plain log of microseconds (4 bytes each, appended in order:
//! cheap to record, no cache misses) and moved into the histogram only when the log would
//! outgrow it. Summaries are computed from a histogram either way, so the figures do not depend
//! on which form held the values. Values are recorded and returned in nanoseconds; the count,
//! sum and maximum are exact, percentiles are the lower edge of their 0.1 %-wide bucket (so a
//! 28 ms pause reads 28 ms, not 28.015).

use hdrhistogram::Histogram;

/// Bucket unit, ns.
const UNIT_NS: u64 = 1_000;
/// Largest value recorded (longer ones are clamped): one hour. In units it fits a `u32`.
const HIGHEST_NS: u64 = 3_600_000_000_000;
/// Values kept in the log before it spills into a histogram: 32 KiB, about a histogram's size.
const LOG_CAP: usize = 8192;
/// Values a spilled histogram takes at once. Many tasks record in turn (512 tiotest threads, a
/// thousand `dd`), and each one's counts have left the cache by its next value: batched, a
/// task's values, mostly in a few buckets, meet their counts once a batch instead of once a
/// value (the histograms' cache misses were 3 % of a 512-thread run's wall time).
const BATCH: usize = 256;

#[derive(Clone, Debug)]
enum Values {
    /// Recorded values in units, in recording order.
    Log(Vec<u32>),
    /// The histogram, and the values (units) recorded since it last took a batch.
    Hdr(Box<Histogram<u32>>, Vec<u32>),
}

#[derive(Clone, Debug)]
pub struct LatencyHist {
    values: Values,
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

fn empty_hdr() -> Histogram<u32> {
    let mut h = Histogram::new_with_bounds(1, 2, 3).expect("valid histogram bounds");
    h.auto(true);
    h
}

fn hdr_of(log: &[u32]) -> Histogram<u32> {
    let mut h = empty_hdr();
    record_all(&mut h, log);
    h
}

fn record_all(h: &mut Histogram<u32>, units: &[u32]) {
    for &u in units {
        h.record(u as u64)
            .expect("auto-resizing histogram takes any value up to HIGHEST_NS");
    }
}

/// A spilled histogram with its batch of values not yet in it.
fn settled<'a>(h: &'a Histogram<u32>, batch: &[u32]) -> std::borrow::Cow<'a, Histogram<u32>> {
    if batch.is_empty() {
        std::borrow::Cow::Borrowed(h)
    } else {
        let mut all = h.clone();
        record_all(&mut all, batch);
        std::borrow::Cow::Owned(all)
    }
}

impl LatencyHist {
    /// An empty histogram; it allocates nothing until a value is recorded.
    pub fn new() -> Self {
        LatencyHist {
            values: Values::Log(Vec::new()),
            sum: 0,
            max: 0,
        }
    }

    pub fn record(&mut self, v: u64) {
        let v = v.min(HIGHEST_NS);
        let unit = (v / UNIT_NS).max(1);
        match &mut self.values {
            Values::Log(log) => {
                log.push(unit as u32);
                if log.len() >= LOG_CAP {
                    self.values = Values::Hdr(Box::new(hdr_of(log)), Vec::with_capacity(BATCH));
                }
            }
            // Auto-resizing: the histogram grows to cover the values.
            Values::Hdr(h, batch) => {
                batch.push(unit as u32);
                if batch.len() >= BATCH {
                    record_all(h, batch);
                    batch.clear();
                }
            }
        }
        self.sum += v as u128;
        self.max = self.max.max(v);
    }

    /// Put the pending batch into the histogram, so that the figures read from it afterwards
    /// (a report reads each several times) need no copy of it. The run does this to every
    /// histogram it hands over; reading one unsettled gives the same figures, at a copy.
    pub fn settle(&mut self) {
        if let Values::Hdr(h, batch) = &mut self.values {
            record_all(h, batch);
            batch.clear();
        }
    }

    /// This histogram, settled, leaving an empty one in its place.
    pub fn take_settled(&mut self) -> LatencyHist {
        let mut h = std::mem::take(self);
        h.settle();
        h
    }

    pub fn count(&self) -> u64 {
        match &self.values {
            Values::Log(log) => log.len() as u64,
            Values::Hdr(h, batch) => h.len() + batch.len() as u64,
        }
    }

    /// Value at quantile q in [0, 1], ns.
    pub fn quantile(&self, q: f64) -> u64 {
        match &self.values {
            _ if self.count() == 0 => 0,
            Values::Log(log) => self.quantile_sorted(&sorted(log), q),
            Values::Hdr(h, batch) => self.quantile_hdr(&settled(h, batch), q),
        }
    }

    fn quantile_hdr(&self, h: &Histogram<u32>, q: f64) -> u64 {
        (h.lowest_equivalent(h.value_at_quantile(q)) * UNIT_NS).min(self.max)
    }

    /// What [`Histogram::value_at_quantile`] gives, from the sorted values themselves: the
    /// bucket holding the ⌈q·n⌉-th smallest value (at least the first).
    fn quantile_sorted(&self, sorted: &[u32], q: f64) -> u64 {
        let n = sorted.len();
        let rank = ((q.min(1.0) * n as f64).ceil() as usize).clamp(1, n);
        (lowest_equivalent(sorted[rank - 1] as u64) * UNIT_NS).min(self.max)
    }

    pub fn summary(&self) -> HistSummary {
        let n = self.count();
        if n == 0 {
            return HistSummary::default();
        }
        let [p50, p90, p99] = match &self.values {
            Values::Log(log) => {
                let s = sorted(log);
                [0.50, 0.90, 0.99].map(|q| self.quantile_sorted(&s, q))
            }
            Values::Hdr(h, batch) => {
                let h = settled(h, batch);
                [0.50, 0.90, 0.99].map(|q| self.quantile_hdr(&h, q))
            }
        };
        HistSummary {
            count: n,
            total: self.sum,
            p50,
            p90,
            p99,
            max: self.max,
            mean: self.sum as f64 / n as f64,
        }
    }

    /// Merge another histogram into this one.
    pub fn add(&mut self, o: &LatencyHist) {
        match (&mut self.values, &o.values) {
            (Values::Log(a), Values::Log(b)) if a.len() + b.len() < LOG_CAP => a.extend_from_slice(b),
            _ => {
                let mut h = match std::mem::replace(&mut self.values, Values::Log(Vec::new())) {
                    Values::Log(log) => Box::new(hdr_of(&log)),
                    Values::Hdr(mut h, batch) => {
                        record_all(&mut h, &batch);
                        h
                    }
                };
                match &o.values {
                    Values::Log(log) => record_all(&mut h, log),
                    Values::Hdr(oh, batch) => {
                        h.add(&**oh).expect("auto-resizing histograms merge");
                        record_all(&mut h, batch);
                    }
                }
                self.values = Values::Hdr(h, Vec::with_capacity(BATCH));
            }
        }
        self.sum += o.sum;
        self.max = self.max.max(o.max);
    }

    /// (value ns, count) of every recorded bucket, for CDFs and stem plots.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        match &self.values {
            Values::Log(log) => {
                let mut out: Vec<(u64, u64)> = Vec::new();
                for u in sorted(log) {
                    let v = lowest_equivalent(u as u64) * UNIT_NS;
                    match out.last_mut() {
                        Some((last, c)) if *last == v => *c += 1,
                        _ => out.push((v, 1)),
                    }
                }
                out
            }
            Values::Hdr(h, batch) => {
                let h = settled(h, batch);
                h.iter_recorded()
                    .map(|v| (h.lowest_equivalent(v.value_iterated_to()) * UNIT_NS, v.count_at_value() as u64))
                    .collect()
            }
        }
    }
}

fn sorted(log: &[u32]) -> Vec<u32> {
    let mut s = log.to_vec();
    s.sort_unstable();
    s
}

/// Sub-buckets per power of two for 3 significant digits: 2048, so a value's bucket is its top
/// 11 bits. Must match [`empty_hdr`]'s precision (a test holds them together).
const SUB_BUCKET_BITS: u32 = 11;

/// The lowest value of `v`'s bucket, as [`Histogram::lowest_equivalent`] computes it.
fn lowest_equivalent(v: u64) -> u64 {
    let shift = (64 - SUB_BUCKET_BITS).saturating_sub((v | ((1 << SUB_BUCKET_BITS) - 1)).leading_zeros());
    (v >> shift) << shift
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

    #[test]
    fn log_and_histogram_forms_give_the_same_figures() {
        // The same values, once kept in the log and once spilled into the histogram, merged
        // both ways: every figure a report prints must agree.
        // Not a whole number of batches past the spill: the spilled one holds values not yet
        // in its histogram, which every figure must count.
        let values: Vec<u64> = (0..3 * LOG_CAP as u64 + 100).map(|i| (i * 7_919) % 250_000_000 + i % 3).collect();
        let mut big = LatencyHist::new();
        let mut parts = vec![LatencyHist::new(); 4];
        for (i, &v) in values.iter().enumerate() {
            big.record(v);
            parts[i % 4].record(v);
        }
        assert!(matches!(&big.values, Values::Hdr(_, batch) if !batch.is_empty()));
        assert_eq!(big.count(), values.len() as u64);
        assert!(matches!(parts[0].values, Values::Log(_)));
        let mut merged = LatencyHist::new();
        for p in &parts {
            merged.add(p);
        }
        assert_eq!(merged.summary(), big.summary());
        assert_eq!(merged.buckets(), big.buckets());
        // And a spilled one merged into another, its batch with it.
        let mut twice = big.clone();
        twice.add(&big);
        assert_eq!(twice.count(), 2 * big.count());
        assert_eq!(twice.quantile(0.5), big.quantile(0.5));
        // Settled, the same figures, and nothing pending.
        let settled = big.clone().take_settled();
        assert!(matches!(&settled.values, Values::Hdr(_, batch) if batch.is_empty()));
        assert_eq!(settled.summary(), big.summary());
        assert_eq!(settled.buckets(), big.buckets());
        assert_eq!(parts[1].summary(), {
            let mut h = LatencyHist::new();
            h.add(&parts[1]);
            h.summary()
        });
        // A small log gives what a histogram of the same values gives, at every quantile.
        let small = &parts[2];
        let Values::Log(log) = &small.values else { unreachable!() };
        let hdr = hdr_of(log);
        for q in [0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(small.quantile(q), small.quantile_hdr(&hdr, q), "q={q}");
        }
        let as_hdr = LatencyHist {
            values: Values::Hdr(Box::new(hdr), Vec::new()),
            ..small.clone()
        };
        assert_eq!(small.summary(), as_hdr.summary());
        assert_eq!(small.buckets(), as_hdr.buckets());
    }

    #[test]
    fn bucket_edges_match_the_histogram() {
        let h = empty_hdr();
        let mut v = 1u64;
        while v < HIGHEST_NS {
            for x in [v, v + 1, v * 3 / 2, v * 2 - 1] {
                assert_eq!(lowest_equivalent(x), h.lowest_equivalent(x), "{x}");
            }
            v *= 2;
        }
    }
}
