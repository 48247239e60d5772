//! Errors that point at the offending line of the scenario file, and say how to fix it.

use std::fmt;

/// A scenario that cannot be used, located in its file.
///
/// Displays as one line, `error: FILE:LINE:COL: key `KEY`: MESSAGE`, then `  hint: ...` lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file name as given to [`crate::load`] or [`crate::parse`].
    pub file: String,
    /// 1-based line; 0 when the error is about the file as a whole (it could not be read).
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// The knob as the user wrote it (`vm.dirty_ratio`, `queue/nr_requests`), when one is at fault.
    pub key: Option<String>,
    pub message: String,
    /// How to fix it: a did-you-mean, or the accepted values, units or range.
    pub hint: Option<String>,
    /// The file's other mistakes, in file order (up to [`MAX_ERRORS`] in all), so that one
    /// `wblab check` shows everything to fix.
    pub more: Vec<ScenarioError>,
}

/// The most mistakes one error lists; beyond, it says how many more there are.
pub const MAX_ERRORS: usize = 20;

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_one(f)?;
        let shown = self.more.len().min(MAX_ERRORS - 1);
        for e in &self.more[..shown] {
            f.write_str("\n")?;
            e.fmt_one(f)?;
        }
        if self.more.len() > shown {
            write!(f, "\n... and {} more", self.more.len() - shown)?;
        }
        if !self.more.is_empty() {
            write!(f, "\n{} errors in {}", self.more.len() + 1, self.file)?;
        }
        Ok(())
    }
}

