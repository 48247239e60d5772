//! The kernel's pressure stall files (`/proc/pressure/{io,memory,cpu}`), read each second of
//! a measurement so that its results carry the same pressure figures a simulation does.

use wblab_sim::metrics::Pressure;

/// `some` and `full` of one pressure file's text; a file without a `full` line (cpu before
/// 5.13) gives zeros for it.
pub fn parse(text: &str) -> Option<(Pressure, Pressure)> {
    let line = |kind: &str| -> Option<Pressure> {
        let l = text.lines().find(|l| l.starts_with(kind))?;
        let mut p = Pressure::default();
        for field in l.split_whitespace().skip(1) {
            let (k, v) = field.split_once('=')?;
            match k {
                "avg10" => p.avg10 = v.parse().ok()?,
                "avg60" => p.avg60 = v.parse().ok()?,
                "avg300" => p.avg300 = v.parse().ok()?,
                "total" => p.total_us = v.parse().ok()?,
                _ => {}
            }
        }
        Some(p)
    };
    Some((line("some ")?, line("full ").unwrap_or_default()))
}

/// The system's io, memory and cpu pressure now, `some` then `full` of each, or `None` where
/// the kernel has no PSI (`CONFIG_PSI=n`, or `psi=0` on its command line).
pub fn read_system() -> Option<[Pressure; 6]> {
    let mut out = [Pressure::default(); 6];
    for (i, res) in ["io", "memory", "cpu"].into_iter().enumerate() {
        let (some, full) = parse(&std::fs::read_to_string(format!("/proc/pressure/{res}")).ok()?)?;
        out[2 * i] = some;
        out[2 * i + 1] = full;
    }
    Some(out)
}

/// `now`'s figures with the totals counted from `base` (the run's start), as a simulation
/// counts them; the averages are the kernel's own, which remember the seconds before.
pub fn since(now: [Pressure; 6], base: &[Pressure; 6]) -> [Pressure; 6] {
    let mut out = now;
    for (o, b) in out.iter_mut().zip(base) {
        o.total_us = o.total_us.saturating_sub(b.total_us);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_s_lines_read_back() {
        let (some, full) =
            parse("some avg10=12.50 avg60=3.02 avg300=0.71 total=4521900\nfull avg10=8.00 avg60=1.99 avg300=0.46 total=2971234\n").unwrap();
        assert_eq!((some.avg10, some.avg60, some.total_us), (12.5, 3.02, 4_521_900));
        assert_eq!((full.avg300, full.total_us), (0.46, 2_971_234));
        let (cpu, none) = parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=17\n").unwrap();
        assert_eq!((cpu.total_us, none.total_us), (17, 0));
        assert!(parse("garbage").is_none());
    }
}
