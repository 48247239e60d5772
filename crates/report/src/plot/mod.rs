//! A small SVG chart renderer: one plot area with linear or log10 axes, nice ticks, grid,
//! line/step/point series, a legend and notes. Output is a standalone SVG document (text is
//! drawn by the viewer, so there are no font files to find), deterministic for the same input.
//!
//! Why not `plotters`: see the comment in this crate's Cargo.toml.
//!
//! Big series stay small: lines keep the first/min/max/last point of each pixel column, point
//! clouds keep one marker per occupied pixel cell, and each series is one `<path>`.

mod axis;
mod series;
mod svg;
pub mod ticks;

use svg::render;

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

#[cfg(test)]
mod tests {
    use super::axis::Map;
    use super::series::decimate_line;
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

    /// Every grid line lies inside the plot frame, whatever ticks the axes chose.
    #[test]
    fn grid_lines_stay_inside_the_frame() {
        let mut c = Chart::new("g", "grid", Axis::log("x").range(3.0, 700.0), Axis::linear("y"));
        c.push("a", Style::line(color(0), 1.0, None), vec![(3.0, 1.0), (40.0, 5.0), (700.0, 2.0)]);
        let svg = c.to_svg();
        let frame = svg.split("<rect").find(|r| r.contains("stroke=\"#888\"")).expect("frame");
        let attr = |k: &str| -> f64 {
            frame
                .split(&format!("{k}=\""))
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let (x0, y0) = (attr("x"), attr("y"));
        let (x1, y1) = (x0 + attr("width"), y0 + attr("height"));
        let grid = svg.split("class=\"grid\"").nth(1).unwrap().split("</g>").next().unwrap();
        let mut lines = 0;
        for d in grid.split("d=\"M").skip(1) {
            let d = d.split('"').next().unwrap();
            let (x, rest) = d.split_once(' ').unwrap();
            let y: f64 = rest.split(['V', 'H']).next().unwrap().parse().unwrap();
            let x: f64 = x.parse().unwrap();
            assert!(
                (x0 - 0.6..=x1 + 0.6).contains(&x) && (y0 - 0.6..=y1 + 0.6).contains(&y),
                "{d} outside {x0}..{x1} × {y0}..{y1}"
            );
            lines += 1;
        }
        assert!(lines > 4, "{lines} grid lines");
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
