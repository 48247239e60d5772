//! Every option of fio 3.33 (`options.c` and the options of its I/O engines and profiles),
//! each with what wblab does with it: runs it (`Modelled`), takes it without effect because it
//! cannot change the figures a user compares (`Accepted`), or refuses it, with the reason.
//! No option is unknown and none is ignored silently; `docs/fio.md` prints this table.

/// What wblab does with a fio option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Parsed and simulated ([`super::options::JobBuilder::apply`] has its arm).
    Modelled,
    /// Taken and ignored: it changes data contents, fio's text output, or only acts under an
    /// option that is itself refused.
    Accepted,
    /// Refused with its reason, unless written at fio's default value, which does nothing.
    Refused,
}

/// One option name as a job file spells it.
#[derive(Clone, Copy, Debug)]
pub struct FioOption {
    pub name: &'static str,
    /// The option this name is an alias of (`""` for a name of its own).
    pub alias_of: &'static str,
    /// The engines (or `profile:NAME`) the option belongs to; `""` for a general option.
    pub scope: &'static str,
    pub class: Class,
    /// fio's default value, at which a refused option does nothing and is taken; `""` when
    /// every value is refused.
    pub default: &'static str,
    /// Why, in a few words (for a modelled option: any values it refuses).
    pub reason: &'static str,
}

use Class::{Accepted, Modelled, Refused};

const fn o(
    name: &'static str,
    alias_of: &'static str,
    scope: &'static str,
    class: Class,
    default: &'static str,
    reason: &'static str,
) -> FioOption {
    FioOption {
        name,
        alias_of,
        scope,
        class,
        default,
        reason,
    }
}

