//! Progress bar for long runs, on stderr, only when it is a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use wblab_sim::Ns;

pub struct Bar {
    bar: Option<ProgressBar>,
}

impl Bar {
    pub fn new(quiet: bool, name: &str) -> Self {
        if quiet || !std::io::stderr().is_terminal() {
            return Bar { bar: None };
        }
        let b = ProgressBar::new(1000);
        b.set_style(
            ProgressStyle::with_template("{prefix} [{bar:40}] {msg} ({elapsed})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b.set_prefix(name.to_string());
        Bar { bar: Some(b) }
    }

    /// After the simulation: a named phase (writing, drawing) with a free-form detail, the
    /// bar replaced by a spinner so the user sees it is still moving.
    pub fn phase(&self, phase: &str, detail: &str) {
        if let Some(b) = &self.bar {
            if b.length().is_some() {
                b.set_style(ProgressStyle::with_template("{prefix} {spinner} {msg} ({elapsed})").expect("valid template"));
                b.unset_length();
                b.enable_steady_tick(std::time::Duration::from_millis(100));
            }
            b.set_message(format!("{phase}: {detail}"));
        }
    }

    /// Run `f` (which prints) with the bar out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl wblab_sim::Progress for Bar {
    fn tick(&mut self, done: Ns, total: Ns) {
        if let Some(b) = &self.bar {
            b.set_position(done.saturating_mul(1000) / total.max(1));
            b.set_message(format!("{:.1}/{:.0} s simulated", done as f64 / 1e9, total as f64 / 1e9));
        }
    }
}

/// "label: n/total runs" on stderr: rewritten in place on a terminal; in a log (stderr not a
/// terminal), a line at each tenth of the way and at the end, never a carriage return.
pub struct Counter {
    label: &'static str,
    total: usize,
    terminal: bool,
    quiet: bool,
    /// The last tenth written to a log.
    logged: std::sync::atomic::AtomicUsize,
}

impl Counter {
    pub fn new(label: &'static str, total: usize, quiet: bool) -> Counter {
        Counter {
            label,
            total,
            terminal: std::io::stderr().is_terminal(),
            quiet,
            logged: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// `n` runs are done.
    pub fn at(&self, n: usize) {
        if self.quiet {
            return;
        }
        if self.terminal {
            eprint!("\r{}: {n}/{} runs", self.label, self.total);
            return;
        }
        let tenth = (n * 10).checked_div(self.total).unwrap_or(10);
        if tenth > self.logged.fetch_max(tenth, std::sync::atomic::Ordering::Relaxed) {
            eprintln!("{}: {n}/{} runs", self.label, self.total);
        }
    }

    /// The end of the count: the terminal's line is closed.
    pub fn done(&self) {
        if !self.quiet && self.terminal {
            eprintln!();
        }
    }
}
