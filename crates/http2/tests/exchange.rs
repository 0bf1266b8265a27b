//! Requests and responses between a client and a server session in memory.

mod common;

use common::{get, responder, Event, Pair};
use http2::{error_code, frame_type, Config, Header, HeadersKind};

#[test]
fn a_get_and_its_response_body_go_through_the_no_copy_path() {
    let mut p = Pair::defaults();
    let body: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    let expected = body.clone();
    let stream = p
        .client
        .submit_request(&get(b"/index.html"), false)
        .unwrap();
    assert_eq!(stream, 1);
    p.settle(&mut responder(move |_| body.clone()));

    assert!(p
        .s
        .events
        .contains(&Event::BeginHeaders(1, HeadersKind::Request)));
    assert_eq!(
        p.s.header(1, b":path").as_deref(),
        Some(&b"/index.html"[..])
    );
    assert_eq!(p.s.header(1, b":method").as_deref(), Some(&b"GET"[..]));
    assert_eq!(p.s.headers_ended(), vec![(1, true)]);
    assert!(
        p.s.data_frames_written >= 1,
        "the body went through write_data"
    );

    assert!(p
        .c
        .events
        .contains(&Event::BeginHeaders(1, HeadersKind::Response)));
    assert_eq!(p.c.header(1, b":status").as_deref(), Some(&b"200"[..]));
    assert_eq!(p.c.headers_ended(), vec![(1, false)]);
    assert_eq!(p.c.received[&1], expected);
    assert!(p.c.events.contains(&Event::DataEnd(1)));
    assert_eq!(p.c.closed(), vec![(1, error_code::NO_ERROR)]);
    assert_eq!(p.s.closed(), vec![(1, error_code::NO_ERROR)]);
    // Both sides saw the other's SETTINGS.
    assert!(p.c.events.contains(&Event::Settings));
    assert!(p.s.events.contains(&Event::Settings));
    assert_eq!(p.client.remote_max_concurrent_streams(), 100);
    // The HEADERS frames sent were counted with their block's length.
    assert!(p
        .c
        .frames_sent
        .iter()
        .any(|&(t, len)| t == frame_type::HEADERS && len > 0));
    // Each side's HEADERS, once written whole: the request, then the response.
    assert_eq!(p.c.headers_sent, vec![1]);
    assert_eq!(p.s.headers_sent, vec![1]);
    assert!(
        p.client.hpack_deflate_size() > 0,
        "the encoder indexed :authority"
    );
    assert_eq!(http2::stray_callbacks(), 0);
}

#[test]
fn many_concurrent_streams_each_get_their_own_body() {
    let mut p = Pair::defaults();
    let mut ids = Vec::new();
    for i in 0..100 {
        let path = format!("/file{i}");
        ids.push(
            p.client
                .submit_request(&get(path.as_bytes()), false)
                .unwrap(),
        );
    }
    let body = |stream: i32| {
        format!("body of stream {stream}")
            .repeat(stream as usize % 7 + 1)
            .into_bytes()
    };
    p.settle(&mut responder(body));
    assert_eq!(ids, (0..100).map(|i| 1 + 2 * i).collect::<Vec<_>>());
    for id in ids {
        assert_eq!(p.c.received[&id], body(id), "stream {id}");
        assert!(p.c.closed().contains(&(id, 0)));
    }
    assert_eq!(p.s.closed().len(), 100);
}

#[test]
fn a_body_larger_than_the_windows_flows_in_window_update_batches() {
    // The client's receive windows are RFC 9113's 65,535 bytes: a 1 MiB body needs the
    // client's WINDOW_UPDATEs, which nghttp2 sends once half a window has been received.
    let client = Config { ..Config::server() };
    let mut p = Pair::new(&client, &Config::server());
    let body: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 7 % 256) as u8).collect();
    let expected = body.clone();
    p.client.submit_request(&get(b"/big"), false).unwrap();
    p.settle(&mut responder(move |_| body.clone()));
    assert_eq!(p.c.received[&1], expected);
    let updates =
        p.c.frames_sent
            .iter()
            .filter(|f| f.0 == frame_type::WINDOW_UPDATE)
            .count();
    // 1 MiB through a 64 KiB window: at least one update per half window on the connection.
    assert!(updates >= (1 << 20) / 65_535, "{updates} WINDOW_UPDATEs");
    assert!(
        updates < (1 << 20) / 1_000,
        "batched, not one per DATA frame: {updates}"
    );
}

#[test]
fn a_window_of_one_byte_still_delivers_the_whole_body() {
    let client = Config {
        initial_window_size: 1,
        ..Config::server()
    };
    let mut p = Pair::new(&client, &Config::server());
    let body = b"twenty bytes of body".to_vec();
    p.client.submit_request(&get(b"/"), false).unwrap();
    let b = body.clone();
    p.settle(&mut responder(move |_| b.clone()));
    assert_eq!(p.c.received[&1], body);
    // One byte per DATA frame: the window allowed no more.
    assert_eq!(p.s.data_frames_written, body.len());
}

