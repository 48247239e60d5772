//! The journal as users meet it: what an fsync costs beside a copy on ext4, xfs and ext3, what
//! the commit timer does, what barriers and the write cache change, and the handles a locked
//! transaction holds up. The laws (durability among them) run on every simulation here.

use wblab_sim::config::{Atime, DataMode, DeviceModelConfig, FsKind, JobConfig, MountConfig, Scenario, SchedulerKind};
use wblab_sim::generations::Version;
use wblab_sim::metrics::{JournalResult, RunResult};
use wblab_sim::units::{GIB, KIB, MIB};
use wblab_testkit::sim::{dd, hdd, run, ssd, task, SEC};

fn mount(fs: FsKind) -> MountConfig {
    MountConfig::defaults(fs, Version(6, 18, 0))
}

/// A copy and, from 5 s on, a 4 KiB commit every 100 ms on one disk carrying `fs`.
fn copy_and_commits(model: DeviceModelConfig, fs: Option<MountConfig>, write_cache: bool, secs: u64) -> Scenario {
    let mut sc = Scenario::one_device("journal", model, 4 * GIB, 2, secs * SEC);
    sc.devices[0].fs = fs;
    sc.devices[0].queue.write_cache = write_cache;
    sc.add_task("copy", 1, 0, dd(None));
    sc.tasks.push(commit_task(5 * SEC, SEC / 10));
    sc
}

/// A 4 KiB write and fsync every `interval` from `start` on.
fn commit_task(start: u64, interval: u64) -> wblab_sim::config::TaskConfig {
    task("commit", "/mnt/sda/wal", start, JobConfig::Fsync { bytes: 4 * KIB, interval })
}

fn group<'a>(r: &'a RunResult, name: &str) -> &'a wblab_sim::metrics::TaskResult {
    r.tasks.iter().find(|t| t.name == name).expect("task")
}

fn journal(r: &RunResult) -> &JournalResult {
    r.devices[0].journal.as_ref().expect("a journalled device")
}

/// Run `sc` with block tracing: the result and the cache flushes the devices were sent.
fn run_counting_flushes(mut sc: Scenario) -> (RunResult, usize) {
    sc.trace.block = true;
    let r = run(&sc);
    let flushes = r
        .trace
        .iter()
        .filter(|rec| matches!(rec.ev, wblab_sim::metrics::trace::TraceEvent::BlockRqIssue { rwbs, .. } if rwbs.flush))
        .count();
    (r, flushes)
}

fn commit_p50(r: &RunResult) -> u64 {
    group(r, "commit").op_latency.summary().p50
}

#[test]
fn an_fsync_on_ext4_waits_for_a_journal_commit() {
    let bare = run(&copy_and_commits(hdd(), None, true, 20));
    let ext4 = run(&copy_and_commits(hdd(), Some(mount(FsKind::Ext4)), true, 20));
    let j = journal(&ext4);
    let fsyncs = group(&ext4, "commit").op_latency.summary().count;
    assert!(fsyncs > 5, "{fsyncs} fsyncs");
    // Every fsync found its inode in a transaction not yet committed (the write updated
    // mtime and size), so there are about as many commits as fsyncs, and each logged blocks.
    assert!(
        j.commits >= fsyncs && j.commits <= fsyncs + 4,
        "{} commits for {fsyncs} fsyncs",
        j.commits
    );
    assert!(
        j.blocks_logged >= 3 * j.commits,
        "{} blocks in {} commits",
        j.blocks_logged,
        j.commits
    );
    // The commit's log write and commit record come after the data: an fsync costs more than
    // without a journal.
    assert!(
        commit_p50(&ext4) > commit_p50(&bare),
        "ext4 fsync p50 {} ns, no journal {} ns",
        commit_p50(&ext4),
        commit_p50(&bare)
    );
    // Log writes are on the device beside the data.
    let data = group(&ext4, "copy").bytes_written + group(&ext4, "commit").bytes_written;
    assert!(ext4.devices[0].bytes_written > 0 && ext4.devices[0].bytes_written <= data + j.blocks_logged * 4096);
}

