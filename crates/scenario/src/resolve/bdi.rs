//! `bdi/*`: `/sys/class/bdi/<maj:min>/` as `mm/backing-dev.c` accepts it.

use crate::error::{Gather, Many};
use crate::section::Section;
use wblab_sim::config::{BdiConfig, BDI_KNOBS};

/// The keys, in the table's order.
pub(super) fn keys() -> Vec<&'static str> {
    BDI_KNOBS.iter().map(|k| k.knob.key).collect()
}

pub(super) fn build(sec: &Section<'_>) -> Many<BdiConfig> {
    let mut g = Gather::default();
    // Each limit has three spellings (percent, ppm, bytes); the kernel keeps whichever was
    // written last, so a file that sets two of them is ambiguous.
    for group in [
        ["bdi/min_ratio", "bdi/min_ratio_fine", "bdi/min_bytes"],
        ["bdi/max_ratio", "bdi/max_ratio_fine", "bdi/max_bytes"],
    ] {
        let set: Vec<&str> = group.iter().copied().filter(|k| sec.get(k).is_some()).collect();
        if set.len() > 1 {
            g.push(
                sec.conflict(&group, format!("`{}` and `{}` set the same limit", set[0], set[1]))
                    .hint("keep one: the kernel converts each into the same ratio and keeps the last write"),
            );
        }
    }

    let mut b = BdiConfig::default();
    for k in BDI_KNOBS {
        if let Some(v) = sec
            .get(k.knob.key)
            .and_then(|e| g.keep(super::model::knob_value(e, &k.knob.spec())))
        {
            (k.knob.set)(&mut b, v);
        }
    }

    g.sound()?;
    let crossed = match (b.min_bytes, b.max_bytes) {
        (Some(lo), Some(hi)) if lo > hi => Some(format!("min_bytes ({lo}) is above max_bytes ({hi})")),
        _ if b.min_ratio_ppm > b.max_ratio_ppm => Some(format!(
            "the minimum ratio ({}) is above the maximum ratio ({})",
            percent(b.min_ratio_ppm),
            percent(b.max_ratio_ppm)
        )),
        _ => None,
    };
    if let Some(message) = crossed {
        return Err(vec![sec.conflict(&keys()[..6], message).hint(
            "the kernel refuses min_ratio > max_ratio (EINVAL); lower the minimum or raise the maximum",
        )]);
    }
    Ok(b)
}

/// `250000` ppm as `25%`, `12345` as `1.2345%`.
pub(super) fn percent(ppm: u64) -> String {
    let (whole, frac) = (ppm / 10_000, ppm % 10_000);
    if frac == 0 {
        format!("{whole}%")
    } else {
        format!("{whole}.{}%", format!("{frac:04}").trim_end_matches('0'))
    }
}
