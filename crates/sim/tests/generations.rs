//! Behaviour of each generation's policies on the simulated machine: what a kernel developer
//! of the time would have checked in vmstat, the traces and the pause times.

use wblab_sim::config::{DeviceModelConfig, FsKind, HddParams, JobConfig, MountConfig, Scenario};
use wblab_sim::generations::{set_kernel, Version};
use wblab_sim::machine::Machine;
use wblab_sim::metrics::trace::TraceEvent;
use wblab_sim::units::{GIB, MIB};
use wblab_testkit::sim::{dd, max_pause, run, MS, SEC};

fn hdd() -> DeviceModelConfig {
    DeviceModelConfig::Hdd(HddParams {
        transfer_outer: 72 * MIB,
        transfer_inner: 40 * MIB,
        ..Default::default()
    })
}

fn scenario(kernel: &str, memory: u64, secs: u64) -> Scenario {
    let mut sc = Scenario::one_device("gen", hdd(), memory, 2, secs * SEC);
    set_kernel(&mut sc, kernel).expect("a modelled kernel");
    sc
}

#[test]
fn global_2_6_20_dirtiers_write_back_themselves_at_40_percent_of_memory() {
    let mut sc = scenario("2.6.20", 2 * GIB, 30);
    sc.add_task("dd", 2, 0, dd(None));
    sc.trace.block = true;
    let r = run(&sc);
    // Dirty + writeback settles just under 40 % of all page-cache-able memory.
    let last = r.vmstat.last().expect("samples");
    let dirty = last.nr_dirty + last.nr_writeback;
    let total = 2 * GIB / 4096;
    assert!(
        last.dirty_thresh > total * 395 / 1000 && last.dirty_thresh <= total * 40 / 100,
        "40 % of vm_total_pages: {}",
        last.dirty_thresh
    );
    assert!(
        dirty <= last.dirty_thresh + 2_048 && dirty * 10 >= last.dirty_thresh * 9,
        "{dirty} vs {}",
        last.dirty_thresh
    );
    // Most writeback requests come from the dirtiers themselves, not from pdflush.
    let ntasks = r.tasks.len() as u32;
    let (mut by_task, mut other) = (0, 0);
    for rec in &r.trace {
        if let TraceEvent::BlockRqIssue { rwbs, comm, .. } = rec.ev {
            if rwbs.write {
                if (1..=ntasks).contains(&comm) {
                    by_task += 1;
                } else {
                    other += 1;
                }
            }
        }
    }
    assert!(by_task > 4 * other, "writes by dirtiers {by_task}, by pdflush {other}");
    assert!(r.comms.iter().any(|c| c.0 == "pdflush"), "{:?}", r.comms);
    // The loop sleeps 100 ms per congestion wait at most, plus its own writeback.
    assert!(max_pause(&r, "dd") < 2 * SEC);
}

#[test]
fn per_task_limit_throttles_the_heavy_dirtier_first() {
    // A heavy dd, and from 10 s on a light writer: 16 MiB in 4 KiB writes.
    let light = JobConfig::Dd {
        bs: 4096,
        size: Some(16 * MIB),
        fsync: false,
        direct: false,
    };
    let mut pauses = Vec::new();
    for k in ["2.6.20", "2.6.24"] {
        let mut sc = scenario(k, 2 * GIB, 40);
        sc.add_task("heavy", 1, 0, dd(None));
        sc.add_task("light", 1, 10 * SEC, light.clone());
        let r = run(&sc);
        pauses.push(r.tasks[1].pauses.summary().count);
    }
    assert!(pauses[0] > 0, "2.6.20 throttles whoever dirties over the global limit");
    assert_eq!(pauses[1], 0, "2.6.24: the light dirtier's task limit is above the heavy one's");
}

