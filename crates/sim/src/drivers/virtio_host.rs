//! The disk a loop device's backing file lives on, as a virtual machine's guest sees it: a
//! virtio-blk disk (this lab's `vda`) whose host serves one request after another.
//!
//! # What the guest and host do
//!
//! The guest queues the backing I/O in the disk's elevator (`vda` runs mq-deadline) and
//! `virtio_queue_rq` hands requests to the virtqueue while its ring has room: without
//! `VIRTIO_RING_F_INDIRECT_DESC` a request takes one descriptor per data segment plus two (its
//! header and status), and the ring has 256. A segment is a physically contiguous run of the
//! request's memory (`max_segment_size` is unlimited here): a page of an O_DIRECT user buffer,
//! a folio of the page cache — so a loop's writeback of 1 MiB folios (ext4 on 6.16+) sends
//! 1.25 MiB requests of a few descriptors, and a 6.18 trace showed 75 of them in flight. A request that does not fit is put back
//! (`BLK_STS_DEV_RESOURCE`) and goes first once a completion frees descriptors; until then
//! mq-deadline holds the others and picks the next by its batch, direction and FIFO rules, so a
//! read waits for the writes already in the ring, not for those still queued in the guest.
//! The host takes the ring's requests in order and serves them one at a time from its page
//! cache; reads and writes share that one server.
//!
//! Measured on `vda` (fio O_DIRECT, `validation/measured/vda-host/`): a 64 KiB reader at queue
//! depth 1 beside 32 outstanding writes waited behind 13–14 of 64 KiB (the ring's 256 / 18
//! descriptors; `/sys/block/vda/inflight` showed 13–14 writes in flight), all 32 of 4 KiB
//! (3 descriptors each), and one at a time of 1 MiB, with mq-deadline's write batches
//! (`fifo_batch` 16) in between.
//!
//! # The model
//!
//! Backing I/Os arrive at the time the loop submits them, with the loop request's segments,
//! and wait in an [`MqDeadline`] with its defaults; the ring admits them, the held one first,
//! while their descriptors ([`descriptors`]) fit. The host serves admitted requests in
//! admission order, each taking `request_cost`, its direction's cost per segment and its
//! transfer at its direction's bandwidth; a request then completes after
//! the notification's round trip (`latency`, drawn per request, plus the store's wake-up when
//! the ring had been empty, [`idle_exit`]) and holds its descriptors until then. A flush goes to
//! the head of the dispatch list (it bypasses the elevator, as blk-flush inserts it) and costs
//! the host what the caller says. The host file system's own writes (an fsync of the image
//! writing its inode, [`HOST_META_ID`]) queue in the elevator like the loop's, behind them.
//!
//! Simplified: adjacent folios are never contiguous, a request larger than the ring takes the
//! whole ring (the block layer would split it at `max_segments` into pieces that each do), no
//! merging in the guest's elevator, the host's service is a fixed rate, not its own page cache
//! and disk, and it signals each completion as it ends (the 6.18 trace shows a burst's
//! completions arriving together).

use super::loopdev::idle_exit;
use super::{xfer, Op};
use crate::block::sched::mq_deadline::MqDeadline;
use crate::block::sched::{Elevator, ElvRq};
use crate::config::DeadlineTunables;
use crate::engine::RngStream;
use crate::Ns;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The id of the host file system's own metadata write (the image file's inode or extent
/// block, written by its fsync): never a loop request's, which are pool indices or the flush's.
pub const HOST_META_ID: u32 = u32::MAX - 1;

/// The elevator's id for a backing I/O: the loop's ids shifted by one, 0 for the host's own
/// metadata write, so that the elevator's per-id tables stay small.
fn elv_id(id: u32) -> u32 {
    if id == HOST_META_ID {
        0
    } else {
        id + 1
    }
}

/// The descriptors a request of `segments` data segments takes in a ring of `ring` without
/// indirect descriptors: one per segment plus the header's and the status's, at most the
/// whole ring.
pub fn descriptors(segments: u32, ring: u32) -> u32 {
    (segments.max(1) + 2).min(ring.max(1))
}

