//! Device models. Each kind of device is one file behind the [`Device`] trait; the block layer
//! dispatches requests into a device up to its queue depth and the machine asks it when the
//! next completion happens.
//!
//! | model | file | what it stands for |
//! |---|---|---|
//! | `hdd` | [`hdd`] | a 7200 rpm SATA disk with NCQ and a write cache |
//! | `ssd` | [`ssd`] | a flash SSD: parallel units, a transfer cap, a write buffer |
//! | `loop` | [`loopdev`] | `loop.c` with direct I/O over an image file |
//! | `usb` | [`usb`] | a 2011 USB 2.0 flash key: slow writes, erase-block garbage collection, one command at a time |
//! | `nfs` | [`nfs`] | an NFS mount: WRITE/READ RPCs over a link, a server page cache, UNSTABLE writes and COMMIT |
//! | `raid0` | [`raid0`] | md raid0 striping over members of one model |
//! | `raid5` | [`raid5`] | RAID5 with rotating parity, read-modify-write and a stripe cache |
//!
//! NFS is the one device whose completed writes are not yet stable: its pages stay under
//! writeback (counted against the dirty limit) until a COMMIT covers them, see
//! [`Device::unstable_writes`].

use crate::config::DeviceConfig;
use crate::engine::RngStream;
use crate::Ns;
use std::collections::VecDeque;

/// Where a command's driver work runs, ns of CPU each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandCpu {
    /// In the device's kernel thread ([`crate::kernel::cpu::Who::Kernel`]), which waits for
    /// a CPU like the tasks.
    pub worker: Ns,
    /// In the submitter's context, at once (a loop read's `IOCB_NOWAIT` attempt).
    pub inline: Ns,
}

/// Operation of a request as the device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    Read,
    Write,
    /// A cache flush (`REQ_OP_FLUSH | REQ_PREFLUSH`, SCSI SYNCHRONIZE CACHE, NVMe Flush): no
    /// data; completes once every write completed before it is on stable media. Only the
    /// block layer's flush machinery sends it, and only to a queue whose `write_cache` is
    /// "write back" (see `block::queue`).
    Flush,
}

/// A request handed to the device driver.
#[derive(Clone, Copy, Debug)]
pub struct DevRequest {
    /// Block-layer request id, returned on completion.
    pub id: u32,
    pub op: Op,
    /// First 512-byte sector.
    pub sector: u64,
    pub bytes: u64,
    /// Physically contiguous memory segments (`nr_phys_segments`): a scatter-gather entry
    /// each.
    pub segments: u32,
    /// REQ_SYNC.
    pub sync: bool,
    /// REQ_FUA: the write completes only once it is on stable media (sent only to a device
    /// that [`Device::supports_fua`]).
    pub fua: bool,
    /// The submitter's I/O priority (`req_get_ioprio`): a device that queues its requests
    /// again in an elevator of its own (a loop device's backing disk) passes it on.
    pub prio: crate::config::IoPrio,
}

