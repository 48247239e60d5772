//! A job file for the real fio, written from the parsed jobs rather than copied from the
//! text the user gave: every value is printed from its type (a number, a word of a closed
//! set, a name already checked), and only the options of [`RENDERED`] appear, so nothing a
//! scenario or a sweep holds can add a line, an option or a path to what `wblab measure`
//! hands to fio. Sizes are written in bytes and times in microseconds, so `kb_base` and
//! default units do not matter. Parsing the text back gives the same jobs
//! ([`tests::rendered_jobs_parse_back_to_themselves`]).
//!
//! Where a job's files go and when it starts (`directory`, `filename`, `startdelay`) are the
//! harness's to write: [`section`] leaves them out.

use super::options::Opt;
use wblab_sim::config::{FioBs, FioDist, FioEngine, FioJob, FioSync, IoPrio, IoPrioClass, TaskConfig, READ, WRITE};

/// Every option [`section`] may write.
pub const RENDERED: &[&str] = &[
    "rw",
    "rwmixread",
    "bs",
    "bsrange",
    "bssplit",
    "size",
    "filesize",
    "io_size",
    "nrfiles",
    "numjobs",
    "ioengine",
    "iodepth",
    "iodepth_low",
    "iodepth_batch_complete_min",
    "direct",
    "fsync",
    "fdatasync",
    "sync_file_range",
    "end_fsync",
    "rate",
    "rate_iops",
    "thinktime",
    "thinktime_blocks",
    "runtime",
    "time_based",
    "ramp_time",
    "loops",
    "random_distribution",
    "randseed",
    "norandommap",
    "invalidate",
    "percentile_list",
    "write_lat_log",
    "write_bw_log",
    "write_iops_log",
    "log_avg_msec",
    "log_max_value",
    "log_offset",
    "stonewall",
    "new_group",
    "wait_for",
    "overwrite",
    "fallocate",
    "sync",
    "unlink",
    "thread",
    "group_reporting",
    "random_generator",
    "prioclass",
    "prio",
];

/// Options the user wrote that the parsed job does not hold but real fio should see, each
/// with the closed set its value comes from (`None`: a boolean). Values outside the set
/// cannot occur: the parser refused them.
const CARRIED: &[(&str, Option<&[&str]>)] = &[
    (
        "ioengine",
        Some(&["psync", "sync", "pvsync", "pvsync2", "vsync", "libaio", "io_uring"]),
    ),
    ("fallocate", Some(&["native", "posix", "keep", "1", "truncate", "none", "0"])),
    ("random_generator", Some(&["tausworthe", "tausworthe64", "lfsr"])),
    ("overwrite", None),
    ("unlink", None),
    ("thread", None),
    ("group_reporting", None),
];

