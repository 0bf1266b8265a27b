//! Charts as hand-written SVG: line charts (linear or log axes) and grouped bar charts.
//!
//! Why by hand: the page must be one file with no scripts from elsewhere, and the charts are few
//! and simple. Each chart is an inline `<svg class="chart">` whose text inherits the page's
//! fonts. Series differ by colour *and* by something that survives greyscale printing and colour
//! blindness: marker shape and dash pattern for lines, fill pattern for bars, with a legend that
//! shows them. Every data point has a `<title>` tooltip (no JavaScript needed). `data-points`
//! on the `<svg>` says how many points the chart drew, so a browser test can check what it sees.

mod axis;
mod bars;
mod line;

pub use axis::{Axis, Scale, Ticks};
pub use bars::{BarChart, BarSeries};
pub use line::{LineChart, Series};

use crate::text::esc;
use std::fmt::Write;

/// Okabe–Ito: distinguishable with the common colour-vision deficiencies. (Yellow is left out:
/// it vanishes on white.)
const COLORS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#222222", "#8C564B",
];
/// Dash patterns, in step with the markers so no two of the first six series look alike in grey.
const DASHES: [&str; 6] = ["", "8 4", "2 3", "10 3 2 3", "4 2", "1 5"];

const WIDTH: f64 = 640.0;
const LEFT: f64 = 74.0;
const RIGHT: f64 = 22.0;
const TOP: f64 = 44.0;
const PLOT_H: f64 = 240.0;
/// Axis titles and legends; ticks are a point smaller. Charts are drawn at about their own size
/// (two to a row on a wide page), so these are the sizes a reader sees.
const FONT: f64 = 13.0;
const TICK: f64 = 12.0;

fn color(i: usize) -> &'static str {
    COLORS[i % COLORS.len()]
}
fn dash(i: usize) -> &'static str {
    DASHES[i % DASHES.len()]
}

/// A marker shape centred on (x, y), as a path: circle, square, triangle, diamond, inverted
/// triangle, cross, plus, star, by series index.
fn marker_path(i: usize, x: f64, y: f64) -> String {
    let r = 4.2;
    match i % 8 {
        0 => format!(
            "M{:.1},{y:.1}a{r},{r} 0 1,0 {:.1},0a{r},{r} 0 1,0 {:.1},0z",
            x - r,
            2.0 * r,
            -2.0 * r
        ),
        1 => {
            let s = r * 0.9;
            format!(
                "M{:.1},{:.1}h{:.1}v{:.1}h{:.1}z",
                x - s,
                y - s,
                2.0 * s,
                2.0 * s,
                -2.0 * s
            )
        }
        2 => format!(
            "M{x:.1},{:.1}L{:.1},{:.1}L{:.1},{:.1}z",
            y - r * 1.2,
            x + r * 1.1,
            y + r * 0.8,
            x - r * 1.1,
            y + r * 0.8
        ),
        3 => format!(
            "M{x:.1},{:.1}L{:.1},{y:.1}L{x:.1},{:.1}L{:.1},{y:.1}z",
            y - r * 1.25,
            x + r * 1.25,
            y + r * 1.25,
            x - r * 1.25
        ),
        4 => format!(
            "M{x:.1},{:.1}L{:.1},{:.1}L{:.1},{:.1}z",
            y + r * 1.2,
            x + r * 1.1,
            y - r * 0.8,
            x - r * 1.1,
            y - r * 0.8
        ),
        5 => format!(
            "M{:.1},{:.1}l{:.1},{:.1}m0,{:.1}l{:.1},{:.1}",
            x - r,
            y - r,
            2.0 * r,
            2.0 * r,
            -2.0 * r,
            -2.0 * r,
            2.0 * r
        ),
        6 => format!(
            "M{:.1},{y:.1}h{:.1}M{x:.1},{:.1}v{:.1}",
            x - r * 1.2,
            2.4 * r,
            y - r * 1.2,
            2.4 * r
        ),
        _ => {
            let mut d = String::new();
            for k in 0..10 {
                let a = std::f64::consts::PI * (k as f64) / 5.0 - std::f64::consts::FRAC_PI_2;
                let rr = if k % 2 == 0 { r * 1.4 } else { r * 0.6 };
                let _ = write!(
                    d,
                    "{}{:.1},{:.1}",
                    if k == 0 { 'M' } else { 'L' },
                    x + rr * a.cos(),
                    y + rr * a.sin()
                );
            }
            d.push('z');
            d
        }
    }
}

