//! A virtual machine's memory as the page cache meets it: where the host takes back what the
//! guest reports free (`[machine] page_first_touch`), a copy that grows the page cache pays a
//! host page fault for each new frame and a `cat` for each frame its readahead filled, while
//! memory freed and taken again within the reporting delay (a memory cgroup recycling its own
//! pages) costs nothing. Every run is checked by the laws.

use wblab_sim::config::{CgroupConfig, CgroupTree, CgroupVersion, FsKind, JobConfig, MountConfig, Scenario};
use wblab_sim::generations::Version;
use wblab_sim::metrics::{RunResult, TaskResult};
use wblab_sim::units::{GIB, KIB, MIB, PAGE_SIZE};
use wblab_testkit::sim::*;

/// 11 µs a page: this lab's Firecracker guest on 2026-12-02.
const TOUCH: u64 = 11_000;
/// Free memory a reporting pass leaves backed, at most (32 blocks of 2 MiB and the low
/// watermark of an 8 GiB machine, with room).
const RESERVE: u64 = 96 * MIB / PAGE_SIZE;

fn of<'a>(r: &'a RunResult, name: &str) -> &'a TaskResult {
    r.tasks.iter().find(|t| t.name.starts_with(name)).expect("task")
}

/// One dd copying `size` to an SSD on an 8 GiB machine whose frames cost `touch` at first touch,
/// in a v1 memory cgroup of `limit` if given.
fn copy(touch: u64, size: u64, limit: Option<u64>) -> RunResult {
    let mut sc = Scenario::one_device("touch", ssd(), 8 * GIB, 2, 20 * SEC);
    sc.machine.page_first_touch = touch;
    let mut t = task("dd", "/mnt/sda/copy", 0, dd_with(MIB, size, false));
    if let Some(limit) = limit {
        sc.cgroups = CgroupTree {
            version: CgroupVersion::V1,
            groups: vec![CgroupConfig {
                path: "/pod".into(),
                memory_max: Some(limit),
                ..Default::default()
            }],
        };
        t.cgroup = Some(0);
    }
    sc.tasks.push(t);
    run(&sc)
}

#[test]
fn a_copy_into_memory_the_host_took_back_runs_at_its_fault_rate() {
    let size = GIB;
    let pages = size / PAGE_SIZE;
    let cold = copy(TOUCH, size, None);
    let free = copy(0, size, None);
    let (c, f) = (of(&cold, "dd"), of(&free, "dd"));
    assert_eq!(c.bytes_written, size, "the copy finished");
    // Every page beyond the reserve pays the fault, on the writer's own CPU.
    let paid = c.cpu_sys_ns.saturating_sub(f.cpu_sys_ns);
    assert!(
        paid >= (pages - RESERVE) * TOUCH && paid <= pages * TOUCH,
        "the copy paid {paid} ns more CPU for {pages} pages at {TOUCH} ns"
    );
    // Its rate is bounded by the faults of the pages past the reserve, far below the SSD's.
    let bound = size as f64 / ((pages - RESERVE) * TOUCH) as f64 * 1e3;
    let mb_s = |t: &TaskResult| t.bytes_written as f64 / (t.ended - t.started) as f64 * 1e3;
    assert!(mb_s(c) <= bound, "{:.0} MB/s over the fault-bound {bound:.0}", mb_s(c));
    assert!(
        mb_s(f) > 2.0 * mb_s(c),
        "{:.0} MB/s without the faults, {:.0} with",
        mb_s(f),
        mb_s(c)
    );
}

#[test]
fn memory_reused_within_the_reporting_delay_costs_nothing() {
    let limit = 256 * MIB;
    let size = GIB;
    let pod = copy(TOUCH, size, Some(limit));
    let base = copy(0, size, Some(limit));
    let (p, b) = (of(&pod, "dd"), of(&base, "dd"));
    assert_eq!(p.bytes_written, size, "the copy finished");
    // The group reclaims its own pages and the writer takes the freed frames again at once:
    // only its first fill of the group (less the reserve) is new memory.
    let paid = p.cpu_sys_ns.saturating_sub(b.cpu_sys_ns);
    let fill = limit / PAGE_SIZE;
    assert!(
        paid >= (fill - RESERVE) * TOUCH && paid <= (fill + fill / 4) * TOUCH,
        "the copy in a {} MiB group paid {paid} ns for first touches",
        limit / MIB
    );
}

