//! md RAID0: `members` devices of one model, striped in chunks.
//!
//! # What the kernel does (6.18, `drivers/md/raid0.c`)
//!
//! `raid0_set_limits` gives the array's queue `max_hw_sectors` = `chunk_sectors` (bios are also
//! split at chunk boundaries: `lim.chunk_sectors`), `io_min` = the chunk and `io_opt` = chunk ×
//! `raid_disks`, so read-ahead is two full stripes; the members' limits stack underneath
//! (rotational and write cache are inherited). md is bio-based: no elevator, no tags, no
//! blk-wbt of its own. `raid0_make_request` maps each piece of a bio to its zone and member
//! (`map_sector`) and submits it to the member's queue, where the member's tags, elevator and
//! wbt apply; the md bio completes when all its pieces have (`bio_chain`). The array has one
//! bdi, so one wb and one flusher for all members.
//!
//! # The model ([`Raid0Params`])
//!
//! | field | meaning |
//! |---|---|
//! | `members` | member devices (`raid_disks`), all of `member`'s model and parameters |
//! | `chunk` | stripe unit: chunk `k` of the array is chunk `k / members` of member `k % members` |
//! | `member` | the members' model (`hdd`, `ssd` or `usb`) with its parameters |
//!
//! The array's capacity is split evenly: each member has `size / members` bytes (whole
//! chunks). One zone: members of equal size, as the defaults and every scenario here make them.
//!
//! A request is cut at chunk boundaries; the pieces for one member are contiguous on it
//! (chunks `k` and `k + members` of the array are neighbours on their member), so each member
//! receives at most one part per request, which is what the member's plug merging would build
//! from md's chunk-sized bios. A part goes to its member at once if the member has a free slot,
//! else it waits in the member's FIFO (the member's queue). The request completes when its last
//! part has. The array's queue depth is the sum of the members' (md has no tags; the members'
//! queues are what bounds it).
//!
//! Events: each member's next event time is cached; `advance` runs members in time order
//! (ties in member order), so completion order is exact and deterministic. Member devices draw
//! their random streams from seeds the array's stream gives them.
//!
//! # Simplifications
//!
//! - The members' own elevators, blk-wbt and tag waits are not modelled: parts wait FIFO for a
//!   member slot. The array's queue (no elevator, no wbt, as md's) is the only block layer.
//! - Utilisation is the array's: time with at least one request inside.
//! - No zones of unequal members, no discard/flush handling, no far/offset layouts (those are
//!   raid10).

use super::model::{DeviceModel, Naming, MAX_MEMBERS};
use super::ssd::SsdParams;
use super::DeviceModelConfig;
use super::{build_model, refill, submit_part, ArraySlots, DevRequest, Device, MemberClock, Op};
use crate::config::default_queue;
use crate::config::{CfqTunables, DeadlineTunables, Knob, KnobKind, QueueConfig, SchedulerKind};
use crate::engine::RngStream;
use crate::knob;
use crate::Ns;
use serde::Serialize;
use std::collections::VecDeque;

/// md RAID0 (`drivers/raid0.rs`): `members` devices of one model, striped in `chunk`s.
/// Defaults: two default SSDs, mdadm's default 512 KiB chunk.
#[derive(Clone, Debug, Serialize)]
pub struct Raid0Params {
    /// Member devices (`raid_disks`).
    pub members: u32,
    /// Chunk size, bytes (`chunk_sectors` × 512).
    pub chunk: u64,
    /// The model of every member, with its parameters.
    pub member: Box<DeviceModelConfig>,
}

impl Default for Raid0Params {
    fn default() -> Self {
        Raid0Params {
            members: 2,
            chunk: 512 * 1024,
            member: Box::new(DeviceModelConfig::Ssd(SsdParams::default())),
        }
    }
}

/// The queue of an md raid0 array (`raid0_set_limits`, 6.18): a bio-based device, so no
/// elevator and no blk-wbt; `max_hw_sectors` = the chunk (and no more than the members'
/// limit: the limits stack), `io_opt` = chunk × members, hence read-ahead 2 × io_opt
/// (`blk_apply_bdi_limits`); rotational and write cache inherited from the members. md has no
/// tags: the members' queues bound what is in flight, modelled as `nr_requests` = the sum of
/// the members' queue depths.
pub(crate) fn raid0_queue(p: &Raid0Params) -> QueueConfig {
    let member = default_queue(&p.member);
    let chunk_kb = (p.chunk / 1024).min(u64::from(u32::MAX)) as u32;
    let io_opt_kb = u64::from(chunk_kb) * u64::from(p.members);
    QueueConfig {
        scheduler: SchedulerKind::NONE,
        nr_requests: p.members.saturating_mul(p.member.queue_depth()).max(1),
        max_sectors_kb: chunk_kb.min(member.max_sectors_kb).max(4),
        wbt_lat_usec: 0,
        read_ahead_kb: (2 * io_opt_kb).clamp(128, u64::from(i32::MAX as u32)) as u32,
        nomerges: 0,
        rotational: member.rotational,
        write_cache: member.write_cache,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
        tunables: Default::default(),
    }
}

