//! The model's side of the emulated device: one thread owns the device model (the same
//! [`Device`] the simulator drives) and runs it on a real-time clock. Each request the FUSE
//! side hands over is dispatched to the model when it arrives (or waits, in arrival order,
//! while the model's queue is full), and answered when the model completes it.
//!
//! The trip through the loop driver and FUSE takes time the device model does not know
//! about. [`Transport`] says how much of it falls before the server sees a request
//! (`lead_in`) and after it answers (`lead_out`): a request is dispatched to the model as of
//! when the kernel sent it, and its answer leaves early enough to reach the kernel when the
//! model completes it. The model's clock never runs backwards: a request that reaches a
//! busy model is dispatched no earlier than the model's last event.

use crate::buf::AlignedBuf;
use crate::clock::{self, Clock};
use crate::queue::{Receiver, Sender};
use crate::reply::Outgoing;
use crate::stats::{Record, Stats};
use fuser::{ReplyData, ReplyEmpty, ReplyWrite};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Mutex;
use wblab_sim::drivers::{DevRequest, Device, Op};
use wblab_sim::Ns;

/// How a request is answered.
pub(crate) enum Answer {
    Read(ReplyData, AlignedBuf),
    Write(ReplyWrite, u32),
    Flush(ReplyEmpty),
}

impl Answer {
    pub(crate) fn send(self) {
        match self {
            Answer::Read(r, buf) => r.data(buf.as_slice()),
            Answer::Write(r, n) => r.written(n),
            Answer::Flush(r) => r.ok(),
        }
    }
}

/// A request from the FUSE side.
pub(crate) struct Io {
    pub op: Op,
    pub offset: u64,
    pub bytes: u64,
    /// When the server's FUSE thread took it, on the device clock.
    pub arrived: Ns,
    pub answer: Answer,
}

pub(crate) enum Msg {
    Io(Io),
    Stop,
}

/// The time the kernel's side of the trip takes, split at the server (see the module doc):
/// what falls before the server sees a request grows with its size (the data is copied
/// through FUSE), what falls after it answers is taken as fixed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Transport {
    pub lead_in: Ns,
    /// More before the server sees a request per KiB it carries.
    pub lead_in_per_kib: Ns,
    pub lead_out: Ns,
}

impl Transport {
    fn lead_in_of(&self, bytes: u64) -> Ns {
        self.lead_in + self.lead_in_per_kib * bytes / 1024
    }
}

/// What the FUSE side and the owner share with the server thread.
#[derive(Default)]
pub(crate) struct Shared {
    /// Answer every request at once, without the model: for measuring the transport.
    pub passthrough: AtomicBool,
    pub lead_in: AtomicU64,
    pub lead_in_per_kib: AtomicU64,
    pub lead_out: AtomicU64,
    pub stats: Mutex<Stats>,
}

impl Shared {
    fn transport(&self) -> Transport {
        Transport {
            lead_in: self.lead_in.load(Ordering::Relaxed),
            lead_in_per_kib: self.lead_in_per_kib.load(Ordering::Relaxed),
            lead_out: self.lead_out.load(Ordering::Relaxed),
        }
    }
}

/// A request inside the model.
struct InDevice {
    io: Io,
    /// When the model took it (its own clock).
    dispatched: Ns,
    /// When it reached the model's queue, as of the kernel's sending it.
    queued: Ns,
    /// When the server thread took it (after its data moved).
    received: Ns,
}

/// A request waiting for a place in the model's queue.
struct Waiting {
    io: Io,
    queued: Ns,
    received: Ns,
}

pub(crate) struct Server {
    dev: Box<dyn Device>,
    clock: Clock,
    /// The model's own time: the last time it was advanced to or given a request.
    model_now: Ns,
    waiting: VecDeque<Waiting>,
    slots: Vec<Option<InDevice>>,
    free: Vec<u32>,
    /// A flush the device takes only alone (SATA) is in it: nothing else is dispatched.
    flush_alone: bool,
    /// Without a volatile write cache there is nothing to flush: answered at once.
    write_cache: bool,
    done: Vec<u32>,
    /// To the threads that send answers.
    out: Sender<Outgoing>,
    /// How late this thread wakes after a timed sleep (a moving average, ns): it sleeps that
    /// much less, so that answers leave on time on average.
    wake_delay: Ns,
}

/// The most the server wakes early for its own wake-up delay.
const MAX_WAKE_DELAY: Ns = 200_000;

impl Server {
    pub(crate) fn new(dev: Box<dyn Device>, write_cache: bool, clock: Clock, out: Sender<Outgoing>) -> Server {
        Server {
            dev,
            clock,
            model_now: 0,
            waiting: VecDeque::new(),
            slots: Vec::new(),
            free: Vec::new(),
            flush_alone: false,
            write_cache,
            done: Vec::new(),
            out,
            wake_delay: 0,
        }
    }

