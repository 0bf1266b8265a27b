//! `--pipeline N`: at most N requests of a page in flight on a connection, one more written as
//! each response completes; a bare `--pipeline` writes the whole page at once.

use crate::common;
use crate::per_connection;

use bench::{HttpMode, Stop};
use common::{config, workload};
use per_connection::{HeadEnds, PerConnection};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// Answers requests in order, each a moment after it arrived, and keeps the most requests it
/// ever held unanswered.
fn serve(mut s: TcpStream, most: &AtomicU64, stop: &AtomicBool) {
    let _ = s.set_read_timeout(Some(Duration::from_millis(3)));
    let (mut buf, mut heads, mut pending) = ([0u8; 4096], HeadEnds::default(), 0u64);
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                pending += buf[..n].iter().filter(|&&b| heads.at(b)).count() as u64;
                most.fetch_max(pending, Ordering::Relaxed);
                continue; // read what else came before answering
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
        if pending > 0 {
            pending -= 1;
            if s.write_all(RESPONSE).is_err() {
                return;
            }
        }
    }
}

/// The most requests the server held unanswered over a run of 10 pages of 6 files, and the
/// requests the run counted.
fn most_in_flight(streams: Option<u32>) -> (u64, u64) {
    let most = Arc::new(AtomicU64::new(0));
    let m = most.clone();
    let server = PerConnection::start(move |s, stop| serve(s, &m, stop));
    let addr = server.addr;
    let w = workload(&[("p", 1.0, &["/1", "/2", "/3", "/4", "/5", "/6"])]);
    let mut cfg = config(addr, 1, Stop::Pages(10));
    cfg.http = HttpMode::Pipeline;
    cfg.streams = streams;
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    server.stop();
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    (most.load(Ordering::Relaxed), r.stats.requests)
}

#[test]
fn pipeline_n_keeps_at_most_n_requests_in_flight() {
    let (most, requests) = most_in_flight(Some(2));
    assert_eq!(requests, 60);
    assert!(
        (1..=2).contains(&most),
        "{most} requests in flight with --pipeline 2"
    );
    let (most, requests) = most_in_flight(None);
    assert_eq!(requests, 60);
    assert!(
        most > 2,
        "a bare --pipeline writes the page at once: {most} in flight"
    );
}
