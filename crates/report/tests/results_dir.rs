//! A real simulation written to a results directory: every file is there, parses, and is
//! byte-identical when written again (except summary.json's wall_seconds line).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use wblab_report::load::trace_parse::parse_line;
use wblab_report::{summary_json, terminal_summary, write_results_dir};
use wblab_sim::config::{DeviceModelConfig, HddParams, Scenario};
use wblab_sim::metrics::trace::{TraceEvent, TraceRecord};
use wblab_sim::metrics::RunResult;
use wblab_sim::units::GIB;

use wblab_testkit::sim::SEC;
const SECS: u64 = 5;

/// Two dd writers on the HDD model, 5 simulated seconds, block tracing on.
fn run() -> &'static RunResult {
    static R: OnceLock<RunResult> = OnceLock::new();
    R.get_or_init(|| {
        let mut sc = Scenario::one_device("report-test", DeviceModelConfig::Hdd(HddParams::default()), 2 * GIB, 2, SECS * SEC);
        sc.add_task("dd", 2, 0, wblab_testkit::sim::dd(None));
        sc.trace.block = true;
        wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
    })
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let p = std::env::temp_dir().join(format!("wblab-report-{tag}-{}-{nanos}", std::process::id()));
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const FILES: [&str; 7] = [
    "summary.json",
    "trace.txt",
    "timeseries.csv",
    "throttle.csv",
    "histograms.json",
    "pressure.csv",
    "pressure.txt",
];

fn read(dir: &Path, f: &str) -> String {
    std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"))
}