impl DeviceModel for Raid0Params {
    const KIND: &'static str = "raid0";
    const SUMMARY: &'static str = "md raid0 striping over members of one model";
    const NAMING: Naming = Naming::Indexed { prefix: "md", major: 9 };

    fn knobs() -> &'static [Knob<Self>] {
        &RAID0_KNOBS
    }

    /// The members' default capacity, times their number.
    fn default_size(&self) -> u64 {
        self.member.default_size().saturating_mul(u64::from(self.members))
    }

    /// One chunk per member at least.
    fn min_size(&self) -> u64 {
        self.chunk.saturating_mul(u64::from(self.members)).max(crate::units::MIB)
    }

    fn default_queue(&self) -> QueueConfig {
        raid0_queue(self)
    }

    fn queue_depth(&self) -> u32 {
        self.members.saturating_mul(self.member.queue_depth())
    }

    fn has_write_cache(&self) -> bool {
        self.member.has_write_cache()
    }

    /// The chunk, or the members' limit if lower (the limits stack).
    fn max_hw_sectors_kb(&self) -> Option<u32> {
        let chunk = (self.chunk / 1024).min(u64::from(u32::MAX)) as u32;
        Some(self.member.max_hw_sectors_kb().map_or(chunk, |m| m.min(chunk)))
    }

    /// md is bio-based: no elevator.
    fn has_elevator(&self) -> bool {
        false
    }

    fn member(&self) -> Option<&DeviceModelConfig> {
        Some(&self.member)
    }

    fn member_mut(&mut self) -> Option<&mut DeviceModelConfig> {
        Some(&mut self.member)
    }

    fn build(&self, size: u64, rng: RngStream) -> Box<dyn Device> {
        Box::new(Raid0::new(self, size, rng))
    }

    fn stripes(&self) -> u64 {
        u64::from(self.members.max(1))
    }

    fn write_cache_bytes(&self) -> u64 {
        self.member.write_cache_bytes() * u64::from(self.members)
    }
}

static RAID0_KNOBS: [Knob<Raid0Params>; 2] = [
    knob!(Raid0Params, "members", KnobKind::Count { min: 1, max: MAX_MEMBERS }, "member devices, raid_disks", members: u32),
    knob!(Raid0Params, "chunk", KnobKind::Size { min: 4096, max: 256 << 20, pages: true }, "md chunk: whole pages, 4 KiB to 256 MiB; mdadm's default 512KiB", chunk: u64),
];

/// No event.
const NEVER: Ns = Ns::MAX;

pub struct Raid0 {
    members: Vec<Box<dyn Device>>,
    /// Each member's next event time (NEVER if none).
    next: MemberClock,
    /// Parts waiting for a slot in their member.
    pending: Vec<VecDeque<DevRequest>>,
    /// Requests inside, by slot: (request id, parts not yet completed). A part's id on its
    /// member is its request's slot.
    reqs: ArraySlots,
    /// Scratch of `dispatch`: the part being built for each member, (first byte, bytes).
    parts: Vec<(u64, u64)>,
    touched: Vec<usize>,
    /// Scratch of `advance`: part completions of one member step.
    part_done: Vec<u32>,
    chunk: u64,
    depth: u32,
}

impl Raid0 {
    pub fn new(p: &Raid0Params, size: u64, mut rng: RngStream) -> Self {
        let n = p.members.max(1) as usize;
        let chunk = p.chunk.max(4096);
        let member_size = (size / n as u64 / chunk * chunk).max(chunk);
        let members: Vec<Box<dyn Device>> = (0..n)
            .map(|i| build_model(&p.member, member_size, RngStream::new(rng.next_u64(), &format!("member{i}"))))
            .collect();
        let depth = members.iter().map(|m| m.queue_depth()).sum::<u32>().max(1);
        let per_member = members.iter().map(|m| m.queue_depth() as usize).max().unwrap_or(1);
        Raid0 {
            next: MemberClock::new(n),
            pending: (0..n).map(|_| VecDeque::with_capacity(per_member)).collect(),
            reqs: ArraySlots::with_capacity(depth as usize),
            parts: vec![(0, 0); n],
            touched: Vec::with_capacity(n),
            part_done: Vec::with_capacity(per_member),
            members,
            chunk,
            depth,
        }
    }

