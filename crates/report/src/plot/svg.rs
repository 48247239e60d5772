//! One chart as an SVG document: the layout is computed first (plot area, legend rows, notes),
//! then each layer is written in drawing order — background and titles, grid, frame and ticks,
//! axis labels, the clipped series, the legend, the notes.

use super::axis::{axis_ticks, Map};
use super::series::{draw_series, legend_sample};
use super::ticks::Ticks;
use super::{esc, px, Chart, LegendEntry, CHAR_W, FONT, MARGIN_LEFT, MARGIN_RIGHT, WIDTH};
use std::fmt::Write as _;

/// Where everything goes, in px.
struct Layout<'c> {
    top: f64,
    left: f64,
    right: f64,
    bottom: f64,
    height: f64,
    /// Legend entries by row, each with its x.
    rows: Vec<Vec<(f64, &'c LegendEntry)>>,
    legend_top: f64,
    notes_top: f64,
}

impl<'c> Layout<'c> {
    fn of(c: &Chart, entries: &'c [LegendEntry], with_title: bool) -> Layout<'c> {
        let top = match (with_title, c.subtitle.is_some()) {
            (true, true) => 58.0,
            (true, false) => 42.0,
            (false, true) => 32.0,
            (false, false) => 14.0,
        };
        let (left, right) = (MARGIN_LEFT, WIDTH - MARGIN_RIGHT);
        let bottom = top + c.plot_height;
        let rows = legend_rows(entries, left, right);
        let legend_top = bottom + 64.0;
        let notes_top = legend_top + rows.len() as f64 * 20.0 - 4.0;
        Layout {
            top,
            left,
            right,
            bottom,
            height: notes_top + c.notes.len() as f64 * 16.0 + 8.0,
            rows,
            legend_top,
            notes_top,
        }
    }

    fn ymid(&self) -> f64 {
        (self.top + self.bottom) / 2.0
    }
}

/// Legend entries flow in rows under the x-axis label, wrapping at the plot's right edge.
fn legend_rows(entries: &[LegendEntry], left: f64, right: f64) -> Vec<Vec<(f64, &LegendEntry)>> {
    if entries.is_empty() {
        return Vec::new();
    }
    let mut rows: Vec<Vec<(f64, &LegendEntry)>> = vec![Vec::new()];
    let mut cx = left;
    for e in entries {
        let w = 24.0 + 6.0 + e.label.chars().count() as f64 * CHAR_W + 18.0;
        if cx + w > right && !rows.last().expect("a row").is_empty() {
            rows.push(Vec::new());
            cx = left;
        }
        rows.last_mut().expect("a row").push((cx, e));
        cx += w;
    }
    rows
}

pub(super) fn render(c: &Chart, with_title: bool) -> String {
    let entries = c.legend_entries();
    let l = Layout::of(c, &entries, with_title);
    let xs = &mut c.series.iter().flat_map(|s| s.pts.iter().filter(|p| p.1.is_finite()).map(|p| p.0));
    let xt = axis_ticks(&c.x, xs, 8);
    let ys = &mut c.series.iter().flat_map(|s| s.pts.iter().filter(|p| p.0.is_finite()).map(|p| p.1));
    let yt = axis_ticks(&c.y, ys, 6);
    let xm = Map {
        lo: xt.lo,
        hi: xt.hi,
        log: c.x.log,
        nines: c.x.nines,
        p0: l.left,
        p1: l.right,
    };
    let ym = Map {
        lo: yt.lo,
        hi: yt.hi,
        log: c.y.log,
        nines: c.y.nines,
        p0: l.bottom,
        p1: l.top,
    };

    let mut o = String::with_capacity(16 * 1024);
    header(&mut o, c, &l, with_title);
    grid(&mut o, &l, (&xt, xm), (&yt, ym));
    frame_and_ticks(&mut o, &l, (&xt, xm), (&yt, ym));
    axis_labels(&mut o, c, &l);
    write!(o, "<g clip-path=\"url(#{}-clip)\">", esc(&c.id)).expect("String");
    for s in &c.series {
        draw_series(&mut o, s, xm, ym, c.x.log, c.y.log);
    }
    o.push_str("</g>\n");
    if !c.has_data() {
        writeln!(
            o,
            "<text class=\"nodata\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"14\" fill=\"#777\">no data</text>",
            px((l.left + l.right) / 2.0),
            px(l.ymid())
        )
        .expect("String");
    }
    legend_and_notes(&mut o, c, &l);
    o.push_str("</svg>\n");
    o
}

/// The `<svg>` element, its accessible title, the background, titles and the plot's clip path.
fn header(o: &mut String, c: &Chart, l: &Layout, with_title: bool) {
    let id = esc(&c.id);
    writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"{id}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
         font-family=\"{FONT}\" font-size=\"12\" role=\"img\" aria-labelledby=\"{id}-title\">",
        w = px(WIDTH),
        h = px(l.height)
    )
    .expect("String");
    writeln!(o, "<title id=\"{id}-title\">{}</title>", esc(&c.title)).expect("String");
    writeln!(o, "<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>", px(WIDTH), px(l.height)).expect("String");
    if with_title {
        writeln!(
            o,
            "<text class=\"title\" x=\"{}\" y=\"24\" font-size=\"16\" font-weight=\"bold\" fill=\"#222\">{}</text>",
            px(l.left),
            esc(&c.title)
        )
        .expect("String");
    }
    if let Some(sub) = &c.subtitle {
        writeln!(
            o,
            "<text class=\"subtitle\" x=\"{}\" y=\"{}\" fill=\"#555\">{}</text>",
            px(l.left),
            if with_title { "43" } else { "17" },
            esc(sub)
        )
        .expect("String");
    }
    writeln!(
        o,
        "<defs><clipPath id=\"{id}-clip\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>",
        px(l.left - 4.0),
        px(l.top - 4.0),
        px(l.right - l.left + 8.0),
        px(l.bottom - l.top + 8.0)
    )
    .expect("String");
}

