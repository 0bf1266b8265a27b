//! Latency figures as results print them: milliseconds, from HDR histograms.

use serde::{Deserialize, Serialize};

/// A latency distribution in milliseconds (all 0 when `count` is 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LatencySummary {
    /// Samples recorded.
    pub count: u64,
    /// The shortest, ms.
    pub min: f64,
    /// The mean, ms.
    pub mean: f64,
    /// The longest, ms.
    pub max: f64,
    /// The median, ms.
    pub p50: f64,
    /// The 90th percentile, ms.
    pub p90: f64,
    /// Absent from results written before it was added (read as 0).
    pub p95: f64,
    /// The 99th percentile, ms.
    pub p99: f64,
    /// The 99.9th percentile, ms.
    pub p999: f64,
}

/// One point of a percentile spectrum, as HdrHistogram plots it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SpectrumPoint {
    /// 0 to 100.
    pub percentile: f64,
    /// The latency at that percentile, ms.
    pub ms: f64,
}

/// Exact extremes and mean in milliseconds, `None` when nothing was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MinMeanMax {
    /// The shortest, ms.
    pub min: Option<f64>,
    /// The mean, ms.
    pub mean: Option<f64>,
    /// The longest, ms.
    pub max: Option<f64>,
}

impl MinMeanMax {
    /// From µs counters over `n` samples.
    pub fn from_us(n: u64, min_us: u64, sum_us: u64, max_us: u64) -> Self {
        if n == 0 {
            return MinMeanMax::default();
        }
        MinMeanMax {
            min: Some(min_us as f64 / 1e3),
            mean: Some(sum_us as f64 / 1e3 / n as f64),
            max: Some(max_us as f64 / 1e3),
        }
    }
}
