//! Which PSI states the machine's entities are in, kept up to date as they sleep, wake and
//! run (`psi_task_change`, `psi_task_switch`): user tasks in the system and in their cgroup
//! and its ancestors; the flusher and device threads, kernel threads of the root, in the
//! system while they hold a CPU.

use crate::kernel::cpu::Who;
use crate::kernel::psi::{TSK_ONCPU, TSK_RUNNING};
use crate::machine::Machine;
use crate::metrics::PressureSample;
use crate::Ns;

impl Machine {
    /// Brings the accounting of task `tid` to the states it is in now, on the CPU it last ran
    /// on (a sleeping task counts where it slept, as in the kernel).
    pub(crate) fn psi_task_refresh(&mut self, tid: u32) {
        let t = &self.tasks[tid as usize];
        let want = t.psi_states();
        let cpu = t.dirty.cpu as u16;
        let (have, at) = t.psi;
        if want == have && (at == cpu || want == 0) {
            return;
        }
        let now = self.q.now();
        let memcgs = &self.memcgs;
        let path = || std::iter::successors(t.memcg, |&c| memcgs[c as usize].parent);
        if at != cpu && have != 0 {
            self.psi.change(now, at as usize, path(), have, 0);
            self.psi.change(now, cpu as usize, path(), 0, want);
        } else {
            self.psi.change(now, cpu as usize, path(), have, want);
        }
        self.tasks[tid as usize].psi = (want, cpu);
    }

    /// Kernel thread `who` (a flusher, a device's worker) began (`on`) or ended a burst on
    /// `cpu`: a thread of the root, runnable only while it runs here. (A task's bursts are
    /// among its states: [`Machine::psi_task_refresh`].)
    pub(crate) fn psi_oncpu(&mut self, who: Who, cpu: u16, on: bool) {
        debug_assert!(!matches!(who, Who::Task(_)));
        let bits = TSK_ONCPU | TSK_RUNNING;
        let (clear, set) = if on { (0, bits) } else { (bits, 0) };
        self.psi.change(self.q.now(), cpu as usize, std::iter::empty(), clear, set);
    }

    /// Collect every group's pressure up to `now` and keep this second's figures.
    pub(crate) fn psi_sample(&mut self, now: Ns) {
        self.psi.sample(now);
        for (g, group) in self.psi.groups.iter().enumerate() {
            let (io, mem, cpu) = (
                group.pressure(crate::kernel::psi::IO_SOME),
                group.pressure(crate::kernel::psi::MEM_SOME),
                group.pressure(crate::kernel::psi::CPU_SOME),
            );
            // The system's cpu `full` is not shown (the kernel prints zeros): some CPU always
            // runs something while anything is runnable, machine-wide.
            let cpu_full = if g == 0 { Default::default() } else { cpu.1 };
            self.pressure.push(PressureSample {
                t_ns: now,
                group: g as u16,
                figures: [io.0, io.1, mem.0, mem.1, cpu.0, cpu_full],
            });
        }
    }
}
