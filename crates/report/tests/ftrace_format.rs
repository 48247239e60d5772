//! Trace lines against lines captured from a real Linux 6.18 on the lab machines:
//! records built with the captured values must print the same text, and parse back.

use wblab_report::format_trace_line;
use wblab_report::load::trace_parse::parse_line;
use wblab_sim::config::IoPrio;
use wblab_sim::metrics::trace::{DevT, Rwbs, TraceEvent, TraceRecord, WbReason};

fn comms() -> Vec<(String, u32)> {
    [
        ("<idle>", 0),
        ("dd", 11904),
        ("bash", 9454),
        ("kworker/u8:0", 12),
        ("kworker/1:1H", 54),
        ("dd", 7959),
        ("awk", 8873),
        ("jbd2/loop0-8", 14383),
        ("dd", 22379),
    ]
    .iter()
    .map(|(c, p)| (c.to_string(), *p))
    .collect()
}

/// Timestamp text "3387.776667" → ns.
fn ts(s: &str) -> u64 {
    let (a, b) = s.split_once('.').unwrap();
    a.parse::<u64>().unwrap() * 1_000_000_000 + b.parse::<u64>().unwrap() * 1000
}

fn dev(major: u32, minor: u32) -> DevT {
    DevT { major, minor }
}

fn line(who: u32, cpu: u16, t: &str, ev: TraceEvent) -> String {
    let mut s = String::new();
    format_trace_line(&TraceRecord { t_ns: ts(t), who, cpu, ev }, &comms(), &mut s);
    s
}

/// The text after "<ts>: " of a captured line.
fn event_part(real: &str) -> &str {
    let i = real.find(": ").unwrap();
    &real[i + 2..]
}

#[allow(clippy::too_many_arguments)]
fn bdp(limit: u64, setpoint: u64, dirty: u64, wb_setpoint: u64, wb_dirty: u64, rl: u64, trl: u64, pause: i64, think: i64) -> TraceEvent {
    TraceEvent::BalanceDirtyPages {
        bdi: dev(7, 0),
        limit,
        setpoint,
        dirty,
        wb_setpoint,
        wb_dirty,
        dirty_ratelimit: rl,
        task_ratelimit: trl,
        dirtied: 256,
        dirtied_pause: 32,
        cgroup_ino: 1,
        paused: 0,
        pause,
        period: 8,
        think,
    }
}

