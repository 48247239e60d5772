//! The host disk's speed at the time of a measurement: a loop device's backing file lives on
//! the scratch file system, whose disk (here a virtual one, served by a shared host) changes
//! speed from day to day — 1 MiB O_DIRECT writes at 0.55–2.9 GB/s and its cache flush at
//! 40–250 µs on the same machine in one week. `measure` times it just before it makes its loop
//! devices and keeps the figures in `machine.json` (`host_disk`), so that a simulation of the
//! run can be given the disk the kernel had (`wblab validate` does).

use crate::hugebuf::HugeBuf;
use crate::memtouch::median;
use crate::sys::{self, AlignedBuf};
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

/// What a short probe of the scratch file system's disk found.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostDiskStamp {
    /// 1 MiB O_DIRECT writes into a new file, eight at a time, MiB/s.
    pub write_mib_s: f64,
    /// The same file read back the same way, MiB/s.
    pub read_mib_s: f64,
    /// An fsync of that file just after a 4 KiB overwrite, median, µs: the disk's cache flush
    /// with something to make durable.
    pub flush_us: f64,
    /// 4 KiB O_DIRECT reads of that file at random, one at a time, median, µs: the disk's
    /// round trip (on this lab's `vda` 69 µs with fio on 2026-12-02, 42–73 µs, median 51,
    /// over the 204 repeats measured on 2026-12-05), what a loop device's small reads wait
    /// for on top of its own path. `None` in stamps from before it was timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_4k_us: Option<f64>,
    /// The same 1 MiB reads as `read_mib_s` into buffers in 2 MiB huge pages, MiB/s: one
    /// descriptor each instead of 256, as a readahead into large folios (xfs, and ext4 from
    /// 6.16) reads through a loop. Their difference separates the disk's transfer rate from its
    /// cost per descriptor, which change from day to day independently (on 2026-12-06, beside
    /// a compile: 1,800 against 960 MiB/s). `None` where no huge page could be had, and in
    /// stamps from before it was timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_large_mib_s: Option<f64>,
}

/// A buffer the deep probe reads into or writes from.
trait ProbeBuf: Send {
    fn bytes(&mut self) -> &mut [u8];
}

