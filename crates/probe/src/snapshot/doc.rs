//! The scenario a snapshot writes: TOML lines, each with a comment saying where its value came
//! from, and a settling pass that turns every line the scenario checker refuses into a comment
//! saying why — so the file always passes `wblab check` and hides nothing it dropped.

use toml::Value;

/// One line of the file: TOML (empty for a comment or blank line) and its comment.
#[derive(Clone, Debug)]
struct Line {
    code: String,
    note: String,
    /// A `[table]` or `[[table]]` header: refusing it drops its whole table.
    header: bool,
}

/// The file being written.
#[derive(Clone, Debug, Default)]
pub struct Doc {
    lines: Vec<Line>,
}

/// Comment text on one line: control characters (a hostile file's newlines) become blanks.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// A key as TOML writes it: bare when it can be, else quoted (`"queue/scheduler"`).
fn toml_key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

impl Doc {
    pub fn comment(&mut self, text: &str) {
        self.lines.push(Line {
            code: String::new(),
            note: one_line(text),
            header: false,
        });
    }

    pub fn blank(&mut self) {
        self.lines.push(Line {
            code: String::new(),
            note: String::new(),
            header: false,
        });
    }

    /// `[name]` or, with `array`, `[[name]]`.
    pub fn table(&mut self, name: &str, array: bool) {
        let code = if array { format!("[[{name}]]") } else { format!("[{name}]") };
        self.lines.push(Line {
            code,
            note: String::new(),
            header: true,
        });
    }

    /// `key = value  # note`.
    pub fn key(&mut self, key: &str, value: Value, note: &str) {
        let code = format!("{} = {}", toml_key(key), value);
        self.lines.push(Line {
            code: one_line(&code),
            note: one_line(note),
            header: false,
        });
    }

    /// The file's text: comments after values aligned in each run of key lines.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut i = 0;
        while i < self.lines.len() {
            let end = (i..self.lines.len())
                .find(|&j| self.lines[j].code.is_empty() || self.lines[j].header)
                .unwrap_or(self.lines.len());
            let run = &self.lines[i..end.max(i + 1)];
            let width = run.iter().map(|l| l.code.chars().count()).max().unwrap_or(0).min(48);
            for l in run {
                match (l.code.is_empty(), l.note.is_empty()) {
                    (true, true) => out.push('\n'),
                    (true, false) => out.push_str(&format!("# {}\n", l.note)),
                    (false, true) => out.push_str(&format!("{}\n", l.code)),
                    (false, false) => out.push_str(&format!("{:<width$}  # {}\n", l.code, l.note)),
                }
            }
            i = end.max(i + 1);
        }
        out
    }

    /// Turns line `n` (0-based) into a comment: `# refused: WHY: CODE  # NOTE`. A header takes
    /// its table's lines with it.
    fn refuse(&mut self, n: usize, why: &str) {
        let end = if self.lines[n].header {
            (n + 1..self.lines.len())
                .find(|&j| self.lines[j].header)
                .unwrap_or(self.lines.len())
        } else {
            n + 1
        };
        for (k, j) in (n..end).enumerate() {
            let l = &self.lines[j];
            if l.code.is_empty() {
                continue;
            }
            let was = if l.note.is_empty() {
                l.code.clone()
            } else {
                format!("{}  ({})", l.code, l.note)
            };
            let note = if k == 0 {
                format!("refused by the model ({}): {was}", one_line(why))
            } else {
                format!("  (with it) {was}")
            };
            self.lines[j] = Line {
                code: String::new(),
                note,
                header: false,
            };
        }
    }

    /// Checks the file as `wblab check` does and comments out what it refuses, until it
    /// passes; returns the refusals (`line: message`) in the order met.
    pub fn settle(&mut self, file_name: &str) -> Result<Vec<String>, wblab_scenario::ScenarioError> {
        let mut refused = Vec::new();
        // Every pass removes at least one line, so the loop ends; the bound is a backstop.
        for _ in 0..=self.lines.len() {
            let err = match wblab_scenario::parse(&self.render(), file_name) {
                Ok(_) => return Ok(refused),
                Err(e) => e,
            };
            let all: Vec<&wblab_scenario::ScenarioError> = std::iter::once(&err).chain(err.more.iter()).collect();
            let mut fixed = false;
            for e in all {
                let Some(n) = e
                    .line
                    .checked_sub(1)
                    .filter(|&n| n < self.lines.len() && !self.lines[n].code.is_empty())
                else {
                    continue;
                };
                let why = match &e.key {
                    Some(k) => format!("`{k}` {}", e.message),
                    None => e.message.clone(),
                };
                refused.push(format!("{}: {why}", self.lines[n].code));
                self.refuse(n, &why);
                fixed = true;
            }
            if !fixed {
                return Err(err);
            }
        }
        wblab_scenario::parse(&self.render(), file_name).map(|_| refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_line_becomes_a_comment_and_the_rest_passes() {
        let mut d = Doc::default();
        d.table("sysctl", false);
        d.key("vm.dirty_ratio", Value::Integer(30), "/proc/sys/vm/dirty_ratio");
        d.key(
            "vm.dirty_background_ratio",
            Value::Integer(500),
            "/proc/sys/vm/dirty_background_ratio",
        );
        let refused = d.settle("snap.toml").expect("settles");
        assert_eq!(refused.len(), 1, "{refused:?}");
        let text = d.render();
        assert!(text.contains("\"vm.dirty_ratio\" = 30"), "{text}");
        assert!(text.contains("# refused by the model"), "{text}");
        let sc = wblab_scenario::parse(&text, "snap.toml").expect("passes");
        assert_eq!(sc.sysctl.dirty_ratio, 30);
    }

    #[test]
    fn a_refused_header_drops_its_table() {
        let mut d = Doc::default();
        d.table("cgroup", true);
        d.key("memory.max", Value::String("1GiB".into()), "no path");
        let refused = d.settle("snap.toml").expect("settles");
        assert!(!refused.is_empty());
        assert!(!d.render().lines().any(|l| l.starts_with("memory.max")), "{}", d.render());
    }

    #[test]
    fn hostile_text_stays_on_its_line() {
        let mut d = Doc::default();
        d.comment("a\nname = \"x\"");
        d.key("kernel", Value::String("6.1\"\n[machine]\ncpus = 1".into()), "x\ny");
        assert_eq!(d.render().lines().count(), 2, "{}", d.render());
        let refused = d.settle("s.toml").expect("settles");
        assert_eq!(refused.len(), 1, "the odd release is refused, not run: {refused:?}");
        assert!(!d.render().lines().any(|l| l.starts_with("name") || l.starts_with("[machine]")));
    }
}
