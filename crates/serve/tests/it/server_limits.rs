//! Every limit with its status and its close: parse errors, request bodies, the header (slowloris),
//! idle and send timeouts, max_connections; and the kernel fact the listener relies on.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::common::*;

/// Sends `raw`, expects `status`, then the server's close.
fn refused_with(addr: SocketAddr, raw: &[u8], status: u16) {
    let mut s = connect(addr);
    s.write_all(raw).unwrap();
    let mut r = BufReader::new(s);
    let resp = read_response(&mut r, false).unwrap();
    assert_eq!(
        resp.status,
        status,
        "{}",
        String::from_utf8_lossy(&raw[..raw.len().min(80)])
    );
    assert!(closed_by_peer(&mut r), "closed after the {status}");
}

#[test]
fn parse_errors_answer_their_status_and_close() {
    let srv = TestServer::start(|_| {});
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(9000));
    refused_with(srv.addr, long_target.as_bytes(), 414);
    let big_header = format!(
        "GET / HTTP/1.1\r\nHost: t\r\nX: {}\r\n\r\n",
        "b".repeat(20_000)
    );
    refused_with(srv.addr, big_header.as_bytes(), 431);
    let many: String = (0..100).map(|i| format!("X-{i}: v\r\n")).collect();
    let many = format!("GET / HTTP/1.1\r\nHost: t\r\n{many}\r\n");
    refused_with(srv.addr, many.as_bytes(), 431);
    refused_with(srv.addr, b"GET / HTTP/1.1\r\nHo st: t\r\n\r\n", 400);
    refused_with(srv.addr, b"\x01\x02 garbage\r\n\r\n", 400);
    refused_with(
        srv.addr,
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
        400,
    );
    refused_with(
        srv.addr,
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\n",
        400,
    );
    refused_with(
        srv.addr,
        b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n",
        501,
    );
    refused_with(srv.addr, b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505);
    let st = srv.stop();
    assert_eq!(st.status_4xx + st.status_5xx, 9);
}

#[test]
fn an_error_after_good_pipelined_requests_answers_them_first() {
    let srv = TestServer::start(|_| {});
    let mut s = connect(srv.addr);
    s.write_all(
        b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/9.9\r\n\r\nGET /a.txt HTTP/1.1\r\n\r\n",
    )
    .unwrap();
    let mut r = BufReader::new(s);
    assert_eq!(read_response(&mut r, false).unwrap().body, b"hello");
    assert_eq!(read_response(&mut r, false).unwrap().status, 505);
    assert!(
        closed_by_peer(&mut r),
        "nothing after the error is answered"
    );
}

#[test]
fn a_body_over_the_limit_gets_413_even_while_it_streams() {
    let srv = TestServer::start(|_| {});
    let s = connect(srv.addr);
    let mut w = s.try_clone().unwrap();
    let body_len = 8 << 20; // over the 1 MiB default
    let writer = std::thread::spawn(move || {
        let head = format!("GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: {body_len}\r\n\r\n");
        let _ = w.write_all(head.as_bytes());
        // The server answers before the body is in: this write may fail once it closes.
        let _ = w.write_all(&vec![b'x'; body_len]);
    });
    let mut r = BufReader::new(s);
    // The server answers, sends FIN, and drains the body until the client is done (a bare close
    // would answer the body's bytes with RST; `close_with_unread_input_...` shows the harm).
    let resp = read_response(&mut r, false).expect("the 413 arrives intact");
    assert_eq!(resp.status, 413);
    assert!(closed_by_peer(&mut r));
    writer.join().unwrap();
    let st = srv.stop();
    assert_eq!(st.lingering_closes, 1);
    assert!(st.read_bytes >= body_len as u64 / 2, "drained: {st:?}");
}

