//! `wblab measure`'s plan for hostile scenarios: thousands of generated files with newlines,
//! NULs, escapes, `..`, absolute paths, unicode, option-looking words and huge numbers in every
//! place a string or number goes. Each is refused, or planned with nothing outside the
//! scratch directory and the kernel files a measurement may write, and nothing in fio's job
//! file outside the renderer's options. Plans are built for an example root host: nothing on
//! this machine is read or changed.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use std::path::{Path, PathBuf};
use wblab_probe::plan::{Host, Plan};
use wblab_probe::MeasureOptions;
use wblab_testkit::fixtures::toml_quoted;

/// Words a hostile file might put anywhere.
const ATOMS: &[&str] = &[
    "..",
    ".",
    "/",
    "/etc/passwd",
    "../../../../tmp/x",
    "x\nexec_prerun=touch /tmp/pwned",
    "x\rfilename=/etc/shadow",
    "\u{0}",
    "\u{1b}[2J",
    "a\u{202e}b",
    "ünï",
    "$(id)",
    "`id`",
    "${HOME}",
    "-rf",
    "--output=/etc/x",
    "x y",
    "x;y",
    "sda",
    "w",
    "j",
    "data.0",
    "/mnt/sda/f",
    "/mnt/sda/../../x",
    "/mnt/key/x{n}",
    "/mnt/key/../../etc/passwd",
    "/mnt/key/..",
    "/mnt/key/./x",
    "/x/../../y",
    "/mnt/key/{n}/../../../z",
    "1e308",
    "18446744073709551616",
    "-1",
    "nan",
    "4k",
    "64m",
];

/// A value: one or two atoms, sometimes with a long run.
fn value() -> impl Strategy<Value = String> {
    (
        prop::sample::select(ATOMS),
        prop::option::of(prop::sample::select(ATOMS)),
        0usize..4,
    )
        .prop_map(|(a, b, long)| {
            let mut v = a.to_string();
            if let Some(b) = b {
                v.push_str(b);
            }
            if long == 0 {
                v.push_str(&"a".repeat(300));
            }
            v
        })
}

/// Scenario files with hostile values in their slots: devices (loop, as root), tasks of
/// every job the harness runs, a fio job file with a sweep, cgroups and mount options.
fn scenario() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(value(), 12),
        0u8..8,
        prop::collection::vec(prop::bool::weighted(0.8), 8),
    )
        .prop_map(|(v, shape, plain)| {
            // Each slot is hostile or a plain value that keeps the rest of the file valid.
            let s = |i: usize, plain_value: &str| {
                if plain[i % 8] {
                    toml_quoted(plain_value)
                } else {
                    toml_quoted(&v[i])
                }
            };
            let mut t = format!("name = {}\nduration = \"2s\"\n", s(0, "h"));
            t.push_str(&format!(
                "[[device]]\nname = {}\nmodel = \"loop\"\nsize = \"256MiB\"\nfs = \"ext4\"\nmount = {}\n",
                s(1, "key"),
                s(2, "noatime")
            ));
            match shape {
                0 | 1 => t.push_str(&format!(
                    "[[task]]\nname = {}\njob = \"dd\"\nfile = {}\nsize = \"1MiB\"\n",
                    s(3, "w"),
                    s(4, "/mnt/key/w{n}")
                )),
                2 => t.push_str(&format!(
                    "[[task]]\nname = {}\njob = \"cat\"\nfile = {}\nfile_size = \"1MiB\"\n",
                    s(3, "r"),
                    s(4, "/mnt/key/r")
                )),
                3 => t.push_str(&format!(
                    "[[cgroup]]\npath = {}\n\"memory.max\" = \"64MiB\"\n[[task]]\nname = \"w\"\njob = \"dd\"\ncgroup = {}\n",
                    s(5, "/g"),
                    s(5, "/g")
                )),
                _ => {
                    let fio = format!(
                        "[{}]\nrw=randrw\nsize=4m\ndescription={}\nfilename={}\nwrite_lat_log={}\nrandom_distribution={}\n",
                        if plain[0] { "j" } else { &v[6] },
                        v[7],
                        if plain[1] { "data.0" } else { &v[8] },
                        if plain[2] { "lat" } else { &v[9] },
                        if plain[3] { "zipf:1.2" } else { &v[10] },
                    );
                    t.push_str(&format!("[[task]]\nfio = {}\n", toml_quoted(&fio)));
                    if shape > 5 {
                        t.push_str(&format!("[sweep]\n\"fio/j/description\" = [\"a\", {}]\n", s(11, "b")));
                    }
                }
            }
            t
        })
}

