//! Random streams. Every entity that draws random numbers (a device's seek noise, a task's
//! think time) owns a stream derived from (seed, entity label), so adding a task does not
//! perturb another entity's numbers. PCG is a named, portable generator: the same seed gives
//! the same numbers on every platform and every version of this program.

use rand_core::Rng;
use rand_pcg::Pcg64Mcg;

pub struct RngStream {
    inner: Pcg64Mcg,
    /// Chance switched off (`[machine] chance = false`): every draw is its distribution's
    /// median, the same under every seed.
    median: bool,
}

/// 64-bit FNV-1a, used only to turn a stream label into a number.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// SplitMix64 finaliser: spreads seeds that differ in few bits (also the model's fixed
/// pseudo-random placements: fio's scattered ranks, a page's frame).
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The shape β of a log-logistic law whose 99th percentile is `p99_over_median` times its
/// median: `ln 99 / ln(p99 / median)`.
pub(crate) fn log_logistic_shape(p99_over_median: f64) -> f64 {
    99f64.ln() / p99_over_median.ln()
}

impl RngStream {
    /// The stream for entity `label` (e.g. "device/sda") under scenario seed `seed`.
    pub fn new(seed: u64, label: &str) -> Self {
        let a = splitmix64(seed ^ fnv1a(label.as_bytes()));
        let b = splitmix64(a ^ 0x5851_f42d_4c95_7f2d);
        let state = ((a as u128) << 64) | (b as u128) | 1;
        RngStream {
            inner: Pcg64Mcg::new(state),
            median: false,
        }
    }

    /// The stream of the system's chance for `label` (a device's service times, the machine's
    /// wakeup latency): [`RngStream::new`] when `chance` is on, else a stream whose every draw
    /// is the median (`next_f64` 0.5, `below(n)` n/2, `exp(m)` m·ln 2), so that every seed
    /// gives the same run. Workloads' own randomness (offsets) never uses this.
    pub fn of_chance(chance: bool, seed: u64, label: &str) -> Self {
        RngStream {
            median: !chance,
            ..RngStream::new(seed, label)
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        if self.median {
            return 1 << 63;
        }
        self.inner.next_u64()
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponentially distributed with mean `mean` (integer ns), cut at 20 means so one draw
    /// cannot stall a run. 0 when `mean` is 0, without drawing.
    pub fn exp(&mut self, mean: u64) -> u64 {
        if mean == 0 {
            return 0;
        }
        let x = -(1.0 - self.next_f64()).ln() * mean as f64;
        (x as u64).min(20 * mean)
    }

    /// A service time with median `median` and 99th percentile `p99` (integer ns): the
    /// log-logistic distribution, `median · (u / (1 − u))^(1/β)` with `β = ln 99 / ln(p99 /
    /// median)`, a right-skewed law with a power tail often fitted to I/O latencies, whose
    /// inverse is closed-form (so chance off, `u = ½`, gives the median exactly). Cut at 1000
    /// medians so one draw cannot stall a run. `median` itself, without drawing, when
    /// `p99 <= median`.
    pub fn log_logistic(&mut self, median: u64, p99: u64) -> u64 {
        if p99 <= median || median == 0 {
            return median;
        }
        let u = self.next_f64().clamp(1e-12, 1.0 - 1e-12);
        let beta = log_logistic_shape(p99 as f64 / median as f64);
        let x = median as f64 * (u / (1.0 - u)).powf(1.0 / beta);
        (x as u64).min(median.saturating_mul(1000))
    }

    /// Uniform integer in [0, n). Returns 0 for n == 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_logistic_has_its_median_and_p99() {
        let mut r = RngStream::new(5, "service");
        let mut xs: Vec<u64> = (0..200_000).map(|_| r.log_logistic(100_000, 400_000)).collect();
        xs.sort_unstable();
        let q = |p: f64| xs[(p * (xs.len() - 1) as f64) as usize] as f64;
        assert!((q(0.5) / 100_000.0 - 1.0).abs() < 0.02, "median {}", q(0.5));
        assert!((q(0.99) / 400_000.0 - 1.0).abs() < 0.05, "p99 {}", q(0.99));
        assert_eq!(RngStream::of_chance(false, 5, "service").log_logistic(100_000, 400_000), 100_000);
        assert_eq!(r.log_logistic(100_000, 100_000), 100_000);
    }

    #[test]
    fn streams_are_reproducible_and_independent() {
        let mut a1 = RngStream::new(7, "device/sda");
        let mut a2 = RngStream::new(7, "device/sda");
        let mut b = RngStream::new(7, "device/sdb");
        let xs: Vec<u64> = (0..8).map(|_| a1.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| a2.next_u64()).collect();
        let zs: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        let mut r = RngStream::new(1, "x");
        for _ in 0..1000 {
            let f = r.next_f64();
            assert!((0.0..1.0).contains(&f));
            assert!(r.below(10) < 10);
        }
    }
}
