//! Signals and panics. Every signal whose default action ends the process and that can be
//! caught without the process being broken (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1/2,
//! SIGPIPE, SIGALRM, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSTKFLT and the
//! real-time signals) only sets a flag — the one thing a signal handler may safely do — and
//! the run loop sees it within ~10 ms and tears down in order. A panic hook sets the same flag
//! so that other threads stop too, and the journal's `Drop` undoes everything while the panic
//! unwinds. What cannot be caught or survived (SIGKILL, SIGSEGV, SIGBUS, SIGILL, SIGFPE,
//! SIGABRT, SIGSYS, SIGTRAP) ends the process; the watchdog (`watchdog.rs`) then undoes the
//! journal, or `wblab measure --restore` does.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;

/// The signal that asked us to stop (or PANIC), 0 while running.
static ABORT: AtomicI32 = AtomicI32::new(0);

/// Value of the flag after a panic.
pub const PANIC: i32 = -1;

extern "C" fn on_signal(sig: libc::c_int) {
    ABORT.store(sig, Ordering::SeqCst);
}

/// The signals that stop a measurement in order (see the module doc).
pub fn caught() -> Vec<libc::c_int> {
    let mut v = vec![
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGPIPE,
        libc::SIGALRM,
        libc::SIGTERM,
        libc::SIGSTKFLT,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGIO,
        libc::SIGPWR,
    ];
    v.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    v
}

/// Install the handlers and the panic hook (once per process).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for sig in caught() {
            // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            ABORT.store(PANIC, Ordering::SeqCst);
            prev(info);
        }));
    });
}

/// The signal number (or PANIC) that asked the run to stop.
pub fn aborted() -> Option<i32> {
    match ABORT.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// `Interrupted` once the run was asked to stop: for loops that write before the workload
/// (files, trees), which must give up at once.
pub fn check() -> std::io::Result<()> {
    match aborted() {
        Some(_) => Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted")),
        None => Ok(()),
    }
}

/// Clear the flag (tests that run several measurements in one process).
pub fn reset() {
    ABORT.store(0, Ordering::SeqCst);
}

/// Name of a signal for messages.
pub fn signal_name(sig: i32) -> String {
    if sig == PANIC {
        return "a panic".into();
    }
    // SAFETY: strsignal returns a pointer to a static or thread-local string (or NULL).
    let desc = unsafe {
        let p = libc::strsignal(sig);
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSTKFLT => "SIGSTKFLT",
        _ => return format!("signal {sig} ({desc})"),
    };
    name.to_string()
}

/// A test hook: in debug builds (the tests' binaries), `WBLAB_TEST_FAULT=<stage>` panics at
/// that stage of a measurement (`setup`, `workload`), so that the tests can check that a
/// panic undoes everything. Nothing in a release build.
pub fn fault_point(stage: &str) {
    if cfg!(debug_assertions) && std::env::var("WBLAB_TEST_FAULT").is_ok_and(|s| s == stage) {
        panic!("WBLAB_TEST_FAULT: an injected panic at `{stage}`");
    }
}
