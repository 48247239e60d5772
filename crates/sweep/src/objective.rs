//! `--minimize`, `--maximize` and `--where` on a sweep: the points that meet every constraint,
//! ranked by one figure, or the Pareto front of two. Figures are named `<group>.<figure>` or
//! `<device>.<figure>` as in `sweep.csv` (`reader.op_p99_ms`, `copy.throughput_mb_s`,
//! `sda.util_pct`; `<group>.throughput` for short). A constraint compares a figure with a
//! number or with a multiple of the best value any point reached (`copy.throughput >= 0.95*best`:
//! best is the largest value for `>`/`>=`, the smallest for `<`/`<=`).

use crate::figures::{DEVICE_FIGURES, GROUP_FIGURES};
use wblab_sim::config::Scenario;

/// What the command line asked for.
#[derive(Default)]
pub struct Objectives {
    pub minimize: Vec<String>,
    pub maximize: Vec<String>,
    pub wheres: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
}

struct Constraint {
    text: String,
    figure: String,
    cmp: Cmp,
    /// The right side: a number, or a factor of the best value.
    value: f64,
    of_best: bool,
}

/// The checked request: figure names resolved against the scenario.
pub struct Plan {
    goals: Vec<(String, bool)>,
    constraints: Vec<Constraint>,
}

impl Objectives {
    pub fn is_empty(&self) -> bool {
        self.minimize.is_empty() && self.maximize.is_empty() && self.wheres.is_empty()
    }

    /// Resolve every figure name against the scenario's task groups and devices.
    pub fn plan(&self, sc: &Scenario) -> Result<Plan, String> {
        let names = figure_names(sc);
        let mut goals = Vec::new();
        for (list, max) in [(&self.minimize, false), (&self.maximize, true)] {
            for f in list {
                goals.push((resolve(f, &names)?, max));
            }
        }
        if goals.len() > 2 {
            return Err("at most two objectives (one --minimize/--maximize, or two for a Pareto front)".into());
        }
        let constraints = self.wheres.iter().map(|w| constraint(w, &names)).collect::<Result<_, _>>()?;
        Ok(Plan { goals, constraints })
    }
}

