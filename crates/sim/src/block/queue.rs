//! Request queue glue (being written).
