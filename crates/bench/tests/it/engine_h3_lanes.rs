//! `--http 3 --streams N` with one-file pages: N pages in flight as lanes, streams of one QUIC
//! connection, each refilled as its page ends (as over HTTP/2), in the closed loop, the open
//! loop (`--rate`: a page at its slot on a free stream) and with `--think` (a lane thinks after
//! its page). Against crates/http3's UDP test server (the `http3::Server` flint serve runs),
//! whose own count of the requests it was handed is the test: every one is a request bench
//! counted or one unfinished at the end, in `-n` runs and in runs cut by their duration with
//! lanes in flight. Counts, and times only as bounds below (a slower machine only adds).

use crate::{h3_runs, udp};

use bench::{BenchConfig, RunResult, Stop, Workload};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

const LANES: u32 = 8;
const BODY: u64 = 3_000;

fn server(ca: &TestCa) -> udp::UdpServer {
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let config = http3::ServerConfig::new(&cert, &key, &http3::Limits::default()).unwrap();
    udp::UdpServer::start(config)
}

/// Two Webchildren, `LANES` lanes each, one-file pages of `BODY` bytes; `tweak` changes the
/// configuration (the open loop, think time).
fn run(
    ca: &TestCa,
    server: &udp::UdpServer,
    stop: Stop,
    tweak: impl FnOnce(&mut BenchConfig),
) -> RunResult {
    let mut config = BenchConfig {
        streams: Some(LANES),
        ..h3_runs::config(ca, server, 2, stop)
    };
    tweak(&mut config);
    let text = format!("[[page]]\nname = \"one\"\nweight = 1\nfiles = [\"/bytes/{BODY}\"]\n");
    let workload = Workload::parse(&text, "test").unwrap();
    let started = Instant::now();
    let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    r
}

#[test]
fn lanes_of_one_file_pages_send_every_page_on_one_connection_a_webchild() {
    let ca = TestCa::new("flint bench h3 lanes test CA");
    let server = server(&ca);
    let pages = 400;
    let r = run(&ca, &server, Stop::Pages(pages), |_| {});
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, pages);
    assert_eq!(s.statuses.get(200), pages);
    assert_eq!(s.bytes_body, pages * BODY, "every body whole");
    // Each stream a page of its own, each page timed.
    assert_eq!(s.pages.iter().map(|p| p.hits).sum::<u64>(), pages);
    assert_eq!(s.pages_done, pages);
    assert_eq!(s.page.count(), pages);
    assert_eq!(s.http3.streams, pages);
    assert_eq!(s.http3.connections, 2, "one connection a Webchild");
    assert_eq!(
        s.connect.count(),
        2,
        "the handshake is the connect row, once"
    );
    assert_eq!(s.unfinished, 0);
    assert_eq!(h3_runs::settled(&server).0, s.requests + s.unfinished);
}

#[test]
fn lanes_cut_by_the_duration_account_for_every_request_the_server_saw() {
    let ca = TestCa::new("flint bench h3 lanes test CA");
    let server = server(&ca);
    let r = run(&ca, &server, Stop::Duration(Duration::from_secs(1)), |_| {});
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert!(s.requests > 0);
    assert!(
        s.unfinished + s.unsent_at_end > 0,
        "lanes in flight at the end: {} unfinished, {} unsent",
        s.unfinished,
        s.unsent_at_end
    );
    // Every lane in flight is a page in progress: unfinished or unsent at the end, up to
    // `LANES` a Webchild.
    assert!(s.unfinished + s.unsent_at_end <= 2 * u64::from(LANES));
    let seen = h3_runs::settled(&server).0;
    assert_eq!(
        seen,
        s.requests + s.unfinished,
        "the server's count against requests {} + unfinished {} (unsent {})",
        s.requests,
        s.unfinished,
        s.unsent_at_end
    );
}

#[test]
fn lanes_at_open_loop_slots_send_every_page_on_the_open_connection() {
    let ca = TestCa::new("flint bench h3 lanes test CA");
    let server = server(&ca);
    let pages = 40;
    let t0 = Instant::now();
    let r = run(&ca, &server, Stop::Pages(pages), |c| c.rate = Some(400.0));
    // Paced, not sent at once: each Webchild's 20 pages are 5 ms apart.
    let elapsed = t0.elapsed();
    assert!(elapsed >= Duration::from_millis(95), "took {elapsed:?}");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, pages);
    assert_eq!(s.pages.iter().map(|p| p.hits).sum::<u64>(), pages);
    let lag = s.send_lag.as_ref().expect("open loop: send lag");
    assert_eq!(lag.count(), pages, "every page's send lag is recorded");
    assert_eq!(s.pages_scheduled, pages);
    assert_eq!(s.pages_not_sent, 0);
    // Between pages the connection waits for the next slot: one per Webchild for the run.
    assert_eq!(s.http3.connections, 2, "{:?}", s.http3);
    assert_eq!(h3_runs::settled(&server).0, pages);
}

