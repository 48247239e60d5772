//! How much a probe may write without crowding the machine it runs on. The timing probes
//! (`memtouch`, `hostdisk`) write up to 2 GiB before a workload starts; on a machine whose
//! memory cgroup is small, or whose disk is nearly full, or where several measurements start
//! at once, that much page cache can bring the memory cgroup's OOM killer onto the harness
//! itself, or fill the disk the workload needs. So each probe asks for its bytes here and
//! gets at most a share of what is free: [`MEMORY_SHARE`] of the memory the kernel and every
//! memory cgroup above this process still allow, [`DISK_SHARE`] of the disk's free space.

use std::path::Path;

/// The share of free memory one probe may fill (several measurements may start together).
pub const MEMORY_SHARE: u64 = 8;
/// The share of a file system's free space one probe may fill.
pub const DISK_SHARE: u64 = 4;

/// At most `want` bytes, and no more than the shares of free memory and of the free space
/// under `dir` this machine has now. Where something cannot be read it does not limit.
pub fn budget(dir: &Path, want: u64) -> u64 {
    share_of(want, memory_headroom(), disk_free(dir))
}

/// `want`, cut to the shares of the free memory and free disk read (unread ones do not limit).
fn share_of(want: u64, memory_free: Option<u64>, disk_free: Option<u64>) -> u64 {
    let mem = memory_free.map_or(u64::MAX, |b| b / MEMORY_SHARE);
    let disk = disk_free.map_or(u64::MAX, |b| b / DISK_SHARE);
    want.min(mem).min(disk)
}

/// Bytes of memory this process could still fill: the kernel's `MemAvailable`, and each
/// memory cgroup from this process's own up to the root its limit less its usage (v1:
/// `memory.limit_in_bytes` and `memory.usage_in_bytes`; v2: `memory.max` and
/// `memory.current`), the least of them.
pub fn memory_headroom() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(mem_available);
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let groups = cgroup_headrooms(&cgroup, |p| std::fs::read_to_string(p).ok());
    available.into_iter().chain(groups).min()
}

/// `MemAvailable` from `/proc/meminfo`, bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The headroom (limit − usage) of every limited memory cgroup on this process's path, as
/// `/proc/self/cgroup` names it, read through `read` (a path under `/sys/fs/cgroup`).
fn cgroup_headrooms(proc_self_cgroup: &str, read: impl Fn(&str) -> Option<String>) -> Vec<u64> {
    let num = |p: String| read(&p).and_then(|t| t.trim().parse::<u64>().ok());
    let mut out = Vec::new();
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let v2 = id == "0" && ctrls.is_empty();
        if !v2 && !ctrls.split(',').any(|c| c == "memory") {
            continue;
        }
        let (top, limit, usage) = if v2 {
            ("/sys/fs/cgroup", "memory.max", "memory.current")
        } else {
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes")
        };
        let mut dir = path.trim_end_matches('/').to_string();
        loop {
            // "max" (v2) and v1's huge unlimited value do not parse or do not limit.
            if let (Some(l), Some(u)) = (num(format!("{top}{dir}/{limit}")), num(format!("{top}{dir}/{usage}"))) {
                if l < (1 << 60) {
                    out.push(l.saturating_sub(u));
                }
            }
            match dir.rfind('/') {
                Some(i) => dir.truncate(i),
                None => break,
            }
        }
    }
    out
}

/// Bytes an unprivileged writer may still put on the file system holding `dir`.
pub fn disk_free(dir: &Path) -> Option<u64> {
    let c = crate::sys::cstring(dir).ok()?;
    // SAFETY: statvfs is plain data the kernel fills; `c` is a valid NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn every_limited_group_up_the_path_counts_and_unlimited_ones_do_not() {
        let files: HashMap<&str, &str> = HashMap::from([
            // v1: the job's group is limited to 4 GiB with 3 in use; its parent is unlimited.
            ("/sys/fs/cgroup/memory/ci/job/memory.limit_in_bytes", "4294967296\n"),
            ("/sys/fs/cgroup/memory/ci/job/memory.usage_in_bytes", "3221225472\n"),
            ("/sys/fs/cgroup/memory/ci/memory.limit_in_bytes", "9223372036854771712\n"),
            ("/sys/fs/cgroup/memory/ci/memory.usage_in_bytes", "5000000000\n"),
            // v2: "max" does not limit; a 2 GiB limit above it does.
            ("/sys/fs/cgroup/a/b/memory.max", "max\n"),
            ("/sys/fs/cgroup/a/b/memory.current", "100\n"),
            ("/sys/fs/cgroup/a/memory.max", "2147483648\n"),
            ("/sys/fs/cgroup/a/memory.current", "1073741824\n"),
        ]);
        let read = |p: &str| files.get(p).map(|s| s.to_string());
        let v1 = cgroup_headrooms("5:cpu:/\n4:memory:/ci/job\n", read);
        assert_eq!(v1, vec![1 << 30]);
        let v2 = cgroup_headrooms("0::/a/b\n", read);
        assert_eq!(v2, vec![1 << 30]);
        assert!(cgroup_headrooms("4:memory:/\n0::/\n", |_| None).is_empty());
        // Over its limit: no room, not an underflow.
        let full = cgroup_headrooms("4:memory:/x\n", |p| {
            p.contains("/memory/x/")
                .then(|| if p.ends_with("limit_in_bytes") { "10" } else { "20" }.to_string())
        });
        assert_eq!(full, vec![0]);
    }

    #[test]
    fn the_budget_is_a_share_of_what_this_machine_has_free() {
        assert_eq!(mem_available("MemTotal: 100 kB\nMemAvailable:   2048 kB\n"), Some(2 << 20));
        // The shares, on fixed readings: free memory and free disk change between two live
        // readings while other jobs run, so the arithmetic is checked on numbers held still.
        let (gib, kib) = (1u64 << 30, 1u64 << 10);
        assert_eq!(share_of(u64::MAX, Some(8 * gib), Some(100 * gib)), gib, "memory limits");
        assert_eq!(share_of(u64::MAX, Some(100 * gib), Some(8 * gib)), 2 * gib, "disk limits");
        assert_eq!(share_of(4 * kib, Some(8 * gib), Some(8 * gib)), 4 * kib, "never more than asked");
        assert_eq!(share_of(4 * kib, None, None), 4 * kib, "what cannot be read does not limit");
        // And the live machine is read: its temporary directory has a file system to ask.
        let dir = std::env::temp_dir();
        assert!(disk_free(&dir).is_some(), "statvfs of {}", dir.display());
        assert!(budget(&dir, 4096) <= 4096, "never more than asked");
    }
}
