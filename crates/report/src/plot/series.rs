//! Drawing one series (lines, steps, point clouds) and its legend sample, decimated to what
//! the pixels can show.

use super::axis::Map;
use super::{esc, px, Kind, Marker, Series, Style, WIDTH};
use std::fmt::Write as _;

/// Keep first/min/max/last of every pixel column (lines), preserving x order.
pub(super) fn decimate_line(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if pts.len() < 2000 {
        return pts.to_vec();
    }
    let mut out = Vec::with_capacity(4 * WIDTH as usize);
    let mut i = 0;
    while i < pts.len() {
        let col = pts[i].0.floor();
        let mut j = i;
        let (mut imin, mut imax) = (i, i);
        while j < pts.len() && pts[j].0.floor() == col && !pts[j].1.is_nan() {
            if pts[j].1 < pts[imin].1 {
                imin = j;
            }
            if pts[j].1 > pts[imax].1 {
                imax = j;
            }
            j += 1;
        }
        if j == i {
            // A NaN (gap marker): keep it.
            out.push(pts[i]);
            i += 1;
            continue;
        }
        let mut keep = [i, imin, imax, j - 1];
        keep.sort_unstable();
        let mut last = usize::MAX;
        for k in keep {
            if k != last {
                out.push(pts[k]);
                last = k;
            }
        }
        i = j;
    }
    out
}

/// The distinct pixels (rounded) of `pix`, sorted by (x, y). A throttle scatter can hold
/// millions of points on a few hundred thousand pixels: they are marked in a bitmap of their
/// bounding box (read back in order), sorting only when the box is implausibly large.
fn occupied_cells(pix: &[(f64, f64)]) -> Vec<(i64, i64)> {
    let cells = pix
        .iter()
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .map(|p| (p.0.round() as i64, p.1.round() as i64));
    let (mut x0, mut x1, mut y0, mut y1) = (i64::MAX, i64::MIN, i64::MAX, i64::MIN);
    for (x, y) in cells.clone() {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if x0 > x1 {
        return Vec::new();
    }
    let (w, h) = ((x1 - x0) as u64 + 1, (y1 - y0) as u64 + 1);
    if w.saturating_mul(h) > 1 << 24 {
        let mut v: Vec<(i64, i64)> = cells.collect();
        v.sort_unstable();
        v.dedup();
        return v;
    }
    let (w, h) = (w as usize, h as usize);
    let mut bits = vec![0u64; (w * h).div_ceil(64)];
    let mut n = 0;
    for (x, y) in cells {
        let i = (x - x0) as usize * h + (y - y0) as usize;
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        if bits[word] & bit == 0 {
            bits[word] |= bit;
            n += 1;
        }
    }
    let mut out = Vec::with_capacity(n);
    for (word, &b) in bits.iter().enumerate() {
        let mut b = b;
        while b != 0 {
            let i = word * 64 + b.trailing_zeros() as usize;
            out.push((x0 + (i / h) as i64, y0 + (i % h) as i64));
            b &= b - 1;
        }
    }
    out
}

fn path_data(pts: &[(f64, f64)], step: bool) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    let mut prev_y = 0.0;
    for &(x, y) in pts {
        if !(x.is_finite() && y.is_finite()) {
            pen_down = false;
            continue;
        }
        if !pen_down {
            write!(d, "M{} {}", px(x), px(y)).expect("String");
            pen_down = true;
        } else {
            if step {
                write!(d, "H{}", px(x)).expect("String");
                if y != prev_y {
                    write!(d, "V{}", px(y)).expect("String");
                }
            } else {
                write!(d, "L{} {}", px(x), px(y)).expect("String");
            }
        }
        prev_y = y;
    }
    d
}

fn marker_path(d: &mut String, m: Marker, x: f64, y: f64, r: f64) {
    let (x, y) = (px(x), px(y));
    let r2 = px(2.0 * r);
    let r1 = px(r);
    match m {
        Marker::Circle => write!(d, "M{x} {y}m-{r1} 0a{r1} {r1} 0 1 0 {r2} 0a{r1} {r1} 0 1 0 -{r2} 0"),
        Marker::Cross => write!(d, "M{x} {y}m-{r1} -{r1}l{r2} {r2}m0 -{r2}l-{r2} {r2}"),
        Marker::Square => write!(d, "M{x} {y}m-{r1} -{r1}h{r2}v{r2}h-{r2}z"),
        Marker::Triangle => write!(d, "M{x} {y}m0 -{r1}l{r1} {r2}h-{r2}z"),
    }
    .expect("String");
}

fn dash_attr(dash: Option<&str>) -> String {
    match dash {
        Some(d) => format!(" stroke-dasharray=\"{d}\""),
        None => String::new(),
    }
}

