//! Simulations built in code and run under the laws.

use wblab_sim::config::{DeviceModelConfig, HddParams, JobConfig, Scenario, SsdParams, TaskConfig};
use wblab_sim::metrics::RunResult;
use wblab_sim::units::MIB;

pub use wblab_sim::units::NSEC_PER_MSEC as MS;
pub use wblab_sim::units::NSEC_PER_SEC as SEC;

/// Run `sc` with the laws checked; a broken law fails the test with its message.
pub fn run(sc: &Scenario) -> RunResult {
    wblab_sim::run(sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{}: {v}", sc.name))
}

/// `dd bs=1M` of `size` bytes (None: until the task stops), buffered, no fsync.
pub fn dd(size: Option<u64>) -> JobConfig {
    JobConfig::Dd {
        bs: MIB,
        size,
        fsync: false,
        direct: false,
    }
}

/// `dd` with every knob: block size, bytes, `conv=fsync`.
pub fn dd_with(bs: u64, size: u64, fsync: bool) -> JobConfig {
    JobConfig::Dd {
        bs,
        size: Some(size),
        fsync,
        direct: false,
    }
}

/// `dd oflag=direct bs=<bs>` of `size` bytes (None: until the task stops): O_DIRECT writes,
/// one at a time, no fsync.
pub fn dd_direct(bs: u64, size: Option<u64>) -> JobConfig {
    JobConfig::Dd {
        bs,
        size,
        fsync: false,
        direct: true,
    }
}

/// One task `name` of `job` on the first device, its file `file`, from `start` to the end.
pub fn task(name: &str, file: &str, start: u64, job: JobConfig) -> TaskConfig {
    TaskConfig {
        name: name.into(),
        count: 1,
        device: 0,
        file: file.into(),
        start,
        stagger: 0,
        stop: None,
        ioprio: Default::default(),
        cgroup: None,
        after: Vec::new(),
        job,
    }
}

/// A task `name` on the first device that calls sync(2) once, `start` into the run.
pub fn sync_once(name: &str, start: u64) -> TaskConfig {
    TaskConfig {
        name: name.into(),
        count: 1,
        device: 0,
        file: "/mnt/sda/none".into(),
        start,
        stagger: 0,
        stop: None,
        ioprio: Default::default(),
        cgroup: None,
        after: Vec::new(),
        job: JobConfig::Sync { interval: 3600 * SEC },
    }
}

pub fn hdd() -> DeviceModelConfig {
    DeviceModelConfig::Hdd(HddParams::default())
}

pub fn ssd() -> DeviceModelConfig {
    DeviceModelConfig::Ssd(SsdParams::default())
}

/// One device of `model`, `memory` bytes of RAM on `cpus` CPUs, `writers` endless `dd` for
/// `secs` seconds: the setup most throttling tests start from.
pub fn one_disk_dd(name: &str, model: DeviceModelConfig, memory: u64, cpus: u32, secs: u64, writers: u32) -> Scenario {
    let mut sc = Scenario::one_device(name, model, memory, cpus, secs * SEC);
    if writers > 0 {
        sc.add_task("dd", writers, 0, dd(None));
    }
    sc
}

/// The longest balance_dirty_pages pause of any task of `group`, ns.
pub fn max_pause(r: &RunResult, group: &str) -> u64 {
    r.tasks
        .iter()
        .filter(|t| t.name == group)
        .map(|t| t.pauses.summary().max)
        .max()
        .unwrap_or(0)
}

/// The steady-state MB/s of task group `group`, summed over its tasks.
pub fn steady_mb_s(r: &RunResult, group: &str) -> f64 {
    r.tasks.iter().filter(|t| t.name == group).map(|t| t.steady_mb_s()).sum()
}

/// Dirty and writeback pages at the last per-second sample.
pub fn end_state(r: &RunResult) -> (u64, u64) {
    let s = r.vmstat.last().expect("per-second samples");
    (s.nr_dirty, s.nr_writeback)
}

/// `x` within a relative `tol` of `want`.
pub fn near(x: f64, want: f64, tol: f64) -> bool {
    (x / want - 1.0).abs() <= tol
}
