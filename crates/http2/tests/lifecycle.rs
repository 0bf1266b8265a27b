//! When nghttp2 calls back (only inside recv and send), dropping sessions with streams open,
//! and a panicking handler.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::{get, responder, Pair, Peer};
use http2::{error_code, frame_type, Config, Handler, Header, HeaderVerdict, Session, StreamId};

#[test]
fn submits_queries_and_drop_call_no_handler_method() {
    let mut p = Pair::defaults();
    for _ in 0..50 {
        p.client.submit_request(&get(b"/"), false).unwrap();
    }
    p.s.deferred.extend((0..50).map(|i| 1 + 2 * i));
    p.settle(&mut responder(|_| vec![b'x'; 100_000]));
    let (c_events, s_events) = (p.c.events.len(), p.s.events.len());
    // Everything callable outside recv/send, with streams open on both sides.
    p.client.submit_rst_stream(1, error_code::CANCEL).unwrap();
    p.client.submit_ping().unwrap();
    p.client
        .submit_request(&[Header::from_static(b":method", b"GET")], true)
        .unwrap();
    p.server.resume_data(3).unwrap();
    p.server
        .submit_rst_stream(5, error_code::INTERNAL_ERROR)
        .unwrap();
    p.server.submit_shutdown_notice().unwrap();
    p.server.submit_goaway(error_code::NO_ERROR).unwrap();
    p.server.terminate(error_code::NO_ERROR).unwrap();
    p.client.terminate(error_code::NO_ERROR).unwrap();
    let _ = (
        p.client.want_read(),
        p.client.want_write(),
        p.client.remote_max_concurrent_streams(),
        p.client.last_proc_stream_id(),
        p.client.stream_remote_window(7),
        p.client.connection_remote_window(),
        p.client.hpack_deflate_size(),
        p.client.outbound_queue_len(),
    );
    assert_eq!((p.c.events.len(), p.s.events.len()), (c_events, s_events));
    // Dropped with 50 streams open, frames queued and bodies deferred.
    drop(p);
    assert_eq!(http2::stray_callbacks(), 0);
}

#[test]
fn a_session_dropped_mid_body_frees_everything() {
    // Run under valgrind once (docs/http2.md): no leak, no invalid access. The client's 64 KiB
    // windows keep the bodies in flight for many rounds.
    let mut p = Pair::new(&Config::server(), &Config::server());
    for _ in 0..20 {
        p.client.submit_request(&get(b"/"), false).unwrap();
    }
    let mut respond = responder(|_| vec![b'y'; 1 << 20]);
    for _ in 0..5 {
        p.round(&mut respond);
    }
    assert!(p.c.closed().len() < 20, "bodies still in flight");
    assert!(!p.c.received.is_empty(), "some bytes went");
    drop(p);
    assert_eq!(http2::stray_callbacks(), 0);
}

struct Panicky;

impl Handler for Panicky {
    fn write(&mut self, bytes: &[u8]) -> usize {
        bytes.len()
    }

    fn on_header(&mut self, _: StreamId, name: &[u8], _: &[u8]) -> HeaderVerdict {
        if name == b":path" {
            panic!("the handler broke");
        }
        HeaderVerdict::Accept
    }
}

#[test]
fn a_panic_in_the_handler_comes_out_of_recv() {
    let mut client = Session::<Peer>::client(&Config::client()).unwrap();
    let mut c = Peer::new();
    client.submit_request(&get(b"/"), false).unwrap();
    client.send(&mut c).unwrap();
    let mut server = Session::<Panicky>::server(&Config::server()).unwrap();
    let caught = catch_unwind(AssertUnwindSafe(|| server.recv(&c.out, &mut Panicky)));
    let message = caught.unwrap_err();
    assert_eq!(message.downcast_ref::<&str>(), Some(&"the handler broke"));
    drop(server); // the failed session is still freed cleanly
    assert_eq!(http2::stray_callbacks(), 0);
}

#[test]
fn header_bytes_sent_count_the_whole_block_with_its_continuations() {
    let mut p = Pair::defaults();
    // A 40 KB header value: HEADERS plus CONTINUATIONs at the default 16 KiB frame size.
    let big = vec![b'v'; 40_000];
    let mut request = get(b"/").to_vec();
    request.push(Header::new(b"x-big", &big));
    p.client.submit_request(&request, false).unwrap();
    p.client.send(&mut p.c).unwrap();
    let frames = common::frames(&p.c.out);
    let on_wire: usize = frames
        .iter()
        .filter(|f| f.0 == frame_type::HEADERS || f.0 == frame_type::CONTINUATION)
        .map(|f| f.3.len())
        .sum();
    assert!(frames.iter().any(|f| f.0 == frame_type::CONTINUATION));
    let counted: usize =
        p.c.frames_sent
            .iter()
            .filter(|f| f.0 == frame_type::HEADERS)
            .map(|f| f.1)
            .sum();
    assert_eq!(counted, on_wire);
}