#[test]
fn the_commit_timer_commits_a_lone_writer_every_commit_interval() {
    let secs = 30;
    let commits = |interval: u64| {
        let mut m = mount(FsKind::Ext4);
        m.commit_interval = interval * SEC;
        let mut sc = Scenario::one_device("timer", ssd(), 4 * GIB, 2, secs * SEC);
        sc.devices[0].fs = Some(m);
        sc.add_task("dd", 1, 0, dd(None));
        journal(&run(&sc)).commits
    };
    // A transaction expires `commit` seconds after its first handle, and the timer rounds that
    // up to a whole second (`round_jiffies_up`); the next transaction begins at the first
    // handle after the commit started: a commit every `commit` to `commit` + 1 seconds.
    for interval in [5, 1] {
        let n = commits(interval);
        assert!(
            (secs / (interval + 1) - 1..=secs / interval).contains(&n),
            "commit={interval}: {n} commits in {secs} s"
        );
    }
}

#[test]
fn ext3_ordered_mode_makes_an_fsync_write_the_copy_too() {
    let ext3 = |data: DataMode| {
        let mut m = MountConfig::defaults(FsKind::Ext3, Version(2, 6, 24));
        m.data = data;
        run(&copy_and_commits(hdd(), Some(m), false, 30))
    };
    let (ordered, writeback) = (ext3(DataMode::Ordered), ext3(DataMode::Writeback));
    let ext4 = run(&copy_and_commits(hdd(), Some(mount(FsKind::Ext4)), false, 30));
    // data=ordered writes every dirty page of the transaction's files at commit — the copy's
    // hundreds of MB — before the commit record: the 2009 "fsync takes seconds".
    let (o, w, e) = (commit_p50(&ordered), commit_p50(&writeback), commit_p50(&ext4));
    assert!(o > 2 * w, "ext3 ordered p50 {o} ns, writeback {w} ns");
    assert!(o > 2 * e, "ext3 ordered p50 {o} ns, ext4 {e} ns");
    let flushing = journal(&ordered).flushing_mean_ns;
    assert!(
        flushing > 10 * journal(&writeback).flushing_mean_ns.max(1),
        "ordered data phase {flushing} ns"
    );
}

#[test]
fn ext4_data_ordered_is_data_writeback_with_dioread_nolock_but_not_without() {
    let ext4 = |data: DataMode, dioread_nolock: bool| {
        let mut m = mount(FsKind::Ext4);
        m.data = data;
        m.dioread_nolock = dioread_nolock;
        run(&copy_and_commits(hdd(), Some(m), true, 20))
    };
    let ordered = ext4(DataMode::Ordered, true);
    let writeback = ext4(DataMode::Writeback, true);
    // Unwritten extents leave nothing to order: the two modes are one.
    assert_eq!(commit_p50(&ordered), commit_p50(&writeback));
    assert_eq!(journal(&ordered).commits, journal(&writeback).commits);
    assert_eq!(journal(&ordered).flushing_mean_ns, 0);
    // Without dioread_nolock a commit waits for the writeback its allocations started.
    let waits = ext4(DataMode::Ordered, false);
    assert!(journal(&waits).flushing_mean_ns > 0);
    assert!(commit_p50(&waits) > commit_p50(&ordered));
}

#[test]
fn barriers_and_the_write_cache_decide_the_commits_flushes() {
    let with = |barrier: bool, cache: bool| {
        let mut m = mount(FsKind::Ext4);
        m.barrier = barrier;
        let (r, flushes) = run_counting_flushes(copy_and_commits(hdd(), Some(m), cache, 20));
        (commit_p50(&r), flushes)
    };
    let (flushed, flushes) = with(true, true);
    let (nobarrier, none) = with(false, true);
    let (through, none_wt) = with(true, false);
    // A pre-flush and a post-flush (the commit record's FUA) per commit.
    assert!(flushes > 10, "{flushes} flushes");
    assert_eq!((none, none_wt), (0, 0), "barrier=0 and a write-through cache send no flush");
    assert!(flushed > nobarrier && flushed > through, "{flushed} vs {nobarrier} / {through} ns");
}

