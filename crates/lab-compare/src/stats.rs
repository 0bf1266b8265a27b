//! The statistics of a comparison: medians, spreads and ratios over rounds.
//!
//! Rounds are few (3 by default), so the median is the figure to compare: one round disturbed by
//! a cron job or a page-cache miss moves the mean but not the median. Min and max are kept next to
//! it so the reader sees the noise the median hides; a ratio of 0.97x with a min-max spread of 10 %
//! says "no difference". Pure functions, so every rule here has a unit test.

use results::Summary;

/// Median, min and max of one figure over a target's rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median (of an even count, the mean of the middle two).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

/// The median of `values` (the mean of the middle two for an even count); `None` when there is
/// no finite value. Non-finite values (a figure a round could not compute) are left out.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// Median, min and max of the finite `values`; `None` when there are none.
pub fn spread(values: &[f64]) -> Option<Spread> {
    let median = median(values)?;
    let finite = values.iter().copied().filter(|x| x.is_finite());
    Some(Spread {
        median,
        min: finite.clone().fold(f64::INFINITY, f64::min),
        max: finite.fold(f64::NEG_INFINITY, f64::max),
    })
}

/// `median / baseline`: how a target compares with the first one. `None` when either is unknown
/// (the first target failed, or this one measured nothing) or the baseline is 0 (no ratio to 0
/// errors means anything).
pub fn ratio(median: Option<f64>, baseline: Option<f64>) -> Option<f64> {
    match (median, baseline) {
        (Some(m), Some(b)) if b != 0.0 && b.is_finite() && m.is_finite() => Some(m / b),
        _ => None,
    }
}

/// The figures a comparison reports, each read from a round's bench JSON `summary` object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Complete responses per second (`requests_per_s`).
    RequestsPerS,
    /// Data moved per second of the window, bytes (`throughput_bytes_per_s`).
    ThroughputBytesPerS,
    /// The median response time, ms (`response_ms.p50`).
    ResponseP50Ms,
    /// The 99th percentile response time, ms (`response_ms.p99`).
    ResponseP99Ms,
    /// Failed requests of every kind (`errors`).
    Errors,
}

impl Figure {
    /// Every figure, in the order the table gives them.
    pub const ALL: [Figure; 5] = [
        Figure::RequestsPerS,
        Figure::ThroughputBytesPerS,
        Figure::ResponseP50Ms,
        Figure::ResponseP99Ms,
        Figure::Errors,
    ];

    /// The key in the compare JSON `figures` object (named with its unit, like the bench JSON).
    pub fn key(self) -> &'static str {
        match self {
            Figure::RequestsPerS => "requests_per_s",
            Figure::ThroughputBytesPerS => "throughput_bytes_per_s",
            Figure::ResponseP50Ms => "response_p50_ms",
            Figure::ResponseP99Ms => "response_p99_ms",
            Figure::Errors => "errors",
        }
    }

    /// The row label of the text table, with the unit it is printed in.
    pub fn label(self) -> &'static str {
        match self {
            Figure::RequestsPerS => "requests/s",
            Figure::ThroughputBytesPerS => "MB/s",
            Figure::ResponseP50Ms => "response p50 ms",
            Figure::ResponseP99Ms => "response p99 ms",
            Figure::Errors => "errors",
        }
    }

    /// The value as the table prints it (throughput in MB/s, 10^6 bytes).
    pub fn display(self, value: f64) -> String {
        match self {
            Figure::RequestsPerS => format!("{value:.1}"),
            Figure::ThroughputBytesPerS => format!("{:.2}", value / 1e6),
            Figure::ResponseP50Ms | Figure::ResponseP99Ms => format!("{value:.3}"),
            Figure::Errors => format!("{value:.0}"),
        }
    }

    /// This figure in a bench `summary`.
    pub fn of(self, summary: &Summary) -> f64 {
        match self {
            Figure::RequestsPerS => summary.requests_per_s,
            Figure::ThroughputBytesPerS => summary.throughput_bytes_per_s,
            Figure::ResponseP50Ms => summary.response_ms.p50,
            Figure::ResponseP99Ms => summary.response_ms.p99,
            Figure::Errors => summary.errors as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn median_of_odd_count_is_the_middle_value() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[5.0]), Some(5.0));
    }

    #[test]
    fn median_of_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[10.0, 20.0]), Some(15.0));
    }

    #[test]
    fn median_ignores_one_outlier_round() {
        assert_eq!(median(&[100.0, 101.0, 5.0]), Some(100.0));
    }

    #[test]
    fn median_of_nothing_is_none_and_nan_is_left_out() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN]), None);
        assert_eq!(median(&[f64::NAN, 2.0, 4.0]), Some(3.0));
    }

    #[test]
    fn spread_gives_median_min_and_max() {
        let s = spread(&[2.0, 9.0, 4.0, 1.0]).unwrap();
        assert_eq!(
            s,
            Spread {
                median: 3.0,
                min: 1.0,
                max: 9.0
            }
        );
        assert_eq!(spread(&[]), None);
    }

    #[test]
    fn ratio_is_relative_to_the_first_target() {
        assert_eq!(ratio(Some(87.0), Some(100.0)), Some(0.87));
        assert_eq!(ratio(Some(100.0), Some(100.0)), Some(1.0));
    }

    #[test]
    fn ratio_is_none_when_the_baseline_failed_or_is_zero() {
        assert_eq!(ratio(Some(5.0), None), None);
        assert_eq!(ratio(Some(5.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(5.0)), None);
    }

    #[test]
    fn figures_are_read_from_the_bench_summary() {
        let summary: Summary = serde_json::from_value(json!({
            "requests_per_s": 1000.5,
            "throughput_bytes_per_s": 2.5e6,
            "errors": 3,
            "response_ms": {"p50": 0.25, "p99": 1.5},
        }))
        .expect("a lenient summary");
        let got: Vec<_> = Figure::ALL.iter().map(|f| f.of(&summary)).collect();
        assert_eq!(got, [1000.5, 2.5e6, 0.25, 1.5, 3.0]);
        assert_eq!(Figure::ThroughputBytesPerS.display(2.5e6), "2.50");
    }
}
