//! A `[[device]]`'s model and its parameters, from the models' own declarations
//! (`wblab_sim::drivers::MODELS`): each key's kind, range and doc come from the model, so a
//! new model needs nothing here. An array (`raid0`, `raid5`) takes `member_model` and its
//! members' parameters in the same table.

use crate::error::{Gather, Many, Result};
use crate::section::{Entry, Section};
use crate::suggest;
use wblab_sim::config::{DeviceModelConfig, KnobKind, KnobSpec, KnobValue};
use wblab_sim::drivers::model::model_info;
use wblab_sim::drivers::MODELS;
use wblab_sim::units::format_size;

/// Every model name, for `model = "..."`.
pub(super) fn kinds() -> Vec<&'static str> {
    MODELS.iter().map(|m| m.kind).collect()
}

/// The parameters of model `kind` (and `member_model` for an array).
pub(super) fn keys(kind: &str) -> Vec<&'static str> {
    let Some(m) = model_info(kind) else { return Vec::new() };
    let mut keys: Vec<&'static str> = (m.knobs)().iter().map(|k| k.key).collect();
    if (m.default)().member().is_some() {
        keys.push("member_model");
    }
    keys
}

/// An array's members' model (`member_model`, default: the array's default member); None
/// for models that are not arrays.
pub(super) fn member_kind(kind: &str, sec: &Section<'_>) -> Result<Option<&'static str>> {
    let Some(model) = DeviceModelConfig::default_of(kind) else {
        return Ok(None);
    };
    let Some(default) = model.member().map(|m| m.kind()) else {
        return Ok(None);
    };
    let members: Vec<&'static str> = MODELS.iter().filter(|m| m.member).map(|m| m.kind).collect();
    let m = sec.value_or("member_model", default, |e| {
        let name = e.str()?.trim();
        let other_model = MODELS.iter().any(|m| m.kind.eq_ignore_ascii_case(name));
        if other_model && !members.iter().any(|m| m.eq_ignore_ascii_case(name)) {
            return Err(e
                .problem(format!("a `{name}` device cannot be a {kind} member"))
                .hint(format!("{kind} members here are block devices: {}", suggest::list(&members))));
        }
        e.keyword(&members, "member model")
    })?;
    Ok(Some(m))
}

/// Parameter keys of an array's members (none for other models).
pub(super) fn member_keys(member: Option<&str>) -> Vec<&'static str> {
    member.map_or_else(Vec::new, keys)
}

/// Whether `key` is a parameter of any model (for "does not apply to model" messages).
pub(super) fn is_param(key: &str) -> bool {
    MODELS
        .iter()
        .any(|m| key == "member_model" || (m.knobs)().iter().any(|k| k.key == key))
}

/// Model `kind` with the section's parameters (and its members', for an array).
pub(super) fn build(kind: &str, sec: &Section<'_>) -> Many<DeviceModelConfig> {
    let mut g = Gather::default();
    let mut model = DeviceModelConfig::default_of(kind).expect("the kind was checked against MODELS");
    if let Some(member) = member_kind(kind, sec)? {
        if let Some(built) = g.keep_all(build(member, sec)) {
            *model.member_mut().expect("an array") = built;
        }
    }
    for spec in (model.info().knobs)() {
        if let Some(e) = sec.get(spec.key) {
            if let Some(v) = g.keep(knob_value(e, &spec)) {
                model.set_knob(spec.key, v);
            }
        }
    }
    g.sound()?;
    if let Err(c) = model.validate() {
        return Err(vec![sec.conflict(c.keys, c.message).hint(c.hint)]);
    }
    Ok(model)
}

/// The value of a declared knob as the entry writes it, checked against its kind and range;
/// the knob's doc is the hint when it is out of range.
pub(super) fn knob_value(e: &Entry<'_>, spec: &KnobSpec) -> Result<KnobValue> {
    let doc = |p: crate::error::Problem| p.hint(spec.doc);
    Ok(match spec.kind {
        KnobKind::Count { min, max } => KnobValue::Uint(e.uint(min, max).map_err(doc)?),
        KnobKind::Size { min, max, pages } => {
            let v = e.size_in(min, max).map_err(doc)?;
            if pages && v % 4096 != 0 {
                return Err(e
                    .problem(format!("{} is not a whole number of 4 KiB pages", format_size(v)))
                    .hint(spec.doc));
            }
            KnobValue::Uint(v)
        }
        KnobKind::Rate => KnobValue::Uint(e.rate()?),
        KnobKind::Duration { max } => KnobValue::Uint(e.duration_in(0, max).map_err(doc)?),
        KnobKind::Millis { max, scale } => KnobValue::Uint(e.uint(0, max).map_err(doc)? * scale),
        KnobKind::Bool => KnobValue::Bool(e.boolean()?),
        KnobKind::Word { words, what } => KnobValue::Word(e.keyword(words, what)?),
    })
}