#[test]
fn the_2_6_38_loop_pauses_longer_with_more_dirtiers() {
    // Wu's 2011 report, ext4: ">300ms pause times in 1-dd case ... >2s for 8-dd case", read
    // off the trace point at the loop's sleeps.
    let traced = |n: u32| ext4_2_6_38(n, 40).tasks.iter().map(|t| t.paused_max).max().unwrap_or(0);
    let max = [traced(1), traced(8)];
    assert!(max[0] > 100 * MS, "one dd: {} ms", max[0] / MS);
    assert!(max[1] > 2 * max[0], "8 dd {} ms vs 1 dd {} ms", max[1] / MS, max[0] / MS);
}

/// A disk written just before the run (`writeout_share = 100`) has its share of the dirty
/// threshold from the first sample, in every generation that splits the threshold by
/// completions; a freshly booted one earns it as its writeback completes. Under 2.6.38, whose
/// proportions count events, that takes tens of seconds, and Wu's 8 dd wait seconds longer.
#[test]
fn a_disk_written_before_the_run_starts_with_its_share() {
    for k in ["2.6.24", "2.6.38", "3.2", "6.x"] {
        let first_sample = |share: u32| {
            let mut sc = scenario(k, 2 * GIB, 2);
            sc.devices[0].writeout_share_pct = share;
            sc.add_task("dd", 1, 0, dd(None));
            let r = run(&sc);
            let s = r.throttle.first().expect("a throttle sample").clone();
            (s.wb_thresh, s.thresh)
        };
        let ((cold, thresh), (warm, _)) = (first_sample(0), first_sample(100));
        assert!(warm * 10 >= thresh * 9, "{k}: a warm disk's limit {warm} of {thresh} pages");
        assert!(cold * 2 < warm, "{k}: a cold disk's limit {cold} against a warm one's {warm}");
    }
    let traced = |share: u32| {
        let r = ext4_2_6_38_with(8, 40, share);
        r.tasks.iter().map(|t| t.paused_max).max().unwrap_or(0)
    };
    let (cold, warm) = (traced(0), traced(100));
    assert!(
        warm < cold,
        "8 dd, longest traced pause: warm {} ms, cold {} ms",
        warm / MS,
        cold / MS
    );
}

/// `n` dd on Wu's 2011 disk (NCQ 31 deep, a 32 MiB cache) carrying ext4, under 2.6.38, with
/// the block trace.
fn ext4_2_6_38(n: u32, secs: u64) -> wblab_sim::metrics::RunResult {
    ext4_2_6_38_with(n, secs, 0)
}

/// As [`ext4_2_6_38`], the disk holding `share` percent of the completions at the start.
fn ext4_2_6_38_with(n: u32, secs: u64, share: u32) -> wblab_sim::metrics::RunResult {
    let disk = DeviceModelConfig::Hdd(HddParams {
        transfer_outer: 72 * MIB,
        transfer_inner: 40 * MIB,
        cache_size: 32 * MIB,
        queue_depth: 31,
        ..Default::default()
    });
    let mut sc = Scenario::one_device("gen", disk, 4 * GIB, 2, secs * SEC);
    set_kernel(&mut sc, "2.6.38").expect("a modelled kernel");
    sc.devices[0].fs = Some(MountConfig::defaults(FsKind::Ext4, Version(2, 6, 38)));
    sc.devices[0].writeout_share_pct = share;
    sc.trace.block = true;
    sc.add_task("dd", n, 0, dd(None));
    run(&sc)
}

/// The share of write requests the dirtiers issued themselves (the rest: the flusher's).
fn dirtiers_share(r: &wblab_sim::metrics::RunResult) -> f64 {
    let ntasks = r.tasks.len() as u32;
    let (mut by_task, mut all) = (0u64, 0u64);
    for rec in &r.trace {
        if let TraceEvent::BlockRqIssue { rwbs, comm, .. } = rec.ev {
            if rwbs.write && !rwbs.flush {
                all += 1;
                by_task += u64::from((1..=ntasks).contains(&comm));
            }
        }
    }
    by_task as f64 / all.max(1) as f64
}

