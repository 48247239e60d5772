//! fio's options, each applied to a job as fio applies it (later lines win), with fio's
//! defaults; the ones the model does not run are refused by name.

use super::catalogue::{self, Class};
use super::value::{boolean, int, per_dir, size, time};
use crate::suggest;
use wblab_sim::config::{
    FioBs, FioDist, FioEngine, FioJob, FioLayout, FioLogs, FioRw, FioSync, IoPrio, IoPrioClass, SyncFileRange, FIO_PERCENTILES, READ, WRITE,
};
use wblab_sim::Ns;

/// One `key[=value]` line.
#[derive(Clone, Debug)]
pub struct Opt {
    pub key: String,
    pub value: Option<String>,
    pub line: usize,
}

/// A message and a hint.
pub type Fail = (String, String);

/// A job's mistake found once all its options are read: at an option's line, or at the job's
/// section (`line: None`) when it spans options.
#[derive(Clone, Debug)]
pub struct Slip {
    pub line: Option<usize>,
    pub key: Option<String>,
    pub fail: Fail,
}

/// What a job section gives besides the [`FioJob`] itself.
pub struct Built {
    pub job: FioJob,
    pub numjobs: u32,
    pub startdelay: Ns,
    pub stonewall: bool,
    pub new_group: bool,
    pub wait_for: Option<String>,
    pub filename: Option<String>,
    /// `prio`/`prioclass`: the job's I/O priority, over the task's `ionice`.
    pub ioprio: Option<IoPrio>,
}

/// A job being built from its options.
pub struct JobBuilder {
    job: FioJob,
    kb_base: u64,
    numjobs: u32,
    startdelay: Ns,
    stonewall: bool,
    new_group: bool,
    wait_for: Option<String>,
    filename: Option<String>,
    size: Option<u64>,
    filesize: Option<u64>,
    io_size: Option<u64>,
    randrepeat: bool,
    randseed: Option<u64>,
    /// Size options as written (key, value, line): read at the end, in the job's final
    /// `kb_base` (which may come after them).
    sizes: Vec<(String, String, usize)>,
    /// `overwrite=` and `fallocate=`, which decide [`FioJob::layout`] at the end.
    overwrite: bool,
    fallocate: FioLayout,
    /// `directory=`, which with `filename=` says which device the job runs on.
    directory: Option<String>,
    /// `prioclass=` and `prio=`, read together at the end.
    prioclass: Option<u64>,
    prio: Option<u64>,
    /// `iodepth_batch_complete_max=`, checked against the minimum once both are read.
    batch_complete_max: Option<u64>,
    /// The size of the block device the job's `filename` names: its files' size when the
    /// job gives none.
    whole_device: Option<u64>,
}

/// fio's seed when `randrepeat` is on and no `randseed` is given.
const FIO_RAND_SEED: u64 = 0x89;

impl JobBuilder {
    pub fn new(name: &str, index: u32) -> Self {
        JobBuilder {
            job: FioJob {
                name: name.to_string(),
                index,
                group: 0,
                rw: FioRw::Read,
                rwmixread: 50,
                bs: [FioBs::Fixed(4096), FioBs::Fixed(4096)],
                size: 0,
                file_size: 0,
                nrfiles: 1,
                shared_file: false,
                engine: FioEngine::Sync,
                iodepth: 1,
                iodepth_low: u32::MAX,
                batch_complete_min: 1,
                direct: false,
                fsync_every: 0,
                fdatasync: false,
                sync_file_range: None,
                sync: FioSync::None,
                layout: FioLayout::Preallocated,
                end_fsync: false,
                rate: [0; 2],
                rate_iops: [0; 2],
                thinktime: 0,
                thinktime_blocks: 1,
                runtime: None,
                time_based: false,
                ramp: 0,
                loops: 1,
                dist: FioDist::Random,
                seed: FIO_RAND_SEED,
                randommap: true,
                invalidate: true,
                logs: FioLogs::default(),
                percentiles: FIO_PERCENTILES.to_vec(),
                options: Vec::new(),
                global_options: 0,
            },
            kb_base: 1024,
            numjobs: 1,
            startdelay: 0,
            stonewall: false,
            new_group: false,
            wait_for: None,
            filename: None,
            size: None,
            filesize: None,
            io_size: None,
            randrepeat: true,
            randseed: None,
            sizes: Vec::new(),
            overwrite: false,
            fallocate: FioLayout::Preallocated,
            directory: None,
            batch_complete_max: None,
            prioclass: None,
            prio: None,
            whole_device: None,
        }
    }

