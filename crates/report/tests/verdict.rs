//! The verdict's rules on runs built to trigger each one, and on runs where each must stay
//! silent: a rule never fires without its evidence.

use std::path::Path;
use wblab_report::verdict::{verdict, Finding, Input, BUSY_UTIL, LONG_WRITE_FACTOR, STALL_FACTOR};
use wblab_sim::metrics::RunResult;

fn sim(text: &str) -> RunResult {
    let sc = wblab_scenario::parse(text, "verdict.toml").expect("test scenario parses");
    wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
}

fn rules(f: &[Finding]) -> Vec<&'static str> {
    f.iter().map(|x| x.rule).collect()
}

/// The one finding of `rule` (there must be exactly one).
fn the<'a>(f: &'a [Finding], rule: &str) -> &'a Finding {
    let found: Vec<&Finding> = f.iter().filter(|x| x.rule == rule).collect();
    assert_eq!(found.len(), 1, "one {rule} finding: {f:?}");
    found[0]
}

/// Two writers on a disk with little memory, beside nothing else.
const WRITERS: &str = r#"
name = "writers"
duration = "10s"
seed = 3
[machine]
memory = "2GiB"
[[device]]
name = "sda"
[[task]]
name = "dd"
job = "dd"
count = 2
"#;

/// A slow random reader on a fast SSD: nothing throttled, nothing busy, nothing stalled.
const QUIET_READER: &str = r#"
name = "quiet"
duration = "20s"
seed = 3
[machine]
memory = "2GiB"
[[device]]
name = "nvme0n1"
model = "ssd"
[[task]]
name = "reader"
job = "randread"
file_size = "1GiB"
think = "5ms"
"#;

#[test]
fn writers_on_a_disk_are_throttled_and_the_disk_sets_the_pace() {
    let r = sim(WRITERS);
    let f = verdict(&Input::from_result(&r));
    assert_eq!(rules(&f), ["throttled", "governed", "device-bound", "pressure"], "{f:?}");
    assert!(the(&f, "pressure").text.starts_with("The machine was stalled on I/O"), "{f:?}");
    let pauses: u64 = r.tasks.iter().map(|t| t.pauses.count()).sum();
    assert!(
        f[0].text
            .starts_with(&format!("dd ×2 was throttled by balance_dirty_pages: {pauses} pauses")),
        "{}",
        f[0].text
    );
    assert!(r.devices[0].util >= BUSY_UTIL);
    assert_eq!(f[2].figure, "iostat-util");
    // The global level left free run and was paced, never held at the hard limit.
    assert!(
        f[1].text.contains("balance_dirty_pages paced the writers") && f[1].text.contains("hard limit 0 %"),
        "{}",
        f[1].text
    );
    assert_eq!(f[1].figure, "global_dirty_state");
}

#[test]
fn strictlimit_writers_are_governed_by_their_devices_share() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sc = wblab_scenario::load(&root.join("scenarios/strictlimit.toml")).expect("ready scenario");
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap();
    let f = verdict(&Input::from_result(&r));
    let g = f.iter().find(|x| x.rule == "governed").expect("a governed finding");
    assert!(g.text.contains("never left free run") && g.text.contains("own share"), "{}", g.text);
    assert_eq!(g.figure, "bdi_dirty_state");
}

#[test]
fn a_quiet_reader_gets_no_verdict() {
    let r = sim(QUIET_READER);
    assert!(r.devices[0].util < BUSY_UTIL, "util {}", r.devices[0].util);
    assert!(r.tasks.iter().all(|t| t.pauses.count() == 0));
    assert_eq!(verdict(&Input::from_result(&r)), vec![]);
}

