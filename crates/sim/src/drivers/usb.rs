//! USB 2.0 flash key behind `usb-storage`: one command at a time, slow flash programming, and
//! erase-block garbage collection that makes small scattered writes very slow.
//!
//! # Parameters ([`UsbParams`]) and where the defaults come from
//!
//! The defaults describe the cheap 8 GB USB 2.0 key of 2011 (Wu Fengguang's "UKEY" in the
//! IO-less throttling tests, `1UKEY+1HDD-3G`): ~9 MB/s sequential writes, ~25 MB/s reads
//! (the flash, under the ~35 MB/s the USB 2.0 bulk pipe carries), 4 MiB erase blocks of which
//! the controller keeps two open (Arnd Bergmann's flashbench survey of 2011 keys and SD cards:
//! 4 MiB allocation units, 1 to 5 open), about 1 ms per command.
//!
//! | field | meaning in the model |
//! |---|---|
//! | `read_bandwidth` | transfer rate of reads |
//! | `write_bandwidth` | rate the key programs flash: appends, and the copies garbage collection makes |
//! | `command_overhead` | fixed time of each command (bulk-only transport: command block wrapper, data phase set-up, status wrapper; the FTL lookup) |
//! | `erase_block` | the flash erase block (allocation unit): the unit of garbage collection |
//! | `open_blocks` | erase blocks the controller appends to at once before it must close one |
//! | `queue_depth` | commands the device takes at once: 1 (`usb-storage`'s `can_queue`; UAS devices queue more) |
//!
//! # The model
//!
//! Commands are served one at a time, in dispatch order (bulk-only transport has no command
//! queueing; with `queue_depth` > 1 the device still serves FIFO). A read takes
//! `command_overhead + bytes / read_bandwidth`. A write takes `command_overhead` plus the time to
//! program the bytes it costs at `write_bandwidth`, where the cost follows the controller's
//! erase-block bookkeeping (a "linear" allocation unit FTL):
//!
//! - the controller keeps up to `open_blocks` erase blocks open, each filled from its start up
//!   to a fill point, least recently written first;
//! - a write at an open block's fill point appends: it costs its own bytes. A write past the
//!   fill point first copies the old data of the gap;
//! - a write to a block that is not open opens it: the old data before the write's offset is
//!   copied into the new block; if `open_blocks` are already open, the least recently written
//!   one is closed first, which copies its old data from the fill point to the block's end;
//! - a write below an open block's fill point (a rewrite) closes and reopens that block: it
//!   costs the block's unwritten tail, the head before the write, and the write;
//! - a block filled to its end is closed for free.
//!
//! So a sequential stream runs at `write_bandwidth` (less the command overhead: 120 KiB
//! requests, `usb-storage`'s limit, reach ~8.4 MB/s with the defaults), while a random 4 KiB
//! write costs a whole erase block copied, `erase_block / write_bandwidth` ≈ 0.47 s: about
//! 2 IOPS, which is what cheap keys measure.
//!
//! # Simplifications
//!
//! - No erase time, wear levelling, bad blocks or read disturb; the copies of garbage
//!   collection run at the program rate (real controllers copy at about that speed).
//! - Reads do not depend on the FTL state and never wait for garbage collection except by
//!   queueing behind the command that does it.
//! - `DevRequest::sync` is ignored: the key has no volatile cache to flush ("write through").

use super::model::{DeviceModel, Naming, LATENCY, QUEUE_DEPTH};
use super::{xfer, BusyClock, DevRequest, Device, Op};
use crate::config::{CfqTunables, DeadlineTunables, Knob, KnobKind, QueueConfig, SchedulerKind};
use crate::engine::RngStream;
use crate::knob;
use crate::units::MIB;
use crate::Ns;
use serde::Serialize;
use std::collections::VecDeque;

/// A 2011-era USB 2.0 flash key behind `usb-storage` (`drivers/usb.rs`): the "UKEY" of Wu's
/// 2011 tests. Defaults: a cheap 8 GB key of the time, ~9 MB/s sequential writes and ~25 MB/s
/// reads (flash and the USB 2.0 bulk pipe), 4 MiB erase blocks of which the controller keeps 2
/// open (flashbench surveys of 2011 keys: 4 MiB allocation units, 1–5 open), ~1 ms per command
/// (bulk-only transport: command block, data, status), one command at a time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UsbParams {
    /// Sequential read rate, bytes/s.
    pub read_bandwidth: u64,
    /// Rate the key programs flash, bytes/s: the sequential write rate, and the speed of the
    /// copies that erase-block garbage collection makes.
    pub write_bandwidth: u64,
    /// Fixed cost of each command on top of its transfer, ns.
    pub command_overhead: Ns,
    /// Erase block (allocation unit), bytes.
    pub erase_block: u64,
    /// Erase blocks the controller keeps open for appending at once.
    pub open_blocks: u32,
    /// Commands the device takes at once (`usb-storage`: `can_queue` = 1).
    pub queue_depth: u32,
}

