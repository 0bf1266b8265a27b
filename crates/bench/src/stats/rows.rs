//! The figures by URL, by page and by second of the window (the time series).

use super::Latency;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One URL (file) across all pages: ptester's row, plus percentiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlStats {
    /// Responses that completed and matched their framing (any status).
    pub requests: u64,
    /// Requests of this URL that failed, or whose response was an error by the run's rule
    /// (ptester's error column).
    pub errors: u64,
    /// New connections opened to fetch this URL.
    pub connects: u64,
    /// The fastest connect made for this URL, µs (`u64::MAX` until one is made, so that a merge
    /// keeps the smaller).
    pub connect_us_min: u64,
    /// The slowest connect made for this URL, µs.
    pub connect_us_max: u64,
    /// The sum of those connects' times, µs: with `connects`, their mean.
    pub connect_us_sum: u64,
    /// Transfer: from the request written to the last byte of the response.
    pub transfer_us_min: u64,
    /// The slowest transfer, µs.
    pub transfer_us_max: u64,
    /// The sum of the transfers, µs: with `requests`, their mean.
    pub transfer_us_sum: u64,
    /// Header bytes of its complete responses.
    pub header_bytes: u64,
    /// Body bytes of its complete responses.
    pub body_bytes: u64,
    /// Body size of the last complete response (the file's size, for the page-size figure).
    pub last_body_size: u64,
    /// Response times of its complete responses (as `Stats::response`), for its percentiles.
    pub response: Latency,
}

/// One page: the WebSTONE per-page block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageStats {
    /// Pages whose every file completed.
    pub hits: u64,
    /// Pages abandoned because one of their files failed.
    pub errors: u64,
    /// Sum of page times (connect + transfer of all its files), µs.
    pub time_us_sum: u64,
    /// The longest page time, µs.
    pub time_us_max: u64,
    /// The sum of the connect times of its files, µs (WebSTONE's connect time per page).
    pub connect_us_sum: u64,
    /// The slowest connect made for one of its files, µs.
    pub connect_us_max: u64,
    /// Body bytes of this page's completed files.
    pub body_bytes: u64,
    /// Header bytes of this page's completed files.
    pub header_bytes: u64,
    /// Connections opened to fetch its files.
    pub connects: u64,
    /// Page times of its hits, for the page's percentiles.
    pub time: Latency,
}

/// What one second of the measured window saw (the time series).
///
/// Requests and errors are counted in the second they completed (or failed), bytes in the second
/// they were read: summed over the seconds they equal `Stats::requests`, `errors.total()` and
/// `bytes_total` exactly, but for one kind of error: a `unique` data set run out during the
/// warm-up is in `errors` (`data_exhausted`; its Webchild stops for the run) and in no second,
/// since it came before the window (which may then never see a response). The latency is a 2-significant-figure histogram (about 27 KB), so
/// seconds merge across threads bucket by bucket like everything else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondStats {
    /// Responses completed in this second (any status).
    pub requests: u64,
    /// Failed requests and non-2xx responses.
    pub errors: u64,
    /// Every byte read in this second.
    pub bytes: u64,
    /// Response latency (as `Stats::response`) of the responses completed in this second.
    pub response: Latency,
}

impl SecondStats {
    /// An empty second; its latency histogram at 2 significant figures, so that a long run's series
    /// stays small.
    pub fn new() -> Self {
        SecondStats {
            requests: 0,
            errors: 0,
            bytes: 0,
            response: Latency::new(2),
        }
    }

    /// Adds another thread's (or host's) same second: counts summed, histograms merged bucket by
    /// bucket.
    pub fn merge(&mut self, o: &SecondStats) {
        self.requests += o.requests;
        self.errors += o.errors;
        self.bytes += o.bytes;
        self.response.merge(&o.response);
    }
}

impl Default for SecondStats {
    fn default() -> Self {
        Self::new()
    }
}

/// The second of the window an event `elapsed_us` after its start belongs to: second `i` is
/// `(i s, i+1 s]`, and an event at exactly 0 goes to second 0. Closed on the right, so an event
/// at the very end of a window of whole seconds (a `-n` run's last byte) lands in its last second.
#[inline]
pub const fn second_index(elapsed_us: u64) -> usize {
    (elapsed_us.saturating_sub(1) / 1_000_000) as usize
}

/// How many seconds a window of `d` has: its length rounded up (the last one may be partial).
pub fn seconds_in(d: Duration) -> usize {
    let us = d.as_micros().min(u128::from(u64::MAX)) as u64;
    us.div_ceil(1_000_000) as usize
}

impl UrlStats {
    /// An empty row: the minima at `u64::MAX`, so that the first connect and transfer set them.
    pub fn new() -> Self {
        UrlStats {
            requests: 0,
            errors: 0,
            connects: 0,
            connect_us_min: u64::MAX,
            connect_us_max: 0,
            connect_us_sum: 0,
            transfer_us_min: u64::MAX,
            transfer_us_max: 0,
            transfer_us_sum: 0,
            header_bytes: 0,
            body_bytes: 0,
            last_body_size: 0,
            response: Latency::new(2),
        }
    }

    /// Adds another thread's (or host's) row for the same URL: sums and extremes combined, the last
    /// body size from the side that saw a response.
    pub fn merge(&mut self, o: &UrlStats) {
        self.requests += o.requests;
        self.errors += o.errors;
        self.connects += o.connects;
        self.connect_us_min = self.connect_us_min.min(o.connect_us_min);
        self.connect_us_max = self.connect_us_max.max(o.connect_us_max);
        self.connect_us_sum += o.connect_us_sum;
        self.transfer_us_min = self.transfer_us_min.min(o.transfer_us_min);
        self.transfer_us_max = self.transfer_us_max.max(o.transfer_us_max);
        self.transfer_us_sum += o.transfer_us_sum;
        self.header_bytes += o.header_bytes;
        self.body_bytes += o.body_bytes;
        if o.requests > 0 {
            self.last_body_size = o.last_body_size;
        }
        self.response.merge(&o.response);
    }
}

impl Default for UrlStats {
    fn default() -> Self {
        Self::new()
    }
}

impl PageStats {
    /// An empty block.
    pub fn new() -> Self {
        PageStats {
            hits: 0,
            errors: 0,
            time_us_sum: 0,
            time_us_max: 0,
            connect_us_sum: 0,
            connect_us_max: 0,
            body_bytes: 0,
            header_bytes: 0,
            connects: 0,
            time: Latency::new(2),
        }
    }

    /// Adds another thread's (or host's) block for the same page.
    pub fn merge(&mut self, o: &PageStats) {
        self.hits += o.hits;
        self.errors += o.errors;
        self.time_us_sum += o.time_us_sum;
        self.time_us_max = self.time_us_max.max(o.time_us_max);
        self.connect_us_sum += o.connect_us_sum;
        self.connect_us_max = self.connect_us_max.max(o.connect_us_max);
        self.body_bytes += o.body_bytes;
        self.header_bytes += o.header_bytes;
        self.connects += o.connects;
        self.time.merge(&o.time);
    }
}

impl Default for PageStats {
    fn default() -> Self {
        Self::new()
    }
}
