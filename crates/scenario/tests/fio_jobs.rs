//! fio jobs behave as fio's options say, on the simulated kernel: queue depth, rate caps, the
//! read/write mix, fsync every N writes, stonewalls, ramp time, loops, think time, skewed
//! offsets and the page cache, end_fsync's durability. Each test parses job text as a user
//! writes it and reads fio's own figures from the run (the laws run on every simulation here).

use wblab_sim::config::{READ, WRITE};
use wblab_sim::metrics::fio::FioResult;
use wblab_sim::metrics::RunResult;

use wblab_testkit::sim::SEC;

/// Run job text on the default machine (a 7200 rpm disk) or, with `ssd`, on an SSD.
fn run(jobs: &str, ssd: bool) -> RunResult {
    let sc = if ssd {
        let toml = format!(
            "duration = \"600s\"\nuntil_done = true\n[[device]]\nname = \"nvme0n1\"\nmodel = \"ssd\"\n[[task]]\nfio = \"\"\"\n{jobs}\n\"\"\"\n"
        );
        wblab_scenario::parse(&toml, "fio-test.toml").unwrap_or_else(|e| panic!("{e}"))
    } else {
        wblab_scenario::fio_scenario(jobs, "fio-test.fio").unwrap_or_else(|e| panic!("{e}"))
    };
    wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
}

fn job<'a>(r: &'a RunResult, name: &str) -> &'a FioResult {
    r.fio.iter().find(|f| f.job.name == name).unwrap_or_else(|| panic!("no job {name}"))
}

fn iops(f: &FioResult, d: usize) -> f64 {
    let s = &f.stats;
    s.dir[d].ios as f64 / ((s.ended - s.started) as f64 / 1e9)
}

fn bw(f: &FioResult, d: usize) -> f64 {
    let s = &f.stats;
    s.dir[d].bytes as f64 / ((s.ended - s.started) as f64 / 1e9)
}

#[test]
fn a_deeper_queue_gets_more_iops_and_longer_latency_from_an_ssd() {
    let r = run(
        "[global]\nrw=randread\nbs=4k\ndirect=1\nioengine=libaio\nsize=1g\nruntime=2\ntime_based\nfilename=f\n\
         [qd1]\niodepth=1\n[qd32]\nstonewall\niodepth=32\n",
        true,
    );
    let (q1, q32) = (job(&r, "qd1"), job(&r, "qd32"));
    assert!(
        iops(q32, READ) > 4.0 * iops(q1, READ),
        "qd1 {:.0}, qd32 {:.0}",
        iops(q1, READ),
        iops(q32, READ)
    );
    assert!(q32.stats.dir[READ].clat.hist.quantile(0.5) > q1.stats.dir[READ].clat.hist.quantile(0.5));
    // libaio: submissions are timed apart from completions.
    assert!(q32.stats.dir[READ].slat.n > 0 && q32.stats.dir[READ].slat.n == q32.stats.dir[READ].clat.n);
    // The depth histogram says the queue was kept full.
    let deep: u64 = q32.stats.depth[5..].iter().sum();
    assert!(deep * 2 > q32.stats.depth.iter().sum::<u64>(), "{:?}", q32.stats.depth);
}

#[test]
fn rate_caps_hold_bandwidth_and_iops() {
    let r = run(
        "[writer]\nrw=write\nbs=64k\nsize=1g\nrate=4m\nruntime=10\ntime_based\n\
         [reader]\nrw=randread\nbs=4k\nsize=256m\ndirect=1\nrate_iops=50\nruntime=10\ntime_based\n",
        false,
    );
    let w = bw(job(&r, "writer"), WRITE) / (4.0 * 1024.0 * 1024.0);
    assert!((0.97..=1.03).contains(&w), "writer at {w:.3} of its cap");
    let i = iops(job(&r, "reader"), READ) / 50.0;
    assert!((0.95..=1.02).contains(&i), "reader at {i:.3} of its cap");
}

