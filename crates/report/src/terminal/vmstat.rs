//! `wblab vmstat DIR`: the run's per-second samples (timeseries.csv) as vmstat prints them —
//! procs r b, memory free buff cache, io bi bo — plus the dirty and writeback pages that
//! `grep -E 'Dirty|Writeback' /proc/meminfo` would show, and the sample time.

use crate::load::rundir::Csv;

/// Memory unit, as vmstat's `-S`: k = 1000, K = 1024, m = 10^6, M = 2^20 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    K1000,
    K1024,
    M1000,
    M1024,
}

impl Unit {
    pub fn parse(s: &str) -> Option<Unit> {
        match s {
            "k" => Some(Unit::K1000),
            "K" => Some(Unit::K1024),
            "m" => Some(Unit::M1000),
            "M" => Some(Unit::M1024),
            _ => None,
        }
    }

    fn bytes(self) -> f64 {
        match self {
            Unit::K1000 => 1e3,
            Unit::K1024 => 1024.0,
            Unit::M1000 => 1e6,
            Unit::M1024 => 1048576.0,
        }
    }
}

struct Col {
    head: &'static str,
    /// timeseries.csv column and the factor to bytes (0 = not a memory column).
    src: &'static str,
    pages: bool,
}

const GROUPS: &[(&str, &[Col])] = &[
    (
        "procs",
        &[
            Col {
                head: "r",
                src: "r_tasks",
                pages: false,
            },
            Col {
                head: "b",
                src: "b_tasks",
                pages: false,
            },
        ],
    ),
    (
        "memory",
        &[
            Col {
                head: "free",
                src: "nr_free_pages",
                pages: true,
            },
            Col {
                head: "buff",
                src: "",
                pages: true,
            },
            Col {
                head: "cache",
                src: "nr_file_pages",
                pages: true,
            },
        ],
    ),
    (
        "io",
        &[
            Col {
                head: "bi",
                src: "bi_kib",
                pages: false,
            },
            Col {
                head: "bo",
                src: "bo_kib",
                pages: false,
            },
        ],
    ),
    (
        "dirty",
        &[
            Col {
                head: "dirty",
                src: "nr_dirty_pages",
                pages: true,
            },
            Col {
                head: "wback",
                src: "nr_writeback_pages",
                pages: true,
            },
        ],
    ),
    (
        "time",
        &[Col {
            head: "t_s",
            src: "t_s",
            pages: false,
        }],
    ),
];

/// A group header centred in dashes over `w` columns: `-----memory-----`.
fn group_head(name: &str, w: usize) -> String {
    if name.len() + 2 > w {
        return format!("{name:<w$}");
    }
    let left = (w - name.len()) / 2;
    format!("{}{}{}", "-".repeat(left), name, "-".repeat(w - name.len() - left))
}

/// The vmstat text of a timeseries.csv.
pub fn vmstat(ts: &Csv, unit: Unit) -> String {
    let cols: Vec<(&str, &Col)> = GROUPS.iter().flat_map(|(g, cs)| cs.iter().map(move |c| (*g, c))).collect();
    let data: Vec<Vec<String>> = cols
        .iter()
        .map(|(_, c)| {
            let v = if c.src.is_empty() { None } else { ts.f64s(c.src) };
            (0..ts.rows.len())
                .map(|i| {
                    let x = v.as_ref().map_or(0.0, |v| v[i]);
                    if !x.is_finite() {
                        "-".to_string()
                    } else if c.head == "t_s" {
                        format!("{x}")
                    } else if c.pages {
                        format!("{:.0}", (x * 4096.0 / unit.bytes()).floor())
                    } else {
                        format!("{x:.0}")
                    }
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(i, (_, c))| data[i].iter().map(String::len).max().unwrap_or(0).max(c.head.len()).max(2))
        .collect();
    let mut out = String::new();
    // Group line.
    let mut line = String::new();
    let mut i = 0;
    for (g, cs) in GROUPS {
        let w: usize = widths[i..i + cs.len()].iter().sum::<usize>() + cs.len() - 1;
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&group_head(g, w));
        i += cs.len();
    }
    out.push_str(line.trim_end());
    out.push('\n');
    let row = |cells: &mut dyn Iterator<Item = String>| -> String {
        let v: Vec<String> = cells.collect();
        v.iter()
            .enumerate()
            .map(|(i, s)| format!("{s:>w$}", w = widths[i]))
            .collect::<Vec<_>>()
            .join(" ")
    };
    out.push_str(&row(&mut cols.iter().map(|(_, c)| c.head.to_string())));
    out.push('\n');
    for r in 0..ts.rows.len() {
        out.push_str(&row(&mut data.iter().map(|col| col[r].clone())));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_units_and_alignment() {
        // A file of an older build (no units in its header) reads as today's.
        let ts = Csv::parse(
            "t_s,nr_dirty,nr_writeback,nr_free,nr_file,nr_dirtied,nr_written,dirty_thresh,dirty_background_thresh,bi_kb,bo_kb,r,b\n\
             1,154624,21504,706560,290816,0,0,0,0,0,458752,0,4\n2,150528,41984,635904,361472,0,0,0,0,12,217088,1,4\n",
        )
        .unwrap();
        let t = vmstat(&ts, Unit::K1024);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(
            lines[0].starts_with("procs ") && lines[0].contains("memory") && lines[0].contains("-io-"),
            "{t}"
        );
        let head: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(head, ["r", "b", "free", "buff", "cache", "bi", "bo", "dirty", "wback", "t_s"]);
        let first: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(first, ["0", "4", "2826240", "0", "1163264", "0", "458752", "618496", "86016", "1"]);
        // Right-aligned: every line has the same length.
        assert_eq!(lines[1].len(), lines[2].len());
        assert_eq!(lines[2].len(), lines[3].len());
        let m = vmstat(&ts, Unit::M1024);
        assert!(m.lines().nth(2).unwrap().split_whitespace().nth(2) == Some("2760"), "{m}");
    }
}
