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
