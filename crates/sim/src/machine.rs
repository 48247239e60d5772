//! The simulated machine (being written).
use crate::config::Scenario;
use crate::metrics::RunResult;

/// Progress callback: simulated ns done, total.
pub trait Progress { fn tick(&mut self, done: crate::Ns, total: crate::Ns); }

pub fn run(scenario: &Scenario, _progress: &mut dyn Progress) -> RunResult {
    RunResult { scenario: scenario.clone(), sim_ns: 0, events: 0, tasks: vec![], devices: vec![], trace: vec![], comms: vec![], vmstat: vec![], throttle: vec![] }
}
