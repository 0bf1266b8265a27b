//! `--redirect N`, held to a server that records every request it receives: each redirect
//! followed is a request the server counted (so its count is `requests + unfinished`, exactly,
//! in every HTTP/1 mode and whenever the run ends), a page entry's response time runs from its
//! first request to its final response, and a redirect that cannot be followed, or one past N,
//! is counted as such.

use crate::common;
use crate::h2server;

use bench::stats::{ErrorKind, Unfollowed};
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use common::timed::until_busy;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use test_support::recording::Recording;

/// The server's time per answer: the end of a timed run lands in every state of a chain.
const DELAY: Duration = Duration::from_millis(1);
/// The first window of a timed run (longer only when a busy machine left it nothing to end).
const WINDOW: Duration = Duration::from_millis(150);

fn workload(paths: &[&str]) -> Workload {
    let page = bench::Page {
        name: "p".into(),
        weight: 1.0,
        files: (0..paths.len()).collect(),
    };
    Workload {
        pages: vec![page],
        urls: paths.iter().map(|p| p.to_string()).collect(),
        requests: Vec::new(),
        app: Default::default(),
    }
}

fn config(srv: &Recording, http: HttpMode, redirect: u32, stop: Stop) -> BenchConfig {
    BenchConfig {
        concurrency: 4,
        threads: 2,
        stop,
        http,
        redirect,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        ..BenchConfig::new(Target::http(srv.addr))
    }
}

/// A run, and the server's final count.
fn run(paths: &[&str], http: HttpMode, redirect: u32, stop: Stop) -> (RunResult, u64) {
    let srv = Recording::start(DELAY);
    let r = bench::run(
        &config(&srv, http, redirect, stop),
        &workload(paths),
        &AtomicBool::new(false),
    )
    .unwrap();
    let received = srv
        .settled(Duration::from_secs(10))
        .expect("connections end");
    (r, received)
}

fn status(r: &RunResult, code: u16) -> u64 {
    r.stats.statuses.get(code)
}

#[test]
fn a_chain_within_n_is_followed_and_every_hop_is_a_request_the_server_counted() {
    for http in [HttpMode::KeepAlive, HttpMode::Http10, HttpMode::Pipeline] {
        let (r, received) = run(
            &["/hop/3/301/a", "/f", "/hop/1/307/b"],
            http,
            3,
            Stop::Pages(40),
        );
        let s = &r.stats;
        let what = format!("{http:?}: {:?}, server {received}", s.errors);
        assert_eq!(s.errors.total(), 0, "{what}");
        assert_eq!(s.pages_done, 40, "{what}");
        // Each page: 4 + 1 + 2 requests, of which 3 + 1 redirects followed.
        assert_eq!(s.requests, 40 * 7, "{what}");
        assert_eq!(received, s.requests, "{what}");
        assert_eq!(s.redirects.followed, 40 * 4, "{what}");
        assert_eq!(status(&r, 301), 40 * 3, "{what}");
        assert_eq!(status(&r, 307), 40, "{what}");
        assert_eq!(status(&r, 200), 40 * 3, "{what}");
        // One response time per page entry, from its first request to its final response.
        assert_eq!(s.response.count(), 40 * 3, "{what}");
        assert!(
            s.response_us_max >= 4 * DELAY.as_micros() as u64,
            "{what}: a 4-request entry took {} µs",
            s.response_us_max
        );
    }
}

#[test]
fn a_relative_location_resolves_against_the_request() {
    let (r, received) = run(&["/rel/3/x"], HttpMode::KeepAlive, 5, Stop::Pages(10));
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!((r.stats.requests, received), (40, 40));
    assert_eq!(status(&r, 200), 10);
}

#[test]
fn without_redirect_a_3xx_is_the_response_as_before() {
    let (r, received) = run(&["/hop/2/302/a"], HttpMode::KeepAlive, 0, Stop::Pages(20));
    assert_eq!((r.stats.requests, received), (20, 20));
    assert_eq!(status(&r, 302), 20);
    assert_eq!(r.stats.redirects, Default::default());
    assert_eq!(r.stats.errors.total(), 0);
}

#[test]
fn a_loop_past_n_is_too_many_redirects() {
    for http in [HttpMode::KeepAlive, HttpMode::Http10, HttpMode::Pipeline] {
        let (r, received) = run(&["/loop", "/f"], http, 2, Stop::Pages(10));
        let s = &r.stats;
        let what = format!("{http:?}: {:?}", s.errors);
        // The first request and 2 followed, the third 302 an error: the page ends there (its
        // second file, after a failed one, is not fetched, as after any error).
        assert_eq!(s.errors.get(ErrorKind::TooManyRedirects), 10, "{what}");
        assert_eq!(s.errors.total(), 10, "{what}");
        assert_eq!(s.redirects.followed, 20, "{what}");
        assert_eq!(status(&r, 302), 30, "{what}");
        assert_eq!(received, s.requests, "{what}");
    }
}