/// An independent reading of the plan as printed: every absolute path on an acting line lies
/// under the scratch directory or in the kernel's files a measurement may write.
fn printed_paths_confined(plan: &Plan) -> Vec<String> {
    let scratch = plan.scratch.display().to_string();
    let allowed = [
        "/proc/sys/vm/",
        "/sys/block/loop<N>/queue/",
        "/sys/class/bdi/7:<N>/",
        "/sys/fs/cgroup/blkio/blkio.throttle.",
        "/sys/fs/cgroup/memory/wblab-4242",
        "/sys/fs/cgroup/blkio/user.slice/wblab-4242",
        "/sys/kernel/tracing/instances/wblab-4242",
        "/dev/loop<N>",
        "/dev/zero",
    ];
    let mut bad = Vec::new();
    let text = plan.render();
    let acting = text.lines().take_while(|l| !l.starts_with("fio job file")).filter(|l| {
        let w = l.trim_start().split(' ').next().unwrap_or("");
        ["mkdir", "create", "run", "mount", "write", "append", "start", "thread"].contains(&w)
    });
    for l in acting {
        for word in l.split([' ', '=', '(', ')', ',']).filter(|w| w.starts_with('/')) {
            let ok = word.starts_with(&format!("{scratch}/")) || allowed.iter().any(|a| word.starts_with(a));
            let climbs = Path::new(word).components().any(|c| matches!(c, std::path::Component::ParentDir));
            if !ok || climbs {
                bad.push(format!("{word} in `{l}`"));
            }
        }
    }
    bad
}

fn opts() -> MeasureOptions {
    let mut o = MeasureOptions::new(PathBuf::from("results/x"));
    o.scratch_parent = PathBuf::from("/var/tmp");
    o
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn hostile_scenarios_are_refused_or_planned_inside_the_scratch_directory(text in scenario()) {
        let Ok(sc) = wblab_scenario::parse(&text, "hostile.toml") else { return Ok(()) };
        let Ok(plan) = Plan::build(&sc, &opts(), &Host::example()) else { return Ok(()) };
        let escapes = plan.escapes();
        prop_assert!(escapes.is_empty(), "{:?}\n{}", escapes, text);
        let printed = printed_paths_confined(&plan);
        prop_assert!(printed.is_empty(), "{:?}\n{}", printed, plan.render());
    }
}

/// The generator is not all refusals: plain slots make many files valid, and those are planned.
#[test]
fn the_hostile_generator_reaches_the_planner() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut planned, mut fio) = (0, 0);
    for _ in 0..2000 {
        let text = scenario().new_tree(&mut runner).unwrap().current();
        if let Ok(sc) = wblab_scenario::parse(&text, "hostile.toml") {
            if let Ok(plan) = Plan::build(&sc, &opts(), &Host::example()) {
                planned += 1;
                fio += usize::from(plan.fio.is_some());
            }
        }
    }
    assert!(planned > 400 && fio > 100, "{planned} planned, {fio} with fio jobs");
}

/// The two files that once made root run a command and write outside the scratch directory
/// are now refused before anything is planned.
#[test]
fn the_injections_that_once_ran_as_root_are_refused() {
    for f in [
        "measure-sweep-fio-newline-exec.toml",
        "measure-sweep-fio-newline-file.toml",
        "measure-device-dotdot-leak.toml",
    ] {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenario/tests/repro/t3").join(f);
        let e = wblab_scenario::load(&p).err().unwrap_or_else(|| panic!("{f} accepted"));
        assert!(e.line > 0 && e.key.is_some(), "{e}");
    }
}

/// A plan is what a measurement does: the rendered job file is the renderer's, with the
/// harness's own directory, and each program is one of the harness's.
#[test]
fn a_plan_of_fio_jobs_lists_the_job_file_and_programs() {
    let text = "name = \"p\"\nduration = \"2s\"\n[[device]]\nname = \"key\"\nmodel = \"loop\"\nsize = \"256MiB\"\n\
                [[task]]\nfio = \"[j]\\nrw=write\\nsize=4m\\ndescription=anything at all\\n\"\n\
                [[task]]\nname = \"w\"\njob = \"dd\"\nsize = \"1MiB\"\n";
    let sc = wblab_scenario::parse(text, "p.toml").unwrap();
    let plan = Plan::build(&sc, &opts(), &Host::example()).unwrap();
    assert!(plan.escapes().is_empty(), "{:?}", plan.escapes());
    let (file, job) = plan.fio.as_ref().unwrap();
    assert!(file.starts_with(&plan.scratch));
    assert!(job.contains(&format!("directory={}/mnt/key\n", plan.scratch.display())), "{job}");
    assert!(!job.contains("description"), "{job}");
    let programs: Vec<String> = plan.processes().into_iter().map(|(p, _)| p).collect();
    assert_eq!(programs, ["mkfs.ext4", "dd", "fio"]);
    let shown = plan.render();
    assert!(
        shown.contains("nothing below has been done") && shown.contains("/proc/sys/vm/dirty_ratio"),
        "{shown}"
    );
}
