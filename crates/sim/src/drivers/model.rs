//! What a device model declares about itself, so that every tool works from one list: the
//! scenario parser (its `model = "..."` name and keys), `wblab check` and `wblab device`, the
//! reference tables, the queue defaults its driver sets at probe time, `characterize`, and the
//! constructor. Each model's file implements [`DeviceModel`] for its parameters; the list is
//! the `device_models!` invocation in `drivers/mod.rs`.

use super::Device;
use crate::config::{Conflict, Knob, KnobSpec, KnobValue, QueueConfig};
use crate::engine::RngStream;

/// How the kernel names and numbers devices of a model when a scenario does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// SCSI disks: `sda`, `sdb`… as 8:0, 8:16… (a name starting `nvme` gets major 259).
    Sd,
    /// `<prefix><N>` as `<major>:<N>` (loop7:N, md9:N).
    Indexed { prefix: &'static str, major: u32 },
    /// An anonymous device number `0:<first_minor + N>` (an NFS superblock).
    Anonymous { prefix: &'static str, first_minor: u32 },
}

impl Naming {
    /// Name and number of the `index`-th device (from 0) named this way.
    pub fn node(self, index: u32) -> (String, u32, u32) {
        match self {
            Naming::Sd => (sd_name(index as usize), 8, 16 * index),
            Naming::Indexed { prefix, major } => (format!("{prefix}{index}"), major, index),
            Naming::Anonymous { prefix, first_minor } => (format!("{prefix}{index}"), 0, first_minor + index),
        }
    }
}

/// sda, sdb, ..., sdz, sdaa, ...: the name sd gives its `i`-th disk.
pub fn sd_name(i: usize) -> String {
    let mut letters = Vec::new();
    let mut n = i + 1;
    while n > 0 {
        n -= 1;
        letters.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
    }
    letters.reverse();
    format!("sd{}", letters.into_iter().collect::<String>())
}

/// A device model: the type of its parameters, and what it says about itself.
pub trait DeviceModel: Clone + Default + std::fmt::Debug + serde::Serialize + Sized + 'static {
    /// The name a scenario gives as `model = "..."`.
    const KIND: &'static str;
    /// One line for `wblab device` and the reference.
    const SUMMARY: &'static str;
    const NAMING: Naming;
    /// Whether a RAID array may be built of it.
    const MEMBER: bool = false;

    /// The parameters a scenario may set, with kinds, ranges and docs.
    fn knobs() -> &'static [Knob<Self>];
    /// Checks across parameters, after the file's values are set.
    fn validate(&self) -> Result<(), Conflict> {
        Ok(())
    }
    /// Capacity of a device of the model when the scenario gives none, bytes.
    fn default_size(&self) -> u64;
    /// The smallest capacity the model can be given, bytes (an array needs a chunk per
    /// member).
    fn min_size(&self) -> u64 {
        crate::units::MIB
    }
    /// The queue as the model's driver sets it up at probe time.
    fn default_queue(&self) -> QueueConfig;
    /// Requests the device takes at once (tags).
    fn queue_depth(&self) -> u32;
    /// Hardware queues (blk-mq hardware contexts), each with its own tags.
    fn nr_hw_queues(&self) -> u32 {
        1
    }
    /// Whether the device has a volatile write cache ("write back" is possible).
    fn has_write_cache(&self) -> bool;
    /// `max_hw_sectors_kb` where the driver sets one below the block layer's cap.
    fn max_hw_sectors_kb(&self) -> Option<u32> {
        None
    }
    /// Whether its queue has an elevator to switch (bio-based md and NFS have none).
    fn has_elevator(&self) -> bool {
        true
    }
    /// A RAID array's members' model.
    fn member(&self) -> Option<&super::DeviceModelConfig> {
        None
    }
    fn member_mut(&mut self) -> Option<&mut super::DeviceModelConfig> {
        None
    }
    /// The device.
    fn build(&self, size: u64, rng: RngStream) -> Box<dyn Device>;
    /// For `characterize`: sequential streams a test spreads over (a raid0's members) and
    /// the write cache a burst fills first, bytes.
    fn stripes(&self) -> u64 {
        1
    }
    fn write_cache_bytes(&self) -> u64 {
        0
    }
}

/// A model as the tools list it.
pub struct ModelInfo {
    pub kind: &'static str,
    pub summary: &'static str,
    pub naming: Naming,
    pub member: bool,
    /// The model with its default parameters.
    pub default: fn() -> super::DeviceModelConfig,
    /// Its parameters.
    pub knobs: fn() -> Vec<KnobSpec>,
}

