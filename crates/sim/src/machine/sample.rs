//! The periodic samples a run keeps: vmstat each second, the throttling state every 200 ms,
//! and the flex-proportions period that ages the writeout shares.

use super::{Event, Machine};
use crate::engine::time::NSEC_PER_SEC;
use crate::kernel::task::Phase;
use crate::metrics::VmstatSample;
use crate::mm::page_writeback;

impl Machine {
    pub(crate) fn on_fprop_period(&mut self) {
        let memcgs_aging = self.memcg_domains_new_period();
        if self.dom.completions.new_period(1) || memcgs_aging {
            self.q.schedule_in(3 * NSEC_PER_SEC, Event::FpropPeriod);
        } else {
            self.fprop_armed = false;
        }
    }

    pub(crate) fn on_sample(&mut self) {
        let now = self.now();
        self.psi_sample(now);
        let mut dtc = page_writeback::DirtyThrottleControl {
            avail: self.vm.dirtyable(),
            ..Default::default()
        };
        page_writeback::domain_dirty_limits(&mut dtc, &self.cfg.sysctl);
        if self.cfg.policy.throttle != crate::config::ThrottleKind::Modern {
            (dtc.bg_thresh, dtc.thresh) = self.era_dirty_limits();
        }
        let (mut bi, mut bo) = (0, 0);
        let mut dw = Vec::with_capacity(self.queues.len());
        let mut dr = Vec::with_capacity(self.queues.len());
        let mut du = Vec::with_capacity(self.queues.len());
        let mut dio = Vec::with_capacity(self.queues.len());
        let since = self.vmstat.last().map_or(0, |s| s.t_ns);
        for q in &mut self.queues {
            bo += std::mem::take(&mut q.sec_submitted_written) / 1024;
            bi += q.sec_read / 1024;
            dw.push(q.sec_written);
            dr.push(q.sec_read);
            q.sec_written = 0;
            q.sec_read = 0;
            dio.push(std::mem::take(&mut q.sec_io));
            // iostat %util over the interval: device time with a request in service.
            let busy = q.device.busy_ns(now);
            du.push(busy.saturating_sub(q.sec_busy_mark) as f64 / now.saturating_sub(since).max(1) as f64);
            q.sec_busy_mark = busy;
        }
        // Latency over time for the tasks whose operations someone waits on; a bulk writer's
        // write() calls are its pauses, kept in throttle.csv and the trace.
        let mut task_ops = Vec::new();
        for (i, t) in self.tasks.iter_mut().enumerate() {
            let ops = std::mem::take(&mut t.sec_ops);
            if ops.ops > 0 && t.job.latency_sensitive() {
                task_ops.push((i as u32, ops));
            }
        }
        let blocked = self
            .tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.phase,
                    Phase::WaitRead | Phase::WaitDirect | Phase::WaitSync | Phase::AfterBdpSleep | Phase::BdpWriteback
                ) || (t.phase == Phase::Alloc && !t.is_done())
                    || (t.phase == Phase::Meta && !t.on_cpu)
            })
            .count() as u32;
        self.vmstat.push(VmstatSample {
            t_ns: now,
            nr_dirty: self.vm.file_dirty(),
            nr_writeback: self.vm.nr_writeback,
            nr_free: self.vm.nr_free,
            nr_file: self.vm.nr_file,
            nr_dirtied: self.vm.nr_dirtied,
            nr_written: self.vm.nr_written,
            dirty_thresh: dtc.thresh,
            dirty_background_thresh: dtc.bg_thresh,
            bi_kb: bi,
            bo_kb: bo,
            procs_running: self.cpus.runnable(),
            procs_blocked: blocked,
            dev_write_bytes: dw,
            dev_read_bytes: dr,
            dev_util: du,
            dev_io: dio,
            task_ops,
        });
        if !self.memcgs.is_empty() {
            dtc.avail = self.vm.dirtyable();
            dtc.dirty = self.vm.dirty_level();
            self.sample_memcgs(now, &dtc);
        }
        if now + NSEC_PER_SEC <= self.cfg.duration {
            self.q.schedule_in(NSEC_PER_SEC, Event::Sample);
        }
    }

    pub(crate) fn on_throttle_sample(&mut self) {
        let now = self.now();
        // The devices' root wbs (a cgroup's wb is sampled with its group).
        for d in 0..self.queues.len() {
            let mut s = page_writeback::throttle_sample(&self.vm, &self.cfg.sysctl, &self.dom, &mut self.wbs[d], d as u16, now);
            s.dirty_rate = 0;
            if let Some(l) = self.policy.era_limits(&self.vm, &self.cfg.sysctl, &self.dom, &self.wbs[d], d) {
                s.era_only(l);
            }
            self.throttle.push(s);
        }
        let step = self.clock.tick_ns() * page_writeback::max_pause_jiffies(self.clock.hz);
        if now + step <= self.cfg.duration {
            self.q.schedule_in(step, Event::ThrottleSample);
        }
    }
}
