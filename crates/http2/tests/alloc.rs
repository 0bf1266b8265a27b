//! The wrapper allocates nothing per request: a steady-state exchange of requests and 1 KiB
//! responses between a client and a server session makes no Rust allocation (nghttp2's own
//! stream state is malloc'd by the C library, outside Rust's allocator and this count).

use http2::{Body, Config, Handler, Header, Session, StreamId};
use test_support::alloc::{allocations_on_this_thread, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

static BODY: [u8; 1024] = [b'b'; 1024];

/// A handler that allocates nothing once set up: fixed buffers, reserved vectors.
struct Side {
    out: Vec<u8>,
    /// Server: streams whose request is complete, to answer after `recv`.
    ready: Vec<StreamId>,
    /// Server: body bytes written so far per stream slot.
    sent: [usize; 256],
    completed: u64,
    body_bytes: u64,
}

impl Side {
    fn new() -> Side {
        Side {
            out: Vec::with_capacity(4 << 20),
            ready: Vec::with_capacity(1024),
            sent: [0; 256],
            completed: 0,
            body_bytes: 0,
        }
    }
}

fn slot(stream: StreamId) -> usize {
    (stream as usize / 2) % 256
}

impl Handler for Side {
    fn write(&mut self, bytes: &[u8]) -> usize {
        self.out.extend_from_slice(bytes);
        bytes.len()
    }

    fn body_ready(&mut self, stream: StreamId, max: usize) -> Body {
        let left = BODY.len() - self.sent[slot(stream)];
        let len = left.min(max);
        Body::Ready {
            len,
            end: len == left,
        }
    }

    fn write_data(&mut self, stream: StreamId, frame_header: &[u8; 9], len: usize) -> bool {
        let sent = &mut self.sent[slot(stream)];
        self.out.extend_from_slice(frame_header);
        self.out.extend_from_slice(&BODY[*sent..*sent + len]);
        *sent += len;
        true
    }

    fn on_headers_end(&mut self, stream: StreamId, end_stream: bool) {
        if end_stream {
            self.ready.push(stream);
        }
    }

    fn on_data(&mut self, _: StreamId, data: &[u8]) {
        self.body_bytes += data.len() as u64;
    }

    fn on_stream_close(&mut self, _: StreamId, _: u32) {
        self.completed += 1;
    }
}

struct Exchange {
    client: Session<Side>,
    c: Side,
    server: Session<Side>,
    s: Side,
}

impl Exchange {
    /// Runs `requests` requests, at most `concurrency` at once.
    fn run(&mut self, requests: u64, concurrency: u64) {
        let request = [
            Header::new(b":method", b"GET"),
            Header::new(b":scheme", b"http"),
            Header::new(b":authority", b"localhost"),
            Header::new(b":path", b"/index.html"),
        ];
        let response = [
            Header::new(b":status", b"200"),
            Header::new(b"content-length", b"1024"),
        ];
        let goal = self.c.completed + requests;
        let mut submitted = self.c.completed;
        while self.c.completed < goal {
            while submitted < goal && submitted - self.c.completed < concurrency {
                self.client.submit_request(&request, false).unwrap();
                submitted += 1;
            }
            self.client.send(&mut self.c).unwrap();
            self.server.recv(&self.c.out, &mut self.s).unwrap();
            self.c.out.clear();
            for &stream in &self.s.ready {
                self.s.sent[slot(stream)] = 0;
                self.server
                    .submit_response(stream, &response, true)
                    .unwrap();
            }
            self.s.ready.clear();
            self.server.send(&mut self.s).unwrap();
            self.client.recv(&self.s.out, &mut self.c).unwrap();
            self.s.out.clear();
        }
    }
}

#[test]
fn a_steady_exchange_makes_no_rust_allocation() {
    for concurrency in [1, 100] {
        let mut x = Exchange {
            client: Session::client(&Config::client()).unwrap(),
            c: Side::new(),
            server: Session::server(&Config::server()).unwrap(),
            s: Side::new(),
        };
        x.run(300, concurrency); // warm-up: SETTINGS, HPACK tables, nghttp2's pools
        let before = allocations_on_this_thread();
        x.run(2_000, concurrency);
        let during = allocations_on_this_thread() - before;
        assert_eq!(x.c.body_bytes, 2_300 * 1024, "every body arrived whole");
        assert_eq!(
            during, 0,
            "{during} allocations for 2000 requests at {concurrency} at once"
        );
    }
}

#[test]
fn the_count_sees_what_a_handler_allocates() {
    // The counting is real: the same exchange, with handlers whose output buffers start empty
    // and must grow inside `write`, is counted.
    let mut x = Exchange {
        client: Session::client(&Config::client()).unwrap(),
        c: Side::new(),
        server: Session::server(&Config::server()).unwrap(),
        s: Side::new(),
    };
    x.run(10, 1);
    x.s.out = Vec::new();
    let before = allocations_on_this_thread();
    x.run(1, 1);
    assert!(allocations_on_this_thread() > before);
}
