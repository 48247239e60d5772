//! The reference tables of the docs are generated from the code: the repository's docs must be
//! what this build generates, and `wblab docs` must catch and repair a stale block.

use std::fs;
use std::process::Command;
use wblab_testkit::cli::{repo_root, run, scratch};

const BIN: &str = env!("CARGO_BIN_EXE_wblab");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_repository_docs_are_what_the_code_generates() {
    let out = Command::new(BIN).arg("docs").current_dir(repo_root()).output().expect("wblab runs");
    assert!(
        out.status.success(),
        "the docs drifted from the code:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // The lock must speak for every simulated block, or this test (and CI) simulates them all.
    assert!(
        !text(&out.stdout).contains("does not record their inputs"),
        "{}\n  hint: `wblab docs --write` at the repository's root records them in docs/generated.lock",
        text(&out.stdout)
    );
}

/// `wblab docs ARGS` in the checkout `dir`.
fn docs_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("docs")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("wblab runs")
}

#[test]
fn a_simulated_block_is_taken_from_the_lock_only_while_its_inputs_and_body_stand() {
    // A checkout of its own: a README with a simulated block, its scenario, and docs/.
    let dir = scratch(env!("CARGO_TARGET_TMPDIR"), "docs-lock");
    fs::create_dir_all(dir.join("scenarios")).unwrap();
    fs::create_dir_all(dir.join("docs")).unwrap();
    let scenario = "name = \"tiny\"\nduration = \"2s\"\n[[device]]\nname = \"sda\"\nmodel = \"ssd\"\n\
                    [[task]]\nname = \"dd\"\njob = \"dd\"\nbs = \"1MiB\"\n";
    fs::write(dir.join("scenarios/tiny.toml"), scenario).unwrap();
    fs::write(
        dir.join("README.md"),
        "# tiny\n\n<!-- wblab:run scenarios/tiny.toml -->\n<!-- /wblab -->\n",
    )
    .unwrap();
    let taken = |o: &std::process::Output| text(&o.stdout).contains("1 simulated blocks taken as current");

    let write = docs_in(&dir, &["--write"]);
    assert!(write.status.success(), "{}{}", text(&write.stdout), text(&write.stderr));
    assert!(!taken(&write), "nothing is recorded yet: {}", text(&write.stdout));
    let lock = fs::read_to_string(dir.join("docs/generated.lock")).expect("--write records the block");
    assert!(lock.contains("block = \"run scenarios/tiny.toml\""), "{lock}");
    let written = fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(written.contains("dd#0"), "the block holds the run's table: {written}");

    let check = docs_in(&dir, &[]);
    assert!(check.status.success() && taken(&check), "{}", text(&check.stdout));
    let forced = docs_in(&dir, &["--no-cache"]);
    assert!(
        forced.status.success() && !taken(&forced),
        "--no-cache simulates: {}",
        text(&forced.stdout)
    );

    // A body edited by hand is generated again, and is stale.
    let edited = written.replacen("dd#0", "dd#9", 1);
    assert_ne!(edited, written);
    fs::write(dir.join("README.md"), &edited).unwrap();
    let check = docs_in(&dir, &[]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check.stdout));
    assert!(!taken(&check));
    fs::write(dir.join("README.md"), &written).unwrap();
    assert!(taken(&docs_in(&dir, &[])));

    // A changed scenario changes the inputs: the block is simulated again and found stale.
    fs::write(dir.join("scenarios/tiny.toml"), scenario.replace("2s", "3s")).unwrap();
    let check = docs_in(&dir, &[]);
    assert_eq!(check.status.code(), Some(1), "{}{}", text(&check.stdout), text(&check.stderr));
    assert!(!taken(&check));
    // ... while a change that leaves the table as it was passes, and says the lock is behind.
    fs::write(dir.join("scenarios/tiny.toml"), format!("# a comment\n{scenario}")).unwrap();
    let check = docs_in(&dir, &[]);
    assert!(check.status.success(), "{}{}", text(&check.stdout), text(&check.stderr));
    assert!(
        !taken(&check) && text(&check.stdout).contains("does not record their inputs"),
        "{}",
        text(&check.stdout)
    );

    // A broken lock is an error naming it.
    fs::write(dir.join("docs/generated.lock"), "[[block]]\nfile = 1\n").unwrap();
    let check = docs_in(&dir, &[]);
    assert_eq!(check.status.code(), Some(2));
    assert!(text(&check.stderr).contains("docs/generated.lock:2"), "{}", text(&check.stderr));
}

