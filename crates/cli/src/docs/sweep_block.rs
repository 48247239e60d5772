//! `<!-- wblab:sweep FILE OPTIONS... -->`: what `wblab sweep FILE OPTIONS` prints after its
//! table — the ranked points of `--where`/`--minimize`/`--maximize`, per `--per` group — and
//! its `--plot` charts, written into `docs/img/` and linked from the block. Constraints are
//! written without spaces (`--where reader.op_p99_ms<50`), as a marker's words are split on
//! them. The charts are checked byte for byte against the files, like the text.

use super::tables::Ctx;
use clap::Parser;
use std::path::PathBuf;

#[derive(Parser)]
#[command(no_binary_name = true)]
struct Args {
    scenario: PathBuf,
    #[command(flatten)]
    sweep: crate::sweep::SweepArgs,
    /// Of a --per sweep's charts, only those of the groups whose heading holds every one of
    /// these (`--show model=hdd`), so a page shows the charts it discusses.
    #[arg(long)]
    show: Vec<String>,
}

/// The marker's words as a command line a shell runs as shown: `--show` (the generator's own
/// option) left out, and a word with a character the shell reads (`<`, `>`, `*`, ...) quoted.
fn pasteable(words: &[String]) -> String {
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut skip = false;
    for w in words {
        if std::mem::take(&mut skip) {
            continue;
        }
        if w == "--show" {
            skip = true;
            continue;
        }
        if w.starts_with("--show=") {
            continue;
        }
        let plain = w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
        out.push(if plain { w.clone() } else { format!("\"{w}\"") });
    }
    out.join(" ")
}

pub fn sweep(words: &[String], ctx: &Ctx) -> Result<String, String> {
    let a = Args::try_parse_from(words).map_err(|e| format!("`sweep`: {}", e.to_string().lines().next().unwrap_or_default()))?;
    let plan = wblab_scenario::load_sweep(&a.scenario)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{}: has no [sweep]", a.scenario.display()))?;
    let first = plan.point(0).map_err(|e| e.to_string())?;
    let key = |k: &str| wblab_sweep::plot::key_index(plan.keys(), k);
    let x = a.sweep.x.clone().unwrap_or_else(|| plan.keys()[0].clone());
    key(&x)?;
    let per = a.sweep.per.iter().map(|k| key(k)).collect::<Result<Vec<usize>, String>>()?;
    let indices: Vec<u64> = (0..plan.len()).collect();
    let (points, invalid) = wblab_sweep::run_sorted(&plan, &indices, &Default::default()).map_err(|e| e.to_string())?;
    // A shipped sweep has no invalid point.
    if let Some(p) = invalid.first() {
        return Err(format!("{}: point {} is not a valid scenario: {}", plan.file(), p.point, p.reason));
    }
    let mut body = format!("```\n$ wblab sweep {}\n", pasteable(words));
    let objectives = a.sweep.objectives();
    if objectives.is_empty() && a.sweep.plot.is_empty() {
        body.push_str(&wblab_sweep::view::table_of(&plan, &first.scenario, &points));
    } else if !objectives.is_empty() {
        let ranking = objectives.plan(&first.scenario)?;
        body.push_str(wblab_sweep::view::ranking_text(&plan, &points, &ranking, &per).trim_start_matches('\n'));
    }
    body.push_str("```\n");
    // Charts live in docs/img; the link is relative to the Markdown file.
    let in_docs = ctx.dir.file_name().is_some_and(|d| d == "docs");
    let img_dir = if in_docs { ctx.dir.join("img") } else { ctx.dir.join("docs/img") };
    let link_dir = if in_docs { "img" } else { "docs/img" };
    let stem = a.scenario.file_stem().map_or("sweep".into(), |s| s.to_string_lossy().into_owned());
    let plots = wblab_sweep::view::charts(&plan, &points, &a.sweep.plot, &x, &per)?;
    for (file, svg) in plots.into_iter().filter(|(f, _)| a.show.iter().all(|s| f.contains(s.as_str()))) {
        let name = format!("{stem}-{}", file.trim_start_matches("sweep-"));
        let path = img_dir.join(&name);
        if ctx.write {
            std::fs::create_dir_all(&img_dir).map_err(|e| format!("{}: {e}", img_dir.display()))?;
            std::fs::write(&path, &svg).map_err(|e| format!("{}: {e}", path.display()))?;
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(svg.as_str()) {
            return Err(format!(
                "{} is not the chart this wblab draws\n  hint: `wblab docs --write` redraws it",
                path.display()
            ));
        }
        body.push_str(&format!("\n![{}]({link_dir}/{name})\n", name.trim_end_matches(".svg")));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shown_command_pastes() {
        let words: Vec<String> = [
            "f.toml",
            "--where",
            "a.b>=0.95*best",
            "--show",
            "model-hdd",
            "--x",
            "vm.dirty_bytes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(pasteable(&words), "f.toml --where \"a.b>=0.95*best\" --x vm.dirty_bytes");
    }
}