#[test]
fn what_cannot_be_followed_is_the_response_counted_by_why() {
    let paths = ["/away", "/nowhere", "/bad"];
    let (r, received) = run(&paths, HttpMode::KeepAlive, 5, Stop::Pages(10));
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!((s.requests, received), (30, 30));
    assert_eq!(status(&r, 302), 30);
    assert_eq!(s.redirects.followed, 0);
    let seen: Vec<(Unfollowed, u64)> = s.redirects.unfollowed_seen().collect();
    assert_eq!(
        seen,
        [
            (Unfollowed::CrossOrigin, 10),
            (Unfollowed::NoLocation, 10),
            (Unfollowed::BadLocation, 10)
        ]
    );
}

/// Timed runs that end anywhere in a chain: the server's count is `requests + unfinished`.
#[test]
fn the_end_of_a_run_is_exact_in_the_middle_of_a_chain() {
    let started = Instant::now();
    for http in [HttpMode::KeepAlive, HttpMode::Http10, HttpMode::Pipeline] {
        let mut caught = 0;
        for i in 0..12 {
            // A window long enough to have followed a redirect before its end.
            let (r, what) = until_busy(
                WINDOW,
                |window| {
                    let stop = Stop::Duration(window);
                    let (r, received) = run(&["/hop/3/302/a", "/f", "/loop"], http, 4, stop);
                    let s = &r.stats;
                    let what = format!(
                        "{http:?} run {i}, {window:?}: server {received}, requests {}, \
                         unfinished {}, unsent {}",
                        s.requests, s.unfinished, s.unsent_at_end
                    );
                    assert_eq!(received, s.requests + s.unfinished, "{what}");
                    let other = s.errors.total() - s.errors.get(ErrorKind::TooManyRedirects);
                    assert_eq!(other, 0, "{what}: {:?}", s.errors);
                    (r, what)
                },
                |(r, _)| r.stats.redirects.followed > 0,
            );
            assert!(r.stats.redirects.followed > 0, "{what}");
            caught += usize::from(r.stats.unfinished > 0);
        }
        assert!(
            caught > 0,
            "{http:?}: no run ended with a request in flight"
        );
    }
    println!("36 runs in {:?}", started.elapsed());
}

/// HTTP/2: a redirect is a new stream of the connection; timed runs that end anywhere in a
/// chain leave the server's count of streams at `requests + unfinished`, for one-file pages (a
/// redirect, then its target) and for a page's files as concurrent streams (where a target may
/// be answered by another redirect: then past `--redirect 1`, an error of its own).
#[test]
fn http2_follows_as_new_streams_and_is_exact_at_every_end() {
    use h2server::{Fault, H2Server};
    use std::sync::atomic::Ordering;
    for files in [1, 3] {
        let paths: Vec<String> = (0..files).map(|i| format!("/f{i}")).collect();
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        let mut caught = 0;
        for i in 0..12 {
            let (r, what) = until_busy(
                WINDOW,
                |window| {
                    let srv = H2Server::start(Fault::RedirectOdd);
                    let cfg = BenchConfig {
                        concurrency: 4,
                        threads: 2,
                        stop: Stop::Duration(window),
                        http: HttpMode::Http2,
                        redirect: 1,
                        connect_timeout: Duration::from_secs(5),
                        response_timeout: Duration::from_secs(5),
                        ..BenchConfig::new(Target::http(srv.addr))
                    };
                    let r = bench::run(&cfg, &workload(&paths), &AtomicBool::new(false)).unwrap();
                    let s = &r.stats;
                    assert!(srv.quiet(Duration::from_secs(10)), "connections end");
                    let seen = srv.streams.load(Ordering::SeqCst);
                    let what = format!(
                        "{files} files, run {i}, {window:?}: server {seen}, requests {}, \
                         unfinished {}, unsent {}, errors {:?}",
                        s.requests, s.unfinished, s.unsent_at_end, s.errors
                    );
                    assert_eq!(seen, s.requests + s.unfinished, "{what}");
                    let other = s.errors.total() - s.errors.get(ErrorKind::TooManyRedirects);
                    assert_eq!(other, 0, "{what}");
                    if files == 1 {
                        // One stream at a time: every redirect's target is the even stream, a
                        // 200.
                        assert_eq!(s.errors.total(), 0, "{what}");
                        let pages = s.pages_done;
                        assert!(s.redirects.followed >= pages, "{what}: pages {pages}");
                    }
                    (r, what)
                },
                |(r, _)| r.stats.redirects.followed > 0,
            );
            assert!(r.stats.redirects.followed > 0, "{what}");
            caught += usize::from(r.stats.unfinished > 0);
        }
        assert!(
            caught > 0,
            "{files} files: no run ended with a stream in flight"
        );
    }
}
