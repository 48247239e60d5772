//! `wblab run` of a file with a `[sweep]`: one results directory per value and a table.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

#[test]
fn sweep_runs_each_value_and_prints_a_table() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sweep");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.toml");
    fs::write(
        &file,
        r#"kernel = "2.5.38"
duration = "4s"
[[device]]
name = "hda"
queue_depth = 1
[sweep]
"queue/iosched/fifo_batch" = [64, 16]
[[task]]
name = "dd"
job = "dd"
[[task]]
name = "cat-c"
job = "launch"
files = 10
file_sizes = ["4KiB", "12KiB"]
start = "1s"
"#,
    )
    .unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_wblab"))
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--no-report", "-q"])
        .output()
        .expect("wblab runs");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("sweep of queue/iosched/fifo_batch (kernel 2.5.38)"), "{text}");
    assert!(text.contains("cat-c time s"), "{text}");
    for v in ["64", "16"] {
        assert!(text.lines().any(|l| l.trim_start().starts_with(v)), "{v}: {text}");
        let summary = fs::read_to_string(out.join(format!("fifo_batch={v}/summary.json"))).unwrap();
        assert!(summary.contains(&format!("\"fifo_batch\": {v}")), "{v}");
        assert!(summary.contains("deadline-2002"));
    }
    // `wblab check` accepts the file (every value is checked).
    let c = Command::new(env!("CARGO_BIN_EXE_wblab"))
        .args(["check", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
}
