//! A buffer in transparent huge pages, for the host-disk probe's reads that should cost the
//! disk a few descriptors rather than one per 4 KiB page: a 2 MiB page is physically
//! contiguous, so a 1 MiB O_DIRECT read into it is one segment, as a readahead into a large
//! folio is. Whether the kernel backed it with a huge page is checked, not assumed
//! (`/proc/self/smaps`): THP may be off, or memory too fragmented.

use std::io;

const HUGE: usize = 2 << 20;

/// `len` bytes (at most 2 MiB) at the start of a 2 MiB-aligned private anonymous region the
/// kernel was asked to back with a huge page (`MADV_HUGEPAGE`), touched once.
pub struct HugeBuf {
    map: *mut libc::c_void,
    map_len: usize,
    start: *mut u8,
    len: usize,
}

// The buffer is owned by one thread at a time; the raw pointers are its own mapping.
unsafe impl Send for HugeBuf {}

impl HugeBuf {
    /// A buffer of `len` bytes, or why there is none; [`HugeBuf::all_huge`] says whether the
    /// kernel gave it a huge page.
    pub fn new(len: usize) -> io::Result<HugeBuf> {
        assert!(len <= HUGE, "a huge-page buffer holds at most 2 MiB");
        let map_len = 2 * HUGE;
        // SAFETY: an anonymous private mapping, no file, no fixed address.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let skip = (HUGE - map as usize % HUGE) % HUGE;
        // SAFETY: `skip` < HUGE, and HUGE + skip <= map_len: inside the mapping.
        let start = unsafe { (map as *mut u8).add(skip) };
        let buf = HugeBuf { map, map_len, start, len };
        // SAFETY: the aligned 2 MiB lies inside the mapping.
        if unsafe { libc::madvise(start as *mut libc::c_void, HUGE, libc::MADV_HUGEPAGE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // The first touch faults the whole huge page in (or 4 KiB pages, without one).
        // SAFETY: `start..start + HUGE` is mapped and writable.
        unsafe { std::ptr::write_bytes(start, 0x5a, HUGE) };
        Ok(buf)
    }

    /// Whether each of `bufs` has its 2 MiB in one huge page (`/proc/self/smaps`, read once).
    pub fn all_huge(bufs: &[HugeBuf]) -> bool {
        std::fs::read_to_string("/proc/self/smaps")
            .is_ok_and(|s| bufs.iter().all(|b| anon_huge_kib(&s, b.start as usize) >= (HUGE >> 10) as u64))
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `len` <= HUGE bytes from `start`, mapped, owned by `self`.
        unsafe { std::slice::from_raw_parts_mut(self.start, self.len) }
    }
}

impl Drop for HugeBuf {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, unmapped once.
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}

/// The `AnonHugePages` (KiB) of the mapping of `smaps` text that holds address `addr`.
fn anon_huge_kib(smaps: &str, addr: usize) -> u64 {
    let mut inside = false;
    for line in smaps.lines() {
        let head = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = head
            .split_once('-')
            .filter(|(a, b)| a.len() >= 8 && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_hexdigit()))
        {
            let range = usize::from_str_radix(a, 16).ok().zip(usize::from_str_radix(b, 16).ok());
            inside = range.is_some_and(|(lo, hi)| (lo..hi).contains(&addr));
        } else if inside {
            if let Some(kib) = line.strip_prefix("AnonHugePages:") {
                return kib.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      2048 kB
7f0000400000-7f0000600000 rw-p 00000000 00:00 0
Size:               2048 kB
AnonHugePages:         0 kB
";

    #[test]
    fn the_huge_pages_are_those_of_the_mapping_holding_the_address() {
        assert_eq!(anon_huge_kib(SMAPS, 0x7f00_0020_0000), 2048);
        assert_eq!(anon_huge_kib(SMAPS, 0x7f00_0040_0000), 0);
        assert_eq!(anon_huge_kib(SMAPS, 0x7e00_0000_0000), 0, "no mapping holds it");
    }

    #[test]
    fn a_buffer_is_written_and_read_whatever_page_backs_it() {
        let mut b = HugeBuf::new(1 << 20).unwrap();
        assert!(b.as_mut_slice().iter().all(|&x| x == 0x5a));
        b.as_mut_slice()[12345] = 7;
        assert_eq!(b.as_mut_slice()[12345], 7);
    }
}
