//! An NFS mount as a "network block device": WRITE and READ RPCs over a network link to a
//! server whose page cache takes UNSTABLE writes, and COMMITs that wait for the server's disk.
//!
//! The NFS client is not a block device, but its data path has the same shape as one: the
//! flusher builds requests of up to `wsize` (`nfs_pageio` coalescing pages into one WRITE), a
//! bounded number are in flight (RPC slots), each completes with a reply. This model puts the
//! RPCs behind the [`Device`] trait so the rest of the simulator (flusher, throttling, block
//! queue) drives it unchanged. What makes NFS different for writeback is the reply: a Linux
//! server answers a WRITE `UNSTABLE` as soon as the data is in its page cache, and the client
//! must keep the pages until a `COMMIT` reply says the server wrote them to disk.
//!
//! # What the kernel does (6.18, `fs/nfs/write.c`)
//!
//! - `nfs_write_completion`: an UNSTABLE reply puts the request on the inode's commit list
//!   (`nfs_mark_request_commit` → `nfs_folio_mark_unstable`, which adds the folio back to
//!   `NR_WRITEBACK` and the wb's `WB_WRITEBACK`), then ends the folio's writeback. So the
//!   pages leave PG_writeback but stay *counted* as writeback, against the dirty limit, until
//!   the COMMIT reply (`nfs_commit_release_pages` → `nfs_folio_clear_commit` subtracts them).
//!   Until 5.8 these pages were `NR_UNSTABLE_NFS`, which `global_dirty_limits` /
//!   `balance_dirty_pages` (2.6.38) counted with the dirty pages: either way, unstable pages
//!   count against the dirty limit until committed.
//! - COMMIT scheduling: `nfs_writepages` hands each writeback pass (kupdate, background,
//!   sync) an `nfs_io_completion` whose release, once every WRITE of the pass has replied,
//!   calls `nfs_commit_inode(inode, 0)`: one COMMIT of the whole inode per writeback pass.
//!   `nfs_write_inode` (after the pass, from `writeback_single_inode`) commits too when no page
//!   of the inode is still under writeback. `fsync` writes and then commits synchronously.
//!
//! # The model ([`NfsParams`])
//!
//! - **Link**: each direction is a FIFO pipe of `link_bandwidth`; a message also takes half the
//!   `rtt` to cross. A WRITE sends its data client → server; a READ's data comes back
//!   server → client. Request headers and small replies take no link time.
//! - **Server page cache** (a fluid buffer, as the SSD's write buffer): an arriving WRITE is
//!   admitted once the cache has room for it (`server_cache` bytes of unstable data), in
//!   arrival order, and replied UNSTABLE at once; the cache drains continuously to the server's
//!   disk at `server_write_bandwidth` (its flusher never idles while it holds data). Each write
//!   remembers when the drain will have written it: its *stable time*.
//! - **COMMIT** under the 2.6.35–3.x rule (`commit = "half"`, `nfs_commit_unstable_pages`):
//!   sent only when more than half of the client's outstanding pages of the mount (dirty,
//!   under writeback, unstable: the inode's `npages`) await a COMMIT — checked at each reply
//!   and whenever the machine reports new counts ([`Device::set_client_outstanding`]) — or
//!   when the last `REQ_SYNC` WRITE replies.
//! - **COMMIT** under the 6.x rule (`commit = "pass"`, also before 2.6.35): sent (a) when the
//!   UNSTABLE replies since the last COMMIT reach `commit_bytes`
//!   (one writeback pass: 6.x writes about half a second of bandwidth per inode and pass,
//!   `writeback_chunk_size` ≈ 48 MiB at 100 MB/s), (b) when no WRITE is left in flight (the pass
//!   ended, or the flusher stopped), and (c) when the last WRITE with `REQ_SYNC` (fsync, sync)
//!   in flight replies. A COMMIT covers every write replied before it was sent (the kernel
//!   commits the whole inode) and replies `rtt` after the later of its arrival and the stable
//!   time of the last write it covers. COMMITs complete in order.
//! - **Reads**: a READ reaches the server after half the RTT, is read at
//!   `server_read_bandwidth` (a FIFO pipe) and crosses the link back.
//! - **Stability**: [`Device::unstable_writes`] is true; [`Device::stable_writes`] counts the
//!   write completions committed so far. The block queue keeps the pages of completed writes
//!   under writeback until then, and the machine ends their writeback when the COMMIT replies.
//!
//! With the defaults a long write stream runs at min(link, server disk) = 100 MB/s once the
//! server cache has filled; a burst into an idle server runs at the link's ~117 MB/s; a 4 KiB
//! read alone takes ~0.28 ms.
//!
//! # Simplifications
//!
//! - The pages of an UNSTABLE write stay under writeback (PG_writeback) until the COMMIT in
//!   the model, instead of leaving PG_writeback at the reply with only the counters held: the
//!   dirty limit sees the same pages, but `written` (`NR_WRITTEN`, the wb's writeout and
//!   write bandwidth estimate) advances at COMMIT replies, in bursts of one COMMIT, instead of
//!   at WRITE replies; an fsync waits for the COMMIT (which it does in the kernel too, through
//!   `nfs_commit_inode(FLUSH_SYNC)`).
//! - COMMIT scheduling by the device's bytes and idleness instead of per inode and pass; one
//!   commit list for the whole mount. The server writes its cache in arrival order, whatever
//!   the file, so a COMMIT (an fsync's too) waits for everything the server received before
//!   the writes it covers, where a real server's `vfs_fsync_range` writes that one file: an
//!   fsync beside streaming writers is pessimistic (seconds, with a full server cache).
//! - No RPC header or per-RPC CPU cost, no TCP windows, no server CPU, no write verifier
//!   mismatches (server reboots), no `nfs_congestion_kb` wait (the block queue's tag wait, with
//!   `queue_depth` RPC slots, plays that role), no attribute or metadata traffic.
//! - The server's disk reads and writes independently, and reads have no positioning time:
//!   random NFS reads are optimistic for a server with a rotating disk.
//! - Direct I/O writes complete at the WRITE reply (the kernel commits them before `write()`
//!   returns).