#[test]
fn a_reader_behind_writeback_bursts_stalls_and_a_steady_one_does_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sc = wblab_scenario::load(&root.join("scenarios/expire-bursts.toml")).expect("ready scenario");
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap();
    let f = verdict(&Input::from_result(&r));
    let stall = f.iter().find(|x| x.rule == "stalled").expect("the bursts stall the reader");
    assert!(stall.text.starts_with("reader stalled"), "{}", stall.text);
    assert_eq!(stall.figure, "latency-timeline");
    // Its worst operation is the reader's longest, and far beyond its p50.
    let reader = r.tasks.iter().find(|t| t.name == "reader").unwrap().op_latency.summary();
    let worst_ms = (reader.max as f64 / 1e6).round();
    assert!(
        stall.text.contains(&format!("took {worst_ms:.0} ms")),
        "{} vs {worst_ms}",
        stall.text
    );
    assert!(reader.max as f64 >= STALL_FACTOR * reader.p50 as f64);

    // The same reader beside steady writers waits every time alike: no stall.
    let steady = wblab_scenario::load(&root.join("scenarios/randread-latency.toml")).unwrap();
    let r = wblab_sim::run(&steady, &mut wblab_sim::machine::NoProgress).unwrap();
    assert!(!rules(&verdict(&Input::from_result(&r))).contains(&"stalled"));
}

/// The reader of expire-bursts slows for whole seconds when the flusher's periodic pass writes
/// the expired upload; a reader beside steady writers, and a quiet one, do not.
#[test]
fn writeback_bursts_slow_a_reader_for_whole_seconds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sc = wblab_scenario::load(&root.join("scenarios/expire-bursts.toml")).expect("ready scenario");
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap();
    let f = verdict(&Input::from_result(&r));
    let s = f.iter().find(|x| x.rule == "slowed").expect("the bursts slow the reader");
    assert_eq!(s.figure, "op-latency-timeline");
    assert!(s.text.starts_with("reader slowed for whole seconds"), "{}", s.text);
    // The evidence: the disk wrote far above its usual rate in those seconds.
    assert!(s.text.contains("while sda wrote"), "{}", s.text);
    // Each stretch is an expiry burst: none before the upload's pages are 30 s old.
    let starts: Vec<f64> = s
        .text
        .split("starting at ")
        .nth(1)
        .unwrap()
        .split(" s")
        .next()
        .unwrap()
        .split(", ")
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(starts.len() >= 2 && starts[0] >= 30.0, "{starts:?}");
    // And each starts in a second the disk wrote a burst (vmstat's bo, KiB/s).
    for s in &starts {
        let at = ((s + 1.0) * 1e9) as u64;
        let bo = r.vmstat.iter().find(|v| v.t_ns == at).map(|v| v.bo_kb).unwrap();
        assert!(bo > 10_000, "second {s}: bo {bo} KiB/s");
    }

    let steady = wblab_scenario::load(&root.join("scenarios/randread-latency.toml")).unwrap();
    let r = wblab_sim::run(&steady, &mut wblab_sim::machine::NoProgress).unwrap();
    assert!(!rules(&verdict(&Input::from_result(&r))).contains(&"slowed"));
}

/// The verdict of a results directory is the verdict of the run that wrote it.
#[test]
fn a_results_directory_gives_the_same_verdict() {
    let r = sim(WRITERS);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verdict-dir");
    let _ = std::fs::remove_dir_all(&dir);
    wblab_report::write_results_dir(&dir, &r, 0.0).unwrap();
    let d = wblab_report::load::rundir::RunDir::load(&dir).unwrap();
    let a = verdict(&Input::from_result(&r));
    let b = verdict(&Input::from_dir(&d));
    assert_eq!(rules(&a), rules(&b));
    assert_eq!(a[1..], b[1..], "governed and device-bound read the same files");
}

/// A commit probe beside a copy on a disk, on `fs` mounted with `mount`.
fn probe_beside_a_copy(fs: &str, mount: &str) -> String {
    format!(
        r#"
name = "probe"
duration = "20s"
seed = 1
[machine]
memory = "4GiB"
[[device]]
name = "sda"
model = "hdd"
fs = "{fs}"
mount = "{mount}"
[[task]]
name = "copy"
job = "dd"
file = "/mnt/sda/big"
[[task]]
name = "commit"
job = "fsync"
file = "/mnt/sda/wal"
interval = "100ms"
start = "5s"
"#
    )
}

