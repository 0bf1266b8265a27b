//! What a FastCGI request costs the event loop in wake-ups: the client's request, then the
//! application's answer. The application reading the request is no event of the server's (a
//! unix socket says writable each time its peer reads; the server asks for writability only
//! while a write of its own waits), and a request body that fills the socket still goes out
//! whole, on a connection that is then pooled for reading alone again.

use std::io::{BufReader, Write};

use crate::cgi_support::*;
use crate::common::*;
use crate::fcgi_support::*;

/// Requests on one keep-alive connection.
const N: usize = 200;

fn server(app: &Scripted) -> TestServer {
    let srv = TestServer::start(|c| {
        c.fastcgi
            .push(format!("/app/={}", app.addr()).parse().unwrap());
    });
    write_file(srv.root.path(), "app", "");
    srv
}

#[test]
fn a_fastcgi_request_wakes_the_loop_for_its_request_and_its_answer_only() {
    let app = Scripted::new(vec![vec![Step::Answer; N]]);
    let srv = server(&app);
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 0..N {
        s.write_all(format!("GET /app?{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .unwrap();
        let reply = read_reply(&mut r, false).unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, format!("connection 0 request {i}").as_bytes());
    }
    drop((s, r));
    let st = srv.stop();
    assert_eq!((st.fastcgi_requests, st.fastcgi_connects), (N as u64, 1));
    // Two per request, and a few more: the accept, the sweep's ticks (every 250 ms while a
    // connection is open), the close, the stop. Woken also when the application read each
    // request, it would be three per request.
    let per_request = st.wakeups as f64 / N as f64;
    eprintln!(
        "{} wake-ups for {N} requests: {per_request:.2} each",
        st.wakeups
    );
    assert!(
        st.wakeups <= 2 * N as u64 + N as u64 / 4,
        "{} wake-ups for {N} FastCGI requests ({per_request:.2} each)",
        st.wakeups
    );
}

#[test]
fn a_body_that_fills_the_socket_goes_out_whole_and_the_connection_is_pooled() {
    let app = Scripted::new(vec![vec![Step::Answer; 3]]);
    let srv = server(&app);
    let mut s = connect(srv.addr);
    let mut r = BufReader::new(s.try_clone().unwrap());
    // Over what a unix socket holds: the server's writes wait for the application to read.
    let body = vec![b'b'; 1 << 20];
    for i in 0..3 {
        let len = if i == 1 { body.len() } else { 0 };
        let head = format!("POST /app HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\n\r\n");
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(&body[..len]).unwrap();
        let reply = read_reply(&mut r, false).unwrap();
        assert_eq!(reply.status, 200, "request {i}");
        assert_eq!(reply.body, format!("connection 0 request {i}").as_bytes());
    }
    drop((s, r));
    let st = srv.stop();
    assert_eq!(
        (st.fastcgi_requests, st.fastcgi_connects),
        (3, 1),
        "one connection"
    );
}
