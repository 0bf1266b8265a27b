//! Resets, GOAWAY, graceful shutdown and the peer's stream limit, between two sessions.

mod common;

use common::{get, responder, Event, Pair};
use http2::{error_code, Config, HeaderVerdict};

#[test]
fn a_reset_stream_closes_on_both_sides_and_the_connection_goes_on() {
    let mut p = Pair::defaults();
    let first = p.client.submit_request(&get(b"/slow"), false).unwrap();
    p.s.deferred.push(first); // the server has no body yet
    p.settle(&mut responder(|_| b"never".to_vec()));
    p.client
        .submit_rst_stream(first, error_code::CANCEL)
        .unwrap();
    p.settle(&mut |_, _| {});
    assert!(p.s.events.contains(&Event::Rst(first, error_code::CANCEL)));
    assert!(p.s.closed().contains(&(first, error_code::CANCEL)));
    assert!(p.c.closed().contains(&(first, error_code::CANCEL)));
    assert!(!p.c.received.contains_key(&first));
    // The connection is still good for another request.
    let second = p.client.submit_request(&get(b"/"), false).unwrap();
    p.settle(&mut responder(|_| b"ok".to_vec()));
    assert_eq!(p.c.received[&second], b"ok");
}

#[test]
fn a_server_reset_reaches_the_client() {
    let mut p = Pair::defaults();
    let stream = p.client.submit_request(&get(b"/"), false).unwrap();
    p.settle(&mut |server, s| {
        if s.headers_ended() == vec![(1, true)] && s.closed().is_empty() {
            server
                .submit_rst_stream(1, error_code::REFUSED_STREAM)
                .unwrap();
        }
    });
    assert!(p
        .c
        .events
        .contains(&Event::Rst(stream, error_code::REFUSED_STREAM)));
    assert_eq!(p.c.closed(), vec![(stream, error_code::REFUSED_STREAM)]);
}

#[test]
fn goaway_carries_the_last_stream_and_later_streams_are_refused() {
    let mut p = Pair::defaults();
    for _ in 0..3 {
        p.client.submit_request(&get(b"/"), false).unwrap();
    }
    p.settle(&mut responder(|_| b"ok".to_vec()));
    assert_eq!(p.server.last_proc_stream_id(), 5);
    p.server.submit_goaway(error_code::NO_ERROR).unwrap();
    p.settle(&mut |_, _| {});
    assert_eq!(p.c.goaways(), vec![(5, error_code::NO_ERROR)]);
    // A request after GOAWAY never leaves: nghttp2 closes it as refused when it would send.
    let late = p.client.submit_request(&get(b"/"), false).unwrap();
    p.settle(&mut |_, _| {});
    assert!(
        p.c.closed().contains(&(late, error_code::REFUSED_STREAM)),
        "{:?}",
        p.c.closed()
    );
    assert_eq!(p.s.headers_ended().len(), 3);
    // Nothing open: both sides are done.
    assert!(!p.client.want_read() && !p.client.want_write());
    assert!(!p.server.want_read() && !p.server.want_write());
}

#[test]
fn a_graceful_shutdown_lets_the_streams_in_flight_finish() {
    let mut p = Pair::defaults();
    let stream = p.client.submit_request(&get(b"/"), false).unwrap();
    p.s.deferred.push(stream);
    p.settle(&mut responder(|_| b"finished".to_vec()));
    p.server.submit_shutdown_notice().unwrap();
    p.settle(&mut |_, _| {});
    assert_eq!(p.c.goaways(), vec![(i32::MAX, error_code::NO_ERROR)]);
    p.server.submit_goaway(error_code::NO_ERROR).unwrap();
    p.s.deferred.clear();
    p.server.resume_data(stream).unwrap();
    p.settle(&mut |_, _| {});
    assert_eq!(p.c.goaways()[1], (stream, error_code::NO_ERROR));
    assert_eq!(p.c.received[&stream], b"finished");
    assert!(!p.server.want_read() && !p.server.want_write());
}

