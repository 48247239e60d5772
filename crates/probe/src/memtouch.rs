//! What the machine's memory costs the page cache at the time of a measurement. On a virtual
//! machine whose host backs guest memory on demand and takes back what the guest reports
//! free (virtio-balloon free page reporting, on this lab's Firecracker guests), the first
//! touch of a frame the host gave up stalls the vCPU in a host page fault: a buffered copy or
//! a `cat` of a cold file then runs at the rate the host faults pages in (on one day 11 µs a
//! page, 370 MB/s), and on another day, or another host, not at all. `measure` times it
//! before it sets anything up and keeps it in `machine.json` (`memory_touch`), so that a
//! simulation of the run can be given the memory the kernel had (`[machine]
//! page_first_touch`).

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// What the probe found.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryTouchStamp {
    /// Extra CPU of a buffered write into memory freed long ago over the same write into
    /// memory freed the moment before, µs per 4 KiB page (0 when none).
    pub first_touch_us: f64,
    /// CPU of the buffered write into memory freed the moment before, µs per 4 KiB page.
    pub warm_us: f64,
    /// The kernel reports free pages to a host (`/sys/module/page_reporting` exists).
    pub reporting: bool,
    /// How much the write took before its pages began to cost, MiB: the free memory the
    /// kernel left unreported.
    #[serde(default)]
    pub reserve_mib: f64,
    /// Extra CPU of copying out what a buffered read filled into memory the host took back,
    /// over the same read into memory freed the moment before, µs per 4 KiB page; `None`
    /// where it was not timed (stamps before it was, or a scratch file system without
    /// O_DIRECT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_touch_us: Option<f64>,
    /// A 128 KiB read of a file in the page cache into a buffer the reader reuses, median
    /// wall time, µs: what a `cat` of cached data pays a call, the copy out of the cache at
    /// the day's speed of the host's memory (on this lab's guest 5.2–14.9 µs, median 8.5,
    /// over the 204 repeats measured on 2026-12-05); `None` where it was not timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_read_us: Option<f64>,
    /// A 128 KiB read of pages a device read has just filled (a file read from disk
    /// sequentially, through readahead), median wall time of the calls that did not sleep,
    /// µs: the copy out of data no CPU cache holds yet. On this lab's guest 14.85 µs where
    /// `cached_read_us` was 7.36 (2026-12-06); `None` where it was not timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_read_us: Option<f64>,
}

/// What the probe writes, in steps it times one by one: the kernel leaves some free memory
/// unreported (upstream the low watermark and 32 blocks of 2 MiB; 0.1–1 GiB on this lab's
/// guest, growing as it runs), which the first steps take. It stops `COSTLY_STEPS` steps after
/// the first that costs more than `COSTLY_US` over the first, or at `MAX_BYTES`.
const MAX_BYTES: usize = 2 << 30;
/// The fewest bytes of steps worth timing (with the read step's file, [`crate::room`] must
/// allow this much): the reserve and eight costly steps on a small guest.
const MIN_BYTES: usize = 16 * STEP;
const STEP: usize = 32 << 20;
const CHUNK: usize = 1 << 20;
const COSTLY_US: f64 = 2.0;
const COSTLY_STEPS: usize = 8;
/// The kernel's reporting delay (`PAGE_REPORTING_DELAY`, 2 s) with a margin: where the kernel
/// does not say how far its reporting has gone, memory freed this long ago is taken as
/// reported.
const DELAY: Duration = Duration::from_millis(2_500);
/// Where the kernel shows free page reporting, and (this lab's guest kernel) how much it has
/// reported so far.
const REPORTING: &str = "/sys/module/page_reporting";
const REPORTED_KIB: &str = "/sys/module/page_reporting/parameters/reported_kib";
/// The longest `settle` waits: a pass reports a few hundred MiB every two seconds, so many
/// GiB freed at once take tens of seconds.
pub const SETTLE_MAX: Duration = Duration::from_secs(60);

