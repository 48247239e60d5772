//! Device models. Each kind of device is one file behind the [`Device`] trait; the block layer
//! dispatches requests into a device up to its queue depth and the machine asks it when the
//! next completion happens.
//!
//! | model | file | what it stands for |
//! |---|---|---|
//! | `hdd` | [`hdd`] | a 7200 rpm SATA disk with NCQ and a write cache |
//! | `ssd` | [`ssd`] | a flash SSD: parallel units, a transfer cap, a write buffer |
//! | `loop` | [`loopdev`] | `loop.c` with direct I/O over an image file |
//! | `usb` | [`usb`] | a 2011 USB 2.0 flash key: slow writes, erase-block garbage collection, one command at a time |
//! | `nfs` | [`nfs`] | an NFS mount: WRITE/READ RPCs over a link, a server page cache, UNSTABLE writes and COMMIT |
//! | `raid0` | [`raid0`] | md raid0 striping over members of one model |
//! | `raid5` | [`raid5`] | RAID5 with rotating parity, read-modify-write and a stripe cache |
//!
//! NFS is the one device whose completed writes are not yet stable: its pages stay under
//! writeback (counted against the dirty limit) until a COMMIT covers them, see
//! [`Device::unstable_writes`].

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
    /// Whether a completed write is only *unstable* (NFS: the WRITE reply said UNSTABLE, the
    /// data sits in the server's page cache) until a later COMMIT makes it stable. The block
    /// queue then keeps the pages of completed writes under writeback until
    /// [`Device::stable_writes`] covers them.
    fn unstable_writes(&self) -> bool {
        false
    }
    /// How many of the device's write completions, counted in completion order from the first,
    /// COMMITs have made stable so far. Only meaningful when [`Device::unstable_writes`].
    fn stable_writes(&self) -> u64 {
        0
    }
}

pub mod characterize;
pub mod hdd;
pub mod loopdev;
pub mod nfs;
pub mod raid0;
pub mod raid5;
pub mod ssd;
pub mod usb;

/// Build the device model a scenario asks for.
pub fn build(cfg: &DeviceConfig, rng: RngStream) -> Box<dyn Device> {
    build_model(&cfg.model, cfg.size, rng)
}

/// Build a device of `model` with `size` bytes (raid0 builds its members with this).
pub fn build_model(model: &DeviceModelConfig, size: u64, rng: RngStream) -> Box<dyn Device> {
    match model {
        DeviceModelConfig::Hdd(p) => Box::new(hdd::Hdd::new(p.clone(), size, rng)),
        DeviceModelConfig::Ssd(p) => Box::new(ssd::Ssd::new(p.clone(), size, rng)),
        DeviceModelConfig::Loop(p) => Box::new(loopdev::LoopDev::new(p.clone())),
        DeviceModelConfig::Usb(p) => Box::new(usb::Usb::new(p.clone())),
        DeviceModelConfig::Nfs(p) => Box::new(nfs::Nfs::new(p.clone())),
        DeviceModelConfig::Raid0(p) => Box::new(raid0::Raid0::new(p, size, rng)),
        DeviceModelConfig::Raid5(p) => Box::new(raid5::Raid5::new(p, size, rng)),
    }
}

/// Time to move `bytes` at `rate` bytes/s, ns.
#[inline]
pub(crate) fn xfer(bytes: u64, rate: u64) -> Ns {
    ((bytes as u128 * 1_000_000_000) / rate.max(1) as u128) as Ns
}
