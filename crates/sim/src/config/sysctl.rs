//! `/proc/sys/vm` knobs the model reads, with the kernel's defaults, and their table
//! ([`SYSCTLS`]): each declared once, for the scenario parser, the fuzzer, the reference
//! docs and `wblab measure`, which writes them to the real kernel.

use super::{Knob, KnobKind, KnobValue, Tunables};
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
    /// Sysctls kept by name rather than in a field of their own: the test-only one of
    /// `docs/extending.md`, or a prototype's before it earns a field. Empty in shipped
    /// scenarios (and then not written out).
    #[serde(skip_serializing_if = "Tunables::is_empty")]
    pub extra: Tunables,
}

/// One `vm.*` sysctl the model reads. The key is `sysctl`'s name; the file is
/// `/proc/sys/` and the key with `/` for `.` ([`SysctlKnob::proc_path`]).
pub struct SysctlKnob {
    /// Key, kind and range, what is accepted (`doc`), and the accessors.
    pub knob: Knob<VmSysctl>,
    /// The unit as the reference names it.
    pub unit: &'static str,
    /// What the fuzzer draws from: the accepted range cut to values a run makes sense of.
    pub typical: (u64, u64),
    /// A value meaning "as the kernel computes it", which `wblab measure` leaves unwritten.
    pub kernels_own: Option<u64>,
    /// For a ratio, the bytes knob it pairs with: writing either zeroes the other in the
    /// kernel, so a scenario sets one, and `wblab measure` writes the one set.
    pub bytes_of_pair: Option<&'static str>,
    /// A value the kind's range admits but the kernel refuses: the problem and a hint.
    pub refuse: fn(u64) -> Option<(String, &'static str)>,
}

impl SysctlKnob {
    /// The file under `/proc/sys` the kernel keeps it in.
    pub fn proc_path(&self) -> String {
        format!("/proc/sys/{}", self.knob.key.replace('.', "/"))
    }

