//! The engine against misbehaving servers: each fault shows up as its error kind, nothing counts
//! as a request that did not complete, and the run still ends on time.

use crate::common;

use bench::stats::ErrorKind;
use bench::{RunResult, Stop};
use common::timed::until_busy;
use common::{config, ms, one_file, refused_addr, workload, Behaviour, TestServer};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Runs for `d` with 2 Webchildren and checks the run ended within 1 s of it.
fn run_for(
    addr: SocketAddr,
    d: Duration,
    tweak: impl FnOnce(&mut bench::BenchConfig),
) -> RunResult {
    let mut cfg = config(addr, 2, Stop::Duration(d));
    tweak(&mut cfg);
    let t0 = Instant::now();
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).expect("run");
    let took = t0.elapsed();
    assert!(
        // Ends with its window, not with a pending timeout (30 s in one test); the margin is
        // for a loaded machine.
        took <= d + Duration::from_secs(10),
        "run took {took:?} for -d {d:?}"
    );
    assert!(!r.interrupted);
    r
}

/// Pages of the runs that count faults: each fails with its one request.
const PAGES: u64 = 6;

/// `PAGES` pages with 2 Webchildren against a server that fails each the same way: exactly
/// `PAGES` errors of `kind` and nothing else, however long the machine takes to reach them.
fn every_page_fails_as(
    addr: SocketAddr,
    kind: ErrorKind,
    tweak: impl FnOnce(&mut bench::BenchConfig),
) -> RunResult {
    let mut cfg = config(addr, 2, Stop::Pages(PAGES));
    tweak(&mut cfg);
    let t0 = Instant::now();
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).expect("run");
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    only(&r, kind);
    assert_eq!(r.stats.errors.total(), PAGES, "{:?}", r.stats.errors);
    assert_eq!(r.stats.pages[0].errors, PAGES);
    r
}

/// Only `kind` was counted, and the pages all failed.
fn only(r: &RunResult, kind: ErrorKind) {
    let n = r.stats.errors.get(kind);
    assert!(n > 0, "no {kind:?} in {:?}", r.stats.errors);
    assert_eq!(
        r.stats.errors.total(),
        n,
        "other kinds: {:?}",
        r.stats.errors
    );
    assert_eq!(r.stats.pages[0].hits, 0);
    assert!(r.stats.pages[0].errors > 0);
    assert_eq!(r.stats.urls[0].errors, n);
}

#[test]
fn refused_connects_are_connect_refused_and_back_off() {
    let refused = refused_addr();
    let addr = refused.addr;
    let (r, window) = until_busy(
        ms(300),
        |window| (run_for(addr, window, |_| {}), window),
        |(r, _)| r.stats.errors.total() > 0,
    );
    only(&r, ErrorKind::ConnectRefused);
    assert_eq!(r.stats.requests, 0);
    assert_eq!(r.stats.connects, 0);
    // 2 Webchildren backing off 10 ms each cannot fail more than ~60 times in 300 ms.
    let most = 100 * window.as_millis() as u64 / 300;
    assert!(
        r.stats.errors.total() <= most,
        "no back-off in {window:?}: {:?}",
        r.stats.errors
    );
}

#[test]
fn reset_mid_body_is_reset() {
    let srv = TestServer::start(Behaviour::ResetMidBody);
    let r = every_page_fails_as(srv.addr, ErrorKind::Reset, |_| {});
    assert_eq!(r.stats.requests, 0);
    assert!(r.stats.connects > 0);
}

#[test]
fn short_body_then_close_is_short_body() {
    let srv = TestServer::start(Behaviour::ShortBody);
    let r = every_page_fails_as(srv.addr, ErrorKind::ShortBody, |_| {});
    assert_eq!(r.stats.requests, 0);
    assert_eq!(
        r.stats.bytes_body, 0,
        "an incomplete body is not a counted body"
    );
    assert!(r.stats.bytes_total > 0, "but its bytes were moved");
}

#[test]
fn garbage_status_line_is_malformed_status() {
    let srv = TestServer::start(Behaviour::GarbageStatus);
    let r = every_page_fails_as(srv.addr, ErrorKind::MalformedStatus, |_| {});
    assert_eq!(r.stats.requests, 0);
}

#[test]
fn garbage_headers_are_malformed_headers() {
    let srv = TestServer::start(Behaviour::GarbageHeaders);
    let r = every_page_fails_as(srv.addr, ErrorKind::MalformedHeaders, |_| {});
    assert_eq!(r.stats.requests, 0);
}

#[test]
fn never_answering_server_times_out_and_the_run_ends_on_time() {
    let srv = TestServer::start(Behaviour::NeverAnswer);
    let r = run_for(srv.addr, ms(1000), |c| c.response_timeout = ms(200));
    only(&r, ErrorKind::ResponseTimeout);
    assert_eq!(r.stats.requests, 0);
    // A timeout never fires early, so each of the 2 Webchildren has at most 1000 / 200 = 5;
    // firing late (a loaded machine) only makes fewer, and 800 ms of lateness is needed to
    // make none.
    let timeouts = r.stats.errors.total();
    assert!((1..=2 * 5).contains(&timeouts), "{:?}", r.stats.errors);
}

