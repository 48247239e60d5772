//! Aborting a FUSE connection (`fusectl`'s `abort` file): the way out when an emulated device's
//! server is gone but the kernel still waits on it, which fails every request in flight.

use std::path::Path;

const CONNECTIONS: &str = "/sys/fs/fuse/connections";

/// Write `abort` of each connection, mounting `fusectl` for the time it takes if it is not
/// (and unmounting it after). Callers name only connections they know to be their own.
pub fn abort(conns: &[u32]) {
    let dir = Path::new(CONNECTIONS);
    let mounted_here = !crate::sys::is_mount_point(dir) && crate::sys::mount(Path::new("fusectl"), dir, "fusectl", 0, "").is_ok();
    for c in conns {
        let _ = std::fs::write(dir.join(c.to_string()).join("abort"), "1");
    }
    if mounted_here {
        let _ = crate::sys::umount(dir, 0);
    }
}