impl ProbeBuf for AlignedBuf {
    fn bytes(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl ProbeBuf for HugeBuf {
    fn bytes(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

/// Most bytes the probe writes, and the most time each half takes.
const PROBE_BYTES: u64 = 256 << 20;
const PROBE_TIME: Duration = Duration::from_millis(600);
const CHUNK: usize = 1 << 20;
const FLUSHES: usize = 21;
/// Most 4 KiB reads the round-trip step times, and the most time it takes.
const SMALL_READS: usize = 4000;
const SMALL_TIME: Duration = Duration::from_millis(300);
/// I/Os in flight at once.
const DEPTH: usize = 8;

/// Time the disk under `dir` (a scratch directory: the probe's file is made and removed in
/// it), writing at most 256 MiB (less where [`crate::room`] allows less).
pub fn stamp(dir: &Path) -> std::io::Result<HostDiskStamp> {
    stamp_with(dir, PROBE_BYTES)
}

/// The same, writing at most `bytes`.
pub fn stamp_with(dir: &Path, bytes: u64) -> std::io::Result<HostDiskStamp> {
    let bytes = crate::room::budget(dir, bytes) / CHUNK as u64 * CHUNK as u64;
    if bytes < CHUNK as u64 {
        return Err(std::io::Error::other(
            "not even 1 MiB may be written here without crowding this machine (an eighth of its free memory, a quarter of the free disk)",
        ));
    }
    let path = dir.join("host-disk.probe");
    let result = probe(&path, bytes);
    let _ = std::fs::remove_file(&path);
    result
}

/// 1 MiB I/Os from `DEPTH` threads at once over the first `limit` bytes, each taking the
/// next chunk, for at most `PROBE_TIME`: the bytes done and their MiB/s. A loop device's writeback and
/// read-ahead keep many requests in flight, and the disk's rate at depth is what they meet.
fn deep(
    f: &std::fs::File,
    limit: u64,
    io: impl Fn(&std::fs::File, &mut [u8], u64) -> std::io::Result<()> + Sync,
) -> std::io::Result<(u64, f64)> {
    let bufs = (0..DEPTH)
        .map(|_| {
            let mut b = AlignedBuf::new(CHUNK);
            b.as_mut_slice().fill(0x5a);
            b
        })
        .collect();
    deep_with(f, limit, bufs, io)
}

/// [`deep`] with buffers in huge pages: `None` if any of them did not get one.
fn deep_huge(
    f: &std::fs::File,
    limit: u64,
    io: impl Fn(&std::fs::File, &mut [u8], u64) -> std::io::Result<()> + Sync,
) -> std::io::Result<Option<(u64, f64)>> {
    let bufs: Vec<HugeBuf> = (0..DEPTH).map(|_| HugeBuf::new(CHUNK)).collect::<std::io::Result<_>>()?;
    if !HugeBuf::all_huge(&bufs) {
        return Ok(None);
    }
    deep_with(f, limit, bufs, io).map(Some)
}

/// [`deep`] with one of `bufs` for each thread: the bytes done and their MiB/s, timed from
/// when the buffers are ready.
fn deep_with<B: ProbeBuf>(
    f: &std::fs::File,
    limit: u64,
    bufs: Vec<B>,
    io: impl Fn(&std::fs::File, &mut [u8], u64) -> std::io::Result<()> + Sync,
) -> std::io::Result<(u64, f64)> {
    let next = std::sync::atomic::AtomicU64::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        let workers: Vec<_> = bufs
            .into_iter()
            .map(|mut buf| {
                let (next, io) = (&next, &io);
                s.spawn(move || -> std::io::Result<u64> {
                    let mut done = 0;
                    while t0.elapsed() < PROBE_TIME {
                        let off = next.fetch_add(CHUNK as u64, std::sync::atomic::Ordering::Relaxed);
                        if off + CHUNK as u64 > limit {
                            break;
                        }
                        io(f, buf.bytes(), off)?;
                        done += CHUNK as u64;
                    }
                    Ok(done)
                })
            })
            .collect();
        let done: u64 = workers
            .into_iter()
            .map(|w| w.join().expect("a probe thread"))
            .sum::<std::io::Result<u64>>()?;
        Ok((done, done as f64 / (1u64 << 20) as f64 / t0.elapsed().as_secs_f64().max(1e-9)))
    })
}

fn probe(path: &Path, limit: u64) -> std::io::Result<HostDiskStamp> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(sys::O_DIRECT)
        .open(path)?;
    let (written, write_mib_s) = deep(&f, limit, |f, buf, off| f.write_all_at(buf, off))?;
    f.sync_all()?;
    let (_, read_mib_s) = deep(&f, written, |f, buf, off| f.read_exact_at(buf, off))?;
    let read_large_mib_s = deep_huge(&f, written, |f, buf, off| f.read_exact_at(buf, off))?.map(|(_, r)| r);
    let read_4k_us = round_trip(&f, written)?;
    let mut buf = AlignedBuf::new(4096);
    buf.as_mut_slice().fill(0x5a);
    // A flush with something to make durable: a 4 KiB overwrite just before (within the same
    // timestamp tick mostly, so the inode is seldom dirty; the median leaves those out). With
    // nothing written since the last one the host's flush is cheaper than the loop's ever are.
    let page = buf.as_slice();
    let flushes: Vec<f64> = (0..FLUSHES as u64)
        .map(|i| {
            f.write_all_at(page, i * 4096)?;
            let t = Instant::now();
            f.sync_all().map(|()| t.elapsed().as_secs_f64() * 1e6)
        })
        .collect::<std::io::Result<_>>()?;
    let round = |x: f64| (x * 10.0).round() / 10.0;
    Ok(HostDiskStamp {
        write_mib_s: round(write_mib_s),
        read_mib_s: round(read_mib_s),
        flush_us: round(median(&flushes)),
        read_4k_us: Some(round(read_4k_us)),
        read_large_mib_s: read_large_mib_s.map(round),
    })
}

/// 4 KiB O_DIRECT reads of the first `limit` bytes of `f` at random places (a fixed
/// sequence), one at a time: the median, µs.
fn round_trip(f: &std::fs::File, limit: u64) -> std::io::Result<f64> {
    let mut buf = AlignedBuf::new(4096);
    let pages = (limit / 4096).max(1);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut lat = Vec::with_capacity(SMALL_READS);
    let t_end = Instant::now() + SMALL_TIME;
    while lat.len() < SMALL_READS && (lat.is_empty() || Instant::now() < t_end) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let t = Instant::now();
        f.read_exact_at(buf.as_mut_slice(), (x % pages) * 4096)?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(median(&lat))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_measures_and_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("wblab-hostdisk-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        match stamp_with(&dir, 4 << 20) {
            Ok(s) => {
                assert!(s.write_mib_s > 0.0 && s.read_mib_s > 0.0 && s.flush_us >= 0.0, "{s:?}");
                assert!(s.read_4k_us.is_some_and(|us| us > 0.0), "{s:?}");
            }
            // tmpfs and some overlays refuse O_DIRECT: the probe reports it, nothing more.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}"),
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the probe's file is removed");
        std::fs::remove_dir(&dir).unwrap();
    }
}
