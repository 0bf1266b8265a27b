//! The proxy's own bound on requests in flight: a proxied request runs no program, so it takes
//! none of `cgi_max_programs`' slots, but one of its mount's `max_in_flight` (per thread, 503
//! past it, counted in `proxy_busy`). An HTTP/2 client in front puts its 100 streams in flight
//! at once.

use crate::h2_support;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::proxy_support::*;

/// An upstream that answers no request before `hold` of them have arrived, and so on for
/// each next `hold` (or a few seconds have passed: a server that lets fewer through still
/// gets its answers, and the test fails on what it counts, not on a hang).
fn holding_upstream(hold: usize) -> Upstream {
    let arrived = Arc::new(AtomicUsize::new(0));
    Upstream::start(move |_| {
        let round_end = (arrived.fetch_add(1, Ordering::SeqCst) / hold + 1) * hold;
        let deadline = Instant::now() + Duration::from_secs(5);
        while arrived.load(Ordering::SeqCst) < round_end && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        ok("held")
    })
}

/// Submits `n` GETs on each of `conns` HTTP/2 connections, all sent before any answer is
/// awaited, and returns each stream's status.
fn statuses_on(addr: std::net::SocketAddr, conns: usize, n: usize) -> Vec<u16> {
    let mut clients: Vec<_> = (0..conns)
        .map(|_| {
            let mut h2 = h2_support::Client::new(connect(addr), "example.com");
            let ids: Vec<_> = (0..n)
                .map(|k| h2.submit("GET", &format!("/api/{k}"), &[]))
                .collect();
            h2.flush();
            (h2, ids)
        })
        .collect();
    let mut got = Vec::new();
    for (h2, ids) in &mut clients {
        let all_done = |s: &h2_support::Seen| {
            (ids.iter()).all(|id| s.responses.get(id).is_some_and(|r| r.done))
        };
        assert!(h2.run_until(all_done), "the connection closed");
        got.extend(ids.iter().map(|id| h2.seen.responses[id].status));
    }
    got
}

/// [`statuses_on`] one connection.
fn statuses(addr: std::net::SocketAddr, n: usize) -> Vec<u16> {
    statuses_on(addr, 1, n)
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|&&s| s == status).count()
}

#[test]
fn an_http2_client_s_hundred_streams_are_proxied_at_once_whatever_cgi_max_programs_says() {
    const STREAMS: usize = 100;
    let up = holding_upstream(STREAMS);
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| {
        c.proxy.push(m);
        c.cgi_max_programs = 4;
    });
    let got = statuses(srv.addr, STREAMS);
    assert_eq!(
        (count(&got, 200), count(&got, 503)),
        (STREAMS, 0),
        "statuses: {got:?}"
    );
    assert_eq!(
        up.most_open.load(Ordering::SeqCst),
        STREAMS,
        "every stream in flight at once, each on its upstream connection"
    );
    let st = srv.stop();
    assert_eq!(
        (st.proxy_requests, st.proxy_busy, st.cgi_busy),
        (STREAMS as u64, 0, 0)
    );
}

#[test]
fn requests_past_a_mount_s_max_in_flight_get_503_and_the_rest_go_through() {
    const STREAMS: usize = 100;
    const LIMIT: usize = 40;
    // Held until the mount's 40 are in: the other 60 are refused while they wait.
    let up = holding_upstream(LIMIT);
    let m = mount("/api/", &[up.url()], &format!("max_in_flight = {LIMIT}"));
    let srv = TestServer::start(|c| c.proxy.push(m));
    let got = statuses(srv.addr, STREAMS);
    assert_eq!(
        (count(&got, 200), count(&got, 503)),
        (LIMIT, STREAMS - LIMIT),
        "statuses: {got:?}"
    );
    assert_eq!(
        up.requests().len(),
        LIMIT,
        "a refused request never reaches the upstream"
    );
    // The slots come back as the exchanges end: the next burst goes through as the first did.
    let again = statuses(srv.addr, LIMIT);
    assert_eq!(count(&again, 200), LIMIT, "statuses: {again:?}");
    let st = srv.stop();
    assert_eq!(
        (st.proxy_requests, st.proxy_busy, st.cgi_busy),
        ((STREAMS + LIMIT) as u64, (STREAMS - LIMIT) as u64, 0)
    );
}

#[test]
fn more_requests_in_flight_than_the_old_pool_held_find_their_connections_kept() {
    // Three HTTP/2 clients with 100 streams each: 300 in flight at once, more than the 256
    // idle connections a mount's pool used to keep by default.
    const CONNS: usize = 3;
    const STREAMS: usize = 100;
    const ROUNDS: usize = 2;
    let up = holding_upstream(CONNS * STREAMS);
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    for _ in 0..ROUNDS {
        let got = statuses_on(srv.addr, CONNS, STREAMS);
        assert_eq!(count(&got, 200), CONNS * STREAMS, "statuses: {got:?}");
    }
    // The second round's 300 found the first round's 300 connections kept: none opened.
    let st = srv.stop();
    assert_eq!(
        (st.proxy_requests, st.proxy_connects),
        ((ROUNDS * CONNS * STREAMS) as u64, (CONNS * STREAMS) as u64)
    );
    assert_eq!(up.accepted.load(Ordering::SeqCst), CONNS * STREAMS);
}

/// With one request in flight allowed, every way an exchange can end gives its slot back: an
/// upstream that refuses (502), one silent past `first_byte_timeout_ms` (504) and a client
/// that closes while it waits each leave the next request a slot (200, no 503).
#[test]
fn a_failed_timed_out_or_abandoned_request_gives_its_slot_back() {
    let up = Upstream::start(|r| match r.head.split(' ').nth(1).unwrap() {
        // Longer than the test: only the proxy's timeout or its client's close ends it.
        "/api/silent" => vec![Step::Sleep(Duration::from_secs(60))],
        _ => ok("fine"),
    });
    let dead = format!("http://{}", dead_port());
    let one = "max_in_flight = 1\nfirst_byte_timeout_ms = 300";
    let (api, gone) = (
        mount("/api/", &[up.url()], one),
        mount("/gone/", &[dead], one),
    );
    let srv = TestServer::start(|c| c.proxy.extend([api, gone]));
    // Refused twice: the second finds the slot the first gave back (502, not 503).
    for _ in 0..2 {
        assert_eq!(exchange(srv.addr, &get("/gone/x")).status, 502);
    }
    assert_eq!(exchange(srv.addr, &get("/api/silent")).status, 504);
    // A client that closes while its request waits upstream.
    let mut s = connect(srv.addr);
    s.write_all(get("/api/silent").as_bytes()).unwrap();
    assert!(
        eventually(WAIT, || up.requests().len() == 2),
        "the request went upstream"
    );
    drop(s);
    // Its exchange is over once its upstream connection is counted (the timed-out one was).
    assert!(
        eventually(WAIT, || srv.stats().proxy_connects == 2),
        "the abandoned exchange ended"
    );
    let r = exchange(srv.addr, &get("/api/x"));
    assert_eq!((r.status, r.body.as_slice()), (200, b"fine".as_slice()));
    let st = srv.stop();
    assert_eq!(
        (st.proxy_busy, st.proxy_timeouts, st.proxy_requests),
        (0, 1, 5)
    );
}