    /// `filename=` and `directory=` as written: where the job's files are.
    pub fn target(&self) -> (Option<&str>, Option<&str>) {
        (self.filename.as_deref(), self.directory.as_deref())
    }

    /// The job's file is a whole block device of `bytes` (`filename=/dev/sdb`).
    pub fn on_block_device(&mut self, bytes: u64) {
        self.whole_device = Some(bytes);
    }

    /// Apply one option line.
    pub fn apply(&mut self, o: &Opt) -> Result<(), Fail> {
        let key = o.key.as_str();
        let v = o.value.as_deref();
        let need = || -> Result<&str, Fail> {
            v.filter(|s| !s.is_empty())
                .ok_or_else(|| (format!("`{key}` needs a value"), format!("write {key}=<value>")))
        };
        let hintless = |m: String| (m, format!("see `{key}` in fio's HOWTO"));
        let j = &mut self.job;
        match key {
            "name" | "group_reporting" => {}
            // Read by the outputs from the job's options, as fio reads them.
            "clat_percentiles" | "lat_percentiles" | "slat_percentiles" => {
                boolean(v).map_err(hintless)?;
            }
            "random_generator" => match need()? {
                "tausworthe" | "tausworthe64" | "lfsr" => {}
                x => return Err(hintless(format!("unknown random_generator `{x}`"))),
            },
            "overwrite" => self.overwrite = boolean(v).map_err(hintless)?,
            "fallocate" => {
                self.fallocate = match need()? {
                    "native" | "posix" | "keep" | "1" => FioLayout::Preallocated,
                    "none" | "0" | "truncate" => FioLayout::Sparse,
                    x => return Err(hintless(format!("unknown fallocate mode `{x}`"))),
                }
            }
            "sync" => {
                j.sync = match need()? {
                    "0" | "none" => FioSync::None,
                    "1" | "sync" => FioSync::Sync,
                    "dsync" => FioSync::Dsync,
                    x => {
                        return Err((
                            format!("unknown sync mode `{x}`"),
                            "sync=1 (or sync) opens the file O_SYNC, sync=dsync O_DSYNC, sync=0 neither".into(),
                        ))
                    }
                }
            }
            "rw" | "readwrite" => {
                let x = need()?;
                if x.contains(':') {
                    return Err((
                        format!("`{x}`: an offset modifier (rw=...:N) is not modelled"),
                        "drop the :N suffix".into(),
                    ));
                }
                j.rw = match x {
                    "read" => FioRw::Read,
                    "write" => FioRw::Write,
                    "randread" => FioRw::RandRead,
                    "randwrite" => FioRw::RandWrite,
                    "rw" | "readwrite" => FioRw::ReadWrite,
                    "randrw" => FioRw::RandRw,
                    "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
                        return Err((
                            "trim workloads are not modelled".into(),
                            "use read, write, randread, randwrite, rw or randrw".into(),
                        ))
                    }
                    _ => {
                        const RW: &[&str] = &["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw"];
                        let all = "one of read, write, randread, randwrite, rw (readwrite), randrw";
                        return Err((
                            format!("unknown rw `{x}`"),
                            suggest::did_you_mean(x, RW).map_or_else(|| all.to_string(), |d| format!("{d} ({all})")),
                        ));
                    }
                };
            }
            "rwmixread" => j.rwmixread = int(need()?, 0, 100).map_err(hintless)? as u32,
            "rwmixwrite" => j.rwmixread = 100 - int(need()?, 0, 100).map_err(hintless)? as u32,
            "bs" | "blocksize" | "bsrange" | "blocksize_range" | "bssplit" | "size" | "filesize" | "io_size" | "io_limit" | "rate"
            | "rate_iops" => {
                self.sizes.push((key.to_string(), need()?.to_string(), o.line));
            }
            "kb_base" => {
                self.kb_base = match need()? {
                    "1024" => 1024,
                    "1000" => 1000,
                    x => {
                        return Err((
                            format!("kb_base `{x}` is neither 1024 nor 1000"),
                            "fio takes 1024 (default) or 1000".into(),
                        ))
                    }
                }
            }
            "nrfiles" | "nr_files" => j.nrfiles = int(need()?, 1, 4096).map_err(hintless)? as u32,
            "filename" => {
                let f = need()?;
                if f.contains(':') {
                    return Err((
                        "several files in filename (a:b) are not modelled".into(),
                        "name one file, or use nrfiles for several".into(),
                    ));
                }
                // The model puts the file in the job's device directory by its last part.
                let base = f.rsplit('/').next().unwrap_or(f);
                if let Some((m, h)) = crate::names::name_problem(base, "file") {
                    return Err((format!("filename `{f}`: {m}"), h));
                }
                self.filename = Some(f.to_string());
            }
            "directory" => {
                let d = need()?;
                if d.contains(':') {
                    return Err(("several directories (a:b) are not modelled".into(), "name one directory".into()));
                }
                self.directory = Some(d.to_string());
            }
            "numjobs" => self.numjobs = int(need()?, 1, crate::limits::MAX_TASKS).map_err(hintless)? as u32,
            "ioengine" => {
                j.engine = match need()? {
                    "psync" | "sync" | "pvsync" | "pvsync2" | "vsync" => FioEngine::Sync,
                    "libaio" => FioEngine::Libaio,
                    "io_uring" => FioEngine::IoUring,
                    x => {
                        const ENGINES: &[&str] = &["psync", "sync", "pvsync", "pvsync2", "vsync", "libaio", "io_uring"];
                        let modelled = format!("modelled: {}", ENGINES.join(", "));
                        return Err((
                            format!("ioengine `{x}` is not modelled"),
                            match suggest::did_you_mean(x, ENGINES) {
                                Some(d) => format!("{d} ({modelled})"),
                                None => modelled,
                            },
                        ));
                    }
                }
            }
            "iodepth" => j.iodepth = int(need()?, 1, 65536).map_err(hintless)? as u32,
            "iodepth_low" => j.iodepth_low = int(need()?, 0, 65536).map_err(hintless)? as u32,
            "iodepth_batch" | "iodepth_batch_submit" => {
                // fio reads 0 as a batch of iodepth.
                let n = int(need()?, 0, 65536).map_err(hintless)?;
                if n != 1 {
                    return Err((
                        format!("{key}={n}: batched submission is not modelled"),
                        "the model submits one I/O per io_submit/io_uring_enter; drop the option or set it to 1".into(),
                    ));
                }
            }
            "iodepth_batch_complete_min" | "iodepth_batch_complete" => {
                let n = int(need()?, 0, 65536).map_err(hintless)?;
                if n == 0 {
                    return Err((
                        format!("{key}=0: reaping completions without waiting is not modelled"),
                        "the model's jobs wait for at least one completion; set it to 1 or more".into(),
                    ));
                }
                j.batch_complete_min = n as u32;
            }
            // ioprio_set(2)'s classes: 0 none (best effort), 1 realtime, 2 best effort, 3 idle.
            "prioclass" => self.prioclass = Some(int(need()?, 0, 3).map_err(hintless)?),
            "prio" => self.prio = Some(int(need()?, 0, 7).map_err(hintless)?),
            "iodepth_batch_complete_max" => self.batch_complete_max = Some(int(need()?, 0, 65536).map_err(hintless)?),
            // O_ATOMIC is a flag bit Linux's open(2) does not know: plain O_DIRECT.
            "direct" | "atomic" => j.direct = boolean(v).map_err(hintless)?,
            "buffered" => j.direct = !boolean(v).map_err(hintless)?,
            "fsync" => j.fsync_every = int(need()?, 0, u32::MAX as u64).map_err(hintless)? as u32,
            "fdatasync" => {
                j.fsync_every = int(need()?, 0, u32::MAX as u64).map_err(hintless)? as u32;
                j.fdatasync = true;
            }
            "sync_file_range" => j.sync_file_range = Some(sync_file_range(need()?)?),
            "end_fsync" | "fsync_on_close" => j.end_fsync |= boolean(v).map_err(hintless)?,
            "rate_process" => match need()? {
                "linear" => {}
                x => return Err((format!("rate_process={x} is not modelled"), "the model paces I/O linearly".into())),
            },
            "thinktime" => j.thinktime = run_time(need()?, 1_000).map_err(hintless)?,
            "thinktime_blocks" => j.thinktime_blocks = int(need()?, 1, u32::MAX as u64).map_err(hintless)? as u32,
            "thinktime_spin" => {
                if time(need()?, 1_000).map_err(hintless)? > 0 {
                    return Err(("thinktime_spin is not modelled".into(), "use thinktime (a sleep) instead".into()));
                }
            }
            "runtime" | "timeout" => j.runtime = Some(run_time(need()?, 1_000_000_000).map_err(hintless)?).filter(|&r| r > 0),
            "time_based" => j.time_based = boolean(v).map_err(hintless)?,
            "startdelay" => {
                if need()?.contains('-') {
                    return Err(("a startdelay range is not modelled".into(), "give one time".into()));
                }
                self.startdelay = run_time(need()?, 1_000_000_000).map_err(hintless)?;
            }
            "ramp_time" => j.ramp = run_time(need()?, 1_000_000_000).map_err(hintless)?,
            "stonewall" | "wait_for_previous" => self.stonewall = boolean(v).map_err(hintless)?,
            "new_group" => self.new_group = boolean(v).map_err(hintless)?,
            "wait_for" => self.wait_for = Some(need()?.to_string()),
            "loops" => j.loops = int(need()?, 1, 1 << 30).map_err(hintless)? as u32,
            "random_distribution" => j.dist = distribution(need()?)?,
            "randrepeat" => self.randrepeat = boolean(v).map_err(hintless)?,
            "randseed" => self.randseed = Some(int(need()?, 0, u64::MAX).map_err(hintless)?),
            "norandommap" => j.randommap = !boolean(v).map_err(hintless)?,
            "invalidate" => j.invalidate = boolean(v).map_err(hintless)?,
            "percentile_list" => {
                let mut list = Vec::new();
                for p in need()?.split(':') {
                    let x: f64 = p.trim().parse().map_err(|_| hintless(format!("`{p}` is not a percentile")))?;
                    if !(0.0..=100.0).contains(&x) {
                        return Err(hintless(format!("{x} is not within 0..=100")));
                    }
                    list.push(x);
                }
                j.percentiles = list;
            }
            "write_lat_log" => j.logs.lat = Some(log_prefix(v, &j.name)?),
            "write_bw_log" => j.logs.bw = Some(log_prefix(v, &j.name)?),
            "write_iops_log" => j.logs.iops = Some(log_prefix(v, &j.name)?),
            "log_avg_msec" => j.logs.avg_msec = int(need()?, 0, 1 << 40).map_err(hintless)?,
            "log_max_value" => j.logs.max_value = boolean(v).map_err(hintless)?,
            "log_offset" => j.logs.offset = boolean(v).map_err(hintless)?,
            "per_job_logs" => {
                if !boolean(v).map_err(hintless)? {
                    return Err(("per_job_logs=0 is not modelled".into(), "each clone writes its own log".into()));
                }
            }
            _ => unmodelled(key, v)?,
        }
        self.job.options.push((key.to_string(), v.unwrap_or("").to_string()));
        Ok(())
    }

    /// The job, once every option is applied: sizes in the final `kb_base`, checks that span
    /// options.
    pub fn finish(mut self) -> Result<Built, Vec<Slip>> {
        let mut slips: Vec<Slip> = Vec::new();
        let kb = self.kb_base;
        for (key, v, line) in std::mem::take(&mut self.sizes) {
            let bad = |m: String| (m, format!("sizes as fio takes them: 4k, 1m, 64KiB (kb_base={kb})"));
            if let Err(fail) = self.read_size(&key, &v, bad) {
                slips.push(Slip {
                    line: Some(line),
                    key: Some(key.clone()),
                    fail,
                });
            }
        }
        if !slips.is_empty() {
            return Err(slips);
        }
        self.check().map_err(|fail| {
            vec![Slip {
                line: None,
                key: None,
                fail,
            }]
        })
    }

    /// One size option's value, in the job's `kb_base`.
    fn read_size(&mut self, key: &str, v: &str, bad: impl Fn(String) -> Fail) -> Result<(), Fail> {
        let kb = self.kb_base;
        let sz = |s: &str| size(s, kb);
        match key {
            "bs" | "blocksize" => {
                let [r, w] = per_dir(v, sz).map_err(&bad)?;
                for (d, b) in [(READ, r), (WRITE, w)] {
                    if let Some(b) = b {
                        self.job.bs[d] = FioBs::Fixed(b);
                    }
                }
            }
            "bsrange" | "blocksize_range" => {
                let [r, w] = per_dir(v, |s| {
                    let (lo, hi) = s.split_once('-').ok_or_else(|| format!("`{s}` is not a range lo-hi"))?;
                    let (lo, hi) = (sz(lo)?, sz(hi)?);
                    if lo == 0 || hi < lo {
                        return Err(format!("`{s}` is not a range of sizes lo-hi with lo > 0"));
                    }
                    Ok(FioBs::Range(lo, hi))
                })
                .map_err(&bad)?;
                for (d, b) in [(READ, r), (WRITE, w)] {
                    if let Some(b) = b {
                        self.job.bs[d] = b;
                    }
                }
            }
            "bssplit" => {
                let [r, w] = per_dir(v, |s| bssplit(s, kb)).map_err(&bad)?;
                for (d, b) in [(READ, r), (WRITE, w)] {
                    if let Some(b) = b {
                        self.job.bs[d] = b;
                    }
                }
            }
            "size" => {
                if v.trim_end().ends_with('%') {
                    return Err(("size as a percentage is not modelled".into(), "give a size, e.g. size=1g".into()));
                }
                self.size = Some(sz(v).map_err(&bad)?);
            }
            "filesize" => {
                if v.contains('-') {
                    return Err(("a filesize range is not modelled".into(), "give one size".into()));
                }
                self.filesize = Some(sz(v).map_err(&bad)?);
            }
            "io_size" | "io_limit" => self.io_size = Some(sz(v).map_err(&bad)?),
            "rate" => {
                let [r, w] = per_dir(v, sz).map_err(&bad)?;
                self.job.rate = [r.unwrap_or(0), w.unwrap_or(0)];
            }
            _ => {
                let [r, w] = per_dir(v, |s| int(s, 0, u64::MAX)).map_err(&bad)?;
                self.job.rate_iops = [r.unwrap_or(0), w.unwrap_or(0)];
            }
        }
        Ok(())
    }

    /// The checks that span options, once every size is read.
    fn check(mut self) -> Result<Built, Fail> {
        let j = &mut self.job;
        for d in [READ, WRITE] {
            if j.bs[d].min() == 0 {
                return Err(("a block size of 0".into(), "bs=4k".into()));
            }
            // Every size the job may issue: a range's are multiples of its minimum.
            let sizes: Vec<u64> = match &j.bs[d] {
                FioBs::Split(v) => v.iter().map(|&(b, _)| b).collect(),
                other => vec![other.min()],
            };
            if let Some(b) = sizes.into_iter().find(|b| b % 512 != 0).filter(|_| j.direct && j.does(d)) {
                return Err((
                    format!("O_DIRECT needs block sizes in multiples of 512, got {b}"),
                    "the kernel fails misaligned O_DIRECT I/O with EINVAL".into(),
                ));
            }
        }
        let nr = j.nrfiles as u64;
        j.shared_file = self.filename.is_some();
        if j.shared_file && nr > 1 {
            return Err((
                "filename and nrfiles > 1".into(),
                "drop nrfiles: filename names the one file".into(),
            ));
        }
        let (file_size, budget) = match (self.filesize, self.size) {
            (Some(f), s) => (f, self.io_size.or(s).unwrap_or(f * nr)),
            (None, Some(s)) => (s / nr, self.io_size.unwrap_or(s)),
            // A job on a block device (`filename=/dev/sdb`) spans the device, as in fio.
            (None, None) if self.whole_device.is_some() => {
                let whole = self.whole_device.unwrap_or_default();
                (whole, self.io_size.unwrap_or(whole))
            }
            (None, None) => {
                return Err((
                    "no size: fio needs to know how large the files are".into(),
                    "add size=1g (or filesize=)".into(),
                ))
            }
        };
        let biggest = j.bs[READ].max().max(j.bs[WRITE].max());
        if file_size < biggest {
            return Err((
                format!("the files ({file_size} bytes each) are smaller than a block ({biggest} bytes)"),
                "make size (or filesize) at least bs".into(),
            ));
        }
        j.file_size = file_size;
        j.size = budget.max(1);
        // fio writes a file out before the job (its "layout") when the job reads it or when
        // asked to (`overwrite`); otherwise it only reserves its blocks as `fallocate` says.
        j.layout = if self.overwrite || j.rw.reads() {
            FioLayout::Written
        } else {
            self.fallocate
        };
        if j.sync != FioSync::None && j.engine != FioEngine::Sync {
            return Err((
                "sync= with an asynchronous engine is not modelled".into(),
                "O_SYNC/O_DSYNC writes are modelled for the synchronous engines: ioengine=psync (or sync, pvsync, pvsync2)".into(),
            ));
        }
        // fio's maximum defaults to the minimum: one wait per batch, as the model reaps.
        if let Some(max) = self.batch_complete_max.filter(|&m| m > u64::from(j.batch_complete_min)) {
            return Err((
                format!(
                    "iodepth_batch_complete_max={max} above iodepth_batch_complete_min={}: reaping more than the minimum per call is not modelled",
                    j.batch_complete_min
                ),
                "drop iodepth_batch_complete_max (fio's default is the minimum)".into(),
            ));
        }
        j.iodepth_low = j.iodepth_low.min(j.iodepth);
        if j.engine == FioEngine::Sync {
            j.iodepth = 1;
            j.iodepth_low = 1;
        }
        if j.time_based && j.runtime.is_none() {
            return Err(("time_based without runtime".into(), "add runtime=60s".into()));
        }
        // As fio: a level alone is best effort's; the idle class has no level.
        let ioprio = match (self.prioclass, self.prio) {
            (None, None) => None,
            (class, level) => Some(match class.unwrap_or(2) {
                1 => IoPrio {
                    class: IoPrioClass::Rt,
                    level: level.unwrap_or(4) as u8,
                },
                3 => IoPrio {
                    class: IoPrioClass::Idle,
                    level: 4,
                },
                _ => IoPrio {
                    class: IoPrioClass::Be,
                    level: level.unwrap_or(4) as u8,
                },
            }),
        };
        j.seed = match (self.randseed, self.randrepeat) {
            (Some(s), _) => s,
            (None, true) => FIO_RAND_SEED,
            // A seed of its own per job, still reproducible under the scenario's seed.
            (None, false) => 0x5eed ^ (j.index as u64) << 32,
        };
        Ok(Built {
            job: self.job,
            numjobs: self.numjobs,
            startdelay: self.startdelay,
            stonewall: self.stonewall,
            new_group: self.new_group,
            wait_for: self.wait_for,
            filename: self.filename,
            ioprio,
        })
    }
}

