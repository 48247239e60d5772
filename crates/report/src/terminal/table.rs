//! The terminal summary: a header line, a task table (large `[[task]]` groups folded into one
//! row each), a device table and a one-line dirty-memory summary. Plain text, aligned columns,
//! no colours, about 100 columns wide.

use std::fmt::Write as _;
use wblab_sim::metrics::hist::HistSummary;
use wblab_sim::metrics::{LatencyHist, RunResult, TaskResult};
use wblab_sim::units::{MIB, PAGE_SIZE};

/// A `[[task]]` group with at least this many instances is shown as one row.
pub const GROUP_MIN: usize = 8;

/// Longest task label shown; longer names are cut.
pub(crate) const LABEL_MAX: usize = 16;

#[derive(Clone, Copy)]
pub(crate) enum Align {
    Left,
    Right,
}

/// A text table: a header row, rows of cells, and one alignment per column.
pub(crate) struct Table {
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(header: &[&str], align: &[Align]) -> Table {
        Table {
            align: align.to_vec(),
            rows: vec![header.iter().map(|s| s.to_string()).collect()],
        }
    }

    /// A table whose first two columns (a name and its kind) are left-aligned and the figures
    /// after them right-aligned.
    pub(crate) fn labelled(header: &[&str]) -> Table {
        let align: Vec<Align> = (0..header.len()).map(|i| if i < 2 { Align::Left } else { Align::Right }).collect();
        Table::new(header, &align)
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.align.len());
        self.rows.push(cells);
    }

    pub(crate) fn render(&self, out: &mut String) {
        let ncol = self.align.len();
        let width: Vec<usize> = (0..ncol)
            .map(|c| self.rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        for r in &self.rows {
            let mut line = String::new();
            for (c, cell) in r.iter().enumerate() {
                if c > 0 {
                    line.push_str("  ");
                }
                let pad = width[c] - cell.chars().count();
                match self.align[c] {
                    Align::Left => {
                        line.push_str(cell);
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

/// Megabytes (10^6 bytes) with one decimal.
pub(crate) fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e6)
}

pub(crate) fn mb_s(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.1}")
    }
}

/// Milliseconds from ns with a precision that keeps the column narrow; "-" for no samples.
pub(crate) fn ms(ns: u64, count: u64) -> String {
    if count == 0 {
        return "-".to_string();
    }
    let x = ns as f64 / 1e6;
    if x < 10.0 {
        format!("{x:.2}")
    } else if x < 1000.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

pub(crate) fn mib_pages(pages: u64) -> String {
    format!("{:.1}", (pages * PAGE_SIZE) as f64 / MIB as f64)
}

/// 1234567 → "1,234,567".
pub(crate) fn thousands(v: u64) -> String {
    let digits = v.to_string();
    let head = match digits.len() % 3 {
        0 => 3.min(digits.len()),
        n => n,
    };
    let mut s = String::with_capacity(digits.len() + digits.len() / 3);
    s.push_str(&digits[..head]);
    for group in digits.as_bytes()[head..].chunks(3) {
        s.push(',');
        s.push_str(std::str::from_utf8(group).expect("ascii digits"));
    }
    s
}

pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

/// Tasks grouped by `[[task]]` name, in order of first appearance.
fn groups(tasks: &[TaskResult]) -> Vec<(&str, Vec<&TaskResult>)> {
    let mut g: Vec<(&str, Vec<&TaskResult>)> = Vec::new();
    for t in tasks {
        match g.iter_mut().find(|(n, _)| *n == t.name) {
            Some((_, v)) => v.push(t),
            None => g.push((&t.name, vec![t])),
        }
    }
    g
}

/// The first line of a summary: name, kernel, simulated and wall time, events and their rate.
pub(crate) fn run_line(out: &mut String, name: &str, kernel: &str, sim_s: f64, wall_seconds: f64, events: u64) {
    let rate = if wall_seconds > 0.0 {
        let eps = events as f64 / wall_seconds;
        if eps >= 1e6 {
            format!("{:.2} M events/s", eps / 1e6)
        } else {
            format!("{} events/s", thousands(eps.round() as u64))
        }
    } else {
        "- events/s".to_string()
    };
    writeln!(
        out,
        "{}  kernel {}  simulated {:.1} s  wall {:.2} s  {} events  {}",
        name,
        kernel,
        sim_s,
        wall_seconds,
        thousands(events),
        rate
    )
    .expect("String");
}

fn header_line(r: &RunResult, wall_seconds: f64, out: &mut String) {
    let sc = &r.scenario;
    run_line(out, &sc.name, &sc.kernel, r.sim_ns as f64 / 1e9, wall_seconds, r.events);
    // What the scenario asks of its release that the release did not have.
    for w in &sc.what_if {
        writeln!(out, "what-if: {w}").expect("String");
    }
}

/// Sample count and p50/p99/max (ns) of a latency distribution, as the tables show it.
#[derive(Clone, Copy)]
pub(crate) struct Quants {
    pub count: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

impl Quants {
    fn of(s: &HistSummary) -> Quants {
        Quants {
            count: s.count,
            p50: s.p50,
            p99: s.p99,
            max: s.max,
        }
    }
}

/// Column groups the tables share: bytes and rate, balance_dirty_pages pauses, op latency.
const IO: [&str; 3] = ["MB wr", "MB rd", "MB/s"];
const PAUSES: [&str; 4] = ["pauses", "pause p50", "pause p99", "pause max"];
const OPS: [&str; 3] = ["op p50", "op p99", "op max"];

/// Header of the per-task table.
pub(crate) fn task_table() -> Table {
    Table::labelled(&[&["task", "job"][..], &IO, &PAUSES, &OPS].concat())
}

/// A row of the per-task table: `bytes` = (written, read), `p` pauses, `o` op latency.
pub(crate) fn task_row(label: &str, job: String, bytes: (u64, u64), rate: f64, p: Quants, o: Quants) -> Vec<String> {
    vec![
        cut(label, LABEL_MAX),
        job,
        mb(bytes.0),
        mb(bytes.1),
        mb_s(rate),
        p.count.to_string(),
        ms(p.p50, p.count),
        ms(p.p99, p.count),
        ms(p.max, p.count),
        ms(o.p50, o.count),
        ms(o.p99, o.count),
        ms(o.max, o.count),
    ]
}

/// Header of the folded-group table.
pub(crate) fn group_table() -> Table {
    Table::labelled(&[&["group", "job"][..], &IO, &["per task min/mean/max"], &PAUSES].concat())
}

/// A row of the folded-group table: `bytes` = (written, read) summed over the group, `rates`
/// the members' MB/s, `p` the pauses of the whole group.
pub(crate) fn group_row(label: &str, job: String, bytes: (u64, u64), rates: &[f64], p: Quants) -> Vec<String> {
    let agg: f64 = rates.iter().sum();
    let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let max = rates.iter().copied().fold(0.0, f64::max);
    vec![
        cut(label, LABEL_MAX),
        job,
        mb(bytes.0),
        mb(bytes.1),
        mb_s(agg),
        format!("{}/{}/{}", mb_s(min), mb_s(agg / rates.len().max(1) as f64), mb_s(max)),
        p.count.to_string(),
        ms(p.p50, p.count),
        ms(p.p99, p.count),
        ms(p.max, p.count),
    ]
}

/// Header of the device table.
pub(crate) fn device_table_header() -> Table {
    Table::labelled(&[&["device", "model"][..], &IO, &["util %", "requests", "lat p50 ms", "lat p99 ms"]].concat())
}

/// A row of the device table: `bytes` = (written, read) over `secs` simulated seconds.
pub(crate) fn device_row(name: &str, model: &str, bytes: (u64, u64), secs: f64, util: f64, requests: u64, lat: Quants) -> Vec<String> {
    let rate = if secs > 0.0 { (bytes.0 + bytes.1) as f64 / 1e6 / secs } else { 0.0 };
    vec![
        name.to_string(),
        model.to_string(),
        mb(bytes.0),
        mb(bytes.1),
        mb_s(rate),
        format!("{:.1}", util * 100.0),
        thousands(requests),
        ms(lat.p50, lat.count),
        ms(lat.p99, lat.count),
    ]
}

fn task_tables(r: &RunResult, out: &mut String) {
    let groups = groups(&r.tasks);
    let (big, small): (Vec<_>, Vec<_>) = groups.into_iter().partition(|(_, v)| v.len() >= GROUP_MIN);

    out.push_str("tasks (pause: balance_dirty_pages sleeps; op: each write/read/fsync call or launch; ms)\n");
    if !small.is_empty() {
        let mut t = task_table();
        for task in small.iter().flat_map(|(_, v)| v.iter()) {
            t.row(task_row(
                &format!("{}#{}", task.name, task.instance),
                task.job.to_string(),
                (task.bytes_written, task.bytes_read),
                task.throughput_mb_s(),
                Quants::of(&task.pauses.summary()),
                Quants::of(&task.op_latency.summary()),
            ));
        }
        t.render(out);
    }

    if !big.is_empty() {
        if !small.is_empty() {
            out.push('\n');
        }
        let mut t = group_table();
        for (name, v) in &big {
            let rates: Vec<f64> = v.iter().map(|t| t.throughput_mb_s()).collect();
            let mut pauses = LatencyHist::new();
            for task in v {
                pauses.add(&task.pauses);
            }
            // Mixed jobs under one name are unusual; show the first and mark the mix.
            let job = if v.iter().all(|t| t.job == v[0].job) {
                v[0].job.to_string()
            } else {
                format!("{}+", v[0].job)
            };
            t.row(group_row(
                &format!("{name} ×{}", v.len()),
                job,
                (v.iter().map(|t| t.bytes_written).sum(), v.iter().map(|t| t.bytes_read).sum()),
                &rates,
                Quants::of(&pauses.summary()),
            ));
        }
        t.render(out);
    }
}

fn device_table(r: &RunResult, out: &mut String) {
    let mut t = device_table_header();
    let secs = r.sim_ns as f64 / 1e9;
    for (i, d) in r.devices.iter().enumerate() {
        // The file system beside the model: a bare job file's device gets ext4, which its
        // reader should not have to guess.
        let model = match r.scenario.devices.get(i).and_then(|c| c.fs.as_ref()) {
            Some(m) => format!("{} {}", d.model, m.fs.name()),
            None => d.model.to_string(),
        };
        t.row(device_row(
            &d.name,
            &model,
            (d.bytes_written, d.bytes_read),
            secs,
            d.util,
            d.requests_written + d.requests_read,
            Quants::of(&d.request_latency.summary()),
        ));
    }
    t.render(out);
    for d in &r.devices {
        if let Some(j) = &d.journal {
            writeln!(
                out,
                "{} journal ({}): {} commits{}, {} blocks logged, {} written home; commit mean {:.1} ms (locked {:.1}, ordered data {:.1}, log {:.1}), max {:.1} ms; {} handles waited {:.1} ms",
                d.name,
                j.fs,
                j.commits,
                if j.fast_commits > 0 { format!(" and {} fast commits", j.fast_commits) } else { String::new() },
                j.blocks_logged,
                j.checkpoint_blocks,
                j.commit_mean_ns as f64 / 1e6,
                j.locked_mean_ns as f64 / 1e6,
                j.flushing_mean_ns as f64 / 1e6,
                j.logging_mean_ns as f64 / 1e6,
                j.commit_max_ns as f64 / 1e6,
                j.handle_waits,
                j.handle_wait_ns as f64 / 1e6
            )
            .expect("write to a String");
        }
    }
}

/// One memory cgroup's line of the cgroup table, in bytes.
pub(crate) struct CgroupRow {
    pub path: String,
    /// Bytes written and read by the tasks that run in the group.
    pub io: (u64, u64),
    pub max: Option<u64>,
    pub high: Option<u64>,
    pub peak: u64,
    pub peak_dirty: u64,
    /// The group's own dirty threshold at the end (0: none, cgroup v1).
    pub thresh: u64,
    pub reclaimed: u64,
    pub max_events: u64,
    pub throttled: u64,
    pub wb_waits: u64,
    pub high_delay_s: f64,
}

/// The memory cgroups: their tasks' I/O, their limits, their largest usage and dirty level
/// against their own dirty threshold, and what their limits cost (memory.events, reclaim,
/// waits).
pub(crate) fn cgroup_rows_table(rows: &[CgroupRow], out: &mut String) {
    let mib = |b: u64| format!("{}", b >> 20);
    let limit = |b: Option<u64>| b.map_or("max".to_string(), |b| format!("{}", b >> 20));
    let mut t = Table::labelled(&[
        "cgroup",
        "MB wr",
        "MB rd",
        "max MiB",
        "high MiB",
        "peak MiB",
        "peak dirty MiB",
        "dirty thresh MiB",
        "reclaimed MiB",
        "max events",
        "throttled",
        "wb waits",
        "high delay s",
    ]);
    for g in rows {
        t.row(vec![
            g.path.clone(),
            mb(g.io.0),
            mb(g.io.1),
            limit(g.max),
            limit(g.high),
            mib(g.peak),
            mib(g.peak_dirty),
            if g.thresh == 0 { "-".to_string() } else { mib(g.thresh) },
            mib(g.reclaimed),
            g.max_events.to_string(),
            g.throttled.to_string(),
            g.wb_waits.to_string(),
            format!("{:.2}", g.high_delay_s),
        ]);
    }
    t.render(out);
}

fn cgroup_table(r: &RunResult, out: &mut String) {
    let page = wblab_sim::units::PAGE_SIZE;
    let rows: Vec<CgroupRow> = r
        .cgroups
        .iter()
        .enumerate()
        .map(|(k, g)| {
            let peak = |f: fn(&wblab_sim::metrics::MemcgSample) -> u64| g.samples.iter().map(f).max().unwrap_or(0) * page;
            // The I/O of the tasks that run in the group itself (by their [[task]]'s cgroup).
            let inside = |name: &str| r.scenario.tasks.iter().any(|tc| tc.name == name && tc.cgroup == Some(k));
            let io = r
                .tasks
                .iter()
                .filter(|t| inside(&t.name))
                .fold((0, 0), |(w, d), t| (w + t.bytes_written, d + t.bytes_read));
            CgroupRow {
                path: g.path.clone(),
                io,
                max: g.memory_max,
                high: g.memory_high,
                peak: peak(|s| s.usage),
                peak_dirty: peak(|s| s.dirty + s.writeback),
                thresh: g.samples.last().map_or(0, |s| s.dirty_thresh) * page,
                reclaimed: g.events.reclaimed * page,
                max_events: g.events.max_events,
                throttled: g.events.throttled,
                wb_waits: g.events.writeback_waits,
                high_delay_s: g.events.high_delay_ns as f64 / 1e9,
            }
        })
        .collect();
    cgroup_rows_table(&rows, out);
}

fn dirty_line(r: &RunResult, out: &mut String) {
    if let Some(s) = r.vmstat.last() {
        writeln!(
            out,
            "at {:.0} s: dirty {} MiB  writeback {} MiB  dirty thresh {} MiB  background thresh {} MiB",
            s.t_ns as f64 / 1e9,
            mib_pages(s.nr_dirty),
            mib_pages(s.nr_writeback),
            mib_pages(s.dirty_thresh),
            mib_pages(s.dirty_background_thresh),
        )
        .expect("String");
    }
}

pub(crate) use crate::results::csv::PressureRow;

/// Each group's pressure over the run: the share of it stalled, as the files' `total=` over
/// the run's length (the system's cpu `full` is never shown, as in the kernel).
pub(crate) fn pressure_rows_table(rows: &[PressureRow], out: &mut String) {
    use Align::*;
    let mut t = Table::new(
        &[
            "pressure (share of the run)",
            "io some",
            "io full",
            "memory some",
            "memory full",
            "cpu some",
            "cpu full",
        ],
        &[Left, Right, Right, Right, Right, Right, Right],
    );
    for (g, pct) in rows {
        let mut row = vec![g.clone()];
        for (i, p) in pct.iter().enumerate() {
            row.push(if g == "system" && i == 5 {
                "-".to_string()
            } else {
                format!("{p:.1} %")
            });
        }
        t.row(row);
    }
    t.render(out);
}

/// A compact, aligned summary of the run for the terminal.
pub fn terminal_summary(r: &RunResult, wall_seconds: f64) -> String {
    let mut out = String::new();
    header_line(r, wall_seconds, &mut out);
    if !r.tasks.is_empty() {
        out.push('\n');
        task_tables(r, &mut out);
    }
    if let Some(t) = crate::terminal::tiotest::table(r) {
        out.push('\n');
        out.push_str(&t);
    }
    if let Some(t) = crate::terminal::fio::table(r) {
        out.push('\n');
        out.push_str(&t);
    }
    if !r.devices.is_empty() {
        out.push('\n');
        device_table(r, &mut out);
    }
    if !r.cgroups.is_empty() {
        out.push('\n');
        cgroup_table(r, &mut out);
    }
    if !r.pressure.is_empty() {
        out.push('\n');
        pressure_rows_table(&crate::results::csv::pressure_rows(r), &mut out);
    }
    if !r.vmstat.is_empty() {
        out.push('\n');
        dirty_line(r, &mut out);
    }
    let v = crate::verdict::verdict(&crate::verdict::Input::from_result(r));
    if !v.is_empty() {
        out.push('\n');
        out.push_str(&crate::verdict::verdict_text(&v));
    }
    if r.trace_dropped > 0 {
        out.push_str(&format!(
            "note: trace.txt stops at {} records; {} later ones were counted, not kept (shorten the run or turn [trace] writeback off)\n",
            r.trace.len(),
            r.trace_dropped
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(12345678), "12,345,678");
        assert_eq!(ms(0, 0), "-");
        assert_eq!(ms(1_234_567, 1), "1.23");
        assert_eq!(ms(123_456_789, 1), "123.5");
        assert_eq!(cut("abcdef", 4), "abc…");
    }

    #[test]
    fn table_alignment() {
        use Align::*;
        let mut t = Table::new(&["a", "num"], &[Left, Right]);
        t.row(vec!["long name".into(), "1".into()]);
        let mut s = String::new();
        t.render(&mut s);
        assert_eq!(s, "a          num\nlong name    1\n");
    }
}
