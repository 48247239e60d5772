//! Which simulated blocks a check can trust without simulating them again.
//!
//! The blocks that run simulations (`reproduce`, `outcome`, `run`, ...) take minutes, and
//! depend on nothing but the code and the repository's scenario and validation files. `wblab
//! docs --write` records, in `docs/generated.lock`, a digest of those inputs for each such block
//! and a digest of the body it wrote; a later run takes a block whose inputs and body both match
//! as current. Anything else — a changed line of the simulator, a scenario, a measured case, a
//! body edited by hand, a block the lock does not know — is generated again, as before.

use super::file_digest::{digest, files_under};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use twox_hash::XxHash3_128;

/// Generators that simulate: the only ones worth trusting to a digest.
pub const SIMULATING: &[&str] = &[
    "run",
    "outcome",
    "sweep",
    "reproduce",
    "reproduce-long",
    "validate-summary",
    "fio-syncs",
    "emulated-devices",
    "stem",
    "timeline",
    "btt",
];

/// Where the digests live, relative to the repository's root.
pub const LOCK: &str = "docs/generated.lock";

/// The directories whose files the simulating blocks read (scenarios, the reports' figures,
/// fio job files, measured cases).
const INPUT_DIRS: &[&str] = &["scenarios", "validation"];

/// The digest of the source this binary was built from (see build.rs).
const SOURCE_DIGEST: &str = env!("WBLAB_SOURCE_DIGEST");

fn hex(digest: u128) -> String {
    format!("{digest:032x}")
}

/// The digest of a block's text, as it stands between its markers.
pub fn body_digest(body: &str) -> String {
    let mut h = XxHash3_128::with_seed(0);
    h.write(body.as_bytes());
    hex(h.finish_128())
}

/// Every file under the input directories of `root`, but the docs being checked (their blocks
/// are outputs), hashed by path and content in one order.
pub fn tree_digest(root: &Path, outputs: &[PathBuf]) -> std::io::Result<String> {
    let skip: Vec<PathBuf> = outputs.iter().filter_map(|p| p.canonicalize().ok()).collect();
    let mut files = Vec::new();
    for d in INPUT_DIRS {
        files_under(&root.join(d), &mut files)?;
    }
    let named = files
        .into_iter()
        .filter(|p| p.canonicalize().map_or(true, |c| !skip.contains(&c)))
        .map(|p| (p.strip_prefix(root).unwrap_or(&p).to_string_lossy().into_owned(), p))
        .collect();
    Ok(hex(digest(named)?))
}

/// The digest of what a block is generated from: this binary's source, the input files and
/// the block's own name and arguments.
pub fn inputs_digest(tree: &str, name: &str, args: &[String]) -> String {
    let mut h = XxHash3_128::with_seed(0);
    for part in [SOURCE_DIGEST, tree, name].into_iter().chain(args.iter().map(String::as_str)) {
        h.write(part.as_bytes());
        h.write(&[0]);
    }
    hex(h.finish_128())
}

/// How a block is named in the lock: its generator and arguments, and `#n` for the n-th
/// (from 2) block of the same name in one file.
pub fn block_key(name: &str, args: &[String], nth: usize) -> String {
    let mut k = std::iter::once(name)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    if nth > 1 {
        k.push_str(&format!(" #{nth}"));
    }
    k
}

/// One simulated block as it was last written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub file: String,
    pub block: String,
    pub inputs: String,
    pub body: String,
}

#[derive(Default, Serialize, Deserialize)]
struct LockFile {
    #[serde(default, rename = "block")]
    blocks: Vec<Entry>,
}

const HEADER: &str = "# Written by `wblab docs --write`: for each block of the docs that runs simulations, a digest\n\
# of its inputs (the simulator's source, scenarios/ and validation/) and of the body written.\n\
# `wblab docs` takes a block whose digests both match as current without simulating it;\n\
# `wblab docs --no-cache` simulates every block. Deleting this file is always safe.\n\n";

/// The lock's entries by file and block.
#[derive(Default)]
pub struct Lock {
    entries: BTreeMap<(String, String), Entry>,
}