/// How the host serves the guest's requests.
#[derive(Clone, Debug)]
pub struct HostParams {
    /// Transfer rate of reads and writes, bytes/s.
    pub read_bandwidth: u64,
    pub write_bandwidth: u64,
    /// The host's serial work per request on top of its transfer, ns.
    pub request_cost: Ns,
    /// And per data segment (descriptor) of a read or write, ns.
    pub read_segment_cost: Ns,
    pub write_segment_cost: Ns,
    /// Median of a request's round trip after its service (notification, interrupt), ns.
    pub latency: Ns,
    /// Its 99th percentile above the median, ns (log-logistic; 0: none).
    pub latency_spread: Ns,
    /// Wake-up of a store found idle, reads and writes, ns (see [`idle_exit`]).
    pub read_idle_exit: Ns,
    pub write_idle_exit: Ns,
    pub idle_time: Ns,
    /// Descriptors of the virtqueue's ring.
    pub ring: u32,
}

/// A backing I/O on its way: the loop request it serves, its operation, place and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Io {
    id: u32,
    op: Op,
    sector: u64,
    bytes: u64,
    /// Its data segments (descriptors less the header's and status's).
    segments: u32,
    /// What a flush costs the host (its fsync of the disk's image), ns.
    flush_cost: Ns,
}

/// The virtio disk: the guest's elevator, the ring and the host's server.
pub struct HostDisk {
    p: HostParams,
    /// Backing I/Os submitted for a later time: (time, sequence, I/O).
    arriving: BinaryHeap<Reverse<(Ns, u64, Io)>>,
    /// What waits in the guest's queue (`vda`'s mq-deadline), by id.
    elevator: MqDeadline,
    waiting: Vec<Option<Io>>,
    /// The request the ring refused last, which goes first.
    held: Option<Io>,
    /// Flushes, which bypass the elevator to the head of the dispatch list (blk-flush).
    front: VecDeque<Io>,
    /// Descriptors in use.
    ring_used: u32,
    /// When the host's server is free.
    server_free: Ns,
    /// Admitted I/Os by the host's completion: (time, sequence, I/O, descriptors).
    served: BinaryHeap<Reverse<(Ns, u64, Io, u32)>>,
    /// The latest completion so far, or a flush's end: after it the store rests.
    quiet_from: Ns,
    seq: u64,
    rng: RngStream,
}

impl HostDisk {
    pub fn new(p: HostParams, rng: RngStream) -> Self {
        let ring = p.ring.max(1);
        HostDisk {
            p: HostParams { ring, ..p },
            arriving: BinaryHeap::new(),
            elevator: MqDeadline::new(&DeadlineTunables::default(), 256, true),
            waiting: Vec::new(),
            held: None,
            front: VecDeque::new(),
            ring_used: 0,
            server_free: 0,
            served: BinaryHeap::new(),
            quiet_from: 0,
            seq: 0,
            rng,
        }
    }

    /// Queue a backing I/O for loop request `id` (or the host's metadata write,
    /// [`HOST_META_ID`]), submitted at `at`.
    pub fn submit(&mut self, at: Ns, id: u32, op: Op, sector: u64, bytes: u64, segments: u32) {
        self.seq += 1;
        let io = Io {
            id,
            op,
            sector,
            bytes,
            segments,
            flush_cost: 0,
        };
        self.arriving.push(Reverse((at, self.seq, io)));
    }

    /// Queue a cache flush for loop request `id`, submitted at `at`, that costs the host
    /// `cost` ns once it is served: it goes ahead of what waits in the elevator and behind
    /// what the ring already holds, so it waits for the writes the host has, not for those
    /// the guest still queues (block-layer flushes cover completed writes only).
    pub fn submit_flush(&mut self, at: Ns, id: u32, cost: Ns) {
        self.seq += 1;
        let io = Io {
            id,
            op: Op::Flush,
            sector: 0,
            bytes: 0,
            segments: 0,
            flush_cost: cost,
        };
        self.arriving.push(Reverse((at, self.seq, io)));
    }

    /// Time of the next arrival or completion.
    pub fn next_event(&self) -> Option<Ns> {
        let a = self.arriving.peek().map(|r| r.0 .0);
        let d = self.served.peek().map(|r| r.0 .0);
        match (a, d) {
            (Some(a), Some(d)) => Some(a.min(d)),
            (a, d) => a.or(d),
        }
    }

