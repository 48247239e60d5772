//! `wblab btt`: the life of each block I/O from an ftrace text trace, as blktrace's `btt`
//! reports it — Q2G (queued to request allocated: wbt and the tag wait), G2I (to inserted in
//! the scheduler), I2D (in the scheduler until issued), D2C (on the device), Q2C (the whole),
//! Q2M and M2D for merged bios — for all devices, per device and per process, with
//! `biolatency`-style histograms.
//!
//! The same code reads a simulated run's `trace.txt` and one `wblab measure` recorded (or any
//! `/sys/kernel/tracing/trace` text with the block events). I/Os are followed by device and
//! sector, as btt does: a bio is queued at its sector, a split hands the queue time on to the
//! remainder's sector, a merge adds the bio to the request next to it (a front merge moves the
//! request's start), and the request is issued and completed at its start sector.
//! A process is the task that queued the bio (the trace line's comm at `block_bio_queue`):
//! bios released by blk-throttle are queued by its kworker, as on the real kernel.

mod render;

pub use render::{render, write_csv};

use crate::load::trace_parse::{parse_line_ref, LineRef};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// min/avg/max/N of one interval, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub n: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
}

impl Span {
    fn add(&mut self, ns: u64) {
        if self.n == 0 || ns < self.min {
            self.min = ns;
        }
        self.max = self.max.max(ns);
        self.sum += u128::from(ns);
        self.n += 1;
    }

    /// Mean, ns (0 with no samples).
    pub fn avg(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
}

/// The intervals btt reports, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Q2Q,
    Q2G,
    G2I,
    Q2M,
    I2D,
    M2D,
    D2C,
    Q2C,
}

impl Phase {
    pub const ALL: [Phase; 8] = [
        Phase::Q2Q,
        Phase::Q2G,
        Phase::G2I,
        Phase::Q2M,
        Phase::I2D,
        Phase::M2D,
        Phase::D2C,
        Phase::Q2C,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Q2Q => "Q2Q",
            Phase::Q2G => "Q2G",
            Phase::G2I => "G2I",
            Phase::Q2M => "Q2M",
            Phase::I2D => "I2D",
            Phase::M2D => "M2D",
            Phase::D2C => "D2C",
            Phase::Q2C => "Q2C",
        }
    }
}

/// Every interval of one set of I/Os (a device, a process, or all of them).
#[derive(Clone, Debug, Default)]
pub struct Spans {
    spans: [Span; 8],
    /// Every D2C and Q2C, ns: the tails' percentiles and the histograms' slots.
    pub d2c_ns: Vec<u64>,
    pub q2c_ns: Vec<u64>,
    /// Of the I/Os whose whole life is in the trace (queued to completed): the time spent in
    /// Q2G, G2I, I2D and D2C, and in all (ns). The device overview divides these, so its
    /// shares add up to 100% (I/Os with part of their life missing would skew them).
    pub life: [u128; 4],
    pub life_total: u128,
}

impl Spans {
    pub fn get(&self, p: Phase) -> &Span {
        &self.spans[p as usize]
    }

    /// The share of the whole life spent in `p` (Q2G, G2I, I2D, D2C; Q2M against the same
    /// total, as btt does), in percent.
    pub fn life_share(&self, p: Phase) -> f64 {
        if self.life_total == 0 {
            return 0.0;
        }
        let part = match p {
            Phase::Q2G => self.life[0],
            Phase::G2I => self.life[1],
            Phase::I2D => self.life[2],
            Phase::D2C => self.life[3],
            _ => self.get(p).sum,
        };
        100.0 * part as f64 / self.life_total as f64
    }

    /// p50, p90, p99 and max of `p` (D2C or Q2C), ns, interpolated between order statistics.
    pub fn tail(&self, p: Phase) -> Option<[f64; 4]> {
        let v = match p {
            Phase::D2C => &self.d2c_ns,
            Phase::Q2C => &self.q2c_ns,
            _ => return None,
        };
        if v.is_empty() {
            return None;
        }
        let mut sorted: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        sorted.sort_by(f64::total_cmp);
        let q = |x| crate::compare::quantile(&sorted, x);
        Some([q(0.5), q(0.9), q(0.99), sorted[sorted.len() - 1]])
    }