/// The run as a measurement gives it: the sync calls' own waits not recorded.
fn without_sync_split(mut r: RunResult) -> RunResult {
    for t in &mut r.tasks {
        t.syncs = Default::default();
    }
    r
}

#[test]
fn a_slow_fsync_is_put_on_the_journal_only_when_its_commits_make_the_wait() {
    // ext3's ordered mode writes the copy's data inside every commit: the commits are the wait.
    let r = without_sync_split(sim(&probe_beside_a_copy("ext3", "data=ordered,barrier=1")));
    let f = verdict(&Input::from_result(&r));
    let slow = f.iter().find(|x| x.rule == "slow-fsync").expect("a slow fsync");
    let j = r.devices[0].journal.as_ref().unwrap();
    let p50 = r.tasks.iter().find(|t| t.name == "commit").unwrap().op_latency.summary().p50;
    assert!(j.commit_mean_ns * 2 >= p50, "commits {} ns, fsync p50 {p50} ns", j.commit_mean_ns);
    assert!(slow.text.contains("waits for the journal's commits"), "{}", slow.text);
    assert_eq!(slow.figure, "latency-cdf");

    // Behind a 32 MiB/s throttle the probe's own data waits; the commits are a small part.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sc = wblab_scenario::load(&root.join("validation/v6-fsync-ext4.toml")).unwrap();
    let r = without_sync_split(wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap());
    let f = verdict(&Input::from_result(&r));
    let slow = f.iter().find(|x| x.rule == "slow-fsync").expect("a slow fsync");
    assert!(slow.text.contains("so it waits for its own data"), "{}", slow.text);
}

/// Where the calls' own waits are recorded, the sentence splits them, and the split agrees
/// with what the run did: ext3's ordered commits hold the copy's data, so the commits are
/// the wait; behind v6's throttle the probe's own data is.
#[test]
fn a_slow_sync_is_split_into_what_it_waited_for() {
    let r = sim(&probe_beside_a_copy("ext3", "data=ordered,barrier=1"));
    let f = verdict(&Input::from_result(&r));
    assert!(!rules(&f).contains(&"slow-fsync"), "one sentence, not two: {f:?}");
    let s = the(&f, "sync-waits");
    let parts = r.tasks.iter().find(|t| t.name == "commit").unwrap().syncs;
    assert!(
        parts.total[1] > parts.total[0] + parts.total[2],
        "ext3 ordered: commits are the wait: {parts:?}"
    );
    assert!(
        s.text.contains("commit's slowest sync call") && s.text.contains("to commits"),
        "{}",
        s.text
    );

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sc = wblab_scenario::load(&root.join("validation/v6-fsync-ext4.toml")).unwrap();
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap();
    let parts = r.tasks.iter().find(|t| t.name == "commit").unwrap().syncs;
    assert!(
        parts.total[0] > parts.total[1] + parts.total[2],
        "behind a throttle: its data is the wait: {parts:?}"
    );
    let f = verdict(&Input::from_result(&r));
    assert_eq!(the(&f, "sync-waits").figure, "latency-cdf");
}

#[test]
fn a_fast_fsync_gets_no_sentence() {
    let text = probe_beside_a_copy("ext4", "data=ordered")
        .replace("model = \"hdd\"", "model = \"ssd\"")
        .replace("[[task]]\nname = \"copy\"\njob = \"dd\"\nfile = \"/mnt/sda/big\"\n", "");
    assert!(!text.contains("copy") && text.contains("ssd"), "the probe alone on an SSD: {text}");
    let r = sim(&text);
    let p50 = r.tasks.iter().find(|t| t.name == "commit").unwrap().op_latency.summary().p50 as f64 / 1e6;
    assert!(p50 < wblab_report::verdict::SLOW_FSYNC_MS, "{p50} ms");
    let f = verdict(&Input::from_result(&r));
    assert!(!rules(&f).contains(&"slow-fsync") && !rules(&f).contains(&"sync-waits"), "{f:?}");
}