/// What nginx answers a static location: a GET or HEAD with a body is served, other methods get
/// 405; either way the body is read and dropped and the connection goes on, the requests
/// pipelined after it answered in order.
#[test]
fn bodies_are_read_and_dropped_and_the_connection_goes_on() {
    let srv = TestServer::start(|_| {});
    let mut s = connect(srv.addr);
    s.write_all(
        b"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde\
          POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
          5;x=y\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n\
          HEAD /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nab\
          PUT /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\n",
    )
    .unwrap();
    let mut r = BufReader::new(s);
    assert_eq!(read_response(&mut r, false).unwrap().body, b"hello");
    let post = read_response(&mut r, false).unwrap();
    assert_eq!(
        (post.status, post.header("Allow")),
        (405, Some("GET, HEAD"))
    );
    assert_eq!(read_response(&mut r, true).unwrap().status, 200);
    assert_eq!(read_response(&mut r, false).unwrap().status, 405);
    // The PUT's body arrives after its answer, in pieces; then one more request.
    r.get_mut().write_all(b"x").unwrap();
    r.get_mut().write_all(b"yz").unwrap();
    r.get_mut().write_all(get("/a.txt").as_bytes()).unwrap();
    assert_eq!(read_response(&mut r, false).unwrap().body, b"hello");
    let st = srv.stats();
    assert_eq!(
        (st.requests, st.status_2xx, st.status_4xx),
        (5, 3, 2),
        "{st:?}"
    );
    assert_eq!(
        (st.closed, st.lingering_closes),
        (0, 0),
        "one connection throughout"
    );
}

#[test]
fn malformed_chunked_bodies_get_400_and_a_close() {
    let srv = TestServer::start(|_| {});
    for body in ["zz\r\n", "5\r\nhelloXX", "5\r\nhello\r\n0\r\n\x01\r\n\r\n"] {
        let raw = format!(
            "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n{body}{}",
            get("/a.txt")
        );
        refused_with(srv.addr, raw.as_bytes(), 400);
    }
}

#[test]
fn a_chunked_body_past_the_limit_is_cut_with_the_connection() {
    let srv = TestServer::start(|c| c.max_body_bytes = 1000);
    // Seen with the head: 413.
    let raw = format!(
        "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n{}",
        "x".repeat(1001)
    );
    refused_with(srv.addr, raw.as_bytes(), 413);
    // Seen after the answer: nothing more to say, the connection closes.
    let mut s = connect(srv.addr);
    s.write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s);
    assert_eq!(read_response(&mut r, false).unwrap().status, 200);
    for _ in 0..3 {
        let _ = r
            .get_mut()
            .write_all(format!("190\r\n{}\r\n", "x".repeat(400)).as_bytes());
    }
    assert!(closed_by_peer(&mut r));
}

#[test]
fn a_stalled_body_is_cut_at_the_body_timeout() {
    let srv = TestServer::start(|c| {
        c.body_timeout_ms = 300;
        c.keepalive_timeout_ms = 60_000;
    });
    let mut s = connect(srv.addr);
    s.write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        .unwrap();
    let mut r = BufReader::new(s);
    assert_eq!(read_response(&mut r, false).unwrap().status, 200);
    let start = Instant::now();
    assert!(closed_by_peer(&mut r), "closed, not timed out on our side");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(srv.stop().body_timeouts, 1);
}

#[test]
fn slowloris_head_is_cut_at_the_header_timeout() {
    let srv = TestServer::start(|c| c.header_timeout_ms = 400);
    let mut s = connect(srv.addr);
    let start = Instant::now();
    // One byte every 50 ms: the connection is never idle, but the head never completes.
    let mut closed = false;
    for b in
        b"GET /a.txt HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    {
        if s.write_all(&[*b]).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        if srv.stats().header_timeouts == 1 {
            closed = true;
            break;
        }
    }
    assert!(closed, "still open after {:?}", start.elapsed());
    assert!(start.elapsed() >= Duration::from_millis(400));
    assert!(closed_by_peer(&mut s));
    assert_eq!(srv.stop().header_timeouts, 1);
}

#[test]
fn connect_and_say_nothing_is_cut_at_the_header_timeout() {
    let srv = TestServer::start(|c| {
        c.header_timeout_ms = 300;
        c.defer_accept = false;
    });
    let start = Instant::now();
    let mut s = connect(srv.addr);
    assert!(closed_by_peer(&mut s));
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    // Cut, not left open: the margin over the 300 ms is for a loaded machine.
    assert!(waited < Duration::from_secs(20), "{waited:?}");
    assert_eq!(srv.stop().header_timeouts, 1);
}

