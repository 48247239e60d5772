//! `[policy]`: override single pieces of the kernel generation's choice, e.g. run 2.6.24's
//! per-bdi throttling with 6.x reclaim. Each key takes the names `wblab kernels` lists: a full
//! name (`per-bdi-2.6.24`), or a family (`per-bdi`) meaning the kernel's own member of it.

use crate::error::{Gather, Many, Result};
use crate::section::Section;
use crate::suggest;
use wblab_sim::config::{PieceError, PolicyConfig, PolicyPiece};

pub(super) const KEYS: &[&str] = &[
    "throttle",
    "flusher",
    "reclaim",
    "queue",
    "writeback_chunk",
    "page_wake",
    "page_hash",
    "timer_wheel",
    "readahead",
    "read_wait",
];

/// The generation's policy with the section's overrides applied.
pub(super) fn build(sec: &Section<'_>, mut p: PolicyConfig) -> Many<PolicyConfig> {
    let mut g = Gather::default();
    g.extend(sec.unknown_keys(KEYS, "key in [policy]"));
    let own = p.own;
    g.keep(piece(sec, "throttle", &mut p.throttle, own.throttle));
    g.keep(piece(sec, "flusher", &mut p.flusher, own.flusher));
    let reclaim = p.reclaim;
    g.keep(piece(sec, "reclaim", &mut p.reclaim, reclaim));
    g.keep(piece(sec, "queue", &mut p.queue, own.queue));
    let chunk = p.writeback_chunk;
    g.keep(piece(sec, "writeback_chunk", &mut p.writeback_chunk, chunk));
    let wake = p.page_wake;
    g.keep(piece(sec, "page_wake", &mut p.page_wake, wake));
    let hash = p.page_hash;
    g.keep(piece(sec, "page_hash", &mut p.page_hash, hash));
    let wheel = p.timer_wheel;
    g.keep(piece(sec, "timer_wheel", &mut p.timer_wheel, wheel));
    let ra = p.readahead;
    g.keep(piece(sec, "readahead", &mut p.readahead, ra));
    let rw = p.read_wait;
    g.keep(piece(sec, "read_wait", &mut p.read_wait, rw));
    g.finish(p)
}

/// Read one piece: a full name, or a family that stands for the kernel's own member (`own`).
fn piece<P: PolicyPiece>(sec: &Section<'_>, key: &str, slot: &mut P, own: P) -> Result<()> {
    sec.read(key, slot, |e| {
        let name = e.str()?.trim();
        P::parse(name, own).map_err(|why| match why {
            PieceError::Unknown => e
                .problem(format!("unknown {} `{name}`", P::WHAT))
                .hint(suggest::hint(name, &P::names())),
            PieceError::NoOwnMember(members) => e
                .problem(format!("this kernel has no {} `{name}` of its own", P::WHAT))
                .hint(format!("name the release's: {}", suggest::list(&members))),
        })
    })
}
