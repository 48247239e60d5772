//! `[policy]`: override single pieces of the kernel generation's choice, e.g. run 2.6.24's
//! per-bdi throttling with 6.x reclaim. Each key takes the policy names `wblab kernels` lists.

use crate::error::Result;
use crate::section::Section;
use wblab_sim::config::{FlusherKind, PageWake, PolicyConfig, QueueEra, ReclaimKind, ThrottleKind, WritebackChunk};

pub(super) const KEYS: &[&str] = &["throttle", "flusher", "reclaim", "queue", "writeback_chunk", "page_wake"];

const THROTTLES: &[&str] = &["bdflush", "global", "per-bdi", "io-less", "modern"];
const FLUSHERS: &[&str] = &["bdflush", "pdflush", "per-bdi", "modern"];
const RECLAIMS: &[&str] = &["pageout", "kswapd-pageout", "modern"];
const QUEUES: &[&str] = &["legacy", "blk-mq"];
const CHUNKS: &[&str] = &["fixed", "bandwidth"];
const PAGE_WAKES: &[&str] = &["wake-all", "filtered", "filtered+wake-one", "handoff"];

/// The generation's policy with the section's overrides applied.
pub(super) fn build(sec: &Section<'_>, mut p: PolicyConfig) -> Result<PolicyConfig> {
    sec.reject_unknown(KEYS, "key in [policy]")?;
    sec.read("throttle", &mut p.throttle, |e| {
        Ok(match e.keyword(THROTTLES, "throttling policy")? {
            "bdflush" => ThrottleKind::Bdflush,
            "global" => ThrottleKind::Global,
            "per-bdi" => ThrottleKind::PerBdi,
            "io-less" => ThrottleKind::IoLess,
            _ => ThrottleKind::Modern,
        })
    })?;
    sec.read("flusher", &mut p.flusher, |e| {
        Ok(match e.keyword(FLUSHERS, "flusher")? {
            "bdflush" => FlusherKind::Bdflush,
            "pdflush" => FlusherKind::Pdflush,
            "per-bdi" => FlusherKind::PerBdi,
            _ => FlusherKind::Modern,
        })
    })?;
    sec.read("reclaim", &mut p.reclaim, |e| {
        Ok(match e.keyword(RECLAIMS, "reclaim policy")? {
            "pageout" => ReclaimKind::Pageout,
            "kswapd-pageout" => ReclaimKind::KswapdPageout,
            _ => ReclaimKind::Modern,
        })
    })?;
    sec.read("queue", &mut p.queue, |e| {
        Ok(match e.keyword(QUEUES, "request queue")? {
            "legacy" => QueueEra::Legacy,
            _ => QueueEra::BlkMq,
        })
    })?;
    sec.read("writeback_chunk", &mut p.writeback_chunk, |e| {
        Ok(match e.keyword(CHUNKS, "writeback chunk rule")? {
            "fixed" => WritebackChunk::Fixed,
            _ => WritebackChunk::Bandwidth,
        })
    })?;
    sec.read("page_wake", &mut p.page_wake, |e| {
        Ok(match e.keyword(PAGE_WAKES, "page wake policy")? {
            "wake-all" => PageWake::WakeAll,
            "filtered" => PageWake::Filtered,
            "filtered+wake-one" => PageWake::FilteredWakeOne,
            _ => PageWake::Handoff,
        })
    })?;
    Ok(p)
}
