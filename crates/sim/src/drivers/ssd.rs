//! Flash SSD: independent flash units behind a shared transfer token, and a write buffer.
//!
//! # Parameters ([`SsdParams`])
//!
//! The defaults describe a consumer TLC NVMe drive past its SLC cache (8 channels, ~80 µs
//! page reads, ~3 GB/s sequential reads, ~1.8 GB/s sustained writes, a 64-deep queue).
//!
//! | field | meaning in the model |
//! |---|---|
//! | `parallelism` | flash units (channels/dies) working independently |
//! | `read_latency` | time a unit takes to read one piece (a page read, tR) |
//! | `write_latency` | time a write takes to enter the write buffer; with `write_cache = false`, the time a unit takes to program one piece |
//! | `read_bandwidth` | the transfer token's rate for reads; also the host link rate of buffered writes |
//! | `write_bandwidth` | the token's rate for unbuffered writes, and the rate the write buffer drains at |
//! | `queue_depth` | depth of each hardware queue |
//! | `nr_hw_queues` | hardware queues (NVMe submission queues); blk-mq maps the CPUs onto them, and each has its own tags (`nr_requests`) |
//! | `write_cache` | writes complete when they are in the write buffer ([`WRITE_BUFFER`] bytes) |
//! | `erase_latency` | time a unit takes to erase a block (tBERS) |
//! | `erase_block` | bytes a unit programs between two erases |
//! | `read_spread` | how much a page read's time depends on the page type, % of `read_latency` |
//!
//! # Reads (and writes with `write_cache = false`)
//!
//! A request is cut into pieces of [`PIECE`] bytes aligned on the LBA (a multi-plane page:
//! 4 planes × 16 KiB), striped over the units by LBA: piece `k` of the device lives on unit
//! `k mod parallelism`. Each piece occupies its unit for one `read_latency` (writes:
//! `write_latency`), units serving their pieces in dispatch order. The whole device is also capped by
//! a shared transfer token (the channel bus / FTL): each request holds it for
//! `bytes / read_bandwidth` (writes: `write_bandwidth`), in dispatch order. A request completes
//! when its token slot has ended and its last piece has been read and moved to the host
//! (`max(token end, units end + piece transfer)`). Everything is computed arithmetically at
//! dispatch, O(`parallelism`) per request: there are no per-piece events, the only event is
//! the completion.
//!
//! So a random 4 KiB read at queue depth 1 takes `read_latency` plus its transfer, queue depth 32
//! reaches about `parallelism / read_latency` IOPS (less where requests collide on a unit) and
//! sequential 1 MiB reads run at `read_bandwidth` when the units are fast enough for it
//! (`parallelism · PIECE / read_latency ≥ read_bandwidth`: 6.5 GB/s with the defaults).
//!
//! # Write buffer (`write_cache = true`)
//!
//! A write is admitted into the buffer once the buffer has room for it (writes are admitted in
//! arrival order); it then crosses the host link at `read_bandwidth` and completes
//! `write_latency` later. The buffer drains continuously at `write_bandwidth` (a fluid model: its
//! level at `t` is `(drain_end − t) · write_bandwidth`). A burst smaller than [`WRITE_BUFFER`]
//! completes at link speed; a long stream is paced by the drain and converges to
//! `write_bandwidth`. `DevRequest::sync` is ignored (no FUA writes). A cache flush (`Op::Flush`)
//! completes `write_latency` after the buffer has drained what was admitted before it; NVMe
//! queues it beside other commands.
//!
//! # Reads beside writes, and chance
//!
//! The drain is the units programming: while the buffer holds data, each unit is programming
//! one piece after another, a piece taking `prog = parallelism · PIECE / write_bandwidth`
//! (278 µs with the defaults), with an erase of `erase_latency` every `erase_block` bytes. A
//! read that finds its unit free of host work but the buffer draining waits for what is left
//! of the unit's current program — or, for the erase's share of the unit's time, of its erase.
//! The unit's phase has nothing to do with the read's arrival, so that rest is drawn uniformly
//! from the device's random stream. Reads already queued on the unit go before the next
//! program (drives favour reads), and the unit time reads take is lost to the drain, which then
//! ends later. With the defaults a 4 KiB reader beside a buffered stream sees its median
//! latency roughly double and its p99 several times the idle one, with erase-length waits (ms)
//! in the thousandth tail; FUA and `write_cache = false` writes queue on the units themselves.
//!
//! A read's page time depends on the page type of TLC flash (lower, middle, upper page take
//! longer to sense the more bits share the cell): each read takes `read_latency` times 1 −
//! `read_spread`%, 1 or 1 + `read_spread`%, one of the three at random, so the mean stays
//! `read_latency`. Both draws come from the device's stream: the same seed gives the same run.
//!
//! Defaults and where they come from (see `docs/model-scope.md`): SimpleSSD's TLC timings
//! (lower/centre/upper page reads 56.5/77.5/106 µs: a mean of 80 µs and ±30 %; block erase 3 ms),
//! 16 MiB erase blocks on each of a unit's 4 planes; reads under program and erase roughly 2×
//! slower on average (Wu & He, FAST 2012) with ms tails (Litz et al., RAIL, 2022).
//!
//! # Utilisation
//! [`Device::busy_ns`] is the time with at least one request inside the device (iostat
//! `%util`); buffer drain with nothing outstanding is not counted.
//!
//! # Simplifications
//! - The drain's programs and erases are a fluid at `write_bandwidth` meeting reads by chance,
//!   not scheduled operations: no program/erase suspend, and the drain does not use the
//!   transfer token; buffered data is not read back from the buffer.
//! - No garbage collection beyond one erase per erase block (no write amplification, so a full
//!   drive's GC storms are not there), no SLC cache, thermal throttling or read-disturb; no
//!   per-die queues beyond FIFO per unit; no command overhead.
//! - The token and the units are reserved at dispatch in dispatch order (FIFO), so a request
//!   never overtakes an earlier one on the same unit.

