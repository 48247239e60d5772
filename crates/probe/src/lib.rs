//! wblab-probe: ask the real kernel — the harness behind `wblab measure`, `calibrate` and
//! `snapshot`, which runs a workload on this machine, times its devices and reads its setup.
//!
//! * [`measure::measure`] runs a scenario's workload on this machine — on fresh loop devices,
//!   optionally throttled through the root blkio cgroup — with the scenario's knobs applied,
//!   the writeback tracepoints on, `/proc/vmstat` sampled, and writes the same results
//!   directory as `wblab run`;
//! * [`calibrate::calibrate`] measures a real device with O_DIRECT I/O and fits a device model;
//! * [`journal`] makes every change undoable: written before it is made, replayed on every
//!   exit path and by `wblab measure --restore`.
//!
//! It changes nothing it did not create or record, and removes everything it created.

pub mod calibrate;
pub mod cgroup;
pub mod facts;
pub mod fio;
pub mod fusectl;
pub mod guard;
pub mod hostdisk;
pub mod hugebuf;
pub mod journal;
pub mod knobs;
pub mod leaks;
pub mod loopdev;
pub mod measure;
pub mod memcg;
pub mod memtouch;
pub mod mount;
pub mod outdir;
pub mod plan;
pub mod pressure;
pub mod room;
pub mod snapshot;
pub mod spool;
pub mod sys;
pub mod tiotest;
pub mod tracefs;
pub mod trees;
pub mod vmstat;
pub mod watchdog;
pub mod workload;

pub use measure::{measure, MeasureError, MeasureOptions, MeasureReport};