/// A writer in a 512 MiB memory cgroup beside one outside, on cgroup v2 or (with
/// `memory.limit_in_bytes`) v1, on a disk.
fn pod(limit_key: &str) -> String {
    format!(
        r#"
name = "pod"
duration = "15s"
seed = 3
[machine]
memory = "8GiB"
[[device]]
name = "sda"
[[cgroup]]
path = "/pod"
{limit_key} = "512MiB"
[[cgroup]]
path = "/idle"
[[task]]
name = "in-pod"
job = "dd"
cgroup = "/pod"
[[task]]
name = "outside"
job = "dd"
"#
    )
}

#[test]
fn a_memory_cgroup_is_named_for_the_limit_that_held_its_writers() {
    let v2 = sim(&pod("memory.max"));
    let f = verdict(&Input::from_result(&v2));
    let c = the(&f, "cgroup");
    assert!(
        c.text.starts_with("/pod's writers were paced by the group's own dirty limit"),
        "{}",
        c.text
    );
    assert_eq!(c.figure, "cgroups");
    let v1 = sim(&pod("memory.limit_in_bytes"));
    let f = verdict(&Input::from_result(&v1));
    let c = the(&f, "cgroup");
    assert!(c.text.starts_with("/pod filled with dirty and writeback pages"), "{}", c.text);
    assert!(c.text.contains("waited on a page's writeback"), "{}", c.text);
    // The same from the results directory; the idle group and runs without cgroups say nothing.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verdict-cgroup");
    let _ = std::fs::remove_dir_all(&dir);
    wblab_report::write_results_dir(&dir, &v1, 0.0).unwrap();
    let d = wblab_report::load::rundir::RunDir::load(&dir).unwrap();
    assert_eq!(verdict(&Input::from_dir(&d)), verdict(&Input::from_result(&v1)));
    assert!(!rules(&verdict(&Input::from_result(&sim(WRITERS)))).contains(&"cgroup"));
}

/// The writers on a disk behind a `throttle/write_bps` limit.
fn throttled_writers(limit: &str) -> String {
    WRITERS.replace("name = \"sda\"", &format!("name = \"sda\"\n\"throttle/write_bps\" = \"{limit}\""))
}

/// blk-throttle is named where its limit held the device's writes, with the share of seconds
/// it held them, and not where the limit is above what the disk does; a results directory
/// gives the same sentence.
#[test]
fn a_blk_throttle_limit_is_named_only_where_it_held_the_writes() {
    let r = sim(&throttled_writers("20MB/s"));
    let f = verdict(&Input::from_result(&r));
    let b = f.iter().find(|x| x.rule == "blk-throttle").unwrap_or_else(|| panic!("{f:?}"));
    assert!(
        b.text
            .starts_with("blk-throttle held sda's writes at its limit (throttle/write_bps 20MB/s)"),
        "{}",
        b.text
    );
    assert_eq!(b.figure, "iostat-bw");
    // The evidence: the device wrote at the limit, never much above it. A second holds whole
    // 1 MiB requests, and one that got fewer than its share leaves budget to the next: a
    // second may pass the limit by a request or so, the run as a whole not at all.
    let seconds: Vec<f64> = r.vmstat.iter().map(|s| s.dev_write_bytes[0] as f64 / 1e6).collect();
    let held = seconds.iter().filter(|&&mb| mb >= 0.9 * 20.0).count();
    let request = 1.048576;
    assert!(
        held * 4 >= seconds.len() && seconds.iter().all(|&mb| mb <= 20.0 * 1.1 + request),
        "{seconds:?}"
    );
    let total: f64 = seconds.iter().sum();
    assert!(total <= 20.0 * seconds.len() as f64 * 1.02, "{total} MB in {} s", seconds.len());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verdict-blk-throttle");
    let _ = std::fs::remove_dir_all(&dir);
    wblab_report::write_results_dir(&dir, &r, 0.0).unwrap();
    let d = wblab_report::load::rundir::RunDir::load(&dir).unwrap();
    assert!(verdict(&Input::from_dir(&d)).contains(b), "the same sentence from the files");
    // A limit far above the disk's speed holds nothing; nor does a read limit nobody reaches.
    let free = sim(&throttled_writers("2GB/s").replace(
        "\"throttle/write_bps\"",
        "\"throttle/read_bps\" = \"1MB/s\"\n\"throttle/write_bps\"",
    ));
    let f = verdict(&Input::from_result(&free));
    assert!(!rules(&f).contains(&"blk-throttle"), "{f:?}");
    assert!(rules(&f).contains(&"device-bound"), "the disk set the pace there: {f:?}");
}