/// Every name, sorted.
pub const OPTIONS: &[FioOption] = &[
    o("allow_file_create", "", "", Refused, "1", "0: the model's files are created by the job, which fio would then refuse to do"),
    o("allow_mounted_write", "", "", Accepted, "", "only a safety check before writing to the raw node of a mounted device"),
    o("allrandrepeat", "", "", Accepted, "", "only seeds; the model's draws differ from fio's anyway"),
    o("arguments", "", "exec", Refused, "", "an option of the exec engine, which wblab does not run"),
    o("atomic", "", "", Modelled, "", "as direct=1: on Linux the extra open flag fio adds is ignored, so it is plain O_DIRECT"),
    o("ba", "", "", Refused, "", "finer alignment changes which offsets random I/O hits"),
    o("bindname", "", "rdma", Refused, "", "an option of the rdma engine, which wblab does not run"),
    o("block", "", "profile:tiobench", Refused, "", "only exists once profile=tiobench is selected, and profile= is refused"),
    o("block_error_percentiles", "", "", Accepted, "", "only for trim workloads, which are refused"),
    o("blockalign", "ba", "", Refused, "", "finer alignment changes which offsets random I/O hits"),
    o("blocksize", "bs", "", Modelled, "", ""),
    o("blocksize_range", "bsrange", "", Modelled, "", ""),
    o("blocksize_unaligned", "bs_unaligned", "", Refused, "", "changes the I/O sizes issued"),
    o("brick", "", "gfapi, gfapi_async", Refused, "", "an option of the gfapi, gfapi_async engines, which wblab does not run"),
    o("bs", "", "", Modelled, "", ""),
    o("bs_is_seq_rand", "", "", Refused, "0", "changes which size each I/O gets"),
    o("bs_unaligned", "", "", Refused, "", "changes the I/O sizes issued"),
    o("bsrange", "", "", Modelled, "", ""),
    o("bssplit", "", "", Modelled, "", ""),
    o("buffer_compress_chunk", "", "", Accepted, "", "data contents only"),
    o("buffer_compress_percentage", "", "", Accepted, "", "data contents only (no compressing device or filesystem is modelled)"),
    o("buffer_pattern", "", "", Accepted, "", "data contents only"),
    o("buffered", "", "", Modelled, "", ""),
    o("busy_poll", "", "rados, rbd", Refused, "", "an option of the rados engine, which wblab does not run"),
    o("busy_wait_polling", "", "librpma_apm_client, librpma_apm_server, librpma_gpspm_client, librpma_gpspm_server", Refused, "", "an option of the librpma_apm_client, librpma_apm_server, librpma_gpspm_client, librpma_gpspm_server engines, which wblab does not run"),
    o("bwavgtime", "", "", Refused, "500", "other than 500 ms, the model's bandwidth sampling window"),
    o("cgroup", "", "", Refused, "", "not yet: put the task in a [[cgroup]] with the task's cgroup key"),
    o("cgroup_nodelete", "", "", Accepted, "", "cleanup only"),
    o("cgroup_weight", "", "", Refused, "", "io.weight/blkio.weight are not modelled"),
    o("chunck_size", "chunk_size", "libhdfs", Refused, "", "an option of the libhdfs engine, which wblab does not run"),
    o("chunk_size", "", "dfs, libhdfs", Refused, "", "an option of the dfs engine, which wblab does not run"),
    o("clat_percentiles", "", "", Modelled, "", "0 leaves completion latency's percentiles (and json+ bins) out of the outputs"),
    o("clientname", "", "rados, rbd", Refused, "", "an option of the rados engine, which wblab does not run"),
    o("clocksource", "", "", Accepted, "", "only how fio reads the clock; the model's clock is exact"),
    o("clustername", "", "rados, rbd", Refused, "", "an option of the rados engine, which wblab does not run"),
    o("cmd_type", "", "io_uring, io_uring_cmd", Accepted, "", "read by io_uring_cmd only, which is refused"),
    o("cmdprio", "", "io_uring, io_uring_cmd, libaio", Refused, "", "with cmdprio_percentage/cmdprio_bssplit (inert without them)"),
    o("cmdprio_bssplit", "", "io_uring, io_uring_cmd, libaio", Refused, "", "per-I/O priority by size"),
    o("cmdprio_class", "", "io_uring, io_uring_cmd, libaio", Refused, "", "with cmdprio_percentage/cmdprio_bssplit (inert without them)"),
    o("cmdprio_percentage", "", "io_uring, io_uring_cmd, libaio", Refused, "", "per-I/O priorities are not modelled (a task's ionice is)"),
    o("conf", "", "rados", Refused, "", "an option of the rados engine, which wblab does not run"),
    o("cont", "", "dfs", Refused, "", "an option of the dfs engine, which wblab does not run"),
    o("continue_on_error", "", "", Accepted, "", "acts only on I/O errors, which the model does not produce"),
    o("cpuchunks", "", "cpuio", Refused, "", "an option of the cpuio engine, which wblab does not run"),
    o("cpuload", "", "cpuio", Refused, "", "an option of the cpuio engine, which wblab does not run"),
    o("cpumask", "", "", Refused, "", "pinning changes CPU contention in the model's run queue, which has no affinity"),
    o("cpumode", "", "cpuio", Refused, "", "an option of the cpuio engine, which wblab does not run"),
    o("cpus_allowed", "", "", Refused, "", "the model's run queue has no affinity"),
    o("cpus_allowed_policy", "", "", Accepted, "", "inert unless cpus_allowed/cpumask are set (refused)"),
    o("create_fsync", "", "", Refused, "1", "only fio's default (1): the laid-out file is clean when the job starts; 0 would leave it dirty"),
    o("create_on_open", "", "", Refused, "0", "creation work moves into the measured run"),
    o("create_only", "", "", Refused, "0", "the job does no workload"),
    o("create_serialize", "", "", Accepted, "", "only the setup phase before any measurement"),
    o("cuda_io", "", "libcufile", Refused, "", "an option of the libcufile engine, which wblab does not run"),
    o("dedupe_global", "", "", Accepted, "", "data contents only"),
    o("dedupe_mode", "", "", Accepted, "", "data contents only"),
    o("dedupe_percentage", "", "", Accepted, "", "data contents only (no dedupe is modelled)"),
    o("dedupe_working_set_percentage", "", "", Accepted, "", "data contents only"),
    o("description", "", "", Accepted, "", "a label only; no effect on any timing"),
    o("device-names", "", "profile:act", Refused, "", "only exists once profile=act is selected, and profile= is refused"),
    o("dir", "", "profile:tiobench", Refused, "", "only exists once profile=tiobench is selected, and profile= is refused"),
    o("direct", "", "", Modelled, "", ""),
    o("direct_write_to_pmem", "", "librpma_apm_client, librpma_apm_server, librpma_gpspm_client, librpma_gpspm_server", Refused, "", "an option of the librpma_apm_client, librpma_apm_server, librpma_gpspm_client, librpma_gpspm_server engines, which wblab does not run"),
    o("directory", "", "", Modelled, "", "routes the job to the device it names (/mnt/<device>); the rest of the path is not used"),
    o("disable_bw", "disable_bw_measurement", "", Refused, "0", "as disable_lat"),
    o("disable_bw_measurement", "", "", Refused, "0", "as disable_lat"),
    o("disable_clat", "", "", Refused, "0", "as disable_lat"),
    o("disable_lat", "", "", Refused, "0", "fio's output lacks numbers wblab would report"),
    o("disable_slat", "", "", Refused, "0", "as disable_lat"),
    o("disk_util", "", "", Accepted, "", "output only"),
    o("do_verify", "", "", Accepted, "", "inert unless verify= is set, and verify is refused"),
    o("donorname", "", "e4defrag", Refused, "", "an option of the e4defrag engine, which wblab does not run"),
    o("dummy", "", "engine_name", Refused, "", "an option of the engine_name engine, which wblab does not run"),
    o("end_fsync", "", "", Modelled, "", ""),
    o("error_dump", "", "", Accepted, "", "acts only on errors"),
    o("exec_postrun", "", "", Refused, "", "arbitrary commands; may change state seen by later jobs"),
    o("exec_prerun", "", "", Refused, "", "arbitrary commands (drop caches, sync, ...) with effects the model cannot know"),
    o("exit_on_io_done", "", "cpuio", Refused, "", "an option of the cpuio engine, which wblab does not run"),
    o("exit_what", "", "", Accepted, "", "inert unless exitall is set (refused)"),
    o("exitall", "", "", Refused, "", "cuts other jobs short"),
    o("exitall_on_error", "", "", Accepted, "", "acts only on I/O errors, which the model does not produce"),
    o("experimental_verify", "", "", Accepted, "", "inert unless verify= is set (refused)"),
    o("fadvise_hint", "", "", Refused, "1", "only fio's default (1); other hints change readahead, which follows the file's own pattern here"),
    o("fallocate", "", "", Modelled, "", "what the file holds before the job (see above)"),
    o("fdatasync", "", "", Modelled, "", ""),
    o("file_append", "", "", Refused, "0", "extending writes allocate blocks and update the size, unlike writes into the laid-out region"),
    o("file_service_type", "", "", Refused, "roundrobin", "only fio's default (roundrobin), what the model does over nrfiles"),
    o("filename", "", "", Modelled, "", "for one file (shared by every job naming it); 'a:b' lists refused"),
    o("filename_format", "", "", Refused, "$jobname.$jobnum.$filenum", "the template decides which jobs and clones share a file (drop $jobnum and clones share one), which changes the I/O"),
    o("fileoffset", "offset", "", Refused, "0", "moves the region (disk position, which blocks are touched)"),
    o("filesize", "", "", Modelled, "", "for one size; a range refused"),
    o("fill_device", "", "", Refused, "0", "the run's length depends on free space and out-of-space handling, not modelled"),
    o("fill_fs", "fill_device", "", Refused, "0", "the run's length depends on free space and out-of-space handling, not modelled"),
    o("fixedbufs", "", "io_uring, io_uring_cmd", Accepted, "", "saves per-I/O page pinning, which the model never charges"),
    o("flow", "", "", Refused, "0", "throttles jobs against each other"),
    o("flow_id", "", "", Accepted, "", "inert unless flow is set (refused)"),
    o("flow_sleep", "", "", Accepted, "", "inert unless flow is set (refused)"),
    o("flow_watermark", "", "", Accepted, "", "soft-deprecated, fio ignores it"),
    o("force_async", "", "io_uring, io_uring_cmd", Refused, "", "moves O_DIRECT submission to a worker thread, a different path"),
    o("fsync", "", "", Modelled, "", ""),
    o("fsync_on_close", "", "", Modelled, "", ""),
    o("gid", "", "", Accepted, "", "credentials only, no effect on timing"),
    o("gpu_dev_id", "", "", Accepted, "", "only read by GPU/RDMA engines, which are refused"),
    o("gpu_dev_ids", "", "libcufile", Refused, "", "an option of the libcufile engine, which wblab does not run"),
    o("grace_time", "", "exec", Refused, "", "an option of the exec engine, which wblab does not run"),
    o("group_reporting", "", "", Modelled, "", ""),
    o("gtod_cpu", "", "", Refused, "", "the thread occupies a CPU, taking it from the jobs"),
    o("gtod_reduce", "", "", Refused, "0", "fio then reports no latencies, which wblab would"),
    o("hdfs_use_direct", "", "libhdfs", Refused, "", "an option of the libhdfs engine, which wblab does not run"),
    o("hdfsdirectory", "", "libhdfs", Refused, "", "an option of the libhdfs engine, which wblab does not run"),
    o("hipri", "", "io_uring, io_uring_cmd, pvsync2, sg, xnvme", Refused, "", "completion by polling, not interrupts; the model has no polled queues"),
    o("hipri_percentage", "", "pvsync2", Accepted, "", "inert unless hipri is set (refused)"),
    o("hostname", "", "libhdfs, netsplice, net, rdma", Refused, "", "an option of the libhdfs engine, which wblab does not run"),
    o("http_host", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_mode", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_pass", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_s3_key", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_s3_keyid", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_s3_region", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_s3_sse_customer_algorithm", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_s3_sse_customer_key", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_s3_storage_class", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_swift_auth_token", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_user", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("http_verbose", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("https", "", "http", Refused, "", "an option of the http engine, which wblab does not run"),
    o("hugepage-size", "", "", Accepted, "", "inert unless mem=*huge"),
    o("ignore_error", "", "", Accepted, "", "acts only on errors, which the model does not produce"),
    o("ignore_zone_limits", "", "", Accepted, "", "inert unless zonemode=zbd (refused)"),
    o("initiator", "", "libiscsi", Refused, "", "an option of the libiscsi engine, which wblab does not run"),
    o("inplace", "", "e4defrag", Refused, "", "an option of the e4defrag engine, which wblab does not run"),
    o("interface", "", "netsplice, net", Refused, "", "an option of the netsplice, net engines, which wblab does not run"),
    o("invalidate", "", "", Modelled, "", ""),
    o("io_limit", "io_size", "", Modelled, "", ""),
    o("io_size", "", "", Modelled, "", ""),
    o("io_submit_mode", "", "", Refused, "inline", "offload: a different submission path and timing"),
    o("iodepth", "", "", Modelled, "", ""),
    o("iodepth_batch", "", "", Modelled, "", "1 (fio's default): one I/O per submission call; larger batches, and 0 (a batch of iodepth), refused"),
    o("iodepth_batch_complete", "iodepth_batch_complete_min", "", Modelled, "", "at least 1: wait for that many completions; 0 (reap without blocking) refused"),
    o("iodepth_batch_complete_max", "", "", Modelled, "", "up to iodepth_batch_complete_min (fio's default); a larger max, which reaps several I/Os per call, refused"),
    o("iodepth_batch_complete_min", "", "", Modelled, "", "at least 1: wait for that many completions; 0 (reap without blocking) refused"),
    o("iodepth_batch_submit", "iodepth_batch", "", Modelled, "", "1 (fio's default): one I/O per submission call; larger batches, and 0 (a batch of iodepth), refused"),
    o("iodepth_low", "", "", Modelled, "", ""),
    o("ioengine", "", "", Modelled, "", "psync, sync, pvsync, pvsync2, vsync, libaio, io_uring; every other engine refused"),
    o("iomem", "mem", "", Accepted, "", "buffer placement only (huge-page kinds not told apart)"),
    o("iomem_align", "", "", Accepted, "", "buffer address only; fio keeps buffers page-aligned for O_DIRECT anyway"),
    o("iopsavgtime", "", "", Refused, "500", "other than 500 ms, the model's IOPS sampling window"),
    o("ioscheduler", "", "", Refused, "", "not yet: set the device's \"queue/scheduler\""),
    o("job_max_open_zones", "", "", Accepted, "", "inert unless zonemode=zbd (refused)"),
    o("kb_base", "", "", Modelled, "", ""),
    o("large-block-op-kbytes", "", "profile:act", Refused, "", "only exists once profile=act is selected, and profile= is refused"),
    o("lat_percentiles", "", "", Modelled, "", "total latency's percentiles (and json+ bins) in the outputs; terse prints them instead of completion latency's"),
    o("latency_percentile", "", "", Accepted, "", "inert unless latency_target is set (refused)"),
    o("latency_run", "", "", Accepted, "", "inert unless latency_target is set (refused)"),
    o("latency_target", "", "", Refused, "", "fio varies the queue depth during the run"),
    o("latency_window", "", "", Accepted, "", "inert unless latency_target is set (refused)"),
    o("listen", "", "netsplice, net", Refused, "", "an option of the netsplice, net engines, which wblab does not run"),
    o("load", "", "profile:act", Refused, "", "only exists once profile=act is selected, and profile= is refused"),
    o("lockfile", "", "", Refused, "none", "serialises I/O across jobs sharing a file; the model takes no such lock"),
    o("lockmem", "", "", Refused, "0", "shrinks the memory the cache and dirty limits see"),
    o("log_alternate_epoch", "", "", Refused, "", "changes the time column of logs wblab writes"),
    o("log_alternate_epoch_clock_id", "", "", Accepted, "", "inert unless log_unix_epoch or log_alternate_epoch is set (refused)"),
    o("log_avg_msec", "", "", Modelled, "", "log averaging window"),
    o("log_compression", "", "", Accepted, "", "memory only; the log files written are the same"),
    o("log_compression_cpus", "", "", Accepted, "", "inert without log_compression"),
    o("log_entries", "", "", Accepted, "", "memory sizing only"),
    o("log_hist_coarseness", "", "", Accepted, "", "inert unless write_hist_log is set (refused)"),
    o("log_hist_msec", "", "", Accepted, "", "inert unless write_hist_log is set (refused)"),
    o("log_max_value", "", "", Modelled, "", ""),
    o("log_offset", "", "", Modelled, "", "the offset column of the logs"),
    o("log_prio", "", "", Refused, "0", "changes the last column of logs wblab writes"),
    o("log_store_compressed", "", "", Refused, "", "log files would differ from what fio writes"),
    o("log_unix_epoch", "", "", Refused, "", "changes the time column of logs wblab writes"),
    o("loops", "", "", Modelled, "", ""),
    o("max_latency", "", "", Refused, "", "the job may abort"),
    o("max_open_zones", "", "", Accepted, "", "inert unless zonemode=zbd (refused)"),
    o("mem", "", "", Accepted, "", "buffer placement only (huge-page kinds not told apart)"),
    o("mem_align", "iomem_align", "", Accepted, "", "buffer address only; fio keeps buffers page-aligned for O_DIRECT anyway"),
    o("merge_blktrace_file", "", "", Accepted, "", "inert unless read_iolog names several traces (refused)"),
    o("merge_blktrace_iters", "", "", Accepted, "", "inert unless read_iolog names several traces (refused)"),
    o("merge_blktrace_scalars", "", "", Accepted, "", "inert unless read_iolog names several traces (refused)"),
    o("mss", "", "netsplice, net", Refused, "", "an option of the netsplice, net engines, which wblab does not run"),
    o("name", "", "", Modelled, "", "names the task group, its files and logs"),
    o("namenode", "", "libhdfs", Refused, "", "an option of the libhdfs engine, which wblab does not run"),
    o("new_group", "", "", Modelled, "", ""),
    o("nfs_url", "", "nfs", Refused, "", "an option of the nfs engine, which wblab does not run"),
    o("nice", "", "", Refused, "0", "changes the job's share of the CPUs; the model's run queue has no nice weights"),
    o("no_completion_thread", "", "windowsaio", Refused, "", "an option of the windowsaio engine, which wblab does not run"),
    o("nodelay", "", "netsplice, net", Refused, "", "an option of the netsplice, net engines, which wblab does not run"),
    o("nonvectored", "", "io_uring, io_uring_cmd", Accepted, "", "same I/O, a negligible CPU difference"),
    o("norandommap", "", "", Modelled, "", ""),
    o("nowait", "", "io_uring, io_uring_cmd, libaio, pvsync2", Refused, "", "RWF_NOWAIT: an I/O that would block fails with EAGAIN, which the model never returns"),
    o("nr_files", "nrfiles", "", Modelled, "", "alias of nrfiles"),
    o("nrfiles", "", "", Modelled, "", ""),
    o("numa_cpu_nodes", "", "", Refused, "", "CPU pinning, see cpus_allowed"),
    o("numa_mem_policy", "", "", Accepted, "", "the model has one memory node, placement cannot change its numbers"),
    o("number_ios", "", "", Refused, "0", "changes when the job stops"),
    o("numjobs", "", "", Modelled, "", ""),
    o("numruns", "", "profile:tiobench", Refused, "", "only exists once profile=tiobench is selected, and profile= is refused"),
    o("object_class", "", "dfs", Refused, "", "an option of the dfs engine, which wblab does not run"),
    o("offset", "", "", Refused, "0", "moves the region (disk position, which blocks are touched)"),
    o("offset_align", "", "", Refused, "0", "only meaningful with offset=N%, which is refused (default 0 = block size)"),
    o("offset_increment", "", "", Refused, "0", "gives each numjobs clone its own slice of a shared file"),
    o("opendir", "", "", Refused, "", "takes the file set from existing files; the model starts with no files of its own"),
    o("openfiles", "", "", Refused, "", "extra open/close (and fsync_on_close) work when below nrfiles"),
    o("overwrite", "", "", Modelled, "", ""),
    o("per_job_logs", "", "", Modelled, "", "for 1; 0 refused"),
    o("percentage_random", "", "", Refused, "100,100,100", "mixes sequential runs into a random job"),
    o("percentage_sequential", "", "", Refused, "", "marked deprecated in 3.33 and fio itself fails on it"),
    o("percentile_list", "", "", Modelled, "", ""),
    o("pingpong", "", "netsplice, net", Refused, "", "an option of the netsplice, net engines, which wblab does not run"),
    o("pool", "", "dfs, rados, rbd", Refused, "", "an option of the dfs engine, which wblab does not run"),
    o("port", "", "libhdfs, librpma_apm_client, librpma_apm_server, librpma_gpspm_client, librpma_gpspm_server, netsplice, net, rdma", Refused, "", "an option of the libhdfs engine, which wblab does not run"),
    o("pre_read", "", "", Refused, "0", "warms the cache"),
    o("prep", "", "profile:act", Refused, "", "only exists once profile=act is selected, and profile= is refused"),
    o("prio", "", "", Modelled, "", "the job's I/O priority level, 0-7, as the task's ionice (over it)"),
    o("prioclass", "", "", Modelled, "", "the job's I/O priority class: 1 realtime, 2 best effort, 3 idle, as the task's ionice (over it)"),
    o("profile", "", "", Refused, "", "the built-in workloads are not modelled"),
    o("program", "", "exec", Refused, "", "an option of the exec engine, which wblab does not run"),
    o("proto", "protocol", "netsplice, net, rdma", Refused, "", "an option of the netsplice, net engines, which wblab does not run"),
    o("protocol", "", "netsplice, net", Refused, "", "an option of the netsplice, net engines, which wblab does not run"),
    o("ramp_time", "", "", Modelled, "", ""),
    o("random_distribution", "", "", Modelled, "", "for random, zipf:theta, pareto:h; normal, zoned, zoned_abs and a centre parameter refused"),
    o("random_generator", "", "", Modelled, "", "tausworthe, tausworthe64 and lfsr accepted: the model draws with its own generator"),
    o("randrepeat", "", "", Modelled, "", ""),
    o("randseed", "", "", Modelled, "", ""),
    o("rate", "", "", Modelled, "", ""),
    o("rate_cycle", "", "", Accepted, "", "only read by the minimum-rate check (backend.c check_min_rate), which is refused"),
    o("rate_ignore_thinktime", "", "", Refused, "", "changes spacing when rate and thinktime are both set"),
    o("rate_iops", "", "", Modelled, "", ""),
    o("rate_iops_min", "", "", Refused, "", "the job may abort, changing the run"),
    o("rate_min", "", "", Refused, "", "the job may abort, changing the run"),
    o("rate_process", "", "", Modelled, "", "for linear; poisson refused"),
    o("ratecycle", "rate_cycle", "", Accepted, "", "only read by the minimum-rate check (backend.c check_min_rate), which is refused"),
    o("ratemin", "rate_min", "", Refused, "", "the job may abort, changing the run"),
    o("rbdname", "", "rbd", Refused, "", "an option of the rbd engine, which wblab does not run"),
    o("read-req-num-512-blocks", "", "profile:act", Refused, "", "only exists once profile=act is selected, and profile= is refused"),
    o("read_beyond_wp", "", "", Accepted, "", "inert unless zonemode=zbd (refused)"),
    o("read_iolog", "", "", Refused, "", "the I/O pattern would come from a trace the model does not replay"),
    o("read_iolog_chunked", "", "", Accepted, "", "inert unless read_iolog is set (refused)"),
    o("readfua", "", "sg", Refused, "", "an option of the sg engine, which wblab does not run"),
    o("readwrite", "rw", "", Modelled, "", "for read/write/randread/randwrite/rw/randrw; trim kinds and the ':N' modifier refused"),
    o("refill_buffers", "", "", Accepted, "", "data contents (plus a buffer fill per I/O of CPU time, like a copy)"),
    o("registerfiles", "", "io_uring, io_uring_cmd", Accepted, "", "saves a per-I/O file lookup, which the model never charges"),
    o("replay_align", "", "", Accepted, "", "inert unless read_iolog is set (refused)"),
    o("replay_no_stall", "", "", Accepted, "", "inert unless read_iolog is set (refused)"),
    o("replay_redirect", "", "", Accepted, "", "inert unless read_iolog is set (refused)"),
    o("replay_scale", "", "", Accepted, "", "inert unless read_iolog is set (refused)"),
    o("replay_skip", "", "", Accepted, "", "inert unless read_iolog is set (refused)"),
    o("replay_time_scale", "", "", Accepted, "", "inert unless read_iolog is set (refused)"),
    o("runtime", "", "", Modelled, "", ""),
    o("rw", "", "", Modelled, "", "for read/write/randread/randwrite/rw/randrw; trim kinds and the ':N' modifier refused"),
    o("rw_sequencer", "", "", Refused, "sequential", "identical: only meaningful with rw=...:N, which is refused"),
    o("rwmixcycle", "", "", Refused, "", "hard-deprecated; fio 3.33 rejects it"),
    o("rwmixread", "", "", Modelled, "", ""),
    o("rwmixwrite", "", "", Modelled, "", ""),
    o("scramble_buffers", "", "", Accepted, "", "data contents only"),
    o("serialize_overlap", "", "", Refused, "0", "changes ordering and latency whenever offsets can collide (norandommap, mixed block sizes, shared files); the model does not check overlaps"),
    o("serverip", "", "librpma_apm_client, librpma_apm_server, librpma_gpspm_client, librpma_gpspm_server", Refused, "", "an option of the librpma_apm_client, librpma_apm_server, librpma_gpspm_client, librpma_gpspm_server engines, which wblab does not run"),
    o("sg_write_mode", "", "sg", Refused, "", "an option of the sg engine, which wblab does not run"),
    o("significant_figures", "", "", Accepted, "", "formatting of fio's text output only, the numbers do not change"),
    o("single-instance", "", "gfapi, gfapi_async", Refused, "", "an option of the gfapi, gfapi_async engines, which wblab does not run"),
    o("single_instance", "", "libhdfs", Refused, "", "an option of the libhdfs engine, which wblab does not run"),
    o("size", "", "", Modelled, "", "as a size; size=N% refused"),
    o("skip_bad", "", "mtd", Refused, "", "an option of the mtd engine, which wblab does not run"),
    o("slat_percentiles", "", "", Modelled, "", "submission latency's percentiles (and json+ bins) in the outputs"),
    o("softrandommap", "", "", Accepted, "", "the model's random map never fails to allocate"),
    o("sqthread_poll", "", "io_uring, io_uring_cmd, xnvme", Refused, "", "submissions without system calls and a CPU kept busy by the poller"),
    o("sqthread_poll_cpu", "", "io_uring, io_uring_cmd", Accepted, "", "inert unless sqthread_poll is set (refused)"),
    o("ss", "steadystate", "", Accepted, "", "inert unless ss_dur is set (refused)"),
    o("ss_dur", "steadystate_duration", "", Refused, "0", "ends the job early and adds a steadystate section to the JSON"),
    o("ss_ramp", "steadystate_ramp_time", "", Accepted, "", "inert unless ss_dur is set (refused)"),
    o("startdelay", "", "", Modelled, "", "for one time; ranges refused"),
    o("stat_type", "", "filestat", Refused, "", "an option of the filestat engine, which wblab does not run"),
    o("stats", "", "", Refused, "1", "0: fio drops the job from the results and group totals, the model would report it"),
    o("std_redirect", "", "exec", Refused, "", "an option of the exec engine, which wblab does not run"),
    o("steadystate", "", "", Accepted, "", "inert unless ss_dur is set (refused)"),
    o("steadystate_duration", "", "", Refused, "0", "ends the job early and adds a steadystate section to the JSON"),
    o("steadystate_ramp_time", "", "", Accepted, "", "inert unless ss_dur is set (refused)"),
    o("stonewall", "", "", Modelled, "", ""),
    o("stream_id", "", "sg", Refused, "", "an option of the sg engine, which wblab does not run"),
    o("svcl", "", "dfs", Refused, "", "an option of the dfs engine, which wblab does not run"),
    o("sync", "", "", Modelled, "", "O_SYNC/O_DSYNC, with the synchronous engines"),
    o("sync_file_range", "", "", Modelled, "", ""),
    o("test-duration", "", "profile:act", Refused, "", "only exists once profile=act is selected, and profile= is refused"),
    o("thinktime", "", "", Modelled, "", ""),
    o("thinktime_blocks", "", "", Modelled, "", ""),
    o("thinktime_blocks_type", "", "", Refused, "complete", "only fio's default (complete): the pause waits for in-flight I/O; issue is not modelled"),
    o("thinktime_iotime", "", "", Refused, "0", "a different pause trigger"),
    o("thinktime_spin", "", "", Modelled, "", "for 0; spinning refused"),
    o("thp", "", "mmap", Refused, "", "an option of the mmap engine, which wblab does not run"),
    o("thread", "", "", Accepted, "", "the model has tasks either way"),
    o("threads", "", "profile:tiobench", Refused, "", "only exists once profile=tiobench is selected, and profile= is refused"),
    o("threads-per-queue", "", "profile:act", Refused, "", "only exists once profile=act is selected, and profile= is refused"),
    o("time_based", "", "", Modelled, "", ""),
    o("timeout", "runtime", "", Modelled, "", ""),
    o("touch_objects", "", "rados", Refused, "", "an option of the rados engine, which wblab does not run"),
    o("trim_backlog", "", "", Accepted, "", "inert unless trim_percentage is set (refused)"),
    o("trim_backlog_batch", "", "", Accepted, "", "inert unless trim_percentage is set (refused)"),
    o("trim_percentage", "", "", Refused, "0", "issues discards, which the model does not run"),
    o("trim_verify_zero", "", "", Accepted, "", "inert unless trim_percentage is set (refused)"),
    o("ttl", "", "netsplice, net", Refused, "", "an option of the netsplice, net engines, which wblab does not run"),
    o("uid", "", "", Accepted, "", "credentials only, no effect on timing"),
    o("uncached", "", "io_uring, io_uring_cmd, pvsync2", Refused, "", "RWF_UNCACHED: buffered I/O whose pages are dropped once written back, not modelled"),
    o("unified_rw_reporting", "", "", Refused, "none", "changes the structure of the JSON (a 'mixed' section)"),
    o("unique_filename", "", "", Accepted, "", "only acts in client/server mode, which wblab does not use"),
    o("unit_base", "", "", Accepted, "", "formatting of the normal output only; JSON is unchanged"),
    o("unlink", "", "", Accepted, "", "removes the files after the job; no later job here depends on them"),
    o("unlink_each_loop", "", "", Refused, "0", "each loop writes fresh files (new allocation, layout again)"),
    o("uri", "", "nbd", Refused, "", "an option of the nbd engine, which wblab does not run"),
    o("userspace_reap", "", "libaio", Accepted, "", "only acts with iodepth_batch_complete_min=0, which is refused"),
    o("verb", "", "rdma", Refused, "", "an option of the rdma engine, which wblab does not run"),
    o("verify", "", "", Refused, "0", "verification needs data contents and adds a read-back phase; the model moves no data"),
    o("verify_async", "", "", Accepted, "", "inert unless verify= is set (refused)"),
    o("verify_async_cpus", "", "", Accepted, "", "inert unless verify= and verify_async are set"),
    o("verify_backlog", "", "", Accepted, "", "inert unless verify= is set (refused)"),
    o("verify_backlog_batch", "", "", Accepted, "", "inert unless verify= is set (refused)"),
    o("verify_dump", "", "", Accepted, "", "inert unless verify= is set (refused)"),
    o("verify_fatal", "", "", Accepted, "", "inert unless verify= is set (refused)"),
    o("verify_interval", "", "", Accepted, "", "inert unless verify= is set (refused)"),
    o("verify_offset", "", "", Accepted, "", "inert unless verify= is set (refused)"),
    o("verify_only", "", "", Refused, "", "turns a write job into a read-back; verification needs data contents, which the model does not keep"),
    o("verify_pattern", "", "", Refused, "", "setting it turns verify=pattern on (options.c str_verify_pattern_cb); needs data contents"),
    o("verify_state_load", "", "", Accepted, "", "inert unless verify= is set (refused)"),
    o("verify_state_save", "", "", Accepted, "", "inert unless verify= is set (refused)"),
    o("verifysort", "", "", Accepted, "", "soft-deprecated, fio 3.33 prints a notice and ignores it"),
    o("verifysort_nr", "", "", Accepted, "", "soft-deprecated, fio 3.33 prints a notice and ignores it"),
    o("volume", "", "gfapi, gfapi_async", Refused, "", "an option of the gfapi, gfapi_async engines, which wblab does not run"),
    o("wait_for", "", "", Modelled, "", ""),
    o("wait_for_previous", "stonewall", "", Modelled, "", ""),
    o("window_size", "", "netsplice, net", Refused, "", "an option of the netsplice, net engines, which wblab does not run"),
    o("write_barrier", "", "", Accepted, "", "only engines flagged for barriers act on it (libpmem in 3.33); no-op for psync/libaio/io_uring"),
    o("write_bw_log", "", "", Modelled, "", ""),
    o("write_hint", "", "", Accepted, "", "the model's devices (and most real ones) ignore lifetime hints"),
    o("write_hist_log", "", "", Refused, "", "asks for a log wblab does not write"),
    o("write_iolog", "", "", Refused, "", "asks for an output wblab does not write (silently missing otherwise)"),
    o("write_iops_log", "", "", Modelled, "", ""),
    o("write_lat_log", "", "", Modelled, "", ""),
    o("writefua", "", "sg", Refused, "", "an option of the sg engine, which wblab does not run"),
    o("xnvme_admin", "", "xnvme", Refused, "", "an option of the xnvme engine, which wblab does not run"),
    o("xnvme_async", "", "xnvme", Refused, "", "an option of the xnvme engine, which wblab does not run"),
    o("xnvme_be", "", "xnvme", Refused, "", "an option of the xnvme engine, which wblab does not run"),
    o("xnvme_dev_nsid", "", "xnvme", Refused, "", "an option of the xnvme engine, which wblab does not run"),
    o("xnvme_iovec", "", "xnvme", Refused, "", "an option of the xnvme engine, which wblab does not run"),
    o("xnvme_sync", "", "xnvme", Refused, "", "an option of the xnvme engine, which wblab does not run"),
    o("zero_buffers", "", "", Accepted, "", "data contents only; the model moves no data and its devices do not compress"),
    o("zone_reset_frequency", "", "", Accepted, "", "inert unless zonemode=zbd (refused)"),
    o("zone_reset_threshold", "", "", Accepted, "", "inert unless zonemode=zbd (refused)"),
    o("zonecapacity", "", "", Refused, "0", "part of zoned-device emulation, not modelled"),
    o("zonemode", "", "", Refused, "none", "for strided and zbd (they change where I/O lands; zbd needs a zoned device)"),
    o("zonerange", "", "", Refused, "0", "strided zones change the offsets"),
    o("zonesize", "", "", Refused, "0", "strided zones change the offsets (a zonesize alone switches zonemode to strided)"),
    o("zoneskip", "", "", Refused, "0", "strided zones change the offsets"),
];

/// The option a job file names `name`.
pub fn find(name: &str) -> Option<&'static FioOption> {
    OPTIONS.binary_search_by(|o| o.name.cmp(name)).ok().map(|i| &OPTIONS[i])
}

/// Whether wblab runs option `name` (a sweep may set only those).
pub fn is_modelled(name: &str) -> bool {
    find(name).is_some_and(|o| o.class == Modelled)
}

/// Every name, for did-you-mean hints.
pub fn names() -> Vec<&'static str> {
    OPTIONS.iter().map(|o| o.name).collect()
}

