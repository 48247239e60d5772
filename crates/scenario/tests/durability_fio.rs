//! Durability as a database uses it, through fio job text: fdatasync commits the journal only
//! for what reading the data back needs (an overwrite: none; a fallocated or sparse file:
//! every call), fsync also for timestamps, O_DSYNC direct overwrites go as FUA writes where the
//! device takes them and pay a cache flush where it does not. The durability law, which now
//! also checks the journal commits each call owes, runs on every simulation here.

use wblab_sim::config::WRITE;
use wblab_sim::metrics::RunResult;

/// A WAL job: 4 KiB sequential writes for 4 s, with `extra` lines (the sync and the layout).
fn wal(extra: &str) -> String {
    format!("[wal]\nrw=write\nbs=4k\nsize=64m\nruntime=4s\ntime_based\n{extra}\n")
}

/// Run job text as a bare job file: the default 7200 rpm disk (it takes FUA writes), ext4.
fn on_disk(jobs: &str) -> RunResult {
    let sc = wblab_scenario::fio_scenario(jobs, "wal.fio").unwrap_or_else(|e| panic!("{e}"));
    wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
}

/// Run job text on a loop device (a write cache, no FUA) with `fs`.
fn on_loop(jobs: &str, fs: &str) -> RunResult {
    on_device("loop", &format!("fs = \"{fs}\""), jobs)
}

/// Run job text on a device of `model` with the device keys `keys`.
fn on_device(model: &str, keys: &str, jobs: &str) -> RunResult {
    let toml = format!(
        "duration = \"30s\"\nuntil_done = true\n[[device]]\nname = \"dev0\"\nmodel = \"{model}\"\n{keys}\n\
         [[task]]\nfio = \"\"\"\n{jobs}\n\"\"\"\n"
    );
    let sc = wblab_scenario::parse(&toml, "wal.toml").unwrap_or_else(|e| panic!("{e}"));
    wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
}

/// (syncs, mean sync latency in ms, journal commits, cache flushes) of the run's one job.
fn syncs(r: &RunResult) -> (u64, f64, u64, u64) {
    let f = &r.fio[0].stats;
    let n = f.sync.n;
    let mean = if n > 0 { f.sync.mean() / 1e6 } else { 0.0 };
    let d = &r.devices[0];
    (n, mean, d.journal.as_ref().map_or(0, |j| j.commits), d.flushes)
}

#[test]
fn fdatasync_of_an_overwrite_commits_nothing_and_flushes_once_per_call() {
    let r = on_disk(&wal("fdatasync=1\noverwrite=1"));
    let (n, _, commits, flushes) = syncs(&r);
    assert!(n > 50, "{n} fdatasyncs");
    // The commit timer (5 s) may commit the mtime updates once; the calls commit nothing.
    assert!(commits <= 1, "{commits} commits for {n} fdatasyncs of overwritten blocks");
    assert!(flushes >= n, "each call flushes the cache: {flushes} flushes for {n} calls");
}

#[test]
fn fdatasync_commits_every_conversion_of_a_fallocated_or_sparse_file() {
    for layout in ["fallocate=posix", "fallocate=none"] {
        let r = on_disk(&wal(&format!("fdatasync=1\n{layout}")));
        let (n, _, commits, _) = syncs(&r);
        assert!(n > 20, "{layout}: {n} fdatasyncs");
        // Each call's page is new (unwritten or unallocated): its conversion is committed
        // before the call returns, one commit per call.
        assert!(commits + 1 >= n, "{layout}: {commits} commits for {n} fdatasyncs");
    }
}

#[test]
fn fdatasync_of_an_overwrite_is_faster_than_of_an_append_and_than_fsync() {
    let (_, over, ..) = syncs(&on_disk(&wal("fdatasync=1\noverwrite=1")));
    let (_, prealloc, ..) = syncs(&on_disk(&wal("fdatasync=1")));
    let (_, fsync, fsync_commits, _) = syncs(&on_disk(&wal("fsync=1\noverwrite=1")));
    assert!(prealloc > 1.5 * over, "prealloc {prealloc:.2} ms vs overwrite {over:.2} ms");
    // fsync commits the mtime change once per tick: most calls commit.
    assert!(fsync > 1.5 * over, "fsync {fsync:.2} ms vs fdatasync {over:.2} ms");
    assert!(fsync_commits > 20, "fsync committed {fsync_commits} times");
}

