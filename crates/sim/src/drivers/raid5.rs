//! RAID5: `members` devices of one model with rotating parity, the array behind one request
//! queue (the 2002 setup's Compaq SMART-2 "cpqarray" logical drive; the same layout and
//! write rules as md raid5 of 2.4, `drivers/md/raid5.c`).
//!
//! # Layout ([`Raid5Params`])
//!
//! | field | meaning |
//! |---|---|
//! | `members` | member devices, at least 3 (N) |
//! | `chunk` | stripe unit (default 64 KiB, md's and the SMART-2's default) |
//! | `stripe_cache` | stripes the cache may hold while gathering writes (2.4 md: `NR_STRIPES` = 256) |
//! | `stripe_delay` | how long a partially written stripe waits for the rest of its data (default 3 ms, the unplug delay) |
//! | `member` | the members' model and parameters |
//!
//! A stripe is N − 1 data chunks and one parity chunk. Left-symmetric rotation (md's default,
//! `ALGORITHM_LEFT_SYMMETRIC`): stripe `s` keeps its parity on member `N − 1 − s mod N`, and its
//! data chunk `i` on member `(parity + 1 + i) mod N`; every chunk of stripe `s` is at byte
//! `s × chunk` of its member. Capacity is (N − 1) × the member size.
//!
//! # Writes
//!
//! A write is cut into the stripes it touches; each piece marks the 4 KiB pages it covers in
//! the stripe's cache entry (`stripe_head`), and the request completes when every stripe it
//! touched has been written.
//!
//! * **Full stripe**: once every data page of a stripe is covered, the stripe is written at
//!   once: N member writes of one chunk each (new data and the parity computed from it), no
//!   reads.
//! * **Partial stripe** (read-modify-write): a stripe left partly covered waits in the cache
//!   for the rest (sequential writers fill it with their next request) until `stripe_delay`
//!   after it started gathering, or until the members are idle, or until the cache is full
//!   (oldest first). Then it is written by read-modify-write: read the old data of the covered
//!   span of each touched chunk and the old parity of the union of those spans, then write the
//!   new data and the new parity: two member operations per chunk touched plus two on the
//!   parity member, in two dependent phases. (md also chooses reconstruct-write, reading the
//!   untouched chunks, when that reads less; this model always does read-modify-write.)
//!
//! Reads go to the data chunks they cover, one member read per chunk piece.
//!
//! Simplifications: no degraded mode or resync; the cache is a write-gathering cache only
//! (reads do not hit it); members are equal; parity computation costs no time; utilisation is
//! the array's (time with any request inside).

use super::hdd::HddParams;
use super::model::{DeviceModel, Naming, LATENCY, MAX_MEMBERS};
use super::DeviceModelConfig;
use super::{build_model, first_due, refill, submit_part, ArraySlots, DevRequest, Device, Op};
use crate::config::{blk_mq_queue, Knob, KnobKind, QueueConfig};
use crate::engine::RngStream;
use crate::knob;
use crate::Ns;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// RAID5 (`drivers/raid5.rs`): `members` devices of one model, rotating parity.
/// Defaults: four default HDDs, 64 KiB chunks, a 256-stripe cache, a 3 ms gathering delay.
#[derive(Clone, Debug, Serialize)]
pub struct Raid5Params {
    /// Member devices, at least 3.
    pub members: u32,
    /// Stripe unit, bytes.
    pub chunk: u64,
    /// Stripes the cache holds while gathering writes (2.4 md: `NR_STRIPES` = 256).
    pub stripe_cache: u32,
    /// How long a partly written stripe waits for the rest of its data, ns.
    pub stripe_delay: Ns,
    /// The model of every member, with its parameters.
    pub member: Box<DeviceModelConfig>,
}

impl Default for Raid5Params {
    fn default() -> Self {
        Raid5Params {
            members: 4,
            chunk: 64 * 1024,
            stripe_cache: 256,
            stripe_delay: 3_000_000,
            member: Box::new(DeviceModelConfig::Hdd(HddParams::default())),
        }
    }
}

impl DeviceModel for Raid5Params {
    const KIND: &'static str = "raid5";
    const SUMMARY: &'static str = "RAID5 with rotating parity, read-modify-write and a stripe cache";
    const NAMING: Naming = Naming::Sd;

