//! Scenarios that once broke wblab (`tests/repro/`, first line of each says how), run to their
//! end under the laws, with what the user was owed checked directly.

use std::path::Path;
use wblab_sim::metrics::RunResult;

use wblab_testkit::sim::SEC;

fn run(file: &str) -> RunResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/repro").join(file);
    let sc = wblab_scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{file}: {v}"))
}

fn last_sample(r: &RunResult) -> &wblab_sim::metrics::VmstatSample {
    r.vmstat.last().expect("per-second samples")
}

/// `dd conv=fsync` used to leave its 400 MB under writeback with no request ever issued.
#[test]
fn dd_conv_fsync_writes_everything_before_it_returns() {
    let r = run("bug-dd-conv-fsync.toml");
    let dd = &r.tasks[0];
    assert_eq!(dd.bytes_written, 400_000_000);
    assert!(dd.ended < r.sim_ns, "dd returned from its fsync");
    let dev = &r.devices[0];
    // The last page is partly written: the device writes whole pages.
    assert_eq!(dev.bytes_written, 400_000_000u64.div_ceil(4096) * 4096);
    let end = last_sample(&r);
    assert_eq!((end.nr_dirty, end.nr_writeback), (0, 0));
    // fsync waited for the writeback: the last op is at least a device-time long.
    assert!(dd.op_latency.summary().max > 100_000_000, "{:?}", dd.op_latency.summary());
}

/// An fsync task beside a writer used to hide the writer's inode from kupdate: 9.8 MB of
/// 9.4 GB written in 120 s.
#[test]
fn kupdate_writes_what_expired_while_an_fsync_task_runs() {
    let r = run("bug-fsync-stops-kupdate.toml");
    let written = r.devices[0].bytes_written;
    // Everything dirtied by 120 s − 35 s (expire 30 s + one 5 s interval) must be on the disk.
    let cut = r.vmstat.iter().find(|s| s.t_ns >= 85 * SEC).expect("a sample at 85 s");
    assert!(
        written >= cut.nr_dirtied * 4096,
        "device wrote {written} bytes, but {} were dirtied by 85 s",
        cut.nr_dirtied * 4096
    );
    // And the fsync probe still gets its commits through: at least half of the 1200 its
    // 100 ms interval allows in 120 s (each now ends with a cache flush of the HDD, which
    // waits for the drive to destage what the writer left in its cache).
    let commit = r.tasks.iter().find(|t| t.name == "commit").expect("the fsync task");
    assert!(commit.op_latency.summary().count > 600, "{:?}", commit.op_latency.summary());
}

/// CFQ's idle timer livelocked the event loop at one instant (0.7 s and 37.1 s simulated).
#[test]
fn cfq_idle_timer_lets_time_advance() {
    for (file, secs) in [("hang-cfq-idle-usb.toml", 1), ("hang-cfq-idle-raid5.toml", 40)] {
        let r = run(file);
        assert_eq!(r.sim_ns, secs * SEC);
        assert_eq!(last_sample(&r).t_ns, secs * SEC, "{file}: sampled to the end");
        let read: u64 = r.devices.iter().map(|d| d.bytes_read).sum();
        assert!(read > 0, "{file}: the readers were served");
    }
}

/// Pageout reclaim on tiny machines slowed down as it ran (the PG_reclaim walk, and kswapd
/// rescanning a list of busy pages on every allocation). Both now run to the end under the
/// laws; their wall time is in the benchmark, not here.
#[test]
fn tiny_machines_reclaim_to_the_end() {
    for file in ["slow-reclaim-2.4.7.toml", "slow-reclaim-2.6.7.toml"] {
        let r = run(file);
        assert_eq!(last_sample(&r).t_ns, 2 * SEC, "{file}");
        let written: u64 = r.tasks.iter().map(|t| t.bytes_written).sum();
        assert!(written > 0, "{file}: the writers made progress");
    }
}