/// (record, captured line) pairs from §9.4.
fn cases() -> Vec<(String, &'static str)> {
    vec![
        (
            line(1, 0, "3387.776667", bdp(1214219, 1062256, 15888, 10483, 9216, 102400, 102300, 8, 0)),
            "dd-11904   [000] .N...  3387.776667: balance_dirty_pages: bdi 7:0: limit=1214219 setpoint=1062256 dirty=15888 wb_setpoint=10483 wb_dirty=9216 dirty_ratelimit=102400 task_ratelimit=102300 dirtied=256 dirtied_pause=32 paused=0 pause=8 period=8 think=0 cgroup_ino=1",
        ),
        (
            line(1, 1, "3388.288278", bdp(1214209, 1062119, 45843, 10620, 9472, 102400, 102200, 12, -4)),
            "dd-11904   [001] .N...  3388.288278: balance_dirty_pages: bdi 7:0: limit=1214209 setpoint=1062119 dirty=45843 wb_setpoint=10620 wb_dirty=9472 dirty_ratelimit=102400 task_ratelimit=102200 dirtied=256 dirtied_pause=32 paused=0 pause=12 period=8 think=-4 cgroup_ino=1",
        ),
        (
            line(
                1,
                1,
                "3389.638099",
                TraceEvent::BdiDirtyRatelimit {
                    bdi: dev(7, 0),
                    write_bw: 78336,
                    avg_write_bw: 31028,
                    dirty_rate: 201140,
                    dirty_ratelimit: 102140,
                    task_ratelimit: 102044,
                    balanced_dirty_ratelimit: 15740,
                    cgroup_ino: 1,
                },
            ),
            "dd-11904   [001] ...1.  3389.638099: bdi_dirty_ratelimit: bdi 7:0: write_bw=78336 awrite_bw=31028 dirty_rate=201140 dirty_ratelimit=102140 task_ratelimit=102044 balanced_dirty_ratelimit=15740 cgroup_ino=1",
        ),
        (
            line(
                2,
                1,
                "3222.964686",
                TraceEvent::GlobalDirtyState {
                    nr_dirty: 8741,
                    nr_writeback: 0,
                    background_thresh: 608475,
                    dirty_thresh: 1218439,
                    dirty_limit: 160224,
                    nr_dirtied: 465055,
                    nr_written: 186876,
                },
            ),
            "bash-9454    [001] .....  3222.964686: global_dirty_state: dirty=8741 writeback=0 bg_thresh=608475 thresh=1218439 limit=160224 dirtied=465055 written=186876",
        ),
        (
            line(
                3,
                1,
                "3226.025474",
                TraceEvent::WritebackWritten {
                    bdi: dev(254, 0),
                    nr_pages: 344571,
                    sync_mode: 0,
                    for_kupdate: true,
                    range_cyclic: true,
                    for_background: false,
                    reason: WbReason::Periodic,
                },
            ),
            "kworker/u8:0-12 [001] ...1.  3226.025474: writeback_written: bdi 254:0: sb_dev 0:0 nr_pages=344571 sync_mode=0 kupdate=1 range_cyclic=1 background=0 reason=periodic cgroup_ino=1",
        ),
        (
            line(
                3,
                1,
                "3228.134366",
                TraceEvent::WritebackWritten {
                    bdi: dev(254, 0),
                    nr_pages: 9223372036854765991,
                    sync_mode: 0,
                    for_kupdate: false,
                    range_cyclic: true,
                    for_background: true,
                    reason: WbReason::Background,
                },
            ),
            "kworker/u8:0-12 [001] ...1.  3228.134366: writeback_written: bdi 254:0: sb_dev 0:0 nr_pages=9223372036854765991 sync_mode=0 kupdate=0 range_cyclic=1 background=1 reason=background cgroup_ino=1",
        ),
        (
            line(
                4,
                1,
                "3228.083844",
                TraceEvent::BlockRqIssue {
                    dev: dev(254, 0),
                    rwbs: Rwbs {
                        flush: false,
                        write: true,
                        sync: false,
                        readahead: false,
                    },
                    bytes: 61440,
                    sector: 319307624,
                    nr_sector: 120,
                    ioprio: Some(IoPrio::default()),
                    comm: 4,
                },
            ),
            "kworker/1:1H-54 [001] .....  3228.083844: block_rq_issue: 254,0 W 61440 () 319307624 + 120 be,0,4 [kworker/1:1H]",
        ),
        (
            line(
                0,
                1,
                "3222.972006",
                TraceEvent::BlockRqComplete {
                    dev: dev(254, 0),
                    rwbs: Rwbs {
                        flush: false,
                        write: true,
                        sync: false,
                        readahead: false,
                    },
                    sector: 169879600,
                    nr_sector: 8,
                    ioprio: Some(IoPrio::default()),
                    error: 0,
                },
            ),
            "<idle>-0        [001] ..s1.  3222.972006: block_rq_complete: 254,0 W () 169879600 + 8 be,0,4 [0]",
        ),
        (
            // A cache flush carries no I/O priority.
            line(
                4,
                1,
                "39028.036582",
                TraceEvent::BlockRqIssue {
                    dev: dev(7, 64),
                    rwbs: Rwbs {
                        flush: true,
                        write: false,
                        sync: false,
                        readahead: false,
                    },
                    bytes: 0,
                    sector: 0,
                    nr_sector: 0,
                    ioprio: None,
                    comm: 4,
                },
            ),
            "kworker/1:1H-54 [001] ..... 39028.036582: block_rq_issue: 7,64 FF 0 () 0 + 0 none,0,0 [kworker/1:1H]",
        ),
        (
            line(
                0,
                1,
                "3228.493424",
                TraceEvent::WbtStep {
                    dev: dev(254, 0),
                    msg: "scale up",
                    step: -4,
                    window_us: 100000,
                    background: 48,
                    normal: 96,
                    max: 192,
                },
            ),
            "<idle>-0        [001] .Ns1.  3228.493424: wbt_step: 254:0: scale up: step=-4, window=100000us, background=48, normal=96, max=192",
        ),
        // A 40 KiB write with conv=fsync on a fresh ext4 loop device (6.18, 25 Nov 2026).
        (
            line(
                7,
                0,
                "29700.521766",
                TraceEvent::Jbd2Commit {
                    dev: dev(7, 0),
                    tid: 2,
                    sync: false,
                    what: "start_commit",
                },
            ),
            "    jbd2/loop0-8-14383   [000] ..... 29700.521766: jbd2_start_commit: dev 7,0 transaction 2 sync 0",
        ),
        (
            line(
                7,
                0,
                "29700.521767",
                TraceEvent::Jbd2Commit {
                    dev: dev(7, 0),
                    tid: 2,
                    sync: false,
                    what: "commit_locking",
                },
            ),
            "    jbd2/loop0-8-14383   [000] ...1. 29700.521767: jbd2_commit_locking: dev 7,0 transaction 2 sync 0",
        ),
        (
            line(
                7,
                0,
                "29700.554400",
                TraceEvent::Jbd2RunStats {
                    dev: dev(7, 0),
                    tid: 2,
                    wait: 0,
                    request_delay: 0,
                    running: 0,
                    locked: 0,
                    flushing: 0,
                    logging: 32,
                    handle_count: 4,
                    blocks: 7,
                    blocks_logged: 9,
                },
            ),
            "    jbd2/loop0-8-14383   [000] ...1. 29700.554400: jbd2_run_stats: dev 7,0 tid 2 wait 0 request_delay 0 running 0 locked 0 flushing 0 logging 32 handle_count 4 blocks 7 blocks_logged 9",
        ),
        (
            line(
                7,
                0,
                "29700.554403",
                TraceEvent::Jbd2EndCommit {
                    dev: dev(7, 0),
                    tid: 2,
                    sync: false,
                    head: 2,
                },
            ),
            "    jbd2/loop0-8-14383   [000] ..... 29700.554403: jbd2_end_commit: dev 7,0 transaction 2 sync 0 head 2",
        ),
        // kyber on a 6.18 loop device (the timer runs in softirq, in whoever's context).
        (
            line(
                8,
                1,
                "41708.370882",
                TraceEvent::KyberLatency {
                    dev: dev(7, 0),
                    domain: "READ",
                    kind: "I/O",
                    percentile: 90,
                    numerator: 1,
                    denominator: 4,
                    samples: 721,
                },
            ),
            "              dd-22379   [001] ..s.. 41708.370882: kyber_latency: 7,0 READ I/O p90 1/4 samples=721",
        ),
        (
            line(
                0,
                1,
                "41789.698837",
                TraceEvent::KyberAdjust {
                    dev: dev(7, 0),
                    domain: "WRITE",
                    depth: 32,
                },
            ),
            "          <idle>-0       [001] ..s1. 41789.698837: kyber_adjust: 7,0 WRITE 32",
        ),
    ]
}

