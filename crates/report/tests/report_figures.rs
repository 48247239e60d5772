//! Every graph of the report, drawn from real simulated runs written to results directories
//! and read back, is checked for content: the series it must have, labelled axes, values in
//! the range the run's own figures allow. Also report.html, the overlay of two runs, and the
//! terminal views.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use wblab_report::figures::Figure;
use wblab_report::html::report::{report_figures, run_labels, write_report, REPORT_FILE};
use wblab_report::load::rundir::RunDir;
use wblab_report::plot::{Chart, Series};
use wblab_report::terminal::{dir_summary, latency_text, pick_latency};
use wblab_report::{terminal_summary, write_results_dir};
use wblab_sim::metrics::RunResult;

/// Two writers, a reader and a latency probe (from 1 s), with the block trace.
fn scenario() -> String {
    wblab_testkit::fixtures::with_probe("figs", 3) + "start = \"1s\"\n[trace]\nblock = true\n"
}

const WALL: f64 = 1.25;

struct Runs {
    results: Vec<RunResult>,
    dirs: Vec<PathBuf>,
}

/// The scenario above, and the same with small dirty limits, written under target/tmp.
fn runs() -> &'static Runs {
    static R: OnceLock<Runs> = OnceLock::new();
    R.get_or_init(|| {
        let base = wblab_testkit::cli::scratch(env!("CARGO_TARGET_TMPDIR"), "report-figures");
        let small = scenario().replace("name = \"figs\"", "name = \"figs-small\"").replace(
            "[machine]",
            "[sysctl]\n\"vm.dirty_bytes\" = \"64MiB\"\n\"vm.dirty_background_bytes\" = \"32MiB\"\n[machine]",
        );
        let mut results = Vec::new();
        let mut dirs = Vec::new();
        for (i, text) in [scenario(), small].iter().enumerate() {
            let sc = wblab_scenario::parse(text, "figs.toml").expect("test scenario parses");
            let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
            let dir = base.join(format!("run{i}"));
            write_results_dir(&dir, &r, WALL).expect("results written");
            results.push(r);
            dirs.push(dir);
        }
        Runs { results, dirs }
    })
}

fn load(i: usize) -> RunDir {
    RunDir::load(&runs().dirs[i]).expect("results directory loads")
}

fn by_file(figs: &[Figure]) -> BTreeMap<String, &Figure> {
    figs.iter().map(|f| (f.file.clone(), f)).collect()
}

fn series<'a>(c: &'a Chart, name: &str) -> &'a Series {
    c.series.iter().find(|s| s.name == name).unwrap_or_else(|| {
        panic!(
            "{}: no series `{name}`; have {:?}",
            c.id,
            c.series.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    })
}

/// The SVG carries the title, both axis labels and every named series.
fn check_svg(f: &Figure) {
    let svg = f.chart.to_svg();
    let esc = wblab_report::plot::esc;
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{}", f.file);
    assert!(svg.contains(&format!(">{}</text>", esc(&f.chart.title))), "{}: title", f.file);
    assert!(
        !f.chart.x.label.is_empty() && !f.chart.y.label.is_empty(),
        "{}: unlabelled axis",
        f.file
    );
    assert!(
        svg.contains("class=\"axis-label x\"") && svg.contains(&esc(&f.chart.x.label)),
        "{}",
        f.file
    );
    assert!(svg.contains(&esc(&f.chart.y.label)), "{}: y label", f.file);
    for s in &f.chart.series {
        assert!(
            svg.contains(&format!("data-name=\"{}\"", esc(&s.name))),
            "{}: series {} not drawn",
            f.file,
            s.name
        );
    }
    assert!(!svg.contains("NaN") && !svg.contains("inf"), "{}: non-finite coordinates", f.file);
    assert!(
        svg.matches("class=\"xticks\"").count() == 1 && svg.contains("</text>"),
        "{}",
        f.file
    );
}

fn ys(s: &Series) -> impl Iterator<Item = f64> + '_ {
    s.pts.iter().map(|p| p.1).filter(|y| y.is_finite())
}

