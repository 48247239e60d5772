//! Morton's 2002 "horror test" (`scenarios/2002-horror-test*.toml`) in a short form: the cat of
//! kernel/*.c under a 4000 MB dd on 2.5.38 with deadline-2002. The shape of his tables must come
//! out: fifo_batch changes the cat time by far more than 5× between 64 and 16, read_expire and
//! writes_starved by less than 2×.

use std::path::Path;

/// The cat's time (its launch latency), s, for each value of the file's sweep.
fn sweep(file: &str, secs: u64) -> Vec<(String, f64)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(file);
    let plan = wblab_scenario::load_sweep(&path)
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("a sweep file");
    (0..plan.len())
        .map(|i| {
            let p = plan.point(i).unwrap_or_else(|e| panic!("{e}"));
            let (label, mut sc) = (p.values.join(" · "), p.scenario);
            sc.duration = secs * 1_000_000_000;
            sc.trace.writeback = false;
            let r = wblab_sim::run(&sc, &mut wblab_sim::machine::NoProgress).unwrap_or_else(|v| panic!("{v}"));
            let cat = r.tasks.iter().find(|t| t.name == "cat-kernel").expect("cat task");
            assert_eq!(cat.op_latency.count(), 1, "{file} {label}: the cat finished");
            (label, cat.op_latency.summary().max as f64 / 1e9)
        })
        .collect()
}

fn spread(v: &[(String, f64)]) -> f64 {
    let max = v.iter().map(|x| x.1).fold(0.0, f64::max);
    let min = v.iter().map(|x| x.1).fold(f64::MAX, f64::min);
    max / min
}

#[test]
fn fifo_batch_decides_the_cat_time() {
    let v = sweep("2002-horror-test.toml", 25);
    let t = |k: &str| v.iter().find(|x| x.0 == k).unwrap().1;
    assert!(t("64") >= 5.0 * t("16"), "{v:?}");
    assert!(t("64") > t("32") && t("32") > t("16"), "{v:?}");
    assert!(t("8") <= t("16") * 1.1, "{v:?}");
}

#[test]
fn read_expire_and_writes_starved_barely_matter() {
    for file in ["2002-horror-test-read-expire.toml", "2002-horror-test-writes-starved.toml"] {
        let v = sweep(file, 25);
        assert!(spread(&v) < 2.0, "{file}: {v:?}");
        assert!(v.iter().all(|x| x.1 > 2.0), "{file}: fifo_batch 64 keeps the cat slow: {v:?}");
    }
}

#[test]
fn era_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/2002-horror-test.toml");
    let sc = wblab_scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let q = &sc.devices[0].queue;
    assert_eq!(sc.policy.generation, "2.5.38");
    assert_eq!(q.scheduler, wblab_sim::config::SchedulerKind::DEADLINE_2002);
    assert_eq!(
        (q.nr_requests, q.iosched.fifo_batch, q.iosched.seek_cost, q.iosched.writes_starved),
        (128, 64, 16, 2)
    );
    assert_eq!((sc.sysctl.dirty_background_ratio, sc.sysctl.dirty_ratio), (10, 40));
}
