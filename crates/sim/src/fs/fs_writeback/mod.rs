//! The flusher: one per wb (`fs/fs-writeback.c`).
//!
//! The kernel's nested loops (`wb_workfn` → `wb_do_writeback` → `wb_writeback` →
//! `writeback_sb_inodes` → `__writeback_single_inode`) are flattened into a state machine that
//! advances one inode visit at a time, so the flusher can sleep where the kernel's does: on
//! a CPU while it walks pages, in blk-wbt or for a tag while it submits. Work order, the
//! b_dirty/b_io/b_more_io lists, the 100 ms slice, the ~0.5 s chunk and `wb_over_bg_thresh`
//! follow 6.18.
//!
//! The same structure serves the per-bdi flusher threads of 2.6.32–3.x (`flush-MAJ:MIN`),
//! with the generation's chunk rule: `MAX_WRITEBACK_PAGES` = 1024 pages per inode visit before
//! 3.1, about half a second of bandwidth after. In the pdflush generations (2.6.0–2.6.31) the
//! per-device entity runs only explicit works (sync); background and periodic writeback is
//! pdflush's (`fs/pdflush/`). [`Machine::writeback_inodes_wb`] is the inode walk that dirtiers
//! (I/O-issuing generations) and pdflush threads do in their own context.
//!
//! Simplifications: a single superblock per device; no lazytime lists; a pass that makes no
//! progress sleeps in `inode_sleep_on_writeback` only on an inode another writer holds
//! (`I_SYNC`); otherwise the work ends.

mod writeback;

use crate::metrics::trace::WbReason;
use crate::Ns;
use std::collections::VecDeque;

/// CPU cost of writeback per page submitted (page-cache walk, bio building), ns.
pub(crate) const WRITEBACK_NS_PER_PAGE: Ns = 40;

/// `struct wb_writeback_work`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WbWork {
    pub nr_pages: i64,
    /// WB_SYNC_ALL (sync(2)) rather than WB_SYNC_NONE.
    pub sync_all: bool,
    pub for_kupdate: bool,
    pub for_background: bool,
    pub reason: WbReason,
    /// The sync() caller waiting for this work (`work->done`).
    pub waiter: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
struct CurWork {
    w: WbWork,
    queued: bool,
    in_pass: bool,
    pass_done: bool,
    slice_start: u64,
    total_wrote: u64,
    dirtied_before: u64,
}

/// The fs side of a `struct bdi_writeback`: dirty inode lists, work items and the flusher.
pub(crate) struct Wb {
    /// Newest at the front, oldest at the back.
    pub b_dirty: VecDeque<u32>,
    pub b_io: VecDeque<u32>,
    pub b_more_io: VecDeque<u32>,
    pub work_list: VecDeque<WbWork>,
    /// `WB_start_all` with its recorded reason.
    pub start_all: Option<WbReason>,
    /// jiffies of the last kupdate flush.
    pub last_old_flush: u64,
    /// `WB_writeback_running`.
    pub running: bool,
    /// Earliest pending wakeup of the flusher's delayed work.
    pub wake_at: Option<Ns>,
    cur: Option<CurWork>,
    /// Position in `wb_do_writeback`: 0 works, 1 start-all, 2 kupdate, 3 background, 4 end.
    stage: u8,
    /// Requests built and not yet accepted by the block layer.
    pub pending: VecDeque<u32>,
    pub blocked: bool,
    pub on_cpu: bool,
    pub bw_dwork_pending: bool,
    /// Woken while running: run `wb_do_writeback` again (the delayed work was re-queued).
    pub rerun: bool,
    /// A pass wrote nothing because others held its inodes: it sleeps until this one's
    /// `I_SYNC` clears (`inode_sleep_on_writeback`), `blocked` meanwhile.
    pub waiting_on: Option<u32>,
}

impl Wb {
    pub(crate) fn new(now_jiffies: u64) -> Self {
        Wb {
            b_dirty: VecDeque::new(),
            b_io: VecDeque::new(),
            b_more_io: VecDeque::new(),
            work_list: VecDeque::new(),
            start_all: None,
            last_old_flush: now_jiffies,
            running: false,
            wake_at: None,
            cur: None,
            stage: 0,
            pending: VecDeque::new(),
            blocked: false,
            on_cpu: false,
            bw_dwork_pending: false,
            rerun: false,
            waiting_on: None,
        }
    }

    /// `wb_has_dirty_io`.
    pub(crate) fn has_dirty_io(&self) -> bool {
        !(self.b_dirty.is_empty() && self.b_io.is_empty() && self.b_more_io.is_empty())
    }
}

fn list_remove(l: &mut VecDeque<u32>, ino: u32) {
    if let Some(p) = l.iter().position(|&x| x == ino) {
        l.remove(p);
    }
}

/// What the flusher does next.
pub(crate) enum Step {
    Continue,
    Cpu(Ns),
    Idle,
}
