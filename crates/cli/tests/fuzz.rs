//! The CI batch of the scenario fuzzer: generated and damaged files through the parser and
//! the simulator with the laws checked. A finding fails the test and leaves its reproducer in
//! the scratch directory named in the output.

use wblab_testkit::cli::{run, scratch};

const BIN: &str = env!("CARGO_BIN_EXE_wblab");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A number from the summary line: the word before `what`.
fn count(out: &str, what: &str) -> u64 {
    let at = out.find(what).unwrap_or_else(|| panic!("no `{what}` in:\n{out}"));
    out[..at].split_whitespace().last().unwrap().parse().unwrap()
}

#[test]
fn a_ci_batch_finds_nothing() {
    let dir = scratch(env!("CARGO_TARGET_TMPDIR"), "fuzz-ci");
    let out = run(
        BIN,
        &["fuzz", "--cases", "10000", "--seed", "2026", "-q", "--out", dir.to_str().unwrap()],
    );
    let o = text(&out.stdout);
    assert!(out.status.success(), "findings:\n{o}{}", text(&out.stderr));
    assert!(o.contains("no findings"), "{o}");
    // The batch exercised both sides: the simulator and the error paths.
    let (valid, refused, runs) = (count(&o, "valid"), count(&o, "refused"), count(&o, "runs with the laws"));
    assert!(valid >= 2000 && refused >= 2000, "{o}");
    assert!(runs >= valid * 9 / 10, "most valid cases ran: {o}");
    // And `wblab measure`'s plan of every valid file stayed in its scratch directory.
    assert!(count(&o, "measurement plans built") >= valid, "{o}");
}

#[test]
fn a_case_prints_the_same_file_every_time() {
    let a = run(BIN, &["fuzz", "--seed", "5", "--print", "123"]);
    let b = run(BIN, &["fuzz", "--seed", "5", "--print", "123"]);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    assert!(text(&a.stdout).contains("[[task]]"), "{}", text(&a.stdout));
    assert_ne!(a.stdout, run(BIN, &["fuzz", "--seed", "6", "--print", "123"]).stdout);
}
