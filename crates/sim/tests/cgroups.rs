//! Memory cgroups as users meet them: a writer in a small group is held to its group's own
//! dirty limit (cgroup v2) while a writer outside is not; on cgroup v1 the same group fills
//! with dirty pages and its reclaim waits on writeback; limits hold; readers and sync work
//! inside groups. Every run is checked by the laws.

use wblab_sim::config::{CgroupConfig, CgroupTree, CgroupVersion, JobConfig, Scenario};
use wblab_sim::metrics::{CgroupResult, RunResult};
use wblab_sim::units::{GIB, MIB, PAGE_SIZE};
use wblab_testkit::sim::*;

/// A machine of `memory` with one device, a group `/pod` of `limit` (memory.max on v2,
/// memory.limit_in_bytes on v1) holding a dd, and a dd outside it.
fn pod_and_host(model: wblab_sim::config::DeviceModelConfig, memory: u64, limit: u64, version: CgroupVersion, secs: u64) -> Scenario {
    let mut sc = Scenario::one_device("pod", model, memory, 2, secs * SEC);
    sc.cgroups = CgroupTree {
        version,
        groups: vec![CgroupConfig {
            path: "/pod".into(),
            memory_max: Some(limit),
            ..Default::default()
        }],
    };
    let mut pod = task("pod-dd", "/mnt/sda/pod", 0, dd(None));
    pod.cgroup = Some(0);
    sc.tasks.push(pod);
    sc.tasks.push(task("host-dd", "/mnt/sda/host", 0, dd(None)));
    sc
}

fn group<'a>(r: &'a RunResult, path: &str) -> &'a CgroupResult {
    r.cgroups.iter().find(|g| g.path == path).expect("group")
}

/// Pages dirty or under writeback in the group at each second after the first.
fn group_dirty(g: &CgroupResult) -> impl Iterator<Item = u64> + '_ {
    g.samples.iter().skip(1).map(|s| s.dirty + s.writeback)
}

#[test]
fn a_writer_in_a_small_memcg_is_throttled_at_its_groups_limit() {
    let limit = GIB;
    let sc = pod_and_host(ssd(), 16 * GIB, limit, CgroupVersion::V2, 20);
    let r = run(&sc);
    let pod = group(&r, "/pod");
    // A full group's dirty domain has avail = its usage plus its headroom = memory.max, so its
    // threshold is vm.dirty_ratio of memory.max.
    let want = sc.sysctl.dirty_ratio as u64 * (limit / PAGE_SIZE) / 100;
    let thresh = pod.samples.last().unwrap().dirty_thresh;
    assert!(near(thresh as f64, want as f64, 0.02), "group thresh {thresh} pages, want {want}");
    let peak = group_dirty(pod).max().unwrap();
    assert!(
        peak <= thresh + thresh / 10,
        "the pod's dirty+writeback reached {peak} pages over its thresh {thresh}"
    );
    assert!(peak >= thresh * 7 / 10, "the pod never came near its limit: {peak} of {thresh}");
    // The writer outside dirties against the global limit, many times the pod's.
    let host_peak = r
        .vmstat
        .iter()
        .zip(&pod.samples)
        .map(|(v, p)| v.nr_dirty + v.nr_writeback - p.dirty - p.writeback)
        .max()
        .unwrap();
    assert!(host_peak > 4 * thresh, "outside the pod dirty peaked at {host_peak} pages only");
    // Its limit held and its own reclaim made the room.
    assert!(pod.samples.iter().all(|s| s.usage <= limit / PAGE_SIZE));
    assert!(pod.events.reclaimed > 0 && pod.events.max_events > 0);
    // Both writers made progress; the pod's pauses come from its own domain.
    assert!(r.tasks.iter().all(|t| t.bytes_written > GIB));
}

