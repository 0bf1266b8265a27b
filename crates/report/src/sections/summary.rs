//! The headline numbers: one row per bench result; per compare result, one column per target
//! with the median across rounds, the min–max noise, and the ratio to the first target.

use super::{of_kind, Kind};
use crate::chart::{Axis, BarChart, BarSeries};
use crate::html::{figures, table, Col, Page};
use crate::input::{arr, f, s, Input};
use crate::text::{self, esc};
use serde_json::Value;
use std::fmt::Write;

pub fn render(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut out = bench_table(inputs);
    for input in of_kind(inputs, Kind::Compare) {
        out.push_str(&compare(page, input));
    }
    out
}

fn errors_cell(n: Option<f64>) -> String {
    match n {
        Some(e) if e > 0.0 => format!(r#"<span class="bad">{}</span>"#, text::count(e)),
        Some(e) => text::count(e),
        None => "–".into(),
    }
}

fn bench_table(inputs: &[Input<'_>]) -> String {
    let rows: Vec<Vec<String>> = of_kind(inputs, Kind::Bench)
        .map(|i| {
            let v = i.v;
            let sm = |k: &str| f(v, &["summary", k]);
            let mut name = format!(r#"<span class="file">{}</span>"#, esc(&i.label));
            if v.get("interrupted").and_then(Value::as_bool) == Some(true) {
                name.push_str(r#" <small class="bad">interrupted</small>"#);
            }
            vec![
                name,
                esc(s(v, &["config", "target", "url"]).unwrap_or("–")),
                esc(s(v, &["config", "http"]).unwrap_or("–")),
                f(v, &["config", "concurrency"])
                    .or(sm("clients"))
                    .map_or("–".into(), text::count),
                text::opt(sm("requests_per_s")),
                text::opt(sm("pages_per_s")),
                text::opt(sm("throughput_bytes_per_s").map(|b| b / 1e6)),
                text::opt(f(v, &["summary", "response_ms", "p50"])),
                text::opt(f(v, &["summary", "response_ms", "p99"])),
                errors_cell(sm("errors")),
                text::opt(sm("duration_s")),
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let cols = [
        Col("Result", false),
        Col("Target", false),
        Col("HTTP", false),
        Col("Clients", true),
        Col("Requests/s", true),
        Col("Pages/s", true),
        Col("MB/s", true),
        Col("p50 ms", true),
        Col("p99 ms", true),
        Col("Errors", true),
        Col("Window s", true),
    ];
    let mut out = String::from("<h3>Benchmarks</h3>");
    out.push_str(&table(&cols, &rows, "summary"));
    out.push_str(r#"<p class="note">Latency: response time of one file (connect to last byte), milliseconds. MB/s counts every byte read, headers included.</p>"#);
    out
}

/// A compare figure: where it is in a round, how it is shown, and whether more is better.
struct Figure {
    key: &'static str,
    round_path: &'static [&'static str],
    title: &'static str,
    scale: f64,
    higher_is_better: bool,
}

const FIGURES: [Figure; 5] = [
    Figure {
        key: "requests_per_s",
        round_path: &["requests_per_s"],
        title: "Requests/s",
        scale: 1.0,
        higher_is_better: true,
    },
    Figure {
        key: "throughput_bytes_per_s",
        round_path: &["throughput_bytes_per_s"],
        title: "MB/s",
        scale: 1e-6,
        higher_is_better: true,
    },
    Figure {
        key: "response_p50_ms",
        round_path: &["response_ms", "p50"],
        title: "p50 latency, ms",
        scale: 1.0,
        higher_is_better: false,
    },
    Figure {
        key: "response_p99_ms",
        round_path: &["response_ms", "p99"],
        title: "p99 latency, ms",
        scale: 1.0,
        higher_is_better: false,
    },
    Figure {
        key: "errors",
        round_path: &["errors"],
        title: "Errors",
        scale: 1.0,
        higher_is_better: false,
    },
];

/// Median, min, max and ratio of one figure for one target.
#[derive(Debug, Clone, Copy)]
struct Stat {
    median: f64,
    min: f64,
    max: f64,
    ratio: Option<f64>,
}

/// The target's `figures[key]` as written, or computed from its rounds when a file lacks it.
fn stat(target: &Value, fig: &Figure) -> Option<Stat> {
    let given = target.get("figures").and_then(|g| g.get(fig.key));
    if let Some(median) = given.and_then(|g| f(g, &["median"])) {
        let g = given?;
        return Some(Stat {
            median,
            min: f(g, &["min"]).unwrap_or(median),
            max: f(g, &["max"]).unwrap_or(median),
            ratio: f(g, &["ratio"]),
        });
    }
    let mut xs: Vec<f64> = arr(target, &["rounds"])
        .iter()
        .filter_map(|r| f(r, fig.round_path))
        .collect();
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let median = if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    };
    Some(Stat {
        median,
        min: xs[0],
        max: xs[n - 1],
        ratio: None,
    })
}

fn compare(page: &mut Page, input: &Input<'_>) -> String {
    let targets = arr(input.v, &["targets"]);
    if targets.is_empty() {
        return String::new();
    }
    let name = |t: &Value| s(t, &["name"]).unwrap_or("?").to_owned();
    let stats: Vec<Vec<Option<Stat>>> = targets
        .iter()
        .map(|t| FIGURES.iter().map(|fig| stat(t, fig)).collect())
        .collect();
    let first = &stats[0];

    let head: Vec<String> = targets.iter().map(name).collect();
    let mut cols = vec![Col("", false)];
    cols.extend(head.iter().map(|h| Col(h.as_str(), true)));
    let mut rows = Vec::new();
    let mut status = vec![r#"status<small class="rng">URL</small>"#.to_owned()];
    for t in targets {
        let st = s(t, &["status"]).unwrap_or("–");
        let mut cell = if st == "ok" {
            esc(st)
        } else {
            format!(r#"<span class="bad">{}</span>"#, esc(st))
        };
        if let Some(e) = s(t, &["error"]) {
            let _ = write!(cell, r#"<span class="rng">{}</span>"#, esc(e));
        }
        let _ = write!(
            cell,
            r#"<span class="rng">{}</span>"#,
            esc(s(t, &["url"]).unwrap_or(""))
        );
        status.push(cell);
    }
    rows.push(status);
    for (k, fig) in FIGURES.iter().enumerate() {
        let better = if fig.higher_is_better {
            "higher"
        } else {
            "lower"
        };
        let mut row = vec![format!(
            "{}<small class=\"rng\">{better} is better</small>",
            fig.title
        )];
        for st in &stats {
            row.push(match st[k] {
                None => "–".into(),
                Some(x) => {
                    let ratio = x.ratio.or_else(|| {
                        first[k]
                            .filter(|b| b.median != 0.0)
                            .map(|b| x.median / b.median)
                    });
                    let num = |v: f64| {
                        if fig.key == "errors" {
                            text::count(v)
                        } else {
                            text::num(v * fig.scale)
                        }
                    };
                    format!(
                        "{}{}<span class=\"rng\">[{} – {}]</span>",
                        num(x.median),
                        ratio.map_or(String::new(), |r| format!(
                            " <small>×{}</small>",
                            text::num(r)
                        )),
                        num(x.min),
                        num(x.max)
                    )
                }
            });
        }
        rows.push(row);
    }
    let rounds = f(input.v, &["options", "rounds"])
        .map(|r| format!("{} rounds", text::count(r)))
        .unwrap_or_else(|| "rounds".into());
    let mut out = format!(
        r#"<h3>Compare: <span class="file">{}</span></h3><p class="note">Targets run in turn, A B A B…, {rounds}. Each cell: the median across rounds, × its ratio to the first target ({}), and [min – max] across rounds.</p>"#,
        esc(&input.label),
        esc(&head[0])
    );
    out.push_str(&table(&cols, &rows, "compare"));

    let charts: Vec<String> = [
        (0, "Requests/s by target", "requests per second"),
        (3, "p99 latency by target", "p99 latency (ms)"),
    ]
    .iter()
    .filter_map(|&(k, title, y)| {
        BarChart {
            id: page.chart_id(),
            title: title.into(),
            x_title: "target (bar: median; whisker: min – max across rounds)".into(),
            y: Axis::linear(y),
            groups: head.clone(),
            series: vec![BarSeries {
                name: FIGURES[k].title.into(),
                values: stats.iter().map(|st| st[k].map(|x| x.median)).collect(),
                ranges: stats
                    .iter()
                    .map(|st| st[k].map(|x| (x.min, x.max)))
                    .collect(),
            }],
        }
        .svg()
    })
    .collect();
    out.push_str(&figures(&charts, ""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compare_figures_fall_back_to_rounds() {
        let t = json!({"rounds": [{"requests_per_s": 3.0}, {"requests_per_s": 1.0},
                                  {"requests_per_s": 2.0}, {"requests_per_s": 10.0}]});
        let st = stat(&t, &FIGURES[0]).unwrap();
        assert_eq!((st.median, st.min, st.max), (2.5, 1.0, 10.0));
        assert!(stat(&json!({}), &FIGURES[0]).is_none());
    }
}
