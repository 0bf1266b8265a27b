//! A QUIC server that agrees to ALPN h3 but has no HTTP/3 behind it (no control stream; each
//! request stream ended with nothing on it, as an aioquic server with no HTTP/3 layer does):
//! bench closes each connection over the server's error (`h3_protocol`: a CONNECTION_CLOSE
//! with H3_GENERAL_PROTOCOL_ERROR, the server hears it) and the next page has a new one, so a
//! run fails each page once instead of spinning through streams on one connection.

use crate::quiche_server::RawServer;
use bench::stats::ErrorKind;
use bench::Workload;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

const BOUND: Duration = Duration::from_secs(20);

#[test]
fn each_connection_is_closed_over_a_stream_ended_without_a_head() {
    let ca = TestCa::new("flint bench QUIC-only test CA");
    let server = RawServer::start(&ca, Vec::new());
    let pages = 4;
    let config = server.bench_config(&ca, pages, Duration::from_secs(10));
    let workload = Workload::from_paths(&["/".to_string()]).unwrap();
    let started = Instant::now();
    let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    let s = &r.stats;
    // Each page's file failed once, each on a connection of its own, which bench closed.
    assert_eq!(s.errors.get(ErrorKind::H3Protocol), pages, "{:?}", s.errors);
    assert_eq!(s.errors.total(), pages, "{:?}", s.errors);
    assert_eq!(s.http3.connections, pages, "{:?}", s.http3);
    // The server heard each close, with HTTP/3's H3_GENERAL_PROTOCOL_ERROR.
    let start = Instant::now();
    let heard = || server.closes.lock().unwrap().clone();
    while heard().iter().any(Option::is_none) && start.elapsed() < BOUND {
        std::thread::sleep(Duration::from_millis(10));
    }
    let closes = heard();
    assert_eq!(closes.len() as u64, pages, "{closes:?}");
    assert!(
        closes.iter().all(|c| *c == Some((true, 0x101))),
        "{closes:?}"
    );
}