#[test]
fn the_mix_fsync_every_n_and_loops_follow_the_options() {
    let r = run(
        "[mix]\nrw=randrw\nrwmixread=70\nbs=4k\nsize=8m\ndirect=1\n\
         [synced]\nstonewall\nrw=write\nbs=4k\nsize=1m\nfsync=8\n\
         [looped]\nstonewall\nrw=read\nbs=64k\nsize=4m\nloops=3\n",
        false,
    );
    let m = job(&r, "mix");
    let (rd, wr) = (m.stats.dir[READ].ios as f64, m.stats.dir[WRITE].ios as f64);
    assert_eq!((rd + wr) as u64, 2048, "size/bs I/Os");
    let share = rd / (rd + wr);
    assert!((0.66..=0.74).contains(&share), "read share {share:.3}");
    let s = job(&r, "synced");
    assert_eq!(s.stats.dir[WRITE].ios, 256);
    // As fio: an fsync after every 8 writes but the last, which would come once the job is over
    // (real fio 3.33 reports 255 for 2048 writes with fsync=8).
    assert_eq!(s.stats.sync.n, 256 / 8 - 1, "an fsync after every 8 writes");
    let l = job(&r, "looped");
    assert_eq!(l.stats.dir[READ].bytes, 3 * (4 << 20), "loops=3 reads the file three times");
}

#[test]
fn stonewall_starts_a_job_when_the_ones_before_it_are_done_and_the_run_ends_with_them() {
    let r = run(
        "[first]\nrw=write\nbs=1m\nsize=64m\nend_fsync=1\n[second]\nstonewall\nrw=read\nbs=1m\nsize=64m\n",
        false,
    );
    let t = |n: &str| r.tasks.iter().find(|t| t.name == n).expect("task");
    let (a, b) = (t("first"), t("second"));
    assert!(
        b.started >= a.ended,
        "second started at {} before first ended at {}",
        b.started,
        a.ended
    );
    assert!(b.started > 0);
    // until_done: the run is as long as the jobs, not the cap.
    assert!(r.sim_ns <= b.ended + SEC / 10 && r.sim_ns < 3600 * SEC, "run {} ns", r.sim_ns);
    // The second job reads the file the first wrote from the disk: invalidate dropped it.
    assert!(
        r.devices[0].bytes_read >= 64 << 20,
        "read {} bytes from the disk",
        r.devices[0].bytes_read
    );
}

#[test]
fn ramp_time_is_left_out_of_the_statistics_and_runtime_bounds_the_job() {
    let r = run(
        "[j]\nrw=randread\nbs=4k\nsize=256m\ndirect=1\nruntime=5\nramp_time=2\ntime_based\n",
        false,
    );
    let j = job(&r, "j");
    let task = &r.tasks[j.task];
    let counted = j.stats.dir[READ].bytes;
    assert!(counted > 0 && counted < task.bytes_read, "{counted} of {}", task.bytes_read);
    let span = (j.stats.ended - j.stats.started) as f64 / SEC as f64;
    assert!((5.0..5.05).contains(&span), "statistics over {span:.3} s");
    let ramp = (j.stats.started - task.started) as f64 / SEC as f64;
    // From the job's first run (a wakeup after its start) to the end of its ramp.
    assert!((ramp - 2.0).abs() < 1e-3, "ramp {ramp}");
}

#[test]
fn thinktime_paces_a_probe() {
    let r = run(
        "[probe]\nrw=randread\nbs=4k\nsize=64m\ndirect=1\nthinktime=100ms\nruntime=10\ntime_based\n",
        false,
    );
    let n = job(&r, "probe").stats.dir[READ].ios;
    // A read every 100 ms plus its own few milliseconds: a little under 100.
    assert!((85..=100).contains(&n), "{n} reads in 10 s");
}

#[test]
fn a_zipf_hot_set_is_served_from_the_page_cache() {
    let r = run(
        "[global]\nrw=randread\nbs=4k\nsize=1g\nfilename=f\nruntime=10\ntime_based\nnorandommap\n\
         [uniform]\n[zipf]\nstonewall\nrandom_distribution=zipf:1.2\n",
        false,
    );
    let (u, z) = (job(&r, "uniform"), job(&r, "zipf"));
    // A miss costs milliseconds on the disk, a hit microseconds: most zipf reads hit once the
    // hot blocks have been read once.
    assert!(
        iops(z, READ) > 3.0 * iops(u, READ),
        "uniform {:.0}, zipf {:.0}",
        iops(u, READ),
        iops(z, READ)
    );
    assert!(z.stats.dir[READ].clat.hist.quantile(0.5) < u.stats.dir[READ].clat.hist.quantile(0.5) / 10);
}

