//! Bytes an upstream writes unasked on an idle pooled connection after the loop's poll, while
//! the loop works through that poll's batch, and before a request of the batch takes the
//! connection: their event comes with the next poll, as the answer's does, and nothing in the
//! events tells them from the answer. Only the socket knows, at the take: its peek finds them,
//! that connection is dropped unread, and the request goes on a new one and gets its own
//! answer. (A take without the peek, trusting that such bytes would have had an event in the
//! batch of the wake-up that takes the connection, reads them as the answer here.)

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token, Waker};

use crate::config::Config;
use crate::gateway::asked::asked_h1;
use crate::gateway::label::RequestLabel;
use crate::gateway::proxy::request::forward;
use crate::gateway::proxy::Exchange;
use crate::gateway::upstream::{Buffers, POOL_TOKEN};
use crate::gateway::{Gateways, Source};

const WAIT: Duration = Duration::from_secs(10);

fn start_get(g: &mut Gateways, token: usize) -> Exchange {
    let text = b"GET /api/x HTTP/1.1\r\nHost: h\r\n\r\n";
    let req = wire::parse_request(text, &wire::RequestLimits::default())
        .unwrap()
        .unwrap();
    let asked = asked_h1(&req, &text[..req.head_len]);
    let hop = g.proxies.hop(0, [127, 0, 0, 1].into(), false);
    let fwd = forward(0, &req, asked, &hop, Buffers::new());
    // The slot the connection takes before it starts a proxied request (given back by
    // `retire_source`).
    assert!(g.reserve_for(Some(0)), "a slot free");
    g.start_proxy(fwd, 0, token, Instant::now()).unwrap().0
}

/// A wake-up of the loop: a poll that does not wait, its pool events handed to the gateways
/// as the loop hands them.
fn wake_up(poll: &mut Poll, g: &mut Gateways) {
    let mut events = Events::with_capacity(64);
    poll.poll(&mut events, Some(Duration::ZERO)).unwrap();
    for ev in events.iter() {
        let Token(t) = ev.token();
        if t & POOL_TOKEN != 0 {
            let closed = ev.is_read_closed() || ev.is_error();
            let _ = g.pool_event(t & !POOL_TOKEN, ev.is_readable(), closed);
        }
    }
}

/// Drives `x` as its client connection's passes would (`Conn::pump_one`), a wake-up of the
/// loop between them, until its response is whole (bounded): the bytes it handed out.
fn response(poll: &mut Poll, g: &mut Gateways, x: &mut Exchange) -> Vec<u8> {
    let until = Instant::now() + WAIT;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !x.stdout_done() {
        assert!(Instant::now() < until, "the response came");
        loop {
            match x.read_stdout(&mut buf, &RequestLabel::default()) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        x.pass_ended();
        if !x.stdout_done() {
            std::thread::sleep(Duration::from_millis(5));
            wake_up(poll, g);
        }
    }
    got
}

/// The upstream's side: the next request's head on `s` (bounded wait).
fn request_on(s: &mut UnixStream) -> Vec<u8> {
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.ends_with(b"\r\n\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the request came");
        head.extend_from_slice(&buf[..n]);
    }
    head
}