use super::model::{DeviceModel, Naming, LATENCY, MAX_QUEUE_DEPTH};
use super::{xfer, BusyClock, DevRequest, Device, Op};
use crate::config::{CfqTunables, Conflict, DeadlineTunables, Knob, KnobKind, KnobValue, QueueConfig, SchedulerKind, NFS_FIRST_MINOR};
use crate::engine::RngStream;
use crate::knob;
use crate::units::{format_size, MIB};
use crate::Ns;
use serde::Serialize;
use std::collections::VecDeque;

/// An NFS mount seen as a "network block device" (`drivers/nfs.rs`): WRITE/READ RPCs over a
/// link to a server that takes UNSTABLE writes into its page cache and makes them stable on
/// COMMIT. Defaults: gigabit Ethernet (~117 MB/s of RPC payload, 0.2 ms RTT), a server with one
/// 100 MB/s disk and ~512 MiB of dirty page cache, `wsize` = 1 MiB (the Linux server's
/// maximum), 16 RPC slots (`RPC_DEF_SLOT_TABLE`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NfsParams {
    /// Largest WRITE (and READ) RPC, bytes; the queue's `max_sectors_kb`.
    pub wsize: u64,
    /// Payload bandwidth of the network link, each direction, bytes/s.
    pub link_bandwidth: u64,
    /// Network round-trip time, ns.
    pub rtt: Ns,
    /// Rate the server's disk writes its dirty page cache, bytes/s.
    pub server_write_bandwidth: u64,
    /// Rate the server's disk reads, bytes/s.
    pub server_read_bandwidth: u64,
    /// Unstable (uncommitted) data the server's page cache holds before WRITE replies wait
    /// for its disk, bytes.
    pub server_cache: u64,
    /// The client sends a COMMIT after this many bytes of UNSTABLE replies (and whenever no
    /// WRITE is left in flight), bytes.
    pub commit_bytes: u64,
    /// RPCs in flight at once (RPC slots).
    pub queue_depth: u32,
    /// When the client sends a COMMIT; `None` until the kernel generation fills it in
    /// (see [`NfsCommit`]).
    pub commit: Option<NfsCommit>,
}

