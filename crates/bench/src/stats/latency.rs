//! A latency distribution: an HDR histogram in µs, serialized as its V2 encoding's base64.

use super::{LatencySummary, MAX_LATENCY_US};
use base64::prelude::{Engine as _, BASE64_STANDARD};
use hdrhistogram::serialization::{
    Deserializer as HistDeserializer, Serializer as _, V2Serializer,
};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A latency distribution in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Latency {
    pub(super) hist: Histogram<u64>,
}

/// The base64 of the histogram's V2 encoding, a string in JSON.
impl Serialize for Latency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::new();
        V2Serializer::new()
            .serialize(&self.hist, &mut bytes)
            .map_err(|e| serde::ser::Error::custom(format!("histogram: {e:?}")))?;
        s.serialize_str(&BASE64_STANDARD.encode(&bytes))
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let text = String::deserialize(d)?;
        let bytes = BASE64_STANDARD
            .decode(text)
            .map_err(|e| D::Error::custom(format!("histogram: not base64: {e}")))?;
        let hist: Histogram<u64> = HistDeserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| D::Error::custom(format!("histogram: not a V2 histogram: {e:?}")))?;
        if hist.low() != 1 || hist.high() != MAX_LATENCY_US {
            return Err(D::Error::custom(format!(
                "histogram: bounds {}..{} µs, expected 1..{MAX_LATENCY_US}",
                hist.low(),
                hist.high()
            )));
        }
        Ok(Latency { hist })
    }
}

impl Latency {
    /// `sigfig`: 3 for run-wide distributions, 2 for per-page and per-URL ones (a tenth the memory).
    pub fn new(sigfig: u8) -> Self {
        let hist = Histogram::new_with_bounds(1, MAX_LATENCY_US, sigfig)
            .expect("static histogram bounds are valid");
        Latency { hist }
    }

    /// Records one value, clamped to the histogram's range (1 µs to `MAX_LATENCY_US`), so that
    /// nothing recorded is ever lost.
    #[inline]
    pub fn record(&mut self, d: Duration) {
        self.record_us(d.as_micros().min(u128::from(MAX_LATENCY_US)) as u64);
    }

    /// Records one value in µs, clamped as [`Latency::record`]'s; the engine's call, with no
    /// `Duration` to build.
    #[inline]
    pub fn record_us(&mut self, us: u64) {
        self.hist.saturating_record(us.clamp(1, MAX_LATENCY_US));
    }

    /// `n` values of `us` at once.
    pub fn record_n_us(&mut self, us: u64, n: u64) {
        self.hist
            .saturating_record_n(us.clamp(1, MAX_LATENCY_US), n);
    }

    /// Adds another histogram's values (`add`, which handles another precision itself); value
    /// by value only if `add` refuses a value out of this one's range.
    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides (both built by `new`), so `add` does not fail; the
        // fallback is a safety net for a histogram of wider range.
        if self.hist.add(&other.hist).is_err() {
            for v in other.hist.iter_recorded() {
                self.hist
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The HDR histogram itself, for the reports' percentiles and the JSON's encoding.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The percentile spectrum HdrHistogram plots, as `(percentile, ms)`: percentiles 0, 50, 75,
    /// 87.5, ... (each halving what is left above) while the histogram holds enough values to
    /// tell them apart (1 / (1 - p) at most the count) and up to 99.9999, then 100. The ends are
    /// the exact min and max; empty for an empty histogram.
    pub fn spectrum(&self) -> Vec<(f64, f64)> {
        let count = self.hist.len();
        if count == 0 {
            return Vec::new();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        let mut points = vec![(0.0, ms(self.hist.min()))];
        // 2^k values are needed to tell the 1 - 2^-k quantile from the max; 2^19 is the last
        // halving up to 99.9999 (k = 20 would be 99.999905, past it).
        for k in 1..=19u32 {
            if 1u64 << k > count {
                break;
            }
            let q = 1.0 - 0.5f64.powi(k as i32);
            points.push((100.0 * q, ms(self.hist.value_at_quantile(q))));
        }
        points.push((100.0, ms(self.hist.max())));
        points
    }

    /// Count, min, mean, max and the reports' percentiles, in ms; all zero for an empty histogram.
    pub fn summary(&self) -> LatencySummary {
        if self.hist.is_empty() {
            return LatencySummary::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        LatencySummary {
            count: self.hist.len(),
            min: ms(self.hist.min()),
            mean: self.hist.mean() / 1000.0,
            max: ms(self.hist.max()),
            p50: ms(self.hist.value_at_quantile(0.50)),
            p90: ms(self.hist.value_at_quantile(0.90)),
            p95: ms(self.hist.value_at_quantile(0.95)),
            p99: ms(self.hist.value_at_quantile(0.99)),
            p999: ms(self.hist.value_at_quantile(0.999)),
        }
    }
}
