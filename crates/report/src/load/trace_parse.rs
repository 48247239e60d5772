//! A parser for ftrace text lines (`/sys/kernel/tracing/trace`, `trace-cmd report`-like), for
//! our own `trace.txt` and for traces captured on real kernels.
//!
//! Fields are found by name, never by position: kernels renamed them over time
//! (`bdi_setpoint` → `wb_setpoint`), and [`ParsedEvent::get`] knows those aliases.
//!
//! Payload conventions handled:
//! * `bdi 8:0: k=v k=v ...` (writeback events): field `bdi`, then the `k=v` pairs;
//! * `8:0: msg: k=v, k=v` (wbt events): fields `dev`, optional `msg`, then the pairs;
//! * block request events, positional
//!   `8,0 RWBS [bytes] (cmd) sector + nr_sector [ioprio] [comm-or-error]`: fields `dev`, `rwbs`,
//!   `bytes`, `cmd`, `sector`, `nr_sector`, `ioprio`, and `comm` (issue, insert, ...) or `error`
//!   (complete, error, requeue); the bio events the same without `bytes`, `(cmd)` and ioprio;
//!   `block_split`'s `8,0 RWBS sector / new_sector [comm]`;
//! * anything else: `k=v` tokens (trailing commas dropped), `key value` pairs of a bare word
//!   and a value (`sb_dev 0:0`, `latency 123us`), and leftover bare tokens as `_0`, `_1`, ...

/// One parsed trace line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedEvent {
    pub comm: String,
    pub pid: u32,
    pub cpu: u32,
    /// The flags column (`.....`, `.N.1.`), empty if the trace has no irq-info column.
    pub flags: String,
    /// Timestamp, ns (the text has µs resolution, or ns with the `ns` clock display).
    pub ts_ns: u64,
    /// Event name without the subsystem (`balance_dirty_pages`).
    pub event: String,
    /// Fields in the order they appear.
    pub fields: Vec<(String, String)>,
}

/// Names that mean the same field in different kernel versions.
const ALIASES: &[&[&str]] = &[
    &["wb_setpoint", "bdi_setpoint"],
    &["wb_dirty", "bdi_dirty"],
    &["wb_thresh", "bdi_thresh"],
    &["avg_write_bw", "awrite_bw"],
];

impl ParsedEvent {
    /// The value of field `name`, exactly as printed; falls back to the field's other names in
    /// older or newer kernels (`get("wb_setpoint")` also finds `bdi_setpoint`).
    pub fn get(&self, name: &str) -> Option<&str> {
        if let Some(v) = self.get_exact(name) {
            return Some(v);
        }
        let group = ALIASES.iter().find(|g| g.contains(&name))?;
        group.iter().filter(|&&n| n != name).find_map(|n| self.get_exact(n))
    }

    /// The value of field `name`, without aliases.
    pub fn get_exact(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A field as a signed integer; a unit suffix is ignored (`window=100000us` → 100000).
    pub fn get_i64(&self, name: &str) -> Option<i64> {
        leading_int(self.get(name)?)
    }

    /// A field as an unsigned integer; a unit suffix is ignored.
    pub fn get_u64(&self, name: &str) -> Option<u64> {
        let v = self.get(name)?;
        let end = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
        v[..end].parse().ok()
    }
}

/// A field's leading unsigned integer (`100000us` → 100000).
pub fn leading_u64(v: &str) -> Option<u64> {
    let end = v.bytes().position(|c| !c.is_ascii_digit()).unwrap_or(v.len());
    v[..end].parse().ok()
}

/// A field's leading signed integer.
pub fn leading_int(v: &str) -> Option<i64> {
    let digits_from = usize::from(v.starts_with('-'));
    let end = v[digits_from..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(v.len(), |i| i + digits_from);
    v[..end].parse().ok()
}

/// The columns of one trace line, borrowed from it: nothing is allocated, and the payload is
/// only split when a field is asked for. What a reader of big traces uses
/// (`RunDir::load` on a 600k-line `trace.txt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRef<'a> {
    pub comm: &'a str,
    pub pid: u32,
    pub cpu: u32,
    pub flags: &'a str,
    pub ts_ns: u64,
    pub event: &'a str,
    pub payload: &'a str,
}

impl<'a> LineRef<'a> {
    /// All fields, as [`parse_line`] gives them.
    pub fn into_owned(self) -> ParsedEvent {
        ParsedEvent {
            comm: self.comm.to_string(),
            pid: self.pid,
            cpu: self.cpu,
            flags: self.flags.to_string(),
            ts_ns: self.ts_ns,
            event: self.event.to_string(),
            fields: parse_payload(self.event, self.payload),
        }
    }