/// A disk with no scheduler and wbt off, a random O_DIRECT reader on `reader_dev` and, when
/// `writer` is set, a buffered copy on `writer_dev`.
fn reader_beside_copy(writer: bool, writer_dev: &str) -> String {
    let mut s = String::from(
        r#"
name = "queued"
duration = "20s"
seed = 3
[machine]
memory = "4GiB"
[[device]]
name = "sda"
"queue/scheduler" = "none"
"queue/wbt_lat_usec" = 0
[[device]]
name = "sdb"
[[task]]
name = "reader"
job = "randread"
device = "sda"
file_size = "1GiB"
direct = true
think = "10ms"
"#,
    );
    if writer {
        s.push_str(&format!("[[task]]\nname = \"dd\"\njob = \"dd\"\ndevice = \"{writer_dev}\"\n"));
    }
    s
}

#[test]
fn a_reader_queued_behind_writeback_is_named_and_one_with_its_disk_to_itself_is_not() {
    let r = sim(&reader_beside_copy(true, "sda"));
    let f = verdict(&Input::from_result(&r));
    let q = the(&f, "queued behind writeback");
    assert!(q.text.starts_with("reader waited in sda's queue behind writeback"), "{}", q.text);
    // Its evidence is the run's own: the reader's mean operation against the disk's time per
    // request, both from what the run wrote.
    let reader = r.tasks.iter().find(|t| t.name == "reader").unwrap();
    let op_ms = reader.op_latency.summary().mean / 1e6;
    let dev = &r.devices[0];
    let svctm_ms = dev.util * r.sim_ns as f64 / 1e6 / (dev.requests_read + dev.requests_written) as f64;
    assert!(
        op_ms >= wblab_report::verdict::QUEUED_FACTOR * svctm_ms * 0.9,
        "op {op_ms:.1} ms, svctm {svctm_ms:.1} ms"
    );
    // A results directory says the same.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verdict-queued");
    let _ = std::fs::remove_dir_all(&dir);
    wblab_report::write_results_dir(&dir, &r, 0.0).unwrap();
    let from_dir = verdict(&Input::from_dir(&wblab_report::load::rundir::RunDir::load(&dir).unwrap()));
    assert!(from_dir.iter().any(|x| x == q), "{from_dir:?}");
    // Alone on its disk, or with the copy on the other disk, the reader waits on nobody.
    for (writer, dev) in [(false, "sda"), (true, "sdb")] {
        let f = verdict(&Input::from_result(&sim(&reader_beside_copy(writer, dev))));
        assert!(!rules(&f).contains(&"queued behind writeback"), "writer {writer} on {dev}: {f:?}");
    }
}

/// Writers on a 1 GiB machine whose dirty limit (`vm.dirty_bytes`) is above its memory: the
/// page cache fills with dirty pages and every allocation waits for writeback to free some.
const WRITERS_OVER_MEMORY: &str = r#"
name = "reclaim"
duration = "20s"
seed = 3
[machine]
memory = "1GiB"
[sysctl]
"vm.dirty_bytes" = "3GiB"
"vm.dirty_background_bytes" = "2GiB"
[[device]]
name = "sda"
[[task]]
name = "dd"
job = "dd"
count = 2
"#;

