//! A watchdog for a measurement: a small process of its own (`wblab measure --restore
//! --after PID:START`), in a session of its own so that the terminal's signals do not reach
//! it, that waits for the measuring process to end and then replays the undo journal if one
//! is left. A measurement that ends normally, or by a signal it catches, has undone
//! everything by then and the watchdog finds nothing to do; one killed by SIGKILL or a crash
//! is undone all the same. Only killing the watchdog too (or a reboot) leaves the journal for
//! `wblab measure --restore` by hand.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// How this program is started again (the `wblab` binary, or `python -m wblab`), set by the
/// entry point; None: measurements run without a watchdog.
static SELF_COMMAND: Mutex<Option<Vec<OsString>>> = Mutex::new(None);

/// Say how to start this program again (its first words, before `measure`).
pub fn set_self_command(cmd: Vec<OsString>) {
    *SELF_COMMAND.lock().unwrap_or_else(|e| e.into_inner()) = Some(cmd);
}

/// The restorer command for this process, if the entry point said how to start it.
pub fn restorer() -> Option<Vec<OsString>> {
    let mut cmd = SELF_COMMAND.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    cmd.extend(["measure", "--restore", "--quiet", "--after"].map(OsString::from));
    cmd.push(OsString::from(this_process()));
    Some(cmd)
}

/// `PID:START` of this process: its pid and start time (field 22 of /proc/PID/stat), which
/// together name it even once the pid is reused.
pub fn this_process() -> String {
    let pid = std::process::id();
    format!("{pid}:{}", start_time(pid).unwrap_or(0))
}

fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The comm field may hold blanks and parentheses: count from the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The running watchdog; dropping it leaves it to finish by itself.
pub struct Watchdog {
    pub pid: u32,
}

/// The watchdog of this process, once started: it serves every later measurement of the
/// process too (a Python session may run many), since it acts only when the process ends.
static STARTED: Mutex<Option<u32>> = Mutex::new(None);

/// Start `cmd` as the watchdog of this process (once per process).
pub fn start(cmd: &[OsString]) -> io::Result<Watchdog> {
    let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: signal 0 only asks whether the process exists.
    if let Some(pid) = (*started).filter(|&p| unsafe { libc::kill(p as libc::pid_t, 0) } == 0) {
        return Ok(Watchdog { pid });
    }
    let (exe, args) = cmd.split_first().ok_or_else(|| io::Error::other("an empty restorer command"))?;
    let mut c = Command::new(exe);
    c.args(args).stdin(Stdio::null()).stdout(Stdio::null());
    // SAFETY: setsid and signal are async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(|| {
            libc::setsid();
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let child = c.spawn()?;
    let pid = child.id();
    *started = Some(pid);
    // Reaped by a thread of ours, not left a zombie while we run; if we die first, init
    // reaps it.
    std::thread::Builder::new().name("wblab-watchdog".into()).spawn(move || {
        let mut child = child;
        let _ = child.wait();
    })?;
    Ok(Watchdog { pid })
}

/// `--after PID:START`: wait until that process has ended.
pub fn wait_for_end(who: &str) -> Result<(), String> {
    let (pid, start) = who
        .split_once(':')
        .and_then(|(p, s)| Some((p.parse::<u32>().ok()?, s.parse::<u64>().ok()?)))
        .ok_or_else(|| format!("--after {who}: expected PID:START"))?;
    // A pidfd (Linux 5.3+) becomes readable when the process exits; else poll /proc.
    // SAFETY: a plain system call.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_long, 0 as libc::c_long) } as libc::c_int;
    if fd >= 0 && start_time(pid) == Some(start) {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut dying_since: Option<std::time::Instant> = None;
        loop {
            // SAFETY: a valid pollfd.
            let r = unsafe { libc::poll(&mut p, 1, 1000) };
            if r > 0 || (r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
                break;
            }
            unstick_if_dying(pid, &mut dying_since);
        }
        // SAFETY: our fd.
        unsafe { libc::close(fd) };
        return Ok(());
    }
    if fd >= 0 {
        // SAFETY: our fd.
        unsafe { libc::close(fd) };
    }
    let mut dying_since = None;
    while start_time(pid) == Some(start) {
        std::thread::sleep(Duration::from_millis(100));
        unstick_if_dying(pid, &mut dying_since);
    }
    Ok(())
}