    /// Process the next event if it is due by `now`: its time and, for a completion, the loop
    /// request and its operation. `None` when nothing is due.
    pub fn step(&mut self, now: Ns) -> Option<(Ns, Option<(u32, Op)>)> {
        let t = self.next_event().filter(|&t| t <= now)?;
        let out = if self.served.peek().is_some_and(|r| r.0 .0 == t) {
            // The host is done with it: its descriptors go back to the ring.
            let Reverse((_, _, io, desc)) = self.served.pop().expect("peeked");
            self.ring_used -= desc;
            if io.op != Op::Flush {
                self.elevator.completed(t, elv_id(io.id));
            }
            Some((io.id, io.op))
        } else {
            let Reverse((_, _, io)) = self.arriving.pop().expect("peeked");
            if io.op == Op::Flush {
                self.front.push_back(io);
            } else {
                let slot = elv_id(io.id);
                if self.waiting.len() <= slot as usize {
                    self.waiting.resize(slot as usize + 1, None);
                }
                self.waiting[slot as usize] = Some(io);
                self.elevator.insert(
                    t,
                    ElvRq {
                        id: slot,
                        op: io.op,
                        sector: io.sector,
                        nr_sectors: io.bytes.div_ceil(512).max(1),
                        sync: true,
                        owner: 0,
                        prio: Default::default(),
                        blkcg: None,
                    },
                );
            }
            None
        };
        self.admit(t);
        Some((t, out))
    }