#[test]
fn a_locked_transaction_holds_up_writers_on_ext4_but_not_on_xfs() {
    // A disk with few tags: the flusher sleeps on a tag in the middle of an extent it mapped
    // under a handle, so each commit's T_LOCKED lasts until it gets one, and the copy's next
    // write() (a new mtime) waits meanwhile.
    let run_fs = |fs: FsKind| {
        let mut sc = copy_and_commits(hdd(), Some(mount(fs)), true, 20);
        sc.devices[0].queue.nr_requests = 4;
        run(&sc)
    };
    let ext4 = run_fs(FsKind::Ext4);
    let xfs = run_fs(FsKind::Xfs);
    assert!(journal(&ext4).locked_mean_ns > 0, "T_LOCKED waited for the flusher's handle");
    assert!(journal(&ext4).handle_waits > 0, "handles waited for T_FLUSH");
    assert_eq!((journal(&xfs).locked_mean_ns, journal(&xfs).handle_waits), (0, 0));
}

#[test]
fn atime_updates_follow_the_mount_option() {
    // A reader alone: its reads are the only thing that can give the journal work.
    let commits = |atime: Atime| {
        let mut m = mount(FsKind::Ext4);
        m.atime = atime;
        m.commit_interval = SEC;
        let mut sc = Scenario::one_device("atime", hdd(), 4 * GIB, 2, 12 * SEC);
        sc.devices[0].fs = Some(m);
        sc.add_task(
            "cat",
            1,
            0,
            JobConfig::Cat {
                bs: 64 * KIB,
                file_size: GIB,
            },
        );
        journal(&run(&sc)).commits
    };
    assert_eq!(commits(Atime::Noatime), 0);
    // relatime: the first read of a file older than a day, once.
    assert_eq!(commits(Atime::Relatime), 1);
    // strictatime: a new atime each tick while the file is read (seconds on the disk).
    assert!(commits(Atime::Strictatime) > 1);
}

#[test]
fn sync_commits_every_journal_and_its_data() {
    let mut sc = Scenario::one_device("sync", hdd(), 4 * GIB, 2, 20 * SEC);
    sc.devices[0].fs = Some(mount(FsKind::Xfs));
    sc.add_task("dd", 1, 0, wblab_testkit::sim::dd_with(MIB, 64 * MIB, false));
    sc.tasks.push(wblab_testkit::sim::sync_once("sync", 2 * SEC));
    let r = run(&sc);
    // xfs's log worker runs every 30 s: within 20 s only sync's log force commits.
    assert_eq!(journal(&r).commits, 1);
    assert_eq!(group(&r, "sync").op_latency.summary().count, 1);
    assert!(r.devices[0].bytes_written >= 64 * MIB);
}

#[test]
fn the_commit_record_is_a_fua_write_where_the_device_takes_fua() {
    // Flushes per commit: the pre-flush alone where the record carries FUA (a SATA disk), a
    // pre-flush and a post-flush where blk-flush must stand in for it (a loop device).
    let per_commit = |model: DeviceModelConfig| {
        let (r, flushes) = run_counting_flushes(copy_and_commits(model, Some(mount(FsKind::Ext4)), true, 20));
        flushes as f64 / journal(&r).commits as f64
    };
    let loop_model = DeviceModelConfig::Loop(Default::default());
    let (disk, lo) = (per_commit(hdd()), per_commit(loop_model));
    assert!((0.9..=1.1).contains(&disk), "{disk:.2} flushes per commit on the disk");
    assert!((1.8..=2.2).contains(&lo), "{lo:.2} flushes per commit on the loop device");
}

#[test]
fn committed_metadata_is_written_home_once_it_has_aged() {
    // A lone writer: its commits' metadata (its inode, the bitmaps and descriptors of the
    // groups it fills) is written home dirty_expire_centisecs after the commit, the newest
    // copy of each block only.
    let run_for = |secs: u64| {
        let mut sc = Scenario::one_device("ckpt", ssd(), 4 * GIB, 2, secs * SEC);
        sc.devices[0].fs = Some(mount(FsKind::Ext4));
        sc.add_task("dd", 1, 0, dd(None));
        let r = run(&sc);
        let j = journal(&r).clone();
        (j, r.sim_ns)
    };
    let expire = 30;
    let (young, _) = run_for(expire - 5);
    assert_eq!(young.checkpoint_blocks, 0, "nothing is {expire} s old yet");
    let (old, _) = run_for(expire + 30);
    assert!(old.checkpoint_blocks > 0, "aged metadata went home");
    // Descriptors and commit blocks (at least two per commit) never go home, and a block
    // journalled by several transactions goes home once.
    assert!(
        old.checkpoint_blocks <= old.blocks_logged - 2 * old.commits,
        "{} written home of {} logged in {} commits",
        old.checkpoint_blocks,
        old.blocks_logged,
        old.commits
    );
}

