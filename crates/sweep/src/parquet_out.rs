//! `sweep.parquet` and `sweep-devices.parquet`: the CSV tables with their types kept — the
//! point and counts as integers, figures as doubles, each swept key as an integer or double
//! column when every value is one (`fifo_batch`), else as strings (`64MiB`, `bfq`) — for
//! `pandas.read_parquet`, polars and Arrow tools. One row group; deterministic bytes.

use crate::figures::{DEVICE_FIGURES, GROUP_FIGURES};
use crate::table::PointRows;
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::path::Path;
use std::sync::Arc;

pub const TASKS_PARQUET: &str = "sweep.parquet";
pub const DEVICES_PARQUET: &str = "sweep-devices.parquet";

/// A column's values.
enum Column {
    Int(Vec<i64>),
    Double(Vec<f64>),
    Text(Vec<String>),
}

impl Column {
    /// Text that is all integers (or all numbers) becomes that type.
    fn infer(values: Vec<String>) -> Column {
        if let Ok(v) = values.iter().map(|s| s.parse::<i64>()).collect::<Result<Vec<_>, _>>() {
            return Column::Int(v);
        }
        if let Ok(v) = values.iter().map(|s| s.parse::<f64>()).collect::<Result<Vec<_>, _>>() {
            return Column::Double(v);
        }
        Column::Text(values)
    }

    fn physical(&self) -> (Physical, Option<LogicalType>) {
        match self {
            Column::Int(_) => (Physical::INT64, None),
            Column::Double(_) => (Physical::DOUBLE, None),
            Column::Text(_) => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
        }
    }
}

fn write(path: &Path, columns: Vec<(String, Column)>) -> Result<(), String> {
    let err = |e: parquet::errors::ParquetError| format!("{}: {e}", path.display());
    let fields = columns
        .iter()
        .map(|(name, c)| {
            let (physical, logical) = c.physical();
            Type::primitive_type_builder(name, physical)
                .with_repetition(Repetition::REQUIRED)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    let schema = Arc::new(Type::group_type_builder("sweep").with_fields(fields).build().map_err(err)?);
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let props = Arc::new(WriterProperties::builder().build());
    let mut w = SerializedFileWriter::new(file, schema, props).map_err(err)?;
    let mut rg = w.next_row_group().map_err(err)?;
    for (_, c) in &columns {
        let mut col = rg.next_column().map_err(err)?.expect("a writer per column");
        match c {
            Column::Int(v) => col.typed::<Int64Type>().write_batch(v, None, None).map(drop),
            Column::Double(v) => col.typed::<DoubleType>().write_batch(v, None, None).map(drop),
            Column::Text(v) => {
                let b: Vec<ByteArray> = v.iter().map(|s| ByteArray::from(s.as_str())).collect();
                col.typed::<ByteArrayType>().write_batch(&b, None, None).map(drop)
            }
        }
        .map_err(err)?;
        col.close().map_err(err)?;
    }
    rg.close().map_err(err)?;
    w.close().map_err(err)?;
    Ok(())
}

/// The columns both tables begin with, for `rows` (one per item of each point).
fn lead(keys: &[String], points: &[PointRows], per_point: impl Fn(&PointRows) -> usize) -> Vec<(String, Column)> {
    let mut cols = vec![(
        "point".to_string(),
        Column::Int(
            points
                .iter()
                .flat_map(|p| std::iter::repeat_n(p.point as i64, per_point(p)))
                .collect(),
        ),
    )];
    for (k, key) in keys.iter().enumerate() {
        let v = points
            .iter()
            .flat_map(|p| std::iter::repeat_n(p.values[k].clone(), per_point(p)))
            .collect();
        cols.push((key.clone(), Column::infer(v)));
    }
    cols
}

/// Write both Parquet tables into `dir`.
pub fn write_tables(dir: &Path, keys: &[String], points: &[PointRows]) -> Result<(), String> {
    let mut g = lead(keys, points, |p| p.groups.len());
    let groups = || points.iter().flat_map(|p| &p.groups);
    g.push(("group".into(), Column::Text(groups().map(|r| r.group.clone()).collect())));
    g.push(("job".into(), Column::Text(groups().map(|r| r.job.clone()).collect())));
    g.push(("tasks".into(), Column::Int(groups().map(|r| r.tasks as i64).collect())));
    for (k, name) in GROUP_FIGURES.iter().enumerate() {
        let v: Vec<f64> = groups().map(|r| r.figures[k]).collect();
        g.push((
            name.to_string(),
            if name.ends_with("_count") {
                Column::Int(v.iter().map(|x| *x as i64).collect())
            } else {
                Column::Double(v)
            },
        ));
    }
    write(&dir.join(TASKS_PARQUET), g)?;
    let mut d = lead(keys, points, |p| p.devices.len());
    let devices = || points.iter().flat_map(|p| &p.devices);
    d.push(("device".into(), Column::Text(devices().map(|r| r.device.clone()).collect())));
    d.push(("model".into(), Column::Text(devices().map(|r| r.model.clone()).collect())));
    for (k, name) in DEVICE_FIGURES.iter().enumerate() {
        d.push((name.to_string(), Column::Double(devices().map(|r| r.figures[k]).collect())));
    }
    write(&dir.join(DEVICES_PARQUET), d)
}