#[test]
fn writers_that_fill_memory_wait_in_reclaim_and_writers_under_their_limit_do_not() {
    let r = sim(WRITERS_OVER_MEMORY);
    let f = verdict(&Input::from_result(&r));
    let found = the(&f, "reclaim");
    let waits: u64 = r.tasks.iter().map(|t| t.reclaim_waits).sum();
    let secs = r.tasks.iter().map(|t| t.reclaim_wait_ns).sum::<u64>() as f64 / 1e9;
    assert!(
        found
            .text
            .starts_with(&format!("dd ×2 waited for memory {waits} times, {secs:.1} s in all")),
        "{}",
        found.text
    );
    // They were not paced by balance_dirty_pages: the limit was never reached.
    assert!(!rules(&f).contains(&"throttled"), "{f:?}");
    // With the default limits the same writers are throttled before memory runs out.
    let f = verdict(&Input::from_result(&sim(WRITERS)));
    assert!(!rules(&f).contains(&"reclaim"), "{f:?}");
}

/// The two containers of scenarios/two-containers.toml: the verdict says what each group
/// waited on and because of whom, read from the same run in memory and from its results
/// directory; and without /etl, /web's commits and reads are faster — the counterfactual that
/// `wblab run --without /etl` gives.
#[test]
fn who_hurts_whom_names_the_limits_and_the_journal_thread() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/two-containers.toml");
    let mut sc = wblab_scenario::load(&path).expect("the shipped scenario loads");
    sc.duration = 30 * 1_000_000_000;
    let run = |sc: &wblab_sim::config::Scenario| wblab_sim::run(sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
    let r = run(&sc);
    let mem = verdict(&Input::from_result(&r));
    let dir = std::env::temp_dir().join(format!("wblab-who-hurts-{}", std::process::id()));
    wblab_report::write_results_dir(&dir, &r, 0.0).unwrap();
    let disk = verdict(&Input::from_dir(&wblab_report::load::rundir::RunDir::load(&dir).unwrap()));
    std::fs::remove_dir_all(&dir).unwrap();
    for f in [&mem, &disk] {
        let who: Vec<&str> = f.iter().filter(|x| x.rule == "who hurts whom").map(|x| x.text.as_str()).collect();
        assert!(
            who.iter().any(|t| t.starts_with("io.max held /etl's writes to sda at 60.0 MB/s")),
            "{who:#?}"
        );
        // What reached the device (io.stat) is the limit, whatever its tasks wrote into the
        // page cache.
        let held = who.iter().find(|t| t.starts_with("io.max held")).unwrap();
        let reached: f64 = held
            .split("reached the devices at ")
            .nth(1)
            .and_then(|x| x.split(' ').next())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("{held}"));
        assert!((reached - 60.0).abs() < 3.0, "{held}");
        assert!(
            who.iter().any(|t| t.contains("/etl's charges met its memory.max of 2048 MiB")),
            "{who:#?}"
        );
        assert!(
            who.iter()
                .any(|t| t.contains("/web's") && t.contains("jbd2 thread writes from the root cgroup")),
            "{who:#?}"
        );
        assert!(
            f.iter()
                .any(|x| x.rule == "pressure" && x.text.starts_with("/web was stalled on I/O")),
            "{f:#?}"
        );
    }
    let mut without = sc.clone();
    assert_eq!(without.without("/etl").unwrap(), "without /etl: its tasks (etl) do not run");
    let w = run(&without);
    let p99 = |r: &RunResult, name: &str| r.tasks.iter().find(|t| t.name == name).unwrap().op_latency.quantile(0.99);
    for task in ["db", "web"] {
        assert!(
            (p99(&w, task) as f64) < 0.8 * p99(&r, task) as f64,
            "{task}'s p99 without /etl {} ns, with it {} ns",
            p99(&w, task),
            p99(&r, task)
        );
    }
    assert!(w.tasks.iter().all(|t| t.name != "etl"), "/etl's task did not run");
    assert!(without.without("/nope").unwrap_err().contains("the scenario has: /etl, /web"));
}

