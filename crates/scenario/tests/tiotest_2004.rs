//! wli's 2004 tiotest (scenarios/2004-tiotest-512.toml) in a short form: the same machine,
//! 512 threads and page wait table, with 2 MiB files in 224 MiB of RAM (the report's 16 GiB in
//! 3.5 GB scaled by 1/16), 200 random ops per thread, under the three wake policies of 2004.

use std::path::Path;
use wblab_sim::config::{JobConfig, PageWake, Scenario};
use wblab_sim::drivers::characterize::characterize;
use wblab_sim::metrics::RunResult;
use wblab_sim::units::MIB;

fn short(mut sc: Scenario, wake: PageWake) -> Scenario {
    sc.policy.page_wake = wake;
    sc.machine.memory = 224 * MIB;
    sc.machine.unreclaimable = 32 * MIB;
    sc.duration = 600_000_000_000;
    sc.trace.writeback = false;
    for t in &mut sc.tasks {
        if let JobConfig::Tiotest { file_size, random_ops, .. } = &mut t.job {
            *file_size = 2 * MIB;
            *random_ops = 200;
        }
    }
    sc
}

fn run(wake: PageWake) -> RunResult {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/2004-tiotest-512.toml");
    let sc = wblab_scenario::load_all(&path).unwrap_or_else(|e| panic!("{e}")).remove(0);
    assert_eq!(sc.policy.page_wake, PageWake::WakeAll, "2.6.6 wakes the whole bucket");
    wblab_sim::run(&short(sc, wake), &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"))
}

#[test]
fn wli_2004_filtered_wakeups() {
    let runs: Vec<(PageWake, RunResult)> = [PageWake::WakeAll, PageWake::Filtered, PageWake::FilteredWakeOne]
        .into_iter()
        .map(|w| (w, run(w)))
        .collect();
    for (w, r) in &runs {
        assert_eq!(r.tiotest.len(), 4, "{w:?}: all four phases ran");
        assert!(r.tiotest.iter().all(|p| p.complete), "{w:?}: phases cut short");
    }
    for (w, r) in &runs {
        for p in &r.tiotest {
            eprintln!(
                "{:<18} {:<13} {:8.3} MB/s  usr {:5.1} %  sys {:6.1} %  {:8.4} MB/cpusec  wait_on_page_bit {:7}  __lock_page {:5}",
                w.name(),
                p.name,
                p.rate_mb_s(),
                p.usr_pct(),
                p.sys_pct(),
                p.mb_per_cpu_sec(),
                p.wait_on_page_bit,
                p.lock_page
            );
        }
    }
    // Each thread ends a write phase with fsync(): the phase cannot outrun the array, and its
    // threads sleep in wait_on_page_bit on their pages under writeback.
    let array = characterize(&runs[0].1.scenario.devices[0]).seq_write_mb_s;
    for (w, r) in &runs {
        for p in &r.tiotest[..2] {
            assert!(p.wait_on_page_bit > 0, "{w:?} {}: no fdatawait", p.name);
            assert!(
                p.rate_mb_s() <= 1.01 * array,
                "{w:?} {}: {:.2} MB/s, the array writes {array:.2}",
                p.name,
                p.rate_mb_s()
            );
        }
    }
    let base = &runs[0].1;
    // Rates agree within 5 % across the policies: the disks set them.
    for (w, r) in &runs[1..] {
        for (a, b) in base.tiotest.iter().zip(&r.tiotest) {
            let d = (a.rate_mb_s() - b.rate_mb_s()).abs() / a.rate_mb_s();
            assert!(d < 0.05, "{w:?} {}: {:.3} vs {:.3} MB/s", a.name, b.rate_mb_s(), a.rate_mb_s());
        }
    }
    // Random reads: filtered+wake-one cuts system CPU by at least 30 %.
    let sys = |r: &RunResult| r.tiotest[3].sys_pct();
    let (before, after) = (sys(base), sys(&runs[2].1));
    assert!(after <= 0.7 * before, "random read sys {before:.1} % -> {after:.1} %");
    // wait_on_page_bit schedules fall by a large factor; no spurious wakeups once filtered.
    let wopb = |r: &RunResult| r.tasks.iter().map(|t| t.sched.wait_on_page_bit).sum::<u64>();
    let spurious = |r: &RunResult| r.tasks.iter().map(|t| t.sched.spurious_wakeups).sum::<u64>();
    assert!(
        wopb(base) as f64 >= 2.0 * wopb(&runs[2].1) as f64,
        "{} -> {}",
        wopb(base),
        wopb(&runs[2].1)
    );
    assert!(spurious(base) > 0);
    assert_eq!(spurious(&runs[2].1), 0);
    // Filtered wakeups alone wake only the page's own waiters, and each reader waits alone on
    // its file's pages: hardly any is woken for nothing, not even by the first half of an
    // 8 KiB page whose two 4 KiB blocks ext3 put apart (its unlock_page comes with the last).
    let (early, waits) = (spurious(&runs[1].1), wopb(&runs[1].1));
    assert!(early * 1000 < waits, "filtered: {early} wakeups for nothing in {waits} waits");
    // Wake-one spares only a page's second lock waiter or a waiter whose bit is still set;
    // every thread waits alone on its own file's pages, so the two filtered kernels run alike
    // (scenarios/README.md, the 2004 section).
    let figures = |r: &RunResult| {
        let phases: Vec<(u64, u64, u64)> = r
            .tiotest
            .iter()
            .map(|p| (p.bytes, p.wait_on_page_bit, p.sys_pct().to_bits()))
            .collect();
        (wopb(r), spurious(r), phases)
    };
    assert_eq!(figures(&runs[1].1), figures(&runs[2].1), "filtered and filtered + wake-one");
}

/// 2.6.6's windowed readahead skips its I/O while a member of the stripe is read-congested,
/// and the 512 readers then read page by page, each read a wait in `wait_on_page_bit`
/// (`readpage`, `wait_on_page_locked`). One reader alone keeps its windows; on-demand
/// readahead (2.6.23) has no congestion test, so its readers only ever wait for pages their
/// windows are reading (`__lock_page`).
#[test]
fn windowed_readahead_reads_page_by_page_on_a_congested_stripe() {
    use wblab_sim::config::Readahead;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/2004-tiotest-512.toml");
    let base = wblab_scenario::load_all(&path).unwrap_or_else(|e| panic!("{e}")).remove(1);
    assert_eq!(base.policy.readahead, Readahead::Windowed, "2.6.7 has the windows");
    let run = |readahead: Readahead, threads: u32| {
        let mut sc = short(base.clone(), PageWake::FilteredWakeOne);
        sc.policy.readahead = readahead;
        sc.tasks[0].count = threads;
        let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
        let read = r.tiotest.iter().find(|p| p.name == "Read").expect("a Read phase").clone();
        // Single-page reads per 8 KiB page of the files.
        let pages = read.bytes as f64 / 8192.0;
        (
            read.wait_on_page_bit as f64 / pages,
            read.lock_page as f64 / pages,
            read.rate_mb_s(),
        )
    };
    let crowd = run(Readahead::Windowed, 512);
    let alone = run(Readahead::Windowed, 1);
    let ondemand = run(Readahead::OnDemand, 512);
    eprintln!("single-page reads, lock waits per page, MB/s: windowed ×512 {crowd:?}  windowed ×1 {alone:?}  on-demand ×512 {ondemand:?}");
    assert!(crowd.0 >= 0.1, "512 readers: {:.3} of the pages read alone", crowd.0);
    assert!(alone.0 < 0.01, "one reader: {:.3} of the pages read alone", alone.0);
    assert!(ondemand.0 < 0.01, "on-demand: {:.3} of the pages read alone", ondemand.0);
    assert!(ondemand.1 > 0.0, "on-demand readers wait for their windows in __lock_page");
}

/// 2.6.6's ext3 allocates each block as write() reaches it, from the bitmap next to the file's
/// last block: 512 writers at once interleave their files in short runs, each run a request
/// of its own when the files are read back, so the stripe stays read-congested and the readers
/// read most pages alone — what the report's 2.4 M `wait_on_page_bit` schedules for 2.6 M
/// pages and random reads say. The same files laid out as reservation windows (2.6.10) or
/// delayed allocation lay them out, in long runs, leave readahead working for most pages.
#[test]
fn ext3_without_reservation_windows_interleaves_concurrent_writers() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/2004-tiotest-512.toml");
    let base = wblab_scenario::load_all(&path).unwrap_or_else(|e| panic!("{e}")).remove(1);
    let fs = base.devices[0].fs.as_ref().expect("the scenario mounts ext3");
    assert!(fs.bitmap_alloc, "2.6.7's ext3 has no reservation windows");
    let run = |bitmap: bool| {
        let mut sc = short(base.clone(), PageWake::FilteredWakeOne);
        sc.devices[0].fs.as_mut().expect("ext3").bitmap_alloc = bitmap;
        let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
        let read = r.tiotest.iter().find(|p| p.name == "Read").expect("a Read phase");
        // Single-page reads per 8 KiB page of the files.
        read.wait_on_page_bit as f64 / (read.bytes as f64 / 8192.0)
    };
    let interleaved = run(true);
    let runs = run(false);
    eprintln!("pages read alone: bitmap allocation {interleaved:.3}, long runs {runs:.3}");
    assert!(interleaved >= 0.5, "most pages read alone from interleaved files: {interleaved:.3}");
    assert!(interleaved >= 2.0 * runs, "{interleaved:.3} vs {runs:.3} from files in long runs");
}

