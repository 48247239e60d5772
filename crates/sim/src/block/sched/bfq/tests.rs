//! BFQ's rules against hand-worked examples from `bfq-iosched.c`, and the property every
//! elevator keeps.

use super::consts::*;
use super::*;
use crate::config::{IoPrio, IoPrioClass};

const T0: Ns = 10_000 * MSEC;

fn bfq(hdd: bool) -> Bfq {
    Bfq::new(BfqTunables::default(), !hdd)
}

fn rq(id: u32, op: Op, sector: u64, nr: u64, owner: u32) -> ElvRq {
    ElvRq {
        owner,
        ..crate::block::sched::test_rq(id, op, sector, nr)
    }
}

/// A sequential reader's next request: 256 sectors after the last.
fn read(id: u32, owner: u32, n: u64) -> ElvRq {
    rq(id, Op::Read, 1_000_000 * u64::from(owner) + 256 * n, 256, owner)
}

fn write(id: u32, sector: u64) -> ElvRq {
    rq(id, Op::Write, sector, 1024, 0)
}

#[test]
fn a_new_process_is_weight_raised_and_raising_ends_after_its_duration() {
    // bfq_bfqq_handle_idle_busy_switch: a new sync queue was "idle for long" (its
    // budget_timeout starts at minus infinity), so it is interactive: weight 40 × 30.
    let mut b = bfq(true);
    b.insert(T0, read(0, 1, 0));
    assert_eq!(b.weight_of(1), Some(40 * WR_COEFF));
    let r = b.dispatch(T0).expect("the only request");
    assert_eq!(r.id, 0);
    // Its duration on a rotational device at the initial peak rate estimate
    // (2/3 of the reference): 7000 ms × 3/2.
    assert_eq!(b.wr_duration(), 10_500 * MSEC);
    b.completed(T0 + MSEC, 0);
    // Requests keep coming quickly: still raised at 10 s, not after 10.5 s.
    let mut now = T0 + MSEC;
    let mut id = 1;
    let mut last_raised = now;
    while now < T0 + 12_000 * MSEC {
        b.insert(now, read(id, 1, u64::from(id)));
        let r = b.dispatch(now).expect("the reader's request");
        // Raised as interactive or, once its batches look isochronous, as soft real-time.
        if b.weight_of(1) > Some(40) {
            last_raised = now;
        }
        now += 20 * MSEC;
        b.completed(now, r.id);
        id += 1;
        // Stay under max_service_from_wr: 20 ms per 256 sectors is 12 800 sectors/s.
    }
    assert_eq!(b.weight_of(1), Some(40));
    assert!(
        last_raised > T0 + 9_000 * MSEC && last_raised <= T0 + 10_502 * MSEC,
        "raised until {}",
        last_raised - T0
    );
}

#[test]
fn interactive_raising_ends_after_max_service_from_wr() {
    // A reader that always has requests queued (so it never turns soft real-time).
    let mut b = bfq(true);
    let mut now = T0;
    let mut served = 0;
    for id in 0..4 {
        b.insert(now, read(id, 1, u64::from(id)));
    }
    for id in 4..2000 {
        let r = b.dispatch(now).expect("request");
        served += r.nr_sectors;
        now += MSEC;
        b.completed(now, r.id);
        b.insert(now, read(id, 1, u64::from(id)));
        if b.weight_of(1) == Some(40) {
            break;
        }
    }
    // 120 000 sectors and the dispatch that crosses it.
    assert!(
        served > MAX_SERVICE_FROM_WR && served <= MAX_SERVICE_FROM_WR + 512,
        "raising ended after {served} sectors"
    );
    assert!(now < T0 + 3_000 * MSEC, "ended by service, not by time");
}

