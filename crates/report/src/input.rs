//! What each input is, read once into the `results` types.
//!
//! A file's kind comes from its top-level `"kind"` (a bench file without one is a bench file
//! from before the field existed); the whole file is then deserialized into that kind's
//! document, the same types its writer serialized. Leniency for older files lives in those
//! types: a field an older flint did not write comes back as `None` or empty (its cell blank,
//! its chart line left out) or, where zero is the honest value, as zero. A field of the wrong
//! type is not "not recorded": the file is refused with the field's path, so a broken or
//! hand-edited file cannot pass for a measurement.

use crate::ReportError;
use results::{
    BenchResult, CompareResult, Kind, LabResult, LatencySummary, SecondRecord, SpectrumPoint,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;

/// One input's document, typed.
#[derive(Debug)]
pub enum Doc {
    Bench(Box<BenchResult>),
    Compare(CompareResult),
    Lab(LabResult),
}

/// One input, classified and read.
#[derive(Debug)]
pub struct Input<'a> {
    /// As given: the file name.
    pub file: &'a str,
    /// Short name for legends: the file's stem, unless two inputs share it.
    pub label: String,
    pub doc: Doc,
}

impl Input<'_> {
    pub fn kind(&self) -> Kind {
        match self.doc {
            Doc::Bench(_) => Kind::Bench,
            Doc::Compare(_) => Kind::Compare,
            Doc::Lab(_) => Kind::Lab,
        }
    }
}

/// The kind of a document: the one field looked at before the whole is read.
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

/// Deserializes `v` as `T`, naming the field that does not fit.
fn typed<T: DeserializeOwned>(file: &str, v: &Value) -> Result<T, ReportError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let field = e.path().to_string();
        ReportError::BadField {
            file: file.into(),
            field: if field == "." {
                "(top level)".into()
            } else {
                field
            },
            why: e.into_inner().to_string(),
        }
    })
}

/// Reads one document.
pub fn read(file: &str, v: &Value) -> Result<Doc, ReportError> {
    Ok(match classify(file, v)? {
        Kind::Bench => Doc::Bench(Box::new(typed(file, v)?)),
        Kind::Compare => Doc::Compare(typed(file, v)?),
        Kind::Lab => Doc::Lab(typed(file, v)?),
    })
}

fn stem(file: &str) -> &str {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    match base.strip_suffix(".json") {
        Some(s) if !s.is_empty() => s,
        _ => base,
    }
}

/// Reads every input, labelling each by its file's stem (its whole name where stems collide).
pub fn read_all<'a>(inputs: &[(&'a str, &Value)]) -> Result<Vec<Input<'a>>, ReportError> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (file, _) in inputs {
        *seen.entry(stem(file)).or_default() += 1;
    }
    inputs
        .iter()
        .map(|&(file, v)| {
            let s = stem(file);
            let label = if seen[s] > 1 { file } else { s };
            Ok(Input {
                file,
                label: label.to_owned(),
                doc: read(file, v)?,
            })
        })
        .collect()
}

/// A name for a single result that has no file: its target, its experiment, or its kind.
pub fn own_name(doc: &Doc) -> String {
    match doc {
        Doc::Bench(b) if !b.config.target.url.is_empty() => b.config.target.url.clone(),
        Doc::Lab(l) if !l.experiment.is_empty() => format!("lab {}", l.experiment),
        Doc::Bench(_) => "bench".into(),
        Doc::Compare(_) => "compare".into(),
        Doc::Lab(_) => "lab".into(),
    }
}

/// A latency figure, `None` when nothing was measured (`count` 0: an older file without the
/// distribution, or a window without responses): a blank cell, not a zero that looks measured.
pub fn latency(l: &LatencySummary, pick: fn(&LatencySummary) -> f64) -> Option<f64> {
    (l.count > 0).then(|| pick(l)).filter(|x| x.is_finite())
}

/// A percentile spectrum as (nines, ms) points, where nines = log10(1 / (1 - p)): the x of
/// HdrHistogram's plots. The 100th percentile lies at infinity and is left out, as
/// HdrHistogram's plotter does.
pub fn spectrum(points: &[SpectrumPoint]) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| (0.0..100.0).contains(&p.percentile) && p.ms.is_finite())
        .map(|p| (-(1.0 - p.percentile / 100.0).log10(), p.ms))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// One second of a bench run's time series, as rates.
#[derive(Debug, Clone, Copy)]
pub struct Second {
    pub t_s: f64,
    pub requests_per_s: f64,
    pub errors_per_s: f64,
    pub p99_ms: Option<f64>,
}