/// A storage device: accepts requests, completes them later.
pub trait Device {
    /// Commands the device accepts at once (NCQ depth, hardware queue depth).
    fn queue_depth(&self) -> u32;
    /// Requests currently inside the device.
    fn in_flight(&self) -> u32;
    /// Hand a request to the device at `now`. The caller guarantees
    /// `in_flight() < queue_depth()`.
    fn dispatch(&mut self, now: Ns, rq: DevRequest);
    /// Time of the device's next internal event (usually a completion), if any.
    fn next_event(&self) -> Option<Ns>;
    /// Process everything due at `now`; push the ids of completed requests to `done`
    /// in completion order.
    fn advance(&mut self, now: Ns, done: &mut Vec<u32>);
    /// Total time the device had work in service, ns (for utilisation).
    fn busy_ns(&self, now: Ns) -> Ns;
    /// Whether a completed write is only *unstable* (NFS: the WRITE reply said UNSTABLE, the
    /// data sits in the server's page cache) until a later COMMIT makes it stable. The block
    /// queue then keeps the pages of completed writes under writeback until
    /// [`Device::stable_writes`] covers them.
    fn unstable_writes(&self) -> bool {
        false
    }
    /// How many of the device's write completions, counted in completion order from the first,
    /// COMMITs have made stable so far. Only meaningful when [`Device::unstable_writes`].
    fn stable_writes(&self) -> u64 {
        0
    }
    /// The client's bytes of this device that are dirty, under writeback or awaiting a
    /// COMMIT (an NFS inode's `npages`, which the 2.6.35–3.x commit rule compares against).
    fn set_client_outstanding(&mut self, _now: Ns, _bytes: u64) {}
    /// The machine's CPUs, for a device whose host competes with them (a virtual machine's
    /// disk under a loop device); others ignore it.
    fn watch_cpus(&mut self, _cpus: crate::kernel::cpu::CpuGauge) {}
    /// Whether a flush can be queued beside other commands (NVMe, SCSI). SATA's FLUSH CACHE is
    /// not an NCQ command: libata issues it only to an idle drive and nothing else until it
    /// completes.
    fn flush_queueable(&self) -> bool {
        true
    }
    /// Whether the device takes FUA writes. Without it the block layer follows a FUA write
    /// with a flush (blk-flush's POSTFLUSH), as for loop.
    fn supports_fua(&self) -> bool {
        false
    }
    /// Sectors that hold data from before the run (files laid out beforehand,
    /// files laid out beforehand). A loop device's image remembers which of its blocks were
    /// ever written; other devices ignore it.
    fn mark_written(&mut self, _sectors: std::ops::Range<u64>) {}
    /// The CPU a command of `op` costs on its way through the driver, beyond the block
    /// layer's own (the loop device's kiocb work): nothing for a device whose driver only
    /// rings a doorbell.
    fn command_cpu(&self, _op: Op) -> CommandCpu {
        CommandCpu::default()
    }
}

pub mod characterize;
pub mod hdd;
pub mod model;

pub mod loopdev;
pub mod nfs;
pub mod raid0;
pub mod raid5;
pub mod ssd;
pub mod usb;
pub mod virtio_host;

#[cfg(test)]
pub(crate) mod testkit;

// docs:begin model-list
model::device_models! {
    Hdd(hdd::HddParams),
    Ssd(ssd::SsdParams),
    Loop(loopdev::LoopParams),
    Usb(usb::UsbParams),
    Nfs(nfs::NfsParams),
    Raid0(raid0::Raid0Params),
    Raid5(raid5::Raid5Params);
    test: TestNull(test_null::TestNullParams),
}
// docs:end model-list

#[cfg(any(test, feature = "test-extensions"))]
pub mod test_null;

/// Build the device model a scenario asks for.
pub fn build(cfg: &DeviceConfig, rng: RngStream) -> Box<dyn Device> {
    build_model(&cfg.model, cfg.size, rng)
}

/// Build a device of `model` with `size` bytes (arrays build their members with this).
pub fn build_model(model: &DeviceModelConfig, size: u64, rng: RngStream) -> Box<dyn Device> {
    model.build(size, rng)
}

/// Time to move `bytes` at `rate` bytes/s, ns.
#[inline]
pub(crate) fn xfer(bytes: u64, rate: u64) -> Ns {
    ((bytes as u128 * 1_000_000_000) / rate.max(1) as u128) as Ns
}

/// Busy-time bookkeeping shared by the models: the time with at least one request inside.
/// The model says when it goes from idle to busy and back; the clock sums the busy spans.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BusyClock {
    acc: Ns,
    since: Ns,
}

impl BusyClock {
    /// A request enters at `now`; `was_idle`: the device held none before it.
    #[inline]
    pub(crate) fn enter(&mut self, now: Ns, was_idle: bool) {
        if was_idle {
            self.since = now;
        }
    }

    /// A request left at `t`; `now_idle`: none remain inside.
    #[inline]
    pub(crate) fn leave(&mut self, t: Ns, now_idle: bool) {
        if now_idle {
            self.acc += t.saturating_sub(self.since);
        }
    }

    /// Total busy time up to `now`; `idle`: the device holds no request.
    #[inline]
    pub(crate) fn busy_ns(&self, now: Ns, idle: bool) -> Ns {
        if idle {
            self.acc
        } else {
            self.acc + now.saturating_sub(self.since)
        }
    }
}

/// The requests inside an array device (raid0, raid5), by slot: (request id, pieces on the
/// members not yet done). Freed slots are reused last-freed first; the busy clock runs while
/// any request is inside.
#[derive(Debug, Default)]
pub(crate) struct ArraySlots {
    slots: Vec<(u32, u32)>,
    free: Vec<u32>,
    inside: u32,
    busy: BusyClock,
}