#[test]
fn on_cgroup_v1_a_small_memcg_fills_with_dirty_pages_and_its_reclaim_waits_on_writeback() {
    let limit = 256 * MIB;
    let v1 = run(&pod_and_host(hdd(), 4 * GIB, limit, CgroupVersion::V1, 20));
    let v2 = run(&pod_and_host(hdd(), 4 * GIB, limit, CgroupVersion::V2, 20));
    let (g1, g2) = (group(&v1, "/pod"), group(&v2, "/pod"));
    let pages = limit / PAGE_SIZE;
    // v1 has no dirty domain per group: dirty pages fill it until reclaim meets them.
    assert!(group_dirty(g1).max().unwrap() > pages / 2, "v1 peak {:?}", group_dirty(g1).max());
    assert!(g1.events.writeback_waits > 0, "v1 reclaim never waited on writeback");
    assert!(g1.samples.iter().all(|s| s.dirty_thresh == 0));
    // v2 keeps them near vm.dirty_ratio of the group and never waits on a page.
    let t2 = g2.samples.last().unwrap().dirty_thresh;
    assert!(
        group_dirty(g2).max().unwrap() <= t2 + t2 / 5,
        "v2 peak {:?} over {t2}",
        group_dirty(g2).max()
    );
    assert_eq!(g2.events.writeback_waits, 0);
    for r in [&v1, &v2] {
        assert!(group(r, "/pod").samples.iter().all(|s| s.usage <= pages));
        assert!(r.tasks.iter().all(|t| t.bytes_written > 50 * MIB), "a writer starved");
    }
}

#[test]
fn memory_high_holds_a_group_near_its_high_limit_by_reclaim() {
    let high = 512 * MIB;
    let mut sc = pod_and_host(ssd(), 8 * GIB, GIB, CgroupVersion::V2, 10);
    sc.cgroups.groups[0].memory_max = None;
    sc.cgroups.groups[0].memory_high = Some(high);
    let r = run(&sc);
    let pod = group(&r, "/pod");
    let peak = pod.samples.iter().map(|s| s.usage).max().unwrap();
    // One allocation (a 2 MiB folio at most) may cross it; reclaim brings it back.
    assert!(peak * PAGE_SIZE <= high + 2 * MIB, "usage peaked at {} MiB", peak * PAGE_SIZE / MIB);
    assert!(peak * PAGE_SIZE >= high - 64 * MIB);
    assert!(pod.events.high_events > 0 && pod.events.reclaimed > 0);
    // Its dirty domain is sized from memory.high (the headroom's ceiling).
    let t = pod.samples.last().unwrap().dirty_thresh;
    assert!(near(t as f64, (sc.sysctl.dirty_ratio as u64 * high / PAGE_SIZE / 100) as f64, 0.02));
}

#[test]
fn a_reader_in_a_small_memcg_recycles_its_own_cache() {
    let limit = 128 * MIB;
    let mut sc = Scenario::one_device("reader", ssd(), 8 * GIB, 2, 10 * SEC);
    sc.cgroups.groups.push(CgroupConfig {
        path: "/reader".into(),
        memory_max: Some(limit),
        ..Default::default()
    });
    let mut cat = task(
        "cat",
        "/mnt/sda/big",
        0,
        JobConfig::Cat {
            bs: 128 * 1024,
            file_size: 2 * GIB,
        },
    );
    cat.cgroup = Some(0);
    sc.tasks.push(cat);
    sc.tasks.push(task(
        "free",
        "/mnt/sda/other",
        0,
        JobConfig::Cat {
            bs: 128 * 1024,
            file_size: 2 * GIB,
        },
    ));
    let r = run(&sc);
    let g = group(&r, "/reader");
    assert!(g.samples.iter().all(|s| s.usage <= limit / PAGE_SIZE));
    assert!(
        g.events.reclaimed * PAGE_SIZE > GIB,
        "reclaimed only {} MiB",
        g.events.reclaimed * PAGE_SIZE / MIB
    );
    // The reader inside read its whole file; the one outside kept its cache.
    assert_eq!(r.tasks[0].bytes_read, 2 * GIB);
    assert!(r.vmstat.last().unwrap().nr_file * PAGE_SIZE > GIB + limit);
}