/// Whether `value` (None: the bare option, which sets a flag) is fio's default of `o`, so
/// that writing it changes nothing. Spellings of off and on are told apart from numbers.
pub fn is_default(o: &FioOption, value: Option<&str>) -> bool {
    if o.default.is_empty() {
        return false;
    }
    let norm = |v: &str| -> String {
        match v.trim().to_ascii_lowercase().as_str() {
            "0" | "off" | "false" | "no" | "none" => "0".into(),
            "1" | "on" | "true" | "yes" => "1".into(),
            other => other.to_string(),
        }
    };
    norm(value.unwrap_or("1")) == norm(o.default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sorted_unique_and_aliases_resolve() {
        for w in OPTIONS.windows(2) {
            assert!(w[0].name < w[1].name, "{} then {}", w[0].name, w[1].name);
        }
        for opt in OPTIONS {
            if !opt.alias_of.is_empty() {
                let of = find(opt.alias_of).unwrap_or_else(|| panic!("{} is an alias of a missing {}", opt.name, opt.alias_of));
                assert_eq!(of.class, opt.class, "{} and {} are the same option", opt.name, of.name);
            }
            assert!(
                opt.class != Refused || !opt.reason.is_empty(),
                "{} is refused without a reason",
                opt.name
            );
            assert!(
                opt.class == Refused || opt.default.is_empty(),
                "{}: only a refused option needs its default",
                opt.name
            );
        }
    }

    #[test]
    fn a_refused_option_at_its_default_changes_nothing() {
        let zonemode = find("zonemode").expect("listed");
        assert!(is_default(zonemode, Some("none")));
        assert!(!is_default(zonemode, Some("zbd")));
        let verify = find("verify").expect("listed");
        assert!(is_default(verify, Some("0")) && is_default(verify, Some("none")));
        assert!(!is_default(verify, Some("md5")));
        assert!(!is_default(find("exitall").expect("listed"), None));
    }
}