fn xs_in(s: &Series, lo: f64, hi: f64) {
    for &(x, _) in &s.pts {
        assert!(x >= lo - 1e-9 && x <= hi + 1e-9, "{}: x {x} outside [{lo}, {hi}]", s.name);
    }
}

#[test]
fn every_figure_has_its_series_labelled_axes_and_values_in_range() {
    let r = &runs().results[0];
    let run = load(0);
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    let figs = report_figures(std::slice::from_ref(&run));
    let f = by_file(&figs);
    let expected = [
        "balance_dirty_pages-pause",
        "balance_dirty_pages-task-bw",
        "global_dirty_state",
        "bdi_dirty_state",
        "global_dirtied_written",
        "balance_dirty_pages-bandwidth",
        "iostat-bw",
        "iostat-util",
        "request-latency",
        "latency-timeline",
        "op-latency-timeline",
        "latency-cdf",
        "pause-cdf",
        "pressure",
    ];
    assert_eq!(
        f.keys().cloned().collect::<std::collections::BTreeSet<_>>(),
        expected.iter().map(|s| s.to_string()).collect()
    );
    for fig in &figs {
        assert!(fig.chart.has_data(), "{}: nothing to draw", fig.file);
        check_svg(fig);
    }
    let secs = r.sim_ns as f64 / 1e9;
    let dd: Vec<_> = r.tasks.iter().filter(|t| t.job == "dd").collect();

    // 1. Pauses: one series per writer, every pause a real sleep of at most MAX_PAUSE.
    let c = &f["balance_dirty_pages-pause"].chart;
    assert!(c.y.label.contains("pause") && c.y.label.contains("ms"), "{}", c.y.label);
    for t in &dd {
        let s = series(c, &format!("dd#{}", t.instance));
        assert!(!s.pts.is_empty());
        assert!(ys(s).all(|y| y > 0.0 && y <= 200.0), "pause out of (0, 200] ms");
        xs_in(s, 0.0, secs);
        // At most one mark per pause the task took (events without a sleep are not drawn).
        assert!(
            s.pts.len() as u64 <= t.pauses.count(),
            "{} marks, {} pauses",
            s.pts.len(),
            t.pauses.count()
        );
        assert!(s.pts.len() as u64 * 2 >= t.pauses.count(), "most pauses are drawn");
    }
    assert!(!c.series.iter().any(|s| s.name.starts_with("reader")), "readers are not throttled");

    // 2. Per-task bandwidth: the area under each line is what the writer dirtied in
    // balance_dirty_pages events; at most the bytes it wrote, and most of them.
    let c = &f["balance_dirty_pages-task-bw"].chart;
    for t in &dd {
        let s = series(c, &format!("dd#{}", t.instance));
        let area: f64 = s.pts.windows(2).map(|w| (w[1].0 - w[0].0) * w[0].1).sum::<f64>() * 1e6;
        let written = t.bytes_written as f64;
        assert!(area <= written * 1.02 + 8.0 * 1048576.0, "{area} > {written}");
        assert!(area >= written * 0.5, "{area} << {written}");
        assert!(ys(s).all(|y| (0.0..5000.0).contains(&y)));
        xs_in(s, 0.0, secs);
    }

    // 3. Global dirty state: the limits in their order, dirty under the hard limit.
    let c = &f["global_dirty_state"].chart;
    for n in [
        "dirty",
        "writeback",
        "freerun",
        "setpoint",
        "limit",
        "dirty thresh",
        "background thresh",
    ] {
        assert!(!series(c, n).pts.is_empty(), "{n} empty");
    }
    let last = |n: &str| series(c, n).pts.last().unwrap().1;
    assert!(last("background thresh") < last("freerun"));
    assert!(last("freerun") < last("setpoint"));
    assert!(last("setpoint") < last("limit"));
    let limit_max = ys(series(c, "limit")).fold(0.0, f64::max);
    let mem_mib = 1024.0;
    assert!(ys(series(c, "dirty")).all(|y| y >= 0.0 && y <= limit_max * 1.1 && y < mem_mib));
    assert!(c.y.label.contains("MiB"));

    // 4. Per-device share.
    let c = &f["bdi_dirty_state"].chart;
    assert!(ys(series(c, "sda wb_dirty")).all(|y| y >= 0.0 && y < mem_mib));
    assert!(ys(series(c, "sda wb_thresh")).any(|y| y > 0.0));

    // 5. Dirtied vs written: cumulative, written never ahead of dirtied, ending at vmstat's.
    let c = &f["global_dirtied_written"].chart;
    let (d, w) = (series(c, "dirtied"), series(c, "written"));
    assert!(d.pts.windows(2).all(|p| p[1].1 >= p[0].1), "dirtied is cumulative");
    for (a, b) in d.pts.iter().zip(&w.pts) {
        assert!(b.1 <= a.1 + 1e-9, "written ahead of dirtied at {}", a.0);
    }
    let vm = r.vmstat.last().unwrap();
    let mib = |p: u64| (p * 4096) as f64 / 1048576.0;
    assert!((d.pts.last().unwrap().1 - mib(vm.nr_dirtied)).abs() < 0.01);
    assert!((w.pts.last().unwrap().1 - mib(vm.nr_written)).abs() < 0.01);

    // 6. Bandwidth and rate limits: every quantity, in plausible MB/s for an HDD.
    let c = &f["balance_dirty_pages-bandwidth"].chart;
    for n in [
        "write_bw",
        "avg_write_bw",
        "dirty_ratelimit",
        "balanced_dirty_ratelimit",
        "task_ratelimit",
    ] {
        let s = series(c, n);
        assert!(!s.pts.is_empty(), "{n}");
        assert!(ys(s).all(|y| y >= 0.0), "{n} negative");
        xs_in(s, 0.0, secs);
    }
    let wbw: Vec<f64> = ys(series(c, "write_bw")).collect();
    assert!(wbw.iter().all(|&y| y < 1000.0), "an HDD writes under 1 GB/s");
    assert!(wbw.iter().any(|&y| y > 10.0));

    // 7. Throughput: the area under the write line is the bytes the device wrote.
    let c = &f["iostat-bw"].chart;
    let s = series(c, "sda write");
    let total: f64 = ys(s).sum::<f64>() * 1e6;
    let dev = &r.devices[0];
    assert!(
        (total - dev.bytes_written as f64).abs() <= dev.bytes_written as f64 * 0.02 + 1e6,
        "{total} vs {}",
        dev.bytes_written
    );
    let rd: f64 = ys(series(c, "sda read")).sum::<f64>() * 1e6;
    assert!(
        (rd - dev.bytes_read as f64).abs() <= dev.bytes_read as f64 * 0.02 + 1e6,
        "{rd} vs {}",
        dev.bytes_read
    );

    // 8. Utilisation from the block events: a percentage whose mean is the run's util.
    let c = &f["iostat-util"].chart;
    let s = series(c, "sda");
    let u: Vec<f64> = ys(s).collect();
    assert!(u.iter().all(|&y| (0.0..=100.0 + 1e-9).contains(&y)));
    let bins = &u[..u.len() - 1]; // the last point closes the step
    let mean = bins.iter().sum::<f64>() / bins.len() as f64;
    assert!((mean - dev.util * 100.0).abs() < 3.0, "mean util {mean} vs {}", dev.util * 100.0);

    // 9. Request latency histogram: shares add up to 100 %.
    let c = &f["request-latency"].chart;
    let s = series(c, "sda");
    let sum: f64 = ys(s).sum();
    assert!((sum - 100.0).abs() < 1e-6, "{sum}");
    assert!(c.x.log);

    // Latency over time: a series per latency-sensitive group, whose highest point is the
    // group's longest operation.
    let c = &f["latency-timeline"].chart;
    let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["reader", "probe"]);
    for s in &c.series {
        let longest = ys(s).fold(0.0, f64::max);
        let t = r.tasks.iter().find(|t| t.name == s.name).unwrap();
        let max_ms = t.op_latency.summary().max as f64 / 1e6;
        assert!(
            (longest - max_ms).abs() <= 0.001 + max_ms * 1e-3,
            "{}: {longest} vs {max_ms}",
            s.name
        );
    }
    assert!(c.y.log);

    // Every operation over time: a point per operation of each latency-sensitive group (few
    // enough here to keep them all), the highest its longest, within the run.
    let c = &f["op-latency-timeline"].chart;
    let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["reader", "probe"]);
    for s in &c.series {
        let t = r.tasks.iter().find(|t| t.name == s.name).unwrap();
        assert_eq!(s.pts.len() as u64, t.op_latency.count(), "{}: a point per operation", s.name);
        let max_ms = t.op_latency.summary().max as f64 / 1e6;
        let longest = ys(s).fold(0.0, f64::max);
        assert!(
            (longest - max_ms).abs() <= 0.001 + max_ms * 1e-3,
            "{}: {longest} vs {max_ms}",
            s.name
        );
        assert!(
            s.pts.iter().all(|p| p.0 >= 0.0 && p.0 <= r.sim_ns as f64 / 1e9 + 1e-6),
            "{}: outside the run",
            s.name
        );
    }
    assert!(c.y.log);

    // 10. CDFs of the latency-sensitive tasks (reader, probe), not the writers.
    let c = &f["latency-cdf"].chart;
    let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["reader#0 read()", "probe#0 read()"]);
    for s in &c.series {
        assert!(
            s.pts.windows(2).all(|p| p[1].1 >= p[0].1 && p[1].0 >= p[0].0),
            "{} not monotone",
            s.name
        );
        assert_eq!(s.pts.last().unwrap().1, 1.0);
        let t = r.tasks.iter().find(|t| s.name.starts_with(&format!("{}#", t.name))).unwrap();
        let max_ms = t.op_latency.summary().max as f64 / 1e6;
        assert!((s.pts.last().unwrap().0 - max_ms).abs() < 1e-9, "{} ends at max", s.name);
    }
    // 11. Pause CDFs of the writers.
    let c = &f["pause-cdf"].chart;
    assert_eq!(c.series.len(), 2);
    assert!(c.series.iter().all(|s| s.name.starts_with("dd#")));
}

