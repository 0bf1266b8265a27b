//! `--http 3 --streams N` with one-file pages: N pages in flight as lanes, streams of one QUIC
//! connection, each refilled as its page ends (as over HTTP/2). Against crates/http3's UDP test
//! server (the `http3::Server` flint serve runs), whose own count of the requests it was handed
//! is the test: every one is a request bench counted or one unfinished at the end, in a `-n`
//! run and in a run cut by its duration with lanes in flight. Counts, not times.

use crate::udp;

use bench::config::TlsOptions;
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
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

/// Two Webchildren, `LANES` lanes each, one-file pages of `BODY` bytes.
fn run(ca: &TestCa, server: &udp::UdpServer, stop: Stop) -> RunResult {
    let config = BenchConfig {
        concurrency: 2,
        threads: 1,
        stop,
        http: HttpMode::Http3,
        streams: Some(LANES),
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(10),
        tls: TlsOptions {
            cacert: Some(ca.pem.clone()),
            ..TlsOptions::default()
        },
        ..BenchConfig::new(Target::https(server.addr, "localhost"))
    };
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

/// The requests the server was handed, once it has seen at least `want` (within 10 s) and
/// the count has stayed the same for half a second.
fn at_server(server: &udp::UdpServer, want: u64) -> u64 {
    let count = || server.log.lock().unwrap().requests;
    let start = Instant::now();
    while count() < want && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut last = count();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = count();
        if now == last || start.elapsed() > Duration::from_secs(30) {
            return now;
        }
        last = now;
    }
}

#[test]
fn lanes_of_one_file_pages_send_every_page_on_one_connection_a_webchild() {
    let ca = TestCa::new("flint bench h3 lanes test CA");
    let server = server(&ca);
    let pages = 400;
    let r = run(&ca, &server, Stop::Pages(pages));
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
    assert_eq!(at_server(&server, pages), s.requests + s.unfinished);
}

#[test]
fn lanes_cut_by_the_duration_account_for_every_request_the_server_saw() {
    let ca = TestCa::new("flint bench h3 lanes test CA");
    let server = server(&ca);
    let r = run(&ca, &server, Stop::Duration(Duration::from_secs(1)));
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
    let seen = at_server(&server, s.requests + s.unfinished);
    assert_eq!(
        seen,
        s.requests + s.unfinished,
        "the server's count against requests {} + unfinished {} (unsent {})",
        s.requests,
        s.unfinished,
        s.unsent_at_end
    );
}