impl Default for NfsParams {
    fn default() -> Self {
        NfsParams {
            wsize: MIB,
            link_bandwidth: 117_000_000,
            rtt: 200_000,
            server_write_bandwidth: 100_000_000,
            server_read_bandwidth: 100_000_000,
            server_cache: 512 * MIB,
            commit_bytes: 48 * MIB,
            queue_depth: 16,
            commit: None,
        }
    }
}

/// The NFS client's COMMIT rule for background (`WB_SYNC_NONE`) writeback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NfsCommit {
    /// 4.x–6.x: a COMMIT per writeback pass (`commit_bytes`), and whenever no WRITE is left
    /// in flight.
    Pass,
    /// 2.6.35–3.x (`nfs_commit_unstable_pages`): commit only once more than half of the
    /// inode's requests (dirty, under writeback, unstable) await a COMMIT.
    Half,
}

/// The "queue" of an NFS mount. NFS has no block queue: the model puts one in front of its
/// RPC slots so the data path stays the block layer's. Its knobs are chosen to be neutral:
/// no elevator (`nr_requests` = the RPC slots, whose wait plays NFS's own write congestion
/// wait), requests of up to `wsize`, no blk-wbt (it needs a blk-mq queue), read-ahead
/// 128 KiB (`VM_READAHEAD_PAGES`: NFS's default since 5.4; before, 15 × `rsize`),
/// non-rotational, and a write cache (the server's page cache holding UNSTABLE data).
pub(crate) fn nfs_queue(p: &NfsParams) -> QueueConfig {
    QueueConfig {
        scheduler: SchedulerKind::NONE,
        nr_requests: p.queue_depth,
        max_sectors_kb: (p.wsize / 1024).clamp(4, u64::from(u32::MAX)) as u32,
        wbt_lat_usec: 0,
        read_ahead_kb: 128,
        nomerges: 0,
        rotational: false,
        write_cache: true,
        iosched: DeadlineTunables::default(),
        cfq: CfqTunables::default(),
        tunables: Default::default(),
    }
}

impl DeviceModel for NfsParams {
    const KIND: &'static str = "nfs";
    const SUMMARY: &'static str = "an NFS mount: WRITE/READ RPCs over a link, a server page cache, UNSTABLE writes and COMMIT";
    const NAMING: Naming = Naming::Anonymous {
        prefix: "nfs",
        first_minor: NFS_FIRST_MINOR,
    };

    fn knobs() -> &'static [Knob<Self>] {
        &NFS_KNOBS
    }

    fn validate(&self) -> Result<(), Conflict> {
        if self.server_cache < self.wsize {
            return Err(Conflict {
                keys: &["server_cache", "wsize"],
                message: format!(
                    "the server cache ({}) cannot hold one WRITE of wsize ({})",
                    format_size(self.server_cache),
                    format_size(self.wsize)
                ),
                hint: "server_cache is the unstable data the server holds; make it at least wsize".into(),
            });
        }
        Ok(())
    }

    /// A 1 TB export.
    fn default_size(&self) -> u64 {
        1_000_000_000_000
    }

    fn default_queue(&self) -> QueueConfig {
        nfs_queue(self)
    }

    fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    /// The server's page cache holds UNSTABLE writes until a COMMIT.
    fn has_write_cache(&self) -> bool {
        true
    }

    fn max_hw_sectors_kb(&self) -> Option<u32> {
        Some((self.wsize / 1024).min(u64::from(u32::MAX)) as u32)
    }

    /// An NFS mount has no block queue to switch an elevator on.
    fn has_elevator(&self) -> bool {
        false
    }

    fn build(&self, _size: u64, _rng: RngStream) -> Box<dyn Device> {
        Box::new(Nfs::new(self.clone()))
    }
}

