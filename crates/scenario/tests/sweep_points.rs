//! How a `[sweep]` chooses its points: a grid of lists and ranges, a list of whole points,
//! points drawn at random; every key kind written where the file would set it; and a bad
//! point reported with its index and values.

use wblab_scenario::{SweepPlan, SWEEP_MAX_POINTS};

const BASE: &str = "duration = \"4s\"\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n[[task]]\nname = \"copy\"\njob = \"dd\"\n";

fn plan(sweep: &str) -> SweepPlan {
    let text = format!("{BASE}[sweep]\n{sweep}");
    let p = SweepPlan::parse(&text, "s.toml")
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("a sweep");
    p.check().unwrap_or_else(|e| panic!("{e}"));
    p
}

fn error(sweep: &str) -> String {
    let text = format!("{BASE}[sweep]\n{sweep}");
    match SweepPlan::parse(&text, "s.toml") {
        Err(e) => e.to_string(),
        Ok(Some(p)) => p.check().expect_err("the sweep is refused").to_string(),
        Ok(None) => panic!("no sweep"),
    }
}

const MIB: u64 = 1 << 20;

#[test]
fn a_log_range_in_a_grid_takes_evenly_spaced_powers() {
    let p = plan("\"vm.dirty_bytes\" = { min = \"16MiB\", max = \"1GiB\", steps = 7, log = true }\n");
    assert_eq!(p.len(), 7);
    let got: Vec<u64> = (0..7).map(|i| p.point(i).unwrap().scenario.sysctl.dirty_bytes).collect();
    let want: Vec<u64> = (0..7).map(|k| (16 * MIB) << k).collect();
    assert_eq!(got, want);
    assert_eq!(p.values(0, 2), vec![vec!["16MiB".to_string()], vec!["32MiB".to_string()]]);
}

#[test]
fn a_grid_of_three_keys_varies_the_first_slowest() {
    let p = plan("\"queue/scheduler\" = [\"none\", \"bfq\"]\n\"vm.dirty_ratio\" = [10, 20, 40]\nseed = [1, 2]\n");
    assert_eq!(p.len(), 12);
    assert_eq!(p.keys(), ["queue/scheduler", "vm.dirty_ratio", "seed"]);
    let v = p.values(0, 12);
    assert_eq!(v[0], ["none", "10", "1"]);
    assert_eq!(v[1], ["none", "10", "2"]);
    assert_eq!(v[2], ["none", "20", "1"]);
    assert_eq!(v[11], ["bfq", "40", "2"]);
    let s = p.point(11).unwrap().scenario;
    assert_eq!(s.devices[0].queue.scheduler.0, "bfq");
    assert_eq!(s.sysctl.dirty_ratio, 40);
    assert_eq!(s.seed, 2);
}

#[test]
fn random_points_stay_in_their_ranges_and_stand_alone() {
    let sweep = |n: u64, seed: u64| {
        plan(&format!(
            "random = {{ points = {n}, seed = {seed} }}\n\"vm.dirty_bytes\" = {{ min = \"16MiB\", max = \"2GiB\", log = true }}\n\
             \"vm.dirty_expire_centisecs\" = {{ min = 100, max = 6000 }}\n\"queue/scheduler\" = [\"mq-deadline\", \"bfq\", \"kyber\"]\n"
        ))
    };
    let p = sweep(200, 7);
    assert!(p.is_random());
    assert_eq!(p.len(), 200);
    let mut schedulers = std::collections::BTreeSet::new();
    let (mut small, mut large) = (0, 0);
    for i in 0..200 {
        let s = p.point(i).unwrap().scenario;
        let bytes = s.sysctl.dirty_bytes;
        assert!((16 * MIB..=2048 * MIB).contains(&bytes) && bytes % MIB == 0, "point {i}: {bytes}");
        // Log-uniform: as many points below 181 MiB (the geometric middle) as above.
        if bytes < 181 * MIB {
            small += 1
        } else {
            large += 1
        }
        let expire = s.sysctl.dirty_expire_centisecs;
        assert!((100..=6000).contains(&expire), "point {i}: {expire}");
        schedulers.insert(s.devices[0].queue.scheduler.0);
    }
    assert_eq!(schedulers.len(), 3, "every listed value is drawn");
    assert!(
        (70..=130).contains(&small),
        "log-uniform draws: {small} below the middle, {large} above"
    );
    // A point depends on the seed and its index only: a longer sweep begins with the same
    // points; another seed draws others.
    assert_eq!(sweep(20, 7).values(0, 20), p.values(0, 20));
    assert_ne!(sweep(20, 8).values(0, 20), p.values(0, 20));
}

