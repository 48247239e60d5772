//! `wblab kernels` and scenarios that list several kernels.

use crate::common::{scratch, wblab};
use std::fs;

#[test]
fn kernels_lists_every_generation_and_what_it_selects() {
    let out = wblab(&["kernels"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for g in ["2.4.7", "2.4.17", "2.6.20", "2.6.24", "2.6.32", "2.6.38", "3.2", "6.x"] {
        assert!(text.lines().any(|l| l.starts_with(g)), "{g} missing:\n{text}");
    }
    for piece in ["global", "per-bdi", "io-less", "pdflush", "pageout", "legacy", "10/40"] {
        assert!(text.contains(piece), "{piece} missing:\n{text}");
    }
    let json = wblab(&["kernels", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let gens = v["generations"].as_array().expect("array");
    assert!(gens.len() >= 8, "{}", gens.len());
    let throttle = |name: &str| gens.iter().find(|g| g["name"] == name).map(|g| g["policy"]["throttle"].clone());
    assert_eq!(throttle("2.6.20"), Some("global".into()));
    assert_eq!(throttle("2.4.17"), Some("bdflush".into()));
}

#[test]
fn a_scenario_with_two_kernels_runs_both_side_by_side() {
    let dir = scratch("two-kernels");
    let sc = dir.join("two.toml");
    fs::write(
        &sc,
        r#"# two kernels
name = "two"
kernel = ["2.6.20", "3.2"]
duration = "5s"
[machine]
memory = "1GiB"
[[task]]
name = "dd"
job = "dd"
count = 2
"#,
    )
    .expect("write scenario");
    let out_dir = dir.join("results");
    let out = wblab(&[
        "run",
        "--quiet",
        "--no-report",
        sc.to_str().expect("utf-8"),
        "--out",
        out_dir.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for k in ["2.6.20", "3.2"] {
        let summary = out_dir.join(k).join("summary.json");
        let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&summary).expect("summary.json")).expect("json");
        assert_eq!(v["scenario"]["kernel"], k);
        assert!(v["scenario"]["policy"]["throttle"].is_string());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("side by side"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("figure") && l.contains("2.6.20") && l.contains("3.2")),
        "{text}"
    );
    // `check` validates every kernel and reports the first; --json gives the resolved policy.
    let check = wblab(&["check", "--json", sc.to_str().expect("utf-8")]);
    let v: serde_json::Value = serde_json::from_slice(&check.stdout).expect("json");
    assert_eq!(v["policy"]["generation"], "2.6.20");
    assert_eq!(v["policy"]["flusher"], "pdflush");
}

/// The 2007 setup for 100 s: 2.6.20's firefox (started at 70 s) is still starting at the end,
/// 2.6.24's has finished. The side-by-side table shows the unfinished one as "-", not 0 ms.
#[test]
fn an_unfinished_launch_is_not_shown_as_instant() {
    let dir = scratch("2007-short");
    let src = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/2007-per-bdi.toml")).expect("scenario");
    let sc = dir.join("2007-per-bdi.toml");
    fs::write(&sc, src.replace("duration = \"240s\"", "duration = \"100s\"")).expect("write");
    let out_dir = dir.join("results");
    let out = wblab(&[
        "run",
        "--quiet",
        "--no-report",
        sc.to_str().expect("utf-8"),
        "--out",
        out_dir.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let row = |fig: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.starts_with("firefox") && l.contains(fig))
            .unwrap_or_else(|| panic!("no firefox {fig} row:\n{text}"));
        line.split_whitespace()
            .rev()
            .take(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()
    };
    assert_eq!(row("launch count"), ["0", "1"]);
    let mean = row("launch mean ms");
    assert_eq!(mean[0], "-", "{text}");
    assert!(mean[1].parse::<f64>().is_ok_and(|v| v > 0.0), "{text}");
}

/// A key the release lacks runs as asked and is named, by `check` as by `run`'s header.
#[test]
fn check_names_what_a_release_lacks() {
    let dir = scratch("what-if");
    let sc = dir.join("k49.toml");
    fs::write(
        &sc,
        "kernel = \"4.9\"\nduration = \"2s\"\n[[device]]\nname = \"sda\"\n\"queue/scheduler\" = \"mq-deadline\"\n[[task]]\nname = \"dd\"\njob = \"dd\"\n",
    )
    .expect("write");
    let o = wblab(&["check", sc.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("what-if: ") && l.contains("mq-deadline") && l.contains("4.11")),
        "{text}"
    );
    // A release that had it says nothing.
    fs::write(&sc, fs::read_to_string(&sc).unwrap().replace("4.9", "4.14")).expect("write");
    let o = wblab(&["check", sc.to_str().expect("utf-8")]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.lines().any(|l| l.starts_with("what-if:")), "{text}");
}
