//! Reading the files a scenario names — the scenario itself, a fio job file — as text:
//! regular files only, opened so that a FIFO or a device cannot block or flood the reader,
//! and no larger than a cap that is far above any real scenario or job file.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest scenario file: 10,000 `[[task]]` tables, the most a scenario may have, take
/// well under 1 MiB.
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;
/// The largest fio job file: 10,000 job sections with a dozen options each take about 2 MiB.
pub const MAX_JOB_FILE_BYTES: u64 = 8 << 20;

/// The text of the regular file at `path`, at most `cap` bytes, or why not (without the
/// path: callers name it).
pub fn text_file(path: &Path, cap: u64) -> Result<String, String> {
    // O_NONBLOCK: a FIFO opens at once instead of waiting for a writer; it is refused below.
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        let kind = if meta.is_dir() { "a directory" } else { "not a regular file" };
        return Err(format!("{kind}: give the path of a text file"));
    }
    if meta.len() > cap {
        return Err(format!(
            "{} bytes, more than the {} MiB such a file may have",
            meta.len(),
            cap >> 20
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow after the check: read one byte past the cap to see it.
    f.take(cap + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > cap {
        return Err(format!("more than the {} MiB such a file may have", cap >> 20));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text (byte {} is not)", e.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_regular_text_files_are_read() {
        let dir = std::env::temp_dir().join(format!("wblab-read-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = dir.join("ok.fio");
        std::fs::write(&ok, "[j]\nsize=1m\n").unwrap();
        assert_eq!(text_file(&ok, 100).unwrap(), "[j]\nsize=1m\n");
        assert!(text_file(&ok, 5).unwrap_err().contains("more than"));
        assert!(text_file(&dir, 100).unwrap_err().contains("directory"));
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Returns at once: no writer is waited for.
        assert!(text_file(&fifo, 100).unwrap_err().contains("not a regular file"));
        assert!(text_file(Path::new("/dev/zero"), 100).unwrap_err().contains("not a regular file"));
        std::fs::write(&ok, [0xff, 0xfe]).unwrap();
        assert!(text_file(&ok, 100).unwrap_err().contains("UTF-8"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