#[test]
fn sync_and_fsync_write_back_a_groups_files_through_its_wb() {
    let mut sc = pod_and_host(hdd(), 4 * GIB, 512 * MIB, CgroupVersion::V2, 14);
    // sync(2) under writers that never stop may take longer than the run: they stop at 6 s.
    for t in &mut sc.tasks {
        t.stop = Some(6 * SEC);
    }
    sc.tasks.push(sync_once("sync", 4 * SEC));
    let mut fsync = task(
        "fsync",
        "/mnt/sda/log",
        0,
        JobConfig::Fsync {
            bytes: 4096,
            interval: SEC,
        },
    );
    fsync.cgroup = Some(0);
    sc.tasks.push(fsync);
    // The durability law checks every page each call had to make durable.
    let r = run(&sc);
    let calls = |name: &str| r.tasks.iter().find(|t| t.name == name).unwrap().op_latency.count();
    assert_eq!(calls("sync"), 1);
    assert!(calls("fsync") >= 5);
}

/// A copy in `/noisy` (io.max `wbps` of `wbps` bytes/s on the disk, or none) beside an O_DIRECT
/// random reader in `/app`, on an HDD.
fn noisy_neighbour(wbps: Option<u64>, version: CgroupVersion) -> Scenario {
    let mut sc = Scenario::one_device("noisy", hdd(), 8 * GIB, 2, 30 * SEC);
    let io_max = wbps.map_or(Vec::new(), |w| {
        vec![(
            0,
            wblab_sim::config::BlkThrottleConfig {
                write_bps: Some(w),
                ..Default::default()
            },
        )]
    });
    sc.cgroups = CgroupTree {
        version,
        groups: ["/noisy", "/app"]
            .iter()
            .map(|p| CgroupConfig {
                path: p.to_string(),
                io_max: if *p == "/noisy" { io_max.clone() } else { Vec::new() },
                ..Default::default()
            })
            .collect(),
    };
    let mut copy = task("copy", "/mnt/sda/copy", 0, dd(None));
    copy.cgroup = Some(0);
    let mut reader = task(
        "reader",
        "/mnt/sda/data",
        0,
        JobConfig::Randread {
            bs: 4096,
            file_size: GIB,
            direct: true,
            think: 0,
        },
    );
    reader.cgroup = Some(1);
    sc.tasks.extend([copy, reader]);
    sc
}

/// Bytes/s the device wrote over the run's second half.
fn late_write_rate(r: &RunResult) -> f64 {
    let half = &r.vmstat[r.vmstat.len() / 2..];
    half.iter().map(|s| s.dev_write_bytes[0]).sum::<u64>() as f64 / half.len() as f64
}

#[test]
fn io_max_on_a_noisy_neighbour_holds_its_writeback_and_protects_a_readers_latency() {
    let wbps = 20 * MIB;
    let limited = run(&noisy_neighbour(Some(wbps), CgroupVersion::V2));
    let free = run(&noisy_neighbour(None, CgroupVersion::V2));
    // The copy's writeback goes through its own wb, charged to its group: held at wbps.
    let rate = late_write_rate(&limited);
    assert!(
        near(rate, wbps as f64, 0.10),
        "device wrote {:.1} MiB/s, io.max {} MiB/s",
        rate / MIB as f64,
        wbps / MIB
    );
    assert!(late_write_rate(&free) > 3.0 * wbps as f64);
    let p99 = |r: &RunResult| r.tasks.iter().find(|t| t.name == "reader").unwrap().op_latency.summary().p99;
    assert!(
        p99(&limited) * 2 < p99(&free),
        "reader p99 {} ms with io.max, {} ms without",
        p99(&limited) / MS,
        p99(&free) / MS
    );
}

#[test]
fn a_v1_blkio_write_limit_does_not_hold_buffered_writeback() {
    // cgroup v1 has no cgroup writeback: the flusher writes the group's pages as the root's,
    // which blkio.throttle.write_bps_device does not limit (it does limit O_DIRECT writes).
    let r = run(&noisy_neighbour(Some(20 * MIB), CgroupVersion::V1));
    assert!(
        late_write_rate(&r) > 3.0 * (20 * MIB) as f64,
        "{:.1} MiB/s",
        late_write_rate(&r) / MIB as f64
    );
}