#[test]
fn budgets_follow_the_expiration_reason() {
    // __bfq_bfqq_recalc_budget on a sync, non-raised queue (low_latency off), before the
    // statistics are trusted: min budget = 16384 / 32 = 512 sectors, max 16384.
    let t = BfqTunables {
        low_latency: false,
        ..Default::default()
    };
    let mut b = Bfq::new(t, false);
    b.insert(T0, read(0, 1, 0));
    let q = b.by_key[&(0, 1)];
    assert_eq!(b.q(q).max_budget, 2 * DEFAULT_MAX_BUDGET / 3, "bfq_init_bfqq: 2/3 of the maximum");
    b.qm(q).max_budget = 4096;
    b.recalc_budget(q, Expiration::BudgetExhausted);
    assert_eq!(b.q(q).max_budget, 16384, "exhausted: ×4, capped at the maximum");
    b.qm(q).max_budget = 4096;
    b.recalc_budget(q, Expiration::BudgetTimeout);
    assert_eq!(b.q(q).max_budget, 8192, "timeout: ×2");
    b.qm(q).max_budget = 4096;
    b.recalc_budget(q, Expiration::TooIdle);
    assert_eq!(b.q(q).max_budget, 4096 - 4 * 512, "idle in vain, nothing in flight: −4 min budgets");
    b.qm(q).max_budget = 2000;
    b.recalc_budget(q, Expiration::TooIdle);
    assert_eq!(b.q(q).max_budget, 512, "under 5 min budgets: the minimum");
    b.qm(q).en.service = 3000;
    b.recalc_budget(q, Expiration::NoMoreRequests);
    assert_eq!(b.q(q).max_budget, 3000, "ran dry: the service it needed");
    // Its next budget fits its next request.
    assert_eq!(b.q(q).en.budget, 3000);
}

#[test]
fn a_sequential_queue_is_served_until_its_budget_is_exhausted() {
    // Two greedy sequential readers of equal weight (low_latency off): the first keeps the
    // device until its budget (2/3 × 16384 sectors) is used, then the second gets it.
    let t = BfqTunables {
        low_latency: false,
        ..Default::default()
    };
    let mut b = Bfq::new(t, false);
    let mut next = [0u64; 3];
    let mut id = 0;
    let mut now = T0;
    for o in 1..=2 {
        for _ in 0..200 {
            b.insert(now, read(id, o, next[o as usize]));
            next[o as usize] += 1;
            id += 1;
        }
    }
    let mut order = Vec::new();
    for _ in 0..120 {
        let r = b.dispatch(now).expect("backlogged");
        order.push(r.owner);
        now += MSEC;
        b.completed(now, r.id);
    }
    let first = order[0];
    let run = order.iter().take_while(|&&o| o == first).count() as u64;
    let budget = 2 * DEFAULT_MAX_BUDGET / 3;
    // The queue expires when its next request no longer fits what is left of the budget.
    assert_eq!(run, budget / 256, "one budget of 256-sector reads: {order:?}");
    assert!(order[run as usize..].iter().take(10).all(|&o| o != first), "then the other queue");
    let switches = order.windows(2).filter(|w| w[0] != w[1]).count() as u64;
    // Every switch is a budget running out (a queue may also win again on a tie).
    assert!(b.stats.expirations[Expiration::BudgetExhausted as usize] >= switches.max(1));
    assert_eq!(
        b.stats.expirations.iter().sum::<u64>(),
        b.stats.expirations[Expiration::BudgetExhausted as usize]
    );
}

#[test]
fn weights_share_the_device_by_wf2q() {
    // ionice -c2 -n0 (weight 80) against -n4 (40), both greedy and sequential, no weight
    // raising, statistics settled: service in a 2:1 ratio.
    let t = BfqTunables {
        low_latency: false,
        ..Default::default()
    };
    let mut b = Bfq::new(t, true);
    let mut next = [0u64; 3];
    let mut id = 0u32;
    let mut now = T0;
    let mut served = [0u64; 3];
    let mut in_flight: Vec<u32> = Vec::new();
    for step in 0..20_000 {
        for o in 1..=2u32 {
            let q = b.by_key.get(&(0, o)).copied();
            if q.is_none_or(|q| b.q(q).queued() < 4) {
                let mut r = read(id, o, next[o as usize]);
                r.prio = IoPrio {
                    class: IoPrioClass::Be,
                    level: if o == 1 { 0 } else { 4 },
                };
                b.insert(now, r);
                next[o as usize] += 1;
                id += 1;
            }
        }
        if let Some(r) = b.dispatch(now) {
            if step > 2000 {
                served[r.owner as usize] += r.nr_sectors;
            }
            in_flight.push(r.id);
        }
        now += 200 * USEC;
        if in_flight.len() >= 2 || b.dispatch_is_idle() {
            let done = in_flight.remove(0);
            b.completed(now, done);
        }
    }
    let ratio = served[1] as f64 / served[2] as f64;
    assert!((1.8..2.2).contains(&ratio), "weight 80 vs 40 got {served:?}, ratio {ratio:.2}");
}

