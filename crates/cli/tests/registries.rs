//! Every device model, elevator and sysctl reaches every tool through its own declaration:
//! the scenario parser, `wblab check`, `wblab device` and `wblab kernels`. The test-only
//! elevator, device model and sysctl (registered by the `test-extensions` feature these tests
//! build with)
//! stand for the next one someone adds: if a tool keeps its own list, they are missing from it
//! and this fails.

mod common;

use common::{scratch, wblab};
use std::fs;
use wblab_sim::block::sched::ELEVATORS;
use wblab_sim::drivers::MODELS;

fn check(dir: &std::path::Path, name: &str, text: &str) -> std::process::Output {
    let path = dir.join(format!("{name}.toml"));
    fs::write(&path, text).expect("write scenario");
    wblab(&["check", path.to_str().expect("utf-8 path")])
}

#[test]
fn every_model_reaches_the_parser_and_wblab_device() {
    let dir = scratch("registry-models");
    let list = wblab(&["device"]);
    assert!(list.status.success());
    let listed = String::from_utf8_lossy(&list.stdout);
    for m in MODELS {
        assert!(listed.contains(m.kind), "`wblab device` does not list {}", m.kind);
        let out = wblab(&["device", m.kind]);
        assert!(
            out.status.success(),
            "wblab device {}: {}",
            m.kind,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("DeviceFigures"), "a debug dump, not a table:\n{text}");
        // Every parameter is printed, and a scenario may set it to its default.
        let mut sc = format!("[[device]]\nmodel = \"{}\"\n", m.kind);
        let model = (m.default)();
        for k in (m.knobs)() {
            assert!(text.contains(k.key), "wblab device {} lacks {}", m.kind, k.key);
            let v = k.kind.show(model.get_knob(k.key).expect("readable"));
            if !v.starts_with('(') {
                sc.push_str(&format!("{} = {v}\n", k.key));
            }
        }
        let out = check(&dir, m.kind, &sc);
        assert!(out.status.success(), "{sc}\n{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn every_elevator_reaches_the_parser_and_wblab_kernels() {
    let dir = scratch("registry-elevators");
    let kernels = wblab(&["kernels"]);
    let text = String::from_utf8_lossy(&kernels.stdout);
    assert!(
        ELEVATORS.iter().any(|e| e.kind.name() == "noop-test"),
        "the test elevator is registered"
    );
    for e in ELEVATORS {
        assert!(text.contains(e.kind.name()), "`wblab kernels` does not list {}", e.kind.name());
        let mut sc = format!("[[device]]\nmodel = \"hdd\"\n\"queue/scheduler\" = \"{}\"\n", e.kind.name());
        let mut q = wblab_sim::config::blk_mq_queue(true, true, 32);
        q.select_elevator(e.kind);
        for t in e.tunables {
            assert!(text.contains(t.key.trim_start_matches("queue/iosched/")), "{}", t.key);
            sc.push_str(&format!("\"{}\" = {}\n", t.key, t.kind.show((t.get)(&q))));
        }
        let out = check(&dir, e.kind.name(), &sc);
        assert!(out.status.success(), "{sc}\n{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Every `[machine]` key of the table, the test-only one included, is accepted by `wblab check`
/// at a value of its typical range and refused above its range, naming the key; a misspelling
/// is answered with it.
#[test]
fn every_machine_key_reaches_the_parser_and_its_errors() {
    use wblab_sim::config::{KnobKind, MACHINE_KNOBS};
    let dir = scratch("registry-machine");
    assert!(
        MACHINE_KNOBS.iter().any(|k| k.knob.key == "test_machine_cost"),
        "the test machine key is registered"
    );
    for k in MACHINE_KNOBS {
        let (lo, hi) = k.typical;
        let mid = lo + (hi - lo) / 2;
        let (ok, high) = match k.knob.kind {
            KnobKind::Count { max, .. } => (mid.to_string(), Some((max + 1).to_string())),
            KnobKind::Size { max, .. } => (
                format!("\"{}KiB\"", (mid / 1024).next_power_of_two()),
                (max < u64::MAX / 2).then(|| format!("\"{}KiB\"", max / 1024 * 2)),
            ),
            KnobKind::Duration { max } => (format!("\"{mid}ns\""), Some(format!("\"{}ns\"", max + 1))),
            KnobKind::Rate => (format!("\"{}KiB/s\"", (mid / 1024).max(1)), None),
            KnobKind::Bool => ("true".to_string(), None),
            _ => continue,
        };
        // A 32-bit kernel's zones are modelled with the old reclaim only.
        let kernel = if k.knob.key == "highmem" { "kernel = \"3.2\"\n" } else { "" };
        let sc = format!("{kernel}[machine]\n{} = {ok}\n", k.knob.key);
        let out = check(&dir, "ok", &sc);
        assert!(out.status.success(), "{sc}\n{}", String::from_utf8_lossy(&out.stderr));
        if let Some(high) = high {
            let sc = format!("[machine]\n{} = {high}\n", k.knob.key);
            let out = check(&dir, "high", &sc);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success() && err.contains(k.knob.key), "{sc}\n{err}");
        }
    }
    let out = check(&dir, "typo", "[machine]\ntest_machine_cots = \"1us\"\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("did you mean `test_machine_cost`"), "{err}");
}

/// Every sysctl of the table, the test-only one included, is accepted by `wblab check` at a
/// value in its range and refused above it, naming the key; a misspelling is answered with it.
#[test]
fn every_sysctl_reaches_the_parser_and_its_errors() {
    use wblab_sim::config::{KnobKind, SYSCTLS};
    let dir = scratch("registry-sysctls");
    assert!(
        SYSCTLS.iter().any(|k| k.knob.key == "vm.test_sysctl"),
        "the test sysctl is registered"
    );
    for k in SYSCTLS {
        let (lo, hi) = k.typical;
        let v = lo + (hi - lo) / 2 + 8192;
        let v = if matches!(k.knob.kind, KnobKind::Count { .. }) {
            v.min(hi)
        } else {
            v
        };
        let sc = format!("[sysctl]\n\"{}\" = {v}\n", k.knob.key);
        let out = check(&dir, "ok", &sc);
        assert!(out.status.success(), "{sc}\n{}", String::from_utf8_lossy(&out.stderr));
        if let KnobKind::Count { max, .. } = k.knob.kind {
            let sc = format!("[sysctl]\n\"{}\" = {}\n", k.knob.key, max + 1);
            let out = check(&dir, "high", &sc);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success() && err.contains(k.knob.key), "{sc}\n{err}");
        }
    }
    let out = check(&dir, "typo", "[sysctl]\n\"vm.test_sysctk\" = 1\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("did you mean `vm.test_sysctl`"), "{err}");
}
