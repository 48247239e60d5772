//! The case as the kernel ran it. `measure` sets each device key the case names and records
//! what the kernel then shows (`machine.json`: `devices[].knobs`, `wanted` and `effective`);
//! a kernel built without an elevator refuses it and the device keeps the one it had (the
//! lab's 6.18 lost BFQ between two builds: the cases measured on the later one ran `none`).
//! Grading the model's BFQ against a kernel that ran `none` grades nothing, so the case is
//! simulated with the value the kernel kept, and the header of its `sim-r<k>.toml` says so.

pub use wblab_report::load::refused::{refused_in, Refused};

/// `case` with each refused key the case itself sets given the value the kernel kept; the
/// keys it rewrote.
pub fn as_run(case: &str, refused: &[Refused]) -> (String, Vec<Refused>) {
    let mut out = String::with_capacity(case.len());
    let mut applied = Vec::new();
    let mut device: Option<String> = None;
    for line in case.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            device = None;
        } else if let Some(v) = t.strip_prefix("name = ") {
            device = Some(v.trim_matches('"').to_string());
        }
        let key = t.split_once('=').map(|(k, _)| k.trim().trim_matches('"'));
        let hit = refused
            .iter()
            .find(|r| Some(r.key.as_str()) == key && device.as_deref() == Some(r.device.as_str()));
        match hit {
            Some(r) => {
                let value = if r.effective.parse::<u64>().is_ok() {
                    r.effective.clone()
                } else {
                    format!("\"{}\"", r.effective)
                };
                out.push_str(&format!("\"{}\" = {value}\n", r.key));
                applied.push(r.clone());
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    (out, applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CASE: &str = "name = \"g\"\n[[device]]\nname = \"loop64\"\nmodel = \"loop\"\nsize = \"8GiB\"\n\"queue/scheduler\" = \"bfq\"\n\n[[task]]\nname = \"dd0\"\njob = \"dd\"\nfile = \"/mnt/loop64/x\"\nsize = \"64MiB\"\n";

    fn refusal(key: &str, wanted: &str, effective: &str) -> Refused {
        Refused {
            device: "loop64".into(),
            key: key.into(),
            wanted: wanted.into(),
            effective: effective.into(),
        }
    }

    /// A kernel without BFQ kept `none`: the case is simulated with `none`; a key the case
    /// does not set (the harness's own `nr_requests`) is left to the model.
    #[test]
    fn a_refused_elevator_is_simulated_as_the_kernel_kept_it() {
        let refused = [
            refusal("queue/scheduler", "bfq", "none"),
            refusal("queue/nr_requests", "256", "128"),
        ];
        let (text, applied) = as_run(CASE, &refused);
        assert_eq!(applied, vec![refused[0].clone()]);
        let sc = wblab_scenario::parse(&text, "sim.toml").map_err(|e| e.to_string()).unwrap();
        assert_eq!(sc.devices[0].queue.scheduler, wblab_sim::config::SchedulerKind::NONE, "{text}");
        let (same, none) = as_run(CASE, &[]);
        assert_eq!((same.as_str(), none.len()), (CASE, 0));
    }
}