#[test]
fn open_loop_lanes_cut_by_the_duration_account_for_every_page_due() {
    // 1,000 pages/s over 16 lanes for a second: each page due is a request, unfinished or
    // unsent at the end, or a page never started (a slow machine has more of those, never a
    // page lost); the server saw exactly the requests and the unfinished.
    let ca = TestCa::new("flint bench h3 lanes test CA");
    let server = server(&ca);
    let r = run(&ca, &server, Stop::Duration(Duration::from_secs(1)), |c| {
        c.rate = Some(1000.0)
    });
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert!(s.requests > 0);
    assert_eq!(
        s.pages_scheduled,
        s.requests + s.unfinished + s.unsent_at_end + s.pages_not_sent,
        "requests {}, unfinished {}, unsent {}, not sent {}",
        s.requests,
        s.unfinished,
        s.unsent_at_end,
        s.pages_not_sent
    );
    let lag = s.send_lag.as_ref().expect("open loop: send lag");
    assert_eq!(lag.count(), s.pages_scheduled - s.pages_not_sent);
    // The JSON has the open loop's figures, as over HTTP/2.
    let json = bench::report::json(&r);
    let summary = &json["summary"];
    assert!(summary["send_lag_ms"].is_object(), "{summary}");
    assert_eq!(summary["pages_scheduled"], s.pages_scheduled);
    assert_eq!(summary["pages_not_sent"], s.pages_not_sent);
    assert_eq!(summary["unfinished"], s.unfinished);
    let seen = h3_runs::settled(&server).0;
    assert_eq!(
        seen,
        s.requests + s.unfinished,
        "the server's count against requests {} + unfinished {} (unsent {})",
        s.requests,
        s.unfinished,
        s.unsent_at_end
    );
}

#[test]
fn each_lane_thinks_after_its_page_before_the_next() {
    // One Webchild, two lanes, 20 ms of think time, 10 pages, on one connection. From the log
    // (each request's start, and its end: start + response time): two lanes, so two requests
    // in flight at once (lanes one after another would never overlap); and each lane thinks
    // after its page, so when a page starts, at most one other lane is busy or thinking (a
    // page that ended less than the think time before is a lane still thinking; without
    // thinking, the lane that just freed would count).
    const THINK_US: u64 = 20_000;
    let ca = TestCa::new("flint bench h3 lanes test CA");
    let server = server(&ca);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.csv");
    let r = run(&ca, &server, Stop::Pages(10), |c| {
        c.concurrency = 1;
        c.streams = Some(2);
        c.think = Some(Duration::from_micros(THINK_US));
        c.log = Some(log.clone());
    });
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, 10);
    assert_eq!(s.pages.iter().map(|p| p.hits).sum::<u64>(), 10);
    assert_eq!(s.http3.connections, 1, "{:?}", s.http3);
    let text = std::fs::read_to_string(&log).unwrap();
    let mut pages: Vec<(u64, u64)> = (text.lines().skip(1))
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let num = |i: usize| -> u64 { f[i].parse().unwrap_or_else(|_| panic!("{line}")) };
            (num(4), num(4) + num(8))
        })
        .collect();
    assert_eq!(pages.len(), 10, "{text}");
    pages.sort_unstable();
    let overlap = (pages.windows(2)).any(|w| w[1].0 < w[0].1);
    assert!(overlap, "no two pages in flight at once: {pages:?}");
    for (k, &(start, _)) in pages.iter().enumerate() {
        let busy = pages[..k]
            .iter()
            .filter(|&&(_, end)| end + THINK_US > start);
        assert!(
            busy.count() <= 1,
            "page {k} began with both lanes busy or thinking: {pages:?}"
        );
    }
    assert_eq!(h3_runs::settled(&server).0, 10);
}

#[test]
fn thinking_lanes_cut_by_the_duration_account_for_every_request_the_server_saw() {
    // 16 lanes that think 50 ms after each page for a second: at most 21 pages a lane (fewer
    // on a slow machine), and every request the server saw counted or unfinished.
    const THINK_MS: u64 = 50;
    let ca = TestCa::new("flint bench h3 lanes test CA");
    let server = server(&ca);
    let r = run(&ca, &server, Stop::Duration(Duration::from_secs(1)), |c| {
        c.think = Some(Duration::from_millis(THINK_MS))
    });
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert!(s.requests > 0);
    let most = 2 * u64::from(LANES) * (1000 / THINK_MS + 1);
    assert!(
        s.requests + s.unfinished <= most,
        "{} requests and {} unfinished: lanes did not think",
        s.requests,
        s.unfinished
    );
    assert_eq!(s.http3.connections, 2, "{:?}", s.http3);
    let seen = h3_runs::settled(&server).0;
    assert_eq!(
        seen,
        s.requests + s.unfinished,
        "the server's count against requests {} + unfinished {} (unsent {})",
        s.requests,
        s.unfinished,
        s.unsent_at_end
    );
}