    /// The value in `s`.
    pub fn value(&self, s: &VmSysctl) -> u64 {
        (self.knob.get)(s).uint()
    }
}

/// Refuses nothing beyond the kind's range.
fn refuse_nothing(_: u64) -> Option<(String, &'static str)> {
    None
}

/// `dirty_bytes_min`: a real write of `vm.dirty_bytes` is at least two pages.
fn refuse_under_two_pages(v: u64) -> Option<(String, &'static str)> {
    (1..2 * crate::units::PAGE_SIZE).contains(&v).then(|| {
        (
            format!(
                "must be 0 (not set) or at least {} bytes (2 pages), got {v}",
                2 * crate::units::PAGE_SIZE
            ),
            "the kernel refuses smaller values (dirty_bytes_min)",
        )
    })
}

/// `INT_MAX`: the bound of the kernel's `int` sysctls.
const INT_MAX: u64 = i32::MAX as u64;

/// A sysctl held in a `u32` field.
macro_rules! sysctl_u32 {
    ($key:literal, $field:ident, $min:expr, $max:expr, $unit:literal, $typical:expr, $doc:literal) => {
        SysctlKnob {
            knob: Knob {
                key: $key,
                kind: KnobKind::Count { min: $min, max: $max },
                doc: $doc,
                get: |s| KnobValue::Uint(u64::from(s.$field)),
                set: |s, v| s.$field = u32::try_from(v.uint()).unwrap_or(u32::MAX),
            },
            unit: $unit,
            typical: $typical,
            kernels_own: None,
            bytes_of_pair: None,
            refuse: refuse_nothing,
        }
    };
}

/// A sysctl of bytes held in a `u64` field, 0 meaning "not set".
macro_rules! sysctl_bytes {
    ($key:literal, $field:ident, $typical:expr, $refuse:expr, $doc:literal) => {
        SysctlKnob {
            knob: Knob {
                key: $key,
                kind: KnobKind::Size {
                    min: 0,
                    max: u64::MAX,
                    pages: false,
                },
                doc: $doc,
                get: |s| KnobValue::Uint(s.$field),
                set: |s, v| s.$field = v.uint(),
            },
            unit: "size",
            typical: $typical,
            kernels_own: None,
            bytes_of_pair: None,
            refuse: $refuse,
        }
    };
}

// docs:begin sysctl-list
crate::registry!(SHIPPED_SYSCTLS, SYSCTLS: SysctlKnob, "sysctls";
    SysctlKnob {
        bytes_of_pair: Some("vm.dirty_bytes"),
        ..sysctl_u32!("vm.dirty_ratio", dirty_ratio, 0, 100, "percent", (0, 100), "0 to 100")
    },
    SysctlKnob {
        bytes_of_pair: Some("vm.dirty_background_bytes"),
        ..sysctl_u32!("vm.dirty_background_ratio", dirty_background_ratio, 0, 100, "percent", (0, 100), "0 to 100")
    },
    sysctl_bytes!(
        "vm.dirty_bytes",
        dirty_bytes,
        (8 << 10, 512 << 20),
        refuse_under_two_pages,
        "0, or at least 8192 (2 pages). Setting it makes `vm.dirty_ratio` 0, as in the kernel; setting both to non-zero values is an error"
    ),
    sysctl_bytes!(
        "vm.dirty_background_bytes",
        dirty_background_bytes,
        (0, 256 << 20),
        refuse_nothing,
        "any. Zeroes `vm.dirty_background_ratio` likewise"
    ),
    sysctl_u32!("vm.dirty_expire_centisecs", dirty_expire_centisecs, 0, INT_MAX, "1/100 s", (0, 6000), "0 to 2147483647"),
    sysctl_u32!("vm.dirty_writeback_centisecs", dirty_writeback_centisecs, 0, INT_MAX, "1/100 s", (0, 1000), "0 to 2147483647"),
    SysctlKnob {
        knob: Knob {
            key: "vm.min_free_kbytes",
            kind: KnobKind::Count { min: 0, max: INT_MAX },
            doc: "0 to 2147483647; 0 = computed from memory as the kernel does at boot",
            get: |s| KnobValue::Uint(s.min_free_kbytes),
            set: |s, v| s.min_free_kbytes = v.uint(),
        },
        unit: "KiB",
        typical: (0, 65536),
        kernels_own: Some(0),
        bytes_of_pair: None,
        refuse: refuse_nothing,
    },
    sysctl_u32!("vm.watermark_scale_factor", watermark_scale_factor, 1, 3000, "1/10000 of memory", (1, 3000), "1 to 3000");
    // docs:begin sysctl-test
    test: SysctlKnob {
        knob: Knob {
            key: "vm.test_sysctl",
            kind: KnobKind::Count { min: 0, max: 1000 },
            doc: "test-only: a sysctl kept by name, to show how",
            get: |s| KnobValue::Uint(s.extra.get("test_sysctl").unwrap_or(0)),
            set: |s, v| s.extra.set("test_sysctl", v.uint()),
        },
        unit: "count",
        typical: (0, 1000),
        // No such file in a real kernel: `wblab measure` writes it only when set.
        kernels_own: Some(0),
        bytes_of_pair: None,
        refuse: refuse_nothing,
    }
    // docs:end sysctl-test
);
// docs:end sysctl-list

/// The sysctl `key` names (`vm.dirty_ratio`).
pub fn sysctl_knob(key: &str) -> Option<&'static SysctlKnob> {
    SYSCTLS.iter().find(|k| k.knob.key == key)
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
            extra: Tunables::default(),
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

    /// Every knob of the table reads back what it set, in range, and pairs name real knobs.
    #[test]
    fn every_sysctl_sets_and_gets_its_own_value() {
        for k in SYSCTLS {
            let mut s = VmSysctl::default();
            let (lo, hi) = k.typical;
            let v = lo + (hi - lo) / 3 + 1;
            (k.knob.set)(&mut s, KnobValue::Uint(v));
            assert_eq!(k.value(&s), v, "{}", k.knob.key);
            for other in SYSCTLS.iter().filter(|o| o.knob.key != k.knob.key) {
                assert_eq!(
                    other.value(&s),
                    other.value(&VmSysctl::default()),
                    "{} moved {}",
                    k.knob.key,
                    other.knob.key
                );
            }
            if let Some(b) = k.bytes_of_pair {
                assert!(sysctl_knob(b).is_some_and(|b| b.unit == "size"), "{b}");
            }
            assert!(k.proc_path().starts_with("/proc/sys/vm/"), "{}", k.proc_path());
        }
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
