//! Every device model and elevator reaches every tool through its own declaration: the
//! scenario parser, `wblab check`, `wblab device` and `wblab kernels`. The test-only elevator
//! and device model (registered by the `test-extensions` feature these tests build with)
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
