//! What the tables of measured-against-simulated share: a validation scenario's measured
//! repeats (`validation/measured/<name>/r*/`), one run of the model written as a results
//! directory, and how medians, spreads and errors are printed.

use super::runs::Runs;
use std::path::{Path, PathBuf};

/// The scenario's name (its file stem) and its measured repeats, in order.
pub(super) fn repeats(scenario: &str) -> Result<(String, Vec<PathBuf>), String> {
    let path = Path::new(scenario);
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| format!("{scenario}: no file name"))?;
    let measured_dir = path.parent().unwrap_or(Path::new(".")).join("measured").join(name);
    let mut repeats: Vec<PathBuf> = std::fs::read_dir(&measured_dir)
        .map_err(|e| format!("{}: {e}", measured_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('r')))
        .collect();
    repeats.sort();
    if repeats.is_empty() {
        return Err(format!("{}: no measured repeat (r1, r2, ...)", measured_dir.display()));
    }
    Ok((name.to_string(), repeats))
}

/// Run the model on `scenario`, write its results directory in a temporary place, and give
/// `read` that directory (removed afterwards).
pub(super) fn simulated<T>(scenario: &str, runs: &Runs, read: impl FnOnce(&Path) -> Result<T, String>) -> Result<T, String> {
    let r = super::tables::simulate(scenario, runs)?;
    let name = Path::new(scenario)
        .file_stem()
        .map_or("run".into(), |s| s.to_string_lossy().into_owned());
    let dir = super::runs::scratch_dir(&format!("measured-{name}"));
    wblab_report::write_results_dir(&dir, &r, 0.0).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = read(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// A JSON file of a results directory.
pub(super) fn json(dir: &Path, file: &str) -> Result<serde_json::Value, String> {
    let p = dir.join(file);
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
}

/// The median of `v` and its spread, (max − min) / median.
pub(super) fn median_spread(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let m = v[v.len() / 2];
    let spread = if m > 0.0 { (v[v.len() - 1] - v[0]) / m } else { 0.0 };
    (m, spread)
}

pub(super) fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

/// The error of `sim` against `measured`, bold when inside `aim`.
pub(super) fn error(sim: f64, measured: f64, aim: Option<f64>) -> String {
    if measured <= 0.0 {
        return "–".to_string();
    }
    let e = sim / measured - 1.0;
    let s = format!("{:+.1} %", e * 100.0).replace('-', "−");
    match aim {
        Some(a) if e.abs() <= a => format!("**{s}**"),
        _ => s,
    }
}

/// Three significant figures below 100, two below 0.01 (timer-only commit rates).
pub(super) fn num(x: f64) -> String {
    if x > 0.0 && x < 0.01 {
        let decimals = (1.0 - x.log10().floor()) as usize;
        format!("{x:.decimals$}")
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_rates_keep_two_significant_figures() {
        assert_eq!(num(0.000071), "0.000071");
        assert_eq!(num(0.0031), "0.0031");
        assert_eq!(num(0.092), "0.092");
        assert_eq!(num(4215.4), "4215");
        assert_eq!(num(0.0), "0.000");
    }

    #[test]
    fn an_error_inside_its_aim_is_bold_and_no_measurement_has_none() {
        assert_eq!(error(1.1, 1.0, Some(0.2)), "**+10.0 %**");
        assert_eq!(error(0.5, 1.0, Some(0.2)), "−50.0 %");
        assert_eq!(error(0.5, 0.0, Some(0.2)), "–");
        assert_eq!(median_spread(vec![3.0, 1.0, 2.0]), (2.0, 1.0));
    }
}
