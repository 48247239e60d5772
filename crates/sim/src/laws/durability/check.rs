//! The durability law on the machine: the promises each sync call makes, watched until it
//! returns, and broken if it returns before its pages are written.

use super::*;
use crate::laws::Law;
use crate::machine::Machine;
use crate::mm::page_cache::PageState;
use crate::workload::state::SyncWait;

impl Machine {
    /// An fsync() of `ino` (or, with None, a sync()) by `tid` begins.
    pub(crate) fn durability_begin(&mut self, tid: u32, ino: Option<u32>) {
        match ino {
            Some(i) => self.durability_begin_range(tid, i, 0, u64::MAX, false),
            None => self.durability_begin_scope(tid, None, (0, u64::MAX), false),
        }
    }

    /// An fsync of pages [first, end) of `ino` (fdatasync or O_DSYNC with `datasync`) starts.
    pub(crate) fn durability_begin_range(&mut self, tid: u32, ino: u32, first: u64, end: u64, datasync: bool) {
        self.durability_begin_scope(tid, Some(ino), (first, end), datasync);
    }

    fn durability_begin_scope(&mut self, tid: u32, ino: Option<u32>, (first, end): (u64, u64), datasync: bool) {
        if !self.laws.on {
            return;
        }
        let inodes: Vec<u32> = match ino {
            Some(i) => vec![i],
            None => (0..self.inodes.len() as u32)
                .filter(|&i| {
                    let m = &self.inodes[i as usize].mapping;
                    m.nr_dirty + m.nr_writeback > 0
                })
                .collect(),
        };
        let mut p = Promise {
            what: match (ino.is_some(), datasync) {
                (false, _) => "sync",
                (true, false) => "fsync",
                (true, true) => "fdatasync",
            },
            called: self.now(),
            runs: Vec::new(),
            log_from: Vec::new(),
            meta: None,
            datasync,
        };
        for &i in &inodes {
            let m = &self.inodes[i as usize].mapping;
            for st in [PageState::Dirty, PageState::Writeback, PageState::WritebackDirty] {
                p.runs.extend(m.runs_in_state(st).filter_map(|(s, n)| {
                    let (a, b) = (s.max(first), (s + n).min(end));
                    (a < b).then_some((i, a, b - a))
                }));
            }
            let w = self.laws.durability.watched.entry(i).or_default();
            w.watchers += 1;
            p.log_from.push((i, w.log.len()));
            if ino.is_some() {
                let (need, seq) = self.inodes[i as usize].sync_need(datasync);
                p.meta = Some((i, need, seq, w.converted.len()));
            }
        }
        self.laws.durability.promises[tid as usize] = Some(p);
    }

    /// The call of `tid` returns: every promised page must be clean now, or dirtied again since.
    pub(crate) fn durability_end(&mut self, tid: u32) {
        if !self.laws.on {
            return;
        }
        let Some(p) = self.laws.durability.promises[tid as usize].take() else {
            return;
        };
        let mut broken = None;
        // A device holding promised data that wants a cache flush (none is owed for pages
        // dirtied again after the call).
        let mut owes_flush = None;
        for &(ino, start, n) in &p.runs {
            if broken.is_some() {
                break;
            }
            let m = &self.inodes[ino as usize].mapping;
            let mut idx = start;
            while idx < start + n {
                let (st, len) = m.run_at(idx, start + n - idx);
                let unsafe_now = st.is_some_and(|s| s.is_dirty() || s.under_writeback());
                let redirtied = self.redirtied(&p, ino, idx, len);
                if unsafe_now && !redirtied {
                    broken = Some((ino, idx, len, st));
                    break;
                }
                let dev = self.inodes[ino as usize].dev;
                if !redirtied && self.fs_flushes(dev) {
                    owes_flush.get_or_insert(dev);
                }
                idx += len;
            }
        }
        let flushed = matches!(self.tasks[tid as usize].sync, Some(SyncWait::Flush { left: 0 }));
        let metadata = if broken.is_none() { self.metadata_not_durable(&p) } else { None };
        for &(ino, _) in &p.log_from {
            let watched = &mut self.laws.durability.watched;
            if let Some(w) = watched.get_mut(&ino) {
                w.watchers -= 1;
                if w.watchers == 0 {
                    watched.remove(&ino);
                }
            }
        }
        if let Some((ino, idx, len, st)) = broken {
            let what = p.what;
            let v = self.violation(
                Law::Durability,
                self.task_label(tid),
                format!(
                    "{what} called at {:.6} s returned while pages {idx}..{} of {} (dirty or under writeback at the call) \
                     are still {:?}; the file has {} dirty and {} under writeback",
                    p.called as f64 / 1e9,
                    idx + len,
                    self.inode_label(ino),
                    st.expect("dirty or writeback"),
                    self.inodes[ino as usize].mapping.nr_dirty,
                    self.inodes[ino as usize].mapping.nr_writeback
                ),
            );
            self.laws.break_law(v);
        } else if let Some(why) = metadata {
            let v = self.violation(
                Law::Durability,
                self.task_label(tid),
                format!("{} called at {:.6} s returned before {why}", p.what, p.called as f64 / 1e9),
            );
            self.laws.break_law(v);
        } else if let (Some(dev), false) = (owes_flush, flushed) {
            let v = self.violation(
                Law::Durability,
                self.task_label(tid),
                format!(
                    "{} called at {:.6} s returned before a cache flush of {}: its data may still sit in the \
                     device's volatile write cache",
                    p.what,
                    p.called as f64 / 1e9,
                    self.queues[dev as usize].name
                ),
            );
            self.laws.break_law(v);
        }
    }

    /// What of the metadata the call of `p` promised is not durable at its return: the
    /// transaction its file needed at the call, or one that converted a promised page since.
    fn metadata_not_durable(&self, p: &Promise) -> Option<String> {
        let (ino, need, seq, conv_from) = p.meta?;
        let j = self.journal(self.inodes[ino as usize].dev)?;
        let durable = |t: u32, s: u64| t == 0 || j.committed(t) || self.inodes[ino as usize].fc_seq >= s;
        if !durable(need, seq) {
            let what = if p.datasync { "size or allocation" } else { "metadata" };
            return Some(format!(
                "transaction {need}, which holds {}'s {what} change, was committed",
                self.inode_label(ino)
            ));
        }
        let w = self.laws.durability.watched.get(&ino)?;
        for &(s, n, t, q) in &w.converted[conv_from..] {
            let promised = p.runs.iter().any(|&(i, a, m)| i == ino && s < a + m && a < s + n);
            if promised && !durable(t, q) && !self.redirtied(p, ino, s, n) {
                return Some(format!(
                    "transaction {t}, which converted the unwritten extent of pages {s}..{} of {}, was committed",
                    s + n,
                    self.inode_label(ino)
                ));
            }
        }
        None
    }

    /// Whether pages [idx, idx + len) of `ino` were all dirtied again after the call of `p`.
    fn redirtied(&self, p: &Promise, ino: u32, idx: u64, len: u64) -> bool {
        let Some(&(_, from)) = p.log_from.iter().find(|(i, _)| *i == ino) else {
            return false;
        };
        let Some(w) = self.laws.durability.watched.get(&ino) else {
            return false;
        };
        (idx..idx + len).all(|page| w.log[from..].iter().any(|&(s, n)| page >= s && page < s + n))
    }
}
