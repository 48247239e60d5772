//! `wblab snapshot`: a scenario of this machine (or of another's copied /proc and /sys, or of
//! pasted `sysctl -a` text), checked and written with where every value came from.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use wblab_probe::snapshot::{snapshot, SnapshotOptions};

#[derive(clap::Args)]
pub struct SnapshotArgs {
    /// Read another machine's files: a directory holding its `proc/` and `sys/` (as copied by
    /// `tar` of /proc/sys/vm, /proc/meminfo, /proc/mounts, /sys/block, ...). Default: this
    /// machine, unless --lenient is given alone.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Pasted `sysctl -a` output (a file, or `-` for standard input), read leniently: lines
    /// that are not `key = value` are skipped and counted, sysctls the model does not use are
    /// listed as comments. Alone, it sets the sysctls of the default machine; with --root its
    /// values override the machine's.
    #[arg(long, value_name = "FILE")]
    lenient: Option<String>,
    /// The scenario's `name` [default: snapshot-HOSTNAME].
    #[arg(long)]
    name: Option<String>,
    /// Also copy every file the snapshot read into DIR (new or empty): `--root DIR` on any
    /// machine then gives the same scenario. Run it on the machine of the incident and bring
    /// the directory back.
    #[arg(long, value_name = "DIR")]
    save_files: Option<PathBuf>,
    /// Write the scenario here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// The most pasted text read: `sysctl -a` of a large machine is ~100 KiB.
const MAX_PASTE_BYTES: u64 = 4 << 20;

fn read_paste(name: &str) -> Result<String, String> {
    let mut buf = Vec::new();
    let read = if name == "-" {
        std::io::stdin().take(MAX_PASTE_BYTES).read_to_end(&mut buf)
    } else {
        std::fs::File::open(name).and_then(|f| f.take(MAX_PASTE_BYTES).read_to_end(&mut buf))
    };
    read.map_err(|e| format!("cannot read {name}: {e}"))?;
    String::from_utf8(buf).map_err(|_| format!("{name} is not UTF-8 text (expected `sysctl -a` output)"))
}

pub fn run(a: SnapshotArgs) -> ExitCode {
    let pasted = match a.lenient.as_deref().map(|n| read_paste(n).map(|t| (n.to_string(), t))).transpose() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: --lenient {e}");
            return ExitCode::from(2);
        }
    };
    let root = a.root.clone().or_else(|| pasted.is_none().then(|| PathBuf::from("/")));
    if let Some(r) = &a.root {
        if !r.is_dir() {
            eprintln!(
                "error: --root {}: not a directory\n  hint: give a directory holding a machine's proc/ and sys/ files",
                r.display()
            );
            return ExitCode::from(2);
        }
    }
    let opts = SnapshotOptions {
        root,
        pasted,
        name: a.name,
        save_files: a.save_files.clone(),
    };
    let snap = match snapshot(&opts) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match &a.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &snap.text) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
        None => print!("{}", snap.text),
    }
    let to = a.output.as_ref().map_or(String::new(), |p| format!(" → {}", p.display()));
    if let (Some(n), Some(dir)) = (snap.saved, &a.save_files) {
        eprintln!(
            "snapshot: {n} files read copied into {} (`wblab snapshot --root {}` reads them anywhere)",
            dir.display(),
            dir.display()
        );
    }
    eprintln!(
        "snapshot{to}: {} device(s), {} cgroup(s), {} sysctl(s); {} item(s) not modelled, {} value(s) refused by the model (commented, with why); `wblab check` accepts it",
        snap.devices,
        snap.cgroups,
        snap.sysctls,
        snap.not_modelled.len(),
        snap.refused.len()
    );
    ExitCode::SUCCESS
}
