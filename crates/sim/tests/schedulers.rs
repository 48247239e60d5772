//! Today's schedulers as a user choosing one meets them: what kyber does for a reader beside
//! writers that fill the device, and when it does nothing. The laws run on every simulation.

use wblab_sim::config::{DeviceModelConfig, IoPrio, IoPrioClass, JobConfig, Scenario, SchedulerKind, SsdParams, TaskConfig};
use wblab_sim::metrics::RunResult;
use wblab_sim::units::{GIB, KIB, MIB};
use wblab_testkit::sim::{dd_direct, run, MS, SEC};

/// A 4 KiB O_DIRECT random reader of a 4 GiB file from 2 s on, best effort.
fn reader() -> TaskConfig {
    TaskConfig {
        name: "reader".into(),
        count: 1,
        device: 0,
        file: "/mnt/sda/db".into(),
        start: 2 * SEC,
        stagger: 0,
        stop: None,
        ioprio: Default::default(),
        cgroup: None,
        after: Vec::new(),
        job: JobConfig::Randread {
            bs: 4 * KIB,
            file_size: 4 * GIB,
            direct: true,
            think: 0,
        },
    }
}

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
    sc.add_task("writer", 32, 0, dd_direct(MIB, None));
    sc.tasks.push(reader());
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

/// A 7200 rpm disk under `scheduler`: 4 backup streams of 1 MiB writes (O_DIRECT or
/// buffered) with `ionice` = `class`, and from 2 s on a 4 KiB O_DIRECT random reader.
fn backup_and_reader(scheduler: SchedulerKind, class: IoPrioClass, direct: bool) -> RunResult {
    let mut sc = Scenario::one_device("ionice", wblab_testkit::sim::hdd(), 8 * GIB, 2, 20 * SEC);
    sc.devices[0].size = 500 * GIB;
    let q = &mut sc.devices[0].queue;
    q.select_elevator(scheduler);
    q.nr_requests = if scheduler == SchedulerKind::NONE { 32 } else { 64 };
    sc.add_task(
        "backup",
        4,
        0,
        JobConfig::Dd {
            bs: MIB,
            size: None,
            fsync: false,
            direct,
        },
    );
    sc.tasks[0].ioprio = IoPrio { class, level: 4 };
    sc.tasks.push(reader());
    run(&sc)
}

fn backup_written(r: &RunResult) -> u64 {
    r.tasks.iter().filter(|t| t.name == "backup").map(|t| t.bytes_written).sum()
}

#[test]
fn ionice_idle_helps_a_reader_beside_a_direct_backup_under_mq_deadline_only() {
    // mq-deadline's idle class is a priority, not idling: the backup's next writes go to the
    // disk as soon as the reader has nothing queued or in the device, so the reader's next
    // read still finds them there. It gains a little, not what BFQ's or CFQ's idle class give.
    let dl = SchedulerKind::MQ_DEADLINE;
    let be = backup_and_reader(dl, IoPrioClass::Be, true);
    let idle = backup_and_reader(dl, IoPrioClass::Idle, true);
    assert!(
        reader_p50(&idle) < reader_p50(&be),
        "mq-deadline: reader p50 {} ns with an idle-class backup, {} ns best effort",
        reader_p50(&idle),
        reader_p50(&be)
    );
    // Idle is not starvation: between the reader's requests, and by prio_aging_expire, the
    // backup still writes.
    assert!(
        backup_written(&idle) > 50 * MIB,
        "idle backup wrote {} MiB",
        backup_written(&idle) / MIB
    );
    // `none` has no classes: ionice changes nothing.
    let none_be = backup_and_reader(SchedulerKind::NONE, IoPrioClass::Be, true);
    let none_idle = backup_and_reader(SchedulerKind::NONE, IoPrioClass::Idle, true);
    assert_eq!(reader_p50(&none_be), reader_p50(&none_idle));
}

