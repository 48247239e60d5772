//! A guard on the simulator's speed that our shared, noisy machines cannot fool: the
//! instructions two fixed `wblab run`s execute, as callgrind counts them (the same for a given
//! binary from run to run, to a few thousandths of a percent), against the counts committed
//! in `data/instructions.json`. A change that costs more than [`TOLERANCE_PCT`] fails here
//! instead of landing unseen; one that saves more than [`RECORD_GAIN_PCT`] must record the
//! new counts, so the guard stays tight.
//!
//! After an intended change (or a new compiler): `WBLAB_UPDATE_INSTRUCTIONS=1 cargo test -p
//! wblab --test integration speed_guard::` rewrites the file; commit it with the numbers in the message.
//! Skipped with a note where valgrind is not installed (`.ci/run` installs it).

use crate::common::{repo_root, scratch};
use std::path::Path;
use std::process::Command;

/// Allowed growth of a count over its baseline, percent.
const TOLERANCE_PCT: f64 = 3.0;
/// A count this far under its baseline must be recorded, percent.
const RECORD_GAIN_PCT: f64 = 10.0;

/// The 1000-writer SSD bench of docs/benchmarks.md, shortened: the engine's hot path.
const WRITERS_1000: &str = "name = \"guard-1000dd\"\nduration = \"20s\"\n[machine]\nmemory = \"64GiB\"\n\
                            [[device]]\nmodel = \"ssd\"\n[[task]]\nname = \"dd\"\njob = \"dd\"\ncount = 1000\n";

/// Instructions `wblab run -q --no-report SCENARIO` executes, or `None` without valgrind.
fn instructions(scenario: &Path, out: &Path) -> Option<u64> {
    let o = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(env!("CARGO_BIN_EXE_wblab"))
        .args(["run", "-q", "--no-report"])
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .output()
        .ok()?;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find_map(|l| l.split("Collected : ").nth(1))
        .unwrap_or_else(|| panic!("no count in:\n{err}"));
    Some(line.trim().parse().expect("a count"))
}

#[test]
fn the_simulations_cost_no_more_instructions_than_recorded() {
    let dir = scratch("speed-guard");
    let bench = dir.join("1000dd.toml");
    std::fs::write(&bench, WRITERS_1000).unwrap();
    let cases = [("default", repo_root().join("scenarios/default.toml")), ("1000dd-ssd-20s", bench)];
    let mut counts = serde_json::Map::new();
    for (name, sc) in &cases {
        let Some(n) = instructions(sc, &dir.join(name)) else {
            eprintln!("note: valgrind not found; the instruction-count guard is skipped");
            return;
        };
        counts.insert(name.to_string(), n.into());
    }
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/instructions.json");
    if std::env::var_os("WBLAB_UPDATE_INSTRUCTIONS").is_some_and(|v| v == "1") {
        let text = serde_json::to_string_pretty(&serde_json::Value::Object(counts)).unwrap() + "\n";
        std::fs::write(&file, text).unwrap();
        return;
    }
    let base: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let mut problems = Vec::new();
    for (name, n) in &counts {
        let n = n.as_u64().unwrap();
        let b = base[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{}: no baseline for {name}", file.display()));
        let change = (n as f64 / b as f64 - 1.0) * 100.0;
        eprintln!("{name}: {n} instructions, {change:+.2} % against {b}");
        if change > TOLERANCE_PCT {
            problems.push(format!(
                "{name}: {n} instructions, {change:+.1} % over the recorded {b} (allowed {TOLERANCE_PCT} %): \
                 find the cost with `valgrind --tool=callgrind` and callgrind_annotate"
            ));
        } else if change < -RECORD_GAIN_PCT {
            problems.push(format!(
                "{name}: {n} instructions, {change:+.1} % under the recorded {b}: record the gain"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n  hint: an intended change records new counts with WBLAB_UPDATE_INSTRUCTIONS=1 cargo test -p wblab --test integration speed_guard::",
        problems.join("\n")
    );
}
