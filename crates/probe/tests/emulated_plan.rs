//! `wblab measure`'s plan for a device with `emulate = true`: a loop device bound to the
//! FUSE file that serves the device's model, everything inside the scratch directory, and
//! requests capped at what the emulation passes whole; and what the plan says of the memory
//! probe and of a device's state only the model has. Plans are built for an example root
//! host: nothing on this machine is read or changed.

use std::path::PathBuf;
use wblab_probe::plan::{Host, Plan, EMULATED_MAX_SECTORS_KB};
use wblab_probe::MeasureOptions;

fn plan(device: &str) -> Plan {
    let text =
        format!("duration = \"5s\"\n[[device]]\nname = \"sda\"\n{device}\n[[task]]\nname = \"dd\"\njob = \"dd\"\nfile = \"/mnt/sda/f\"\n");
    let sc = wblab_scenario::parse(&text, "emulated.toml").unwrap_or_else(|e| panic!("{e}"));
    let opts = MeasureOptions::new(PathBuf::from("/nonexistent/out"));
    Plan::build(&sc, &opts, &Host::example()).expect("a plan")
}

#[test]
fn an_emulated_device_is_a_loop_device_over_its_model() {
    let p = plan("model = \"hdd\"\nsize = \"2GiB\"\nfs = \"ext4\"\nemulate = true");
    let l = p.devices[0].loop_device.as_ref().expect("a loop device");
    let e = l.emulate.as_ref().expect("served by the model");
    assert!(e.mount.starts_with(&p.scratch), "{}", e.mount.display());
    assert_eq!(l.bound_to(), e.mount.join(wblab_emulate::DISK));
    assert!(l.backing.starts_with(&p.scratch));
    assert!(p.escapes().is_empty(), "{:?}", p.escapes());
    // The HDD's queue takes 1280 KiB requests; the emulated one gets them whole up to 512.
    let max = l.queue.iter().find(|(k, _)| k == "max_sectors_kb").map(|(_, v)| v.clone());
    assert_eq!(max, Some(EMULATED_MAX_SECTORS_KB.to_string()));
    assert!(
        p.warnings.iter().any(|w| w.contains("queue/max_sectors_kb = 512")),
        "{:?}",
        p.warnings
    );
    let text = p.render();
    assert!(text.contains("FUSE on") && text.contains("`hdd` model"), "{text}");
    // Its inode tables are not written out on the scratch file system, nor by ext4lazyinit
    // through the model during the run.
    assert!(
        l.mkfs.1.iter().any(|a| a == "lazy_itable_init=1,lazy_journal_init=0"),
        "{:?}",
        l.mkfs
    );
    assert!(l.mount_options.split(',').any(|o| o == "noinit_itable"), "{}", l.mount_options);
    // The driver's tags cut to the disk's NCQ depth before the elevator is chosen, so that the
    // elevator keeps what the disk cannot take, as on a disk.
    let depth = wblab_sim::config::DeviceModelConfig::Hdd(Default::default()).queue_depth();
    assert_eq!(l.queue[0], ("scheduler".to_string(), "none".to_string()));
    assert_eq!(l.queue[1], ("nr_requests".to_string(), depth.to_string()));
    let later: Vec<&(String, String)> = l.queue[2..]
        .iter()
        .filter(|(k, _)| k == "scheduler" || k == "nr_requests")
        .collect();
    assert_eq!(later[0], &("scheduler".to_string(), "mq-deadline".to_string()), "{:?}", l.queue);
    assert!(
        later[1].1.parse::<u32>().unwrap() > depth,
        "the elevator's own requests: {:?}",
        l.queue
    );
}