/// RPC_MAX_SLOT_TABLE: the most RPC slots a transport has.
const MAX_RPC_SLOTS: u64 = 65536;
/// NFS_MAX_FILE_IO_SIZE: the largest rsize/wsize of the Linux client.
const NFS_MAX_IO: u64 = 4 << 20;

static NFS_KNOBS: [Knob<NfsParams>; 9] = [
    knob!(NfsParams, "wsize", KnobKind::Size { min: 4096, max: NFS_MAX_IO, pages: true }, "largest WRITE/READ RPC: whole pages, 4 KiB to 4 MiB, NFS_MAX_FILE_IO_SIZE", wsize: u64),
    knob!(NfsParams, "link_bandwidth", KnobKind::Rate, "RPC payload rate of the link, each direction", link_bandwidth: u64),
    knob!(NfsParams, "rtt", LATENCY, "network round trip", rtt: u64),
    knob!(NfsParams, "server_write_bandwidth", KnobKind::Rate, "rate the server's disk writes its dirty cache", server_write_bandwidth: u64),
    knob!(NfsParams, "server_read_bandwidth", KnobKind::Rate, "rate the server's disk reads", server_read_bandwidth: u64),
    knob!(NfsParams, "server_cache", KnobKind::Size { min: 0, max: u64::MAX, pages: false }, "unstable data the server holds before WRITEs wait for its disk", server_cache: u64),
    knob!(NfsParams, "commit_bytes", KnobKind::Size { min: 4096, max: u64::MAX, pages: false }, "UNSTABLE bytes after which the client sends a COMMIT", commit_bytes: u64),
    Knob {
        key: "commit",
        kind: KnobKind::Word {
            words: &["pass", "half"],
            what: "commit rule",
        },
        doc: "COMMIT rule: `pass` per writeback pass (4.x-6.x), `half` once half the inode is unstable (2.6.35-3.x); default the kernel's",
        get: |p| {
            KnobValue::Word(match p.commit {
                Some(NfsCommit::Pass) => "pass",
                Some(NfsCommit::Half) => "half",
                None => "",
            })
        },
        set: |p, v| p.commit = Some(if v.word() == "half" { NfsCommit::Half } else { NfsCommit::Pass }),
    },
    knob!(NfsParams, "queue_depth", KnobKind::Count { min: 1, max: if MAX_RPC_SLOTS < MAX_QUEUE_DEPTH { MAX_RPC_SLOTS } else { MAX_QUEUE_DEPTH } }, "RPC slots in flight", queue_depth: u32),
];

/// A WRITE in flight.
#[derive(Clone, Copy, Debug)]
struct Write {
    /// When its reply reaches the client.
    reply: Ns,
    id: u32,
    bytes: u64,
    /// When the server's disk will have written it.
    stable_at: Ns,
    sync: bool,
}

pub struct Nfs {
    p: NfsParams,
    /// When each direction of the link is free.
    tx_free: Ns,
    rx_free: Ns,
    /// Server page cache: admission time of the last write, and when the drain to disk ends.
    admit_last: Ns,
    drain_end: Ns,
    /// When the server's disk has read what it was asked.
    read_free: Ns,
    /// WRITEs and READs in flight, in reply order (each direction is FIFO end to end).
    writes: VecDeque<Write>,
    reads: VecDeque<(Ns, u32)>,
    /// COMMITs in flight: (reply time, write completions stable once it replies).
    commits: VecDeque<(Ns, u64)>,
    /// Write completions so far, and how many of them COMMITs made stable.
    writes_completed: u64,
    stable: u64,
    /// Bytes replied UNSTABLE since the last COMMIT was sent.
    uncommitted: u64,
    /// Stable time of the latest replied write.
    last_stable_at: Ns,
    /// `REQ_SYNC` writes in flight.
    sync_in_flight: u32,
    /// COMMITs sent.
    pub commits_sent: u64,
    busy: BusyClock,
    /// The client's bytes of the mount that are dirty, under writeback or unstable (for the
    /// `Half` commit rule), as the machine last reported them.
    client_outstanding: u64,
}