impl Lock {
    /// Read the lock at `path`; a missing one is empty.
    pub fn load(path: &Path) -> Result<Lock, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lock::default()),
            Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
        };
        let parsed: LockFile = toml::from_str(&text).map_err(|e| {
            let line = e.span().map_or(1, |s| text[..s.start.min(text.len())].lines().count().max(1));
            format!(
                "{}:{line}: {}\n  hint: delete it; `wblab docs --write` writes it again",
                path.display(),
                e.message()
            )
        })?;
        Ok(Lock {
            entries: parsed.blocks.into_iter().map(|e| ((e.file.clone(), e.block.clone()), e)).collect(),
        })
    }

    /// Whether the block `block` of `file`, generated from `inputs`, still has the body it was
    /// written with.
    pub fn trusts(&self, file: &str, block: &str, inputs: &str, body: &str) -> bool {
        self.entries
            .get(&(file.to_string(), block.to_string()))
            .is_some_and(|e| e.inputs == inputs && e.body == body_digest(body))
    }

    /// Write `entries` (in file and block order) to `path`, unless it already holds them.
    pub fn save(path: &Path, mut entries: Vec<Entry>) -> Result<(), String> {
        entries.sort_by(|a, b| (&a.file, &a.block).cmp(&(&b.file, &b.block)));
        let body = toml::to_string(&LockFile { blocks: entries }).map_err(|e| e.to_string())?;
        let text = format!("{HEADER}{body}");
        if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
            return Ok(());
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot make: {e}", dir.display()))?;
        }
        std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wblab-docs-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("scenarios")).unwrap();
        d
    }

    #[test]
    fn an_input_file_changes_the_digest_and_the_docs_themselves_do_not() {
        let d = scratch("tree");
        std::fs::write(d.join("scenarios/a.toml"), "duration = \"1s\"\n").unwrap();
        std::fs::write(d.join("scenarios/README.md"), "<!-- wblab:run a -->\n").unwrap();
        let outputs = [d.join("scenarios/README.md")];
        let before = tree_digest(&d, &outputs).unwrap();
        std::fs::write(d.join("scenarios/README.md"), "rewritten by --write\n").unwrap();
        assert_eq!(tree_digest(&d, &outputs).unwrap(), before, "a doc being checked is an output");
        std::fs::write(d.join("scenarios/a.toml"), "duration = \"2s\"\n").unwrap();
        let changed = tree_digest(&d, &outputs).unwrap();
        assert_ne!(changed, before, "a scenario is an input");
        std::fs::create_dir_all(d.join("validation")).unwrap();
        std::fs::write(d.join("validation/case.toml"), "x").unwrap();
        assert_ne!(tree_digest(&d, &outputs).unwrap(), changed, "so is a measured case");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_block_is_trusted_only_with_its_inputs_and_its_body() {
        let d = scratch("lock");
        let path = d.join("generated.lock");
        let inputs = inputs_digest("tree", "run", &["scenarios/a.toml".to_string()]);
        let key = block_key("run", &["scenarios/a.toml".to_string()], 1);
        let entry = Entry {
            file: "README.md".into(),
            block: key.clone(),
            inputs: inputs.clone(),
            body: body_digest("\n| table |\n"),
        };
        Lock::save(&path, vec![entry]).unwrap();
        let lock = Lock::load(&path).unwrap();
        assert!(lock.trusts("README.md", &key, &inputs, "\n| table |\n"));
        assert!(!lock.trusts("README.md", &key, &inputs, "\n| edited |\n"), "a body edited by hand");
        let other = inputs_digest("tree2", "run", &["scenarios/a.toml".to_string()]);
        assert!(!lock.trusts("README.md", &key, &other, "\n| table |\n"), "changed inputs");
        assert!(!lock.trusts("docs/x.md", &key, &inputs, "\n| table |\n"), "another file's block");
        assert_ne!(block_key("run", &[], 2), block_key("run", &[], 1));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_broken_lock_names_its_line_and_says_what_to_do() {
        let d = scratch("broken");
        let path = d.join("generated.lock");
        std::fs::write(&path, "# c\n[[block]]\nfile = \"README.md\"\nblock = 3\n").unwrap();
        let e = Lock::load(&path).err().expect("a broken lock is an error");
        assert!(e.contains("generated.lock:") && e.contains("hint: delete it"), "{e}");
        assert!(Lock::load(&d.join("missing.lock")).is_ok(), "a missing lock is empty");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
