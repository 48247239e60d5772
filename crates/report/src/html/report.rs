//! `wblab report`: SVG graphs and report.html from one or more results directories.

use crate::figures::{figures, Figure, Run};
use crate::html::report_html;
use crate::load::rundir::RunDir;
use std::path::{Path, PathBuf};

/// Name of the HTML report.
pub const REPORT_FILE: &str = "report.html";

/// What [`write_report`] wrote.
#[derive(Clone, Debug)]
pub struct ReportFiles {
    pub html: PathBuf,
    pub svgs: Vec<PathBuf>,
}

/// Legend names of runs: "scenario · kernel", made unique with the seed, then the directory
/// name, then a number.
pub fn run_labels(runs: &[RunDir]) -> Vec<String> {
    let mut labels: Vec<String> = runs.iter().map(|r| format!("{} · {}", r.name, r.kernel)).collect();
    let dup = |l: &[String], i: usize| l.iter().enumerate().any(|(j, x)| j != i && *x == l[i]);
    let extend = |labels: &mut Vec<String>, f: &dyn Fn(&RunDir) -> String| {
        let d: Vec<bool> = (0..labels.len()).map(|i| dup(labels, i)).collect();
        for (i, r) in runs.iter().enumerate() {
            if d[i] {
                labels[i] = format!("{} · {}", labels[i], f(r));
            }
        }
    };
    extend(&mut labels, &|r| format!("seed {}", r.seed));
    extend(&mut labels, &|r| {
        r.dir.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default()
    });
    let d: Vec<bool> = (0..labels.len()).map(|i| dup(&labels, i)).collect();
    for (i, l) in labels.iter_mut().enumerate() {
        if d[i] {
            *l = format!("{l} #{}", i + 1);
        }
    }
    labels
}

/// The figures of a set of loaded runs.
pub fn report_figures(runs: &[RunDir]) -> Vec<Figure> {
    let labels = run_labels(runs);
    let rs: Vec<Run> = runs.iter().zip(labels).map(|(data, label)| Run { data, label }).collect();
    figures(&rs)
}

/// Write every figure as `<out>/<name>.svg` and `<out>/report.html` (which inlines them).
pub fn write_report(runs: &[RunDir], out: &Path) -> std::io::Result<ReportFiles> {
    std::fs::create_dir_all(out)?;
    let labels = run_labels(runs);
    let rs: Vec<Run> = runs.iter().zip(labels).map(|(data, label)| Run { data, label }).collect();
    let figs = figures(&rs);
    let (files, inline) = render_all(&figs);
    let mut svgs = Vec::new();
    for (f, svg) in figs.iter().zip(&files) {
        let p = out.join(format!("{}.svg", f.file));
        std::fs::write(&p, svg)?;
        svgs.push(p);
    }
    let html = out.join(REPORT_FILE);
    let diff = (runs.len() > 1)
        .then(|| {
            runs.iter()
                .map(|r| crate::compare::load(&r.dir))
                .collect::<std::io::Result<Vec<_>>>()
                .ok()
        })
        .flatten()
        .map(|d| crate::compare::compare(&d));
    std::fs::write(&html, report_html(&rs, &figs, &inline, runs.len() > 1, diff.as_ref()))?;
    Ok(ReportFiles { html, svgs })
}

/// Every chart rendered twice (with its title for its .svg file, without for report.html),
/// the renderings shared among the cores: a chart of millions of throttle events takes a
/// while, and each rendering is independent of the others.
fn render_all(figs: &[Figure]) -> (Vec<String>, Vec<String>) {
    let jobs: Vec<(usize, bool)> = (0..figs.len()).flat_map(|i| [(i, true), (i, false)]).collect();
    let done = crate::par::map_in_order(&jobs, 4, |&(i, titled)| {
        let c = &figs[i].chart;
        if titled {
            c.to_svg()
        } else {
            c.to_svg_untitled()
        }
    });
    let mut files = Vec::with_capacity(figs.len());
    let mut inline = Vec::with_capacity(figs.len());
    for ((_, titled), svg) in jobs.into_iter().zip(done) {
        if titled {
            files.push(svg);
        } else {
            inline.push(svg);
        }
    }
    (files, inline)
}

/// Load `dirs` and write the report into `out`.
pub fn report_dirs(dirs: &[PathBuf], out: &Path) -> Result<ReportFiles, String> {
    let runs = dirs.iter().map(|d| RunDir::load(d)).collect::<Result<Vec<_>, _>>()?;
    write_report(&runs, out).map_err(|e| format!("cannot write the report to {}: {e}", out.display()))
}
