//! Pressure stall information, as `kernel/sched/psi.c` accounts it: per group (the system and
//! each cgroup) and per CPU, the number of tasks in I/O wait, in a memory stall and runnable,
//! and whether one of them is on the CPU; from these counts, the time each CPU spends in each
//! state (`psi_group_change` → `record_times`). Collection weighs each CPU's stall times by
//! its non-idle time (`collect_percpu_times`), so `some` on a 2-CPU machine with one waiter
//! and an idle CPU is the waiter's share, not half of it; the averages are the kernel's
//! fixed-point exponential decays over 10, 60 and 300 s, updated every 2 s (`calc_avgs`).
//!
//! A task's states are the model's: waiting for a page, a request or a flush, in a
//! `balance_dirty_pages` pause, in a direct read or write (`io_schedule`: I/O wait); sleeping
//! in reclaim, `reclaim_throttle` or a `memory.high` penalty (a memory stall); asking for or
//! holding a CPU (runnable). The journal commit an fsync waits for is a plain
//! `wait_event`, not I/O wait, as in jbd2.

use crate::Ns;

/// Task state bits (`TSK_*`).
pub(crate) const TSK_IOWAIT: u8 = 1 << 0;
pub(crate) const TSK_MEMSTALL: u8 = 1 << 1;
pub(crate) const TSK_RUNNING: u8 = 1 << 2;
/// On a CPU now (`TSK_ONCPU`): at most one per CPU.
pub(crate) const TSK_ONCPU: u8 = 1 << 3;

const NR_IOWAIT: usize = 0;
const NR_MEMSTALL: usize = 1;
const NR_RUNNING: usize = 2;
const NR_ONCPU: usize = 3;

/// The states (`enum psi_states`), and the resources they belong to.
pub(crate) const IO_SOME: usize = 0;
pub(crate) const IO_FULL: usize = 1;
pub(crate) const MEM_SOME: usize = 2;
pub(crate) const MEM_FULL: usize = 3;
pub(crate) const CPU_SOME: usize = 4;
pub(crate) const CPU_FULL: usize = 5;
const NONIDLE: usize = 6;
const NR_STATES: usize = 7;
/// The states reported (all but NONIDLE).
pub(crate) const NR_REPORTED: usize = 6;

/// `PSI_FREQ`: the averages are updated every 2 s.
pub(crate) const PSI_FREQ_NS: Ns = 2_000_000_000;
/// `FIXED_1` and the decays per 2 s period of the 10, 60 and 300 s averages (`EXP_10s`, ...).
const FSHIFT: u32 = 11;
const FIXED_1: u64 = 1 << FSHIFT;
const EXP: [u64; 3] = [1677, 1981, 2034];

/// The states that hold for a CPU's task counts, as a mask (`test_state` for each). A task in
/// a memory stall is asleep here (the model's reclaim does not run on a CPU), so memory is
/// fully stalled when nothing runs.
fn state_mask(t: &[u32; 4]) -> u8 {
    let (io, mem, run, oncpu) = (t[NR_IOWAIT] > 0, t[NR_MEMSTALL] > 0, t[NR_RUNNING] > 0, t[NR_ONCPU] > 0);
    let bit = |cond: bool, s: usize| u8::from(cond) << s;
    bit(io, IO_SOME)
        | bit(io && !run, IO_FULL)
        | bit(mem, MEM_SOME)
        | bit(mem && !run, MEM_FULL)
        | bit(t[NR_RUNNING] > t[NR_ONCPU], CPU_SOME)
        | bit(run && !oncpu, CPU_FULL)
        | bit(io || mem || run, NONIDLE)
}

/// One CPU of one group (`struct psi_group_cpu`).
#[derive(Clone, Debug, Default)]
struct GroupCpu {
    tasks: [u32; 4],
    state_mask: u8,
    state_start: Ns,
    times: [Ns; NR_STATES],
    times_prev: [Ns; NR_STATES],
}

impl GroupCpu {
    /// `record_times`: the time since the last change goes to the states that held.
    fn record(&mut self, now: Ns) {
        let delta = now.saturating_sub(self.state_start);
        self.state_start = now;
        if delta == 0 {
            return;
        }
        // Every state, its bit as a factor: no loop whose length the branch predictor must
        // guess (the mask changes at nearly every call).
        for (s, t) in self.times.iter_mut().enumerate() {
            *t += delta * Ns::from((self.state_mask >> s) & 1);
        }
    }

    fn update_mask(&mut self) {
        self.state_mask = state_mask(&self.tasks);
    }
}

