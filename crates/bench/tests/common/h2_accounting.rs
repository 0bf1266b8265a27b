//! The identities an HTTP/2 run's counts keep whatever the server did (docs/bench-http2.md,
//! docs/latency.md), checked on a run's result, and the test server's counts once settled.

#![allow(dead_code)] // each test binary uses its own subset

use crate::h2server::H2Server;
use bench::RunResult;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const RST_STREAM: usize = 3;
const GOAWAY: usize = 7;

/// The server's count `c` once every connection has ended on its side (bounded).
pub fn settled(server: &H2Server, c: &AtomicU64) -> u64 {
    assert!(server.quiet(Duration::from_secs(10)), "connections end");
    c.load(Ordering::SeqCst)
}

/// The identities every run keeps, whatever the server did.
pub fn identities(what: &str, r: &RunResult) {
    let s = &r.stats;
    let h = &s.http2;
    let what = format!(
        "{what}: requests {}, unfinished {}, unsent {}, errors {:?}, {h:?}",
        s.requests, s.unfinished, s.unsent_at_end, s.errors
    );
    // Every byte read in the window is accounted for, exactly.
    assert_eq!(
        s.bytes_total,
        s.data_moved()
            + s.bytes_chunk_framing
            + h.bytes_framing
            + s.bytes_failed
            + s.bytes_unfinished,
        "bytes: {what}"
    );
    assert_eq!(h.frames_received[GOAWAY], h.goaways, "GOAWAY: {what}");
    assert_eq!(
        h.frames_received[RST_STREAM],
        h.rst_streams.iter().sum::<u64>(),
        "RST_STREAM: {what}"
    );
    let statuses: u64 = s.statuses.seen().map(|(_, n)| n).sum();
    assert_eq!(statuses, s.requests, "statuses: {what}");
    let hits: u64 = s.pages.iter().map(|p| p.hits).sum();
    assert_eq!(hits, s.pages_done, "pages: {what}");
    let second: u64 = s.timeseries.iter().map(|t| t.requests).sum();
    assert_eq!(second, s.requests, "time series: {what}");
    // Streams opened: each a request, unfinished, retried, failed, or (part of the unsent at
    // the end) one whose HEADERS had not left. Failures here all had a stream.
    let accounted = s.requests + s.unfinished + h.retried + s.errors.total();
    assert!(
        accounted <= h.streams && h.streams <= accounted + s.unsent_at_end,
        "streams: {what}"
    );
}

/// A run to its quota (no end in flight): the streams identity is exact.
pub fn exact_streams(what: &str, r: &RunResult) {
    identities(what, r);
    let s = &r.stats;
    assert_eq!((s.unfinished, s.unsent_at_end), (0, 0), "{what}");
    assert_eq!(
        s.http2.streams,
        s.requests + s.http2.retried + s.errors.total(),
        "{what}: {:?} {:?}",
        s.errors,
        s.http2
    );
}
