//! A small SVG chart renderer: one plot area with linear or log10 axes, nice ticks, grid,
//! line/step/point series, a legend and notes. Output is a standalone SVG document (text is
//! drawn by the viewer, so there are no font files to find), deterministic for the same input.
//!
//! Why not `plotters`: see the comment in this crate's Cargo.toml.
//!
//! Big series stay small: lines keep the first/min/max/last point of each pixel column, point
//! clouds keep one marker per occupied pixel cell, and each series is one `<path>`.

pub mod ticks;

use std::fmt::Write as _;
use ticks::Ticks;

/// Width of every chart, px (the HTML report scales it down on narrow screens).
pub const WIDTH: f64 = 960.0;
/// Default height of the plot area, px.
pub const PLOT_HEIGHT: f64 = 300.0;
const MARGIN_LEFT: f64 = 76.0;
const MARGIN_RIGHT: f64 = 28.0;
const FONT: &str = "DejaVu Sans, Liberation Sans, Helvetica, Arial, sans-serif";
/// Estimated advance of one character at 12 px (DejaVu Sans averages about 0.6 em).
const CHAR_W: f64 = 7.0;

/// A colour-blind-friendly palette (Okabe–Ito order, then darker extras), one per series.
pub const PALETTE: [&str; 10] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#333333", "#8C564B", "#7F7F00", "#9467BD",
];

/// The `i`-th palette colour (cycles).
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Dash patterns used to tell series apart when colour means "run".
pub const DASHES: [Option<&str>; 6] = [None, Some("6 4"), Some("2 3"), Some("10 3 2 3"), Some("12 6"), Some("1 5")];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Cross,
    Square,
    Triangle,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// Points joined by straight segments; a NaN y breaks the line.
    Line,
    /// A value holds from its x to the next point's x.
    Step,
    /// Markers only.
    Points(Marker),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Style {
    pub color: String,
    pub kind: Kind,
    /// Stroke width, or marker radius for points.
    pub width: f64,
    pub dash: Option<&'static str>,
    /// Fill the area between the series and the axis base (histograms).
    pub fill: bool,
    pub opacity: f64,
}

impl Style {
    pub fn line(color: &str, width: f64, dash: Option<&'static str>) -> Style {
        Style {
            color: color.to_string(),
            kind: Kind::Line,
            width,
            dash,
            fill: false,
            opacity: 1.0,
        }
    }

    pub fn step(color: &str, width: f64, dash: Option<&'static str>) -> Style {
        Style {
            kind: Kind::Step,
            ..Style::line(color, width, dash)
        }
    }