#[test]
fn a_read_pays_for_the_frames_its_readahead_filled() {
    let bs = 128 * KIB;
    let p50 = |touch: u64, read: Option<u64>| {
        let mut sc = Scenario::one_device("cat", ssd(), 8 * GIB, 2, 10 * SEC);
        sc.machine.page_first_touch = touch;
        sc.machine.page_first_touch_read = read;
        sc.tasks
            .push(task("cat", "/mnt/sda/file", 0, JobConfig::Cat { bs, file_size: 512 * MIB }));
        let r = run(&sc);
        assert_eq!(of(&r, "cat").bytes_read, 512 * MIB, "the cat finished");
        of(&r, "cat").op_latency.summary().p50
    };
    let (cold, free) = (p50(TOUCH, None), p50(0, None));
    // Each read copies out 32 frames no one touched since the device filled them (its wait
    // for the device, if any, overlaps the touches of the reads before).
    let touch = bs / PAGE_SIZE * TOUCH;
    assert!(
        cold >= touch && cold <= free + touch * 11 / 10,
        "read p50 {cold} ns on fresh frames, {free} ns on backed ones, {touch} ns of touches"
    );
    // A host that faulted the frame in as its I/O thread filled it leaves the reader a
    // cheaper touch than the writer's: `page_first_touch_read` is what the reader pays.
    let (half, none) = (p50(TOUCH, Some(TOUCH / 2)), p50(TOUCH, Some(0)));
    assert!(
        half >= touch / 2 && half <= free + touch * 6 / 10 && half < cold,
        "read p50 {half} ns at half the touch, {cold} ns at the whole, {free} ns backed"
    );
    assert!(
        none <= free * 11 / 10 + 1_000,
        "no read touch: p50 {none} ns against {free} ns backed"
    );
}

/// Pages a device read has just filled are in no CPU cache: a reader's copy of them pays
/// `cold_copy_cost` a page on top of its copy, once for each page.
#[test]
fn a_copy_of_pages_a_device_just_filled_pays_the_cold_copy() {
    const COLD: u64 = 234;
    let (bs, size) = (128 * KIB, 256 * MIB);
    let read = |cold: u64| {
        let mut sc = Scenario::one_device("cold", ssd(), 8 * GIB, 2, 10 * SEC);
        sc.machine.cold_copy_cost = cold;
        sc.tasks
            .push(task("cat", "/mnt/sda/file", 0, JobConfig::Cat { bs, file_size: size }));
        let r = run(&sc);
        let t = of(&r, "cat");
        assert_eq!(t.bytes_read, size, "the cat read the whole file");
        (t.cpu_sys_ns, t.op_latency.summary().p50)
    };
    let ((cold_cpu, cold_p50), (warm_cpu, warm_p50)) = (read(COLD), read(0));
    // Every page of the file came from the device and was copied out once, while fresh.
    assert_eq!(cold_cpu - warm_cpu, size / PAGE_SIZE * COLD, "the reader's extra CPU");
    let per_call = bs / PAGE_SIZE * COLD;
    assert!(
        cold_p50 >= warm_p50 + per_call * 9 / 10 && cold_p50 <= warm_p50 + per_call * 11 / 10,
        "read p50 {cold_p50} ns of fresh pages, {warm_p50} ns without the cold copy"
    );
}

#[test]
fn a_writer_pays_the_write_touch_whatever_the_read_touch() {
    let cpu = |read: Option<u64>| {
        let mut sc = Scenario::one_device("touch", ssd(), 8 * GIB, 2, 20 * SEC);
        sc.machine.page_first_touch = TOUCH;
        sc.machine.page_first_touch_read = read;
        sc.tasks.push(task("dd", "/mnt/sda/copy", 0, dd_with(MIB, GIB, false)));
        of(&run(&sc), "dd").cpu_sys_ns
    };
    let (same, cheap) = (cpu(None), cpu(Some(0)));
    assert_eq!(same, cheap, "a buffered writer's first touches do not depend on the read's");
    assert!(same > GIB / PAGE_SIZE / 2 * TOUCH, "and it pays them: {same} ns");
}

