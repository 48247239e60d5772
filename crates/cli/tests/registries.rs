//! Every device model, elevator and sysctl reaches every tool through its own declaration:
//! the scenario parser, `wblab check`, `wblab device` and `wblab kernels`. The test-only
//! elevator, device model and sysctl (registered by the `test-extensions` feature these tests
//! build with)
//! stand for the next one someone adds: if a tool keeps its own list, they are missing from it
//! and this fails.

use crate::common::{scratch, wblab};
use std::fs;
use wblab_sim::block::sched::ELEVATORS;
use wblab_sim::drivers::MODELS;

fn check(dir: &std::path::Path, name: &str, text: &str) -> std::process::Output {
    let path = dir.join(format!("{name}.toml"));
    fs::write(&path, text).expect("write scenario");
    wblab(&["check", path.to_str().expect("utf-8 path")])
}

/// `wblab check` accepts scenario `text`.
fn accepts(dir: &std::path::Path, text: &str) {
    let out = check(dir, "ok", text);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
}

/// `wblab check` refuses scenario `text` with an error that names `key`.
fn refuses_naming(dir: &std::path::Path, text: &str, key: &str) {
    let out = check(dir, "bad", text);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(key), "{text}\n{err}");
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
        accepts(&dir, &sc);
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
        accepts(&dir, &sc);
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
        accepts(&dir, &sc);
        if let Some(high) = high {
            let sc = format!("[machine]\n{} = {high}\n", k.knob.key);
            refuses_naming(&dir, &sc, k.knob.key);
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
        accepts(&dir, &sc);
        if let KnobKind::Count { max, .. } = k.knob.kind {
            let sc = format!("[sysctl]\n\"{}\" = {}\n", k.knob.key, max + 1);
            refuses_naming(&dir, &sc, k.knob.key);
        }
    }
    let out = check(&dir, "typo", "[sysctl]\n\"vm.test_sysctk\" = 1\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("did you mean `vm.test_sysctl`"), "{err}");
}

/// Every blk-throttle limit of the table is accepted as a device key and as a v1 cgroup file at
/// a value of its typical range, and refused as a device key when its value is malformed,
/// naming the key.
#[test]
fn every_throttle_limit_reaches_the_parser_and_its_errors() {
    use wblab_sim::config::THROTTLE_KNOBS;
    let dir = scratch("registry-throttle");
    for k in THROTTLE_KNOBS {
        let v = k.typical.1 / 2;
        let text = if k.is_iops() {
            v.to_string()
        } else {
            format!("\"{}KiB/s\"", v / 1024)
        };
        let sc = format!("[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n\"{}\" = {text}\n", k.knob.key);
        accepts(&dir, &sc);
        let sc = format!(
            "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n[[cgroup]]\npath = \"/g\"\n\"{}\" = \"sda {v}\"\n",
            k.v1_file
        );
        accepts(&dir, &sc);
        let sc = format!("[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n\"{}\" = \"fast\"\n", k.knob.key);
        refuses_naming(&dir, &sc, k.knob.key);
    }
}

/// Every cgroup file of the table is accepted at each value the fuzzer writes for it, the
/// other hierarchy's file beside it is refused naming both, and every refused file is named.
#[test]
fn every_cgroup_file_reaches_the_parser_and_its_errors() {
    use wblab_sim::config::{CgroupFuzz, CgroupVersion, CGROUP_FILES, CGROUP_FILES_REFUSED};
    let dir = scratch("registry-cgroup");
    let head = "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n\"queue/scheduler\" = \"bfq\"\n[[cgroup]]\npath = \"/g\"\n";
    for f in CGROUP_FILES {
        let values: Vec<String> = match f.fuzz {
            CgroupFuzz::Size { min, max } => vec![min.to_string(), max.to_string()],
            CgroupFuzz::DeviceLines(v) => v.iter().map(|x| format!("\"sda {x}\"")).collect(),
            CgroupFuzz::Raw(v) => v.iter().map(|x| x.to_string()).collect(),
        };
        for v in values {
            accepts(&dir, &format!("{head}\"{}\" = {v}\n", f.name));
        }
        let other = CGROUP_FILES.iter().find(|o| o.version != f.version).expect("both hierarchies");
        let mixed = format!("{head}\"{}\" = {}\n\"{}\" = \"max\"\n", f.name, "1", other.name);
        let out = check(&dir, "mixed", &mixed);
        let err = String::from_utf8_lossy(&out.stderr);
        let v1 = if f.version == CgroupVersion::V1 { f.name } else { other.name };
        assert!(!out.status.success() && err.contains(v1), "{mixed}\n{err}");
    }
    for r in CGROUP_FILES_REFUSED {
        refuses_naming(&dir, &format!("{head}\"{}\" = \"1\"\n", r.name), r.name);
    }
}