/// Wait until the memory freed before now has gone back to the host, so that a run starts
/// with its free memory as the model's machine boots with it: where the kernel counts what it
/// reported, until that count has not moved for longer than a pass's delay (at most a
/// minute); where it reports without counting, for the delay; where it does not report, not
/// at all. Returns how long it waited.
pub fn settle() -> Duration {
    let t0 = Instant::now();
    let reported = || {
        std::fs::read_to_string(REPORTED_KIB)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    if let Some(mut last) = reported() {
        let mut still = Instant::now();
        while still.elapsed() < DELAY && t0.elapsed() < SETTLE_MAX {
            std::thread::sleep(Duration::from_millis(200));
            let now = reported().unwrap_or(last);
            if now != last {
                last = now;
                still = Instant::now();
            }
        }
    } else if Path::new(REPORTING).exists() {
        std::thread::sleep(DELAY);
    }
    t0.elapsed()
}

/// The file the read step reads: written with O_DIRECT before the write steps, so none of it
/// is in the page cache, and read in `READ_STEP`s.
const READ_BYTES: usize = 128 << 20;
const READ_STEP: usize = 8 << 20;
const READ_CHUNK: usize = 128 << 10;

/// The free blocks of each order over all zones, from `/proc/buddyinfo`; `None` where it
/// cannot be read.
pub fn buddyinfo() -> Option<Vec<u64>> {
    parse_buddyinfo(&std::fs::read_to_string("/proc/buddyinfo").ok()?)
}

/// `/proc/buddyinfo`'s lines (`Node 0, zone   Normal  17507 9681 ...`) summed order by order.
fn parse_buddyinfo(text: &str) -> Option<Vec<u64>> {
    let mut sum: Vec<u64> = Vec::new();
    for line in text.lines() {
        let Some((_, counts)) = line.split_once("zone") else { continue };
        let counts = counts.split_whitespace().skip(1).map(|w| w.parse::<u64>().ok());
        for (o, c) in counts.enumerate() {
            if sum.len() <= o {
                sum.push(0);
            }
            sum[o] += c?;
        }
    }
    (!sum.is_empty()).then_some(sum)
}

/// Time the page cache's first touch of memory, once the memory freed before has been
/// reported: up to 2 GiB (less where [`crate::room`] allows less; an error where it allows
/// too little to time) written into a new file in `dir` through the page cache in steps of
/// 32 MiB, never synced. The first steps take the memory the kernel left backed; the median
/// of the eight steps from the first costly one, against the first step, is the first touch's
/// cost. Then, with that file still holding the backed memory, a 128 MiB file written before
/// with O_DIRECT is read through the page cache into memory the host took back, and read again
/// into the frames just dropped: the difference is a read's first touch, which can differ
/// from a write's (the host's I/O thread faulted the frames in as it filled them). Then the
/// whole file read once more, the calls that found their pages filled timed: the copy out of
/// data a device read has just put there. Last, its first 16 MiB read again and again from the
/// cache: the copy a cached read pays. Both files are removed.
pub fn stamp(dir: &Path) -> std::io::Result<MemoryTouchStamp> {
    let room = crate::room::budget(dir, (MAX_BYTES + READ_BYTES) as u64) as usize;
    if room < MIN_BYTES + READ_BYTES {
        return Err(std::io::Error::other(format!(
            "only {} MiB may be written here without crowding this machine (an eighth of its free memory, a quarter of the free disk); the probe needs {} MiB",
            room >> 20,
            (MIN_BYTES + READ_BYTES) >> 20
        )));
    }
    let max = (room - READ_BYTES) / STEP * STEP;
    let reporting = Path::new(REPORTING).exists();
    let read_path = dir.join("memory-touch-read.probe");
    let read_file = write_direct(&read_path, READ_BYTES).ok();
    settle();
    let path = dir.join("memory-touch.probe");
    let result = steps(&path, max).map(|(per_page, held)| {
        let mut s = of_steps(&per_page, reporting);
        s.read_touch_us = read_file.as_ref().and_then(|f| read_touch(f).ok());
        s.fresh_read_us = read_file.as_ref().and_then(|f| fresh_read(f).ok().flatten());
        s.cached_read_us = read_file.as_ref().and_then(|f| cached_read(f).ok());
        drop(held);
        s
    });
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&read_path);
    result
}

/// Write `bytes` into a new file at `path` with O_DIRECT, synced: on disk, not in the cache.
/// Returns it opened again for buffered reads.
fn write_direct(path: &Path, bytes: usize) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(crate::sys::O_DIRECT)
        .open(path)?;
    let mut buf = crate::sys::AlignedBuf::new(CHUNK);
    buf.as_mut_slice().fill(0x5a);
    for _ in 0..bytes / CHUNK {
        f.write_all(buf.as_slice())?;
    }
    f.sync_all()?;
    std::fs::File::open(path)
}

/// The read step: `f` read from disk twice through the page cache, first into whatever memory
/// the allocator gives (the host's, once the write steps hold the backed memory), then, its
/// pages dropped, into those same frames. The median of the first read's steps from its first
/// costly one, over the median of the second read's, µs per page (0 when none cost).
fn read_touch(f: &std::fs::File) -> std::io::Result<f64> {
    let cold = read_steps(f)?;
    let warm = read_steps(f)?;
    let warm_us = median(&warm);
    let Some(k) = cold.iter().position(|&c| c - warm_us > COSTLY_US) else {
        return Ok(0.0);
    };
    Ok(((median(&cold[k..]) - warm_us).max(0.0) * 100.0).round() / 100.0)
}

