//! `wblab validate`: the committed generated cases (`validation/generated/`) are what the
//! generator makes, their grades are what today's model gives against their measurements, and
//! the summary in docs/validation.md is theirs (the docs test checks that last part).

use crate::common::{repo_root, scratch, wblab};
use std::fs;
use std::path::Path;

const GENERATED: &str = "validation/generated";

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// A sample of the committed cases, re-simulated and re-graded from their committed
/// measurements without measuring: the same case file and the same grades. A model change
/// that moves a figure fails here until `wblab validate --no-measure` regrades the set (and
/// `wblab docs --write` its summary).
#[test]
fn committed_grades_are_todays_model() {
    let root = repo_root();
    let out = scratch("validate-regrade");
    let mut checked = 0;
    for k in (0..100).step_by(20) {
        let name = format!("g{k:03}");
        let case = root.join(GENERATED).join(&name);
        if !case.join("score.json").exists() {
            continue;
        }
        copy_dir(&case.join("measured"), &out.join(&name).join("measured"));
        let first = k.to_string();
        let o = wblab(&[
            "validate",
            "--first",
            &first,
            "--cases",
            "1",
            "--no-measure",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let read = |p: &Path| fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(
            read(&out.join(&name).join("case.toml")),
            read(&case.join("case.toml")),
            "{name}: the generator changed"
        );
        let now: serde_json::Value = serde_json::from_str(&read(&out.join(&name).join("score.json"))).unwrap();
        let committed: serde_json::Value = serde_json::from_str(&read(&case.join("score.json"))).unwrap();
        assert_eq!(
            now, committed,
            "{name}: the model's grades changed; regrade with `wblab validate --no-measure`"
        );
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} committed cases with grades under {GENERATED}");
}

/// `--print N` is case N's file, and a case that was never measured is said to be so under
/// `--no-measure` rather than graded.
#[test]
fn print_and_unmeasured_cases() {
    let o = wblab(&["validate", "--print", "7"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("name = \"g007\"") && text.contains("[[device]]"), "{text}");
    let out = scratch("validate-unmeasured");
    let o = wblab(&["validate", "--cases", "1", "--no-measure", "--out", out.to_str().unwrap()]);
    assert!(o.status.success());
    let err = fs::read_to_string(out.join("g000").join("error.txt")).unwrap();
    assert!(err.contains("not measured"), "{err}");
    assert!(!out.join("g000").join("score.json").exists());
    let summary = fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("0 cases"), "{summary}");
}
