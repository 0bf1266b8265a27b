//! Grouped bar charts: one group per category, one bar per series, optional min–max whiskers.

use super::axis::Axis;
use super::*;

/// One series of a bar chart: a value per group (`None`: no bar), and optionally a range per
/// group drawn as a whisker (the noise across rounds).
#[derive(Debug, Clone)]
pub struct BarSeries {
    /// The series' name, in the legend and the tooltips.
    pub name: String,
    /// One value per group, in the groups' order; `None` draws no bar and says `n/a`.
    pub values: Vec<Option<f64>>,
    /// Empty, or one entry per group.
    pub ranges: Vec<Option<(f64, f64)>>,
}

/// A grouped bar chart: one group of bars per category along the x axis, in each group one bar
/// per series, in the series' order.
#[derive(Debug, Clone)]
pub struct BarChart {
    /// The `<svg>` element's id, unique in the page (its title's and fill patterns' ids derive from
    /// it).
    pub id: String,
    /// The title drawn above the chart, also the SVG's accessible name.
    pub title: String,
    /// The category axis' title.
    pub x_title: String,
    /// Linear; the domain starts at 0 so bar lengths compare.
    pub y: Axis,
    /// The categories, one group of bars each, left to right.
    pub groups: Vec<String>,
    /// The series, one bar each in every group; a series' look follows its index.
    pub series: Vec<BarSeries>,
}

impl BarChart {
    /// The chart as SVG, or `None` when there is no bar to draw.
    pub fn svg(&self) -> Option<String> {
        let ok = |v: &Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0);
        let ng = self.groups.len();
        let ns = self.series.len();
        if ng == 0 || ns == 0 {
            return None;
        }
        let values = self.series.iter().flat_map(|s| {
            let vals = s.values.iter().take(ng).filter_map(ok);
            let highs = s.ranges.iter().take(ng).flatten().map(|r| r.1);
            vals.chain(highs.filter(|v| v.is_finite()))
        });
        let yd = Axis {
            zero: true,
            ..self.y.clone()
        }
        .domain(values)?;
        let (x0, x1) = (LEFT, WIDTH - RIGHT);
        let bottom = TOP + PLOT_H;
        let py = |y: f64| TOP + PLOT_H * (1.0 - yd.frac(y));
        let gw = (x1 - x0) / ng as f64;
        let bw = (gw * 0.78 / ns as f64).min(64.0);