/// An option without an arm of its own: taken when [`catalogue`] accepts it or it is written
/// at fio's default, refused with the catalogue's reason otherwise, unknown when fio 3.33 has
/// no such option.
fn unmodelled(key: &str, v: Option<&str>) -> Result<(), Fail> {
    let Some(o) = catalogue::find(key) else {
        let names = catalogue::names();
        let hint =
            suggest::did_you_mean(key, &names).unwrap_or_else(|| "fio 3.33 has no option of that name; docs/fio.md lists them all".into());
        return Err((format!("unknown fio option `{key}`"), hint));
    };
    if o.class == Class::Accepted || catalogue::is_default(o, v) {
        return Ok(());
    }
    let why = if o.reason.is_empty() {
        String::new()
    } else {
        format!(": {}", o.reason)
    };
    let default = if o.default.is_empty() {
        String::new()
    } else {
        format!(" (fio's default, {}={}, is taken)", o.name, o.default)
    };
    Err((
        format!("fio option `{key}` is not modelled{why}"),
        format!("wblab refuses the options it does not run rather than ignore them{default}; docs/fio.md lists every option"),
    ))
}

/// A time the run waits or lasts: at most a run's longest [`crate::limits::MAX_DURATION`],
/// so that no sum of them wraps.
fn run_time(text: &str, default_ns: Ns) -> Result<Ns, String> {
    let t = time(text, default_ns)?;
    if t > crate::limits::MAX_DURATION {
        return Err(format!(
            "`{}` is longer than the {} h a run may last",
            text.trim(),
            crate::limits::MAX_DURATION / 3_600_000_000_000
        ));
    }
    Ok(t)
}

