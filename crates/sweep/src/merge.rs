//! Merging a table's two sorted runs in place: a resumed sweep's table holds the points kept
//! from the earlier run, in order, then the points it ran, in order; one streaming pass
//! interleaves them into sweep order, in memory that does not grow with the table.

use crate::driver::io;
use crate::run::Failure;
use csv::{ByteRecord, Reader, ReaderBuilder, Terminator, WriterBuilder};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom};
use std::path::Path;

/// A run of the table: its records in order, one peeked ahead.
struct Run<R: Read> {
    rows: Reader<R>,
    head: Option<(u64, ByteRecord)>,
}

impl<R: Read> Run<R> {
    fn new(r: R) -> Run<R> {
        Run {
            rows: ReaderBuilder::new().has_headers(false).flexible(true).from_reader(r),
            head: None,
        }
    }

    /// The next record and its point (a record whose point does not read sorts last).
    fn advance(&mut self, path: &Path) -> Result<(), Failure> {
        let mut rec = ByteRecord::new();
        self.head = if self
            .rows
            .read_byte_record(&mut rec)
            .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?
        {
            let point = std::str::from_utf8(rec.get(0).unwrap_or_default())
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(u64::MAX);
            Some((point, rec))
        } else {
            None
        };
        Ok(())
    }
}

/// Merge `path`'s rows before byte `split` (header and first run) with those after it (the
/// second run), each sorted by point, into one table sorted by point; a point's rows stay
/// together and in their order. Written through a scratch file, so the table is never seen
/// half-merged.
pub fn merge_runs(path: &Path, split: u64) -> Result<(), Failure> {
    let open = || File::open(path).map_err(io(path));
    let mut first = Run::new(BufReader::new(open()?).take(split));
    let mut rest = open()?;
    rest.seek(SeekFrom::Start(split)).map_err(io(path))?;
    let mut second = Run::new(BufReader::new(rest).take(u64::MAX));
    let tmp = path.with_extension("csv.tmp");
    let mut out = WriterBuilder::new()
        .terminator(Terminator::Any(b'\n'))
        .flexible(true)
        .from_writer(BufWriter::new(File::create(&tmp).map_err(io(&tmp))?));
    let write_err = |e: csv::Error| Failure::Io(format!("{}: {e}", tmp.display()));
    // The header.
    first.advance(path)?;
    if let Some((_, h)) = first.head.take() {
        out.write_byte_record(&h).map_err(write_err)?;
    }
    first.advance(path)?;
    second.advance(path)?;
    loop {
        // The run whose next point comes first gives all of that point's rows.
        let from = match (&first.head, &second.head) {
            (None, None) => break,
            (Some(_), None) => &mut first,
            (None, Some(_)) => &mut second,
            (Some((a, _)), Some((b, _))) => {
                if a <= b {
                    &mut first
                } else {
                    &mut second
                }
            }
        };
        let point = from.head.as_ref().map(|(p, _)| *p);
        while let Some((p, rec)) = &from.head {
            if Some(*p) != point {
                break;
            }
            out.write_byte_record(rec).map_err(write_err)?;
            from.advance(path)?;
        }
    }
    out.flush().map_err(io(&tmp))?;
    drop(out);
    std::fs::rename(&tmp, path).map_err(io(path))
}