    /// Number of member devices.
    pub fn members(&self) -> usize {
        self.members.len()
    }

    /// Requests inside member `m` (for tests).
    pub fn member_in_flight(&self, m: usize) -> u32 {
        self.members[m].in_flight()
    }

    /// Where array byte `byte` lives: (member, byte on the member).
    pub fn map(&self, byte: u64) -> (usize, u64) {
        let n = self.members.len() as u64;
        let (k, off) = (byte / self.chunk, byte % self.chunk);
        ((k % n) as usize, (k / n) * self.chunk + off)
    }

    /// Give part `rq` to member `m` at `now`, or queue it there.
    fn submit(&mut self, now: Ns, m: usize, rq: DevRequest) {
        let mut t = self.next.get(m);
        submit_part(self.members[m].as_mut(), &mut self.pending[m], &mut t, now, rq);
        self.next.set(m, t);
    }
}

impl Device for Raid0 {
    fn queue_depth(&self) -> u32 {
        self.depth
    }

    fn in_flight(&self) -> u32 {
        self.reqs.inside()
    }

    fn dispatch(&mut self, now: Ns, rq: DevRequest) {
        if rq.op == Op::Flush {
            // md_flush_request: every member flushes; the array's flush completes with the last.
            let slot = self.reqs.enter(now, rq.id, self.members.len() as u32);
            for m in 0..self.members.len() {
                self.submit(now, m, DevRequest { id: slot, bytes: 0, ..rq });
            }
            return;
        }
        // Cut at chunk boundaries; a member's pieces are contiguous on it.
        let start = rq.sector * 512;
        let end = start + rq.bytes.max(1);
        let mut b = start;
        while b < end {
            let len = (end - b).min(self.chunk - b % self.chunk);
            let (m, mb) = self.map(b);
            let part = &mut self.parts[m];
            if part.1 == 0 {
                *part = (mb, 0);
                self.touched.push(m);
            }
            part.1 += len;
            b += len;
        }
        let slot = self.reqs.enter(now, rq.id, self.touched.len() as u32);
        for i in 0..self.touched.len() {
            let m = self.touched[i];
            let (byte, bytes) = std::mem::take(&mut self.parts[m]);
            let part = DevRequest {
                id: slot,
                op: rq.op,
                sector: byte / 512,
                bytes,
                // The whole's segments in proportion (at least one).
                segments: ((u64::from(rq.segments) * bytes).div_ceil(rq.bytes.max(1)) as u32).max(1),
                sync: rq.sync,
                fua: false,
                prio: Default::default(),
            };
            self.submit(now, m, part);
        }
        self.touched.clear();
    }

    fn next_event(&self) -> Option<Ns> {
        self.next.min()
    }

    fn advance(&mut self, now: Ns, done: &mut Vec<u32>) {
        // The member whose event comes first (the lowest index on a tie).
        while let Some((t, m)) = self.next.first_due(now) {
            let mut parts = std::mem::take(&mut self.part_done);
            parts.clear();
            self.members[m].advance(t, &mut parts);
            for &slot in &parts {
                self.reqs.piece_done(slot, t, done);
            }
            self.part_done = parts;
            // The member has room again: start its waiting parts.
            let next = refill(self.members[m].as_mut(), &mut self.pending[m], t).unwrap_or(NEVER);
            self.next.set(m, next);
        }
    }