#[test]
fn a_2_6_38_dirtier_passes_by_the_inode_the_flusher_is_inside() {
    // One file: the flusher holds it (I_SYNC) across each writepages, which sleeps for request
    // slots, so the throttled dd finds nothing to write and waits for completions. Two files:
    // each dd writes whichever file the flusher is not in, ext4's writeback bump of it.
    let (one, two) = (ext4_2_6_38(1, 30), ext4_2_6_38(2, 30));
    let (s1, s2) = (dirtiers_share(&one), dirtiers_share(&two));
    assert!(s1 < 0.1, "one dd wrote {:.0} % of the requests itself", s1 * 100.0);
    assert!(s2 > 2.0 * s1 && s2 > 0.1, "two dd: {:.0} %, one: {:.0} %", s2 * 100.0, s1 * 100.0);
    // The trace point fires at the loop's sleeps: a call that writes that bump and leaves shows
    // only as far as its last sleep, so the traced pause is never longer than the call, and
    // with two files the longest call is longer than anything the trace shows.
    for t in one.tasks.iter().chain(&two.tasks) {
        assert!(
            t.paused_max <= t.pauses.summary().max,
            "{} traced {} ns, call {} ns",
            t.name,
            t.paused_max,
            t.pauses.summary().max
        );
    }
    let traced = two.tasks.iter().map(|t| t.paused_max).max().unwrap_or(0);
    assert!(
        max_pause(&two, "dd") > traced,
        "call {} ms, traced {} ms",
        max_pause(&two, "dd") / MS,
        traced / MS
    );
}

#[test]
fn io_less_3_2_pauses_stay_below_max_pause_and_writers_share_fairly() {
    let mut sc = scenario("3.2", 4 * GIB, 60);
    sc.add_task("dd", 10, 0, dd(None));
    let r = run(&sc);
    assert!(max_pause(&r, "dd") <= 200 * MS);
    let rates: Vec<f64> = r.tasks.iter().map(|t| t.steady_mb_s()).collect();
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    assert!(rates.iter().all(|x| (x - mean).abs() <= 0.15 * mean), "{rates:?}");
    // Dirty settles between freerun and the limit (the 3.2 control line).
    let last = r.vmstat.last().expect("samples");
    let dirty = last.nr_dirty + last.nr_writeback;
    let freerun = (last.dirty_thresh + last.dirty_background_thresh) / 2;
    assert!(
        dirty > freerun && dirty <= last.dirty_thresh,
        "dirty {dirty} freerun {freerun} thresh {}",
        last.dirty_thresh
    );
}

#[test]
fn pdflush_kupdate_writes_data_older_than_30_seconds() {
    // 64 MiB dirtied at once stays under the background threshold: only wb_kupdate writes
    // it, once it is older than dirty_expire_centisecs (30 s), on its 5 s timer.
    let mut sc = scenario("2.6.24", 2 * GIB, 45);
    sc.add_task("dd", 1, 0, dd(Some(64 * MIB)));
    let r = run(&sc);
    let written_by = |t: u64| r.vmstat.iter().filter(|s| s.t_ns <= t * SEC).map(|s| s.bo_kb).sum::<u64>();
    assert_eq!(written_by(29), 0, "nothing written before the data expires");
    assert!(written_by(45) * 1024 >= 64 * MIB, "kupdate wrote {} KiB", written_by(45));
}

mod invariants {
    //! Random small scenarios under every generation, with the metadata jobs: pages stay
    //! conserved and the counters agree, whatever writes and reclaim do.
    use super::*;
    use proptest::prelude::*;
    use wblab_sim::units::KIB;