/// Every bdi file of the table is accepted as a device key at a value of its typical range and
/// refused above its range, naming the key.
#[test]
fn every_bdi_key_reaches_the_parser_and_its_errors() {
    use wblab_sim::config::{KnobKind, BDI_KNOBS};
    let dir = scratch("registry-bdi");
    for k in BDI_KNOBS {
        let mid = k.typical.0 + (k.typical.1 - k.typical.0) / 2;
        let (ok, high) = match k.knob.kind {
            KnobKind::Count { max, .. } => (mid.to_string(), Some((max + 1).to_string())),
            KnobKind::Size { .. } => (format!("\"{}MiB\"", mid >> 20), None),
            KnobKind::Bool => ("true".to_string(), Some("2".to_string())),
            _ => continue,
        };
        let dev = "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n";
        let sc = format!("{dev}\"{}\" = {ok}\n", k.knob.key);
        accepts(&dir, &sc);
        if let Some(high) = high {
            let sc = format!("{dev}\"{}\" = {high}\n", k.knob.key);
            refuses_naming(&dir, &sc, k.knob.key);
        }
    }
}

/// Every queue file of the table is accepted as a device key of an HDD at a value of its
/// typical range, and a malformed value is refused naming the key.
#[test]
fn every_queue_key_reaches_the_parser_and_its_errors() {
    use wblab_sim::config::{KnobKind, QUEUE_KNOBS};
    let dir = scratch("registry-queue");
    let dev = "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n";
    for k in QUEUE_KNOBS.iter().filter(|k| k.key != "queue/scheduler") {
        let ok = match k.kind {
            KnobKind::Bool => "true".to_string(),
            KnobKind::Word { words, .. } => format!("\"{}\"", words[0]),
            _ => (k.typical.0 + (k.typical.1 - k.typical.0) / 2).to_string(),
        };
        let sc = format!("{dev}\"{}\" = {ok}\n", k.key);
        accepts(&dir, &sc);
        let sc = format!("{dev}\"{}\" = \"lots\"\n", k.key);
        refuses_naming(&dir, &sc, k.key);
    }
}

