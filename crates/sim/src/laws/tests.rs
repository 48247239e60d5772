//! Each law must fire when what it guards is broken, and stay quiet on a healthy run. The
//! breakages are the mechanisms of real bugs wblab had: requests built and never submitted
//! (`dd conv=fsync`), kupdate that never writes (an fsync hiding older inodes), an event loop
//! stuck at one instant (CFQ's idle timer).

use super::Law;
use crate::block::queue::Submitter;
use crate::config::{DeviceModelConfig, JobConfig, Scenario, SsdParams};
use crate::kernel::task::Phase;
use crate::kernel::waitqueue::{PageWaitState, WaitSite, PG_LOCKED, PG_WRITEBACK};
use crate::machine::{Event, Machine, NoProgress, RunOptions};
use crate::units::{GIB, KIB, MIB};

use crate::engine::time::NSEC_PER_SEC as SEC;

/// A machine checking its laws whatever the build (they are off by default without debug
/// assertions, as under `cargo test --release`).
fn laws_on(sc: &Scenario) -> Machine {
    Machine::with_options(sc, RunOptions { check_laws: true })
}

/// One SSD, 4 GiB, one `dd` of `size` bytes that ends well before `duration`.
fn dd_machine(size: u64, duration: u64) -> Machine {
    let mut sc = Scenario::one_device("laws", DeviceModelConfig::Ssd(SsdParams::default()), 4 * GIB, 2, duration);
    sc.add_task(
        "dd",
        1,
        0,
        JobConfig::Dd {
            bs: MIB,
            size: Some(size),
            fsync: false,
            direct: false,
        },
    );
    laws_on(&sc)
}

/// Run `m` until simulated time `t` (or its end); the laws must hold on the way.
fn run_until(m: &mut Machine, t: u64) {
    while m.q.peek_time().is_some_and(|n| n <= t) {
        assert!(m.step(), "a law broke on a healthy run: {:?}", m.broken());
    }
}

fn law_of(m: &mut Machine) -> Law {
    m.check_laws().expect("the law must fire").law
}

#[test]
fn a_healthy_run_keeps_every_law() {
    let mut m = dd_machine(64 * MIB, 40 * SEC);
    m.start();
    run_until(&mut m, 40 * SEC);
    assert_eq!(m.check_laws(), None);
    // The dd's pages all reached the device through kupdate (below the background limit).
    assert_eq!(m.queues[0].bytes_written, 64 * MIB);
}

#[test]
fn a_page_written_twice_breaks_conservation() {
    let mut m = dd_machine(8 * MIB, 5 * SEC);
    m.start();
    run_until(&mut m, SEC);
    let ino = m.tasks[0].file;
    m.inodes[ino as usize].nr_written += 1;
    let v = m.check_laws().expect("conservation");
    assert_eq!(v.law, Law::Conservation);
    assert!(v.subject.contains("inode"), "{v}");
}

#[test]
fn requests_left_on_a_sleeping_submitter_break_liveness() {
    // The `dd conv=fsync` bug: writeback built on the task's plug and never submitted.
    let mut m = dd_machine(8 * MIB, 5 * SEC);
    m.start();
    run_until(&mut m, SEC);
    assert!(m.tasks[0].is_done());
    let ino = m.tasks[0].file;
    assert!(m.inodes[ino as usize].mapping.nr_dirty > 0, "the dd's pages wait for kupdate");
    m.do_writepages(ino, 0, u64::MAX, Submitter::Task(0), true, false);
    let v = m.check_laws().expect("liveness");
    assert_eq!(v.law, Law::Liveness);
    assert!(v.detail.contains("stranded in Built"), "{v}");
}

#[test]
fn an_fsync_returning_before_its_pages_are_written_breaks_durability() {
    let mut m = dd_machine(8 * MIB, 5 * SEC);
    m.start();
    run_until(&mut m, SEC);
    let ino = m.tasks[0].file;
    m.durability_begin(0, Some(ino));
    m.durability_end(0);
    let v = m.broken().expect("durability").clone();
    assert_eq!(v.law, Law::Durability);
    assert!(v.detail.starts_with("fsync"), "{v}");
}

