//! Sweeps: one scenario at many points — a grid of any keys, a list, or points drawn at
//! random — run in parallel (each simulation single-threaded and deterministic), gathered into
//! one table (CSV and Parquet) that a stopped sweep resumes from, ranked by objectives and
//! drawn against a key. The `wblab` command, the Python package and its Ray and Dask backends
//! all run points through [`run::run_point`] and write tables through [`table`], so their
//! tables are byte-identical.

pub mod driver;
pub mod figures;
pub mod merge;
pub mod objective;
pub mod parquet_out;
pub mod plot;
pub mod repeats;
pub mod run;
pub mod summary;
pub mod table;
pub mod view;

pub use driver::{run_sweep, write_tables, Outcome};
pub use run::{run_point, run_points, run_sorted, Failure, Options, PointOutcome};
pub use table::{InvalidPoint, PointRows, DEVICES_CSV, INVALID_CSV, TASKS_CSV};