impl ArraySlots {
    pub(crate) fn with_capacity(n: usize) -> Self {
        ArraySlots {
            slots: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            ..ArraySlots::default()
        }
    }

    /// Requests inside.
    pub(crate) fn inside(&self) -> u32 {
        self.inside
    }

    /// Request `id` enters at `now` with `pieces` outstanding; returns its slot.
    pub(crate) fn enter(&mut self, now: Ns, id: u32, pieces: u32) -> u32 {
        self.busy.enter(now, self.inside == 0);
        self.inside += 1;
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push((0, 0));
                (self.slots.len() - 1) as u32
            }
        };
        self.slots[slot as usize] = (id, pieces);
        slot
    }

    /// One more piece outstanding for `slot`.
    pub(crate) fn add_piece(&mut self, slot: u32) {
        self.slots[slot as usize].1 += 1;
    }

    /// One of `slot`'s pieces is done at `t`; the last one completes its request into `done`.
    pub(crate) fn piece_done(&mut self, slot: u32, t: Ns, done: &mut Vec<u32>) {
        let s = &mut self.slots[slot as usize];
        s.1 -= 1;
        if s.1 == 0 {
            done.push(s.0);
            self.free.push(slot);
            self.inside -= 1;
            self.busy.leave(t, self.inside == 0);
        }
    }

    /// Total time with a request inside, up to `now`.
    pub(crate) fn busy_ns(&self, now: Ns) -> Ns {
        self.busy.busy_ns(now, self.inside == 0)
    }
}

/// Array devices (raid0, raid5): give part `rq` to member `dev` at `now` if nothing waits
/// for it in `pending` and it has room, updating its next event time `next` (`Ns::MAX` if
/// none); else queue the part in `pending`.
pub(crate) fn submit_part(dev: &mut dyn Device, pending: &mut VecDeque<DevRequest>, next: &mut Ns, now: Ns, rq: DevRequest) {
    if pending.is_empty() && dev.in_flight() < dev.queue_depth() {
        dev.dispatch(now, rq);
        *next = dev.next_event().unwrap_or(Ns::MAX);
    } else {
        pending.push_back(rq);
    }
}

/// Array devices: each member's next event time (`Ns::MAX`: none), with a heap that finds the
/// first due in O(log members) instead of a scan per member event — an array of a thousand
/// members whose members have many internal events spent its time scanning.
pub(crate) struct MemberClock {
    next: Vec<Ns>,
    /// Each member's count of times changed: its entry in the heap is live only with the
    /// latest, so that a member has one live entry however its time went back and forth, and
    /// an unchanged time pushes nothing (raid0 sets a member's time after every part it gives
    /// it, most often unchanged).
    seq: Vec<u32>,
    /// (time, member, seq), earliest first and the lowest member on a tie; entries no longer
    /// live are dropped when met at the top.
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Ns, usize, u32)>>,
}

impl MemberClock {
    pub(crate) fn new(members: usize) -> Self {
        MemberClock {
            next: vec![Ns::MAX; members],
            seq: vec![0; members],
            heap: std::collections::BinaryHeap::with_capacity(members),
        }
    }

    pub(crate) fn get(&self, m: usize) -> Ns {
        self.next[m]
    }

    /// Member `m`'s next event is at `t`. When the member's entry is the heap's top (the member
    /// [`Self::first_due`] gave), the new entry takes its place: one sift down instead of a pop
    /// and a push.
    pub(crate) fn set(&mut self, m: usize, t: Ns) {
        if self.next[m] == t {
            return;
        }
        let top_is_m = self.heap.peek().is_some_and(|r| self.is_live(r.0) && r.0 .1 == m);
        self.next[m] = t;
        self.seq[m] = self.seq[m].wrapping_add(1);
        if t != Ns::MAX {
            let entry = std::cmp::Reverse((t, m, self.seq[m]));
            if top_is_m {
                if let Some(mut top) = self.heap.peek_mut() {
                    *top = entry;
                }
            } else {
                self.heap.push(entry);
            }
        }
        self.drop_stale_top();
    }

