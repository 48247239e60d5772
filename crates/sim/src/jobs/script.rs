//! A job kind declared as a script: the next system call from what the instance has done so
//! far. The model turns each call into the simulated kernel's path (a buffered write, a read
//! through the page cache, an fsync, a sleep) and `wblab measure` into the real call, so the
//! same job runs on both sides of a comparison.

use super::JobKind;
use crate::config::KnobKind;
use crate::Ns;
use std::sync::Arc;

/// A key of a scripted kind: how it is written and its default (`None`: the task must set it).
#[derive(Clone, Copy, Debug)]
pub struct ScriptKey {
    pub key: &'static str,
    pub kind: KnobKind,
    pub doc: &'static str,
    pub default: Option<u64>,
}

/// What an instance has done so far, counted alike by the model and by `wblab measure`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Calls the script has returned (sleeps included).
    pub calls: u64,
    /// Bytes its writes have written.
    pub written: u64,
    /// Bytes its reads have read.
    pub read: u64,
}

/// One system call of a scripted job on its file. Every call but a sleep is one operation:
/// its latency goes into the task's operation figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// A buffered `pwrite` of `bytes` at `offset`.
    Write { offset: u64, bytes: u64 },
    /// A buffered `pread` of `bytes` at `offset`.
    Read { offset: u64, bytes: u64 },
    /// `fsync` of the file.
    Fsync,
    /// Sleep this long (think time, a period).
    Sleep(Ns),
    /// The job is over.
    Exit,
}

/// The calls of a scripted kind.
pub trait Script: Sync + std::fmt::Debug {
    /// The call after `done`, from the kind's keys' values (`params`, in the order the kind
    /// declares them) and `draw(n)`, uniform in `0..n` from the instance's own random stream.
    fn next(&self, params: &[u64], done: &Progress, draw: &mut dyn FnMut(u64) -> u64) -> Call;
}

/// A task's scripted job: its kind and its keys' values.
#[derive(Clone, Debug)]
pub struct ScriptedJob {
    pub kind: &'static JobKind,
    /// The values of the kind's keys, in their declaration order.
    pub params: Arc<[u64]>,
}

impl ScriptedJob {
    /// The call after `done`.
    pub fn next(&self, done: &Progress, draw: &mut dyn FnMut(u64) -> u64) -> Call {
        match self.kind.keys {
            super::Keys::Script { script, .. } => script.next(&self.params, done, draw),
            super::Keys::Own(_) => Call::Exit,
        }
    }

    /// The value of key `key` (0 if the kind has no such key).
    pub fn param(&self, key: &str) -> u64 {
        let keys = self.kind.keys.declared().unwrap_or_default();
        keys.iter().position(|k| k.key == key).map_or(0, |i| self.params[i])
    }
}

impl serde::Serialize for ScriptedJob {
    /// `{"kind": name, key: value...}`, values in their stored units.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let keys = self.kind.keys.declared().unwrap_or_default();
        let mut m = s.serialize_map(Some(keys.len() + 1))?;
        m.serialize_entry("kind", self.kind.name)?;
        for (k, v) in keys.iter().zip(self.params.iter()) {
            m.serialize_entry(k.key, v)?;
        }
        m.end()
    }
}