/// Minor grid lines first, major ones over them.
fn grid(o: &mut String, l: &Layout, (xt, xm): (&Ticks, Map), (yt, ym): (&Ticks, Map)) {
    o.push_str("<g class=\"grid\" stroke-width=\"1\">");
    // A tick of the axis' nice range can fall outside the data's (a log axis' minor ticks, a
    // category axis' padding): its line would cross the margins and the labels.
    let inside = |p: f64, a: f64, b: f64| p.is_finite() && p >= a.min(b) - 0.5 && p <= a.max(b) + 0.5;
    let vertical = |o: &mut String, v: f64, color: &str| {
        let x = xm.px_of(v);
        if inside(x, l.left, l.right) {
            write!(o, "<path d=\"M{} {}V{}\" stroke=\"{color}\"/>", px(x), px(l.top), px(l.bottom)).expect("String");
        }
    };
    let horizontal = |o: &mut String, v: f64, color: &str| {
        let y = ym.px_of(v);
        if inside(y, l.top, l.bottom) {
            write!(o, "<path d=\"M{} {}H{}\" stroke=\"{color}\"/>", px(l.left), px(y), px(l.right)).expect("String");
        }
    };
    for &v in &xt.minor {
        vertical(o, v, "#f1f1f1");
    }
    for &v in &yt.minor {
        horizontal(o, v, "#f1f1f1");
    }
    for (v, _) in &xt.major {
        vertical(o, *v, "#e0e0e0");
    }
    for (v, _) in &yt.major {
        horizontal(o, *v, "#e0e0e0");
    }
    o.push_str("</g>\n");
}

/// The plot frame, and the major ticks with their labels on both axes.
fn frame_and_ticks(o: &mut String, l: &Layout, (xt, xm): (&Ticks, Map), (yt, ym): (&Ticks, Map)) {
    writeln!(
        o,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>",
        px(l.left),
        px(l.top),
        px(l.right - l.left),
        px(l.bottom - l.top)
    )
    .expect("String");
    o.push_str("<g class=\"xticks\" fill=\"#333\" text-anchor=\"middle\">");
    for (v, label) in &xt.major {
        write!(
            o,
            "<path d=\"M{x} {b}v5\" stroke=\"#888\"/><text x=\"{x}\" y=\"{}\">{}</text>",
            px(l.bottom + 19.0),
            esc(label),
            x = px(xm.px_of(*v)),
            b = px(l.bottom)
        )
        .expect("String");
    }
    o.push_str("</g>\n<g class=\"yticks\" fill=\"#333\" text-anchor=\"end\">");
    for (v, label) in &yt.major {
        let y = ym.px_of(*v);
        write!(
            o,
            "<path d=\"M{} {y}h5\" stroke=\"#888\"/><text x=\"{}\" y=\"{}\">{}</text>",
            px(l.left - 5.0),
            px(l.left - 8.0),
            px(y + 4.0),
            esc(label),
            y = px(y)
        )
        .expect("String");
    }
    o.push_str("</g>\n");
}

fn axis_labels(o: &mut String, c: &Chart, l: &Layout) {
    writeln!(
        o,
        "<text class=\"axis-label x\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"13\" fill=\"#222\">{}</text>",
        px((l.left + l.right) / 2.0),
        px(l.bottom + 40.0),
        esc(&c.x.label)
    )
    .expect("String");
    writeln!(
        o,
        "<text class=\"axis-label y\" x=\"18\" y=\"{y}\" transform=\"rotate(-90 18 {y})\" text-anchor=\"middle\" font-size=\"13\" fill=\"#222\">{}</text>",
        esc(&c.y.label),
        y = px(l.ymid())
    )
    .expect("String");
}

fn legend_and_notes(o: &mut String, c: &Chart, l: &Layout) {
    if !l.rows.is_empty() {
        o.push_str("<g class=\"legend\" fill=\"#222\">");
        for (r, row) in l.rows.iter().enumerate() {
            let y = l.legend_top + r as f64 * 20.0;
            for (x, e) in row {
                legend_sample(o, &e.style, *x, y);
                write!(o, "<text x=\"{}\" y=\"{}\">{}</text>", px(x + 30.0), px(y), esc(&e.label)).expect("String");
            }
        }
        o.push_str("</g>\n");
    }
    for (i, n) in c.notes.iter().enumerate() {
        writeln!(
            o,
            "<text class=\"note\" x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#666\">{}</text>",
            px(l.left),
            px(l.notes_top + 12.0 + i as f64 * 16.0),
            esc(n)
        )
        .expect("String");
    }
}