    /// A `k=v` field of the payload, or the writeback events' leading `bdi NAME:`, with the
    /// same aliases as [`ParsedEvent::get`]. Positional fields (block events) need
    /// [`LineRef::into_owned`].
    pub fn kv(&self, name: &str) -> Option<&'a str> {
        if let Some(v) = self.kv_exact(name) {
            return Some(v);
        }
        let group = ALIASES.iter().find(|g| g.contains(&name))?;
        group.iter().filter(|&&n| n != name).find_map(|n| self.kv_exact(n))
    }

    fn kv_exact(&self, name: &str) -> Option<&'a str> {
        let mut rest = self.payload;
        if let Some(r) = rest.strip_prefix("bdi ") {
            let (bdi, after) = match r.find(": ") {
                Some(i) => (&r[..i], &r[i + 2..]),
                None => (r.strip_suffix(':').unwrap_or(r), ""),
            };
            if name == "bdi" {
                return Some(bdi);
            }
            rest = after;
        }
        rest.split_ascii_whitespace().find_map(|tok| {
            let tok = tok.strip_suffix(',').unwrap_or(tok);
            tok.strip_prefix(name)?.strip_prefix('=')
        })
    }

    /// Several `k=v` fields in one pass over the payload (as [`LineRef::kv`], aliases
    /// included): what a reader of a 600k-line trace asks of each line.
    pub fn kvs<const N: usize>(&self, names: [&str; N]) -> [Option<&'a str>; N] {
        let mut out = [None; N];
        let mut rest = self.payload;
        if let Some(r) = rest.strip_prefix("bdi ") {
            let (bdi, after) = match r.find(": ") {
                Some(i) => (&r[..i], &r[i + 2..]),
                None => (r.strip_suffix(':').unwrap_or(r), ""),
            };
            if let Some(i) = names.iter().position(|&n| n == "bdi") {
                out[i] = Some(bdi);
            }
            rest = after;
        }
        for tok in rest.split_ascii_whitespace() {
            let tok = tok.strip_suffix(',').unwrap_or(tok);
            let Some((k, v)) = tok.split_once('=') else { continue };
            for (i, &n) in names.iter().enumerate() {
                if out[i].is_none() && (k == n || ALIASES.iter().any(|g| g.contains(&n) && g.contains(&k))) {
                    out[i] = Some(v);
                }
            }
        }
        out
    }

    /// A `k=v` field as an unsigned integer (a unit suffix is ignored).
    pub fn kv_u64(&self, name: &str) -> Option<u64> {
        let v = self.kv(name)?;
        let end = v.bytes().position(|c| !c.is_ascii_digit()).unwrap_or(v.len());
        v[..end].parse().ok()
    }

    /// A `k=v` field as a signed integer (a unit suffix is ignored).
    pub fn kv_i64(&self, name: &str) -> Option<i64> {
        leading_int(self.kv(name)?)
    }
}

/// Parse one line of an ftrace text trace. Header/comment lines and anything that does not
/// have the `comm-pid [cpu] [flags] secs.frac: event: payload` shape give `None`.
pub fn parse_line(line: &str) -> Option<ParsedEvent> {
    parse_line_ref(line).map(LineRef::into_owned)
}

