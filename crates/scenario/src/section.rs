//! One table of the scenario file as a list of located entries, with typed getters that know
//! the units and ranges of knobs and turn every mismatch into a [`Problem`] at the right spot.

use crate::error::{Problem, Result};
use crate::suggest;
use crate::units::{self, UnitError};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// A key and its value, with the byte offsets of both.
#[derive(Clone)]
pub(crate) struct Entry<'a> {
    /// The key in its normalised, flattened form (`vm.dirty_ratio` even when written as nested
    /// tables).
    pub key: String,
    pub key_at: usize,
    pub value: &'a DeValue<'a>,
    pub value_at: usize,
}

/// The entries of one table, in file order.
#[derive(Clone)]
pub(crate) struct Section<'a> {
    /// Offset of the table itself (its `[header]`), for errors about a missing key.
    pub at: usize,
    pub entries: Vec<Entry<'a>>,
}

/// How a section reads nested tables: as their own values, or flattened into the keys of the
/// section with a separator (`vm.dirty_ratio = 20` is a table `vm` in TOML; `[sysctl]` wants the
/// key `vm.dirty_ratio`).
#[derive(Clone, Copy)]
pub(crate) enum Nesting {
    Keep,
    Flatten(char),
    /// Flatten, but keep as values the tables whose every key is one of these (a sweep's
    /// ranges, `{ min = 1, max = 8 }`).
    FlattenExcept(char, &'static [&'static str]),
}

impl<'a> Section<'a> {
    /// The document's top level.
    pub fn root(doc: &'a Spanned<DeTable<'a>>) -> Result<Section<'a>> {
        Section::from_table(0, doc.get_ref(), Nesting::Keep, |k| k)
    }

    pub(crate) fn from_table(at: usize, table: &'a DeTable<'a>, nesting: Nesting, normalize: fn(String) -> String) -> Result<Section<'a>> {
        let mut entries = Vec::new();
        flatten(table, "", nesting, &mut entries);
        for e in &mut entries {
            e.key = normalize(std::mem::take(&mut e.key));
        }
        entries.sort_by_key(|e| e.key_at);
        // TOML rejects literal duplicates; these are one key spelt two ways (quoted and dotted).
        let mut seen = std::collections::HashSet::new();
        if let Some(e) = entries.iter().find(|e| !seen.insert(e.key.as_str())) {
            return Err(Problem::new(e.key_at, "is set twice in this table")
                .key(&e.key)
                .hint("keep one of the two settings"));
        }
        Ok(Section { at, entries })
    }

    pub fn get(&self, key: &str) -> Option<&Entry<'a>> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// Overwrites `slot` with the value of `key` when the file sets it.
    pub fn read<T>(&self, key: &str, slot: &mut T, parse: impl FnOnce(&Entry<'a>) -> Result<T>) -> Result<()> {
        if let Some(e) = self.get(key) {
            *slot = parse(e)?;
        }
        Ok(())
    }

    /// The value of `key`, or `default` when the file does not set it.
    pub fn value_or<T>(&self, key: &str, default: T, parse: impl FnOnce(&Entry<'a>) -> Result<T>) -> Result<T> {
        self.get(key).map_or(Ok(default), parse)
    }

    /// Of the given keys that the file sets, the one written last: when two settings contradict
    /// each other, that is the write a kernel would have refused.
    pub fn last_of(&self, keys: &[&str]) -> Option<&Entry<'a>> {
        self.entries.iter().rev().find(|e| keys.contains(&e.key.as_str()))
    }

    /// A problem about a contradiction between `keys`: at the later one, or at the table when
    /// the file sets none of them (a default contradicts another default).
    pub fn conflict(&self, keys: &[&str], message: impl Into<String>) -> Problem {
        match self.last_of(keys) {
            Some(e) => e.key_problem(message),
            None => Problem::new(self.at, message),
        }
    }

    /// A problem about a key the table must have.
    pub fn missing(&self, key: &str, message: impl Into<String>) -> Problem {
        Problem::new(self.at, message).key(key)
    }

    /// The first entry whose key is not in `known`, as "unknown `what`" with a did-you-mean.
    pub fn reject_unknown(&self, known: &[&str], what: &str) -> Result<()> {
        match self.entries.iter().find(|e| !known.contains(&e.key.as_str())) {
            Some(e) => Err(e.unknown(known, what)),
            None => Ok(()),
        }
    }

    /// Every entry whose key is not in `known`, each as "unknown `what`" with a did-you-mean.
    pub fn unknown_keys(&self, known: &[&str], what: &str) -> Vec<Problem> {
        self.entries
            .iter()
            .filter(|e| !known.contains(&e.key.as_str()))
            .map(|e| e.unknown(known, what))
            .collect()
    }
}