impl Nfs {
    pub fn new(p: NfsParams) -> Self {
        let qd = p.queue_depth.max(1) as usize;
        Nfs {
            p,
            tx_free: 0,
            rx_free: 0,
            admit_last: 0,
            drain_end: 0,
            read_free: 0,
            writes: VecDeque::with_capacity(qd),
            reads: VecDeque::with_capacity(qd),
            commits: VecDeque::with_capacity(4),
            writes_completed: 0,
            stable: 0,
            uncommitted: 0,
            last_stable_at: 0,
            sync_in_flight: 0,
            commits_sent: 0,
            busy: BusyClock::default(),
            client_outstanding: 0,
        }
    }

    /// Unstable bytes in the server's page cache at `t`.
    pub fn server_dirty(&self, t: Ns) -> u64 {
        let left = self.drain_end.saturating_sub(t) as u128;
        (left * self.p.server_write_bandwidth as u128 / 1_000_000_000) as u64
    }

    fn half_rtt(&self) -> Ns {
        self.p.rtt / 2
    }

    /// A WRITE RPC sent at `now`: (reply time, stable time).
    fn write(&mut self, now: Ns, bytes: u64) -> (Ns, Ns) {
        let sent = self.tx_free.max(now) + xfer(bytes, self.p.link_bandwidth);
        self.tx_free = sent;
        let arrive = sent + self.half_rtt();
        // Admission into the server's page cache once it has room, in arrival order.
        let bw = self.p.server_write_bandwidth;
        let room_at = self.drain_end.saturating_sub(xfer(self.p.server_cache.saturating_sub(bytes), bw));
        let admit = arrive.max(self.admit_last).max(room_at);
        self.admit_last = admit;
        self.drain_end = self.drain_end.max(admit) + xfer(bytes, bw);
        (admit + (self.p.rtt - self.half_rtt()), self.drain_end)
    }

    /// A READ RPC sent at `now`: its reply time.
    fn read(&mut self, now: Ns, bytes: u64) -> Ns {
        let arrive = now + self.half_rtt();
        let read = self.read_free.max(arrive) + xfer(bytes, self.p.server_read_bandwidth);
        self.read_free = read;
        let back = self.rx_free.max(read) + xfer(bytes, self.p.link_bandwidth);
        self.rx_free = back;
        back + (self.p.rtt - self.half_rtt())
    }

    /// Whether background writeback would send a COMMIT now.
    fn commit_due(&self) -> bool {
        match self.p.commit.unwrap_or(NfsCommit::Pass) {
            NfsCommit::Pass => self.uncommitted >= self.p.commit_bytes || self.writes.is_empty(),
            NfsCommit::Half => self.uncommitted > 0 && self.uncommitted * 2 > self.client_outstanding,
        }
    }

    /// Send a COMMIT at `t` for everything replied so far.
    fn commit(&mut self, t: Ns) {
        let half = self.half_rtt();
        let reply = (t + half).max(self.last_stable_at) + (self.p.rtt - half);
        // In order: a later COMMIT never replies before an earlier one.
        let reply = self.commits.back().map_or(reply, |&(r, _)| reply.max(r));
        self.commits.push_back((reply, self.writes_completed));
        self.uncommitted = 0;
        self.commits_sent += 1;
    }

    /// Which queue's head is due first: 0 writes, 1 reads, 2 commits.
    fn first(&self) -> Option<(Ns, usize)> {
        let w = self.writes.front().map(|w| (w.reply, 0));
        let r = self.reads.front().map(|&(t, _)| (t, 1));
        let c = self.commits.front().map(|&(t, _)| (t, 2));
        [w, r, c].into_iter().flatten().min()
    }

    fn end_busy(&mut self, t: Ns) {
        self.busy.leave(t, self.in_flight() == 0);
    }
}

