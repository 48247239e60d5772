//! Any bytes as a scenario file: the parser returns a scenario or an error that points inside
//! the file and stays short; it never panics, loops or allocates without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = wblab_scenario::parse_all(&text, "fuzz.toml") {
        let lines = text.split('\n').count();
        assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}: {e}", e.line);
        assert!(e.column >= 1, "{e}");
        assert!(!e.message.is_empty());
        assert!(e.to_string().chars().count() <= 8192, "a {}-character error", e.to_string().len());
    }
});
