//! Whatever the input, parsing returns a scenario or an error; it never panics, and errors
//! always point inside the file.

use proptest::prelude::*;
use wblab_scenario::parse;

fn check(text: &str) {
    if let Err(e) = parse(text, "fuzz.toml") {
        let lines = text.split('\n').count();
        assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}: {e}", e.line);
        assert!(e.column >= 1, "{e}");
        assert!(!e.message.is_empty());
    }
}

#[test]
fn nasty_inputs() {
    let deep = format!("a = {}1{}", "[".repeat(500), "]".repeat(500));
    let many_tasks = "[[task]]\nname = \"t\"\njob = \"sync\"\n".repeat(50);
    let inputs = [
        "",
        "\u{feff}",
        "\n\n\n",
        "=",
        "[",
        "[[task]]",
        "[[device]]\n[[device]]\n[[device]]",
        "duration = 1e999",
        "duration = 1.5",
        "duration = \"99999999999999999999999999999999999h\"",
        "duration = \"1.00000000000000000000000000000000000000000000001s\"",
        "seed = 99999999999999999999999999999999999999999999",
        "seed = -9223372036854775808",
        "seed = 18446744073709551615",
        "hz = 0x7fffffffffffffff",
        "[machine]\nmemory = \"18446744073709551615\"",
        "[machine]\nmemory = 9223372036854775807\ncpus = 4294967296",
        "[machine]\nmemory = 1979-05-27T07:32:00Z",
        "[sysctl]\nvm = { dirty_ratio = { x = 1 } }",
        "[sysctl]\nvm.dirty_ratio = [1, 2]",
        "[sysctl]\n\"\" = 1",
        "sysctl = 5",
        "task = 5",
        "task = [1, 2]",
        "task = []",
        "device = []",
        "device = [{ name = \"sda\" }, \"sdb\"]",
        "[[device]]\nname = \"\"",
        "[[device]]\nsize = \"0\"",
        "[[device]]\nmajor = 8\nminor = 0\n[[device]]\nname = \"sdb\"\nmajor = 8\nminor = 0",
        "[[device]]\nmodel = \"ssd\"\nqueue_depth = 1\n\"queue/nr_requests\" = 2",
        "[[device]]\nqueue.iosched.async_depth = 4294967295",
        "[[device]]\n\"queue/wbt_lat_usec\" = -9223372036854775808",
        "[[device]]\n\"/sys/block/\" = 1\n\"/sys/class/bdi/\" = 2",
        "[[task]]\nname = \"x\"\njob = \"dd\"\nblocks = 18446744073709551615\nbs = \"1GiB\"",
        "[[task]]\nname = \"x\"\njob = \"cat\"\ncount = 100000\nfile_size = \"1PiB\"",
        "[[task]]\nname = \"x\"\njob = \"dd\"\nfile = \"/mnt/\"",
        "[[task]]\nname = \"x\"\njob = \"dd\"\nfile = \"/mnt//x\"\ndevice = \"sda\"",
        "[[task]]\nname = \"\u{0}\"\njob = \"dd\"",
        "[[task]]\nname = \"x\"\njob = \"fsync\"\ninterval = \"0s\"",
        "[[task]]\nname = \"x\"\njob = \"dd\"\nstart = \"18446744073709551615ns\"",
        "duration = \"18446744073709551615\"\n[[task]]\nname = \"x\"\njob = \"dd\"\nstart = \"18446744073709551614\"\nstop = \"18446744073709551615\"",
        "[trace]\nwriteback = 2",
        "name = \"..\"",
        "kernel = \"6.\"",
        "kernel = \"6..1\"",
        "kernel = \"6.1.2.3\"",
        deep.as_str(),
        many_tasks.as_str(),
    ];
    for text in inputs {
        check(text);
    }
}

/// Lines of real scenarios: fuzzing recombines and corrupts them.
fn corpus() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut lines = Vec::new();
    for sub in ["../../scenarios", "tests/bad"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            // Scenario files only (scenarios/fio/ holds job files).
            if !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(path).unwrap();
            lines.extend(text.lines().map(str::to_string));
        }
    }
    lines
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn recombined_lines_never_panic(picks in prop::collection::vec(any::<prop::sample::Index>(), 0..40)) {
        let lines = corpus();
        let text: Vec<&str> = picks.iter().map(|i| lines[i.index(lines.len())].as_str()).collect();
        check(&text.join("\n"));
    }

    #[test]
    fn corrupted_default_never_panics(cuts in prop::collection::vec((any::<prop::sample::Index>(), "[ -~\\n\u{b5}é]{0,6}"), 1..6)) {
        let mut text = include_str!("../../../scenarios/default.toml").to_string();
        for (at, insert) in cuts {
            let mut i = at.index(text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            let end = (i + insert.len() / 2).min(text.len());
            let end = (end..=text.len()).find(|&e| text.is_char_boundary(e)).unwrap_or(text.len());
            text.replace_range(i..end, &insert);
        }
        check(&text);
    }

    #[test]
    fn unit_strings_never_panic(s in "[0-9. ]{0,30}[a-zA-Z/\u{b5} ]{0,6}") {
        let _ = wblab_scenario::units::parse_size(&s);
        let _ = wblab_scenario::units::parse_duration(&s);
        let _ = wblab_scenario::units::parse_rate(&s);
        check(&format!("duration = \"{s}\"\n[machine]\nmemory = \"{s}\"\nmemory_bandwidth = \"{s}\""));
    }
}

/// Fuzzing found 100 kB keys echoed whole in errors: what comes back is bounded, whatever goes
/// in, and still names the key.
#[test]
fn long_input_is_not_echoed_whole() {
    let long = "x".repeat(100_000);
    for text in [
        format!("{long} = 1"),
        format!("[sysctl]\n\"vm.{long}\" = 1"),
        format!("[[device]]\nmodel = \"{long}\""),
        format!("[[task]]\nname = \"t\"\njob = \"dd\"\nfile = \"/mnt/{long}/f\""),
        format!("duration = \"{long}\""),
    ] {
        let e = parse(&text, "long.toml").expect_err("refused");
        let shown = e.to_string();
        assert!(shown.chars().count() < 1500, "{} characters: {}", shown.len(), &shown[..300]);
        assert!(shown.contains("xxxx"), "{shown}");
    }
}

#[test]
fn too_many_devices_is_an_error_naming_the_limit() {
    let text: String = (0..300)
        .map(|i| format!("[[device]]\nname = \"d{i}\"\nmodel = \"ssd\"\n"))
        .collect();
    let e = parse(&text, "many.toml").expect_err("refused");
    assert!(e.message.contains("more than the 256"), "{e}");
    assert_eq!(e.line, 256 * 3 + 1, "{e}");
}