    fn busy_ns(&self, now: Ns) -> Ns {
        self.reqs.busy_ns(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DeviceModelConfig, HddParams, SsdParams};
    use crate::drivers::testkit::{self, by_id, mb_s, mixed_trace, sequential};
    use crate::drivers::Op;
    use crate::units::{KIB, MIB};

    fn array(members: u32, member: DeviceModelConfig) -> Raid0 {
        let p = Raid0Params {
            members,
            chunk: 512 * KIB,
            member: Box::new(member),
        };
        let size = crate::config::default_size(&DeviceModelConfig::Raid0(p.clone()));
        Raid0::new(&p, size, RngStream::new(1, "test/raid0"))
    }

    fn ssd() -> DeviceModelConfig {
        DeviceModelConfig::Ssd(SsdParams {
            write_bandwidth: 170_000_000,
            read_bandwidth: 250_000_000,
            ..SsdParams::default()
        })
    }

    /// Closed loop keeping `qd` sequential requests inside; completion time by id.
    fn run(d: &mut dyn Device, qd: u32, n: usize, op: Op, bytes: u64) -> Vec<Ns> {
        by_id(&testkit::run(d, qd, n, sequential(op, bytes)))
            .into_iter()
            .map(|(_, at)| at)
            .collect()
    }

    #[test]
    fn aggregate_is_members_times_a_member() {
        let member = ssd();
        let single = {
            let mut d = crate::drivers::build_model(&member, 1_000_000_000_000, RngStream::new(1, "one"));
            let out = run(d.as_mut(), 8, 3000, Op::Write, 512 * KIB);
            mb_s(2000 * 512 * KIB, out[2999] - out[999])
        };
        assert!((single / 170.0 - 1.0).abs() < 0.02, "member {single:.0} MB/s");
        for n in [2u32, 4, 10] {
            let mut d = array(n, member.clone());
            assert_eq!(d.queue_depth(), 64 * n);
            let total = 3000 * n as usize;
            let out = run(&mut d, 8 * n, total, Op::Write, 512 * KIB);
            let agg = mb_s((total - total / 3) as u64 * 512 * KIB, out[total - 1] - out[total / 3 - 1]);
            assert!(
                (agg / (n as f64 * single) - 1.0).abs() < 0.03,
                "{n} members: {agg:.0} MB/s vs {single:.0} each"
            );
        }
    }

    #[test]
    fn requests_split_at_chunk_boundaries() {
        let mut d = array(4, ssd());
        assert_eq!(d.map(0), (0, 0));
        assert_eq!(d.map(512 * KIB), (1, 0));
        assert_eq!(d.map(4 * 512 * KIB + 4096), (0, 512 * KIB + 4096));
        // 512 KiB starting 128 KiB before a chunk boundary: two parts, on members 1 and 2.
        let rq = DevRequest {
            id: 7,
            op: Op::Write,
            sector: (2 * 512 * KIB - 128 * KIB) / 512,
            bytes: 512 * KIB,
            segments: 128,
            sync: false,
            fua: false,
            prio: Default::default(),
        };
        d.dispatch(0, rq);
        assert_eq!(d.in_flight(), 1);
        let inside: Vec<u32> = (0..4).map(|m| d.member_in_flight(m)).collect();
        assert_eq!(inside, vec![0, 1, 1, 0]);
        // It completes once, when both parts have.
        let mut done = Vec::new();
        let mut steps = 0;
        while d.in_flight() > 0 {
            let t = d.next_event().unwrap();
            d.advance(t, &mut done);
            steps += 1;
        }
        assert_eq!(done, vec![7]);
        assert!(steps >= 1);
        // A 4 MiB request over 4 members: one contiguous 1 MiB part each.
        let mut d = array(4, ssd());
        d.dispatch(
            0,
            DevRequest {
                id: 1,
                op: Op::Read,
                sector: 0,
                bytes: 4 * MIB,
                segments: 1024,
                sync: false,
                fua: false,
                prio: Default::default(),
            },
        );
        let inside: Vec<u32> = (0..4).map(|m| d.member_in_flight(m)).collect();
        assert_eq!(inside, vec![1, 1, 1, 1]);
    }

    #[test]
    fn a_full_member_queues_its_parts() {
        // Members of queue depth 1: a second request for the same member waits for the first.
        let member = DeviceModelConfig::Hdd(HddParams {
            queue_depth: 1,
            ..HddParams::default()
        });
        let mut d = array(2, member);
        assert_eq!(d.queue_depth(), 2);
        for (id, chunk) in [(0u32, 0u64), (1, 2)] {
            d.dispatch(
                0,
                DevRequest {
                    id,
                    op: Op::Read,
                    sector: chunk * 512 * KIB / 512,
                    bytes: 4096,
                    segments: 1,
                    sync: false,
                    fua: false,
                    prio: Default::default(),
                },
            );
        }
        assert_eq!((d.member_in_flight(0), d.member_in_flight(1)), (1, 0));
        let mut done = Vec::new();
        while d.in_flight() > 0 {
            let t = d.next_event().unwrap();
            d.advance(t, &mut done);
        }
        assert_eq!(done, vec![0, 1]);
        assert!(d.busy_ns(Ns::MAX / 2) > 0);
    }

    fn trace(seed: u64) -> Vec<Ns> {
        let mut d = array(3, DeviceModelConfig::Hdd(HddParams::default()));
        let mut r = RngStream::new(seed, "test/raid0/mix");
        mixed_trace(&mut d, &mut r, 600, 16, 1 << 30, 256)
    }

    #[test]
    fn deterministic_and_nothing_lost() {
        assert_eq!(trace(4), trace(4));
        assert_ne!(trace(4), trace(5));
    }
}