#[test]
fn idle_keep_alive_connection_is_closed() {
    let srv = TestServer::start(|c| c.keepalive_timeout_ms = 300);
    let mut s = connect(srv.addr);
    s.write_all(get("/a.txt").as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    assert_eq!(read_response(&mut r, false).unwrap().status, 200);
    let start = Instant::now();
    assert!(closed_by_peer(&mut r));
    assert!(start.elapsed() >= Duration::from_millis(250));
    let st = srv.stop();
    assert_eq!((st.idle_timeouts, st.header_timeouts), (1, 0));
}

#[test]
fn busy_keep_alive_connection_outlives_the_idle_timeout() {
    // The idle timeout is long beside the 100 ms between requests, so that a loaded machine
    // delaying this thread does not make the connection idle; the connection lives for
    // three times the timeout.
    let srv = TestServer::start(|c| c.keepalive_timeout_ms = 1500);
    let s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    let start = Instant::now();
    // A request every 100 ms for 4.5 s: never idle for 1.5 s.
    while start.elapsed() < Duration::from_millis(4500) {
        w.write_all(get("/a.txt").as_bytes()).unwrap();
        assert_eq!(read_response(&mut r, false).unwrap().status, 200);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(srv.stop().idle_timeouts, 0);
}

#[test]
fn a_client_that_stops_reading_is_dropped_at_the_send_timeout() {
    let srv = TestServer::start(|c| c.send_timeout_ms = 300);
    std::fs::write(srv.root.path().join("32m.bin"), vec![7u8; 32 << 20]).unwrap();
    // A small receive window, so the server's socket fills long before 32 MiB.
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.connect(&srv.addr.into()).unwrap();
    let mut s: TcpStream = sock.into();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.write_all(get("/32m.bin").as_bytes()).unwrap();
    assert!(eventually(WAIT, || srv.stats().send_timeouts == 1));
    let st = srv.stop();
    assert!(st.sendfile_bytes < 32 << 20, "{st:?}");
    assert_eq!(st.closed, 1);
}

/// Keep-alive connections waiting out their idle timeout do not starve new clients: at the cap
/// the one idle the longest is closed to admit a new one (nginx reuses its keep-alive
/// connections the same way).
#[test]
fn max_connections_full_of_idle_keep_alive_still_serves_new_clients() {
    const CAP: usize = 4;
    let srv = TestServer::start(|c| c.max_connections = CAP);
    let mut held = Vec::new();
    for _ in 0..CAP {
        let mut s = connect(srv.addr);
        s.write_all(get("/a.txt").as_bytes()).unwrap();
        let mut r = BufReader::new(s);
        assert_eq!(read_response(&mut r, false).unwrap().status, 200);
        held.push(r);
    }
    for i in 0..10 {
        let r = exchange(srv.addr, &get("/a.txt"));
        assert_eq!(r.status, 200, "new client {i} served");
    }
    // The oldest idle connection went first.
    assert!(
        closed_by_peer(held[0].get_mut()),
        "the oldest idle one is closed"
    );
    let st = srv.stop();
    assert_eq!(st.rejected, 0);
    assert!(st.idle_evictions >= 1, "{st:?}");
    assert_eq!(st.requests, CAP as u64 + 10);
}

/// Connections busy with a request are never closed to make room: past the cap with every
/// connection mid-request, the new one is refused and the busy ones finish.
#[test]
fn max_connections_never_closes_a_busy_connection() {
    let srv = TestServer::start(|c| c.max_connections = 2);
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut s = connect(srv.addr);
        s.write_all(b"GET /a.txt HTTP/1.1\r\n").unwrap(); // a head under way
        busy.push(s);
    }
    // Both are in the server's slab before the extra one arrives.
    assert!(eventually(WAIT, || srv.stats().accepted == 2));
    let mut extra = connect(srv.addr);
    extra.write_all(get("/a.txt").as_bytes()).unwrap();
    assert!(
        closed_by_peer(&mut extra),
        "the extra connection is refused"
    );
    for s in busy {
        let mut w = s.try_clone().unwrap();
        w.write_all(b"Host: t\r\n\r\n").unwrap();
        let r = read_response(&mut BufReader::new(s), false).unwrap();
        assert_eq!(r.status, 200, "the busy connection finished its request");
    }
    let st = srv.stop();
    assert_eq!(st.rejected, 1);
    assert_eq!(st.idle_evictions, 0);
    assert_eq!(st.requests, 2);
}

/// Linux copies TCP_NODELAY from the listening socket to the sockets `accept` returns, so the
/// server sets it once on its listeners and makes no setsockopt per connection.
#[test]
fn accepted_sockets_inherit_nodelay() {
    use socket2::{Domain, Socket, Type};
    for nodelay in [true, false] {
        let l = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        l.set_tcp_nodelay(nodelay).unwrap();
        l.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        l.listen(8).unwrap();
        let addr = l.local_addr().unwrap().as_socket().unwrap();
        let _c = TcpStream::connect(addr).unwrap();
        let (a, _) = l.accept().unwrap();
        assert_eq!(a.tcp_nodelay().unwrap(), nodelay);
    }
}