#[test]
fn run_ends_on_time_when_the_timeout_is_longer_than_the_run() {
    let srv = TestServer::start(Behaviour::NeverAnswer);
    let r = run_for(srv.addr, ms(300), |c| {
        c.response_timeout = Duration::from_secs(30)
    });
    assert_eq!(
        r.stats.errors.total(),
        0,
        "in-flight requests at the end are not errors"
    );
    assert_eq!(r.stats.requests, 0);
    // The window is the schedule's, however late the load thread saw its end.
    assert_eq!(r.duration, ms(300));
}

#[test]
fn status_classes_are_counted_as_requests_and_as_errors() {
    // 4xx and 5xx are errors, as wrk counts them; a 3xx is a response (not followed) unless
    // --expect-status leaves it out.
    let only_2xx: bench::config::ExpectStatus = "2xx".parse().unwrap();
    for (code, kind, expect) in [
        (404, Some(ErrorKind::Status4xx), None),
        (500, Some(ErrorKind::Status5xx), None),
        (301, None, None),
        (301, Some(ErrorKind::Status3xx), Some(only_2xx)),
    ] {
        let srv = TestServer::start(Behaviour::Status(code));
        let mut cfg = config(srv.addr, 2, Stop::Pages(10));
        cfg.threads = 1;
        cfg.expect_status = expect;
        let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
        assert_eq!(r.stats.requests, 10, "{code}: the responses completed");
        let errors = if kind.is_some() { 10 } else { 0 };
        if let Some(kind) = kind {
            assert_eq!(r.stats.errors.get(kind), 10, "{code}");
        }
        assert_eq!(r.stats.errors.total(), errors, "{code}");
        assert_eq!(
            r.stats.pages[0].hits,
            10 - errors,
            "{code}: a page with an error status is not a hit"
        );
        assert_eq!(r.stats.pages[0].errors, errors, "{code}");
        assert_eq!(r.stats.connects, 2, "{code}: the connection is kept");
        assert_eq!(srv.seen.requests(), 10, "{code}: a 3xx is not followed");
    }
}

#[test]
fn an_error_ends_the_page_before_its_other_files() {
    let srv = TestServer::start(Behaviour::Status(404));
    let w = workload(&[("p", 1.0, &["/a", "/b"])]);
    let r = bench::run(
        &config(srv.addr, 1, Stop::Pages(3)),
        &w,
        &AtomicBool::new(false),
    )
    .unwrap();
    assert_eq!(r.stats.urls[0].requests, 3);
    assert_eq!(r.stats.urls[1].requests, 0);
    assert_eq!(srv.seen.requests(), 3);
}

#[test]
fn connect_timeout_is_connect_timeout() {
    // A listener that never accepts, with a backlog of 0: once its queue holds one connection,
    // the kernel drops further SYNs, so connects hang until our timeout.
    let l = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    l.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    l.listen(0).unwrap();
    let addr = l.local_addr().unwrap().as_socket().unwrap();
    let fillers: Vec<_> = (0..4)
        .map(|_| {
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            s.set_nonblocking(true).unwrap();
            let _ = s.connect(&addr.into());
            s
        })
        .collect();
    every_page_fails_as(addr, ErrorKind::ConnectTimeout, |c| {
        c.connect_timeout = ms(150)
    });
    drop(fillers);
}

#[test]
fn stop_flag_ends_the_run_early_with_what_was_measured() {
    let srv = TestServer::start(Behaviour::Good(10));
    let stop = AtomicBool::new(false);
    let cfg = config(srv.addr, 2, Stop::Duration(Duration::from_secs(20)));
    let t0 = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(ms(200));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        bench::run(&cfg, &one_file(), &stop).unwrap()
    });
    // Stopped long before the 20 s asked for; the margins are for a loaded machine.
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(r.interrupted);
    assert!(r.stats.requests > 0);
    assert!(r.duration < Duration::from_secs(10), "{:?}", r.duration);
}

#[test]
fn bytes_of_responses_in_flight_at_the_end_are_read_but_not_moved() {
    // Both Webchildren have their half body before the end (a longer window when a busy machine
    // had not got them there).
    let (r, window) = until_busy(
        ms(400),
        |window| {
            let srv = TestServer::start(Behaviour::StallMidBody);
            let r = run_for(srv.addr, window, |c| {
                c.response_timeout = Duration::from_secs(30)
            });
            (r, window)
        },
        |(r, _)| r.stats.unfinished == 2 && r.stats.bytes_total >= 2 * 500_000,
    );
    assert_eq!(r.stats.requests, 0);
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.unfinished, 2, "both Webchildren's requests");
    assert_eq!(r.stats.data_moved(), 0);
    assert!(
        r.stats.bytes_total >= 2 * 500_000,
        "{}",
        r.stats.bytes_total
    );
    assert_eq!(r.stats.bytes_unfinished, r.stats.bytes_total);
    // In the closed loop they stay out of the latencies, with a figure of their own.
    assert_eq!(r.stats.response.count(), 0);
    assert_eq!(r.stats.unfinished_wait.count(), 2);
    assert!(r.stats.unfinished_wait.summary().max <= window.as_millis() as f64);
}

#[test]
fn failed_requests_are_logged_with_their_kind() {
    let srv = TestServer::start(Behaviour::ShortBody);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.csv");
    let mut cfg = config(srv.addr, 1, Stop::Pages(3));
    cfg.log = Some(path.clone());
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap();
    assert_eq!(r.stats.errors.get(ErrorKind::ShortBody), 3);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len(), 3);
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f[9], "200", "{l}");
        assert_eq!(f[8], "", "no response time for a failed request: {l}");
        assert_eq!(f[12], "short_body", "{l}");
    }
}