/// Cross and plus are strokes only; the others are filled shapes with a white rim.
fn marker(i: usize, x: f64, y: f64, tip: &str) -> String {
    let c = color(i);
    let style = if matches!(i % 8, 5 | 6) {
        format!(r#"fill="none" stroke="{c}" stroke-width="2""#)
    } else {
        format!(r##"fill="{c}" stroke="#fff" stroke-width="1""##)
    };
    format!(
        r#"<path class="pt" d="{}" {style}><title>{}</title></path>"#,
        marker_path(i, x, y),
        esc(tip)
    )
}

/// Fill patterns for bars: solid, stripes, dots, cross-hatch, horizontal, back stripes.
fn pattern_def(id: &str, i: usize) -> String {
    let c = color(i);
    let ink = r##"stroke="#fff" stroke-width="1.6""##;
    let body = match i % 6 {
        0 => String::new(),
        1 => format!(r#"<path d="M0,0V6" {ink}/>"#),
        2 => r##"<circle cx="3" cy="3" r="1.3" fill="#fff"/>"##.to_owned(),
        3 => format!(r#"<path d="M0,0V6M0,0H6" {ink}/>"#),
        4 => format!(r#"<path d="M0,3H6" {ink}/>"#),
        _ => format!(r#"<path d="M3,0V6" {ink}/>"#),
    };
    let rotate = match i % 6 {
        1 => r#" patternTransform="rotate(45)""#,
        3 => r#" patternTransform="rotate(45)""#,
        5 => r#" patternTransform="rotate(-45)""#,
        _ => "",
    };
    format!(
        r#"<pattern id="{id}" patternUnits="userSpaceOnUse" width="6" height="6"{rotate}><rect width="6" height="6" fill="{c}"/>{body}</pattern>"#
    )
}

/// Rough text width at the chart font: enough to lay out legends and trim labels.
fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.56
}

/// Shortens a label to fit `px`, with an ellipsis.
fn fit(s: &str, px: f64, size: f64) -> String {
    if text_width(s, size) <= px {
        return s.to_owned();
    }
    let keep = ((px / (size * 0.58)) as usize).saturating_sub(1).max(1);
    let mut out: String = s.chars().take(keep).collect();
    out.push('…');
    out
}

/// A legend entry: its label and how to draw its swatch at (x, y).
struct LegendItem {
    label: String,
    swatch: String,
}

/// Lays legend items out in rows under the plot; returns the SVG and its height.
fn legend(items: &[LegendItem], top: f64) -> (String, f64) {
    if items.is_empty() {
        return (String::new(), 0.0);
    }
    let mut out = String::from(r#"<g class="legend">"#);
    let (mut x, mut y) = (LEFT, top + 10.0);
    let max_x = WIDTH - RIGHT;
    for it in items {
        let label = fit(&it.label, max_x - LEFT - 40.0, FONT);
        let w = 36.0 + text_width(&label, FONT) + 18.0;
        if x > LEFT && x + w > max_x {
            x = LEFT;
            y += 20.0;
        }
        let _ = write!(
            out,
            r#"<g transform="translate({x:.1},{y:.1})">{}<text x="36" y="4" font-size="{FONT}">{}</text></g>"#,
            it.swatch,
            esc(&label)
        );
        x += w;
    }
    out.push_str("</g>");
    (out, y - top + 14.0)
}

/// Gridlines, tick labels and axis titles for a plot at the standard position.
fn y_axis(out: &mut String, axis: &Axis, dom: &axis::Domain) {
    let (x0, x1) = (LEFT, WIDTH - RIGHT);
    for t in &dom.ticks {
        let y = TOP + PLOT_H * (1.0 - dom.frac(t.value));
        let class = if t.label.is_some() {
            "grid"
        } else {
            "grid minor"
        };
        let _ = write!(
            out,
            r#"<line class="{class}" x1="{x0}" x2="{x1}" y1="{y:.1}" y2="{y:.1}"/>"#
        );
        if let Some(l) = &t.label {
            let _ = write!(
                out,
                r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="end" font-size="{TICK}">{}</text>"#,
                x0 - 6.0,
                y + 4.0,
                esc(l)
            );
        }
    }
    let cy = TOP + PLOT_H / 2.0;
    let _ = write!(
        out,
        r#"<text class="atitle" transform="translate(16,{cy:.1}) rotate(-90)" text-anchor="middle" font-size="{FONT}">{}</text>"#,
        esc(&axis.title)
    );
}

/// The chart's frame: `<svg>` open tag with title; the caller appends the body and `</svg>`.
fn open(id: &str, title: &str, height: f64, points: usize, defs: &str) -> String {
    let id = esc(id);
    format!(
        r#"<svg class="chart" id="{id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0}" width="{WIDTH}" height="{height:.0}" role="img" aria-labelledby="{id}-t" data-points="{points}"><title id="{id}-t">{t}</title><defs>{defs}</defs><text class="ctitle" x="{LEFT}" y="24" font-size="16" font-weight="600">{t}</text>"#,
        t = esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_eight_series_look_different_without_colour() {
        let shapes: Vec<String> = (0..8).map(|i| marker_path(i, 0.0, 0.0)).collect();
        for i in 0..8 {
            for j in i + 1..8 {
                assert_ne!(shapes[i], shapes[j], "markers {i} and {j}");
            }
        }
        for i in 0..6 {
            for j in i + 1..6 {
                assert_ne!(dash(i), dash(j));
            }
        }
    }

    #[test]
    fn long_labels_are_trimmed_with_an_ellipsis() {
        let s = fit(&"x".repeat(200), 100.0, FONT);
        assert!(s.ends_with('…') && text_width(&s, FONT) <= 100.0 + FONT);
        assert_eq!(fit("short", 100.0, FONT), "short");
    }
}
