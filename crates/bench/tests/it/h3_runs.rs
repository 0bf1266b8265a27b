//! What the HTTP/3 engine tests against crates/http3's UDP test server start alike: the server
//! with its certificate from a fresh test CA, a run's configuration that trusts that CA, a
//! workload of uploads, and the server's final count once a run is over.

use crate::udp;

use bench::config::TlsOptions;
use bench::{BenchConfig, HttpMode, RequestSpec, Stop, Target, Workload};
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

/// The longest [`settled`] waits: past the 30 s QUIC idle timeout that ends a connection whose
/// close was lost.
const SETTLE: Duration = Duration::from_secs(45);

/// The UDP test server with `limits`, its certificate issued by the returned CA.
pub fn server(what: &str, limits: &http3::Limits) -> (TestCa, udp::UdpServer) {
    let ca = TestCa::new(what);
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let server = udp::UdpServer::start(http3::ServerConfig::new(&cert, &key, limits).unwrap());
    (ca, server)
}

/// An HTTP/3 run against `server` trusting `ca`: one thread, `concurrency` Webchildren, stopped
/// by `stop`, a 5 s connect timeout and a 10 s response timeout (the struct update changes the
/// rest).
pub fn config(ca: &TestCa, server: &udp::UdpServer, concurrency: usize, stop: Stop) -> BenchConfig {
    BenchConfig {
        concurrency,
        threads: 1,
        stop,
        http: HttpMode::Http3,
        connect_timeout: std::time::Duration::from_secs(5),
        response_timeout: std::time::Duration::from_secs(10),
        tls: TlsOptions {
            cacert: Some(ca.pem.clone()),
            ..TlsOptions::default()
        },
        ..BenchConfig::new(Target::https(server.addr, "localhost"))
    }
}

/// One page: a POST of `size` bytes to `path`.
pub fn uploads(path: &str, size: usize) -> Workload {
    let mut workload = Workload::from_paths(&[path.to_string()]).unwrap();
    workload.requests = vec![RequestSpec {
        method: Some("POST".into()),
        body: Some(vec![b'u'; size]),
        ..RequestSpec::default()
    }];
    workload
}

/// The requests the server was handed, and of those the early ones (0-RTT), once a run is over
/// and every connection the server had is closed (bench's close, or the server's timeouts):
/// nothing more can come then, so a request more than bench counted is in the count, however
/// late it reached the server. Told by a turn of the server's loop begun after the call (so
/// after the run: every datagram bench sent read) that found no connection open; a run that
/// never got a connection up is settled too. Panics past [`SETTLE`].
pub fn settled(server: &udp::UdpServer) -> (u64, u64) {
    let start = Instant::now();
    // The turn under way may have read its datagrams before the call; the one after has not.
    let after = server.log.lock().unwrap().turns + 2;
    loop {
        {
            let l = server.log.lock().unwrap();
            if l.turns >= after && l.connections == 0 {
                return (l.requests, l.early);
            }
            assert!(
                start.elapsed() < SETTLE,
                "connections still open after {SETTLE:?}: {l:?}"
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_server_that_saw_no_connection_is_settled() {
    // A timed run on a busy machine may end before its first handshake: nothing to wait for.
    let (_ca, server) = server("flint bench h3 settled test CA", &http3::Limits::default());
    assert_eq!(settled(&server), (0, 0));
}
