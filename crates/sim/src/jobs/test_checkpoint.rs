//! A job kind registered in test builds only: the worked example of `docs/extending.md`
//! ("adding a job kind"), kept compiling and exercised by the tests so the guide cannot rot.
//!
//! `checkpoint-test` is a database's checkpointer: every `interval` it appends `bytes` to its
//! file in `bs` writes, fsyncs them, and reads one `bs` block of what it has written back to
//! check it.

use super::{Call, FileUse, JobKind, Keys, Progress, RealRunner, Script, ScriptKey, SweepFigure};
use crate::config::KnobKind;
use crate::units::{KIB, MIB};

/// `checkpoint-test` in the list of job kinds.
pub static KIND: JobKind = JobKind {
    name: "checkpoint-test",
    summary: "test-only: append, fsync and read back one block, every interval",
    keys: Keys::Script {
        keys: &[
            ScriptKey {
                key: "bs",
                kind: KnobKind::Size {
                    min: 4 * KIB,
                    max: 64 * MIB,
                    pages: true,
                },
                doc: "size of each write() and of the read-back",
                default: Some(64 * KIB),
            },
            ScriptKey {
                key: "bytes",
                kind: KnobKind::Size {
                    min: 4 * KIB,
                    max: 1 << 30,
                    pages: true,
                },
                doc: "bytes appended each round",
                default: Some(MIB),
            },
            ScriptKey {
                key: "interval",
                kind: KnobKind::Duration { max: 3_600_000_000_000 },
                doc: "sleep between rounds",
                default: Some(100_000_000),
            },
        ],
        script: &Checkpoint,
    },
    file: FileUse::Writes,
    op: "call",
    logs_ops: true,
    plots_ops: true,
    buffered_writes: false,
    throughput: true,
    background: false,
    real: RealRunner::Thread,
    sweep: SweepFigure::CallLatency,
};

#[derive(Debug)]
struct Checkpoint;

impl Script for Checkpoint {
    fn next(&self, p: &[u64], done: &Progress, draw: &mut dyn FnMut(u64) -> u64) -> Call {
        let (bs, bytes, interval) = (p[0], p[1], p[2]);
        let writes = bytes.div_ceil(bs);
        match done.calls % (writes + 3) {
            k if k < writes => Call::Write {
                offset: done.written,
                bytes: bs.min(bytes - k * bs),
            },
            k if k == writes => Call::Fsync,
            k if k == writes + 1 => Call::Read {
                offset: draw((done.written / bs).max(1)) * bs,
                bytes: bs,
            },
            _ => Call::Sleep(interval),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_its_writes_an_fsync_a_read_back_and_a_sleep() {
        let p = [64 * KIB, 160 * KIB, 5_000_000];
        let mut done = Progress::default();
        let mut calls = Vec::new();
        for _ in 0..12 {
            let c = Checkpoint.next(&p, &done, &mut |n| n - 1);
            done.calls += 1;
            if let Call::Write { bytes, .. } = c {
                done.written += bytes;
            }
            calls.push(c);
        }
        assert_eq!(
            calls[0],
            Call::Write {
                offset: 0,
                bytes: 64 * KIB
            }
        );
        assert_eq!(
            calls[2],
            Call::Write {
                offset: 128 * KIB,
                bytes: 32 * KIB
            }
        );
        assert_eq!(calls[3], Call::Fsync);
        // The last whole block written.
        assert_eq!(
            calls[4],
            Call::Read {
                offset: 64 * KIB,
                bytes: 64 * KIB
            }
        );
        assert_eq!(calls[5], Call::Sleep(5_000_000));
        assert_eq!(
            calls[6],
            Call::Write {
                offset: 160 * KIB,
                bytes: 64 * KIB
            }
        );
    }
}