    fn knobs() -> &'static [Knob<Self>] {
        &RAID5_KNOBS
    }

    /// The members' default capacity, times the data members.
    fn default_size(&self) -> u64 {
        self.member.default_size().saturating_mul(u64::from(self.members.max(3) - 1))
    }

    /// A RAID5 logical drive behind a controller (cpqarray): one request queue with an
    /// elevator in front of the array.
    fn default_queue(&self) -> QueueConfig {
        blk_mq_queue(true, self.member.has_write_cache(), self.queue_depth())
    }

    fn queue_depth(&self) -> u32 {
        self.members.saturating_mul(self.member.queue_depth())
    }

    fn has_write_cache(&self) -> bool {
        self.member.has_write_cache()
    }

    fn member(&self) -> Option<&DeviceModelConfig> {
        Some(&self.member)
    }

    fn member_mut(&mut self) -> Option<&mut DeviceModelConfig> {
        Some(&mut self.member)
    }

    fn build(&self, size: u64, rng: RngStream) -> Box<dyn Device> {
        Box::new(Raid5::new(self, size, rng))
    }
}

static RAID5_KNOBS: [Knob<Raid5Params>; 4] = [
    knob!(Raid5Params, "members", KnobKind::Count { min: 3, max: MAX_MEMBERS }, "RAID5 needs at least 3 members (N - 1 data chunks + parity per stripe), at most 1920", members: u32),
    knob!(Raid5Params, "chunk", KnobKind::Size { min: 4096, max: 256 << 20, pages: true }, "stripe unit: whole pages, 4 KiB to 256 MiB; 64KiB is the 2.4 md and SMART-2 default", chunk: u64),
    knob!(Raid5Params, "stripe_cache", KnobKind::Count { min: 1, max: 32768 }, "stripes held while gathering writes: 2.4 md had 256 (NR_STRIPES); 6.x allows 17 to 32768", stripe_cache: u32),
    knob!(Raid5Params, "stripe_delay", LATENCY, "how long a partly written stripe waits for the rest", stripe_delay: u64),
];

const NEVER: Ns = Ns::MAX;
const PAGE: u64 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Collecting pages; in `gathering`.
    Gathering,
    /// RMW reads in flight.
    Reading,
    /// Member writes in flight.
    Writing,
}

struct StripeHead {
    stripe: u64,
    /// Covered data pages of the stripe, one bit each.
    covered: Vec<u64>,
    /// Array requests (slots) waiting for this stripe to be written.
    waiters: Vec<u32>,
    phase: Phase,
    /// Member operations of the current phase not yet complete.
    parts: u32,
    since: Ns,
    free: bool,
}

/// What a member operation belongs to.
#[derive(Clone, Copy, Debug)]
enum Owner {
    /// A read piece of array request slot `s`.
    Read(u32),
    /// A write or RMW read of stripe head `h`.
    Stripe(u32),
}

pub struct Raid5 {
    members: Vec<Box<dyn Device>>,
    next: Vec<Ns>,
    pending: Vec<VecDeque<DevRequest>>,
    /// Member operations by id: owner.
    ops: Vec<Owner>,
    free_ops: Vec<u32>,
    /// Array requests inside, by slot: (request id, stripes or pieces outstanding).
    reqs: ArraySlots,
    heads: Vec<StripeHead>,
    free_heads: Vec<u32>,
    /// Stripe → head index, for stripes still gathering (ordered: deterministic flushes).
    gathering: BTreeMap<u64, u32>,
    chunk: u64,
    n: u64,
    pages_per_stripe: u64,
    stripe_cache: usize,
    stripe_delay: Ns,
    depth: u32,
    part_done: Vec<u32>,
    /// Counters for tests and reports: full-stripe writes, RMW stripes.
    pub full_stripes: u64,
    pub rmw_stripes: u64,
}

