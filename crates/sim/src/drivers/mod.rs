//! Device models. Each kind of device is one file behind the [`Device`] trait; the block layer
//! dispatches requests into a device up to its queue depth and the machine asks it when the
//! next completion happens.

use crate::config::{DeviceConfig, DeviceModelConfig};
use crate::engine::RngStream;
use crate::Ns;

/// Operation of a request as the device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
}

/// A request handed to the device driver.
#[derive(Clone, Copy, Debug)]
pub struct DevRequest {
    /// Block-layer request id, returned on completion.
    pub id: u32,
    pub op: Op,
    /// First 512-byte sector.
    pub sector: u64,
    pub bytes: u64,
    /// REQ_SYNC / FUA-like: a write that must reach stable media before completing.
    pub sync: bool,
}

/// A storage device: accepts requests, completes them later.
pub trait Device {
    /// Commands the device accepts at once (NCQ depth, hardware queue depth).
    fn queue_depth(&self) -> u32;
    /// Requests currently inside the device.
    fn in_flight(&self) -> u32;
    /// Hand a request to the device at `now`. The caller guarantees
    /// `in_flight() < queue_depth()`.
    fn dispatch(&mut self, now: Ns, rq: DevRequest);
    /// Time of the device's next internal event (usually a completion), if any.
    fn next_event(&self) -> Option<Ns>;
    /// Process everything due at `now`; push the ids of completed requests to `done`
    /// in completion order.
    fn advance(&mut self, now: Ns, done: &mut Vec<u32>);
    /// Total time the device had work in service, ns (for utilisation).
    fn busy_ns(&self, now: Ns) -> Ns;
}

pub mod characterize;
pub mod hdd;
pub mod ssd;

/// Build the device model a scenario asks for.
pub fn build(cfg: &DeviceConfig, rng: RngStream) -> Box<dyn Device> {
    match &cfg.model {
        DeviceModelConfig::Hdd(p) => Box::new(hdd::Hdd::new(p.clone(), cfg.size, rng)),
        DeviceModelConfig::Ssd(p) => Box::new(ssd::Ssd::new(p.clone(), cfg.size, rng)),
        // Until the loop driver model lands: an SSD with the backing store's figures.
        DeviceModelConfig::Loop(p) => Box::new(ssd::Ssd::new(
            crate::config::SsdParams {
                parallelism: 4,
                read_latency: p.backing_latency,
                write_latency: p.backing_latency,
                read_bandwidth: p.backing_read_bandwidth,
                write_bandwidth: p.backing_write_bandwidth,
                queue_depth: p.queue_depth,
                write_cache: false,
            },
            cfg.size,
            rng,
        )),
    }
}
