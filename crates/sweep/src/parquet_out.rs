//! `sweep.parquet` and `sweep-devices.parquet`: the CSV tables with their types kept — the
//! point and counts as integers, figures as doubles, each swept key as an integer or double
//! column when every value is one (`fifo_batch`), else as strings (`64MiB`, `bfq`) — for
//! `pandas.read_parquet`, polars and Arrow tools. Written from the CSV tables in two streaming
//! passes (the types, then the rows), so a table of any length fits in memory; deterministic
//! bytes.

use crate::table::{DEVICES_CSV, TASKS_CSV};
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::path::Path;
use std::sync::Arc;

pub const TASKS_PARQUET: &str = "sweep.parquet";
pub const DEVICES_PARQUET: &str = "sweep-devices.parquet";

/// Rows per row group: a table of any length is written a group at a time, in memory that
/// does not grow with it (a sweep of under this many rows has one group, as it always had).
pub const ROW_GROUP_ROWS: usize = 16_384;

/// A column's type.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Int,
    Double,
    Text,
}

/// A column's values for one row group.
enum Column {
    Int(Vec<i64>),
    Double(Vec<f64>),
    Text(Vec<ByteArray>),
}

impl Kind {
    fn physical(self) -> (Physical, Option<LogicalType>) {
        match self {
            Kind::Int => (Physical::INT64, None),
            Kind::Double => (Physical::DOUBLE, None),
            Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
        }
    }

    fn column(self) -> Column {
        match self {
            Kind::Int => Column::Int(Vec::new()),
            Kind::Double => Column::Double(Vec::new()),
            Kind::Text => Column::Text(Vec::new()),
        }
    }
}

impl Column {
    fn push(&mut self, field: &str) -> Result<(), String> {
        match self {
            Column::Int(v) => v.push(field.parse().map_err(|_| format!("`{field}` is not an integer"))?),
            Column::Double(v) => v.push(field.parse().map_err(|_| format!("`{field}` is not a number"))?),
            Column::Text(v) => v.push(ByteArray::from(field)),
        }
        Ok(())
    }
}

/// A table's rows, one record at a time, header first.
fn reader(path: &Path) -> Result<csv::Reader<std::io::BufReader<std::fs::File>>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(csv::ReaderBuilder::new().has_headers(false).from_reader(std::io::BufReader::new(f)))
}

/// Each column's type: the point and counts integers, the task group's and device's names
/// text, figures doubles, and each swept key an integer or double column when every value in
/// the table is one (`fifo_batch`), else text (`64MiB`, `bfq`). A first pass over the table.
fn kinds(path: &Path, keys: &[String]) -> Result<(Vec<String>, Vec<Kind>), String> {
    let err = |e: csv::Error| format!("{}: {e}", path.display());
    let mut r = reader(path)?;
    let mut rec = csv::StringRecord::new();
    if !r.read_record(&mut rec).map_err(err)? {
        return Err(format!("{}: empty, not a sweep's table", path.display()));
    }
    let names: Vec<String> = rec.iter().map(str::to_string).collect();
    let swept = 1..=keys.len();
    let mut kinds: Vec<Kind> = names
        .iter()
        .enumerate()
        .map(|(c, n)| match n.as_str() {
            _ if swept.contains(&c) => Kind::Int,
            "point" | "tasks" => Kind::Int,
            "group" | "job" | "device" | "model" => Kind::Text,
            n if n.ends_with("_count") => Kind::Int,
            _ => Kind::Double,
        })
        .collect();
    while r.read_record(&mut rec).map_err(err)? {
        for c in swept.clone() {
            let v = rec.get(c).unwrap_or_default();
            if kinds[c] == Kind::Int && v.parse::<i64>().is_err() {
                kinds[c] = Kind::Double;
            }
            if kinds[c] == Kind::Double && v.parse::<f64>().is_err() {
                kinds[c] = Kind::Text;
            }
        }
    }
    Ok((names, kinds))
}