/// A `cat` of 512 MiB with 2.5 MiB read-ahead windows (a loop device's) on `fs`, on a machine
/// whose reporting leaves 1 GiB backed and reports blocks of `order`: the CPU its first
/// touches cost over the same run on backed memory, and its read p50 with and without them.
fn cat_touches(fs: FsKind, order: u32) -> (u64, u64, u64) {
    let file = 512 * MIB;
    let one = |touch: u64| {
        let mut sc = Scenario::one_device("cat", ssd(), 8 * GIB, 2, 10 * SEC);
        sc.machine.page_first_touch = touch;
        sc.machine.page_reporting_reserve = Some(GIB);
        sc.machine.page_reporting_order = order;
        sc.devices[0].queue.read_ahead_kb = 2560;
        sc.devices[0].fs = Some(MountConfig::defaults(fs, Version(6, 18, 0)));
        sc.tasks.push(task(
            "cat",
            "/mnt/sda/file",
            0,
            JobConfig::Cat {
                bs: 128 * KIB,
                file_size: file,
            },
        ));
        let r = run(&sc);
        assert_eq!(of(&r, "cat").bytes_read, file, "the cat finished");
        (of(&r, "cat").cpu_sys_ns, of(&r, "cat").op_latency.summary().p50)
    };
    let ((cold, p50), (free, p50_free)) = (one(TOUCH), one(0));
    (cold.saturating_sub(free), p50, p50_free)
}

#[test]
fn a_readers_2_mib_folios_come_from_reported_memory_even_beside_a_reserve() {
    let pages = 512 * MIB / PAGE_SIZE;
    // xfs's readahead fills 2 MiB folios where a window holds an aligned one: those are cut
    // from blocks the reporting gave back; the rest of the window fits in the reserve.
    let (paid, p50, p50_free) = cat_touches(FsKind::Xfs, 9);
    assert!(
        paid >= pages * TOUCH / 4 && paid <= pages * TOUCH / 2,
        "a cat of {pages} pages paid {paid} ns of first touches beside a reserve twice its size"
    );
    // Most reads copy frames the reserve held: the median read does not pay.
    assert!(p50 <= p50_free + TOUCH, "p50 {p50} ns, {p50_free} on backed memory");
    // ext3 has no large folios, and blocks of order 10 are larger than any folio: the reserve
    // holds the whole file.
    assert_eq!(cat_touches(FsKind::Ext3, 9).0, 0, "ext3");
    assert_eq!(cat_touches(FsKind::Xfs, 10).0, 0, "reporting order 10");
}

/// The free lists of this lab's guest at rest on 2026-12-05 (`/proc/buddyinfo`, order 0 first):
/// 1.35 GiB free in blocks of orders 4 to 7, 1.1 GiB in order 8, the rest reported.
const LAB_BUDDYINFO: [u64; 11] = [17507, 9681, 5549, 3005, 1116, 696, 1531, 1625, 1113, 720, 1762];

/// A 2 GiB copy in writes of `bs` to xfs (large folios) on a machine that starts with
/// `LAB_BUDDYINFO`: the CPU it paid for first touches over the same copy on backed memory.
fn touches_by_write_size(bs: u64) -> u64 {
    let size = 2 * GIB;
    let one = |touch: u64| {
        let mut sc = Scenario::one_device("lists", ssd(), 16 * GIB, 2, 30 * SEC);
        sc.machine.page_first_touch = touch;
        sc.machine.buddyinfo = Some(LAB_BUDDYINFO.to_vec());
        sc.devices[0].fs = Some(MountConfig::defaults(FsKind::Xfs, Version(6, 18, 0)));
        sc.tasks.push(task("dd", "/mnt/sda/copy", 0, dd_with(bs, size, false)));
        let r = run(&sc);
        assert_eq!(of(&r, "dd").bytes_written, size, "the copy finished");
        of(&r, "dd").cpu_sys_ns
    };
    one(TOUCH).saturating_sub(one(0))
}

#[test]
fn a_folio_finds_backed_memory_only_in_free_blocks_as_large_as_itself() {
    let pages = 2 * GIB / PAGE_SIZE;
    // 1 MiB writes go into 1 MiB folios, which only the order-8 blocks hold (1113 MiB): the
    // rest of the copy pays (the kernel: warm for 1088 MiB, then 9 µs a page).
    let order8 = LAB_BUDDYINFO[8] * 256;
    let mib = touches_by_write_size(MIB) / TOUCH;
    assert!(
        mib >= (pages - order8) * 95 / 100 && mib <= (pages - order8) * 105 / 100,
        "1 MiB writes touched {mib} fresh frames, {} expected",
        pages - order8
    );
    // 64 KiB folios fit the blocks of orders 4 to 8, 2.4 GiB: the whole copy finds backed
    // memory (the kernel: all of its 2 GiB at 0.9 µs a page).
    let small = touches_by_write_size(64 * KIB) / TOUCH;
    assert!(small < pages / 100, "64 KiB writes touched {small} fresh frames of {pages}");
}
