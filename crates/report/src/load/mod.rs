//! Reading results directories back, simulated or measured: [`rundir`] loads one,
//! [`trace_parse`] reads ftrace text (ours or a real kernel's), [`file`] opens their files
//! without trusting them.

pub mod emulated;
pub mod file;
pub mod refused;
pub mod rundir;
pub mod trace_parse;

/// A measured run's `machine.json` (`None` when the run at `dir` has none or it does not parse).
pub fn machine_json(dir: &std::path::Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("machine.json")).ok()?;
    serde_json::from_str(&text).ok()
}