/// `block_prepare_write` reads only the blocks a write covers in part. A random 4 KiB write
/// into an uncached 8 KiB page covers its block whole: the page's other half is left not
/// uptodate, not read, and no writer waits on a buffer (the report's whole run has fewer
/// `__wait_on_buffer` schedules than random writes). A 2 KiB write leaves half of its block
/// to read first, and then most random writes wait for that read.
#[test]
fn random_writes_read_only_the_blocks_they_cover_in_part() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/2004-tiotest-512.toml");
    let base = wblab_scenario::load_all(&path).unwrap_or_else(|e| panic!("{e}")).remove(1);
    assert_eq!(base.machine.page_size, 8192, "sparc64's pages hold two blocks");
    let run = |bs: u64| {
        let mut sc = short(base.clone(), PageWake::FilteredWakeOne);
        let mut writes = 0;
        for t in &mut sc.tasks {
            if let JobConfig::Tiotest { bs: b, random_ops, .. } = &mut t.job {
                *b = bs;
                writes += *random_ops * u64::from(t.count);
            }
        }
        let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
        let phase = r.tiotest.iter().find(|p| p.name == "Random Write").expect("a Random Write phase");
        assert!(phase.complete, "{bs} B: the phase ran to its end");
        (phase.wait_on_buffer, writes)
    };
    let (whole, _) = run(4096);
    let (part, writes) = run(2048);
    eprintln!("__wait_on_buffer in Random Write: 4 KiB writes {whole}, 2 KiB writes {part} of {writes} writes");
    assert_eq!(whole, 0, "4 KiB writes waited on {whole} buffer reads");
    assert!(part * 2 >= writes, "2 KiB writes: {part} buffer waits for {writes} writes");
}
