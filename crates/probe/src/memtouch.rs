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
}

/// Bytes each pass times, and what the cold pass writes before it: the kernel leaves some
/// free memory unreported (above the low watermark, 32 blocks of 2 MiB), which the first
/// writes take.
const PROBE_BYTES: usize = 128 << 20;
const CUSHION_BYTES: usize = 192 << 20;
const CHUNK: usize = 1 << 20;
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
const SETTLE_MAX: Duration = Duration::from_secs(60);

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

/// Time the page cache's first touch of memory, writing (and removing) files of 320 and
/// 128 MiB in `dir`, without syncing them, once the memory freed before has been reported.
pub fn stamp(dir: &Path) -> std::io::Result<MemoryTouchStamp> {
    let reporting = Path::new(REPORTING).exists();
    settle();
    let path = dir.join("memory-touch.probe");
    let result = (|| {
        let cold = write_pass(&path, CUSHION_BYTES, PROBE_BYTES)?;
        let warm = write_pass(&path, 0, PROBE_BYTES)?;
        let pages = (PROBE_BYTES / 4096) as f64;
        let round = |x: f64| (x * 100.0).round() / 100.0;
        Ok(MemoryTouchStamp {
            first_touch_us: round(((cold - warm) / pages * 1e6).max(0.0)),
            warm_us: round(warm / pages * 1e6),
            reporting,
        })
    })();
    let _ = std::fs::remove_file(&path);
    result
}

/// Write `skip` and then `bytes` into a new file at `path` through the page cache and remove
/// it, dropping its pages unwritten: the thread's CPU time for the last `bytes`, s.
fn write_pass(path: &Path, skip: usize, bytes: usize) -> std::io::Result<f64> {
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    let buf = vec![0x5au8; CHUNK];
    for _ in 0..skip / CHUNK {
        f.write_all(&buf)?;
    }
    let t0 = thread_cpu();
    for _ in 0..bytes / CHUNK {
        f.write_all(&buf)?;
    }
    let t = thread_cpu() - t0;
    drop(f);
    std::fs::remove_file(path)?;
    Ok(t)
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
    fn a_pass_writes_through_the_cache_and_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("wblab-memtouch-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p");
        let cpu = write_pass(&path, 1 << 20, 4 << 20).unwrap();
        assert!(cpu > 0.0, "a 4 MiB buffered write takes some CPU: {cpu}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the probe's file is removed");
        std::fs::remove_dir(&dir).unwrap();
    }
}