use super::model::{DeviceModel, Naming, LATENCY, QUEUE_DEPTH};
use super::{xfer, BusyClock, DevRequest, Device, Op};
use crate::config::{blk_mq_queue, Knob, KnobKind, QueueConfig};
use crate::engine::RngStream;
use crate::knob;
use crate::units::MIB;
use crate::Ns;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A flash SSD. Defaults: a SATA/NVMe-class consumer TLC drive past its SLC cache.
#[derive(Clone, Debug, Serialize)]
pub struct SsdParams {
    /// Independent channels/dies that serve requests in parallel.
    pub parallelism: u32,
    /// Latency of a 4 KiB read, ns.
    pub read_latency: Ns,
    /// Latency of a 4 KiB program into the write buffer, ns.
    pub write_latency: Ns,
    /// Sustained sequential read bandwidth, bytes/s.
    pub read_bandwidth: u64,
    /// Sustained sequential write bandwidth, bytes/s.
    pub write_bandwidth: u64,
    /// Depth of each hardware queue.
    pub queue_depth: u32,
    /// Hardware queues; the drive takes `queue_depth` commands from each.
    pub nr_hw_queues: u32,
    pub write_cache: bool,
    /// Time a unit takes to erase a block, ns (tBERS).
    pub erase_latency: Ns,
    /// Bytes a unit programs between two erases (its erase block).
    pub erase_block: u64,
    /// Spread of a page read's time by page type (TLC: lower, middle, upper pages), as a
    /// percentage of `read_latency` either side of it; 0 reads every page in `read_latency`.
    pub read_spread: u32,
}

impl Default for SsdParams {
    fn default() -> Self {
        SsdParams {
            parallelism: 8,
            read_latency: 80_000,
            write_latency: 25_000,
            read_bandwidth: 3_000 * MIB,
            write_bandwidth: 1_800 * MIB,
            queue_depth: 64,
            nr_hw_queues: 1,
            write_cache: true,
            erase_latency: 3_000_000,
            erase_block: 64 * MIB,
            read_spread: 30,
        }
    }
}

impl DeviceModel for SsdParams {
    const KIND: &'static str = "ssd";
    const SUMMARY: &'static str = "a flash SSD: parallel units, a transfer cap, a write buffer";
    const NAMING: Naming = Naming::Sd;
    const MEMBER: bool = true;

