//! The block layer: requests, the I/O schedulers behind the [`sched::Elevator`] trait,
//! blk-throttle and blk-wbt. The queue glue that connects them to the page cache and the device
//! lives in [`queue`].

pub mod bio_chain;
pub mod blk_iolatency;
pub mod blk_mq;
pub mod blk_throttle;
pub mod blk_trace;
pub mod blk_wbt;
pub mod queue;
pub mod request;
pub mod request_list;
pub mod sched;
