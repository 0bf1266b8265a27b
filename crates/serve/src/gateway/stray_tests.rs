//! A pooled connection whose upstream wrote bytes nobody asked for, their event not yet seen
//! when the next request takes a connection, is found by the take's peek and dropped: the
//! request goes on a new connection, and the stray bytes are never read as its answer.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::{Poll, Token, Waker};

use crate::config::Config;
use crate::gateway::fcgi::Buffers;
use crate::gateway::proxy::request::{asked_h1, forward};
use crate::gateway::proxy::Exchange;
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

/// Reads `x`'s response to its end (bounded), as the connection would.
fn read_to_end(g: &mut Gateways, x: &mut Exchange) {
    let until = Instant::now() + WAIT;
    let mut buf = [0u8; 4096];
    while !x.stdout_done() {
        assert!(Instant::now() < until, "the response came");
        match x.read_stdout(&mut buf) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("{e}"),
        }
    }
    g.proxy_read(x);
}

#[test]
fn a_stray_request_fails_at_once_to_be_sent_again() {
    let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
    let text = format!(
        "[[proxy]]\nprefix = \"/api\"\nupstreams = [\"http://{}\"]\npool = 1\n",
        upstream.local_addr().unwrap()
    );
    let config: Config = toml::from_str(&text).unwrap();
    let poll = Poll::new().unwrap();
    let waker = Arc::new(Waker::new(poll.registry(), Token(0)).unwrap());
    let registry = poll.registry().try_clone().unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let mut g = Gateways::new(&config, running, registry, waker, 80)
        .unwrap()
        .unwrap();
    g.polled(true);
    // A first request on a new connection, answered, its connection pooled.
    let mut x = start_get(&mut g, 1);
    let (mut peer, _) = upstream.accept().unwrap();
    peer.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    // The request goes out as the exchange is driven (its connect may be under way).
    let until = Instant::now() + WAIT;
    let mut head = [0u8; 1024];
    let n = loop {
        assert!(Instant::now() < until, "the request came");
        let _ = x.read_stdout(&mut [0u8; 64]);
        if let Ok(n) = peer.read(&mut head) {
            break n;
        }
    };
    assert!(head[..n].starts_with(b"GET /api/x"));
    peer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        .unwrap();
    read_to_end(&mut g, &mut x);
    let slot = x.slot;
    g.retire_source(Source::Proxy(Box::new(x)), false, Instant::now());
    // The next wake-up: bytes nobody asked for, their event not yet seen as the next request
    // takes a connection. The take's peek finds them: that connection is dropped, never
    // read, and the request goes on a new one.
    g.polled(true);
    peer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nSTOLEN")
        .unwrap();
    let x = start_get(&mut g, 2);
    assert!(
        !x.reused,
        "the connection holding stray bytes was not taken"
    );
    assert_ne!(x.slot, slot);
    let until = Instant::now() + WAIT;
    let _second = loop {
        assert!(Instant::now() < until, "a new connection came");
        if let Ok(c) = upstream.accept() {
            break c;
        }
    };
    let mut rest = Vec::new();
    peer.set_read_timeout(Some(WAIT)).unwrap();
    let _ = peer.read_to_end(&mut rest);
    assert!(
        rest.is_empty(),
        "nothing more was sent on the dropped connection"
    );
}
