//! `wblab docs`: the reference tables of the Markdown docs are generated from the registries
//! the simulator runs on (generations, policies, elevators, device models, the command line),
//! between `<!-- wblab:NAME -->` and `<!-- /wblab -->` markers. `--check` (the default) fails
//! when a block differs from what this binary generates, so the docs cannot drift from the code;
//! `--write` regenerates them.

mod blocks;
mod emulated_table;
mod layout;
mod measured;
mod sweep_block;
mod sync_table;
mod tables;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct DocsArgs {
    /// Rewrite stale blocks instead of only reporting them.
    #[arg(long)]
    write: bool,
    /// Markdown files [default: README.md, docs/*.md and scenarios/README.md under the current
    /// directory].
    files: Vec<PathBuf>,
}

/// What became of one file: its number of blocks, and those that were stale.
struct Outcome {
    blocks: usize,
    stale: Vec<String>,
}

pub fn docs(a: DocsArgs, cli: &clap::Command) -> ExitCode {
    let files = if a.files.is_empty() {
        default_files(Path::new("."))
    } else {
        a.files
    };
    if files.is_empty() {
        eprintln!("error: no README.md, docs/*.md or scenarios/README.md here\n  hint: run `wblab docs` from the repository's root, or name the files");
        return ExitCode::from(2);
    }
    let mut stale = 0;
    let mut blocks = 0;
    for f in &files {
        match process(f, a.write, cli) {
            Ok(o) => {
                blocks += o.blocks;
                stale += o.stale.len();
                let verb = if a.write { "regenerated" } else { "stale" };
                for n in o.stale {
                    println!("{}: {verb}: {n}", f.display());
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if stale > 0 && !a.write {
        eprintln!(
            "{stale} of {blocks} generated blocks differ from what this wblab generates\n  hint: `wblab docs --write` regenerates them"
        );
        return ExitCode::from(1);
    }
    println!("{blocks} generated blocks in {} files are current", files.len());
    ExitCode::SUCCESS
}

/// The Markdown files a repository checkout documents itself in.
fn default_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let readme = root.join("README.md");
    if readme.is_file() {
        files.push(readme);
    }
    if let Ok(rd) = std::fs::read_dir(root.join("docs")) {
        let mut docs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        docs.sort();
        files.extend(docs);
    }
    let scenarios = root.join("scenarios/README.md");
    if scenarios.is_file() {
        files.push(scenarios);
    }
    files
}

/// Regenerate the blocks of `path`; write the file back when asked and something changed.
fn process(path: &Path, write: bool, cli: &clap::Command) -> Result<Outcome, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let found = blocks::find(&text).map_err(|(line, m)| format!("{shown}:{line}: {m}"))?;
    let mut bodies = Vec::with_capacity(found.len());
    let mut stale = Vec::new();
    for b in &found {
        let ctx = tables::Ctx {
            write,
            dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
        };
        let body = tables::generate(&b.name, &b.args, cli, &ctx)
            .map_err(|m| format!("{shown}:{}: {m}\n  hint: generators: {}", b.line, tables::GENERATORS.join(", ")))?;
        // A blank line on each side keeps a table a block of its own in every Markdown reader.
        let body = format!("\n{body}\n");
        if text[b.body.clone()] != body {
            let args = if b.args.is_empty() {
                String::new()
            } else {
                format!(" {}", b.args.join(" "))
            };
            stale.push(format!("line {}: {}{args}", b.line, b.name));
        }
        bodies.push(body);
    }
    if write && !stale.is_empty() {
        std::fs::write(path, blocks::splice(&text, &found, &bodies)).map_err(|e| format!("{shown}: cannot write: {e}"))?;
    }
    Ok(Outcome {
        blocks: found.len(),
        stale,
    })
}
