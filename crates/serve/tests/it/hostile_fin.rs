//! A client's FIN that arrives in the same segment as its last request is seen: the server
//! answers, reads on to the end of input and closes, instead of leaving the socket in CLOSE_WAIT
//! until the keep-alive timeout (60 s here). Plain and TLS, 20 trials each: the request and the
//! FIN are corked into one segment, so the server gets them as one epoll edge.

use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::tls_support::*;
use socket2::SockRef;

const TRIALS: usize = 20;
/// Far below the keep-alive timeout: the close follows the FIN, not a timer.
const CLOSED_WITHIN: Duration = Duration::from_secs(3);

/// Sockets of the server's port in CLOSE_WAIT (state 08 in /proc/net/tcp).
fn close_wait(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let local_port = f[1].rsplit(':').next().unwrap_or("");
            u16::from_str_radix(local_port, 16) == Ok(port) && f[3] == "08"
        })
        .count()
}

/// Until the server's close is seen: EOF, a reset, or (TLS) EOF without close_notify.
fn wait_closed(r: &mut impl Read) -> Duration {
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return start.elapsed(),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return start.elapsed(),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return start.elapsed(),
            Err(e) => panic!("not closed after {:?}: {e}", start.elapsed()),
        }
    }
}

fn corked(s: &TcpStream) {
    SockRef::from(s).set_tcp_cork(true).unwrap();
    s.set_read_timeout(Some(CLOSED_WITHIN)).unwrap();
}

#[test]
fn plain_fin_with_the_last_request_closes_at_once() {
    let srv = TestServer::start(|c| c.keepalive_timeout_ms = 60_000);
    for trial in 0..TRIALS {
        let mut s = connect(srv.addr);
        // A first exchange, so the connection is registered and idle when the last one comes.
        s.write_all(get("/a.txt").as_bytes()).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        assert_eq!(read_response(&mut r, false).unwrap().status, 200);
        corked(&s);
        s.write_all(get("/1k.bin").as_bytes()).unwrap();
        s.shutdown(Shutdown::Write).unwrap(); // the FIN rides on the request's segment
        assert_eq!(read_response(&mut r, false).unwrap().status, 200);
        let waited = wait_closed(&mut r);
        assert!(waited < CLOSED_WITHIN, "trial {trial}: {waited:?}");
    }
    assert!(eventually(WAIT, || close_wait(srv.addr.port()) == 0));
    let st = srv.stop();
    assert_eq!((st.requests, st.idle_timeouts), (2 * TRIALS as u64, 0));
}

#[test]
fn tls_fin_with_the_last_request_closes_at_once() {
    let certs = Certs::new(false);
    let srv = certs.serve(|c| c.keepalive_timeout_ms = 60_000);
    let client = certs.client(&both_versions());
    for trial in 0..TRIALS {
        let mut s = tls_connect(srv.addr, &client);
        s.write_all(get("/a.txt").as_bytes()).unwrap();
        assert_eq!(
            read_response(&mut BufReader::new(&mut s), false)
                .unwrap()
                .status,
            200
        );
        corked(&s.sock);
        s.write_all(get("/1k.bin").as_bytes()).unwrap();
        s.sock.shutdown(Shutdown::Write).unwrap();
        let mut r = BufReader::new(&mut s);
        assert_eq!(read_response(&mut r, false).unwrap().status, 200);
        let waited = wait_closed(&mut r);
        assert!(waited < CLOSED_WITHIN, "trial {trial}: {waited:?}");
    }
    assert!(eventually(WAIT, || close_wait(srv.addr.port()) == 0));
    let st = srv.stop();
    assert_eq!((st.requests, st.idle_timeouts), (2 * TRIALS as u64, 0));
}
