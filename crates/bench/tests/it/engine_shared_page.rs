//! `--connections-per-client N`: a Webchild's N connections share each page's files, as a
//! browser's six do. A page of 7 files over 6 connections opens 6 connections a Webchild,
//! kept alive from page to page, and its page time is a measurement: at most the sum of its
//! files' times, since they overlap. Over HTTP/1.0, a connection per file, 4 at a time.

use crate::common;

use bench::{HttpMode, Stop};
use common::{config, workload, Behaviour, TestServer};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const PAGE: [&str; 7] = ["/0", "/1", "/2", "/3", "/4", "/5", "/6"];

#[test]
fn seven_files_over_six_kept_alive_connections_a_webchild() {
    // Each response 20 ms after its request: files fetched one at a time would take 140 ms a
    // page; six at once, two rounds.
    let server = TestServer::start(Behaviour::Delayed(Duration::from_millis(20)));
    let w = workload(&[("page", 1.0, &PAGE)]);
    let mut cfg = config(server.addr, 2, Stop::Pages(10));
    cfg.connections_per_child = 6;
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.pages_done, 10);
    assert_eq!(s.requests, 70);
    assert_eq!(server.seen.requests(), 70);
    // Six a Webchild, each kept from its first file to the run's end.
    assert_eq!(server.seen.connections(), 12);
    assert_eq!(s.connects, 12);
    assert_eq!(s.webchildren, 2);
    let (page, response) = (s.page.summary(), s.response.summary());
    let files_time = response.mean * 7.0;
    println!(
        "page mean {:.1} ms, 7 x response mean {files_time:.1} ms",
        page.mean
    );
    assert!(page.mean >= response.mean, "{page:?} {response:?}");
    assert!(
        page.mean <= files_time / 2.0,
        "the page's files did not overlap: {page:?} {response:?}"
    );
}

#[test]
fn http_1_0_opens_a_connection_a_file_four_at_a_time() {
    let server = TestServer::start(Behaviour::Good(100));
    let w = workload(&[("page", 1.0, &PAGE)]);
    let mut cfg = config(server.addr, 1, Stop::Pages(5));
    cfg.http = HttpMode::Http10;
    cfg.connections_per_child = 4;
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.pages_done, 5);
    assert_eq!(s.requests, 35);
    assert_eq!(server.seen.connections(), 35);
    assert_eq!(s.connects, 35);
}

#[test]
fn a_failed_file_fails_its_page_and_the_next_page_goes_on() {
    // Every response a 404: each page is an error, every file still fetched and counted.
    let server = TestServer::start(Behaviour::Status(404));
    let w = workload(&[("page", 1.0, &PAGE)]);
    let mut cfg = config(server.addr, 1, Stop::Pages(3));
    cfg.connections_per_child = 6;
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    let s = &r.stats;
    assert_eq!(s.pages_done, 0);
    assert_eq!(s.pages[0].errors, 3);
    // The six first files of each page are in flight when the first 404 comes: the seventh is
    // not fetched once the page has failed.
    assert_eq!(s.requests, server.seen.requests());
    assert!((18..=21).contains(&s.requests), "{}", s.requests);
}

#[test]
fn groups_are_http_1_in_the_closed_loop() {
    let w = workload(&[("page", 1.0, &PAGE)]);
    let mut cfg = config("127.0.0.1:9".parse().unwrap(), 1, Stop::Pages(1));
    cfg.connections_per_child = 6;
    for (changed, says) in [
        (
            bench::BenchConfig {
                http: HttpMode::Http2,
                ..cfg.clone()
            },
            "--http 2",
        ),
        (
            bench::BenchConfig {
                rate: Some(5.0),
                ..cfg.clone()
            },
            "--rate",
        ),
        (
            bench::BenchConfig {
                connections_per_child: 65,
                ..cfg.clone()
            },
            "1 to 64",
        ),
    ] {
        match bench::run(&changed, &w, &AtomicBool::new(false)) {
            Err(bench::BenchError::Config(m)) => assert!(m.contains(says), "{m}"),
            other => panic!("not refused: {other:?}"),
        }
    }
}