    fn add_life(&mut self, parts: [u64; 4]) {
        for (l, p) in self.life.iter_mut().zip(parts) {
            *l += u128::from(p);
        }
        self.life_total += parts.iter().map(|&p| u128::from(p)).sum::<u128>();
    }

    fn add(&mut self, p: Phase, ns: u64) {
        self.spans[p as usize].add(ns);
        match p {
            Phase::D2C => self.d2c_ns.push(ns),
            Phase::Q2C => self.q2c_ns.push(ns),
            _ => {}
        }
    }

    /// D2C or Q2C counted in log2 µs slots, as bcc's biolatency counts them (slot 0: under
    /// 1 µs; slot i: 2^(i-1) to 2^i - 1 µs).
    pub fn log2_slots(&self, p: Phase) -> Vec<u64> {
        let v = if p == Phase::Q2C { &self.q2c_ns } else { &self.d2c_ns };
        let mut slots = Vec::new();
        for &ns in v {
            let us = ns / 1000;
            let slot = if us == 0 { 0 } else { 64 - us.leading_zeros() as usize };
            if slots.len() <= slot {
                slots.resize(slot + 1, 0);
            }
            slots[slot] += 1;
        }
        slots
    }
}

/// One completed I/O (a request), for `--csv`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Io {
    pub dev: String,
    pub rwbs: String,
    pub sector: u64,
    pub nr_sector: u64,
    /// Who queued its first bio ("" when its queueing was not in the trace).
    pub process: String,
    pub q_ns: Option<u64>,
    pub g_ns: Option<u64>,
    pub i_ns: Option<u64>,
    pub d_ns: u64,
    pub c_ns: u64,
    /// Bios merged into it.
    pub merges: u32,
}

/// What `wblab btt` found in a trace.
#[derive(Clone, Debug, Default)]
pub struct Btt {
    pub all: Spans,
    /// By device (`8,0`), in device order.
    pub devices: BTreeMap<(u32, u32), Spans>,
    /// By process name, in name order.
    pub processes: BTreeMap<String, Spans>,
    /// Completed I/Os, in completion order (kept only when asked for).
    pub ios: Vec<Io>,
    /// Block events read.
    pub events: u64,
    /// Lines of the trace that were not events (header, comments) or could not be parsed.
    pub skipped: u64,
    /// Completions of requests whose issue was not in the trace (it began mid-flight).
    pub unmatched: u64,
}

/// A bio queued, not yet in a request.
#[derive(Clone, Copy, Debug)]
struct Queued {
    t: u64,
    process: u32,
}

/// A request between getting its tag and completing.
#[derive(Clone, Debug)]
struct Rq {
    q: Option<Queued>,
    g: Option<u64>,
    i: Option<u64>,
    d: Option<u64>,
    /// When each merged bio joined it.
    merged_at: Vec<u64>,
    rwbs: String,
    sector: u64,
    nr: u64,
}

impl Rq {
    /// A request over the range of event `f`, none of its stages seen yet.
    fn new(f: &BlockFields<'_>) -> Rq {
        Rq {
            q: None,
            g: None,
            i: None,
            d: None,
            merged_at: Vec::new(),
            rwbs: f.rwbs.to_string(),
            sector: f.sector,
            nr: f.second,
        }
    }
}

/// Device and start sector of a request, and whether it is a cache flush (no sectors), keyed
/// apart from a data request at sector 0.
type Key = ((u32, u32), u64, bool);

/// Options of an analysis.
#[derive(Clone, Copy, Debug, Default)]
pub struct BttOptions {
    /// Keep every completed I/O in [`Btt::ios`].
    pub keep_ios: bool,
}

/// The block events btt reads (those of `block:` that follow an I/O).
fn is_block_event(ev: &str) -> bool {
    matches!(
        ev,
        "block_bio_queue"
            | "block_split"
            | "block_bio_backmerge"
            | "block_bio_frontmerge"
            | "block_getrq"
            | "block_rq_insert"
            | "block_rq_issue"
            | "block_rq_complete"
    )
}

/// `8,0` → (8, 0).
fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(',')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Positional fields of a block event: device, rwbs, sector, and the number after it
/// (`+ nr_sector` or, for a split, `/ new_sector`).
struct BlockFields<'a> {
    dev: (u32, u32),
    rwbs: &'a str,
    sector: u64,
    second: u64,
}