impl Device for Nfs {
    fn queue_depth(&self) -> u32 {
        self.p.queue_depth.max(1)
    }

    fn in_flight(&self) -> u32 {
        (self.writes.len() + self.reads.len()) as u32
    }

    fn dispatch(&mut self, now: Ns, rq: DevRequest) {
        self.busy.enter(now, self.in_flight() == 0);
        match rq.op {
            Op::Write => {
                let (reply, stable_at) = self.write(now, rq.bytes);
                self.sync_in_flight += u32::from(rq.sync);
                self.writes.push_back(Write {
                    reply,
                    id: rq.id,
                    bytes: rq.bytes,
                    stable_at,
                    sync: rq.sync,
                });
            }
            Op::Read => {
                let reply = self.read(now, rq.bytes);
                self.reads.push_back((reply, rq.id));
            }
            // NFS has no block queue flush (its fsync is a COMMIT): answered at once.
            Op::Flush => {
                let at = self.reads.back().map_or(now, |r| r.0.max(now));
                self.reads.push_back((at, rq.id));
            }
        }
    }

    fn next_event(&self) -> Option<Ns> {
        self.first().map(|(t, _)| t)
    }

    fn advance(&mut self, now: Ns, done: &mut Vec<u32>) {
        while let Some((t, which)) = self.first() {
            if t > now {
                break;
            }
            match which {
                0 => {
                    let w = self.writes.pop_front().expect("head");
                    done.push(w.id);
                    self.writes_completed += 1;
                    self.uncommitted += w.bytes;
                    self.last_stable_at = self.last_stable_at.max(w.stable_at);
                    let sync_done = w.sync && {
                        self.sync_in_flight -= 1;
                        self.sync_in_flight == 0
                    };
                    if self.commit_due() || sync_done {
                        self.commit(t);
                    }
                    self.end_busy(t);
                }
                1 => {
                    let (_, id) = self.reads.pop_front().expect("head");
                    done.push(id);
                    self.end_busy(t);
                }
                _ => {
                    let (_, covers) = self.commits.pop_front().expect("head");
                    self.stable = covers;
                }
            }
        }
    }

    fn busy_ns(&self, now: Ns) -> Ns {
        self.busy.busy_ns(now, self.in_flight() == 0)
    }

    /// `nfs_write_inode` runs the rule again whenever writeback visits the inode; the model
    /// re-checks it each time the client's counts change.
    fn set_client_outstanding(&mut self, now: Ns, bytes: u64) {
        self.client_outstanding = bytes;
        if self.p.commit == Some(NfsCommit::Half) && self.commit_due() {
            self.commit(now);
        }
    }

    fn unstable_writes(&self) -> bool {
        true
    }

