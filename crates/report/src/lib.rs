//! `flint report`: results people would rather look at.
//!
//! Reads the JSON that `flint bench`, `flint compare` and `flint lab` write and renders one
//! self-contained HTML file: no network, no CDN, no fonts or scripts from elsewhere. Every chart
//! is an inline SVG with axes, units and a legend that does not depend on colour (see [`chart`]).
//!
//! Each input is read once into the `results` types its writer serialized ([`results::BenchResult`],
//! [`results::CompareResult`], [`results::LabResult`]); the sections take those types. Reading is
//! lenient where files evolved: a field an older flint did not write makes its cell go blank (`–`)
//! or its section or chart line go away, never the report. An input that is not a flint result,
//! or has a field of the wrong type, is an error of one line naming the file (and the field).
//!
//! The page, in order, each section only when some input has its data:
//! summary table; latency percentile spectrum; throughput and p99 over time; bandwidth against
//! file size (IO-Lite); syscalls per request by server and mode (Jigsaw); other lab results;
//! WebSTONE's per-page table; truss-style syscall tables; what ran where (WebSTONE asks that
//! every published result disclose the software, hardware and configuration).

#![warn(missing_docs)]

pub mod chart;
mod html;
mod input;
mod sections;
pub mod text;

pub use results::Kind;

use serde_json::Value;

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// [`render`] was given no input.
    #[error("no results to report")]
    NoInputs,
    /// An input whose top level is not a JSON object (an array, a number, ...).
    #[error("{file}: not a flint result: the top level is not a JSON object")]
    NotAnObject {
        /// The input's name: its file name, or `result` for [`render_one`].
        file: String,
    },
    /// An input whose `kind` is none of `bench`, `compare` and `lab`.
    #[error("{file}: unknown result kind {kind:?} (flint report reads bench, compare and lab)")]
    UnknownKind {
        /// The input's name: its file name, or `result` for [`render_one`].
        file: String,
        /// The `kind` found, as written (a value that is not a string, as JSON).
        kind: String,
    },
    /// An object with no `kind` and no bench `summary` object: not something flint wrote.
    #[error("{file}: not a flint result: no \"kind\" and no bench \"summary\"")]
    NotAResult {
        /// The input's name: its file name, or `result` for [`render_one`].
        file: String,
    },
    /// A field of the wrong type for its kind of result (a missing field is not an error).
    #[error("{file}: {field}: {why}")]
    BadField {
        /// The input's name: its file name, or `result` for [`render_one`].
        file: String,
        /// Its path in the document, as `summary.response_ms.p99` or `results[3].server`.
        field: String,
        /// What serde found wrong with it (`invalid type: string "many", expected u64`).
        why: String,
    },
}

/// Renders one HTML page from results, each named by its file name (shown in the page and used
/// to label its series). Any mix of bench, compare and lab results, in the order given.
pub fn render(inputs: &[(String, Value)]) -> Result<String, ReportError> {
    let named: Vec<(&str, &Value)> = inputs.iter().map(|(n, v)| (n.as_str(), v)).collect();
    render_named(&named)
}

/// Renders the page for a single result (`flint bench --html`, `flint lab --html`); it is
/// labelled by what it measured (the target URL, the experiment), not by a file name.
pub fn render_one(value: &Value) -> Result<String, ReportError> {
    let doc = input::read("result", value)?;
    let name = input::own_name(&doc);
    let one = input::Input {
        file: &name,
        label: name.clone(),
        doc,
    };
    Ok(sections::page(&[one]))
}

fn render_named(inputs: &[(&str, &Value)]) -> Result<String, ReportError> {
    if inputs.is_empty() {
        return Err(ReportError::NoInputs);
    }
    let inputs = input::read_all(inputs)?;
    Ok(sections::page(&inputs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_kind_is_an_error_naming_the_file() {
        let err = render(&[("odd.json".into(), json!({"kind": "weather"}))]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("odd.json") && msg.contains("weather"), "{msg}");
    }

    #[test]
    fn non_results_are_errors_naming_the_file() {
        let err = render(&[("list.json".into(), json!([1, 2]))]).unwrap_err();
        assert!(err.to_string().starts_with("list.json:"));
        let err = render(&[("cfg.json".into(), json!({"port": 80}))]).unwrap_err();
        assert!(matches!(err, ReportError::NotAResult { .. }));
        assert!(matches!(render(&[]), Err(ReportError::NoInputs)));
    }

    #[test]
    fn bench_without_kind_is_read_as_bench() {
        let v = json!({"summary": {"requests_per_s": 1234.5}, "pages": [], "urls": []});
        let html = render(&[("old.json".into(), v)]).unwrap();
        assert!(html.contains("1,235"), "requests/s in the summary table");
    }

    #[test]
    fn render_one_labels_a_bench_by_its_target() {
        let v = json!({"kind": "bench", "config": {"target": {"url": "http://127.0.0.1:8080/"}},
                       "summary": {"requests_per_s": 10.0}});
        let html = render_one(&v).unwrap();
        assert!(html.contains("http://127.0.0.1:8080/"));
    }
}
