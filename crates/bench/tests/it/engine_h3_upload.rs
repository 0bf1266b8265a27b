//! `--http 3` uploads that the server answers before their body is all sent: crates/http3's UDP
//! test server answers `/bytes/N` as soon as a request's head arrives, whatever body follows.
//! A request is written when its head leaves (as over HTTP/2, when its HEADERS do), so each
//! such response's time to first byte runs from there: above 0 and no longer than its
//! response time, not the 0 of a request never marked written. And uploads that a run's end
//! cuts short: cancelled, so that the server has exactly the requests flint counts as sent.

use crate::common::timed::{until_busy, LONGEST};
use crate::h3_runs;
use crate::udp;

use bench::{BenchConfig, Stop};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const CA: &str = "flint bench h3 upload test CA";

/// Far more than the server's stream window (1 MiB): the client cannot hand quiche the whole
/// body before the server's credit for the rest comes, and the answer comes first.
const UPLOAD: usize = 16 << 20;

#[test]
fn an_upload_answered_at_once_has_a_time_to_first_byte_within_its_response_time() {
    let (ca, server) = h3_runs::server(CA, &http3::Limits::default());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.csv");
    let pages = 3;
    let config = BenchConfig {
        log: Some(log.clone()),
        ..h3_runs::config(&ca, &server, 1, Stop::Pages(pages))
    };
    let workload = h3_runs::uploads("/bytes/10", UPLOAD);
    let started = Instant::now();
    let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, pages);
    assert_eq!(s.bytes_body, 10 * pages, "every answer whole");
    assert_eq!(s.ttfb.count(), pages);
    // Each request's own, as measured: the log's ttfb_us and response_us columns (the
    // histograms record at least 1 µs, so a time of 0 shows only here).
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len() as u64, pages, "{text}");
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let ttfb: u64 = f[7].parse().unwrap_or_else(|_| panic!("{line}"));
        let response: u64 = f[8].parse().unwrap_or_else(|_| panic!("{line}"));
        assert!(ttfb > 0 && ttfb <= response, "{line}");
    }
    assert_eq!(h3_runs::settled(&server).0, pages);
}

#[test]
fn uploads_answered_at_once_give_their_streams_back() {
    // A server that allows 8 streams and takes 16 KiB of a stream's body before its reader
    // asks for more: each 256 KiB upload is answered with most of its body unsent. Left
    // half-open, 8 such streams would hold every stream the server allows, and the next
    // request would wait for one until the response timeout.
    let limits = http3::Limits {
        max_streams: 8,
        stream_window: 16 << 10,
        ..http3::Limits::default()
    };
    let (ca, server) = h3_runs::server(CA, &limits);
    let pages = 240;
    let config = BenchConfig {
        response_timeout: Duration::from_secs(5),
        ..h3_runs::config(&ca, &server, 2, Stop::Pages(pages))
    };
    let workload = h3_runs::uploads("/bytes/10", 256 << 10);
    let started = Instant::now();
    let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, pages);
    assert_eq!(s.bytes_body, 10 * pages, "every answer whole");
    assert_eq!(s.http3.connections, 2, "{:?}", s.http3);
    assert_eq!(s.http3.streams, pages, "{:?}", s.http3);
    assert_eq!(h3_runs::settled(&server).0, s.requests + s.unfinished);
}

#[test]
fn uploads_cut_by_the_duration_are_cancelled_and_the_server_has_exactly_the_rest() {
    // Uploads of 1 MiB that the server answers once it has the whole body (`/count`), in timed
    // runs: at each end some are on their way. One whose body had gone whole is unfinished,
    // and the server has it; one whose head had gone but not all its body is not sent, and
    // its request side is reset (H3_REQUEST_CANCELLED), so the server sees it cancelled; one
    // not begun, neither. The requests the server saw, less those cancelled, are `requests +
    // unfinished`, exactly. A run whose end cut no upload (a busy machine can spend a short
    // window connecting) is made again with a longer window.
    let mut runs_cancelling = 0;
    for run in 0..3 {
        let once = |window| {
            let (ca, server) = h3_runs::server(CA, &http3::Limits::default());
            let config = h3_runs::config(&ca, &server, 2, Stop::Duration(window));
            let workload = h3_runs::uploads("/count", 1 << 20);
            let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
            let s = &r.stats;
            let what = format!(
                "run {run}, {window:?}: requests {}, unfinished {}, unsent {}, errors {:?}",
                s.requests, s.unfinished, s.unsent_at_end, s.errors
            );
            assert_eq!(s.errors.total(), 0, "{what}");
            assert_eq!(s.statuses.get(200), s.requests, "every body counted whole");
            let seen = h3_runs::settled(&server).0;
            let cancelled = cancelled(&server);
            assert_eq!(
                seen - cancelled,
                s.requests + s.unfinished,
                "{what}: cancelled {cancelled}"
            );
            assert!(
                cancelled <= s.unsent_at_end,
                "{what}: cancelled {cancelled}"
            );
            (s.unsent_at_end, cancelled)
        };
        let (unsent, cancelled) = until_busy(Duration::from_millis(300), once, |r| r.0 > 0);
        assert!(
            unsent > 0,
            "run {run}: no upload cut short in {:?}",
            LONGEST
        );
        runs_cancelling += u64::from(cancelled > 0);
    }
    assert!(
        runs_cancelling > 0,
        "no run's server saw an upload cancelled"
    );
}

/// The requests the client cancelled after their head (reset with H3_REQUEST_CANCELLED), read
/// once the server is [`h3_runs::settled`]: no reset can come after.
fn cancelled(server: &udp::UdpServer) -> u64 {
    let log = server.log.lock().unwrap();
    (log.resets.iter())
        .filter(|(path, code)| !path.is_empty() && *code == http3::H3_REQUEST_CANCELLED)
        .count() as u64
}