/// A database group (random reads and commits, an io.latency target of `target` or none) and
/// a batch group's copy on an HDD.
fn db_and_batch(target: Option<u64>) -> Scenario {
    let mut sc = Scenario::one_device("iolat", hdd(), 16 * GIB, 4, 30 * SEC);
    sc.cgroups = CgroupTree {
        version: CgroupVersion::V2,
        groups: ["/db", "/batch"]
            .iter()
            .map(|p| CgroupConfig {
                path: p.to_string(),
                io_latency: if *p == "/db" {
                    target.map(|t| vec![(0, t)]).unwrap_or_default()
                } else {
                    Vec::new()
                },
                ..Default::default()
            })
            .collect(),
    };
    let mut copy = task("copy", "/mnt/sda/copy", 0, dd(None));
    copy.cgroup = Some(1);
    let mut read = task(
        "db-read",
        "/mnt/sda/data",
        0,
        JobConfig::Randread {
            bs: 4096,
            file_size: 8 * GIB,
            direct: true,
            think: 0,
        },
    );
    read.cgroup = Some(0);
    let mut commit = task(
        "db-commit",
        "/mnt/sda/log",
        0,
        JobConfig::Fsync {
            bytes: 8192,
            interval: 100 * MS,
        },
    );
    commit.cgroup = Some(0);
    sc.tasks.extend([copy, read, commit]);
    sc
}

/// Mean requests in the device queue (iostat aqu-sz) after the first 5 s.
fn late_queue(r: &RunResult) -> f64 {
    let late: Vec<_> = r.vmstat.iter().filter(|s| s.t_ns > 5 * SEC).collect();
    let ticks: u64 = late.iter().map(|s| s.dev_io[0].read_ticks_ns + s.dev_io[0].write_ticks_ns).sum();
    ticks as f64 / (late.len() as u64 * SEC) as f64
}

#[test]
fn io_latency_shrinks_a_siblings_queue_depth_while_the_protected_group_misses() {
    let with = run(&db_and_batch(Some(50 * MS)));
    let without = run(&db_and_batch(None));
    // The batch group's writeback is held to a few requests in flight.
    assert!(
        late_queue(&with) * 2.0 < late_queue(&without),
        "aqu-sz {:.1} with the target, {:.1} without",
        late_queue(&with),
        late_queue(&without)
    );
    let p50 = |r: &RunResult, name: &str| r.tasks.iter().find(|t| t.name == name).unwrap().op_latency.summary().p50;
    assert!(
        p50(&with, "db-commit") * 2 < p50(&without, "db-commit"),
        "commit p50 {} ms with the target, {} ms without",
        p50(&with, "db-commit") / MS,
        p50(&without, "db-commit") / MS
    );
    // The copy goes on: the device still writes most of what it wrote without the target.
    let wrote = |r: &RunResult| r.devices[0].bytes_written;
    assert!(
        wrote(&with) * 10 > wrote(&without) * 7,
        "{} against {} bytes",
        wrote(&with),
        wrote(&without)
    );
}

