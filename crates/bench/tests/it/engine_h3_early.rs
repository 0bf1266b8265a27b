//! `--http 3 --tls-resume --early-data`: a Webchild's resumed connection sends its page's
//! requests in 0-RTT. The server (crates/http3's UDP test server, 0-RTT on) closes a
//! connection left idle past its keep-alive timeout, shorter than the run's think time, so
//! pages go on new, resumed connections. The server's own count is the test: requests it was
//! handed while their connection was still in 0-RTT (> 0 with the option, 0 without), and
//! every request it saw is one bench counted, done or unfinished. Counts, not times.

use crate::udp;

use bench::config::TlsOptions;
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

const PAGES: u64 = 5;
const FILES: u64 = 3;
const BODY: u64 = 2_000;

/// A server accepting 0-RTT whose connections close after 100 ms with no request.
fn server(ca: &TestCa) -> udp::UdpServer {
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let timeouts = http3::Timeouts {
        keep_alive: Duration::from_millis(100),
        ..http3::Timeouts::default()
    };
    let config = http3::ServerConfig::new(&cert, &key, &http3::Limits::default())
        .unwrap()
        .timeouts(timeouts)
        .early_data(true);
    udp::UdpServer::start(config)
}

fn run(ca: &TestCa, server: &udp::UdpServer, early_data: bool) -> RunResult {
    let config = BenchConfig {
        concurrency: 1,
        threads: 1,
        stop: Stop::Pages(PAGES),
        http: HttpMode::Http3,
        think: Some(Duration::from_millis(400)),
        connect_timeout: Duration::from_secs(10),
        response_timeout: Duration::from_secs(10),
        tls: TlsOptions {
            cacert: Some(ca.pem.clone()),
            resume: true,
            ..TlsOptions::default()
        },
        h3_early_data: early_data,
        ..BenchConfig::new(Target::https(server.addr, "localhost"))
    };
    let files: Vec<String> = (0..FILES).map(|_| format!("\"/bytes/{BODY}\"")).collect();
    let workload = Workload::parse(
        &format!(
            "[[page]]\nname = \"p\"\nweight = 1\nfiles = [{}]\n",
            files.join(", ")
        ),
        "test",
    )
    .unwrap();
    bench::run(&config, &workload, &AtomicBool::new(false)).unwrap()
}

/// The server's (requests, early requests) once it has seen `want` requests, or after 10 s.
fn at_server(server: &udp::UdpServer, want: u64) -> (u64, u64) {
    let start = Instant::now();
    loop {
        let (requests, early) = {
            let l = server.log.lock().unwrap();
            (l.requests, l.early)
        };
        if requests >= want || start.elapsed() > Duration::from_secs(10) {
            return (requests, early);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn resumed_connections_send_their_pages_in_0rtt_and_the_server_sees_them_early() {
    let ca = TestCa::new("flint bench h3 0-RTT test CA");
    let server = server(&ca);
    let r = run(&ca, &server, true);
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, PAGES * FILES);
    let h = &s.http3;
    assert!(h.connections > 1, "new connections: {}", h.connections);
    assert_eq!(s.tls_resumed, h.connections - 1, "all but the first resume");
    assert_eq!(
        h.early_offered, s.tls_resumed,
        "each resumed one sent early"
    );
    assert_eq!(h.early_accepted, h.early_offered, "{h:?}");
    assert_eq!(h.early_rejected, 0);
    assert_eq!(
        h.early_requests,
        h.early_offered * FILES,
        "a page's files each"
    );
    // A 0-RTT connection's handshake is its connect row's time, as any QUIC connection's:
    // measured, not the "never" a taken connect time leaves behind.
    let (handshake, connect) = (s.tls_handshake.summary(), s.connect.summary());
    assert_eq!(handshake.count, h.connections, "one handshake a connection");
    assert!(
        handshake.max <= connect.max && handshake.mean <= connect.mean,
        "TLS handshake {handshake:?}, connect {connect:?}"
    );
    let (requests, early) = at_server(&server, s.requests + s.unfinished);
    assert_eq!(
        requests,
        s.requests + s.unfinished,
        "every request the server saw"
    );
    // The server's own count: a request whose connection finished its handshake before the
    // server got to it is not early there, so it may see fewer than bench sent.
    assert!(
        early > 0 && early <= h.early_requests,
        "server {early}, bench {}",
        h.early_requests
    );
    let text = bench::report::summary(&r);
    let said = format!(
        "0-RTT on {} connections ({} accepted, 0 rejected), {} requests",
        h.early_offered, h.early_accepted, h.early_requests
    );
    assert!(text.contains(&said), "{text}");
    let json = bench::report::json(&r);
    assert_eq!(json["summary"]["http3"]["early_accepted"], h.early_accepted);
}

#[test]
fn without_early_data_nothing_is_sent_in_0rtt() {
    let ca = TestCa::new("flint bench h3 0-RTT test CA");
    let server = server(&ca);
    let r = run(&ca, &server, false);
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, PAGES * FILES);
    assert!(s.tls_resumed > 0, "sessions resumed: {}", s.tls_resumed);
    let (requests, early) = at_server(&server, s.requests + s.unfinished);
    assert_eq!(requests, s.requests + s.unfinished);
    assert_eq!(early, 0, "the server saw requests in 0-RTT");
    let h = &s.http3;
    assert_eq!((h.early_offered, h.early_requests), (0, 0));
    assert!(!bench::report::summary(&r).contains("0-RTT"));
}
