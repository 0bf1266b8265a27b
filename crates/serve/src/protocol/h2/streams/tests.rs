//! The stream table's tests, apart from it: a prebuilt head outliving its stream, the spare
//! exchanges a slot keeps and the spares' bound on them, a slot's next program reusing its
//! exchange and output buffer, the spares' reuse and byte bound.

use super::*;
use crate::protocol::h2::exchange::State;
use crate::response::{FieldName, ReprFieldsBuilder};
use http2::{Handler, HeadersKind};

fn heads() -> Rc<ReprFields> {
    let mut b = ReprFieldsBuilder::default();
    b.push(FieldName::Server, b"flint");
    b.end_full();
    Rc::new(b.build())
}

#[test]
fn a_prebuilt_head_outlives_its_stream_until_nghttp2_is_done_with_it() {
    let mut s = Streams::new(8, 4096, false, Instant::now());
    s.wake(vec![Stream::free(), Stream::free()], Vec::new());
    let head = heads();
    // Sent: dropped when nghttp2 says so, before the stream closes.
    s.on_begin_headers(1, HeadersKind::Request);
    let i = s.index(1).expect("stream 1's slot");
    s.slots[i].head = Some(Rc::clone(&head));
    s.on_headers_sent(1);
    assert_eq!(
        Rc::strong_count(&head),
        1,
        "released once its HEADERS was sent"
    );
    s.release(i);
    assert!(s.unsent_heads.is_empty());
    // Reset before its HEADERS went out: kept while nghttp2's queue may still hold it.
    s.on_begin_headers(3, HeadersKind::Request);
    let i = s.index(3).expect("stream 3's slot");
    s.slots[i].head = Some(Rc::clone(&head));
    s.on_stream_close(3, http2::error_code::CANCEL);
    assert_eq!(Rc::strong_count(&head), 2, "kept past the stream's close");
    s.queue_emptied();
    assert_eq!(
        Rc::strong_count(&head),
        1,
        "dropped once the queue is empty"
    );
}

fn exchange() -> Exchange {
    let req = crate::protocol::gateway::local_request(b"/up/x", false, wire::Version::Http11, true);
    Exchange::new(&req, b"GET", b"HTTP/2.0", None, 4096, true, false)
}

/// An exchange of a server with an access log: its record holds copies of the request.
fn logged_exchange() -> Exchange {
    let mut req =
        crate::protocol::gateway::local_request(b"/up/x", false, wire::Version::Http11, true);
    req.referer = Some(b"http://example.test/a/page/that/linked/here");
    req.user_agent = Some(b"a-client/1.0 (a user agent string of some length)");
    Exchange::new(&req, b"GET", b"HTTP/2.0", Some(b"alice"), 4096, true, true)
}

#[test]
fn a_slot_s_spare_exchange_holds_only_what_the_spares_count() {
    let mut s = Streams::new(8, 4096, true, Instant::now());
    s.wake(vec![Stream::free()], Vec::new());
    s.on_begin_headers(1, HeadersKind::Request);
    let i = s.index(1).expect("stream 1's slot");
    let mut x = s.slots[i].boxed(logged_exchange());
    assert!(x.rec.heap_bytes() > 0, "the record copied the request");
    // A partial upstream head (no end yet) is gathered in the reader.
    let part = [b"HTTP/1.1 200 OK\r\nx-long: ".as_slice(), &[b'v'; 2000]].concat();
    assert!(x.head.feed(&part).unwrap().is_none());
    assert!(x.head.heap_bytes() >= part.len());
    x.buf.extend_from_slice(&[b'x'; 1024]);
    s.slots[i].gateway = Some(x);
    s.release(i);
    let kept = s.slots[i].spare.as_ref().expect("the box is kept");
    assert_eq!(kept.buf.capacity(), 1024, "the output buffer is kept");
    assert_eq!(
        kept.heap_bytes(),
        kept.buf.capacity(),
        "nothing but the output buffer: the record's copies and the head are freed"
    );
}