/// The option lines of `t`'s job section (`key` or `key=value`), without its `[name]`
/// header and without `directory`, `filename` and `startdelay`. `earlier` are the fio tasks
/// before `t` in the same job file (for `stonewall` and `wait_for`); `first_group` is the
/// scenario index of the file's first job.
pub fn section(t: &TaskConfig, j: &FioJob, earlier: &[&TaskConfig], first_group: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut put = |k: &str, v: String| out.push(if v.is_empty() { k.to_string() } else { format!("{k}={v}") });
    // Order: what fio applies later wins, so dependencies first.
    dependencies(t, j, earlier, first_group, &mut put);
    put("rw", j.rw.name().to_string());
    put("rwmixread", j.rwmixread.to_string());
    block_sizes(&j.bs, &mut put);
    put("filesize", j.file_size.to_string());
    put("nrfiles", j.nrfiles.to_string());
    put("size", (j.file_size * u64::from(j.nrfiles)).to_string());
    put("io_size", j.size.to_string());
    put("numjobs", t.count.to_string());
    // The job's I/O priority (its own prio/prioclass, or the task's ionice): fio sets it on
    // the job's threads and I/Os.
    if t.ioprio != IoPrio::default() {
        let class = match t.ioprio.class {
            IoPrioClass::Rt => 1,
            IoPrioClass::Be => 2,
            IoPrioClass::Idle => 3,
        };
        put("prioclass", class.to_string());
        if t.ioprio.class != IoPrioClass::Idle {
            put("prio", t.ioprio.level.to_string());
        }
    }
    let engine = carried(j, "ioengine").unwrap_or(match j.engine {
        FioEngine::Sync => "psync",
        FioEngine::Libaio => "libaio",
        FioEngine::IoUring => "io_uring",
    });
    put("ioengine", engine.to_string());
    put("iodepth", j.iodepth.to_string());
    put("iodepth_low", j.iodepth_low.to_string());
    put("iodepth_batch_complete_min", j.batch_complete_min.to_string());
    put("direct", u8::from(j.direct).to_string());
    if j.fdatasync {
        put("fdatasync", j.fsync_every.to_string());
    } else if j.fsync_every > 0 {
        put("fsync", j.fsync_every.to_string());
    }
    if let Some(s) = j.sync_file_range {
        let flags: Vec<&str> = [(s.wait_before, "wait_before"), (s.write, "write"), (s.wait_after, "wait_after")]
            .iter()
            .filter(|f| f.0)
            .map(|f| f.1)
            .collect();
        put("sync_file_range", format!("{}:{}", flags.join(","), s.every));
    }
    if j.end_fsync {
        put("end_fsync", "1".into());
    }
    match j.sync {
        FioSync::None => {}
        FioSync::Dsync => put("sync", "dsync".into()),
        FioSync::Sync => put("sync", "sync".into()),
    }
    if j.rate != [0, 0] {
        put("rate", format!("{},{}", j.rate[READ], j.rate[WRITE]));
    }
    if j.rate_iops != [0, 0] {
        put("rate_iops", format!("{},{}", j.rate_iops[READ], j.rate_iops[WRITE]));
    }
    if j.thinktime > 0 {
        put("thinktime", micros(j.thinktime));
    }
    put("thinktime_blocks", j.thinktime_blocks.to_string());
    if let Some(r) = j.runtime {
        put("runtime", micros(r));
    }
    if j.time_based {
        put("time_based", String::new());
    }
    if j.ramp > 0 {
        put("ramp_time", micros(j.ramp));
    }
    put("loops", j.loops.to_string());
    put(
        "random_distribution",
        match j.dist {
            FioDist::Random => "random".to_string(),
            FioDist::Zipf(t) => format!("zipf:{t}"),
            FioDist::Pareto(h) => format!("pareto:{h}"),
        },
    );
    put("randseed", j.seed.to_string());
    if !j.randommap {
        put("norandommap", String::new());
    }
    put("invalidate", u8::from(j.invalidate).to_string());
    let list: Vec<String> = j.percentiles.iter().map(f64::to_string).collect();
    put("percentile_list", list.join(":"));
    // A log's prefix is a plain name (the parser keeps the last part of a path), so fio
    // writes it in its working directory.
    for (key, prefix) in [
        ("write_lat_log", &j.logs.lat),
        ("write_bw_log", &j.logs.bw),
        ("write_iops_log", &j.logs.iops),
    ] {
        if let Some(p) = prefix {
            put(key, p.clone());
        }
    }
    put("log_avg_msec", j.logs.avg_msec.to_string());
    put("log_max_value", u8::from(j.logs.max_value).to_string());
    put("log_offset", u8::from(j.logs.offset).to_string());
    for &(key, set) in CARRIED.iter().filter(|(k, _)| *k != "ioengine") {
        match set {
            Some(_) => {
                if let Some(v) = carried(j, key) {
                    put(key, v.to_string());
                }
            }
            None => {
                if let Some(b) = carried_bool(j, key) {
                    put(key, u8::from(b).to_string());
                }
            }
        }
    }
    out
}

/// `stonewall`, `new_group` and `wait_for`, as the parser turned them into `after` and
/// `group`.
fn dependencies(t: &TaskConfig, j: &FioJob, earlier: &[&TaskConfig], first_group: usize, put: &mut impl FnMut(&str, String)) {
    let Some(prev) = earlier.last() else { return };
    let prev_group = match &prev.job {
        wblab_sim::config::JobConfig::Fio(p) => p.group,
        _ => j.group,
    };
    // Both start a new group; a stonewall also waits for every job before.
    let grouped = j.group > prev_group;
    let all_before: Vec<usize> = (first_group..first_group + earlier.len()).collect();
    let stonewall = grouped && all_before.iter().all(|i| t.after.contains(i));
    if stonewall {
        put("stonewall", String::new());
    } else if grouped {
        put("new_group", String::new());
    }
    for &i in t.after.iter().filter(|i| !(stonewall && all_before.contains(i))) {
        if let Some(w) = i.checked_sub(first_group).and_then(|k| earlier.get(k)) {
            put("wait_for", w.name.clone());
        }
    }
}

/// Each direction's block sizes, in bytes; a direction left empty keeps what was set.
fn block_sizes(bs: &[FioBs; 2], put: &mut impl FnMut(&str, String)) {
    let one = |b: &FioBs| match b {
        FioBs::Fixed(x) => ("bs", x.to_string()),
        FioBs::Range(lo, hi) => ("bsrange", format!("{lo}-{hi}")),
        FioBs::Split(v) => ("bssplit", v.iter().map(|(b, w)| format!("{b}/{w}")).collect::<Vec<_>>().join(":")),
    };
    let (r, w) = (one(&bs[READ]), one(&bs[WRITE]));
    if r.0 == w.0 {
        put(r.0, format!("{},{}", r.1, w.1));
    } else {
        put(r.0, format!("{},", r.1));
        put(w.0, format!(",{}", w.1));
    }
}

