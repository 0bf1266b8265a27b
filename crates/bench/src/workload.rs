//! What a run fetches: pages of files, each page with a weight.
//!
//! CONTRACT (owned by the workload helper; the types below are shared, do not rename fields):

/// A set of pages; `urls` holds each distinct path once so that per-URL statistics are an index.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub pages: Vec<Page>,
    /// Distinct URL paths (`/file3k.html`), in order of first appearance.
    pub urls: Vec<String>,
}

/// One WebSTONE page: an HTML file and its inlined images, fetched in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub name: String,
    /// Relative weight (any positive number; WebSTONE used percentages).
    pub weight: f64,
    /// Indexes into [`Workload::urls`], in fetch order.
    pub files: Vec<usize>,
}

/// A workload that cannot be used, with the file and line that say why.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("{path}:{line}: {message}")]
    Syntax { path: String, line: usize, message: String },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{0}")]
    Invalid(String),
}
