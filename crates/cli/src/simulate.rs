//! Running one simulation from the CLI: the laws on request, and a broken law as an error.

use std::process::ExitCode;
use wblab_sim::config::Scenario;
use wblab_sim::metrics::{RunResult, TraceSink};
use wblab_sim::{Progress, RunOptions};

/// Exit code of a run stopped by a broken law (2 is bad input, 1 an I/O error).
pub const EXIT_LAW: u8 = 3;

/// Simulate `sc`, checking the model's laws when `check` is set (always in debug builds).
/// A broken law is printed, naming the scenario, and gives [`EXIT_LAW`].
pub fn simulate(sc: &Scenario, progress: &mut dyn Progress, check: bool) -> Result<RunResult, ExitCode> {
    let r = wblab_sim::run_with(sc, progress, options(check));
    r.map_err(|v| law_broken(sc, v))
}

/// [`simulate`], handing the trace to the sink `make_sink` returns as it is recorded.
pub fn simulate_streaming(
    sc: &Scenario,
    progress: &mut dyn Progress,
    check: bool,
    make_sink: impl FnOnce(Vec<(String, u32)>) -> Box<dyn TraceSink>,
) -> Result<RunResult, ExitCode> {
    let r = wblab_sim::run_streaming(sc, progress, options(check), make_sink);
    r.map_err(|v| law_broken(sc, v))
}

fn options(check: bool) -> RunOptions {
    RunOptions {
        check_laws: check || RunOptions::default().check_laws,
    }
}

fn law_broken(sc: &Scenario, v: wblab_sim::LawViolation) -> ExitCode {
    eprintln!(
        "error: {} (kernel {}, seed {}): {v}\n  hint: a broken law is a bug in wblab's model, not in the scenario; \
         please report it with the scenario file",
        sc.name, sc.kernel, sc.seed
    );
    ExitCode::from(EXIT_LAW)
}
