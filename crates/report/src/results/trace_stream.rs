//! `trace.txt` written while the simulation runs: the simulator hands full chunks of records
//! to a [`TraceSink`] whose thread formats them (on the second core, beside the simulation)
//! and digests what the report draws ([`TraceDigest`]), so a long run's trace is never held in
//! memory nor read back. The kernel's header counts the entries, which are known only at the
//! end: the body goes to a scratch file first and is copied behind the header in the kernel
//! (`copy_file_range`), which costs a fraction of formatting it.

use super::ftrace::{format_trace_line, write_header};
use super::TRACE_FILE;
use crate::load::rundir::{TraceData, TraceDigest};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use wblab_sim::metrics::{TraceRecord, TraceSink};

/// Chunks queued between the simulation and the writer: the simulation waits when the writer
/// falls this far behind, so memory stays bounded (each chunk is 2 MiB).
const QUEUE: usize = 4;

/// The body of trace.txt while it is written (removed once trace.txt is assembled).
const PART_FILE: &str = ".trace.txt.part";

/// What the writer thread leaves when the trace is complete.
pub struct Streamed {
    pub records: u64,
    pub bytes: u64,
    pub digest: TraceData,
}

/// The writer thread of one run's trace.txt.
pub struct TraceStream {
    handle: JoinHandle<io::Result<Streamed>>,
    bytes: Arc<AtomicU64>,
}

struct Sink {
    full: SyncSender<Vec<TraceRecord>>,
    /// Buffers the writer has emptied, to fill again.
    empty: Receiver<Vec<TraceRecord>>,
}

impl TraceSink for Sink {
    fn chunk(&mut self, records: Vec<TraceRecord>) -> Vec<TraceRecord> {
        // A writer that stopped on an I/O error reports it from `finish`; the run goes on.
        let _ = self.full.send(records);
        self.empty.try_recv().unwrap_or_default()
    }
}

impl TraceStream {
    /// Start writing `dir/trace.txt` for a run with `cpus` CPUs whose records index `comms`,
    /// digesting it for a report of `sim_seconds`. Returns the sink to give the simulation. An
    /// I/O error (the directory cannot be written) is reported by [`TraceStream::finish`]; the
    /// simulation is not held up by it.
    pub fn start(dir: &Path, comms: Vec<(String, u32)>, cpus: u32, sim_seconds: f64) -> (TraceStream, Box<dyn TraceSink>) {
        let (tx, rx) = sync_channel(QUEUE);
        let (back, empty) = sync_channel(QUEUE + 2);
        let bytes = Arc::new(AtomicU64::new(0));
        let counter = bytes.clone();
        let dir = dir.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("trace.txt".into())
            .spawn(move || {
                std::fs::create_dir_all(&dir)?;
                let part = dir.join(PART_FILE);
                let body = BufWriter::with_capacity(1 << 20, File::create(&part)?);
                let s = write_body(rx, &back, body, &comms, &counter, sim_seconds)?;
                assemble(&dir.join(TRACE_FILE), &part, s, cpus)
            })
            .expect("a thread can be started");
        (TraceStream { handle, bytes }, Box::new(Sink { full: tx, empty }))
    }

    /// Bytes of trace text formatted so far (for progress output).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Wait for the file to be complete (the sink must have been dropped: the run is over).
    pub fn finish(self) -> io::Result<Streamed> {
        self.handle
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the trace writer thread panicked")))
    }
}

fn write_body(
    rx: Receiver<Vec<TraceRecord>>,
    back: &SyncSender<Vec<TraceRecord>>,
    mut body: BufWriter<File>,
    comms: &[(String, u32)],
    counter: &AtomicU64,
    sim_seconds: f64,
) -> io::Result<Streamed> {
    let mut digest = TraceDigest::new();
    let mut line = String::with_capacity(1024);
    let (mut records, mut bytes) = (0u64, 0u64);
    for chunk in rx {
        for rec in &chunk {
            line.clear();
            format_trace_line(rec, comms, &mut line);
            line.push('\n');
            body.write_all(line.as_bytes())?;
            bytes += line.len() as u64;
            digest.record(rec, comms);
        }
        records += chunk.len() as u64;
        counter.store(bytes, Ordering::Relaxed);
        let mut chunk = chunk;
        chunk.clear();
        let _ = back.try_send(chunk);
    }
    body.flush()?;
    Ok(Streamed {
        records,
        bytes,
        digest: digest.finish(sim_seconds),
    })
}

/// trace.txt = the header, then the body copied from the scratch file, which is removed.
fn assemble(out: &Path, part: &Path, mut s: Streamed, cpus: u32) -> io::Result<Streamed> {
    let mut header = String::new();
    write_header(&mut header, s.records as usize, cpus);
    let mut f = File::create(out)?;
    f.write_all(header.as_bytes())?;
    let mut body = File::open(part)?;
    // std::io::copy between two files uses copy_file_range: the bytes stay in the kernel.
    io::copy(&mut body, &mut f)?;
    drop(body);
    std::fs::remove_file(part)?;
    s.bytes += header.len() as u64;
    Ok(s)
}
