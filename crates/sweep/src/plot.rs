//! `--plot FIGURE --x KEY`: one figure of a sweep against one of its keys, a line per
//! combination of the other keys' values (for points drawn at random: one marker per point),
//! as an SVG chart in the style of the run reports.

use crate::table::PointRows;
use wblab_report::plot::{color, Axis, Chart, Marker, Style, DASHES};

/// Most lines one chart draws: beyond, the other keys have too many combinations to read.
const MAX_LINES: usize = 24;

pub use crate::figures::figure_name;

/// The swept key `x` names: in full, or by its last component (`fifo_batch`,
/// `dirty_bytes`) when only one key ends so.
pub fn key_index(keys: &[String], x: &str) -> Result<usize, String> {
    if let Some(k) = keys.iter().position(|k| k == x) {
        return Ok(k);
    }
    for seps in [&['/'][..], &['/', '.'][..]] {
        let hits: Vec<usize> = (0..keys.len()).filter(|&k| keys[k].rsplit(seps).next() == Some(x)).collect();
        if let [k] = hits[..] {
            return Ok(k);
        }
    }
    Err(format!("--x {x}: not a key of this sweep; its keys are {}", keys.join(", ")))
}

/// How a key's values sit on the x axis: numbers, sizes (in MiB) or categories in sweep order.
enum Scale {
    Number,
    Size,
    Category(Vec<String>),
}

fn scale_of(values: &[&str]) -> Scale {
    if values.iter().all(|v| v.parse::<f64>().is_ok()) {
        Scale::Number
    } else if values.iter().all(|v| wblab_scenario::units::parse_size(v).is_ok()) {
        Scale::Size
    } else {
        let mut cats: Vec<String> = Vec::new();
        for v in values {
            if !cats.iter().any(|c| c == v) {
                cats.push(v.to_string());
            }
        }
        Scale::Category(cats)
    }
}

fn x_of(scale: &Scale, v: &str) -> f64 {
    match scale {
        Scale::Number => v.parse().unwrap_or(f64::NAN),
        Scale::Size => wblab_scenario::units::parse_size(v).map_or(f64::NAN, |b| b as f64 / (1u64 << 20) as f64),
        Scale::Category(c) => c.iter().position(|x| x == v).map_or(f64::NAN, |i| i as f64),
    }
}

/// The chart of `figure` against key `x` (a name or index into `keys`), a line per
/// combination of the other keys but those of `fixed` (the same at every point given).
/// `heading` (the group, with `--per`) leads the title.
pub fn chart(
    keys: &[String],
    points: &[PointRows],
    figure: &str,
    x: &str,
    random: bool,
    fixed: &[usize],
    heading: &str,
) -> Result<String, String> {
    let figure = figure_name(figure);
    let kx = key_index(keys, x)?;
    if points.iter().all(|p| p.figure(&figure).is_none()) {
        let names: Vec<String> = points
            .first()
            .map(|p| p.named_figures().into_iter().map(|(n, _)| n).collect())
            .unwrap_or_default();
        return Err(format!(
            "--plot {figure}: no such figure; figures are <group>.<figure> or <device>.<figure>, e.g. {}",
            names.iter().take(4).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let values: Vec<&str> = points.iter().map(|p| p.values[kx].as_str()).collect();
    let scale = scale_of(&values);
    let x_label = match &scale {
        Scale::Size => format!("{} (MiB)", keys[kx]),
        Scale::Category(c) => format!("{} ({})", keys[kx], c.join(", ")),
        Scale::Number => keys[kx].clone(),
    };
    let title = if heading.is_empty() {
        format!("{figure} against {}", keys[kx])
    } else {
        format!("{heading}: {figure} against {}", keys[kx])
    };
    // Values spread over more than a decade (a log range) read best on a log axis.
    let xs: Vec<f64> = values.iter().map(|v| x_of(&scale, v)).filter(|x| x.is_finite()).collect();
    let (lo, hi) = xs.iter().fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let x_axis = if !matches!(scale, Scale::Category(_)) && lo > 0.0 && hi / lo >= 10.0 {
        Axis::log(&x_label).range(lo / 1.25, hi * 1.25)
    } else {
        Axis::linear(&x_label)
    };
    let mut c = Chart::new("sweep", &title, x_axis, Axis::linear(&figure));
    let others: Vec<usize> = (0..keys.len()).filter(|&k| k != kx && !fixed.contains(&k)).collect();
    if random {
        let pts = points
            .iter()
            .filter_map(|p| Some((x_of(&scale, &p.values[kx]), p.figure(&figure)?)))
            .collect();
        c.push("each point", Style::points(color(0), Marker::Circle, 3.0), pts);
        if !others.is_empty() {
            c.notes.push(format!(
                "{} points drawn at random; the other keys ({}) vary between them",
                points.len(),
                others.iter().map(|&k| keys[k].as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
    } else {
        // One line per combination of the other keys, in sweep order.
        let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for p in points {
            let name = others
                .iter()
                .map(|&k| format!("{}={}", keys[k].rsplit('/').next().unwrap_or(&keys[k]), p.values[k]))
                .collect::<Vec<_>>()
                .join(", ");
            let Some(y) = p.figure(&figure) else { continue };
            let pt = (x_of(&scale, &p.values[kx]), y);
            match lines.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => v.push(pt),
                None => lines.push((name, vec![pt])),
            }
        }
        if lines.len() > MAX_LINES {
            return Err(format!(
                "--plot: the other keys make {} lines, more than {MAX_LINES}; plot a sweep of fewer values, or choose --x among the keys with most values",
                lines.len()
            ));
        }
        for (i, (name, mut pts)) in lines.into_iter().enumerate() {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let style = Style::line(color(i), 2.0, DASHES[(i / 10) % DASHES.len()]);
            c.push(&name, style.clone(), pts.clone());
            c.push("", Style::points(color(i), Marker::Circle, 3.0), pts);
        }
    }
    if !c.has_data() {
        return Err(format!("--plot {figure}: no point has a value to draw"));
    }
    Ok(c.to_svg())
}
