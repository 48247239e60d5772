//! The FUSE side: a file system of one file, [`DISK`], the emulated device. Its reads and
//! writes move data to and from the image at once, then go to the model's thread, which
//! answers them when the model completes them; an fsync (what the loop driver sends for a
//! FLUSH) is a cache flush of the model.

use crate::clock::{self, Clock};
use crate::queue::Sender;
use crate::server::{Answer, Io, Msg};
use crate::store::Store;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig, LockOwner, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};
use std::cell::Cell;
use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};
use wblab_sim::drivers::Op;

/// The device's file name in the mount.
pub const DISK: &str = "disk";
const ROOT: u64 = 1;
const DISK_INO: u64 = 2;
/// The largest request FUSE is asked to pass whole (`max_write`, and so `max_pages`): the
/// kernel's own cap is 256 pages. The loop device's `max_sectors_kb` is kept at or below it
/// so that a block request is one FUSE request.
pub const MAX_REQUEST: u32 = 1 << 20;
/// Requests FUSE lets be outstanding at once (`max_background`): more than the loop
/// driver's 128 tags, so that only the model's queue depth limits them.
const MAX_BACKGROUND: u16 = 256;
const TTL: Duration = Duration::from_secs(24 * 3600);

pub(crate) struct DiskFs {
    pub store: Arc<Store>,
    pub tx: Sender<Msg>,
    pub clock: Clock,
}

thread_local! {
    static MARKED: Cell<bool> = const { Cell::new(false) };
}

/// Each FUSE thread serves block I/O: mark it once (see [`clock::io_flusher`] and
/// [`clock::real_time`]).
fn mark_thread() {
    MARKED.with(|m| {
        if !m.get() {
            clock::io_flusher();
            clock::real_time(clock::Role::Data);
            m.set(true);
        }
    });
}

impl DiskFs {
    fn attr(&self, ino: u64) -> FileAttr {
        let dir = ino == ROOT;
        FileAttr {
            ino: INodeNo(ino),
            size: if dir { 0 } else { self.store.size() },
            blocks: if dir { 0 } else { self.store.allocated_blocks() },
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind: if dir { FileType::Directory } else { FileType::RegularFile },
            perm: if dir { 0o700 } else { 0o600 },
            nlink: if dir { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn submit(&self, io: Io) {
        // The server stops only after the session: a send cannot fail while requests come.
        self.tx.send(Msg::Io(io));
    }
}

impl Filesystem for DiskFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO | InitFlags::FUSE_MAX_PAGES);
        let _ = config.set_max_write(MAX_REQUEST);
        let _ = config.set_max_background(MAX_BACKGROUND);
        let _ = config.set_congestion_threshold(MAX_BACKGROUND);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent.0 == ROOT && name == DISK {
            reply.entry(&TTL, &self.attr(DISK_INO), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match ino.0 {
            ROOT | DISK_INO => reply.attr(&TTL, &self.attr(ino.0)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino.0 != DISK_INO {
            return reply.error(Errno::EISDIR);
        }
        reply.opened(
            FileHandle(0),
            FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES,
        );
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyData,
    ) {
        mark_thread();
        let arrived = self.clock.now();
        match self.store.read(offset, u64::from(size)) {
            Ok(buf) => self.submit(Io {
                op: Op::Read,
                offset,
                bytes: buf.as_slice().len() as u64,
                arrived,
                answer: Answer::Read(reply, buf),
            }),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _wflags: WriteFlags,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        mark_thread();
        let arrived = self.clock.now();
        match self.store.write(offset, data) {
            Ok(n) => self.submit(Io {
                op: Op::Write,
                offset,
                bytes: n as u64,
                arrived,
                answer: Answer::Write(reply, n as u32),
            }),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn fsync(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        mark_thread();
        self.submit(Io {
            op: Op::Flush,
            offset: 0,
            bytes: 0,
            arrived: self.clock.now(),
            answer: Answer::Flush(reply),
        });
    }

    fn fallocate(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, offset: u64, length: u64, mode: i32, reply: ReplyEmpty) {
        // The loop driver punches holes for discards and zeroes; nothing else is asked.
        if mode & libc::FALLOC_FL_PUNCH_HOLE == 0 {
            return reply.error(Errno::EOPNOTSUPP);
        }
        match self.store.punch(offset, length) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if ino.0 != ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (DISK_INO, FileType::RegularFile, DISK),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

fn errno(e: &std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::EIO, Errno::from_i32)
}