#[test]
fn a_launch_pays_its_atime_updates_in_the_journal() {
    // An application start reads 40 files: with relatime each first read changes the file's
    // atime in a handle, which a commit then logs; noatime logs nothing.
    let launch = |atime: Atime| {
        let mut m = mount(FsKind::Ext4);
        m.atime = atime;
        let mut sc = Scenario::one_device("launch", hdd(), 4 * GIB, 2, 20 * SEC);
        sc.devices[0].fs = Some(m);
        sc.tasks.push(task(
            "app",
            "/mnt/sda/app",
            2 * SEC,
            JobConfig::Launch {
                files_per_dir: 20,
                files: 40,
                file_sizes: vec![256 * KIB],
                bs: 128 * KIB,
                mmap: false,
                writes: 0,
                interval: None,
            },
        ));
        run(&sc)
    };
    assert_eq!(journal(&launch(Atime::Noatime)).commits, 0);
    let relatime = launch(Atime::Relatime);
    assert!(journal(&relatime).commits >= 1, "the atime updates were committed");
    // Forty files, forty inodes in three inode-table blocks: the commits log them.
    assert!(journal(&relatime).blocks_logged >= 3 + 2, "{}", journal(&relatime).blocks_logged);
}

#[test]
fn ls_writes_each_directory_atime_once_with_relatime_and_on_every_run_with_strictatime() {
    // `ls -l` of 8 directories every 2 s for 20 s, alone on the disk: getdents updates each
    // directory's atime; relatime only the first time, strictatime on every run.
    let logged = |atime: Atime| {
        let mut m = mount(FsKind::Ext4);
        m.atime = atime;
        let mut sc = Scenario::one_device("ls", hdd(), 4 * GIB, 2, 20 * SEC);
        sc.devices[0].fs = Some(m);
        sc.tasks.push(task(
            "ls",
            "/mnt/sda/etc",
            SEC,
            JobConfig::Ls {
                dirs: 8,
                entries: 100,
                interval: Some(2 * SEC),
            },
        ));
        let r = run(&sc);
        assert!(group(&r, "ls").op_latency.summary().count >= 8, "ls ran again and again");
        journal(&r).clone()
    };
    let none = logged(Atime::Noatime);
    let once = logged(Atime::Relatime);
    let every = logged(Atime::Strictatime);
    assert_eq!(none.commits, 0);
    // The 8 directories' inodes, one block each (one directory to a block group here).
    assert_eq!(once.commits, 1, "relatime: the first run only");
    assert!(every.commits >= 3, "strictatime: every run, {} commits", every.commits);
}

#[test]
fn creating_a_file_journals_its_directory_entry_and_inode_bitmap() {
    // A 4 KiB write + fsync every 100 ms into a new file, alone: the first commit also carries
    // the file's creation (the directory block and the inode bitmap), the later ones only the
    // inode and the allocation (a captured 6.18 commit of a new 40 KiB file journalled 7).
    let mut sc = Scenario::one_device("create", ssd(), 4 * GIB, 2, 3 * SEC);
    sc.devices[0].fs = Some(mount(FsKind::Ext4));
    sc.tasks.push(task(
        "commit",
        "/mnt/sda/new",
        0,
        JobConfig::Fsync {
            bytes: 4 * KIB,
            interval: SEC / 10,
        },
    ));
    let r = run(&sc);
    let blocks: Vec<u32> = r
        .trace
        .iter()
        .filter_map(|rec| match rec.ev {
            wblab_sim::metrics::trace::TraceEvent::Jbd2RunStats { blocks, .. } => Some(blocks),
            _ => None,
        })
        .collect();
    assert!(blocks.len() > 10, "{} commits", blocks.len());
    let later = *blocks[1..].iter().max().unwrap();
    assert!(
        blocks[0] >= later + 2,
        "first commit {} blocks, later ones at most {later}",
        blocks[0]
    );
}