#[test]
fn late_bytes_that_arrive_between_a_poll_and_the_take_are_never_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut poll = Poll::new().unwrap();
    let (mut g, upstream) = unix_upstream(dir.path(), &poll);
    wake_up(&mut poll, &mut g);
    // A first request on a new connection, answered, its connection pooled.
    let mut x = start_get(&mut g, 1);
    let (mut peer, _) = upstream.accept().unwrap();
    x.send_pending(&RequestLabel::default()).unwrap();
    assert!(request_on(&mut peer).starts_with(b"GET /api/x"));
    peer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        .unwrap();
    wake_up(&mut poll, &mut g);
    assert!(response(&mut poll, &mut g, &mut x).ends_with(b"\r\n\r\nok"));
    g.retire_source(Source::Proxy(Box::new(x)), false, Instant::now());
    // The next wake-up's poll returns (the connection idle, nothing to say of it); then,
    // while the loop works through that batch, bytes nobody asked for reach its socket (a
    // unix socket: in it when the write returns); then a request of the batch takes a
    // connection.
    wake_up(&mut poll, &mut g);
    peer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nSTOLEN")
        .unwrap();
    let mut x = start_get(&mut g, 2);
    x.send_pending(&RequestLabel::default()).unwrap();
    let reused = x.reused;
    // The upstream answers it where it came.
    let mut answering = if reused {
        peer.try_clone().unwrap()
    } else {
        upstream.accept().unwrap().0
    };
    assert!(request_on(&mut answering).starts_with(b"GET /api/x"));
    answering
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
        .unwrap();
    let got = response(&mut poll, &mut g, &mut x);
    assert!(
        got.ends_with(b"\r\n\r\nfresh"),
        "its own answer: {}",
        String::from_utf8_lossy(&got)
    );
    assert!(!reused, "the connection holding them was not taken");
    assert_eq!(g.pool_peer_closed(), 1, "dropped by the take's peek");
    assert_eq!(g.take_dropped_peeks(), 1, "the dropping peek is a read");
    // Nothing more was sent on the dropped connection, and it was closed: the upstream reads
    // its end, or a reset (closed with the late bytes unread). A timeout is the failure: the
    // take's drop left the connection open.
    let mut rest = Vec::new();
    peer.set_read_timeout(Some(WAIT)).unwrap();
    match peer.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the dropped connection is closed: {e}"),
    }
    assert!(rest.is_empty());
    g.retire_source(Source::Proxy(Box::new(x)), false, Instant::now());
}

/// Gateways proxying `/api` to a unix socket upstream (one kept connection), and its listener.
fn unix_upstream(dir: &std::path::Path, poll: &Poll) -> (Box<Gateways>, UnixListener) {
    let path = dir.join("upstream.sock");
    let upstream = UnixListener::bind(&path).unwrap();
    let text = format!(
        "[[proxy]]\nprefix = \"/api\"\nupstreams = [\"unix:{}\"]\npool = 1\n",
        path.display()
    );
    let config: Config = toml::from_str(&text).unwrap();
    let waker = Arc::new(Waker::new(poll.registry(), Token(0)).unwrap());
    let registry = poll.registry().try_clone().unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let g = Gateways::new(&config, running, registry, waker, 80)
        .unwrap()
        .unwrap();
    (g, upstream)
}

#[test]
fn a_take_peek_that_finds_the_connection_closed_is_counted_as_a_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut poll = Poll::new().unwrap();
    let (mut g, upstream) = unix_upstream(dir.path(), &poll);
    wake_up(&mut poll, &mut g);
    let mut x = start_get(&mut g, 1);
    let (mut peer, _) = upstream.accept().unwrap();
    x.send_pending(&RequestLabel::default()).unwrap();
    assert!(request_on(&mut peer).starts_with(b"GET /api/x"));
    peer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        .unwrap();
    wake_up(&mut poll, &mut g);
    assert!(response(&mut poll, &mut g, &mut x).ends_with(b"\r\n\r\nok"));
    let first = x.reads;
    g.retire_source(Source::Proxy(Box::new(x)), false, Instant::now());
    assert_eq!(g.take_dropped_peeks(), 0, "no take peeked yet");
    // The upstream closes the idle connection after the poll and before the take: no event
    // dropped it, the take's peek finds the end.
    wake_up(&mut poll, &mut g);
    drop(peer);
    let mut x = start_get(&mut g, 2);
    assert!(!x.reused, "the closed connection was not taken");
    assert_eq!(g.pool_peer_closed(), 1, "dropped by the take's peek");
    assert_eq!(
        g.take_dropped_peeks(),
        1,
        "the peek that found the end is a read"
    );
    assert_eq!(g.take_dropped_peeks(), 0, "handed to the stats once");
    assert_eq!(x.reads, 0, "the new connection not read yet");
    assert!(first >= 1, "the first response took a read");
    x.send_pending(&RequestLabel::default()).unwrap();
    let (mut fresh, _) = upstream.accept().unwrap();
    assert!(request_on(&mut fresh).starts_with(b"GET /api/x"));
    g.retire_source(Source::Proxy(Box::new(x)), false, Instant::now());
}