/// The model named `kind`.
pub fn model_info(kind: &str) -> Option<&'static ModelInfo> {
    super::MODELS.iter().find(|m| m.kind == kind)
}

/// The instance side of [`DeviceModel`], object-safe, so that `DeviceModelConfig` can forward
/// to whichever model it holds through one match.
pub trait ModelDyn {
    fn kind(&self) -> &'static str;
    fn set_knob(&mut self, key: &str, v: KnobValue) -> bool;
    fn get_knob(&self, key: &str) -> Option<KnobValue>;
    fn validate(&self) -> Result<(), Conflict>;
    fn default_size(&self) -> u64;
    fn min_size(&self) -> u64;
    fn default_queue(&self) -> QueueConfig;
    fn queue_depth(&self) -> u32;
    fn nr_hw_queues(&self) -> u32;
    fn has_write_cache(&self) -> bool;
    fn max_hw_sectors_kb(&self) -> Option<u32>;
    fn has_elevator(&self) -> bool;
    fn member(&self) -> Option<&super::DeviceModelConfig>;
    fn member_mut(&mut self) -> Option<&mut super::DeviceModelConfig>;
    fn build(&self, size: u64, rng: RngStream) -> Box<dyn Device>;
    fn stripes(&self) -> u64;
    fn write_cache_bytes(&self) -> u64;
}

impl<M: DeviceModel> ModelDyn for M {
    fn kind(&self) -> &'static str {
        M::KIND
    }
    fn set_knob(&mut self, key: &str, v: KnobValue) -> bool {
        match crate::config::find(M::knobs(), key) {
            Some(k) => {
                (k.set)(self, v);
                true
            }
            None => false,
        }
    }
    fn get_knob(&self, key: &str) -> Option<KnobValue> {
        crate::config::find(M::knobs(), key).map(|k| (k.get)(self))
    }
    fn validate(&self) -> Result<(), Conflict> {
        DeviceModel::validate(self)
    }
    fn default_size(&self) -> u64 {
        DeviceModel::default_size(self)
    }
    fn min_size(&self) -> u64 {
        DeviceModel::min_size(self)
    }
    fn default_queue(&self) -> QueueConfig {
        DeviceModel::default_queue(self)
    }
    fn queue_depth(&self) -> u32 {
        DeviceModel::queue_depth(self)
    }
    fn nr_hw_queues(&self) -> u32 {
        DeviceModel::nr_hw_queues(self)
    }
    fn has_write_cache(&self) -> bool {
        DeviceModel::has_write_cache(self)
    }
    fn max_hw_sectors_kb(&self) -> Option<u32> {
        DeviceModel::max_hw_sectors_kb(self)
    }
    fn has_elevator(&self) -> bool {
        DeviceModel::has_elevator(self)
    }
    fn member(&self) -> Option<&super::DeviceModelConfig> {
        DeviceModel::member(self)
    }
    fn member_mut(&mut self) -> Option<&mut super::DeviceModelConfig> {
        DeviceModel::member_mut(self)
    }
    fn build(&self, size: u64, rng: RngStream) -> Box<dyn Device> {
        DeviceModel::build(self, size, rng)
    }
    fn stripes(&self) -> u64 {
        DeviceModel::stripes(self)
    }
    fn write_cache_bytes(&self) -> u64 {
        DeviceModel::write_cache_bytes(self)
    }
}

/// One entry of `MODELS` for the model `$variant($params)`.
macro_rules! model_entry {
    ($variant:ident, $params:ty) => {
        $crate::drivers::model::ModelInfo {
            kind: <$params as $crate::drivers::model::DeviceModel>::KIND,
            summary: <$params as $crate::drivers::model::DeviceModel>::SUMMARY,
            naming: <$params as $crate::drivers::model::DeviceModel>::NAMING,
            member: <$params as $crate::drivers::model::DeviceModel>::MEMBER,
            default: || DeviceModelConfig::$variant(Default::default()),
            knobs: || {
                <$params as $crate::drivers::model::DeviceModel>::knobs()
                    .iter()
                    .map(|k| k.spec())
                    .collect()
            },
        }
    };
}
pub(crate) use model_entry;