#[test]
fn a_full_journal_makes_handles_wait_for_a_checkpoint() {
    // `ls -l` of 2000 directories every second with strictatime: every run journals 2000
    // directory inodes, one block each. A 4 MiB journal (1024 blocks, transactions of at most
    // 256) fills within a run, so handles wait while the oldest transactions' blocks are
    // written home (`__jbd2_log_wait_for_space`), long before their 30 s age would send
    // them; mke2fs's default journal holds a whole run. The laws check that everyone moves on.
    let ls = |journal_size: Option<u64>| {
        let mut m = mount(FsKind::Ext4);
        m.atime = Atime::Strictatime;
        m.journal_size = journal_size;
        let mut sc = Scenario::one_device("full-log", ssd(), 4 * GIB, 2, 20 * SEC);
        sc.devices[0].fs = Some(m);
        sc.tasks.push(task(
            "ls",
            "/mnt/sda/srv",
            SEC,
            JobConfig::Ls {
                dirs: 2000,
                entries: 10,
                interval: Some(SEC),
            },
        ));
        let r = run(&sc);
        let runs = group(&r, "ls").op_latency.summary();
        assert!(runs.count >= 3, "ls ran {} times", runs.count);
        (journal(&r).clone(), runs)
    };
    let (small, small_runs) = ls(Some(4 * MIB));
    let (default, default_runs) = ls(None);
    assert!(small.handle_waits > 0, "a 4 MiB journal fills: {small:?}");
    assert!(
        small.checkpoint_blocks > 0,
        "the full log forced blocks home before they aged: {small:?}"
    );
    assert_eq!(default.handle_waits, 0, "mke2fs's default journal holds a run: {default:?}");
    assert_eq!(default.checkpoint_blocks, 0, "nothing is 30 s old yet: {default:?}");
    assert!(
        small_runs.p50 > default_runs.p50,
        "waiting for log space slows each ls: {} vs {} ns",
        small_runs.p50,
        default_runs.p50
    );
}

#[test]
fn a_handle_waits_for_its_inode_block_while_the_commit_logs_it_on_jbd2_only() {
    // The copy's write() updates its mtime every tick; its inode shares a block with the
    // commit file's, which every fsync's commit writes to the log. On ext3/ext4, jbd2 shadows
    // the block meanwhile and the copy's handle sleeps in do_get_write_access; xfs relogs the
    // inode without waiting.
    let buffer_waits = |fs: FsKind| {
        let r = run(&copy_and_commits(hdd(), Some(mount(fs)), true, 20));
        let copy = group(&r, "copy");
        assert!(copy.bytes_written > 100 * MIB, "{fs:?}: the copy ran");
        r.tasks.iter().map(|t| t.sched.do_get_write_access).sum::<u64>()
    };
    let ext4 = buffer_waits(FsKind::Ext4);
    let ext3 = buffer_waits(FsKind::Ext3);
    assert!(ext4 > 0, "ext4: no handle waited for a shadowed buffer");
    assert!(ext3 > 0, "ext3: no handle waited for a shadowed buffer");
    assert_eq!(buffer_waits(FsKind::Xfs), 0, "xfs does not shadow");
}

/// A `replace` task (1 MiB of new content renamed over its file every second), alone on an
/// SSD for 20 s: the device writes of the file's data, in bytes.
fn replaced_bytes_on_disk(auto_da_alloc: bool) -> (u64, RunResult) {
    let mut m = mount(FsKind::Ext4);
    m.auto_da_alloc = auto_da_alloc;
    let mut sc = Scenario::one_device("replace", ssd(), 4 * GIB, 2, 20 * SEC);
    sc.devices[0].fs = Some(m);
    sc.tasks.push(task(
        "editor",
        "/mnt/sda/config",
        SEC,
        JobConfig::Replace { bytes: MIB, interval: SEC },
    ));
    let r = run(&sc);
    let written: u64 = r.vmstat.iter().map(|v| v.dev_write_bytes[0]).sum();
    let log = r.devices[0].journal.as_ref().map_or(0, |j| j.blocks_logged * 4096);
    (written.saturating_sub(log), r)
}

