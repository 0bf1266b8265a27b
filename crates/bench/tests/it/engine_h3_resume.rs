//! `--http 3 --tls-resume`: a Webchild's next QUIC connection offers the session its last one
//! was given, and the handshake is counted as resumed. The server (crates/http3's UDP test
//! server) closes a connection left idle past its keep-alive timeout, shorter than the run's
//! think time, so pages go on new connections. Counts are the test, not times: however late
//! the server's close, every handshake after a Webchild's first resumes.

use crate::h3_runs;
use crate::udp;

use bench::config::TlsOptions;
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use test_support::certs::TestCa;

const PAGES: u64 = 6;
const BODY: u64 = 3_000;

/// A server whose connections close after 100 ms with no request.
fn server(ca: &TestCa) -> udp::UdpServer {
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let timeouts = http3::Timeouts {
        keep_alive: Duration::from_millis(100),
        ..http3::Timeouts::default()
    };
    let config = http3::ServerConfig::new(&cert, &key, &http3::Limits::default())
        .unwrap()
        .timeouts(timeouts);
    udp::UdpServer::start(config)
}

fn run(ca: &TestCa, server: &udp::UdpServer, resume: bool, clients: usize) -> RunResult {
    let config = BenchConfig {
        concurrency: clients,
        threads: 1,
        stop: Stop::Pages(PAGES * clients as u64),
        http: HttpMode::Http3,
        think: Some(Duration::from_millis(500)),
        connect_timeout: Duration::from_secs(10),
        response_timeout: Duration::from_secs(10),
        tls: TlsOptions {
            cacert: Some(ca.pem.clone()),
            resume,
            ..TlsOptions::default()
        },
        ..BenchConfig::new(Target::https(server.addr, "localhost"))
    };
    let workload = Workload::parse(
        &format!("[[page]]\nname = \"p\"\nweight = 1\nfiles = [\"/bytes/{BODY}\"]\n"),
        "test",
    )
    .unwrap();
    bench::run(&config, &workload, &AtomicBool::new(false)).unwrap()
}

#[test]
fn every_connection_after_a_webchilds_first_resumes_its_session() {
    let ca = TestCa::new("flint bench h3 resume test CA");
    let server = server(&ca);
    let clients = 2;
    let r = run(&ca, &server, true, clients);
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, PAGES * clients as u64);
    assert_eq!(s.bytes_body, PAGES * clients as u64 * BODY);
    let conns = s.http3.connections;
    assert!(
        conns > clients as u64,
        "the server's keep-alive close makes new connections: {conns}"
    );
    assert_eq!(s.tls_handshakes, conns, "each QUIC handshake is counted");
    assert_eq!(
        s.tls_resumed,
        conns - clients as u64,
        "all but each Webchild's first connection resume"
    );
    // The server's counts, once its connections are closed, agree: the requests it was handed
    // are bench's, exactly; its resumed handshakes are no fewer than bench's, so bench's are
    // not its own guess (a connection begun as the run stopped may add one bench did not
    // count).
    assert_eq!(h3_runs::settled(&server).0, s.requests + s.unfinished);
    let at_server = server.log.lock().unwrap().resumed;
    assert!(
        at_server >= s.tls_resumed,
        "server {at_server}, bench {}",
        s.tls_resumed
    );
    // The reports say it: the summary's TLS line (the suite not made up) and WebSTONE's.
    let text = bench::report::summary(&r);
    let line = format!(
        "TLS:       TLSv1.3 (suite and group not exposed by quiche), ALPN h3; {} handshakes, {} resumed",
        s.tls_handshakes, s.tls_resumed
    );
    assert!(text.contains(&line), "{text}");
    let webstone = bench::report::webstone(&r);
    let line = format!(
        "Total number of TLS handshakes: {} ({} resumed)",
        s.tls_handshakes, s.tls_resumed
    );
    assert!(webstone.contains(&line), "{webstone}");
    assert!(webstone.contains("the QUIC handshake"), "{webstone}");
    let json = bench::report::json(&r);
    assert_eq!(json["summary"]["tls"]["version"], "TLSv1_3");
    assert_eq!(json["summary"]["tls"]["handshakes"], s.tls_handshakes);
}

#[test]
fn without_tls_resume_no_handshake_is_counted_as_resumed() {
    let ca = TestCa::new("flint bench h3 resume test CA");
    let server = server(&ca);
    let r = run(&ca, &server, false, 1);
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, PAGES);
    let conns = s.http3.connections;
    assert!(conns > 1, "{conns}");
    // The server's own counts, once its connections are closed (a handshake finished as the
    // run stopped is in them): the requests bench counted, and without the flag no session is
    // offered, so none resumes.
    assert_eq!(h3_runs::settled(&server).0, s.requests + s.unfinished);
    let at_server = server.log.lock().unwrap().resumed;
    assert_eq!(at_server, 0, "the server resumed");
    assert_eq!(s.tls_handshakes, conns, "each QUIC handshake is counted");
    assert_eq!(s.tls_resumed, 0);
}