#[test]
fn a_client_raised_connection_window_is_seen_by_the_server() {
    let mut p = Pair::defaults();
    p.client.submit_request(&get(b"/"), false).unwrap();
    p.settle(&mut responder(|_| b"x".to_vec()));
    // The client advertised 15 MiB on the connection (WINDOW_UPDATE on stream 0) and 6 MiB a
    // stream; the server has sent one byte.
    assert_eq!(p.server.connection_remote_window(), 15 * 1024 * 1024 - 1);
    assert_eq!(p.client.connection_remote_window(), 65_535);
}

#[test]
fn a_write_that_takes_nothing_loses_nothing() {
    let mut p = Pair::defaults();
    let body: Vec<u8> = (0..100_000u32).map(|i| (i % 256) as u8).collect();
    let expected = body.clone();
    p.client.submit_request(&get(b"/"), false).unwrap();
    // Blocked writers: nothing leaves either side, and nothing is lost.
    p.c.blocked = true;
    p.client.send(&mut p.c).unwrap();
    assert!(p.c.out.is_empty());
    assert!(p.client.want_write());
    p.c.blocked = false;
    // Then writes that take at most 7 bytes at a time, and a server blocked now and then.
    p.c.write_chunk = Some(7);
    p.s.write_chunk = Some(7);
    let mut respond = responder(move |_| body.clone());
    for round in 0..100_000 {
        p.s.blocked = round % 3 == 0;
        p.round(&mut respond);
        if p.c.closed().len() == 1 {
            break;
        }
    }
    assert_eq!(p.c.received[&1], expected);
    assert_eq!(p.c.closed(), vec![(1, 0)]);
}

#[test]
fn a_deferred_body_waits_for_resume_data() {
    let mut p = Pair::defaults();
    p.client.submit_request(&get(b"/"), false).unwrap();
    p.s.deferred.push(1);
    p.settle(&mut responder(|_| b"later".to_vec()));
    assert!(!p.c.received.contains_key(&1), "nothing before resume_data");
    assert_eq!(p.c.headers_ended(), vec![(1, false)]);
    p.s.deferred.clear();
    p.server.resume_data(1).unwrap();
    p.settle(&mut |_, _| {});
    assert_eq!(p.c.received[&1], b"later");
}

#[test]
fn a_request_with_a_body_reaches_the_server() {
    let mut p = Pair::defaults();
    let post = [
        http2::Header::new(b":method", b"POST"),
        http2::Header::new(b":scheme", b"http"),
        http2::Header::new(b":authority", b"localhost"),
        http2::Header::new(b":path", b"/upload"),
    ];
    let stream = p.client.submit_request(&post, true).unwrap();
    p.c.bodies.insert(stream, (b"posted bytes".to_vec(), 0));
    p.settle(&mut |_, _| {});
    assert_eq!(p.s.received[&stream], b"posted bytes");
    assert!(p.s.events.contains(&Event::DataEnd(stream)));
    assert_eq!(p.s.headers_ended(), vec![(stream, false)]);
}

/// A server's constant headers, kept in a static and never copied by nghttp2.
static OK_HEADERS: [Header<'static>; 2] = [
    Header::from_static(b":status", b"200"),
    Header::from_static(b"server", b"flint"),
];

#[test]
fn static_headers_are_sent_as_they_are() {
    let mut p = Pair::defaults();
    let stream = p.client.submit_request(&get(b"/"), false).unwrap();
    p.settle(
        &mut |server: &mut http2::Session<common::Peer>, s: &mut common::Peer| {
            if s.headers_ended() == vec![(stream, true)] && s.bodies.is_empty() {
                s.bodies.insert(stream, (b"static".to_vec(), 0));
                server.submit_response(stream, &OK_HEADERS, true).unwrap();
            }
        },
    );
    assert_eq!(
        p.c.header(stream, b"server").as_deref(),
        Some(&b"flint"[..])
    );
    assert_eq!(p.c.received[&stream], b"static");
    assert_eq!(format!("{:?}", OK_HEADERS[1]), "server: flint");
}

#[test]
fn a_config_nghttp2_refuses_is_an_error() {
    // RFC 9113: SETTINGS_MAX_FRAME_SIZE is at least 16,384.
    let config = Config {
        max_frame_size: 100,
        ..Config::server()
    };
    let err = http2::Session::<common::Peer>::server(&config)
        .err()
        .unwrap();
    assert_eq!(err.code, http2::lib_error::INVALID_ARGUMENT);
    assert!(!err.is_fatal());
    assert!(err.to_string().contains("Invalid argument"), "{err}");
}

#[test]
fn a_body_ready_larger_than_asked_is_cut_to_frames() {
    let mut p = Pair::defaults();
    p.s.overshoot = true;
    let body: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
    let expected = body.clone();
    p.client.submit_request(&get(b"/"), false).unwrap();
    p.settle(&mut responder(move |_| body.clone()));
    assert_eq!(
        p.c.received[&1].len(),
        expected.len(),
        "the whole body, not its first frame"
    );
    assert!(p.c.received[&1] == expected);
    // 16 KiB frames at most (the client's SETTINGS_MAX_FRAME_SIZE), not one frame of 100 KB.
    assert!(p.s.data_frames_written >= 100_000_usize.div_ceil(16_384));
}

