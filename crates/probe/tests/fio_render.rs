//! The job file `wblab measure` hands to real fio, as real fio reads it: every shipped job file
//! (`scenarios/fio/`), rendered from its parsed jobs onto a measurement's plan, passes
//! `fio --parse-only`, and holds none of the options the renderer does not write. Skipped
//! with a note where fio is not installed (`.ci/run` and `scripts/setup-measure` install it).

use std::path::{Path, PathBuf};
use wblab_probe::plan::{Host, Plan};
use wblab_probe::MeasureOptions;

fn job_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fio");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "fio"))
        .collect();
    v.sort();
    v
}

#[test]
fn rendered_job_files_are_what_real_fio_reads() {
    let Some(fio) = wblab_probe::sys::which("fio") else {
        eprintln!("\n*** SKIPPED: fio is not installed (scripts/setup-measure installs it) ***\n");
        return;
    };
    let files = job_files();
    assert!(files.len() >= 10, "{files:?}");
    let dir = std::env::temp_dir().join(format!("wblab-fio-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in files {
        let sc = wblab_scenario::load(&f).unwrap_or_else(|e| panic!("{e}"));
        let mut opts = MeasureOptions::new(dir.join("out"));
        opts.scratch_parent = dir.clone();
        let plan = Plan::build(&sc, &opts, &Host::example()).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(plan.escapes().is_empty(), "{}: {:?}", f.display(), plan.escapes());
        let (_, text) = plan.fio.as_ref().expect("a job file");
        let job = dir.join("jobs.fio");
        std::fs::write(&job, text).unwrap();
        let o = std::process::Command::new(&fio).arg("--parse-only").arg(&job).output().unwrap();
        assert!(
            o.status.success(),
            "{}: fio refused the rendered job file:\n{}\n{}",
            f.display(),
            String::from_utf8_lossy(&o.stderr),
            text
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Allocated bytes of every regular file under `dir`, by path.
fn allocated(dir: &Path) -> Vec<(PathBuf, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else if m.is_file() {
                out.push((e.path(), m.len(), m.blocks() * 512));
            }
        }
    }
    out.sort();
    out
}

/// The files the harness writes before the run are the ones real fio's reading jobs open, at
/// the sizes they need: with them in place (sparse here, so the test writes nothing), fio's
/// setup (`--create_only`) lays out nothing and creates no other file. A wrong name or size
/// would make fio write its files during the measured run, through the run's throttle rules
/// and dirty limits, beside the other jobs.
#[test]
fn prefilled_files_are_the_ones_fio_reads() {
    let Some(fio) = wblab_probe::sys::which("fio") else {
        eprintln!("\n*** SKIPPED: fio is not installed (scripts/setup-measure installs it) ***\n");
        return;
    };
    let dir = std::env::temp_dir().join(format!("wblab-fio-prefill-{}", std::process::id()));
    let mut checked = 0;
    for f in job_files() {
        let sc = wblab_scenario::load(&f).unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut opts = MeasureOptions::new(dir.join("out"));
        opts.scratch_parent = dir.clone();
        let plan = Plan::build(&sc, &opts, &Host::example()).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for d in &plan.devices {
            std::fs::create_dir_all(&d.dir).unwrap();
        }
        for (file, size) in &plan.prefill {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::File::create(file).unwrap().set_len(*size).unwrap();
        }
        let before = allocated(&dir);
        let (_, text) = plan.fio.as_ref().expect("a job file");
        let job = dir.join("jobs.fio");
        std::fs::write(&job, text).unwrap();
        let o = std::process::Command::new(&fio)
            .arg("--create_only=1")
            .arg(&job)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}: {}", f.display(), String::from_utf8_lossy(&o.stderr));
        // Writing jobs may create (and fallocate) their own files; the readers' files must be
        // exactly those written beforehand, untouched.
        let after = allocated(&dir);
        for (p, len, blocks) in &before {
            assert!(
                after.contains(&(p.clone(), *len, *blocks)),
                "{}: fio laid out {} again",
                f.display(),
                p.display()
            );
        }
        let readers: Vec<String> = sc
            .tasks
            .iter()
            .filter_map(|t| match &t.job {
                wblab_sim::config::JobConfig::Fio(j) if j.rw.reads() => Some(j.name.clone()),
                _ => None,
            })
            .collect();
        for (p, _, _) in after.iter().filter(|a| !before.iter().any(|b| b.0 == a.0)) {
            let name = p.file_name().unwrap().to_string_lossy();
            assert!(
                !readers.iter().any(|r| name.starts_with(&format!("{r}."))),
                "{}: fio created {name} for a reading job, which the harness did not write",
                f.display()
            );
        }
        checked += usize::from(!plan.prefill.is_empty());
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(checked >= 5, "only {checked} job files read a file");
}
