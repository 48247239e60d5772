//! The whole block trace of simulated runs, read back by `btt`: every I/O is followed from its
//! queueing to its completion, in order, and what btt measures agrees with what the simulator
//! counted on its own (the device's request latency), on every generation of the block layer.

use wblab_report::btt::{analyze, BttOptions, Io, Phase};
use wblab_sim::metrics::RunResult;

fn sim(text: &str) -> RunResult {
    let mut sc = wblab_scenario::parse(text, "btt.toml").expect("test scenario parses");
    sc.trace.block = true;
    wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
}

fn trace_text(r: &RunResult) -> String {
    let mut out = Vec::new();
    wblab_report::write_trace(&mut out, r).expect("writes to memory");
    String::from_utf8(out).expect("utf-8")
}

/// Buffered writers and a reader on an SSD with blk-wbt (6.x): wbt waits, tag waits.
const SSD_WBT: &str = r#"
kernel = "6.x"
duration = "6s"
[machine]
memory = "4GiB"
[[device]]
name = "nvme0n1"
model = "ssd"
[[task]]
name = "dd"
job = "dd"
count = 8
[[task]]
name = "reader"
job = "randread"
file_size = "1GiB"
"#;

/// ext4 on a disk under mq-deadline: journal commits, cache flushes, a reader among writers.
const HDD_EXT4: &str = r#"
kernel = "6.x"
duration = "6s"
[machine]
memory = "4GiB"
[[device]]
name = "sda"
model = "hdd"
fs = "ext4"
[[task]]
name = "copy"
job = "dd"
[[task]]
name = "db"
job = "fsync"
bytes = "16KiB"
interval = "100ms"
"#;

/// A throttled loop device with ext4's large writeback bios: blk-throttle holds them, then
/// splits them into requests.
const THROTTLED: &str = r#"
kernel = "6.x"
duration = "6s"
[machine]
memory = "8GiB"
[[device]]
name = "loop64"
model = "loop"
size = "2GiB"
fs = "ext4"
"throttle/write_bps" = "32MiB/s"
[[task]]
name = "dd"
job = "dd"
"#;

/// The legacy request lists of 2.6.38 (no tags, no wbt) with readers beside writers.
const LEGACY: &str = r#"
kernel = "2.6.38"
duration = "6s"
[machine]
memory = "2GiB"
[[device]]
name = "sda"
model = "hdd"
[[task]]
name = "dd"
job = "dd"
count = 4
[[task]]
name = "reader"
job = "randread"
file_size = "1GiB"
"#;

const CASES: [(&str, &str); 4] = [
    ("ssd+wbt", SSD_WBT),
    ("hdd ext4", HDD_EXT4),
    ("throttled loop", THROTTLED),
    ("2.6.38", LEGACY),
];

fn is_flush(io: &Io) -> bool {
    io.nr_sector == 0
}

#[test]
fn every_simulated_io_is_followed_from_queue_to_completion() {
    for (name, text) in CASES {
        let r = sim(text);
        let t = trace_text(&r);
        // The trace is in time order (records from the queue are moved in as they fire).
        let mut last = 0;
        for l in t.lines().filter_map(wblab_report::load::trace_parse::parse_line_ref) {
            assert!(l.ts_ns >= last, "{name}: {} after {last}", l.ts_ns);
            last = l.ts_ns;
        }
        let b = analyze(&t, BttOptions { keep_ios: true });
        assert_eq!(b.unmatched, 0, "{name}: every completion had its issue");
        let data: Vec<&Io> = b.ios.iter().filter(|io| !is_flush(io)).collect();
        assert!(data.len() > 50, "{name}: {} I/Os", data.len());
        for io in &data {
            let (q, g, i) = (io.q_ns, io.g_ns, io.i_ns);
            assert!(
                q.is_some() && g.is_some() && i.is_some(),
                "{name}: an I/O without its queueing: {io:?}"
            );
            assert!(
                q <= g && g <= i && i <= Some(io.d_ns) && io.d_ns <= io.c_ns,
                "{name}: out of order: {io:?}"
            );
        }
        assert_eq!(b.all.get(Phase::Q2C).n as usize, data.len(), "{name}");
        // Every bio queued (or split off) got a request or merged into one, but for those
        // still waiting for one when the run ended: at most one per submitter.
        let count = |ev: &str| t.lines().filter(|l| l.contains(&format!(": {ev}: "))).count();
        let arrived = count("block_bio_queue") + count("block_split");
        let placed = count("block_getrq") + count("block_bio_backmerge") + count("block_bio_frontmerge");
        let submitters = r.comms.len();
        assert!(
            placed <= arrived && arrived - placed <= submitters,
            "{name}: {arrived} bios queued, {placed} placed"
        );
    }
}