/// A time in whole microseconds (fio's finest unit in job files).
fn micros(ns: u64) -> String {
    format!("{}us", ns.div_ceil(1_000))
}

/// The last value the user gave `key`, if it is one of its closed set.
fn carried<'a>(j: &'a FioJob, key: &str) -> Option<&'a str> {
    let set = CARRIED.iter().find(|(k, _)| *k == key)?.1?;
    let (_, v) = j.options.iter().rev().find(|(k, _)| k == key)?;
    set.iter().copied().find(|s| *s == v.trim())
}

/// The last boolean the user gave `key` (a bare key is true).
fn carried_bool(j: &FioJob, key: &str) -> Option<bool> {
    let (_, v) = j.options.iter().rev().find(|(k, _)| k == key)?;
    super::value::boolean(Some(v.as_str()).filter(|v| !v.is_empty())).ok()
}

/// One rendered line back as an option (for tests and checks of a rendered file).
pub fn parse_line(line: &str, number: usize) -> Opt {
    match line.split_once('=') {
        Some((k, v)) => Opt {
            key: k.to_string(),
            value: Some(v.to_string()),
            line: number,
        },
        None => Opt {
            key: line.to_string(),
            value: None,
            line: number,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::{tasks, Placement};
    use proptest::prelude::*;
    use wblab_sim::config::JobConfig;

    fn at() -> Placement {
        Placement {
            device: 0,
            devices: vec![("sda".into(), 4 << 40)],
            pinned: false,
            stand_in: true,
            first_group: 0,
            start: 0,
            stop: None,
            ioprio: Default::default(),
            cgroup: None,
        }
    }

    /// The job file [`section`] gives for every job of `text`, with the harness's
    /// `filename` for shared files.
    fn rendered(text: &str) -> (Vec<TaskConfig>, String) {
        let ts = tasks(text, "t.fio", &at()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut out = String::new();
        for (i, t) in ts.iter().enumerate() {
            let JobConfig::Fio(j) = &t.job else { unreachable!() };
            out.push_str(&format!("[{}]\n", t.name));
            let earlier: Vec<&TaskConfig> = ts[..i].iter().collect();
            for l in section(t, j, &earlier, 0) {
                assert!(RENDERED.contains(&l.split('=').next().unwrap()), "{l}");
                out.push_str(&l);
                out.push('\n');
            }
            if j.shared_file {
                out.push_str(&format!("filename={}\n", t.file.rsplit('/').next().unwrap()));
            }
        }
        (ts, out)
    }

    fn same_jobs(a: &[TaskConfig], b: &[TaskConfig], text: &str, again: &str) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            let (JobConfig::Fio(jx), JobConfig::Fio(jy)) = (&x.job, &y.job) else {
                unreachable!()
            };
            let strip = |j: &FioJob| FioJob {
                options: Vec::new(),
                global_options: 0,
                ..j.clone()
            };
            assert_eq!(strip(jx), strip(jy), "\n{text}\n---\n{again}");
            assert_eq!(
                (x.count, &x.after, x.start, &x.file, x.ioprio),
                (y.count, &y.after, y.start, &y.file, y.ioprio),
                "\n{text}\n---\n{again}"
            );
        }
    }

    /// A job's lines drawn from the options the model runs, in fio's own spellings.
    fn job_lines() -> impl Strategy<Value = Vec<String>> {
        let opt = prop_oneof![
            prop::sample::select(vec!["read", "write", "randread", "randwrite", "rw", "randrw"]).prop_map(|v| format!("rw={v}")),
            (0u32..=100).prop_map(|v| format!("rwmixread={v}")),
            prop::sample::select(vec!["4k", "8k,64k", "512,4k", "1m", ",16k"]).prop_map(|v| format!("bs={v}")),
            prop::sample::select(vec!["4k-64k", "8k-16k,4k-8k"]).prop_map(|v| format!("bsrange={v}")),
            prop::sample::select(vec!["4k/50:64k/50", "4k/10:8k:16k/30", "4k/50:8k/50,64k/100"]).prop_map(|v| format!("bssplit={v}")),
            prop::sample::select(vec!["psync", "sync", "libaio", "io_uring", "pvsync2"]).prop_map(|v| format!("ioengine={v}")),
            (1u32..128).prop_map(|v| format!("iodepth={v}")),
            (0u32..64).prop_map(|v| format!("iodepth_low={v}")),
            (1u32..8).prop_map(|v| format!("iodepth_batch_complete_min={v}")),
            (0u32..=3).prop_map(|v| format!("prioclass={v}")),
            (0u32..=7).prop_map(|v| format!("prio={v}")),
            any::<bool>().prop_map(|v| format!("direct={}", u8::from(v))),
            (0u32..64).prop_map(|v| format!("fsync={v}")),
            (0u32..64).prop_map(|v| format!("fdatasync={v}")),
            (
                prop::sample::select(vec![
                    "write",
                    "wait_before,write",
                    "write,wait_after",
                    "wait_before,write,wait_after",
                    "wait_after"
                ]),
                1u32..16
            )
                .prop_map(|(f, n)| format!("sync_file_range={f}:{n}")),
            Just("end_fsync=1".to_string()),
            prop::sample::select(vec!["sync=1", "sync=dsync", "sync=0", "sync=sync"]).prop_map(str::to_string),
            prop::sample::select(vec!["1m", "10m,2m", ",500k"]).prop_map(|v| format!("rate={v}")),
            prop::sample::select(vec!["100", "100,200", ",50"]).prop_map(|v| format!("rate_iops={v}")),
            prop::sample::select(vec!["0", "500", "2ms", "1s"]).prop_map(|v| format!("thinktime={v}")),
            (1u32..16).prop_map(|v| format!("thinktime_blocks={v}")),
            prop::sample::select(vec!["10", "2m", "1500ms", "30s"]).prop_map(|v| format!("runtime={v}")),
            prop::sample::select(vec!["0", "1s", "250ms"]).prop_map(|v| format!("ramp_time={v}")),
            (1u32..5).prop_map(|v| format!("loops={v}")),
            prop::sample::select(vec!["random", "zipf:1.2", "zipf:0.8", "pareto:0.9", "pareto:0.25"])
                .prop_map(|v| format!("random_distribution={v}")),
            Just("randrepeat=0".to_string()),
            any::<u32>().prop_map(|v| format!("randseed={v}")),
            Just("norandommap".to_string()),
            any::<bool>().prop_map(|v| format!("invalidate={}", u8::from(v))),
            Just("percentile_list=50:99:99.9".to_string()),
            prop::sample::select(vec!["write_lat_log", "write_bw_log=bw", "write_iops_log=logs/io"]).prop_map(str::to_string),
            (0u64..1000).prop_map(|v| format!("log_avg_msec={v}")),
            prop::sample::select(vec!["log_max_value=1", "log_offset=1"]).prop_map(str::to_string),
            prop::sample::select(vec![
                "overwrite=1",
                "unlink=1",
                "thread",
                "group_reporting",
                "fallocate=keep",
                "fallocate=none",
                "fallocate=truncate",
                "random_generator=lfsr"
            ])
            .prop_map(str::to_string),
            (1u32..4).prop_map(|v| format!("numjobs={v}")),
            prop::sample::select(vec![
                "nrfiles=2",
                "filename=shared.dat",
                "io_size=8m",
                "filesize=2m",
                "kb_base=1000"
            ])
            .prop_map(str::to_string),
            Just("time_based".to_string()),
            Just("stonewall".to_string()),
            Just("new_group".to_string()),
        ];
        prop::collection::vec(opt, 0..10)
    }

    /// Jobs that parse: a size, and the lines that make a job invalid dropped.
    fn job_file(jobs: &[Vec<String>], waits: &[Option<usize>]) -> Option<String> {
        let mut text = String::new();
        for (i, lines) in jobs.iter().enumerate() {
            text.push_str(&format!("[job{i}]\nsize=16m\n"));
            for l in lines {
                text.push_str(l);
                text.push('\n');
            }
            if let Some(w) = waits[i].filter(|&w| w < i) {
                text.push_str(&format!("wait_for=job{w}\n"));
            }
        }
        tasks(&text, "t.fio", &at()).ok().map(|_| text)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]

        #[test]
        fn rendered_jobs_parse_back_to_themselves(
            jobs in prop::collection::vec(job_lines(), 1..4),
            waits in prop::collection::vec(prop::option::of(0usize..3), 4),
        ) {
            if let Some(text) = job_file(&jobs, &waits) {
                let (ts, again) = rendered(&text);
                let back = tasks(&again, "t.fio", &at()).unwrap_or_else(|e| panic!("{e}\n{text}\n---\n{again}"));
                same_jobs(&ts, &back, &text, &again);
            }
        }
    }

    #[test]
    fn values_never_add_lines_or_options() {
        let (_, text) = rendered("[j]\nsize=1m\ndescription=a b c\nname=x\nkb_base=1000\nrw=randread\nrandrepeat=0\n");
        assert!(
            !text.contains("description") && !text.contains("name=") && !text.contains("kb_base"),
            "{text}"
        );
        // randrepeat=0 becomes the seed the model used, so fio and the model draw the same.
        assert!(text.contains("randseed="), "{text}");
    }
}