/// Write `csv_path`'s table as `path`: a second pass, `group_rows` rows at a time.
fn write(csv_path: &Path, path: &Path, keys: &[String], group_rows: usize) -> Result<(), String> {
    let (names, kinds) = kinds(csv_path, keys)?;
    let err = |e: parquet::errors::ParquetError| format!("{}: {e}", path.display());
    let fields = names
        .iter()
        .zip(&kinds)
        .map(|(name, k)| {
            let (physical, logical) = k.physical();
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
    let mut r = reader(csv_path)?;
    let mut rec = csv::StringRecord::new();
    let read_err = |e: csv::Error| format!("{}: {e}", csv_path.display());
    r.read_record(&mut rec).map_err(read_err)?;
    let (mut line, mut groups, mut more) = (1, 0, true);
    while more {
        let mut columns: Vec<Column> = kinds.iter().map(|k| k.column()).collect();
        let mut rows = 0;
        while rows < group_rows {
            if !r.read_record(&mut rec).map_err(read_err)? {
                more = false;
                break;
            }
            line += 1;
            if rec.len() != columns.len() {
                return Err(format!(
                    "{}: line {line}: {} fields where the header has {}",
                    csv_path.display(),
                    rec.len(),
                    columns.len()
                ));
            }
            for ((c, field), name) in columns.iter_mut().zip(&rec).zip(&names) {
                c.push(field)
                    .map_err(|e| format!("{}: line {line}: {name} {e}", csv_path.display()))?;
            }
            rows += 1;
        }
        // A group per `group_rows` rows; an empty table still has one.
        if rows == 0 && groups > 0 {
            break;
        }
        let mut rg = w.next_row_group().map_err(err)?;
        for c in &columns {
            let mut col = rg.next_column().map_err(err)?.expect("a writer per column");
            match c {
                Column::Int(v) => col.typed::<Int64Type>().write_batch(v, None, None).map(drop),
                Column::Double(v) => col.typed::<DoubleType>().write_batch(v, None, None).map(drop),
                Column::Text(v) => col.typed::<ByteArrayType>().write_batch(v, None, None).map(drop),
            }
            .map_err(err)?;
            col.close().map_err(err)?;
        }
        rg.close().map_err(err)?;
        groups += 1;
    }
    w.close().map_err(err)?;
    Ok(())
}

/// Write both Parquet tables into `dir` from its CSV tables (as a sweep of `keys` wrote them).
pub fn write_from_csv(dir: &Path, keys: &[String]) -> Result<(), String> {
    write(&dir.join(TASKS_CSV), &dir.join(TASKS_PARQUET), keys, ROW_GROUP_ROWS)?;
    write(&dir.join(DEVICES_CSV), &dir.join(DEVICES_PARQUET), keys, ROW_GROUP_ROWS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    fn rows(path: &Path) -> (usize, Vec<String>) {
        let r = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
        let groups = r.metadata().num_row_groups();
        let rows = r.get_row_iter(None).unwrap().map(|row| row.unwrap().to_string()).collect();
        (groups, rows)
    }

    /// A table written in row groups of any size holds the same rows, typed the same.
    #[test]
    fn row_groups_split_a_table_without_changing_it() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/parquet-groups-test");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let keys = vec!["vm.dirty_bytes".to_string(), "fifo_batch".to_string()];
        let mut csv = String::from("point,vm.dirty_bytes,fifo_batch,device,model,util_pct\n");
        for i in 0..10 {
            csv.push_str(&format!("{i},{}MiB,{},sda,hdd,{}.5\n", 16 << (i % 3), i * 4, i * 7));
        }
        let table = dir.join("t.csv");
        std::fs::write(&table, csv).unwrap();
        let (one, three) = (dir.join("one.parquet"), dir.join("three.parquet"));
        write(&table, &one, &keys, ROW_GROUP_ROWS).unwrap();
        write(&table, &three, &keys, 3).unwrap();
        let (a, b) = (rows(&one), rows(&three));
        assert_eq!((a.0, b.0), (1, 4), "row groups");
        assert_eq!(a.1, b.1);
        assert!(
            a.1[1].contains("vm.dirty_bytes: \"32MiB\"") && a.1[1].contains("fifo_batch: 4"),
            "{}",
            a.1[1]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