/// The columns of one line, borrowed; `None` as for [`parse_line`].
pub fn parse_line_ref(line: &str) -> Option<LineRef<'_>> {
    let line = line.trim_end_matches(['\n', '\r']);
    let trimmed = line.trim_start();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    let (comm, pid, rest) = split_task(trimmed)?;
    // "[001] "
    let rest = rest.strip_prefix('[')?;
    let close = rest.find(']')?;
    let cpu: u32 = rest[..close].trim().parse().ok()?;
    let mut rest = rest[close + 1..].trim_start();
    // Optional flags column: a token that is not the timestamp.
    let mut flags = "";
    let first_end = rest.find(' ')?;
    if !rest[..first_end].ends_with(':') {
        flags = &rest[..first_end];
        rest = rest[first_end..].trim_start();
    }
    let ts_end = rest.find(": ")?;
    let ts_ns = parse_ts(&rest[..ts_end])?;
    let rest = &rest[ts_end + 2..];
    let (event, payload) = match rest.find(':') {
        Some(i) => (&rest[..i], rest[i + 1..].strip_prefix(' ').unwrap_or(&rest[i + 1..])),
        None => (rest, ""),
    };
    if event.is_empty() || event.contains(' ') {
        return None;
    }
    Some(LineRef {
        comm,
        pid,
        cpu,
        flags,
        ts_ns,
        event,
        payload,
    })
}

/// Every event line of a whole trace text (header and unparsable lines are skipped).
pub fn parse_lines(text: &str) -> impl Iterator<Item = ParsedEvent> + '_ {
    text.lines().filter_map(parse_line)
}

/// Split `comm-pid   [cpu]...` (or `comm-pid (tgid) [cpu]`) into comm, pid and the text from `[`.
/// A comm may itself contain '-' and spaces: the pid is the digits after the '-' that are
/// followed by blanks and the CPU bracket.
fn split_task(s: &str) -> Option<(&str, u32, &str)> {
    let bytes = s.as_bytes();
    for (i, _) in s.match_indices('-') {
        let digits = bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            continue;
        }
        let after = &s[i + 1 + digits..];
        let mut tail = after.trim_start();
        if tail.len() == after.len() {
            continue; // no blank after the pid
        }
        // Optional "(  tgid) " column of the record-tgid option.
        if let Some(t) = tail.strip_prefix('(') {
            match t.find(')') {
                Some(c) => tail = t[c + 1..].trim_start(),
                None => continue,
            }
        }
        if !tail.starts_with('[') {
            continue;
        }
        let pid = s[i + 1..i + 1 + digits].parse().ok()?;
        return Some((&s[..i], pid, tail));
    }
    None
}

/// `3387.776667` → ns. Six fractional digits are µs; nine are ns.
fn parse_ts(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    let secs: u64 = secs.trim().parse().ok()?;
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32)
    };
    Some(secs * 1_000_000_000 + frac_ns)
}

fn is_dev_colon(s: &str) -> bool {
    match s.split_once(':') {
        Some((a, b)) => !a.is_empty() && !b.is_empty() && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit()),
        None => false,
    }
}

fn is_dev_comma(s: &str) -> bool {
    match s.split_once(',') {
        Some((a, b)) => !a.is_empty() && !b.is_empty() && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit()),
        None => false,
    }
}

fn push(fields: &mut Vec<(String, String)>, k: &str, v: &str) {
    fields.push((k.to_string(), v.to_string()));
}

fn parse_payload(event: &str, payload: &str) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let mut rest = payload;
    if let Some(r) = rest.strip_prefix("bdi ") {
        // "bdi 8:0: ..." — the name may be "MAJ:MIN-fuseblk" or a word; it ends at ": " or at
        // a final ':'.
        let (name, after) = match r.find(": ") {
            Some(i) => (&r[..i], &r[i + 2..]),
            None => (r.strip_suffix(':').unwrap_or(r), ""),
        };
        push(&mut fields, "bdi", name);
        rest = after;
    } else if let Some(first) = rest.split(' ').next() {
        if let Some(dev) = first.strip_suffix(':').filter(|d| is_dev_colon(d)) {
            // wbt events: "8:0: [msg: ]k=v, ..."
            push(&mut fields, "dev", dev);
            rest = rest[first.len()..].trim_start();
            if let Some(i) = rest.find(": ") {
                if !rest[..i].contains('=') {
                    push(&mut fields, "msg", &rest[..i]);
                    rest = &rest[i + 2..];
                }
            }
        } else if is_dev_comma(first) {
            if let Some(f) = parse_block(event, rest) {
                return f;
            }
        }
    }
    parse_pairs(rest, &mut fields);
    fields
}

