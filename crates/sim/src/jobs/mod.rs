//! Job kinds: what a `[[task]]`'s `job` may be, each declared once and read by the parser, the
//! model, `wblab measure` and the reports.
//!
//! A [`JobKind`] says what a kind is to every tool — its keys, the file it works on, what one of
//! its operations is, how tables and the verdict treat it, how `wblab measure` runs it — so
//! none of them keeps a list of its own.
//!
//! A kind whose work is a plain sequence of system calls declares them as a [`Script`]: the
//! model runs its calls through the simulated kernel and `wblab measure` through the real
//! one, so adding such a kind is its file and one line in the list below (`docs/extending.md`;
//! the test-only `checkpoint-test` is the worked example). The older kinds' calls are woven
//! into the model's paths (`workload/`), their keys parsed by the scenario crate.

mod builtin;
pub mod launch;
mod script;
#[cfg(any(test, feature = "test-extensions"))]
pub mod test_checkpoint;

pub use script::{Call, Progress, Script, ScriptKey, ScriptedJob};

/// The file a job works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileUse {
    /// A file it creates and writes (`dd of=`): it does not exist before the job.
    Writes,
    /// An existing file of `file_size` bytes, laid out before the run.
    Reads,
    /// A tree of its own, or no file at all (`sync`, `spin`): `{n}` in `file` is not needed.
    Tree,
    /// The files its fio job file names.
    Fio,
}

/// How `wblab measure` runs a job on the real kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealRunner {
    /// The `dd` program.
    Dd,
    /// The `fio` program.
    Fio,
    /// A thread of the harness making the job's system calls.
    Thread,
    /// Not run for real.
    None,
}

/// What a sweep's table shows of a task group of the kind: what its user would time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepFigure {
    /// Its MB/s (a copy, a reader).
    Throughput,
    /// One command a run: the `time` of the command, in seconds (a launch, `ls`, `du`).
    CommandTime,
    /// A probe: each call's latency, p50/p99 (fsync, a random reader).
    CallLatency,
    /// fio's summary: bandwidth and each I/O's latency.
    Fio,
}

/// A job kind: one entry of [`JOBS`].
#[derive(Debug)]
pub struct JobKind {
    /// `job = "..."` in a scenario.
    pub name: &'static str,
    /// One line for reference tables.
    pub summary: &'static str,
    /// The keys it takes besides a task's common ones.
    pub keys: Keys,
    pub file: FileUse,
    /// What one of its operations is, in legends and tables (`"read()"`).
    pub op: &'static str,
    /// Its operations' latencies are the question (a reader, a commit, a launch): the model
    /// logs each one (`ops.csv`). Bulk writers' write() calls only measure throttling.
    pub logs_ops: bool,
    /// Reports draw its operations' latency (everything with operations but `dd`, whose
    /// write() calls are drawn as `balance_dirty_pages` pauses).
    pub plots_ops: bool,
    /// Its operations are buffered write() calls (the verdict looks at where their time went).
    pub buffered_writes: bool,
    /// Tables give its MB/s.
    pub throughput: bool,
    /// Load that runs beside the work until stopped: a run ends without waiting for it.
    pub background: bool,
    pub real: RealRunner,
    /// Its cell in a sweep's table.
    pub sweep: SweepFigure,
}

/// A kind's keys: the older kinds' are parsed by the scenario crate's own code; a scripted
/// kind's are read from their declarations and handed to its script.
#[derive(Debug)]
pub enum Keys {
    Own(&'static [&'static str]),
    Script {
        keys: &'static [ScriptKey],
        script: &'static dyn Script,
    },
}

impl Keys {
    /// The keys' names, in the order reference tables list them.
    pub fn names(&self) -> Vec<&'static str> {
        match self {
            Keys::Own(k) => k.to_vec(),
            Keys::Script { keys, .. } => keys.iter().map(|k| k.key).collect(),
        }
    }

    /// A scripted kind's declared keys.
    pub fn declared(&self) -> Option<&'static [ScriptKey]> {
        match self {
            Keys::Own(_) => None,
            Keys::Script { keys, .. } => Some(keys),
        }
    }
}

// docs:begin job-list
crate::registry!(SHIPPED_JOBS, JOBS: &JobKind, "job kinds";
    &builtin::DD,
    &builtin::NETWRITE,
    &builtin::CAT,
    &builtin::RANDREAD,
    &builtin::FSYNC,
    &builtin::REPLACE,
    &builtin::SYNC,
    &builtin::SPIN,
    &builtin::DU,
    &builtin::LAUNCH,
    &builtin::LS,
    &builtin::TIOTEST,
    &builtin::FIO;
    test: &test_checkpoint::KIND
);
// docs:end job-list

/// The kind `job = "name"` names.
pub fn job_kind(name: &str) -> Option<&'static JobKind> {
    JOBS.iter().copied().find(|k| k.name == name)
}

/// The names of every kind, in the order tools list them.
pub fn job_names() -> Vec<&'static str> {
    JOBS.iter().map(|k| k.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_load_has_no_operations() {
        for (i, k) in JOBS.iter().enumerate() {
            assert!(JOBS[..i].iter().all(|o| o.name != k.name), "{} twice", k.name);
            assert!(
                !(k.background && k.logs_ops),
                "{}: background load has no operations to log",
                k.name
            );
        }
    }
}