fn block_fields<'a>(l: &LineRef<'a>) -> Option<BlockFields<'a>> {
    // `8,0 W 8 + 8 [dd]`, `8,0 W 8 / 16 [dd]`, `8,0 W 4096 () 8 + 8 be,0,4 [dd]`,
    // `8,0 W () 8 + 8 be,0,4 [0]`: the sector is the token before `+` (or `/`).
    let toks: Vec<&str> = l.payload.split_whitespace().collect();
    let k = toks.iter().position(|t| *t == "+" || *t == "/")?;
    if k < 3 {
        return None;
    }
    Some(BlockFields {
        dev: parse_dev(toks[0])?,
        rwbs: toks[1],
        sector: toks[k - 1].parse().ok()?,
        second: toks.get(k + 1)?.parse().ok()?,
    })
}

/// Read a trace text and follow every I/O in it.
pub fn analyze(text: &str, opts: BttOptions) -> Btt {
    let mut b = Btt::default();
    let mut names: Vec<String> = Vec::new();
    let mut name_ix: HashMap<String, u32> = HashMap::new();
    let mut queued: HashMap<((u32, u32), u64), Queued> = HashMap::new();
    let mut rqs: HashMap<Key, VecDeque<Rq>> = HashMap::new();
    let mut last_q: HashMap<(u32, u32), u64> = HashMap::new();
    // Where each request not yet issued ends → where it starts: a back merge's target.
    let mut ends: HashMap<((u32, u32), u64), u64> = HashMap::new();
    for line in text.lines() {
        let Some(l) = parse_line_ref(line) else {
            b.skipped += 1;
            continue;
        };
        if !is_block_event(l.event) {
            continue;
        }
        let Some(f) = block_fields(&l) else {
            b.skipped += 1;
            continue;
        };
        b.events += 1;
        let t = l.ts_ns;
        let dev = f.dev;
        // A cache flush carries no sectors: its empty PREFLUSH bio (`FWS 0 + 0`), the flush
        // request (`FF 0 + 0`) and its completion (`WS () 0 + 0` on 6.18) are kept apart from
        // a data request at sector 0.
        let flush = f.second == 0 && l.event != "block_split";
        match l.event {
            "block_bio_queue" => {
                let process = *name_ix.entry(l.comm.to_string()).or_insert_with(|| {
                    names.push(l.comm.to_string());
                    (names.len() - 1) as u32
                });
                if let Some(prev) = last_q.insert(dev, t) {
                    // Between queued bios of a device (not of a process).
                    b.add(dev, "", Phase::Q2Q, t.saturating_sub(prev));
                }
                queued.insert((dev, f.sector), Queued { t, process });
            }
            "block_split" => {
                // The bio's queue time goes on with its remainder. The kernel splits before
                // the first part gets its request; a trace may also show the split after it
                // (the part is then a request at the split's start).
                let q = queued
                    .get(&(dev, f.sector))
                    .copied()
                    .or_else(|| rqs.get(&(dev, f.sector, false)).and_then(|v| v.iter().rev().find_map(|r| r.q)));
                if let Some(q) = q {
                    queued.insert((dev, f.second), q);
                }
            }
            "block_bio_backmerge" | "block_bio_frontmerge" => {
                let q = queued.remove(&(dev, f.sector));
                if let Some(q) = q {
                    b.add(dev, &names[q.process as usize], Phase::Q2M, t.saturating_sub(q.t));
                }
                // The request it joined: ends at this bio (back) or starts after it (front).
                let front = l.event == "block_bio_frontmerge";
                let start = if front {
                    Some(f.sector + f.second)
                } else {
                    ends.get(&(dev, f.sector)).copied()
                };
                if let Some(mut r) = start.and_then(|s| take_undispatched(&mut rqs, &(dev, s, false))) {
                    ends.remove(&(dev, r.sector + r.nr));
                    r.merged_at.push(t);
                    r.nr += f.second;
                    if front {
                        r.sector = f.sector;
                    }
                    ends.insert((dev, r.sector + r.nr), r.sector);
                    rqs.entry((dev, r.sector, false)).or_default().push_back(r);
                }
            }
            "block_getrq" => {
                let q = queued.remove(&(dev, f.sector));
                if let Some(q) = q {
                    b.add(dev, &names[q.process as usize], Phase::Q2G, t.saturating_sub(q.t));
                }
                let r = Rq {
                    q,
                    g: Some(t),
                    ..Rq::new(&f)
                };
                if !flush {
                    ends.insert((dev, f.sector + f.second), f.sector);
                }
                rqs.entry((dev, f.sector, flush)).or_default().push_back(r);
            }
            "block_rq_insert" => {
                if let Some(r) = rqs
                    .get_mut(&(dev, f.sector, flush))
                    .and_then(|v| v.iter_mut().find(|r| r.d.is_none() && r.i.is_none()))
                {
                    r.i = Some(t);
                    if let Some(g) = r.g {
                        let p = r.q.map(|q| q.process);
                        let name = p.map_or("", |p| names[p as usize].as_str());
                        b.add(dev, name, Phase::G2I, t.saturating_sub(g));
                    }
                }
            }
            "block_rq_issue" => {
                let key = (dev, f.sector, flush);
                let slot = rqs.entry(key).or_default();
                let r = match slot.iter_mut().find(|r| r.d.is_none()) {
                    Some(r) => r,
                    None => {
                        // Issued without a getrq in the trace (a flush, or a trace begun
                        // mid-way): its device time still counts.
                        slot.push_back(Rq::new(&f));
                        slot.back_mut().expect("just pushed")
                    }
                };
                if ends.get(&(dev, r.sector + r.nr)) == Some(&r.sector) {
                    ends.remove(&(dev, r.sector + r.nr));
                }
                r.d = Some(t);
                r.rwbs = f.rwbs.to_string();
                r.nr = f.second;
                let name = r.q.map_or("", |q| names[q.process as usize].as_str());
                if let Some(i) = r.i {
                    b.add(dev, name, Phase::I2D, t.saturating_sub(i));
                }
                for &m in &r.merged_at {
                    b.add(dev, name, Phase::M2D, t.saturating_sub(m));
                }
            }
            "block_rq_complete" => {
                let key = (dev, f.sector, flush);
                let Some(v) = rqs.get_mut(&key) else {
                    b.unmatched += 1;
                    continue;
                };
                let Some(pos) = v.iter().position(|r| r.d.is_some()) else {
                    b.unmatched += 1;
                    continue;
                };
                let r = v.remove(pos).expect("found");
                if v.is_empty() {
                    rqs.remove(&key);
                }
                let d = r.d.expect("issued");
                let name = r.q.map_or("", |q| names[q.process as usize].as_str()).to_string();
                b.add(dev, &name, Phase::D2C, t.saturating_sub(d));
                if let Some(q) = r.q {
                    b.add(dev, &name, Phase::Q2C, t.saturating_sub(q.t));
                    if let Some(g) = r.g {
                        // Without an insert (`none` issuing directly), the time from the
                        // request to its issue counts as I2D.
                        let i = r.i.unwrap_or(g);
                        let parts = [g.saturating_sub(q.t), i.saturating_sub(g), d.saturating_sub(i), t.saturating_sub(d)];
                        b.add_life(dev, &name, parts);
                    }
                }
                if opts.keep_ios {
                    b.ios.push(Io {
                        dev: format!("{},{}", dev.0, dev.1),
                        rwbs: r.rwbs,
                        sector: r.sector,
                        nr_sector: r.nr,
                        process: name,
                        q_ns: r.q.map(|q| q.t),
                        g_ns: r.g,
                        i_ns: r.i,
                        d_ns: d,
                        c_ns: t,
                        merges: r.merged_at.len() as u32,
                    });
                }
            }
            _ => {}
        }
    }
    b
}