#[test]
fn terminate_sends_goaway_and_ends_the_session() {
    let mut p = Pair::defaults();
    p.client.submit_request(&get(b"/"), false).unwrap();
    p.settle(&mut responder(|_| b"ok".to_vec()));
    p.client.terminate(error_code::NO_ERROR).unwrap();
    p.client.send(&mut p.c).unwrap();
    assert!(!p.client.want_read() && !p.client.want_write());
    assert_eq!(
        common::goaways_in(&p.c.out),
        vec![(0, error_code::NO_ERROR)]
    );
}

#[test]
fn the_servers_max_concurrent_streams_holds_the_clients_requests_back() {
    let server = Config {
        max_concurrent_streams: 2,
        ..Config::server()
    };
    let mut p = Pair::new(&Config::client(), &server);
    // The SETTINGS exchange first, so the client knows the limit.
    p.settle(&mut |_, _| {});
    assert_eq!(p.client.remote_max_concurrent_streams(), 2);
    for _ in 0..10 {
        p.client.submit_request(&get(b"/"), false).unwrap();
    }
    let mut most_open = 0;
    let mut answer = responder(|_| b"ok".to_vec());
    let mut respond = |server: &mut http2::Session<common::Peer>, s: &mut common::Peer| {
        // Counted when the requests are in and not yet answered.
        most_open = most_open.max(s.headers_ended().len() - s.closed().len());
        answer(server, s)
    };
    for _ in 0..1000 {
        let moved = p.round(&mut respond);
        if moved == 0 && !p.client.want_write() {
            break;
        }
    }
    assert_eq!(
        p.c.received.len(),
        10,
        "every request was answered in the end"
    );
    assert_eq!(most_open, 2, "never more than the server's limit at once");
    assert!(
        p.s.closed().iter().all(|&(_, code)| code == 0),
        "none refused"
    );
}

#[test]
fn a_rejected_header_resets_only_its_stream() {
    let mut p = Pair::defaults();
    p.s.reject_header = Some((b"x-evil".to_vec(), HeaderVerdict::ResetStream));
    let mut bad = get(b"/").to_vec();
    bad.push(http2::Header::new(b"x-evil", b"1"));
    let bad_stream = p.client.submit_request(&bad, false).unwrap();
    let good_stream = p.client.submit_request(&get(b"/"), false).unwrap();
    p.settle(&mut responder(|_| b"ok".to_vec()));
    assert_eq!(
        p.c.closed(),
        vec![(bad_stream, error_code::INTERNAL_ERROR), (good_stream, 0)]
    );
    assert_eq!(p.c.received[&good_stream], b"ok");
    assert!(!p.s.headers_ended().iter().any(|&(s, _)| s == bad_stream));
}

#[test]
fn a_header_that_fails_the_connection_sends_goaway_protocol_error() {
    let mut p = Pair::defaults();
    p.s.reject_header = Some((b"x-evil".to_vec(), HeaderVerdict::FailConnection));
    let mut bad = get(b"/").to_vec();
    bad.push(http2::Header::new(b"x-evil", b"1"));
    p.client.submit_request(&bad, false).unwrap();
    p.settle(&mut |_, _| {});
    // Stream 1 was never answered: the GOAWAY names none (RFC 9113 6.8, the client may retry).
    assert_eq!(p.c.goaways(), vec![(0, error_code::PROTOCOL_ERROR)]);
    assert!(!p.server.want_read() && !p.server.want_write());
}

#[test]
fn a_connection_error_names_the_last_stream_answered_not_the_last_received() {
    let mut p = Pair::defaults();
    p.s.reject_header = Some((b"x-evil".to_vec(), HeaderVerdict::FailConnection));
    let first = p.client.submit_request(&get(b"/"), false).unwrap();
    p.settle(&mut responder(|_| b"ok".to_vec()));
    assert_eq!(p.c.received[&first], b"ok");
    // A valid request and a violation arrive together: the valid one is not answered (nothing
    // is written after a connection error's GOAWAY), so the GOAWAY must not name it.
    let unanswered = p.client.submit_request(&get(b"/"), false).unwrap();
    let mut bad = get(b"/").to_vec();
    bad.push(http2::Header::new(b"x-evil", b"1"));
    p.client.submit_request(&bad, false).unwrap();
    p.settle(&mut responder(|_| b"ok".to_vec()));
    assert!(!p.c.received.contains_key(&unanswered));
    assert_eq!(p.c.goaways(), vec![(first, error_code::PROTOCOL_ERROR)]);
}