/// A bench result's `timeseries`, as rates: each count divided by its own second's length. A
/// row's `t_s` is the end of its second, and the last is the window's end, so a run of 1.5 s
/// has rows at 1 and 1.5 whose lengths are 1 and 0.5, and a `-n` run of 9 ms one row of 9 ms:
/// rates that agree with the summary's. A row whose length cannot be told (a `t_s` not after
/// the one before) takes the median length of the others (1 s when there are none).
pub fn timeseries(rows: &[SecondRecord]) -> Vec<Second> {
    let lengths: Vec<f64> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| r.t_s - if i == 0 { 0.0 } else { rows[i - 1].t_s })
        .collect();
    let mut known: Vec<f64> = lengths.iter().copied().filter(|d| *d > 0.0).collect();
    known.sort_by(f64::total_cmp);
    let fallback = known.get(known.len() / 2).copied().unwrap_or(1.0);
    rows.iter()
        .zip(lengths)
        .map(|(r, length)| {
            let length = if length > 0.0 { length } else { fallback };
            Second {
                t_s: r.t_s,
                requests_per_s: r.requests as f64 / length,
                errors_per_s: r.errors as f64 / length,
                p99_ms: r.p99_ms,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spectrum_maps_percentiles_to_nines_and_drops_the_hundredth() {
        let pts: Vec<SpectrumPoint> = serde_json::from_value(json!([
            {"percentile": 0.0, "ms": 0.1}, {"percentile": 99.0, "ms": 2.0},
            {"percentile": 90.0, "ms": 1.0}, {"percentile": 100.0, "ms": 9.0}
        ]))
        .unwrap();
        let pts = spectrum(&pts);
        assert_eq!(pts.len(), 3);
        assert_eq!(pts[0], (0.0, 0.1));
        assert!((pts[1].0 - 1.0).abs() < 1e-9 && (pts[2].0 - 2.0).abs() < 1e-9);
    }

    #[test]
    fn duplicate_stems_fall_back_to_the_file_name() {
        let v = json!({"kind": "lab"});
        let got = read_all(&[("a/x.json", &v), ("b/x.json", &v), ("c/y.json", &v)]).unwrap();
        let labels: Vec<&str> = got.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, ["a/x.json", "b/x.json", "y"]);
    }

    #[test]
    fn each_second_is_divided_by_its_own_length() {
        // A 1.5 s run: a whole second, then half of one.
        let rows: Vec<SecondRecord> = serde_json::from_value(json!([
            {"t_s": 1, "requests": 100, "errors": 2},
            {"t_s": 1.5, "requests": 40, "p99_ms": 1.5}
        ]))
        .unwrap();
        let ts = timeseries(&rows);
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[0].requests_per_s, 100.0);
        assert_eq!(ts[0].errors_per_s, 2.0);
        assert_eq!(ts[1].requests_per_s, 80.0);
        assert_eq!(ts[1].p99_ms, Some(1.5));
        // A -n run of 10 ms: 200 requests are 20,000 per second, not 200.
        let rows: Vec<SecondRecord> =
            serde_json::from_value(json!([{"t_s": 0.01, "requests": 200}])).unwrap();
        assert!((timeseries(&rows)[0].requests_per_s - 20_000.0).abs() < 1e-6);
        // A length that cannot be told takes the others' median.
        let rows: Vec<SecondRecord> = serde_json::from_value(json!([
            {"t_s": 0, "requests": 10}, {"t_s": 2, "requests": 30}
        ]))
        .unwrap();
        assert_eq!(timeseries(&rows)[0].requests_per_s, 5.0);
    }

    #[test]
    fn a_mistyped_field_is_refused_with_its_path() {
        let v = json!({"kind": "bench", "summary": {"requests": 1.5}});
        let err = read("run.json", &v).unwrap_err().to_string();
        assert!(err.starts_with("run.json: summary.requests: "), "{err}");
        let v = json!({"kind": "lab", "results": [{"server": "a"}, {"size_bytes": "big"}]});
        let err = read("lab.json", &v).unwrap_err().to_string();
        assert!(err.contains("results[1].size_bytes"), "{err}");
    }

    #[test]
    fn a_latency_without_samples_is_blank() {
        let none = LatencySummary::default();
        assert_eq!(latency(&none, |l| l.p50), None);
        let one = LatencySummary {
            count: 1,
            p50: 2.0,
            ..none
        };
        assert_eq!(latency(&one, |l| l.p50), Some(2.0));
    }
}
