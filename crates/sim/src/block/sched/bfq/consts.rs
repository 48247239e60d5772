//! BFQ's fixed parameters (`block/bfq-iosched.c`, `bfq_init_queue`); the tunable ones are
//! in [`super::tunables`].

use crate::Ns;

pub(super) const MSEC: Ns = 1_000_000;
pub(super) const USEC: Ns = 1_000;

/// Service-tree indexes (`ioprio_class - 1`).
pub(super) const RT_CLASS: usize = 0;
pub(super) const BE_CLASS: usize = 1;
pub(super) const IDLE_CLASS: usize = 2;
pub(super) const CLASSES: usize = 3;

/// Budget statistics are trusted after this many assignments (`bfq_stats_min_budgets`).
pub(super) const STATS_MIN_BUDGETS: u32 = 194;
/// `bfq_default_max_budget`, sectors.
pub(super) const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
/// Async requests are charged three times their size (`bfq_async_charge_factor`).
pub(super) const ASYNC_CHARGE_FACTOR: u64 = 3;
/// The budget timeout's default, and the reference of time charging (`bfq_timeout`, HZ/8).
pub(super) const TIMEOUT: Ns = 125 * MSEC;
/// Below this a think time counts as immediate (`BFQ_MIN_TT`).
pub(super) const MIN_TT: Ns = 2 * MSEC;
/// `hw_tag` detection (`BFQ_HW_QUEUE_THRESHOLD`, `BFQ_HW_QUEUE_SAMPLES`).
pub(super) const HW_QUEUE_THRESHOLD: u32 = 3;
pub(super) const HW_QUEUE_SAMPLES: u32 = 32;
/// A request further than this from the last one is a seek (`BFQQ_SEEK_THR`, sectors)…
pub(super) const SEEK_THR: u64 = 8 * 100;
/// …unless, on a non-rotational device, it is this large (`BFQQ_SECT_THR_NONROT`).
pub(super) const SECT_THR_NONROT: u64 = 2 * 32;
/// Peak-rate estimation (`BFQ_RATE_*`); rates are sectors/µs shifted left by 16.
pub(super) const RATE_MIN_SAMPLES: u32 = 32;
pub(super) const RATE_MIN_INTERVAL: Ns = 300 * MSEC;
pub(super) const RATE_REF_INTERVAL: Ns = 1_000 * MSEC;
pub(super) const RATE_SHIFT: u32 = 16;
/// Reference peak rates and weight-raising durations of a rotational and a
/// non-rotational device (`ref_rate`, `ref_wr_duration`).
pub(super) const REF_RATE: [u64; 2] = [14_000, 33_000];
pub(super) const REF_WR_DURATION_MS: [u64; 2] = [7_000, 2_500];
/// Interactive weight raising ends after this much service (`max_service_from_wr`).
pub(super) const MAX_SERVICE_FROM_WR: u64 = 120_000;
/// Weight raising (`bfq_wr_*`).
pub(super) const WR_COEFF: u64 = 30;
pub(super) const WR_RT_MAX_TIME: Ns = 300 * MSEC;
pub(super) const WR_MIN_IDLE_TIME: Ns = 2_000 * MSEC;
pub(super) const WR_MIN_INTER_ARR_ASYNC: Ns = 500 * MSEC;
/// Sectors per second a soft real-time application may need at most.
pub(super) const WR_MAX_SOFTRT_RATE: u64 = 7_000;
pub(super) const SOFTRT_WEIGHT_FACTOR: u64 = 100;
/// Only queues of the default weight (best effort 4) are weight raised.
pub(super) const DEFAULT_WEIGHT: u64 = 40;
/// A group's weight unless its `io.bfq.weight` says otherwise (`BFQ_DEFAULT_GRP_WEIGHT`).
pub(crate) const DEFAULT_GROUP_WEIGHT: u64 = 100;
/// `BFQ_MIN_WEIGHT`, `BFQ_MAX_WEIGHT`: the range `io.bfq.weight` accepts.
pub(super) const MIN_WEIGHT: u64 = 1;
pub(super) const MAX_WEIGHT: u64 = 1000;
/// Large bursts of queue creations (`bfq_large_burst_thresh`, `bfq_burst_interval`).
pub(super) const LARGE_BURST_THRESH: u32 = 8;
pub(super) const BURST_INTERVAL: Ns = 180 * MSEC;
/// The idle class is served at least this often (`BFQ_CL_IDLE_TIMEOUT`, HZ/5).
pub(super) const CL_IDLE_TIMEOUT: Ns = 200 * MSEC;
/// Virtual-time precision (`WFQ_SERVICE_SHIFT`).
pub(super) const WFQ_SERVICE_SHIFT: u32 = 22;
/// A sync queue's request arriving this soon after another queue's completion counts
/// toward that queue being its waker (`bfq_check_waker`); three such arrivals within
/// 128 × slice_idle make it one.
pub(super) const WAKER_WINDOW: Ns = 4 * MSEC;
pub(super) const WAKER_DETECTIONS: u32 = 3;
/// `jiffies + 4` in `bfq_bfqq_softrt_next_start`, at HZ = 1000.
pub(super) const SOFTRT_SLACK: Ns = 4 * MSEC;