    fn knobs() -> &'static [Knob<Self>] {
        &SSD_KNOBS
    }

    /// A 1 TB SSD.
    fn default_size(&self) -> u64 {
        1_000_000_000_000
    }

    fn default_queue(&self) -> QueueConfig {
        blk_mq_queue(false, self.write_cache, self.queue_depth)
    }

    fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    fn nr_hw_queues(&self) -> u32 {
        self.nr_hw_queues
    }

    fn has_write_cache(&self) -> bool {
        self.write_cache
    }

    fn build(&self, size: u64, rng: RngStream) -> Box<dyn Device> {
        Box::new(Ssd::new(self.clone(), size, rng))
    }

    fn write_cache_bytes(&self) -> u64 {
        if self.write_cache {
            WRITE_BUFFER
        } else {
            0
        }
    }
}

static SSD_KNOBS: [Knob<SsdParams>; 11] = [
    knob!(SsdParams, "parallelism", KnobKind::Count { min: 1, max: 1024 }, "channels/dies serving requests at once", parallelism: u32),
    knob!(SsdParams, "read_latency", LATENCY, "latency of a 4 KiB read", read_latency: u64),
    knob!(SsdParams, "write_latency", LATENCY, "latency of a 4 KiB program into the write buffer", write_latency: u64),
    knob!(SsdParams, "read_bandwidth", KnobKind::Rate, "sustained sequential reads", read_bandwidth: u64),
    knob!(SsdParams, "write_bandwidth", KnobKind::Rate, "sustained sequential writes", write_bandwidth: u64),
    knob!(SsdParams, "queue_depth", QUEUE_DEPTH, "depth of each hardware queue", queue_depth: u32),
    knob!(SsdParams, "nr_hw_queues", KnobKind::Count { min: 1, max: 1024 }, "hardware queues (NVMe: one per CPU, up to the drive's limit)", nr_hw_queues: u32),
    knob!(SsdParams, "write_cache", KnobKind::Bool, "volatile write buffer on", write_cache: bool),
    knob!(SsdParams, "erase_latency", LATENCY, "time a unit takes to erase a block (tBERS); a read waits for it", erase_latency: u64),
    knob!(SsdParams, "erase_block", KnobKind::Size { min: PIECE, max: 1 << 40, pages: false }, "bytes a unit programs between two erases", erase_block: u64),
    knob!(SsdParams, "read_spread", KnobKind::Count { min: 0, max: MAX_READ_SPREAD as u64 }, "page read time spread by page type, % of read_latency either side", read_spread: u32),
];

/// Largest `read_spread`: the fastest page still takes a tenth of `read_latency`.
pub const MAX_READ_SPREAD: u32 = 90;
/// Bytes a unit reads or programs in one operation (a 4-plane page of 16 KiB pages).
pub const PIECE: u64 = 64 << 10;
/// Capacity of the write buffer, bytes.
pub const WRITE_BUFFER: u64 = 32 << 20;

pub struct Ssd {
    p: SsdParams,
    /// When each unit finishes the work already given to it.
    unit_free: Vec<Ns>,
    /// When the transfer token is free.
    token_free: Ns,
    /// When the write buffer will be empty if nothing else is admitted.
    drain_end: Ns,
    /// Admission time of the last buffered write (admission is in arrival order).
    admit_last: Ns,
    link_free: Ns,
    completions: BinaryHeap<Reverse<(Ns, u64, u32)>>,
    seq: u64,
    busy: BusyClock,
    /// Time a unit takes to program one piece while the buffer drains at `write_bandwidth`.
    prog_ns: Ns,
    /// Share of a draining unit's time spent erasing rather than programming.
    erase_share: f64,
    rng: RngStream,
    _size: u64,
}