    /// An entry is live while its member's time has not changed since it was pushed.
    fn is_live(&self, (_, m, seq): (Ns, usize, u32)) -> bool {
        self.seq[m] == seq
    }

    /// Pop entries off the top that are no longer live, so that the top, when there is one,
    /// is the earliest member event: [`Self::min`] reads it without a scan.
    fn drop_stale_top(&mut self) {
        while let Some(&std::cmp::Reverse(e)) = self.heap.peek() {
            if self.is_live(e) {
                return;
            }
            self.heap.pop();
        }
    }

    /// The earliest member event, if any: the heap's top, kept current by `set` (asked after
    /// every step of the array, where a scan of the members cost ~14 instructions a member).
    pub(crate) fn min(&self) -> Option<Ns> {
        let t = self.heap.peek().map(|r| r.0 .0);
        debug_assert_eq!(t, self.next.iter().copied().min().filter(|&t| t != Ns::MAX), "a stale top");
        t
    }

    /// The member whose event comes first at or before `now` (the lowest index on a tie). Its
    /// entry stays on top: the caller advances the member and sets its next time (which
    /// replaces the entry) before asking again.
    pub(crate) fn first_due(&self, now: Ns) -> Option<(Ns, usize)> {
        let &std::cmp::Reverse((t, m, _)) = self.heap.peek()?;
        (t <= now).then_some((t, m))
    }
}

/// Array devices: the member whose next event (`next`, by member) comes first at or before
/// `now`, the lowest index on a tie; (time, member). A scan: for raid5's few members (3–8)
/// it is cheaper than [`MemberClock`]'s heap (the 4-disk array of the 2002 writeout scenario
/// took 2–4 % more instructions on the heap).
pub(crate) fn first_due(next: &[Ns], now: Ns) -> Option<(Ns, usize)> {
    let mut first: Option<(Ns, usize)> = None;
    for (m, &t) in next.iter().enumerate() {
        if t <= now && first.is_none_or(|(ft, _)| t < ft) {
            first = Some((t, m));
        }
    }
    first
}

/// Array devices: start member `dev`'s waiting parts at `t` while it has room; its next event.
pub(crate) fn refill(dev: &mut dyn Device, pending: &mut VecDeque<DevRequest>, t: Ns) -> Option<Ns> {
    while dev.in_flight() < dev.queue_depth() {
        let Some(part) = pending.pop_front() else { break };
        dev.dispatch(t, part);
    }
    dev.next_event()
}

#[cfg(test)]
mod member_clock_tests {
    use super::{first_due, MemberClock};
    use crate::engine::RngStream;
    use crate::Ns;

    /// Random member times set, advanced and set again: the heap gives the member the scan
    /// would, in the same order, ties to the lowest member, and holds at most one live entry a
    /// member however often an unchanged time is set.
    #[test]
    fn the_heap_takes_members_in_the_order_the_scan_does() {
        let mut r = RngStream::new(7, "test/member-clock");
        for members in [1usize, 2, 4, 10, 33] {
            let mut clock = MemberClock::new(members);
            let mut next = vec![Ns::MAX; members];
            let mut now = 0;
            for _ in 0..5_000 {
                let m = r.below(members as u64) as usize;
                // Times on a coarse grid, so that ties happen; now and then none.
                let t = if r.below(8) == 0 { Ns::MAX } else { now + r.below(20) * 1000 };
                next[m] = t;
                clock.set(m, t);
                // Setting it again queues nothing more.
                let entries = clock.heap.len();
                clock.set(m, t);
                assert_eq!(clock.heap.len(), entries);
                assert_eq!(clock.min(), next.iter().copied().min().filter(|&t| t != Ns::MAX));
                now += r.below(3) * 1000;
                while let Some((t, m)) = first_due(&next, now) {
                    assert_eq!(clock.first_due(now), Some((t, m)), "{members} members at {now}");
                    // The member stepped: its next event is later, or none.
                    let later = if r.below(4) == 0 { Ns::MAX } else { t + 1000 + r.below(10) * 1000 };
                    next[m] = later;
                    clock.set(m, later);
                }
                assert_eq!(clock.first_due(now), None);
                let live = clock.heap.iter().filter(|e| clock.is_live(e.0)).count();
                assert!(live <= members, "{live} live entries for {members} members");
            }
        }
    }
}