impl Raid5 {
    pub fn new(p: &Raid5Params, size: u64, mut rng: RngStream) -> Self {
        let n = p.members.max(3) as usize;
        let chunk = (p.chunk.max(PAGE) / PAGE) * PAGE;
        let member_size = (size / (n as u64 - 1) / chunk * chunk).max(chunk);
        let members: Vec<Box<dyn Device>> = (0..n)
            .map(|i| build_model(&p.member, member_size, RngStream::new(rng.next_u64(), &format!("member{i}"))))
            .collect();
        let depth = members.iter().map(|m| m.queue_depth()).sum::<u32>().max(1);
        Raid5 {
            next: vec![NEVER; n],
            pending: (0..n).map(|_| VecDeque::new()).collect(),
            ops: Vec::new(),
            free_ops: Vec::new(),
            reqs: ArraySlots::default(),
            heads: Vec::new(),
            free_heads: Vec::new(),
            gathering: BTreeMap::new(),
            members,
            chunk,
            n: n as u64,
            pages_per_stripe: (n as u64 - 1) * chunk / PAGE,
            stripe_cache: p.stripe_cache.max(1) as usize,
            stripe_delay: p.stripe_delay,
            depth,
            part_done: Vec::new(),
            full_stripes: 0,
            rmw_stripes: 0,
        }
    }

    /// Parity member of stripe `s` (left-symmetric).
    pub fn parity_member(&self, s: u64) -> usize {
        (self.n - 1 - s % self.n) as usize
    }

    /// Member of data chunk `i` (0 ≤ i < N − 1) of stripe `s`.
    pub fn data_member(&self, s: u64, i: u64) -> usize {
        ((self.parity_member(s) as u64 + 1 + i) % self.n) as usize
    }

    /// Where array byte `b` lives: (stripe, member, byte on the member).
    pub fn map(&self, b: u64) -> (u64, usize, u64) {
        let k = b / self.chunk;
        let s = k / (self.n - 1);
        let i = k % (self.n - 1);
        (s, self.data_member(s, i), s * self.chunk + b % self.chunk)
    }

    fn new_op(&mut self, owner: Owner) -> u32 {
        match self.free_ops.pop() {
            Some(id) => {
                self.ops[id as usize] = owner;
                id
            }
            None => {
                self.ops.push(owner);
                (self.ops.len() - 1) as u32
            }
        }
    }

    fn submit(&mut self, now: Ns, m: usize, rq: DevRequest) {
        submit_part(self.members[m].as_mut(), &mut self.pending[m], &mut self.next[m], now, rq);
    }

    fn member_op(&mut self, now: Ns, owner: Owner, m: usize, op: Op, byte: u64, bytes: u64) {
        let id = self.new_op(owner);
        let rq = DevRequest {
            id,
            op,
            sector: byte / 512,
            bytes,
            segments: bytes.div_ceil(4096) as u32,
            sync: false,
            fua: false,
            prio: Default::default(),
        };
        self.submit(now, m, rq);
    }

    fn head_for(&mut self, now: Ns, stripe: u64) -> u32 {
        if let Some(&h) = self.gathering.get(&stripe) {
            return h;
        }
        let words = self.pages_per_stripe.div_ceil(64) as usize;
        let head = StripeHead {
            stripe,
            covered: vec![0; words],
            waiters: Vec::new(),
            phase: Phase::Gathering,
            parts: 0,
            since: now,
            free: false,
        };
        let h = match self.free_heads.pop() {
            Some(h) => {
                self.heads[h as usize] = head;
                h
            }
            None => {
                self.heads.push(head);
                (self.heads.len() - 1) as u32
            }
        };
        self.gathering.insert(stripe, h);
        h
    }

    fn is_full(&self, h: u32) -> bool {
        let head = &self.heads[h as usize];
        let full_words = (self.pages_per_stripe / 64) as usize;
        let rest = self.pages_per_stripe % 64;
        head.covered[..full_words].iter().all(|&w| w == u64::MAX) && (rest == 0 || head.covered[full_words] == (1u64 << rest) - 1)
    }

    fn page_covered(&self, h: u32, p: u64) -> bool {
        self.heads[h as usize].covered[(p / 64) as usize] & (1 << (p % 64)) != 0
    }

