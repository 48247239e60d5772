//! Reading results directories back, simulated or measured: [`rundir`] loads one,
//! [`trace_parse`] reads ftrace text (ours or a real kernel's), [`file`] opens their files
//! without trusting them.

pub mod emulated;
pub mod file;
pub mod refused;
pub mod rundir;
pub mod trace_parse;
