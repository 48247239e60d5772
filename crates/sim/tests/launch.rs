//! An application launch whose files are mapped and run (`mmap = true`) rather than read:
//! its pages come in by page faults, each a synchronous read-around of `ra_pages` around the
//! faulting page, with nothing read ahead meanwhile. Every run is checked by the laws.

use wblab_sim::config::{JobConfig, Scenario};
use wblab_sim::metrics::RunResult;
use wblab_sim::units::{GIB, KIB, MIB};
use wblab_testkit::sim::*;

/// One 7200 rpm disk with 128 KiB of readahead (the kernel's default where the device gives
/// no optimal I/O size), idle but for a launch at 1 s of 20 files of 2 MiB and 20 of 64 KiB,
/// read() in 128 KiB calls or mapped, beside a buffered copy from the start if `copy`.
fn launch(mmap: bool, copy: bool) -> RunResult {
    let mut sc = Scenario::one_device("launch", hdd(), 4 * GIB, 2, 60 * SEC);
    sc.devices[0].size = 500 * GIB;
    sc.devices[0].queue.read_ahead_kb = 128;
    if copy {
        sc.add_task("copy", 1, 0, dd(None));
    }
    sc.add_task(
        "app",
        1,
        SEC,
        JobConfig::Launch {
            files_per_dir: 20,
            files: 40,
            file_sizes: vec![2 * MIB, 64 * KIB],
            bs: 128 * KIB,
            mmap,
            writes: 0,
            interval: None,
        },
    );
    run(&sc)
}

fn launch_ms(r: &RunResult) -> u64 {
    let app = r.tasks.iter().find(|t| t.name == "app").expect("app");
    assert_eq!(app.op_latency.summary().count, 1, "the launch finished");
    app.op_latency.summary().max / MS
}

#[test]
fn a_mapped_launch_reads_around_each_fault_and_waits_for_each() {
    let (read, mapped) = (launch(false, false), launch(true, false));
    let data = 20 * (2 * MIB + 64 * KIB);
    // Read-around reads each page once: about the files' bytes, in about a window a request.
    let bytes = mapped.devices[0].bytes_read;
    assert!(bytes >= data && bytes < data + 4 * MIB, "{bytes} bytes read for {data} of files");
    let requests = mapped.devices[0].requests_read;
    assert!(
        requests >= data / (128 * KIB) && requests <= 4 * data / (128 * KIB),
        "{requests} read requests for {data} bytes"
    );
    // Every page of the files counts as read by the application, as read() counts its bytes.
    let app = |r: &RunResult| r.tasks.iter().find(|t| t.name == "app").expect("app").bytes_read;
    assert_eq!(app(&mapped), app(&read), "the mapped launch read its files whole");
    assert_eq!(app(&mapped), data);
    // read() has its next window in flight while it copies; a fault waits for its own, and
    // its scattered windows seek: the mapped launch takes longer.
    let (r, m) = (launch_ms(&read), launch_ms(&mapped));
    assert!(m > r, "mapped {m} ms, read() {r} ms");
}

#[test]
fn a_copy_slows_a_mapped_launch() {
    let idle = launch_ms(&launch(true, false));
    let busy = launch_ms(&launch(true, true));
    assert!(busy > 2 * idle, "mapped launch {idle} ms idle, {busy} ms beside a copy");
}