/// Read all of `f` from disk through the page cache (its pages dropped before and after), in
/// steps: each step's thread CPU per 4 KiB page, µs.
fn read_steps(f: &std::fs::File) -> std::io::Result<Vec<f64>> {
    use std::os::unix::fs::FileExt;
    crate::sys::fadvise_dontneed(f);
    let mut buf = vec![0u8; READ_CHUNK];
    let mut out = Vec::with_capacity(READ_BYTES / READ_STEP);
    for step in 0..READ_BYTES / READ_STEP {
        let t0 = thread_cpu();
        for i in 0..READ_STEP / READ_CHUNK {
            f.read_exact_at(&mut buf, (step * READ_STEP + i * READ_CHUNK) as u64)?;
        }
        out.push((thread_cpu() - t0) / (READ_STEP / 4096) as f64 * 1e6);
    }
    crate::sys::fadvise_dontneed(f);
    Ok(out)
}

/// The fresh step: `f` read from disk once more (its pages dropped before and after, so into
/// frames freed the moment before: no first touch) in `READ_CHUNK`s, each call's thread CPU
/// and wall time taken. A call that slept (waited for its pages' read: wall time over twice
/// its CPU) says nothing about the copy; of the others, the median wall time, µs, as the
/// cached step takes it: the copy out of pages the device's read has just filled, with
/// readahead's submissions where they fall. `None` when fewer than a quarter of the calls ran
/// without sleeping (a disk slower than the copy by far, or readahead off).
fn fresh_read(f: &std::fs::File) -> std::io::Result<Option<f64>> {
    use std::os::unix::fs::FileExt;
    crate::sys::fadvise_dontneed(f);
    let mut buf = vec![0u8; READ_CHUNK];
    let chunks = READ_BYTES / READ_CHUNK;
    let mut ran = Vec::with_capacity(chunks);
    for i in 0..chunks {
        let (c0, t0) = (thread_cpu(), Instant::now());
        f.read_exact_at(&mut buf, (i * READ_CHUNK) as u64)?;
        let (cpu, wall) = (thread_cpu() - c0, t0.elapsed().as_secs_f64());
        if wall <= 2.0 * cpu {
            ran.push(wall * 1e6);
        }
    }
    crate::sys::fadvise_dontneed(f);
    if ran.len() * 4 < chunks {
        return Ok(None);
    }
    Ok(Some((median(&ran) * 100.0).round() / 100.0))
}

/// How much of the read step's file the cached reads go over, and how many times.
const CACHED_BYTES: usize = 16 << 20;
const CACHED_PASSES: usize = 8;

/// The cached step: the first `CACHED_BYTES` of `f` read once into the page cache, then
/// `CACHED_PASSES` times more in `READ_CHUNK`s, each call timed; the median call, µs. The
/// pages are dropped after.
fn cached_read(f: &std::fs::File) -> std::io::Result<f64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; READ_CHUNK];
    let chunks = CACHED_BYTES / READ_CHUNK;
    for i in 0..chunks {
        f.read_exact_at(&mut buf, (i * READ_CHUNK) as u64)?;
    }
    let mut calls = Vec::with_capacity(chunks * CACHED_PASSES);
    for _ in 0..CACHED_PASSES {
        for i in 0..chunks {
            let t0 = Instant::now();
            f.read_exact_at(&mut buf, (i * READ_CHUNK) as u64)?;
            calls.push(t0.elapsed().as_secs_f64() * 1e6);
        }
    }
    crate::sys::fadvise_dontneed(f);
    Ok((median(&calls) * 100.0).round() / 100.0)
}

/// The middle of `xs` (the upper of the two middle ones for an even count; 0 for none).
pub(crate) fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The index of the first step that costs more than `COSTLY_US` over the first.
fn first_costly(per_page: &[f64]) -> Option<usize> {
    let warm = *per_page.first()?;
    per_page.iter().position(|&c| c - warm > COSTLY_US)
}

