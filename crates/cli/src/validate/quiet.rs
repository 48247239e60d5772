//! A quiet machine for each measurement. The validator runs for hours on shared machines: a
//! build or another job beside a repeat takes CPUs the run's own tasks and kernel threads
//! need, and its figures (above all the latency tails of I/O that wakes a task) then say more
//! about the neighbour than about the kernel. So each repeat waits until the machine's CPUs are
//! quiet, and a repeat that other processes disturbed anyway (`other_cpu_fraction` in its
//! `machine.json`, the harness's own measure of load that is neither wblab nor the kernel's
//! threads) is measured again.

use std::path::Path;
use std::time::{Duration, Instant};
use wblab_probe::vmstat::CpuTimes;

/// A repeat whose other processes used more than this share of the CPUs is disturbed (the same
/// bound at which `wblab measure` warns).
pub const DISTURBED: f64 = 0.25;

/// How many times a disturbed repeat is measured before its last attempt is kept.
pub const ATTEMPTS: u32 = 3;

/// Share of the CPUs busy outside the kernel's own threads over `window`.
fn busy_share(window: Duration) -> f64 {
    let before = CpuTimes::now();
    std::thread::sleep(window);
    let u = CpuTimes::now().since(&before);
    ((u.busy_s - u.kernel_s) / u.total_s).clamp(0.0, 1.0)
}

/// Wait (at most `patience`) until a second passes with less than [`DISTURBED`] of the CPUs
/// busy; say so while waiting. Returns the last share seen.
pub fn wait(patience: Duration) -> f64 {
    let start = Instant::now();
    let mut said = false;
    loop {
        let share = busy_share(Duration::from_secs(1));
        if share < DISTURBED || start.elapsed() >= patience {
            if said {
                eprintln!(
                    "  machine {} ({:.0}% of the CPUs busy)",
                    if share < DISTURBED {
                        "quiet"
                    } else {
                        "still busy, measuring anyway"
                    },
                    share * 100.0
                );
            }
            return share;
        }
        if !said {
            eprintln!(
                "  waiting for a quiet machine ({:.0}% of the CPUs busy with other work)",
                share * 100.0
            );
            said = true;
        }
    }
}

/// The other processes' share of the CPUs during a measured repeat, from its `machine.json`
/// (`None` when the file or the field is missing).
pub fn disturbance(repeat: &Path) -> Option<f64> {
    super::machine_field(repeat, "other_cpu_fraction")?.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_says_how_disturbed_it_was() {
        let dir = std::env::temp_dir().join(format!("wblab-quiet-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(disturbance(&dir), None, "no machine.json: unknown, not quiet");
        std::fs::write(dir.join("machine.json"), r#"{"kind": "measured", "other_cpu_fraction": 0.62}"#).unwrap();
        let share = disturbance(&dir).unwrap();
        assert!(share > DISTURBED, "{share}");
        std::fs::write(dir.join("machine.json"), r#"{"kind": "measured"}"#).unwrap();
        assert_eq!(disturbance(&dir), None, "an older machine.json without the field");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
