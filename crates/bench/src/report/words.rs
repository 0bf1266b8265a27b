//! Numbers in words, for every line bench prints: the live line, the reports, a workload's
//! errors. A leaf, so that what prints below the reports (progress, workload) need not import
//! them.

/// `n` and its noun, singular only for 1: `1 thread`, `2 threads`, `0 errors`.
pub fn count_of(n: u64, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}
