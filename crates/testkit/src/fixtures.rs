//! Scenario texts several suites use.

/// A short version of the default experiment, as a user would write it: `name`, 8 s with
/// `seed`, 1 GiB, two `dd` and a `cat` (from 2 s) on an HDD.
pub fn writers_and_a_reader(name: &str, seed: u64) -> String {
    format!(
        r#"
name = "{name}"
duration = "8s"
seed = {seed}
[machine]
memory = "1GiB"
cpus = 2
[[device]]
name = "sda"
model = "hdd"
[[task]]
name = "dd"
job = "dd"
count = 2
[[task]]
name = "reader"
job = "cat"
file_size = "256MiB"
start = "2s"
"#
    )
}

/// [`writers_and_a_reader`] plus a random-read latency probe: every kind of task the report
/// draws (pauses, bandwidth, op latency).
pub fn with_probe(name: &str, seed: u64) -> String {
    writers_and_a_reader(name, seed)
        + r#"[[task]]
name = "probe"
job = "randread"
file_size = "64MiB"
think = "20ms"
"#
}

/// `v` as a TOML basic string, control characters as `\uXXXX`: hostile values written into
/// a scenario's text exactly.
pub fn toml_quoted(v: &str) -> String {
    let mut out = String::from("\"");
    for c in v.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