#[test]
fn memory_low_keeps_a_groups_cache_through_a_copys_cache_pressure() {
    // A database's buffered random reads over a 512 MiB table in /db, and a copy outside any
    // group whose written-back pages press on a 2 GiB machine's page cache.
    let scenario = |low: Option<u64>| {
        let mut sc = Scenario::one_device("low", ssd(), 2 * GIB, 2, 30 * SEC);
        sc.cgroups.groups.push(CgroupConfig {
            path: "/db".into(),
            memory_low: low,
            ..Default::default()
        });
        let mut db = task(
            "db",
            "/mnt/sda/table",
            0,
            JobConfig::Randread {
                bs: 64 * 1024,
                file_size: 512 * MIB,
                direct: false,
                think: MS,
            },
        );
        db.cgroup = Some(0);
        sc.tasks.push(db);
        sc.tasks.push(task("copy", "/mnt/sda/copy", 0, dd(None)));
        sc
    };
    // The last quarter: by then the reader (1 ms think, plus the wakeup latency) has touched
    // most of the table.
    let late_reads = |r: &RunResult| -> u64 { r.vmstat[r.vmstat.len() * 3 / 4..].iter().map(|s| s.dev_read_bytes[0]).sum() };
    let protected = run(&scenario(Some(GIB)));
    let exposed = run(&scenario(None));
    // Protected, the table stays cached once read: the last quarter reads little from the
    // device; unprotected, the copy's pages keep pushing it out.
    assert!(
        late_reads(&protected) * 4 < late_reads(&exposed),
        "device reads in the last quarter: {} MiB with memory.low, {} MiB without",
        late_reads(&protected) >> 20,
        late_reads(&exposed) >> 20
    );
    // What it read stays: the protected group ends holding most of the table, several times
    // what the exposed one keeps.
    let cached = |r: &RunResult| r.cgroups[0].samples.last().unwrap().file * PAGE_SIZE;
    assert!(
        cached(&protected) > 384 * MIB && cached(&protected) > 2 * cached(&exposed),
        "the group holds {} MiB of the 512 MiB table with memory.low, {} MiB without",
        cached(&protected) >> 20,
        cached(&exposed) >> 20
    );
}

/// A disk under bfq, two groups `/a` and `/b` of the given `io.bfq.weight`s, each reading a
/// file of its own sequentially (`cat`), for 20 s. Returns the bytes each read.
fn two_readers_under_bfq(model: wblab_sim::config::DeviceModelConfig, weights: [u64; 2]) -> [u64; 2] {
    let mut sc = Scenario::one_device("bfq-groups", model, 8 * GIB, 2, 20 * SEC);
    sc.devices[0].size = 200 * GIB;
    sc.devices[0].queue.select_elevator(wblab_sim::config::SchedulerKind::BFQ);
    sc.cgroups = CgroupTree {
        version: CgroupVersion::V2,
        groups: ["/a", "/b"]
            .iter()
            .zip(weights)
            .map(|(p, w)| CgroupConfig {
                path: p.to_string(),
                bfq_weight: Some(w),
                ..Default::default()
            })
            .collect(),
    };
    for (i, name) in ["a", "b"].iter().enumerate() {
        let mut t = task(
            name,
            &format!("/mnt/sda/{name}"),
            0,
            JobConfig::Cat {
                bs: 128 * 1024,
                file_size: 64 * GIB,
            },
        );
        t.cgroup = Some(i);
        sc.tasks.push(t);
    }
    let r = run(&sc);
    let read = |n: &str| r.tasks.iter().find(|t| t.name == n).expect("task").bytes_read;
    [read("a"), read("b")]
}

/// On a disk and on a loop device (where `validation/` v18 measured the kernel giving the
/// heavier group 1.4–2.7× the reads), the groups read by their weights. (On the ssd model the
/// light reader's requests are injected while the heavy one's queue waits for its next
/// readahead, and the two come out even: not checked against a real NVMe here.)
#[test]
fn io_bfq_weight_shares_a_disk_between_groups_by_weight() {
    let lo = wblab_sim::config::DeviceModelConfig::Loop(Default::default());
    for (model, what) in [(hdd(), "disk"), (lo, "loop")] {
        let even = two_readers_under_bfq(model.clone(), [100, 100]);
        let ratio = even[0] as f64 / even[1] as f64;
        assert!((0.8..1.25).contains(&ratio), "{what}: equal weights read {even:?}");
        let three = two_readers_under_bfq(model, [300, 100]);
        let ratio = three[0] as f64 / three[1] as f64;
        assert!(
            (2.3..3.7).contains(&ratio),
            "{what}: weights 300:100 read {three:?}, ratio {ratio:.2}"
        );
        // The device is still kept busy: the pair reads about as much in total.
        let (t_even, t_three) = (even[0] + even[1], three[0] + three[1]);
        assert!(t_three as f64 > 0.8 * t_even as f64, "{what}: total {t_three} vs {t_even}");
    }
}
