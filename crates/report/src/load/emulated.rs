//! The emulated devices of a measured run (`emulate = true`): how closely each kept its
//! model's times, from `machine.json` (`devices[].emulated.stats`), so that `compare` says
//! beside the figures how far the real kernel's disk was from the model's.

use std::path::Path;

/// One emulated device of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Emulated {
    pub device: String,
    pub model: String,
    /// Requests the model served during the workload.
    pub requests: u64,
    /// Of them, answered more than 100 µs after the model's time.
    pub late: u64,
    /// Of the late ones, those held by their data (the backing file slower than the model).
    pub late_by_data: u64,
    /// Their lateness in all, ns.
    pub late_ns: u64,
}

impl Emulated {
    /// "sda (emulated hdd): 6821 requests, 94.1 % answered on time (≤ 100 µs), late ones
    /// 1.2 ms late on average (27 held by the backing file)".
    pub fn describe(&self) -> String {
        let on_time = if self.requests > 0 {
            100.0 * (self.requests - self.late) as f64 / self.requests as f64
        } else {
            100.0
        };
        let mut s = format!(
            "{} (emulated {}): {} requests, {on_time:.1} % answered on time (within 100 µs of the model)",
            self.device, self.model, self.requests
        );
        if self.late > 0 {
            s += &format!(
                ", the late ones {:.2} ms late on average ({} held by the backing file)",
                self.late_ns as f64 / self.late as f64 / 1e6,
                self.late_by_data
            );
        }
        s
    }
}

/// The emulated devices of the measured run at `dir` (none without `machine.json`).
pub fn emulated_in(dir: &Path) -> Vec<Emulated> {
    let Some(machine) = super::machine_json(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in machine["devices"].as_array().into_iter().flatten() {
        let stats = &d["emulated"]["stats"];
        if !stats.is_object() {
            continue;
        }
        let sum = |k: &str| {
            ["read", "write", "flush"]
                .iter()
                .map(|op| stats[*op][k].as_u64().unwrap_or(0))
                .sum::<u64>()
        };
        out.push(Emulated {
            device: d["name"].as_str().unwrap_or("?").to_string(),
            model: d["model"].as_str().unwrap_or("?").to_string(),
            requests: sum("requests"),
            late: sum("late"),
            late_by_data: sum("late_by_data"),
            late_ns: sum("late_ns"),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emulated_device_is_read_and_described_and_a_plain_one_is_not() {
        let dir = std::env::temp_dir().join(format!("wblab-emulated-in-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("machine.json"),
            r#"{"devices": [
                {"name": "sda", "model": "hdd", "emulated": {"stats": {
                    "read": {"requests": 300, "late": 10, "late_ns": 20000000, "late_by_data": 0},
                    "write": {"requests": 700, "late": 40, "late_ns": 30000000, "late_by_data": 25},
                    "flush": {"requests": 0, "late": 0, "late_ns": 0, "late_by_data": 0}}}},
                {"name": "loop64", "model": "loop"}]}"#,
        )
        .unwrap();
        let e = emulated_in(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].requests, e[0].late, e[0].late_by_data), (1000, 50, 25));
        let text = e[0].describe();
        assert!(text.contains("95.0 % answered on time"), "{text}");
        assert!(text.contains("1.00 ms late on average (25 held"), "{text}");
        assert!(emulated_in(Path::new("/nonexistent")).is_empty());
    }
}