#[test]
fn without_an_elevator_the_driver_keeps_the_disks_depth() {
    let p = plan("model = \"hdd\"\nsize = \"2GiB\"\nemulate = true\n\"queue/scheduler\" = \"none\"");
    let l = p.devices[0].loop_device.as_ref().unwrap();
    let depth = wblab_sim::config::DeviceModelConfig::Hdd(Default::default()).queue_depth();
    for (k, v) in l.queue.iter().filter(|(k, _)| k == "nr_requests") {
        assert!(v.parse::<u32>().unwrap() <= depth, "{k} = {v}: more tags than the disk takes");
    }
}

#[test]
fn a_scenario_that_asks_for_small_requests_is_not_warned() {
    let p = plan("model = \"usb\"\nsize = \"1GiB\"\nemulate = true\n\"queue/max_sectors_kb\" = 64");
    assert!(p.devices[0].loop_device.as_ref().and_then(|l| l.emulate.as_ref()).is_some());
    assert!(!p.warnings.iter().any(|w| w.contains("max_sectors_kb")), "{:?}", p.warnings);
}

#[test]
fn without_emulate_a_disk_model_stays_on_the_scratch_file_system() {
    let p = plan("model = \"hdd\"\nsize = \"2GiB\"");
    assert!(p.devices[0].loop_device.is_none());
}

/// `wblab measure --emulate` on every shipped scenario: each disk, USB key and SSD (and array)
/// becomes a loop device over its model, nothing outside the scratch directory.
#[test]
fn every_shipped_scenario_plans_with_its_devices_emulated() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut planned = 0;
    for f in std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()) {
        if f.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let mut sc = wblab_scenario::load(&f).unwrap_or_else(|e| panic!("{e}"));
        let served = wblab_probe::plan::emulate_every_device(&mut sc);
        let opts = MeasureOptions::new(PathBuf::from("/nonexistent/out"));
        let Ok(p) = Plan::build(&sc, &opts, &Host::example()) else {
            continue; // a scenario measure refuses anyway (its jobs), emulated or not
        };
        assert!(p.escapes().is_empty(), "{}: {:?}", f.display(), p.escapes());
        let emulated = p
            .devices
            .iter()
            .filter(|d| d.loop_device.as_ref().is_some_and(|l| l.emulate.is_some()))
            .count();
        assert_eq!(emulated, served, "{}: every device that can be emulated is", f.display());
        planned += usize::from(served > 0);
    }
    assert!(planned >= 20, "only {planned} shipped scenarios planned with emulated devices");
}

/// `measure --plan` says whether the first touch of free memory will be timed, as the run does.
#[test]
fn the_plan_names_the_memory_probe_only_when_it_will_run() {
    let text =
        "duration = \"5s\"\n[[device]]\nname = \"sda\"\nmodel = \"ssd\"\n[[task]]\nname = \"dd\"\njob = \"dd\"\nfile = \"/mnt/sda/f\"\n";
    let sc = wblab_scenario::parse(text, "plain.toml").unwrap_or_else(|e| panic!("{e}"));
    let mut opts = MeasureOptions::new(PathBuf::from("/nonexistent/out"));
    let with = Plan::build(&sc, &opts, &Host::example()).expect("a plan").render();
    assert!(with.contains("memory-touch.probe"), "{with}");
    opts.memory_touch = false;
    let without = Plan::build(&sc, &opts, &Host::example()).expect("a plan").render();
    assert!(
        !without.contains("memory-touch.probe") && !without.contains("first touch"),
        "{without}"
    );
}

/// `writeout_share` is the model's starting state: the plan says the real kernel's comes from
/// the machine's own history instead of pretending to set it.
#[test]
fn a_writeout_share_is_said_to_be_the_model_s_alone() {
    let p = plan("model = \"hdd\"\nwriteout_share = 100");
    assert!(
        p.warnings.iter().any(|w| w.contains("`sda`") && w.contains("writeout_share = 100")),
        "{:?}",
        p.warnings
    );
    let p = plan("model = \"hdd\"");
    assert!(!p.warnings.iter().any(|w| w.contains("writeout_share")), "{:?}", p.warnings);
}