#[test]
fn a_list_of_points_sets_each_point_keys_that_go_together() {
    let p = plan(
        "points = [{ \"vm.dirty_bytes\" = \"64MiB\", \"queue/scheduler\" = \"bfq\" }, { \"machine/memory\" = \"1GiB\", \"policy/page_wake\" = \"filtered\" },\n\
         { duration = \"2s\", \"task/copy/count\" = 3, \"bdi/max_ratio\" = 50 }]\n",
    );
    assert_eq!(p.len(), 3);
    let s: Vec<_> = (0..3).map(|i| p.point(i).unwrap().scenario).collect();
    assert_eq!((s[0].sysctl.dirty_bytes, s[0].devices[0].queue.scheduler.0), (64 * MIB, "bfq"));
    assert_eq!(s[1].machine.memory, 1 << 30);
    assert_eq!(s[1].sysctl.dirty_bytes, 0, "the first point's sysctl does not leak into the second");
    assert_eq!(s[2].duration, 2_000_000_000);
    assert_eq!(s[2].tasks.iter().map(|t| t.count).sum::<u32>(), 3);
    assert_eq!(s[2].devices[0].bdi.max_ratio_ppm, 500_000);
    assert_eq!(p.values(0, 1)[0][0], "vm.dirty_bytes=64MiB queue/scheduler=bfq");
}

#[test]
fn a_bad_point_is_named_by_its_index_and_values() {
    let e = error("duration = [\"10s\", \"2s\"]\n\"task/copy/start\" = [\"1s\", \"5s\"]\n");
    assert!(e.contains("at the sweep's point 3: duration=2s, task/copy/start=5s"), "{e}");
    // A large sweep is checked value by value: each range's ends.
    let e = error("random = 100000\n\"vm.dirty_ratio\" = { min = 10, max = 150 }\n");
    assert!(e.contains("vm.dirty_ratio=150"), "{e}");
}

#[test]
fn ranges_and_sizes_are_refused_with_a_hint() {
    let cases = [
        ("\"vm.dirty_ratio\" = { min = 10, max = 40 }\n", "needs `steps`"),
        ("\"vm.dirty_ratio\" = { min = 40, max = 10, steps = 3 }\n", "`max` is below `min`"),
        (
            "\"vm.dirty_bytes\" = { min = 0, max = \"1GiB\", steps = 3, log = true }\n",
            "one kind",
        ),
        ("\"vm.dirty_ratio\" = { min = 0, max = 10, steps = 3, log = true }\n", "above 0"),
        (
            "\"vm.dirty_ratio\" = { min = 1, max = 10, step = 3 }\n",
            "unknown key `step` of a sweep range",
        ),
        ("random = { seed = 3 }\n\"vm.dirty_ratio\" = [10]\n", "number of points"),
        ("\"vm.dirty_ratio\" = 10\n", "expected an array of values or a range"),
        ("name = [\"a\", \"b\"]\n", "is not a key a sweep can vary"),
    ];
    for (sweep, want) in cases {
        let e = error(sweep);
        assert!(e.contains(want) && e.contains("hint:"), "{sweep}: {e}");
    }
    let many = "\"vm.dirty_ratio\" = { min = 1, max = 100, steps = 1000000 }\n\"seed\" = { min = 1, max = 1000, steps = 1000 }\n";
    let e = error(many);
    assert!(e.contains(&format!("more than {SWEEP_MAX_POINTS}")), "{e}");
    // More points than a u64 counts: said so, not as 18446744073709551615 points.
    let range = "{ min = 1, max = 1000000, steps = 1000000 }";
    let huge: String = ["seed", "vm.dirty_ratio", "hz", "duration"]
        .iter()
        .map(|k| format!("\"{k}\" = {range}\n"))
        .collect();
    let e = error(&huge);
    assert!(
        e.contains("more points than a 64-bit count holds") && e.contains("1000000 × 1000000") && e.contains(&SWEEP_MAX_POINTS.to_string()),
        "{e}"
    );
    assert!(!e.contains(&u64::MAX.to_string()), "{e}");
}

