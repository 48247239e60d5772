//! Where the emulated device keeps its data: an image file (sparse until written), read and
//! written with O_DIRECT. Through the page cache, every page the kernel under test writes
//! to the emulated device would become a second dirty page of the same kernel, counted
//! against the very dirty limits the experiment measures.

use crate::buf::AlignedBuf;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// O_DIRECT wants offsets, lengths and memory aligned to the logical block size.
const ALIGN: u64 = 4096;

pub struct Store {
    /// Opened with O_DIRECT when the image's file system allows it, else the buffered one.
    direct: File,
    buffered: File,
    size: u64,
    is_direct: bool,
}

impl Store {
    /// The image at `path`, `size` bytes (made sparse, or extended, to that size).
    pub fn open(path: &Path, size: u64) -> io::Result<Store> {
        let buffered = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        if buffered.metadata()?.len() < size {
            buffered.set_len(size)?;
        }
        let direct = OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(path);
        let (direct, is_direct) = match direct {
            Ok(f) => (f, true),
            Err(_) => (buffered.try_clone()?, false),
        };
        Ok(Store {
            direct,
            buffered,
            size,
            is_direct,
        })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// 512-byte blocks the image holds on its file system (what `du` should see of the
    /// device's file: it is sparse until written).
    pub fn allocated_blocks(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        self.buffered.metadata().map_or(0, |m| m.blocks())
    }

    /// Whether the image is read and written past the host's page cache.
    pub fn is_direct(&self) -> bool {
        self.is_direct
    }

    fn aligned(&self, offset: u64, len: u64) -> bool {
        self.is_direct && offset.is_multiple_of(ALIGN) && len.is_multiple_of(ALIGN)
    }

    /// `len` bytes from `offset`, cut at the end of the device.
    pub fn read(&self, offset: u64, len: u64) -> io::Result<AlignedBuf> {
        let len = len.min(self.size.saturating_sub(offset));
        let mut buf = AlignedBuf::new(len as usize);
        let f = if self.aligned(offset, len) { &self.direct } else { &self.buffered };
        f.read_exact_at(buf.as_mut_slice(), offset)?;
        Ok(buf)
    }

    /// Write `data` at `offset`; returns the bytes written (cut at the end of the device).
    pub fn write(&self, offset: u64, data: &[u8]) -> io::Result<usize> {
        let len = (data.len() as u64).min(self.size.saturating_sub(offset)) as usize;
        let data = &data[..len];
        if self.aligned(offset, len as u64) {
            let mut buf = AlignedBuf::new(len);
            buf.as_mut_slice().copy_from_slice(data);
            self.direct.write_all_at(buf.as_slice(), offset)?;
        } else {
            self.buffered.write_all_at(data, offset)?;
        }
        Ok(len)
    }

    /// Give back the blocks of a range (a discard, or zeroes written by the loop driver).
    pub fn punch(&self, offset: u64, len: u64) -> io::Result<()> {
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: a plain system call on our own descriptor.
        let r = unsafe { libc::fallocate(self.buffered.as_raw_fd(), mode, offset as libc::off_t, len as libc::off_t) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Store {
    /// The start of a hole of at least `len` bytes (a range never written), if there is one:
    /// reading it costs the image nothing, so timing reads there times the transport alone.
    pub fn hole(&self, len: u64) -> Option<u64> {
        let fd = self.buffered.as_raw_fd();
        let mut at: i64 = 0;
        while (at as u64) < self.size {
            // SAFETY: lseek on our own descriptor.
            let hole = unsafe { libc::lseek(fd, at, libc::SEEK_HOLE) };
            if hole < 0 || hole as u64 >= self.size {
                return None;
            }
            let start = (hole as u64).next_multiple_of(ALIGN);
            // SAFETY: as above.
            let data = unsafe { libc::lseek(fd, hole, libc::SEEK_DATA) };
            let end = if data < 0 { self.size } else { data as u64 };
            if end.saturating_sub(start) >= len {
                return Some(start);
            }
            at = end as i64;
        }
        None
    }
}