/// The stamp from each step's CPU per page (µs).
fn of_steps(per_page: &[f64], reporting: bool) -> MemoryTouchStamp {
    let warm = per_page.first().copied().unwrap_or(0.0);
    let round = |x: f64| (x * 100.0).round() / 100.0;
    let Some(k) = first_costly(per_page) else {
        return MemoryTouchStamp {
            first_touch_us: 0.0,
            warm_us: round(warm),
            reporting,
            reserve_mib: 0.0,
            read_touch_us: None,
            cached_read_us: None,
            fresh_read_us: None,
        };
    };
    let costly = &per_page[k..per_page.len().min(k + COSTLY_STEPS)];
    let first_touch = (median(costly) - warm).max(0.0);
    // The reserve ends in the first costly step: the part of it that paid less than the
    // whole touch was still backed.
    let part = ((per_page[k] - warm) / first_touch.max(1e-9)).clamp(0.0, 1.0);
    let reserve = (k as f64 + 1.0 - part) * (STEP >> 20) as f64;
    MemoryTouchStamp {
        first_touch_us: round(first_touch),
        warm_us: round(warm),
        reporting,
        reserve_mib: reserve.round(),
        read_touch_us: None,
        cached_read_us: None,
        fresh_read_us: None,
    }
}

/// Write up to `max` bytes into a new file at `path` through the page cache, step by step,
/// until `COSTLY_STEPS` steps from the first costly one: each step's thread CPU per 4 KiB
/// page, µs, and the file, unlinked, holding its pages until it is dropped (they go unwritten).
fn steps(path: &Path, max: usize) -> std::io::Result<(Vec<f64>, std::fs::File)> {
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    let buf = vec![0x5au8; CHUNK];
    let mut out = Vec::with_capacity(max / STEP);
    for _ in 0..max / STEP {
        let t0 = thread_cpu();
        for _ in 0..STEP / CHUNK {
            f.write_all(&buf)?;
        }
        out.push((thread_cpu() - t0) / (STEP / 4096) as f64 * 1e6);
        if first_costly(&out).is_some_and(|k| out.len() >= k + COSTLY_STEPS) {
            break;
        }
    }
    std::fs::remove_file(path)?;
    Ok((out, f))
}

/// The calling thread's CPU time, s.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer to a timespec on the stack.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stamp_reads_the_reserve_and_the_cost_from_the_steps() {
        let mut steps = vec![0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 6.6];
        steps.extend([12.9, 11.9, 12.4, 12.1, 13.0, 11.5, 12.0, 12.2, 11.7, 12.3, 11.9, 12.6]);
        let s = of_steps(&steps, true);
        assert_eq!(s.warm_us, 0.9);
        assert!((s.first_touch_us - 11.3).abs() < 0.5, "{s:?}");
        assert!(
            (s.reserve_mib - 8.5 * 32.0).abs() <= 1.0,
            "eight cheap steps and half of one: {s:?}"
        );
        let flat = of_steps(&[0.8; 20], false);
        assert_eq!((flat.first_touch_us, flat.reserve_mib), (0.0, 0.0));
    }

    #[test]
    fn buddyinfo_sums_the_zones_order_by_order() {
        let text = "Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3 \n\
                    Node 0, zone    DMA32      2      4      2      2      1      2      0      3      3      1    753 \n\
                    Node 0, zone   Normal  18486   9743   5373   2707    720    339   1459   1606   1115    713   1752 \n";
        let b = parse_buddyinfo(text).unwrap();
        assert_eq!(b.len(), 11);
        assert_eq!((b[0], b[8], b[10]), (18488, 1119, 2508));
        assert_eq!(parse_buddyinfo(""), None);
        assert_eq!(parse_buddyinfo("Node 0, zone Normal 1 x 3\n"), None, "a garbled count");
        // This machine's own, where it has one.
        if let Some(b) = buddyinfo() {
            assert!(!b.is_empty() && b.len() <= 11, "{b:?}");
        }
    }

    #[test]
    fn the_read_step_reads_every_step_from_disk_and_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("wblab-memtouch-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r");
        match write_direct(&path, READ_BYTES) {
            Ok(f) => {
                let per_page = read_steps(&f).unwrap();
                assert_eq!(per_page.len(), READ_BYTES / READ_STEP);
                assert!(per_page.iter().all(|&c| c > 0.0), "{per_page:?}");
                let us = read_touch(&f).unwrap();
                assert!(us >= 0.0, "{us}");
                let call = cached_read(&f).unwrap();
                // 128 KiB from the cache: more than nothing, less than a disk's read of it.
                assert!(call > 0.0 && call < 10_000.0, "{call}");
            }
            // A scratch file system without O_DIRECT (tmpfs): the stamp goes without it.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}"),
        }
        std::fs::remove_file(&path).ok();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn a_step_costs_some_cpu_and_the_probe_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("wblab-memtouch-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (per_page, held) = steps(&dir.join("p"), 2 * STEP).unwrap();
        drop(held);
        assert!(!per_page.is_empty() && per_page.len() <= 2, "{per_page:?}");
        assert!(per_page.iter().all(|&c| c > 0.0), "{per_page:?}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the probe's file is removed");
        std::fs::remove_dir(&dir).unwrap();
    }
}