impl Default for UsbParams {
    fn default() -> Self {
        UsbParams {
            read_bandwidth: 25_000_000,
            write_bandwidth: 9_000_000,
            command_overhead: 1_000_000,
            erase_block: 4 * MIB,
            open_blocks: 2,
            queue_depth: 1,
        }
    }
}

/// `max_hw_sectors_kb` of a USB 2.0 mass-storage device: the `usb-storage` host template's
/// `max_sectors` = 240 ("limit the total size of a transfer to 120 KB",
/// `drivers/usb/storage/scsiglue.c`; USB 3 devices get 2048 sectors).
pub const USB_MAX_SECTORS_KB: u32 = 120;

/// The queue of a USB 2.0 flash key as `usb-storage` and `sd` set it up (6.18):
/// - `can_queue` = 1: one tag, so mq-deadline (the default elevator of a single-queue SCSI
///   disk) with `nr_requests` = 2 × min(1, 128) = 2;
/// - `max_sectors_kb` 120 ([`USB_MAX_SECTORS_KB`]);
/// - rotational: `usb-storage` skips the VPD pages, so `sd` never learns the medium does not
///   rotate and the flag keeps its default, 1 (what USB keys report); hence wbt's 75 ms and
///   read-ahead 2 × `max_sectors_kb` = 240 KiB (`blk_apply_bdi_limits` without io_opt);
/// - "write through": `usb-storage` skips the caching mode page and `sd` assumes no cache.
pub(crate) fn usb_queue(p: &UsbParams) -> QueueConfig {
    let max_sectors_kb = USB_MAX_SECTORS_KB;
    QueueConfig {
        scheduler: SchedulerKind::MQ_DEADLINE,
        nr_requests: 2 * p.queue_depth.clamp(1, 128),
        max_sectors_kb,
        wbt_lat_usec: 75_000,
        read_ahead_kb: (2 * max_sectors_kb).max(128),
        nomerges: 0,
        rotational: true,
        write_cache: false,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
        tunables: Default::default(),
    }
}

impl DeviceModel for UsbParams {
    const KIND: &'static str = "usb";
    const SUMMARY: &'static str = "a 2011 USB 2.0 flash key: slow writes, erase-block garbage collection, one command at a time";
    const NAMING: Naming = Naming::Sd;
    const MEMBER: bool = true;

    fn knobs() -> &'static [Knob<Self>] {
        &USB_KNOBS
    }

    /// An 8 GB key.
    fn default_size(&self) -> u64 {
        8_000_000_000
    }

    fn default_queue(&self) -> QueueConfig {
        usb_queue(self)
    }

    fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    fn has_write_cache(&self) -> bool {
        false
    }

    fn max_hw_sectors_kb(&self) -> Option<u32> {
        Some(USB_MAX_SECTORS_KB)
    }

    fn build(&self, _size: u64, _rng: RngStream) -> Box<dyn Device> {
        Box::new(Usb::new(self.clone()))
    }
}

static USB_KNOBS: [Knob<UsbParams>; 6] = [
    knob!(UsbParams, "read_bandwidth", KnobKind::Rate, "sequential reads", read_bandwidth: u64),
    knob!(UsbParams, "write_bandwidth", KnobKind::Rate, "rate the key programs flash", write_bandwidth: u64),
    knob!(UsbParams, "command_overhead", LATENCY, "bulk-only transport cost per command", command_overhead: u64),
    knob!(UsbParams, "erase_block", KnobKind::Size { min: 4096, max: 1 << 30, pages: true }, "the flash erase block (allocation unit): whole pages, 4 KiB to 1 GiB", erase_block: u64),
    knob!(UsbParams, "open_blocks", KnobKind::Count { min: 1, max: 64 }, "erase blocks the controller keeps open: cheap keys 1-5", open_blocks: u32),
    knob!(UsbParams, "queue_depth", QUEUE_DEPTH, "commands at once: usb-storage's can_queue is 1, UAS queues more", queue_depth: u32),
];

