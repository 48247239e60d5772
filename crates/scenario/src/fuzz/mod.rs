//! A generator of scenario files for fuzzing: random files over every key of the format (all
//! jobs, kernels, device models, elevators, policies), mostly plausible, some at the edges of
//! what is accepted, some damaged. `wblab fuzz` runs them through the parser and the simulator
//! with its laws checked; the case number and seed reproduce a file exactly.

mod generate;
mod mutate;
mod shapes;

pub use generate::{Case, Generator};

#[cfg(test)]
mod tests;