    /// Write a full stripe: N chunk writes.
    fn write_full(&mut self, now: Ns, h: u32) {
        let s = self.heads[h as usize].stripe;
        self.gathering.remove(&s);
        self.full_stripes += 1;
        let head = &mut self.heads[h as usize];
        head.phase = Phase::Writing;
        head.parts = self.n as u32;
        for m in 0..self.n as usize {
            self.member_op(now, Owner::Stripe(h), m, Op::Write, s * self.chunk, self.chunk);
        }
    }

    /// The covered page span (first, end) within data chunk `i` of head `h`, if any.
    fn span(&self, h: u32, i: u64) -> Option<(u64, u64)> {
        let per = self.chunk / PAGE;
        let (mut lo, mut hi) = (None, 0);
        for p in 0..per {
            if self.page_covered(h, i * per + p) {
                lo.get_or_insert(p);
                hi = p + 1;
            }
        }
        lo.map(|lo| (lo, hi))
    }

    /// Start read-modify-write of a partial stripe: the reads.
    fn start_rmw(&mut self, now: Ns, h: u32) {
        let s = self.heads[h as usize].stripe;
        self.gathering.remove(&s);
        self.rmw_stripes += 1;
        self.rmw_io(now, h, Op::Read, Phase::Reading);
    }

    /// RMW reads done: write the new data spans and the new parity span.
    fn rmw_write(&mut self, now: Ns, h: u32) {
        self.rmw_io(now, h, Op::Write, Phase::Writing);
    }

    /// One half of a read-modify-write: `op` of the covered span of every data chunk and of
    /// the parity chunk over their union; the head waits for them all in `phase`.
    fn rmw_io(&mut self, now: Ns, h: u32, op: Op, phase: Phase) {
        let s = self.heads[h as usize].stripe;
        let base = s * self.chunk;
        let (mut plo, mut phi, mut parts) = (u64::MAX, 0, 0);
        for i in 0..self.n - 1 {
            if let Some((lo, hi)) = self.span(h, i) {
                let m = self.data_member(s, i);
                self.member_op(now, Owner::Stripe(h), m, op, base + lo * PAGE, (hi - lo) * PAGE);
                plo = plo.min(lo);
                phi = phi.max(hi);
                parts += 1;
            }
        }
        let pm = self.parity_member(s);
        self.member_op(now, Owner::Stripe(h), pm, op, base + plo * PAGE, (phi - plo) * PAGE);
        let head = &mut self.heads[h as usize];
        head.phase = phase;
        head.parts = parts + 1;
    }

    fn members_idle(&self) -> bool {
        self.members.iter().all(|m| m.in_flight() == 0) && self.pending.iter().all(|p| p.is_empty())
    }

    /// Write partial stripes that waited long enough, or all of them when the members are
    /// idle; and the oldest while the cache is over its size.
    fn flush_partial(&mut self, now: Ns, on_idle: bool) {
        if self.gathering.is_empty() {
            return;
        }
        let idle = on_idle && self.members_idle();
        let due: Vec<u32> = self
            .gathering
            .values()
            .copied()
            .filter(|&h| idle || self.heads[h as usize].since + self.stripe_delay <= now)
            .collect();
        for h in due {
            self.start_rmw(now, h);
        }
        while self.gathering.len() > self.stripe_cache {
            let oldest = *self
                .gathering
                .values()
                .min_by_key(|&&h| (self.heads[h as usize].since, self.heads[h as usize].stripe))
                .expect("non-empty");
            self.start_rmw(now, oldest);
        }
    }

    fn flush_at(&self) -> Ns {
        self.gathering
            .values()
            .map(|&h| self.heads[h as usize].since.saturating_add(self.stripe_delay))
            .min()
            .unwrap_or(NEVER)
    }
}

impl Device for Raid5 {
    fn queue_depth(&self) -> u32 {
        self.depth
    }

    fn in_flight(&self) -> u32 {
        self.reqs.inside()
    }

