//! The `wblab` binary: the command line of the `wblab` library.

use std::process::ExitCode;

/// Die quietly of SIGPIPE when the reader of our output goes away (`wblab run | head`), as
/// command-line tools do, instead of panicking on the failed print: Rust ignores the signal.
fn restore_sigpipe() {
    // SAFETY: setting a signal's disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    restore_sigpipe();
    // `wblab measure` starts this binary again as its watchdog.
    if let Ok(exe) = std::env::current_exe() {
        wblab::set_self_command(vec![exe.into_os_string()]);
    }
    wblab::main_with(std::env::args_os())
}