#[test]
fn o_dsync_direct_overwrites_carry_fua_where_the_device_takes_it() {
    let r = on_disk(&wal("sync=dsync\ndirect=1\noverwrite=1"));
    let d = &r.devices[0];
    let writes = r.fio[0].stats.dir[WRITE].ios;
    assert!(writes > 50, "{writes} writes");
    assert_eq!(d.flushes, 0, "a FUA write needs no flush");
    assert!(d.fua_writes >= writes, "{} FUA writes for {writes} O_DSYNC writes", d.fua_writes);
}

#[test]
fn o_dsync_writes_pay_a_flush_where_the_device_has_no_fua() {
    for extra in [
        "sync=dsync\ndirect=1\noverwrite=1",
        "sync=dsync\noverwrite=1",
        "sync=1\noverwrite=1",
    ] {
        let r = on_loop(&wal(extra), "ext4");
        let d = &r.devices[0];
        let writes = r.fio[0].stats.dir[WRITE].ios;
        assert!(writes > 50, "{extra}: {writes} writes");
        assert_eq!(d.fua_writes, 0, "{extra}: the loop device takes no FUA");
        assert!(d.flushes >= writes, "{extra}: {} flushes for {writes} writes", d.flushes);
    }
}

#[test]
fn o_dsync_into_fallocated_blocks_commits_each_conversion() {
    let r = on_disk(&wal("sync=dsync\ndirect=1"));
    let writes = r.fio[0].stats.dir[WRITE].ios;
    let commits = r.devices[0].journal.as_ref().map_or(0, |j| j.commits);
    // The only FUA writes are the commits' records: an unwritten extent cannot go
    // write-through.
    assert!(
        r.devices[0].fua_writes <= commits,
        "{} FUA writes, {commits} commits",
        r.devices[0].fua_writes
    );
    assert!(commits + 1 >= writes, "{commits} commits for {writes} writes");
}

#[test]
fn xfs_skips_the_log_force_for_a_timestamp_alone() {
    let over = on_loop(&wal("fdatasync=1\noverwrite=1"), "xfs");
    let pre = on_loop(&wal("fdatasync=1"), "xfs");
    let (n, _, c_over, _) = syncs(&over);
    let (m, _, c_pre, _) = syncs(&pre);
    assert!(c_over <= 1, "{c_over} log forces for {n} fdatasyncs of overwrites");
    assert!(c_pre + 1 >= m, "{c_pre} log forces for {m} fdatasyncs of fallocated blocks");
}

#[test]
fn a_bare_job_file_runs_on_ext4() {
    let r = on_disk(&wal("fdatasync=1"));
    assert_eq!(r.scenario.devices[0].fs.as_ref().map(|m| m.fs.name()), Some("ext4"));
    assert!(r.devices[0].journal.is_some(), "the journal runs");
}

#[test]
fn fast_commit_shortens_an_fsync_that_needs_a_commit() {
    // Every fdatasync of fallocated blocks commits a conversion: a fast commit (one block)
    // replaces the full commit (descriptor, blocks, commit record).
    for model in ["hdd", "loop"] {
        let full = on_device(model, "fs = \"ext4\"", &wal("fdatasync=1"));
        let fast = on_device(model, "fs = \"ext4\"\nfast_commit = true", &wal("fdatasync=1"));
        let (n, full_ms, full_commits, _) = syncs(&full);
        let (m, fast_ms, fast_commits, _) = syncs(&fast);
        let fc = fast.devices[0].journal.as_ref().map_or(0, |j| j.fast_commits);
        assert!(
            full_commits + 1 >= n,
            "{model}: without fast commits each call commits: {full_commits} for {n}"
        );
        // Each call is a fast commit, or, once the 256-block fast-commit area is full, a full
        // commit that empties it.
        assert!(fc + fast_commits + 1 >= m, "{model}: {fc} fast commits for {m} fdatasyncs");
        assert!(
            fast_commits <= 2 + m / 200,
            "{model}: {fast_commits} full commits for {m} fdatasyncs with fast commits"
        );
        assert!(
            fast_ms < full_ms,
            "{model}: fdatasync {fast_ms:.3} ms with fast commits, {full_ms:.3} ms without"
        );
    }
}

