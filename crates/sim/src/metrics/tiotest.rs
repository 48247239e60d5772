//! tiotest's per-phase table, as tiotest prints it (see `workload/tiotest.rs`).

use crate::Ns;

/// One phase's figures over all threads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TiotestPhase {
    pub name: &'static str,
    /// What the phase is set to move (threads × file size, or × random ops × block).
    pub planned_bytes: u64,
    /// What it moved (less if the run ended first).
    pub bytes: u64,
    pub time_ns: Ns,
    pub usr_ns: Ns,
    pub sys_ns: Ns,
    /// Wait-queue schedules of the threads during the phase (`wait_on_page_bit`,
    /// `__lock_page`, `__wait_on_buffer`, `do_get_write_access`).
    pub wait_on_page_bit: u64,
    pub lock_page: u64,
    pub wait_on_buffer: u64,
    pub do_get_write_access: u64,
    /// Whether every thread finished it.
    pub complete: bool,
}

impl TiotestPhase {
    fn secs(&self) -> f64 {
        self.time_ns as f64 / 1e9
    }
    /// MB/s as tiotest prints it (MB = 2^20 bytes).
    pub fn rate_mb_s(&self) -> f64 {
        if self.time_ns == 0 {
            return 0.0;
        }
        self.bytes as f64 / (1u64 << 20) as f64 / self.secs()
    }
    pub fn usr_pct(&self) -> f64 {
        if self.time_ns == 0 {
            return 0.0;
        }
        100.0 * self.usr_ns as f64 / self.time_ns as f64
    }
    pub fn sys_pct(&self) -> f64 {
        if self.time_ns == 0 {
            return 0.0;
        }
        100.0 * self.sys_ns as f64 / self.time_ns as f64
    }
    /// Throughput scaled by CPU: MB per CPU-second (usr + sys), as in wli's report.
    pub fn mb_per_cpu_sec(&self) -> f64 {
        let cpu = (self.usr_ns + self.sys_ns) as f64 / 1e9;
        if cpu == 0.0 {
            return 0.0;
        }
        self.bytes as f64 / (1u64 << 20) as f64 / cpu
    }
}
