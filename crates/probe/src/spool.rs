//! Where a measurement's trace waits while the run goes on: in memory, so that the harness's
//! own output does not take part in the experiment. Streamed to a file on the scratch disk,
//! the trace made that disk's pages dirty all through the run: they counted in the kernel's
//! global dirty level (30–100 pages above the workload's in a g008 run of 2026-12-04, 9–12
//! with the spool), their writeback reached the host disk beside the loop devices' backing
//! I/O, and that disk's writeout diluted the loop device's share of the writeout proportions. The spool is a `memfd` (shared memory, which
//! no writeback sees) written to the file when the trace ends; past [`SPOOL_MAX`] it goes to
//! the file at once, so a long run's trace does not take the machine's memory.

use crate::sys;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};

/// The most a trace holds in memory before it goes to its file.
pub const SPOOL_MAX: u64 = 256 << 20;

/// A trace's bytes on their way to `out`.
pub struct Spool {
    out: PathBuf,
    sink: Sink,
    held: u64,
}

enum Sink {
    Memory(File),
    File(File),
}

impl Spool {
    /// A spool for `out`: in memory where the kernel can make a `memfd`, else the file itself.
    pub fn new(out: &Path) -> io::Result<Spool> {
        let sink = match sys::memfd(c"wblab-trace") {
            Ok(f) => Sink::Memory(f),
            Err(_) => Sink::File(File::create(out)?),
        };
        Ok(Spool {
            out: out.to_path_buf(),
            sink,
            held: 0,
        })
    }

    /// Whether the bytes so far are still in memory.
    pub fn in_memory(&self) -> bool {
        matches!(self.sink, Sink::Memory(_))
    }

    pub fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.sink {
            Sink::Memory(f) => {
                f.write_all(buf)?;
                self.held += buf.len() as u64;
                if self.held > SPOOL_MAX {
                    self.spill()?;
                }
                Ok(())
            }
            Sink::File(f) => f.write_all(buf),
        }
    }

    /// Move what memory holds to the file, and write there from now on.
    fn spill(&mut self) -> io::Result<()> {
        if let Sink::Memory(mem) = &mut self.sink {
            let mut file = File::create(&self.out)?;
            mem.rewind()?;
            io::copy(mem, &mut file)?;
            self.sink = Sink::File(file);
            self.held = 0;
        }
        Ok(())
    }

    /// The trace is over: everything into the file.
    pub fn finish(mut self) -> io::Result<()> {
        self.spill()?;
        if let Sink::File(f) = &mut self.sink {
            f.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test's trace file.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wblab-spool-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_spool_holds_its_bytes_in_memory_until_it_finishes() {
        let dir = scratch("test");
        let out = dir.join("trace.raw");
        let mut s = Spool::new(&out).unwrap();
        s.write_all(b"first line\n").unwrap();
        s.write_all(b"second line\n").unwrap();
        if s.in_memory() {
            assert!(!out.exists(), "nothing reaches the disk while the run goes on");
        }
        s.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "first line\nsecond line\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_spool_past_its_bound_goes_to_its_file() {
        let dir = scratch("big");
        let out = dir.join("trace.raw");
        let mut s = Spool::new(&out).unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..=(SPOOL_MAX >> 20) {
            s.write_all(&chunk).unwrap();
        }
        assert!(!s.in_memory(), "a trace larger than the bound does not stay in memory");
        s.write_all(b"tail").unwrap();
        s.finish().unwrap();
        assert_eq!(std::fs::metadata(&out).unwrap().len(), (SPOOL_MAX + (1 << 20)) + 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