/// One group (`struct psi_group`): the system or a cgroup.
#[derive(Clone, Debug)]
pub(crate) struct PsiGroup {
    cpus: Vec<GroupCpu>,
    /// Stall time per state, µs-exact in ns, as `total=` shows it (in µs).
    pub total: [Ns; NR_REPORTED],
    avg_total: [Ns; NR_REPORTED],
    /// The 10, 60 and 300 s averages per state, fixed point (`FIXED_1` = 100 %).
    avg: [[u64; 3]; NR_REPORTED],
    avg_last: Ns,
}

/// A group's figures for one resource: `some` and `full` as the pressure files print them.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Pressure {
    /// Percent of time, averaged over 10, 60 and 300 s.
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    /// Total stall time, µs.
    pub total_us: u64,
}

impl PsiGroup {
    fn new(ncpu: usize) -> PsiGroup {
        PsiGroup {
            cpus: vec![GroupCpu::default(); ncpu],
            total: [0; NR_REPORTED],
            avg_total: [0; NR_REPORTED],
            avg: [[0; 3]; NR_REPORTED],
            avg_last: 0,
        }
    }

    /// `psi_group_change`: a task on `cpu` left the states `clear` and entered `set`.
    fn change(&mut self, now: Ns, cpu: usize, clear: u8, set: u8) {
        let c = &mut self.cpus[cpu];
        c.record(now);
        for (i, n) in c.tasks.iter_mut().enumerate() {
            let (out, inn) = (u32::from((clear >> i) & 1), u32::from((set >> i) & 1));
            debug_assert!(*n >= out, "psi: task count underflow on cpu {cpu}");
            *n = n.saturating_sub(out) + inn;
        }
        c.update_mask();
    }

    /// `collect_percpu_times`: each CPU's stall time since the last collection, weighed by
    /// its non-idle time, into the group's totals.
    fn collect(&mut self, now: Ns) {
        let mut deltas = [0u128; NR_REPORTED];
        let mut nonidle_total: u128 = 0;
        for c in &mut self.cpus {
            c.record(now);
            let times: [Ns; NR_STATES] = std::array::from_fn(|s| c.times[s] - c.times_prev[s]);
            c.times_prev = c.times;
            let nonidle = u128::from(times[NONIDLE]);
            nonidle_total += nonidle;
            for (d, t) in deltas.iter_mut().zip(times) {
                *d += u128::from(t) * nonidle;
            }
        }
        for (total, d) in self.total.iter_mut().zip(deltas) {
            *total += (d / nonidle_total.max(1)) as Ns;
        }
    }

    /// `update_averages` → `calc_avgs`: the stall share of the period since the last update
    /// folded into the three decaying averages.
    fn update_averages(&mut self, now: Ns) {
        let period = now.saturating_sub(self.avg_last);
        if period == 0 {
            return;
        }
        self.avg_last = now;
        for s in 0..NR_REPORTED {
            let sample = (self.total[s] - self.avg_total[s]).min(period);
            self.avg_total[s] += sample;
            let pct = (u128::from(sample) * 100 * u128::from(FIXED_1) / u128::from(period)) as u64;
            for (a, e) in self.avg[s].iter_mut().zip(EXP) {
                *a = calc_load(*a, e, pct);
            }
        }
    }

    /// The figures of the pressure file for `some` (`IO_SOME`, ...) and the `full` after it.
    pub(crate) fn pressure(&self, some: usize) -> (Pressure, Pressure) {
        let one = |s: usize| Pressure {
            avg10: shown(self.avg[s][0]),
            avg60: shown(self.avg[s][1]),
            avg300: shown(self.avg[s][2]),
            total_us: self.total[s] / 1000,
        };
        (one(some), one(some + 1))
    }
}

/// `calc_load`: one step of a fixed-point exponential decay, rounded up while rising.
fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut n = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        n += FIXED_1 - 1;
    }
    n / FIXED_1
}

/// A fixed-point percentage as the file prints it (`LOAD_INT.LOAD_FRAC`, two decimals).
fn shown(avg: u64) -> f64 {
    let int = avg >> FSHIFT;
    let frac = ((avg & (FIXED_1 - 1)) * 100) >> FSHIFT;
    int as f64 + frac as f64 / 100.0
}

/// Every group's accounting: index 0 is the system, `1 + i` the model's cgroup `i`.
#[derive(Clone, Debug)]
pub(crate) struct Psi {
    pub groups: Vec<PsiGroup>,
    next_avg: Ns,
}