/// A log's prefix (`write_lat_log=name`, the job's name when bare): the log files go to
/// the results directory named after its last part, which must be a plain name; that part
/// is what is kept.
fn log_prefix(v: Option<&str>, job: &str) -> Result<String, Fail> {
    let Some(p) = v.filter(|p| !p.is_empty()) else {
        return Ok(job.to_string());
    };
    let base = p.rsplit('/').next().unwrap_or(p);
    match crate::names::name_problem(base, "log") {
        Some((m, h)) => Err((format!("log prefix `{p}`: {m}"), h)),
        None => Ok(base.to_string()),
    }
}

/// `bssplit=4k/10:64k/50:32k/40`; blank weights share what is left evenly.
fn bssplit(s: &str, kb: u64) -> Result<FioBs, String> {
    let mut parts: Vec<(u64, Option<u32>)> = Vec::new();
    for p in s.split(':') {
        let (b, w) = match p.split_once('/') {
            Some((b, w)) => (b, w.trim()),
            None => (p, ""),
        };
        let b = size(b, kb)?;
        let w = if w.is_empty() {
            None
        } else {
            Some(w.parse::<u32>().map_err(|_| format!("`{w}` is not a percentage"))?)
        };
        parts.push((b, w));
    }
    let given: u32 = parts.iter().filter_map(|(_, w)| *w).sum();
    if given > 100 {
        return Err(format!("the percentages add up to {given}, more than 100"));
    }
    let blanks = parts.iter().filter(|(_, w)| w.is_none()).count() as u32;
    let mut left = 100 - given;
    let mut out = Vec::new();
    let mut blanks_left = blanks;
    for (b, w) in parts {
        let w = match w {
            Some(w) => w,
            None => {
                let share = left / blanks_left;
                blanks_left -= 1;
                left -= share;
                share
            }
        };
        out.push((b, w));
    }
    let total: u32 = out.iter().map(|(_, w)| *w).sum();
    if total != 100 {
        return Err(format!("the percentages add up to {total}, not 100"));
    }
    Ok(FioBs::Split(out))
}