/// How long a killed measurement may take to die before its emulated devices are cut off.
const DYING_GRACE: Duration = Duration::from_secs(5);

/// A measurement killed while one of its threads waits for I/O on a device it serves itself
/// cannot die: the I/O waits for the FUSE server, whose threads are gone. After
/// [`DYING_GRACE`], abort the FUSE connections of its emulated devices (as `fusectl`'s
/// `abort` does), which fails that I/O and lets it exit.
fn unstick_if_dying(pid: u32, since: &mut Option<std::time::Instant>) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    if !dying(&status) {
        *since = None;
        return;
    }
    let t = *since.get_or_insert_with(std::time::Instant::now);
    if t.elapsed() >= DYING_GRACE {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let conns = emulated_connections(&mountinfo, pid);
        if !conns.is_empty() {
            crate::fusectl::abort(&conns);
        }
        *since = None;
    }
}

/// Whether `/proc/PID/status` says the process is being killed: SIGKILL pending (the kernel
/// queues it to the group and to each thread), or its leader gone while other threads linger
/// (a zombie leader).
fn dying(status: &str) -> bool {
    let field = |k: &str| status.lines().find_map(|l| l.strip_prefix(k)).map(str::trim);
    let sigkill = 1u64 << (libc::SIGKILL - 1);
    let pending = |k: &str| field(k).and_then(|h| u64::from_str_radix(h, 16).ok()).unwrap_or(0);
    (pending("ShdPnd:") | pending("SigPnd:")) & sigkill != 0 || field("State:").is_some_and(|s| s.starts_with('Z'))
}

/// The FUSE connections (device minors) of the emulated devices mounted in the scratch
/// directory of measurement `pid` (`.../wblab-measure-<pid>-<stamp>/emulated/<device>`).
fn emulated_connections(mountinfo: &str, pid: u32) -> Vec<u32> {
    let scratch = format!("/{}{pid}-", crate::plan::SCRATCH_PREFIX);
    mountinfo
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let dash = f.iter().position(|&x| x == "-")?;
            let (fstype, source) = (*f.get(dash + 1)?, *f.get(dash + 2)?);
            let ours = fstype.starts_with("fuse") && source.starts_with("wblab-emulate:") && f.get(4)?.contains(&scratch);
            let minor = f.get(2)?.split_once(':')?.1.parse().ok()?;
            ours.then_some(minor)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_named_by_pid_and_start_time() {
        let me = this_process();
        let (pid, start) = me.split_once(':').unwrap();
        assert_eq!(pid.parse::<u32>().unwrap(), std::process::id());
        assert!(start.parse::<u64>().unwrap() > 0);
        // Waiting for a process that is gone returns at once.
        let mut child = Command::new("true").spawn().unwrap();
        let who = format!("{}:{}", child.id(), start_time(child.id()).unwrap_or(1));
        child.wait().unwrap();
        wait_for_end(&who).unwrap();
        assert!(wait_for_end("12").is_err());
    }

    #[test]
    fn a_killed_measurement_is_seen_dying_and_its_emulated_devices_found() {
        assert!(dying("Name:\twblab\nState:\tD (disk sleep)\nShdPnd:\t0000000000000100\n"));
        assert!(dying("State:\tZ (zombie)\nShdPnd:\t0000000000000000\n"));
        assert!(!dying("State:\tD (disk sleep)\nShdPnd:\t0000000000004002\n"));
        let info = "\
36 25 0:40 / /var/tmp/wblab-measure-9573-1796570032195/emulated/sda rw,nosuid - fuse wblab-emulate:sda rw,user_id=0
37 25 0:41 / /var/tmp/wblab-measure-777-1796570032195/emulated/sdb rw,nosuid - fuse wblab-emulate:sdb rw,user_id=0
38 25 0:42 / /home/u/fuse rw - fuse.sshfs host:/x rw
39 36 7:64 / /var/tmp/wblab-measure-9573-1796570032195/mnt/sda rw - ext4 /dev/loop64 rw";
        assert_eq!(emulated_connections(info, 9573), vec![40]);
        assert_eq!(emulated_connections(info, 777), vec![41]);
        assert!(emulated_connections(info, 95).is_empty(), "a pid that prefixes another is not it");
    }
}
