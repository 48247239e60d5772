//! Hostile files (`tests/repro/t3/`, each header says what they once did) and hostile strings
//! in every place a scenario holds one: each gives an error naming the file, the line and
//! the key, and nothing of the file's text reaches a name, a path or a job file unchecked.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use wblab_scenario::{load, parse, ScenarioError};
use wblab_testkit::fixtures::toml_quoted;

fn t3(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/repro/t3").join(file)
}

/// The 1-based line of `file` that starts with `start` (after blanks).
fn line_of(file: &str, start: &str) -> usize {
    let text = std::fs::read_to_string(t3(file)).unwrap();
    text.lines()
        .position(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("{file}: no {start}"))
        + 1
}

fn refused(file: &str) -> ScenarioError {
    match load(&t3(file)) {
        Ok(_) => panic!("{file} was accepted"),
        Err(e) => e,
    }
}

/// An error that points into the file: its name, a line and a key.
fn located(e: &ScenarioError, line: usize, key: &str, message: &str) {
    let shown = e.to_string();
    assert_eq!(e.line, line, "{shown}");
    assert_eq!(e.key.as_deref(), Some(key), "{shown}");
    assert!(e.message.contains(message), "{shown}");
    assert!(e.hint.is_some(), "a hint: {shown}");
    assert!(
        !shown.contains('\n') || shown.lines().skip(1).all(|l| l.starts_with("  hint: ")),
        "{shown}"
    );
}

#[test]
fn a_newline_in_a_swept_fio_value_is_refused_where_it_is_written() {
    for f in ["measure-sweep-fio-newline-exec.toml", "measure-sweep-fio-newline-file.toml"] {
        let e = refused(f);
        located(
            &e,
            line_of(f, "\"fio/probe/description\""),
            "fio/probe/description",
            "a newline (U+000A)",
        );
    }
}

#[test]
fn device_names_cannot_climb_out_of_their_directory() {
    let e = refused("measure-device-dotdot-leak.toml");
    located(
        &e,
        line_of("measure-device-dotdot-leak.toml", "name = \"..\""),
        "name",
        "does not start with a letter or digit",
    );
    for bad in [".", "..", "a/b", "-x", "sd a", "x\u{202E}"] {
        let text = format!("[[device]]\nname = {}\n", toml_quoted(bad));
        let e = parse(&text, "d.toml").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (2, Some("name")), "{bad}: {e}");
    }
}

#[test]
fn a_name_too_long_for_a_file_name_is_refused_at_its_line() {
    let e = refused("scenario-name-too-long.toml");
    located(&e, line_of("scenario-name-too-long.toml", "name ="), "name", "too long");
    // The message does not repeat the whole name.
    assert!(e.to_string().len() < 400, "{e}");
}

#[test]
fn job_files_are_bounded() {
    // The second job's numjobs takes the clones past 10,000.
    let e = refused("fio-numjobs-total-unbounded.fio");
    let second = std::fs::read_to_string(t3("fio-numjobs-total-unbounded.fio"))
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("numjobs"))
        .nth(1)
        .unwrap()
        .0
        + 1;
    located(&e, second, "numjobs", "20000 job clones");
    let e = refused("fio-runtime-wraps.fio");
    located(&e, line_of("fio-runtime-wraps.fio", "runtime="), "runtime", "out of range");
    let e = refused("fio-zipf-nan.fio");
    located(
        &e,
        line_of("fio-zipf-nan.fio", "random_distribution"),
        "random_distribution",
        "not a finite number",
    );
    for (value, what) in [
        ("zipf:inf", "finite"),
        ("zipf:-inf", "finite"),
        ("pareto:1e-300", "1e-15"),
        ("pareto:NaN", "finite"),
    ] {
        let text = format!("[j]\nrw=randread\nsize=1m\nrandom_distribution={value}\n");
        let e = wblab_scenario::fio_scenario(&text, "j.fio").unwrap_err();
        assert!(e.message.contains(what), "{value}: {e}");
    }
    for (opt, value) in [("startdelay", "25h"), ("ramp_time", "99999999999999999999"), ("thinktime", "1e30")] {
        let text = format!("[j]\nsize=1m\n{opt}={value}\n");
        let e = wblab_scenario::fio_scenario(&text, "j.fio").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (3, Some(opt)), "{e}");
    }
}

/// A job file that runs until its I/O is done must be able to finish within its bound.
#[test]
fn an_untimed_job_file_asking_for_more_than_its_bound_allows_is_refused() {
    let e = refused("fio-loops-hours.fio");
    located(&e, line_of("fio-loops-hours.fio", "[j]"), "loops", "1024 TiB of I/O");
    // With a runtime it is bounded by that, and runs.
    let text = "[j]\nrw=write\nsize=1m\nloops=1073741824\nruntime=2s\n";
    let sc = wblab_scenario::fio_scenario(text, "j.fio").unwrap();
    assert!(sc.duration <= 62_000_000_000, "{}", sc.duration);
    // Sized jobs keep the job file's bound.
    let sc = wblab_scenario::fio_scenario("[j]\nrw=write\nsize=1g\nloops=100\n", "j.fio").unwrap();
    assert_eq!(sc.duration, wblab_scenario::FIO_MAX_DURATION);
}

