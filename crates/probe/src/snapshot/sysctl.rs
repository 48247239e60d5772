//! `vm.*` sysctls: read from `/proc/sys/vm`, or from pasted `sysctl -a` text read leniently
//! (every line `key = value`; anything else is skipped and counted, never an error).

use super::files::Root;
use toml::Value;

/// One sysctl as the machine (or the paste) gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sysctl {
    /// `vm.dirty_ratio`, whatever spelling it came in (`vm/dirty_ratio`, `/proc/sys/vm/...`).
    pub key: String,
    /// The value as printed, blanks collapsed (`vm.lowmem_reserve_ratio = 256 256 32 0 0`).
    pub value: String,
    /// Where it came from: `/proc/sys/vm/dirty_ratio` or `paste.txt:12`.
    pub source: String,
}

/// What a lenient read of pasted text found.
#[derive(Clone, Debug, Default)]
pub struct Pasted {
    pub sysctls: Vec<Sysctl>,
    /// Lines that were not `key = value` (`sysctl: permission denied ...`), by number.
    pub skipped: Vec<usize>,
}

/// `vm/dirty_ratio` and `/proc/sys/vm/dirty_ratio` as `sysctl` prints them.
fn normalize(key: &str) -> String {
    key.trim().trim_start_matches("/proc/sys/").replace('/', ".")
}

fn collapse(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads `sysctl -a` output (or `sysctl -a | grep vm`, or lines copied from a scenario):
/// `key = value`, `key=value` or `key: value`; comments and blank lines are ignored.
pub fn parse_pasted(text: &str, file: &str) -> Pasted {
    let mut p = Pasted::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some((k, v)) = line.split_once('=').or_else(|| line.split_once(':')) else {
            p.skipped.push(i + 1);
            continue;
        };
        let key = normalize(k);
        if key.is_empty() || key.contains(char::is_whitespace) || key == "sysctl" {
            p.skipped.push(i + 1);
            continue;
        }
        let value = collapse(v.trim().trim_matches('"'));
        p.sysctls.push(Sysctl {
            key,
            value,
            source: format!("{file}:{}", i + 1),
        });
    }
    p
}

/// Every readable file of `/proc/sys/vm` (write-only ones such as `drop_caches` and
/// `compact_memory` do not read and are left out).
pub fn read_proc(root: &Root) -> Vec<Sysctl> {
    root.list("/proc/sys/vm")
        .into_iter()
        .filter_map(|name| {
            let path = format!("/proc/sys/vm/{name}");
            let value = collapse(&root.read(&path)?);
            Some(Sysctl {
                key: format!("vm.{name}"),
                value,
                source: path,
            })
        })
        .collect()
}

/// A sysctl's value as a scenario writes it: an integer, several (an array), or text.
pub fn value(v: &str) -> Value {
    let ints: Option<Vec<i64>> = v.split_whitespace().map(|t| t.parse().ok()).collect();
    match ints.as_deref() {
        Some([one]) => Value::Integer(*one),
        Some(many) if !many.is_empty() => Value::Array(many.iter().map(|&i| Value::Integer(i)).collect()),
        _ => Value::String(v.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_text_is_read_whatever_its_spelling() {
        let text = "vm.dirty_ratio = 30\nsysctl: permission denied on key 'vm.stat_refresh'\nvm.lowmem_reserve_ratio = 256\t256\t32\t0\t0\n\n/proc/sys/vm/dirty_bytes=0\nvm/swappiness: 60\ngarbage line here\n";
        let p = parse_pasted(text, "paste");
        let keys: Vec<&str> = p.sysctls.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            ["vm.dirty_ratio", "vm.lowmem_reserve_ratio", "vm.dirty_bytes", "vm.swappiness"]
        );
        assert_eq!(p.sysctls[1].value, "256 256 32 0 0");
        assert_eq!(p.sysctls[2].source, "paste:5");
        assert_eq!(p.skipped, vec![2, 7]);
        assert_eq!(
            value("256 256 32 0 0"),
            Value::Array(vec![256.into(), 256.into(), 32.into(), 0.into(), 0.into()])
        );
        assert_eq!(value("30"), Value::Integer(30));
    }
}