#[test]
fn a_request_past_the_header_list_limit_is_refused_and_the_connection_goes_on() {
    let server = Config {
        max_header_list_size: 200,
        ..Config::server()
    };
    let mut p = Pair::new(&Config::client(), &server);
    let big = vec![b'a'; 300];
    let mut request = get(b"/").to_vec();
    request.push(http2::Header::new(b"x-big", &big));
    request.push(http2::Header::new(b"x-after", b"1"));
    let refused = p.client.submit_request(&request, false).unwrap();
    let sibling = p.client.submit_request(&get(b"/"), false).unwrap();
    p.settle(&mut responder(|_| b"ok".to_vec()));
    // The handler is told once, hears no field from the one past the limit on, and the request
    // still completes, so it can be answered (a server's 431).
    assert_eq!(
        (p.s.events.iter())
            .filter(|e| matches!(e, Event::ListTooLarge(_)))
            .collect::<Vec<_>>(),
        [&Event::ListTooLarge(refused)]
    );
    assert_eq!(p.s.header(refused, b"x-big"), None);
    assert_eq!(p.s.header(refused, b"x-after"), None);
    assert_eq!(p.s.header(refused, b":path"), Some(b"/".to_vec()));
    assert_eq!(p.s.headers_ended(), [(refused, true), (sibling, true)]);
    assert_eq!(p.c.received[&refused], b"ok");
    assert_eq!(p.c.received[&sibling], b"ok");
    assert!(p.c.goaways().is_empty());
}

#[test]
fn a_header_list_past_the_decoding_bound_ends_the_connection() {
    let server = Config {
        max_header_list_size: 200,
        max_header_list_decoded: 1000,
        ..Config::server()
    };
    let mut p = Pair::new(&Config::client(), &server);
    let big = vec![b'a'; 1200];
    let mut request = get(b"/").to_vec();
    request.push(http2::Header::new(b"x-big", &big));
    let stream = p.client.submit_request(&request, false).unwrap();
    p.settle(&mut responder(|_| b"ok".to_vec()));
    assert!(p.s.headers_ended().is_empty());
    // Decoding stopped at the field past the bound, and the connection ended there, naming no
    // stream as processed.
    assert_eq!(p.c.goaways(), vec![(0, error_code::ENHANCE_YOUR_CALM)]);
    assert!(!p.server.want_read() && !p.server.want_write());
    assert!(p.c.closed().iter().all(|&(s, _)| s == stream));
}

#[test]
fn a_response_past_the_clients_header_list_limit_resets_that_stream_only() {
    let client = Config {
        max_header_list_size: 200,
        ..Config::client()
    };
    let mut p = Pair::new(&client, &Config::server());
    let big = p.client.submit_request(&get(b"/big"), false).unwrap();
    let small = p.client.submit_request(&get(b"/small"), false).unwrap();
    let value = vec![b'v'; 300];
    let mut answered = std::collections::HashSet::new();
    p.settle(&mut |server, s| {
        for (stream, _) in s.headers_ended() {
            if answered.insert(stream) {
                let mut headers = vec![http2::Header::new(b":status", b"200")];
                if stream == big {
                    headers.push(http2::Header::new(b"x-big", &value));
                }
                s.bodies.insert(stream, (b"ok".to_vec(), 0));
                server.submit_response(stream, &headers, true).unwrap();
            }
        }
    });
    assert_eq!(p.c.received[&small], b"ok");
    assert!(!p.c.received.contains_key(&big));
    assert!(
        p.c.closed().contains(&(big, error_code::INTERNAL_ERROR)),
        "{:?}",
        p.c.closed()
    );
    assert!(p.c.goaways().is_empty() && p.s.goaways().is_empty());
}