impl Ssd {
    pub fn new(p: SsdParams, size: u64, rng: RngStream) -> Self {
        let units = p.parallelism.max(1) as usize;
        let qd = p.queue_depth.max(1) as usize;
        let prog_ns = xfer(units as u64 * PIECE, p.write_bandwidth).max(1);
        let block_ns = xfer(p.erase_block.saturating_mul(units as u64), p.write_bandwidth);
        let erase_share = p.erase_latency as f64 / p.erase_latency.saturating_add(block_ns).max(1) as f64;
        Ssd {
            p,
            prog_ns,
            erase_share,
            unit_free: vec![0; units],
            token_free: 0,
            drain_end: 0,
            admit_last: 0,
            link_free: 0,
            completions: BinaryHeap::with_capacity(qd + 1),
            seq: 0,
            busy: BusyClock::default(),
            rng,
            _size: size,
        }
    }

    /// Bytes in the write buffer at `t`.
    pub fn buffer_level(&self, t: Ns) -> u64 {
        let left = self.drain_end.saturating_sub(t) as u128;
        (left * self.p.write_bandwidth as u128 / 1_000_000_000) as u64
    }

    /// Give the pieces of `[byte, byte + bytes)` to their units from `now`, each costing `lat`;
    /// returns when the last one is done.
    ///
    /// A read meets the write buffer's drain: while it drains, a unit the host is not already
    /// using is in the middle of a program (or, `erase_share` of the time, an erase) and the
    /// read waits for the rest of it; reads queued behind that read go first, before the next
    /// program. The read time each unit lends is lost to the drain.
    fn units(&mut self, now: Ns, byte: u64, bytes: u64, lat: Ns, read: bool) -> Ns {
        let nunits = self.unit_free.len() as u64;
        let p0 = byte / PIECE;
        let p1 = (byte + bytes.max(1) - 1) / PIECE;
        let n = p1 - p0 + 1;
        let (per, extra) = (n / nunits, n % nunits);
        let draining = read && self.drain_end > now;
        let mut last = now;
        for k in 0..n.min(nunits) {
            let u = ((p0 + k) % nunits) as usize;
            let cnt = per + u64::from(k < extra);
            let mut start = self.unit_free[u].max(now);
            if draining && self.unit_free[u] <= now {
                start += self.residual_flash_op();
            }
            let f = start + cnt * lat;
            self.unit_free[u] = f;
            last = last.max(f);
        }
        if draining {
            self.drain_end += n * lat / nunits;
        }
        last
    }

    /// What is left of the program or erase a draining unit is in the middle of, at a moment
    /// with no relation to its phase.
    fn residual_flash_op(&mut self) -> Ns {
        if self.rng.next_f64() < self.erase_share {
            self.rng.below(self.p.erase_latency)
        } else {
            self.rng.below(self.prog_ns)
        }
    }

    /// This read's page time: TLC pages take longer to sense the more bits their cell holds
    /// (lower, middle, upper page), one of the three at random.
    fn page_read_ns(&mut self) -> Ns {
        let spread = self.p.read_latency * u64::from(self.p.read_spread) / 100;
        if spread == 0 {
            return self.p.read_latency;
        }
        match self.rng.below(3) {
            0 => self.p.read_latency - spread,
            1 => self.p.read_latency,
            _ => self.p.read_latency + spread,
        }
    }

    /// Completion time of a request served by the units and the token.
    fn through_units(&mut self, now: Ns, rq: &DevRequest, lat: Ns, rate: u64) -> Ns {
        let units_end = self.units(now, rq.sector * 512, rq.bytes, lat, rq.op == Op::Read);
        let token_end = self.token_free.max(now) + xfer(rq.bytes, rate);
        self.token_free = token_end;
        token_end.max(units_end + xfer(rq.bytes.min(PIECE), rate))
    }

    /// Completion time of a buffered write.
    fn buffered(&mut self, now: Ns, bytes: u64) -> Ns {
        let wbw = self.p.write_bandwidth;
        let room_at = self.drain_end.saturating_sub(xfer(WRITE_BUFFER.saturating_sub(bytes), wbw));
        let admit = now.max(self.admit_last).max(room_at);
        self.admit_last = admit;
        self.drain_end = self.drain_end.max(admit) + xfer(bytes, wbw);
        let link_end = self.link_free.max(admit) + xfer(bytes, self.p.read_bandwidth);
        self.link_free = link_end;
        link_end + self.p.write_latency
    }
}