#[test]
fn with_fast_commits_every_fsync_of_a_running_transaction_writes_one() {
    // Overwrites change only the mtime, once a tick: without fast commits most fsyncs find
    // their transaction committed and only flush; with them, each fsync while the transaction
    // runs writes a fast commit, so the calls get slower — as the kernel does (validation v22
    // against v27: 0.16 ms against 0.35 ms at the median).
    let full = on_loop(&wal("fsync=1\noverwrite=1"), "ext4");
    let fast = on_device("loop", "fs = \"ext4\"\nfast_commit = true", &wal("fsync=1\noverwrite=1"));
    let (n, full_ms, full_commits, _) = syncs(&full);
    let (m, fast_ms, ..) = syncs(&fast);
    let fc = fast.devices[0].journal.as_ref().map_or(0, |j| j.fast_commits);
    assert!(full_commits * 2 < n, "without: {full_commits} commits for {n} fsyncs");
    assert!(fc * 10 >= m * 9, "with: {fc} fast commits for {m} fsyncs");
    assert!(
        fast_ms > full_ms,
        "fsync {fast_ms:.3} ms with fast commits, {full_ms:.3} ms without"
    );
}

#[test]
fn a_full_fast_commit_area_falls_back_to_a_full_commit() {
    // 4 s, shorter than the 5 s commit timer: the full commits come from the fast-commit area
    // (256 blocks, one a call) filling up — the kernel's 6.18 gave 0.0039 a call (v27).
    let r = on_device("loop", "fs = \"ext4\"\nfast_commit = true", &wal("fsync=1\noverwrite=1"));
    let (m, ..) = syncs(&r);
    let j = r.devices[0].journal.as_ref().expect("journal");
    assert!(m > 2_000, "{m} fsyncs are too few to fill the area");
    let per_area = m as f64 / j.commits.max(1) as f64;
    assert!(
        (200.0..=300.0).contains(&per_area),
        "{} full commits for {m} fsyncs: one per {per_area:.0}",
        j.commits
    );
}

#[test]
fn fast_commit_serves_fdatasync_of_fallocated_blocks_too() {
    let r = on_device("hdd", "fs = \"ext4\"\nfast_commit = true", &wal("fdatasync=1"));
    let (n, ..) = syncs(&r);
    let j = r.devices[0].journal.as_ref().expect("journal");
    assert!(j.fast_commits + 1 >= n, "{} fast commits for {n} fdatasyncs", j.fast_commits);
    assert!(j.commits <= 2, "{} full commits", j.commits);
}

#[test]
fn fast_commit_is_an_ext4_feature() {
    let toml = "[[device]]\nname = \"sda\"\nfs = \"xfs\"\nfast_commit = true\n";
    let e = wblab_scenario::parse(toml, "fc.toml")
        .expect_err("xfs has no fast commits")
        .to_string();
    assert!(e.contains("fast_commit") && e.contains("fc.toml:4"), "{e}");
}

