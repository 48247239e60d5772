//! Damage to a scenario file, as hands and editors do it: lines lost, doubled or swapped,
//! a value replaced by one of the wrong type, a key misspelt, the file cut short, stray bytes.

use super::generate::{chance, WILD};
use wblab_sim::RngStream;

/// `text` with one random mutation.
pub fn mutate(r: &mut RngStream, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return WILD[r.below(WILD.len() as u64) as usize].to_string();
    }
    let i = r.below(lines.len() as u64) as usize;
    match r.below(7) {
        0 => {
            lines.remove(i);
        }
        1 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        2 => {
            let j = r.below(lines.len() as u64) as usize;
            lines.swap(i, j);
        }
        3 => {
            if let Some((key, _)) = lines[i].split_once(" = ") {
                lines[i] = format!("{key} = {}", WILD[r.below(WILD.len() as u64) as usize]);
            }
        }
        4 => {
            if let Some((key, value)) = lines[i].split_once(" = ") {
                let mut k: Vec<char> = key.chars().collect();
                let at = r.below(k.len().max(1) as u64) as usize;
                if at < k.len() {
                    k[at] = if chance(r, 0.5) { '_' } else { 'q' };
                }
                lines[i] = format!("{} = {value}", k.into_iter().collect::<String>());
            }
        }
        5 => {
            // Cut the file at a random character.
            let t = lines.join("\n");
            let cut = r.below(t.chars().count() as u64 + 1) as usize;
            return t.chars().take(cut).collect();
        }
        _ => {
            let junk = ["\u{0}", "\"", "[", "]]", "=", "#", "\u{feff}", "\\", "'''", "é", "\t", "{"];
            let at = r.below(lines[i].chars().count() as u64 + 1) as usize;
            let mut c: Vec<char> = lines[i].chars().collect();
            for (n, ch) in junk[r.below(junk.len() as u64) as usize].chars().enumerate() {
                c.insert(at + n, ch);
            }
            lines[i] = c.into_iter().collect();
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}
