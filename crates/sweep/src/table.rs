//! The sweep's table: per point, one row per task group (`sweep.csv`) and one per device
//! (`sweep-devices.csv`), each beginning with the point's index and each swept key's value.
//! Rows hold figures as the CSV prints them, so a table written, read back (to resume, or
//! gathered from other processes) and written again is byte-identical.

use crate::figures::{device_figures, format_figure, group_figures, rounded, DEVICE_FIGURES, GROUP_FIGURES};
use std::io::Write;
use wblab_sim::metrics::RunResult;

pub const TASKS_CSV: &str = "sweep.csv";
pub const DEVICES_CSV: &str = "sweep-devices.csv";

/// One task group at one point.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRow {
    pub group: String,
    pub job: String,
    pub tasks: u64,
    /// In the order of [`GROUP_FIGURES`].
    pub figures: Vec<f64>,
}

/// One device at one point.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceRow {
    pub device: String,
    pub model: String,
    /// In the order of [`DEVICE_FIGURES`].
    pub figures: Vec<f64>,
}

impl GroupRow {
    /// One of [`GROUP_FIGURES`] by name.
    pub fn get(&self, figure: &str) -> Option<f64> {
        GROUP_FIGURES.iter().position(|f| *f == figure).map(|k| self.figures[k])
    }
}

/// Everything the table holds about one point.
#[derive(Clone, Debug, PartialEq)]
pub struct PointRows {
    pub point: u64,
    /// Each swept key's value, as the tables show it.
    pub values: Vec<String>,
    pub groups: Vec<GroupRow>,
    pub devices: Vec<DeviceRow>,
}

impl PointRows {
    /// The rows of a finished run.
    pub fn of(point: u64, values: Vec<String>, r: &RunResult) -> PointRows {
        let round = |names: &[&str], v: &[f64]| names.iter().zip(v).map(|(n, v)| rounded(n, *v)).collect();
        PointRows {
            point,
            values,
            groups: group_figures(r)
                .into_iter()
                .map(|g| GroupRow {
                    group: g.group,
                    job: g.job.to_string(),
                    tasks: g.tasks as u64,
                    figures: round(&GROUP_FIGURES, &g.values),
                })
                .collect(),
            devices: device_figures(r)
                .into_iter()
                .map(|d| DeviceRow {
                    device: d.device,
                    model: d.model.to_string(),
                    figures: round(&DEVICE_FIGURES, &d.values),
                })
                .collect(),
        }
    }

    /// Every figure by its name, `<group>.<figure>` and `<device>.<figure>`, as `--minimize`,
    /// `--maximize` and `--where` name them.
    pub fn named_figures(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        for g in &self.groups {
            out.extend(GROUP_FIGURES.iter().zip(&g.figures).map(|(f, v)| (format!("{}.{f}", g.group), *v)));
        }
        for d in &self.devices {
            out.extend(
                DEVICE_FIGURES
                    .iter()
                    .zip(&d.figures)
                    .map(|(f, v)| (format!("{}.{f}", d.device), *v)),
            );
        }
        out
    }

    /// The figure `name` (`<group>.<figure>` or `<device>.<figure>`), if the point has it.
    pub fn figure(&self, name: &str) -> Option<f64> {
        let (item, figure) = name.rsplit_once('.')?;
        if let Some(g) = self.groups.iter().find(|g| g.group == item) {
            return g.get(figure);
        }
        let d = self.devices.iter().find(|d| d.device == item)?;
        DEVICE_FIGURES.iter().position(|f| *f == figure).map(|k| d.figures[k])
    }
}

/// `sweep.csv`'s header for a sweep of `keys`.
pub fn groups_header(keys: &[String]) -> Vec<String> {
    header(keys, &["group", "job", "tasks"], &GROUP_FIGURES)
}

/// `sweep-devices.csv`'s header.
pub fn devices_header(keys: &[String]) -> Vec<String> {
    header(keys, &["device", "model"], &DEVICE_FIGURES)
}

fn header(keys: &[String], own: &[&str], figures: &[&str]) -> Vec<String> {
    std::iter::once("point".to_string())
        .chain(keys.iter().cloned())
        .chain(own.iter().chain(figures).map(|s| s.to_string()))
        .collect()
}

/// Writes the two CSV tables, a point's rows at a time.
pub struct CsvWriter<W: Write> {
    groups: csv::Writer<W>,
    devices: csv::Writer<W>,
}