#[test]
fn an_emptied_reader_keeps_the_disk_against_writes_until_slice_idle() {
    // On a rotational disk a sync reader that empties is idled for: the flusher's queued
    // write waits for the reader's next request or for the 8 ms idle timer.
    let t = BfqTunables {
        low_latency: false,
        ..Default::default()
    };
    let mut b = Bfq::new(t, false);
    b.insert(T0, read(0, 1, 0));
    assert_eq!(b.dispatch(T0).map(|r| r.id), Some(0));
    b.insert(T0, write(1, 5_000_000));
    b.completed(T0 + MSEC, 0);
    assert_eq!(b.next_timer(), Some(T0 + MSEC + 8 * MSEC), "slice_idle armed");
    assert!(b.dispatch(T0 + 2 * MSEC).is_none(), "idling: the write waits");
    // The reader's next request comes within the window (it thinks 0.1 ms: I/O-bound) and
    // is served first.
    let t1 = T0 + MSEC + 100 * USEC;
    b.insert(t1, read(2, 1, 1));
    assert_eq!(b.dispatch(t1).map(|r| r.id), Some(2));
    b.completed(t1 + MSEC, 2);
    // Now the reader thinks too long: the timer fires and the write goes.
    let t_idle = b.next_timer().expect("armed again");
    assert_eq!(t_idle, t1 + MSEC + 8 * MSEC);
    assert!(b.dispatch(t1 + 5 * MSEC).is_none());
    b.timer_fired(t_idle);
    assert_eq!(b.dispatch(t_idle).map(|r| r.id), Some(1));
    assert_eq!(b.stats.expirations[Expiration::TooIdle as usize], 1);
}

#[test]
fn slice_idle_zero_never_idles() {
    let t = BfqTunables {
        low_latency: false,
        slice_idle: 0,
        ..Default::default()
    };
    let mut b = Bfq::new(t, false);
    b.insert(T0, read(0, 1, 0));
    assert_eq!(b.dispatch(T0).map(|r| r.owner), Some(1));
    b.insert(T0, write(1, 5_000_000));
    b.completed(T0 + MSEC, 0);
    assert_eq!(b.next_timer(), None);
    assert_eq!(b.dispatch(T0 + MSEC).map(|r| r.id), Some(1));
}

#[test]
fn async_writes_get_less_of_the_tags_while_a_queue_is_raised() {
    let mut b = bfq(true);
    assert_eq!(b.shallow_depth(Op::Write, false, 64), Some(32));
    assert_eq!(b.shallow_depth(Op::Write, true, 64), Some(48));
    assert_eq!(b.shallow_depth(Op::Read, true, 64), None);
    b.insert(T0, read(0, 1, 0));
    assert_eq!(b.wr_busy, 1, "the new reader is raised");
    assert_eq!(b.shallow_depth(Op::Write, false, 64), Some(12));
    assert_eq!(b.shallow_depth(Op::Write, true, 64), Some(24));
}

#[test]
fn a_large_burst_of_new_queues_is_not_weight_raised() {
    // bfq_handle_burst: 8 queues created within 180 ms of each other.
    let mut b = bfq(true);
    for o in 1..=10u32 {
        b.insert(T0 + u64::from(o) * 10 * MSEC, read(o, o, 0));
    }
    let raised = (1..=10u32).filter(|&o| b.q(b.by_key[&(0, o)]).wr_coeff > 1).count();
    assert_eq!(raised, 7, "the first 7 were raised before the burst turned large");
}

