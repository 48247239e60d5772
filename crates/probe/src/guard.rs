//! Signals and panics: SIGINT, SIGTERM and SIGHUP only set a flag (the one thing a signal
//! handler may safely do); the run loop sees it within ~10 ms and tears down in order. A panic
//! hook sets the same flag so that other threads stop too, and the journal's `Drop` undoes
//! everything while the panic unwinds.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;

/// The signal that asked us to stop (or PANIC), 0 while running.
static ABORT: AtomicI32 = AtomicI32::new(0);

/// Value of the flag after a panic.
pub const PANIC: i32 = -1;

extern "C" fn on_signal(sig: libc::c_int) {
    ABORT.store(sig, Ordering::SeqCst);
}

/// Install the handlers and the panic hook (once per process).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
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

/// Clear the flag (tests that run several measurements in one process).
pub fn reset() {
    ABORT.store(0, Ordering::SeqCst);
}

/// Name of a signal for messages.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        PANIC => "a panic",
        _ => "a signal",
    }
}