/// An SSD under `scheduler`: one O_DIRECT 4 KiB writer, one request at a time, best effort,
/// and from 2 s on an idle-class O_DIRECT 4 KiB random reader.
fn idle_reader_beside_a_direct_writer(scheduler: SchedulerKind) -> RunResult {
    let mut sc = Scenario::one_device("idle", DeviceModelConfig::Ssd(SsdParams::default()), 8 * GIB, 2, 6 * SEC);
    sc.devices[0].queue.select_elevator(scheduler);
    sc.add_task("writer", 1, 0, dd_direct(4 * KIB, None));
    let mut r = reader();
    r.ioprio = IoPrio {
        class: IoPrioClass::Idle,
        level: 7,
    };
    sc.tasks.push(r);
    run(&sc)
}

#[test]
fn an_idle_reader_behind_a_busy_writer_waits_for_blk_mqs_delayed_run_under_mq_deadline() {
    // mq-deadline holds an idle read back while a best-effort request is in the device, and
    // its completion hook does not run the queue: the writer's next write is inserted before
    // anyone looks again, so the read goes when blk-mq's 3 ms delayed run finds the device
    // between two writes. Under `none` the same read takes a service time.
    let none = idle_reader_beside_a_direct_writer(SchedulerKind::NONE);
    let dl = idle_reader_beside_a_direct_writer(SchedulerKind::MQ_DEADLINE);
    let (a, b) = (reader_p50(&none), reader_p50(&dl));
    assert!(a < MS, "none: the idle read takes a service time ({a} ns)");
    assert!(b > 10 * a && b >= MS, "mq-deadline: idle read p50 {b} ns, none {a} ns");
    // The writer barely notices its idle neighbour.
    assert!(
        written(&dl) as f64 >= 0.9 * written(&none) as f64,
        "writer: {} MiB under mq-deadline, {} MiB under none",
        written(&dl) / MIB,
        written(&none) / MIB
    );
}

#[test]
fn ionice_does_not_reach_buffered_writes_which_the_flusher_submits() {
    let dl = SchedulerKind::MQ_DEADLINE;
    let be = backup_and_reader(dl, IoPrioClass::Be, false);
    let idle = backup_and_reader(dl, IoPrioClass::Idle, false);
    assert_eq!(
        reader_p50(&be),
        reader_p50(&idle),
        "the flusher's writes are best effort either way"
    );
    assert_eq!(backup_written(&be), backup_written(&idle));
}

#[test]
fn kybers_tracepoints_show_the_write_tokens_shrinking() {
    use wblab_sim::metrics::trace::TraceEvent;
    let r = readers_and_direct_writers(SchedulerKind::KYBER, Some(100 * MS));
    let depths: Vec<u32> = r
        .trace
        .iter()
        .filter_map(|rec| match rec.ev {
            TraceEvent::KyberAdjust {
                domain: "WRITE", depth, ..
            } => Some(depth),
            _ => None,
        })
        .collect();
    assert!(!depths.is_empty(), "kyber_adjust for WRITE");
    assert!(depths.iter().all(|&d| (1..=128).contains(&d)));
    assert!(*depths.iter().min().unwrap() < 32, "the write pool shrank: {depths:?}");
    let read_p90 = r
        .trace
        .iter()
        .filter(|rec| {
            matches!(
                rec.ev,
                TraceEvent::KyberLatency {
                    domain: "READ",
                    kind: "I/O",
                    percentile: 90,
                    ..
                }
            )
        })
        .count();
    assert!(read_p90 >= 10, "kyber_latency READ I/O p90 every 100 ms or so: {read_p90}");
}

