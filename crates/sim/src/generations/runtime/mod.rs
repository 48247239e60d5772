//! What a generation needs at run time besides its policies: the `congestion_wait` queue of
//! the legacy block layer, the pdflush pool, the old reclaim's LRU. The machine owns one
//! [`EraState`]; the policies themselves are built by [`build_policy`].

mod hooks;

use crate::config::{FlusherKind, ReclaimKind, Scenario, ThrottleKind};
use crate::fs::pdflush::PdflushPool;
use crate::mm::inactive_list::InactiveList;
use crate::mm::page_writeback::{DirtyThrottle, Modern};
use crate::mm::throttle_bdflush::BdflushThrottle;
use crate::mm::throttle_global::GlobalThrottle;
use crate::mm::throttle_ioless::IoLessThrottle;
use crate::mm::throttle_per_bdi::PerBdiThrottle;
use crate::mm::vmstat::VmStat;

/// Who sleeps in 2.4's `wait_for_some_buffers` (the oldest write in flight on a device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteWaiter {
    /// A task, in the sleep numbered `gen` (filled in when it sleeps).
    Task(u32, u32),
    /// bdflush (its flusher index).
    Bdflush(u16),
}

/// Who sleeps in `congestion_wait`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CongestionWaiter {
    /// A task, in the sleep numbered `gen` (a stale entry is ignored).
    Task(u32, u32),
    /// A pdflush thread (its flusher index).
    Pdflush(u16),
}

pub(crate) struct EraState {
    /// `congestion_wqh[WRITE]`: every sleeper is woken when any queue frees a write request
    /// below its congestion-off level.
    pub congestion_waiters: Vec<CongestionWaiter>,
    /// 2.6.0–2.6.31: the pdflush pool; its threads are flusher entities after the per-device
    /// ones.
    pub pdflush: Option<PdflushPool>,
    /// Generations whose reclaim writes dirty pages: the inactive list in insertion order.
    pub inactive: Option<InactiveList>,
    /// 32-bit machines in those generations: the highmem zone (the lowmem zone's list is
    /// `inactive`).
    pub zones: Option<crate::mm::highmem::Zones>,
    pub legacy_queue: bool,
    /// Per device: a pdflush thread holds it (`BDI_pdflush`, `writeback_in_progress`).
    pub pdflush_holding: Vec<bool>,
    /// Per task: time its current balance_dirty_pages call began (I/O-issuing policies).
    pub bdp_entered: Vec<Option<crate::Ns>>,
    /// 2.4: bdflush and kupdate.
    pub bdflush: Option<crate::fs::bdflush::BdflushState>,
    /// 2.4: sleepers in `wait_for_some_buffers`, with the device they wait on.
    pub write_waiters: Vec<(u16, WriteWaiter)>,
    /// Pageout reclaim: kswapd sleeps until then after a pass that freed nothing.
    pub kswapd_sleep_until: Option<crate::Ns>,
}

impl EraState {
    pub(crate) fn new(cfg: &Scenario, ntasks: usize) -> Self {
        let ndev = cfg.devices.len();
        EraState {
            congestion_waiters: Vec::new(),
            pdflush: (cfg.policy.flusher == FlusherKind::Pdflush).then(|| PdflushPool::new(ndev)),
            inactive: (cfg.policy.reclaim != ReclaimKind::Modern).then(InactiveList::default),
            zones: (cfg.policy.reclaim != ReclaimKind::Modern)
                .then(|| {
                    let page = crate::units::PAGE_SIZE;
                    crate::mm::highmem::Zones::boot(cfg.machine.memory / page, cfg.machine.highmem / page, cfg.sysctl.min_free_kbytes)
                })
                .flatten(),
            legacy_queue: cfg.policy.queue.is_legacy(),
            pdflush_holding: vec![false; ndev],
            bdp_entered: vec![None; ntasks],
            bdflush: match cfg.policy.flusher {
                FlusherKind::Bdflush(v) => Some(crate::fs::bdflush::BdflushState::new(ndev, v)),
                _ => None,
            },
            write_waiters: Vec::new(),
            kswapd_sleep_until: None,
        }
    }

    /// Flusher entities beyond the per-device ones (pdflush threads).
    pub(crate) fn extra_flushers(&self) -> usize {
        self.pdflush.as_ref().map_or(0, |p| p.threads.len()) + self.bdflush.as_ref().map_or(0, |_| crate::fs::bdflush::THREADS)
    }
}

/// The throttling policy of the scenario's generation.
pub(crate) fn build_policy(cfg: &Scenario, vm: &VmStat) -> Box<dyn DirtyThrottle> {
    let ncpus = cfg.machine.cpus;
    let nwbs = cfg.devices.len();
    let ntasks = cfg.tasks.iter().map(|t| t.count as usize).sum();
    let shares: Vec<u32> = cfg.devices.iter().map(|d| d.writeout_share_pct).collect();
    match cfg.policy.throttle {
        ThrottleKind::Modern => Box::new(Modern),
        ThrottleKind::Global => Box::new(GlobalThrottle::new(vm, ncpus)),
        ThrottleKind::PerBdi(variant) => Box::new(PerBdiThrottle::new(variant, vm, &cfg.sysctl, ncpus, nwbs, &shares, ntasks)),
        ThrottleKind::IoLess => Box::new(IoLessThrottle::new(vm, &cfg.sysctl, nwbs, &shares)),
        ThrottleKind::Bdflush(variant) => Box::new(BdflushThrottle::new(variant)),
    }
}

/// The comm of flusher entity `i` as the generation named its threads.
pub(crate) fn flusher_comm_name(cfg: &Scenario, i: usize) -> String {
    let ndev = cfg.devices.len();
    match cfg.policy.flusher {
        FlusherKind::Modern => format!("kworker/u{}:{}", 2 * cfg.machine.cpus.max(1), i),
        FlusherKind::Bdflush(_) if i == ndev => "bdflush".to_string(),
        FlusherKind::Bdflush(_) if i > ndev => "kupdated".to_string(),
        _ if i >= ndev => "pdflush".to_string(),
        _ => {
            let d = &cfg.devices[i];
            format!("flush-{}:{}", d.major, d.minor)
        }
    }
}