/// `random_distribution=random|zipf:θ|pareto:h`.
fn distribution(s: &str) -> Result<FioDist, Fail> {
    let hint = || "random, zipf:<theta> (e.g. zipf:1.2) or pareto:<h> (e.g. pareto:0.9)".to_string();
    let (name, arg) = match s.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (s, None),
    };
    let num = |a: Option<&str>| -> Result<f64, Fail> {
        let a = a.ok_or_else(|| (format!("`{name}` needs a parameter"), hint()))?;
        if a.contains(':') {
            return Err(("a distribution centre (second parameter) is not modelled".into(), hint()));
        }
        match a.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            Ok(_) => Err((format!("`{a}` is not a finite number"), hint())),
            Err(_) => Err((format!("`{a}` is not a number"), hint())),
        }
    };
    match name {
        "random" => Ok(FioDist::Random),
        "zipf" => {
            let t = num(arg)?;
            if t <= 0.0 || t == 1.0 {
                return Err(("zipf's theta must be positive and not 1".into(), hint()));
            }
            Ok(FioDist::Zipf(t))
        }
        "pareto" => {
            let h = num(arg)?;
            // The offsets follow u^(ln h / ln(1 - h)): an h so small that 1 - h is 1 gives
            // no exponent.
            if !(0.0..1.0).contains(&h) || h == 0.0 || !(h.ln() / (1.0 - h).ln()).is_finite() {
                return Err(("pareto's h must be within (0, 1), and not below 1e-15".into(), hint()));
            }
            Ok(FioDist::Pareto(h))
        }
        "normal" | "gauss" | "zoned" | "zoned_abs" => Err((format!("random_distribution `{name}` is not modelled"), hint())),
        _ => Err((format!("unknown random_distribution `{name}`"), hint())),
    }
}

