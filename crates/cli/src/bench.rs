//! `wblab bench`: fixed scenarios timed end to end (simulation only, no file output).

use std::process::ExitCode;
use std::time::Instant;
use wblab_sim::config::{DeviceModelConfig, HddParams, JobConfig, Scenario, SsdParams};
use wblab_sim::units::{GIB, KIB, MIB};

const SEC: u64 = 1_000_000_000;

fn dd() -> JobConfig {
    JobConfig::Dd {
        bs: MIB,
        size: None,
        fsync: false,
        direct: false,
    }
}

/// The benchmark set: (name, scenario).
pub fn scenarios() -> Vec<(&'static str, Scenario)> {
    let mut v = Vec::new();
    v.push(("default (4 dd + cat, HDD, 60 s)", wblab_scenario::default_scenario()));
    let mut s = Scenario::one_device("hdd-100dd", DeviceModelConfig::Hdd(HddParams::default()), 4 * GIB, 2, 60 * SEC);
    s.add_task("dd", 100, 0, dd());
    v.push(("100 dd, HDD, 4 GiB, 60 s", s));
    let mut s = Scenario::one_device(
        "hdd-10dd-reader",
        DeviceModelConfig::Hdd(HddParams::default()),
        4 * GIB,
        2,
        60 * SEC,
    );
    s.add_task("dd", 10, 0, dd());
    s.add_task(
        "cat",
        1,
        10 * SEC,
        JobConfig::Cat {
            bs: 128 * KIB,
            file_size: 4 * GIB,
        },
    );
    v.push(("10 dd + cat, HDD, 4 GiB, 60 s", s));
    let mut s = Scenario::one_device("ssd-1000dd", DeviceModelConfig::Ssd(SsdParams::default()), 64 * GIB, 8, 60 * SEC);
    s.add_task("dd", 1000, 0, dd());
    v.push(("1000 dd, SSD, 64 GiB, 60 s", s));
    v
}

pub fn run(filter: Option<&str>) -> ExitCode {
    println!(
        "{:<34} {:>7} {:>8} {:>11} {:>12} {:>12}",
        "scenario", "sim s", "wall s", "events", "events/s", "sim s/wall s"
    );
    for (name, sc) in scenarios() {
        if filter.is_some_and(|f| !name.contains(f) && !sc.name.contains(f)) {
            continue;
        }
        let t0 = Instant::now();
        let r = match crate::simulate::simulate(&sc, &mut wblab_sim::machine::NoProgress, false) {
            Ok(r) => r,
            Err(code) => return code,
        };
        let wall = t0.elapsed().as_secs_f64();
        let sim = r.sim_ns as f64 / 1e9;
        println!(
            "{:<34} {:>7.1} {:>8.3} {:>11} {:>12.0} {:>12.1}",
            name,
            sim,
            wall,
            r.events,
            r.events as f64 / wall,
            sim / wall
        );
    }
    ExitCode::SUCCESS
}