impl Psi {
    pub(crate) fn new(ncpu: usize, ncgroups: usize) -> Psi {
        Psi {
            groups: (0..=ncgroups).map(|_| PsiGroup::new(ncpu.max(1))).collect(),
            next_avg: PSI_FREQ_NS,
        }
    }

    /// A task on `cpu` moved from the states `clear` to `set`, in the system and in each of
    /// `cgroups` (its own and its ancestors', as model indices).
    pub(crate) fn change(&mut self, now: Ns, cpu: usize, cgroups: impl Iterator<Item = u16>, clear: u8, set: u8) {
        if clear == set {
            return;
        }
        self.groups[0].change(now, cpu, clear & !set, set & !clear);
        for g in cgroups {
            self.groups[1 + g as usize].change(now, cpu, clear & !set, set & !clear);
        }
    }

    /// Group `group`'s task counts on `cpu`: in I/O wait, in a memory stall, runnable, on the
    /// CPU (for the laws, which recount them from the tasks).
    pub(crate) fn counts(&self, group: usize, cpu: usize) -> [u32; 4] {
        self.groups[group].cpus[cpu].tasks
    }

    /// Stall time so far of `group` in state `s` (`IO_SOME`, ...), ns.
    pub(crate) fn total(&self, group: usize, s: usize) -> Ns {
        self.groups[group].total[s]
    }

    /// Collect every group's times up to `now`, and update the averages every 2 s.
    pub(crate) fn sample(&mut self, now: Ns) {
        for g in &mut self.groups {
            g.collect(now);
        }
        while now >= self.next_avg {
            let at = self.next_avg;
            for g in &mut self.groups {
                g.update_averages(at);
            }
            self.next_avg += PSI_FREQ_NS;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Ns = 1_000_000_000;

    #[test]
    fn one_waiter_on_an_idle_machine_is_fully_stalled_whatever_the_cpus() {
        let mut p = Psi::new(2, 0);
        p.change(0, 1, std::iter::empty(), 0, TSK_IOWAIT);
        p.sample(10 * S);
        let (some, full) = p.groups[0].pressure(IO_SOME);
        assert_eq!(
            (some.total_us, full.total_us),
            (10_000_000, 10_000_000),
            "the idle CPU does not dilute it"
        );
        assert!(some.avg10 > 60.0 && some.avg10 < 100.0, "{some:?}");
    }

    #[test]
    fn a_runner_beside_the_waiter_makes_it_some_not_full() {
        let mut p = Psi::new(1, 0);
        p.change(0, 0, std::iter::empty(), 0, TSK_IOWAIT);
        p.change(0, 0, std::iter::empty(), 0, TSK_RUNNING | TSK_ONCPU);
        p.change(4 * S, 0, std::iter::empty(), TSK_RUNNING | TSK_ONCPU, 0);
        p.sample(10 * S);
        let (some, full) = p.groups[0].pressure(IO_SOME);
        assert_eq!(some.total_us, 10_000_000);
        assert_eq!(full.total_us, 6_000_000, "full only while nothing ran");
    }

    #[test]
    fn two_runnable_tasks_on_one_cpu_are_cpu_pressure() {
        let mut p = Psi::new(1, 1);
        p.change(0, 0, [0u16].into_iter(), 0, TSK_RUNNING | TSK_ONCPU);
        p.change(0, 0, [0u16].into_iter(), 0, TSK_RUNNING);
        p.sample(2 * S);
        let (some, full) = p.groups[1].pressure(CPU_SOME);
        assert_eq!((some.total_us, full.total_us), (2_000_000, 0));
        assert_eq!(p.groups[0].pressure(IO_SOME).0.total_us, 0);
    }

    #[test]
    fn the_averages_decay_as_the_kernel_s() {
        // A full 2 s period of stall from zero: 100 % × (1 − 1677/2048) = 18.115 %, which the
        // file prints truncated in fixed point after the first update of a stall that began
        // at an update.
        let first = shown(calc_load(0, EXP[0], 100 * FIXED_1));
        assert!((18.10..=18.12).contains(&first), "{first}");
        let mut p = Psi::new(1, 0);
        p.change(0, 0, std::iter::empty(), 0, TSK_MEMSTALL);
        p.sample(300 * S);
        let (some, full) = p.groups[0].pressure(MEM_SOME);
        assert!(
            some.avg10 > 99.0 && some.avg300 > 60.0 && full.avg10 == some.avg10,
            "{some:?} {full:?}"
        );
    }
}
