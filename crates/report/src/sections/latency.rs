//! Latency as HdrHistogram draws it, and the run second by second.
//!
//! The percentile spectrum puts the tail where it can be seen: x is log10(1/(1-p)), so 90 %,
//! 99 %, 99.9 % are equally spaced, and a stall that touches 0.1 % of requests is a visible step
//! instead of a pixel at the right edge. The time series shows what averages hide: warm-up,
//! stalls, and throughput that sags while latency climbs.

use super::{benches, compares};
use crate::chart::{Axis, LineChart, Series, Ticks};
use crate::html::{figures, Page};
use crate::input::{spectrum as points, timeseries, Input, Second};
use results::CompareTarget;

/// The round of a compare target with the median requests/s that has a spectrum: the typical
/// round, not the best or the worst.
fn median_round_spectrum(target: &CompareTarget) -> Vec<(f64, f64)> {
    let mut rounds: Vec<(f64, Vec<(f64, f64)>)> = target
        .rounds
        .iter()
        .map(|r| (r.requests_per_s, points(&r.response_spectrum)))
        .filter(|(_, pts)| !pts.is_empty())
        .collect();
    rounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mid = rounds.len() / 2;
    rounds.into_iter().nth(mid).map(|r| r.1).unwrap_or_default()
}

/// One chart per `(title, y axis title, series)` on the same x axis; a chart with nothing to
/// draw is left out.
fn line_charts(page: &mut Page, x: &Axis, charts: Vec<(&str, &str, Vec<Series>)>) -> Vec<String> {
    let charts = charts
        .into_iter()
        .map(|(title, y, series)| (title, Axis::linear(y), series))
        .collect();
    charts_with_axes(page, x, charts)
}

fn charts_with_axes(
    page: &mut Page,
    x: &Axis,
    charts: Vec<(&str, Axis, Vec<Series>)>,
) -> Vec<String> {
    charts
        .into_iter()
        .filter_map(|(title, y, series)| {
            LineChart {
                id: page.chart_id(),
                title: title.into(),
                x: x.clone(),
                y,
                series,
            }
            .svg()
        })
        .collect()
}

pub fn spectrum(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let mut response: Vec<Series> = benches(inputs)
        .map(|(i, b)| Series {
            name: i.label.clone(),
            points: points(&b.summary.response_spectrum),
        })
        .collect();
    for (i, c) in compares(inputs) {
        for t in &c.targets {
            response.push(Series {
                name: format!("{} · {}", i.label, t.name),
                points: median_round_spectrum(t),
            });
        }
    }
    // A run whose pages are its requests (one-file pages, each as long as its response) would
    // draw the response chart again: only the runs where page time says something more.
    let pages: Vec<Series> = benches(inputs)
        .filter(|(_, b)| {
            let s = &b.summary;
            s.pages != s.requests || s.page_spectrum != s.response_spectrum
        })
        .map(|(i, b)| Series {
            name: i.label.clone(),
            points: points(&b.summary.page_spectrum),
        })
        .collect();
    // Latency on a log axis too: on a linear one a tail of seconds flattens every percentile
    // below it onto the floor.
    let log_ms = |title: &str| Axis::log(title, Ticks::Number);
    let svgs = charts_with_axes(
        page,
        &Axis::nines("percentile (log scale of 1/(1−p))"),
        vec![
            (
                "Response time by percentile",
                log_ms("response time (ms, log scale)"),
                response,
            ),
            (
                "Page time by percentile",
                log_ms("page time (ms, log scale)"),
                pages,
            ),
        ],
    );
    figures(
        &svgs,
        "Each point: that share of requests (pages) took at most this long. Compare results show each target's median round. The maximum (100 %) lies at infinity on this axis and is in the summary instead.",
    )
}

pub fn over_time(page: &mut Page, inputs: &[Input<'_>]) -> String {
    let runs: Vec<(String, Vec<Second>)> = benches(inputs)
        .map(|(i, b)| (i.label.clone(), timeseries(&b.timeseries)))
        .collect();
    if runs.iter().all(|r| r.1.is_empty()) {
        return String::new();
    }
    let line = |pick: &dyn Fn(&Second) -> Option<f64>| -> Vec<Series> {
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
        "One point per second of the measured window (warm-up excluded), at the second's end; \
         each rate is that second's count over its own length, so a last, partial second (and \
         a -n run shorter than a second) reads as the summary does.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::{SpectrumPoint, Summary};

    #[test]
    fn compare_spectrum_comes_from_the_median_round() {
        let round = |rps: f64, ms: f64| Summary {
            requests_per_s: rps,
            response_spectrum: vec![SpectrumPoint {
                percentile: 50.0,
                ms,
            }],
            ..Summary::default()
        };
        let t = CompareTarget {
            rounds: vec![round(300.0, 3.0), round(100.0, 1.0), round(200.0, 2.0)],
            ..CompareTarget::default()
        };
        assert_eq!(median_round_spectrum(&t)[0].1, 2.0);
    }
}