fn figure_names(sc: &Scenario) -> Vec<String> {
    let mut names = Vec::new();
    for t in &sc.tasks {
        for f in GROUP_FIGURES {
            let n = format!("{}.{f}", t.name);
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    for d in &sc.devices {
        names.extend(DEVICE_FIGURES.iter().map(|f| format!("{}.{f}", d.name)));
    }
    names
}

fn resolve(name: &str, names: &[String]) -> Result<String, String> {
    let name = name.trim();
    let full = crate::figures::figure_name(name);
    if names.contains(&full) {
        return Ok(full);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let hint = closest(&full, &refs);
    Err(format!(
        "unknown figure `{name}`{hint}; figures are <group>.<figure> or <device>.<figure>, e.g. {}",
        refs[..refs.len().min(4)].join(", ")
    ))
}

/// ` (did you mean `x`?)` for the nearest name by shared prefix, or nothing.
fn closest(name: &str, names: &[&str]) -> String {
    let score = |n: &str| n.chars().zip(name.chars()).take_while(|(a, b)| a == b).count();
    match names.iter().max_by_key(|n| score(n)) {
        Some(n) if score(n) >= 3 => format!(" (did you mean `{n}`?)"),
        _ => String::new(),
    }
}

fn constraint(text: &str, names: &[String]) -> Result<Constraint, String> {
    let ops = [("<=", Cmp::Le), (">=", Cmp::Ge), ("<", Cmp::Lt), (">", Cmp::Gt)];
    let (at, op, cmp) = ops
        .iter()
        .filter_map(|&(op, c)| text.find(op).map(|i| (i, op, c)))
        .min_by_key(|&(i, op, _)| (i, std::cmp::Reverse(op.len())))
        .ok_or_else(|| format!("--where \"{text}\": expected <figure> <, <=, > or >= <number or factor*best>"))?;
    let figure = resolve(&text[..at], names)?;
    let rhs = text[at + op.len()..].trim();
    let bad = || format!("--where \"{text}\": `{rhs}` is not a number, `best` or `<number>*best`");
    let (value, of_best) = match rhs.strip_suffix("best") {
        Some(f) => {
            let f = f.trim().trim_end_matches('*').trim();
            (if f.is_empty() { 1.0 } else { f.parse().map_err(|_| bad())? }, true)
        }
        None => (rhs.parse().map_err(|_| bad())?, false),
    };
    Ok(Constraint {
        text: text.trim().to_string(),
        figure,
        cmp,
        value,
        of_best,
    })
}

impl Plan {
    /// The figures the report reads, each once: the goals', then the constraints'.
    pub fn figures(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        for f in self.goals.iter().map(|(f, _)| f).chain(self.constraints.iter().map(|c| &c.figure)) {
            if !v.contains(&f.as_str()) {
                v.push(f);
            }
        }
        v
    }

    /// The report on `n` points: the feasible ones, then the best (or the Pareto front).
    /// `value(i, k)` is point `i`'s figure `k` of [`Plan::figures`] (NaN when it has none);
    /// `label(i)` names point `i`, asked only of the points shown, so a caller of a sweep of
    /// millions keeps a few numbers per point and no text.
    pub fn report(&self, n: usize, value: &dyn Fn(usize, usize) -> f64, label: &dyn Fn(usize) -> String) -> String {
        let names = self.figures();
        let column = |name: &str| names.iter().position(|f| *f == name).expect("a figure of the plan");
        let get = |i: usize, name: &str| value(i, column(name));
        let mut feasible: Vec<usize> = (0..n).collect();
        for c in &self.constraints {
            let vals: Vec<f64> = (0..n).map(|i| get(i, &c.figure)).collect();
            let bound = if c.of_best {
                let best = match c.cmp {
                    Cmp::Gt | Cmp::Ge => vals.iter().copied().fold(f64::MIN, f64::max),
                    Cmp::Lt | Cmp::Le => vals.iter().copied().fold(f64::MAX, f64::min),
                };
                c.value * best
            } else {
                c.value
            };
            feasible.retain(|&i| {
                let v = vals[i];
                match c.cmp {
                    Cmp::Lt => v < bound,
                    Cmp::Le => v <= bound,
                    Cmp::Gt => v > bound,
                    Cmp::Ge => v >= bound,
                }
            });
        }
        let mut s = String::new();
        let wheres: Vec<&str> = self.constraints.iter().map(|c| c.text.as_str()).collect();
        if !wheres.is_empty() {
            s.push_str(&format!("where {}: {} of {} points\n", wheres.join(" and "), feasible.len(), n));
        }
        let chosen: Vec<usize> = match self.goals.as_slice() {
            [] => feasible.clone(),
            [(f, max)] => {
                let mut v = feasible.clone();
                v.sort_by(|&a, &b| {
                    let (x, y) = (get(a, f), get(b, f));
                    let o = x.total_cmp(&y);
                    if *max {
                        o.reverse()
                    } else {
                        o
                    }
                });
                v
            }
            [(f, fmax), (g, gmax)] => {
                // Best first by f (ties: best g first); a point is on the front when its g
                // beats every point before it. O(n log n), for sweeps of any size.
                let key = |i: usize, name: &str, max: bool| {
                    let v = get(i, name);
                    if max {
                        -v
                    } else {
                        v
                    }
                };
                let mut order = feasible.clone();
                order.sort_by(|&a, &b| {
                    key(a, f, *fmax)
                        .total_cmp(&key(b, f, *fmax))
                        .then(key(a, g, *gmax).total_cmp(&key(b, g, *gmax)))
                });
                let mut front = Vec::new();
                let mut best_g = f64::INFINITY;
                for i in order {
                    let gi = key(i, g, *gmax);
                    if gi < best_g {
                        best_g = gi;
                        front.push(i);
                    }
                }
                front.sort_by(|&a, &b| get(a, f).total_cmp(&get(b, f)));
                front
            }
            _ => unreachable!("at most two goals"),
        };
        let head = match self.goals.as_slice() {
            [] => "points meeting every constraint".to_string(),
            [(f, max)] => format!("{} {f}, best first", if *max { "maximize" } else { "minimize" }),
            [(f, _), (g, _)] => format!("Pareto front of {f} and {g}"),
            _ => unreachable!(),
        };
        s.push_str(&head);
        s.push('\n');
        if chosen.is_empty() {
            s.push_str("  no point meets every constraint\n");
            return s;
        }
        let mut cols: Vec<&str> = self.goals.iter().map(|(f, _)| f.as_str()).collect();
        for c in &self.constraints {
            if !cols.contains(&c.figure.as_str()) {
                cols.push(&c.figure);
            }
        }
        let shown = if self.goals.len() == 1 { 5 } else { usize::MAX };
        let labels: Vec<String> = chosen.iter().take(shown).map(|&i| label(i)).collect();
        let width = labels.iter().map(String::len).max().unwrap_or(5).max(5);
        s.push_str(&format!("  {:<width$}", "point"));
        for c in &cols {
            s.push_str(&format!("  {c:>w$}", w = c.len()));
        }
        s.push('\n');
        for (&i, l) in chosen.iter().zip(&labels) {
            s.push_str(&format!("  {l:<width$}"));
            for c in &cols {
                s.push_str(&format!("  {:>w$.2}", get(i, c), w = c.len()));
            }
            s.push('\n');
        }
        s
    }
}