#[test]
fn peak_rate_sets_the_max_budget() {
    // A sequential stream at 100 MB/s (200 sectors/ms) for over a second: the max budget
    // becomes what that rate moves in timeout_sync (125 ms): about 25 000 sectors.
    let mut b = bfq(true);
    let mut now = T0;
    for i in 0..1500u32 {
        let r = read(i % 512, 1, u64::from(i));
        b.insert(now, r);
        let d = b.dispatch(now).expect("request");
        now += 1_280 * USEC;
        b.completed(now, d.id);
    }
    let expect = 200 * 125;
    assert!(
        b.max_budget > expect * 7 / 10 && b.max_budget < expect * 11 / 10,
        "max budget {}",
        b.max_budget
    );
}

impl Bfq {
    /// Nothing to dispatch now (the test drives completions when the device would idle).
    fn dispatch_is_idle(&self) -> bool {
        self.idle_timer.is_some()
    }
}

#[derive(Debug, Clone)]
enum Act {
    Insert {
        write: bool,
        sync: bool,
        owner: u32,
        sector: u64,
        nr: u64,
        level: u8,
    },
    Merge {
        write: bool,
        sector: u64,
        nr: u64,
    },
    Dispatch,
    Complete,
    Advance(u64),
}

fn act() -> impl proptest::strategy::Strategy<Value = Act> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (any::<bool>(), any::<bool>(), 1u32..5, 0u64..64, 1u64..4, 0u8..8).prop_map(|(w, sy, o, s, n, l)| Act::Insert {
            write: w,
            sync: sy || !w,
            owner: o,
            sector: s * 8,
            nr: n * 8,
            level: l,
        }),
        2 => (any::<bool>(), 0u64..64, 1u64..4).prop_map(|(w, s, n)| Act::Merge { write: w, sector: s * 8, nr: n * 8 }),
        3 => Just(Act::Dispatch),
        2 => Just(Act::Complete),
        1 => (0u64..3000).prop_map(Act::Advance),
    ]
}