/// The line the kernel would print for the captured one, with exact `%16s-%-7d` padding and our
/// fixed flags column.
fn realigned(real: &str) -> String {
    let p = parse_line(real).unwrap();
    let secs = p.ts_ns / 1_000_000_000;
    let us = p.ts_ns % 1_000_000_000 / 1000;
    format!(
        "{:>16}-{:<7} [{:03}] ..... {:>5}.{:06}: {}",
        p.comm,
        p.pid,
        p.cpu,
        secs,
        us,
        event_part(real)
    )
}

#[test]
fn event_payloads_match_real_lines() {
    for (ours, real) in cases() {
        assert_eq!(event_part(&ours), event_part(real), "\nours: {ours}\nreal: {real}");
    }
}

#[test]
fn whole_lines_have_kernel_padding() {
    for (ours, real) in cases() {
        assert_eq!(ours, realigned(real));
    }
}

#[test]
fn full_padding_lines_from_the_real_kernel() {
    // These lines were captured with the kernel's padding intact.
    let c = comms();
    let mut s = String::new();
    format_trace_line(
        &TraceRecord {
            t_ns: ts("5402.375866"),
            who: 5,
            cpu: 1,
            ev: TraceEvent::BalanceDirtyPages {
                bdi: dev(7, 64),
                limit: 65536,
                setpoint: 57344,
                dirty: 49161,
                wb_setpoint: 1790,
                wb_dirty: 49153,
                dirty_ratelimit: 102400,
                task_ratelimit: 51000,
                dirtied: 256,
                dirtied_pause: 128,
                cgroup_ino: 1,
                paused: 0,
                pause: 20,
                period: 20,
                think: 0,
            },
        },
        &c,
        &mut s,
    );
    assert_eq!(
        s,
        "              dd-7959    [001] .....  5402.375866: balance_dirty_pages: bdi 7:64: limit=65536 setpoint=57344 dirty=49161 wb_setpoint=1790 wb_dirty=49153 dirty_ratelimit=102400 task_ratelimit=51000 dirtied=256 dirtied_pause=128 paused=0 pause=20 period=20 think=0 cgroup_ino=1"
    );
    s.clear();
    format_trace_line(
        &TraceRecord {
            t_ns: ts("5431.410804"),
            who: 6,
            cpu: 1,
            ev: TraceEvent::GlobalDirtyState {
                nr_dirty: 35,
                nr_writeback: 50432,
                background_thresh: 32768,
                dirty_thresh: 65536,
                dirty_limit: 65536,
                nr_dirtied: 85719293,
                nr_written: 85352404,
            },
        },
        &c,
        &mut s,
    );
    assert_eq!(
        s,
        "             awk-8873    [001] .....  5431.410804: global_dirty_state: dirty=35 writeback=50432 bg_thresh=32768 thresh=65536 limit=65536 dirtied=85719293 written=85352404"
    );
}