#[test]
fn a_busy_connection_s_slots_with_their_spare_exchanges_fit_the_spares() {
    // Every slot of the default 100 streams (and the few more) ended with a response whose
    // body filled its output buffer as far as it is kept: the set still fits, so an idle
    // connection's set is kept, not freed with the buffers the next burst needs.
    let mut set = Storage::new();
    for _ in 0..104 {
        let mut st = Stream::free();
        let mut x = Box::new(exchange());
        x.buf.reserve_exact(KEEP_OUTPUT);
        st.gateway = Some(x);
        st.retire_exchange();
        assert!(st.spare.as_ref().unwrap().buf.capacity() >= KEEP_OUTPUT);
        st.values.reserve_exact(KEEP_CAPACITY);
        set.slots.push(st);
    }
    let full = set.bytes();
    assert!(full <= SPARE_BYTES, "{full} bytes for one connection's set");
    let mut spares = Spares::default();
    spares.keep(set);
    assert_eq!(spares.sets.len(), 1, "kept");
    assert_eq!(spares.bytes, full, "with its spare exchanges");
    // A second such set does not fit whole: kept without its exchanges, which are what
    // made it large, rather than freed with its request buffers.
    let mut second = Storage::new();
    for _ in 0..104 {
        let mut st = Stream::free();
        let mut x = Box::new(exchange());
        x.buf.reserve_exact(KEEP_OUTPUT);
        st.spare = Some(x);
        st.values.reserve_exact(KEEP_CAPACITY);
        second.slots.push(st);
    }
    assert!(
        full + second.bytes() > SPARE_BYTES,
        "two sets would fit whole"
    );
    spares.keep(second);
    assert_eq!(spares.sets.len(), 2, "kept");
    let (kept, _) = &spares.sets[1];
    assert!(kept.slots.iter().all(|s| s.spare.is_none()));
    assert!(kept
        .slots
        .iter()
        .all(|s| s.values.capacity() >= KEEP_CAPACITY));
    assert!(spares.bytes <= SPARE_BYTES, "{}", spares.bytes);
    // A buffer grown by a response of a few pages is not kept.
    let mut st = Stream::free();
    let mut x = Box::new(exchange());
    x.buf.reserve_exact(8 * 1024);
    st.gateway = Some(x);
    st.retire_exchange();
    assert_eq!(st.spare.as_ref().unwrap().buf.capacity(), 0);
}

#[test]
fn a_slot_s_next_program_reuses_its_last_exchange_and_output_buffer() {
    let mut s = Streams::new(8, 4096, false, Instant::now());
    s.wake(vec![Stream::free()], Vec::new());
    s.on_begin_headers(1, HeadersKind::Request);
    let i = s.index(1).expect("stream 1's slot");
    let mut x = s.slots[i].boxed(exchange());
    x.buf.extend_from_slice(&[b'x'; 1024]);
    let (boxed, buf) = (&*x as *const Exchange, x.buf.as_ptr());
    // The old stream's program answered, finished and was cut.
    x.start = 100;
    x.rec.status = 502;
    x.rec.body_bytes = 1024;
    (x.done, x.eof, x.cut) = (true, true, true);
    x.state = State::Discard;
    s.slots[i].gateway = Some(x);
    (s.slots[i].ended, s.slots[i].cut) = (true, true);
    s.release(i);
    assert!(s.slots[i].gateway.is_none(), "the stream's program is gone");
    // The slot's next stream: the same box and buffer, emptied, the exchange new.
    s.on_begin_headers(3, HeadersKind::Request);
    let i = s.index(3).expect("stream 3's slot");
    let x = s.slots[i].boxed(exchange());
    assert_eq!(&*x as *const Exchange, boxed);
    assert_eq!(x.buf.as_ptr(), buf);
    assert!(x.buf.is_empty() && x.start == 0);
    assert!(!x.done && !x.eof && !x.cut, "{x:?}");
    assert!(matches!(x.state, State::Head), "{:?}", x.state);
    assert_eq!((x.rec.status, x.rec.body_bytes), (0, 0));
    assert!(
        !s.slots[i].ended && !s.slots[i].cut,
        "the slot's stream is new too"
    );
    // A buffer a large response grew is not kept.
    let mut x = x;
    x.buf.reserve(4 * KEEP_OUTPUT);
    s.slots[i].gateway = Some(x);
    s.release(i);
    let kept = s.slots[i].spare.as_ref().expect("the box is kept");
    assert_eq!(kept.buf.capacity(), 0);
}

/// A set of `slots` free slots whose value buffers hold `value_bytes` each.
fn set(slots: usize, value_bytes: usize) -> Storage {
    let mut s = Storage::new();
    for _ in 0..slots {
        let mut st = Stream::free();
        st.values.reserve_exact(value_bytes);
        s.slots.push(st);
    }
    s
}

#[test]
fn spares_are_reused_and_bounded_by_their_bytes() {
    let mut spares = Spares::default();
    // A set kept is the set taken next, its slots' buffers with it.
    spares.keep(set(4, 100));
    assert_eq!(spares.sets.len(), 1);
    let back = spares.take();
    assert_eq!(back.slots.len(), 4);
    assert!(back.slots.iter().all(|s| s.values.capacity() >= 100));
    assert_eq!(spares.bytes, 0);
    // Small sets: hundreds kept.
    for _ in 0..200 {
        spares.keep(set(4, 100));
    }
    assert_eq!(spares.sets.len(), 200);
    // Sets grown by many streams with long fields: kept only while they fit.
    for _ in 0..100 {
        spares.keep(set(100, 16 * 1024));
    }
    assert!(spares.bytes <= SPARE_BYTES, "{}", spares.bytes);
    assert!(spares.sets.len() < 200 + 100);
    while !spares.sets.is_empty() {
        spares.take();
    }
    assert_eq!(spares.bytes, 0);
    // None kept: a new empty set.
    assert!(spares.take().slots.is_empty());
}
