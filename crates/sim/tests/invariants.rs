//! Invariants of the model under random small scenarios: pages are conserved, per-file,
//! per-wb and global counters agree, counters never go negative (they are unsigned and
//! overflow-checked in test builds), dirty pages fit in RAM, and time never goes back.

use proptest::prelude::*;
use wblab_sim::config::{DeviceModelConfig, HddParams, JobConfig, Scenario, SsdParams};
use wblab_sim::machine::Machine;
use wblab_sim::units::{KIB, MIB};

use wblab_testkit::sim::SEC;

fn scenario(ssd: bool, mem_mib: u64, dd: u32, readers: u32, fsyncers: u32, dirty_bytes_mib: u64, bs_kib: u64) -> Scenario {
    let model = if ssd {
        DeviceModelConfig::Ssd(SsdParams::default())
    } else {
        DeviceModelConfig::Hdd(HddParams::default())
    };
    let mut sc = Scenario::one_device("prop", model, mem_mib * MIB, 2, 4 * SEC);
    if dirty_bytes_mib > 0 {
        sc.sysctl.dirty_bytes = dirty_bytes_mib * MIB;
        sc.sysctl.dirty_background_bytes = dirty_bytes_mib * MIB / 2;
    }
    if dd > 0 {
        sc.add_task(
            "dd",
            dd,
            0,
            JobConfig::Dd {
                bs: bs_kib * KIB,
                size: None,
                fsync: false,
                direct: false,
            },
        );
    }
    if readers > 0 {
        sc.add_task(
            "cat",
            readers,
            SEC / 2,
            JobConfig::Cat {
                bs: 128 * KIB,
                file_size: 64 * MIB,
            },
        );
        sc.add_task(
            "rr",
            1,
            SEC,
            JobConfig::Randread {
                bs: 4 * KIB,
                file_size: 64 * MIB,
                direct: false,
                think: 0,
            },
        );
    }
    if fsyncers > 0 {
        sc.add_task(
            "fs",
            fsyncers,
            0,
            JobConfig::Fsync {
                bytes: 64 * KIB,
                interval: SEC / 4,
            },
        );
    }
    sc
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn counters_and_time_stay_consistent(
        ssd in any::<bool>(),
        mem_mib in 256u64..1024,
        dd in 0u32..6,
        readers in 0u32..3,
        fsyncers in 0u32..2,
        dirty_bytes_mib in prop_oneof![Just(0u64), 8u64..64],
        bs_kib in prop_oneof![Just(4u64), Just(64), Just(1024), Just(4096)],
    ) {
        let sc = scenario(ssd, mem_mib, dd, readers, fsyncers, dirty_bytes_mib, bs_kib);
        let mut m = Machine::new(&sc);
        m.start();
        let mut last = 0;
        let mut steps = 0u64;
        while m.step() {
            prop_assert!(m.now() >= last, "time went back");
            last = m.now();
            steps += 1;
            if steps.is_multiple_of(64) {
                if let Some(e) = m.check_laws() { prop_assert!(false, "{} at t={}", e, m.now()); }
            }
        }
        if let Some(e) = m.check_laws() { prop_assert!(false, "{} at end", e); }
        let r = m.finish();
        for t in &r.tasks {
            prop_assert!(t.ended >= t.started);
        }
        let written: u64 = r.devices.iter().map(|d| d.bytes_written).sum();
        let dirtied: u64 = r.tasks.iter().map(|t| t.bytes_written).sum();
        prop_assert!(written <= dirtied + 4096 * r.tasks.len() as u64, "device wrote more than tasks dirtied");
    }
}