#[test]
fn a_stale_block_is_reported_then_regenerated() {
    let dir = scratch(env!("CARGO_TARGET_TMPDIR"), "docs-stale");
    let f = dir.join("ref.md");
    let doc = "# Devices\n\nhand-written prose\n<!-- wblab:device-keys hdd -->\n| key |\n|---|\n| `rpm` |\n<!-- /wblab -->\nmore prose\n";
    fs::write(&f, doc).unwrap();
    let p = f.to_str().unwrap();

    let check = run(BIN, &["docs", p]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("line 4: device-keys hdd"), "{}", text(&check.stdout));
    assert_eq!(fs::read_to_string(&f).unwrap(), doc, "--check must not write");

    let write = run(BIN, &["docs", "--write", p]);
    assert!(write.status.success(), "{}", text(&write.stderr));
    let new = fs::read_to_string(&f).unwrap();
    assert!(new.starts_with("# Devices\n\nhand-written prose\n<!-- wblab:device-keys hdd -->\n"));
    assert!(new.ends_with("<!-- /wblab -->\nmore prose\n"), "prose around the block is kept");
    // Every hdd parameter `wblab device hdd` shows is in the table, with the default it shows.
    let device = text(&run(BIN, &["device", "hdd"]).stdout);
    let params = device.split("parameters").nth(1).unwrap().split("\n\n").next().unwrap();
    for line in params.lines().skip(1) {
        let mut words = line.split_whitespace();
        let (key, default) = (words.next().unwrap(), words.next().unwrap());
        assert!(new.contains(&format!("| `{key}` |")), "{key} missing:\n{new}");
        assert!(
            new.contains(&format!("| `{default}` |")),
            "{key}'s default {default} missing:\n{new}"
        );
    }
    assert!(run(BIN, &["docs", p]).status.success(), "regenerated docs are current");
}

#[test]
fn test_only_extensions_never_reach_the_docs() {
    // Test builds register a `noop-test` elevator and a `testnull` device model.
    let dir = scratch(env!("CARGO_TARGET_TMPDIR"), "docs-shipped");
    let f = dir.join("ref.md");
    fs::write(
        &f,
        "<!-- wblab:device-models -->\n<!-- /wblab -->\n<!-- wblab:elevators -->\n<!-- /wblab -->\n",
    )
    .unwrap();
    assert!(run(BIN, &["docs", "--write", f.to_str().unwrap()]).status.success());
    let new = fs::read_to_string(&f).unwrap();
    assert!(new.contains("`hdd`") && new.contains("`mq-deadline`"), "{new}");
    assert!(!new.contains("testnull") && !new.contains("noop-test"), "{new}");
    let listed = text(&run(BIN, &["device"]).stdout);
    assert!(listed.contains("testnull"), "the test build does register the test model");
}