    fn dispatch(&mut self, now: Ns, rq: DevRequest) {
        let slot = self.reqs.enter(now, rq.id, 0);
        let start = rq.sector * 512;
        let end = start + rq.bytes.max(1);
        let data = (self.n - 1) * self.chunk;
        match rq.op {
            // md_flush_request: every member flushes; partial stripes belong to writes not yet
            // completed, which a flush does not cover.
            Op::Flush => {
                for m in 0..self.members.len() {
                    self.reqs.add_piece(slot);
                    self.member_op(now, Owner::Read(slot), m, Op::Flush, 0, 0);
                }
            }
            Op::Read => {
                let mut b = start;
                while b < end {
                    let len = (end - b).min(self.chunk - b % self.chunk);
                    let (_, m, mb) = self.map(b);
                    self.reqs.add_piece(slot);
                    self.member_op(now, Owner::Read(slot), m, Op::Read, mb, len);
                    b += len;
                }
            }
            Op::Write => {
                let mut b = start;
                while b < end {
                    let s = b / data;
                    let stripe_end = ((s + 1) * data).min(end);
                    let h = self.head_for(now, s);
                    let first = (b - s * data) / PAGE;
                    let last = (stripe_end - s * data).div_ceil(PAGE);
                    for p in first..last {
                        self.heads[h as usize].covered[(p / 64) as usize] |= 1 << (p % 64);
                    }
                    self.heads[h as usize].waiters.push(slot);
                    self.reqs.add_piece(slot);
                    if self.is_full(h) {
                        self.write_full(now, h);
                    }
                    b = stripe_end;
                }
            }
        }
        self.flush_partial(now, false);
    }

    fn next_event(&self) -> Option<Ns> {
        let t = self.next.iter().copied().min().unwrap_or(NEVER).min(self.flush_at());
        (t != NEVER).then_some(t)
    }

    fn advance(&mut self, now: Ns, done: &mut Vec<u32>) {
        while let Some((t, m)) = first_due(&self.next, now) {
            let mut parts = std::mem::take(&mut self.part_done);
            parts.clear();
            self.members[m].advance(t, &mut parts);
            for &id in &parts {
                self.free_ops.push(id);
                match self.ops[id as usize] {
                    Owner::Read(slot) => self.reqs.piece_done(slot, t, done),
                    Owner::Stripe(h) => {
                        let head = &mut self.heads[h as usize];
                        head.parts -= 1;
                        if head.parts > 0 {
                            continue;
                        }
                        match head.phase {
                            Phase::Reading => self.rmw_write(t, h),
                            _ => {
                                let waiters = std::mem::take(&mut self.heads[h as usize].waiters);
                                for slot in waiters {
                                    self.reqs.piece_done(slot, t, done);
                                }
                                self.heads[h as usize].free = true;
                                self.free_heads.push(h);
                            }
                        }
                    }
                }
            }
            self.part_done = parts;
            // Only the member that completed has room again: the others' new parts (an
            // RMW's writes) were dispatched or queued by `submit`, which set their next event.
            self.next[m] = refill(self.members[m].as_mut(), &mut self.pending[m], t).unwrap_or(NEVER);
        }
        self.flush_partial(now, true);
        for mm in 0..self.members.len() {
            self.next[mm] = self.members[mm].next_event().unwrap_or(NEVER);
        }
    }