#[test]
fn an_fsync_returning_without_a_cache_flush_breaks_durability() {
    // The pages reach the disk (kupdate writes them), but the call returns without the flush
    // that would take them out of the drive's volatile cache.
    let mut m = dd_machine(8 * MIB, 60 * SEC);
    m.start();
    run_until(&mut m, 2 * SEC);
    let ino = m.tasks[0].file;
    assert!(m.inodes[ino as usize].mapping.nr_dirty > 0);
    m.durability_begin(0, Some(ino));
    run_until(&mut m, 45 * SEC);
    assert_eq!(
        m.inodes[ino as usize].mapping.nr_dirty + m.inodes[ino as usize].mapping.nr_writeback,
        0
    );
    m.durability_end(0);
    let v = m.broken().expect("durability").clone();
    assert_eq!(v.law, Law::Durability);
    assert!(v.detail.contains("before a cache flush of sda"), "{v}");
    // With "write through" the block layer drops flushes: the same call is durable.
    let mut m = dd_machine(8 * MIB, 60 * SEC);
    m.queues[0].write_cache = false;
    m.start();
    run_until(&mut m, 2 * SEC);
    m.durability_begin(0, Some(ino));
    run_until(&mut m, 45 * SEC);
    m.durability_end(0);
    assert_eq!(m.broken(), None);
}

#[test]
fn pages_dirtied_again_after_the_call_are_not_promised() {
    let mut m = dd_machine(8 * MIB, 5 * SEC);
    m.start();
    run_until(&mut m, SEC);
    let ino = m.tasks[0].file;
    let dirty = m.inodes[ino as usize].mapping.nr_dirty;
    // Start writeback of everything, promise, then dirty the same pages again: the promise
    // covers the writeback, which has not completed, so it must still fire...
    m.durability_begin(0, Some(ino));
    m.durability_end(0);
    assert_eq!(m.broken().map(|v| v.law), Some(Law::Durability));
    // ...but a fresh machine whose promised pages are all dirtied again after the call is fine.
    let mut m = dd_machine(8 * MIB, 5 * SEC);
    m.start();
    run_until(&mut m, SEC);
    m.durability_begin(0, Some(ino));
    m.laws.durability.dirtied(ino, 0, dirty);
    m.durability_end(0);
    assert_eq!(m.broken(), None);
}

#[test]
fn a_flusher_that_never_writes_old_data_breaks_expiry() {
    // The fsync-hides-older-inodes bug stopped kupdate from writing anything: here kupdate
    // is kept from running at all. 64 MiB stays below the background threshold of 4 GiB.
    let mut m = dd_machine(64 * MIB, 60 * SEC);
    m.start();
    m.flushers[0].last_old_flush = u64::MAX / 4;
    let mut broken = None;
    while m.step() {}
    if let Some(v) = m.broken() {
        broken = Some(v.clone());
    }
    let v = broken.expect("expiry must fire");
    assert_eq!(v.law, Law::Expiry, "{v}");
    // dirty_expire 30 s + 2 × 5 s + 1 s, on marks every 2.56 s.
    assert!(v.t_ns > 41 * SEC && v.t_ns < 50 * SEC, "{v}");
}

#[test]
fn a_page_waiter_whose_page_is_idle_is_a_lost_wakeup() {
    let mut m = dd_machine(8 * MIB, 5 * SEC);
    m.start();
    run_until(&mut m, SEC);
    let file = m.tasks[0].file;
    let t = &mut m.tasks[0];
    t.phase = Phase::WaitSync;
    t.wq.wait = Some(PageWaitState {
        file,
        page: 1 << 30,
        bits: PG_WRITEBACK,
        site: WaitSite::WaitOnPageBit,
        exclusive: false,
        queued: true,
    });
    let v = m.check_laws().expect("liveness");
    assert_eq!(v.law, Law::Liveness);
    assert!(v.detail.starts_with("lost wakeup"), "{v}");
}

