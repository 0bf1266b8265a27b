//! Line charts: one polyline per series over linear or log axes, with point markers.

use super::axis::Axis;
use super::*;

/// A named series of (x, y) points, drawn in order.
#[derive(Debug, Clone)]
pub struct Series {
    /// The series' name, in the legend and the tooltips.
    pub name: String,
    /// Its (x, y) points in drawing order; a point an axis cannot place (not finite, or ≤ 0 on a
    /// log axis) is left out.
    pub points: Vec<(f64, f64)>,
}

/// A line chart. A series' look (colour, dash, marker) follows its index in `series`, so the
/// same input keeps the same look across the charts of a page when callers keep the order.
#[derive(Debug, Clone)]
pub struct LineChart {
    /// The `<svg>` element's id, unique in the page: its title's id derives from it.
    pub id: String,
    /// The title drawn above the chart, also the SVG's accessible name.
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// The lines, drawn in order.
    pub series: Vec<Series>,
}

/// A series with its index (its look) and the points both axes can place.
type Placed<'s> = (usize, &'s Series, Vec<(f64, f64)>);

/// At most this many markers per series: lines of hundreds of points stay readable; every
/// point is still a vertex of the polyline.
const MAX_MARKERS: usize = 16;

impl LineChart {
    /// The chart as SVG, or `None` when no series has a point both axes can place.
    pub fn svg(&self) -> Option<String> {
        let series: Vec<Placed<'_>> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let pts = s
                    .points
                    .iter()
                    .copied()
                    .filter(|&(x, y)| self.x.accepts(x) && self.y.accepts(y))
                    .collect::<Vec<_>>();
                (i, s, pts)
            })
            .filter(|(_, _, pts)| !pts.is_empty())
            .collect();
        let xd = self
            .x
            .domain(series.iter().flat_map(|s| s.2.iter().map(|p| p.0)))?;
        let yd = self
            .y
            .domain(series.iter().flat_map(|s| s.2.iter().map(|p| p.1)))?;
        let (x0, x1) = (LEFT, WIDTH - RIGHT);
        let px = |x: f64| x0 + (x1 - x0) * xd.frac(x);
        let py = |y: f64| TOP + PLOT_H * (1.0 - yd.frac(y));

        let mut body = String::new();
        y_axis(&mut body, &self.y, &yd);
        let bottom = TOP + PLOT_H;
        for t in &xd.ticks {
            let x = px(t.value);
            let class = if t.label.is_some() {
                "grid"
            } else {
                "grid minor"
            };
            let _ = write!(
                body,
                r#"<line class="{class}" x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{bottom}"/>"#
            );
            if let Some(l) = &t.label {
                // A label at the right edge would be cut off by the frame: end it there instead.
                let anchor = if x + text_width(l, TICK) / 2.0 > WIDTH - 2.0 {
                    "end"
                } else {
                    "middle"
                };
                let _ = write!(
                    body,
                    r#"<text class="tick" x="{x:.1}" y="{:.1}" text-anchor="{anchor}" font-size="{TICK}">{}</text>"#,
                    bottom + 16.0,
                    esc(l)
                );
            }
        }
        let _ = write!(
            body,
            r#"<path class="frame" d="M{x0},{TOP}V{bottom}H{x1}"/><text class="atitle" x="{:.1}" y="{:.1}" text-anchor="middle" font-size="{FONT}">{}</text>"#,
            (x0 + x1) / 2.0,
            bottom + 38.0,
            esc(&self.x.title)
        );

        let mut points = 0;
        let mut items = Vec::new();
        for (k, (i, s, pts)) in series.iter().enumerate() {
            let i = *i;
            points += pts.len();
            let coords: Vec<String> = pts
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let dash = match dash(i) {
                "" => String::new(),
                d => format!(r#" stroke-dasharray="{d}""#),
            };
            let _ = write!(
                body,
                r#"<g class="s{i}"><polyline class="series" points="{}" fill="none" stroke="{}" stroke-width="2"{dash} stroke-linejoin="round"/>"#,
                coords.join(" "),
                color(i)
            );
            let stride = pts.len().div_ceil(MAX_MARKERS).max(1);
            // Stagger the markers of different series so they do not sit on top of each other.
            let offset = k * stride / series.len().max(1);
            for (j, &(x, y)) in pts.iter().enumerate() {
                if (j + stride - offset % stride).is_multiple_of(stride) || j + 1 == pts.len() {
                    let tip = format!(
                        "{}: {} = {}, {} = {}",
                        s.name,
                        short(&self.x.title),
                        self.x.show(x),
                        short(&self.y.title),
                        self.y.show(y)
                    );
                    body.push_str(&marker(i, px(x), py(y), &tip));
                }
            }
            body.push_str("</g>");
            items.push(LegendItem {
                label: s.name.clone(),
                swatch: format!(
                    r#"<line x1="0" x2="30" y1="0" y2="0" stroke="{}" stroke-width="2"{dash}/>{}"#,
                    color(i),
                    marker(i, 15.0, 0.0, &s.name)
                ),
            });
        }
        let (leg, leg_h) = legend(&items, bottom + 50.0);
        let height = bottom + 50.0 + leg_h + 8.0;
        let mut out = open(&self.id, &self.title, height, points, "");
        out.push_str(&body);
        out.push_str(&leg);
        out.push_str("</svg>");
        Some(out)
    }
}

