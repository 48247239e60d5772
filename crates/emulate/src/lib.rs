//! wblab-emulate: one of wblab's device models served to the real kernel as a block device.
//!
//! The kernel on our machines has FUSE and loop but no ublk, nbd, null_blk or device-mapper,
//! so the device is a FUSE file system holding one file, `disk`, with a loop device bound to
//! it with direct I/O (`wblab measure` binds it): each request the loop driver sends reaches
//! this crate as a FUSE read, write or fsync, is timed by the device model (the same
//! `Device` the simulator drives, on a clock that is real time) and is answered when the
//! model completes it. Data is kept in an image file read and written with O_DIRECT.
//!
//! What the emulation adds is the trip through the loop driver and FUSE: measure it with
//! [`EmulatedDevice::set_passthrough`] (every request answered at once) and give it back
//! with [`EmulatedDevice::set_transport`], as `wblab measure` does before a run.

mod buf;
pub mod clock;
mod fusefs;
mod queue;
mod reply;
mod server;
pub mod stats;
mod store;
mod transport;

pub use buf::AlignedBuf;
pub use fusefs::{DISK, MAX_REQUEST};
pub use server::Transport;
pub use stats::{OpStats, Record, Stats};
pub use transport::calibrate;

use clock::Clock;
use queue::Sender;
use server::{Msg, Server, Shared};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use wblab_sim::config::DeviceModelConfig;
use wblab_sim::RngStream;

/// What to serve, and where.
#[derive(Debug)]
pub struct Options {
    pub model: DeviceModelConfig,
    /// Capacity, bytes.
    pub size: u64,
    /// The device's name in the scenario: its chance draws from the stream the simulator
    /// gives a device of that name.
    pub name: String,
    pub seed: u64,
    /// Service-time noise on (the scenario's `[machine] chance`).
    pub chance: bool,
    /// The image holding the device's data (made sparse if it is not there).
    pub image: PathBuf,
    /// An empty directory to mount the FUSE file system on.
    pub mountpoint: PathBuf,
    /// Write every answered request to this file, as CSV ([`Record::CSV_HEADER`]).
    pub log: Option<std::fs::File>,
}

/// A device model being served; stopped (unmounted) on [`EmulatedDevice::stop`] or drop.
pub struct EmulatedDevice {
    session: Option<fuser::BackgroundSession>,
    server: Option<std::thread::JoinHandle<()>>,
    repliers: Option<reply::Repliers>,
    tx: Sender<Msg>,
    shared: Arc<Shared>,
    mountpoint: PathBuf,
    store: Arc<store::Store>,
}

/// FUSE threads: data is copied to and from the image in them, so more than one lets a
/// request be read from the kernel while another's data moves.
const FUSE_THREADS: usize = 4;

impl EmulatedDevice {
    /// Mount the device's file system at `o.mountpoint` and start serving. Needs root
    /// (mount(2) of a FUSE file system without fusermount).
    pub fn start(o: &Options) -> io::Result<EmulatedDevice> {
        if matches!(o.model, DeviceModelConfig::Loop(_)) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a `loop` device is already real on this machine: emulate the model it stands for (hdd, ssd, usb, ...)",
            ));
        }
        let store = Arc::new(store::Store::open(&o.image, o.size)?);
        let log = o.log.as_ref().map(std::fs::File::try_clone).transpose()?;
        let clock = Clock::start();
        let rng = RngStream::of_chance(o.chance, o.seed, &format!("device/{}", o.name));
        let shared = Arc::new(Shared::default());
        let (tx, rx) = queue::queue();
        let (repliers, out) = reply::Repliers::start(clock, shared.clone(), log)?;
        let (model, size, sh) = (o.model.clone(), o.size, shared.clone());
        // The model is built on the thread that runs it (a device model is not `Send`).
        let server = std::thread::Builder::new().name("wblab-emulate".into()).spawn(move || {
            let write_cache = model.has_write_cache();
            Server::new(model.build(size, rng), write_cache, clock, out).run(rx, &sh)
        })?;
        let fs = fusefs::DiskFs {
            store: store.clone(),
            tx: tx.clone(),
            clock,
        };
        let mut cfg = fuser::Config::default();
        cfg.mount_options = vec![
            fuser::MountOption::FSName(format!("wblab-emulate:{}", o.name)),
            fuser::MountOption::Subtype("wblab".into()),
            fuser::MountOption::NoDev,
            fuser::MountOption::NoSuid,
            fuser::MountOption::NoExec,
        ];
        cfg.n_threads = Some(FUSE_THREADS);
        cfg.clone_fd = true;
        let session = match fuser::spawn_mount(fs, &o.mountpoint, &cfg) {
            Ok(s) => s,
            Err(e) => {
                tx.send(Msg::Stop);
                let _ = server.join();
                repliers.join();
                return Err(io::Error::new(
                    e.kind(),
                    format!("mounting FUSE on {}: {e}", o.mountpoint.display()),
                ));
            }
        };
        Ok(EmulatedDevice {
            session: Some(session),
            server: Some(server),
            repliers: Some(repliers),
            tx,
            shared,
            mountpoint: o.mountpoint.clone(),
            store,
        })
    }

    /// The device's file, for the loop device to bind.
    pub fn disk(&self) -> PathBuf {
        self.mountpoint.join(DISK)
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Whether the image is read and written past the host's page cache (O_DIRECT).
    pub fn image_direct(&self) -> bool {
        self.store.is_direct()
    }

    /// Answer every request at once, without the model (`true`), or by the model.
    pub fn set_passthrough(&self, on: bool) {
        self.shared.passthrough.store(on, Ordering::Relaxed);
    }

    /// The trip through the kernel to give back (see [`Transport`]).
    pub fn set_transport(&self, t: Transport) {
        self.shared.lead_in.store(t.lead_in, Ordering::Relaxed);
        self.shared.lead_in_per_kib.store(t.lead_in_per_kib, Ordering::Relaxed);
        self.shared.lead_out.store(t.lead_out, Ordering::Relaxed);
    }

    /// Totals so far.
    pub fn stats(&self) -> Stats {
        self.shared.stats.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Forget the totals so far (after a calibration).
    pub fn reset_stats(&self) {
        *self.shared.stats.lock().unwrap_or_else(|e| e.into_inner()) = Stats::default();
    }

    /// Unmount and stop serving; the totals.
    pub fn stop(mut self) -> Stats {
        self.shutdown();
        self.stats()
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.session.take() {
            // Already unmounted (a teardown that ran first) is fine.
            let _ = s.umount_and_join();
        }
        self.tx.send(Msg::Stop);
        if let Some(h) = self.server.take() {
            let _ = h.join();
        }
        // The server's sender is gone with it: the answer threads finish.
        if let Some(r) = self.repliers.take() {
            r.join();
        }
    }
}

impl Drop for EmulatedDevice {
    fn drop(&mut self) {
        self.shutdown();
    }
}