/// A 7200 rpm disk under bfq (with or without `low_latency`): a buffered copy from the start
/// and, at 3 s, an application launch (40 files of 1 MiB, 128 KiB and 16 KiB). Returns the
/// launch's time.
fn launch_beside_a_copy(low_latency: bool) -> u64 {
    let mut sc = Scenario::one_device("bfq-launch", wblab_testkit::sim::hdd(), 8 * GIB, 2, 20 * SEC);
    sc.devices[0].size = 500 * GIB;
    let q = &mut sc.devices[0].queue;
    q.select_elevator(SchedulerKind::BFQ);
    q.tunables.set("low_latency", u64::from(low_latency));
    sc.add_task("copy", 1, 0, wblab_testkit::sim::dd(None));
    sc.add_task(
        "launch",
        1,
        3 * SEC,
        JobConfig::Launch {
            files_per_dir: 20,
            files: 40,
            file_sizes: vec![MIB, 128 * KIB, 16 * KIB],
            bs: 128 * KIB,
            mmap: false,
            writes: 0,
            interval: None,
        },
    );
    let r = run(&sc);
    let launch = r.tasks.iter().find(|t| t.name == "launch").expect("launch");
    assert_eq!(launch.op_latency.summary().count, 1, "the launch finished");
    launch.op_latency.summary().max
}

#[test]
fn bfq_weight_raising_starts_an_application_fast_beside_a_copy() {
    // An application idle for seconds that starts reading is interactive to bfq: its queue
    // gets 30 times the weight and preempts the copy's, so it starts clearly faster than
    // when bfq treats it as one more queue.
    let raised = launch_beside_a_copy(true);
    let plain = launch_beside_a_copy(false);
    assert!(
        raised * 3 < plain * 2,
        "launch {} ms raised, {} ms without low_latency",
        raised / MS,
        plain / MS
    );
}

/// An NVMe-like SSD on 2 CPUs with `nr_hw_queues` hardware queues of 4 tags each
/// (`nr_requests`, the least the kernel allows), and 8 random readers of 4 KiB (O_DIRECT).
/// Returns the bytes they read.
fn random_readers_on_hw_queues(nr_hw_queues: u32) -> u64 {
    let ssd = SsdParams {
        nr_hw_queues,
        ..SsdParams::default()
    };
    let mut sc = Scenario::one_device("hctx", DeviceModelConfig::Ssd(ssd), 8 * GIB, 2, 2 * SEC);
    sc.devices[0].queue.nr_requests = 4;
    sc.devices[0].size = 64 * GIB;
    for n in 0..8 {
        let mut r = reader();
        r.name = format!("reader{n}");
        r.file = format!("/mnt/sda/db{n}");
        r.start = 0;
        sc.tasks.push(r);
    }
    run(&sc).tasks.iter().map(|t| t.bytes_read).sum()
}

#[test]
fn nr_requests_counts_per_hardware_queue() {
    // The readers run on both CPUs. With one hardware queue its 4 tags are all the drive
    // sees at once; with one queue per CPU each has its own 4, the flash units get twice the
    // reads at a time, and the readers read more.
    let one = random_readers_on_hw_queues(1);
    let two = random_readers_on_hw_queues(2);
    assert!(
        two as f64 > 1.3 * one as f64,
        "{} MiB on one queue, {} MiB on two",
        one / MIB,
        two / MIB
    );
    // Queues beyond the CPUs get none of them: blk-mq maps at most one queue per CPU.
    let four = random_readers_on_hw_queues(4);
    assert_eq!(four, two, "four queues on two CPUs behave as two");
}

#[test]
fn iostat_await_of_reads_is_what_an_o_direct_reader_waits() {
    // Two measures of the same waits: the per-second diskstats (from a request's tag to its
    // completion) and the reader's own read() latency, which adds only the submission and
    // wakeup around it.
    let r = readers_and_direct_writers(SchedulerKind::MQ_DEADLINE, None);
    let (reads, ticks) = r
        .vmstat
        .iter()
        .filter_map(|s| s.dev_io.first())
        .fold((0, 0), |(n, t), io| (n + io.reads, t + io.read_ticks_ns));
    let reader = r.tasks.iter().find(|t| t.name == "reader").expect("reader").op_latency.summary();
    assert_eq!(reads, reader.count, "every read() is one request");
    let r_await = ticks as f64 / reads as f64;
    assert!(r_await > 1e6, "reads wait behind the writes: {r_await} ns");
    assert!(
        (r_await / reader.mean - 1.0).abs() < 0.05,
        "r_await {r_await:.0} ns, read() mean {:.0} ns",
        reader.mean
    );
}
