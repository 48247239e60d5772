//! The device models' parameters. Each model declares its own, with its keys, defaults and
//! queue, in its file under `drivers/` (see `drivers/model.rs`); they are re-exported here so
//! that the resolved scenario's types are all under `config`.

pub use crate::drivers::hdd::{DestagePolicy, HddParams};
pub use crate::drivers::loopdev::LoopParams;
pub use crate::drivers::nfs::{NfsCommit, NfsParams};
pub use crate::drivers::raid0::Raid0Params;
pub use crate::drivers::raid5::Raid5Params;
pub use crate::drivers::ssd::SsdParams;
pub use crate::drivers::usb::{UsbParams, USB_MAX_SECTORS_KB};
pub use crate::drivers::DeviceModelConfig;