#[test]
fn bad_markers_name_the_file_and_line() {
    let dir = scratch(env!("CARGO_TARGET_TMPDIR"), "docs-bad");
    for (doc, line, says) in [
        (
            "a\n<!-- wblab:device-keys floppy -->\n<!-- /wblab -->\n",
            2,
            "unknown device model `floppy`",
        ),
        ("a\nb\n<!-- wblab:plots -->\n<!-- /wblab -->\n", 3, "unknown generator `plots`"),
        ("<!-- wblab:elevators -->\nno end\n", 1, "never closed"),
        ("<!-- wblab:elevators x -->\n<!-- /wblab -->\n", 1, "takes no arguments"),
    ] {
        let f = dir.join("bad.md");
        fs::write(&f, doc).unwrap();
        let out = run(BIN, &["docs", "--write", f.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("bad.md:{line}: ")) && err.contains(says), "{err}");
        assert_eq!(fs::read_to_string(&f).unwrap(), doc, "nothing written on an error");
    }
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut a: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| slug(l.trim_start_matches('#')))
        .collect();
    for part in text.split("<a id=\"").skip(1) {
        a.push(part.split('"').next().unwrap_or_default().to_string());
    }
    a
}

/// Every relative link of the docs reaches a file of the repository, and its anchor a heading
/// there; nothing points at notes outside the repository.
#[test]
fn every_link_of_the_docs_resolves() {
    let root = repo_root();
    let mut files = vec![root.join("README.md"), root.join("scenarios/README.md")];
    for dir in ["docs", "validation"] {
        for e in fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    let mut broken = Vec::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        for bad in [
            "realkernel.md",
            "modern-writeback.md",
            "historical.md",
            "today.md",
            "anchors-and-conventions",
            "ARCHITECTURE.md",
            "../shared",
        ] {
            if text.contains(bad) {
                broken.push(format!("{}: mentions `{bad}`, which is not in this repository", f.display()));
            }
        }
        for part in text.split("](").skip(1) {
            let target = part.split(')').next().unwrap_or_default();
            if target.starts_with("http") || target.contains(' ') {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let dest = if path.is_empty() {
                f.clone()
            } else {
                f.parent().unwrap().join(path)
            };
            let Ok(dest_text) = fs::read_to_string(&dest).or_else(|e| if dest.is_dir() { Ok(String::new()) } else { Err(e) }) else {
                broken.push(format!("{}: `{target}`: no such file", f.display()));
                continue;
            };
            if !anchor.is_empty() && !anchors(&dest_text).iter().any(|a| a == anchor) {
                broken.push(format!("{}: `{target}`: no such heading", f.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The reports' tables in scenarios/README.md (regenerated from `wblab reproduce` by the docs
/// drift test) hold the bar the model is held to: at least 75 of the reports' figures, at least
/// 85 % of them within 2× of the report with the direction of a change right.
#[test]
fn the_report_tables_hold_most_figures_within_two_times() {
    let readme = fs::read_to_string(repo_root().join("scenarios/README.md")).unwrap();
    let (mut figures, mut within) = (0, 0);
    let mut in_table = false;
    for line in readme.lines() {
        if line.starts_with("<!-- wblab:reproduce ") {
            in_table = true;
        } else if line.starts_with("<!-- /wblab") {
            in_table = false;
        } else if in_table && line.starts_with("| ") && !line.starts_with("| figure |") {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            let mark = cells.get(5).copied().unwrap_or_default();
            figures += 1;
            within += usize::from(mark.starts_with('✓'));
        }
    }
    assert!(figures >= 75, "{figures} report figures in the tables");
    assert!(
        within * 100 >= figures * 85,
        "{within} of {figures} report figures within 2× with the direction right"
    );
}

/// Every figure of the founding reports that misses (the tables `wblab reproduce` writes into
/// scenarios/README.md) says which mechanism of the real system the model still lacks.
#[test]
fn every_missed_report_figure_names_what_is_missing() {
    let readme = fs::read_to_string(repo_root().join("scenarios/README.md")).unwrap();
    let rows: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with('|') && (l.contains('✓') || l.contains('✗')))
        .collect();
    assert!(!rows.is_empty(), "no report table found: was the table's format changed?");
    for line in rows.iter().filter(|l| l.contains('✗')) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
        let missing = cells.last().map_or("", |c| c.trim());
        assert!(missing.len() > 20, "a miss without its mechanism: {line}");
    }
}
