//! Where a fio job's next random I/O goes: the block picked by `random_distribution`
//! (uniform, zipf, pareto, as fio's `lib/zipf.c` draws them: Gray et al.'s zipf generator and
//! a power of a uniform draw for pareto, each rank scattered over the file by a hash so the hot
//! blocks are not all at its start), and fio's random map, which makes a uniform job visit
//! every block once per pass.

use crate::config::FioDist;
// SplitMix64's finaliser spreads the ranks over the file.
use crate::engine::rng::splitmix64 as scatter;
use crate::engine::RngStream;

/// fio's `ZIPF_MAX_GEN`: zeta(n) is summed over at most this many ranks.
const ZIPF_MAX_GEN: u64 = 10_000_000;

/// A draw of block numbers in `[0, blocks)`.
#[derive(Clone, Debug)]
pub(crate) struct OffsetGen {
    blocks: u64,
    kind: Kind,
    /// One bit per block visited in this pass (uniform with the random map only).
    map: Vec<u64>,
    visited: u64,
    /// Added to every scattered rank (fio's `rand_off`), from the seed.
    scatter_off: u64,
}

#[derive(Clone, Debug)]
enum Kind {
    Uniform,
    Zipf { theta: f64, zetan: f64, zeta2: f64 },
    Pareto { pow: f64 },
}

impl OffsetGen {
    /// `blocks` blocks; `randommap` applies to the uniform distribution only (fio turns the
    /// map off for the skewed ones).
    pub(crate) fn new(blocks: u64, dist: FioDist, randommap: bool, rng: &mut RngStream) -> Self {
        let blocks = blocks.max(1);
        let kind = match dist {
            FioDist::Random => Kind::Uniform,
            FioDist::Zipf(theta) => {
                let n = blocks.min(ZIPF_MAX_GEN);
                let zetan: f64 = (1..=n).map(|i| (1.0 / i as f64).powf(theta)).sum();
                Kind::Zipf {
                    theta,
                    zetan,
                    zeta2: 1.0 + 0.5f64.powf(theta),
                }
            }
            FioDist::Pareto(h) => Kind::Pareto {
                pow: h.ln() / (1.0 - h).ln(),
            },
        };
        let map = if randommap && matches!(kind, Kind::Uniform) {
            vec![0; blocks.div_ceil(64) as usize]
        } else {
            Vec::new()
        };
        OffsetGen {
            blocks,
            kind,
            map,
            visited: 0,
            scatter_off: rng.next_u64(),
        }
    }

    /// The next block.
    pub(crate) fn next(&mut self, rng: &mut RngStream) -> u64 {
        match self.kind {
            Kind::Uniform => {
                let b = rng.below(self.blocks);
                if self.map.is_empty() {
                    b
                } else {
                    self.claim(b)
                }
            }
            Kind::Zipf { theta, zetan, zeta2 } => {
                let n = self.blocks.min(ZIPF_MAX_GEN) as f64;
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / n).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                let u = rng.next_f64();
                let z = u * zetan;
                let rank = if z < 1.0 {
                    0
                } else if z < 1.0 + 0.5f64.powf(theta) {
                    1
                } else {
                    ((n * (eta * u - eta + 1.0).powf(alpha)) as u64).saturating_sub(1)
                };
                scatter(rank).wrapping_add(self.scatter_off) % self.blocks
            }
            Kind::Pareto { pow } => {
                let u = rng.next_f64();
                let rank = ((self.blocks - 1) as f64 * u.powf(pow)) as u64;
                scatter(rank).wrapping_add(self.scatter_off) % self.blocks
            }
        }
    }

    /// The random map: `b` if not yet visited this pass, else the next unvisited block
    /// after it (wrapping); a full map starts a new pass.
    fn claim(&mut self, b: u64) -> u64 {
        if self.visited >= self.blocks {
            self.map.fill(0);
            self.visited = 0;
        }
        let words = self.map.len();
        let mut w = (b / 64) as usize;
        // Bits below `b` in its own word are looked at last.
        let mut mask = !0u64 << (b % 64);
        for _ in 0..=words {
            let free = !self.map[w] & mask & self.word_valid(w);
            if free != 0 {
                let bit = free.trailing_zeros() as u64;
                self.map[w] |= 1 << bit;
                self.visited += 1;
                return w as u64 * 64 + bit;
            }
            w = (w + 1) % words;
            mask = !0;
        }
        unreachable!("a map with unvisited blocks has a free bit")
    }

    /// The bits of word `w` that stand for blocks of the file.
    fn word_valid(&self, w: usize) -> u64 {
        let last = self.blocks - w as u64 * 64;
        if last >= 64 {
            !0
        } else {
            (1u64 << last) - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_random_map_visits_every_block_once_per_pass() {
        let mut rng = RngStream::new(7, "fio");
        let mut g = OffsetGen::new(1000, FioDist::Random, true, &mut rng);
        let mut seen = vec![0u32; 1000];
        for _ in 0..2000 {
            seen[g.next(&mut rng) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n == 2), "each block twice in two passes");
    }

    #[test]
    fn zipf_and_pareto_make_a_few_blocks_hot() {
        // fio-genzipf's figures for these parameters: zipf 1.2 sends about half the I/O to the
        // hottest 1 % of blocks, pareto 0.9 about a fifth.
        for (dist, floor) in [(FioDist::Zipf(1.2), 30_000), (FioDist::Pareto(0.9), 15_000)] {
            let mut rng = RngStream::new(7, "fio");
            let mut g = OffsetGen::new(10_000, dist, true, &mut rng);
            let mut hits = vec![0u32; 10_000];
            for _ in 0..100_000 {
                hits[g.next(&mut rng) as usize] += 1;
            }
            hits.sort_unstable_by(|a, b| b.cmp(a));
            let top: u32 = hits[..100].iter().sum();
            // The hottest 1 % of blocks take far more than 1 % of the I/O.
            assert!(top > floor, "{dist:?}: top 1 % took {top} of 100000");
        }
        let mut rng = RngStream::new(7, "fio");
        let mut g = OffsetGen::new(10_000, FioDist::Random, false, &mut rng);
        let mut hits = vec![0u32; 10_000];
        for _ in 0..100_000 {
            hits[g.next(&mut rng) as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        let top: u32 = hits[..100].iter().sum();
        assert!(top < 3_000, "uniform: top 1 % took {top}");
    }
}