/// wake-one (2.6.7–4.9) wakes one `__lock_page` waiter of an unlocked page; the others sleep
/// on until its unlock: not a lost wakeup while it has yet to run, one once it is gone.
#[test]
fn a_locker_behind_a_woken_locker_waits_for_its_unlock() {
    let mut sc = Scenario::one_device("laws", DeviceModelConfig::Ssd(SsdParams::default()), 4 * GIB, 2, 5 * SEC);
    let dd = JobConfig::Dd {
        bs: MIB,
        size: Some(8 * MIB),
        fsync: false,
        direct: false,
    };
    sc.add_task("dd", 2, 0, dd);
    let mut m = laws_on(&sc);
    m.start();
    run_until(&mut m, SEC);
    let file = m.tasks[0].file;
    let lock = |queued| {
        Some(PageWaitState {
            file,
            page: 1 << 30,
            bits: PG_LOCKED,
            site: WaitSite::LockPage,
            exclusive: true,
            queued,
        })
    };
    for t in &mut m.tasks {
        t.phase = Phase::WaitRead;
    }
    // Task 0 was woken and holds the wakeup; task 1 sleeps behind it.
    m.tasks[0].wq.wait = lock(false);
    m.tasks[0].runs_pending = 1;
    m.tasks[1].wq.wait = lock(true);
    assert_eq!(m.check_laws(), None);
    // The woken one went away without unlocking: task 1 sleeps on a free page for nothing.
    m.tasks[0].wq.wait = None;
    m.tasks[0].phase = Phase::Done;
    let v = m.check_laws().expect("liveness");
    assert_eq!(v.law, Law::Liveness);
    assert!(v.subject.contains("dd#1") && v.detail.starts_with("lost wakeup"), "{v}");
}

#[test]
fn a_sleeper_with_nothing_to_wake_it_breaks_liveness() {
    let mut m = dd_machine(8 * MIB, 5 * SEC);
    m.start();
    run_until(&mut m, SEC);
    m.tasks[0].phase = Phase::WaitRead;
    assert_eq!(law_of(&mut m), Law::Liveness);
}

#[test]
fn an_event_loop_stuck_at_one_instant_breaks_progress() {
    let mut m = dd_machine(8 * MIB, 5 * SEC);
    let ev = Event::ElvTimer(0);
    let mut n = 0u64;
    while m.laws.broken.is_none() {
        m.laws_after_event(7, &ev);
        n += 1;
        assert!(n < 10_000_000, "the progress law never fired");
    }
    let v = m.laws.broken.clone().unwrap();
    assert_eq!(v.law, Law::Progress);
    assert!(v.detail.contains("ElvTimer"), "{v}");
    // Time moving on resets the count.
    let mut m = dd_machine(8 * MIB, 5 * SEC);
    for t in 0..3_000_000u64 {
        m.laws_after_event(t / 2, &ev);
    }
    assert_eq!(m.laws.broken, None);
}

#[test]
fn the_laws_cost_nothing_when_off() {
    let mut sc = Scenario::one_device("off", DeviceModelConfig::Ssd(SsdParams::default()), 4 * GIB, 2, 5 * SEC);
    sc.add_task(
        "dd",
        1,
        0,
        JobConfig::Dd {
            bs: 64 * KIB,
            size: None,
            fsync: false,
            direct: false,
        },
    );
    let on = crate::run_with(&sc, &mut NoProgress, crate::RunOptions { check_laws: true }).expect("laws hold");
    let off = crate::run_with(&sc, &mut NoProgress, crate::RunOptions { check_laws: false }).expect("no laws, no error");
    // Checking changes nothing in the results.
    assert_eq!(on.events, off.events);
    assert_eq!(on.devices[0].bytes_written, off.devices[0].bytes_written);
}
