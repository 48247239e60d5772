//! CPU-bound neighbours (`spin`) and the CPU the I/O path takes: what a loaded machine does
//! to the work beside it. (Against the kernel: `crates/cli/tests/cli.rs`, validations v29 and
//! v30.)

use wblab_sim::config::{JobConfig, Scenario};
use wblab_sim::units::{GIB, MIB};
use wblab_testkit::sim::{dd, run, ssd, task, SEC};

fn spinners(sc: &mut Scenario, n: u32) {
    let mut t = task("hog", "/mnt/sda/none", 0, JobConfig::Spin);
    t.count = n;
    sc.tasks.push(t);
}

/// Three CPU-bound processes on two CPUs: each gets two thirds of a CPU, none is starved, and
/// the CPUs are never idle.
#[test]
fn spinners_share_the_cpus_fairly() {
    let secs = 4;
    let mut sc = Scenario::one_device("spin", ssd(), 4 * GIB, 2, secs * SEC);
    spinners(&mut sc, 3);
    let r = run(&sc);
    let cpu: Vec<f64> = r.tasks.iter().map(|t| t.cpu_user_ns as f64 / (secs * SEC) as f64).collect();
    assert_eq!(cpu.len(), 3);
    for c in &cpu {
        assert!((c - 2.0 / 3.0).abs() < 0.03, "each spinner's share of a CPU: {cpu:?}");
    }
    assert!(cpu.iter().sum::<f64>() > 1.97, "two CPUs kept busy: {cpu:?}");
}

/// `until_done` waits for the work, not for the background load beside it.
#[test]
fn until_done_ends_when_the_work_beside_the_spinners_is_done() {
    let mut sc = Scenario::one_device("spin-until-done", ssd(), 4 * GIB, 2, 60 * SEC);
    sc.until_done = true;
    sc.tasks.push(task("dd", "/mnt/sda/f", 0, dd(Some(64 * MIB))));
    spinners(&mut sc, 2);
    let r = run(&sc);
    let dd_end = r.tasks.iter().find(|t| t.name == "dd").expect("dd").ended;
    assert!(dd_end < 10 * SEC, "the copy of 64 MiB ends early ({dd_end} ns)");
    assert!(
        r.sim_ns <= dd_end + SEC,
        "the run ended at {} ns, its copy at {dd_end} ns",
        r.sim_ns
    );
}

/// A CPU-bound copy beside two spinners on two CPUs gets a third of the CPUs' time, so it
/// copies at most about two thirds of its rate alone (memory bandwidth is the copy's limit).
#[test]
fn a_cpu_bound_copy_slows_beside_spinners() {
    let rate = |hogs: u32| {
        let mut sc = Scenario::one_device("copy", ssd(), 64 * GIB, 2, 3 * SEC);
        sc.machine.memory_bandwidth = 512 * MIB;
        sc.tasks.push(task("dd", "/mnt/sda/f", 0, dd(None)));
        spinners(&mut sc, hogs);
        let r = run(&sc);
        r.tasks.iter().find(|t| t.name == "dd").expect("dd").bytes_written as f64
    };
    let (alone, loaded) = (rate(0), rate(2));
    assert!(
        loaded / alone < 0.75 && loaded / alone > 0.55,
        "copied {loaded} beside two spinners, {alone} alone"
    );
}

/// `[machine] block_alloc_cost`: ext3 before 2.6.10 places each new block in `write()`, so a
/// copy into a new file pays it once per 4 KiB page; a file system that allocates at
/// writeback (ext4 with delayed allocation) leaves the writer's CPU as it was.
#[test]
fn a_writer_pays_for_the_blocks_it_places_in_write() {
    use wblab_sim::config::{FsKind, MountConfig};
    use wblab_sim::generations::{set_kernel, Version};
    use wblab_sim::units::PAGE_SIZE;
    const COST: u64 = 50_000;
    let size = 64 * MIB;
    let cpu = |fs: FsKind, kernel: &str, release: Version, cost: u64| {
        let mut sc = Scenario::one_device("alloc", ssd(), 4 * GIB, 2, 30 * SEC);
        set_kernel(&mut sc, kernel).expect("a modelled kernel");
        sc.devices[0].fs = Some(MountConfig::defaults(fs, release));
        sc.machine.block_alloc_cost = cost;
        sc.tasks.push(task("dd", "/mnt/sda/new", 0, dd(Some(size))));
        let r = run(&sc);
        let t = r.tasks.iter().find(|t| t.name == "dd").expect("dd");
        assert_eq!(t.bytes_written, size, "{fs:?} on {kernel}: the copy finished");
        t.cpu_sys_ns
    };
    let ext3 = |cost| cpu(FsKind::Ext3, "2.6.6", Version(2, 6, 6), cost);
    let extra = ext3(COST) as i64 - ext3(0) as i64;
    let expected = (size / PAGE_SIZE * COST) as i64;
    assert!(
        (extra - expected).abs() * 100 <= expected,
        "ext3 on 2.6.6: {extra} ns more CPU, {expected} ns for its {} new blocks",
        size / PAGE_SIZE
    );
    let ext4 = |cost| cpu(FsKind::Ext4, "6.x", Version(6, 18, 0), cost);
    assert_eq!(ext4(COST), ext4(0), "ext4 places blocks at writeback, not in write()");
}
