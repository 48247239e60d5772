//! Random streams. Every entity that draws random numbers (a device's seek noise, a task's
//! think time) owns a stream derived from (seed, entity label), so adding a task does not
//! perturb another entity's numbers. PCG is a named, portable generator: the same seed gives
//! the same numbers on every platform and every version of this program.

use rand_core::Rng;
use rand_pcg::Pcg64Mcg;

pub struct RngStream {
    inner: Pcg64Mcg,
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
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl RngStream {
    /// The stream for entity `label` (e.g. "device/sda") under scenario seed `seed`.
    pub fn new(seed: u64, label: &str) -> Self {
        let a = splitmix64(seed ^ fnv1a(label.as_bytes()));
        let b = splitmix64(a ^ 0x5851_f42d_4c95_7f2d);
        let state = ((a as u128) << 64) | (b as u128) | 1;
        RngStream {
            inner: Pcg64Mcg::new(state),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
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
