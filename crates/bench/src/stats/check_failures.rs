//! Application workloads: the first few responses that failed a check or an extraction, each
//! with what was wrong and its head, so that a report says why, not only how many. Kept only
//! until `MAX_SAMPLES` are held: a failing run costs one copy per thread, then nothing.

use serde::{Deserialize, Serialize};

/// How many failures a run keeps (and a thread, before the merge).
pub const MAX_SAMPLES: usize = 5;

/// One failed response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckFailure {
    /// The error kind's name (`check_body`, `extract_missing`, ...).
    pub kind: String,
    /// The URL (its path, or its template's source).
    pub url: String,
    /// What was wanted and what came.
    pub detail: String,
    /// The response's head, as received (lossily UTF-8).
    pub head: String,
}

/// Keeps `sample()` unless `MAX_SAMPLES` are held already (then nothing is made).
pub fn keep(held: &mut Vec<CheckFailure>, sample: impl FnOnce() -> CheckFailure) {
    if held.len() < MAX_SAMPLES {
        held.push(sample());
    }
}

/// Another thread's (or host's) samples, up to `MAX_SAMPLES` in all.
pub fn merge(held: &mut Vec<CheckFailure>, other: &[CheckFailure]) {
    let room = MAX_SAMPLES.saturating_sub(held.len());
    held.extend(other.iter().take(room).cloned());
}
