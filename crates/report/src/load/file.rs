//! Opening a results directory's files without trusting them: only regular files are opened —
//! checked by their metadata first, as opening a FIFO named `trace.txt` would wait for a writer
//! forever and a device may never end — and a file read whole is capped at [`MAX_WHOLE_BYTES`].

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The most bytes a results file read whole may hold: far above what a run writes (a 60 s
/// run's largest, ops.csv or summary.json, is a few MB; the trace is streamed, not read whole),
/// far below what would exhaust memory once parsed.
pub const MAX_WHOLE_BYTES: u64 = 1 << 30;

/// The error of a file that is not there, so that a reader can tell "missing" (often fine: an
/// older build, a run without readers) from "there but unusable".
pub fn is_missing(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

fn not_regular(m: &std::fs::Metadata) -> io::Error {
    let t = m.file_type();
    let what = if t.is_dir() { "a directory" } else { special(&t) };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("is {what}, not a file wblab writes (refused without reading it)"),
    )
}

#[cfg(unix)]
fn special(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special(_: &std::fs::FileType) -> &'static str {
    "not a regular file"
}

/// `path` opened for reading if it is a regular file (symbolic links followed), with its size.
pub fn open_regular(path: &Path) -> io::Result<(File, u64)> {
    let m = std::fs::metadata(path)?;
    if !m.is_file() {
        return Err(not_regular(&m));
    }
    let f = File::open(path)?;
    // Replaced between the two looks: what was opened is what counts.
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(not_regular(&m));
    }
    Ok((f, m.len()))
}

/// A regular file's text, read whole: at most [`MAX_WHOLE_BYTES`], UTF-8.
pub fn read_text(path: &Path) -> io::Result<String> {
    let (f, len) = open_regular(path)?;
    let too_big = |n: u64| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{:.1} GiB, more than the {} GiB wblab reads whole: not a file a run writes",
                n as f64 / (1u64 << 30) as f64,
                MAX_WHOLE_BYTES >> 30
            ),
        )
    };
    if len > MAX_WHOLE_BYTES {
        return Err(too_big(len));
    }
    let mut text = String::new();
    // A file that grows while it is read is still bounded.
    f.take(MAX_WHOLE_BYTES + 1).read_to_string(&mut text).map_err(|e| {
        if e.kind() == io::ErrorKind::InvalidData {
            io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text: not a file wblab writes")
        } else {
            e
        }
    })?;
    if text.len() as u64 > MAX_WHOLE_BYTES {
        return Err(too_big(text.len() as u64));
    }
    Ok(text)
}
