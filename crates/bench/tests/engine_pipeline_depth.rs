//! `--pipeline N`: at most N requests of a page in flight on a connection, one more written as
//! each response completes; a bare `--pipeline` writes the whole page at once.

mod common;

use bench::{HttpMode, Stop};
use common::{config, workload};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// Answers requests in order, each a moment after it arrived, and keeps the most requests it
/// ever held unanswered.
fn serve(mut s: TcpStream, most: &AtomicU64, stop: &AtomicBool) {
    let _ = s.set_read_timeout(Some(Duration::from_millis(3)));
    let (mut buf, mut matched, mut pending) = ([0u8; 4096], 0, 0u64);
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                for &b in &buf[..n] {
                    matched = if b == b"\r\n\r\n"[matched] {
                        matched + 1
                    } else {
                        usize::from(b == b'\r')
                    };
                    if matched == 4 {
                        matched = 0;
                        pending += 1;
                    }
                }
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
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let most = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (m, st) = (most.clone(), stop.clone());
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let (m, st) = (m.clone(), st.clone());
            std::thread::spawn(move || serve(s, &m, &st));
        }
    });
    let w = workload(&[("p", 1.0, &["/1", "/2", "/3", "/4", "/5", "/6"])]);
    let mut cfg = config(addr, 1, Stop::Pages(10));
    cfg.http = HttpMode::Pipeline;
    cfg.streams = streams;
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).expect("run");
    stop.store(true, Ordering::Relaxed);
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