/// Every job kind reaches the parser through its declaration: a key of no job is refused with
/// the kind's own keys as the hint, a key of another kind is named as such, a misspelt kind is
/// answered with its name; a scripted kind's keys (the test-only `checkpoint-test`'s) are
/// accepted at their defaults and refused above their range, naming the key.
#[test]
fn every_job_kind_reaches_the_parser_and_its_errors() {
    use wblab_sim::config::{KnobKind, KnobValue};
    use wblab_sim::jobs::JOBS;
    let dir = scratch("registry-jobs");
    assert!(JOBS.iter().any(|k| k.name == "checkpoint-test"), "the test job kind is registered");
    for k in JOBS.iter().filter(|k| k.name != "fio") {
        let sc = format!("[[task]]\nname = \"t\"\njob = \"{}\"\nnot_a_key = 1\n", k.name);
        let err = String::from_utf8_lossy(&check(&dir, "unknown", &sc).stderr).to_string();
        assert!(err.contains("not_a_key"), "{sc}\n{err}");
        for key in k.keys.names() {
            assert!(err.contains(key), "the hint for a `{}` task lacks its key {key}:\n{err}", k.name);
        }
        let Some(keys) = k.keys.declared() else {
            continue;
        };
        let mut sc = format!("[[task]]\nname = \"t\"\njob = \"{}\"\n", k.name);
        for key in keys.iter() {
            if let Some(d) = key.default {
                sc.push_str(&format!("{} = {}\n", key.key, key.kind.show(KnobValue::Uint(d))));
            }
        }
        accepts(&dir, &sc);
        for key in keys.iter() {
            let high = match key.kind {
                KnobKind::Size { max, .. } if max < u64::MAX / 2 => format!("\"{}KiB\"", max / 1024 * 2),
                KnobKind::Duration { max } if max < u64::MAX => format!("\"{}ns\"", max + 1),
                KnobKind::Count { max, .. } if max < u64::MAX => (max + 1).to_string(),
                _ => continue,
            };
            let sc = format!("[[task]]\nname = \"t\"\njob = \"{}\"\n{} = {high}\n", k.name, key.key);
            refuses_naming(&dir, &sc, key.key);
        }
    }
    let sc = "[[task]]\nname = \"t\"\njob = \"cat\"\nrate = \"1MB/s\"\n";
    let err = String::from_utf8_lossy(&check(&dir, "other", sc).stderr).to_string();
    assert!(err.contains("does not apply to job `cat`"), "{err}");
    let err = String::from_utf8_lossy(&check(&dir, "typo", "[[task]]\nname = \"t\"\njob = \"checkpoint-tst\"\n").stderr).to_string();
    assert!(err.contains("did you mean `checkpoint-test`"), "{err}");
}

/// The test-only scripted kind runs in the model, laws checked, as its script says: each round
/// appends `bytes`, fsyncs and reads one block back, then sleeps `interval`; every call but the
/// sleep is an operation in `ops.csv`, and a longer interval makes fewer rounds.
#[test]
fn a_scripted_job_runs_in_the_model_as_its_calls_say() {
    let dir = scratch("registry-job-run");
    let run = |interval: &str| {
        let sc = format!(
            "duration = \"3s\"\n[[device]]\nname = \"sda\"\nmodel = \"ssd\"\nfs = \"ext4\"\n\
             [[task]]\nname = \"ckpt\"\njob = \"checkpoint-test\"\nbs = \"256KiB\"\nbytes = \"1MiB\"\ninterval = \"{interval}\"\n"
        );
        let path = dir.join(format!("ckpt-{interval}.toml"));
        fs::write(&path, sc).expect("write scenario");
        let out_dir = dir.join(format!("out-{interval}"));
        let out = wblab(&[
            "run",
            path.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
            "--no-report",
            "-q",
            "--check",
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let summary: serde_json::Value = serde_json::from_str(&fs::read_to_string(out_dir.join("summary.json")).unwrap()).unwrap();
        let t = &summary["tasks"][0];
        let ops = t["op_latency_ms"]["count"].as_u64().unwrap();
        let (written, read) = (t["bytes_written"].as_u64().unwrap(), t["bytes_read"].as_u64().unwrap());
        let logged = fs::read_to_string(out_dir.join("ops.csv")).unwrap().lines().count() as u64 - 1;
        assert_eq!(logged, ops, "each operation is in ops.csv");
        (ops, written, read)
    };
    let (ops, written, read) = run("50ms");
    let block = 256 << 10;
    // One read-back of a block per round, after the round's four writes, a fsync between.
    let rounds = read / block;
    assert!(rounds >= 5 && read % block == 0, "{rounds} rounds, {read} bytes read");
    assert!(
        written >= rounds * (1 << 20) && written % block == 0,
        "{written} bytes written in {rounds} rounds"
    );
    assert!(ops >= rounds * 6 && ops < (rounds + 1) * 6, "{ops} operations in {rounds} rounds");
    let (slow_ops, ..) = run("400ms");
    assert!(slow_ops * 3 < ops, "interval 400ms: {slow_ops} operations, 50ms: {ops}");
}
