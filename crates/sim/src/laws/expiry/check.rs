//! The expiry law on the machine: no inode dirty past its expiry while its device and
//! flushers are idle.

use crate::config::FlusherKind;
use crate::laws::{Law, LawViolation};
use crate::machine::Machine;
use crate::Ns;

impl Machine {
    /// kupdate's interval and expiry age in ns, or None when periodic writeback is off.
    fn kupdate_times(&self) -> Option<(Ns, Ns)> {
        let tick = self.clock.tick_ns();
        let (interval, expire) = if matches!(self.cfg.policy.flusher, FlusherKind::Bdflush(_)) {
            let b = &self.cfg.sysctl.bdflush;
            (u64::from(b.interval) * tick, u64::from(b.age_buffer) * tick)
        } else {
            let s = &self.cfg.sysctl;
            (
                u64::from(s.dirty_writeback_centisecs) * 10_000_000,
                u64::from(s.dirty_expire_centisecs) * 10_000_000,
            )
        };
        (interval > 0).then_some((interval, expire))
    }

    /// Device `d` has writeback in progress or a flusher at work that may write it.
    fn writeback_busy(&self, d: usize) -> bool {
        let q = &self.queues[d];
        if q.unstable_pages > 0 || q.live_requests().next().is_some() {
            return true;
        }
        // The device's wbs (its root wb and its cgroups'), or the era's shared threads.
        (0..self.flushers.len() as u16).any(|w| {
            let of = self.wbs.get(w as usize).map(|wb| wb.dev as usize);
            of.is_none_or(|dev| dev == d) && self.flusher_working(w)
        })
    }

    pub(crate) fn law_expiry(&mut self) -> Option<LawViolation> {
        let (interval, expire) = self.kupdate_times()?;
        let now = self.now();
        let bound = expire + 2 * interval + 1_000_000_000;
        let m = &mut self.laws.expiry;
        if m.period == 0 {
            m.period = (bound / 16).max(1_000_000_000);
            m.lag = bound.div_ceil(m.period) as usize;
            m.rows = vec![Vec::new(); m.lag + 1];
            m.next = 0;
        }
        if now < m.next {
            return None;
        }
        m.next = now + m.period;
        let slot = m.taken % m.rows.len();
        let mut row = std::mem::take(&mut m.rows[slot]);
        row.clear();
        row.extend(self.inodes.iter().map(|i| i.nr_dirtied));
        let old_slot = (m.taken + 1) % m.rows.len();
        let enough = m.taken >= m.lag;
        m.taken += 1;
        let old = std::mem::take(&mut self.laws.expiry.rows[old_slot]);
        let mut found = None;
        if enough {
            for (ino, &dirtied_then) in old.iter().enumerate() {
                let i = &self.inodes[ino];
                let cleaned = i.nr_written + i.mapping.nr_writeback;
                if dirtied_then > cleaned && !self.writeback_busy(i.dev as usize) {
                    found = Some(self.violation(
                        Law::Expiry,
                        self.inode_label(ino as u32),
                        format!(
                            "{} pages dirtied more than {:.1} s ago (expire {:.1} s + 2 × interval {:.1} s + 1 s) were never \
                             written, and the device is idle: dirtied then {dirtied_then}, written {} + under writeback {}, \
                             dirty now {}, inode dirtied_when {} jiffies ago",
                            dirtied_then - cleaned,
                            bound as f64 / 1e9,
                            expire as f64 / 1e9,
                            interval as f64 / 1e9,
                            i.nr_written,
                            i.mapping.nr_writeback,
                            i.mapping.nr_dirty,
                            self.jiffies().saturating_sub(i.dirtied_when)
                        ),
                    ));
                    break;
                }
            }
        }
        self.laws.expiry.rows[old_slot] = old;
        self.laws.expiry.rows[slot] = row;
        found
    }
}