    fn stable_writes(&self) -> u64 {
        self.stable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::testkit::mb_s;
    use crate::units::MIB;

    fn rq(id: u32, op: Op, byte: u64, bytes: u64) -> DevRequest {
        DevRequest {
            id,
            op,
            sector: byte / 512,
            bytes,
            segments: bytes.div_ceil(4096) as u32,
            sync: false,
            fua: false,
            prio: Default::default(),
        }
    }

    /// Closed loop keeping `qd` requests inside: completion times by id, and the stable count
    /// seen after each step with its time.
    fn run(d: &mut Nfs, qd: u32, n: usize, op: Op, bytes: u64) -> (Vec<Ns>, Vec<(Ns, u64)>) {
        let mut out = vec![0; n];
        let mut stable = Vec::new();
        let mut ids = Vec::new();
        let (mut now, mut issued, mut finished) = (0, 0, 0);
        loop {
            while issued < n && d.in_flight() < qd.min(d.queue_depth()) {
                d.dispatch(now, rq(issued as u32, op, issued as u64 * bytes, bytes));
                issued += 1;
            }
            let Some(t) = d.next_event() else { break };
            now = t;
            ids.clear();
            d.advance(now, &mut ids);
            for &id in &ids {
                out[id as usize] = now;
                finished += 1;
            }
            stable.push((now, d.stable_writes()));
        }
        assert_eq!(finished, n);
        (out, stable)
    }

    /// Stable throughput between the `from`-th and the last step of the stable count, MB/s.
    fn stable_mb_s(stable: &[(Ns, u64)], from: usize, bytes: u64) -> f64 {
        let mut steps = stable.to_vec();
        steps.dedup_by_key(|s| s.1);
        let (t0, s0) = steps[from];
        let (t1, s1) = *steps.last().unwrap();
        mb_s((s1 - s0) * bytes, t1 - t0)
    }

    #[test]
    fn write_throughput_is_the_slower_of_link_and_server_disk() {
        let p = NfsParams::default();
        let n = 2000;
        let mut d = Nfs::new(p.clone());
        let (out, stable) = run(&mut d, 16, n, Op::Write, MIB);
        // What becomes stable goes at the server disk's rate...
        let rate = stable_mb_s(&stable, 3, MIB);
        assert!((rate / 100.0 - 1.0).abs() < 0.01, "stable {rate:.1} MB/s");
        // ...while the replies run at the link's speed until the server cache is full (512 MiB
        // at 117 - 100 MB/s: half a minute).
        let replies = mb_s((n - 100) as u64 * MIB, out[n - 1] - out[99]);
        assert!(replies > 115.0 && replies < 117.01, "replies {replies:.1} MB/s");
        // A full server cache paces the replies to its disk.
        let mut d = Nfs::new(NfsParams {
            server_cache: 64 * MIB,
            ..p.clone()
        });
        let (out, _) = run(&mut d, 16, 1000, Op::Write, MIB);
        let replies = mb_s(600 * MIB, out[999] - out[399]);
        assert!((replies / 100.0 - 1.0).abs() < 0.01, "paced replies {replies:.1} MB/s");
        assert!(d.server_dirty(out[999]) <= 64 * MIB);

        // A slow link with a fast server: the link sets the pace.
        let slow = NfsParams {
            link_bandwidth: 50_000_000,
            ..p.clone()
        };
        let mut d = Nfs::new(slow);
        let (out, stable) = run(&mut d, 16, 500, Op::Write, MIB);
        let rate = mb_s(400 * MIB, out[499] - out[99]);
        assert!((rate / 50.0 - 1.0).abs() < 0.01, "link-bound {rate:.1} MB/s");
        let rate = stable_mb_s(&stable, 2, MIB);
        assert!((rate / 50.0 - 1.0).abs() < 0.02, "link-bound stable {rate:.1} MB/s");
    }

    /// A device under `rule` told the client holds 64 MiB, after 8 WRITEs of 1 MiB replied.
    fn eight_replied(rule: NfsCommit) -> Nfs {
        let mut d = Nfs::new(NfsParams {
            commit: Some(rule),
            ..NfsParams::default()
        });
        d.set_client_outstanding(0, 64 * MIB);
        for i in 0..8 {
            d.dispatch(0, rq(i, Op::Write, u64::from(i) * MIB, MIB));
        }
        let mut done = Vec::new();
        while done.len() < 8 {
            let t = d.next_event().unwrap();
            d.advance(t, &mut done);
        }
        d
    }

    #[test]
    fn the_half_rule_waits_for_half_of_the_inode_to_be_unstable() {
        // 2.6.35-3.x: with 64 MiB outstanding at the client, 8 replied MiB are not enough for a
        // COMMIT, even with no WRITE left in flight (the 6.x rule would commit then); once the
        // client's count falls to 12 MiB (its other pages were written and committed), they are.
        let mut d = eight_replied(NfsCommit::Half);
        assert_eq!(d.commits_sent, 0, "8 of 64 MiB unstable");
        d.set_client_outstanding(1_000_000_000, 17 * MIB);
        assert_eq!(d.commits_sent, 0, "8 of 17 MiB is not more than half");
        d.set_client_outstanding(1_000_000_000, 12 * MIB);
        assert_eq!(d.commits_sent, 1);
        // Under the 6.x rule the same writes are committed when the last one replies.
        assert_eq!(eight_replied(NfsCommit::Pass).commits_sent, 1);
    }

    #[test]
    fn writes_stay_unstable_until_a_commit_covers_them() {
        let p = NfsParams::default();
        let mut d = Nfs::new(p.clone());
        assert!(d.unstable_writes());
        // 8 writes of 1 MiB, all in flight at once.
        for i in 0..8 {
            d.dispatch(0, rq(i, Op::Write, u64::from(i) * MIB, MIB));
        }
        let mut done = Vec::new();
        let mut last_reply = 0;
        while done.len() < 8 {
            let t = d.next_event().unwrap();
            d.advance(t, &mut done);
            last_reply = t;
            // Replied, not yet stable: the COMMIT is sent when the last one replies.
            assert_eq!(d.stable_writes(), 0);
        }
        assert_eq!(d.commits_sent, 1);
        // The COMMIT waits for the server's disk: 8 MiB at 100 MB/s from the first arrival (the
        // link is faster, so the disk never idles).
        let t = d.next_event().expect("the COMMIT");
        let stable_at = xfer(MIB, p.link_bandwidth) + p.rtt / 2 + 8 * xfer(MIB, p.server_write_bandwidth);
        assert_eq!(d.last_stable_at, stable_at);
        assert!(
            stable_at > last_reply + 20_000_000,
            "disk done at {stable_at}, last reply {last_reply}"
        );
        assert_eq!(t, stable_at + p.rtt - p.rtt / 2);
        d.advance(t, &mut done);
        assert_eq!(d.stable_writes(), 8);
        assert_eq!(d.next_event(), None);
    }

    #[test]
    fn commits_follow_commit_bytes_while_writes_stream() {
        let p = NfsParams::default();
        let mut d = Nfs::new(p.clone());
        let n = 480;
        let (_, stable) = run(&mut d, 16, n, Op::Write, MIB);
        // 480 MiB in 48 MiB passes (the queue never drains in between), the last at the end.
        assert_eq!(d.commits_sent, 10);
        assert_eq!(d.stable_writes(), n as u64);
        // Stability moves in steps of one COMMIT.
        let mut steps: Vec<u64> = stable.iter().map(|&(_, s)| s).collect();
        steps.dedup();
        assert_eq!(steps, (0..=10).map(|k| k * 48).collect::<Vec<u64>>());
    }

    #[test]
    fn a_sync_write_is_committed_at_once() {
        let p = NfsParams::default();
        let mut d = Nfs::new(p.clone());
        // A background stream keeps the queue busy; one sync write among them.
        for i in 0..8 {
            let mut r = rq(i, Op::Write, u64::from(i) * MIB, MIB);
            r.sync = i == 2;
            d.dispatch(0, r);
        }
        let mut done = Vec::new();
        while done.len() < 3 {
            let t = d.next_event().unwrap();
            d.advance(t, &mut done);
        }
        assert_eq!(d.commits_sent, 1, "committed after the sync write's reply");
        while d.stable_writes() == 0 {
            let t = d.next_event().unwrap();
            d.advance(t, &mut done);
        }
        assert_eq!(d.stable_writes(), 3);
    }

    #[test]
    fn reads_take_the_round_trip_and_stream_at_the_slower_pipe() {
        let p = NfsParams::default();
        let mut d = Nfs::new(p.clone());
        let (out, _) = run(&mut d, 1, 10, Op::Read, 4096);
        let one = p.rtt + xfer(4096, p.server_read_bandwidth) + xfer(4096, p.link_bandwidth);
        assert_eq!(out[0], one);
        assert_eq!(out[9], 10 * one);
        let mut d = Nfs::new(p.clone());
        let (out, _) = run(&mut d, 16, 500, Op::Read, MIB);
        let rate = mb_s(400 * MIB, out[499] - out[99]);
        assert!((rate / 100.0 - 1.0).abs() < 0.01, "read {rate:.1} MB/s");
        assert_eq!(d.commits_sent, 0);
    }
}
