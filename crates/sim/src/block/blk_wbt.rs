//! blk-wbt (stub, being written).
