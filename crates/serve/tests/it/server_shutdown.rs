//! Graceful shutdown through the handle: responses under way finish, idle connections close,
//! new connections are refused, `run` returns (within the grace when a client stalls).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::*;

#[test]
fn response_in_flight_completes_after_shutdown() {
    let mut srv = TestServer::start(|c| c.send_timeout_ms = 5000);
    // An idle keep-alive connection, between requests.
    let mut idle = connect(srv.addr);
    idle.write_all(get("/a.txt").as_bytes()).unwrap();
    let mut idle = BufReader::new(idle);
    assert_eq!(read_response(&mut idle, false).unwrap().status, 200);
    // A large response under way: the server has filled the socket and waits for the client.
    let mut busy = connect(srv.addr);
    busy.write_all(get("/4m.bin").as_bytes()).unwrap();
    let mut busy = BufReader::new(busy);
    let mut status = String::new();
    busy.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"));
    assert!(eventually(WAIT, || srv.stats().sendfiles > 0));

    srv.handle.shutdown();

    assert!(closed_by_peer(&mut idle), "the idle connection is closed");
    let refused = eventually(WAIT, || match TcpStream::connect(srv.addr) {
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionRefused,
        Ok(_) => false,
    });
    assert!(refused, "new connections are refused");
    // The response under way arrives whole, then the connection closes.
    let mut rest = Vec::new();
    busy.read_to_end(&mut rest).unwrap();
    let body_at = rest.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(
        rest[body_at..] == content("4m.bin", 4 << 20)[..],
        "body intact"
    );
    let st = srv.wait_exit().unwrap();
    assert_eq!(st.requests, 2);
    assert_eq!(st.send_timeouts, 0);
}

#[test]
fn idle_server_stops_at_once() {
    let mut srv = TestServer::start(|c| c.threads = 2);
    assert_eq!(exchange(srv.addr, &get("/a.txt")).status, 200);
    let start = Instant::now();
    srv.handle.shutdown();
    srv.handle.shutdown(); // idempotent
    let st = srv.wait_exit().unwrap();
    // "At once": not after the idle connection's keep-alive timeout (60 s); the margin is
    // for a loaded machine.
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(st.threads, 2);
    assert_eq!(st.requests, 1);
}

#[test]
fn stalled_client_does_not_hold_shutdown_past_the_grace() {
    let mut srv = TestServer::start(|c| c.send_timeout_ms = 500);
    std::fs::write(srv.root.path().join("32m.bin"), vec![1u8; 32 << 20]).unwrap();
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.connect(&srv.addr.into()).unwrap();
    let mut s: TcpStream = sock.into();
    s.write_all(get("/32m.bin").as_bytes()).unwrap();
    assert!(eventually(WAIT, || srv.stats().sendfiles > 0));
    let start = Instant::now();
    srv.handle.shutdown();
    srv.wait_exit().unwrap();
    let took = start.elapsed();
    // The client never reads, so without the grace shutdown would never end; with it, it ends
    // about 0.5 s in. The margin is for a loaded machine.
    assert!(took < Duration::from_secs(20), "{took:?}");
    let mut buf = [0u8; 1];
    assert!(
        s.read(&mut buf).is_ok(),
        "still readable: the client got what was sent"
    );
}

#[test]
fn handle_is_clone_send_sync_and_server_is_send() {
    fn handle<T: Clone + Send + Sync + 'static>() {}
    fn server<T: Send + 'static>() {}
    handle::<serve::ShutdownHandle>();
    server::<serve::Server>();
}
