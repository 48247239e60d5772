//! The laws on the running machine: the progress law after each event, the full checks when
//! their time has come, and the labels their violations name.

use super::{event_kind, spin_limit, Law, LawViolation, CHECK_INTERVAL, CHECK_STATE_UNIT, EVENT_KINDS};
use crate::machine::{Event, Machine};
use crate::Ns;

impl Machine {
    /// After each event: the progress law, and the full checks when their time has come.
    pub(crate) fn laws_after_event(&mut self, t: Ns, ev: &Event) {
        if !self.laws.on {
            return;
        }
        let (k, name) = event_kind(ev);
        let l = &mut self.laws;
        if t == l.streak_at {
            l.streak += 1;
            l.census[k] += 1;
            l.census_names[k] = name;
            let limit = spin_limit(self.tasks.len() + self.queues.len() + self.flushers.len());
            if l.streak > limit {
                let mut kinds: Vec<(u64, &str)> = (0..EVENT_KINDS)
                    .filter(|&i| l.census[i] > 0)
                    .map(|i| (l.census[i], l.census_names[i]))
                    .collect();
                kinds.sort_by_key(|k| std::cmp::Reverse(k.0));
                let list: Vec<String> = kinds.iter().map(|(n, k)| format!("{k} ×{n}")).collect();
                let v = LawViolation {
                    law: Law::Progress,
                    t_ns: t,
                    subject: "the event loop".into(),
                    detail: format!(
                        "{} events at this one instant without time advancing (limit {limit}): {}",
                        l.streak,
                        list.join(", ")
                    ),
                };
                l.break_law(v);
            }
        } else {
            l.streak_at = t;
            l.streak = 1;
            l.census = [0; EVENT_KINDS];
            l.census[k] = 1;
            l.census_names[k] = name;
        }
        if t >= self.laws.next_check {
            let slots: usize = self.queues.iter().map(|q| q.request_slots()).sum();
            self.laws.next_check = t + CHECK_INTERVAL * (1 + (slots / CHECK_STATE_UNIT) as Ns);
            self.check_laws();
        }
    }

    /// Check every law that can be checked at any instant. Returns the first violation.
    pub fn check_laws(&mut self) -> Option<LawViolation> {
        if self.laws.broken.is_none() {
            let v = self
                .law_conservation()
                .or_else(|| self.law_liveness())
                .or_else(|| self.law_expiry());
            if let Some(v) = v {
                self.laws.break_law(v);
            }
        }
        self.laws.broken.clone()
    }

    /// The violation for `law` at the current time.
    pub(crate) fn violation(&self, law: Law, subject: impl Into<String>, detail: impl Into<String>) -> LawViolation {
        LawViolation {
            law,
            t_ns: self.now(),
            subject: subject.into(),
            detail: detail.into(),
        }
    }

    /// "task NAME#I (pid P)" for messages.
    pub(crate) fn task_label(&self, tid: u32) -> String {
        let t = &self.tasks[tid as usize];
        format!("task {}#{} (pid {})", t.name, t.instance, t.pid)
    }

    /// "inode N (NAME#I's file) on DEV" for messages.
    pub(crate) fn inode_label(&self, ino: u32) -> String {
        if let Some(dev) = crate::fs::jbd2::bdev_of(ino) {
            return format!("the metadata buffers of {}", self.queues[dev as usize].name);
        }
        let dev = &self.queues[self.inodes[ino as usize].dev as usize].name;
        match self.tasks.iter().find(|t| t.file == ino) {
            Some(t) => format!("inode {ino} ({}#{}'s file) on {dev}", t.name, t.instance),
            None => format!("inode {ino} (metadata) on {dev}"),
        }
    }
}
