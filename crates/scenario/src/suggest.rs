//! "Did you mean ...?" for misspelt keys and values.

/// Edit distance with adjacent transpositions (optimal string alignment), case-insensitive, so
/// `ratoi` is one edit from `ratio`.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    // Three rolling rows: two back (for transpositions), previous, current.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// How many edits still count as a typo: short words tolerate fewer.
fn tolerance(word: &str) -> usize {
    match word.chars().count() {
        0..=3 => 1,
        4..=8 => 2,
        _ => 3,
    }
}

/// The candidate the user most likely meant: same word in another case, then the nearest one
/// within typo distance, then a candidate that is `input` with a prefix left out
/// (`dirty_ratio` for `vm.dirty_ratio`, `iosched/fifo_batch` for `queue/iosched/fifo_batch`).
pub fn closest<'a>(input: &str, candidates: &[&'a str]) -> Option<&'a str> {
    if input.is_empty() {
        return None;
    }
    if let Some(c) = candidates.iter().find(|c| c.eq_ignore_ascii_case(input)) {
        return Some(c);
    }
    let nearest = candidates
        .iter()
        .map(|c| (distance(input, c), *c))
        .filter(|&(d, _)| d <= tolerance(input))
        .min_by_key(|&(d, _)| d);
    if let Some((_, c)) = nearest {
        return Some(c);
    }
    let lower = input.to_lowercase();
    candidates.iter().copied().find(|c| {
        let c = c.to_lowercase();
        c.len() > lower.len() && c.ends_with(&lower) && c[..c.len() - lower.len()].ends_with(['.', '/'])
    })
}

/// `did you mean `x`?` when there is a close candidate.
pub fn did_you_mean(input: &str, candidates: &[&str]) -> Option<String> {
    closest(input, candidates).map(|c| format!("did you mean `{c}`?"))
}

/// "`a`, `b`, `c`": a list of accepted words for a hint.
pub fn list(candidates: &[&str]) -> String {
    candidates.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
}

/// The did-you-mean hint if there is one, else the full list of accepted words.
pub fn hint(input: &str, candidates: &[&str]) -> String {
    did_you_mean(input, candidates).unwrap_or_else(|| format!("expected one of {}", list(candidates)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("ratio", "ratoi"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("HDD", "hdd"), 0);
        assert_eq!(distance("mq-dedline", "mq-deadline"), 1);
    }

    #[test]
    fn suggestions() {
        let sysctls = ["vm.dirty_ratio", "vm.dirty_bytes", "vm.dirty_background_ratio"];
        assert_eq!(closest("vm.dirty_ratoi", &sysctls), Some("vm.dirty_ratio"));
        assert_eq!(closest("dirty_ratio", &sysctls), Some("vm.dirty_ratio"));
        assert_eq!(closest("vm.swappiness", &sysctls), None);
        assert_eq!(closest("Name", &["name", "job"]), Some("name"));
        assert_eq!(closest("bs", &["hz", "seed"]), None);
        assert_eq!(closest("", &["a"]), None);
        assert_eq!(closest("devices", &["device", "task"]), Some("device"));
    }
}
