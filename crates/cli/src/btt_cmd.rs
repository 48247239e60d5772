//! `wblab btt`: each block I/O's life (Q2G, G2I, I2D, D2C, Q2C) from a run's block trace, as
//! blktrace's btt prints it, with biolatency-style histograms per device.

use std::path::PathBuf;
use std::process::ExitCode;
use wblab_report::btt::{analyze, render, write_csv, BttOptions};

#[derive(clap::Args)]
pub struct BttArgs {
    /// A results directory (its trace.txt; simulated with `[trace] block = true` or
    /// `--trace-block`, or measured), or an ftrace text file with the block events.
    pub input: PathBuf,
    /// Histograms of the whole life of each I/O (Q2C, as `biolatency -Q`) instead of its time
    /// on the device (D2C, `biolatency -D`).
    #[arg(short = 'Q', long)]
    pub queued: bool,
    /// Also write one row per completed I/O (device, rwbs, sector, process, the Q, G, I, D
    /// and C times in ns, merges) to this CSV file.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

/// Trace files larger than this are refused: btt reads the whole text (a 60 s run of 1000
/// writers with the block trace is ~300 MB).
const MAX_TRACE_BYTES: u64 = 8 << 30;

pub fn run(a: BttArgs) -> ExitCode {
    let path = if a.input.is_dir() {
        a.input.join(wblab_report::TRACE_FILE)
    } else {
        a.input.clone()
    };
    match std::fs::metadata(&path) {
        Ok(m) if m.len() > MAX_TRACE_BYTES => {
            eprintln!(
                "error: {}: {} bytes is more than btt reads ({MAX_TRACE_BYTES})",
                path.display(),
                m.len()
            );
            return ExitCode::from(2);
        }
        Ok(_) => {}
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            if a.input.is_dir() {
                eprintln!("  hint: a results directory of `wblab run` or `wblab measure` has trace.txt");
            }
            return ExitCode::from(2);
        }
    }
    let text = match std::fs::read(&path) {
        // A trace may carry non-UTF-8 bytes in a comm: keep the rest.
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            eprintln!("error: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let b = analyze(&text, BttOptions { keep_ios: a.csv.is_some() });
    print!("{}", render(&b, a.queued));
    if let Some(csv) = &a.csv {
        if let Err(e) = std::fs::write(csv, write_csv(&b)) {
            eprintln!("error: {}: {e}", csv.display());
            return ExitCode::from(2);
        }
    }
    if b.events == 0 {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
