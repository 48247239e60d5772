//! The block layer: requests, the I/O schedulers behind the [`sched::Elevator`] trait,
//! blk-throttle and blk-wbt. The queue glue that connects them to the page cache and the device
//! lives in [`queue`].

pub(crate) mod bio_chain;
pub(crate) mod blk_iolatency;
pub(crate) mod blk_mq;
pub(crate) mod blk_throttle;
pub(crate) mod blk_trace;
pub(crate) mod blk_wbt;
pub(crate) mod queue;
pub(crate) mod request;
pub(crate) mod request_list;
pub mod sched;