/// An axis title without its parenthesised unit note, for tooltips: `latency (ms)` → `latency`.
fn short(title: &str) -> &str {
    title.split(" (").next().unwrap_or(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(series: Vec<Series>) -> LineChart {
        LineChart {
            id: "c".into(),
            title: "T".into(),
            x: Axis::log("size (bytes)", Ticks::Bytes),
            y: Axis::linear("MB/s"),
            series,
        }
    }

    #[test]
    fn every_placeable_point_is_a_vertex_and_counted() {
        let svg = chart(vec![
            Series {
                name: "a".into(),
                points: vec![(500.0, 1.0), (0.0, 2.0), (5000.0, 3.0)],
            },
            Series {
                name: "b".into(),
                points: vec![(1000.0, f64::NAN), (2000.0, 4.0)],
            },
        ])
        .svg()
        .unwrap();
        // x = 0 cannot sit on a log axis and NaN nowhere: 3 points are drawn.
        assert!(svg.contains(r#"data-points="3""#), "{svg}");
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches(r#"class="pt""#).count(), 3 + 2); // + one per legend swatch
    }

    #[test]
    fn a_chart_with_nothing_to_draw_is_none() {
        assert!(chart(vec![]).svg().is_none());
        let empty = Series {
            name: "x".into(),
            points: vec![(-1.0, 1.0)],
        };
        assert!(chart(vec![empty]).svg().is_none());
    }

    #[test]
    fn series_names_are_escaped_in_svg() {
        let svg = chart(vec![Series {
            name: "<script>alert(1)</script>".into(),
            points: vec![(100.0, 1.0)],
        }])
        .svg()
        .unwrap();
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;script&gt;"));
    }

    #[test]
    fn long_series_get_thinned_markers_but_all_vertices() {
        let pts: Vec<(f64, f64)> = (1..=200).map(|i| (i as f64, i as f64)).collect();
        let svg = LineChart {
            x: Axis::linear("t (s)"),
            ..chart(vec![Series {
                name: "a".into(),
                points: pts,
            }])
        }
        .svg()
        .unwrap();
        assert!(svg.contains(r#"data-points="200""#));
        let markers = svg.matches(r#"class="pt""#).count() - 1;
        assert!(
            (MAX_MARKERS..=MAX_MARKERS + 2).contains(&markers),
            "{markers}"
        );
    }
}
