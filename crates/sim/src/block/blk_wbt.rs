//! blk-wbt (temporary stub with the final API; admits everything).
use crate::config::QueueConfig;
use crate::Ns;

#[derive(Clone, Copy, Debug, Default)]
pub struct WbtFlags {
    pub sync: bool,
    pub background: bool,
    pub meta: bool,
}

pub struct Wbt {
    inflight: u32,
    enabled: bool,
}

impl Wbt {
    pub fn new(q: &QueueConfig, _queue_depth: u32) -> Wbt {
        Wbt {
            inflight: 0,
            enabled: q.wbt_lat_usec > 0,
        }
    }
    pub fn enabled(&self) -> bool {
        self.enabled
    }
    pub fn throttle(&mut self, _now: Ns, _waiter: u32, _flags: WbtFlags, _last_bdp_sleep: Option<Ns>) -> bool {
        self.inflight += 1;
        true
    }
    pub fn done(&mut self, _now: Ns, _last_bdp_sleep: Option<Ns>, _admitted: &mut Vec<u32>) {
        self.inflight -= 1;
    }
    pub fn read_issued(&mut self, _now: Ns, _rq: u32) {}
    pub fn read_completed(&mut self, _now: Ns, _rq: u32, _latency: Ns) {}
    pub fn write_completed(&mut self, _now: Ns, _latency: Ns) {}
    pub fn next_timer(&self) -> Option<Ns> {
        None
    }
    pub fn timer_fn(&mut self, _now: Ns, _last_bdp_sleep: Option<Ns>, _admitted: &mut Vec<u32>) {}
    pub fn inflight(&self) -> u32 {
        self.inflight
    }
    pub fn take_steps(&mut self, _out: &mut Vec<(Ns, &'static str, i32, u64, u32, u32, u32)>) {}
}