pub struct Usb {
    p: UsbParams,
    /// Open erase blocks, least recently written first: (block index, bytes filled from its
    /// start).
    open: Vec<(u64, u64)>,
    /// When the device finishes the commands it has.
    free_at: Ns,
    /// Completions in dispatch order: (time, request id).
    done: VecDeque<(Ns, u32)>,
    /// Bytes programmed by garbage collection (copies), not by the host.
    pub gc_bytes: u64,
    busy: BusyClock,
}

impl Usb {
    pub fn new(p: UsbParams) -> Self {
        let open = Vec::with_capacity(p.open_blocks.max(1) as usize);
        let qd = p.queue_depth.max(1) as usize;
        Usb {
            p,
            open,
            free_at: 0,
            done: VecDeque::with_capacity(qd),
            gc_bytes: 0,
            busy: BusyClock::default(),
        }
    }

    /// Bytes the controller programs to write `[byte, byte + bytes)`, updating its open blocks.
    fn write_cost(&mut self, byte: u64, bytes: u64) -> u64 {
        let eb = self.p.erase_block.max(4096);
        let max_open = self.p.open_blocks.max(1) as usize;
        let end = byte + bytes.max(1);
        let mut pos = byte;
        let mut programmed = 0;
        while pos < end {
            let blk = pos / eb;
            let at = pos % eb;
            let piece = (end - pos).min(eb - at);
            let cost = match self.open.iter().position(|&(b, _)| b == blk) {
                Some(i) => {
                    let fill = self.open[i].1;
                    // Appending (after copying any gap), or a rewrite: close the block (its
                    // tail) and start it again (its head).
                    let cost = if at >= fill { at - fill + piece } else { eb - fill + at + piece };
                    self.open[i].1 = at + piece;
                    // Most recently written last.
                    self.open[i..].rotate_left(1);
                    cost
                }
                None => {
                    let mut cost = at + piece;
                    if self.open.len() >= max_open {
                        let (_, fill) = self.open.remove(0);
                        cost += eb - fill;
                    }
                    self.open.push((blk, at + piece));
                    cost
                }
            };
            // A block written to its end is closed, with nothing left to copy.
            if self.open.last().is_some_and(|&(_, fill)| fill >= eb) {
                self.open.pop();
            }
            self.gc_bytes += cost - piece;
            programmed += cost;
            pos += piece;
        }
        programmed
    }
}