#[test]
fn auto_da_alloc_writes_a_replaced_file_at_the_rename() {
    // With auto_da_alloc (the default) each rename starts writeback of the new content, so
    // the 19 replacements reach the disk within the run; without it, delayed allocation
    // keeps them in memory until they are 30 s old (the 2009 zero-length-file complaint).
    let (with, r) = replaced_bytes_on_disk(true);
    let (without, _) = replaced_bytes_on_disk(false);
    let ops = group(&r, "editor").op_latency.summary().count;
    assert!(ops >= 18, "{ops} replacements");
    assert!(
        with >= (ops - 1) * MIB,
        "auto_da_alloc: {with} bytes of data written for {ops} renames"
    );
    assert!(without < MIB, "noauto_da_alloc: {without} bytes written before the data aged");
    assert!(journal(&r).commits >= 3, "the renames were committed");
}

#[test]
fn data_journal_writes_a_copy_twice() {
    // data=journal logs every page a write() copies, then writes it home: on a disk the copy
    // runs at about half the speed of data=ordered, and the log carries its data.
    let copy = |data: DataMode| {
        let mut m = mount(FsKind::Ext4);
        m.data = data;
        m.dioread_nolock = data != DataMode::Journal;
        let mut sc = Scenario::one_device("data-journal", hdd(), 4 * GIB, 2, 40 * SEC);
        sc.devices[0].fs = Some(m);
        sc.add_task("copy", 1, 0, dd(None));
        let r = run(&sc);
        (group(&r, "copy").bytes_written, journal(&r).clone())
    };
    let (ordered, _) = copy(DataMode::Ordered);
    let (journalled, j) = copy(DataMode::Journal);
    assert!(
        (journalled as f64) < 0.75 * ordered as f64,
        "data=journal copied {} MiB, data=ordered {} MiB",
        journalled / MIB,
        ordered / MIB
    );
    // What reached the log is the copy's data, less what still waits in the running
    // transaction or in the page cache at the end.
    let logged = j.blocks_logged * 4096;
    assert!(
        logged >= journalled / 2 && logged <= journalled + 64 * MIB,
        "logged {logged}, copied {journalled}"
    );
}

/// The journal thread sleeps between the steps of a commit (its start, its log writes, its
/// flushes) and the fsync sleeps until the commit ends: each wake-up on an idle CPU costs
/// `[machine] idle_wake_latency`. A lone fsync every 100 ms on ext4 on an SSD, with and without
/// that cost: its latency grows by at least four wake-ups (the commit's start, its log write,
/// its record or flush, the fsync's own), and not by the wake-ups of the copy's writeback.
#[test]
fn every_step_of_a_commit_pays_a_wake_up() {
    let fsync_p50 = |wake: u64| {
        let mut sc = Scenario::one_device("wake", ssd(), 4 * GIB, 2, 3 * SEC);
        sc.devices[0].fs = Some(mount(FsKind::Ext4));
        sc.machine.idle_wake_latency = wake;
        sc.tasks.push(task(
            "commit",
            "/mnt/sda/wal",
            0,
            JobConfig::Fsync {
                bytes: 4 * KIB,
                interval: SEC / 10,
            },
        ));
        let r = run(&sc);
        assert!(group(&r, "commit").op_latency.summary().count >= 20, "the fsyncs ran");
        commit_p50(&r)
    };
    let instant = fsync_p50(0);
    let woken = fsync_p50(100_000);
    assert!(
        woken >= instant + 4 * 100_000,
        "fsync p50 {instant} ns with instant hand-offs, {woken} ns with 100 µs wake-ups"
    );
    assert!(woken < instant + 8 * 100_000, "{woken} ns against {instant} ns");
}