/// An endless run (2^64-1 ns) used to grow memory until the allocator aborted, and 100,000 `dd`
/// ran at 43k events/s in 3.8 GB: both are refused, naming the key and the limit.
#[test]
fn runaway_sizes_are_refused_with_the_limit() {
    for (file, key, limit) in [
        ("oom-huge-duration.toml", "duration", "86400s"),
        ("slow-100000-dd.toml", "count", "10000"),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/repro").join(file);
        let e = wblab_scenario::load(&path).expect_err(file);
        assert_eq!(e.key.as_deref(), Some(key), "{e}");
        assert!(e.message.contains(limit), "{e}");
        assert!(e.hint.is_some(), "{e}");
    }
}

/// Three fio clones reading one shared file on the wake-one kernels: the liveness law took the
/// `__lock_page` waiters queued behind the one an unlock woke for lost wakeups. Each clone
/// reads the whole file and finishes, the disk reads it once, and the clones behind did wait
/// in `__lock_page`.
#[test]
fn shared_file_readers_pass_the_page_lock_on() {
    let file = "law-liveness-shared-file-readers.toml";
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/repro").join(file)).unwrap();
    const GIB: u64 = 1 << 30;
    for kernel in ["2.6.20", "2.6.22", "3.2"] {
        let sc = wblab_scenario::parse(&text.replace("\"2.6.22\"", &format!("\"{kernel}\"")), file).unwrap();
        assert_eq!(sc.kernel, kernel);
        let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{kernel}: {v}"));
        assert_eq!(r.tasks.len(), 3);
        for t in &r.tasks {
            assert_eq!(t.bytes_read, GIB, "{kernel}: {}#{} read the whole file", t.name, t.instance);
            assert!(t.ended < r.sim_ns, "{kernel}: {}#{} finished", t.name, t.instance);
        }
        assert_eq!(r.devices[0].bytes_read, GIB, "{kernel}: one page cache, one read of the file");
        let locks: u64 = r.tasks.iter().map(|t| t.sched.lock_page).sum();
        assert!(locks > 0, "{kernel}: the clones behind waited in __lock_page");
    }
}

/// fio clones sharing one file in a memory cgroup: the group listed the file once per clone
/// and the conservation law counted its pages twice. The group holds the file's pages once.
#[test]
fn a_file_shared_in_a_cgroup_is_charged_once() {
    let r = run("law-conservation-shared-file-cgroup.toml");
    for t in &r.tasks {
        assert_eq!(t.bytes_read, 1 << 20, "{}#{} read the whole file", t.name, t.instance);
    }
    assert_eq!(r.devices[0].bytes_read, 1 << 20, "one page cache, one read of the file");
    let g = &r.cgroups[0];
    assert_eq!(g.samples.last().expect("samples").file, 256, "the group holds the 1 MiB file once");
    // Shared by writers of two groups, the file is charged to the first one's group alone.
    let text = "[[cgroup]]\npath = \"/a\"\n[[cgroup]]\npath = \"/b\"\n\
        [[task]]\nfio = \"\"\"\n[w]\nrw=write\nsize=1m\nnumjobs=2\nfilename=shared\n\"\"\"\ncgroup = \"/a\"\n\
        [[task]]\nfio = \"\"\"\n[v]\nrw=write\nsize=1m\nfilename=shared\n\"\"\"\ncgroup = \"/b\"\n";
    let sc = wblab_scenario::parse(text, "two-groups.toml").unwrap_or_else(|e| panic!("{e}"));
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(r.tasks.len(), 3);
    for t in &r.tasks {
        assert_eq!(t.bytes_written, 1 << 20, "{}#{} wrote the whole file", t.name, t.instance);
    }
    let file = |i: usize| r.cgroups[i].samples.last().expect("samples").file;
    assert_eq!((file(0), file(1)), (256, 0), "the file is /a's");
}

/// The liveness law once flagged an NFS mount's unstable pages as stranded while blk-throttle
/// still held the writes whose replies would send the COMMIT (found by the fuzzer).
#[test]
fn nfs_unstable_pages_behind_throttled_writes_are_not_stranded() {
    let r = run("law-liveness-nfs-commit-throttled.toml");
    assert!(r.devices[0].bytes_written > 0, "the writers' data reached the server");
    assert!(r.tasks.iter().any(|t| t.job == "dd" && t.bytes_written > 0));
}