    const KERNELS: &[&str] = &["2.6.20", "2.6.24", "2.6.32", "2.6.38", "3.2", "6.x"];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 18, ..ProptestConfig::default() })]
        #[test]
        fn counters_stay_consistent_in_every_generation(
            k in 0usize..KERNELS.len(),
            ssd in any::<bool>(),
            mem_mib in 128u64..768,
            dd in 0u32..5,
            bs_kib in prop_oneof![Just(4u64), Just(1024)],
            meta in any::<bool>(),
            dirty_bytes_mib in prop_oneof![Just(0u64), 16u64..96],
        ) {
            let model = if ssd { DeviceModelConfig::Ssd(Default::default()) } else { hdd() };
            let mut sc = Scenario::one_device("prop", model, mem_mib * MIB, 2, 4 * SEC);
            sc.machine.unreclaimable = mem_mib * MIB / 4;
            set_kernel(&mut sc, KERNELS[k]).expect("kernel");
            if dirty_bytes_mib > 0 {
                sc.sysctl.dirty_ratio = 0;
                sc.sysctl.dirty_bytes = dirty_bytes_mib * MIB;
            }
            if dd > 0 {
                sc.add_task("dd", dd, 0, JobConfig::Dd { bs: bs_kib * KIB, size: None, fsync: false, direct: false });
            }
            if meta {
                sc.add_task("du", 1, 0, JobConfig::Du { files: 50_000, files_per_dir: 20, subdirs: 0, inode_size: 128, inode_spacing: 1, repeat: true });
                sc.add_task("app", 1, SEC, JobConfig::Launch { files: 10, files_per_dir: 20, file_sizes: vec![256 * KIB, 8 * KIB], bs: 128 * KIB, mmap: false, writes: 64 * KIB, interval: Some(SEC) });
                sc.add_task("ls", 1, SEC / 2, JobConfig::Ls { dirs: 3, entries: 40, interval: Some(SEC / 2) });
            }
            let mut m = Machine::new(&sc);
            m.start();
            let mut steps = 0u64;
            while m.step() {
                steps += 1;
                if steps.is_multiple_of(64) {
                    if let Some(e) = m.check_laws() { prop_assert!(false, "{}: {} at t={}", KERNELS[k], e, m.now()); }
                }
            }
            if let Some(e) = m.check_laws() { prop_assert!(false, "{}: {} at end", KERNELS[k], e); }
            let r = m.finish();
            for t in &r.tasks {
                prop_assert!(t.ended >= t.started);
            }
        }
    }
}

/// throttle.csv reports what the run's kernel had: 2.6.20 one global threshold and no
/// per-device one, 2.6.24 a per-device share no larger than it, neither any of the IO-less
/// quantities (freerun, setpoint, bandwidth estimates); 6.x all of them.
#[test]
fn throttle_samples_carry_each_generation_s_own_quantities() {
    use wblab_sim::metrics::ThrottleSample;
    let na = ThrottleSample::NA;
    for k in ["2.6.20", "2.6.24", "6.x"] {
        let mut sc = scenario(k, 2 * GIB, 20);
        sc.add_task("dd", 1, 0, dd(None));
        let r = run(&sc);
        let last = r.throttle.last().expect("samples");
        // The vmstat samples report the generation's dirty threshold too: they must agree.
        let vm_thresh = r.vmstat.last().expect("vmstat").dirty_thresh;
        match k {
            "6.x" => {
                assert!(r.throttle.iter().all(|s| s.setpoint != na && s.write_bw != na && s.wb_thresh != na));
                assert!(last.freerun < last.setpoint && last.setpoint < last.limit);
            }
            _ => {
                assert!(r
                    .throttle
                    .iter()
                    .all(|s| s.freerun == na && s.setpoint == na && s.pos_ratio == na && s.write_bw == na));
                assert_eq!(last.thresh, vm_thresh, "{k}");
                assert!(last.bg_thresh < last.thresh);
                if k == "2.6.20" {
                    assert!(r.throttle.iter().all(|s| s.wb_thresh == na));
                } else {
                    assert!(r.throttle.iter().all(|s| s.wb_thresh <= s.thresh));
                    assert!(last.wb_thresh > 0, "one busy disk earns a share");
                }
            }
        }
    }
}