#[test]
fn results_directory_is_complete() {
    let r = run();
    let tmp = TempDir::new("complete");
    // A nested path: the directory and its parents are created.
    let dir = tmp.0.join("nested/out");
    write_results_dir(&dir, r, 1.25).unwrap();
    for f in FILES {
        assert!(dir.join(f).is_file(), "{f} missing");
    }

    // summary.json: valid, keys in the documented order, counts match.
    let text = read(&dir, "summary.json");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "wblab_version",
            "sim_seconds",
            "wall_seconds",
            "events",
            "scenario",
            "tasks",
            "devices",
            "pressure"
        ]
    );
    assert_eq!(v, summary_json(r, 1.25));
    // pressure.txt is the kernel's files at the end; pressure.csv's last row of a group agrees.
    let txt = read(&dir, "pressure.txt");
    assert!(txt.starts_with("# /proc/pressure/io\nsome avg10="), "{txt}");
    let io_some_total: u64 = txt.lines().nth(1).unwrap().rsplit_once("total=").unwrap().1.parse().unwrap();
    assert_eq!(v["pressure"][0]["io"]["some"]["total_us"], io_some_total);
    assert_eq!(v["wall_seconds"], 1.25);
    assert_eq!(v["sim_seconds"], SECS as f64);
    assert_eq!(v["scenario"]["name"], "report-test");
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), r.tasks.len());
    assert_eq!(tasks.len(), 2);
    let task_keys = [
        "name",
        "instance",
        "job",
        "pid",
        "device",
        "bytes_written",
        "bytes_read",
        "throughput_mb_s",
        "steady_mb_s",
        "pauses",
        "op_latency_ms",
        "cpu_sys_ms",
        "cpu_user_ms",
        "runqueue_wait_ms",
        "reclaim_waits",
        "reclaim_wait_ms",
        "schedules",
    ];
    for t in tasks {
        let k: Vec<&str> = t.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(k, task_keys);
        let p: Vec<&str> = t["pauses"].as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(p, ["count", "total_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms", "paused_max_ms"]);
        let o: Vec<&str> = t["op_latency_ms"].as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(o, ["count", "p50", "p90", "p99", "max", "mean"]);
        let s: Vec<&str> = t["schedules"].as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            s,
            [
                "wait_on_page_bit",
                "__lock_page",
                "__wait_on_buffer",
                "do_get_write_access",
                "wakeups",
                "spurious_wakeups"
            ]
        );
    }
    assert!(tasks[0]["bytes_written"].as_u64().unwrap() > 0, "dd wrote nothing");
    let devices = v["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 1);
    for k in [
        "name",
        "model",
        "bytes_written",
        "bytes_read",
        "util",
        "requests_written",
        "requests_read",
        "request_latency_ms",
    ] {
        assert!(devices[0].get(k).is_some(), "device key {k}");
    }
    assert_eq!(devices[0]["model"], "hdd");
    // wall_seconds sits on a line of its own.
    assert!(text.lines().any(|l| l.trim() == "\"wall_seconds\": 1.25,"), "{text}");

    // timeseries.csv: header plus one row per simulated second.
    let ts = read(&dir, "timeseries.csv");
    let mut lines = ts.lines();
    let header = lines.next().unwrap();
    // Every column says its unit.
    assert!(header.starts_with("t_s,nr_dirty_pages,nr_writeback_pages,nr_free_pages,nr_file_pages,"));
    assert!(
        header.ends_with(",bi_kib,bo_kib,r_tasks,b_tasks,sda_write_mb_s,sda_read_mb_s,sda_util_pct"),
        "{header}"
    );
    let ncol = header.split(',').count();
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), r.vmstat.len());
    assert_eq!(rows.len() as u64, SECS);
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), ncol);
        assert_eq!(cells[0].parse::<f64>().unwrap(), (i + 1) as f64);
        for c in cells {
            c.parse::<f64>().unwrap_or_else(|_| panic!("not a number: {c}"));
        }
    }

    // throttle.csv: one row per sample, device by name.
    let th = read(&dir, "throttle.csv");
    let mut lines = th.lines();
    assert_eq!(
        lines.next().unwrap(),
        "t_s,device,dirty_pages,wb_dirty_pages,freerun_pages,setpoint_pages,limit_pages,thresh_pages,bg_thresh_pages,\
         wb_thresh_pages,write_bw_kib_s,avg_write_bw_kib_s,dirty_ratelimit_kib_s,balanced_dirty_ratelimit_kib_s,\
         dirty_rate_kib_s,pos_ratio"
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), r.throttle.len());
    assert!(rows
        .iter()
        .all(|l| l.split(',').nth(1) == Some("sda") && l.split(',').count() == 16));
    // Rates in KiB/s, as the bdi_dirty_ratelimit trace line prints them; pos_ratio 1 at the
    // setpoint.
    for (row, s) in rows.iter().zip(&r.throttle) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells[10].parse::<u64>().unwrap(), s.write_bw * 4, "{row}");
        assert_eq!(cells[12].parse::<u64>().unwrap(), s.dirty_ratelimit * 4, "{row}");
        let pos: f64 = cells[15].parse().unwrap();
        assert!((pos - s.pos_ratio as f64 / 1024.0).abs() < 1e-3, "{row}");
    }

    // trace.txt: kernel header, then one parsable line per record.
    let tr = read(&dir, "trace.txt");
    let mut lines = tr.lines();
    assert_eq!(lines.next(), Some("# tracer: nop"));
    assert_eq!(lines.next(), Some("#"));
    assert_eq!(
        lines.next().unwrap(),
        format!("# entries-in-buffer/entries-written: {0}/{0}   #P:2", r.trace.len())
    );
    let body: Vec<&str> = tr.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(body.len(), r.trace.len());
    assert_eq!(wblab_report::load::trace_parse::parse_lines(&tr).count(), r.trace.len());
    assert!(!body.is_empty(), "the run produced no trace records");
    let mut kinds = std::collections::BTreeSet::new();
    for (l, rec) in body.iter().zip(&r.trace) {
        let e = parse_line(l).unwrap_or_else(|| panic!("unparsable: {l}"));
        assert_eq!(e.ts_ns, (rec.t_ns + 500) / 1000 * 1000);
        assert_eq!(e.cpu, rec.cpu as u32);
        let (comm, pid) = &r.comms[rec.who as usize];
        assert_eq!((&e.comm, e.pid), (comm, *pid));
        check_fields(&e, rec, r);
        kinds.insert(e.event);
    }
    assert!(kinds.contains("block_rq_issue"), "{kinds:?}");
}