fn flatten<'a>(table: &'a DeTable<'a>, prefix: &str, nesting: Nesting, out: &mut Vec<Entry<'a>>) {
    for (key, value) in table.iter() {
        let name = match (prefix.is_empty(), nesting) {
            (false, Nesting::Flatten(sep) | Nesting::FlattenExcept(sep, _)) => format!("{prefix}{sep}{}", key.get_ref()),
            _ => key.get_ref().to_string(),
        };
        let leaf = |t: &DeTable<'_>, keys: &[&str]| !t.is_empty() && t.iter().all(|(k, _)| keys.contains(&k.get_ref().as_ref()));
        match (value.get_ref(), nesting) {
            (DeValue::Table(inner), Nesting::Flatten(_)) => flatten(inner, &name, nesting, out),
            (DeValue::Table(inner), Nesting::FlattenExcept(_, keys)) if !leaf(inner, keys) => flatten(inner, &name, nesting, out),
            (v, _) => out.push(Entry {
                key: name,
                key_at: key.span().start,
                value: v,
                value_at: value.span().start,
            }),
        }
    }
}

/// "a string (\"20\")", "an array": what the user wrote, for type errors.
pub(crate) fn describe(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(s) => format!("a string (\"{s}\")"),
        DeValue::Integer(i) => format!("an integer ({i})"),
        DeValue::Float(f) => format!("a float ({f})"),
        DeValue::Boolean(b) => format!("a boolean ({b})"),
        DeValue::Datetime(d) => format!("a date-time ({d})"),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    }
}

/// An inclusive range check with a message that names the range, values shown by `show`.
fn in_range(v: u64, lo: u64, hi: u64, show: fn(u64) -> String) -> std::result::Result<u64, String> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else if hi == u64::MAX {
        Err(format!("must be at least {}, got {}", show(lo), show(v)))
    } else {
        Err(format!("must be between {} and {}, got {}", show(lo), show(hi), show(v)))
    }
}

