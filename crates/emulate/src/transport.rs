//! Measuring what the emulation adds: the trip of a request through the loop driver and
//! FUSE, timed from the kernel's side with the model out of the way.

use crate::buf::AlignedBuf;
use crate::server::Transport;
use crate::EmulatedDevice;
use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::Instant;
use wblab_sim::Ns;

/// Rounds of reads timed: each `SMALL_PER_LARGE` small ones, then a large one.
const SAMPLES: usize = 300;
const SMALL_PER_LARGE: usize = 4;
const WARM_UP: usize = 10;
const SMALL: usize = 4096;
const LARGE: usize = 512 * 1024;

/// Time O_DIRECT reads of `block` (the loop device bound to `dev`) with every request
/// answered at once, at a range of the image never written (where there is one), at 4 KiB and 512 KiB; set and
/// return the [`Transport`] that gives that trip back. Nothing is written.
pub fn calibrate(dev: &EmulatedDevice, block: &Path) -> io::Result<Transport> {
    // Without a hole, the middle of the device (a file system's data lies mostly low).
    let at = dev.store.hole(2 * LARGE as u64).unwrap_or(dev.store.size() / 2 / 4096 * 4096);
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(block)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", block.display())))?;
    dev.set_passthrough(true);
    let timed = median_reads(&f, at);
    dev.set_passthrough(false);
    dev.reset_stats();
    let (small, large) = timed?;
    let per_kib = large.saturating_sub(small) / ((LARGE - SMALL) / 1024) as Ns;
    let fixed = small.saturating_sub(per_kib * (SMALL / 1024) as Ns);
    let t = Transport {
        lead_in: fixed - fixed / 2,
        lead_in_per_kib: per_kib,
        lead_out: fixed / 2,
    };
    dev.set_transport(t);
    Ok(t)
}

/// Median times of reads of 4 KiB and of 512 KiB, taken in turn so that both meet the
/// machine as it is (a shared machine's noise comes and goes).
fn median_reads(f: &std::fs::File, at: u64) -> io::Result<(Ns, Ns)> {
    let (mut small, mut large) = (AlignedBuf::new(SMALL), AlignedBuf::new(LARGE));
    let (mut ts, mut tl) = (Vec::with_capacity(SAMPLES * SMALL_PER_LARGE), Vec::with_capacity(SAMPLES));
    let time = |buf: &mut AlignedBuf, at: u64| -> io::Result<Ns> {
        let t0 = Instant::now();
        f.read_exact_at(buf.as_mut_slice(), at)?;
        Ok(t0.elapsed().as_nanos() as Ns)
    };
    for i in 0..WARM_UP + SAMPLES {
        for k in 0..SMALL_PER_LARGE {
            let t = time(&mut small, at + (k * SMALL) as u64)?;
            if i >= WARM_UP {
                ts.push(t);
            }
        }
        let t = time(&mut large, at + LARGE as u64)?;
        if i >= WARM_UP {
            tl.push(t);
        }
    }
    Ok((median(ts), median(tl)))
}

fn median(mut t: Vec<Ns>) -> Ns {
    t.sort_unstable();
    t[t.len() / 2]
}