/// The parsed fields of a line carry the record's values.
fn check_fields(e: &wblab_report::load::trace_parse::ParsedEvent, rec: &TraceRecord, r: &RunResult) {
    let u = |k: &str| e.get_u64(k).unwrap_or_else(|| panic!("{} lacks {k}", e.event));
    let i = |k: &str| e.get_i64(k).unwrap_or_else(|| panic!("{} lacks {k}", e.event));
    match &rec.ev {
        TraceEvent::BalanceDirtyPages {
            bdi,
            limit,
            dirty,
            wb_dirty,
            wb_setpoint,
            task_ratelimit,
            pause,
            think,
            ..
        } => {
            assert_eq!(e.event, "balance_dirty_pages");
            assert_eq!(e.get("bdi").unwrap(), format!("{}:{}", bdi.major, bdi.minor));
            assert_eq!((u("limit"), u("dirty"), u("wb_dirty")), (*limit, *dirty, *wb_dirty));
            assert_eq!((u("bdi_setpoint"), u("task_ratelimit")), (*wb_setpoint, *task_ratelimit));
            assert_eq!((i("pause"), i("think")), (*pause, *think));
        }
        TraceEvent::BdiDirtyRatelimit {
            write_bw, dirty_ratelimit, ..
        } => {
            assert_eq!(e.event, "bdi_dirty_ratelimit");
            assert_eq!((u("write_bw"), u("dirty_ratelimit")), (*write_bw, *dirty_ratelimit));
        }
        TraceEvent::GlobalDirtyState { nr_dirty, nr_written, .. } => {
            assert_eq!(e.event, "global_dirty_state");
            assert_eq!((u("dirty"), u("written")), (*nr_dirty, *nr_written));
        }
        TraceEvent::WritebackWritten { nr_pages, reason, .. } => {
            assert_eq!(e.event, "writeback_written");
            assert_eq!((i("nr_pages"), e.get("reason").unwrap()), (*nr_pages, reason.as_str()));
        }
        TraceEvent::BlockRqIssue {
            sector,
            nr_sector,
            bytes,
            comm,
            ..
        } => {
            assert_eq!(e.event, "block_rq_issue");
            assert_eq!(
                (u("sector"), u("nr_sector"), u("bytes")),
                (*sector, *nr_sector as u64, *bytes as u64)
            );
            assert_eq!(e.get("comm").unwrap(), r.comms[*comm as usize].0);
        }
        TraceEvent::BlockRqInsert {
            sector,
            nr_sector,
            bytes,
            comm,
            ..
        } => {
            assert_eq!(e.event, "block_rq_insert");
            assert_eq!(
                (u("sector"), u("nr_sector"), u("bytes")),
                (*sector, *nr_sector as u64, *bytes as u64)
            );
            assert_eq!(e.get("comm").unwrap(), r.comms[*comm as usize].0);
        }
        TraceEvent::BlockBio {
            what,
            sector,
            nr_sector,
            comm,
            ..
        } => {
            assert_eq!(e.event, what.name());
            assert_eq!((u("sector"), u("nr_sector")), (*sector, *nr_sector as u64));
            assert_eq!(e.get("comm").unwrap(), r.comms[*comm as usize].0);
        }
        TraceEvent::BlockSplit {
            sector, new_sector, comm, ..
        } => {
            assert_eq!(e.event, "block_split");
            assert_eq!((u("sector"), u("new_sector")), (*sector, *new_sector));
            assert_eq!(e.get("comm").unwrap(), r.comms[*comm as usize].0);
        }
        TraceEvent::BlockRqComplete { sector, error, .. } => {
            assert_eq!(e.event, "block_rq_complete");
            assert_eq!((u("sector"), i("error")), (*sector, *error as i64));
        }
        TraceEvent::WbtStep { msg, step, window_us, .. } => {
            assert_eq!(e.event, "wbt_step");
            assert_eq!((e.get("msg").unwrap(), i("step"), u("window")), (*msg, *step as i64, *window_us));
        }
        TraceEvent::Jbd2Commit { dev, tid, sync, .. } => {
            assert!(e.event.starts_with("jbd2_"), "{}", e.event);
            assert_eq!(e.get("dev").unwrap(), format!("{},{}", dev.major, dev.minor));
            assert_eq!((u("transaction"), u("sync")), (*tid as u64, *sync as u64));
        }
        TraceEvent::Jbd2EndCommit { tid, head, .. } => {
            assert_eq!(e.event, "jbd2_end_commit");
            assert_eq!((u("transaction"), u("head")), (*tid as u64, *head as u64));
        }
        TraceEvent::Jbd2RunStats {
            tid,
            logging,
            blocks_logged,
            ..
        } => {
            assert_eq!(e.event, "jbd2_run_stats");
            assert_eq!(
                (u("tid"), u("logging"), u("blocks_logged")),
                (*tid as u64, *logging as u64, *blocks_logged as u64)
            );
        }
        TraceEvent::KyberLatency { samples, .. } => {
            assert_eq!(e.event, "kyber_latency");
            assert_eq!(u("samples"), *samples as u64);
        }
        TraceEvent::KyberAdjust { .. } => assert_eq!(e.event, "kyber_adjust"),
        TraceEvent::KyberThrottled { .. } => assert_eq!(e.event, "kyber_throttled"),
    }
}

