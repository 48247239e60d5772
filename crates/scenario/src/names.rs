//! What a scenario's names and strings may hold.
//!
//! A scenario's names become file names and kernel-visible names: the results directory
//! (the scenario's name), `/mnt/<device>/` and a loop device's mount point under `wblab
//! measure` (a device's), the default file of a task and a thread's comm (a task's), fio's
//! job sections and its file names (a job's), cgroup directories (a cgroup path's parts). So
//! each is a plain identifier: ASCII letters, digits, `-`, `_` and `.`, starting with a
//! letter or a digit (never `.`, `..`, a hidden file or something a program would read as an
//! option), and short enough for a file name. Every other string is one line of text without
//! control characters, so nothing read from a file can start a new line in a job file, a
//! command or a terminal.

/// The longest name: well below a file name's 255 bytes, with room for the suffixes the
/// harness and the results add (`-measured`, `.{n}`, `.img`).
pub const MAX_NAME_CHARS: usize = 64;

/// Why `name` cannot name a `what` ("device", "task", ...), or `None` when it can.
pub fn name_problem(name: &str, what: &str) -> Option<(String, String)> {
    let hint = || format!("a {what} name is 1 to {MAX_NAME_CHARS} ASCII letters, digits, `-`, `_` or `.`, starting with a letter or digit");
    if name.is_empty() {
        return Some((format!("a {what} name must not be empty"), hint()));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Some((format!("a {what} name of {} characters is too long", name.chars().count()), hint()));
    }
    if let Some(c) = name.chars().find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
        return Some((format!("`{}` holds {}", shown(name), describe_char(c)), hint()));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Some((format!("`{name}` does not start with a letter or digit"), hint()));
    }
    None
}

/// A name made from a file's stem (a scenario without `name`): each character a name may not
/// hold becomes `_`, a leading `.` or `-` goes, and it is cut to [`MAX_NAME_CHARS`];
/// `fallback` when nothing is left.
pub fn from_stem(stem: &str, fallback: &str) -> String {
    let cleaned: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .skip_while(|c| !c.is_ascii_alphanumeric())
        .take(MAX_NAME_CHARS)
        .collect();
    if cleaned.is_empty() {
        fallback.to_string()
    } else {
        cleaned
    }
}

/// Characters no string of a scenario or job file may hold: control characters (C0, DEL,
/// C1: newline, carriage return, NUL, escape, ...), the Unicode line and paragraph
/// separators, and the bidirectional overrides that make text display in another order
/// than it is read.
pub fn is_forbidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The first forbidden character of a one-line string, with its character position.
pub fn forbidden_in_line(s: &str) -> Option<(usize, char)> {
    s.chars().enumerate().find(|&(_, c)| is_forbidden(c))
}

/// The first forbidden character of a multi-line text (an inline fio job file): lines may
/// end in `\n` or `\r\n` and hold tabs; nothing else.
pub fn forbidden_in_text(s: &str) -> Option<(usize, char)> {
    let chars: Vec<char> = s.chars().collect();
    chars.iter().enumerate().find_map(|(i, &c)| {
        let allowed = c == '\n' || c == '\t' || (c == '\r' && chars.get(i + 1) == Some(&'\n'));
        (is_forbidden(c) && !allowed).then_some((i, c))
    })
}

/// "a newline (U+000A)", "a NUL byte (U+0000)", "`é` (U+00E9)": a character named so that
/// the message itself holds no control character.
pub fn describe_char(c: char) -> String {
    let code = format!("U+{:04X}", c as u32);
    let name = match c {
        '\n' => "a newline",
        '\r' => "a carriage return",
        '\0' => "a NUL byte",
        '\t' => "a tab",
        '\u{1b}' => "an escape character",
        '\u{7f}' => "a delete character",
        c if c.is_control() => "a control character",
        '\u{2028}' | '\u{2029}' => "a Unicode line separator",
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => "a bidirectional text override",
        ' ' => "a blank",
        c if c.is_whitespace() => "a whitespace character",
        _ => return format!("`{c}` ({code})"),
    };
    format!("{name} ({code})")
}

/// `s` with its forbidden characters escaped, for quoting in a message.
pub fn shown(s: &str) -> String {
    s.chars()
        .map(|c| {
            if is_forbidden(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_identifiers_pass_and_paths_do_not() {
        for ok in ["sda", "nvme0n1", "dd", "reader-1", "wal_commit", "v1.2", "0"] {
            assert_eq!(name_problem(ok, "task"), None, "{ok}");
        }
        for bad in ["", ".", "..", ".hidden", "-rf", "a/b", "a b", "é", "x\ny", "a\0", &"a".repeat(65)] {
            assert!(name_problem(bad, "task").is_some(), "{bad:?}");
        }
        let (m, _) = name_problem("x\ny", "device").unwrap();
        assert!(m.contains("newline (U+000A)") && !m.contains('\n'), "{m}");
    }

    #[test]
    fn names_from_stems_are_names() {
        assert_eq!(from_stem("default", "x"), "default");
        assert_eq!(from_stem("my run (2)", "x"), "my_run__2_");
        assert_eq!(from_stem("..hidden", "x"), "hidden");
        assert_eq!(from_stem("...", "x"), "x");
        let long = from_stem(&"é".repeat(300), "x");
        assert_eq!(long, "x", "only underscores are left, and they are skipped");
        assert_eq!(from_stem(&"a".repeat(300), "x").len(), MAX_NAME_CHARS);
        for s in ["my run (2)", "a\nb", "-rf", "ünï"] {
            assert_eq!(name_problem(&from_stem(s, "x"), "scenario"), None, "{s}");
        }
    }

    #[test]
    fn text_may_span_lines_but_hold_no_other_control() {
        assert_eq!(forbidden_in_text("[j]\r\nrw=read\n\tsize=1m\n"), None);
        assert_eq!(forbidden_in_text("[j]\rexec_prerun=x"), Some((3, '\r')));
        assert_eq!(forbidden_in_text("a\u{1b}[2J"), Some((1, '\u{1b}')));
        assert_eq!(forbidden_in_line("x\nexec_prerun=y"), Some((1, '\n')));
        assert_eq!(forbidden_in_line("a\u{202E}b"), Some((1, '\u{202E}')));
        assert_eq!(forbidden_in_line("plain text, ü"), None);
        assert_eq!(shown("a\nb"), "a\\nb");
    }
}
