//! `/proc/sys/vm` knobs the model reads, with the kernel's defaults.

use serde::Serialize;

/// `/proc/sys/vm` knobs that the model reads.
#[derive(Clone, Debug, Serialize)]
pub struct VmSysctl {
    pub dirty_ratio: u32,
    pub dirty_bytes: u64,
    pub dirty_background_ratio: u32,
    pub dirty_background_bytes: u64,
    pub dirty_expire_centisecs: u32,
    pub dirty_writeback_centisecs: u32,
    /// 0 = computed as the kernel does at boot (`sqrt(lowmem_kbytes * 16)`, clamped).
    pub min_free_kbytes: u64,
    pub watermark_scale_factor: u32,
    /// 2.4's `/proc/sys/vm/bdflush` (used by the 2.4 generations only).
    pub bdflush: Bdflush,
}

/// `union bdflush_param` of 2.4 `fs/buffer.c`: the nine integers of `/proc/sys/vm/bdflush` in
/// their order; the slots the model reads are named. Defaults: 2.4.13–2.4.17's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Bdflush {
    /// Percent of `tot` dirty (2.4.17: dirty + locked) that starts writeout.
    pub nfract: u32,
    /// Buffers per `flush_dirty_buffers` call (2.4.0–2.4.7; unused from 2.4.8).
    pub ndirty: u32,
    /// Slots 2 and 3 (`nrefill`, `dummy3`): not used by the model.
    pub nrefill: u32,
    pub dummy3: u32,
    /// kupdate period, jiffies (0 stops kupdate).
    pub interval: u32,
    /// Age at which kupdate writes a dirty buffer, jiffies.
    pub age_buffer: u32,
    /// Percent of `tot` above which the writer also waits for I/O (2.4.17) or flushes
    /// itself (2.4.7).
    pub nfract_sync: u32,
    /// Slots 7 and 8: unused in mainline.
    pub dummy7: u32,
    pub dummy8: u32,
}

impl Bdflush {
    /// 2.4.13–2.4.17 mainline: {40, 0, 0, 0, 5·HZ, 30·HZ, 60, 0, 0} at HZ = 100.
    pub const V2417: Bdflush = Bdflush {
        nfract: 40,
        ndirty: 0,
        nrefill: 0,
        dummy3: 0,
        interval: 500,
        age_buffer: 3000,
        nfract_sync: 60,
        dummy7: 0,
        dummy8: 0,
    };
    /// 2.4.0–2.4.12: {30, 64, 64, 256, 5·HZ, 30·HZ, 60, 0, 0}.
    pub const V247: Bdflush = Bdflush {
        nfract: 30,
        ndirty: 64,
        nrefill: 64,
        dummy3: 256,
        interval: 500,
        age_buffer: 3000,
        nfract_sync: 60,
        dummy7: 0,
        dummy8: 0,
    };

    pub fn to_array(self) -> [u32; 9] {
        [
            self.nfract,
            self.ndirty,
            self.nrefill,
            self.dummy3,
            self.interval,
            self.age_buffer,
            self.nfract_sync,
            self.dummy7,
            self.dummy8,
        ]
    }

    pub fn from_array(a: [u32; 9]) -> Self {
        Bdflush {
            nfract: a[0],
            ndirty: a[1],
            nrefill: a[2],
            dummy3: a[3],
            interval: a[4],
            age_buffer: a[5],
            nfract_sync: a[6],
            dummy7: a[7],
            dummy8: a[8],
        }
    }
}

impl Default for Bdflush {
    fn default() -> Self {
        Bdflush::V2417
    }
}

impl Default for VmSysctl {
    fn default() -> Self {
        VmSysctl {
            dirty_ratio: 20,
            dirty_bytes: 0,
            dirty_background_ratio: 10,
            dirty_background_bytes: 0,
            dirty_expire_centisecs: 3000,
            dirty_writeback_centisecs: 500,
            min_free_kbytes: 0,
            watermark_scale_factor: 10,
            bdflush: Bdflush::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mm/page-writeback.c` (6.18): `vm_dirty_ratio = 20`, `dirty_background_ratio = 10`,
    /// `dirty_expire_interval = 30 * 100`, `dirty_writeback_interval = 5 * 100`, bytes unset;
    /// `mm/page_alloc.c`: `watermark_scale_factor = 10`.
    #[test]
    fn defaults_are_the_kernels() {
        let s = VmSysctl::default();
        assert_eq!((s.dirty_ratio, s.dirty_background_ratio), (20, 10));
        assert_eq!((s.dirty_bytes, s.dirty_background_bytes), (0, 0));
        assert_eq!((s.dirty_expire_centisecs, s.dirty_writeback_centisecs), (3000, 500));
        assert_eq!(s.watermark_scale_factor, 10);
        assert_eq!(s.min_free_kbytes, 0, "computed at boot, as init_per_zone_wmark_min does");
    }

    /// 2.4.13–2.4.17 `fs/buffer.c` `bdf_prm`: {40, 0, 0, 0, 5*HZ, 30*HZ, 60, 0, 0} at HZ = 100;
    /// 2.4.0–2.4.12: {30, 64, 64, 256, 5*HZ, 30*HZ, 60, 0, 0}.
    #[test]
    fn bdflush_defaults_are_2_4s() {
        assert_eq!(Bdflush::default().to_array(), [40, 0, 0, 0, 500, 3000, 60, 0, 0]);
        assert_eq!(Bdflush::V247.to_array(), [30, 64, 64, 256, 500, 3000, 60, 0, 0]);
        assert_eq!(Bdflush::from_array(Bdflush::V247.to_array()), Bdflush::V247);
    }
}