        let mut body = String::new();
        y_axis(&mut body, &self.y, &yd);
        let mut bars = 0;
        for (g, group) in self.groups.iter().enumerate() {
            let gx = x0 + gw * g as f64 + (gw - bw * ns as f64) / 2.0;
            for (i, s) in self.series.iter().enumerate() {
                let x = gx + bw * i as f64;
                let Some(v) = s.values.get(g).and_then(ok) else {
                    // Say that nothing was measured rather than leave a gap that reads as 0.
                    let _ = write!(
                        body,
                        r#"<text class="vlabel" x="{:.1}" y="{:.1}" text-anchor="middle" font-size="10">n/a</text>"#,
                        x + (bw - 2.0) / 2.0,
                        bottom - 4.0
                    );
                    continue;
                };
                bars += 1;
                let y = py(v);
                let range = s.ranges.get(g).copied().flatten();
                let mut tip = format!("{} · {}: {}", group, s.name, self.y.show(v));
                if let Some((lo, hi)) = range {
                    let _ = write!(tip, " [{} – {}]", self.y.show(lo), self.y.show(hi));
                }
                let _ = write!(
                    body,
                    r#"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="url(#{}-p{i})" stroke="{}" stroke-width="1"><title>{}</title></rect>"#,
                    bw - 2.0,
                    (bottom - y).max(0.0),
                    esc(&self.id),
                    color(i),
                    esc(&tip)
                );
                let mut label_y = y;
                if let Some((lo, hi)) = range.filter(|r| r.0.is_finite() && r.1.is_finite()) {
                    let cx = x + (bw - 2.0) / 2.0;
                    let (ylo, yhi) = (py(lo.max(0.0)), py(hi));
                    let _ = write!(
                        body,
                        r#"<path class="whisker" d="M{cx:.1},{ylo:.1}V{yhi:.1}M{:.1},{ylo:.1}h8M{:.1},{yhi:.1}h8"/>"#,
                        cx - 4.0,
                        cx - 4.0
                    );
                    label_y = label_y.min(yhi);
                }
                let label = self.y.show(v);
                if text_width(&label, 11.0) <= bw + 6.0 {
                    let _ = write!(
                        body,
                        r#"<text class="vlabel" x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"#,
                        x + (bw - 2.0) / 2.0,
                        label_y - 4.0,
                        esc(&label)
                    );
                }
            }
            let _ = write!(
                body,
                r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle" font-size="{TICK}">{}<title>{}</title></text>"#,
                x0 + gw * (g as f64 + 0.5),
                bottom + 16.0,
                esc(&fit(group, gw - 4.0, TICK)),
                esc(group)
            );
        }
        if bars == 0 {
            return None;
        }
        let _ = write!(
            body,
            r#"<path class="frame" d="M{x0},{TOP}V{bottom}H{x1}"/><text class="atitle" x="{:.1}" y="{:.1}" text-anchor="middle" font-size="{FONT}">{}</text>"#,
            (x0 + x1) / 2.0,
            bottom + 38.0,
            esc(&self.x_title)
        );
        let items: Vec<LegendItem> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| LegendItem {
                label: s.name.clone(),
                swatch: format!(
                    r#"<rect x="2" y="-7" width="26" height="14" fill="url(#{}-p{i})" stroke="{}"/>"#,
                    esc(&self.id),
                    color(i)
                ),
            })
            .collect();
        let (leg, leg_h) = legend(&items, bottom + 50.0);
        let defs: String = (0..ns)
            .map(|i| pattern_def(&format!("{}-p{i}", esc(&self.id)), i))
            .collect();
        let height = bottom + 50.0 + leg_h + 8.0;
        let mut out = open(&self.id, &self.title, height, bars, &defs);
        out.push_str(&body);
        out.push_str(&leg);
        out.push_str("</svg>");
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> BarChart {
        BarChart {
            id: "b".into(),
            title: "syscalls".into(),
            x_title: "server".into(),
            y: Axis::linear("syscalls per request"),
            groups: vec!["nginx".into(), "flint".into()],
            series: vec![
                BarSeries {
                    name: "http1.0".into(),
                    values: vec![Some(12.0), Some(8.0)],
                    ranges: vec![],
                },
                BarSeries {
                    name: "pipelined".into(),
                    values: vec![None, Some(1.5)],
                    ranges: vec![None, Some((1.0, 2.0))],
                },
            ],
        }
    }

    #[test]
    fn missing_values_draw_no_bar_and_ranges_draw_whiskers() {
        let svg = chart().svg().unwrap();
        assert_eq!(svg.matches(r#"<rect class="bar""#).count(), 3);
        assert!(svg.contains(r#"data-points="3""#));
        assert_eq!(svg.matches(r#"class="whisker""#).count(), 1);
        // Each series has its own fill pattern, declared once.
        assert_eq!(svg.matches("<pattern id=\"b-p").count(), 2);
    }

    /// A bar's value label sits above its whisker's cap, not across the whisker.
    #[test]
    fn a_value_label_clears_its_whisker() {
        let svg = chart().svg().unwrap();
        let attr = |tag: &str, name: &str| -> f64 {
            let at = &svg[svg.find(tag).unwrap()..];
            let at = &at[at.find(&format!(r#"{name}=""#)).unwrap() + name.len() + 2..];
            at[..at.find('"').unwrap()].parse().unwrap()
        };
        // The whisker's top: the end of its vertical line, `M x,ylo V yhi`.
        let whisker = &svg[svg.find(r#"class="whisker" d="M"#).unwrap()..];
        let vline = &whisker[whisker.find('V').unwrap() + 1..];
        let top: f64 = vline[..vline.find('M').unwrap()].parse().unwrap();
        // The label of that bar: the last one drawn (flint's pipelined bar).
        let label = &svg[svg.rfind(r#"<text class="vlabel""#).unwrap()..];
        let baseline = attr(label, "y");
        let font = attr(label, "font-size");
        assert!(
            baseline < top,
            "label baseline {baseline} under whisker top {top}"
        );
        assert!(baseline + font * 0.25 <= top, "descenders reach the cap");
    }

    #[test]
    fn no_values_no_chart() {
        let mut c = chart();
        for s in &mut c.series {
            s.values = vec![None, Some(f64::NAN)];
        }
        assert!(c.svg().is_none());
    }
}
