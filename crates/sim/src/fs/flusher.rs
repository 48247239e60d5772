//! The generation's background writeback, chosen once: the entry points whose work differs
//! between 2.4's bdflush/kupdate pair, 2.6's pdflush pool and the per-bdi flushers of
//! 2.6.32 onwards (6.x's per-wb workqueue work has the same structure). Each dispatches on
//! the scenario's [`FlusherKind`]; the eras' own code is in `fs/bdflush/`, `fs/pdflush/` and
//! `fs/fs_writeback/`.
//!
//! Flusher entities are numbered: one per device first (they run explicit works such as sync
//! in every generation, and everything in the per-bdi ones), then the era's threads (pdflush's
//! pool, or bdflush and kupdate).

use crate::config::FlusherKind;
use crate::machine::Machine;
use crate::metrics::trace::WbReason;

impl Machine {
    /// Whether the per-device flushers do periodic (kupdate) and background writeback
    /// themselves: the per-bdi generations. Before 2.6.32 a global timer and thread pool do.
    pub(crate) fn wb_does_kupdate(&self) -> bool {
        self.cfg.policy.flusher.is_per_bdi()
    }

    /// `writeback_in_progress(bdi)`: the bdi's flusher runs, or (pdflush generations) a
    /// pdflush thread holds the bdi.
    pub(crate) fn writeback_in_progress(&self, wb: usize) -> bool {
        match self.cfg.policy.flusher {
            FlusherKind::Pdflush => self.era.pdflush_holding[wb],
            _ => self.flushers[wb].running,
        }
    }

    /// `wb_start_background_writeback` (`bdi_start_background_writeback`; 2.6.0–2.6.31
    /// `pdflush_operation(background_writeout, 0)`, which does nothing when no pdflush thread
    /// is idle; 2.4 `wakeup_bdflush()`).
    pub(crate) fn wb_start_background_writeback(&mut self, wb: u16) {
        match self.cfg.policy.flusher {
            FlusherKind::Bdflush(_) => self.wakeup_bdflush(),
            FlusherKind::Pdflush => {
                self.pdflush_operation(crate::fs::pdflush::PdWork::Background, 0);
            }
            FlusherKind::PerBdi | FlusherKind::Modern => self.wb_wakeup(wb),
        }
    }

    /// `wakeup_flusher_threads`: start-all writeback on every wb with dirty inodes
    /// (`wakeup_pdflush(0)`, `wakeup_bdflush()` in the older generations; their sync(2) goes
    /// through the per-device entities' works instead).
    pub(crate) fn wakeup_flusher_threads(&mut self, reason: WbReason) {
        match self.cfg.policy.flusher {
            FlusherKind::Bdflush(_) if reason != WbReason::Sync => self.wakeup_bdflush(),
            FlusherKind::Pdflush if reason != WbReason::Sync => self.wakeup_pdflush(0),
            FlusherKind::Bdflush(_) | FlusherKind::Pdflush => {}
            FlusherKind::PerBdi | FlusherKind::Modern => {
                // Every wb of every bdi, the cgroups' included (`__wakeup_flusher_threads_bdi`).
                for wb in 0..self.wbs.len() {
                    if self.flushers[wb].has_dirty_io() && self.flushers[wb].start_all.is_none() {
                        self.flushers[wb].start_all = Some(reason);
                        self.wb_wakeup(wb as u16);
                    }
                }
            }
        }
    }

    /// A flusher entity's wakeup event fired.
    pub(crate) fn flusher_wakeup_fired(&mut self, w: u16) {
        if self.is_pdflush(w) {
            self.pdflush_event(w)
        } else if self.is_bdflush(w) {
            self.bdflush_event(w)
        } else {
            self.wb_workfn(w)
        }
    }

    /// Drive flusher entity `w` until it sleeps (after a CPU burst, or once its blocked
    /// request was accepted).
    pub(crate) fn flusher_continue(&mut self, w: u16) {
        if self.is_pdflush(w) {
            self.pdflush_continue(w)
        } else if self.is_bdflush(w) {
            self.bdflush_continue(w)
        } else {
            self.wb_continue(w)
        }
    }

    /// The flusher entity `w` is at work or has a wakeup coming (it will submit what it built).
    pub(crate) fn flusher_active(&self, w: u16) -> bool {
        self.flusher_working(w) || self.flushers[w as usize].wake_at.is_some()
    }

    /// The flusher entity `w` is at work now: running its works, or (pdflush, bdflush) in a
    /// pass or waiting for its I/O.
    pub(crate) fn flusher_working(&self, w: u16) -> bool {
        if self.is_pdflush(w) {
            self.pdflush_thread_active(w)
        } else if self.is_bdflush(w) {
            self.bdflush_thread_active(w)
        } else {
            self.flushers[w as usize].running
        }
    }
}