/// The request at `k` not yet issued, taken out of the map.
fn take_undispatched(rqs: &mut HashMap<Key, VecDeque<Rq>>, k: &Key) -> Option<Rq> {
    let v = rqs.get_mut(k)?;
    let pos = v.iter().position(|r| r.d.is_none())?;
    let r = v.remove(pos);
    if v.is_empty() {
        rqs.remove(k);
    }
    r
}

impl Btt {
    /// Count interval `p` of an I/O of device `dev` queued by `process` ("" when unknown).
    fn add(&mut self, dev: (u32, u32), process: &str, p: Phase, ns: u64) {
        self.all.add(p, ns);
        self.devices.entry(dev).or_default().add(p, ns);
        if !process.is_empty() {
            match self.processes.get_mut(process) {
                Some(s) => s.add(p, ns),
                None => {
                    let mut s = Spans::default();
                    s.add(p, ns);
                    self.processes.insert(process.to_string(), s);
                }
            }
        }
    }

    fn add_life(&mut self, dev: (u32, u32), process: &str, parts: [u64; 4]) {
        self.all.add_life(parts);
        self.devices.entry(dev).or_default().add_life(parts);
        if let Some(s) = self.processes.get_mut(process) {
            s.add_life(parts);
        }
    }

    /// Whether the trace had the bio events (`block_bio_queue`), not only issue/complete.
    pub fn has_queue_events(&self) -> bool {
        self.all.get(Phase::Q2C).n > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(b: &Spans, p: Phase) -> (u64, u64, u64) {
        let s = b.get(p);
        (s.n, s.min / 1000, s.max / 1000)
    }

    /// A 1 MiB O_DIRECT write on a 6.18 loop device (`none`): split into two requests, issued
    /// straight from the plug, no insert.
    const SPLIT_618: &str = "\
              dd-835     [001] ..... 81918.174906: block_bio_queue: 7,0 WS 0 + 2048 [dd]
              dd-835     [001] ..... 81918.174912: block_split: 7,0 WS 0 / 1024 [dd]
              dd-835     [001] ..... 81918.174916: block_getrq: 7,0 WS 0 + 1024 [dd]
              dd-835     [001] ..... 81918.174918: block_plug: [dd]
              dd-835     [001] ..... 81918.174920: block_getrq: 7,0 WS 1024 + 1024 [dd]
              dd-835     [001] ..... 81918.174922: block_unplug: [dd] 1
              dd-835     [001] ..... 81918.174924: block_rq_issue: 7,0 WS 524288 () 0 + 1024 be,0,4 [dd]
              dd-835     [001] .N... 81918.175010: block_rq_issue: 7,0 WS 524288 () 1024 + 1024 be,0,4 [dd]
     ksoftirqd/1-22      [001] ..s.. 81918.175297: block_rq_complete: 7,0 WS () 0 + 1024 be,0,4 [0]
     ksoftirqd/1-22      [001] ..s.. 81918.175445: block_rq_complete: 7,0 WS () 1024 + 1024 be,0,4 [0]
";

    #[test]
    fn a_split_bio_gives_each_part_the_bios_queue_time() {
        let b = analyze(SPLIT_618, BttOptions { keep_ios: true });
        assert_eq!(b.events, 8, "plug and unplug are not I/O events");
        assert_eq!(us(&b.all, Phase::Q2G), (2, 10, 14));
        assert_eq!(us(&b.all, Phase::D2C), (2, 373, 435));
        assert_eq!(us(&b.all, Phase::Q2C), (2, 391, 539));
        // The tails interpolate between the two: p50 halfway, p99 near the larger.
        let [p50, _, p99, max] = b.all.tail(Phase::Q2C).expect("Q2C tails");
        assert_eq!((p50, max), (465_000.0, 539_000.0));
        assert!((p99 - 537_520.0).abs() < 1.0, "{p99}");
        assert!(render(&b, false).contains("Tails (percentiles, ms)"));
        assert_eq!(b.all.get(Phase::G2I).n, 0, "no insert under `none`");
        assert_eq!(b.processes.keys().collect::<Vec<_>>(), ["dd"]);
        assert_eq!(b.ios.len(), 2);
        assert_eq!(
            (b.ios[1].sector, b.ios[1].nr_sector, b.ios[1].q_ns),
            (1024, 1024, Some(81918174906000))
        );
        // The overview's shares cover the whole life.
        let sum: f64 = [Phase::Q2G, Phase::G2I, Phase::I2D, Phase::D2C]
            .iter()
            .map(|&p| b.all.life_share(p))
            .sum();
        assert!((sum - 100.0).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn the_split_may_follow_the_first_parts_request() {
        // The simulator's order: the split shows when the next part is submitted.
        let reordered: String = {
            let l: Vec<&str> = SPLIT_618.lines().collect();
            [l[0], l[2], l[1], l[4], l[6], l[7], l[8], l[9]].join("\n")
        };
        let a = analyze(SPLIT_618, BttOptions::default());
        let b = analyze(&reordered, BttOptions::default());
        assert_eq!(b.all.get(Phase::Q2C).n, 2);
        assert_eq!(a.all.get(Phase::Q2C), b.all.get(Phase::Q2C));
    }

    #[test]
    fn merged_bios_join_their_request() {
        let t = "\
a-1 [000] ..... 1.000000: block_bio_queue: 8,0 W 100 + 8 [a]
a-1 [000] ..... 1.000001: block_getrq: 8,0 W 100 + 8 [a]
a-1 [000] ..... 1.000002: block_rq_insert: 8,0 W 4096 () 100 + 8 be,0,4 [a]
b-2 [000] ..... 1.000010: block_bio_queue: 8,0 W 108 + 8 [b]
b-2 [000] ..... 1.000011: block_bio_backmerge: 8,0 W 108 + 8 [b]
c-3 [000] ..... 1.000020: block_bio_queue: 8,0 W 92 + 8 [c]
c-3 [000] ..... 1.000022: block_bio_frontmerge: 8,0 W 92 + 8 [c]
k-4 [000] ..... 1.000100: block_rq_issue: 8,0 W 12288 () 92 + 24 be,0,4 [k]
<idle>-0 [000] ..s.. 1.000500: block_rq_complete: 8,0 W () 92 + 24 be,0,4 [0]
";
        let b = analyze(t, BttOptions { keep_ios: true });
        assert_eq!(us(&b.all, Phase::Q2M), (2, 1, 2));
        assert_eq!(us(&b.all, Phase::M2D), (2, 78, 89));
        assert_eq!(us(&b.all, Phase::I2D), (1, 98, 98));
        assert_eq!(us(&b.all, Phase::Q2C), (1, 500, 500), "from the first bio's queueing");
        assert_eq!((b.ios[0].merges, b.ios[0].process.as_str()), (2, "a"));
        assert_eq!(b.unmatched, 0);
    }

    #[test]
    fn a_flush_is_followed_apart_from_the_data_at_sector_zero() {
        // fsync's PREFLUSH on a 6.18 loop device, then a metadata write at sector 0 seconds
        // later: the flush completes as `WS () 0 + 0`.
        let t = "\
           wblab-25162   [001] ..... 83160.670106: block_bio_queue: 7,64 FWS 0 + 0 [wblab]
           wblab-25162   [001] ..... 83160.670110: block_getrq: 7,64 FWS 0 + 0 [wblab]
    kworker/1:1H-7880    [001] ..... 83160.670118: block_rq_issue: 7,64 FF 0 () 0 + 0 none,0,0 [kworker/1:1H]
     ksoftirqd/1-22      [001] d.s1. 83160.670225: block_rq_complete: 7,64 WS () 0 + 0 be,0,4 [0]
    kworker/u8:0-22110   [000] ..... 83167.248161: block_bio_queue: 7,64 WM 0 + 8 [kworker/u8:0]
    kworker/u8:0-22110   [000] ..... 83167.248171: block_getrq: 7,64 WM 0 + 8 [kworker/u8:0]
    kworker/u8:0-22110   [000] .N... 83167.250508: block_rq_issue: 7,64 WM 4096 () 0 + 8 be,0,4 [kworker/u8:0]
     ksoftirqd/1-22      [001] ..s.. 83167.250756: block_rq_complete: 7,64 WM () 0 + 8 be,0,4 [0]
";
        let b = analyze(t, BttOptions { keep_ios: true });
        assert_eq!(b.unmatched, 0);
        assert_eq!(us(&b.all, Phase::Q2C), (2, 119, 2595));
        assert_eq!((b.ios[0].process.as_str(), b.ios[1].process.as_str()), ("wblab", "kworker/u8:0"));
    }

    #[test]
    fn a_completion_without_its_issue_is_counted_not_matched() {
        let t = "<idle>-0 [000] ..s.. 1.000500: block_rq_complete: 8,0 W () 92 + 24 be,0,4 [0]\n";
        let b = analyze(t, BttOptions::default());
        assert_eq!((b.events, b.unmatched, b.all.get(Phase::D2C).n), (1, 1, 0));
        assert!(render(&b, false).contains("had no issue in the trace"));
    }

    #[test]
    fn a_trace_without_block_events_says_how_to_record_them() {
        let b = analyze("dd-1 [000] ..... 1.0: global_dirty_state: dirty=1\n", BttOptions::default());
        assert_eq!(b.events, 0);
        assert!(render(&b, false).contains("--trace-block"));
    }
}