#[test]
fn each_sync_call_says_what_it_waited_for() {
    let over = on_disk(&wal("fdatasync=1\noverwrite=1"));
    let pre = on_disk(&wal("fdatasync=1"));
    let parts = |r: &RunResult| r.tasks[0].syncs;
    let (o, p) = (parts(&over), parts(&pre));
    assert_eq!(o.total[1], 0, "an overwrite's fdatasync waits for no commit: {o:?}");
    assert!(o.total[2] > 0, "it waits for the cache flush: {o:?}");
    assert!(
        p.total[1] > p.total[2],
        "a conversion's fdatasync waits mostly for its commit: {p:?}"
    );
    // The parts are the calls' whole latency, as fio reports it.
    let fio = &over.fio[0].stats.sync;
    let sum: u64 = o.total.iter().sum();
    assert_eq!(o.calls, fio.n, "every call is split");
    assert!(
        (sum as f64 / fio.sum as f64 - 1.0).abs() < 0.01,
        "parts {sum} ns, calls {} ns",
        fio.sum
    );
}

/// A WAL's fdatasyncs beside a buffered 1 MiB copy on ext4 on a loop device (validation v24,
/// 4 s), on `kernel`: (syncs, sync p99 in ms).
fn wal_beside_a_copy(kernel: &str) -> (u64, f64) {
    let toml = format!(
        "duration = \"5s\"\nkernel = \"{kernel}\"\n[machine]\nmemory = \"8GiB\"\n\
         [sysctl]\n\"vm.dirty_bytes\" = \"256MiB\"\n\"vm.dirty_background_bytes\" = \"128MiB\"\n\
         [[device]]\nname = \"loop64\"\nmodel = \"loop\"\nfs = \"ext4\"\n\
         [[task]]\nfio = \"\"\"\n{}\n[copy]\nrw=write\nbs=1m\nsize=1g\nruntime=4s\ntime_based\n\"\"\"\n",
        wal("fdatasync=1\noverwrite=1")
    );
    let sc = wblab_scenario::parse(&toml, "wal-copy.toml").unwrap_or_else(|e| panic!("{e}"));
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
    let wal = r.fio.iter().find(|f| f.job.name == "wal").expect("the wal job");
    (wal.stats.sync.n, wal.stats.sync.hist.quantile(0.99) as f64 / 1e6)
}

/// With large folios (ext4 from 6.16) the loop's writeback requests are a few physically
/// contiguous segments each, so the virtio disk under the loop takes them all into its ring
/// and the WAL's small write queues behind them in the host. Without (6.12), each 1.25 MiB
/// request of scattered pages fills the ring alone, the rest wait in the disk's mq-deadline,
/// whose sweep up the copy's file passes the WAL's lower sectors by until it wraps.
#[test]
fn large_folios_keep_a_wals_syncs_out_of_the_copys_sweep_on_a_loop() {
    let (n_new, p99_new) = wal_beside_a_copy("6.18");
    let (n_old, p99_old) = wal_beside_a_copy("6.12");
    assert!(p99_old > 200.0, "6.12: the WAL waits for the sweep: p99 {p99_old} ms");
    assert!(p99_new * 3.0 < p99_old, "6.18 p99 {p99_new} ms against 6.12 {p99_old} ms");
    assert!(n_new > n_old, "6.18 {n_new} syncs, 6.12 {n_old}");
}

/// On a loop device (a write cache, no FUA), an fdatasync after each 4 KiB write into a
/// fallocated file: xfs forces its log as one iclog write carrying REQ_PREFLUSH and REQ_FUA
/// (a flush, the write, a flush), ext4 writes its log blocks and then a commit block apart —
/// so xfs's call takes fewer writes and less time (the kernel: 0.48 against 0.76 ms, v26, v20).
#[test]
fn xfs_forces_its_log_in_one_write_and_syncs_sooner_than_ext4_commits() {
    let per_sync = |fs: &str| {
        let r = on_loop(&wal("fdatasync=1"), fs);
        let (n, mean, commits, flushes) = syncs(&r);
        assert!(n > 100 && commits + 1 >= n, "{fs}: {commits} commits for {n} fdatasyncs");
        let d = &r.devices[0];
        (d.requests_written as f64 / n as f64, flushes as f64 / n as f64, mean)
    };
    let (xfs_writes, xfs_flushes, xfs_ms) = per_sync("xfs");
    let (ext4_writes, ext4_flushes, ext4_ms) = per_sync("ext4");
    // The data page and one iclog; ext4 also a descriptor, the logged blocks and its commit.
    assert!((xfs_writes - 2.0).abs() < 0.1, "xfs: {xfs_writes:.2} writes per call");
    assert!(ext4_writes > xfs_writes + 0.9, "ext4: {ext4_writes:.2} writes per call");
    // Both: the pre-flush and the flush that stands in for FUA.
    assert!(
        (xfs_flushes - 2.0).abs() < 0.1 && (ext4_flushes - 2.0).abs() < 0.1,
        "{xfs_flushes} {ext4_flushes}"
    );
    assert!(xfs_ms < ext4_ms * 0.95, "xfs {xfs_ms:.3} ms, ext4 {ext4_ms:.3} ms");
}

