//! Generated blocks inside Markdown files. A block is everything between an opening marker
//! line `<!-- wblab:NAME ARGS... -->` and the next closing line `<!-- /wblab -->`; only the
//! text between them belongs to the generator, so the prose around a table stays hand-written.

/// One generated block of a document.
#[derive(Debug, PartialEq, Eq)]
pub struct Block {
    /// The generator's name and its arguments, as written in the marker.
    pub name: String,
    pub args: Vec<String>,
    /// 1-based line of the opening marker, for messages.
    pub line: usize,
    /// Byte range of the generated text (after the opening line, up to the closing line).
    pub body: std::ops::Range<usize>,
}

const OPEN: &str = "<!-- wblab:";
const CLOSE: &str = "<!-- /wblab -->";
const END: &str = "-->";

/// Every block of `text`, in order. Errors (a marker never closed, a close without an open,
/// an opening marker with no name) come as `(line, message)`.
pub fn find(text: &str) -> Result<Vec<Block>, (usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String, Vec<String>, usize)> = None;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let lineno = i + 1;
        let next = offset + line.len();
        let trimmed = line.trim();
        if trimmed == CLOSE {
            let Some((at, name, args, start)) = open.take() else {
                return Err((lineno, format!("`{CLOSE}` without an opening `{OPEN}NAME -->`")));
            };
            blocks.push(Block {
                name,
                args,
                line: at,
                body: start..offset,
            });
        } else if let Some(rest) = trimmed.strip_prefix(OPEN) {
            if let Some((at, name, ..)) = &open {
                return Err((lineno, format!("block `{name}` opened at line {at} is not closed before this one")));
            }
            let Some(inner) = rest.strip_suffix(END) else {
                return Err((lineno, format!("a marker must end with `{END}` on the same line")));
            };
            let mut words = inner.split_whitespace().map(str::to_string);
            let Some(name) = words.next() else {
                return Err((lineno, "a marker needs a generator name: `<!-- wblab:NAME -->`".to_string()));
            };
            open = Some((lineno, name, words.collect(), next));
        }
        offset = next;
    }
    match open {
        Some((at, name, ..)) => Err((at, format!("block `{name}` is never closed with `{CLOSE}`"))),
        None => Ok(blocks),
    }
}

/// `text` with each block's body replaced by `bodies[i]` (same order as `blocks`).
pub fn splice(text: &str, blocks: &[Block], bodies: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (b, body) in blocks.iter().zip(bodies) {
        out.push_str(&text[at..b.body.start]);
        out.push_str(body);
        at = b.body.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_blocks_with_arguments_and_splices_bodies() {
        let text =
            "intro\n<!-- wblab:device-keys hdd -->\nold\ntable\n<!-- /wblab -->\nmiddle\n<!-- wblab:elevators -->\n<!-- /wblab -->\nend\n";
        let blocks = find(text).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            (blocks[0].name.as_str(), blocks[0].args.clone(), blocks[0].line),
            ("device-keys", vec!["hdd".to_string()], 2)
        );
        assert_eq!(&text[blocks[0].body.clone()], "old\ntable\n");
        assert_eq!(&text[blocks[1].body.clone()], "");
        let out = splice(text, &blocks, &["new\n".to_string(), "x\n".to_string()]);
        assert_eq!(
            out,
            "intro\n<!-- wblab:device-keys hdd -->\nnew\n<!-- /wblab -->\nmiddle\n<!-- wblab:elevators -->\nx\n<!-- /wblab -->\nend\n"
        );
        // Splicing what is there gives the text back.
        let same: Vec<String> = blocks.iter().map(|b| text[b.body.clone()].to_string()).collect();
        assert_eq!(splice(text, &blocks, &same), text);
    }

    #[test]
    fn malformed_markers_are_errors_with_their_line() {
        assert_eq!(find("a\n<!-- wblab:x -->\nb\n").unwrap_err().0, 2);
        assert_eq!(find("<!-- /wblab -->\n").unwrap_err().0, 1);
        assert_eq!(find("<!-- wblab:x -->\n<!-- wblab:y -->\n<!-- /wblab -->\n").unwrap_err().0, 2);
        assert!(find("<!-- wblab: -->\n<!-- /wblab -->\n").unwrap_err().1.contains("generator name"));
        assert_eq!(find("no markers\n").unwrap(), vec![]);
    }
}