#[test]
fn no_copy_fields_are_read_when_the_headers_are_written() {
    // Bytes on the heap, not 'static: declared before the session, so they outlive it.
    let bytes = b":method GET:scheme http:authority example.test:path /not-static".to_vec();
    let mut p = Pair::defaults();
    let at = |s: &str| {
        let i = bytes
            .windows(s.len())
            .position(|w| w == s.as_bytes())
            .unwrap();
        &bytes[i..i + s.len()]
    };
    // SAFETY: `bytes` is never changed and is dropped after `p` (declared before it), so it
    // outlives the session the fields go to.
    let list = unsafe {
        [
            Header::no_copy(at(":method"), at("GET")),
            Header::no_copy(at(":scheme"), at("http")),
            Header::no_copy(at(":authority"), at("example.test")),
            Header::no_copy(at(":path"), at("/not-static")),
        ]
    };
    let stream = p.client.submit_request(&list, false).unwrap();
    p.settle(&mut responder(|_| b"ok".to_vec()));
    assert_eq!(
        p.s.header(stream, b":path").as_deref(),
        Some(&b"/not-static"[..])
    );
    assert_eq!(p.c.received[&stream], b"ok");
}

/// A server session's frames are packed in its thread's frame buffer: one connection whose
/// writer pushed back keeps its frames (HEADERS held by the session, DATA offered again later)
/// whole while another on the same thread answers in between.
#[test]
fn server_sessions_of_one_thread_keep_their_frames_apart() {
    let mut slow = Pair::defaults();
    let slow_body: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    let expected = slow_body.clone();
    let mut slow_respond = responder(move |_| slow_body.clone());
    // The SETTINGS exchange, then a request answered while the server's writer takes nothing.
    slow.settle(&mut |_, _| {});
    slow.client.submit_request(&get(b"/slow"), false).unwrap();
    slow.s.blocked = true;
    slow.round(&mut slow_respond);
    assert!(slow.s.out.is_empty());
    assert!(
        slow.server.want_write(),
        "the response waits in the session"
    );
    // Other connections of the thread answer meanwhile, with other frames and bodies.
    for n in 0..3u8 {
        let mut other = Pair::defaults();
        other.client.submit_request(&get(b"/other"), false).unwrap();
        other.settle(&mut responder(move |_| vec![b'a' + n; 30_000]));
        assert_eq!(other.c.received[&1], vec![b'a' + n; 30_000]);
    }
    // Then the first writer takes a few bytes at a time, and now and then none.
    slow.s.blocked = false;
    slow.s.write_chunk = Some(5);
    for round in 0..100_000 {
        slow.s.blocked = round % 4 == 1;
        slow.round(&mut slow_respond);
        if round % 7 == 3 {
            let mut other = Pair::defaults();
            other.client.submit_request(&get(b"/other"), false).unwrap();
            other.settle(&mut responder(|_| vec![b'z'; 20_000]));
        }
        if slow.c.closed().len() == 1 {
            break;
        }
    }
    assert_eq!(slow.c.header(1, b":status"), Some(b"200".to_vec()));
    assert_eq!(slow.c.received[&1], expected);
    assert_eq!(slow.c.closed(), vec![(1, 0)]);
}

/// Collects what a session writes.
#[derive(Default)]
struct Sink(Vec<u8>);

impl http2::Handler for Sink {
    fn write(&mut self, bytes: &[u8]) -> usize {
        self.0.extend_from_slice(bytes);
        bytes.len()
    }
}

/// A handler whose `write` drives another server session of the thread: that session's frames
/// would be packed over the frame being handed over in the thread's one frame buffer.
struct Nesting {
    inner: http2::Session<Sink>,
    sink: Sink,
    nested: Option<Result<(), http2::Error>>,
    out: Vec<u8>,
}

impl http2::Handler for Nesting {
    fn write(&mut self, bytes: &[u8]) -> usize {
        if self.nested.is_none() {
            self.nested = Some(self.inner.send(&mut self.sink));
        }
        self.out.extend_from_slice(bytes);
        bytes.len()
    }
}

#[test]
fn a_server_sessions_send_inside_another_ones_handler_is_refused() {
    let config = Config::server();
    let mut outer = http2::Session::<Nesting>::server(&config).unwrap();
    let mut h = Nesting {
        inner: http2::Session::server(&config).unwrap(),
        sink: Sink::default(),
        nested: None,
        out: Vec::new(),
    };
    // Both have their SETTINGS queued; the outer one's goes out whole.
    outer.send(&mut h).unwrap();
    let err = h.nested.take().expect("the handler ran").unwrap_err();
    assert_eq!(err.code, http2::lib_error::INVALID_STATE);
    assert!(h.sink.0.is_empty(), "nothing packed over the outer frame");
    assert_eq!(h.out[3], frame_type::SETTINGS, "{:?}", h.out);
    // Outside the handler the inner session sends as usual.
    h.inner.send(&mut h.sink).unwrap();
    assert_eq!(h.sink.0[3], frame_type::SETTINGS, "{:?}", h.sink.0);
}
