//! Every shell block of the README and docs/ runs as pasted: in a scratch directory that sees
//! the repository's scenarios, each block's lines run in one `sh -e` in file order (README
//! first, so a later block finds the results an earlier one wrote), `wblab ...` and `cargo run
//! --release -- ...` being this build's binary. A block that cannot run here says why in a
//! `<!-- not run: REASON -->` line just above it; `scripts/test` (the suite this test belongs
//! to) is a stub that only says so.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use wblab_testkit::cli::{repo_root, scratch};

const BIN: &str = env!("CARGO_BIN_EXE_wblab");
const SKIP: &str = "<!-- not run:";

/// One fenced shell block: where it is, its text, and the reason it is not run, if any.
struct Block {
    at: String,
    text: String,
    skip: Option<String>,
}

/// The shell blocks (`sh`, `bash`, `shell`, `console`) of a Markdown file.
fn blocks(path: &Path, shown: &str) -> Vec<Block> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{shown}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        let lang = fence.strip_prefix("```").map(str::trim);
        match lang {
            Some("sh" | "bash" | "shell" | "console") => {
                let start = i;
                let mut body = Vec::new();
                i += 1;
                while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                    body.push(lines[i].strip_prefix("$ ").unwrap_or(lines[i]));
                    i += 1;
                }
                let skip = start
                    .checked_sub(1)
                    .and_then(|p| lines[p].trim().strip_prefix(SKIP))
                    .map(|r| r.trim_end_matches("-->").trim().to_string());
                out.push(Block {
                    at: format!("{shown}:{}", start + 1),
                    text: body.join("\n"),
                    skip,
                });
            }
            // Any other fence (toml, text, a table): skip to its end.
            Some(_) => {
                i += 1;
                while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                    i += 1;
                }
            }
            None => {}
        }
        i += 1;
    }
    out
}

/// The Markdown files a reader pastes from, README first.
fn documents(root: &Path) -> Vec<(PathBuf, String)> {
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    let mut all = vec![root.join("README.md")];
    all.extend(docs);
    all.push(root.join("scenarios/README.md"));
    all.into_iter()
        .filter(|p| p.is_file())
        .map(|p| {
            let shown = p.strip_prefix(root).unwrap_or(&p).display().to_string();
            (p, shown)
        })
        .collect()
}

/// What the blocks run in: `wblab` and `cargo run --release --` are this build's binary.
const PRELUDE: &str = r#"
wblab() { "$WBLAB_BIN" "$@"; }
cargo() {
    if [ "$1" = run ] && [ "$2" = --release ] && [ "$3" = -- ]; then shift 3; "$WBLAB_BIN" "$@"
    else echo "docs test: only \`cargo run --release -- ...\` is run here, not cargo $*" >&2; return 99; fi
}
"#;

#[test]
fn every_shell_block_of_the_docs_runs_as_pasted() {
    let root = repo_root();
    let dir = scratch(env!("CARGO_TARGET_TMPDIR"), "docs-shell");
    // The repository's inputs, read-only; what the blocks write lands here.
    for d in ["scenarios", "validation", "python"] {
        std::os::unix::fs::symlink(root.join(d), dir.join(d)).expect("symlink");
    }
    fs::create_dir_all(dir.join("scripts")).unwrap();
    let stub = dir.join("scripts/test");
    fs::write(&stub, "#!/bin/sh\necho 'scripts/test: the suite this test is part of'\n").unwrap();
    Command::new("chmod").arg("+x").arg(&stub).status().expect("chmod");

    let (mut ran, mut skipped) = (0, Vec::new());
    for (path, shown) in documents(&root) {
        for b in blocks(&path, &shown) {
            if let Some(reason) = &b.skip {
                assert!(reason.len() > 10, "{}: a block not run says why: `{reason}`", b.at);
                skipped.push(b.at.clone());
                continue;
            }
            let script = format!("{PRELUDE}\nset -e\n{}\n", b.text);
            let out = Command::new("sh")
                .arg("-c")
                .arg(&script)
                .current_dir(&dir)
                .env("WBLAB_BIN", BIN)
                .output()
                .expect("sh runs");
            assert!(
                out.status.success(),
                "{}: the block fails as pasted ({}):\n{}\n--- stderr:\n{}",
                b.at,
                out.status,
                b.text,
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        }
    }
    // The README's own commands are among those run, and the skips stay the exception.
    assert!(ran >= 8, "{ran} blocks ran");
    assert!(skipped.len() < ran, "{} blocks skipped: {skipped:?}", skipped.len());
    assert!(
        dir.join("results/default/summary.json").is_file(),
        "the README's run wrote its results"
    );
}

/// A block's skip marker must carry a reason, and the parser finds blocks and markers.
#[test]
fn blocks_and_their_markers_are_found() {
    let dir = scratch(env!("CARGO_TARGET_TMPDIR"), "docs-shell-parse");
    let md = dir.join("x.md");
    fs::write(
        &md,
        "text\n```sh\nwblab run\n```\n<!-- not run: needs root -->\n```bash\n$ sudo x\n```\n```toml\n[x]\n```\n",
    )
    .unwrap();
    let b = blocks(&md, "x.md");
    assert_eq!(b.len(), 2);
    assert_eq!(
        (b[0].at.as_str(), b[0].text.as_str(), b[0].skip.is_none()),
        ("x.md:2", "wblab run", true)
    );
    assert_eq!((b[1].text.as_str(), b[1].skip.as_deref()), ("sudo x", Some("needs root")));
}
