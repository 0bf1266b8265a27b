//! What each input is, and lenient reads of its fields.
//!
//! The result files evolve (fields are added; older files lack them), so nothing here insists on
//! a shape: every read is an `Option`, and a missing or mistyped field means "not recorded".

use crate::ReportError;
use serde_json::Value;
use std::collections::HashMap;

/// The kind of a result file, from its top-level `"kind"` (a bench file without one is a bench
/// file from before the field existed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Bench,
    Compare,
    Lab,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bench => "bench",
            Kind::Compare => "compare",
            Kind::Lab => "lab",
        }
    }
}

/// One input, classified.
#[derive(Debug)]
pub struct Input<'a> {
    /// As given: the file name.
    pub file: &'a str,
    /// Short name for legends: the file's stem, unless two inputs share it.
    pub label: String,
    pub kind: Kind,
    pub v: &'a Value,
}

fn classify(file: &str, v: &Value) -> Result<Kind, ReportError> {
    let Some(obj) = v.as_object() else {
        return Err(ReportError::NotAnObject { file: file.into() });
    };
    match obj.get("kind") {
        Some(Value::String(k)) if k == "bench" => Ok(Kind::Bench),
        Some(Value::String(k)) if k == "compare" => Ok(Kind::Compare),
        Some(Value::String(k)) if k == "lab" => Ok(Kind::Lab),
        Some(Value::Null) | None if obj.get("summary").is_some_and(Value::is_object) => {
            Ok(Kind::Bench)
        }
        Some(Value::Null) | None => Err(ReportError::NotAResult { file: file.into() }),
        Some(other) => Err(ReportError::UnknownKind {
            file: file.into(),
            kind: match other {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            },
        }),
    }
}

fn stem(file: &str) -> &str {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    match base.strip_suffix(".json") {
        Some(s) if !s.is_empty() => s,
        _ => base,
    }
}

pub fn classify_all<'a>(inputs: &[(&'a str, &'a Value)]) -> Result<Vec<Input<'a>>, ReportError> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (file, _) in inputs {
        *seen.entry(stem(file)).or_default() += 1;
    }
    inputs
        .iter()
        .map(|&(file, v)| {
            let kind = classify(file, v)?;
            let s = stem(file);
            let label = if seen[s] > 1 { file } else { s };
            Ok(Input {
                file,
                label: label.to_owned(),
                kind,
                v,
            })
        })
        .collect()
}

/// A name for a single result that has no file: its target, its experiment, or its kind.
pub fn own_name(v: &Value) -> String {
    if let Some(url) = s(v, &["config", "target", "url"]) {
        return url.to_owned();
    }
    if let Some(e) = s(v, &["experiment"]) {
        return format!("lab {e}");
    }
    s(v, &["kind"]).unwrap_or("result").to_owned()
}

/// The value at `path`, if every step exists.
pub fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}
/// A number at `path` (finite only).
pub fn f(v: &Value, path: &[&str]) -> Option<f64> {
    at(v, path)?.as_f64().filter(|x| x.is_finite())
}
/// A string at `path`.
pub fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path)?.as_str()
}
/// An array at `path`, or an empty slice.
pub fn arr<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    at(v, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A percentile spectrum (`[{percentile: 0..100, ms}]`) as (nines, ms) points, where
/// nines = log10(1 / (1 - p)): the x of HdrHistogram's plots. The 100th percentile lies at
/// infinity and is left out, as HdrHistogram's plotter does.
pub fn spectrum(v: &Value) -> Vec<(f64, f64)> {
    let Some(items) = v.as_array() else {
        return Vec::new();
    };
    let mut pts: Vec<(f64, f64)> = items
        .iter()
        .filter_map(|p| {
            let pct = f(p, &["percentile"])?;
            let ms = f(p, &["ms"])?;
            (0.0..100.0)
                .contains(&pct)
                .then(|| (-(1.0 - pct / 100.0).log10(), ms))
        })
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// One second of a bench run's time series.
#[derive(Debug, Clone, Copy)]
pub struct Second {
    pub t_s: f64,
    pub requests_per_s: f64,
    pub errors_per_s: f64,
    pub p99_ms: Option<f64>,
}

/// A bench result's `timeseries`, as rates: counts divided by the step between samples
/// (1 s as written by flint; the median step if a file says otherwise).
pub fn timeseries(v: &Value) -> Vec<Second> {
    let rows = arr(v, &["timeseries"]);
    let ts: Vec<f64> = rows.iter().filter_map(|r| f(r, &["t_s"])).collect();
    let mut steps: Vec<f64> = ts
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0)
        .collect();
    steps.sort_by(f64::total_cmp);
    let step = steps.get(steps.len() / 2).copied().unwrap_or(1.0);
    rows.iter()
        .filter_map(|r| {
            Some(Second {
                t_s: f(r, &["t_s"])?,
                requests_per_s: f(r, &["requests"])? / step,
                errors_per_s: f(r, &["errors"]).unwrap_or(0.0) / step,
                p99_ms: f(r, &["p99_ms"]),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spectrum_maps_percentiles_to_nines_and_drops_the_hundredth() {
        let v = json!([{"percentile": 0.0, "ms": 0.1}, {"percentile": 99.0, "ms": 2.0},
                       {"percentile": 90.0, "ms": 1.0}, {"percentile": 100.0, "ms": 9.0},
                       {"percentile": "x", "ms": 1.0}]);
        let pts = spectrum(&v);
        assert_eq!(pts.len(), 3);
        assert_eq!(pts[0], (0.0, 0.1));
        assert!((pts[1].0 - 1.0).abs() < 1e-9 && (pts[2].0 - 2.0).abs() < 1e-9);
    }

    #[test]
    fn duplicate_stems_fall_back_to_the_file_name() {
        let v = json!({"kind": "lab"});
        let got = classify_all(&[("a/x.json", &v), ("b/x.json", &v), ("c/y.json", &v)]).unwrap();
        let labels: Vec<&str> = got.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, ["a/x.json", "b/x.json", "y"]);
    }

    #[test]
    fn timeseries_are_rates_per_step() {
        let v = json!({"timeseries": [{"t_s": 0, "requests": 10, "errors": 2},
                                      {"t_s": 2, "requests": 30, "p99_ms": 1.5}]});
        let ts = timeseries(&v);
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[1].requests_per_s, 15.0);
        assert_eq!(ts[0].errors_per_s, 1.0);
        assert_eq!(ts[1].p99_ms, Some(1.5));
    }
}