impl Device for Usb {
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth.max(1)
    }

    fn in_flight(&self) -> u32 {
        self.done.len() as u32
    }

    fn flush_queueable(&self) -> bool {
        false
    }

    fn dispatch(&mut self, now: Ns, rq: DevRequest) {
        self.busy.enter(now, self.done.is_empty());
        let work = match rq.op {
            Op::Read => xfer(rq.bytes, self.p.read_bandwidth),
            Op::Write => {
                let bytes = self.write_cost(rq.sector * 512, rq.bytes);
                xfer(bytes, self.p.write_bandwidth)
            }
            // No volatile cache: the block layer sends none; one would cost a command.
            Op::Flush => 0,
        };
        let end = self.free_at.max(now) + self.p.command_overhead + work;
        self.free_at = end;
        self.done.push_back((end, rq.id));
    }

    fn next_event(&self) -> Option<Ns> {
        self.done.front().map(|&(t, _)| t)
    }

    fn advance(&mut self, now: Ns, done: &mut Vec<u32>) {
        while let Some(&(t, id)) = self.done.front() {
            if t > now {
                break;
            }
            self.done.pop_front();
            done.push(id);
            self.busy.leave(t, self.done.is_empty());
        }
    }

    fn busy_ns(&self, now: Ns) -> Ns {
        self.busy.busy_ns(now, self.done.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::testkit::{self, by_id, mb_s};
    use crate::engine::RngStream;
    use crate::units::{KIB, MIB};

    /// Closed loop keeping `qd` requests inside; (issue, completion) per request.
    fn run(d: &mut Usb, qd: u32, n: usize, next: impl FnMut(usize) -> (Op, u64, u64)) -> Vec<(Ns, Ns)> {
        by_id(&testkit::run(d, qd, n, next))
    }

    #[test]
    fn one_command_at_a_time() {
        let p = UsbParams::default();
        let mut d = Usb::new(p.clone());
        assert_eq!(d.queue_depth(), 1);
        // Even handed several, it serves them one after the other.
        for i in 0..3 {
            d.dispatch(
                0,
                DevRequest {
                    id: i,
                    op: Op::Read,
                    sector: u64::from(i) * 8,
                    bytes: 4096,
                    segments: 1,
                    sync: false,
                    fua: false,
                    prio: Default::default(),
                },
            );
        }
        let one = p.command_overhead + xfer(4096, p.read_bandwidth);
        let mut done = Vec::new();
        for k in 1..=3 {
            let t = d.next_event().unwrap();
            assert_eq!(t, k * one);
            d.advance(t, &mut done);
        }
        assert_eq!(done, vec![0, 1, 2]);
        assert_eq!(d.busy_ns(10 * one), 3 * one);
    }

    #[test]
    fn sequential_rates_match_the_parameters() {
        let p = UsbParams::default();
        for (op, bw) in [(Op::Write, p.write_bandwidth), (Op::Read, p.read_bandwidth)] {
            // 1 MiB requests: the bandwidth, less one command overhead per request (1-3 %).
            let mut d = Usb::new(p.clone());
            let out = run(&mut d, 1, 64, |i| (op, i as u64 * MIB, MIB));
            let rate = mb_s(64 * MIB, out.last().unwrap().1);
            let want = mb_s(MIB, p.command_overhead + xfer(MIB, bw));
            assert!((rate / want - 1.0).abs() < 0.001, "{op:?}: {rate:.2} MB/s, want {want:.2}");
            assert!((rate / (bw as f64 / 1e6) - 1.0).abs() < 0.03, "{op:?}: {rate:.2} MB/s");
            assert_eq!(d.gc_bytes, 0);
        }
        // 120 KiB requests (usb-storage's max_sectors): ~8.4 MB/s of writes.
        let mut d = Usb::new(p.clone());
        let bs = 120 * KIB;
        let out = run(&mut d, 1, 500, |i| (Op::Write, i as u64 * bs, bs));
        let rate = mb_s(500 * bs, out.last().unwrap().1);
        assert!((8.0..8.8).contains(&rate), "{rate:.2} MB/s");
        assert_eq!(d.gc_bytes, 0, "sequential writes never copy");
    }

    #[test]
    fn random_small_writes_copy_erase_blocks() {
        let p = UsbParams::default();
        let mut rng = RngStream::new(1, "test/usb");
        let blocks = 8_000_000_000 / 4096;
        let lbas: Vec<u64> = (0..200).map(|_| rng.below(blocks) * 4096).collect();
        let mut d = Usb::new(p.clone());
        let out = run(&mut d, 1, lbas.len(), |i| (Op::Write, lbas[i], 4096));
        let iops = lbas.len() as f64 / (out.last().unwrap().1 as f64 * 1e-9);
        // A whole erase block programmed per write: ~2 IOPS.
        let ideal = p.write_bandwidth as f64 / p.erase_block as f64;
        assert!(iops > 0.9 * ideal && iops < 1.2 * ideal, "{iops:.2} IOPS, ~{ideal:.2} expected");
        // Random reads do not care: ~1 ms each.
        let mut d = Usb::new(p.clone());
        let out = run(&mut d, 1, lbas.len(), |i| (Op::Read, lbas[i], 4096));
        let lat = out[0].1 - out[0].0;
        assert_eq!(lat, p.command_overhead + xfer(4096, p.read_bandwidth));
    }

    #[test]
    fn erase_block_bookkeeping() {
        let p = UsbParams::default();
        let eb = p.erase_block;
        let mut d = Usb::new(p.clone());
        // Two streams in different blocks fit the two open blocks: no copies.
        assert_eq!(d.write_cost(0, 64 * KIB), 64 * KIB);
        assert_eq!(d.write_cost(10 * eb, 64 * KIB), 64 * KIB);
        assert_eq!(d.write_cost(64 * KIB, 64 * KIB), 64 * KIB);
        assert_eq!(d.write_cost(10 * eb + 64 * KIB, 64 * KIB), 64 * KIB);
        // A third stream closes the least recently written block (block 0, filled to 128 KiB).
        assert_eq!(d.write_cost(20 * eb, 4096), 4096 + (eb - 128 * KIB));
        // Opening mid-block copies the head; a gap is copied too.
        assert_eq!(d.write_cost(30 * eb + 8192, 4096), 8192 + 4096 + (eb - 128 * KIB));
        assert_eq!(d.write_cost(30 * eb + 16384, 4096), 4096 + 4096);
        // A rewrite below the fill point: tail + head + the write.
        assert_eq!(d.write_cost(30 * eb, 4096), (eb - 20480) + 4096);
        // Filling a block to its end closes it for free; the next block starts clean.
        let mut d = Usb::new(p.clone());
        assert_eq!(d.write_cost(0, eb + 4096), eb + 4096);
        assert_eq!(d.open, vec![(1, 4096)]);
        assert_eq!(d.gc_bytes, 0);
    }
}
