//! The corpus of broken scenarios in `tests/bad/`: each must fail with the error its header
//! comments announce, at the right line, naming the file, the key and a hint.
//!
//! Header comments: `# expect: <substring of the message>`, `# expect-line: <N>`, and optionally
//! `# expect-key: <key>` and `# expect-hint: <substring of the hint>`.

use std::path::{Path, PathBuf};
use wblab_scenario::{load, ScenarioError};

struct Expectation {
    message: String,
    line: usize,
    key: Option<String>,
    hint: Option<String>,
}

fn expectation(path: &Path) -> Expectation {
    let text = std::fs::read_to_string(path).unwrap();
    let field = |name: &str| {
        text.lines()
            .take_while(|l| l.starts_with('#'))
            .find_map(|l| l.strip_prefix(&format!("# {name}: ")))
            .map(str::to_string)
    };
    let message = field("expect").unwrap_or_else(|| panic!("{}: no `# expect:` line", path.display()));
    assert!(
        text.starts_with("# expect: "),
        "{}: `# expect:` must be the first line",
        path.display()
    );
    let line = field("expect-line")
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("{}: no `# expect-line:`", path.display()));
    Expectation {
        message,
        line,
        key: field("expect-key"),
        hint: field("expect-hint"),
    }
}

fn bad_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