#[test]
fn timestamps_round_to_microseconds_and_pad() {
    let c = comms();
    let ev = TraceEvent::GlobalDirtyState {
        nr_dirty: 0,
        nr_writeback: 0,
        background_thresh: 0,
        dirty_thresh: 0,
        dirty_limit: 0,
        nr_dirtied: 0,
        nr_written: 0,
    };
    let mut s = String::new();
    for (t_ns, want) in [
        (0, "     0.000000"),
        (1_999_999_500, "     2.000000"),
        (12_345_678_499, "    12.345678"),
        (123_456_000_000_000, " 123456.000000"),
    ] {
        s.clear();
        format_trace_line(
            &TraceRecord {
                t_ns,
                who: 2,
                cpu: 0,
                ev: ev.clone(),
            },
            &c,
            &mut s,
        );
        assert!(s.contains(&format!("[000] .....{want}: global_dirty_state: ")), "{s}");
    }
    // A comm longer than TASK_COMM_LEN - 1 is cut to 15 bytes; unknown indexes print <...>.
    let long = vec![("a-very-long-task-name".to_string(), 1234u32)];
    s.clear();
    format_trace_line(
        &TraceRecord {
            t_ns: 0,
            who: 0,
            cpu: 0,
            ev: ev.clone(),
        },
        &long,
        &mut s,
    );
    assert!(s.starts_with(" a-very-long-tas-1234    [000] "), "{s}");
    s.clear();
    format_trace_line(
        &TraceRecord {
            t_ns: 0,
            who: 9,
            cpu: 0,
            ev,
        },
        &long,
        &mut s,
    );
    assert!(s.starts_with("           <...>-0       [000] "), "{s}");
}

#[test]
fn round_trip_through_the_parser() {
    for (ours, real) in cases() {
        let a = parse_line(&ours).expect("our line parses");
        let b = parse_line(real).expect("real line parses");
        assert_eq!(a.comm, b.comm);
        assert_eq!(a.pid, b.pid);
        assert_eq!(a.cpu, b.cpu);
        assert_eq!(a.ts_ns, b.ts_ns);
        assert_eq!(a.event, b.event);
        assert_eq!(a.fields, b.fields, "{real}");
        assert_eq!(a.flags, ".....");
    }
}

