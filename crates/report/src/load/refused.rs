//! The device keys a kernel refused during `wblab measure`. `measure` sets each key the
//! scenario names and records what the kernel then shows (`machine.json`: `devices[].knobs`,
//! `wanted` and `effective`); a kernel built without an elevator refuses it and the device
//! keeps the one it had. Such a run measured another experiment than the scenario file says,
//! which `compare` points out and `validate` simulates as the kernel ran it.

use std::path::Path;

/// A device key the kernel did not take: on device `device`, the scenario's `key` (as in the
/// scenario file, `queue/scheduler`) asked for `wanted`, the kernel kept `effective`.
#[derive(Clone, Debug, PartialEq)]
pub struct Refused {
    pub device: String,
    pub key: String,
    pub wanted: String,
    pub effective: String,
}

/// The `queue/*` keys the kernel refused in the measured run at `dir` (none when it has no
/// `machine.json` or that records no knobs). An elevator's own tunables are left out: they go
/// with the elevator.
pub fn refused_in(dir: &Path) -> Vec<Refused> {
    let Some(machine) = super::machine_json(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in machine["devices"].as_array().into_iter().flatten() {
        let Some(device) = d["name"].as_str() else { continue };
        for k in d["knobs"].as_array().into_iter().flatten() {
            let field = |f: &str| k[f].as_str().map(str::to_string);
            let (Some(path), Some(wanted), Some(effective)) = (field("path"), field("wanted"), field("effective")) else {
                continue;
            };
            let Some(name) = path.rsplit_once("/queue/").map(|(_, n)| n).filter(|n| !n.contains('/')) else {
                continue;
            };
            if wanted != effective {
                out.push(Refused {
                    device: device.to_string(),
                    key: format!("queue/{name}"),
                    wanted,
                    effective,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusals_come_from_the_runs_knobs() {
        let dir = std::env::temp_dir().join(format!("wblab-refused-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("machine.json"),
            r#"{"devices": [{"name": "loop64", "knobs": [
                {"path": "/sys/block/loop64/queue/scheduler", "original": "none", "wanted": "bfq", "effective": "none"},
                {"path": "/sys/block/loop64/queue/read_ahead_kb", "original": "128", "wanted": "2560", "effective": "2560"},
                {"path": "/sys/block/loop64/queue/iosched/slice_idle", "original": null, "wanted": "8", "effective": null}
            ]}]}"#,
        )
        .unwrap();
        let want = Refused {
            device: "loop64".into(),
            key: "queue/scheduler".into(),
            wanted: "bfq".into(),
            effective: "none".into(),
        };
        assert_eq!(refused_in(&dir), vec![want]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(refused_in(&dir).is_empty());
    }
}