#[test]
fn identical_results_give_identical_files() {
    let r = run();
    let (a, b) = (TempDir::new("a"), TempDir::new("b"));
    write_results_dir(&a.0, r, 0.5).unwrap();
    write_results_dir(&b.0, r, 123.456).unwrap();
    for f in FILES {
        let (x, y) = (read(&a.0, f), read(&b.0, f));
        if f == "summary.json" {
            let (lx, ly): (Vec<&str>, Vec<&str>) = (x.lines().collect(), y.lines().collect());
            assert_eq!(lx.len(), ly.len());
            let differ: Vec<_> = lx.iter().zip(&ly).filter(|(p, q)| p != q).collect();
            assert_eq!(differ.len(), 1, "{differ:?}");
            assert!(differ[0].0.contains("\"wall_seconds\""));
        } else {
            assert!(x == y, "{f} differs");
        }
    }
}

#[test]
fn terminal_summary_is_compact() {
    let r = run();
    let s = terminal_summary(r, 0.8);
    println!("{s}");
    assert!(s.starts_with("report-test  kernel 6.x  simulated 5.0 s  wall 0.80 s"), "{s}");
    assert!(s.contains("dd#0") && s.contains("dd#1"), "{s}");
    assert!(s.contains("sda"));
    assert!(s.contains("dirty thresh"));
    for l in s.lines() {
        assert!(l.chars().count() <= 100, "line too wide ({}): {l}", l.chars().count());
        assert_eq!(l, l.trim_end());
    }
}

#[test]
fn many_instances_fold_into_one_row() {
    let mut sc = Scenario::one_device("many", DeviceModelConfig::Hdd(HddParams::default()), 2 * GIB, 2, 2 * SEC);
    sc.add_task("dd", 20, 0, wblab_testkit::sim::dd(None));
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
    let s = terminal_summary(&r, 0.1);
    println!("{s}");
    assert!(s.contains("dd ×20"), "{s}");
    assert!(!s.contains("dd#0"), "{s}");
    for l in s.lines() {
        assert!(l.chars().count() <= 100, "line too wide: {l}");
    }
}

/// A run whose trace outgrew the in-memory cap says so, in summary.json and in the table.
#[test]
fn a_truncated_trace_is_reported() {
    let mut r = run().clone();
    assert_eq!(r.trace_dropped, 0);
    assert!(
        summary_json(&r, 0.0).get("trace_dropped").is_none(),
        "absent when nothing was dropped"
    );
    r.trace_dropped = 1234;
    assert_eq!(summary_json(&r, 0.0)["trace_dropped"], 1234);
    let table = terminal_summary(&r, 0.0);
    assert!(table.contains("1234 later ones were counted, not kept"), "{table}");
}

/// trace.txt streamed while the simulation runs is the file written from a finished run, and
/// what its writer digests for the report is what reading that file back gives.
#[test]
fn a_streamed_trace_is_the_written_one() {
    use wblab_report::load::rundir::read_trace;
    use wblab_report::results::trace_stream::TraceStream;
    let r = run();
    let sc = &r.scenario;
    let dir = TempDir::new("stream");
    let mut stream = None;
    let streamed = wblab_sim::run_streaming(sc, &mut wblab_sim::machine::NoProgress, Default::default(), |comms| {
        let (s, sink) = TraceStream::start(&dir.0, comms, sc.machine.cpus, SECS as f64);
        stream = Some(s);
        sink
    })
    .unwrap_or_else(|v| panic!("{v}"));
    assert!(streamed.trace.is_empty(), "a streamed run keeps no records");
    assert_eq!(streamed.trace_streamed as usize, r.trace.len());
    let done = stream.unwrap().finish().expect("trace written");
    assert_eq!(done.records as usize, r.trace.len());
    let whole = TempDir::new("whole");
    write_results_dir(&whole.0, r, 0.0).unwrap();
    let text = read(&whole.0, "trace.txt");
    assert!(read(&dir.0, "trace.txt") == text, "streamed trace.txt differs");
    assert_eq!(done.bytes, text.len() as u64);
    assert!(!dir.0.join(".trace.txt.part").exists());
    let back = read_trace(text.as_bytes(), SECS as f64).unwrap();
    assert!(back.has_block && !back.bdp.is_empty() && !back.gds.is_empty());
    assert_eq!(format!("{back:?}"), format!("{:?}", done.digest));
}
