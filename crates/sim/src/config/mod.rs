//! The resolved scenario: every knob of the simulated machine with its value made explicit.
//!
//! The scenario crate parses TOML into this; `summary.json` echoes it back (gem5's
//! `config.ini` habit), so a run documents exactly what it simulated. Knob names follow the
//! kernel's sysctl and sysfs names. Sizes are bytes, times nanoseconds unless a field says
//! otherwise (`*_centisecs`, `*_ms`, `*_usec` keep the kernel's own units).

use crate::Ns;
use serde::Serialize;

/// For `skip_serializing_if`: a field added after results were first published stays out of
/// them while it is 0, so a scenario that does not set it writes what it wrote before.
fn is_zero(n: &Ns) -> bool {
    *n == 0
}

/// As [`is_zero`], for a field whose neutral value is 1.
fn is_one(n: &u32) -> bool {
    *n == 1
}

mod bdi_knobs;
mod cgroup;
mod cgroup_files;
mod device;
mod elevator;
mod fio;
mod knob;
mod machine;
mod machine_knobs;
mod models;
mod mount;
mod policy;
mod queue;
mod queue_knobs;
mod sysctl;
mod task;
mod throttle_knobs;
mod without;

pub use bdi_knobs::*;
pub use cgroup::*;
pub use cgroup_files::*;
pub use device::*;
pub use elevator::*;
pub use fio::*;
pub use knob::*;
pub use machine::*;
pub use machine_knobs::*;
pub use models::*;
pub use mount::*;
pub use policy::*;
pub use queue::*;
pub use queue_knobs::*;
pub use sysctl::*;
pub use task::*;
pub use throttle_knobs::*;

#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    /// A short name for tables and file names.
    pub name: String,
    /// The kernel release simulated, as written ("6.x", "2.6.20", "3.2").
    pub kernel: String,
    /// The policies that release runs (from its generation, then the `[policy]` overrides).
    pub policy: PolicyConfig,
    /// Simulated time to run, ns.
    pub duration: Ns,
    pub seed: u64,
    /// CONFIG_HZ of the simulated kernel.
    pub hz: u64,
    pub machine: MachineConfig,
    pub sysctl: VmSysctl,
    pub devices: Vec<DeviceConfig>,
    pub tasks: Vec<TaskConfig>,
    pub trace: TraceConfig,
    /// Memory cgroups and where tasks run; empty: every task in the root cgroup.
    #[serde(skip_serializing_if = "CgroupTree::is_empty")]
    pub cgroups: CgroupTree,
    /// End the run when every task is done (fio job files: the run lasts as long as the
    /// jobs), `duration` being the most it may last.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub until_done: bool,
    /// What the scenario sets that its release did not have (an elevator or blk-wbt before
    /// it was merged): run as asked, and named in the run's header as what-ifs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub what_if: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TraceConfig {
    /// Record `writeback:*` events.
    pub writeback: bool,
    /// Record `block:block_rq_issue` / `block_rq_complete` (large).
    pub block: bool,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            writeback: true,
            block: false,
        }
    }
}

impl Scenario {
    /// A machine with one device and no tasks, every knob at its default. The scenario crate
    /// builds scenarios from files; this is for tests and benchmarks that build them in code.
    pub fn one_device(name: &str, model: DeviceModelConfig, memory: u64, cpus: u32, duration: Ns) -> Scenario {
        let queue = default_queue(&model);
        let size = default_size(&model);
        let (dev, major, minor) = model.info().naming.node(0);
        Scenario {
            name: name.to_string(),
            kernel: "6.x".to_string(),
            policy: PolicyConfig::default(),
            duration,
            seed: 1,
            hz: 250,
            machine: MachineConfig {
                memory,
                cpus,
                ..Default::default()
            },
            sysctl: VmSysctl::default(),
            devices: vec![DeviceConfig {
                name: dev,
                major,
                minor,
                size,
                model,
                queue,
                bdi: BdiConfig::default(),
                fs: None,
                throttle: BlkThrottleConfig::default(),
                used_pct: 0,
                writeout_share_pct: 0,
                emulate: false,
            }],
            tasks: Vec::new(),
            trace: TraceConfig::default(),
            cgroups: CgroupTree::default(),
            until_done: false,
            what_if: Vec::new(),
        }
    }

    /// Add `count` instances of `job` on device 0, starting at `start`.
    pub fn add_task(&mut self, name: &str, count: u32, start: Ns, job: JobConfig) -> &mut Self {
        self.tasks.push(TaskConfig {
            name: name.to_string(),
            count,
            device: 0,
            file: format!("/mnt/{}/{name}{{n}}", self.devices[0].name),
            start,
            stagger: 0,
            stop: None,
            ioprio: Default::default(),
            cgroup: None,
            after: Vec::new(),
            job,
        });
        self
    }
}