/// `8,0 W 61440 () 319307624 + 120 be,0,4 [dd]` and its older/other variants.
fn parse_block(event: &str, s: &str) -> Option<Vec<(String, String)>> {
    let mut f = Vec::new();
    let (dev, rest) = s.split_once(' ')?;
    push(&mut f, "dev", dev);
    let (rwbs, mut rest) = rest.split_once(' ').unwrap_or((rest, ""));
    push(&mut f, "rwbs", rwbs);
    // bytes, present in the block_rq class before "(cmd)".
    if let Some((tok, after)) = rest.split_once(' ') {
        if !tok.is_empty() && tok.bytes().all(|c| c.is_ascii_digit()) && after.starts_with('(') {
            push(&mut f, "bytes", tok);
            rest = after;
        }
    }
    if let Some(r) = rest.strip_prefix('(') {
        let close = r.find(')')?;
        push(&mut f, "cmd", &r[..close]);
        rest = r[close + 1..].trim_start();
    }
    // "sector / new_sector" (block_split)
    if let Some((sector, r)) = rest.split_once(" / ") {
        if !sector.is_empty() && sector.bytes().all(|c| c.is_ascii_digit()) {
            push(&mut f, "sector", sector);
            let (new, rest) = r.split_once(' ').unwrap_or((r, ""));
            push(&mut f, "new_sector", new);
            if let Some(c) = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                push(&mut f, "comm", c);
            }
            return Some(f);
        }
    }
    // "sector + nr_sector"
    let (sector, r) = rest.split_once(" + ")?;
    if sector.is_empty() || !sector.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    push(&mut f, "sector", sector);
    let (nr, mut rest) = r.split_once(' ').unwrap_or((r, ""));
    push(&mut f, "nr_sector", nr);
    if !rest.is_empty() && !rest.starts_with('[') {
        let (prio, r) = rest.split_once(' ').unwrap_or((rest, ""));
        push(&mut f, "ioprio", prio);
        rest = r;
    }
    if let Some(r) = rest.strip_prefix('[') {
        let close = r.rfind(']')?;
        let key = match event {
            "block_rq_complete" | "block_rq_error" | "block_rq_requeue" => "error",
            _ => "comm",
        };
        push(&mut f, key, &r[..close]);
    }
    Some(f)
}