#[test]
fn fio_paths_read_only_small_regular_text_and_never_quote_it() {
    let dir = std::env::temp_dir().join(format!("wblab-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("secret");
    std::fs::write(&secret, "root-password-line: hunter2 secret\n[j]\nsecret hunter3\n").unwrap();
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let big = dir.join("big.fio");
    std::fs::write(&big, "[j]\nsize=1m\n".repeat(1 + (8 << 20) / 12)).unwrap();
    for (path, want) in [
        (secret.clone(), "is this a fio job file?"),
        (fifo, "not a regular file"),
        (PathBuf::from("/dev/zero"), "not a regular file"),
        (dir.clone(), "a directory"),
        (big, "MiB such a file may have"),
    ] {
        let text = format!("name = \"leak\"\n[[task]]\nfio = \"{}\"\n", path.display());
        let e = parse(&text, &dir.join("s.toml").display().to_string()).unwrap_err();
        let shown = e.to_string();
        assert!(shown.contains(want), "{}: {shown}", path.display());
        assert!(!shown.contains("hunter"), "{shown}");
        assert_eq!((e.line, e.key.as_deref()), (3, Some("fio")), "{shown}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every place a string goes: the hostile value is refused at its own line and key.
const PLACES: &[(&str, &str)] = &[
    ("name", "name = {V}\nduration = \"1s\"\n"),
    ("kernel", "kernel = {V}\n"),
    ("duration", "duration = {V}\n"),
    ("name", "[[device]]\nname = {V}\n"),
    ("model", "[[device]]\nmodel = {V}\n"),
    ("mount", "[[device]]\nname = \"sda\"\nfs = \"ext4\"\nmount = {V}\n"),
    ("queue/scheduler", "[[device]]\n\"queue/scheduler\" = {V}\n"),
    ("name", "[[task]]\nname = {V}\njob = \"dd\"\n"),
    ("file", "[[task]]\nname = \"w\"\njob = \"dd\"\nfile = {V}\n"),
    ("ionice", "[[task]]\nname = \"w\"\njob = \"dd\"\nionice = {V}\n"),
    ("path", "[[cgroup]]\npath = {V}\n"),
    (
        "fio/j/description",
        "[[task]]\nfio = \"[j]\\nsize=1m\\n\"\n[sweep]\n\"fio/j/description\" = [\"a\", {V}]\n",
    ),
    (
        "task/w/file",
        "[[task]]\nname = \"w\"\njob = \"dd\"\n[sweep]\n\"task/w/file\" = [{V}]\n",
    ),
    ("vm.dirty_bytes", "[sysctl]\n\"vm.dirty_bytes\" = {V}\n"),
];

fn hostile_string() -> impl Strategy<Value = String> {
    let bad = prop::sample::select(vec![
        '\n', '\r', '\0', '\u{1b}', '\u{7f}', '\u{85}', '\u{2028}', '\u{202E}', '\u{2067}', '\u{8}',
    ]);
    ("[a-z./ _-]{0,12}", bad, "[a-z0-9=./]{0,12}").prop_map(|(a, c, b)| format!("{a}{c}{b}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A control character anywhere is refused where it stands, and the message holds none.
    #[test]
    fn control_characters_are_refused_in_every_string(place in 0..PLACES.len(), v in hostile_string()) {
        let (key, shape) = PLACES[place];
        let quoted = toml_quoted(&v);
        let text = shape.replace("{V}", &quoted);
        let line = text.lines().position(|l| l.contains(&quoted)).unwrap() + 1;
        let e = parse(&text, "h.toml").unwrap_err();
        let shown = e.to_string();
        prop_assert_eq!(e.line, line, "{}", shown);
        prop_assert_eq!(e.key.as_deref(), Some(key), "{}", shown);
        prop_assert!(e.message.contains("holds"), "{}", shown);
        prop_assert!(!shown.chars().any(|c| c != '\n' && wblab_scenario::names::is_forbidden(c)), "{}", shown.escape_debug());
    }

    /// Inside a job file, a line with a control character is refused at that line.
    #[test]
    fn control_characters_are_refused_in_job_files(v in hostile_string(), before in 0usize..4) {
        let mut lines: Vec<String> = vec!["[j]".into(), "rw=read".into(), "size=1m".into(), "bs=4k".into()];
        let at = 1 + before.min(3);
        lines.insert(at, format!("description={v}"));
        let text = lines.join("\n");
        match wblab_scenario::fio_scenario(&text, "j.fio") {
            // `\n` and `\r\n` end lines: the rest is a line of its own, which must parse.
            Ok(sc) => prop_assert!(v.contains('\n') || v.ends_with('\r'), "accepted {:?}: {:?}", v, sc.tasks.len()),
            Err(e) => {
                prop_assert!(e.line > at, "{}", e);
                prop_assert!(!e.to_string().chars().any(|c| c != '\n' && wblab_scenario::names::is_forbidden(c)), "{}", e);
            }
        }
    }
}
