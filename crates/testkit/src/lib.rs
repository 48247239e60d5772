//! What the tests of every crate need and used to copy: building and running simulations
//! ([`sim`]), running the `wblab` binary in scratch directories ([`cli`]), and the small
//! scenarios several suites draw from ([`fixtures`]). Dev-only: no product crate depends on
//! it.

pub mod cli;
pub mod fixtures;
pub mod sim;
pub mod suite;