fn check(path: &Path, want: &Expectation, e: &ScenarioError) -> Result<(), String> {
    let file = path.display().to_string();
    let shown = e.to_string();
    let mut wrong = Vec::new();
    if !e.message.contains(&want.message) {
        wrong.push(format!("message lacks `{}`", want.message));
    }
    if e.file != file || !shown.contains(&format!("{file}:{}:", e.line)) {
        wrong.push("does not name the file and line".to_string());
    }
    if e.line != want.line {
        wrong.push(format!("line {} instead of {}", e.line, want.line));
    }
    if let Some(key) = &want.key {
        if e.key.as_deref() != Some(key.as_str()) || !shown.contains(&format!("key `{key}`")) {
            wrong.push(format!("key {:?} instead of `{key}`", e.key));
        }
    }
    if let Some(hint) = &want.hint {
        if !e.hint.as_deref().is_some_and(|h| h.contains(hint.as_str())) || !shown.contains("\n  hint: ") {
            wrong.push(format!("hint {:?} lacks `{hint}`", e.hint));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {}\n{shown}", path.display(), wrong.join("; ")))
    }
}

#[test]
fn every_bad_scenario_fails_as_announced() {
    let files = bad_files();
    assert!(files.len() >= 24, "only {} bad scenarios", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let want = expectation(path);
        match load(path) {
            Ok(_) => failures.push(format!("{}: parsed without error", path.display())),
            Err(e) => {
                if let Err(msg) = check(path, &want, &e) {
                    failures.push(msg);
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} bad scenarios:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

#[test]
fn typos_get_a_did_you_mean() {
    let typos = [
        "sysctl-typo",
        "unknown-top-level-key",
        "scheduler-typo",
        "unknown-model-typo",
        "unknown-job",
        "task-key-typo",
        "unknown-model-raid",
        "raid0-member-model-typo",
    ];
    for name in typos {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/bad/{name}.toml"));
        let e = load(&path).unwrap_err();
        assert!(e.hint.as_deref().is_some_and(|h| h.starts_with("did you mean `")), "{name}: {e}");
    }
}

#[test]
fn unreadable_file_is_named() {
    let e = load(Path::new("no/such/scenario.toml")).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("no/such/scenario.toml", 0));
    assert!(e
        .to_string()
        .starts_with("error: no/such/scenario.toml: cannot read the scenario file"));
}

#[test]
fn display_matches_the_documented_shape() {
    let e = wblab_scenario::parse("[sysctl]\n\"vm.dirty_ratoi\" = 20\n", "scenarios/x.toml").unwrap_err();
    assert_eq!(
        e.to_string(),
        "error: scenarios/x.toml:2:1: key `vm.dirty_ratoi`: unknown sysctl\n  hint: did you mean `vm.dirty_ratio`?"
    );
}

/// Independent mistakes are reported together, in file order, each with its own line; a
/// mistake that later checks depend on (the devices) does not bury the others.
#[test]
fn every_independent_mistake_is_reported_at_once() {
    let text = "\
duration = \"10 parsecs\"
[sysctl]
vm.dirty_ratoi = 20
[[device]]
name = \"sda\"
rpm = 0
[[task]]
name = \"w\"
job = \"dd\"
bs = \"-1\"
[[task]]
name = \"r\"
job = \"cat\"
file_sise = \"1GiB\"
";
    let e = wblab_scenario::parse(text, "three.toml").expect_err("refused");
    let all: Vec<&ScenarioError> = std::iter::once(&e).chain(e.more.iter()).collect();
    let lines: Vec<usize> = all.iter().map(|e| e.line).collect();
    let keys: Vec<Option<&str>> = all.iter().map(|e| e.key.as_deref()).collect();
    assert_eq!(lines, [1, 3, 6, 10, 14], "{e}");
    assert_eq!(
        keys,
        [Some("duration"), Some("vm.dirty_ratoi"), Some("rpm"), Some("bs"), Some("file_sise")],
        "{e}"
    );
    let shown = e.to_string();
    assert!(shown.ends_with("5 errors in three.toml"), "{shown}");
    // With the device fixed, the tasks are placed too; their mistakes are the same.
    let fixed = text.replace("rpm = 0", "rpm = 7200");
    let e = wblab_scenario::parse(&fixed, "three.toml").expect_err("refused");
    let lines: Vec<usize> = std::iter::once(&e).chain(e.more.iter()).map(|e| e.line).collect();
    assert_eq!(lines, [1, 3, 10, 14], "{e}");
}

/// Lines and keys of every error `e` carries, in order.
fn located(e: &ScenarioError) -> Vec<(usize, Option<String>)> {
    std::iter::once(e).chain(e.more.iter()).map(|e| (e.line, e.key.clone())).collect()
}

/// Ten independent mistakes, one per line, in every part of a scenario — an unknown top-level
/// key, `[machine]`, several in `[sysctl]`, a device's model and queue, a task's keys and
/// values — are ten errors of one run, each at its own line and key.
#[test]
fn ten_mistakes_in_a_scenario_are_ten_errors() {
    let text = "\
name = \"ten\"
duraton = \"10s\"
[machine]
cpus = \"two\"
[sysctl]
\"vm.dirty_ratoi\" = 20
\"vm.dirty_background_ratio\" = \"ten\"
\"vm.dirty_expire_centisecs\" = -5
[[device]]
name = \"sda\"
model = \"hdd\"
\"queue/nr_requests\" = 0
\"queue/write_cache\" = \"write sometimes\"
[[task]]
name = \"dd\"
job = \"dd\"
file = \"/mnt/sda/big{n}\"
cuont = 4
[[task]]
name = \"r\"
job = \"kat\"
start = \"soon\"
";
    let e = wblab_scenario::parse(text, "ten.toml").expect_err("refused");
    let want: Vec<(usize, Option<String>)> = [
        (2, "duraton"),
        (4, "cpus"),
        (6, "vm.dirty_ratoi"),
        (7, "vm.dirty_background_ratio"),
        (8, "vm.dirty_expire_centisecs"),
        (12, "queue/nr_requests"),
        (13, "queue/write_cache"),
        (18, "cuont"),
        (21, "job"),
        (22, "start"),
    ]
    .iter()
    .map(|&(l, k)| (l, Some(k.to_string())))
    .collect();
    assert_eq!(located(&e), want, "{e}");
    assert!(e.to_string().ends_with("10 errors in ten.toml"), "{e}");
}

/// A job file's mistakes are all reported at once too, each at its own line (a size with a
/// bad unit at the option's line, not the section's), an option of `[global]` once.
#[test]
fn ten_mistakes_in_a_job_file_are_ten_errors() {
    let text = "\
[global]
ioengine=libiao
bs=4kx
[a]
rw=randwrit
iodepth=-1
size=1Gq
direct=2
runtime=abc
[b]
rw=read
size=1g
numjobs=0
zonemode_typo=zbd
fsync=x
";
    let e = wblab_scenario::fio_scenario(text, "ten.fio").expect_err("refused");
    let lines: Vec<usize> = located(&e).iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [2, 3, 5, 6, 7, 8, 9, 13, 14, 15], "{e}");
    assert!(e.to_string().ends_with("10 errors in ten.fio"), "{e}");
    assert!(e.to_string().contains("did you mean `libaio`?"), "{e}");
    assert!(e.to_string().contains("did you mean `randwrite`?"), "{e}");
}