    /// Serve until told to stop or the FUSE side hangs up.
    pub(crate) fn run(mut self, rx: Receiver<Msg>, shared: &Shared) {
        clock::tight_timers();
        clock::io_flusher();
        clock::real_time(clock::Role::Model);
        let mut arrivals: VecDeque<Io> = VecDeque::new();
        loop {
            let t = shared.transport();
            let wake = self.dev.next_event().map(|e| e.saturating_sub(t.lead_out + self.wake_delay));
            let first = match wake {
                Some(w) => match rx.recv_timeout(self.clock.until(w)) {
                    Ok(m) => Some(m),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => break,
                },
                None => match rx.recv() {
                    Some(m) => Some(m),
                    None => break,
                },
            };
            let mut stop = false;
            for m in first.into_iter().chain(std::iter::from_fn(|| rx.try_recv())) {
                match m {
                    Msg::Io(io) => arrivals.push_back(io),
                    Msg::Stop => stop = true,
                }
            }
            if shared.passthrough.load(Ordering::Relaxed) {
                for io in arrivals.drain(..) {
                    self.answer_now(io);
                }
            }
            self.step(&mut arrivals, t);
            if stop {
                break;
            }
        }
    }

    /// Take the model through its events and the arrivals, in time order, up to what may be
    /// answered now.
    fn step(&mut self, arrivals: &mut VecDeque<Io>, t: Transport) {
        let horizon = self.clock.now() + t.lead_out + self.wake_delay;
        loop {
            let event = self.dev.next_event().filter(|&e| e <= horizon);
            let arrival = arrivals
                .front()
                .map(|io| io.arrived.saturating_sub(t.lead_in_of(io.bytes)).max(self.model_now));
            match (event, arrival) {
                (Some(e), None) => self.advance(e, t),
                (Some(e), Some(a)) if e <= a => self.advance(e, t),
                (_, Some(a)) => {
                    self.advance(a, t);
                    let io = arrivals.pop_front().expect("an arrival");
                    if io.op == Op::Flush && !self.write_cache {
                        self.answer_now(io);
                        continue;
                    }
                    let received = self.clock.now();
                    self.waiting.push_back(Waiting { io, queued: a, received });
                    self.dispatch();
                }
                (None, None) => break,
            }
        }
    }

    /// Advance the model to `at` and answer what it completed.
    fn advance(&mut self, at: Ns, t: Transport) {
        self.model_now = self.model_now.max(at);
        self.done.clear();
        self.dev.advance(self.model_now, &mut self.done);
        if self.done.is_empty() {
            return;
        }
        for i in 0..self.done.len() {
            let id = self.done[i];
            let Some(d) = self.slots.get_mut(id as usize).and_then(Option::take) else {
                continue;
            };
            self.free.push(id);
            if d.io.op == Op::Flush {
                self.flush_alone = false;
            }
            let due = self.model_now.saturating_sub(t.lead_out);
            let handed = self.clock.now();
            // Learn the wake-up delay from answers the server itself held (not those whose
            // data took longer to move than the model took to serve them).
            if d.received <= due {
                // It woke for `due - wake_delay`: its lateness past that is `delay + wake_delay`.
                let delay = (handed as i64 - due as i64).clamp(-(MAX_WAKE_DELAY as i64), MAX_WAKE_DELAY as i64);
                let w = self.wake_delay as i64 + delay / 16;
                self.wake_delay = w.clamp(0, MAX_WAKE_DELAY as i64) as Ns;
            }
            let rec = Record {
                op: d.io.op,
                offset: d.io.offset,
                bytes: d.io.bytes,
                arrived: d.io.arrived,
                queued: d.queued,
                dispatched: d.dispatched,
                completed: self.model_now,
                handed,
                answered: 0,
                late: 0,
                held_by_data: d.received > due,
            };
            self.out.send(Outgoing {
                answer: d.io.answer,
                rec,
                due,
            });
        }
        self.dispatch();
    }

    /// Hand waiting requests to the model while it has room.
    fn dispatch(&mut self) {
        while let Some(w) = self.waiting.front() {
            if self.flush_alone || self.dev.in_flight() >= self.dev.queue_depth() {
                return;
            }
            let alone = w.io.op == Op::Flush && !self.dev.flush_queueable();
            if alone && self.dev.in_flight() > 0 {
                return;
            }
            let w = self.waiting.pop_front().expect("a waiting request");
            let id = self.free.pop().unwrap_or_else(|| {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            });
            let rq = DevRequest {
                id,
                op: w.io.op,
                sector: w.io.offset / 512,
                bytes: w.io.bytes,
                segments: w.io.bytes.div_ceil(4096).max(1) as u32,
                sync: w.io.op != Op::Write,
                fua: false,
                prio: Default::default(),
            };
            self.flush_alone = alone;
            self.dev.dispatch(self.model_now, rq);
            self.slots[id as usize] = Some(InDevice {
                io: w.io,
                dispatched: self.model_now,
                queued: w.queued,
                received: w.received,
            });
        }
    }

    /// Answer without the model (passthrough, or a flush with no cache to flush).
    fn answer_now(&mut self, io: Io) {
        let now = self.clock.now();
        let rec = Record {
            op: io.op,
            offset: io.offset,
            bytes: io.bytes,
            arrived: io.arrived,
            queued: io.arrived,
            dispatched: io.arrived,
            completed: io.arrived,
            handed: now,
            answered: now,
            late: 0,
            held_by_data: false,
        };
        self.out.send(Outgoing {
            answer: io.answer,
            rec,
            due: now,
        });
    }
}
