//! The headline numbers: one row per bench result; per compare result, one column per target
//! with the median across rounds, the min–max noise, and the ratio to the first target.

use super::{benches, compares, https};
use crate::chart::{Axis, BarChart, BarSeries};
use crate::html::{figures, table, Col, Page};
use crate::input::{latency, Input};
use crate::text::{self, esc};
use results::{CompareResult, CompareTarget, LatencySummary, Summary, TargetStatus};
use std::fmt::Write;

pub fn render(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut out = bench_table(inputs);
    out.push_str(&https::summary(inputs));
    for (input, c) in compares(inputs) {
        out.push_str(&compare(page, input, c));
    }
    out
}

fn errors_cell(n: u64) -> String {
    if n > 0 {
        format!(r#"<span class="bad">{}</span>"#, text::count(n as f64))
    } else {
        text::count(0.0)
    }
}

/// A response latency of the summary: the open loop's corrected figure (from the intended
/// start), with the uncorrected one (from the actual send) beneath it.
fn latency_cell(sm: &Summary, pick: fn(&LatencySummary) -> f64) -> String {
    let mut cell = text::opt(latency(&sm.response_ms, pick));
    if let Some(u) = sm
        .response_uncorrected_ms
        .as_ref()
        .and_then(|u| latency(u, pick))
    {
        let _ = write!(
            cell,
            r#"<small class="rng">{} uncorrected</small>"#,
            text::num(u)
        );
    }
    cell
}

fn bench_table(inputs: &[Input<'_>]) -> String {
    let rows: Vec<Vec<String>> = benches(inputs)
        .map(|(i, b)| {
            let sm = &b.summary;
            let mut name = format!(r#"<span class="file">{}</span>"#, esc(&i.label));
            if b.interrupted {
                name.push_str(r#" <small class="bad">interrupted</small>"#);
            } else if b.stopped_early.is_some() {
                name.push_str(r#" <small class="bad">stopped early</small>"#);
            }
            let clients = match (b.config.concurrency, sm.clients) {
                (0, 0) => "–".into(),
                (0, c) | (c, _) => text::count(c as f64),
            };
            let url = &b.config.target.url;
            vec![
                name,
                if url.is_empty() {
                    "–".into()
                } else {
                    esc(url)
                },
                esc(b.config.http.name()),
                clients,
                text::num(sm.requests_per_s),
                text::num(sm.pages_per_s),
                text::num(sm.throughput_bytes_per_s / 1e6),
                latency_cell(sm, |l| l.p50),
                latency_cell(sm, |l| l.p99),
                errors_cell(sm.errors),
                text::num(sm.duration_s),
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
    out.push_str(r#"<p class="note">Latency: response time of one file (connect to last byte), milliseconds; in an open loop from the request's intended start, with beneath it the uncorrected time from its actual send (its send lag is under Load, statuses, errors and URLs). MB/s: data moved per second of the window by all Webchildren together, the heads and bodies of the counted responses in 10^6 bytes (HTTP/2 and chunk framing, and the bytes of failed or unfinished responses, are read but not in it).</p>"#);
    out
}

/// A compare figure: where it is in a round, how it is shown, and whether more is better.
struct Figure {
    key: &'static str,
    /// The figure in one round's summary; `None` when the round did not measure it.
    in_round: fn(&Summary) -> Option<f64>,
    title: &'static str,
    scale: f64,
    higher_is_better: bool,
}

const FIGURES: [Figure; 5] = [
    Figure {
        key: "requests_per_s",
        in_round: |s| Some(s.requests_per_s),
        title: "Requests/s",
        scale: 1.0,
        higher_is_better: true,
    },
    Figure {
        key: "throughput_bytes_per_s",
        in_round: |s| Some(s.throughput_bytes_per_s),
        title: "MB/s",
        scale: 1e-6,
        higher_is_better: true,
    },
    Figure {
        key: "response_p50_ms",
        in_round: |s| latency(&s.response_ms, |l| l.p50),
        title: "p50 latency, ms",
        scale: 1.0,
        higher_is_better: false,
    },
    Figure {
        key: "response_p99_ms",
        in_round: |s| latency(&s.response_ms, |l| l.p99),
        title: "p99 latency, ms",
        scale: 1.0,
        higher_is_better: false,
    },
    Figure {
        key: "errors",
        in_round: |s| Some(s.errors as f64),
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
fn stat(target: &CompareTarget, fig: &Figure) -> Option<Stat> {
    let given = target.figures.get(fig.key);
    if let Some((g, median)) = given.and_then(|g| Some((g, g.median?))) {
        return Some(Stat {
            median,
            min: g.min.unwrap_or(median),
            max: g.max.unwrap_or(median),
            ratio: g.ratio,
        });
    }
    let mut xs: Vec<f64> = target
        .rounds
        .iter()
        .filter_map(fig.in_round)
        .filter(|x| x.is_finite())
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

/// Pages named in a compare's note; "What ran where" lists them all.
const PAGES_NAMED: usize = 8;

fn compare(page: &mut Page, input: &Input<'_>, c: &CompareResult) -> String {
    let targets = &c.targets;
    if targets.is_empty() {
        return String::new();
    }
    let name = |t: &CompareTarget| {
        if t.name.is_empty() {
            "?".to_owned()
        } else {
            t.name.clone()
        }
    };
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
        let mut cell = match t.status {
            TargetStatus::Ok => "ok".to_owned(),
            TargetStatus::Failed => r#"<span class="bad">failed</span>"#.to_owned(),
        };
        if let Some(e) = &t.error {
            let _ = write!(cell, r#"<span class="rng">{}</span>"#, esc(e));
        }
        let _ = write!(
            cell,
            r#"<span class="rng">{}</span>"#,
            esc(t.url.as_deref().unwrap_or(""))
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
    let rounds = match c.options.rounds {
        0 => "rounds".to_owned(),
        n => format!("{} rounds", text::count(n as f64)),
    };
    // What every target served: a ratio means little without it.
    let fetched = if c.workload.pages.is_empty() {
        String::new()
    } else {
        format!(
            r#" Fetched from each: <span class="file">{}</span>."#,
            esc(&c.workload.describe(PAGES_NAMED))
        )
    };
    let mut out = format!(
        r#"<h3>Compare: <span class="file">{}</span></h3><p class="note">Targets run in turn, A B A B…, {rounds}.{fetched} Each cell: the median across rounds, × its ratio to the first target ({}), and [min – max] across rounds.</p>"#,
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

    #[test]
    fn compare_figures_fall_back_to_rounds() {
        let round = |rps: f64| Summary {
            requests_per_s: rps,
            ..Summary::default()
        };
        let t = CompareTarget {
            rounds: vec![round(3.0), round(1.0), round(2.0), round(10.0)],
            ..CompareTarget::default()
        };
        let st = stat(&t, &FIGURES[0]).unwrap();
        assert_eq!((st.median, st.min, st.max), (2.5, 1.0, 10.0));
        assert!(stat(&CompareTarget::default(), &FIGURES[0]).is_none());
        // A latency no round measured is not a zero.
        assert!(stat(&t, &FIGURES[2]).is_none());
    }
}