    /// `blk_mq_run_hw_queue` → `virtio_queue_rq`: admit requests while their descriptors fit.
    fn admit(&mut self, now: Ns) {
        loop {
            let io = match self.held.take().or_else(|| self.front.pop_front()) {
                Some(io) => io,
                None => match self.elevator.dispatch(now) {
                    Some(rq) => self.waiting[rq.id as usize].take().expect("a queued backing I/O"),
                    None => return,
                },
            };
            // A flush is a header and a status, no data.
            let desc = if io.op == Op::Flush {
                2.min(self.p.ring)
            } else {
                descriptors(io.segments, self.p.ring)
            };
            if self.ring_used + desc > self.p.ring {
                self.held = Some(io);
                return;
            }
            let rested = self.ring_used == 0;
            self.ring_used += desc;
            let at = if io.op == Op::Flush {
                // The host's fsync of the image, measured whole (issue to completion).
                self.server_free = self.server_free.max(now) + io.flush_cost;
                self.server_free
            } else {
                let (rate, per_segment, exit) = if io.op == Op::Write {
                    (self.p.write_bandwidth, self.p.write_segment_cost, self.p.write_idle_exit)
                } else {
                    (self.p.read_bandwidth, self.p.read_segment_cost, self.p.read_idle_exit)
                };
                let wake = if rested {
                    idle_exit(now.saturating_sub(self.quiet_from), exit, self.p.idle_time)
                } else {
                    0
                };
                let work = self.p.request_cost + Ns::from(io.segments) * per_segment + xfer(io.bytes, rate);
                self.server_free = self.server_free.max(now) + work;
                let p99 = self.p.latency + self.p.latency_spread;
                self.server_free + wake + self.rng.log_logistic(self.p.latency, p99)
            };
            self.quiet_from = self.quiet_from.max(at);
            self.seq += 1;
            self.served.push(Reverse((at, self.seq, io, desc)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MIB;

    fn params() -> HostParams {
        HostParams {
            read_bandwidth: 1000 * MIB,
            write_bandwidth: 2000 * MIB,
            request_cost: 10_000,
            read_segment_cost: 0,
            write_segment_cost: 0,
            latency: 50_000,
            latency_spread: 0,
            read_idle_exit: 0,
            write_idle_exit: 0,
            idle_time: 3_000_000,
            ring: 256,
        }
    }

    /// Completion time of a 64 KiB read submitted at `at` beside 32 writes of `wbytes`
    /// submitted at 0, each write resubmitted as it completes (fio's queue depth 32).
    fn read_beside_writes(wbytes: u64) -> Ns {
        let mut d = HostDisk::new(params(), RngStream::of_chance(false, 1, "test/host"));
        for i in 0..32 {
            d.submit(0, i, Op::Write, u64::from(i) * 4096, wbytes, wbytes.div_ceil(4096) as u32);
        }
        let at = 5_000_000;
        d.submit(at, 1000, Op::Read, 1 << 30, 64 << 10, 16);
        let mut next = 32;
        while let Some((t, out)) = d.step(u64::MAX) {
            match out {
                Some((1000, _)) => return t - at,
                Some((_, Op::Write)) => {
                    d.submit(t, next, Op::Write, u64::from(next) * 4096, wbytes, wbytes.div_ceil(4096) as u32);
                    next = (next + 1) % 900;
                }
                _ => {}
            }
        }
        unreachable!("the read completes")
    }

    #[test]
    fn a_read_waits_for_the_writes_in_the_ring_not_those_queued_in_the_guest() {
        let alone = {
            let mut d = HostDisk::new(params(), RngStream::of_chance(false, 1, "test/host"));
            d.submit(0, 0, Op::Read, 0, 64 << 10, 16);
            (0..3).filter_map(|_| d.step(u64::MAX)).last().unwrap().0
        };
        let each = |bytes: u64| 10_000 + xfer(bytes, 2000 * MIB);
        // 4 KiB writes: 3 descriptors each, all 32 fit: the read waits for every one of them.
        let small = read_beside_writes(4096);
        assert!(small > alone + 25 * each(4096), "{small} vs alone {alone}");
        // 64 KiB writes: 18 descriptors, 14 fit: it waits for those and for the rest of the
        // write batch mq-deadline is in (fifo_batch 16), not for all 32 (measured on vda: 26).
        let mid = read_beside_writes(64 << 10);
        assert!(mid > alone + 14 * each(64 << 10), "{mid}");
        assert!(mid <= alone + 30 * each(64 << 10), "{mid}");
        // 1 MiB writes fill the ring one at a time: the read goes before the queued ones
        // unless a write batch holds it (fifo_batch), never behind all 32.
        let big = read_beside_writes(MIB);
        assert!(big < alone + 17 * (each(MIB) + 50_000), "{big}");
    }

    /// Completion time of a 4 KiB write at sector 0 submitted at 5 ms beside a writeback sweep:
    /// 32 writes of 1 MiB in `segments` segments each at ascending sectors, each replaced by the
    /// next one up as it completes.
    fn small_write_beside_a_sweep(segments: u32) -> Ns {
        let mut d = HostDisk::new(params(), RngStream::of_chance(false, 1, "test/host"));
        let sector = |i: u32| (1 << 20) + u64::from(i) * 2048;
        for i in 0..32 {
            d.submit(0, i, Op::Write, sector(i), MIB, segments);
        }
        let at = 5_000_000;
        d.submit(at, 1000, Op::Write, 0, 4096, 1);
        let mut next = 32;
        while let Some((t, out)) = d.step(u64::MAX) {
            match out {
                Some((1000, _)) => return t - at,
                Some((id, Op::Write)) => {
                    // The completed write's id is free again; the sweep goes on upwards.
                    d.submit(t, id, Op::Write, sector(next), MIB, segments);
                    next += 1;
                }
                _ => {}
            }
        }
        unreachable!("the small write completes")
    }

    #[test]
    fn large_folios_let_a_small_write_past_a_writeback_sweep() {
        let each = 10_000 + xfer(MIB, 2000 * MIB);
        // Scattered 4 KiB pages: a 1 MiB write takes the whole ring, the rest wait in
        // mq-deadline, which keeps going up the sweep while there are higher sectors: the
        // small write below it waits for its FIFO deadline (write_expire, 5 s).
        let scattered = small_write_beside_a_sweep(256);
        assert!(scattered > 4_000_000_000, "{scattered} ns");
        // One folio each: all 32 are in the ring (3 descriptors each), so the small write
        // goes into the ring at once and waits only for those ahead of it in the host.
        let folios = small_write_beside_a_sweep(1);
        assert!(folios <= 33 * each + 100_000, "{folios} ns");
        assert!(folios >= 20 * each, "it still waits for the host's queue: {folios} ns");
    }

    #[test]
    fn a_request_larger_than_the_ring_still_goes() {
        assert_eq!(descriptors(2048, 256), 256);
        let mut d = HostDisk::new(params(), RngStream::of_chance(false, 1, "test/host"));
        d.submit(0, 0, Op::Write, 0, 8 * MIB, 2048);
        d.submit(0, 1, Op::Write, 1 << 20, 8 * MIB, 2048);
        let mut done = 0;
        while let Some((_, out)) = d.step(u64::MAX) {
            done += u32::from(out.is_some());
        }
        assert_eq!(done, 2, "both complete, one after the other");
    }
}