/// A buffered 4 KiB writer on the default disk for 4 s with `extra` (fio options).
fn writer(extra: &str) -> RunResult {
    on_disk(&format!(
        "[w]\nrw=write\nbs=4k\nsize=64m\nruntime=4s\ntime_based\noverwrite=1\n{extra}\n"
    ))
}

#[test]
fn sync_file_range_write_starts_writeback_without_waiting_or_committing() {
    // Below the background limit the data would sit dirty for 30 s; `write` every 16 writes
    // sends it to the disk as it goes, and returns without waiting for the disk.
    let plain = writer("");
    let sfr = writer("sync_file_range=write:16");
    let full = writer("fdatasync=16");
    let written = |r: &RunResult| r.devices[0].bytes_written;
    assert!(
        written(&sfr) > 10 * written(&plain).max(1 << 20),
        "the device wrote {} B with sync_file_range, {} B without",
        written(&sfr),
        written(&plain)
    );
    let (n, sfr_ms, commits, flushes) = syncs(&sfr);
    let (_, full_ms, ..) = syncs(&full);
    assert!(n > 100, "{n} calls");
    assert!(commits <= 1, "{commits} journal commits for {n} sync_file_range calls");
    assert_eq!(flushes, 0, "sync_file_range flushes no cache");
    assert!(
        sfr_ms * 10.0 < full_ms,
        "sync_file_range {sfr_ms:.3} ms against fdatasync {full_ms:.3} ms"
    );
}

#[test]
fn sync_file_range_that_waits_waits_for_the_data_but_not_for_a_flush() {
    // All three flags: the range is on the device (in its cache) when the call returns, which
    // takes the disk's write; fdatasync adds the cache flush after it.
    let (n, write_ms, ..) = syncs(&writer("sync_file_range=write:16"));
    let (m, wait_ms, _, flushes) = syncs(&writer("sync_file_range=wait_before,write,wait_after:16"));
    let (_, full_ms, ..) = syncs(&writer("fdatasync=16"));
    assert!(n > 100 && m > 100, "{n} and {m} calls");
    assert_eq!(flushes, 0, "no flush");
    assert!(wait_ms > 1.5 * write_ms, "waiting {wait_ms:.3} ms against not {write_ms:.3} ms");
    assert!(wait_ms < full_ms, "waiting {wait_ms:.3} ms against fdatasync {full_ms:.3} ms");
}

#[test]
fn sync_file_range_flags_are_fios() {
    for (opt, ok) in [
        ("sync_file_range=wait_before,write:8", true),
        ("sync_file_range=write", true),
        ("sync_file_range=flush:8", false),
        ("sync_file_range=write:0", false),
    ] {
        let toml = format!("[[task]]\nfio = \"\"\"\n[w]\nrw=write\nsize=1m\n{opt}\n\"\"\"\n");
        match wblab_scenario::parse(&toml, "sfr.toml") {
            Ok(_) => assert!(ok, "{opt} was accepted"),
            Err(e) => {
                let e = e.to_string();
                assert!(!ok, "{opt}: {e}");
                assert!(e.contains("sync_file_range") && e.contains("sfr.toml"), "{opt}: {e}");
            }
        }
    }
}