proptest::proptest! {
    /// Every request comes out exactly once, as the block layer last saw it, and none is
    /// stranded: with completions and the idle timer honoured, the queue always drains.
    #[test]
    fn no_request_lost_duplicated_or_stranded(
        acts in proptest::collection::vec(act(), 1..300),
        hdd in proptest::prelude::any::<bool>(),
        low_latency in proptest::prelude::any::<bool>(),
        strict in proptest::prelude::any::<bool>(),
        grouped in proptest::prelude::any::<bool>(),
    ) {
        use proptest::prelude::*;
        let t = BfqTunables { low_latency, strict_guarantees: strict, ..Default::default() };
        let mut s = Bfq::new(t, !hdd);
        if grouped {
            // /a, /a/b (weight 300), /c (50): owners 1..4 submit in the root, /a, /a/b, /c.
            s.set_cgroups(&[grp(None, 100), grp(Some(0), 300), grp(None, 50)]);
        }
        let max = 64u64;
        let mut now: Ns = T0;
        let mut book = super::super::book::Book::default();
        let mut in_flight: std::collections::VecDeque<u32> = Default::default();
        let fire = |s: &mut Bfq, now: Ns| {
            if s.next_timer().is_some_and(|t| t <= now) {
                s.timer_fired(now);
            }
        };
        for a in acts {
            match a {
                Act::Insert { write, sync, owner, sector, nr, level } => {
                    let op = if write { Op::Write } else { Op::Read };
                    let id = book.add(op, sector, nr);
                    let class = match level { 0 => IoPrioClass::Rt, 7 => IoPrioClass::Idle, _ => IoPrioClass::Be };
                    let prio = IoPrio { class, level: if sync { 4 } else { level % 8 } };
                    s.insert(now, ElvRq { id, op, sector, nr_sectors: nr, sync, owner: if sync { owner } else { 0 }, prio, blkcg: (grouped && owner > 1).then(|| owner as u16 - 2) });
                }
                Act::Merge { write, sector, nr } => {
                    let op = if write { Op::Write } else { Op::Read };
                    if let Some((id, side)) = s.try_merge(op, sector, nr, max) {
                        book.merged(id, side, op, sector, nr, max)?;
                    }
                }
                Act::Dispatch => {
                    if let Some(r) = s.dispatch(now) {
                        book.out(&r)?;
                        in_flight.push_back(r.id);
                    }
                }
                Act::Complete => {
                    if let Some(id) = in_flight.pop_front() {
                        s.completed(now, id);
                        book.release(id);
                    }
                }
                Act::Advance(us) => {
                    now += us * USEC;
                    fire(&mut s, now);
                }
            }
            prop_assert_eq!(s.queued(), book.live.len());
            for (g, grp) in s.groups.iter().enumerate() {
                let wsum: u64 = grp.sd.iter().map(|t| t.wsum).sum();
                let queues = s.qs.iter().map(|q| &q.en);
                let children = s.groups.iter().skip(1).map(|x| &x.en);
                let counted: u64 = queues.chain(children).filter(|e| e.parent as usize == g && e.tree != Tree::None).map(|e| e.weight).sum();
                prop_assert_eq!(wsum, counted, "group {}'s weight sums match the entities counted", g);
                let pending = s.qs.iter().filter(|q| q.pending && q.en.parent as usize == g).count() as u32;
                prop_assert_eq!(grp.pending_queues, pending);
            }
            prop_assert_eq!(s.groups_with_pending as usize, s.groups.iter().filter(|g| g.pending_queues > 0).count());
            prop_assert_eq!(s.wr_busy as usize, s.qs.iter().filter(|q| q.busy && q.wr_coeff > 1).count());
        }
        for _ in 0..100_000 {
            if book.live.is_empty() {
                break;
            }
            while let Some(r) = s.dispatch(now) {
                book.out(&r)?;
                in_flight.push_back(r.id);
            }
            match in_flight.pop_front() {
                Some(id) => {
                    now += MSEC;
                    s.completed(now, id);
                    book.release(id);
                }
                None => {
                    now = s.next_timer().map_or(now + MSEC, |t| t.max(now));
                    fire(&mut s, now);
                }
            }
        }
        prop_assert!(book.live.is_empty(), "stranded: {:?}", book.live);
    }
}

/// Greedy sequential readers (no weight raising) in the cgroups `groups` (parent, weight),
/// `readers[g]` of them in group `g` (the last entry: the root): the sectors each group was
/// served once the budgets settled.
fn served_by_group(groups: &[ElvGroup], readers: &[u32]) -> Vec<u64> {
    let t = BfqTunables {
        low_latency: false,
        ..Default::default()
    };
    let mut b = Bfq::new(t, true);
    b.set_cgroups(groups);
    // Owner o + 1 reads in group `of[o]` (None: the root).
    let of: Vec<Option<u16>> = readers
        .iter()
        .enumerate()
        .flat_map(|(g, &n)| std::iter::repeat_n((g < groups.len()).then_some(g as u16), n as usize))
        .collect();
    let mut next = vec![0u64; of.len()];
    let mut served = vec![0u64; readers.len()];
    let (mut id, mut now) = (0u32, T0);
    let mut in_flight: Vec<u32> = Vec::new();
    for step in 0..40_000 {
        for (o, &cg) in of.iter().enumerate() {
            let owner = o as u32 + 1;
            let q = b.by_key.get(&(cg.map_or(0, |c| u32::from(c) + 1), owner)).copied();
            if q.is_none_or(|q| b.q(q).queued() < 4) {
                let mut r = read(id, owner, next[o]);
                r.blkcg = cg;
                b.insert(now, r);
                next[o] += 1;
                id += 1;
            }
        }
        if let Some(r) = b.dispatch(now) {
            if step > 4000 {
                let g = of[r.owner as usize - 1].map_or(readers.len() - 1, usize::from);
                served[g] += r.nr_sectors;
            }
            in_flight.push(r.id);
        }
        now += 200 * USEC;
        if in_flight.len() >= 2 || b.dispatch_is_idle() {
            let done = in_flight.remove(0);
            b.completed(now, done);
        }
    }
    served
}