#[test]
fn overlay_of_two_runs_has_one_colour_and_one_legend_entry_per_run() {
    let a = load(0);
    let b = load(1);
    let runs = vec![a, b];
    let labels = run_labels(&runs);
    assert_eq!(labels, ["figs · 6.x", "figs-small · 6.x"]);
    let figs = report_figures(&runs);
    for f in &figs {
        let legend: Vec<String> = f.chart.legend_entries().iter().map(|e| e.label.clone()).collect();
        for l in &labels {
            assert!(
                legend.iter().any(|x| x.contains(l.as_str())),
                "{}: legend {legend:?} lacks {l}",
                f.file
            );
        }
        check_svg(f);
        // Every series belongs to one run, and each run has one colour.
        let mut colours: BTreeMap<&str, std::collections::BTreeSet<String>> = BTreeMap::new();
        for s in &f.chart.series {
            let run = labels
                .iter()
                .find(|l| s.name.starts_with(&format!("{l}: ")))
                .unwrap_or_else(|| panic!("{}: {} names no run", f.file, s.name));
            colours.entry(run.as_str()).or_default().insert(s.style.color.clone());
        }
        assert!(colours.values().all(|c| c.len() == 1), "{}: {colours:?}", f.file);
        if colours.len() == 2 {
            let v: Vec<_> = colours.values().collect();
            assert_ne!(v[0], v[1], "{}: runs share a colour", f.file);
        }
    }
    // The small-limits run's dirty line stays under its 64 MiB limit (+ one folio per task of
    // overshoot); the default run's goes well above it.
    let c = &by_file(&figs)["global_dirty_state"].chart;
    let top = |n: &str| ys(series(c, n)).fold(0.0, f64::max);
    assert!(top("figs-small · 6.x: dirty") < 64.0 + 8.0, "{}", top("figs-small · 6.x: dirty"));
    assert!(top("figs · 6.x: dirty") > 64.0);
    // Same scenario twice: labels fall back to the seed, then the directory.
    let same = vec![load(0), load(0)];
    let l = run_labels(&same);
    assert_ne!(l[0], l[1]);
}