impl<'a> Entry<'a> {
    /// The table this entry holds, or an error saying how to write one.
    pub fn table(&self, nesting: Nesting, normalize: fn(String) -> String) -> Result<Section<'a>> {
        match self.value {
            DeValue::Table(t) => Section::from_table(self.value_at, t, nesting, normalize),
            DeValue::Array(_) => Err(self
                .problem("must be a table, found an array")
                .hint(format!("write a single [{}] header, not [[{}]]", self.key, self.key))),
            other => Err(self
                .problem(format!("must be a table, found {}", describe(other)))
                .hint(format!("put its keys under a [{}] header", self.key))),
        }
    }

    /// The tables of an array of tables (`[[device]]`), each as its own section.
    pub fn tables(&self, nesting: Nesting, normalize: fn(String) -> String) -> Result<Vec<Section<'a>>> {
        let hint = format!("write one [[{}]] header (double brackets) per {}", self.key, self.key);
        let DeValue::Array(items) = self.value else {
            let found = describe(self.value);
            return Err(self.problem(format!("must be an array of tables, found {found}")).hint(hint));
        };
        items
            .iter()
            .map(|item| match item.get_ref() {
                DeValue::Table(t) => Section::from_table(item.span().start, t, nesting, normalize),
                other => Err(
                    Problem::new(item.span().start, format!("each entry must be a table, found {}", describe(other)))
                        .key(&self.key)
                        .hint(hint.clone()),
                ),
            })
            .collect()
    }

    /// An error about this entry's value.
    pub fn problem(&self, message: impl Into<String>) -> Problem {
        Problem::new(self.value_at, message).key(&self.key)
    }

    /// An error about this entry's key.
    pub fn key_problem(&self, message: impl Into<String>) -> Problem {
        Problem::new(self.key_at, message).key(&self.key)
    }

    /// "unknown `what`" with a did-you-mean over `known`.
    pub fn unknown(&self, known: &[&str], what: &str) -> Problem {
        let hint = suggest::did_you_mean(&self.key, known).unwrap_or_else(|| format!("known keys: {}", suggest::list(known)));
        self.key_problem(format!("unknown {what}")).hint(hint)
    }

    fn type_problem(&self, expected: &str) -> Problem {
        self.problem(format!("expected {expected}, found {}", describe(self.value)))
    }

    pub fn str(&self) -> Result<&str> {
        match self.value {
            DeValue::String(s) => Ok(s),
            _ => Err(self.type_problem("a string").hint(format!("quote it: {} = \"...\"", self.key))),
        }
    }

    /// A TOML integer of any size TOML allows, sign included.
    fn integer(&self) -> Result<i128> {
        match self.value {
            DeValue::Integer(i) => i128::from_str_radix(i.as_str(), i.radix()).map_err(|_| self.problem(format!("{i} is too large"))),
            DeValue::String(s) if s.trim().parse::<i128>().is_ok() => {
                Err(self
                    .type_problem("an integer")
                    .hint(format!("remove the quotes: {} = {}", self.key, s.trim())))
            }
            _ => Err(self.type_problem("an integer")),
        }
    }

    /// An integer in `lo..=hi`.
    pub fn uint(&self, lo: u64, hi: u64) -> Result<u64> {
        let v = self.integer()?;
        if v < 0 {
            let range = if hi == u64::MAX {
                format!("at least {lo}")
            } else {
                format!("between {lo} and {hi}")
            };
            return Err(self
                .problem(format!("must not be negative, got {v}"))
                .hint(format!("allowed: {range}")));
        }
        let v = u64::try_from(v).map_err(|_| self.problem(format!("{v} is too large")))?;
        in_range(v, lo, hi, |v| v.to_string()).map_err(|m| self.problem(m))
    }

    /// An integer in `lo..=hi` that fits the kernel's `unsigned int`/`int` fields.
    pub fn u32(&self, lo: u32, hi: u32) -> Result<u32> {
        let v = self.uint(u64::from(lo), u64::from(hi))?;
        Ok(u32::try_from(v).unwrap_or(hi))
    }

    /// `v` (this entry's value, already read) if it is a power of two: sizes the kernel
    /// shifts by, such as a page or an inode. `what` names it in the message.
    pub fn power_of_two<T: Into<u64> + Copy + std::fmt::Display>(&self, v: T, what: &str, hint: &str) -> Result<T> {
        if v.into().is_power_of_two() {
            Ok(v)
        } else {
            Err(self.problem(format!("{what} of {v} bytes is not a power of two")).hint(hint))
        }
    }

    /// A signed integer in `lo..=hi`, for knobs with a negative sentinel (`wbt_lat_usec = -1`).
    pub fn int(&self, lo: i64, hi: i64) -> Result<i64> {
        let v = self.integer()?;
        match i64::try_from(v) {
            Ok(v) if (lo..=hi).contains(&v) => Ok(v),
            _ => Err(self.problem(format!("must be between {lo} and {hi}, got {v}"))),
        }
    }

    /// A value given either as a bare integer or as a string with units.
    fn with_units(&self, what: &str, syntax: &str, parse: fn(&str) -> std::result::Result<u64, UnitError>) -> Result<u64> {
        match self.value {
            DeValue::Integer(_) => self.uint(0, u64::MAX).map_err(|p| p.hint(syntax)),
            DeValue::String(s) => parse(s).map_err(|e| {
                let message = match e {
                    UnitError::Empty => format!("empty {what}"),
                    e => format!("`{s}` is not a valid {what}: {e}"),
                };
                self.problem(message).hint(syntax)
            }),
            _ => Err(self.type_problem(&format!("a {what}")).hint(syntax)),
        }
    }

    /// Bytes: an integer or a string with a unit (`"4GiB"`).
    pub fn size(&self) -> Result<u64> {
        self.with_units("size", units::SIZE_SYNTAX, units::parse_size)
    }

    pub fn size_in(&self, lo: u64, hi: u64) -> Result<u64> {
        in_range(self.size()?, lo, hi, units::format_size).map_err(|m| self.problem(m))
    }

    /// Nanoseconds: an integer or a string with a unit (`"8.5ms"`).
    pub fn duration(&self) -> Result<u64> {
        self.with_units("duration", units::DURATION_SYNTAX, units::parse_duration)
    }

    pub fn duration_in(&self, lo: u64, hi: u64) -> Result<u64> {
        in_range(self.duration()?, lo, hi, units::format_duration).map_err(|m| self.problem(m))
    }

    /// Bytes per second, never zero (models divide by it).
    pub fn rate(&self) -> Result<u64> {
        match self.with_units("rate", units::RATE_SYNTAX, units::parse_rate)? {
            0 => Err(self.problem("must be more than 0 bytes per second")),
            r => Ok(r),
        }
    }

    /// Bytes per second where 0 is allowed (and means "no limit" to the caller).
    pub fn rate_or_zero(&self) -> Result<u64> {
        self.with_units("rate", units::RATE_SYNTAX, units::parse_rate)
    }

    /// `true`/`false`, or `1`/`0` as sysfs and sysctl print flags.
    pub fn boolean(&self) -> Result<bool> {
        match self.value {
            DeValue::Boolean(b) => Ok(*b),
            DeValue::Integer(_) => Ok(self.uint(0, 1).map_err(|p| p.hint("write true/false or 1/0"))? == 1),
            _ => Err(self.type_problem("a boolean").hint("write true/false or 1/0")),
        }
    }

    /// One of a fixed set of words; case-insensitive, with a did-you-mean.
    pub fn keyword(&self, allowed: &[&'static str], what: &str) -> Result<&'static str> {
        let s = self.str()?.trim();
        allowed
            .iter()
            .copied()
            .find(|a| a.eq_ignore_ascii_case(s))
            .ok_or_else(|| self.problem(format!("unknown {what} `{s}`")).hint(suggest::hint(s, allowed)))
    }
}
