//! Virtual time: nanoseconds since boot, and the jiffies view of it that kernel code uses.

/// Nanoseconds of virtual time.
pub type Ns = u64;

pub const NSEC_PER_USEC: Ns = 1_000;
pub const NSEC_PER_MSEC: Ns = 1_000_000;
pub const NSEC_PER_SEC: Ns = 1_000_000_000;

/// The scheduler tick. Kernel code in the model reads time in jiffies, as the real code does,
/// so pauses, periods and think times come out in whole ticks (4 ms at HZ = 250).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    pub hz: u64,
    tick_ns: Ns,
    /// Where in a tick the run starts, ns (below one tick): the kernel's tick has run since
    /// boot, so a workload starts anywhere within one, and every timer, pause and jiffies
    /// sample of the run keeps that offset.
    pub phase: Ns,
}

impl Clock {
    pub(crate) fn new(hz: u64) -> Self {
        let hz = hz.max(1);
        Clock {
            hz,
            tick_ns: NSEC_PER_SEC / hz,
            phase: 0,
        }
    }

    /// Length of one jiffy in nanoseconds.
    pub(crate) fn tick_ns(&self) -> Ns {
        self.tick_ns
    }

    /// `jiffies` at virtual time `now`. Starts at 1 so that 0 can mean "never", as
    /// `dirty_paused_when == 0` does in the kernel.
    pub(crate) fn jiffies(&self, now: Ns) -> u64 {
        (now + self.phase) / self.tick_ns + 1
    }

    /// Virtual time at which `jiffies` reaches `j` (the tick boundary a timer fires on).
    pub(crate) fn at_jiffies(&self, j: u64) -> Ns {
        (j.saturating_sub(1) * self.tick_ns).saturating_sub(self.phase)
    }

    /// `jiffies_to_msecs`, truncating as the trace points do.
    pub(crate) fn jiffies_to_msecs(&self, j: i64) -> i64 {
        j * 1000 / self.hz as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jiffies_round_trip_on_tick_boundaries() {
        let c = Clock::new(250);
        assert_eq!(c.tick_ns(), 4 * NSEC_PER_MSEC);
        assert_eq!(c.jiffies(0), 1);
        assert_eq!(c.jiffies(3_999_999), 1);
        assert_eq!(c.jiffies(4_000_000), 2);
        assert_eq!(c.at_jiffies(c.jiffies(8_000_000) + 5), 28_000_000);
        assert_eq!(c.jiffies_to_msecs(3), 12);
        assert_eq!(c.jiffies_to_msecs(-1), -4);
    }

    #[test]
    fn a_phase_moves_the_ticks_and_keeps_every_instant_inside_its_jiffy() {
        let c = Clock {
            phase: 1_500_000,
            ..Clock::new(250)
        };
        // The first tick comes 2.5 ms into the run, not at 4 ms.
        assert_eq!(c.jiffies(0), 1);
        assert_eq!(c.jiffies(2_499_999), 1);
        assert_eq!(c.jiffies(2_500_000), 2);
        assert_eq!(c.at_jiffies(2), 2_500_000);
        for t in (0..20_000_000).step_by(333_333) {
            let j = c.jiffies(t);
            assert!(c.at_jiffies(j) <= t && t < c.at_jiffies(j + 1), "t {t} j {j}");
        }
    }
}