/// A 4 KiB commit every `interval` on an otherwise idle SSD carrying `fs`, beside `spinners`
/// CPU-bound tasks.
fn commits_beside(fs: FsKind, spinners: u32, interval: u64) -> RunResult {
    let mut sc = Scenario::one_device("journal", ssd(), 4 * GIB, 2, 5 * SEC);
    sc.devices[0].fs = Some(mount(fs));
    sc.tasks.push(commit_task(0, interval));
    if spinners > 0 {
        sc.add_task("spin", spinners, 0, JobConfig::Spin);
    }
    run(&sc)
}

#[test]
fn an_fsync_spends_the_callers_cpu_before_its_first_request() {
    use wblab_sim::costs::{EXT4_FSYNC_NS, XFS_FSYNC_NS};
    for (fs, entry) in [(FsKind::Ext4, EXT4_FSYNC_NS.1), (FsKind::Xfs, XFS_FSYNC_NS.1)] {
        let alone = commits_beside(fs, 0, SEC / 10);
        let c = group(&alone, "commit");
        let calls = c.op_latency.summary().count;
        assert!(calls >= 40, "{fs:?}: {calls} fsyncs");
        // The file system's fsync runs in the caller: its system time holds it.
        assert!(
            c.cpu_sys_ns >= calls * entry,
            "{fs:?}: {} ns of system time for {calls} fsyncs",
            c.cpu_sys_ns
        );
        // Two CPU-bound neighbours on the two CPUs: the fsync's CPU now waits for one.
        let busy = commits_beside(fs, 2, SEC / 10);
        let (a, b) = (commit_p50(&alone), commit_p50(&busy));
        assert!(b >= a, "{fs:?}: fsync p50 {a} ns alone, {b} ns beside two spinners");
        // Back to back the same path is warm: less system time per call than after a rest.
        let looping = commits_beside(fs, 0, 0);
        let l = group(&looping, "commit");
        let per_call = |t: &wblab_sim::metrics::TaskResult| t.cpu_sys_ns / t.op_latency.summary().count.max(1);
        assert!(
            per_call(l) < per_call(c),
            "{fs:?}: {} ns of system time per fsync in a loop, {} ns one every 100 ms",
            per_call(l),
            per_call(c)
        );
    }
}

/// ext4 with `dioread_nolock` allocates an append's blocks as unwritten extents: its pages end
/// writeback only after a kworker converted them, so an fsync that waits for them wakes that
/// much later than without the option (blocks allocated written, pages ended at completion).
/// The commit itself is the same either way: the data was written before it started.
#[test]
fn an_appended_fsync_waits_for_its_extents_conversion() {
    use wblab_sim::costs::END_IO_CONVERT_NS;
    let fsync_p50 = |dioread_nolock: bool| {
        let mut sc = Scenario::one_device("convert", ssd(), 4 * GIB, 2, 3 * SEC);
        let mut m = mount(FsKind::Ext4);
        m.dioread_nolock = dioread_nolock;
        sc.devices[0].fs = Some(m);
        sc.tasks.push(commit_task(0, SEC / 10));
        let r = run(&sc);
        assert!(group(&r, "commit").op_latency.summary().count >= 20, "the fsyncs ran");
        commit_p50(&r)
    };
    let (written, unwritten) = (fsync_p50(false), fsync_p50(true));
    assert!(
        unwritten >= written + END_IO_CONVERT_NS.0,
        "fsync p50 {written} ns with written extents, {unwritten} ns converting unwritten ones"
    );
    assert!(
        unwritten <= written + 2 * END_IO_CONVERT_NS.1,
        "fsync p50 {written} ns with written extents, {unwritten} ns converting unwritten ones"
    );
}

/// An fsync job keeps its cadence as `wblab measure` runs it: each operation is due `interval`
/// after the previous was due, so a late wake-up shifts one operation, not all that follow.
#[test]
fn an_fsync_every_interval_keeps_its_cadence_when_it_wakes_late() {
    let interval = 10_000_000;
    let secs = 2;
    let ops = |wakeup_latency: u64| {
        let mut sc = Scenario::one_device("cadence", ssd(), 8 * GIB, 2, secs * SEC);
        sc.devices[0].fs = Some(mount(FsKind::Ext4));
        sc.machine.wakeup_latency = wakeup_latency;
        sc.tasks.push(commit_task(0, interval));
        let r = run(&sc);
        group(&r, "commit").op_latency.count()
    };
    let due = secs * SEC / interval;
    // Each sync takes well under the interval on an idle SSD: one operation per interval,
    // however late each wake-up is (1 ms on average here, a tenth of the interval).
    for latency in [0, 1_000_000] {
        let n = ops(latency);
        assert!(
            n + 1 >= due && n <= due,
            "{n} syncs in {secs} s at {interval} ns (wake-up latency {latency} ns)"
        );
    }
}