fn grp(parent: Option<u16>, weight: u64) -> ElvGroup {
    ElvGroup { parent, weight }
}

#[test]
fn groups_share_the_device_by_weight_whatever_their_number_of_queues() {
    // One reader in /a against three in /b, equal group weights: half each.
    let s = served_by_group(&[grp(None, 100), grp(None, 100)], &[1, 3, 0]);
    let ratio = s[0] as f64 / s[1] as f64;
    assert!(
        (0.8..1.25).contains(&ratio),
        "1 reader vs 3 in equal groups: {s:?}, ratio {ratio:.2}"
    );
    // The root's own queues compete with its child groups as entities: /a (100) against
    // three root readers (40 each) gets 100 / 220.
    let s = served_by_group(&[grp(None, 100)], &[1, 3]);
    let share = s[0] as f64 / (s[0] + s[1]) as f64;
    assert!(
        (share - 100.0 / 220.0).abs() < 0.04,
        "/a beside three root readers: {s:?}, share {share:.3}"
    );
    // io.bfq.weight 300 against 100.
    let s = served_by_group(&[grp(None, 300), grp(None, 100)], &[1, 1, 0]);
    let ratio = s[0] as f64 / s[1] as f64;
    assert!((2.6..3.4).contains(&ratio), "weight 300 vs 100: {s:?}, ratio {ratio:.2}");
}

#[test]
fn a_nested_group_splits_its_parents_share() {
    // /a (100) holds /a/x (100) and /a/y (300); /b (100) beside /a. /b gets half, /a/x an
    // eighth, /a/y three eighths: service is charged up the hierarchy.
    let s = served_by_group(
        &[grp(None, 100), grp(Some(0), 100), grp(Some(0), 300), grp(None, 100)],
        &[0, 1, 1, 1, 0],
    );
    let total = (s[1] + s[2] + s[3]) as f64;
    let share: Vec<f64> = [s[1], s[2], s[3]].iter().map(|&x| x as f64 / total).collect();
    for (got, want) in share.iter().zip([0.125, 0.375, 0.5]) {
        assert!((got - want).abs() < 0.05, "shares {share:.3?}, want [0.125, 0.375, 0.5]");
    }
}

#[test]
fn requests_pending_in_two_groups_make_the_scenario_asymmetric() {
    // bfq_asymmetric_scenario (6.2+): the root counts as a group; two groups with requests
    // pending force idling for service guarantees, one does not.
    let t = BfqTunables {
        low_latency: false,
        ..Default::default()
    };
    let mut b = Bfq::new(t, true);
    b.set_cgroups(&[grp(None, 100)]);
    b.insert(T0, read(0, 1, 0));
    b.insert(T0, read(1, 2, 0));
    let q1 = b.by_key[&(0, 1)];
    assert!(!b.asymmetric(q1), "two queues of equal weight in the root");
    let mut r = read(2, 3, 0);
    r.blkcg = Some(0);
    b.insert(T0, r);
    assert!(b.asymmetric(q1), "the root and /a both have requests pending");
    assert_eq!(b.groups_with_pending, 2);
    // Served and completed, /a's queue no longer counts.
    let mut now = T0;
    while let Some(r) = b.dispatch(now) {
        now += MSEC;
        b.completed(now, r.id);
    }
    for _ in 0..10 {
        if let Some(t) = b.next_timer() {
            now = now.max(t);
            b.timer_fired(now);
        }
        while let Some(r) = b.dispatch(now) {
            now += MSEC;
            b.completed(now, r.id);
        }
    }
    assert_eq!(b.queued(), 0);
    assert_eq!(b.groups_with_pending, 0, "no group has requests pending once all completed");
}
