//! `layout`: the README's map of the code, each crate and each of the simulator's top-level
//! modules with the first sentence of its own doc comment, so that the map says what the code
//! says of itself and cannot fall behind a move.

use std::path::Path;

/// Where the descriptions start, and where lines wrap.
const NAME_WIDTH: usize = 18;
const LINE_WIDTH: usize = 100;
/// A first sentence shorter than this is followed by the next.
const SHORT_SENTENCE: usize = 40;

/// The map of the crates under `root/crates` (the simulator first, then by name) and of the
/// simulator's modules.
pub fn layout(root: &Path) -> Result<String, String> {
    let crates_dir = root.join("crates");
    let mut crates = subdirs(&crates_dir)?;
    crates.sort_by_key(|c| (c != "sim", c.clone()));
    let mut out = String::from("```text\n");
    for c in &crates {
        let src = crates_dir.join(c).join("src");
        let Ok(lib) = first_sentence(&src.join("lib.rs")) else { continue };
        out += &entry(&format!("crates/{c}"), &lib);
        if c == "sim" {
            for m in subdirs(&src)? {
                let module = src.join(&m).join("mod.rs");
                if module.is_file() {
                    out += &entry(&format!("  {m}/"), &first_sentence(&module)?);
                }
            }
        }
    }
    out += "```\n";
    Ok(out)
}

/// The directories in `dir`, by name.
fn subdirs(dir: &Path) -> Result<Vec<String>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut names: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// The first sentence of a file's inner doc comment (`//!`), without its crate-name prefix
/// (`wblab-sim: `) and with intra-doc links as plain code.
fn first_sentence(file: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let paragraph: Vec<&str> = text
        .lines()
        .map_while(|l| l.strip_prefix("//!"))
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    if paragraph.is_empty() {
        return Err(format!("{} has no doc comment to describe it by", file.display()));
    }
    let joined = paragraph.join(" ");
    let joined = match joined.split_once(": ") {
        Some((name, rest)) if name.trim_matches('`').starts_with("wblab") => rest,
        _ => joined.as_str(),
    };
    // The first sentence, and the next while it is too short to say much ("Device models.").
    let mut end = 0;
    while end < joined.len() && end < SHORT_SENTENCE {
        end = joined[end..].find(". ").map_or(joined.len(), |i| end + i + 1);
    }
    let sentence = plain_links(&joined[..end]);
    let mut chars = sentence.chars();
    Ok(chars.next().map_or(String::new(), |c| c.to_uppercase().chain(chars).collect()))
}

/// `` [`Device`] `` and `` [`x`](path) `` as `` `Device` `` and `` `x` ``.
fn plain_links(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("[`") {
        out += &rest[..i];
        let after = &rest[i + 1..];
        let Some(j) = after.find("`]") else {
            out += &rest[i..];
            return out;
        };
        out += &after[..j + 1];
        rest = &after[j + 2..];
        if rest.starts_with('(') {
            if let Some(k) = rest.find(')') {
                rest = &rest[k + 1..];
            }
        }
    }
    out + rest
}

/// `name` and `text`, wrapped at [`LINE_WIDTH`] under [`NAME_WIDTH`].
fn entry(name: &str, text: &str) -> String {
    let mut out = format!("{name:<w$}", w = NAME_WIDTH.max(name.len() + 1));
    let mut col = out.len();
    for (k, word) in text.split_whitespace().enumerate() {
        if k > 0 && col + 1 + word.len() > LINE_WIDTH {
            out += &format!("\n{:w$}", "", w = NAME_WIDTH);
            col = NAME_WIDTH;
        } else if k > 0 {
            out.push(' ');
            col += 1;
        }
        out += word;
        col += word.len();
    }
    out + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_loses_its_links_and_crate_name() {
        assert_eq!(
            plain_links("behind the [`sched::Elevator`] trait"),
            "behind the `sched::Elevator` trait"
        );
        assert_eq!(plain_links("see [`x`](crate::x) and [`y`]"), "see `x` and `y`");
        assert_eq!(plain_links("an [`unclosed"), "an [`unclosed");
        let dir = std::env::temp_dir().join(format!("wblab-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("lib.rs");
        std::fs::write(
            &f,
            "//! wblab-x: what it does, [`Y`]. More.\n//! And more.\n//!\n//! Later.\nuse a;\n",
        )
        .unwrap();
        let said = first_sentence(&f).unwrap();
        assert_eq!(
            said, "What it does, `Y`. More. And more.",
            "short sentences take the next, to the paragraph's end"
        );
        std::fs::write(&f, "//! The block layer: requests and their schedulers, the throttle. More.\n").unwrap();
        assert_eq!(
            first_sentence(&f).unwrap(),
            "The block layer: requests and their schedulers, the throttle."
        );
        std::fs::write(&f, "use a;\n").unwrap();
        assert!(first_sentence(&f).is_err(), "a module without a doc comment is an error");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn entries_wrap_under_their_name() {
        let long = "word ".repeat(40);
        let e = entry("  mm/", &long);
        assert!(e.lines().all(|l| l.len() <= LINE_WIDTH), "{e}");
        assert!(e.lines().skip(1).all(|l| l.starts_with(&" ".repeat(NAME_WIDTH))), "{e}");
        assert!(e.starts_with("  mm/             word"), "{e}");
    }

    /// The repository's own map lists every crate and every module of the simulator.
    #[test]
    fn the_map_has_every_crate_and_module() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let map = layout(&root).unwrap();
        for c in ["crates/sim", "crates/cli", "crates/scenario", "  machine/", "  mm/", "  block/"] {
            assert!(map.lines().any(|l| l.starts_with(&format!("{c} "))), "{c} missing:\n{map}");
        }
        assert!(map.lines().next().is_some_and(|l| l == "```text"));
    }
}