    pub fn points(color: &str, marker: Marker, radius: f64) -> Style {
        Style {
            color: color.to_string(),
            kind: Kind::Points(marker),
            width: radius,
            dash: None,
            fill: false,
            opacity: 0.75,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub style: Style,
    pub pts: Vec<(f64, f64)>,
}

/// What a legend entry shows next to its label.
#[derive(Clone, Debug, PartialEq)]
pub struct LegendEntry {
    pub label: String,
    pub style: Style,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub label: String,
    pub log: bool,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Linear axes: stretch the range to include 0.
    pub zero: bool,
    /// A cumulative fraction drawn on a "nines" scale (−log10(1 − v)): 0, 90 %, 99 %, 99.9 %
    /// are equally spaced, so the tail of a latency CDF is as visible as its body.
    pub nines: bool,
}

impl Axis {
    pub fn linear(label: &str) -> Axis {
        Axis {
            label: label.to_string(),
            log: false,
            min: None,
            max: None,
            zero: true,
            nines: false,
        }
    }

    pub fn log(label: &str) -> Axis {
        Axis {
            log: true,
            zero: false,
            ..Axis::linear(label)
        }
    }

    /// A 0..1 fraction on a nines scale up to 1 − 10^−`nines` (e.g. 3 → 99.9 %).
    pub fn nines(label: &str, nines: u32) -> Axis {
        Axis {
            nines: true,
            zero: false,
            min: Some(0.0),
            max: Some(1.0 - 10f64.powi(-(nines.max(1) as i32))),
            ..Axis::linear(label)
        }
    }

    pub fn range(mut self, min: f64, max: f64) -> Axis {
        self.min = Some(min);
        self.max = Some(max);
        self
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Unique within a page: used for element ids.
    pub id: String,
    pub title: String,
    pub subtitle: Option<String>,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    /// Shown below the plot; empty = one entry per named series.
    pub legend: Vec<LegendEntry>,
    /// Small print under the legend (data caveats).
    pub notes: Vec<String>,
    pub plot_height: f64,
}

impl Chart {
    pub fn new(id: &str, title: &str, x: Axis, y: Axis) -> Chart {
        Chart {
            id: id.to_string(),
            title: title.to_string(),
            subtitle: None,
            x,
            y,
            series: Vec::new(),
            legend: Vec::new(),
            notes: Vec::new(),
            plot_height: PLOT_HEIGHT,
        }
    }

    pub fn push(&mut self, name: &str, style: Style, pts: Vec<(f64, f64)>) {
        self.series.push(Series {
            name: name.to_string(),
            style,
            pts,
        });
    }

    /// Whether any series has a point that can be drawn on these axes.
    pub fn has_data(&self) -> bool {
        self.series.iter().any(|s| s.pts.iter().any(|&(x, y)| self.drawable(x, y)))
    }

    fn drawable(&self, x: f64, y: f64) -> bool {
        x.is_finite() && y.is_finite() && (!self.x.log || x > 0.0) && (!self.y.log || y > 0.0)
    }

    /// The entries the legend will show.
    pub fn legend_entries(&self) -> Vec<LegendEntry> {
        if !self.legend.is_empty() {
            return self.legend.clone();
        }
        self.series
            .iter()
            .filter(|s| !s.name.is_empty())
            .map(|s| LegendEntry {
                label: s.name.clone(),
                style: s.style.clone(),
            })
            .collect()
    }

    /// Render as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        render(self, true)
    }

    /// Render without the title line, for a page that already heads the chart.
    pub fn to_svg_untitled(&self) -> String {
        render(self, false)
    }
}

/// Escape text for XML/HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// A pixel coordinate with one decimal ("12.3", "-0" avoided).
fn px(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == 0.0 {
        "0".to_string()
    } else if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// Data → pixel mapping of one axis.
#[derive(Clone, Copy)]
struct Map {
    lo: f64,
    hi: f64,
    log: bool,
    nines: bool,
    p0: f64,
    p1: f64,
}

/// The nines transform, with values at or past the top clamped to it.
fn nines_t(v: f64, hi: f64) -> f64 {
    -(1.0 - v.clamp(0.0, hi)).log10()
}

impl Map {
    fn px_of(self, v: f64) -> f64 {
        let (lo, hi, v) = if self.log {
            (self.lo.log10(), self.hi.log10(), v.log10())
        } else if self.nines {
            (nines_t(self.lo, self.hi), nines_t(self.hi, self.hi), nines_t(v, self.hi))
        } else {
            (self.lo, self.hi, v)
        };
        let f = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        self.p0 + f * (self.p1 - self.p0)
    }
}

fn axis_ticks(axis: &Axis, values: &mut dyn Iterator<Item = f64>, target: usize) -> Ticks {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in values {
        if v.is_finite() && (!axis.log || v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if let Some(m) = axis.min {
        lo = m;
    }
    if let Some(m) = axis.max {
        hi = m;
    }
    if axis.nines {
        let top = axis.max.unwrap_or(0.999);
        let mut major = vec![(0.0, "0%".to_string()), (0.5, "50%".to_string())];
        let mut k = 1;
        loop {
            let v = 1.0 - 10f64.powi(-k);
            if v > top + 1e-12 {
                break;
            }
            let pct = 100.0 * v;
            let decimals = (k - 2).max(0) as usize;
            major.push((v, format!("{pct:.decimals$}%")));
            k += 1;
        }
        return Ticks {
            lo: 0.0,
            hi: top,
            major,
            minor: Vec::new(),
        };
    }
    if axis.log {
        if !(lo.is_finite() && hi.is_finite()) {
            return ticks::log10(1.0, 10.0);
        }
        let mut t = ticks::log10(lo, hi);
        // Keep explicit limits exact.
        if let Some(m) = axis.min {
            t.lo = m;
        }
        if let Some(m) = axis.max {
            t.hi = m;
        }
        t
    } else {
        if !(lo.is_finite() && hi.is_finite()) {
            lo = 0.0;
            hi = 1.0;
        }
        if axis.zero {
            lo = lo.min(0.0);
            hi = hi.max(0.0);
        }
        let mut t = ticks::linear(lo, hi, target);
        if let (Some(a), Some(b)) = (axis.min, axis.max) {
            t.lo = a;
            t.hi = b;
            t.major
                .retain(|(v, _)| *v >= a - 1e-9 * (b - a).abs() && *v <= b + 1e-9 * (b - a).abs());
        }
        t
    }
}

/// Keep first/min/max/last of every pixel column (lines), preserving x order.
fn decimate_line(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
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

fn draw_series(o: &mut String, s: &Series, xm: Map, ym: Map, logx: bool, logy: bool) {
    let mut pix: Vec<(f64, f64)> = Vec::with_capacity(s.pts.len());
    for &(x, y) in &s.pts {
        let ok = x.is_finite() && y.is_finite() && (!logx || x > 0.0) && (!logy || y > 0.0);
        if ok {
            pix.push((xm.px_of(x), ym.px_of(y)));
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
            let mut cells: Vec<(i64, i64)> = pix
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|p| (p.0.round() as i64, p.1.round() as i64))
                .collect();
            cells.sort_unstable();
            cells.dedup();
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
fn legend_sample(o: &mut String, st: &Style, x: f64, y: f64) {
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

fn render(c: &Chart, with_title: bool) -> String {
    let title_h = match (with_title, c.subtitle.is_some()) {
        (true, true) => 58.0,
        (true, false) => 42.0,
        (false, true) => 32.0,
        (false, false) => 14.0,
    };
    let top = title_h;
    let left = MARGIN_LEFT;
    let right = WIDTH - MARGIN_RIGHT;
    let bottom = top + c.plot_height;

    // Legend layout: entries flow in rows under the x-axis label.
    let entries = c.legend_entries();
    let mut rows: Vec<Vec<(f64, &LegendEntry)>> = vec![Vec::new()];
    let mut cx = left;
    for e in &entries {
        let w = 24.0 + 6.0 + e.label.chars().count() as f64 * CHAR_W + 18.0;
        if cx + w > right && !rows.last().expect("a row").is_empty() {
            rows.push(Vec::new());
            cx = left;
        }
        rows.last_mut().expect("a row").push((cx, e));
        cx += w;
    }
    if entries.is_empty() {
        rows.clear();
    }
    let legend_top = bottom + 64.0;
    let notes_top = legend_top + rows.len() as f64 * 20.0 - 4.0;
    let height = notes_top + c.notes.len() as f64 * 16.0 + 8.0;

    let xs = &mut c.series.iter().flat_map(|s| s.pts.iter().filter(|p| p.1.is_finite()).map(|p| p.0));
    let xt = axis_ticks(&c.x, xs, 8);
    let ys = &mut c.series.iter().flat_map(|s| s.pts.iter().filter(|p| p.0.is_finite()).map(|p| p.1));
    let yt = axis_ticks(&c.y, ys, 6);
    let xm = Map {
        lo: xt.lo,
        hi: xt.hi,
        log: c.x.log,
        nines: c.x.nines,
        p0: left,
        p1: right,
    };
    let ym = Map {
        lo: yt.lo,
        hi: yt.hi,
        log: c.y.log,
        nines: c.y.nines,
        p0: bottom,
        p1: top,
    };

    let mut o = String::with_capacity(16 * 1024);
    let id = esc(&c.id);
    writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"{id}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
         font-family=\"{FONT}\" font-size=\"12\" role=\"img\" aria-labelledby=\"{id}-title\">",
        w = px(WIDTH),
        h = px(height)
    )
    .expect("String");
    writeln!(o, "<title id=\"{id}-title\">{}</title>", esc(&c.title)).expect("String");
    writeln!(o, "<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>", px(WIDTH), px(height)).expect("String");
    if with_title {
        writeln!(
            o,
            "<text class=\"title\" x=\"{}\" y=\"24\" font-size=\"16\" font-weight=\"bold\" fill=\"#222\">{}</text>",
            px(left),
            esc(&c.title)
        )
        .expect("String");
    }
    if let Some(sub) = &c.subtitle {
        writeln!(
            o,
            "<text class=\"subtitle\" x=\"{}\" y=\"{}\" fill=\"#555\">{}</text>",
            px(left),
            if with_title { "43" } else { "17" },
            esc(sub)
        )
        .expect("String");
    }
    writeln!(
        o,
        "<defs><clipPath id=\"{id}-clip\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>",
        px(left - 4.0),
        px(top - 4.0),
        px(right - left + 8.0),
        px(bottom - top + 8.0)
    )
    .expect("String");

    // Grid and ticks.
    o.push_str("<g class=\"grid\" stroke-width=\"1\">");
    for &v in &xt.minor {
        let x = xm.px_of(v);
        write!(o, "<path d=\"M{} {}V{}\" stroke=\"#f1f1f1\"/>", px(x), px(top), px(bottom)).expect("String");
    }
    for &v in &yt.minor {
        let y = ym.px_of(v);
        write!(o, "<path d=\"M{} {}H{}\" stroke=\"#f1f1f1\"/>", px(left), px(y), px(right)).expect("String");
    }
    for (v, _) in &xt.major {
        let x = xm.px_of(*v);
        write!(o, "<path d=\"M{} {}V{}\" stroke=\"#e0e0e0\"/>", px(x), px(top), px(bottom)).expect("String");
    }
    for (v, _) in &yt.major {
        let y = ym.px_of(*v);
        write!(o, "<path d=\"M{} {}H{}\" stroke=\"#e0e0e0\"/>", px(left), px(y), px(right)).expect("String");
    }
    o.push_str("</g>\n");
    // Frame.
    writeln!(
        o,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>",
        px(left),
        px(top),
        px(right - left),
        px(bottom - top)
    )
    .expect("String");
    // Tick labels.
    o.push_str("<g class=\"xticks\" fill=\"#333\" text-anchor=\"middle\">");
    for (v, l) in &xt.major {
        let x = xm.px_of(*v);
        write!(
            o,
            "<path d=\"M{x} {b}v5\" stroke=\"#888\"/><text x=\"{x}\" y=\"{}\">{}</text>",
            px(bottom + 19.0),
            esc(l),
            x = px(x),
            b = px(bottom)
        )
        .expect("String");
    }
    o.push_str("</g>\n<g class=\"yticks\" fill=\"#333\" text-anchor=\"end\">");
    for (v, l) in &yt.major {
        let y = ym.px_of(*v);
        write!(
            o,
            "<path d=\"M{} {y}h5\" stroke=\"#888\"/><text x=\"{}\" y=\"{}\">{}</text>",
            px(left - 5.0),
            px(left - 8.0),
            px(y + 4.0),
            esc(l),
            y = px(y)
        )
        .expect("String");
    }
    o.push_str("</g>\n");
    // Axis labels.
    writeln!(
        o,
        "<text class=\"axis-label x\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\" fill=\"#222\">{}</text>",
        px((left + right) / 2.0),
        px(bottom + 40.0),
        esc(&c.x.label)
    )
    .expect("String");
    let ymid = (top + bottom) / 2.0;
    writeln!(
        o,
        "<text class=\"axis-label y\" x=\"18\" y=\"{y}\" transform=\"rotate(-90 18 {y})\" text-anchor=\"middle\" font-size=\"13\" fill=\"#222\">{}</text>",
        esc(&c.y.label),
        y = px(ymid)
    )
    .expect("String");

    // Series, clipped to the plot area.
    write!(o, "<g clip-path=\"url(#{id}-clip)\">").expect("String");
    for s in &c.series {
        draw_series(&mut o, s, xm, ym, c.x.log, c.y.log);
    }
    o.push_str("</g>\n");
    if !c.has_data() {
        writeln!(
            o,
            "<text class=\"nodata\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"14\" fill=\"#777\">no data</text>",
            px((left + right) / 2.0),
            px(ymid)
        )
        .expect("String");
    }

    // Legend.
    if !rows.is_empty() {
        o.push_str("<g class=\"legend\" fill=\"#222\">");
        for (r, row) in rows.iter().enumerate() {
            let y = legend_top + r as f64 * 20.0;
            for (x, e) in row {
                legend_sample(&mut o, &e.style, *x, y);
                write!(o, "<text x=\"{}\" y=\"{}\">{}</text>", px(x + 30.0), px(y), esc(&e.label)).expect("String");
            }
        }
        o.push_str("</g>\n");
    }
    for (i, n) in c.notes.iter().enumerate() {
        writeln!(
            o,
            "<text class=\"note\" x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#666\">{}</text>",
            px(left),
            px(notes_top + 12.0 + i as f64 * 16.0),
            esc(n)
        )
        .expect("String");
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> Chart {
        let mut c = Chart::new("t", "A <test>", Axis::linear("time (s)"), Axis::log("pause (ms)"));
        c.push(
            "a",
            Style::line(color(0), 1.5, None),
            vec![(0.0, 1.0), (1.0, 10.0), (2.0, f64::NAN), (3.0, 100.0)],
        );
        c.push(
            "b",
            Style::points(color(1), Marker::Circle, 2.0),
            vec![(0.5, 5.0), (0.5, 5.0), (1.5, 0.0)],
        );
        c.notes.push("note & caveat".into());
        c
    }

    #[test]
    fn svg_has_axes_series_legend_and_escapes_text() {
        let svg = chart().to_svg();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("A &lt;test&gt;"));
        assert!(svg.contains(">time (s)</text>"));
        assert!(svg.contains(">pause (ms)</text>"));
        assert!(svg.contains("data-name=\"a\" data-n=\"3\""));
        // The 0 of "b" cannot be drawn on a log axis; the duplicate collapses to one marker.
        assert!(svg.contains("data-name=\"b\" data-n=\"3\""));
        let b = svg.split("data-name=\"b\"").nth(1).unwrap().split("</g>").next().unwrap();
        assert_eq!(b.matches("h0").count(), 1, "one marker in the plot: {b}");
        assert!(b.contains("stroke-linecap=\"round\""));
        assert!(svg.contains("note &amp; caveat"));
        for l in [">1</text>", ">10</text>", ">100</text>"] {
            assert!(svg.contains(l), "missing tick label {l}");
        }
        // The NaN breaks the line into two pieces.
        let line = svg.split("data-name=\"a\"").nth(1).unwrap();
        let d = line.split("d=\"").nth(1).unwrap().split('"').next().unwrap();
        assert_eq!(d.matches('M').count(), 2, "{d}");
    }

    #[test]
    fn rendering_is_deterministic_and_empty_charts_say_so() {
        assert_eq!(chart().to_svg(), chart().to_svg());
        let c = Chart::new("e", "empty", Axis::linear("x"), Axis::linear("y"));
        assert!(c.to_svg().contains(">no data</text>"));
    }

    #[test]
    fn nines_axis_spaces_90_99_999_evenly() {
        let mut c = Chart::new("n", "cdf", Axis::log("ms"), Axis::nines("fraction", 3));
        c.push(
            "a",
            Style::step(color(0), 1.5, None),
            vec![(1.0, 0.0), (1.0, 0.9), (10.0, 0.99), (100.0, 1.0)],
        );
        let svg = c.to_svg();
        for l in [">0%</text>", ">50%</text>", ">90%</text>", ">99%</text>", ">99.9%</text>"] {
            assert!(svg.contains(l), "missing {l}");
        }
        let y = |v: f64| {
            Map {
                lo: 0.0,
                hi: 0.999,
                log: false,
                nines: true,
                p0: 300.0,
                p1: 0.0,
            }
            .px_of(v)
        };
        assert!((y(0.0) - 300.0).abs() < 1e-9);
        assert!((y(0.9) - 200.0).abs() < 1e-9);
        assert!((y(0.99) - 100.0).abs() < 1e-9);
        assert!((y(1.0) - 0.0).abs() < 1e-9, "1.0 is clamped to the top");
    }

    #[test]
    fn big_lines_are_decimated_per_pixel_column() {
        let pts: Vec<(f64, f64)> = (0..100_000).map(|i| (i as f64 / 1000.0, (i % 7) as f64)).collect();
        let px: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x * 9.0, y)).collect();
        let d = decimate_line(&px);
        assert!(d.len() <= 4 * 901, "{}", d.len());
        // Extremes survive.
        assert!(d.iter().any(|p| p.1 == 6.0) && d.iter().any(|p| p.1 == 0.0));
        assert!(d.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