impl Device for Ssd {
    /// The queues' depths pooled: the drive serves all of them through the same units.
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth.max(1) * self.p.nr_hw_queues.max(1)
    }

    fn in_flight(&self) -> u32 {
        self.completions.len() as u32
    }

    /// NVMe writes carry FUA.
    fn supports_fua(&self) -> bool {
        true
    }

    fn dispatch(&mut self, now: Ns, rq: DevRequest) {
        self.busy.enter(now, self.completions.is_empty());
        let done = match rq.op {
            Op::Read => {
                let lat = self.page_read_ns();
                self.through_units(now, &rq, lat, self.p.read_bandwidth)
            }
            // A FUA write is programmed before it completes, past the write buffer.
            Op::Write if self.p.write_cache && !rq.fua => self.buffered(now, rq.bytes),
            Op::Write => self.through_units(now, &rq, self.p.write_latency, self.p.write_bandwidth),
            // The write buffer drained (what was admitted before the flush), then a program.
            Op::Flush if self.p.write_cache => self.drain_end.max(now) + self.p.write_latency,
            Op::Flush => now + self.p.write_latency,
        };
        self.seq += 1;
        self.completions.push(Reverse((done, self.seq, rq.id)));
    }

    fn next_event(&self) -> Option<Ns> {
        self.completions.peek().map(|r| r.0 .0)
    }

    fn advance(&mut self, now: Ns, done: &mut Vec<u32>) {
        while let Some(&Reverse((t, _, id))) = self.completions.peek() {
            if t > now {
                break;
            }
            self.completions.pop();
            done.push(id);
            self.busy.leave(t, self.completions.is_empty());
        }
    }

    fn busy_ns(&self, now: Ns) -> Ns {
        self.busy.busy_ns(now, self.completions.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::testkit::{check_no_request_lost, mb, rate, run};
    use proptest::prelude::*;

    const SIZE: u64 = 1_000_000_000_000;
    const MIB: u64 = 1 << 20;

    fn ssd(p: SsdParams) -> Ssd {
        Ssd::new(p, SIZE, RngStream::new(1, "test/ssd"))
    }

    fn iops(done: &[(Ns, Ns, u32)]) -> f64 {
        done.len() as f64 / (done.last().unwrap().1 as f64 * 1e-9)
    }

    fn random_4k(n: usize) -> Vec<u64> {
        let mut r = RngStream::new(3, "test/random");
        (0..n).map(|_| r.below(SIZE / 4096) * 4096).collect()
    }

    #[test]
    fn sequential_rates_match_bandwidths() {
        let p = SsdParams::default();
        let mut d = ssd(p.clone());
        let done = run(&mut d, 4, 1000, |i| (Op::Read, i as u64 * MIB, MIB));
        let r = rate(&done, MIB, 10);
        assert!((r / mb(p.read_bandwidth) - 1.0).abs() < 0.02, "read {r:.0} MB/s");

        // Buffered writes: past the buffer, the drain sets the pace.
        let mut d = ssd(p.clone());
        let done = run(&mut d, 4, 1000, |i| (Op::Write, i as u64 * MIB, MIB));
        let r = rate(&done, MIB, 200);
        assert!((r / mb(p.write_bandwidth) - 1.0).abs() < 0.02, "write {r:.0} MB/s");

        // Unbuffered writes: the token at write bandwidth.
        let mut d = ssd(SsdParams {
            write_cache: false,
            ..p.clone()
        });
        let done = run(&mut d, 4, 1000, |i| (Op::Write, i as u64 * MIB, MIB));
        let r = rate(&done, MIB, 10);
        assert!((r / mb(p.write_bandwidth) - 1.0).abs() < 0.02, "write-through {r:.0} MB/s");
    }

    #[test]
    fn write_burst_fills_buffer_at_link_speed() {
        let p = SsdParams::default();
        let mut d = ssd(p.clone());
        let n = (WRITE_BUFFER / MIB / 2) as usize;
        let done = run(&mut d, 4, n, |i| (Op::Write, i as u64 * MIB, MIB));
        let r = (n as u64 * MIB) as f64 / (done.last().unwrap().1 as f64 * 1e-9) / 1e6;
        assert!(r > 1.3 * mb(p.write_bandwidth), "burst {r:.0} MB/s");
        assert!(d.buffer_level(done.last().unwrap().1) <= WRITE_BUFFER);
    }

    #[test]
    fn random_reads_latency_and_parallelism() {
        let p = SsdParams::default();
        let lbas = random_4k(4000);
        let x4k = xfer(4096, p.read_bandwidth);
        // Without the page-type spread every read takes the same time.
        let mut d = ssd(SsdParams {
            read_spread: 0,
            ..p.clone()
        });
        let done = run(&mut d, 1, lbas.len(), |i| (Op::Read, lbas[i], 4096));
        assert!(done.iter().all(|&(a, b, _)| b - a == p.read_latency + x4k));
        // With it, reads spread either side of the same mean.
        let mut d = ssd(p.clone());
        let done = run(&mut d, 1, lbas.len(), |i| (Op::Read, lbas[i], 4096));
        let lat: Vec<Ns> = done.iter().map(|&(a, b, _)| b - a).collect();
        let mean = lat.iter().sum::<Ns>() as f64 / lat.len() as f64;
        assert!((mean / (p.read_latency + x4k) as f64 - 1.0).abs() < 0.02, "mean {mean:.0} ns");
        assert!(lat.iter().min() < lat.iter().max());
        let qd1 = iops(&done);

        let mut d = ssd(p.clone());
        let done = run(&mut d, 32, lbas.len(), |i| (Op::Read, lbas[i], 4096));
        let qd32 = iops(&done);
        let ideal = p.parallelism as f64 / (p.read_latency as f64 * 1e-9);
        assert!(qd32 >= 0.75 * ideal && qd32 <= ideal, "qd32 {qd32:.0} IOPS, ideal {ideal:.0}");
        assert!(qd32 > 5.0 * qd1);

        // Many fast units: the token caps IOPS at bandwidth / 4 KiB.
        let fast = SsdParams {
            parallelism: 64,
            read_latency: 10_000,
            ..p.clone()
        };
        let mut d = ssd(fast.clone());
        let done = run(&mut d, 64, lbas.len(), |i| (Op::Read, lbas[i], 4096));
        let cap = fast.read_bandwidth as f64 / 4096.0;
        let got = iops(&done);
        assert!(got <= cap * 1.001 && got >= 0.9 * cap, "{got:.0} IOPS vs cap {cap:.0}");
    }

    /// Read latencies of the reads among `done` (ids `i` with `is_read(i)`), sorted, after the
    /// first `skip` completions.
    fn read_lat(done: &[(Ns, Ns, u32)], skip: usize, is_read: impl Fn(u32) -> bool) -> Vec<Ns> {
        let mut v: Vec<Ns> = done[skip..].iter().filter(|r| is_read(r.2)).map(|&(a, b, _)| b - a).collect();
        v.sort_unstable();
        v
    }

    fn pct(v: &[Ns], q: f64) -> Ns {
        v[((v.len() - 1) as f64 * q).round() as usize]
    }

    /// A 4 KiB reader beside a stream of 1 MiB buffered writes (one read in eight requests).
    fn reader_beside_writer(p: &SsdParams) -> (Vec<Ns>, f64) {
        let lbas = random_4k(4000);
        let mut d = ssd(p.clone());
        let n = 8 * lbas.len();
        let done = run(&mut d, 8, n, |i| {
            if i % 8 == 0 {
                (Op::Read, lbas[i / 8], 4096)
            } else {
                (Op::Write, SIZE / 2 + i as u64 * MIB, MIB)
            }
        });
        let secs = done.last().unwrap().1 as f64 * 1e-9;
        let written = (n - n / 8) as f64 * MIB as f64;
        (read_lat(&done, 400, |id| id % 8 == 0), written / secs / 1e6)
    }

    #[test]
    fn reads_wait_for_the_programs_and_erases_of_the_drain() {
        let p = SsdParams::default();
        let lbas = random_4k(4000);
        let mut d = ssd(p.clone());
        let alone = read_lat(&run(&mut d, 1, lbas.len(), |i| (Op::Read, lbas[i], 4096)), 0, |_| true);
        let (mixed, wrote) = reader_beside_writer(&p);
        let (p50, p99) = (pct(&mixed, 0.5), pct(&mixed, 0.99));
        assert!(
            p50 as f64 > 1.5 * pct(&alone, 0.5) as f64,
            "p50 {p50} ns beside writes, {} alone",
            pct(&alone, 0.5)
        );
        assert!(
            p99 as f64 > 3.0 * pct(&alone, 0.99) as f64,
            "p99 {p99} ns beside writes, {} alone",
            pct(&alone, 0.99)
        );
        // The units the reads borrow are lost to the drain, a little.
        let full = mb(p.write_bandwidth);
        assert!(wrote < full && wrote > 0.9 * full, "writes {wrote:.0} MB/s of {full:.0}");

        // The slowest reads are the ones that met an erase: without erases the tail is short.
        let (no_erase, _) = reader_beside_writer(&SsdParams {
            erase_latency: 0,
            ..p.clone()
        });
        let (t, t0) = (pct(&mixed, 0.999), pct(&no_erase, 0.999));
        assert!(t as f64 > 2.0 * t0 as f64, "p99.9 {t} ns with erases, {t0} ns without");
        assert!(*mixed.last().unwrap() <= p.erase_latency + 2 * p.read_latency + 2 * p.write_latency + pct(&no_erase, 1.0));
    }

    #[test]
    fn random_writes() {
        let p = SsdParams::default();
        let lbas = random_4k(1000);
        let mut d = ssd(p.clone());
        let done = run(&mut d, 1, lbas.len(), |i| (Op::Write, lbas[i], 4096));
        let lat = done[0].1 - done[0].0;
        assert_eq!(lat, xfer(4096, p.read_bandwidth) + p.write_latency);
        let mut d = ssd(SsdParams {
            write_cache: false,
            ..p.clone()
        });
        let done = run(&mut d, 1, lbas.len(), |i| (Op::Write, lbas[i], 4096));
        assert!(done
            .iter()
            .all(|&(a, b, _)| b - a == p.write_latency + xfer(4096, p.write_bandwidth)));
    }

    #[test]
    fn busy_counts_time_with_requests_inside() {
        let p = SsdParams::default();
        let mut d = ssd(p.clone());
        let done = run(&mut d, 1, 3, |i| (Op::Read, i as u64 * 4096 * 1000, 4096));
        let t = done.last().unwrap().1;
        assert_eq!(d.busy_ns(2 * t), t);
    }

    fn trace(seed: u64) -> Vec<(Ns, Ns, u32)> {
        let mut d = ssd(SsdParams::default());
        let mut r = RngStream::new(seed, "test/mix");
        let ops: Vec<(Op, u64, u64)> = (0..3000)
            .map(|_| {
                let op = if r.below(2) == 0 { Op::Read } else { Op::Write };
                (op, r.below(SIZE / 4096) * 4096, (1 + r.below(256)) * 4096)
            })
            .collect();
        run(&mut d, 64, ops.len(), |i| ops[i])
    }

    #[test]
    fn deterministic() {
        assert_eq!(trace(4), trace(4));
        assert_ne!(trace(4), trace(5));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn no_request_lost(
            reqs in prop::collection::vec((any::<bool>(), 0u64..1_000_000, 1u64..8192, 0u64..200_000), 1..300),
            qd in 1u32..80,
            parallelism in 1u32..16,
            cache in any::<bool>(),
        ) {
            let reqs: Vec<_> = reqs
                .iter()
                .enumerate()
                .map(|(i, &(w, region, len, gap))| {
                    let rq = DevRequest {
                        id: i as u32,
                        op: if w { Op::Write } else { Op::Read },
                        sector: region * 4096,
                        bytes: len * 512,
                        segments: (len * 512).div_ceil(4096) as u32,
                        sync: false,
                        fua: false,
                        prio: Default::default(),
                    };
                    (rq, gap)
                })
                .collect();
            let mut d = ssd(SsdParams { queue_depth: qd, parallelism, write_cache: cache, ..SsdParams::default() });
            check_no_request_lost(&mut d, &reqs)?;
        }
    }
}
