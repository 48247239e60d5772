//! `bfq_update_peak_rate`: the device's peak rate, estimated from dispatches, which sets
//! the maximum budget (what the device moves in `timeout_sync`) and the duration of
//! interactive weight raising.

use super::consts::*;
use super::Bfq;
use crate::Ns;

#[derive(Default)]
pub(super) struct PeakRate {
    /// Sectors/µs << 16.
    pub rate: u64,
    pub samples: u32,
    pub sequential: u32,
    pub tot_sectors: u64,
    pub last_rq_max_size: u64,
    pub first_dispatch: Ns,
    pub last_dispatch: Ns,
    pub delta_from_first: Ns,
}

impl Bfq {
    /// `bfq_reset_rate_computation`.
    fn reset_rate_computation(&mut self, rq: Option<u64>, now: Ns) {
        let p = &mut self.peak;
        match rq {
            Some(sectors) => {
                p.first_dispatch = now;
                p.last_dispatch = now;
                p.samples = 1;
                p.sequential = 0;
                p.tot_sectors = sectors;
                p.last_rq_max_size = sectors;
            }
            None => p.samples = 0,
        }
    }

    /// `bfq_update_rate_reset`: close the observation interval; if it was long and
    /// sequential enough, low-pass filter its rate into the peak rate.
    pub(super) fn update_rate_reset(&mut self, rq: Option<u64>, now: Ns) {
        let p = &mut self.peak;
        if p.samples >= RATE_MIN_SAMPLES && p.delta_from_first >= RATE_MIN_INTERVAL {
            p.delta_from_first = p.delta_from_first.max(self.last_completion.saturating_sub(p.first_dispatch));
            let us = (p.delta_from_first / USEC).max(1);
            let rate = (p.tot_sectors << RATE_SHIFT) / us;
            let seq_enough = p.sequential >= (3 * p.samples) >> 2;
            if (seq_enough || rate > p.rate) && rate <= 20 << RATE_SHIFT {
                let weight = u64::from(9 * p.sequential / p.samples);
                let weight = (weight * p.delta_from_first / RATE_REF_INTERVAL).min(8);
                let divisor = 10 - weight;
                p.rate = (p.rate * (divisor - 1) / divisor + rate / divisor).max(1);
                if self.t.user_max_budget == 0 {
                    self.max_budget = self.calc_max_budget();
                }
            }
        }
        self.reset_rate_computation(rq, now);
    }

    /// `bfq_calc_max_budget`: sectors moved at the peak rate in `timeout_sync`.
    pub(super) fn calc_max_budget(&self) -> u64 {
        (self.peak.rate * 1000 * (self.t.timeout / MSEC)) >> RATE_SHIFT
    }

    /// `bfq_update_peak_rate`, at each dispatch of `sectors` from `sector`.
    pub(super) fn update_peak_rate(&mut self, sector: u64, sectors: u64, now: Ns) {
        if self.peak.samples == 0 {
            self.reset_rate_computation(Some(sectors), now);
        } else if now - self.peak.last_dispatch > 100 * MSEC && self.rq_in_driver == 0 {
            self.update_rate_reset(Some(sectors), now);
        } else {
            let seeky = self.rq_seeky(self.last_position, sector, sectors);
            let p = &mut self.peak;
            p.samples += 1;
            if (self.rq_in_driver > 0 || now.saturating_sub(self.last_completion) < MIN_TT) && !seeky {
                p.sequential += 1;
            }
            p.tot_sectors += sectors;
            p.last_rq_max_size = if !p.samples.is_multiple_of(32) {
                p.last_rq_max_size.max(sectors)
            } else {
                sectors
            };
            p.delta_from_first = now - p.first_dispatch;
            if p.delta_from_first >= RATE_REF_INTERVAL {
                self.update_rate_reset(Some(sectors), now);
            }
        }
        self.last_position = sector + sectors;
        self.peak.last_dispatch = now;
    }

    /// `bfq_wr_duration`: interactive weight raising lasts what loading a large application
    /// takes on the reference device, scaled by the peak rate, within 3–25 s.
    pub(super) fn wr_duration(&self) -> Ns {
        let nonrot = usize::from(self.nonrot);
        let ms = REF_RATE[nonrot] * REF_WR_DURATION_MS[nonrot] / self.peak.rate.max(1);
        ms.clamp(3_000, 25_000) * MSEC
    }
}