#[test]
fn end_fsync_leaves_nothing_dirty_and_is_part_of_the_job() {
    let r = run("[w]\nrw=write\nbs=1m\nsize=256m\nend_fsync=1\n", false);
    let j = job(&r, "w");
    assert_eq!(j.stats.sync.n, 1);
    let last = r.vmstat.last().expect("samples");
    assert_eq!(last.nr_dirty, 0, "dirty pages after end_fsync");
    // The copy into the cache is fast; the job's time is mostly the fsync's.
    let sync_ms = j.stats.sync.max as f64 / 1e6;
    let job_ms = (j.stats.ended - j.stats.started) as f64 / 1e6;
    assert!(sync_ms > 0.3 * job_ms, "fsync {sync_ms:.0} ms of {job_ms:.0} ms");
}

#[test]
fn logs_have_a_row_per_io_or_per_window() {
    let r = run(
        "[every]\nrw=randread\nbs=4k\nsize=64m\ndirect=1\nruntime=3\ntime_based\nwrite_lat_log=every\nwrite_iops_log=every\n\
         [avg]\nrw=randread\nbs=4k\nsize=64m\ndirect=1\nruntime=3\ntime_based\nwrite_lat_log=avg\nlog_avg_msec=500\n",
        false,
    );
    let e = job(&r, "every");
    assert_eq!(e.stats.logs.lat.len() as u64, e.stats.dir[READ].ios);
    assert!(e.stats.logs.iops.iter().all(|row| row.value == 1));
    assert!(e.stats.logs.lat.windows(2).all(|w| w[0].ms <= w[1].ms));
    let a = job(&r, "avg");
    assert!(
        (6..=7).contains(&a.stats.logs.lat.len()),
        "{} windows of 500 ms in 3 s",
        a.stats.logs.lat.len()
    );
    assert!(a.stats.logs.lat.iter().all(|row| row.bs == 0 && row.ms % 500 == 0));
}

/// Buffered writes smaller than a page: on a file that holds data and is not in the cache,
/// each one reads its page first (`block_write_begin`), so it takes a disk read's time; whole
/// pages are replaced without a read, and a fallocated file's unwritten blocks are not read.
#[test]
fn sub_page_buffered_writes_read_the_page_first() {
    // rwmixread=0: every I/O writes, but fio lays the file out with data (the job may read).
    let text = |rw: &str, bs: &str| format!("[w]\nrw={rw}\nrwmixread=0\nbs={bs}\nsize=256m\nruntime=5\ntime_based\n");
    let read_per_write = |r: &RunResult| {
        let w = job(r, "w").stats.dir[WRITE].ios.max(1);
        (
            r.devices[0].requests_read as f64 / w as f64,
            job(r, "w").stats.dir[WRITE].clat.hist.quantile(0.5),
        )
    };
    let (small, small_p50) = read_per_write(&run(&text("randrw", "512"), false));
    let (whole, whole_p50) = read_per_write(&run(&text("randrw", "4k"), false));
    let (fallocated, _) = read_per_write(&run(&text("randwrite", "512"), false));
    // A random 512-byte write into 256 MiB rarely finds its page cached in 5 s.
    assert!(small > 0.8, "{small:.2} reads per 512-byte write");
    assert!(small_p50 > 2_000_000, "512-byte write p50 {small_p50} ns: no disk read in it");
    assert_eq!(whole, 0.0, "4 KiB writes replace whole pages");
    assert!(whole_p50 < small_p50 / 10, "4 KiB write p50 {whole_p50} ns vs {small_p50} ns");
    assert_eq!(fallocated, 0.0, "a fallocated file's blocks read as zeros");
}