/// A range of durations takes whole milliseconds (whole microseconds below 1 ms), written as
/// durations; a bound that is neither a size nor a duration, or bounds of two kinds, are
/// refused with the syntax.
#[test]
fn a_range_of_durations_takes_durations() {
    let p = plan("duration = { min = \"1s\", max = \"4s\", steps = 4 }\n");
    let got: Vec<u64> = (0..4).map(|i| p.point(i).unwrap().scenario.duration).collect();
    assert_eq!(got, [1, 2, 3, 4].map(|s| s * 1_000_000_000));
    assert_eq!(p.values(0, 2), vec![vec!["1s".to_string()], vec!["2s".to_string()]]);
    let p = plan("\"task/copy/start\" = { min = \"100us\", max = \"2500ms\", steps = 3, log = true }\n");
    let starts: Vec<u64> = (0..3).map(|i| p.point(i).unwrap().scenario.tasks[0].start).collect();
    assert_eq!(starts, [100_000, 15_811_000, 2_500_000_000]);
    let p = plan("random = { points = 50, seed = 1 }\nduration = { min = \"1s\", max = \"1min\" }\n");
    for i in 0..50 {
        let d = p.point(i).unwrap().scenario.duration;
        assert!(d.is_multiple_of(1_000_000) && (1_000_000_000..=60_000_000_000).contains(&d), "{d}");
    }
    for (sweep, want) in [
        ("duration = { min = \"1s\", max = \"1GiB\", steps = 2 }\n", "both durations"),
        (
            "duration = { min = \"1s\", max = \"ten\", steps = 2 }\n",
            "`ten` is neither a size nor a duration",
        ),
    ] {
        let e = error(sweep);
        assert!(e.contains(want) && e.contains("hint:"), "{sweep}: {e}");
    }
}

/// A sweep of a hundred thousand points is only a description until it runs: reading and
/// checking it builds a handful of points, not all of them.
#[test]
fn a_sweep_of_a_hundred_thousand_points_is_expressible() {
    let p = plan("random = { points = 100000, seed = 3 }\n\"vm.dirty_bytes\" = { min = \"16MiB\", max = \"2GiB\", log = true }\n\"queue/nr_requests\" = { min = 4, max = 1024 }\n");
    assert_eq!(p.len(), 100_000);
    let last = p.point(99_999).unwrap();
    assert_eq!(last.index, 99_999);
    assert_eq!(p.values(99_999, 100_000)[0], last.values);
}

/// `without` runs a point without a task group (or a cgroup's tasks), `""` whole; a group the
/// scenario does not have is refused at its point.
#[test]
fn without_leaves_a_group_out_of_its_points() {
    let p = plan("without = [\"\", \"copy\"]\n");
    assert_eq!(p.len(), 2);
    let counts = |i: u64| p.point(i).unwrap().scenario.tasks.iter().map(|t| t.count).collect::<Vec<_>>();
    assert_eq!(counts(0), vec![1]);
    assert_eq!(counts(1), vec![0]);
    assert_eq!(
        p.point(1).unwrap().scenario.what_if,
        vec!["without copy: its tasks (copy) do not run".to_string()]
    );
    let e = error("without = [\"/nope\"]\n");
    assert!(e.contains("key `without`: /nope: no cgroup with tasks of that name"), "{e}");
}