impl<W: Write> CsvWriter<W> {
    /// Writers that start with the headers (`headers`), or append to tables that have them.
    pub fn new(groups: W, devices: W, keys: &[String], headers: bool) -> csv::Result<CsvWriter<W>> {
        let mut w = CsvWriter {
            groups: csv::WriterBuilder::new()
                .terminator(csv::Terminator::Any(b'\n'))
                .from_writer(groups),
            devices: csv::WriterBuilder::new()
                .terminator(csv::Terminator::Any(b'\n'))
                .from_writer(devices),
        };
        if headers {
            w.groups.write_record(groups_header(keys))?;
            w.devices.write_record(devices_header(keys))?;
        }
        Ok(w)
    }

    /// Write a point's rows: its devices' first, then its groups', each pushed to its file,
    /// so a point whose group rows are in `sweep.csv` has all its rows (what [`parse_csv`]
    /// readers resuming a sweep rely on).
    pub fn write(&mut self, p: &PointRows) -> csv::Result<()> {
        let lead = || std::iter::once(p.point.to_string()).chain(p.values.iter().cloned());
        for d in &p.devices {
            let figures = DEVICE_FIGURES.iter().zip(&d.figures).map(|(n, v)| format_figure(n, *v));
            let own = [d.device.clone(), d.model.clone()];
            self.devices.write_record(lead().chain(own).chain(figures))?;
        }
        self.devices.flush()?;
        for g in &p.groups {
            let figures = GROUP_FIGURES.iter().zip(&g.figures).map(|(n, v)| format_figure(n, *v));
            let own = [g.group.clone(), g.job.clone(), g.tasks.to_string()];
            self.groups.write_record(lead().chain(own).chain(figures))?;
        }
        self.groups.flush()?;
        Ok(())
    }

    pub fn into_inner(self) -> Result<(W, W), String> {
        let g = self.groups.into_inner().map_err(|e| e.to_string())?;
        let d = self.devices.into_inner().map_err(|e| e.to_string())?;
        Ok((g, d))
    }
}

/// Both tables as text, the points in the order given.
pub fn to_csv(keys: &[String], points: &[PointRows]) -> (String, String) {
    let mut w = CsvWriter::new(Vec::new(), Vec::new(), keys, true).expect("writing to memory");
    for p in points {
        w.write(p).expect("writing to memory");
    }
    let (g, d) = w.into_inner().expect("writing to memory");
    (
        String::from_utf8(g).expect("our rows are UTF-8"),
        String::from_utf8(d).expect("our rows are UTF-8"),
    )
}

/// One row of a table read back: its point, values and task group or device.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Its line in the table, from 1.
    pub line: usize,
    pub point: u64,
    pub values: Vec<String>,
    pub item: Item,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Group(GroupRow),
    Device(DeviceRow),
}

/// A row that could not be read: its point when that much could be, and what is wrong (naming
/// the table and line).
#[derive(Clone, Debug, PartialEq)]
pub struct BadRow {
    pub point: Option<u64>,
    pub message: String,
}

/// Which of the two tables a text is.
#[derive(Clone, Copy, PartialEq)]
pub enum Table {
    Groups,
    Devices,
}

/// A CSV reader of `text` that hands every record over as it is (header included, any
/// number of fields): the callers check each row themselves.
fn rows_reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes())
}

/// Reads one table's rows, each on its own (a bad row names its table and line).
struct RowParser {
    head: Vec<String>,
    own: usize,
    names: &'static [&'static str],
    what: &'static str,
    lead: usize,
    table: Table,
}

impl RowParser {
    fn new(keys: &[String], table: Table) -> RowParser {
        let (head, own, names, what) = match table {
            Table::Groups => (groups_header(keys), 3, &GROUP_FIGURES[..], TASKS_CSV),
            Table::Devices => (devices_header(keys), 2, &DEVICE_FIGURES[..], DEVICES_CSV),
        };
        RowParser {
            head,
            own,
            names,
            what,
            lead: 1 + keys.len(),
            table,
        }
    }

    /// An error unless `fields` is this sweep's header.
    fn header(&self, fields: &[&str], keys: &[String]) -> Result<(), String> {
        if fields != self.head.iter().map(String::as_str).collect::<Vec<_>>() {
            return Err(format!(
                "{}: its header is not this sweep's ({})",
                self.what,
                self.head[1..=keys.len()].join(", ")
            ));
        }
        Ok(())
    }

