//! The WebSTONE report's arithmetic, as small pure functions.
//!
//! Each formula was derived from the paper's own section 7 figures (Netsite 1.0, NCSA 1.3,
//! CERN 3.0) and is tested by recomputing those figures from the paper's totals; docs/webstone.md
//! lists them with the numbers that confirm them. A zero denominator gives 0, never NaN or
//! infinity, so every figure prints and serialises as a number.
//!
//! "Connects" in the paper's per-file averages: its clients spoke HTTP/1.0, one connection per
//! file, so connects and files (requests) were the same count. flint also keeps connections
//! alive and pipelines, so the per-file averages (response time, body size, retrieval size)
//! divide by files retrieved, and only the average connect time divides by connects.
//!
//! Beside them, the Webchildren an open-loop rate needs ([`webchildren_for`]), which the live
//! line (`progress.rs`, below the reports) and the report's note on a rate not kept both
//! compute: a leaf, this file serves both.

/// A quotient that is 0 when the denominator is 0 (or not a number).
#[inline]
pub fn ratio(numerator: f64, denominator: f64) -> f64 {
    if denominator > 0.0 {
        numerator / denominator
    } else {
        0.0
    }
}

/// WEBSTONE number: pages retrieved per minute of the test.
/// Netsite: 15770 pages in a 35-minute test, 450.57 (the paper printed it truncated: 450).
pub fn webstone_number(pages: u64, minutes: f64) -> f64 {
    ratio(pages as f64, minutes)
}

/// The paper's "Thruput": data moved over the cumulative time of all Webchildren, so a
/// per-Webchild rate. Netsite: 17409474560 / 50333.931099 = 345879 bytes/sec.
/// (The aggregate rate a server sustained is [`aggregate_throughput`].)
pub fn thruput(data_moved: u64, cumulative_s: f64) -> f64 {
    ratio(data_moved as f64, cumulative_s)
}

/// Average response time: cumulative time over files retrieved (connects, in the paper).
/// Netsite: 50333.931099 / 41672 = 1.207859 s.
pub fn average_response_time(cumulative_s: f64, files: u64) -> f64 {
    ratio(cumulative_s, files as f64)
}

/// Average time per connect: total connect time over connects.
/// Netsite: (sum of the pages' connect times, 179.352803 s) / 41672 = 0.004304 s.
pub fn average_connect_time(total_connect_s: f64, connects: u64) -> f64 {
    ratio(total_connect_s, connects as f64)
}

/// Average body size (body bytes) or average retrieval size (data moved), per file.
/// Netsite: 17401507840 / 41672 = 417583 and 17409474560 / 41672 = 417774 bytes.
pub fn average_size(bytes: u64, files: u64) -> f64 {
    ratio(bytes as f64, files as f64)
}

/// Total amount of data moved: body bytes plus header bytes.
/// Netsite: 17401507840 + 7966720 = 17409474560.
pub fn data_moved(body: u64, header: u64) -> u64 {
    body.saturating_add(header)
}

/// Page size: the sum of its files' sizes. Page 0 of the paper (3k + 4k + 5k) = 12288 bytes.
pub fn page_size(file_sizes: impl IntoIterator<Item = u64>) -> u64 {
    file_sizes.into_iter().fold(0, u64::saturating_add)
}

/// A rate per second over the measured window (requests/s, pages/s, bytes/s).
pub fn per_second(count: u64, seconds: f64) -> f64 {
    ratio(count as f64, seconds)
}

/// What flint adds: bytes over the wall-clock window, the rate the server actually delivered
/// (the paper's [`thruput`] is per Webchild: multiply by the Webchildren to compare).
pub fn aggregate_throughput(bytes: u64, duration_s: f64) -> f64 {
    per_second(bytes, duration_s)
}

/// Microseconds (as the statistics count them) to seconds.
#[inline]
pub fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

/// The Webchildren that carry `rate` pages/s when a page takes `page_s` (Little's law), plus a
/// quarter for the variance of page times, at least one.
pub fn webchildren_for(rate: f64, page_s: f64) -> u64 {
    ((rate * page_s * 1.25).ceil() as u64).max(1)
}
