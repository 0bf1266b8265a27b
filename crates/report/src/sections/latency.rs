//! Latency as HdrHistogram draws it, and the run second by second.
//!
//! The percentile spectrum puts the tail where it can be seen: x is log10(1/(1-p)), so 90 %,
//! 99 %, 99.9 % are equally spaced, and a stall that touches 0.1 % of requests is a visible step
//! instead of a pixel at the right edge. The time series shows what averages hide: warm-up,
//! stalls, and throughput that sags while latency climbs.

use super::{of_kind, Kind};
use crate::chart::{Axis, LineChart, Series};
use crate::html::{figures, Page};
use crate::input::{arr, at, f, s, spectrum as points, timeseries, Input};
use serde_json::Value;

/// A bench result's spectrum: in `summary` as flint writes it, or at the top level.
fn bench_spectrum(v: &Value, key: &str) -> Vec<(f64, f64)> {
    at(v, &["summary", key])
        .or_else(|| v.get(key))
        .map(points)
        .unwrap_or_default()
}

/// The round of a compare target with the median requests/s that has a spectrum: the typical
/// round, not the best or the worst.
fn median_round_spectrum(target: &Value) -> Vec<(f64, f64)> {
    let mut rounds: Vec<(f64, Vec<(f64, f64)>)> = arr(target, &["rounds"])
        .iter()
        .map(|r| {
            let pts = r.get("response_spectrum").map(points).unwrap_or_default();
            (f(r, &["requests_per_s"]).unwrap_or(0.0), pts)
        })
        .filter(|(_, pts)| !pts.is_empty())
        .collect();
    rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mid = rounds.len() / 2;
    rounds.into_iter().nth(mid).map(|r| r.1).unwrap_or_default()
}

/// One chart per `(title, y axis title, series)` on the same x axis; a chart with nothing to
/// draw is left out.
fn line_charts(page: &mut Page, x: &Axis, charts: Vec<(&str, &str, Vec<Series>)>) -> Vec<String> {
    charts
        .into_iter()
        .filter_map(|(title, y, series)| {
            LineChart {
                id: page.chart_id(),
                title: title.into(),
                x: x.clone(),
                y: Axis::linear(y),
                series,
            }
            .svg()
        })
        .collect()
}

pub fn spectrum(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut response: Vec<Series> = of_kind(inputs, Kind::Bench)
        .map(|i| Series {
            name: i.label.clone(),
            points: bench_spectrum(i.v, "response_spectrum"),
        })
        .collect();
    for i in of_kind(inputs, Kind::Compare) {
        for t in arr(i.v, &["targets"]) {
            response.push(Series {
                name: format!("{} · {}", i.label, s(t, &["name"]).unwrap_or("?")),
                points: median_round_spectrum(t),
            });
        }
    }
    let pages: Vec<Series> = of_kind(inputs, Kind::Bench)
        .map(|i| Series {
            name: i.label.clone(),
            points: bench_spectrum(i.v, "page_spectrum"),
        })
        .collect();
    let svgs = line_charts(
        page,
        &Axis::nines("percentile (log scale of 1/(1−p))"),
        vec![
            (
                "Response time by percentile",
                "response time (ms)",
                response,
            ),
            ("Page time by percentile", "page time (ms)", pages),
        ],
    );
    figures(
        &svgs,
        "Each point: that share of requests (pages) took at most this long. Compare results show each target's median round. The maximum (100 %) lies at infinity on this axis and is in the summary instead.",
    )
}

pub fn over_time(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let runs: Vec<(String, Vec<crate::input::Second>)> = of_kind(inputs, Kind::Bench)
        .map(|i| (i.label.clone(), timeseries(i.v)))
        .collect();
    if runs.iter().all(|r| r.1.is_empty()) {
        return String::new();
    }
    let line = |pick: &dyn Fn(&crate::input::Second) -> Option<f64>| -> Vec<Series> {
        runs.iter()
            .map(|(name, ts)| Series {
                name: name.clone(),
                points: ts.iter().filter_map(|t| Some((t.t_s, pick(t)?))).collect(),
            })
            .collect()
    };
    let mut charts = vec![
        (
            "Throughput over time",
            "requests per second",
            line(&|t| Some(t.requests_per_s)),
        ),
        (
            "p99 latency over time",
            "p99 response time (ms)",
            line(&|t| t.p99_ms),
        ),
    ];
    if runs.iter().flat_map(|r| &r.1).any(|t| t.errors_per_s > 0.0) {
        charts.push((
            "Errors over time",
            "errors per second",
            line(&|t| Some(t.errors_per_s)),
        ));
    }
    let svgs = line_charts(
        page,
        &Axis::linear("time into the measured window (s)"),
        charts,
    );
    figures(
        &svgs,
        "One point per second of the measured window (warm-up excluded).",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compare_spectrum_comes_from_the_median_round() {
        let round = |rps: f64, ms: f64| json!({"requests_per_s": rps, "response_spectrum": [{"percentile": 50.0, "ms": ms}]});
        let t = json!({"rounds": [round(300.0, 3.0), round(100.0, 1.0), round(200.0, 2.0)]});
        assert_eq!(median_round_spectrum(&t)[0].1, 2.0);
    }
}