    fn row(&self, fields: &[&str], line: usize) -> Result<Row, BadRow> {
        let bad = |point: Option<u64>, m: String| BadRow {
            point,
            message: format!("{}: line {line}: {m}", self.what),
        };
        let first = fields.first().copied().unwrap_or("");
        let Ok(p) = first.parse::<u64>() else {
            return Err(bad(None, format!("`{first}` is not a point")));
        };
        let point = Some(p);
        if fields.len() != self.head.len() {
            return Err(bad(
                point,
                format!("{} fields where the header has {}", fields.len(), self.head.len()),
            ));
        }
        let (lead, own) = (self.lead, self.own);
        let figures = fields[lead + own..]
            .iter()
            .zip(self.names)
            .map(|(f, n)| f.parse::<f64>().map_err(|_| format!("{n} `{f}` is not a number")))
            .collect::<Result<Vec<f64>, String>>()
            .map_err(|m| bad(point, m))?;
        let item = &fields[lead..lead + own];
        let item = match self.table {
            Table::Devices => Item::Device(DeviceRow {
                device: item[0].to_string(),
                model: item[1].to_string(),
                figures,
            }),
            Table::Groups => match item[2].parse() {
                Ok(tasks) => Item::Group(GroupRow {
                    group: item[0].to_string(),
                    job: item[1].to_string(),
                    tasks,
                    figures,
                }),
                Err(_) => return Err(bad(point, format!("tasks `{}` is not a count", item[2]))),
            },
        };
        Ok(Row {
            line,
            point: p,
            values: fields[1..lead].iter().map(|s| s.to_string()).collect(),
            item,
        })
    }
}

/// The rows of one table written by [`CsvWriter`] for a sweep of `keys` (`headers`: whether the
/// text begins with its header, which must be this sweep's), each read on its own: a bad row
/// does not hide the others, so a reader may drop it and keep the rest.
pub fn read_rows(keys: &[String], text: &str, table: Table, headers: bool) -> Result<Vec<Result<Row, BadRow>>, String> {
    let parser = RowParser::new(keys, table);
    let mut r = rows_reader(text);
    let mut out = Vec::new();
    for (n, rec) in r.records().enumerate() {
        let rec = match rec {
            Ok(rec) => rec,
            Err(e) => {
                out.push(Err(BadRow {
                    point: None,
                    message: format!("{}: {e}", parser.what),
                }));
                continue;
            }
        };
        let fields: Vec<&str> = rec.iter().collect();
        if headers && n == 0 {
            parser.header(&fields, keys)?;
            continue;
        }
        out.push(parser.row(&fields, n + 1));
    }
    Ok(out)
}

/// One table of a finished sweep, read a row at a time with the next row peeked.
struct TableStream {
    parser: RowParser,
    rows: csv::Reader<std::io::BufReader<std::fs::File>>,
    line: usize,
    head: Option<Row>,
    /// The point of the last row read.
    last: Option<u64>,
}

impl TableStream {
    fn open(dir: &std::path::Path, keys: &[String], table: Table) -> Result<TableStream, String> {
        let parser = RowParser::new(keys, table);
        let path = dir.join(parser.what);
        let f = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut rows = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(std::io::BufReader::new(f));
        let mut rec = csv::StringRecord::new();
        if !rows.read_record(&mut rec).map_err(|e| format!("{}: {e}", parser.what))? {
            return Err(format!("{}: empty, not a sweep's table", parser.what));
        }
        parser.header(&rec.iter().collect::<Vec<_>>(), keys)?;
        let mut t = TableStream {
            parser,
            rows,
            line: 1,
            head: None,
            last: None,
        };
        t.advance()?;
        Ok(t)
    }

    fn advance(&mut self) -> Result<(), String> {
        let mut rec = csv::StringRecord::new();
        let last = self.last;
        self.head = if self.rows.read_record(&mut rec).map_err(|e| format!("{}: {e}", self.parser.what))? {
            self.line += 1;
            let row = self.parser.row(&rec.iter().collect::<Vec<_>>(), self.line).map_err(|b| b.message)?;
            if last.is_some_and(|l| row.point < l) {
                return Err(format!(
                    "{}: line {}: point {} after point {}: not in sweep order",
                    self.parser.what,
                    self.line,
                    row.point,
                    last.unwrap_or_default()
                ));
            }
            self.last = Some(row.point);
            Some(row)
        } else {
            None
        };
        Ok(())
    }

    /// The rows of `point` at the head of the table, added to `p`.
    fn take(&mut self, p: &mut PointRows) -> Result<(), String> {
        while let Some(row) = self.head.take_if(|r| r.point == p.point) {
            if row.values != p.values {
                return Err(format!(
                    "{}: line {}: point {} appears with two sets of values",
                    self.parser.what, row.line, row.point
                ));
            }
            match row.item {
                Item::Group(g) => p.groups.push(g),
                Item::Device(d) => p.devices.push(d),
            }
            self.advance()?;
        }
        Ok(())
    }
}

