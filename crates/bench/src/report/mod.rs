//! Reports of a [`crate::RunResult`]. (Report helper.)
//!
//! CONTRACT: `webstone(&RunResult) -> String` (the paper's section 7 report), `ptester(&RunResult)
//! -> String` (per-URL table), `summary(&RunResult) -> String` (modern summary), `json(&RunResult)
//! -> serde_json::Value` (schema in docs/bench-json.schema.json).