/// The verdict of the results directory `r` writes (under a temporary name with `tag`).
fn verdict_of_dir(r: &RunResult, tag: &str) -> Vec<Finding> {
    let dir = std::env::temp_dir().join(format!("wblab-verdict-{tag}-{}", std::process::id()));
    wblab_report::write_results_dir(&dir, r, 0.0).unwrap();
    let d = wblab_report::load::rundir::RunDir::load(&dir).unwrap();
    let f = verdict(&Input::from_dir(&d));
    let _ = std::fs::remove_dir_all(&dir);
    f
}

/// A copy in a cgroup that io.max holds at 5 MB/s: its 1 MiB write() calls are paused many
/// times each.
const HELD_COPY: &str = r#"
name = "held-copy"
duration = "30s"
[machine]
memory = "8GiB"
[[device]]
name = "sda"
model = "hdd"
fs = "ext4"
[[cgroup]]
path = "/etl"
memory.max = "128MiB"
io.max = "sda wbps=5MB/s"
[[task]]
name = "etl"
job = "dd"
cgroup = "/etl"
"#;

#[test]
fn a_write_far_longer_than_any_pause_is_explained() {
    let r = sim(HELD_COPY);
    let f = verdict(&Input::from_result(&r));
    let t = &the(&f, "long-writes").text;
    let etl = &r.tasks[0];
    let (op, pauses) = (etl.op_latency.summary(), etl.pauses.summary());
    assert!(op.max as f64 >= LONG_WRITE_FACTOR * pauses.max as f64, "{t}");
    assert!(
        t.starts_with(&format!("etl's longest write() took {:.1} s", op.max as f64 / 1e9)),
        "{t}"
    );
    // Its pauses are most of its write() calls' time: the text says so, with the share.
    let share = pauses.total as f64 * 100.0 / op.total as f64;
    assert!(
        share > 50.0 && t.contains("the pauses add up") && t.contains(&format!("{share:.0} % were pauses")),
        "{t}"
    );
    // The same from its results directory.
    let from_dir = verdict_of_dir(&r, "long");
    assert!(
        from_dir
            .iter()
            .any(|x| x.rule == "long-writes" && x.text.contains("the pauses add up")),
        "{from_dir:?}"
    );
}

/// A database group with an io.latency target beside a copy on one disk.
const IO_LATENCY: &str = r#"
name = "io-latency"
duration = "30s"
[machine]
memory = "8GiB"
[[device]]
name = "sda"
model = "hdd"
fs = "ext4"
[[cgroup]]
path = "/db"
io.latency = "sda target=50ms"
[[cgroup]]
path = "/batch"
[[task]]
name = "copy"
job = "dd"
cgroup = "/batch"
[[task]]
name = "db-read"
job = "randread"
file_size = "8GiB"
cgroup = "/db"
[[task]]
name = "db-commit"
job = "fsync"
bytes = "8KiB"
interval = "100ms"
cgroup = "/db"
"#;

#[test]
fn an_io_latency_target_names_the_groups_it_held() {
    let r = sim(IO_LATENCY);
    let f = verdict(&Input::from_result(&r));
    let line = f
        .iter()
        .find(|x| x.text.contains("io.latency target"))
        .unwrap_or_else(|| panic!("{f:?}"));
    let stats = &r.devices[0].iolatency;
    let (db, batch) = (stats[0], stats[1]);
    assert!(db.missed > 0 && batch.waits > 0, "{stats:?}");
    assert!(
        line.text.starts_with(&format!(
            "/db missed its io.latency target of 50 ms on sda in {} windows",
            db.missed
        )) && line.text.contains(&format!("/batch's bios waited {} times", batch.waits)),
        "{}",
        line.text
    );
    // The same from the results directory.
    let from_dir = verdict_of_dir(&r, "iolat");
    assert!(from_dir.iter().any(|x| x.text == line.text), "{from_dir:?}");
    // Without the target nothing is held and nothing is said.
    let none = sim(&IO_LATENCY.replace("target=50ms", "target=max"));
    assert!(none.devices[0].iolatency.iter().all(|s| s.waits == 0));
    assert!(!verdict(&Input::from_result(&none)).iter().any(|x| x.text.contains("io.latency")));
}
