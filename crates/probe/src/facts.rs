//! Facts about the machine a measurement ran on, for `machine.json`.

use crate::sys;
use serde::Serialize;
use std::path::Path;

#[derive(Clone, Debug, Serialize)]
pub struct MachineFacts {
    pub hostname: String,
    pub kernel_release: String,
    pub kernel_version: String,
    pub cpu_model: String,
    pub cpus_online: usize,
    pub mem_total_bytes: u64,
    pub page_size: u64,
    /// CONFIG_HZ from the kernel config if readable (/proc/config.gz is not parsed).
    pub config_hz: Option<u64>,
    pub cmdline: String,
}

fn uname() -> (String, String, String) {
    // SAFETY: utsname is POD and uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    unsafe { libc::uname(&mut u) };
    let s = |f: &[libc::c_char]| {
        let b: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&b).into_owned()
    };
    (s(&u.nodename), s(&u.release), s(&u.version))
}

pub fn collect() -> MachineFacts {
    let (hostname, kernel_release, kernel_version) = uname();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|v| v.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_total_bytes = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024;
    // SAFETY: sysconf has no memory effects.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    let config_hz = std::fs::read_to_string(format!("/boot/config-{kernel_release}"))
        .ok()
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("CONFIG_HZ=").and_then(|v| v.parse().ok())));
    MachineFacts {
        hostname,
        kernel_release,
        kernel_version,
        cpu_model,
        cpus_online: std::thread::available_parallelism().map_or(1, |n| n.get()),
        mem_total_bytes,
        page_size,
        config_hz,
        cmdline: sys::read_trim(Path::new("/proc/cmdline")).unwrap_or_default(),
    }
}

/// The block device holding `path` ("vda", or the whole disk of a partition).
pub fn block_device_of(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    // SAFETY: pure arithmetic on a dev_t.
    let (ma, mi) = (libc::major(dev), libc::minor(dev));
    let link = std::fs::canonicalize(format!("/sys/dev/block/{ma}:{mi}")).ok()?;
    // A partition's sysfs dir has a `partition` file; its parent is the disk.
    let disk = if link.join("partition").exists() {
        link.parent()?.to_path_buf()
    } else {
        link
    };
    Some(disk.file_name()?.to_string_lossy().to_string())
}

/// "MAJ:MIN" of a block device by name.
pub fn devnum(dev: &str) -> Option<String> {
    sys::read_trim(&Path::new("/sys/block").join(dev).join("dev")).ok()
}