#[test]
fn real_lines_parse_by_name() {
    let c = cases();
    let e = parse_line(c[1].1).unwrap();
    assert_eq!((e.comm.as_str(), e.pid, e.cpu, e.flags.as_str()), ("dd", 11904, 1, ".N..."));
    assert_eq!(e.ts_ns, 3_388_288_278_000);
    assert_eq!(e.event, "balance_dirty_pages");
    assert_eq!(e.get("bdi"), Some("7:0"));
    assert_eq!(e.get_u64("limit"), Some(1214209));
    assert_eq!(e.get_i64("think"), Some(-4));
    assert_eq!(e.get_u64("bdi_setpoint"), Some(10620), "alias of wb_setpoint");
    assert_eq!(e.get_u64("cgroup_ino"), Some(1));

    let e = parse_line(c[2].1).unwrap();
    assert_eq!(e.get_u64("awrite_bw"), Some(31028));
    assert_eq!(e.get_u64("avg_write_bw"), Some(31028));

    let e = parse_line(c[4].1).unwrap();
    assert_eq!((e.comm.as_str(), e.pid), ("kworker/u8:0", 12));
    assert_eq!(e.get("bdi"), Some("254:0"));
    assert_eq!(e.get("sb_dev"), Some("0:0"));
    assert_eq!(e.get("reason"), Some("periodic"));
    let e = parse_line(c[5].1).unwrap();
    assert_eq!(e.get_i64("nr_pages"), Some(9223372036854765991));

    let e = parse_line(c[6].1).unwrap();
    assert_eq!((e.comm.as_str(), e.pid), ("kworker/1:1H", 54));
    let want = [
        ("dev", "254,0"),
        ("rwbs", "W"),
        ("bytes", "61440"),
        ("cmd", ""),
        ("sector", "319307624"),
        ("nr_sector", "120"),
        ("ioprio", "be,0,4"),
        ("comm", "kworker/1:1H"),
    ];
    for (k, v) in want {
        assert_eq!(e.get(k), Some(v), "{k}");
    }

    let e = parse_line(c[7].1).unwrap();
    assert_eq!((e.comm.as_str(), e.pid, e.flags.as_str()), ("<idle>", 0, "..s1."));
    assert_eq!(e.get("bytes"), None);
    assert_eq!(e.get_u64("sector"), Some(169879600));
    assert_eq!(e.get_i64("error"), Some(0));

    let e = parse_line(c[8].1).unwrap();
    assert_eq!((e.get("rwbs"), e.get("ioprio")), (Some("FF"), Some("none,0,0")));

    let e = parse_line(c[9].1).unwrap();
    assert_eq!(e.get("dev"), Some("254:0"));
    assert_eq!(e.get("msg"), Some("scale up"));
    assert_eq!(e.get_i64("step"), Some(-4));
    assert_eq!(e.get("window"), Some("100000us"));
    assert_eq!(e.get_u64("window"), Some(100000));
    assert_eq!(e.get_u64("max"), Some(192));

    // The wbt_timer line of §9.4 (an event we do not emit).
    let e = parse_line("bash-9682    [001] ..s..  3222.969422: wbt_timer: 254:0: status=1, step=-4, inflight=0").unwrap();
    assert_eq!(e.get("dev"), Some("254:0"));
    assert_eq!(e.get_u64("status"), Some(1));
    assert_eq!(e.get_i64("step"), Some(-4));
    assert_eq!(e.get_u64("inflight"), Some(0));
}

#[test]
fn header_is_the_nop_tracer_header() {
    let mut s = String::new();
    wblab_report::write_trace_header(&mut s, 3, 5);
    let want = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 3/3   #P:5
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
";
    assert_eq!(s, want);
    // The column header lines up with a formatted line: "|||||" above the flags, "TIMESTAMP"
    // over the seconds.
    let mut l = String::new();
    format_trace_line(
        &TraceRecord {
            t_ns: 1_000_000,
            who: 1,
            cpu: 0,
            ev: TraceEvent::GlobalDirtyState {
                nr_dirty: 0,
                nr_writeback: 0,
                background_thresh: 0,
                dirty_thresh: 0,
                dirty_limit: 0,
                nr_dirtied: 0,
                nr_written: 0,
            },
        },
        &comms(),
        &mut l,
    );
    let head = want.lines().nth(10).unwrap();
    assert_eq!(head.find("|||||"), l.find("....."));
    assert_eq!(head.find("CPU#"), l.find("[000]"));
}