/// The points of a finished sweep's tables in `dir` (in sweep order, as a sweep leaves them),
/// handed to `f` one at a time: what its table, ranking and plots are drawn from, in memory
/// that does not grow with the sweep. Returns how many there were.
pub fn for_each_point(dir: &std::path::Path, keys: &[String], mut f: impl FnMut(PointRows) -> Result<(), String>) -> Result<u64, String> {
    let mut groups = TableStream::open(dir, keys, Table::Groups)?;
    let mut devices = TableStream::open(dir, keys, Table::Devices)?;
    let mut n = 0;
    loop {
        let next = [&groups.head, &devices.head]
            .into_iter()
            .flatten()
            .min_by_key(|r| r.point)
            .map(|r| (r.point, r.values.clone()));
        let Some((point, values)) = next else { return Ok(n) };
        let mut p = PointRows {
            point,
            values,
            groups: Vec::new(),
            devices: Vec::new(),
        };
        groups.take(&mut p)?;
        devices.take(&mut p)?;
        f(p)?;
        n += 1;
    }
}

/// The points of tables written by [`CsvWriter`] for a sweep of `keys` (`headers`: whether
/// the texts begin with their headers). A row cut short (a sweep stopped mid-write) or of
/// another sweep is an error naming its line.
pub fn parse_csv(keys: &[String], groups: &str, devices: &str, headers: bool) -> Result<Vec<PointRows>, String> {
    let mut points: std::collections::BTreeMap<u64, PointRows> = Default::default();
    for (text, table) in [(groups, Table::Groups), (devices, Table::Devices)] {
        for row in read_rows(keys, text, table, headers)? {
            let row = row.map_err(|b| b.message)?;
            let p = points.entry(row.point).or_insert_with(|| PointRows {
                point: row.point,
                values: row.values.clone(),
                groups: Vec::new(),
                devices: Vec::new(),
            });
            if p.values != row.values {
                let what = if table == Table::Groups { TASKS_CSV } else { DEVICES_CSV };
                return Err(format!(
                    "{what}: line {}: point {} appears with two sets of values",
                    row.line, row.point
                ));
            }
            match row.item {
                Item::Group(g) => p.groups.push(g),
                Item::Device(d) => p.devices.push(d),
            }
        }
    }
    Ok(points.into_values().collect())
}

pub const INVALID_CSV: &str = "sweep-invalid.csv";

/// A point whose combination of values is not a valid scenario (a task starting after a
/// swept duration): it is not run, and `sweep-invalid.csv` lists it with the reason, so the
/// rest of the sweep runs and a resumed sweep finishes.
#[derive(Clone, Debug, PartialEq)]
pub struct InvalidPoint {
    pub point: u64,
    /// Each swept key's value, as the tables show it.
    pub values: Vec<String>,
    /// The scenario error, on one line (`FILE:LINE:COL: key `start`: ...`).
    pub reason: String,
}

/// `sweep-invalid.csv`'s header.
pub fn invalid_header(keys: &[String]) -> Vec<String> {
    std::iter::once("point".to_string())
        .chain(keys.iter().cloned())
        .chain(["reason".to_string()])
        .collect()
}

/// `sweep-invalid.csv` as text (with its header when `headers`), the points in the order given.
pub fn invalid_csv(keys: &[String], points: &[InvalidPoint], headers: bool) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let mut write = || -> csv::Result<()> {
        if headers {
            w.write_record(invalid_header(keys))?;
        }
        for p in points {
            let lead = std::iter::once(p.point.to_string()).chain(p.values.iter().cloned());
            w.write_record(lead.chain([p.reason.clone()]))?;
        }
        w.flush()?;
        Ok(())
    };
    write().expect("writing to memory");
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("our rows are UTF-8")
}

/// The points of [`invalid_csv`]'s text without its header, as gathered from other processes.
pub fn parse_invalid_csv(keys: &[String], text: &str) -> Result<Vec<InvalidPoint>, String> {
    let mut r = rows_reader(text);
    let mut out = Vec::new();
    for (n, rec) in r.records().enumerate() {
        let rec = rec.map_err(|e| format!("{INVALID_CSV}: {e}"))?;
        let fields: Vec<&str> = rec.iter().collect();
        if fields.len() != keys.len() + 2 {
            return Err(format!(
                "{INVALID_CSV}: line {}: {} fields where the header has {}",
                n + 1,
                fields.len(),
                keys.len() + 2
            ));
        }
        let point = fields[0]
            .parse()
            .map_err(|_| format!("{INVALID_CSV}: line {}: `{}` is not a point", n + 1, fields[0]))?;
        out.push(InvalidPoint {
            point,
            values: fields[1..=keys.len()].iter().map(|s| s.to_string()).collect(),
            reason: fields[keys.len() + 1].to_string(),
        });
    }
    Ok(out)
}