/// `k=v` tokens, `key value` pairs and bare tokens.
fn parse_pairs(s: &str, fields: &mut Vec<(String, String)>) {
    let toks: Vec<&str> = s.split_whitespace().collect();
    let mut bare = 0;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].strip_suffix(',').unwrap_or(toks[i]);
        if let Some((k, v)) = t.split_once('=') {
            push(fields, k, v);
            i += 1;
            continue;
        }
        let is_word =
            t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && t.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
        if is_word && i + 1 < toks.len() && !toks[i + 1].contains('=') {
            let v = toks[i + 1].strip_suffix(',').unwrap_or(toks[i + 1]);
            push(fields, t, v);
            i += 2;
            continue;
        }
        fields.push((format!("_{bare}"), t.to_string()));
        bare += 1;
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_with_dash_and_spaces() {
        let e = parse_line("   kworker/u8:0-12 [001] ...1.  3226.025474: writeback_pages_written: 1024").unwrap();
        assert_eq!((e.comm.as_str(), e.pid, e.cpu), ("kworker/u8:0", 12, 1));
        assert_eq!(e.get("_0"), Some("1024"));
        let e = parse_line("  my-job 2-77      [000] .....     1.000000: global_dirty_state: dirty=1").unwrap();
        assert_eq!((e.comm.as_str(), e.pid), ("my-job 2", 77));
        assert_eq!(e.ts_ns, 1_000_000_000);
    }

    #[test]
    fn no_flags_column_and_tgid() {
        let e = parse_line("dd-5 [002] 12.5: global_dirty_state: dirty=3 writeback=4").unwrap();
        assert_eq!(e.flags, "");
        assert_eq!(e.ts_ns, 12_500_000_000);
        assert_eq!(e.get_u64("writeback"), Some(4));
        let e = parse_line("dd-5    (    5) [002] d..1. 12.000001: global_dirty_state: dirty=3").unwrap();
        assert_eq!((e.pid, e.cpu, e.flags.as_str()), (5, 2, "d..1."));
    }

    #[test]
    fn header_lines_are_skipped() {
        assert!(parse_line("# tracer: nop").is_none());
        assert!(parse_line("#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION").is_none());
        assert!(parse_line("").is_none());
        assert!(parse_line("garbage").is_none());
    }

    #[test]
    fn old_field_names_through_aliases() {
        let e = parse_line(
            "dd-1 [000] .... 10.000000: balance_dirty_pages: bdi 8:16: limit=10 setpoint=8 dirty=9 bdi_setpoint=4 bdi_dirty=5 \
             dirty_ratelimit=100 task_ratelimit=90 dirtied=32 dirtied_pause=32 paused=0 pause=4 period=4 think=0",
        )
        .unwrap();
        assert_eq!(e.get("bdi"), Some("8:16"));
        assert_eq!(e.get_u64("wb_setpoint"), Some(4));
        assert_eq!(e.get_u64("wb_dirty"), Some(5));
        assert_eq!(e.get_u64("bdi_dirty"), Some(5));
        assert_eq!(e.get("cgroup_ino"), None);
        let e = parse_line("dd-1 [000] .... 10.000000: bdi_dirty_ratelimit: bdi 8:16: write_bw=1 awrite_bw=2").unwrap();
        assert_eq!(e.get_u64("avg_write_bw"), Some(2));
    }

    #[test]
    fn block_variants() {
        // Pre-ioprio layout, and a bio event without bytes and cmd.
        let e = parse_line("dd-9 [002] ....  1234.567890: block_rq_issue: 8,0 W 4096 () 0 + 8 [dd]").unwrap();
        assert_eq!(e.get("bytes"), Some("4096"));
        assert_eq!(e.get("ioprio"), None);
        assert_eq!(e.get("comm"), Some("dd"));
        let e = parse_line("dd-9 [002] .....  1.000000: block_bio_queue: 8,0 W 2048 + 8 [dd]").unwrap();
        assert_eq!(e.get_u64("sector"), Some(2048));
        assert_eq!(e.get("comm"), Some("dd"));
        let e = parse_line("<idle>-0 [001] ..s1. 1.000000: block_rq_complete: 8,0 FWS () 18446744073709551615 + 0 none,0,0 [-5]").unwrap();
        assert_eq!(e.get_u64("sector"), Some(u64::MAX));
        assert_eq!(e.get_i64("error"), Some(-5));
        // block_split, as 6.18 prints it.
        let e = parse_line("dd-835 [001] ..... 81918.174912: block_split: 7,0 WS 0 / 1024 [dd]").unwrap();
        assert_eq!((e.get_u64("sector"), e.get_u64("new_sector")), (Some(0), Some(1024)));
        assert_eq!((e.get("rwbs"), e.get("comm")), (Some("WS"), Some("dd")));
    }

    #[test]
    fn wbt_without_msg() {
        let e = parse_line("<idle>-0 [001] ..s1. 1.000000: wbt_lat: 259:0: latency 2446318us").unwrap();
        assert_eq!(e.get("dev"), Some("259:0"));
        assert_eq!(e.get_u64("latency"), Some(2446318));
        assert_eq!(e.get("msg"), None);
    }
}