/// Declare the list of device models: the `DeviceModelConfig` enum (serialised with a `kind`
/// tag, the variant's name in lower case, which must be the model's `KIND`), `MODELS`, and
/// the forwarding to the model a value holds. `test:` entries exist in test builds only.
macro_rules! device_models {
    ($($variant:ident($params:ty)),+ ; test: $($tvariant:ident($tparams:ty)),+ $(,)?) => {
        /// A device model with its parameters.
        #[derive(Clone, Debug, serde::Serialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        pub enum DeviceModelConfig {
            $($variant($params),)+
            $(#[cfg(any(test, feature = "test-extensions"))] $tvariant($tparams),)+
        }

        /// The device models wblab ships, in the order tools list them: what reference docs
        /// show, whatever the build.
        pub static SHIPPED_MODELS: &[$crate::drivers::model::ModelInfo] = &[
            $($crate::drivers::model::model_entry!($variant, $params)),+
        ];
        /// Every device model, in the order tools list them.
        #[cfg(not(any(test, feature = "test-extensions")))]
        pub static MODELS: &[$crate::drivers::model::ModelInfo] = SHIPPED_MODELS;
        /// Every device model, in the order tools list them, and the test-only ones.
        #[cfg(any(test, feature = "test-extensions"))]
        pub static MODELS: &[$crate::drivers::model::ModelInfo] = &[
            $($crate::drivers::model::model_entry!($variant, $params),)+
            $($crate::drivers::model::model_entry!($tvariant, $tparams)),+
        ];

        impl DeviceModelConfig {
            /// The model this value holds.
            pub fn model(&self) -> &dyn $crate::drivers::model::ModelDyn {
                match self {
                    $(Self::$variant(p) => p,)+
                    $(#[cfg(any(test, feature = "test-extensions"))] Self::$tvariant(p) => p,)+
                }
            }

            pub fn model_mut(&mut self) -> &mut dyn $crate::drivers::model::ModelDyn {
                match self {
                    $(Self::$variant(p) => p,)+
                    $(#[cfg(any(test, feature = "test-extensions"))] Self::$tvariant(p) => p,)+
                }
            }
        }
    };
}
pub(crate) use device_models;

impl super::DeviceModelConfig {
    /// The model named `kind` with its default parameters.
    pub fn default_of(kind: &str) -> Option<Self> {
        model_info(kind).map(|m| (m.default)())
    }

    pub fn kind(&self) -> &'static str {
        self.model().kind()
    }

    pub fn info(&self) -> &'static ModelInfo {
        model_info(self.kind()).expect("every model is listed")
    }

    /// Set parameter `key`; false if the model has no such parameter.
    pub fn set_knob(&mut self, key: &str, v: KnobValue) -> bool {
        self.model_mut().set_knob(key, v)
    }

    /// The value of parameter `key`.
    pub fn get_knob(&self, key: &str) -> Option<KnobValue> {
        self.model().get_knob(key)
    }

    pub fn validate(&self) -> Result<(), Conflict> {
        self.model().validate()
    }

    pub fn default_size(&self) -> u64 {
        self.model().default_size()
    }

    pub fn min_size(&self) -> u64 {
        self.model().min_size()
    }

    pub fn default_queue(&self) -> QueueConfig {
        self.model().default_queue()
    }

    /// Requests the device takes at once (tags; for an array the members' sum).
    pub fn queue_depth(&self) -> u32 {
        self.model().queue_depth()
    }

    /// Hardware queues the block layer maps the CPUs onto.
    pub fn nr_hw_queues(&self) -> u32 {
        self.model().nr_hw_queues()
    }

    /// Whether the device has a volatile write cache ("write back" is possible).
    pub fn has_write_cache(&self) -> bool {
        self.model().has_write_cache()
    }

    /// `max_hw_sectors_kb` where the driver sets one below the block layer's cap.
    pub fn max_hw_sectors_kb(&self) -> Option<u32> {
        self.model().max_hw_sectors_kb()
    }

    pub fn has_elevator(&self) -> bool {
        self.model().has_elevator()
    }

    pub fn member(&self) -> Option<&Self> {
        self.model().member()
    }

    pub fn member_mut(&mut self) -> Option<&mut Self> {
        self.model_mut().member_mut()
    }

    pub fn build(&self, size: u64, rng: RngStream) -> Box<dyn Device> {
        self.model().build(size, rng)
    }

    pub fn stripes(&self) -> u64 {
        self.model().stripes()
    }

    pub fn write_cache_bytes(&self) -> u64 {
        self.model().write_cache_bytes()
    }
}

