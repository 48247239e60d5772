//! `wblab docs`: the reference tables of the Markdown docs are generated from the registries
//! the simulator runs on (generations, policies, elevators, device models, the command line),
//! between `<!-- wblab:NAME -->` and `<!-- /wblab -->` markers. `--check` (the default) fails
//! when a block differs from what this binary generates, so the docs cannot drift from the code;
//! `--write` regenerates them. A block that simulates is taken as current without simulating it
//! again when `docs/generated.lock` says it was written from the same inputs ([`cache`]).

mod blocks;
mod cache;
mod emulated_table;
mod file_digest;
mod layout;
mod measured;
mod runs;
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
    /// Simulate every block again, whatever docs/generated.lock says (with --write, the lock is
    /// written again too).
    #[arg(long)]
    no_cache: bool,
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
    // The lock speaks for the repository's own docs only.
    let use_lock = a.files.is_empty();
    let files = if a.files.is_empty() {
        default_files(Path::new("."))
    } else {
        a.files
    };
    if files.is_empty() {
        eprintln!("error: no README.md, docs/*.md or scenarios/README.md here\n  hint: run `wblab docs` from the repository's root, or name the files");
        return ExitCode::from(2);
    }
    let mut docs = Vec::with_capacity(files.len());
    for f in &files {
        match read(f) {
            Ok(d) => docs.push(d),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let inputs = if use_lock {
        match Inputs::of(&docs, &files, a.no_cache) {
            Ok(i) => Some(i),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        None
    };
    let bodies = generate_all(&docs, a.write, cli, inputs.as_ref());
    let mut lock_entries = Vec::new();
    let mut unrecorded = 0;
    if let Some(i) = &inputs {
        let flat = docs
            .iter()
            .zip(&bodies)
            .flat_map(|(d, bodies)| bodies.iter().enumerate().map(move |(b, body)| (d, b, body)));
        for (((d, b, body), key), &trusted) in flat.zip(&i.keys).zip(&i.trusted) {
            let (Some((key, digest)), Ok(body)) = (key, body) else {
                continue;
            };
            let written = format!("\n{body}\n");
            if !trusted && !a.no_cache && d.text[d.blocks[b].body.clone()] == written {
                unrecorded += 1;
            }
            lock_entries.push(cache::Entry {
                file: shown_path(&d.path),
                block: key.clone(),
                inputs: digest.clone(),
                body: cache::body_digest(&written),
            });
        }
    }
    let mut stale = 0;
    let mut blocks = 0;
    for (d, bodies) in docs.iter().zip(bodies) {
        match finish(d, bodies, a.write) {
            Ok(o) => {
                blocks += o.blocks;
                stale += o.stale.len();
                let verb = if a.write { "regenerated" } else { "stale" };
                for n in o.stale {
                    println!("{}: {verb}: {n}", d.path.display());
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(i) = &inputs {
        if a.write {
            if let Err(e) = cache::Lock::save(Path::new(cache::LOCK), lock_entries) {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        } else if unrecorded > 0 {
            println!(
                "{unrecorded} simulated blocks are current but {} does not record their inputs: `wblab docs --write` records them, and later checks skip their simulations",
                cache::LOCK
            );
        }
        let taken = i.trusted.iter().filter(|&&t| t).count();
        if taken > 0 {
            println!(
                "{taken} simulated blocks taken as current from {}: their inputs are unchanged",
                cache::LOCK
            );
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

/// A path as the lock names it: relative to the repository's root, `/`-separated.
fn shown_path(p: &Path) -> String {
    p.strip_prefix(".").unwrap_or(p).to_string_lossy().replace('\\', "/")
}

/// What the lock decides for each block of the docs, in file and block order: for a simulating
/// block its key and inputs digest, and whether the lock lets it stand as written.
struct Inputs {
    keys: Vec<Option<(String, String)>>,
    trusted: Vec<bool>,
}

impl Inputs {
    fn of(docs: &[Doc], files: &[PathBuf], ignore_lock: bool) -> Result<Inputs, String> {
        let lock = if ignore_lock {
            cache::Lock::default()
        } else {
            cache::Lock::load(Path::new(cache::LOCK))?
        };
        let tree = cache::tree_digest(Path::new("."), files).map_err(|e| format!("reading the docs' inputs: {e}"))?;
        let (mut keys, mut trusted) = (Vec::new(), Vec::new());
        for d in docs {
            let file = shown_path(&d.path);
            let mut seen = std::collections::HashMap::new();
            for b in &d.blocks {
                if !cache::SIMULATING.contains(&b.name.as_str()) {
                    keys.push(None);
                    trusted.push(false);
                    continue;
                }
                let nth = seen.entry(cache::block_key(&b.name, &b.args, 1)).or_insert(0usize);
                *nth += 1;
                let key = cache::block_key(&b.name, &b.args, *nth);
                let digest = cache::inputs_digest(&tree, &b.name, &b.args);
                let body = &d.text[b.body.clone()];
                trusted.push(lock.trusts(&file, &key, &digest, body) && body.len() >= 2);
                keys.push(Some((key, digest)));
            }
        }
        Ok(Inputs { keys, trusted })
    }
}

/// A Markdown file and its generated blocks.
struct Doc {
    path: PathBuf,
    text: String,
    blocks: Vec<blocks::Block>,
}

fn read(path: &Path) -> Result<Doc, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let blocks = blocks::find(&text).map_err(|(line, m)| format!("{shown}:{line}: {m}"))?;
    Ok(Doc {
        path: path.to_path_buf(),
        text,
        blocks,
    })
}

/// Every block's body (or why it cannot be made), by file and block. The blocks are generated
/// side by side on the machine's cores, the costliest first, and a simulation that several of
/// them need is made once.
fn generate_all(docs: &[Doc], write: bool, cli: &clap::Command, inputs: Option<&Inputs>) -> Vec<Vec<Result<String, String>>> {
    let flat: Vec<(usize, usize)> = docs
        .iter()
        .enumerate()
        .flat_map(|(d, doc)| (0..doc.blocks.len()).map(move |b| (d, b)))
        .collect();
    let trusted = |i: usize| inputs.is_some_and(|x| x.trusted[i]);
    // A trusted block keeps the body it has: the text between its blank lines.
    let kept = |i: usize| {
        let (d, b) = flat[i];
        let body = &docs[d].text[docs[d].blocks[b].body.clone()];
        body[1..body.len() - 1].to_string()
    };
    let all: Vec<(usize, usize)> = (0..flat.len()).filter(|&i| !trusted(i)).map(|i| flat[i]).collect();
    let plans: Vec<Vec<wblab_sim::config::Scenario>> = all
        .iter()
        .map(|&(d, b)| tables::simulations(&docs[d].blocks[b].name, &docs[d].blocks[b].args))
        .collect();
    let runs = runs::Runs::new(plans.iter().flatten());
    // Simulated seconds times tasks: a rough cost, enough to start the long blocks first.
    let cost = |p: &Vec<wblab_sim::config::Scenario>| -> u128 {
        p.iter()
            .map(|sc| u128::from(sc.duration) * sc.tasks.iter().map(|t| u128::from(t.count)).sum::<u128>().max(1))
            .sum()
    };
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&plans[i])));
    // One worker per core, the blocks taken in `order`; the bodies go back to file order.
    let generated = wblab_sweep::run::each_parallel(
        order.len(),
        0,
        |j| {
            let (d, b) = all[order[j]];
            let (doc, block) = (&docs[d], &docs[d].blocks[b]);
            let ctx = tables::Ctx {
                write,
                dir: doc.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
                runs: &runs,
            };
            tables::generate(&block.name, &block.args, cli, &ctx).map_err(|m| {
                format!(
                    "{}:{}: {m}\n  hint: generators: {}",
                    doc.path.display(),
                    block.line,
                    tables::GENERATORS.join(", ")
                )
            })
        },
        |_| {},
    );
    let mut made: Vec<Option<Result<String, String>>> = all.iter().map(|_| None).collect();
    for (&i, body) in order.iter().zip(generated) {
        made[i] = Some(body);
    }
    let mut generated = made.into_iter().map(|m| m.expect("every block was generated"));
    let mut made = (0..flat.len()).map(|i| {
        if trusted(i) {
            Ok(kept(i))
        } else {
            generated.next().expect("a body for each block generated")
        }
    });
    docs.iter().map(|doc| made.by_ref().take(doc.blocks.len()).collect()).collect()
}

/// Compare a file's blocks with their new bodies; write the file back when asked and something
/// changed. The first block that could not be made is the file's error.
fn finish(doc: &Doc, made: Vec<Result<String, String>>, write: bool) -> Result<Outcome, String> {
    let mut bodies = Vec::with_capacity(made.len());
    let mut stale = Vec::new();
    for (b, body) in doc.blocks.iter().zip(made) {
        // A blank line on each side keeps a table a block of its own in every Markdown reader.
        let body = format!("\n{}\n", body?);
        if doc.text[b.body.clone()] != body {
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
        let shown = doc.path.display();
        std::fs::write(&doc.path, blocks::splice(&doc.text, &doc.blocks, &bodies)).map_err(|e| format!("{shown}: cannot write: {e}"))?;
    }
    Ok(Outcome {
        blocks: doc.blocks.len(),
        stale,
    })
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