/// A copy and eight O_DIRECT backups on an ext4 HDD under `scheduler`, blk-wbt off. Under
/// mq-deadline the elevator always holds the copy's next writes in sector order, and the
/// journal lies beyond them.
fn copy_and_backups(scheduler: SchedulerKind, secs: u64) -> RunResult {
    let mut sc = Scenario::one_device("deadline-commits", hdd(), 8 * GIB, 2, secs * SEC);
    sc.devices[0].size = 16 * GIB;
    sc.devices[0].fs = Some(mount(FsKind::Ext4));
    let q = &mut sc.devices[0].queue;
    q.select_elevator(scheduler);
    q.nr_requests = if scheduler == SchedulerKind::NONE { 32 } else { 64 };
    q.wbt_lat_usec = 0;
    sc.add_task("copy", 1, 0, dd(None));
    sc.add_task("backup", 8, 0, wblab_testkit::sim::dd_direct(MIB, None));
    run(&sc)
}

#[test]
fn a_streaming_copy_does_not_hold_back_the_commits_under_mq_deadline() {
    // Two kernel paths keep a commit from waiting for mq-deadline's 5 s write FIFO expiry
    // (measured on 6.18 on an emulated disk: 1.9 s commits every 5 s, as under `none`): the
    // flusher, which needs the inode and bitmap the commit is logging, sleeps on their
    // shadows until the log write is done, so the sorted queue drains and reaches the log;
    // and the commit record, a REQ_PREFLUSH write, goes past the elevator once the flush is
    // done. So the sorted elevator costs a commit little more than the FIFO one.
    let deadline = copy_and_backups(SchedulerKind::MQ_DEADLINE, 30);
    let fifo = copy_and_backups(SchedulerKind::NONE, 30);
    assert!(group(&deadline, "copy").bytes_written > GIB, "the copy ran");
    let (d, n) = (journal(&deadline), journal(&fifo));
    assert!(d.commits >= 4, "{} commits in 30 s with a 5 s commit interval", d.commits);
    assert!(
        d.commit_mean_ns < n.commit_mean_ns * 3 / 2,
        "commits took {} ms under mq-deadline, {} ms under none",
        d.commit_mean_ns / 1_000_000,
        n.commit_mean_ns / 1_000_000
    );
}

#[test]
fn from_2_6_37_a_commit_record_goes_to_the_front_of_the_queue_before_it_waited_in_the_elevator() {
    // A copy on an ext4 HDD under CFQ: 2.6.36's barrier write waits in the elevator behind the
    // copy's writeback; 2.6.37's blk-flush inserts the record after its pre-flush at the
    // queue's front, so the commit's log phase shortens.
    let logging = |kernel: &str| {
        let mut sc = Scenario::one_device("flush-front", hdd(), 4 * GIB, 2, 40 * SEC);
        wblab_sim::generations::set_kernel(&mut sc, kernel).expect("a modelled kernel");
        let v = wblab_sim::generations::parse_version(kernel).expect("a version");
        sc.devices[0].fs = Some(MountConfig::defaults(FsKind::Ext4, v));
        sc.add_task("copy", 1, 0, dd(None));
        let r = run(&sc);
        assert!(group(&r, "copy").bytes_written > GIB, "{kernel}: the copy ran");
        let j = journal(&r);
        assert!(j.commits >= 3, "{kernel}: {} commits", j.commits);
        j.logging_mean_ns
    };
    let (barrier, flush) = (logging("2.6.36"), logging("2.6.38"));
    assert!(
        flush * 3 / 2 < barrier,
        "log phase {} ms on 2.6.38, {} ms on 2.6.36",
        flush / 1_000_000,
        barrier / 1_000_000
    );
}