/// A time_based job whose runtime is centuries long (fio's "unlimited" 2^64 − 1 s saturates
/// to it) used to end at once: its end, now + ramp + runtime, wrapped to a time already past.
/// It runs until the run stops it, and its statistics start after the ramp. The runtime is
/// set in code: the parser may refuse one that long.
#[test]
fn a_runtime_of_centuries_runs_the_job_until_the_run_ends() {
    let mut sc =
        wblab_scenario::fio_scenario("[j]\nrw=write\nsize=1m\nruntime=1\ntime_based\n", "forever.fio").unwrap_or_else(|e| panic!("{e}"));
    let wblab_sim::config::JobConfig::Fio(j) = &mut sc.tasks[0].job else {
        panic!("a fio job");
    };
    let j = std::sync::Arc::make_mut(j);
    j.ramp = SEC;
    // Wrapped, now + 1 s + this would end the job half-way through its ramp.
    j.runtime = Some(u64::MAX - SEC / 2);
    sc.duration = 3 * SEC;
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
    let j = job(&r, "j");
    let task = &r.tasks[j.task];
    assert!(
        task.ended >= 3 * SEC - SEC / 10,
        "the job ran to the run's end, not {} ns",
        task.ended
    );
    assert_eq!(r.sim_ns, 3 * SEC);
    // time_based rewrites its 1 MiB file over and over: far more than one pass, after the ramp too.
    assert!(task.bytes_written > 16 << 20, "wrote {} bytes", task.bytes_written);
    assert!(j.stats.dir[WRITE].bytes > 0 && j.stats.started >= SEC, "{:?}", j.stats.started);
}

/// Hundreds of job groups chained by stonewall and wait_for (each task's end used to scan
/// every group and every task): each group starts exactly when the last task of the groups
/// it waits for is done, plus its startdelay, and the run ends with the last job.
#[test]
fn many_groups_start_exactly_when_the_groups_they_wait_for_are_done() {
    let mut text = String::new();
    for i in 0..300 {
        text += &format!("[j{i}]\nrw=write\nbs=4k\nsize={}k\n", 64 * (1 + i % 7));
        if i % 4 == 0 {
            text += "numjobs=2\n";
        }
        if i % 5 == 3 {
            text += "startdelay=10ms\n";
        }
        if i > 0 && i % 25 == 0 {
            text += "stonewall\n";
        } else if i % 3 == 1 {
            text += &format!("wait_for=j{}\n", i - 1);
        } else if i % 7 == 2 && i >= 5 {
            text += &format!("wait_for=j{}\n", i - 5);
        }
    }
    let sc = wblab_scenario::fio_scenario(&text, "chain.fio").unwrap_or_else(|e| panic!("{e}"));
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
    // Group g's tasks are first[g]..first[g + 1].
    let mut first = vec![0usize];
    for tc in &sc.tasks {
        first.push(first[first.len() - 1] + tc.count as usize);
    }
    assert_eq!(r.tasks.len(), first[sc.tasks.len()]);
    let mut waiting = 0;
    for (g, tc) in sc.tasks.iter().enumerate() {
        // fio's startdelay counts from the moment the groups waited for are done.
        let due = match tc
            .after
            .iter()
            .flat_map(|&a| first[a]..first[a + 1])
            .map(|t| r.tasks[t].ended)
            .max()
        {
            Some(done) => {
                waiting += 1;
                done + tc.start
            }
            None => tc.start,
        };
        for t in &r.tasks[first[g]..first[g + 1]] {
            assert_eq!(t.started, due, "{}#{} (waits for {:?})", t.name, t.instance, tc.after);
            assert_eq!(
                t.bytes_written,
                64 * 1024 * (1 + g as u64 % 7),
                "{}#{} wrote its file",
                t.name,
                t.instance
            );
            assert!(t.ended > t.started);
        }
    }
    assert!(waiting > 100, "{waiting} groups wait");
    assert_eq!(
        r.sim_ns,
        r.tasks.iter().map(|t| t.ended).max().unwrap(),
        "the run ends with the last job"
    );
}