    fn busy_ns(&self, now: Ns) -> Ns {
        self.reqs.busy_ns(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DeviceModelConfig, HddParams};
    use crate::drivers::testkit::mixed_trace;
    use crate::units::KIB;

    fn array(members: u32, delay: Ns) -> Raid5 {
        let p = Raid5Params {
            members,
            chunk: 64 * KIB,
            stripe_cache: 256,
            stripe_delay: delay,
            member: Box::new(DeviceModelConfig::Hdd(HddParams {
                write_cache: false,
                ..HddParams::default()
            })),
        };
        Raid5::new(&p, 4 * 1_000_000_000_000, RngStream::new(1, "test/raid5"))
    }

    fn drain(d: &mut Raid5, done: &mut Vec<u32>) -> Ns {
        let mut t = 0;
        while let Some(next) = d.next_event() {
            t = next;
            d.advance(t, done);
        }
        t
    }

    fn write(id: u32, byte: u64, bytes: u64) -> DevRequest {
        DevRequest {
            id,
            op: Op::Write,
            sector: byte / 512,
            bytes,
            segments: bytes.div_ceil(4096) as u32,
            sync: false,
            fua: false,
            prio: Default::default(),
        }
    }

    #[test]
    fn left_symmetric_layout() {
        let d = array(4, 3_000_000);
        // Stripe 0: parity on member 3, data on 0, 1, 2; stripe 1: parity on 2, data 3, 0, 1.
        assert_eq!(d.parity_member(0), 3);
        assert_eq!((d.data_member(0, 0), d.data_member(0, 1), d.data_member(0, 2)), (0, 1, 2));
        assert_eq!(d.parity_member(1), 2);
        assert_eq!((d.data_member(1, 0), d.data_member(1, 1), d.data_member(1, 2)), (3, 0, 1));
        assert_eq!(d.parity_member(4), 3);
        // Array byte 3 chunks in is stripe 1's first data chunk, on member 3 at 64 KiB.
        assert_eq!(d.map(3 * 64 * KIB + 4096), (1, 3, 64 * KIB + 4096));
    }

    #[test]
    fn full_stripe_writes_need_no_reads_and_partial_ones_do() {
        // A whole stripe in one request: one full-stripe write.
        let mut d = array(4, 3_000_000);
        d.dispatch(0, write(1, 0, 192 * KIB));
        let mut done = Vec::new();
        let t_full = drain(&mut d, &mut done);
        assert_eq!(done, vec![1]);
        assert_eq!((d.full_stripes, d.rmw_stripes), (1, 0));
        // 64 KiB alone: read-modify-write (read data + parity, then write both).
        let mut d = array(4, 3_000_000);
        d.dispatch(0, write(2, 0, 64 * KIB));
        let mut done = Vec::new();
        let t_rmw = drain(&mut d, &mut done);
        assert_eq!(done, vec![2]);
        assert_eq!((d.full_stripes, d.rmw_stripes), (0, 1));
        assert!(t_rmw > t_full, "RMW {t_rmw} ns vs full stripe {t_full} ns");
    }

    #[test]
    fn the_cache_gathers_sequential_requests_into_full_stripes() {
        // Three 64 KiB requests back to back fill stripe 0 before its delay runs out.
        let mut d = array(4, 3_000_000);
        for i in 0..3u32 {
            d.dispatch(0, write(i, i as u64 * 64 * KIB, 64 * KIB));
        }
        let mut done = Vec::new();
        drain(&mut d, &mut done);
        done.sort();
        assert_eq!(done, vec![0, 1, 2]);
        assert_eq!((d.full_stripes, d.rmw_stripes), (1, 0));
        // Sequential 128 KiB requests over many stripes: all full but the last partial one.
        let mut d = array(4, 3_000_000);
        let n = 31u32;
        for i in 0..n {
            d.dispatch(0, write(i, i as u64 * 128 * KIB, 128 * KIB));
        }
        let mut done = Vec::new();
        drain(&mut d, &mut done);
        assert_eq!(done.len(), n as usize);
        assert_eq!(d.full_stripes, (n as u64 * 128) / 192);
        assert_eq!(d.rmw_stripes, 1);
        assert_eq!(d.in_flight(), 0);
    }

    #[test]
    fn a_stripe_left_alone_is_written_after_the_delay() {
        let mut d = array(3, 5_000_000);
        // Keep a member busy with a read so the stripe is not flushed for idleness.
        d.dispatch(
            0,
            DevRequest {
                id: 9,
                op: Op::Read,
                sector: (1 << 30) / 512,
                bytes: 64 * KIB,
                segments: (64 * KIB).div_ceil(4096) as u32,
                sync: false,
                fua: false,
                prio: Default::default(),
            },
        );
        d.dispatch(0, write(1, 0, 4096));
        assert_eq!(d.rmw_stripes, 0, "gathering");
        let mut done = Vec::new();
        drain(&mut d, &mut done);
        done.sort();
        assert_eq!(done, vec![1, 9]);
        assert_eq!(d.rmw_stripes, 1);
    }

    #[test]
    fn reads_map_to_data_chunks_and_runs_are_deterministic() {
        let run = || {
            let mut d = array(5, 2_000_000);
            let mut r = RngStream::new(7, "mix");
            mixed_trace(&mut d, &mut r, 300, 8, 1 << 24, 64)
        };
        assert_eq!(run(), run());
    }
}