impl ScenarioError {
    /// This error alone, without the others of the file.
    fn fmt_one(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        f.write_str(": ")?;
        if let Some(key) = &self.key {
            write!(f, "key `{key}`: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            for line in hint.lines() {
                write!(f, "\n  hint: {line}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ScenarioError {}

/// An error found while building, located by byte offset; [`Problem::locate`] turns it into a
/// [`ScenarioError`] once the file name and text are at hand.
#[derive(Clone, Debug)]
pub(crate) struct Problem {
    pub offset: usize,
    pub key: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

pub(crate) type Result<T> = std::result::Result<T, Problem>;

impl Problem {
    pub fn new(offset: usize, message: impl Into<String>) -> Problem {
        Problem {
            offset,
            key: None,
            message: message.into(),
            hint: None,
        }
    }

    pub fn key(mut self, key: impl Into<String>) -> Problem {
        self.key = Some(key.into());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Problem {
        self.hint = Some(hint.into());
        self
    }

    pub fn locate(self, file: &str, text: &str) -> ScenarioError {
        let (line, column) = line_column(text, self.offset);
        ScenarioError {
            file: file.to_string(),
            line,
            column,
            key: self.key.map(|k| clip(&k, MAX_KEY_CHARS)),
            message: clip(&clip_quoted(&self.message), MAX_MESSAGE_CHARS),
            hint: self.hint.map(|h| clip(&clip_quoted(&h), MAX_MESSAGE_CHARS)),
            more: Vec::new(),
        }
    }
}

/// Several problems of one file: the first (in file order) carries the others.
pub(crate) fn locate_all(mut problems: Vec<Problem>, file: &str, text: &str) -> ScenarioError {
    problems.sort_by_key(|p| p.offset);
    problems.dedup_by(|a, b| a.offset == b.offset && a.message == b.message);
    let mut all = problems.into_iter().map(|p| p.locate(file, text));
    let mut first = all.next().expect("at least one problem");
    first.more = all.collect();
    first
}

/// Problems of a file, as the builder collects them.
pub(crate) type Problems = Vec<Problem>;

/// A part of the file built, or every independent problem found in it.
pub(crate) type Many<T> = std::result::Result<T, Problems>;

impl From<Problem> for Problems {
    fn from(p: Problem) -> Problems {
        vec![p]
    }
}

/// The problems of one part of the file, gathered so that one run reports them all: each
/// key is read on its own, and a check that needs several keys runs once they are sound
/// ([`Gather::sound`]).
#[derive(Default)]
pub(crate) struct Gather(Problems);

impl Gather {
    /// `r`'s value, or `None` with its problem kept.
    pub fn keep<T>(&mut self, r: Result<T>) -> Option<T> {
        r.map_err(|p| self.0.push(p)).ok()
    }

    /// As [`Gather::keep`], for a part that reports several problems.
    pub fn keep_all<T>(&mut self, r: Many<T>) -> Option<T> {
        r.map_err(|p| self.0.extend(p)).ok()
    }

    /// Overwrites `slot` with the value of `key` when the section sets it; a bad value is
    /// kept as a problem and leaves `slot` as it was.
    pub fn read<'a, T>(
        &mut self,
        sec: &crate::section::Section<'a>,
        key: &str,
        slot: &mut T,
        parse: impl FnOnce(&crate::section::Entry<'a>) -> Result<T>,
    ) {
        let r = sec.read(key, slot, parse);
        self.keep(r);
    }

    pub fn push(&mut self, p: Problem) {
        self.0.push(p);
    }

    pub fn extend(&mut self, p: impl IntoIterator<Item = Problem>) {
        self.0.extend(p);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok` while nothing is wrong, else every problem so far: the point past which checks
    /// across keys may trust the values read.
    pub fn sound(&mut self) -> Many<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(std::mem::take(&mut self.0))
        }
    }

    /// `value` when nothing was wrong.
    pub fn finish<T>(mut self, value: T) -> Many<T> {
        self.sound().map(|()| value)
    }
}

/// Keys and values are echoed in messages; a 100 kB key must not come back 100 kB long. The
/// file's text always appears between backticks, and each such quote is cut to the key
/// length; the whole message is bounded too, above the longest list a hint gives.
const MAX_KEY_CHARS: usize = 80;
const MAX_MESSAGE_CHARS: usize = 2000;

/// Every `` `quoted` `` part of `s` cut to [`MAX_KEY_CHARS`].
fn clip_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(4 * MAX_MESSAGE_CHARS));
    for (i, part) in s.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        // Odd parts are inside backticks.
        if i % 2 == 1 {
            out.push_str(&clip(part, MAX_KEY_CHARS));
        } else {
            out.push_str(part);
        }
    }
    out
}

/// `s` cut to `max` characters, with `…` where it was cut.
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// 1-based line and character column of byte `offset` (clamped into `text`).
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        assert_eq!(line_column(text, 10), (2, 4));
        assert_eq!(line_column(text, 8), (2, 2)); // inside 'é': clamped back
        assert_eq!(line_column(text, 1000), (3, 1));
        assert_eq!(line_column("", 5), (1, 1));
    }

    #[test]
    fn long_echoes_are_cut() {
        let key = "k".repeat(100_000);
        let e = Problem::new(0, format!("unknown key `{key}`"))
            .key(key.clone())
            .hint(format!("did you mean `{key}`?"))
            .locate("x.toml", "");
        assert_eq!(e.key.as_deref().map(|k| k.chars().count()), Some(MAX_KEY_CHARS + 1));
        assert!(e.to_string().chars().count() < 1000, "{}", e.to_string().len());
        assert!(
            e.message.starts_with("unknown key `kkk") && e.message.ends_with("k…`"),
            "{}",
            e.message
        );
        let plain = Problem::new(0, "x".repeat(100_000)).locate("x.toml", "");
        assert_eq!(plain.message.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("ééé", 2), "éé…");
    }

    #[test]
    fn several_problems_come_in_file_order_and_are_counted() {
        let text = "a = 1\nb = 2\nc = 3\n";
        let e = locate_all(
            vec![Problem::new(12, "third"), Problem::new(0, "first"), Problem::new(6, "second")],
            "x.toml",
            text,
        );
        let shown = e.to_string();
        assert_eq!((e.line, e.more.len()), (1, 2));
        assert!(
            shown.starts_with("error: x.toml:1:1: first\nerror: x.toml:2:1: second\nerror: x.toml:3:1: third"),
            "{shown}"
        );
        assert!(shown.ends_with("3 errors in x.toml"), "{shown}");
        let many = locate_all((0..30).map(|i| Problem::new(i, format!("p{i}"))).collect(), "x.toml", text);
        let shown = many.to_string();
        assert_eq!(shown.matches("error: ").count(), MAX_ERRORS);
        assert!(shown.contains("... and 10 more\n30 errors in x.toml"), "{shown}");
    }

    #[test]
    fn display() {
        let e = Problem::new(6, "unknown sysctl")
            .key("vm.dirty_ratoi")
            .hint("did you mean `vm.dirty_ratio`?")
            .locate("scenarios/x.toml", "[sysctl]\nx = 1");
        assert_eq!(
            e.to_string(),
            "error: scenarios/x.toml:1:7: key `vm.dirty_ratoi`: unknown sysctl\n  hint: did you mean `vm.dirty_ratio`?"
        );
        let io = ScenarioError {
            file: "x.toml".into(),
            line: 0,
            column: 0,
            key: None,
            message: "cannot read the file: not found".into(),
            hint: None,
            more: vec![],
        };
        assert_eq!(io.to_string(), "error: x.toml: cannot read the file: not found");
    }
}
