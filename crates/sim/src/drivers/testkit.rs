//! Test helpers shared by the device models' unit tests: a closed loop that drives a
//! [`Device`] to completion, the rates measured on it, and the property that every request
//! completes exactly once.

use super::{DevRequest, Device, Op};
use crate::engine::RngStream;
use crate::Ns;
use proptest::prelude::*;

/// Closed loop keeping `qd` requests inside (at most the queue depth), `n` requests from
/// `next(i)` = (op, byte, bytes); returns (issue, completion, id) per request in completion
/// order.
pub(crate) fn run<D: Device + ?Sized>(d: &mut D, qd: u32, n: usize, mut next: impl FnMut(usize) -> (Op, u64, u64)) -> Vec<(Ns, Ns, u32)> {
    let mut issued = Vec::new();
    let mut out = Vec::new();
    let mut ids = Vec::new();
    let mut now = 0;
    while out.len() < n {
        while issued.len() < n && d.in_flight() < qd.min(d.queue_depth()) {
            let i = issued.len();
            let (op, byte, bytes) = next(i);
            d.dispatch(
                now,
                DevRequest {
                    id: i as u32,
                    op,
                    sector: byte / 512,
                    bytes,
                    segments: bytes.div_ceil(4096) as u32,
                    sync: false,
                    fua: false,
                    prio: Default::default(),
                },
            );
            issued.push(now);
        }
        now = d.next_event().expect("stalled: requests inside but no event");
        ids.clear();
        d.advance(now, &mut ids);
        out.extend(ids.iter().map(|&id| (issued[id as usize], now, id)));
    }
    out
}

/// [`run`]'s completions as (issue, completion) indexed by request id.
pub(crate) fn by_id(done: &[(Ns, Ns, u32)]) -> Vec<(Ns, Ns)> {
    let mut out = vec![(0, 0); done.len()];
    for &(issued, at, id) in done {
        out[id as usize] = (issued, at);
    }
    out
}

/// Requests of `bytes` each, back to back from byte 0: a `next` for [`run`].
pub(crate) fn sequential(op: Op, bytes: u64) -> impl FnMut(usize) -> (Op, u64, u64) {
    move |i| (op, i as u64 * bytes, bytes)
}

/// MB/s of `bs`-byte requests over the completions after the first `skip`.
pub(crate) fn rate(done: &[(Ns, Ns, u32)], bs: u64, skip: usize) -> f64 {
    let t0 = done[skip - 1].1;
    let t1 = done.last().unwrap().1;
    ((done.len() - skip) as u64 * bs) as f64 / ((t1 - t0) as f64 * 1e-9) / 1e6
}

/// MB/s of `bytes` moved in `ns`.
pub(crate) fn mb_s(bytes: u64, ns: Ns) -> f64 {
    bytes as f64 / (ns as f64 * 1e-9) / 1e6
}

/// A bytes/s figure in MB/s.
pub(crate) fn mb(bytes_per_s: u64) -> f64 {
    bytes_per_s as f64 / 1e6
}

/// Open loop of `n` random requests (reads or writes, 4 KiB aligned below `sectors` × 8
/// sectors, 1 to `max_pages` pages) drawn from `r`, dispatched whenever fewer than `depth`
/// are inside; then drained. Completion times xor ids, in completion order; all `n` complete.
pub(crate) fn mixed_trace<D: Device + ?Sized>(d: &mut D, r: &mut RngStream, n: u32, depth: u32, sectors: u64, max_pages: u64) -> Vec<Ns> {
    let mut out = Vec::new();
    let mut ids = Vec::new();
    let mut now = 0;
    for i in 0..n {
        while d.in_flight() >= depth {
            now = d.next_event().unwrap();
            ids.clear();
            d.advance(now, &mut ids);
            out.extend(ids.iter().map(|&id| now ^ u64::from(id)));
        }
        let op = if r.below(2) == 0 { Op::Read } else { Op::Write };
        let rq = DevRequest {
            id: i,
            op,
            sector: r.below(sectors) * 8,
            bytes: (1 + r.below(max_pages)) * 4096,
            segments: ((1 + r.below(max_pages)) * 4096).div_ceil(4096) as u32,
            sync: false,
            fua: false,
            prio: Default::default(),
        };
        d.dispatch(now, rq);
    }
    while let Some(t) = d.next_event() {
        now = t;
        ids.clear();
        d.advance(now, &mut ids);
        out.extend(ids.iter().map(|&id| now ^ u64::from(id)));
    }
    assert_eq!(out.len(), n as usize);
    out
}

/// Drive `d` with `reqs` (request ids are their indices), each with the gap the loop may wait
/// before dispatching it: while there is room, dispatch at `now` (a gap divisible by 3 lets
/// time pass after the request), then advance to the next device event or the next gap.
/// Checks that no event is in the past, `advance` leaves nothing due, every request completes
/// exactly once and never before it was dispatched, and the device ends idle with no more
/// busy time than elapsed.
pub(crate) fn check_no_request_lost<D: Device + ?Sized>(d: &mut D, reqs: &[(DevRequest, Ns)]) -> Result<(), TestCaseError> {
    let mut now: Ns = 0;
    let mut issued = vec![None; reqs.len()];
    let mut seen = vec![false; reqs.len()];
    let mut ids = Vec::new();
    let mut next = 0;
    loop {
        // Dispatch while there is room, at `now`.
        while next < reqs.len() && d.in_flight() < d.queue_depth() {
            let (rq, gap) = reqs[next];
            debug_assert_eq!(rq.id as usize, next);
            d.dispatch(now, rq);
            issued[next] = Some(now);
            next += 1;
            // Sometimes let time pass before the next dispatch.
            if gap % 3 == 0 {
                break;
            }
        }
        let ev = d.next_event();
        prop_assert!(ev.is_none_or(|e| e >= now), "next_event in the past");
        // Requests inside with nothing scheduled would never complete (and the loop would
        // spin): that is a lost request.
        prop_assert!(
            ev.is_some() || d.in_flight() == 0 || (next < reqs.len() && d.in_flight() < d.queue_depth()),
            "{} requests in flight and no event to complete them",
            d.in_flight()
        );
        // The next arrival matters only while the device has room for it: a full device
        // moves on at its own next event (a zero gap would otherwise stall time).
        let room = d.in_flight() < d.queue_depth();
        let gap = if next < reqs.len() && room { reqs[next].1 } else { Ns::MAX };
        now = match ev {
            Some(t) => t.min(now.saturating_add(gap)),
            None if next < reqs.len() && room => now + gap,
            None => break,
        };
        ids.clear();
        d.advance(now, &mut ids);
        prop_assert!(d.next_event().is_none_or(|e| e > now), "advance left work due");
        for &id in &ids {
            let i = id as usize;
            prop_assert!(!seen[i], "id {} completed twice", id);
            prop_assert!(issued[i].is_some_and(|t| t <= now));
            seen[i] = true;
        }
    }
    prop_assert!(seen.iter().all(|&s| s));
    prop_assert_eq!(d.in_flight(), 0);
    prop_assert!(d.busy_ns(now) <= now);
    Ok(())
}
