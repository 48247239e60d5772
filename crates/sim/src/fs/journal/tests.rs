//! ext3's ordered writeout as the machine holds it: a commit's data goes to the disk run by
//! run, and the requests it holds at once stay those of a few runs however much it writes.

use crate::config::{DataMode, DeviceModelConfig, FsKind, HddParams, JobConfig, MountConfig, Scenario};
use crate::engine::time::NSEC_PER_SEC as SEC;
use crate::fs::jbd2::JournalIo;
use crate::generations::Version;
use crate::machine::{Machine, RunOptions};
use crate::units::{GIB, KIB, MIB};

/// A copy and a 4 KiB fsync every 100 ms from 5 s on, on an ext3 `data=ordered` disk: each
/// commit writes every dirty page of the copy first.
fn copy_beside_fsync() -> Machine {
    copy_beside_fsync_on(FsKind::Ext3, Version(2, 6, 24))
}

/// The same on `fs` with the mount defaults of `release`, `data=ordered`.
fn copy_beside_fsync_on(fs: FsKind, release: Version) -> Machine {
    let mut sc = Scenario::one_device("ordered", DeviceModelConfig::Hdd(HddParams::default()), 4 * GIB, 2, 30 * SEC);
    let mut m = MountConfig::defaults(fs, release);
    m.data = DataMode::Ordered;
    sc.devices[0].fs = Some(m);
    // 2.6's BLK_DEF_MAX_SECTORS: 128 pages a request.
    sc.devices[0].queue.max_sectors_kb = 512;
    sc.add_task(
        "copy",
        1,
        0,
        JobConfig::Dd {
            bs: MIB,
            size: None,
            fsync: false,
            direct: false,
        },
    );
    sc.add_task(
        "commit",
        1,
        5 * SEC,
        JobConfig::Fsync {
            bytes: 4 * KIB,
            interval: SEC / 10,
        },
    );
    Machine::with_options(&sc, RunOptions { check_laws: true })
}

#[test]
fn an_ordered_commit_holds_the_requests_of_a_few_runs_not_of_all_its_pages() {
    let mut m = copy_beside_fsync();
    m.start();
    let (mut most_slots, mut most_runs_pages) = (0, 0);
    while m.q.peek_time().is_some_and(|t| t <= 30 * SEC) {
        assert!(m.step(), "a law broke: {:?}", m.broken());
        most_slots = most_slots.max(m.queues[0].request_slots());
        let j = m.journals[0].as_ref().expect("ext3 has a journal");
        let waiting: u64 = j
            .pending
            .iter()
            .map(|io| match *io {
                JournalIo::Run { pages, .. } => pages,
                JournalIo::Rq(_) => 0,
            })
            .sum();
        most_runs_pages = most_runs_pages.max(waiting);
    }
    let max_pages = m.queues[0].max_sectors / 8;
    // The commits took many requests' worth of pages at once...
    assert!(
        most_runs_pages > 20 * max_pages,
        "the largest ordered writeout waiting was {most_runs_pages} pages ({max_pages} a request)"
    );
    // ...and the queue never held many more requests than its slots, its submitters' batches
    // and the requests they sleep on need (built all at once, the commits' runs held five times that).
    let nr_requests = m.queues[0].nr_requests as usize;
    assert!(
        most_slots < 6 * nr_requests,
        "{most_slots} requests allocated at once against {nr_requests} slots per direction"
    );
}

#[test]
fn an_ordered_run_left_unbuilt_at_the_front_breaks_liveness() {
    let mut m = copy_beside_fsync();
    m.start();
    while m.q.peek_time().is_some_and(|t| t <= 2 * SEC) {
        assert!(m.step(), "a law broke: {:?}", m.broken());
    }
    assert_eq!(m.check_laws(), None);
    let ino = m.tasks[0].file;
    let j = m.journals[0].as_mut().expect("ext3 has a journal");
    j.pending.push_front(JournalIo::Run { ino, start: 0, pages: 1 });
    let v = m.check_laws().expect("liveness");
    assert_eq!(v.law, crate::laws::Law::Liveness);
    assert!(v.detail.contains("unbuilt"), "{v}");
}

/// A commit waiting for ordered data is woken by each write that completes, and most such
/// wakes find data still unwritten: those are kept off the event queue until the data is all
/// written. The run must be the same as with every wake an event, with fewer events.
#[test]
fn ordered_data_wakes_kept_off_the_queue_change_nothing_but_the_event_count() {
    for (fs, kernel) in [(FsKind::Ext3, Version(2, 6, 24)), (FsKind::Ext4, Version(3, 2, 0))] {
        let result = |all_queued: bool| {
            let mut m = copy_beside_fsync_on(fs, kernel);
            m.journals[0].as_mut().expect("a journal").wakes_all_queued = all_queued;
            m.run(&mut crate::machine::NoProgress).expect("laws hold");
            m.finish()
        };
        let (mut late, mut queued) = (result(false), result(true));
        assert!(
            late.events < queued.events,
            "{fs:?}: {} events with wakes kept off the queue, {} without",
            late.events,
            queued.events
        );
        let commits = late.devices[0].journal.as_ref().map_or(0, |j| j.commits);
        assert!(commits >= 5, "{fs:?}: {commits} commits");
        (late.events, queued.events) = (0, 0);
        assert!(format!("{late:?}") == format!("{queued:?}"), "{fs:?}: the runs differ");
    }
}

#[test]
fn a_wake_kept_off_the_queue_once_the_ordered_data_is_written_breaks_liveness() {
    let mut m = copy_beside_fsync();
    m.start();
    // Run until the commit thread's wake is kept off the queue while it waits for data.
    let mut kept = false;
    while m.q.peek_time().is_some_and(|t| t <= 30 * SEC) {
        assert!(m.step(), "a law broke: {:?}", m.broken());
        let j = m.journals[0].as_ref().expect("ext3 has a journal");
        if j.woken_for != 0 && !j.wake_queued && j.wake_at >= m.now() {
            kept = true;
            break;
        }
    }
    assert!(kept, "no wake was ever kept off the queue");
    assert_eq!(m.check_laws(), None);
    // The commit's ordered data met behind the journal's back: the wake would never come.
    let c = m.journals[0].as_mut().and_then(|j| j.committing.as_mut()).expect("a commit");
    c.ordered_targets.iter_mut().for_each(|t| t.1 = 0);
    let v = m.check_laws().expect("liveness");
    assert_eq!(v.law, crate::laws::Law::Liveness);
    assert!(v.detail.contains("kept off the queue"), "{v}");
}
