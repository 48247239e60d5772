//! The simulations of one `wblab docs`: a run that several blocks need (the outcome of a report's
//! scenario and the first seed of its `reproduce` table) is made once and handed to each, then
//! dropped after its last user; the others are made where they are needed. Which runs are
//! shared is known before any block is generated, from what each block will simulate.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use wblab_sim::config::Scenario;
use wblab_sim::metrics::RunResult;

type Outcome = Result<Arc<RunResult>, String>;

/// A run several blocks share: made by the first to ask, waited for by the others.
struct Shared {
    users_left: usize,
    run: Arc<OnceLock<Outcome>>,
}

/// The shared runs of one `wblab docs`, by their scenario.
#[derive(Default)]
pub struct Runs {
    shared: Mutex<HashMap<String, Shared>>,
}

/// What identifies a simulation: the whole scenario, seed and kernel included (the runs are
/// deterministic, so equal scenarios give equal runs).
fn key(sc: &Scenario) -> String {
    serde_json::to_string(sc).expect("a scenario serializes")
}

impl Runs {
    /// Shares every scenario that `needs` lists more than once.
    pub fn new<'a>(needs: impl IntoIterator<Item = &'a Scenario>) -> Runs {
        let mut count: HashMap<String, usize> = HashMap::new();
        for sc in needs {
            *count.entry(key(sc)).or_default() += 1;
        }
        let shared = count
            .into_iter()
            .filter(|&(_, n)| n > 1)
            .map(|(k, n)| {
                let s = Shared {
                    users_left: n,
                    run: Arc::new(OnceLock::new()),
                };
                (k, s)
            })
            .collect();
        Runs {
            shared: Mutex::new(shared),
        }
    }

    /// The run of `sc`: made now, or the shared one (made by whoever asked first).
    pub fn simulate(&self, sc: &Scenario) -> Outcome {
        let k = key(sc);
        let slot = {
            let mut shared = self.shared.lock().expect("no docs thread panics");
            let Some(s) = shared.get_mut(&k) else {
                drop(shared);
                return run_quietly(sc).map(Arc::new);
            };
            s.users_left -= 1;
            let slot = s.run.clone();
            if s.users_left == 0 {
                // The last user: the run goes when this one is done with it.
                shared.remove(&k);
            }
            slot
        };
        slot.get_or_init(|| run_quietly(sc).map(Arc::new)).clone()
    }
}

/// One run for the docs. The laws are the tests' business, not the docs': they are off here so
/// that a test build regenerates the docs at release speed.
fn run_quietly(sc: &Scenario) -> Result<RunResult, String> {
    let opts = wblab_sim::RunOptions { check_laws: false };
    wblab_sim::run_with(sc, &mut wblab_sim::NoProgress, opts).map_err(|v| v.to_string())
}

/// A directory of its own under the system's temporary one for a block that writes a results
/// directory to read it back: blocks are generated side by side.
pub fn scratch_dir(tag: &str) -> std::path::PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("wblab-docs-{}-{n}-{tag}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(seed: u64) -> Scenario {
        let mut sc = wblab_scenario::default_scenario();
        sc.duration = 200_000_000;
        sc.seed = seed;
        sc
    }

    #[test]
    fn a_run_two_blocks_need_is_made_once_and_let_go_after_the_second() {
        let (a, b) = (short(1), short(2));
        let runs = Runs::new([&a, &a, &b]);
        let first = runs.simulate(&a).unwrap();
        let second = runs.simulate(&a).unwrap();
        assert!(Arc::ptr_eq(&first, &second), "the second block gets the first block's run");
        // Its users are done: a third ask is a run of its own, equal by determinism.
        let third = runs.simulate(&a).unwrap();
        assert!(!Arc::ptr_eq(&first, &third));
        assert_eq!(first.events, third.events);
        // A scenario only one block needs is not kept.
        let once = runs.simulate(&b).unwrap();
        assert!(!Arc::ptr_eq(&once, &runs.simulate(&b).unwrap()));
        assert!(runs.shared.lock().unwrap().is_empty(), "nothing is held after its last user");
    }

    #[test]
    fn side_by_side_blocks_get_directories_of_their_own() {
        assert_ne!(scratch_dir("x"), scratch_dir("x"));
    }
}
