//! A FastCGI request in steady state (the application's connection pooled, the request's
//! buffers recycled, its script shared from the thread's cache) allocates a fixed few objects,
//! none per meta-variable or per field: its PARAMS are encoded from the request straight into
//! the recycled output buffer. The application is a responder written here that allocates
//! nothing once started (fixed buffers, an answer made before the counted window); counted with
//! a global allocator over every thread of this binary (alone in it), the client allocating
//! nothing in the window either.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::{UnixListener, UnixStream};

use common::*;
use test_support::alloc::{allocations, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Requests per counted round.
const ROUND: usize = 300;

/// Allocations per FastCGI request: the gateway machinery's three objects that CGI, FastCGI
/// and the proxy share (the client side's exchange and the FastCGI exchange, each boxed, and
/// the checked response head's field list), and the body bytes that came in the same read as
/// the head, copied out by the head reader (`gateway/head.rs`) before they go to the response.
/// The script is shared from the thread's cache and the PARAMS are encoded into a recycled
/// buffer: neither allocates.
const PER_REQUEST: u64 = 4;

/// Body of each answer.
const BODY: &[u8] = &[b'x'; 1024];

/// A FastCGI record of request 1, written into `out`.
fn record(out: &mut Vec<u8>, kind: u8, content: &[u8]) {
    let len = content.len() as u16;
    out.extend_from_slice(&[1, kind, 0, 1, (len >> 8) as u8, len as u8, 0, 0]);
    out.extend_from_slice(content);
}

/// Reads one request's records up to the end of its STDIN, in fixed buffers.
fn read_request(s: &mut UnixStream) -> Option<()> {
    let mut content = [0u8; 65536 + 256];
    loop {
        let mut head = [0u8; 8];
        s.read_exact(&mut head).ok()?;
        let len = u16::from_be_bytes([head[4], head[5]]) as usize + head[6] as usize;
        s.read_exact(&mut content[..len]).ok()?;
        if head[1] == 5 && head[4] == 0 && head[5] == 0 {
            return Some(());
        }
    }
}

/// The responder: one connection at a time, each request answered with `BODY` and its length.
fn responder(listener: UnixListener) {
    let mut answer = Vec::new();
    let head = format!(
        "Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
        BODY.len()
    );
    let mut stdout = head.into_bytes();
    stdout.extend_from_slice(BODY);
    record(&mut answer, 6, &stdout);
    record(&mut answer, 6, b"");
    record(&mut answer, 3, &[0; 8]);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { return };
            while read_request(&mut s).is_some() {
                if s.write_all(&answer).is_err() {
                    break;
                }
            }
        }
    });
}

#[test]
fn a_fastcgi_request_allocates_a_fixed_few_objects_through_a_warm_pool() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("app.sock");
    responder(UnixListener::bind(&socket).unwrap());
    let srv = TestServer::start(|c| {
        c.revalidate_ms = 600_000;
        let mount = format!("*.php=unix:{}", socket.display());
        c.fastcgi.push(mount.parse().unwrap());
    });
    std::fs::write(srv.root.path().join("app.php"), "").unwrap();
    // A request as a load generator sends it: a few fields, each a meta-variable.
    let one = b"GET /app.php?a=1&b=2 HTTP/1.1\r\nHost: t\r\nUser-Agent: alloc\r\n\
                Accept: */*\r\nAccept: text/plain\r\nCookie: a=1\r\n\r\n"
        .to_vec();
    let len = {
        let mut s = connect(srv.addr);
        s.write_all(&one).unwrap();
        let r = read_response(&mut std::io::BufReader::new(s), false).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.body, BODY);
        let head: usize = r.headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
        "HTTP/1.1 200 OK\r\n".len() + head + 2 + r.body.len()
    };
    let mut s = connect(srv.addr);
    let mut buf = vec![0u8; len];
    let round = |s: &mut TcpStream, buf: &mut [u8]| {
        for _ in 0..ROUND {
            s.write_all(&one).unwrap();
            s.read_exact(buf).expect("read");
        }
    };
    round(&mut s, &mut buf); // warm-up: the pool, the buffers, the caches
    assert!(buf.ends_with(BODY));
    let before = allocations();
    round(&mut s, &mut buf);
    let allocated = allocations() - before;
    assert!(buf.ends_with(BODY));
    eprintln!(
        "{allocated} allocations in {ROUND} FastCGI requests: {:.2} each",
        allocated as f64 / ROUND as f64
    );
    assert!(
        allocated <= PER_REQUEST * ROUND as u64,
        "{allocated} allocations during {ROUND} FastCGI requests: over {PER_REQUEST} each"
    );
    drop(s);
    let st = srv.stop();
    assert_eq!(st.fastcgi_requests, 2 * ROUND as u64 + 1);
    assert_eq!(st.fastcgi_connects, 1, "one pooled application connection");
}
