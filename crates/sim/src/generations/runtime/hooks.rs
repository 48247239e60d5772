//! What each kernel generation adds to the running machine: its flusher threads, congestion
//! waits and old LRU, called from the paths they differ in.

use super::*;
use crate::config::QueueEra;
use crate::machine::Machine;

impl Machine {
    /// `clear_bdi_congested` on a write queue: wake every `congestion_wait` sleeper.
    pub(crate) fn congestion_clear(&mut self) {
        if self.era.congestion_waiters.is_empty() {
            return;
        }
        let waiters = std::mem::take(&mut self.era.congestion_waiters);
        for w in waiters {
            match w {
                CongestionWaiter::Task(t, gen) => {
                    if self.tasks[t as usize].wait_gen == gen {
                        self.wake_task(t);
                    }
                }
                CongestionWaiter::Pdflush(f) => self.pdflush_wake(f),
            }
        }
    }

    /// A request of device `d` completed: give back its request slot (legacy era) or tag.
    /// Requests admitted in its place are pushed to `accepted`.
    pub(crate) fn release_slot(&mut self, d: usize, op: crate::drivers::Op, hctx: u16, accepted: &mut Vec<u32>) {
        let now = self.now();
        if self.queues[d].legacy.is_some() {
            let cleared = self.queues[d].legacy_freed(now, op, accepted);
            if cleared && op == crate::drivers::Op::Write {
                self.congestion_clear();
            }
            if op == crate::drivers::Op::Write && !self.era.write_waiters.is_empty() {
                self.write_completed(d as u16);
            }
        } else {
            self.queues[d].put_tag(now, hctx, accepted);
        }
    }

    /// Era-specific setup once the machine is built: legacy request lists, the pdflush
    /// threads' flusher entities and timer, the metadata jobs' trees.
    pub(crate) fn setup_era(&mut self) {
        if self.era.legacy_queue {
            // 2.4: `queue_nr_requests` slots split between READ and WRITE, freed in batches.
            let v24 = self.cfg.policy.queue == QueueEra::Legacy(crate::config::LegacyLists::V24);
            // blk-flush (2.6.37) puts a flush sequence's write at the queue's front; barriers
            // before it went through the elevator.
            let flush_front = crate::generations::parse_version(&self.cfg.kernel).is_ok_and(|v| v >= crate::generations::Version(2, 6, 37));
            for (q, d) in self.queues.iter_mut().zip(&self.cfg.devices) {
                q.flush_front = flush_front;
                q.legacy = Some(if v24 {
                    crate::block::request_list::RequestList::new_24(d.queue.nr_requests)
                } else {
                    crate::block::request_list::RequestList::new(d.queue.nr_requests)
                });
                // A 2.6 dm/md stripe: its members' lists, of an equal share each.
                if let (crate::config::DeviceModelConfig::Raid0(p), false) = (&d.model, v24) {
                    let per_member = (d.queue.nr_requests / p.members.max(1)).max(4);
                    q.stripe = Some(crate::block::request_list::StripeReads::new(p.members, p.chunk / 512, per_member));
                }
            }
        }
        let now_j = self.jiffies();
        for _ in 0..self.era.extra_flushers() {
            self.flushers.push(crate::fs::fs_writeback::Wb::new(now_j));
        }
        self.setup_meta_jobs();
    }

    /// Start-of-run hooks of the generation (timers).
    pub(crate) fn start_era(&mut self) {
        if self.era.pdflush.is_some() {
            self.pdflush_start();
        }
        if self.era.bdflush.is_some() {
            self.bdflush_start();
        }
    }

    /// 2.4 `wait_for_some_buffers`: `who` sleeps until the oldest write in flight on `dev`
    /// completes. With one sequential stream the elevator keeps writes in submission order,
    /// so the oldest in flight is the next write to complete. False (no sleep) when no write
    /// is in flight.
    pub(crate) fn wait_oldest_write(&mut self, dev: u16, who: WriteWaiter) -> bool {
        let in_flight = self.queues[dev as usize].legacy.as_ref().map_or(0, |rl| rl.count[1]);
        if in_flight == 0 {
            return false;
        }
        let who = match who {
            WriteWaiter::Task(t, _) => {
                // A long timeout: the completion wakes it.
                self.sleep_task(t, 3_600_000_000_000);
                WriteWaiter::Task(t, self.tasks[t as usize].wait_gen)
            }
            w => w,
        };
        self.era.write_waiters.push((dev, who));
        true
    }

    /// A write of `dev` completed: wake its `wait_for_some_buffers` sleepers.
    fn write_completed(&mut self, dev: u16) {
        let mut i = 0;
        while i < self.era.write_waiters.len() {
            if self.era.write_waiters[i].0 != dev {
                i += 1;
                continue;
            }
            let (_, who) = self.era.write_waiters.swap_remove(i);
            match who {
                WriteWaiter::Task(t, gen) => {
                    if self.tasks[t as usize].wait_gen == gen {
                        self.wake_task(t);
                    }
                }
                WriteWaiter::Bdflush(w) => self.bdflush_io_done(w),
            }
        }
    }
}
