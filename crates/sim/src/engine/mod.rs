//! The engine: integer-nanosecond virtual time, one event queue ordered by (time, insertion),
//! and per-entity random streams derived from the scenario seed.
//!
//! Simulated tasks and kernel threads are explicit state machines driven by events (see
//! `machine/`): each event names an entity and a small reason, and the entity's code runs
//! until it sleeps again. This keeps the hot loop free of allocation and dynamic dispatch, and a
//! run a pure function of (scenario, seed).

pub(crate) mod queue;
pub(crate) mod rng;
pub(crate) mod time;

pub(crate) use queue::EventQueue;
pub use rng::RngStream;
pub(crate) use time::Clock;