pub(super) fn draw_series(o: &mut String, s: &Series, xm: Map, ym: Map, logx: bool, logy: bool) {
    let mut pix: Vec<(f64, f64)> = Vec::with_capacity(s.pts.len());
    let (fx, fy) = (xm.prepared(), ym.prepared());
    for &(x, y) in &s.pts {
        let ok = x.is_finite() && y.is_finite() && (!logx || x > 0.0) && (!logy || y > 0.0);
        if ok {
            pix.push((fx(x), fy(y)));
        } else {
            pix.push((f64::NAN, f64::NAN));
        }
    }
    let st = &s.style;
    write!(
        o,
        "<g class=\"series\" data-name=\"{}\" data-n=\"{}\">",
        esc(&s.name),
        s.pts.iter().filter(|&&(x, y)| x.is_finite() && y.is_finite()).count()
    )
    .expect("String");
    match st.kind {
        Kind::Line | Kind::Step => {
            let pts = decimate_line(&pix);
            let step = st.kind == Kind::Step;
            if st.fill {
                // Close the area down to the axis base, one polygon per unbroken run.
                let base = ym.p0;
                let mut run: Vec<(f64, f64)> = Vec::new();
                let flush = |run: &mut Vec<(f64, f64)>, o: &mut String| {
                    if run.len() >= 2 {
                        let mut d = path_data(run, step);
                        write!(d, "V{}H{}Z", px(base), px(run[0].0)).expect("String");
                        write!(o, "<path d=\"{d}\" fill=\"{}\" fill-opacity=\"0.18\" stroke=\"none\"/>", st.color).expect("String");
                    }
                    run.clear();
                };
                for &p in &pts {
                    if p.0.is_finite() && p.1.is_finite() {
                        run.push(p);
                    } else {
                        flush(&mut run, o);
                    }
                }
                flush(&mut run, o);
            }
            let d = path_data(&pts, step);
            if !d.is_empty() {
                write!(
                    o,
                    "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\"{}{}/>",
                    st.color,
                    px(st.width),
                    dash_attr(st.dash),
                    if st.opacity < 1.0 {
                        format!(" stroke-opacity=\"{}\"", st.opacity)
                    } else {
                        String::new()
                    }
                )
                .expect("String");
            }
        }
        Kind::Points(m) => {
            // One marker per occupied pixel.
            let cells = occupied_cells(&pix);
            let mut d = String::new();
            match m {
                // Dots and squares: zero-length segments with round/square caps, a dozen bytes
                // each, so tens of thousands of throttle events stay a small file.
                Marker::Circle | Marker::Square => {
                    for (cx, cy) in &cells {
                        write!(d, "M{cx} {cy}h0").expect("String");
                    }
                    if !d.is_empty() {
                        let cap = if m == Marker::Circle { "round" } else { "square" };
                        write!(
                            o,
                            "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linecap=\"{cap}\" opacity=\"{}\"/>",
                            st.color,
                            px(2.0 * st.width),
                            st.opacity
                        )
                        .expect("String");
                    }
                }
                Marker::Cross | Marker::Triangle => {
                    for (cx, cy) in &cells {
                        marker_path(&mut d, m, *cx as f64, *cy as f64, st.width);
                    }
                    if !d.is_empty() {
                        let paint = match m {
                            Marker::Cross => format!("fill=\"none\" stroke=\"{}\" stroke-width=\"1.2\"", st.color),
                            _ => format!("fill=\"{}\" stroke=\"none\"", st.color),
                        };
                        write!(o, "<path d=\"{d}\" {paint} opacity=\"{}\"/>", st.opacity).expect("String");
                    }
                }
            }
        }
    }
    o.push_str("</g>");
}

/// A legend sample (24 × 12 px) at (x, y = text baseline).
pub(super) fn legend_sample(o: &mut String, st: &Style, x: f64, y: f64) {
    let cy = y - 4.0;
    match st.kind {
        Kind::Line | Kind::Step => {
            if st.fill {
                write!(
                    o,
                    "<rect x=\"{}\" y=\"{}\" width=\"24\" height=\"8\" fill=\"{}\" fill-opacity=\"0.18\"/>",
                    px(x),
                    px(cy - 4.0),
                    st.color
                )
                .expect("String");
            }
            write!(
                o,
                "<path d=\"M{} {}h24\" stroke=\"{}\" stroke-width=\"{}\"{}/>",
                px(x),
                px(cy),
                st.color,
                px(st.width.max(1.5)),
                dash_attr(st.dash)
            )
            .expect("String");
        }
        Kind::Points(m) => {
            let mut d = String::new();
            marker_path(&mut d, m, x + 12.0, cy, st.width.max(3.0));
            let paint = match m {
                Marker::Cross => format!("fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"", st.color),
                _ => format!("fill=\"{}\"", st.color),
            };
            write!(o, "<path d=\"{d}\" {paint}/>").expect("String");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::occupied_cells;

    #[test]
    fn cells_are_the_sorted_distinct_pixels() {
        let mut pix: Vec<(f64, f64)> = (0..5000)
            .map(|i| (((i * 37) % 101) as f64 - 3.4, ((i * 13) % 57) as f64 + 0.6))
            .collect();
        pix.push((f64::NAN, 1.0));
        let mut want: Vec<(i64, i64)> = pix
            .iter()
            .filter(|p| p.0.is_finite())
            .map(|p| (p.0.round() as i64, p.1.round() as i64))
            .collect();
        want.sort_unstable();
        want.dedup();
        assert_eq!(occupied_cells(&pix), want);
        // Far-apart points take the sorting path and give the same answer.
        let far = [(1e9, 2.0), (-1e9, 3.0), (1e9, 2.2)];
        assert_eq!(occupied_cells(&far), vec![(-1_000_000_000, 3), (1_000_000_000, 2)]);
        assert!(occupied_cells(&[]).is_empty());
    }
}