/// Any single device latency above this is a typo, not a device (and would overflow rate
/// arithmetic), ns.
pub const MAX_LATENCY: u64 = 10_000_000_000;
/// `BLK_MQ_MAX_DEPTH`: the deepest tag set the block layer allocates.
pub const MAX_QUEUE_DEPTH: u64 = 10_240;
/// md 1.x superblocks describe at most 1920 devices.
pub const MAX_MEMBERS: u64 = 1920;

/// A device latency or overhead knob.
pub const LATENCY: crate::config::KnobKind = crate::config::KnobKind::Duration { max: MAX_LATENCY };
/// A tag-count knob.
pub const QUEUE_DEPTH: crate::config::KnobKind = crate::config::KnobKind::Count {
    min: 1,
    max: MAX_QUEUE_DEPTH,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{KnobKind, KnobValue};
    use crate::drivers::{DeviceModelConfig, MODELS};

    #[test]
    fn every_model_is_listed_once_and_serialises_as_its_kind() {
        let mut kinds: Vec<&str> = MODELS.iter().map(|m| m.kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(kinds.len(), MODELS.len(), "a model is listed twice");
        for m in MODELS {
            let model = (m.default)();
            assert_eq!(model.kind(), m.kind);
            assert_eq!(serde_json::to_value(&model).unwrap()["kind"], m.kind);
            assert_eq!(DeviceModelConfig::default_of(m.kind).map(|d| d.kind()), Some(m.kind));
            assert_eq!(model.validate(), Ok(()), "{}: the defaults contradict each other", m.kind);
            assert!(model.default_size() > 0 && model.queue_depth() > 0, "{}", m.kind);
        }
    }

    /// A value of `kind` other than `was`, inside the knob's range.
    fn another(kind: KnobKind, was: KnobValue) -> KnobValue {
        match kind {
            KnobKind::Count { min, max } => KnobValue::Uint(if was.uint() == min { max.min(min + 1) } else { min }),
            KnobKind::Size { min, pages, .. } => KnobValue::Uint(if pages { min.max(4096) * 2 } else { min + 4096 }),
            KnobKind::Rate => KnobValue::Uint(was.uint() + 1),
            KnobKind::Duration { max } | KnobKind::Millis { max, .. } => KnobValue::Uint((was.uint() + 1).min(max)),
            KnobKind::Bool => KnobValue::Bool(!was.bool()),
            KnobKind::Word { words, .. } => KnobValue::Word(words.iter().copied().find(|w| *w != was.word()).unwrap_or(words[0])),
        }
    }

    #[test]
    fn every_knob_sets_what_it_reads() {
        for m in MODELS {
            let knobs = (m.knobs)();
            assert!(!knobs.is_empty(), "{}", m.kind);
            for k in &knobs {
                let mut model = (m.default)();
                let was = model.get_knob(k.key).expect("listed knobs can be read");
                let v = another(k.kind, was);
                assert!(model.set_knob(k.key, v), "{}: {}", m.kind, k.key);
                assert_eq!(model.get_knob(k.key), Some(v), "{}: {} does not read back", m.kind, k.key);
                assert!(!k.doc.is_empty(), "{}: {} has no doc", m.kind, k.key);
            }
            assert!(!(m.default)().set_knob("no_such_knob", KnobValue::Uint(1)));
        }
    }

    #[test]
    fn namings() {
        assert_eq!(Naming::Sd.node(1), ("sdb".to_string(), 8, 16));
        assert_eq!(Naming::Indexed { prefix: "md", major: 9 }.node(2), ("md2".to_string(), 9, 2));
        assert_eq!(sd_name(26 + 26 * 26), "sdaaa");
    }
}

#[cfg(test)]
mod extension_tests {
    use crate::config::{DeviceModelConfig, JobConfig, Scenario};
    use crate::drivers::test_null::TestNullParams;

    #[test]
    fn the_test_model_runs_a_machine() {
        // The worked example of docs/extending.md: registered by its file and one line.
        let model = DeviceModelConfig::default_of("testnull").expect("registered in test builds");
        assert!(matches!(model, DeviceModelConfig::TestNull(TestNullParams { .. })));
        let mut sc = Scenario::one_device("null", model, 1 << 30, 2, 2_000_000_000);
        sc.add_task(
            "dd",
            1,
            0,
            JobConfig::Dd {
                bs: 1 << 20,
                size: Some(64 << 20),
                fsync: true,
                direct: false,
            },
        );
        let r = crate::run(&sc, &mut crate::machine::NoProgress).expect("laws hold");
        assert_eq!(r.devices[0].bytes_written, 64 << 20);
        assert_eq!(r.devices[0].model, "testnull");
    }
}