fn dir_of(tag: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-figures-out").join(tag);
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn report_html_is_self_contained_and_embeds_every_figure() {
    let run = load(0);
    let out = dir_of("single");
    let files = write_report(std::slice::from_ref(&run), &out).unwrap();
    assert_eq!(files.html, out.join(REPORT_FILE));
    assert_eq!(files.svgs.len(), 14);
    let html = std::fs::read_to_string(&files.html).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for bad in ["<script", "<link", "src=", "@import", "url(http", "href=\"http"] {
        assert!(!html.contains(bad), "report.html has `{bad}`: not self-contained");
    }
    // Header naming the run: scenario, kernel, seed, simulated time.
    for want in [
        "figs · 6.x",
        "<dt>kernel</dt><dd>6.x</dd>",
        "<dt>seed</dt><dd>3</dd>",
        "<dt>simulated</dt><dd>8.0 s</dd>",
    ] {
        assert!(html.contains(want), "header lacks {want}");
    }
    // Summary tables as HTML tables, with every task.
    for t in ["dd#0", "dd#1", "reader#0", "probe#0"] {
        assert!(html.contains(&format!("<td class=\"l\">{t}</td>")), "task table lacks {t}");
    }
    assert!(html.contains("<table class=\"devices\">"));
    // Every figure inline (without its title line: the page heads it), and as a file.
    let figs = report_figures(std::slice::from_ref(&run));
    assert_eq!(figs.len(), files.svgs.len());
    for (f, p) in figs.iter().zip(&files.svgs) {
        assert_eq!(std::fs::read_to_string(p).unwrap(), f.chart.to_svg(), "{}", p.display());
        assert!(html.contains(&f.chart.to_svg_untitled()), "{} is not embedded", p.display());
        assert!(html.contains(&format!("<h2>{}</h2>", f.title)), "{} has no heading", f.file);
        let id = p.file_stem().unwrap().to_string_lossy();
        assert!(html.contains(&format!("<section class=\"card\" id=\"{id}\">")));
        assert!(html.contains(&format!("href=\"#{id}\"")));
    }
    // Element ids are unique (several inline SVGs share one document).
    let mut ids: Vec<&str> = html.split(" id=\"").skip(1).map(|s| s.split('"').next().unwrap()).collect();
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate element ids");
    // Deterministic: the same directory gives the same bytes.
    let again = write_report(std::slice::from_ref(&run), &dir_of("again")).unwrap();
    assert_eq!(std::fs::read(&again.html).unwrap(), std::fs::read(&files.html).unwrap());
}

#[test]
fn histograms_json_has_the_distributions_behind_the_summary() {
    let r = &runs().results[0];
    let run = load(0);
    let h = run.hists.as_ref().expect("histograms.json");
    assert_eq!(h.tasks.len(), r.tasks.len());
    for (t, ht) in r.tasks.iter().zip(&h.tasks) {
        assert_eq!((ht.name.as_str(), ht.instance, ht.pid), (t.name.as_str(), t.instance, t.pid));
        assert_eq!(ht.pause.count, t.pauses.count());
        assert_eq!(ht.op_latency.count, t.op_latency.count());
        assert_eq!(ht.pause.buckets.iter().map(|b| b.1).sum::<u64>(), ht.pause.count);
        assert_eq!(ht.op_latency.max, t.op_latency.summary().max);
        assert_eq!(ht.op_latency.quantile(0.5), t.op_latency.summary().p50, "{}", t.name);
        assert_eq!(ht.op_latency.quantile(0.99), t.op_latency.summary().p99, "{}", t.name);
    }
    assert_eq!(h.devices[0].request_latency.count, r.devices[0].request_latency.count());
}

#[test]
fn terminal_views_of_a_directory() {
    let r = &runs().results[0];
    let run = load(0);
    // The table read back from summary.json is the one `wblab run` printed.
    assert_eq!(dir_summary(&run), terminal_summary(r, WALL));
    // Default pick: the first latency-sensitive task.
    let p = pick_latency(&run, None, None).unwrap().expect("a latency task");
    assert_eq!(p.what, "reader#0 read() latency");
    let t = latency_text(&p);
    assert!(t.contains("The decimal point is"), "{t}");
    assert!(t.contains("     usecs               : count     distribution"), "{t}");
    // Every stem line: "  %*d | leaves".
    let stem_lines: Vec<&str> = t.lines().filter(|l| l.contains(" | ")).collect();
    assert!(!stem_lines.is_empty());
    assert!(stem_lines.iter().all(|l| l.starts_with("  ")));
    let p = pick_latency(&run, Some("dd"), None).unwrap().expect("dd's pauses");
    assert_eq!(p.what, "dd ×2 balance_dirty_pages pauses");
    assert_eq!(
        p.hist.count,
        r.tasks.iter().filter(|t| t.job == "dd").map(|t| t.pauses.count()).sum::<u64>()
    );
    assert!(pick_latency(&run, Some("nope"), None).unwrap_err().contains("reader#0"));
    // vmstat: a header pair and one line per second.
    let v = wblab_report::terminal::vmstat::vmstat(run.timeseries.as_ref().unwrap(), wblab_report::terminal::vmstat::Unit::K1024);
    let lines: Vec<&str> = v.lines().collect();
    assert_eq!(lines.len(), 2 + r.vmstat.len());
    let last: Vec<u64> = lines.last().unwrap().split_whitespace().map(|x| x.parse().unwrap()).collect();
    let s = r.vmstat.last().unwrap();
    assert_eq!(
        last[..9],
        [
            s.procs_running as u64,
            s.procs_blocked as u64,
            s.nr_free * 4,
            0,
            s.nr_file * 4,
            s.bi_kb,
            s.bo_kb,
            s.nr_dirty * 4,
            s.nr_writeback * 4
        ]
    );
}

/// A run with a memory cgroup draws its usage, dirty pages and dirty threshold over time,
/// within the group's limit; runs without cgroups have no such figure.
#[test]
fn the_cgroups_figure_draws_each_groups_memory_within_its_limit() {
    let text = r#"name = "pod"
duration = "8s"
[machine]
memory = "8GiB"
cpus = 2
[[device]]
name = "sda"
model = "ssd"
[[cgroup]]
path = "/pod"
memory.max = "512MiB"
[[task]]
name = "w"
job = "dd"
cgroup = "/pod"
"#;
    let sc = wblab_scenario::parse(text, "pod.toml").unwrap();
    let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
    let dir = wblab_testkit::cli::scratch(env!("CARGO_TARGET_TMPDIR"), "report-cgroups");
    write_results_dir(&dir, &r, WALL).unwrap();
    let run = RunDir::load(&dir).unwrap();
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    let figs = report_figures(std::slice::from_ref(&run));
    let f = by_file(&figs);
    let c = &f.get("cgroups").expect("a cgroups figure").chart;
    check_svg(f["cgroups"]);
    // The y axis is in MiB at this size: usage stays within 512 MiB and reaches most of it.
    let usage: Vec<f64> = ys(series(c, "/pod memory.current")).collect();
    let top = usage.iter().cloned().fold(0.0, f64::max);
    assert!(top <= 512.0 && top > 400.0, "usage peaked at {top} MiB");
    // The group's dirty threshold: vm.dirty_ratio (20 %) of its 512 MiB.
    let thresh: Vec<f64> = ys(series(c, "/pod dirty thresh")).collect();
    assert!(thresh.iter().all(|&t| (t - 102.4).abs() < 3.0), "{thresh:?}");
    assert!(ys(series(c, "/pod dirty + writeback")).all(|d| d <= 512.0));
    assert!(!by_file(&report_figures(std::slice::from_ref(&load(0)))).contains_key("cgroups"));
    // The terminal's cgroup table reads the same from the directory as from the run.
    let table = |text: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with("cgroup "))
            .take(2)
            .map(str::to_string)
            .collect()
    };
    let from_run = table(&terminal_summary(&r, WALL));
    assert_eq!(from_run.len(), 2, "{from_run:?}");
    assert!(from_run[1].starts_with("/pod "));
    assert_eq!(table(&dir_summary(&run)), from_run);
}
