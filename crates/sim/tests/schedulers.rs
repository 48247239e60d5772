//! Today's schedulers as a user choosing one meets them: what kyber does for a reader beside
//! writers that fill the device, and when it does nothing. The laws run on every simulation.

use wblab_sim::config::{DeviceModelConfig, JobConfig, Scenario, SchedulerKind, SsdParams, TaskConfig};
use wblab_sim::metrics::RunResult;
use wblab_sim::units::{GIB, KIB, MIB};
use wblab_testkit::sim::{run, MS, SEC};

/// An NVMe-like SSD without a write cache, 32 O_DIRECT writers of 1 MiB (a database's or a
/// backup's I/O: blk-wbt leaves direct writes alone) and, from 2 s on, a 4 KiB O_DIRECT
/// random reader, under `scheduler` with kyber's write target `write_lat`.
fn readers_and_direct_writers(scheduler: SchedulerKind, write_lat: Option<u64>) -> RunResult {
    let ssd = SsdParams {
        write_cache: false,
        ..SsdParams::default()
    };
    let mut sc = Scenario::one_device("kyber", DeviceModelConfig::Ssd(ssd), 8 * GIB, 2, 10 * SEC);
    let q = &mut sc.devices[0].queue;
    q.select_elevator(scheduler);
    q.nr_requests = 2 * q.nr_requests.min(128);
    if let Some(ns) = write_lat {
        q.tunables.set("write_lat_nsec", ns);
    }
    sc.devices[0].size = 64 * GIB;
    sc.add_task(
        "writer",
        32,
        0,
        JobConfig::Dd {
            bs: MIB,
            size: None,
            fsync: false,
            direct: true,
        },
    );
    sc.tasks.push(TaskConfig {
        name: "reader".into(),
        count: 1,
        device: 0,
        file: "/mnt/sda/db".into(),
        start: 2 * SEC,
        stop: None,
        job: JobConfig::Randread {
            bs: 4 * KIB,
            file_size: 4 * GIB,
            direct: true,
            think: 0,
        },
    });
    run(&sc)
}

fn reader_p50(r: &RunResult) -> u64 {
    r.tasks
        .iter()
        .find(|t| t.name == "reader")
        .expect("reader")
        .op_latency
        .summary()
        .p50
}

fn written(r: &RunResult) -> u64 {
    r.tasks.iter().filter(|t| t.name == "writer").map(|t| t.bytes_written).sum()
}

#[test]
fn kyber_throttles_writes_that_meet_their_target_so_reads_meet_theirs() {
    // 32 MiB of writes in the device make every read wait ~17 ms. With a write target the
    // writes meet (100 ms), kyber sees reads beyond their 2 ms target, shrinks the write
    // tokens, and the reads get through; the writers lose next to nothing.
    let none = readers_and_direct_writers(SchedulerKind::NONE, None);
    let kyber = readers_and_direct_writers(SchedulerKind::KYBER, Some(100 * MS));
    assert!(
        reader_p50(&none) > 10 * MS,
        "none: reads wait behind the writes ({} ns)",
        reader_p50(&none)
    );
    assert!(
        reader_p50(&kyber) * 4 < reader_p50(&none),
        "kyber: read p50 {} ns, none {} ns",
        reader_p50(&kyber),
        reader_p50(&none)
    );
    assert!(
        written(&kyber) as f64 >= 0.95 * written(&none) as f64,
        "writers: {} MiB with kyber, {} MiB with none",
        written(&kyber) / MIB,
        written(&none) / MIB
    );
}

#[test]
fn kyber_leaves_writes_alone_when_they_miss_their_own_target_too() {
    // With the default 10 ms write target the writes (17 ms) are as late as the reads: both
    // domains do badly, kyber throttles neither, and the reader fares as under none.
    let none = readers_and_direct_writers(SchedulerKind::NONE, None);
    let kyber = readers_and_direct_writers(SchedulerKind::KYBER, None);
    let (a, b) = (reader_p50(&none) as f64, reader_p50(&kyber) as f64);
    assert!((b / a - 1.0).abs() < 0.10, "kyber {b} ns vs none {a} ns");
}
