//! report.html: one self-contained page (inline CSS and SVG, no scripts, no network) with a
//! header naming the runs, the summary tables and every figure.

pub mod report;

use crate::figures::{fmt_ms, Figure, Run};
use crate::plot::{color, esc};
use serde_json::Value;
use std::fmt::Write as _;

const CSS: &str = "\
:root{color-scheme:light}
body{margin:0;background:#f6f7f9;color:#1d1f23;font:15px/1.5 -apple-system,BlinkMacSystemFont,\"Segoe UI\",\"DejaVu Sans\",\"Liberation Sans\",Helvetica,Arial,sans-serif}
main{max-width:1000px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:26px;margin:8px 0 4px}
h2{font-size:19px;margin:0 0 6px}
h3{font-size:16px;margin:18px 0 6px}
p{margin:4px 0 10px}
.lede{color:#4a4f57}
.card{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:16px 18px;margin:18px 0;box-shadow:0 1px 2px rgba(0,0,0,.04)}
table{border-collapse:collapse;font-size:13px;margin:6px 0 12px;font-variant-numeric:tabular-nums}
th,td{padding:4px 10px;border-bottom:1px solid #e6e8eb;text-align:right;white-space:nowrap}
th{background:#f0f2f5;font-weight:600;color:#333}
td.l,th.l{text-align:left}
td.ns{color:#8a9099}
tr:nth-child(even) td{background:#fafbfc}
.scroll{overflow-x:auto}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-right:8px}
.runs{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:8px 28px}
.run h3{margin:2px 0 6px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:0;font-size:14px}
dt{color:#666}
dd{margin:0}
nav ol{columns:2;margin:6px 0;padding-left:22px}
nav a{color:#0b5cad;text-decoration:none}
nav a:hover{text-decoration:underline}
figure{margin:0}
svg.chart{display:block;max-width:100%;height:auto;margin:10px 0 4px}
.caption{color:#3d424a;font-size:14px}
.file{color:#777;font-size:12px;margin:0}
.warn{color:#8a4b00}
code{font-family:\"DejaVu Sans Mono\",Menlo,Consolas,monospace;font-size:13px}
footer{color:#777;font-size:12px;margin-top:24px}
";

fn th(o: &mut String, cells: &[&str], left: usize) {
    o.push_str("<tr>");
    for (i, c) in cells.iter().enumerate() {
        let cls = if i < left { " class=\"l\"" } else { "" };
        write!(o, "<th{cls}>{}</th>", esc(c)).expect("String");
    }
    o.push_str("</tr>\n");
}

fn td(o: &mut String, cells: &[String], left: usize) {
    o.push_str("<tr>");
    for (i, c) in cells.iter().enumerate() {
        let cls = if i < left { " class=\"l\"" } else { "" };
        write!(o, "<td{cls}>{}</td>", esc(c)).expect("String");
    }
    o.push_str("</tr>\n");
}

fn num(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$}")
}

fn lat_cell(count: u64, ms: f64) -> String {
    if count == 0 {
        "-".into()
    } else if ms < 10.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.1}")
    }
}

fn bytes_h(b: u64) -> String {
    let g = b as f64 / (1u64 << 30) as f64;
    if g >= 1.0 && (b.is_multiple_of(1 << 30) || g >= 10.0) {
        format!("{g:.0} GiB")
    } else if g >= 1.0 {
        format!("{g:.1} GiB")
    } else {
        format!("{} MiB", b >> 20)
    }
}

/// A one-line description of the machine and knobs of a run, from the resolved scenario.
fn machine_line(s: &Value) -> String {
    let sc = &s["scenario"];
    let mut parts = Vec::new();
    if let Some(m) = sc["machine"]["memory"].as_u64() {
        parts.push(format!("{} RAM", bytes_h(m)));
    }
    if let Some(c) = sc["machine"]["cpus"].as_u64() {
        parts.push(format!("{c} CPUs"));
    }
    let sy = &sc["sysctl"];
    let dirty = match sy["dirty_bytes"].as_u64() {
        Some(b) if b > 0 => format!("dirty_bytes {}", bytes_h(b)),
        _ => format!("dirty_ratio {}", sy["dirty_ratio"].as_u64().unwrap_or(0)),
    };
    let bg = match sy["dirty_background_bytes"].as_u64() {
        Some(b) if b > 0 => format!("dirty_background_bytes {}", bytes_h(b)),
        _ => format!("dirty_background_ratio {}", sy["dirty_background_ratio"].as_u64().unwrap_or(0)),
    };
    if !sy.is_null() {
        parts.push(format!("{dirty}, {bg}"));
    }
    parts.join(" · ")
}

fn devices_line(s: &Value) -> String {
    s["scenario"]["devices"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| {
                    format!(
                        "{} ({}, {})",
                        d["name"].as_str().unwrap_or("?"),
                        d["model"]["kind"].as_str().unwrap_or("?"),
                        d["queue"]["scheduler"].as_str().unwrap_or("?")
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// Every cgroup with the settings it was given (the cgroup version first), so a report of
/// groups beside each other says what each was held to: `v2: /db (io_latency sda 10 ms),
/// /batch (memory_max 1 GiB)`. Fields with no value are left out; a per-device list names
/// its device.
fn cgroups_line(s: &Value) -> Option<String> {
    let sc = &s["scenario"];
    let groups = sc["cgroups"]["groups"].as_array().filter(|g| !g.is_empty())?;
    let device = |i: &Value| {
        i.as_u64()
            .and_then(|i| sc["devices"][i as usize]["name"].as_str())
            .unwrap_or("?")
            .to_string()
    };
    // A value as the scenario writes it: bytes and rates in their exact units, by the field's
    // name.
    use wblab_sim::units::format_size;
    fn flat(k: &str, v: &Value) -> Option<String> {
        match v {
            Value::Null => None,
            Value::Object(m) => {
                let parts: Vec<String> = m.iter().filter_map(|(k, v)| flat(k, v).map(|v| format!("{k} {v}"))).collect();
                (!parts.is_empty()).then(|| parts.join(" "))
            }
            Value::Array(a) if a.is_empty() => None,
            Value::String(t) => Some(t.clone()),
            Value::Number(n) if k.ends_with("_bps") => n.as_u64().map(|b| format!("{}/s", format_size(b))),
            Value::Number(n) if k.starts_with("memory_") => n.as_u64().map(format_size),
            other => Some(other.to_string()),
        }
    }
    let line = groups
        .iter()
        .map(|g| {
            let path = g["path"].as_str().unwrap_or("?");
            let settings: Vec<String> = g
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| *k != "path")
                .filter_map(|(k, v)| match v {
                    // Per-device settings: [[device index, value], ...].
                    Value::Array(a) if a.iter().all(|e| e.as_array().is_some_and(|p| p.len() == 2)) => {
                        let per: Vec<String> = a
                            .iter()
                            .filter_map(|e| flat(k, &e[1]).map(|v| format!("{} {v}", device(&e[0]))))
                            .collect();
                        (!per.is_empty()).then(|| format!("{k} {}", per.join(", ")))
                    }
                    v => flat(k, v).map(|v| format!("{k} {v}")),
                })
                .collect();
            if settings.is_empty() {
                path.to_string()
            } else {
                format!("{path} ({})", settings.join("; "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!("{}: {line}", sc["cgroups"]["version"].as_str().unwrap_or("v2")))
}

fn tasks_line(s: &Value) -> String {
    s["scenario"]["tasks"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| {
                    let n = t["count"].as_u64().unwrap_or(1);
                    let job = t["job"]["job"].as_str().unwrap_or("?");
                    let name = t["name"].as_str().unwrap_or("?");
                    if n > 1 {
                        format!("{name} ×{n} ({job})")
                    } else {
                        format!("{name} ({job})")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn summary_tables(o: &mut String, r: &Run) {
    let d = r.data;
    o.push_str("<div class=\"scroll\"><table class=\"tasks\">\n");
    th(
        o,
        &[
            "task",
            "job",
            "MB written",
            "MB read",
            "MB/s",
            "pauses",
            "pause p50",
            "pause p99",
            "pause max",
            "op p50",
            "op p99",
            "op max",
        ],
        2,
    );
    for t in &d.tasks {
        td(
            o,
            &[
                t.label(),
                t.job.clone(),
                num(t.bytes_written as f64 / 1e6, 1),
                num(t.bytes_read as f64 / 1e6, 1),
                num(t.throughput_mb_s, 1),
                t.pauses.count.to_string(),
                lat_cell(t.pauses.count, t.pauses.p50),
                lat_cell(t.pauses.count, t.pauses.p99),
                lat_cell(t.pauses.count, t.pauses.max),
                lat_cell(t.op.count, t.op.p50),
                lat_cell(t.op.count, t.op.p99),
                lat_cell(t.op.count, t.op.max),
            ],
            2,
        );
    }
    o.push_str("</table></div>\n<div class=\"scroll\"><table class=\"devices\">\n");
    th(
        o,
        &[
            "device",
            "model",
            "MB written",
            "MB read",
            "MB/s",
            "util %",
            "requests",
            "lat p50",
            "lat p99",
            "lat max",
        ],
        2,
    );
    let secs = d.duration();
    for dev in &d.devices {
        td(
            o,
            &[
                dev.name.clone(),
                dev.model.clone(),
                num(dev.bytes_written as f64 / 1e6, 1),
                num(dev.bytes_read as f64 / 1e6, 1),
                num((dev.bytes_written + dev.bytes_read) as f64 / 1e6 / secs.max(1e-9), 1),
                num(dev.util * 100.0, 1),
                dev.requests.to_string(),
                lat_cell(dev.latency.count, dev.latency.p50),
                lat_cell(dev.latency.count, dev.latency.p99),
                lat_cell(dev.latency.count, dev.latency.max),
            ],
            2,
        );
    }
    o.push_str("</table></div>\n<p class=\"file\">times in ms; pauses are balance_dirty_pages sleeps; op = write()/read()/fsync() latency; MB = 10^6 bytes</p>\n");
}

/// The whole page. `show_dirs`: name each run's directory (reports of several runs).
///
/// `svgs` holds each figure's chart rendered without its title (`Chart::to_svg_untitled`),
/// rendered by the caller so it can spread the work over cores.
pub fn report_html(runs: &[Run], figs: &[Figure], svgs: &[String], show_dirs: bool, diff: Option<&crate::compare::Comparison>) -> String {
    let mut o = String::with_capacity(256 * 1024);
    let names: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
    let title = format!("wblab report: {}", names.join(" vs "));
    writeln!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<main>",
        esc(&title)
    )
    .expect("String");
    writeln!(o, "<header>\n<h1>{}</h1>", esc(&title)).expect("String");
    let lede = if runs.len() == 1 {
        "Graphs of one run, drawn from its results directory (summary.json, trace.txt, timeseries.csv, throttle.csv, histograms.json)."
            .to_string()
    } else {
        format!(
            "{} runs overlaid, one colour per run; line styles tell the quantities apart. Drawn from each run's results directory.",
            runs.len()
        )
    };
    writeln!(o, "<p class=\"lede\">{}</p>", esc(&lede)).expect("String");
    o.push_str("<div class=\"card runs\">\n");
    for (i, r) in runs.iter().enumerate() {
        let d = r.data;
        write!(
            o,
            "<div class=\"run\"><h3><span class=\"swatch\" style=\"background:{}\"></span>{}</h3>\n<dl>",
            color(i),
            esc(&r.label)
        )
        .expect("String");
        let mut rows = vec![
            ("scenario", d.name.clone()),
            ("kernel", d.kernel.clone()),
            ("seed", d.seed.to_string()),
            ("simulated", format!("{:.1} s", d.sim_seconds)),
            ("machine", machine_line(&d.summary)),
            ("devices", devices_line(&d.summary)),
            ("tasks", tasks_line(&d.summary)),
        ];
        if let Some(c) = cgroups_line(&d.summary) {
            rows.push(("cgroups", c));
        }
        // What the scenario asks of its release that the release did not have.
        if let Some(w) = d.summary["scenario"]["what_if"].as_array().filter(|w| !w.is_empty()) {
            let notes: Vec<&str> = w.iter().filter_map(|n| n.as_str()).collect();
            rows.push(("what-if", notes.join("; ")));
        }
        if show_dirs {
            rows.push(("directory", d.dir.display().to_string()));
        }
        for (k, v) in rows {
            write!(o, "<dt>{k}</dt><dd>{}</dd>", esc(&v)).expect("String");
        }
        o.push_str("</dl></div>\n");
    }
    o.push_str("</div>\n</header>\n");

    // The verdict: each finding links to the figure that shows it.
    let verdicts: Vec<(&Run, Vec<crate::verdict::Finding>)> = runs
        .iter()
        .map(|r| (r, crate::verdict::verdict(&crate::verdict::Input::from_dir(r.data))))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    if !verdicts.is_empty() {
        o.push_str("<section class=\"card\" id=\"verdict\"><h2>Verdict</h2>\n");
        for (r, v) in &verdicts {
            if runs.len() > 1 {
                writeln!(o, "<h3>{}</h3>", esc(&r.label)).expect("String");
            }
            o.push_str("<ul>\n");
            for f in v {
                let linked = figs.iter().any(|x| x.file == f.figure);
                if linked {
                    writeln!(
                        o,
                        "<li data-rule=\"{}\">{} <a href=\"#{}\">(graph)</a></li>",
                        f.rule,
                        esc(&f.text),
                        f.figure
                    )
                    .expect("String");
                } else {
                    writeln!(o, "<li data-rule=\"{}\">{}</li>", f.rule, esc(&f.text)).expect("String");
                }
            }
            o.push_str("</ul>\n");
        }
        o.push_str("</section>\n");
    }

    // Contents.
    o.push_str("<nav class=\"card\"><h2>Contents</h2><ol>\n<li><a href=\"#summary\">Summary tables</a></li>\n");
    if diff.is_some() {
        o.push_str("<li><a href=\"#differences\">Differences</a></li>\n");
    }
    if runs.iter().any(|r| fio_json(r).is_some()) {
        o.push_str("<li><a href=\"#fio\">fio jobs</a></li>\n");
    }
    for f in figs {
        writeln!(o, "<li><a href=\"#{}\">{}</a></li>", esc(&f.file), esc(&f.title)).expect("String");
    }
    o.push_str("</ol></nav>\n");

    // Summary tables.
    o.push_str("<section class=\"card\" id=\"summary\"><h2>Summary</h2>\n");
    for r in runs {
        if runs.len() > 1 {
            writeln!(o, "<h3>{}</h3>", esc(&r.label)).expect("String");
        }
        summary_tables(&mut o, r);
        let worst = r
            .data
            .tasks
            .iter()
            .filter(|t| crate::figures::latency_sensitive(&t.job) && t.op.count > 0)
            .max_by(|a, b| a.op.max.total_cmp(&b.op.max));
        if let Some(t) = worst {
            writeln!(
                o,
                "<p>Worst latency of a latency-sensitive task: <b>{}</b> {} took up to <b>{}</b> (p99 {}).</p>",
                esc(&t.label()),
                esc(crate::figures::op_name(&t.job)),
                esc(&fmt_ms(t.op.max)),
                esc(&fmt_ms(t.op.p99))
            )
            .expect("String");
        }
        for w in &r.data.warnings {
            writeln!(o, "<p class=\"warn\">missing or unreadable: {}</p>", esc(w)).expect("String");
        }
    }
    o.push_str("</section>\n");

    if let Some(c) = diff {
        differences(&mut o, runs, c);
    }
    fio_section(&mut o, runs);

    // Figures.
    for (f, svg) in figs.iter().zip(svgs) {
        writeln!(
            o,
            "<section class=\"card\" id=\"{id}\"><figure>\n<h2>{}</h2>\n<p class=\"caption\">{}</p>",
            esc(&f.title),
            esc(&f.caption),
            id = esc(&f.file)
        )
        .expect("String");
        o.push_str(svg);
        writeln!(o, "<p class=\"file\">{}.svg</p>\n</figure></section>", esc(&f.file)).expect("String");
    }
    writeln!(
        o,
        "<footer>Made by <code>wblab report</code> (wblab {}). Self-contained: no scripts, no network.</footer>\n</main>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION")
    )
    .expect("String");
    o
}

/// A run's fio.json, where it ran fio jobs.
fn fio_json(r: &Run) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(r.data.dir.join(crate::results::fio::FIO_JSON_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The fio jobs as fio's summary leads with them, each direction on its own row (a mixed
/// job's reads and writes are not one latency): bandwidth, IOPS, completion latency.
fn fio_section(o: &mut String, runs: &[Run]) {
    let all: Vec<(&Run, serde_json::Value)> = runs.iter().filter_map(|r| fio_json(r).map(|v| (r, v))).collect();
    if all.is_empty() {
        return;
    }
    o.push_str("<section class=\"card\" id=\"fio\"><h2>fio jobs</h2>\n");
    o.push_str("<p class=\"caption\">From fio.json: each job (or reporting group) and direction that did I/O. Completion latency (clat) runs from submission to completion; percentiles as fio's.</p>\n");
    for (r, v) in &all {
        if runs.len() > 1 {
            writeln!(o, "<h3>{}</h3>", esc(&r.label)).expect("String");
        }
        o.push_str("<table><tr><th>job</th><th>direction</th><th>MiB/s</th><th>IOPS</th><th>clat mean</th><th>clat p50</th><th>clat p99</th><th>clat p99.9</th><th>I/Os</th></tr>\n");
        for row in crate::results::fio::fio_rows(v) {
            let [mean, p50, p99, p999] = row.clat_ns.map(|ns| ns.map_or("-".to_string(), |ns| fmt_ms(ns / 1e6)));
            writeln!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.0}</td><td>{mean}</td><td>{p50}</td><td>{p99}</td><td>{p999}</td><td>{}</td></tr>",
                esc(&row.job),
                row.direction,
                row.mib_s,
                row.iops,
                row.ios
            )
            .expect("String");
        }
        o.push_str("</table>\n");
    }
    o.push_str("</section>\n");
}

/// Several runs: every figure `wblab compare` reads, side by side, with the change of each
/// run against the first, absolute and relative.
fn differences(o: &mut String, runs: &[Run], c: &crate::compare::Comparison) {
    use crate::compare::{num, pct};
    o.push_str("<section class=\"card\" id=\"differences\"><h2>Differences</h2>\n");
    writeln!(
        o,
        "<p>Each run against the first ({}): its value, the change and the relative change. The same figures as <code>wblab compare</code>.</p>",
        esc(&runs[0].label)
    )
    .expect("String");
    if c.figures.iter().any(|f| f.range.iter().any(Option::is_some)) {
        writeln!(o, "<p class=\"ns-legend\">{}.</p>", esc(crate::compare::NOT_SIGNIFICANT)).expect("String");
    }
    o.push_str("<div class=\"scroll\"><table class=\"diff\">\n<tr><th>figure</th><th>unit</th>");
    for (i, r) in runs.iter().enumerate() {
        write!(o, "<th>{}</th>", esc(&r.label)).expect("String");
        if i > 0 {
            o.push_str("<th>change</th><th>%</th>");
        }
    }
    o.push_str("</tr>\n");
    for f in &c.figures {
        write!(o, "<tr><td>{}</td><td>{}</td>", esc(&f.name), esc(f.unit)).expect("String");
        let first = f.values.first().copied().flatten();
        for (i, v) in f.values.iter().enumerate() {
            write!(o, "<td class=\"num\">{}</td>", v.map_or("-".into(), num)).expect("String");
            if i > 0 {
                let delta = match (first, *v) {
                    (Some(a), Some(b)) => {
                        let d = b - a;
                        if d > 0.0 {
                            format!("+{}", num(d))
                        } else {
                            num(d)
                        }
                    }
                    _ => "-".into(),
                };
                let ns = f.significant[i] == Some(false);
                write!(
                    o,
                    "<td class=\"num{}\">{}</td><td class=\"num{}\">{}{}</td>",
                    if ns { " ns" } else { "" },
                    delta,
                    if ns { " ns" } else { "" },
                    f.rel_err[i].map_or("-".into(), pct),
                    if ns { " <small>n.s.</small>" } else { "" }
                )
                .expect("String");
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table></div>\n</section>\n");
}

#[cfg(test)]
mod tests {
    use super::cgroups_line;
    use serde_json::json;

    /// The header names every group with what it was held to, per device by name.
    #[test]
    fn the_cgroups_line_names_each_group_and_its_limits() {
        let s = json!({"scenario": {
            "devices": [{"name": "sda"}],
            "cgroups": {"version": "v2", "groups": [
                {"path": "/batch-limited", "io_max": [[0, {"read_bps": null, "write_bps": 100000000}]]},
                {"path": "/db", "memory_max": 1073741824},
                {"path": "/web"}
            ]}
        }});
        assert_eq!(
            cgroups_line(&s).as_deref(),
            Some("v2: /batch-limited (io_max sda write_bps 100MB/s), /db (memory_max 1GiB), /web")
        );
        assert_eq!(cgroups_line(&json!({"scenario": {}})), None, "no groups, no line");
    }
}
