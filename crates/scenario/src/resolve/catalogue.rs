//! Every key the scenario format accepts, by where it goes. It is assembled from the very lists
//! the builder checks files against (and from the elevator and device-model registries), so a
//! key the parser learns appears here with no edit — and the scenario fuzzer, which must know
//! how to write every key, fails its coverage test until it learns the new one too.

use super::{bdi, cgroup, device, machine, model, policy, queue, sysctl, task, throttle, TOP_KEYS, TRACE_KEYS};

/// The accepted keys, section by section.
#[derive(Clone, Debug)]
pub struct Catalogue {
    /// Top-level scalar keys (`name`, `kernel`, `duration`, ...), without the section tables.
    pub top: Vec<&'static str>,
    pub machine: Vec<&'static str>,
    pub sysctl: Vec<&'static str>,
    pub policy: Vec<&'static str>,
    pub trace: Vec<&'static str>,
    /// Keys of every `[[device]]` whatever its model: identity, `queue/*`, `queue/iosched/*`,
    /// `bdi/*`, `throttle/*`.
    pub device: Vec<&'static str>,
    /// Each device model with its own parameters (an array's include `member_model`).
    pub models: Vec<(&'static str, Vec<&'static str>)>,
    /// Keys of every `[[task]]` whatever its job.
    pub task: Vec<&'static str>,
    /// Each job with its own keys.
    pub jobs: Vec<(&'static str, Vec<&'static str>)>,
    /// Files of a `[[cgroup]]` (with its `path`).
    pub cgroup: Vec<&'static str>,
}

/// Sections the top level holds as tables rather than values.
const SECTIONS: &[&str] = &["machine", "sysctl", "device", "task", "trace", "policy", "sweep", "cgroup"];

/// The keys of the scenario format as this build's parser accepts them.
pub fn catalogue() -> Catalogue {
    let device = [
        device::IDENTITY_KEYS,
        &wblab_sim::config::queue_keys(),
        &queue::tunable_keys(),
        &bdi::keys(),
        &throttle::keys(),
    ]
    .concat();
    Catalogue {
        top: TOP_KEYS.iter().copied().filter(|k| !SECTIONS.contains(k)).collect(),
        machine: machine::keys(),
        sysctl: sysctl::keys(),
        policy: policy::KEYS.to_vec(),
        trace: TRACE_KEYS.to_vec(),
        device,
        models: model::kinds().into_iter().map(|k| (k, model::keys(k))).collect(),
        task: task::COMMON_KEYS.to_vec(),
        jobs: task::job_keys(),
        cgroup: cgroup::keys(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_and_registry_is_in_it() {
        let c = catalogue();
        assert!(c.top.contains(&"duration") && !c.top.contains(&"machine"));
        assert!(c.sysctl.contains(&"vm.dirty_ratio"));
        assert!(c.device.contains(&"queue/iosched/fifo_batch") && c.device.contains(&"bdi/strict_limit"));
        let raid0 = c.models.iter().find(|(k, _)| *k == "raid0").expect("raid0 is listed");
        assert!(raid0.1.contains(&"member_model"));
        assert_eq!(c.models.len(), wblab_sim::drivers::MODELS.len());
        assert!(c.jobs.iter().any(|(j, keys)| *j == "dd" && keys.contains(&"conv")));
    }
}