#[test]
fn btt_d2c_is_the_devices_own_request_latency() {
    for (name, text) in CASES {
        let r = sim(text);
        let b = analyze(&trace_text(&r), BttOptions { keep_ios: true });
        let data: Vec<&Io> = b.ios.iter().filter(|io| !is_flush(io)).collect();
        let sim_lat = r
            .devices
            .iter()
            .map(|d| d.request_latency.summary())
            .fold((0u64, 0u128), |a, s| (a.0 + s.count, a.1 + s.total));
        assert_eq!(data.len() as u64, sim_lat.0, "{name}: completed requests");
        let btt_total: u128 = data.iter().map(|io| u128::from(io.c_ns - io.d_ns)).sum();
        // The trace's clock prints microseconds: each I/O's D2C is within 1 µs of the exact one.
        let err = btt_total.abs_diff(sim_lat.1);
        assert!(
            err <= 1000 * data.len() as u128,
            "{name}: D2C total {btt_total} ns vs {} ns",
            sim_lat.1
        );
    }
}

#[test]
fn wbt_holds_writeback_before_its_tag_so_a_reader_gets_one_at_once() {
    let on = analyze(&trace_text(&sim(SSD_WBT)), BttOptions::default());
    let off_text = SSD_WBT.replace("model = \"ssd\"", "model = \"ssd\"\n\"queue/wbt_lat_usec\" = 0");
    let off = analyze(&trace_text(&sim(&off_text)), BttOptions::default());
    let q2g = |b: &wblab_report::btt::Btt, who: &str| {
        let (name, s) = b
            .processes
            .iter()
            .find(|(n, _)| n.starts_with(who))
            .unwrap_or_else(|| panic!("{who} queued I/O"));
        (name.clone(), s.get(Phase::Q2G).avg())
    };
    // With wbt the flusher's bios wait in wbt (Q2G) and the reader's never wait for a tag;
    // without it the writeback fills the tags and the reader waits behind them.
    let (flusher, flusher_wait) = q2g(&on, "kworker/u");
    assert!(flusher_wait > 100_000.0, "{flusher}: Q2G {flusher_wait:.0} ns under wbt");
    let (reader_on, reader_off) = (q2g(&on, "reader").1, q2g(&off, "reader").1);
    assert!(
        reader_off > 10.0 * reader_on.max(1000.0),
        "the reader's Q2G: {reader_on:.0} ns with wbt, {reader_off:.0} ns without"
    );
}

#[test]
fn bios_released_by_blk_throttle_are_queued_by_its_worker() {
    let r = sim(&THROTTLED.replace("\"throttle/write_bps\" = \"32MiB/s\"", "").replace(
        "[[task]]",
        "[[cgroup]]\npath = \"/slow\"\nio.max = \"loop64 wbps=32MiB/s\"\n[[task]]\ncgroup = \"/slow\"",
    ));
    let b = analyze(&trace_text(&r), BttOptions::default());
    let worker = b
        .processes
        .keys()
        .find(|p| p.starts_with("kworker/0:"))
        .expect("the throttle's worker queues bios");
    // The throttle's hold is before the queueing: the released bios' Q2C is their time in the
    // block layer and on the device, far less than the seconds they were held.
    let s = b.processes[worker].get(Phase::Q2C);
    assert!(s.n > 10 && s.max < 1_000_000_000, "{worker}: {s:?}");
}
