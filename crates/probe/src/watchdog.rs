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
        loop {
            // SAFETY: a valid pollfd.
            let r = unsafe { libc::poll(&mut p, 1, -1) };
            if r > 0 || (r < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
                break;
            }
        }
        // SAFETY: our fd.
        unsafe { libc::close(fd) };
        return Ok(());
    }
    if fd >= 0 {
        // SAFETY: our fd.
        unsafe { libc::close(fd) };
    }
    while start_time(pid) == Some(start) {
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
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
}