/// Two disks and one job file: each job runs where its `filename` or `directory` says, as
/// fio would, and the other disk sees none of its I/O.
#[test]
fn jobs_run_on_the_device_their_filename_or_directory_names() {
    let scenario = |jobs: &str| {
        format!(
            "duration = \"600s\"\nuntil_done = true\n\
             [[device]]\nname = \"sda\"\nmodel = \"hdd\"\n[[device]]\nname = \"sdb\"\nmodel = \"ssd\"\nsize = \"64GiB\"\n\
             [[task]]\nfio = \"\"\"\n{jobs}\n\"\"\"\n"
        )
    };
    let bytes_on = |r: &RunResult, dev: &str| {
        let d = r.devices.iter().find(|d| d.name == dev).unwrap_or_else(|| panic!("no {dev}"));
        (d.bytes_read, d.bytes_written)
    };
    let run_text = |jobs: &str| {
        let sc = wblab_scenario::parse(&scenario(jobs), "route.toml").unwrap_or_else(|e| panic!("{e}"));
        wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
    };
    // A raw block device: the job spans it (no size given) and reads only from it.
    let r = run_text("[raw]\nfilename=/dev/sdb\nrw=randread\nbs=4k\ndirect=1\nio_size=8m");
    assert!(bytes_on(&r, "sdb").0 >= 8 << 20, "{:?}", bytes_on(&r, "sdb"));
    assert_eq!(bytes_on(&r, "sda"), (0, 0));
    let raw = job(&r, "raw");
    assert_eq!(raw.job.file_size, 64 << 30, "a job on /dev/sdb spans the device");
    // A directory, and a file under /mnt/<device>/, route the same way; a job naming neither
    // stays on the task's device (the first).
    let r = run_text(
        "[w]\ndirectory=/mnt/sdb\nrw=write\nbs=1m\nsize=32m\ndirect=1\n\
         [f]\nfilename=/mnt/sdb/data\nrw=read\nbs=1m\nsize=16m\ndirect=1\n\
         [home]\nrw=write\nbs=1m\nsize=8m\ndirect=1",
    );
    let (sdb_read, sdb_written) = bytes_on(&r, "sdb");
    assert!(sdb_written >= 32 << 20 && sdb_read >= 16 << 20, "{sdb_read} {sdb_written}");
    assert!(bytes_on(&r, "sda").1 >= 8 << 20, "{:?}", bytes_on(&r, "sda"));
    assert!(bytes_on(&r, "sda").1 < 32 << 20, "{:?}", bytes_on(&r, "sda"));
    // A device the scenario lacks, and a job elsewhere than the task's `device`, are mistakes
    // at the option's line.
    let e = wblab_scenario::parse(&scenario("[x]\nfilename=/dev/sdc\nrw=read\nsize=1m"), "route.toml").expect_err("no sdc");
    assert!(
        e.to_string()
            .contains(":2: option `filename`: `sdc` is not a device of the scenario"),
        "{e}"
    );
    let pinned = scenario("[x]\ndirectory=/mnt/sdb\nrw=read\nsize=1m").replace("[[task]]\n", "[[task]]\ndevice = \"sda\"\n");
    let e = wblab_scenario::parse(&pinned, "route.toml").expect_err("pinned to sda");
    assert!(e.to_string().contains("the task's device is `sda`"), "{e}");
    // A bare job file runs on the default machine's disk whatever device it names.
    let sc = wblab_scenario::fio_scenario("[x]\nfilename=/dev/nvme0n1\nrw=read\nsize=1m", "x.fio").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sc.tasks[0].device, 0);
}

/// `prioclass`/`prio` give a job its I/O priority over the task's ionice: under bfq an idle-
/// class job waits while a best-effort one beside it has work, as `ionice -c idle` does.
#[test]
fn prioclass_idle_yields_the_disk_to_a_best_effort_job() {
    let toml = "duration = \"6s\"\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n\"queue/scheduler\" = \"bfq\"\n\
                [[task]]\nfio = \"\"\"\n[global]\nrw=randread\nbs=4k\ndirect=1\nsize=1g\nruntime=5\ntime_based\n\
                [be]\n[idle]\nprioclass=3\n\"\"\"\n";
    let sc = wblab_scenario::parse(toml, "prio.toml").unwrap_or_else(|e| panic!("{e}"));
    let idle = sc.tasks.iter().find(|t| t.name == "idle").expect("idle job");
    assert_eq!(idle.ioprio.class, wblab_sim::config::IoPrioClass::Idle);
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
    let (be, idle) = (job(&r, "be"), job(&r, "idle"));
    assert!(
        be.stats.dir[READ].ios > 10 * idle.stats.dir[READ].ios.max(1),
        "best effort {} I/Os, idle {}",
        be.stats.dir[READ].ios,
        idle.stats.dir[READ].ios
    );
}
