//! `wblab run --repeat N`: the scenario again under seeds seed+1 … seed+N−1, in parallel, and
//! each figure's median and range over all N runs (`repeats.csv` in the results directory).
//! Each other seed's figure files go to `repeats/seed-<n>/`, where `wblab compare` and
//! `wblab report A B` find them to mark changes smaller than the run-to-run range.

use crate::simulate;
use std::path::Path;
use std::process::ExitCode;
use wblab_sim::config::Scenario;
use wblab_sim::machine::NoProgress;
use wblab_sweep::repeats::Repeats;

/// Run `sc` under `n` seeds from its own (the first is the run already written to `out`,
/// simulated again: the same seed gives the same figures), print the spread table and write
/// `out/repeats.csv`.
pub fn repeat(sc: &Scenario, out: &Path, n: u32, quiet: bool, check: bool) -> ExitCode {
    let seeds: Vec<u64> = (0..u64::from(n)).map(|i| sc.seed.wrapping_add(i)).collect();
    // A rerun with fewer seeds must not leave older ones behind for compare to find.
    let _ = std::fs::remove_dir_all(out.join(wblab_report::REPEATS_DIR));
    let counter = crate::progress::Counter::new("repeats", seeds.len(), quiet);
    let results = wblab_sweep::run::each_parallel(
        seeds.len(),
        0,
        |i| {
            let mut run = sc.clone();
            run.seed = seeds[i];
            let t0 = std::time::Instant::now();
            simulate::simulate(&run, &mut NoProgress, check).and_then(|r| {
                // The first seed's files are the results directory itself.
                if i > 0 {
                    let dir = out.join(wblab_report::REPEATS_DIR).join(format!("seed-{}", seeds[i]));
                    if let Err(e) = wblab_report::write_figures_dir(&dir, &r, t0.elapsed().as_secs_f64()) {
                        eprintln!("error: cannot write {}: {e}", dir.display());
                        return Err(ExitCode::from(1));
                    }
                }
                Ok(wblab_sweep::repeats::named_figures(&r))
            })
        },
        |k| counter.at(k),
    );
    counter.done();
    let mut rep = Repeats::empty();
    for (seed, r) in seeds.iter().zip(results) {
        match r {
            Ok(figures) => rep.push_figures(*seed, figures),
            Err(code) => return code,
        }
    }
    print!("{}", rep.table());
    let path = out.join("repeats.csv");
    if let Err(e) = std::fs::write(&path, rep.csv()) {
        eprintln!("error: cannot write {}: {e}", path.display());
        return ExitCode::from(1);
    }
    println!("repeats: {}", path.display());
    ExitCode::SUCCESS
}
