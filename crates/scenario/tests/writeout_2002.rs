//! Kropelin's 2002 writeout test (`scenarios/2002-writeout-2.4.toml`) in a short form: a 200 MB
//! FTP upload instead of 650 MB, both kernels of the file. What must come out of the 2.4
//! mechanisms: 2.4.17's transfer takes longer than 2.4.7's, its
//! per-second `bo` (2.4's submission-counted pgpgout) has more idle seconds and a larger
//! coefficient of variation, and its writer pauses (balance_dirty's own writeout and waits)
//! while 2.4.7's writer, which never waits for completions, pauses far less.

use std::path::Path;
use wblab_sim::metrics::RunResult;

fn runs(size: u64) -> Vec<(String, RunResult)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/2002-writeout-2.4.toml");
    let all = wblab_scenario::load_all(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.iter().map(|s| s.kernel.as_str()).collect::<Vec<_>>(), ["2.4.17", "2.4.7"]);
    all.into_iter()
        .map(|mut sc| {
            for t in &mut sc.tasks {
                if let wblab_sim::config::JobConfig::Netwrite { size: s, .. } = &mut t.job {
                    *s = Some(size);
                }
            }
            sc.duration = 200_000_000_000;
            sc.trace.writeback = false;
            let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
            (sc.kernel.clone(), r)
        })
        .collect()
}

/// (mean KB/s, coefficient of variation, idle seconds) of bo from its first busy second to the
/// end of the transfer.
pub fn bo_stats(r: &RunResult) -> (f64, f64, usize) {
    let end = r.tasks[0].ended;
    let bo: Vec<f64> = r.vmstat.iter().filter(|s| s.t_ns <= end).map(|s| s.bo_kb as f64).collect();
    let first = bo.iter().position(|&b| b > 0.0).expect("writeout happened");
    let last = bo.len() - 1;
    let w = &bo[first..=last];
    let n = w.len() as f64;
    let mean = w.iter().sum::<f64>() / n;
    let var = w.iter().map(|b| (b - mean) * (b - mean)).sum::<f64>() / n;
    (mean, var.sqrt() / mean, w.iter().filter(|&&b| b == 0.0).count())
}

#[test]
fn mainline_oscillates_and_finishes_later_than_the_ac_code() {
    let r = runs(200_000_000);
    let (k17, r17) = &r[0];
    let (k7, r7) = &r[1];
    let end = |r: &RunResult| r.tasks[0].ended as f64 / 1e9;
    let (t17, t7) = (end(r17), end(r7));
    assert!(r17.tasks[0].bytes_written == 200_000_000 && r7.tasks[0].bytes_written == 200_000_000);
    let (m17, cv17, idle17) = bo_stats(r17);
    let (m7, cv7, idle7) = bo_stats(r7);
    eprintln!(
        "{k17}: {t17:.1} s, bo mean {m17:.0} KB/s cv {cv17:.2} idle {idle17}; {k7}: {t7:.1} s, bo mean {m7:.0} cv {cv7:.2} idle {idle7}"
    );
    assert!(t17 > t7 * 1.1, "2.4.17 {t17:.1} s vs 2.4.7 {t7:.1} s");
    // The acceptance: the oscillation is at least twice as strong, as Kropelin measured.
    assert!(cv17 >= 2.0 * cv7, "cv {cv17:.2} vs {cv7:.2}");
    assert!(idle17 > idle7, "bo = 0 seconds {idle17} vs {idle7}");
    let pauses = |r: &RunResult| r.tasks[0].pauses.count();
    assert!(pauses(r17) > 2 * pauses(r7), "{} vs {}", pauses(r17), pauses(r7));
}

#[test]
fn era_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/2002-writeout-2.4.toml");
    let all = wblab_scenario::load_all(&path).unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (&all[0], &all[1]);
    assert_eq!((a.policy.generation.as_str(), b.policy.generation.as_str()), ("2.4.17", "2.4.7"));
    assert_eq!(a.sysctl.bdflush, wblab_sim::config::Bdflush::V2417);
    assert_eq!(b.sysctl.bdflush, wblab_sim::config::Bdflush::V247);
    assert_eq!(a.hz, 100);
}