/// `sync_file_range=flags[:N]`: flags from `wait_before`, `write`, `wait_after` joined by
/// commas, every N writes (1 when not given), as fio's `str_sfr_cb` reads it.
fn sync_file_range(v: &str) -> Result<SyncFileRange, (String, String)> {
    let (flags, every) = match v.split_once(':') {
        Some((f, n)) => (f, n.trim().parse::<u32>().ok().filter(|&n| n > 0)),
        None => (v, Some(1)),
    };
    let every = every.ok_or_else(|| {
        (
            format!("sync_file_range={v}: the count after `:` must be a whole number above 0"),
            "e.g. sync_file_range=write:8 (every 8 writes)".to_string(),
        )
    })?;
    let mut s = SyncFileRange {
        every,
        wait_before: false,
        write: false,
        wait_after: false,
    };
    for f in flags.split(',').map(str::trim) {
        match f {
            "wait_before" => s.wait_before = true,
            "write" => s.write = true,
            "wait_after" => s.wait_after = true,
            other => {
                return Err((
                    format!("sync_file_range: `{other}` is not one of its flags"),
                    "flags are wait_before, write, wait_after, joined by commas (sync_file_range=wait_before,write:8)".to_string(),
                ))
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option the catalogue calls modelled has an arm of its own here: none falls
    /// through to the refusal meant for the options the model does not run.
    #[test]
    fn every_modelled_option_is_parsed() {
        for opt in catalogue::OPTIONS.iter().filter(|o| o.class == Class::Modelled) {
            for value in [None, Some("1"), Some("4k")] {
                let mut b = JobBuilder::new("j", 0);
                let r = b.apply(&Opt {
                    key: opt.name.into(),
                    value: value.map(str::to_string),
                    line: 1,
                });
                if let Err((m, _)) = r {
                    assert!(
                        !m.starts_with(&format!("fio option `{}` is not modelled", opt.name)) && !m.starts_with("unknown fio option"),
                        "{}: {m}",
                        opt.name
                    );
                }
            }
        }
    }

    /// Accepted options and refused ones at fio's default are taken (and kept for fio.json's
    /// job options); a refused option at another value names its reason; a misspelling gets
    /// a did-you-mean over all of fio's options.
    #[test]
    fn options_without_an_arm_follow_the_catalogue() {
        let apply = |k: &str, v: Option<&str>| {
            let mut b = JobBuilder::new("j", 0);
            b.apply(&Opt {
                key: k.into(),
                value: v.map(str::to_string),
                line: 1,
            })
            .map(|()| b.job.options.len())
        };
        assert_eq!(apply("significant_figures", Some("6")), Ok(1));
        assert_eq!(apply("zonemode", Some("none")), Ok(1));
        let (m, h) = apply("zonemode", Some("zbd")).unwrap_err();
        assert!(
            m.starts_with("fio option `zonemode` is not modelled: ") && h.contains("zonemode=none"),
            "{m} / {h}"
        );
        let (m, h) = apply("offset_incremnt", Some("1g")).unwrap_err();
        assert_eq!(
            (m.as_str(), h.as_str()),
            ("unknown fio option `offset_incremnt`", "did you mean `offset_increment`?")
        );
        assert!(apply("iodepth_batch_submit", Some("0")).is_err(), "0 is a batch of iodepth");
        assert!(apply("iodepth_batch_complete_min", Some("0")).is_err(), "0 reaps without waiting");
        assert!(apply("atomic", Some("1")).is_ok() && apply("nr_files", Some("2")).is_ok());
    }

    fn job(lines: &[&str]) -> Result<Built, Fail> {
        let mut b = JobBuilder::new("j", 0);
        for (i, l) in lines.iter().enumerate() {
            let (k, v) = match l.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (*l, None),
            };
            b.apply(&Opt {
                key: k.into(),
                value: v,
                line: i + 1,
            })?;
        }
        // The first mistake, as the tests below look for one at a time.
        b.finish().map_err(|slips| slips.into_iter().next().expect("a slip").fail)
    }

    #[test]
    fn sizes_and_splits() {
        let b = job(&["rw=randrw", "bs=4k,64k", "size=1g", "nrfiles=4"]).unwrap();
        assert_eq!(b.job.bs, [FioBs::Fixed(4096), FioBs::Fixed(65536)]);
        assert_eq!(b.job.file_size, 256 << 20);
        assert_eq!(b.job.size, 1 << 30);
        let b = job(&["bssplit=4k/50:1k/:32k/", "size=1m"]).unwrap();
        assert_eq!(b.job.bs[READ], FioBs::Split(vec![(4096, 50), (1024, 25), (32768, 25)]));
        assert!(job(&["bssplit=4k/80:8k/30", "size=1m"]).is_err());
        // O_DIRECT checks every size a split may issue, not only the smallest.
        let e = job(&["bssplit=4k/50:5000/50", "direct=1", "size=1m"]).err().unwrap();
        assert!(e.0.contains("got 5000"), "{e:?}");
        // kb_base applies to sizes written before it.
        let b = job(&["size=1m", "kb_base=1000"]).unwrap();
        assert_eq!(b.job.file_size, 1_000_000);
    }

    #[test]
    fn refused_options_are_named() {
        let e = job(&["verify=md5", "size=1m"]).err().unwrap();
        assert!(e.0.contains("`verify` is not modelled"), "{e:?}");
        let e = job(&["iodepht=4", "size=1m"]).err().unwrap();
        assert!(e.0.contains("unknown fio option `iodepht`") && e.1.contains("iodepth"), "{e:?}");
        assert!(job(&["rw=randread"]).is_err(), "no size");
        assert!(job(&["time_based", "size=1m"]).is_err(), "time_based without runtime");
    }

    #[test]
    fn sync_engines_have_depth_one() {
        let b = job(&["ioengine=psync", "iodepth=32", "size=1m"]).unwrap();
        assert_eq!(b.job.iodepth, 1);
        let b = job(&["ioengine=libaio", "iodepth=32", "direct=1", "size=1m"]).unwrap();
        assert_eq!((b.job.iodepth, b.job.iodepth_low), (32, 32));
    }
}
