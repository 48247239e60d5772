//! Kernel generations in scenario files: release strings, lists of kernels, the era's default
//! knobs under the file's own, `[policy]` overrides, and the metadata jobs' keys.

use wblab_scenario::{parse, parse_all};
use wblab_sim::config::{FlusherKind, JobConfig, LegacyLists, PerBdiLoop, QueueEra, ReclaimKind, ThrottleKind, WritebackChunk};
use wblab_sim::units::{KIB, MIB};

fn ok(text: &str) -> wblab_sim::config::Scenario {
    parse(text, "gen.toml").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn releases_pick_their_generation_and_its_pieces() {
    let sc = ok("kernel = \"2.6.20\"");
    let p = &sc.policy;
    assert_eq!(p.generation, "2.6.20");
    assert_eq!(
        (p.throttle, p.flusher, p.reclaim, p.queue, p.writeback_chunk),
        (
            ThrottleKind::Global,
            FlusherKind::Pdflush,
            ReclaimKind::Pageout,
            QueueEra::Legacy(LegacyLists::V26),
            WritebackChunk::Fixed
        )
    );
    for (k, gen, throttle) in [
        ("2.6.23", "2.6.20", ThrottleKind::Global),
        ("2.6.24", "2.6.24", ThrottleKind::PerBdi(PerBdiLoop::V2624)),
        ("2.6.32", "2.6.32", ThrottleKind::PerBdi(PerBdiLoop::V2632)),
        ("2.6.38-rc7", "2.6.38", ThrottleKind::PerBdi(PerBdiLoop::V2638)),
        ("3.0", "2.6.38", ThrottleKind::PerBdi(PerBdiLoop::V2638)),
        ("3.2", "3.2", ThrottleKind::IoLess),
        ("4.19", "6.x", ThrottleKind::Modern),
        ("6.18.2", "6.x", ThrottleKind::Modern),
    ] {
        let sc = ok(&format!("kernel = \"{k}\""));
        assert_eq!(
            (sc.kernel.as_str(), sc.policy.generation.as_str(), sc.policy.throttle),
            (k, gen, throttle)
        );
    }
    assert_eq!(ok("kernel = \"2.6.32\"").policy.flusher, FlusherKind::PerBdi);
    assert_eq!(ok("kernel = \"3.2\"").policy.reclaim, ReclaimKind::KswapdPageout);
    assert_eq!(ok("").policy.queue, QueueEra::BlkMq);
}

#[test]
fn the_era_sets_dirty_ratios_and_queue_knobs_and_the_file_overrides_them() {
    let s = ok("kernel = \"2.6.20\"").sysctl;
    assert_eq!((s.dirty_background_ratio, s.dirty_ratio), (10, 40));
    let s = ok("kernel = \"2.6.24\"").sysctl;
    assert_eq!((s.dirty_background_ratio, s.dirty_ratio), (5, 10));
    let s = ok("kernel = \"2.6.38\"").sysctl;
    assert_eq!((s.dirty_background_ratio, s.dirty_ratio), (10, 20));
    // The file's [sysctl] wins; a bytes knob zeroes the era's ratio as the kernel does.
    let s = ok("kernel = \"2.6.20\"\n[sysctl]\n\"vm.dirty_ratio\" = 15").sysctl;
    assert_eq!((s.dirty_background_ratio, s.dirty_ratio), (10, 15));
    let s = ok("kernel = \"2.6.20\"\n[sysctl]\n\"vm.dirty_bytes\" = \"100MiB\"").sysctl;
    assert_eq!((s.dirty_ratio, s.dirty_bytes), (0, 100 * MIB));
    // Legacy queue: 128 requests, 512 KiB requests, 128 KiB readahead, no wbt...
    let q = &ok("kernel = \"2.6.24\"").devices[0].queue;
    assert_eq!(
        (q.nr_requests, q.max_sectors_kb, q.read_ahead_kb, q.wbt_lat_usec),
        (128, 512, 128, 0)
    );
    // ...unless the file sets them.
    let q = &ok("kernel = \"2.6.24\"\n[[device]]\n\"queue/nr_requests\" = 64\n\"queue/read_ahead_kb\" = 256").devices[0].queue;
    assert_eq!((q.nr_requests, q.max_sectors_kb, q.read_ahead_kb), (64, 512, 256));
    // 6.x keeps the blk-mq defaults.
    let q = &ok("").devices[0].queue;
    assert_eq!((q.nr_requests, q.wbt_lat_usec), (64, 75_000));
}

#[test]
fn a_list_of_kernels_gives_one_scenario_each_in_order() {
    let all = parse_all("name = \"x\"\nkernel = [\"2.6.20\", \"2.6.24\", \"6.x\"]", "x.toml").unwrap_or_else(|e| panic!("{e}"));
    let ks: Vec<(&str, u32)> = all.iter().map(|s| (s.kernel.as_str(), s.sysctl.dirty_ratio)).collect();
    assert_eq!(ks, vec![("2.6.20", 40), ("2.6.24", 10), ("6.x", 20)]);
    assert!(all.iter().all(|s| s.name == "x"));
    // `parse` gives the first.
    assert_eq!(ok("kernel = [\"3.2\", \"2.6.38\"]").kernel, "3.2");
}

#[test]
fn policy_section_overrides_single_pieces() {
    let sc = ok("kernel = \"2.6.24\"\n[policy]\nreclaim = \"modern\"\nqueue = \"blk-mq\"\nwriteback_chunk = \"bandwidth\"");
    let p = &sc.policy;
    assert_eq!(
        (p.throttle, p.flusher),
        (ThrottleKind::PerBdi(PerBdiLoop::V2624), FlusherKind::Pdflush)
    );
    assert_eq!(
        (p.reclaim, p.queue, p.writeback_chunk),
        (ReclaimKind::Modern, QueueEra::BlkMq, WritebackChunk::Bandwidth)
    );
    // With the blk-mq queue the legacy queue knobs are not applied.
    assert_eq!(sc.devices[0].queue.nr_requests, 64);
    let sc = ok("[policy]\nthrottle = \"io-less\"\nflusher = \"per-bdi\"");
    assert_eq!((sc.policy.throttle, sc.policy.flusher), (ThrottleKind::IoLess, FlusherKind::PerBdi));
    assert_eq!(sc.policy.generation, "6.x");
}

#[test]
fn a_policy_family_on_a_kernel_without_it_must_name_its_release() {
    // 6.x has no per-bdi throttle of its own: "per-bdi" used to run 2.6.38's loop silently.
    let e = parse("[policy]\nthrottle = \"per-bdi\"", "p.toml").unwrap_err();
    assert!(e.message.contains("no throttling policy `per-bdi` of its own"), "{e}");
    assert!(e.hint.as_deref().unwrap_or("").contains("per-bdi-2.6.38"), "{e}");
    // Named in full it runs, and the resolved scenario says which loop.
    let sc = ok("[policy]\nthrottle = \"per-bdi-2.6.24\"");
    assert_eq!(sc.policy.throttle, ThrottleKind::PerBdi(PerBdiLoop::V2624));
    let json = serde_json::to_value(&sc.policy).unwrap();
    assert_eq!(json["throttle"], "per-bdi-2.6.24");
    // On its own kernel the family is the kernel's loop and is echoed as the family.
    let sc = ok("kernel = \"2.6.32\"\n[policy]\nthrottle = \"per-bdi\"");
    assert_eq!(sc.policy.throttle, ThrottleKind::PerBdi(PerBdiLoop::V2632));
    assert_eq!(serde_json::to_value(&sc.policy).unwrap()["throttle"], "per-bdi");
    // 2.4's request lists and buffer code are named the same way.
    let sc = ok("kernel = \"2.4.17\"\n[policy]\nthrottle = \"bdflush-2.4.7\"");
    assert_eq!(sc.policy.queue, QueueEra::Legacy(LegacyLists::V24));
    assert!(parse("kernel = \"2.6.20\"\n[policy]\nflusher = \"bdflush\"", "p.toml").is_err());
}

#[test]
fn metadata_job_keys_and_defaults() {
    let sc = ok(r#"
[[task]]
name = "du"
job = "du"
[[task]]
name = "walk"
job = "du"
files = 5000
files_per_dir = 50
subdirs = 3
inode_size = 128
repeat = true
[[task]]
name = "ls"
job = "ls"
interval = "10s"
[[task]]
name = "app"
job = "launch"
files = 7
file_sizes = ["1MiB", "4KiB"]
writes = "64KiB"
count = 2
"#);
    assert!(matches!(
        sc.tasks[0].job,
        JobConfig::Du {
            files: 1_000_000,
            files_per_dir: 20,
            subdirs: 4,
            inode_size: 256,
            inode_spacing: 1,
            repeat: false
        }
    ));
    assert!(matches!(
        sc.tasks[1].job,
        JobConfig::Du {
            files: 5000,
            files_per_dir: 50,
            subdirs: 3,
            inode_size: 128,
            inode_spacing: 1,
            repeat: true
        }
    ));
    assert!(matches!(
        sc.tasks[2].job,
        JobConfig::Ls {
            dirs: 8,
            entries: 100,
            interval: Some(10_000_000_000)
        }
    ));
    let JobConfig::Launch {
        files,
        files_per_dir,
        ref file_sizes,
        bs,
        mmap,
        writes,
        interval,
    } = sc.tasks[3].job
    else {
        panic!("launch")
    };
    assert_eq!(
        (files, files_per_dir, file_sizes.clone(), bs, mmap, writes, interval),
        (7, 20, vec![MIB, 4 * KIB], 128 * KIB, false, 64 * KIB, None)
    );
    // A tree job with count > 1 needs no {n} in its path (each instance has its own tree).
    assert_eq!(sc.tasks[3].count, 2);
}

#[test]
fn legacy_queue_defaults_respect_the_drivers_limits() {
    let sc = ok(r#"
kernel = "2.6.38"
[[device]]
name = "sda"
model = "hdd"
[[device]]
name = "sdb"
model = "usb"
[[device]]
name = "nfs0"
model = "nfs"
"#);
    let q = |i: usize| &sc.devices[i].queue;
    // A disk gets the era's 512 KiB requests and 128-slot queue.
    assert_eq!((q(0).max_sectors_kb, q(0).nr_requests), (512, 128));
    // usb-storage never allowed more than 120 KiB per request.
    assert!(q(1).max_sectors_kb <= 120, "usb max_sectors_kb {}", q(1).max_sectors_kb);
    // An NFS mount has no request queue to take legacy knobs from.
    let nfs_now = ok("[[device]]\nname = \"nfs0\"\nmodel = \"nfs\"\n");
    assert_eq!(q(2).max_sectors_kb, nfs_now.devices[0].queue.max_sectors_kb);
    assert_eq!(q(2).nr_requests, nfs_now.devices[0].queue.nr_requests);
}

#[test]
fn readahead_and_read_waits_follow_the_release() {
    use wblab_sim::config::{ReadWait, Readahead};
    for (k, ra, wait) in [
        ("2.4.17", Readahead::OnDemand, ReadWait::LockPage),
        ("2.6.4", Readahead::OnDemand, ReadWait::LockPage),
        ("2.6.5", Readahead::Windowed, ReadWait::LockPage),
        ("2.6.7", Readahead::Windowed, ReadWait::LockPage),
        ("2.6.10", Readahead::Windowed, ReadWait::LockPage),
        ("2.6.11", Readahead::OnDemand, ReadWait::LockPage),
        ("4.7", Readahead::OnDemand, ReadWait::LockPage),
        ("4.8", Readahead::OnDemand, ReadWait::WaitLocked),
        ("6.18", Readahead::OnDemand, ReadWait::WaitLocked),
    ] {
        let sc = ok(&format!("kernel = \"{k}\""));
        assert_eq!((sc.policy.readahead, sc.policy.read_wait), (ra, wait), "{k}");
    }
    let sc = ok("kernel = \"6.18\"\n[policy]\nreadahead = \"windowed\"\nread_wait = \"lock-page\"");
    assert_eq!(
        (sc.policy.readahead, sc.policy.read_wait),
        (Readahead::Windowed, ReadWait::LockPage)
    );
    let err = parse("[policy]\nreadahead = \"lazy\"", "gen.toml").unwrap_err().to_string();
    assert!(err.contains("readahead") && err.contains("windowed"), "{err}");
}

/// Two `cat`s of one file, the second a moment after the first: it finds the first one's
/// readahead pages under I/O. Up to 4.7 it waits for them in `__lock_page`, an exclusive
/// waiter whose unlock wakes the next, from 4.8 in `wait_on_page_bit`; both read the whole
/// file either way.
#[test]
fn a_reader_behind_another_waits_for_its_pages_as_the_release_does() {
    let run = |kernel: &str| {
        let sc = ok(&format!(
            r#"
kernel = "{kernel}"
duration = "20s"
[[device]]
name = "sda"
model = "hdd"
[[task]]
name = "first"
job = "cat"
file = "/mnt/sda/f"
file_size = "32MiB"
bs = "128KiB"
[[task]]
name = "second"
job = "cat"
file = "/mnt/sda/f"
file_size = "32MiB"
bs = "128KiB"
start = "1ms"
"#
        ));
        let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{kernel}: {v}"));
        let t = |name: &str| r.tasks.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name}")).clone();
        (t("first"), t("second"))
    };
    for k in ["2.6.7", "4.7", "4.8", "6.18"] {
        let (first, second) = run(k);
        for t in [&first, &second] {
            assert_eq!(t.bytes_read, 32 * MIB, "{k} {}: read all of the file", t.name);
        }
        let s = second.sched;
        eprintln!("{k}: first {:?} second {s:?}", first.sched);
        if k.starts_with('2') || k == "4.7" {
            assert!(s.lock_page > 0, "{k}: the second reader waits in __lock_page: {s:?}");
        } else {
            assert_eq!(s.lock_page, 0, "{k}: no lock_page waits from 4.8: {s:?}");
            assert!(s.wait_on_page_bit > 0, "{k}: {s:?}");
        }
    }
}

/// The 6.x generation runs 4.0 to 6.x, but each release gets only the block layer it had: no
/// blk-wbt before 4.10, no mq-deadline before 4.11 (so no elevator on blk-mq), and what a
/// release had stays the default.
#[test]
fn a_release_gets_only_the_features_it_had() {
    let dev = "\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n";
    let queue = |k: &str| {
        let sc = ok(&format!("kernel = \"{k}\"{dev}"));
        let q = &sc.devices[0].queue;
        (q.scheduler.name(), q.wbt_lat_usec)
    };
    let today = queue("6.18");
    assert_eq!(today.0, "mq-deadline");
    assert!(today.1 > 0, "blk-wbt on a 6.18 disk");
    assert_eq!(queue("4.9"), ("none", 0));
    assert_eq!(queue("4.10").1, today.1, "blk-wbt from 4.10");
    assert_eq!(queue("4.11"), today);
    let bfq = ok(&format!("kernel = \"4.12\"{dev}\"queue/scheduler\" = \"bfq\"\n"));
    assert_eq!(bfq.devices[0].queue.scheduler.name(), "bfq");
    assert!(bfq.what_if.is_empty() && ok("kernel = \"6.18\"").what_if.is_empty());
}

/// A file that sets what its release lacked runs as asked, each such key named as a what-if
/// (the run's header prints them).
#[test]
fn keys_a_release_lacked_run_as_what_ifs() {
    let sc = ok("kernel = \"4.9\"\n[[device]]\nname = \"sda\"\n\"queue/scheduler\" = \"mq-deadline\"\n\"queue/wbt_lat_usec\" = 75000\n");
    assert_eq!(sc.devices[0].queue.scheduler.name(), "mq-deadline");
    assert_eq!(sc.devices[0].queue.wbt_lat_usec, 75000);
    assert_eq!(sc.what_if.len(), 2, "{:?}", sc.what_if);
    assert!(sc.what_if[0].contains("mq-deadline elevator (merged in 4.11)"), "{:?}", sc.what_if);
    assert!(sc.what_if[1].contains("blk-wbt"), "{:?}", sc.what_if);
    let cg = ok("kernel = \"4.14\"\n[[device]]\nname = \"sda\"\n\"queue/scheduler\" = \"none\"\n[[cgroup]]\npath = \"/db\"\n\"io.latency\" = \"sda target=10ms\"\n");
    assert_eq!(cg.what_if.len(), 1, "{:?}", cg.what_if);
    assert!(cg.what_if[0].contains("io.latency") && cg.what_if[0].contains("4.19"));
}
