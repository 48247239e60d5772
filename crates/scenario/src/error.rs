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
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
            key: self.key,
            message: self.message,
            hint: self.hint,
        }
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
        };
        assert_eq!(io.to_string(), "error: x.toml: cannot read the file: not found");
    }
}
