//! Runs that look inside the machine: what the results do not show, checked on the state
//! itself (the throttle's counters, reclaim's priorities).

use super::Machine;
use crate::config::{DeviceModelConfig, HddParams, JobConfig, LoopParams, Scenario};
use crate::generations::set_kernel;
use crate::units::{GIB, KIB, MIB, NSEC_PER_SEC as SEC};

/// `dd bs=1M`, buffered, until the task stops.
fn dd() -> JobConfig {
    JobConfig::Dd {
        bs: MIB,
        size: None,
        fsync: false,
        direct: false,
    }
}

/// The 2.6-era test disk of `tests/generations.rs`.
fn hdd() -> DeviceModelConfig {
    DeviceModelConfig::Hdd(HddParams {
        transfer_outer: 72 * MIB,
        transfer_inner: 40 * MIB,
        ..Default::default()
    })
}

#[test]
fn legacy_reclaim_writes_dirty_pages_and_waits_when_memory_is_full_of_them() {
    // 2.6.20, memory dirtied right up to the end: a reader's allocation finds nothing clean,
    // reclaim pageout()s the oldest dirty pages and the reader sleeps in congestion_wait.
    let mut sc = Scenario::one_device("gen", hdd(), 256 * MIB, 2, 10 * SEC);
    set_kernel(&mut sc, "2.6.20").expect("a modelled kernel");
    sc.machine.unreclaimable = 64 * MIB;
    sc.sysctl.dirty_ratio = 0;
    sc.sysctl.dirty_bytes = 250 * MIB;
    sc.add_task("writer", 1, 0, dd());
    sc.add_task("reader", 1, 0, dd());
    let mut m = Machine::new(&sc);
    // Dirty every free page but the reserve, as the writer would.
    let free = m.vm.nr_free - m.vm.wmark_min;
    assert!(m.alloc_pages(0, free));
    let file = m.tasks[0].file;
    m.account_dirtied(0, file, 0, free);
    assert_eq!(m.vm.nr_dirty, free);
    // The reader needs 64 pages: nothing clean, so it must wait...
    assert!(!m.alloc_pages(1, 64));
    // ...after its reclaim started writing the oldest dirty pages (pageout).
    assert!(m.vm.nr_writeback > 0, "reclaim wrote dirty pages");
    assert!(m.tasks[1].reclaim_prio < 12, "it scanned down the priorities");
}

/// Every I/O path through blk-throttle at once (buffered writeback, fsync, readahead, O_DIRECT
/// reads), with a write limit above what the backing store can take, so the throttle's
/// dispatch work finds wbt's or the tags' limit reached and has to sleep, and a read IOPS
/// limit. Nobody may get stuck and the model's counters must stay consistent.
#[test]
fn every_path_through_the_throttle_keeps_moving() {
    let slow = LoopParams {
        backing_write_bandwidth: 50 * MIB,
        ..LoopParams::default()
    };
    let mut sc = Scenario::one_device("mix", DeviceModelConfig::Loop(slow), 4 * GIB, 2, 20 * SEC);
    sc.sysctl.dirty_bytes = 512 * MIB;
    sc.sysctl.dirty_background_bytes = 64 * MIB;
    let t = &mut sc.devices[0].throttle;
    t.write_bps = Some(200 * MIB);
    t.read_iops = Some(50);
    let dd = dd();
    sc.add_task("dd", 3, 0, dd);
    sc.add_task(
        "cat",
        1,
        SEC,
        JobConfig::Cat {
            bs: 128 * KIB,
            file_size: 256 * MIB,
        },
    );
    sc.add_task(
        "rr",
        1,
        2 * SEC,
        JobConfig::Randread {
            bs: 4 * KIB,
            file_size: 64 * MIB,
            direct: true,
            think: 0,
        },
    );
    sc.add_task(
        "fsync",
        1,
        0,
        JobConfig::Fsync {
            bytes: 64 * KIB,
            interval: SEC / 4,
        },
    );
    let mut m = Machine::new(&sc);
    m.start();
    let mut steps = 0u64;
    while m.step() {
        steps += 1;
        if steps.is_multiple_of(256) {
            if let Some(e) = m.check_laws() {
                panic!("{e}");
            }
        }
    }
    assert_eq!(m.check_laws(), None);
    let t = m.queues[0].throtl.as_ref().expect("the device has limits");
    let (throttled_reads, throttled_writes, work_sleeps) = (t.nr_throttled[0], t.nr_throttled[1], t.nr_work_sleeps);
    let r = m.finish();
    assert!(
        throttled_writes > 0 && throttled_reads > 0,
        "the limits never bit: {throttled_writes} writes, {throttled_reads} reads"
    );
    assert!(work_sleeps > 0, "the dispatch work never had to wait for wbt or a tag");
    // Everyone progresses. fsync least: its 64 KiB queue behind the flusher's backlog in
    // blk-throttle's FIFO and then in a full loop queue draining at 50 MiB/s (seconds each).
    for t in &r.tasks {
        let ops = t.op_latency.summary().count;
        assert!(ops >= 3, "{} did only {ops} operations", t.name);
    }
    // 50 read IOPS: random reads and readahead together stay under the limit.
    let reads = r.devices[0].requests_read as f64 / 18.0;
    assert!(reads <= 50.0 * 1.05, "{reads:.1} read requests/s with a 50 IOPS limit");
}
