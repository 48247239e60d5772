//! `[sweep]`: run one scenario once per value of one device knob, e.g.
//! `"queue/iosched/fifo_batch" = [64, 32, 16, 8]` — Morton's tables of 2002. Each value is
//! written into every `[[device]]` table (replacing the file's own setting) and validated there,
//! so a bad value is reported at its place in the array with the knob's usual hint.

use super::{device, queue, Entry, Nesting, Section};
use crate::error::{Problem, Result};
use crate::suggest;
use toml::de::DeValue;

/// The parsed `[sweep]` table: the knob and its values (located in the file).
pub(crate) struct Sweep<'a> {
    pub key: String,
    pub key_at: usize,
    pub values: Vec<(&'a DeValue<'a>, usize)>,
}

impl Sweep<'_> {
    /// Each value as the table prints it.
    pub fn labels(&self) -> Vec<String> {
        self.values
            .iter()
            .map(|(v, _)| match v {
                DeValue::String(s) => s.to_string(),
                DeValue::Integer(i) => i.to_string(),
                DeValue::Float(f) => f.to_string(),
                DeValue::Boolean(b) => b.to_string(),
                other => crate::section::describe(other),
            })
            .collect()
    }
}

/// The knobs a sweep may vary: the queue's (`queue/*`, `queue/iosched/*`).
fn sweepable() -> Vec<&'static str> {
    queue::KEYS.iter().copied().chain(queue::tunable_keys()).collect()
}

pub(super) fn parse<'a>(e: &Entry<'a>) -> Result<Sweep<'a>> {
    let sec = e.table(Nesting::Flatten('/'), device::normalize)?;
    let keys = sweepable();
    let mut it = sec.entries.iter();
    let Some(k) = it.next() else {
        return Err(e
            .problem("the sweep names no knob")
            .hint("e.g. [sweep] \"queue/iosched/fifo_batch\" = [64, 32, 16, 8]"));
    };
    if let Some(extra) = it.next() {
        return Err(extra.key_problem("a sweep varies one knob").hint(format!(
            "keep one of `{}` and `{}`; run a second file for the other",
            k.key, extra.key
        )));
    }
    if !keys.contains(&k.key.as_str()) {
        let hint = suggest::did_you_mean(&k.key, &keys).unwrap_or_else(|| format!("sweepable knobs: {}", suggest::list(&keys)));
        return Err(k.key_problem("is not a knob a sweep can vary").hint(hint));
    }
    let DeValue::Array(items) = k.value else {
        return Err(k
            .problem(format!("expected an array of values, found {}", crate::section::describe(k.value)))
            .hint(format!("e.g. \"{}\" = [64, 32, 16, 8]", k.key)));
    };
    if items.is_empty() {
        return Err(k.problem("no value to sweep").hint(format!("e.g. \"{}\" = [64, 32, 16, 8]", k.key)));
    }
    Ok(Sweep {
        key: k.key.clone(),
        key_at: k.key_at,
        values: items.iter().map(|i| (i.get_ref(), i.span().start)).collect(),
    })
}

/// The device tables with value `i` of the sweep written into each.
pub(super) fn apply<'a>(sweep: &Sweep<'a>, i: usize, sections: &mut [Section<'a>]) -> Result<()> {
    if sections.is_empty() {
        return Err(
            Problem::new(sweep.key_at, "a sweep needs a [[device]] table to write its knob into")
                .key(&sweep.key)
                .hint("declare the disk with a [[device]] table"),
        );
    }
    let (value, value_at) = sweep.values[i];
    for s in sections.iter_mut() {
        s.entries.retain(|e| e.key != sweep.key);
        s.entries.push(Entry {
            key: sweep.key.clone(),
            key_at: sweep.key_at,
            value,
            value_at,
        });
    }
    Ok(())
}
