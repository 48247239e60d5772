//! `histograms.json`: the latency distributions behind summary.json's percentiles, so that
//! reports can draw CDFs, stem plots and log2 histograms.
//!
//! Per task: `pause` (balance_dirty_pages sleeps) and `op_latency` (write()/read()/fsync()...);
//! per device: `request_latency` (dispatch to completion). Each histogram is
//! `{"count", "sum", "max", "buckets": [[value, count], ...]}` with values in ns: a bucket's
//! value is the lower edge of a 3-significant-digit HdrHistogram bucket of 1 µs units (see
//! `wblab_sim::metrics::hist`), `count`/`sum`/`max` are exact.

use serde_json::Value;
use std::io::{self, Write};
use wblab_sim::metrics::{LatencyHist, RunResult};

/// One latency distribution, ns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hist {
    pub count: u64,
    pub sum: u64,
    pub max: u64,
    /// (value ns, count), ascending values.
    pub buckets: Vec<(u64, u64)>,
}

impl Hist {
    pub fn from_latency(h: &LatencyHist) -> Hist {
        let s = h.summary();
        Hist {
            count: s.count,
            sum: s.total.min(u64::MAX as u128) as u64,
            max: s.max,
            buckets: h.buckets(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Add another distribution's samples.
    pub fn merge(&mut self, o: &Hist) {
        *self = Hist::merged([&*self, o]);
    }

    /// The distribution of all of `parts`' samples (one sort, however many parts).
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a Hist>) -> Hist {
        let mut h = Hist::default();
        let mut all: Vec<(u64, u64)> = Vec::new();
        for p in parts {
            h.count += p.count;
            h.sum = h.sum.saturating_add(p.sum);
            h.max = h.max.max(p.max);
            all.extend_from_slice(&p.buckets);
        }
        all.sort_unstable_by_key(|b| b.0);
        for (v, c) in all {
            match h.buckets.last_mut() {
                Some(l) if l.0 == v => l.1 += c,
                _ => h.buckets.push((v, c)),
            }
        }
        h
    }

    /// Value at quantile `q` (0..=1), ns: the bucket where the cumulative count reaches q·count.
    pub fn quantile(&self, q: f64) -> u64 {
        let total: u64 = self.buckets.iter().map(|b| b.1).sum();
        if total == 0 {
            return 0;
        }
        let want = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut acc = 0;
        for &(v, c) in &self.buckets {
            acc += c;
            if acc >= want {
                return v;
            }
        }
        self.max
    }

    /// Cumulative fraction at every bucket value: (value ns, fraction ≤ value).
    pub fn cdf(&self) -> Vec<(u64, f64)> {
        let total: u64 = self.buckets.iter().map(|b| b.1).sum();
        let mut acc = 0;
        self.buckets
            .iter()
            .map(|&(v, c)| {
                acc += c;
                (v, acc as f64 / total.max(1) as f64)
            })
            .collect()
    }

    /// Every sample as its bucket value, ascending (for stem plots); at most `cap` values, taken
    /// evenly through the distribution when there are more.
    pub fn values(&self, cap: usize) -> Vec<u64> {
        let total: u64 = self.buckets.iter().map(|b| b.1).sum();
        if total as usize <= cap {
            let mut v = Vec::with_capacity(total as usize);
            for &(x, c) in &self.buckets {
                v.extend(std::iter::repeat_n(x, c as usize));
            }
            return v;
        }
        (0..cap).map(|i| self.quantile((i as f64 + 0.5) / cap as f64)).collect()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TaskHists {
    pub name: String,
    pub instance: u32,
    pub pid: u32,
    pub job: String,
    pub device: String,
    pub pause: Hist,
    pub op_latency: Hist,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DeviceHists {
    pub name: String,
    pub request_latency: Hist,
}

/// The content of histograms.json.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histograms {
    pub tasks: Vec<TaskHists>,
    pub devices: Vec<DeviceHists>,
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

fn push_hist(out: &mut String, h: &Hist) {
    use std::fmt::Write as _;
    write!(
        out,
        "{{\"count\": {}, \"sum\": {}, \"max\": {}, \"buckets\": [",
        h.count, h.sum, h.max
    )
    .expect("String");
    for (i, (v, c)) in h.buckets.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write!(out, "[{v},{c}]").expect("String");
    }
    out.push_str("]}");
}

/// Write histograms.json: one task or device per line group, buckets inline.
pub fn write_histograms<W: Write>(w: &mut W, r: &RunResult) -> io::Result<()> {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(64 * 1024);
    s.push_str("{\n  \"unit\": \"ns\",\n  \"tasks\": [");
    for (i, t) in r.tasks.iter().enumerate() {
        s.push_str(if i == 0 { "\n" } else { ",\n" });
        write!(
            s,
            "    {{\"name\": {}, \"instance\": {}, \"pid\": {}, \"job\": {}, \"device\": {},\n      \"pause\": ",
            json_str(&t.name),
            t.instance,
            t.pid,
            json_str(t.job),
            json_str(&t.device)
        )
        .expect("String");
        push_hist(&mut s, &Hist::from_latency(&t.pauses));
        s.push_str(",\n      \"op_latency\": ");
        push_hist(&mut s, &Hist::from_latency(&t.op_latency));
        s.push('}');
        if s.len() > 1 << 20 {
            w.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    s.push_str("\n  ],\n  \"devices\": [");
    for (i, d) in r.devices.iter().enumerate() {
        s.push_str(if i == 0 { "\n" } else { ",\n" });
        write!(s, "    {{\"name\": {},\n      \"request_latency\": ", json_str(&d.name)).expect("String");
        push_hist(&mut s, &Hist::from_latency(&d.request_latency));
        s.push('}');
    }
    s.push_str("\n  ]\n}\n");
    w.write_all(s.as_bytes())
}

fn parse_hist(v: &Value) -> Hist {
    let u = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    let buckets = v
        .get("buckets")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|p| Some((p.get(0)?.as_u64()?, p.get(1)?.as_u64()?))).collect())
        .unwrap_or_default();
    Hist {
        count: u("count"),
        sum: u("sum"),
        max: u("max"),
        buckets,
    }
}

/// Parse histograms.json text. Missing fields read as empty.
pub fn parse_histograms(text: &str) -> Result<Histograms, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("histograms.json: {e}"))?;
    let s = |o: &Value, k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let tasks = v
        .get("tasks")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|t| TaskHists {
                    name: s(t, "name"),
                    instance: t.get("instance").and_then(Value::as_u64).unwrap_or(0) as u32,
                    pid: t.get("pid").and_then(Value::as_u64).unwrap_or(0) as u32,
                    job: s(t, "job"),
                    device: s(t, "device"),
                    pause: t.get("pause").map(parse_hist).unwrap_or_default(),
                    op_latency: t.get("op_latency").map(parse_hist).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    let devices = v
        .get("devices")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|d| DeviceHists {
                    name: s(d, "name"),
                    request_latency: d.get("request_latency").map(parse_hist).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Histograms { tasks, devices })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(b: &[(u64, u64)]) -> Hist {
        Hist {
            count: b.iter().map(|x| x.1).sum(),
            sum: b.iter().map(|x| x.0 * x.1).sum(),
            max: b.last().map_or(0, |x| x.0),
            buckets: b.to_vec(),
        }
    }

    #[test]
    fn quantiles_merge_and_values() {
        let mut a = h(&[(1000, 2), (5000, 1), (9000, 1)]);
        assert_eq!(a.quantile(0.5), 1000);
        assert_eq!(a.quantile(0.75), 5000);
        assert_eq!(a.quantile(1.0), 9000);
        a.merge(&h(&[(5000, 2), (20000, 1)]));
        assert_eq!(a.buckets, vec![(1000, 2), (5000, 3), (9000, 1), (20000, 1)]);
        assert_eq!((a.count, a.max), (7, 20000));
        assert_eq!(a.values(100), vec![1000, 1000, 5000, 5000, 5000, 9000, 20000]);
        assert_eq!(a.values(2), vec![1000, 9000]);
        let cdf = a.cdf();
        assert_eq!(cdf.last().unwrap().1, 1.0);
        assert!((cdf[0].1 - 2.0 / 7.0).abs() < 1e-12);
    }

    #[test]
    fn roundtrip_through_text() {
        let mut r = LatencyHist::new();
        for v in [4_000_000, 4_000_000, 28_000_000, 200_000_000] {
            r.record(v);
        }
        let hh = Hist::from_latency(&r);
        let mut s = String::new();
        push_hist(&mut s, &hh);
        let v: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(parse_hist(&v), hh);
        assert_eq!(hh.count, 4);
        assert_eq!(hh.max, 200_000_000);
        assert_eq!(hh.buckets[0], (4_000_000, 2));
    }
}
